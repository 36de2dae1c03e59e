package llm

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// directTransport speaks HTTP/1.1 to plain http:// servers (the scripted
// model, Ollama, llama.cpp, vLLM, LM Studio on the same machine or
// network) from the calling goroutine: it writes the request with its body
// in one vectored write, reads the response head itself, and the caller
// reads the body straight from the connection. net/http's transport runs a
// reader and a writer goroutine per connection, hands every request
// between them and the caller, and dials in a goroutine of its own; when
// hundreds of sub-agents start at once, those hand-offs queue behind each
// other on a busy machine and show in every turn. https and proxied
// requests go to fallback.
type directTransport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	proxy       func(*http.Request) (*url.URL, error) // nil: no proxy
	fallback    http.RoundTripper
	idleTimeout time.Duration // a pooled connection idle longer is closed, not reused
	maxIdle     int           // pooled connections per host

	mu      sync.Mutex
	idle    map[string][]*directConn // by host:port, oldest first
	janitor *time.Timer              // closes expired connections; nil while the pool is empty
	dialing map[string]int           // connections being opened ahead by preconnect, by host:port
	gen     int                      // CloseIdleConnections calls: a connection opened ahead across one is closed
}

// directConn is one connection to a server.
type directConn struct {
	t      *directTransport
	key    string
	conn   net.Conn
	br     *bufio.Reader
	w      reqWriter
	read   int64 // bytes read since the connection was taken from the pool
	idleAt time.Time
	reused bool
}

// Read counts what arrives, so that a pooled connection the server has
// closed (nothing arrives) can be told from an exchange that failed.
func (pc *directConn) Read(p []byte) (int, error) {
	n, err := pc.conn.Read(p)
	pc.read += int64(n)
	return n, err
}

// serves reports whether req is this transport's to make, not fallback's:
// plain http:// without a proxy.
func (t *directTransport) serves(req *http.Request) bool {
	if req.URL.Scheme != "http" {
		return false
	}
	if t.proxy != nil {
		if p, err := t.proxy(req); err != nil || p != nil {
			return false
		}
	}
	return true
}

// hostPort is the host:port a request to u connects to, the key of its pool.
func hostPort(u *url.URL) string {
	if u.Port() == "" {
		return net.JoinHostPort(u.Hostname(), "80")
	}
	return u.Host
}

func (t *directTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.serves(req) {
		return t.fallback.RoundTrip(req)
	}
	ctx := req.Context()
	addr := hostPort(req.URL)
	fail := func(err error) (*http.Response, error) {
		if req.Body != nil {
			req.Body.Close()
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	for {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		pc, err := t.get(ctx, addr)
		if err != nil {
			return fail(err)
		}
		resp, err := pc.roundTrip(req)
		if err == nil {
			return resp, nil
		}
		// A pooled connection that the server closed while it sat idle
		// fails before a byte of the answer arrives: the request goes again
		// on a new connection, as net/http does. The others pooled with it
		// are most likely closed too (a restarted server).
		if !pc.reused || pc.read > 0 || ctx.Err() != nil || req.GetBody == nil {
			return fail(err)
		}
		body, gerr := req.GetBody()
		if gerr != nil {
			return fail(err)
		}
		req.Body = body
		t.dropIdle(addr)
	}
}

// get returns a pooled connection to addr, or dials one.
func (t *directTransport) get(ctx context.Context, addr string) (*directConn, error) {
	now := time.Now()
	t.mu.Lock()
	t.pruneLocked(addr, now)
	if l := t.idle[addr]; len(l) > 0 {
		pc := l[len(l)-1]
		l[len(l)-1] = nil
		t.idle[addr] = l[:len(l)-1]
		t.mu.Unlock()
		pc.reused, pc.read = true, 0
		return pc, nil
	}
	t.mu.Unlock()
	conn, err := t.dial(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	return t.newConn(addr, conn), nil
}

func (t *directTransport) newConn(addr string, conn net.Conn) *directConn {
	pc := &directConn{t: t, key: addr, conn: conn}
	pc.br = bufio.NewReaderSize(pc, 4<<10)
	pc.w.conn = conn
	return pc
}

// preconnect opens connections to addr in the background until n are
// pooled or on their way, for calls about to be made (sub-agents being
// created, a run being stored): the dials then overlap that work instead of
// following it. A dial that fails is dropped; the call that needed the
// connection dials again and reports its own error.
func (t *directTransport) preconnect(addr string, n int) {
	t.mu.Lock()
	want := n - len(t.idle[addr]) - t.dialing[addr]
	if want <= 0 {
		t.mu.Unlock()
		return
	}
	if t.dialing == nil {
		t.dialing = map[string]int{}
	}
	t.dialing[addr] += want
	gen := t.gen
	t.mu.Unlock()
	for range want {
		go func() {
			conn, err := t.dial(context.Background(), "tcp", addr)
			t.mu.Lock()
			if t.dialing[addr]--; t.dialing[addr] == 0 {
				delete(t.dialing, addr)
			}
			stale := t.gen != gen
			t.mu.Unlock()
			if err != nil {
				return
			}
			if stale { // the pool was closed meanwhile
				conn.Close()
				return
			}
			t.put(t.newConn(addr, conn))
		}()
	}
}

// put pools a connection whose last response was read to its end.
func (t *directTransport) put(pc *directConn) {
	now := time.Now()
	pc.idleAt = now
	t.mu.Lock()
	if t.idle == nil {
		t.idle = map[string][]*directConn{}
	}
	t.pruneLocked(pc.key, now)
	if len(t.idle[pc.key]) >= t.maxIdle {
		t.mu.Unlock()
		pc.conn.Close()
		return
	}
	t.idle[pc.key] = append(t.idle[pc.key], pc)
	if t.janitor == nil {
		t.janitor = time.AfterFunc(t.idleTimeout, t.sweep)
	}
	t.mu.Unlock()
}

// sweep closes the connections that have been idle for idleTimeout, so a
// pool left alone (a finished run, a dashboard kept open) does not hold
// them open for ever, and comes back when the oldest left will expire.
func (t *directTransport) sweep() {
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	var next time.Time
	for addr := range t.idle {
		t.pruneLocked(addr, now)
		if l := t.idle[addr]; len(l) == 0 {
			delete(t.idle, addr)
		} else if at := l[0].idleAt.Add(t.idleTimeout); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if next.IsZero() {
		t.janitor = nil
		return
	}
	t.janitor.Reset(next.Sub(now))
}

// pruneLocked closes the connections to addr idle for longer than
// idleTimeout: the oldest, at the front.
func (t *directTransport) pruneLocked(addr string, now time.Time) {
	l := t.idle[addr]
	n := 0
	for n < len(l) && now.Sub(l[n].idleAt) >= t.idleTimeout {
		l[n].conn.Close()
		l[n] = nil
		n++
	}
	if n > 0 {
		t.idle[addr] = l[n:]
	}
}

func (t *directTransport) dropIdle(addr string) {
	t.mu.Lock()
	l := t.idle[addr]
	delete(t.idle, addr)
	t.mu.Unlock()
	for _, pc := range l {
		pc.conn.Close()
	}
}

// CloseIdleConnections closes the pooled connections (http.Client calls it).
func (t *directTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.gen++
	if t.janitor != nil {
		t.janitor.Stop()
		t.janitor = nil
	}
	t.mu.Unlock()
	for _, l := range idle {
		for _, pc := range l {
			pc.conn.Close()
		}
	}
	if ci, ok := t.fallback.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}

// idleCount is how many connections to addr are pooled (for tests).
func (t *directTransport) idleCount(addr string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.idle[addr])
}

func (pc *directConn) roundTrip(req *http.Request) (*http.Response, error) {
	// Cancelling the request closes the connection: a write or read in
	// progress returns at once, and the connection is not reused.
	stop := context.AfterFunc(req.Context(), func() { pc.conn.Close() })
	resp, err := pc.exchange(req)
	if err != nil {
		stop()
		pc.conn.Close()
		return nil, err
	}
	resp.Body = &directBody{pc: pc, rc: resp.Body, stop: stop, reusable: !resp.Close && !req.Close}
	return resp, nil
}

// earlyAnswerWait is how long a request that could not be written in full
// waits for an answer the server may have sent before reading it all.
const earlyAnswerWait = 250 * time.Millisecond

func (pc *directConn) exchange(req *http.Request) (*http.Response, error) {
	// Request.Write uses pc.w as it is (it is an io.ByteWriter) and hands
	// the body to its ReadFrom.
	werr := req.Write(&pc.w)
	if werr == nil {
		werr = pc.w.Flush()
	}
	if werr == nil {
		return pc.readResponse(req)
	}
	if req.Context().Err() != nil {
		return nil, werr
	}
	// A server may answer before it has read the whole request (a refused
	// key, a body too large) and close: its answer says more than the
	// broken pipe. The connection is not reused after that.
	pc.conn.SetReadDeadline(time.Now().Add(earlyAnswerWait))
	resp, err := pc.readResponse(req)
	if err != nil {
		return nil, werr
	}
	pc.conn.SetReadDeadline(time.Time{})
	resp.Close = true
	return resp, nil
}

// readResponse reads the answer to req, skipping interim (1xx) ones.
func (pc *directConn) readResponse(req *http.Request) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(pc.br, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // 100 Continue, 103 Early Hints: the real answer follows
		}
		return resp, nil
	}
}

// reqWriter collects a request's head and sends it with the body: a
// prepared body (see bodyReader.writeTo) goes in the same vectored write,
// straight from its own buffer.
type reqWriter struct {
	conn net.Conn
	head []byte
}

func (w *reqWriter) Write(p []byte) (int, error) {
	w.head = append(w.head, p...)
	if len(w.head) >= 64<<10 {
		return len(p), w.Flush()
	}
	return len(p), nil
}

func (w *reqWriter) WriteByte(c byte) error {
	_, err := w.Write([]byte{c})
	return err
}

func (w *reqWriter) WriteString(s string) (int, error) {
	w.head = append(w.head, s...)
	if len(w.head) >= 64<<10 {
		return len(s), w.Flush()
	}
	return len(s), nil
}

func (w *reqWriter) ReadFrom(r io.Reader) (int64, error) {
	if lr, ok := r.(*io.LimitedReader); ok {
		if br, ok := lr.R.(*bodyReader); ok {
			head := w.head
			w.head = w.head[:0]
			n, err := br.writeTo(w.conn, lr.N, head)
			n -= int64(len(head))
			if n < 0 {
				n = 0
			}
			lr.N -= n
			return n, err
		}
	}
	return io.Copy(writerOnly{w}, r)
}

// Flush sends what is buffered.
func (w *reqWriter) Flush() error {
	if len(w.head) == 0 {
		return nil
	}
	_, err := w.conn.Write(w.head)
	w.head = w.head[:0]
	if cap(w.head) > 4<<10 {
		w.head = nil // a large body went through here; do not keep its buffer per connection
	}
	return err
}

// directBody pools the connection once the body has been read to its end,
// and closes it when the body is closed before that.
type directBody struct {
	pc       *directConn
	rc       io.ReadCloser
	stop     func() bool
	reusable bool

	mu   sync.Mutex
	done bool
}

func (b *directBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if err != nil {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *directBody) Close() error {
	b.finish(false)
	return nil
}

func (b *directBody) finish(atEOF bool) {
	b.mu.Lock()
	done := b.done
	b.done = true
	b.mu.Unlock()
	if done {
		return
	}
	if !b.stop() {
		return // the context fired and closed the connection
	}
	if atEOF && b.reusable && b.pc.br.Buffered() == 0 {
		b.pc.t.put(b.pc)
		return
	}
	b.pc.conn.Close()
}
