package llm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newDirect returns the transport newHTTPClient builds, without a proxy.
func newDirect(t *testing.T) *directTransport {
	t.Helper()
	hc := newHTTPClient()
	dt, ok := hc.Transport.(*directTransport)
	if !ok {
		t.Fatalf("newHTTPClient's transport is %T, want *directTransport", hc.Transport)
	}
	dt.proxy = nil
	t.Cleanup(dt.CloseIdleConnections)
	return dt
}

// countingServer is an httptest server that counts the connections it
// accepted and those it saw closed.
func countingServer(t *testing.T, h http.HandlerFunc) (srv *httptest.Server, opened, closed *atomic.Int64) {
	t.Helper()
	opened, closed = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			opened.Add(1)
		case http.StateClosed:
			closed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, opened, closed
}

// getAll makes a GET and reads the answer to its end.
func getAll(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	return err
}

func hostOf(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

// echoHandler answers with the length and SHA-256 of the body it got.
func echoHandler(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%d %s %s", n, hex.EncodeToString(h.Sum(nil)), r.Header.Get("X-Test"))
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%d %s", len(s), hex.EncodeToString(sum[:]))
}

func TestDirectSendsEveryKindOfBody(t *testing.T) {
	srv, conns, _ := countingServer(t, echoHandler)
	dt := newDirect(t)
	client := &http.Client{Transport: dt}
	big := strings.Repeat("0123456789abcdef", 9000) // larger than a write buffer

	prepared := func(data, tail string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions", nil)
		rb := &preparedBody{data: []byte(data)}
		rb.refs.Store(1)
		if err := setBody(req, rb, tail); err != nil {
			t.Fatal(err)
		}
		return req
	}
	known := func(s string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(s))
		return req
	}
	unknown := func(s string) *http.Request {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, io.NopCloser(strings.NewReader(s)))
		req.ContentLength = -1 // sent chunked
		return req
	}
	cases := []struct {
		name string
		req  *http.Request
		want string
	}{
		{"prepared", prepared(`{"model":"m","messages":[]`, `,"stream":true}`), `{"model":"m","messages":[],"stream":true}`},
		{"prepared large", prepared(big, "}"), big + "}"},
		{"prepared empty tail", prepared(big, ""), big},
		{"known length", known("hello"), "hello"},
		{"known length large", known(big), big},
		{"unknown length", unknown(big), big},
		{"no body", func() *http.Request { r, _ := http.NewRequest(http.MethodGet, srv.URL, nil); return r }(), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.Header.Set("X-Test", "h-"+strings.ReplaceAll(tc.name, " ", "_"))
			resp, err := client.Do(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			want := digest(tc.want) + " h-" + strings.ReplaceAll(tc.name, " ", "_")
			if string(got) != want {
				t.Fatalf("server got %q, want %q", got, want)
			}
		})
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("%d connections for %d sequential requests, want 1 (kept alive)", n, len(cases))
	}
	if n := dt.idleCount(hostOf(t, srv.URL)); n != 1 {
		t.Errorf("%d pooled connections after the requests, want 1", n)
	}
}

func TestDirectStreamsTheBodyAsItArrives(t *testing.T) {
	firstSeen := make(chan struct{})
	srv, _, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-firstSeen:
		case <-time.After(10 * time.Second):
			return // the client never saw the first event: the test fails below
		}
		io.WriteString(w, "data: two\n\n")
	})
	dt := newDirect(t)
	resp, err := (&http.Client{Transport: dt}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	close(firstSeen)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "\ndata: two\n\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
	if n := dt.idleCount(hostOf(t, srv.URL)); n != 1 {
		t.Errorf("%d pooled connections after a stream read to its end, want 1", n)
	}
}

func TestDirectCancelEndsAStreamAndDropsTheConnection(t *testing.T) {
	handlerDone := make(chan struct{})
	srv, conns, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			io.WriteString(w, "ok")
			return
		}
		defer close(handlerDone)
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done(): // the client went away
		case <-time.After(5 * time.Second):
		}
	})
	dt := newDirect(t)
	client := &http.Client{Transport: dt}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(resp.Body)
		readErr <- err
	}()
	cancel()
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("reading a cancelled stream ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("reading a cancelled stream did not return")
	}
	resp.Body.Close()
	select {
	case <-handlerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never saw the connection close")
	}
	if n := dt.idleCount(hostOf(t, srv.URL)); n != 0 {
		t.Errorf("%d pooled connections after a cancelled stream, want 0", n)
	}
	// The next request works, on a new connection.
	if err := getAll(client, srv.URL+"/ok"); err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

func TestDirectCancelledBeforeSending(t *testing.T) {
	srv, conns, _ := countingServer(t, echoHandler)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, body)
	req.ContentLength = 1
	_, err := newDirect(t).RoundTrip(req)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if body.closed.Load() != 1 {
		t.Errorf("request body closed %d times, want 1", body.closed.Load())
	}
	if n := conns.Load(); n != 0 {
		t.Errorf("%d connections for a cancelled request, want 0", n)
	}
}

type closeCounter struct {
	io.Reader
	closed atomic.Int32
}

func (c *closeCounter) Close() error { c.closed.Add(1); return nil }

func TestDirectDoesNotPoolWhatCannotBeReused(t *testing.T) {
	srv, conns, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/close" {
			w.Header().Set("Connection", "close")
			io.WriteString(w, "bye")
			return
		}
		io.WriteString(w, "data: one\n\n")
		w.(http.Flusher).Flush()
		select { // more would follow
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	dt := newDirect(t)
	client := &http.Client{Transport: dt}
	host := hostOf(t, srv.URL)

	// Closed before its end, with nothing more buffered: the rest of the
	// body is still to come on that connection.
	resp, err := client.Get(srv.URL + "/stream")
	if err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(resp.Body).ReadString('\n'); err != nil || line != "data: one\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	resp.Body.Close()
	if n := dt.idleCount(host); n != 0 {
		t.Errorf("body closed early: %d pooled connections, want 0", n)
	}
	// The server said Connection: close.
	if err := getAll(client, srv.URL+"/close"); err != nil {
		t.Fatal(err)
	}
	if n := dt.idleCount(host); n != 0 {
		t.Errorf("Connection: close: %d pooled connections, want 0", n)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
}

// TestDirectClosesConnectionsIdleTooLong: a pooled connection left alone
// past the idle timeout is closed, without another call coming to find
// it, and the next call dials a new one.
func TestDirectClosesConnectionsIdleTooLong(t *testing.T) {
	srv, opened, closed := countingServer(t, echoHandler)
	dt := newDirect(t)
	dt.idleTimeout = 50 * time.Millisecond
	client := &http.Client{Transport: dt}
	get := func() {
		t.Helper()
		if err := getAll(client, srv.URL); err != nil {
			t.Fatal(err)
		}
	}
	get()
	if n := dt.idleCount(hostOf(t, srv.URL)); n != 1 {
		t.Fatalf("%d pooled after a call, want 1", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if closed.Load() != 1 || dt.idleCount(hostOf(t, srv.URL)) != 0 {
		t.Fatalf("after the idle timeout: server saw %d closed, %d still pooled; want 1 and 0", closed.Load(), dt.idleCount(hostOf(t, srv.URL)))
	}
	get()
	if n := opened.Load(); n != 2 {
		t.Errorf("%d connections, want 2: an expired connection must not be reused", n)
	}
}

// TestDirectSweepComesBackForTheRest: connections that go idle at
// different times are each closed once their own idle time is up.
func TestDirectSweepComesBackForTheRest(t *testing.T) {
	// The fast request waits for the slow one to arrive, so that the two
	// are on two connections however the goroutines are scheduled.
	slowArrived := make(chan struct{})
	srv, opened, closed := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(slowArrived)
			time.Sleep(40 * time.Millisecond)
		} else {
			select {
			case <-slowArrived:
			case <-time.After(10 * time.Second):
			}
		}
		io.WriteString(w, "ok")
	})
	dt := newDirect(t)
	dt.idleTimeout = 60 * time.Millisecond
	client := &http.Client{Transport: dt}
	get := func(path string) {
		if err := getAll(client, srv.URL+path); err != nil {
			t.Error(err)
		}
	}
	// Two connections at once; the slow one goes idle 40 ms later.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); get("/") }()
	go func() { defer wg.Done(); get("/slow") }()
	wg.Wait()
	if n := opened.Load(); n != 2 {
		t.Fatalf("%d connections opened, want 2", n)
	}
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if c, n := closed.Load(), dt.idleCount(hostOf(t, srv.URL)); c != 2 || n != 0 {
		t.Fatalf("server saw %d connections closed, %d still pooled; want 2 and 0", c, n)
	}
}

// TestDirectRetriesAConnectionTheServerClosed: a server that closes every
// connection after one response without saying so. The pooled connection
// is dead when the next request takes it; that request goes again on a new
// connection.
func TestDirectRetriesAConnectionTheServerClosed(t *testing.T) {
	var accepted, answered atomic.Int64
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		accepted.Add(1)
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, _ := io.ReadAll(req.Body)
		answered.Add(1)
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	})
	client := &http.Client{Transport: newDirect(t)}
	for i := range 3 {
		req, _ := http.NewRequest(http.MethodPost, url+"/", nil)
		rb := &preparedBody{data: []byte(fmt.Sprintf("call %d", i))}
		rb.refs.Store(1)
		setBody(req, rb, "")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := fmt.Sprintf("call %d", i); string(got) != want {
			t.Fatalf("call %d: answer %q, want %q", i, got, want)
		}
		// Let the server's close reach the client before the next call.
		time.Sleep(5 * time.Millisecond)
	}
	if a, n := answered.Load(), accepted.Load(); a != 3 || n != 3 {
		t.Errorf("server answered %d requests on %d connections, want 3 on 3", a, n)
	}
}

func TestDirectHandsHTTPSAndProxiesToTheFallback(t *testing.T) {
	var fell atomic.Int64
	fallback := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		fell.Add(1)
		return &http.Response{StatusCode: 204, Body: http.NoBody, Request: r}, nil
	})
	srv, conns, _ := countingServer(t, echoHandler)
	dt := newDirect(t)
	dt.fallback = fallback
	client := &http.Client{Transport: dt}

	resp, err := client.Get("https://llm.invalid/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if fell.Load() != 1 {
		t.Fatalf("https request did not go to the fallback")
	}
	dt.proxy = func(*http.Request) (*url.URL, error) { return url.Parse("http://proxy.invalid:3128") }
	resp, err = client.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if fell.Load() != 2 || conns.Load() != 0 {
		t.Fatalf("proxied request: fallback %d, direct connections %d; want 2 and 0", fell.Load(), conns.Load())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestDirectReportsDialErrors(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	body := &closeCounter{Reader: strings.NewReader("x")}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", body)
	req.ContentLength = 1
	_, err = newDirect(t).RoundTrip(req)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "dial" {
		t.Fatalf("err = %v, want a dial error", err)
	}
	if body.closed.Load() != 1 {
		t.Errorf("request body closed %d times, want 1", body.closed.Load())
	}
}

// TestDirectConcurrentCalls runs many calls at once and checks each gets
// its own answer and the pool keeps what it may.
func TestDirectConcurrentCalls(t *testing.T) {
	srv, _, _ := countingServer(t, echoHandler)
	dt := newDirect(t)
	dt.maxIdle = 8
	client := &http.Client{Transport: dt}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				payload := fmt.Sprintf("call %d.%d %s", i, j, strings.Repeat("y", i*100))
				req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
				rb := &preparedBody{data: []byte(payload)}
				rb.refs.Store(1)
				setBody(req, rb, "")
				resp, err := client.Do(req)
				if err != nil {
					errs <- err
					return
				}
				got, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := digest(payload) + " "; err != nil || string(got) != want {
					errs <- fmt.Errorf("call %d.%d: %q, %v; want %q", i, j, got, err, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := dt.idleCount(hostOf(t, srv.URL)); n > 8 {
		t.Errorf("%d pooled connections, more than maxIdle 8", n)
	}
}

func TestIsLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8080":        true,
		"127.1.2.3:1":           true,
		"[::1]:11434":           true,
		"localhost:11434":       true,
		"LOCALHOST:80":          true,
		"10.0.0.5:8000":         false,
		"[2001:db8::1]:443":     false,
		"api.openai.com:443":    false,
		"localhost.evil.com:80": false,
		"127.0.0.1":             false, // no port: not an address the transport dials
		"":                      false,
	} {
		if got := isLoopback(addr); got != want {
			t.Errorf("isLoopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// rawServer answers each connection with handle, on a bare TCP listener.
func rawServer(t *testing.T, handle func(c net.Conn, br *bufio.Reader)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				handle(c, bufio.NewReader(c))
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

func TestDirectSkipsInterimAnswers(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"+
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	resp, err := (&http.Client{Transport: newDirect(t)}).Post(url, "text/plain", strings.NewReader("hello"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Fatalf("got %d %q, want the final 200 \"ok\"", resp.StatusCode, body)
	}
}

// TestDirectReadsAnAnswerSentBeforeTheBody: a server refuses a request
// from its head and closes without reading the body; the client's write
// fails, and the caller still gets the server's answer, not a broken pipe.
func TestDirectReadsAnAnswerSentBeforeTheBody(t *testing.T) {
	url := rawServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 51\r\n\r\n"+
			`{"error":{"message":"bad key","type":"auth_error"}}`)
		time.Sleep(20 * time.Millisecond) // let the answer reach the client before the reset
	})
	big := strings.Repeat("x", 64<<20) // more than the socket buffers hold
	resp, err := (&http.Client{Transport: newDirect(t)}).Post(url, "application/json", strings.NewReader(big))
	if err != nil {
		t.Fatalf("the server's early answer was lost: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), "bad key") {
		t.Fatalf("got %d %q, want the 401 with its message", resp.StatusCode, body)
	}
}

func TestClientCloseIdleConnections(t *testing.T) {
	srv, _, closed := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})
	c := New(Config{BaseURL: srv.URL + "/v1"})
	resp, err := c.Stream(t.Context(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hello"}}}, nil)
	if err != nil || resp.Content != "hi" {
		t.Fatalf("Stream: %+v, %v", resp, err)
	}
	c.CloseIdleConnections()
	deadline := time.Now().Add(10 * time.Second)
	for closed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if closed.Load() != 1 {
		t.Fatalf("server saw %d connections closed after CloseIdleConnections, want 1", closed.Load())
	}
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Preconnect opens the connections calls about to start will take, no more
// than asked for counting those already pooled, and the calls then open
// none of their own.
func TestClientPreconnect(t *testing.T) {
	srv, opened, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}`+"\n\ndata: [DONE]\n\n")
	})
	c := New(Config{BaseURL: srv.URL + "/v1"})
	t.Cleanup(c.CloseIdleConnections)
	if c.direct == nil {
		t.Fatal("a plain http:// server on the loopback interface is not served by the direct transport")
	}
	dt, host := c.direct, hostOf(t, srv.URL)
	c.Preconnect(3)
	waitFor(t, "3 connections are pooled", func() bool { return dt.idleCount(host) == 3 })
	c.Preconnect(2) // enough already
	c.Preconnect(4) // one more
	waitFor(t, "4 connections are pooled", func() bool { return dt.idleCount(host) == 4 })
	// The server counts a connection when its accept loop takes it up,
	// which may come after the client has pooled it.
	waitFor(t, "the server sees the connections", func() bool { return opened.Load() >= 4 })
	if n := opened.Load(); n != 4 {
		t.Fatalf("the server saw %d connections for Preconnect(3), (2) and (4); want 4", n)
	}

	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			resp, err := c.Stream(t.Context(), Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hello"}}}, nil)
			if err != nil || resp.Content != "hi" {
				t.Errorf("Stream: %+v, %v", resp, err)
			}
		})
	}
	wg.Wait()
	if n := opened.Load(); n != 4 {
		t.Fatalf("4 calls after Preconnect(4) opened %d connections of their own", n-4)
	}
}

// A connection that finishes opening after the pool was closed is closed
// too, not pooled for a client being shut down.
func TestPreconnectAcrossCloseIdleConnections(t *testing.T) {
	srv, _, closed := countingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	dt := newDirect(t)
	release := make(chan struct{})
	dial := dt.dial
	dt.dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		<-release
		return dial(ctx, network, addr)
	}
	host := hostOf(t, srv.URL)
	dt.preconnect(host, 2)
	dt.CloseIdleConnections()
	close(release)
	waitFor(t, "the server sees both connections closed", func() bool { return closed.Load() == 2 })
	dt.mu.Lock()
	dialing := len(dt.dialing)
	dt.mu.Unlock()
	if n := dt.idleCount(host); n != 0 || dialing != 0 {
		t.Fatalf("%d connections pooled and %d hosts still dialing after the pool was closed", n, dialing)
	}
}

// Preconnect does nothing where net/http's transport makes the calls.
func TestPreconnectOnlyForPlainHTTP(t *testing.T) {
	for _, base := range []string{"https://api.example.com/v1", ""} {
		if c := New(Config{BaseURL: base}); c.direct != nil {
			t.Errorf("base URL %q: Preconnect would open plain connections", base)
		} else {
			c.Preconnect(3) // no effect, no panic
		}
	}
	c := New(Config{BaseURL: "http://localhost/v1"})
	if c.directAddr != "localhost:80" {
		t.Fatalf("address %q for http://localhost/v1, want localhost:80", c.directAddr)
	}
}
