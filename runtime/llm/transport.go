package llm

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// maxErrorBody bounds how much of a non-2xx body is kept: enough for any
// JSON error or the start of an HTML page, never a whole runaway response.
const maxErrorBody = 64 << 10

// maxDrain bounds how much of a finished stream is read before closing it.
// After "data: [DONE]" only the chunked terminator is left; reading it lets
// the transport put the connection back into the idle pool.
const maxDrain = 16 << 10

// DefaultHTTPClient returns a new client configured as the one a Client
// uses when Config.HTTPClient is nil, for measuring the transport alone.
func DefaultHTTPClient() *http.Client { return newHTTPClient() }

// newHTTPClient returns the default client: HTTP/1.1 keep-alive with a large
// idle pool, because a run keeps hundreds of calls to the same host in flight
// and every new connection (with TLS, often 100ms) shows in the turn latency.
// Plain http:// servers are spoken to by directTransport, https and proxies
// by net/http's transport. There is no overall client timeout: streams last
// as long as the model writes, bounded by CallTimeout and IdleTimeout
// instead.
func newHTTPClient() *http.Client {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := dialer.DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &bodyConn{Conn: c}, nil
		},
		// A swarm can have a thousand calls in flight to one server; a
		// connection closed for want of an idle slot is a new dial (and a
		// TLS handshake) on the next call.
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Some servers and proxies buffer gzip output, which holds back a
		// stream; the chunks are small anyway.
		DisableCompression: true,
		Protocols:          protocols,
	}
	// Keep-alive probes find a peer that vanished without closing; on the
	// loopback interface that cannot happen, and setting them up is four
	// more system calls on each of the hundreds of connections a swarm
	// opens at once.
	loopDialer := &net.Dialer{Timeout: dialer.Timeout, KeepAlive: -1}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		if isLoopback(addr) {
			return loopDialer.DialContext(ctx, network, addr)
		}
		return dialer.DialContext(ctx, network, addr)
	}
	return &http.Client{Transport: &directTransport{
		dial:        dial,
		proxy:       http.ProxyFromEnvironment,
		fallback:    tr,
		idleTimeout: tr.IdleConnTimeout,
		maxIdle:     tr.MaxIdleConnsPerHost,
	}}
}

// isLoopback reports whether addr (host:port) names this machine's
// loopback interface.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// bodyConn is a client connection that sends a prepared request body
// straight from its buffer. net/http hands the part of a body that does not
// fit its write buffer to the connection's ReadFrom; a TCP connection
// copies it through a new 32 KiB buffer every time, which at a thousand
// calls in flight is most of the client's garbage.
type bodyConn struct{ net.Conn }

func (c *bodyConn) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if br, ok := lr.R.(*bodyReader); ok {
			n, err := br.writeTo(c.Conn, lr.N, nil)
			lr.N -= n
			return n, err
		}
	}
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	return io.CopyBuffer(writerOnly{c.Conn}, r, *bp)
}

// writerOnly hides every method but Write, so io.CopyBuffer uses its buffer.
type writerOnly struct{ io.Writer }

var copyBufPool = sync.Pool{New: func() any {
	b := make([]byte, 32<<10)
	return &b
}}

// respInfo records what one attempt's HTTP exchange looked like. go-openai
// turns a failed response into an error and drops its headers and, for
// non-JSON bodies, most of its meaning; the doer below fills this in so the
// retry logic can honour Retry-After and show a readable message.
//
// It also carries the request body to send: go-openai encodes the request
// it is given, which is only chatParams's stand-in, and the doer replaces
// that with the attempt's prepared body.
type respInfo struct {
	sent     bool // the request reached the HTTP client
	done     bool // the stream's "data: [DONE]" arrived
	status   int  // non-2xx status, 0 when the response was a success
	header   http.Header
	body     []byte
	location string // where a redirect that was not followed points

	// What a success response was, to say what came when it was no
	// stream of chunks.
	okStatus    int
	contentType string
	whole       bool   // a plain JSON body, replayed as one event
	data        bool   // a data line went by
	head        []byte // the start of the body up to its first data line, without comments and fields; or of a whole answer

	reqBody *preparedBody
	tail    string // the end of reqBody for this attempt
}

type respInfoKey struct{}

func withRespInfo(ctx context.Context, info *respInfo) context.Context {
	return context.WithValue(ctx, respInfoKey{}, info)
}

// doer is the go-openai HTTPDoer: it puts the attempt's prepared body in
// place of go-openai's, adds the configured headers, records failed
// responses into the attempt's respInfo and filters success bodies through
// sseFilter.
type doer struct {
	hc      *http.Client
	headers []headerKV
	query   string // the base URL's, for every request
}

type headerKV struct{ key, value string }

func (d *doer) Do(req *http.Request) (*http.Response, error) {
	info, _ := req.Context().Value(respInfoKey{}).(*respInfo)
	if info != nil && info.reqBody != nil {
		if err := setBody(req, info.reqBody, info.tail); err != nil {
			return nil, err
		}
	}
	for _, h := range d.headers {
		req.Header.Set(h.key, h.value)
	}
	addQuery(req.URL, d.query)
	if info != nil {
		info.sent = true
	}
	resp, err := d.hc.Do(req)
	if err != nil {
		return nil, err
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	switch enc := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip", "x-gzip":
		// Compression is not asked for (a stream's chunks are small, and
		// a server buffering its gzip output holds the stream back), but
		// some servers and proxies compress all the same.
		resp.Body = &gzipBody{body: resp.Body}
	default:
		if ok {
			resp.Body.Close()
			return nil, &badAnswer{reason: fmt.Sprintf("the server sent its answer compressed as %q, which swarmdeck neither asked for nor reads", enc)}
		}
	}
	if ok {
		whole := false
		if isJSON(resp.Header.Get("Content-Type")) {
			resp.Body, whole = wholeAnswerAsEvent(resp.Body)
		}
		f := newSSEFilter(resp.Body)
		if info != nil {
			info.okStatus, info.contentType, info.whole = resp.StatusCode, resp.Header.Get("Content-Type"), whole
			f.info = info
		}
		resp.Body = f
		return resp, nil
	}
	// Read the error body here, bounded, and close the real body: go-openai
	// reads it but never closes it.
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if info != nil {
		info.status = resp.StatusCode
		info.header = resp.Header
		info.body = body
		if loc, err := resp.Location(); err == nil && resp.StatusCode >= 300 && resp.StatusCode < 400 {
			info.location = loc.String()
		}
	}
	return resp, nil
}

// gzipBody decompresses a body that came gzipped. The gzip header is read
// with the first Read, not while the response head is handled. A body that
// is not gzip after all fails as an unusable answer, not as a connection
// lost.
type gzipBody struct {
	body io.ReadCloser
	zr   *gzip.Reader
	err  error
}

func (b *gzipBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	var n int
	var err error
	if b.zr == nil {
		b.zr, err = gzip.NewReader(b.body)
	}
	if err == nil {
		n, err = b.zr.Read(p)
	}
	var corrupt flate.CorruptInputError
	if errors.Is(err, gzip.ErrHeader) || errors.Is(err, gzip.ErrChecksum) || errors.As(err, &corrupt) {
		err = &badAnswer{reason: "the server's gzip-encoded answer is corrupt: " + err.Error()}
	}
	if err != nil {
		b.err = err
	}
	return n, err
}

func (b *gzipBody) Close() error { return b.body.Close() }

// maxWholeAnswer bounds a JSON answer read into memory to be replayed as
// one event.
const maxWholeAnswer = 32 << 20

// maxLine bounds one line of a stream. go-openai reads a line whole before
// it hands it on, so a server that never ends one would fill the memory;
// the longest line a server has reason to send is a whole answer as one
// event (see wholeAnswerAsEvent).
const maxLine = maxWholeAnswer + 1<<10

func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// wholeAnswerAsEvent turns a plain JSON body on a streaming request (a
// server or proxy that ignores "stream": true answers with one
// chat.completion object, often pretty-printed) into the single data line
// of a stream, which the chunk decoder reads like any other: it takes
// "message" where "delta" is expected. A body that is not one JSON value is
// passed on as it came; ok tells which was done.
func wholeAnswerAsEvent(body io.ReadCloser) (_ io.ReadCloser, ok bool) {
	b, err := io.ReadAll(io.LimitReader(body, maxWholeAnswer+1))
	if err != nil || len(b) > maxWholeAnswer {
		// A broken or runaway body: hand on what came, then the rest or
		// the read error, as the stream reader would have seen them.
		rest := io.Reader(body)
		if err != nil {
			rest = errReader{err}
		}
		return struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(b), rest), body}, false
	}
	body.Close()
	var event bytes.Buffer
	event.WriteString("data: ")
	if err := json.Compact(&event, b); err != nil {
		if cutJSON(b) {
			// JSON begun and not ended: the connection closed early.
			return io.NopCloser(errReader{errPartChunk}), false
		}
		return io.NopCloser(bytes.NewReader(b)), false
	}
	event.WriteString("\n\n")
	return io.NopCloser(&event), true
}

// cutJSON reports a JSON object that is well formed as far as it goes and
// ends too soon.
func cutJSON(b []byte) bool {
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return false
	}
	var v json.RawMessage
	return errors.Is(json.NewDecoder(bytes.NewReader(b)).Decode(&v), io.ErrUnexpectedEOF)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// setBody makes req send body followed by tail. GetBody hands net/http a
// fresh reader of the same bytes for the retries and redirects it makes on
// its own.
func setBody(req *http.Request, body *preparedBody, tail string) error {
	r, err := body.reader(tail)
	if err != nil {
		return err
	}
	if req.Body != nil {
		req.Body.Close() // go-openai's encoding of the stand-in request
	}
	req.Body = r
	req.ContentLength = body.size(tail)
	req.GetBody = func() (io.ReadCloser, error) { return body.reader(tail) }
	return nil
}

var sseReaderPool = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 8<<10) }}

// sseFilter sits between the response body and go-openai's line reader and
// rewrites the event stream into what that reader handles well:
//
//   - A line that ends with a lone CR ends with a LF (see crReader).
//   - An event whose data comes in several data: lines, which the format
//     joins with LF until the blank line that ends the event, is handed
//     on as one line (see joinData): go-openai reads every line alone.
//   - Comment lines (": keep-alive") and the event:, id: and retry: fields
//     are dropped. go-openai would count them toward EmptyMessagesLimit and
//     pile them into its error buffer, where one keep-alive before an error
//     event makes the error unreadable.
//   - Other lines, which go-openai keeps to read as a JSON error body at
//     the end, are dropped once they pass maxErrorBody, and a body made
//     of nothing else ends there: an HTML page or any other body without
//     end is neither kept whole nor read to its end.
//   - An error event (data: {"error": ...}) gets a space after its brace so
//     go-openai hands it to us as an ordinary data line. Our chunk decoder
//     reads every error shape (object, plain string, vLLM's top-level form)
//     the same way.
//
// Close drains what is left of the body (bounded) so a finished stream's
// connection goes back to the idle pool instead of being torn down.
type sseFilter struct {
	body     io.ReadCloser
	br       *bufio.Reader // reads lines from lineEnds
	lineEnds crReader
	pending  []byte     // bytes still to hand out; may point into br's buffer
	scratch  []byte     // holds a rewritten error line
	last     []byte     // holds a last line that lacked its newline
	midLine  bool       // pending part is the middle of a long line
	lineLen  int        // bytes of the current line read so far
	dropping bool       // the rest of the current long line is dropped
	inData   bool       // the current long line is data whose line end is yet to be decided
	scan     objectScan // the JSON of the current long data line so far
	open     bool       // a data line went on without its line end: the event's next data line joins it
	joined   int        // bytes read while an event was open
	other    int        // bytes of lines handed on that were neither data, comments nor fields
	err      error
	info     *respInfo // told of data lines, [DONE] and what else came; may be nil
}

func newSSEFilter(body io.ReadCloser) *sseFilter {
	f := &sseFilter{body: body, br: sseReaderPool.Get().(*bufio.Reader)}
	f.lineEnds.r = body
	f.br.Reset(&f.lineEnds)
	return f
}

// crReader hands on a body with each CR that ends a line alone made a LF.
// The event stream format ends a line with LF, CR LF or a lone CR, and
// go-openai's line reader, like sseFilter's, splits at LF only. Each read
// is searched once, so a stream without CRs costs one byte search a read,
// not one a line.
type crReader struct {
	r       io.Reader
	afterCR bool // the last read ended with a CR: a LF first in the next is its CR LF's
}

func (c *crReader) Read(p []byte) (int, error) {
	for {
		n, err := c.r.Read(p)
		if c.afterCR && n > 0 {
			c.afterCR = false
			if p[0] == '\n' {
				n = copy(p, p[1:n])
				if n == 0 && err == nil {
					continue
				}
			}
		}
		for b := p[:n]; ; {
			i := bytes.IndexByte(b, '\r')
			if i < 0 {
				break
			}
			if i == len(b)-1 {
				b[i], c.afterCR = '\n', true
			} else if b[i+1] != '\n' {
				b[i] = '\n'
			}
			b = b[i+1:]
		}
		return n, err
	}
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			if f.open {
				// The body ended within an event: it ends there too.
				f.open, f.pending = false, lineFeed
				break
			}
			return 0, f.err
		}
		if f.br == nil {
			return 0, io.ErrClosedPipe
		}
		line, err := f.br.ReadSlice('\n')
		full := err == bufio.ErrBufferFull
		if !f.midLine {
			f.lineLen = 0
		}
		if f.lineLen += len(line); full && f.lineLen > maxLine {
			f.err = &badAnswer{reason: fmt.Sprintf("a line of more than %d MiB with no line break", maxLine>>20)}
			return 0, f.err
		}
		if err != nil && !full {
			f.err = err
			switch {
			case len(line) == 0:
			case err != io.EOF || partChunk(line):
				// The body was cut (a timer of ours, a reset) or closed in
				// the middle of a chunk: the part is no chunk, and read as
				// one it would blame the server's JSON for the cut.
				if err == io.EOF {
					f.err = errPartChunk
				}
				line = nil
			default:
				// go-openai drops a last line that has no newline, and with
				// it a final chunk or a bare JSON error body.
				f.last = append(append(f.last[:0], line...), '\n')
				line = f.last
			}
		}
		f.pending = f.filterLine(line)
		f.midLine = full
		if !f.open {
			f.joined = 0
		} else if f.joined += len(line); f.joined > maxLine {
			f.pending = nil
			f.err = &badAnswer{reason: fmt.Sprintf("an event of more than %d MiB in data lines with no blank line", maxLine>>20)}
			return 0, f.err
		}
		if f.other > maxErrorBody && f.info != nil && !f.info.data && f.err == nil {
			// Enough of a body that is no event stream to say what it
			// is: the rest, however long, is not read.
			f.pending, f.err = nil, io.EOF
		}
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// filterLine decides what of one line (or the first part of a long line)
// is handed on.
func (f *sseFilter) filterLine(line []byte) []byte {
	complete := len(line) > 0 && line[len(line)-1] == '\n'
	if f.midLine {
		switch {
		case f.dropping:
			f.dropping = !complete
			return nil
		case f.inData:
			f.scan.feed(line)
			if complete {
				return f.endData(line, nil)
			}
		}
		return line
	}
	f.dropping, f.inData = false, false
	s := trimLeftSpace(line)
	if len(s) == 0 {
		return line
	}
	if s[0] == ':' || bytes.HasPrefix(s, []byte("event:")) ||
		bytes.HasPrefix(s, []byte("id:")) || bytes.HasPrefix(s, []byte("retry:")) {
		f.dropping = !complete
		return nil
	}
	if rest, ok := bytes.CutPrefix(s, []byte("data:")); ok {
		rest = trimLeftSpace(rest)
		if f.info != nil {
			if f.info.whole {
				f.keepHead(rest)
			}
			f.info.data = true
			if !f.open && bytes.Equal(bytes.TrimSpace(rest), []byte("[DONE]")) {
				f.info.done = true
			}
		}
		return f.joinData(line, rest, complete)
	}
	switch blank := len(bytes.TrimSpace(s)) == 0; {
	case blank:
	case f.other > maxErrorBody:
		f.dropping = !complete
		line = nil
	default:
		f.other += len(line)
		f.keepHead(line)
	}
	if f.open {
		// A blank line ends the event, as does any line that is not its
		// data: the event's last data line ends first.
		f.open = false
		f.scratch = append(append(f.scratch[:0], '\n'), line...)
		return f.scratch
	}
	return line
}

var lineFeed = []byte{'\n'}

// errPartChunk is a stream closed in the middle of a chunk's line: cut
// short, as one closed between chunks before its finish_reason is.
var errPartChunk = fmt.Errorf("%s: %w", partChunkReason, errTruncated)

const partChunkReason = "the connection closed in the middle of the answer's JSON"

// partChunk reports a last line, without its line end, that is the data of
// a chunk cut short: a JSON object begun and not ended.
func partChunk(line []byte) bool {
	rest, ok := bytes.CutPrefix(trimLeftSpace(line), []byte("data:"))
	return ok && cutJSON(rest)
}

// joinData hands on a data line (or the first part of a long one) whose
// data is rest. The format joins the data lines of one event with LF, and
// go-openai reads each line alone, so a chunk's JSON that a server spreads
// over several lines would be read as broken pieces. Such an event goes
// on as one line: the line end of each of its data lines is held back,
// and the next data line's "data:" is cut, leaving a CR where the colon or
// the space after it was. go-openai's line reader keeps a CR within a
// line, and to JSON it is white space, as the LF it stands for is.
//
// Only a line that starts a JSON object can start such an event, and its
// line end is held back only when nothing says the event ends there: a
// blank line already read after it says so, and so does data that is a
// whole object by itself. A server that leaves out the blank lines between
// events, each line a whole chunk, is read as before, each line as it
// comes. Telling a whole object reads the line a second time, which the
// common stream, whose blank line comes in the same read, never pays.
func (f *sseFilter) joinData(line, rest []byte, complete bool) []byte {
	out := line
	switch {
	case f.open:
		i := len(line) - len(rest) - 1
		line[i] = '\r'
		out = line[i:]
	case len(rest) == 0 || rest[0] != '{':
		return line // [DONE], or no chunk: decided on as it is
	case bytes.HasPrefix(rest, []byte(`{"error":`)):
		f.scratch = append(append(f.scratch[:0], "data: { "...), rest[1:]...)
		out = f.scratch
	}
	if !complete {
		f.inData, f.scan = true, objectScan{}
		f.scan.feed(rest)
		return out
	}
	return f.endData(out, rest)
}

// endData ends a data line that joinData handed on, deciding whether its
// line end goes on now. data is the line's data when the line was read
// whole, nil for a long line whose start went on already: f.scan followed
// that one as it was read.
func (f *sseFilter) endData(out, data []byte) []byte {
	f.inData = false
	switch {
	case f.blankNext():
		f.open = false
		return out
	case f.open:
	case data == nil && f.scan.whole(), data != nil && wholeObject(data):
		return out
	default:
		f.open = true
	}
	out = out[:len(out)-1]
	if len(out) > 0 && out[len(out)-1] == '\r' {
		out = out[:len(out)-1]
	}
	return out
}

// blankNext reports whether what was read after the current line begins
// with a blank line. It never waits for more.
func (f *sseFilter) blankNext() bool {
	if f.br.Buffered() == 0 {
		return false
	}
	b, _ := f.br.Peek(1)
	return b[0] == '\n' || b[0] == '\r' // a CR here is a CR LF's: lone ones are LFs by now
}

// wholeObject reports whether b, which starts with '{', holds that object
// whole and nothing after it but white space, judged by its strings,
// braces and brackets alone. json.Valid would allocate an error for each
// piece of an object, which is what it is mostly given here.
func wholeObject(b []byte) bool {
	var o objectScan
	o.feed(b)
	return o.whole()
}

// objectScan follows JSON that starts with '{', given in pieces, by its
// strings, braces and brackets alone, until the object closes and after.
type objectScan struct {
	depth  int
	inStr  bool // inside a string
	esc    bool // just after a backslash in a string
	closed bool // the object closed
	after  bool // something other than white space followed it
}

func (o *objectScan) feed(b []byte) {
	depth, inStr, esc, closed := o.depth, o.inStr, o.esc, o.closed
	for i := 0; i < len(b); i++ {
		if inStr {
			// The bulk of a chunk is its strings: run through them.
			if esc { // the piece before ended in the backslash
				esc = false
				continue
			}
			for ; i < len(b) && b[i] != '"'; i++ {
				if b[i] == '\\' {
					if i++; i == len(b) {
						esc = true
					}
				}
			}
			inStr = i >= len(b)
			continue
		}
		switch c := b[i]; {
		case closed:
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				o.after = true
				return
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth == 0 {
				closed = true
			}
		}
	}
	o.depth, o.inStr, o.esc, o.closed = depth, inStr, esc, closed
}

// whole reports whether what was fed is one object and white space.
func (o *objectScan) whole() bool { return o.closed && !o.after }

// maxHead bounds the start of a body kept to say what it was.
const maxHead = 1 << 10

// keepHead keeps the start of b, while no data line has gone by, to say
// what the body was if it turns out to be no stream of chunks.
func (f *sseFilter) keepHead(b []byte) {
	if i := f.info; i != nil && !i.data && len(i.head) < maxHead {
		i.head = append(i.head, b[:min(len(b), maxHead-len(i.head))]...)
	}
}

func trimLeftSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	return b
}

func (f *sseFilter) Close() error {
	if f.br == nil {
		return nil
	}
	// Drain what the transport has not read yet. When the attempt was
	// aborted its context is already cancelled and this returns at once.
	if f.err == nil {
		_, _ = io.CopyN(io.Discard, f.br, maxDrain)
	}
	f.br.Reset(nil)
	sseReaderPool.Put(f.br)
	f.br = nil
	f.pending = nil
	return f.body.Close()
}

// addQuery adds the base URL's query to a request's URL.
func addQuery(u *url.URL, query string) {
	switch {
	case query == "":
	case u.RawQuery == "":
		u.RawQuery = query
	default:
		u.RawQuery += "&" + query
	}
}
