package llm

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeServer is an OpenAI-compatible endpoint whose handler is told which
// request (1-based) it is serving, so a test can fail the first attempts.
type fakeServer struct {
	*httptest.Server
	requests atomic.Int32
	conns    atomic.Int32 // connections accepted

	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func newFakeServer(t testing.TB, h func(n int, w http.ResponseWriter, r *http.Request)) *fakeServer {
	t.Helper()
	fs := &fakeServer{}
	fs.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, m))
		fs.mu.Lock()
		fs.bodies = append(fs.bodies, m)
		fs.headers = append(fs.headers, r.Header.Clone())
		fs.mu.Unlock()
		h(int(fs.requests.Add(1)), w, r)
	}))
	fs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			fs.conns.Add(1)
		}
	}
	fs.Start()
	t.Cleanup(fs.Close)
	return fs
}

type bodyKey struct{}

// requestBody is the decoded JSON body of a request to a fakeServer.
func requestBody(r *http.Request) map[string]any {
	m, _ := r.Context().Value(bodyKey{}).(map[string]any)
	return m
}

func (fs *fakeServer) body(i int) map[string]any {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.bodies[i]
}

func (fs *fakeServer) header(i int) http.Header {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.headers[i]
}

// sleepRecorder stands in for Config.Sleep: it records the waits and
// returns at once.
type sleepRecorder struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleepRecorder) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleepRecorder) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newTestClient returns a client for fs with recorded sleeps and three
// retries; opts adjust the config.
func newTestClient(fs *fakeServer, opts ...func(*Config)) (*Client, *sleepRecorder) {
	rec := &sleepRecorder{}
	cfg := Config{
		BaseURL:    fs.URL + "/v1",
		MaxRetries: 3,
		Sleep:      rec.sleep,
	}
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg), rec
}

// sse writes a server-sent event stream.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

// data sends one event whose data is v (a string is sent as is, anything
// else as JSON).
func (s sse) data(v any) {
	text, ok := v.(string)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		text = string(b)
	}
	s.raw("data: " + text + "\n\n")
}

func (s sse) raw(text string) {
	_, _ = io.WriteString(s.w, text)
	s.w.(http.Flusher).Flush()
}

func (s sse) done() { s.raw("data: [DONE]\n\n") }

type obj = map[string]any

// chunkOf wraps choice fields into a chat.completion.chunk.
func chunkOf(delta obj, finish any) obj {
	return obj{
		"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000, "model": "test-model",
		"choices": []obj{{"index": 0, "delta": delta, "finish_reason": finish}},
	}
}

func contentChunk(text string) obj { return chunkOf(obj{"content": text}, nil) }

func toolChunk(calls ...obj) obj { return chunkOf(obj{"tool_calls": calls}, nil) }

func finishChunk(reason string) obj { return chunkOf(obj{}, reason) }

func usageOf(prompt, completion int) obj {
	return obj{"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
}

// call builds one tool-call delta; nil fields are left out.
func call(index any, id, name string, args any) obj {
	c := obj{"type": "function"}
	if index != nil {
		c["index"] = index
	}
	if id != "" {
		c["id"] = id
	}
	fn := obj{}
	if name != "" {
		fn["name"] = name
	}
	if args != nil {
		fn["arguments"] = args
	}
	c["function"] = fn
	return c
}

// simpleAnswer streams "Hello, world" with a stop finish and usage.
func simpleAnswer(w http.ResponseWriter) {
	s := startSSE(w)
	s.data(contentChunk("Hello, "))
	s.data(contentChunk("world"))
	s.data(finishChunk("stop"))
	s.data(obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "test-model", "choices": []obj{}, "usage": usageOf(10, 3)})
	s.done()
}

// jsonError answers with an OpenAI-style JSON error body.
func jsonError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	e := obj{"message": msg, "type": typ}
	if code != "" {
		e["code"] = code
	}
	_ = json.NewEncoder(w).Encode(obj{"error": e})
}

// deltaLog collects the deltas of a call.
type deltaLog struct {
	mu     sync.Mutex
	deltas []Delta
}

func (d *deltaLog) add(x Delta) {
	d.mu.Lock()
	d.deltas = append(d.deltas, x)
	d.mu.Unlock()
}

func (d *deltaLog) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := ""
	for _, x := range d.deltas {
		switch {
		case x.Reset:
			s += "|RESET|"
		case x.ToolName != "":
			s += "[tool:" + x.ToolName + "]"
		default:
			s += x.Content
		}
	}
	return s
}

func userRequest(text string) Request {
	return Request{Model: "test-model", Messages: []Message{{Role: RoleUser, Content: text}}}
}

func mustStream(t *testing.T, c *Client, req Request, onDelta func(Delta)) *Response {
	t.Helper()
	resp, err := c.Stream(context.Background(), req, onDelta)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	return resp
}

func asError(t *testing.T, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("Stream succeeded, want an error")
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T (%v) is not an *llm.Error", err, err)
	}
	return e
}

func wantToolCalls(t *testing.T, got []ToolCall, want ...ToolCall) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d tool calls %+v, want %d %+v", len(got), got, len(want), want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("tool call %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}
