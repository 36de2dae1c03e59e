package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// OpenAI: content deltas, two parallel calls with index 0 and 1 whose id and
// name come on the first delta and whose arguments come in interleaved
// fragments, finish_reason "tool_calls", usage in a chunk with no choices.
func TestOpenAIDialect(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(chunkOf(obj{"role": "assistant", "content": ""}, nil))
		s.data(contentChunk("Let me "))
		s.data(contentChunk("check."))
		s.data(toolChunk(call(0, "call_a", "get_weather", "")))
		s.data(toolChunk(call(0, "", "", `{"ci`)))
		s.data(toolChunk(call(1, "call_b", "search", "")))
		s.data(toolChunk(call(0, "", "", `ty": "Paris"}`)))
		// Escapes as a server writes them: \u00e9 and escaped quotes.
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"q\": \"caf\u00e9 \\\"best\\\"\"}"}}]},"finish_reason":null}]}` + "\n\n")
		s.data(finishChunk("tool_calls"))
		s.data(obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "gpt-4o-2024", "choices": []obj{}, "usage": usageOf(120, 45)})
		s.done()
	})
	c, _ := newTestClient(fs, func(c *Config) {
		c.APIKey = "sk-test-key"
		c.Headers = map[string]string{"X-Title": "swarmdeck"}
	})
	var log deltaLog
	resp := mustStream(t, c, userRequest("weather?"), log.add)

	if resp.Content != "Let me check." {
		t.Errorf("content = %q", resp.Content)
	}
	wantToolCalls(t, resp.ToolCalls,
		ToolCall{ID: "call_a", Name: "get_weather", Arguments: `{"city": "Paris"}`},
		ToolCall{ID: "call_b", Name: "search", Arguments: `{"q": "café \"best\""}`},
	)
	if resp.FinishReason != "tool_calls" {
		t.Errorf("finish = %q", resp.FinishReason)
	}
	if want := (Usage{120, 45, 165}); resp.Usage != want || resp.UsageEstimated {
		t.Errorf("usage = %+v estimated=%v, want %+v", resp.Usage, resp.UsageEstimated, want)
	}
	if resp.Attempts != 1 || resp.Model != "test-model" {
		t.Errorf("attempts = %d, model = %q", resp.Attempts, resp.Model)
	}
	if got, want := log.String(), "Let me check.[tool:get_weather][tool:search]"; got != want {
		t.Errorf("deltas = %q, want %q", got, want)
	}

	body := fs.body(0)
	if body["stream"] != true {
		t.Errorf("stream = %v", body["stream"])
	}
	if so, _ := body["stream_options"].(map[string]any); so["include_usage"] != true {
		t.Errorf("stream_options = %v", body["stream_options"])
	}
	h := fs.header(0)
	if h.Get("Authorization") != "Bearer sk-test-key" || h.Get("X-Title") != "swarmdeck" {
		t.Errorf("headers: Authorization=%q X-Title=%q", h.Get("Authorization"), h.Get("X-Title"))
	}
}

// Ollama: every parallel call whole in one chunk, all with index 0 or with
// no index, each with its own id; finish_reason "stop" although there are
// tool calls; usage on the last chunk.
func TestOllamaDialect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		index any
		// together puts both calls in one chunk's tool_calls array.
		together bool
	}{
		{"index 0", 0, false},
		{"no index", nil, false},
		{"index 0 in one chunk", 0, true},
		{"no index in one chunk", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				s := startSSE(w)
				a := call(tc.index, "call_k1", "read_file", `{"path":"a.go"}`)
				b := call(tc.index, "call_k2", "read_file", `{"path":"b.go"}`)
				if tc.together {
					s.data(toolChunk(a, b))
				} else {
					s.data(toolChunk(a))
					s.data(toolChunk(b))
				}
				last := finishChunk("stop")
				last["usage"] = usageOf(50, 20)
				s.data(last)
				s.done()
			})
			c, _ := newTestClient(fs)
			var log deltaLog
			resp := mustStream(t, c, userRequest("read both"), log.add)
			wantToolCalls(t, resp.ToolCalls,
				ToolCall{ID: "call_k1", Name: "read_file", Arguments: `{"path":"a.go"}`},
				ToolCall{ID: "call_k2", Name: "read_file", Arguments: `{"path":"b.go"}`},
			)
			if resp.FinishReason != "stop" {
				t.Errorf("finish = %q", resp.FinishReason)
			}
			if want := (Usage{50, 20, 70}); resp.Usage != want {
				t.Errorf("usage = %+v, want %+v", resp.Usage, want)
			}
			if got := log.String(); got != "[tool:read_file][tool:read_file]" {
				t.Errorf("deltas = %q", got)
			}
		})
	}
}

// llama.cpp: arguments streamed one character at a time, index present, id
// only on the first delta of each call.
func TestLlamaCppDialect(t *testing.T) {
	argsA := `{"path": "notes/todo.md", "limit": 20}`
	argsB := `{"pattern": "func \\w+", "glob": "*.go"}`
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		for i, args := range []string{argsA, argsB} {
			name, id := "read_file", "chatcmpl-tool-a"
			if i == 1 {
				name, id = "search_files", "chatcmpl-tool-b"
			}
			s.data(toolChunk(call(i, id, name, "")))
			for _, r := range args {
				s.data(toolChunk(call(i, "", "", string(r))))
			}
		}
		last := finishChunk("tool_calls")
		last["usage"] = usageOf(300, 40)
		last["timings"] = obj{"prompt_ms": 12.5, "predicted_per_second": 41.2}
		s.data(last)
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("look"), nil)
	wantToolCalls(t, resp.ToolCalls,
		ToolCall{ID: "chatcmpl-tool-a", Name: "read_file", Arguments: argsA},
		ToolCall{ID: "chatcmpl-tool-b", Name: "search_files", Arguments: argsB},
	)
	if want := (Usage{300, 40, 340}); resp.Usage != want {
		t.Errorf("usage = %+v, want %+v", resp.Usage, want)
	}
}

func TestArgumentsAsJSONObject(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c1","function":{"name":"plan","arguments":{ "steps" : ["a", "b"], "n": 2 }}}]},"finish_reason":null}]}` + "\n\n")
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"id":"c2","function":{"name":"list","arguments":[1, 2]}}]},"finish_reason":"tool_calls"}]}` + "\n\n")
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	wantToolCalls(t, resp.ToolCalls,
		ToolCall{ID: "c1", Name: "plan", Arguments: `{"steps":["a","b"],"n":2}`},
		ToolCall{ID: "c2", Name: "list", Arguments: `[1,2]`},
	)
}

func TestEmptyArgumentsMeanEmptyObject(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(toolChunk(call(0, "c1", "get_shared_context", "")))
		s.data(toolChunk(call(1, "c2", "get_task_plan", nil)))
		s.data(finishChunk("tool_calls"))
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	wantToolCalls(t, resp.ToolCalls,
		ToolCall{ID: "c1", Name: "get_shared_context", Arguments: "{}"},
		ToolCall{ID: "c2", Name: "get_task_plan", Arguments: "{}"},
	)
}

// Malformed arguments are the model's mistake: they reach the runtime
// untouched (it answers with a tool error) and never fail the call.
func TestMalformedArgumentsPassedThrough(t *testing.T) {
	bad := `{"path": "a.go", "limit": 2`
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(toolChunk(call(0, "c1", "read_file", bad[:10])))
		s.data(toolChunk(call(0, "", "", bad[10:])))
		s.data(finishChunk("length"))
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	wantToolCalls(t, resp.ToolCalls, ToolCall{ID: "c1", Name: "read_file", Arguments: bad})
	if json.Valid([]byte(resp.ToolCalls[0].Arguments)) {
		t.Fatal("test arguments should be invalid JSON")
	}
	if fs.requests.Load() != 1 {
		t.Errorf("requests = %d, want 1", fs.requests.Load())
	}
}

// Comment lines, event: lines and an id: field between chunks are ignored,
// however many there are (go-openai alone gives up after 300 by default).
func TestKeepAliveCommentsIgnored(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.raw(": OPENROUTER PROCESSING\n\n")
		s.raw(strings.Repeat(": keep-alive\n\n", 400))
		s.raw("event: message\nid: 1\n")
		s.data(contentChunk("still "))
		s.raw(strings.Repeat(":\n", 400) + "retry: 1000\n\n")
		s.data(contentChunk("here"))
		s.raw(": keep-alive\n\n")
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	if resp.Content != "still here" || resp.FinishReason != "stop" {
		t.Errorf("content = %q finish = %q", resp.Content, resp.FinishReason)
	}
}

// A line of an event stream ends with LF, CR LF or a CR alone. A stream
// of lone CRs is read line by line as it arrives; it was taken as one line
// that never ended, and retried as cut short once the server closed it.
func TestLineEndings(t *testing.T) {
	for _, tc := range []struct{ name, eol string }{{"LF", "\n"}, {"CR LF", "\r\n"}, {"CR", "\r"}} {
		t.Run(tc.name, func(t *testing.T) {
			checkReadAsItComes(t, func(s sse, v obj) {
				b, _ := json.Marshal(v)
				s.raw(": keep-alive" + tc.eol + "data: " + string(b) + tc.eol + tc.eol)
			}, "data: [DONE]"+tc.eol+tc.eol)
		})
	}
}

// checkReadAsItComes serves "Hello, " and then, once the client has shown
// it, as a model that writes slowly sends the rest, "world" and the end:
// each chunk as send writes it, and last the line end. The answer must be
// read whole, and its first piece shown without waiting for more.
func checkReadAsItComes(t *testing.T, send func(s sse, v obj), end string) {
	t.Helper()
	shown := make(chan struct{})
	var heldBack atomic.Bool
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		send(s, contentChunk("Hello, "))
		select {
		case <-shown:
		case <-time.After(5 * time.Second):
			heldBack.Store(true)
		case <-r.Context().Done():
		}
		send(s, contentChunk("world"))
		send(s, finishChunk("stop"))
		s.raw(end)
	})
	c, _ := newTestClient(fs)
	var once sync.Once
	resp := mustStream(t, c, userRequest("x"), func(Delta) { once.Do(func() { close(shown) }) })
	if resp.Content != "Hello, world" || resp.FinishReason != "stop" || resp.Attempts != 1 {
		t.Errorf("content %q, finish %q, attempts %d", resp.Content, resp.FinishReason, resp.Attempts)
	}
	if heldBack.Load() {
		t.Error("the first chunk was held back until the server sent more")
	}
}

// The data of one event may come in several data: lines, which the event
// stream format joins with a line break: a server that spreads a chunk's
// JSON over lines is read as if it had sent each chunk on one line; each
// piece failed as a chunk that is not valid JSON. A server that leaves out
// the blank lines between one-line events is read as before, each line as
// it comes.
func TestDataOverSeveralLines(t *testing.T) {
	// event sends v pretty-printed, a data: line for each line of JSON; by
	// line sends each line as a write of its own.
	event := func(s sse, v obj, byLine bool) {
		b, _ := json.MarshalIndent(v, "", "  ")
		text := "data: " + strings.ReplaceAll(string(b), "\n", "\ndata: ") + "\n\n"
		if !byLine {
			s.raw(text)
			return
		}
		for _, l := range strings.SplitAfter(text, "\n") {
			s.raw(l)
		}
	}
	t.Run("one event over several lines", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			event(s, contentChunk("Hello, "), false)
			s.raw(": keep-alive\n\n")
			event(s, contentChunk("world"), true)
			event(s, toolChunk(call(0, "call_1", "read_file", `{"path": "a"}`)), true)
			event(s, finishChunk("tool_calls"), false)
			s.done()
		})
		c, _ := newTestClient(fs)
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Content != "Hello, world" || resp.FinishReason != "tool_calls" || resp.Attempts != 1 {
			t.Errorf("content %q, finish %q, attempts %d", resp.Content, resp.FinishReason, resp.Attempts)
		}
		wantToolCalls(t, resp.ToolCalls, ToolCall{ID: "call_1", Name: "read_file", Arguments: `{"path": "a"}`})
	})
	t.Run("a first line longer than the read buffer", func(t *testing.T) {
		// The first data line, read in pieces, ends in "}" with the object
		// still open: only following the whole line tells it is not the
		// whole chunk.
		long := strings.Repeat("many words ", 2000) // 22 KB
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw(`data: {"choices":[{"index":0,"delta":{"content":"` + long + `"}}` + "\n")
			s.raw("data: ]}\n\n")
			s.raw(`data: {"choices":[{"index":0,"delta":{"content":"{\"}\" ends"}}]}` + "\n\n")
			s.data(finishChunk("stop"))
			s.done()
		})
		c, _ := newTestClient(fs)
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Content != long+`{"}" ends` || resp.FinishReason != "stop" || resp.Attempts != 1 {
			t.Errorf("content of %d bytes ending %q, finish %q, attempts %d", len(resp.Content), resp.Content[max(len(resp.Content)-12, 0):], resp.FinishReason, resp.Attempts)
		}
	})
	t.Run("no blank lines between events", func(t *testing.T) {
		checkReadAsItComes(t, func(s sse, v obj) {
			b, _ := json.Marshal(v)
			s.raw("data: " + string(b) + "\n")
		}, "data: [DONE]\n")
	})
}

// Without include_usage (and never reported) usage is estimated from the
// text, about four characters a token.
func TestUsageEstimatedWhenNeverReported(t *testing.T) {
	answer := strings.Repeat("word ", 80) // 400 characters
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk(answer))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	req := userRequest(strings.Repeat("q", 4000))
	resp := mustStream(t, c, req, nil)
	if !resp.UsageEstimated {
		t.Fatal("UsageEstimated = false")
	}
	u := resp.Usage
	if u.PromptTokens < 1000 || u.PromptTokens > 1100 || u.CompletionTokens != 100 || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("estimated usage = %+v, want ~1000 prompt, 100 completion", u)
	}
}

// A server that sends no ids gets generated ones, distinct per call.
func TestMissingToolCallIDsAreGenerated(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(toolChunk(call(0, "", "a", `{}`)))
		s.data(toolChunk(call(1, "", "b", `{}`)))
		s.data(finishChunk("tool_calls"))
		s.done()
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	if len(resp.ToolCalls) != 2 {
		t.Fatalf("calls = %+v", resp.ToolCalls)
	}
	a, b := resp.ToolCalls[0].ID, resp.ToolCalls[1].ID
	if !strings.HasPrefix(a, "call_") || a == b {
		t.Errorf("generated ids %q, %q", a, b)
	}
}

// The request as the server sees it: roles, tool results with their call
// id, assistant tool calls typed "function", tool schemas, temperature 0
// actually sent, max_tokens, no Authorization without a key.
func TestRequestMapping(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs)
	zero := float32(0)
	req := Request{
		Model: "qwen3:8b",
		Messages: []Message{
			{Role: RoleSystem, Content: "You are the planner."},
			{Role: RoleUser, Content: "Plan it."},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "create_task_plan", Arguments: ""}}},
			{Role: RoleTool, ToolCallID: "call_1", Name: "create_task_plan", Content: `{"ok":true}`},
			{Role: RoleTool, ToolCallID: "call_2", Content: ""},
		},
		Tools: []Tool{
			{Name: "create_task_plan", Description: "Create a plan.", Parameters: json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array"}}}`)},
			{Name: "get_task_plan", Description: "Show the plan."},
		},
		Temperature: &zero,
		MaxTokens:   512,
	}
	mustStream(t, c, req, nil)

	var got struct {
		Model    string `json:"model"`
		Messages []struct {
			Role       string  `json:"role"`
			Content    *string `json:"content"`
			Name       string  `json:"name"`
			ToolCallID string  `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name       string          `json:"name"`
				Parameters json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Temperature *float64 `json:"temperature"`
		MaxTokens   int      `json:"max_tokens"`
	}
	b, _ := json.Marshal(fs.body(0))
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Model != "qwen3:8b" || len(got.Messages) != 5 || len(got.Tools) != 2 {
		t.Fatalf("request = %s", b)
	}
	roles := []string{"system", "user", "assistant", "tool", "tool"}
	for i, m := range got.Messages {
		if m.Role != roles[i] {
			t.Errorf("message %d role = %q, want %q", i, m.Role, roles[i])
		}
	}
	asst := got.Messages[2]
	if len(asst.ToolCalls) != 1 || asst.ToolCalls[0].Type != "function" || asst.ToolCalls[0].ID != "call_1" ||
		asst.ToolCalls[0].Function.Name != "create_task_plan" || asst.ToolCalls[0].Function.Arguments != "{}" {
		t.Errorf("assistant tool calls = %+v", asst.ToolCalls)
	}
	if res := got.Messages[3]; res.ToolCallID != "call_1" || res.Name != "create_task_plan" || res.Content == nil || *res.Content != `{"ok":true}` {
		t.Errorf("tool result = %+v", res)
	}
	if res := got.Messages[4]; res.Content == nil || res.ToolCallID != "call_2" {
		t.Errorf("empty tool result must still carry content: %+v", res)
	}
	if got.Tools[0].Type != "function" || got.Tools[0].Function.Name != "create_task_plan" ||
		!strings.Contains(string(got.Tools[0].Function.Parameters), `"tasks"`) {
		t.Errorf("tool 0 = %+v", got.Tools[0])
	}
	if string(got.Tools[1].Function.Parameters) == "null" {
		t.Error("a tool without parameters must get an object schema, not null")
	}
	if got.Temperature == nil || *got.Temperature > 1e-6 {
		t.Errorf("temperature = %v, want present and ~0", got.Temperature)
	}
	if got.MaxTokens != 512 {
		t.Errorf("max_tokens = %d", got.MaxTokens)
	}
	if a := fs.header(0).Get("Authorization"); a != "" {
		t.Errorf("Authorization = %q without an API key", a)
	}
}

// Sequential calls reuse one connection: the tail of each stream is drained
// so the transport can put the connection back in the pool.
func TestConnectionReused(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs)
	for range 5 {
		mustStream(t, c, userRequest("x"), nil)
	}
	if n := fs.conns.Load(); n != 1 {
		t.Errorf("5 calls opened %d connections, want 1", n)
	}
}

// OpenAI's reasoning models refuse max_tokens (go-openai rejects it before
// sending); they get max_completion_tokens.
func TestMaxTokensForReasoningModels(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs)
	req := userRequest("x")
	req.Model, req.MaxTokens = "o3-mini", 100
	mustStream(t, c, req, nil)
	body := fs.body(0)
	if body["max_completion_tokens"] != float64(100) || body["max_tokens"] != nil {
		t.Errorf("max_completion_tokens = %v, max_tokens = %v", body["max_completion_tokens"], body["max_tokens"])
	}
}

// A request that cannot be encoded fails at once, as a bad request, without
// reaching the server.
func TestInvalidToolSchemaNotSent(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, rec := newTestClient(fs)
	req := userRequest("x")
	req.Tools = []Tool{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}
	_, err := c.Stream(t.Context(), req, nil)
	e := asError(t, err)
	if e.Kind != BadRequest || e.Retryable || fs.requests.Load() != 0 || len(rec.got()) != 0 {
		t.Errorf("error = %+v, requests = %d", e, fs.requests.Load())
	}
}

// A server or proxy that ignores "stream": true answers with one whole
// chat.completion object, pretty-printed here: it is read like a stream
// of one chunk, not taken for a cut-off stream and retried.
func TestWholeJSONAnswerToStreamingRequest(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = io.WriteString(w, `{
  "id": "chatcmpl-1",
  "object": "chat.completion",
  "model": "qwen2.5",
  "choices": [{
    "index": 0,
    "message": {
      "role": "assistant",
      "content": "Spawning one.",
      "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "sessions_spawn", "arguments": "{\"task\": \"map the repo\"}"}}]
    },
    "finish_reason": "tool_calls"
  }],
  "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}
}
`)
	})
	c, _ := newTestClient(fs)
	var deltas strings.Builder
	resp := mustStream(t, c, userRequest("x"), func(d Delta) { deltas.WriteString(d.Content) })
	if resp.Content != "Spawning one." || deltas.String() != "Spawning one." || resp.FinishReason != "tool_calls" {
		t.Errorf("content = %q, deltas = %q, finish = %q", resp.Content, deltas.String(), resp.FinishReason)
	}
	wantToolCalls(t, resp.ToolCalls, ToolCall{ID: "c1", Name: "sessions_spawn", Arguments: `{"task": "map the repo"}`})
	if resp.Usage.TotalTokens != 19 || resp.UsageEstimated {
		t.Errorf("usage = %+v (estimated %v)", resp.Usage, resp.UsageEstimated)
	}
	if fs.requests.Load() != 1 {
		t.Errorf("requests = %d, want 1", fs.requests.Load())
	}
}

// A server that cuts its output between the bytes of one character sends
// each half as invalid UTF-8 in its chunk. The halves join up again, in
// the content, in the deltas shown live and in tool call arguments.
func TestCharacterSplitAcrossChunks(t *testing.T) {
	text := "5€ naïve 日本"
	cut1 := strings.Index(text, "€") + 1
	cut2 := strings.Index(text, "日") + 2
	args := `{"message": "¡olé!"}`
	cut3 := strings.Index(args, "é") + 1
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		for _, part := range []string{text[:cut1], text[cut1:cut2], text[cut2:]} {
			s.raw(`data: {"choices":[{"index":0,"delta":{"content":"` + part + `"}}]}` + "\n\n")
		}
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"announce","arguments":"` +
			strings.ReplaceAll(args[:cut3], `"`, `\"`) + `"}}]}}]}` + "\n\n")
		s.raw(`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` +
			strings.ReplaceAll(args[cut3:], `"`, `\"`) + `"}}]}}]}` + "\n\n")
		s.data(finishChunk("tool_calls"))
		s.done()
	})
	c, _ := newTestClient(fs)
	var deltas strings.Builder
	resp := mustStream(t, c, userRequest("x"), func(d Delta) { deltas.WriteString(d.Content) })
	if resp.Content != text || deltas.String() != text {
		t.Errorf("content = %q, deltas = %q, want %q", resp.Content, deltas.String(), text)
	}
	wantToolCalls(t, resp.ToolCalls, ToolCall{ID: "c1", Name: "announce", Arguments: args})
}

// Whole calls with no ids, each with index 0 or none: a named call after
// a call whose arguments are complete is the next call, not more of the
// first one's name. A server that repeats the name on every fragment of
// one call still makes one call.
func TestWholeCallsWithoutIDs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		index    any
		together bool
	}{
		{"index 0", 0, false},
		{"no index", nil, false},
		{"index 0 in one chunk", 0, true},
		{"no index in one chunk", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				s := startSSE(w)
				a := call(tc.index, "", "read_file", `{"path":"a.go"}`)
				b := call(tc.index, "", "read_file", `{"path":"b.go"}`)
				if tc.together {
					s.data(toolChunk(a, b))
				} else {
					s.data(toolChunk(a))
					s.data(toolChunk(b))
				}
				// One call streamed with its name repeated on every piece.
				s.data(toolChunk(call(tc.index, "", "list_files", `{"path":`)))
				s.data(toolChunk(call(tc.index, "", "list_files", `"docs"}`)))
				s.data(finishChunk("tool_calls"))
				s.done()
			})
			c, _ := newTestClient(fs)
			resp := mustStream(t, c, userRequest("read both"), nil)
			var got []string
			for _, tc := range resp.ToolCalls {
				got = append(got, tc.Name+" "+tc.Arguments)
			}
			want := []string{`read_file {"path":"a.go"}`, `read_file {"path":"b.go"}`, `list_files {"path":"docs"}`}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}
