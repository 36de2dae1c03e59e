package scripted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// fixedPolicy answers every request with the same reply.
func fixedPolicy(rep Reply) Policy {
	return PolicyFunc(func(*Request) Reply { return rep })
}

const longArgs = `{"task":["Research the audience and market for a podcast about Go","Research channels"],"label":"research","parallel":true}`

var twoCalls = Reply{ToolCalls: []Call{
	{Name: "sessions_spawn", Args: json.RawMessage(longArgs)},
	{Name: "list_files", Args: map[string]string{"path": "."}},
}}

func startServer(t *testing.T, cfg Config) (*Server, *openai.Client, string) {
	t.Helper()
	s := New(cfg)
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := openai.DefaultConfig("unused")
	c.BaseURL = base
	return s, openai.NewClientWithConfig(c), base
}

// newClient returns a client with its own transport, so a test can close
// its idle connections and count goroutines.
func newClient(base string) (*openai.Client, *http.Transport) {
	tr := &http.Transport{}
	cfg := openai.DefaultConfig("unused")
	cfg.BaseURL = base
	cfg.HTTPClient = &http.Client{Transport: tr}
	return openai.NewClientWithConfig(cfg), tr
}

func chatRequest(stream bool) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:  ModelID,
		Stream: stream,
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You are a test."},
			{Role: "user", Content: "Say something."},
		},
		Tools: []openai.Tool{{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
			Name: "list_files", Description: "List files", Parameters: json.RawMessage(`{"type":"object"}`),
		}}},
	}
}

// collect reads a whole stream.
func collect(t *testing.T, st *openai.ChatCompletionStream) []openai.ChatCompletionStreamResponse {
	t.Helper()
	defer st.Close()
	var out []openai.ChatCompletionStreamResponse
	for {
		r, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		out = append(out, r)
	}
}

func TestModelsListsTheScriptedModel(t *testing.T) {
	_, c, _ := startServer(t, Config{})
	list, err := c.ListModels(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Models) != 1 || list.Models[0].ID != ModelID || !strings.Contains(list.Models[0].ID, "scripted") {
		t.Fatalf("models = %+v", list.Models)
	}
}

// A GET on the chat endpoint is refused with 405 and says what is allowed.
func TestChatEndpointAllowsPostOnly(t *testing.T) {
	_, _, base := startServer(t, Config{})
	resp, err := http.Get(base + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != http.MethodPost {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

func TestNonStreamingReply(t *testing.T) {
	t.Run("content", func(t *testing.T) {
		_, c, _ := startServer(t, Config{Policy: fixedPolicy(Reply{Content: Prefix + " hello"})})
		resp, err := c.CreateChatCompletion(context.Background(), chatRequest(false))
		if err != nil {
			t.Fatal(err)
		}
		ch := resp.Choices[0]
		if ch.Message.Content != Prefix+" hello" || ch.FinishReason != "stop" || resp.Model != ModelID {
			t.Fatalf("got %+v", resp)
		}
		if resp.Usage.PromptTokens == 0 || resp.Usage.CompletionTokens == 0 ||
			resp.Usage.TotalTokens != resp.Usage.PromptTokens+resp.Usage.CompletionTokens {
			t.Fatalf("usage = %+v", resp.Usage)
		}
	})
	t.Run("tool calls", func(t *testing.T) {
		_, c, _ := startServer(t, Config{Policy: fixedPolicy(twoCalls)})
		resp, err := c.CreateChatCompletion(context.Background(), chatRequest(false))
		if err != nil {
			t.Fatal(err)
		}
		ch := resp.Choices[0]
		if ch.FinishReason != "tool_calls" || len(ch.Message.ToolCalls) != 2 {
			t.Fatalf("got %+v", ch)
		}
		tc := ch.Message.ToolCalls
		if tc[0].Function.Name != "sessions_spawn" || tc[0].Function.Arguments != longArgs ||
			tc[1].Function.Arguments != `{"path":"."}` || tc[0].ID == "" || tc[0].ID == tc[1].ID {
			t.Fatalf("calls = %+v", tc)
		}
	})
}

func TestStreamingContentInWordChunks(t *testing.T) {
	content := Prefix + " one two  three\nfour"
	_, c, _ := startServer(t, Config{StreamSpeed: 2000, Policy: fixedPolicy(Reply{Content: content})})
	req := chatRequest(true)
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	chunks := collect(t, st)
	var got strings.Builder
	var words int
	for _, ch := range chunks {
		for _, c := range ch.Choices {
			if c.Delta.Content != "" {
				words++
				got.WriteString(c.Delta.Content)
			}
		}
	}
	if got.String() != content || words != 6 {
		t.Fatalf("content %q in %d chunks", got.String(), words)
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Fatalf("first chunk has no role: %+v", chunks[0])
	}
	fin := chunks[len(chunks)-2]
	if fin.Choices[0].FinishReason != "stop" || fin.Usage != nil {
		t.Fatalf("finish chunk = %+v", fin)
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 0 || last.Usage == nil || last.Usage.CompletionTokens == 0 {
		t.Fatalf("usage chunk = %+v", last)
	}
}

func TestStreamingWithoutUsageSendsNone(t *testing.T) {
	_, c, _ := startServer(t, Config{Policy: fixedPolicy(Reply{Content: "x"})})
	st, err := c.CreateChatCompletionStream(context.Background(), chatRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range collect(t, st) {
		if ch.Usage != nil || len(ch.Choices) == 0 {
			t.Fatalf("unexpected usage chunk %+v", ch)
		}
	}
}

func TestStreamEndsWithDone(t *testing.T) {
	_, _, base := startServer(t, Config{Policy: fixedPolicy(Reply{Content: "hi there"})})
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	resp, raw := postChat(t, base, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || !strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
		t.Fatalf("stream:\n%s", raw)
	}
	for _, ev := range strings.Split(strings.TrimSpace(string(raw)), "\n\n") {
		if !strings.HasPrefix(ev, "data: ") {
			t.Fatalf("bad SSE event %q", ev)
		}
		if p := strings.TrimPrefix(ev, "data: "); p != "[DONE]" && !json.Valid([]byte(p)) {
			t.Fatalf("invalid JSON chunk %q", p)
		}
	}
}

// postChat posts body to the chat endpoint and reads the whole answer.
// Arguments the policy builds as values are written as a model writes
// them: <, > and & as they are, not as \u003c escapes.
func TestArgumentsKeepMarkupCharacters(t *testing.T) {
	args := map[string]any{"message": `For "a <tiny> blog & its deploy"`}
	_, c, _ := startServer(t, Config{Policy: fixedPolicy(Reply{ToolCalls: []Call{{Name: "task_broadcast", Args: args}}})})
	resp, err := c.CreateChatCompletion(context.Background(), chatRequest(false))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"message":"For \"a <tiny> blog & its deploy\""}`
	if got := resp.Choices[0].Message.ToolCalls[0].Function.Arguments; got != want {
		t.Fatalf("arguments = %s, want %s", got, want)
	}
}

func postChat(t *testing.T, base, body string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, raw
}

// toolDelta is one tool-call delta as a client sees it.
type toolDelta struct {
	chunk int
	call  openai.ToolCall
}

func streamToolCalls(t *testing.T, dialect string, speed int) ([]openai.ChatCompletionStreamResponse, []toolDelta) {
	t.Helper()
	_, c, _ := startServer(t, Config{Dialect: dialect, StreamSpeed: speed, Policy: fixedPolicy(twoCalls)})
	req := chatRequest(true)
	req.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	chunks := collect(t, st)
	var deltas []toolDelta
	for i, ch := range chunks {
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				deltas = append(deltas, toolDelta{i, tc})
			}
		}
	}
	return chunks, deltas
}

func TestToolCallFramingOpenAI(t *testing.T) {
	chunks, deltas := streamToolCalls(t, "openai", 5000)
	args := map[int]string{}
	seen := map[int]bool{}
	for _, d := range deltas {
		if d.call.Index == nil {
			t.Fatalf("delta without index: %+v", d.call)
		}
		i := *d.call.Index
		if !seen[i] {
			if d.call.ID == "" || d.call.Function.Name == "" || d.call.Type != "function" {
				t.Fatalf("first delta of call %d lacks id/name: %+v", i, d.call)
			}
			seen[i] = true
		} else if d.call.ID != "" || d.call.Function.Name != "" {
			t.Fatalf("later delta of call %d repeats id/name: %+v", i, d.call)
		}
		args[i] += d.call.Function.Arguments
	}
	if len(seen) != 2 || args[0] != longArgs || args[1] != `{"path":"."}` {
		t.Fatalf("calls: %v", args)
	}
	if len(deltas) < 6 {
		t.Fatalf("arguments were not fragmented: %d deltas", len(deltas))
	}
	fin := chunks[len(chunks)-2]
	if fin.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("finish = %+v", fin)
	}
	if u := chunks[len(chunks)-1]; len(u.Choices) != 0 || u.Usage == nil {
		t.Fatalf("usage chunk = %+v", u)
	}
}

func TestToolCallFramingOllama(t *testing.T) {
	chunks, deltas := streamToolCalls(t, "ollama", 5000)
	if len(deltas) != 2 || deltas[0].chunk == deltas[1].chunk {
		t.Fatalf("want each call whole in its own chunk, got %+v", deltas)
	}
	for _, d := range deltas {
		if d.call.Index == nil || *d.call.Index != 0 {
			t.Fatalf("ollama calls all have index 0: %+v", d.call)
		}
	}
	if deltas[0].call.ID == "" || deltas[0].call.ID == deltas[1].call.ID {
		t.Fatalf("ids must be distinct: %q %q", deltas[0].call.ID, deltas[1].call.ID)
	}
	if deltas[0].call.Function.Arguments != longArgs || deltas[1].call.Function.Name != "list_files" {
		t.Fatalf("calls = %+v", deltas)
	}
	last := chunks[len(chunks)-1]
	if len(last.Choices) != 1 || last.Choices[0].FinishReason != "stop" || last.Usage == nil {
		t.Fatalf("final chunk must carry finish_reason stop and usage: %+v", last)
	}
	for _, ch := range chunks {
		if len(ch.Choices) == 0 {
			t.Fatal("ollama sends no chunk with empty choices")
		}
	}
}

func TestToolCallFramingLlamaCpp(t *testing.T) {
	chunks, deltas := streamToolCalls(t, "llamacpp", 5000)
	args := map[int]string{}
	ids := map[int]int{}
	for k, d := range deltas {
		if d.call.Index == nil {
			t.Fatalf("delta without index: %+v", d.call)
		}
		i := *d.call.Index
		if d.call.ID != "" {
			ids[i]++
			if args[i] != "" {
				t.Fatalf("id after arguments began on call %d", i)
			}
		}
		if a := d.call.Function.Arguments; len(a) > 6 {
			t.Fatalf("delta %d: piece %q longer than llama.cpp's", k, a)
		}
		args[i] += d.call.Function.Arguments
	}
	if ids[0] != 1 || ids[1] != 1 || args[0] != longArgs || args[1] != `{"path":"."}` {
		t.Fatalf("ids %v args %v", ids, args)
	}
	if fin := chunks[len(chunks)-2]; fin.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("finish = %+v", fin)
	}
	if u := chunks[len(chunks)-1]; len(u.Choices) != 0 || u.Usage == nil {
		t.Fatalf("usage chunk = %+v", u)
	}
}

func TestUnpacedStreamIsMinimal(t *testing.T) {
	// StreamSpeed 0: OpenAI puts every call whole in one chunk.
	chunks, deltas := streamToolCalls(t, "openai", 0)
	if len(deltas) != 2 || deltas[0].chunk != deltas[1].chunk || deltas[0].call.Function.Arguments != longArgs {
		t.Fatalf("deltas = %+v", deltas)
	}
	if len(chunks) != 3 { // calls, finish, usage
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
}

func TestLatencyIsHonoured(t *testing.T) {
	const lat = 150 * time.Millisecond
	s, c, _ := startServer(t, Config{Latency: lat, Policy: fixedPolicy(Reply{Content: "x"})})
	start := time.Now()
	st, err := c.CreateChatCompletionStream(context.Background(), chatRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Recv(); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if d := time.Since(start); d < lat {
		t.Fatalf("first chunk after %v, want >= %v", d, lat)
	}
	s.SetLatency(2 * lat)
	start = time.Now()
	if _, err := c.CreateChatCompletion(context.Background(), chatRequest(false)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 2*lat {
		t.Fatalf("after SetLatency the reply came after %v, want >= %v", d, 2*lat)
	}
}

func TestCancellationStopsTheStream(t *testing.T) {
	before := runtime.NumGoroutine()
	long := Prefix + strings.Repeat(" word", 400) // 20 s at 20 chunks/s
	s := New(Config{StreamSpeed: 20, Policy: fixedPolicy(Reply{Content: long})})
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	c, tr := newClient(base)
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithCancel(context.Background())
	st, err := c.CreateChatCompletionStream(ctx, chatRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := st.Recv(); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	st.Close()
	deadline := time.Now().Add(2 * time.Second)
	for s.Stats().Active != 0 || s.Stats().Cancelled != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stream still running after the client left: %+v", s.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := s.Stats(); st.Completed != 0 {
		t.Fatalf("stats = %+v", st)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	tr.CloseIdleConnections()
	waitGoroutines(t, before)
}

func TestCloseEndsStreamsInProgress(t *testing.T) {
	before := runtime.NumGoroutine()
	s := New(Config{Latency: time.Hour, Policy: fixedPolicy(Reply{Content: "never"})})
	base, err := s.Start("")
	if err != nil {
		t.Fatal(err)
	}
	c, tr := newClient(base)
	defer tr.CloseIdleConnections()
	errc := make(chan error, 1)
	go func() {
		_, err := c.CreateChatCompletion(context.Background(), chatRequest(false))
		errc <- err
	}()
	for s.Stats().Active == 0 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan struct{})
	go func() { _ = s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close waited for a reply in progress")
	}
	if err := <-errc; err == nil {
		t.Fatal("the client got a reply from a closed server")
	}
	if _, err := s.Start(""); err == nil {
		t.Fatal("Start after Close succeeded")
	}
	tr.CloseIdleConnections()
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBadRequestsGetOpenAIErrors(t *testing.T) {
	s, c, base := startServer(t, Config{})
	for _, tc := range []struct{ name, body, want string }{
		{"bad JSON", `{"messages":[`, "invalid JSON"},
		{"not JSON", `hello`, "invalid JSON"},
		{"empty", ``, "empty"},
		{"no messages", `{"model":"m"}`, "messages is required"},
		{"no role", `{"messages":[{"content":"x"}]}`, "role is required"},
		{"unknown role", `{"messages":[{"role":"bogus","content":"x"}]}`, `messages[0].role "bogus" is not one of system`},
		{"bad content", `{"messages":[{"role":"user","content":5}]}`, "content must be"},
		{"trailing data", `{"messages":[{"role":"user","content":"x"}]} {}`, "after the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var e struct {
				Error struct{ Message, Type string }
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 400 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.want) {
				t.Fatalf("%d %+v", resp.StatusCode, e)
			}
		})
	}
	// The client sees an *openai.APIError.
	req := chatRequest(false)
	req.Messages = nil
	_, err := c.CreateChatCompletion(context.Background(), req)
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || apiErr.Type != "invalid_request_error" {
		t.Fatalf("err = %v", err)
	}
	if st := s.Stats(); st.BadRequests != 9 || st.Requests != 9 {
		t.Fatalf("stats = %+v", st)
	}
	resp, err := http.Get(base + "/nope")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
}

func TestUnknownDialect(t *testing.T) {
	s := New(Config{Dialect: "vllm"})
	if _, err := s.Start(""); err == nil || !strings.Contains(err.Error(), "openai, ollama or llamacpp") {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamSpeedPacesChunks(t *testing.T) {
	s, c, _ := startServer(t, Config{StreamSpeed: 1000, Policy: fixedPolicy(Reply{Content: "a b c d e f"})})
	s.SetStreamSpeed(20) // 50 ms between the 6 words
	start := time.Now()
	st, err := c.CreateChatCompletionStream(context.Background(), chatRequest(true))
	if err != nil {
		t.Fatal(err)
	}
	collect(t, st)
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Fatalf("6 chunks at 20/s took %v", d)
	}
}

func TestRealClientRoundTripWithDemo(t *testing.T) {
	// The demo through the real client: the first root turn is the
	// cyclic plan, as a tool call the client can decode.
	_, c, _ := startServer(t, Config{StreamSpeed: 0})
	req := openai.ChatCompletionRequest{
		Model: ModelID,
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You are the orchestrator agent of a swarmdeck swarm.\nYour task id: s-1"},
			{Role: "user", Content: "Launch a newsletter"},
		},
	}
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	var name, args string
	for _, ch := range collect(t, st) {
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				name += tc.Function.Name
				args += tc.Function.Arguments
			}
		}
	}
	if name != "create_task_plan" || !json.Valid([]byte(args)) {
		t.Fatalf("got %s(%s)", name, args)
	}
}

// rawSSE posts a streaming request and returns the data payloads.
func rawSSE(t *testing.T, url string, body string) ([]string, *http.Response) {
	t.Helper()
	resp, err := http.Post(url+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, p)
		}
	}
	return out, resp
}

// A stream written at once carries its length, so that no chunked
// terminator follows it; a paced stream is chunked, as it must be.
func TestStreamLengthKnownOnlyWhenWrittenAtOnce(t *testing.T) {
	body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`
	for _, c := range []struct {
		speed     int
		wantKnown bool
	}{{0, true}, {1000, false}} {
		_, _, base := startServer(t, Config{StreamSpeed: c.speed, Policy: fixedPolicy(Reply{Content: "a b c d"})})
		resp, raw := postChat(t, base, body)
		if !strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
			t.Fatalf("speed %d: the stream does not end with [DONE]:\n%s", c.speed, raw)
		}
		known := resp.ContentLength >= 0
		if known != c.wantKnown || (known && resp.ContentLength != int64(len(raw))) {
			t.Fatalf("speed %d: Content-Length %d, transfer encoding %v, body %d bytes", c.speed, resp.ContentLength, resp.TransferEncoding, len(raw))
		}
	}
}

// A server listening on every address gives a base URL a client here can
// use: the loopback address, not "[::]".
func TestStartOnEveryAddressGivesALoopbackURL(t *testing.T) {
	for _, addr := range []string{":0", "0.0.0.0:0"} {
		s := New(Config{})
		base, err := s.Start(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Errorf("Start(%q) = %s, want http://127.0.0.1:PORT/v1", addr, base)
			continue
		}
		resp, err := http.Get(base + "/models")
		if err != nil {
			t.Fatalf("GET %s/models: %v", base, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s/models: %s", base, resp.Status)
		}
	}
}

// A reply that the server's closing interrupts never reads as a whole one:
// before anything is sent it is a 503 saying why (the handler returning
// with nothing written would be an empty 200); in the middle of a stream
// the connection is broken, not the stream ended.
func TestClosingCutsRepliesShortVisibly(t *testing.T) {
	for _, stream := range []bool{false, true} {
		s := New(Config{Latency: time.Hour, StreamSpeed: 1, Policy: fixedPolicy(Reply{Content: "a reply of several words to pace"})})
		if stream {
			s.SetLatency(0)
		}
		body, _ := json.Marshal(map[string]any{"stream": stream, "messages": []map[string]string{{"role": "user", "content": "q"}}})
		rec := httptest.NewRecorder()
		panicked := make(chan any, 1)
		go func() {
			defer func() { panicked <- recover() }()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body)))
		}()
		for s.Stats().Active == 0 {
			time.Sleep(time.Millisecond)
		}
		if stream {
			time.Sleep(20 * time.Millisecond) // the first chunk is out, the next paced a second later
		}
		s.mu.Lock()
		s.closing = true
		close(s.closed) // as Close does, before the connections go
		s.mu.Unlock()
		p := <-panicked
		switch {
		case stream && p != http.ErrAbortHandler:
			t.Errorf("a stream cut by closing ended with %v; want the connection aborted", p)
		case !stream && (p != nil || rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "shutting down")):
			t.Errorf("a reply cut by closing: panic %v, %d %q; want 503 shutting down", p, rec.Code, rec.Body.String())
		}
	}
}
