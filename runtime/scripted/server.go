package scripted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/swarmdeck/swarmdeck/runtime/internal/alarm"
	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

// Config configures a Server.
type Config struct {
	// Latency is the time from a request's arrival to the first chunk of
	// its reply, as a real model takes time to start answering. Reading and
	// decoding the request count toward it, as prompt processing does.
	Latency time.Duration
	// StreamSpeed is chunks per second while streaming. Content streams one
	// word per chunk and tool-call arguments in dialect-sized pieces. 0 sends
	// the reply in as few chunks as the dialect allows: the content whole and
	// each call whole (OpenAI: all calls in one chunk; llama.cpp: a head and
	// one argument piece per call; Ollama: one chunk per call).
	StreamSpeed int
	// Dialect is the wire framing of tool calls and usage: "openai"
	// (default), "ollama" or "llamacpp".
	Dialect string
	// Policy decides the replies; default Demo().
	Policy Policy
	// Logger receives request and error logs; default discards.
	Logger *slog.Logger
}

// Stats counts what a Server did since it was created.
type Stats struct {
	Requests         int64 // chat completion requests received
	Streamed         int64 // of which asked for a stream
	Completed        int64 // replies sent in full
	Cancelled        int64 // replies abandoned: the client went away or the server closed
	BadRequests      int64 // answered 400
	Faults           int64 // scripted faults served
	Active           int64 // replies in progress now
	PromptTokens     int64 // reported in usage, summed
	CompletionTokens int64
}

// Server is the scripted model: an OpenAI-compatible HTTP server whose
// replies come from a Policy.
type Server struct {
	policy     Policy
	dialect    dialect
	dialectErr error
	logger     *slog.Logger

	latency atomic.Int64 // time.Duration
	speed   atomic.Int64
	seq     atomic.Uint64

	requests, streamed, completed, cancelled atomic.Int64
	badRequests, faults, active              atomic.Int64
	promptTokens, completionTokens           atomic.Int64

	streams sync.Pool // *stream, reused between replies
	tools   toolsCache

	mu       sync.Mutex
	closing  bool
	closed   chan struct{} // closed by Close: every reply in progress stops
	inflight sync.WaitGroup
	srv      *http.Server
	served   chan struct{} // closed when Serve returns
}

// New returns a server for cfg. An unknown dialect is reported by Start and
// by every chat request.
func New(cfg Config) *Server {
	s := &Server{
		policy: cfg.Policy,
		logger: cfg.Logger,
		closed: make(chan struct{}),
	}
	if s.policy == nil {
		s.policy = Demo()
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	d, ok := parseDialect(cfg.Dialect)
	if !ok {
		s.dialectErr = fmt.Errorf("scripted model: unknown dialect %q: use openai, ollama or llamacpp", cfg.Dialect)
	}
	s.dialect = d
	s.latency.Store(int64(cfg.Latency))
	s.speed.Store(int64(cfg.StreamSpeed))
	s.streams.New = func() any { return &stream{} }
	return s
}

// Start listens on addr ("" means 127.0.0.1 on a free port) and serves in
// the background. It returns the base URL to give an OpenAI client, such as
// http://127.0.0.1:41234/v1.
func (s *Server) Start(addr string) (baseURL string, err error) {
	if s.dialectErr != nil {
		return "", s.dialectErr
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return "", errors.New("scripted model: server is closed; create a new one")
	}
	if s.srv != nil {
		return "", errors.New("scripted model: server already started")
	}
	// No TCP keep-alive probes: the clients are local or close by, and
	// setting them up is three system calls on every connection a swarm
	// opens.
	lc := net.ListenConfig{KeepAlive: -1}
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return "", fmt.Errorf("scripted model: listen on %s: %w", addr, err)
	}
	s.srv = &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
	s.served = make(chan struct{})
	go func() {
		defer close(s.served)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.logger.Error("scripted model stopped serving", "err", err)
		}
	}()
	return "http://" + dialable(ln.Addr()) + "/v1", nil
}

// dialable is the address to reach a listener at from this machine: one
// listening on every address (":8080", "0.0.0.0:8080", which Go reports
// as "[::]:8080") is reached at 127.0.0.1, not at "[::]", which a client
// would have to know means "here".
func dialable(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(tcp.Port))
}

// Close stops the server: replies in progress end at once, and Close
// returns when their handlers (and the listener started by Start) are gone.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	close(s.closed)
	srv, served := s.srv, s.served
	s.mu.Unlock()
	var err error
	if srv != nil {
		err = srv.Close()
		<-served
	}
	s.inflight.Wait()
	return err
}

// SetLatency changes the latency of replies started from now on.
func (s *Server) SetLatency(d time.Duration) { s.latency.Store(int64(d)) }

// SetStreamSpeed changes the streaming speed; streams in progress pick it
// up at their next chunk.
func (s *Server) SetStreamSpeed(n int) { s.speed.Store(int64(n)) }

// Stats returns a snapshot of the counters.
func (s *Server) Stats() Stats {
	return Stats{
		Requests:         s.requests.Load(),
		Streamed:         s.streamed.Load(),
		Completed:        s.completed.Load(),
		Cancelled:        s.cancelled.Load(),
		BadRequests:      s.badRequests.Load(),
		Faults:           s.faults.Load(),
		Active:           s.active.Load(),
		PromptTokens:     s.promptTokens.Load(),
		CompletionTokens: s.completionTokens.Load(),
	}
}

// Handler serves the OpenAI API subset the runtime uses, under /v1 (and
// without the prefix, as some clients are configured that way).
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serveHTTP) }

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST for chat completions", "invalid_request_error")
			return
		}
		s.chat(w, r)
	case "/v1/models", "/models":
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[`+modelJSON+`]}`)
	case "/v1/models/" + ModelID, "/models/" + ModelID:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, modelJSON)
	default:
		writeError(w, http.StatusNotFound, "unknown endpoint "+r.URL.Path+": the scripted model serves /v1/chat/completions and /v1/models", "invalid_request_error")
	}
}

const modelJSON = `{"id":"` + ModelID + `","object":"model","created":0,"owned_by":"swarmdeck"}`

// maxBody bounds a request; conversations are large, but not this large.
const maxBody = 64 << 20

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "the scripted model is shutting down", "server_error")
		return
	}
	s.inflight.Add(1)
	s.mu.Unlock()
	defer s.inflight.Done()
	s.requests.Add(1)

	if s.dialectErr != nil {
		writeError(w, http.StatusInternalServerError, s.dialectErr.Error(), "server_error")
		return
	}
	buf := bodyPool.Get().(*bodyBuf)
	err := readBody(r, buf)
	bodyLen := len(buf.b)
	var req *wireRequest
	if err == nil {
		// The reader sees the pooled bytes without a copy and copies out
		// only the strings the policy keeps, before the buffer goes back.
		req, err = decodeBody(unsafe.String(unsafe.SliceData(buf.b), len(buf.b)), true, &s.tools)
	}
	if cap(buf.b) <= maxPooled {
		bodyPool.Put(buf)
	}
	if errors.Is(err, errTooLarge) {
		s.badRequests.Add(1)
		writeError(w, http.StatusRequestEntityTooLarge, err.Error(), "invalid_request_error")
		return
	}
	if err != nil {
		s.badRequests.Add(1)
		writeError(w, http.StatusBadRequest, err.Error(), "invalid_request_error")
		return
	}
	if req.Stream {
		s.streamed.Add(1)
	}
	rep, err := s.reply(req)
	if err != nil {
		s.logger.Error("scripted policy failed", "err", err)
		writeError(w, http.StatusInternalServerError, err.Error(), "server_error")
		return
	}
	if s.logger.Enabled(r.Context(), slog.LevelDebug) {
		s.logger.Debug("scripted reply", "messages", len(req.Messages), "stream", req.Stream,
			"tool_calls", len(rep.ToolCalls), "content_bytes", len(rep.Content), "fault", rep.Fault != nil)
	}

	// The reply is encoded before the latency is waited out, so that it
	// goes out the moment it is due.
	f := rep.Fault
	var (
		out   []byte  // a whole completion
		st    *stream // or its event stream
		u     usage
		paced = s.speed.Load() > 0
	)
	if f == nil || f.Status == 0 {
		n := s.seq.Add(1)
		respID := "chatcmpl-scripted-" + strconv.FormatUint(n, 10)
		calls := make([]encodedCall, len(rep.ToolCalls))
		completion := len(rep.Content)
		for i, c := range rep.ToolCalls {
			calls[i] = encodedCall{id: callID(s.dialect, n, i), name: c.Name, args: encodeArgs(c.Args, s.logger)}
			completion += len(c.Name) + len(calls[i].args)
		}
		u = usage{prompt: max(1, bodyLen/4), completion: max(1, completion/4)}
		created := time.Now().Unix()
		if req.Stream {
			st = s.streams.Get().(*stream)
			defer func() {
				if cap(st.buf) <= maxPooled {
					s.streams.Put(st)
				}
			}()
			encodeStream(st, s.dialect, respID, created, rep.Content, calls, paced, req.IncludeUsage, u)
		} else {
			out = appendCompletion(make([]byte, 0, 512+len(rep.Content)), s.dialect, respID, created, rep.Content, calls, u)
		}
	}

	s.active.Add(1)
	defer s.active.Add(-1)
	p := pacer{ctx: r.Context(), closed: s.closed}
	if !p.wait(time.Duration(s.latency.Load()) - time.Since(arrived)) {
		s.cancelled.Add(1)
		s.cutShort(w, &p, false)
		return
	}
	if f != nil && f.Status != 0 {
		s.faults.Add(1)
		writeFault(w, f)
		return
	}
	s.promptTokens.Add(int64(u.prompt))
	s.completionTokens.Add(int64(u.completion))
	if f != nil {
		s.faults.Add(1)
	}

	if !req.Stream {
		if f != nil && !p.wait(f.Stall) {
			s.cancelled.Add(1)
			s.cutShort(w, &p, false)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(out)))
		if f != nil && f.Truncate {
			// Half the promised body: the client sees the connection end
			// early, as when a proxy or server dies mid-response.
			_, _ = w.Write(out[:len(out)/2])
			return
		}
		if _, err := w.Write(out); err != nil {
			s.cancelled.Add(1)
			return
		}
		s.completed.Add(1)
		return
	}

	last := len(st.ends)
	if f != nil && f.Truncate {
		last = st.body
	}
	stall := time.Duration(0)
	if f != nil {
		stall = f.Stall
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	if !paced && stall == 0 && last == len(st.ends) && last > 0 {
		// The whole stream goes out in one write: with its length known,
		// the headers and events leave in one segment and no chunked
		// terminator follows them, which the client would wait for
		// before it can reuse the connection.
		h.Set("Content-Length", strconv.Itoa(st.ends[last-1]))
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)

	// Body chunks are paced; the closing chunks (finish, usage, [DONE]) go
	// out with the last body chunk, as real servers send them together.
	from := 0
	for i := 1; i < last; i++ {
		var d time.Duration
		if paced && i < st.body {
			d = interval(s.speed.Load())
		}
		if i == 1 {
			d += stall
		}
		if d == 0 && !(paced && i < st.body) {
			continue
		}
		if !s.write(w, flusher, st.buf[from:st.ends[i-1]]) || !p.wait(d) {
			s.cancelled.Add(1)
			s.cutShort(w, &p, true)
			return
		}
		from = st.ends[i-1]
	}
	if last > 0 && !s.write(w, flusher, st.buf[from:st.ends[last-1]]) {
		s.cancelled.Add(1)
		return
	}
	if f != nil && f.Truncate {
		return
	}
	s.completed.Add(1)
}

// cutShort ends a reply the server's closing interrupted, so that no
// client takes it for a whole one: before anything was sent, a 503 saying
// why; in the middle of a stream, a broken connection (a handler that
// returned would end the stream as if it were complete). A client that
// went away gets nothing.
func (s *Server) cutShort(w http.ResponseWriter, p *pacer, started bool) {
	if !p.closing() || p.ctx.Err() != nil {
		return
	}
	if started {
		panic(http.ErrAbortHandler)
	}
	w.Header().Set("Connection", "close")
	writeError(w, http.StatusServiceUnavailable, "the scripted model is shutting down", "server_error")
}

// write sends chunks and flushes them to the client.
func (s *Server) write(w http.ResponseWriter, flusher http.Flusher, b []byte) bool {
	if _, err := w.Write(b); err != nil {
		return false
	}
	if flusher != nil {
		flusher.Flush()
	}
	return true
}

// reply asks the policy, turning a panic into an error so a broken scenario
// or policy answers 500 instead of killing the connection.
func (s *Server) reply(req *wireRequest) (rep Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("scripted model: the policy failed: %v", p)
		}
	}()
	return s.policy.Reply(&req.Request), nil
}

func interval(speed int64) time.Duration {
	if speed <= 0 {
		return 0
	}
	return time.Second / time.Duration(speed)
}

// pacer waits between chunks and gives up as soon as the client goes away
// or the server closes.
type pacer struct {
	ctx    context.Context
	closed <-chan struct{}
	t      *time.Timer
}

// closing reports whether the server is closing.
func (p *pacer) closing() bool {
	select {
	case <-p.closed:
		return true
	default:
		return false
	}
}

func (p *pacer) wait(d time.Duration) bool {
	if d <= 0 {
		select {
		case <-p.ctx.Done():
			return false
		case <-p.closed:
			return false
		default:
			return true
		}
	}
	// The reply is due at a time the bench counts on: be woken then by the
	// alarm, or by the timer if every processor is too busy to poll.
	a := alarm.Set(time.Now().Add(d))
	if p.t == nil {
		p.t = time.NewTimer(d)
	} else {
		p.t.Reset(d)
	}
	select {
	case <-p.t.C:
		return true
	case <-a.C:
		p.t.Stop()
		return true
	case <-p.ctx.Done():
	case <-p.closed:
	}
	p.t.Stop()
	a.Cancel()
	return false
}

var errTooLarge = errors.New("request body too large")

// bodyBuf holds one request body while it is decoded. Bodies are large
// (every turn resends the conversation and all tool schemas) and short-lived,
// so they are read into pooled buffers instead of fresh allocations.
type bodyBuf struct{ b []byte }

var bodyPool = sync.Pool{New: func() any { return &bodyBuf{b: make([]byte, 0, 64<<10)} }}

// maxPooled keeps an occasional huge body from pinning its buffer.
const maxPooled = 1 << 20

func readBody(r *http.Request, buf *bodyBuf) error {
	if r.ContentLength > maxBody {
		return fmt.Errorf("%w: %d bytes, the limit is %d", errTooLarge, r.ContentLength, maxBody)
	}
	b := buf.b[:0]
	if r.ContentLength > 0 {
		// Room for the final read that reports EOF, so that it does not
		// grow the buffer.
		b = slices.Grow(b, int(r.ContentLength)+512)
	}
	for {
		if len(b) == cap(b) {
			b = slices.Grow(b, 32<<10)
		}
		n, err := r.Body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if len(b) > maxBody {
			return fmt.Errorf("%w: the limit is %d bytes", errTooLarge, maxBody)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the request body: %w", err)
		}
	}
	buf.b = b
	return nil
}

// encodeArgs turns a Call's Args into the JSON text of "arguments",
// without escaping <, > and & as json.Marshal does: models write them as
// they are, and the dashboard shows the arguments as sent.
func encodeArgs(args any, logger *slog.Logger) string {
	switch a := args.(type) {
	case nil:
		return "{}"
	case json.RawMessage:
		return string(a)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		logger.Error("scripted policy gave unencodable tool arguments", "err", err)
		return "{}"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// callID makes tool call ids that look like each dialect's and are distinct
// within a reply and, in practice, across replies.
func callID(d dialect, n uint64, i int) string {
	x := mix(n<<8 | uint64(i&0xff))
	var b []byte
	switch d {
	case dialectOllama:
		// call_ and 8 hex digits, the last two the call's position.
		b = append(make([]byte, 0, 13), "call_"...)
		b = appendHex(b, mix(n)&0xffffff, 6)
		b = appendHex(b, uint64(i&0xff), 2)
	case dialectLlamaCpp:
		b = appendHex(make([]byte, 0, 32), x, 16)
		b = appendHex(b, mix(x), 16)
	default:
		b = append(make([]byte, 0, 29), "call_"...)
		b = appendHex(b, x, 16)
		b = appendHex(b, mix(x)&0xffffffff, 8)
	}
	return string(b)
}

func appendHex(b []byte, x uint64, digits int) []byte {
	const hexDigits = "0123456789abcdef"
	for k := digits - 1; k >= 0; k-- {
		b = append(b, hexDigits[(x>>(4*k))&0xf])
	}
	return b
}

// mix is splitmix64's finaliser: a bijection, so distinct inputs give
// distinct ids.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// writeError answers with an OpenAI-style error object.
func writeError(w http.ResponseWriter, status int, msg, typ string) {
	b := append([]byte(`{"error":{"message":`), nil...)
	b = jsontext.AppendString(b, msg)
	b = append(b, `,"type":`...)
	b = jsontext.AppendString(b, typ)
	b = append(b, `,"param":null,"code":null}}`...)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeFault(w http.ResponseWriter, f *Fault) {
	if f.RetryAfter != "" {
		w.Header().Set("Retry-After", f.RetryAfter)
	}
	if f.RetryAfterMs > 0 {
		w.Header().Set("retry-after-ms", strconv.Itoa(f.RetryAfterMs))
	}
	if f.Body == "" {
		typ := "server_error"
		switch {
		case f.Status == http.StatusTooManyRequests:
			typ = "rate_limit_error"
		case f.Status < 500:
			typ = "invalid_request_error"
		}
		writeError(w, f.Status, fmt.Sprintf("scripted fault: HTTP %d", f.Status), typ)
		return
	}
	if json.Valid([]byte(f.Body)) {
		w.Header().Set("Content-Type", "application/json")
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.WriteHeader(f.Status)
	_, _ = io.WriteString(w, f.Body)
}
