package llm

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestStripThinking(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no block", "The answer is 4.", "The answer is 4."},
		{"block first", "<think>\nadd 2 and 2\n</think>\n\nThe answer is 4.", "The answer is 4."},
		{"space before the block", "  \n<think>hmm</think>4", "4"},
		{"opening tag in the prompt", "add 2 and 2, carefully\n</think>\n\nThe answer is 4.", "The answer is 4."},
		{"never closed", "<think>still adding when the limit came", ""},
		{"only reasoning", "<think>nothing to say</think>\n", ""},
		{"tag quoted inside the answer", "Models write <think> and </think> around reasoning.", "Models write <think> and </think> around reasoning."},
		{"a second block is the answer's", "<think>a</think>Use <think>b</think> tags.", "Use <think>b</think> tags."},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := stripThinking(tc.in); got != tc.want {
				t.Errorf("stripThinking(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestTextToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		ok    bool
		rest  string
		calls []string // name + " " + arguments
	}{
		{name: "one call", ok: true,
			in:    "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.go\"}}\n</tool_call>",
			calls: []string{`read_file {"path":"a.go"}`}},
		{name: "text around two calls", ok: true, rest: "Reading both.\n\nThen I compare.",
			in: "Reading both.\n<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"a.go\"}}</tool_call>\n" +
				"<tool_call>{\"name\":\"read_file\",\"arguments\":{\"path\":\"b.go\"}}</tool_call>\nThen I compare.",
			calls: []string{`read_file {"path":"a.go"}`, `read_file {"path":"b.go"}`}},
		{name: "last tag unclosed", ok: true,
			in:    "<tool_call>\n{\"name\": \"task_broadcast\", \"arguments\": {\"message\": \"found it\"}}\n",
			calls: []string{`task_broadcast {"message":"found it"}`}},
		{name: "arguments as a string", ok: true,
			in:    `<tool_call>{"name": "list_files", "arguments": "{\"path\": \"docs\"}"}</tool_call>`,
			calls: []string{`list_files {"path": "docs"}`}},
		{name: "parameters instead of arguments", ok: true,
			in:    `<tool_call>{"name": "list_files", "parameters": {"path": "."}}</tool_call>`,
			calls: []string{`list_files {"path":"."}`}},
		{name: "no arguments", ok: true,
			in:    `<tool_call>{"name": "plan_show"}</tool_call>`,
			calls: []string{`plan_show {}`}},
		{name: "arguments an empty string", ok: true,
			in:    `<tool_call>{"name": "plan_show", "arguments": " "}</tool_call>`,
			calls: []string{`plan_show {}`}},
		{name: "no tag", in: "The answer is 4.", rest: "The answer is 4."},
		{name: "prose about the tag", in: "Wrap a call in <tool_call> tags.", rest: "Wrap a call in <tool_call> tags."},
		{name: "one bad call spoils all", in: `<tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":</tool_call>`,
			rest: `<tool_call>{"name":"a","arguments":{}}</tool_call><tool_call>{"name":</tool_call>`},
		{name: "no name", in: `<tool_call>{"arguments":{}}</tool_call>`, rest: `<tool_call>{"arguments":{}}</tool_call>`},
		{name: "arguments not JSON", in: `<tool_call>{"name":"a","arguments":"{\"x\""}</tool_call>`,
			ok: true, calls: []string{`a {"x"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rest, calls, ok := textToolCalls(tc.in)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				if rest != tc.in || calls != nil {
					t.Fatalf("a refusal changed the content: rest %q, calls %v", rest, calls)
				}
				return
			}
			if rest != tc.rest {
				t.Errorf("rest = %q, want %q", rest, tc.rest)
			}
			var got []string
			for _, c := range calls {
				if !strings.HasPrefix(c.ID, "call_") {
					t.Errorf("call id %q", c.ID)
				}
				got = append(got, c.Name+" "+c.Arguments)
			}
			if strings.Join(got, "\n") != strings.Join(tc.calls, "\n") {
				t.Errorf("calls:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.calls, "\n"))
			}
		})
	}
}

// A reasoning model served without a reasoning parser streams its
// thinking into the content, then calls a tool the Hermes way, in tags,
// on a server without a tool parser. The thinking is shown live but is
// not the answer, and the tagged call is a call.
func TestThinkingAndTaggedCallsFromALocalServer(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("<think>\nThe user wants"))
		s.data(contentChunk(" a file read.\n</think>\n\n"))
		s.data(contentChunk("<tool_call>\n{\"name\": \"read_file\", "))
		s.data(contentChunk("\"arguments\": {\"path\": \"main.go\"}}\n</tool_call>"))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	req := userRequest("read main.go")
	req.Tools = []Tool{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}}
	var deltas strings.Builder
	resp := mustStream(t, c, req, func(d Delta) { deltas.WriteString(d.Content) })
	if resp.Content != "" {
		t.Errorf("content = %q, want none", resp.Content)
	}
	if len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || resp.ToolCalls[0].Arguments != `{"path":"main.go"}` {
		t.Fatalf("tool calls = %+v", resp.ToolCalls)
	}
	if !strings.Contains(deltas.String(), "The user wants a file read.") {
		t.Errorf("the thinking was not shown live: %q", deltas.String())
	}
	if resp.Usage.CompletionTokens < 20 {
		t.Errorf("usage %+v leaves out the reasoning and the tags", resp.Usage)
	}

	// Without tools offered, the same text is an answer: tags are the
	// model's words, not calls nobody asked for.
	req.Tools = nil
	resp = mustStream(t, c, req, nil)
	if len(resp.ToolCalls) != 0 || !strings.HasPrefix(resp.Content, "<tool_call>") {
		t.Errorf("without tools: calls %+v, content %q", resp.ToolCalls, resp.Content)
	}
}

// FuzzTextToolCalls: any content either is left exactly as it was or
// yields calls with a name and arguments, and a rest that was in it.
func FuzzTextToolCalls(f *testing.F) {
	f.Add("<tool_call>{\"name\":\"a\",\"arguments\":{\"x\":1}}</tool_call>")
	f.Add("x<tool_call>{\"name\":\"a\"}")
	f.Add("<tool_call></tool_call>")
	f.Add("<think>a</think>b<tool_call>{\"name\":\"b\",\"arguments\":\"{}\"}</tool_call>c")
	f.Fuzz(func(t *testing.T, s string) {
		_ = stripThinking(s)
		rest, calls, ok := textToolCalls(s)
		if !ok {
			if rest != s || calls != nil {
				t.Fatalf("refused but changed: %q -> %q %v", s, rest, calls)
			}
			return
		}
		if len(calls) == 0 {
			t.Fatalf("ok with no calls for %q", s)
		}
		for _, c := range calls {
			if strings.TrimSpace(c.Name) == "" || c.Name != strings.TrimSpace(c.Name) || c.Arguments == "" {
				t.Fatalf("call %+v from %q", c, s)
			}
		}
		if strings.Contains(rest, toolCallOpen) {
			t.Fatalf("rest %q still holds a tag", rest)
		}
	})
}

// Thinking a server sends apart from the content, as reasoning_content
// (vLLM, llama.cpp) or reasoning (Ollama), is shown live between <think>
// tags, so a person sees the model at work, and is no part of the answer
// or its calls. A null content beside it does not end the block.
func TestReasoningFieldsShownNotAnswered(t *testing.T) {
	for _, field := range []string{"reasoning_content", "reasoning"} {
		t.Run(field, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				s := startSSE(w)
				s.data(chunkOf(obj{"role": "assistant", "content": nil, field: "Two and"}, nil))
				s.data(chunkOf(obj{"content": nil, field: " two."}, nil))
				if n == 1 {
					s.data(contentChunk("Four."))
				} else {
					s.data(toolChunk(call(0, "c1", "read_file", `{"path":"a"}`)))
				}
				s.data(finishChunk("stop"))
				s.done()
			})
			c, _ := newTestClient(fs)
			var log deltaLog
			resp := mustStream(t, c, userRequest("2+2?"), log.add)
			if resp.Content != "Four." {
				t.Errorf("content = %q", resp.Content)
			}
			if got, want := log.String(), "<think>Two and two.</think>\n\nFour."; got != want {
				t.Errorf("deltas = %q, want %q", got, want)
			}
			if resp.Usage.CompletionTokens < 4 {
				t.Errorf("estimated usage %+v leaves out the reasoning", resp.Usage)
			}

			log = deltaLog{}
			resp = mustStream(t, c, userRequest("read a"), log.add)
			if resp.Content != "" || len(resp.ToolCalls) != 1 {
				t.Errorf("content %q, calls %+v", resp.Content, resp.ToolCalls)
			}
			if got, want := log.String(), "<think>Two and two.</think>\n\n[tool:read_file]"; got != want {
				t.Errorf("deltas = %q, want %q", got, want)
			}
		})
	}
}

// A chunk cut or broken in the middle of its JSON fails the call, naming
// it: skipped, as a stray non-JSON line is, its part of the answer was lost
// and the rest taken as the whole answer.
func TestBrokenChunkFailsTheCall(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.raw(": keep-alive\n\ndata: ping\n\n") // not JSON at all: skipped
		s.data(contentChunk("Hello, "))
		s.raw(`data: {"choices":[{"index":0,"delta":{"content":"wor` + "\n\n")
		s.data(contentChunk("ld"))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	_, err := c.Stream(t.Context(), userRequest("hi"), nil)
	e := asError(t, err)
	if e.Retryable || !strings.Contains(e.Error(), `not valid JSON: {"choices":[{"index":0,"delta":{"content":"wor`) {
		t.Fatalf("error = %v (retryable %v)", e, e.Retryable)
	}
}

// A base URL that names no chat completions endpoint gets a plain 404 page,
// not an API's "no such model": the error says where nothing answered, and
// that the path usually ends in /v1. An API's own 404 keeps its hint.
func TestNotFoundPageNamesTheURL(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs, func(c *Config) { c.BaseURL = fs.URL })
	_, err := c.Stream(t.Context(), userRequest("hi"), nil)
	e := asError(t, err)
	want := "nothing answers at " + fs.URL + "/chat/completions: check the base URL (OpenAI-compatible servers serve under /v1"
	if e.Kind != NotFound || !strings.Contains(e.Error(), want) {
		t.Fatalf("error = %v, want it to hold %q", e, want)
	}

	api := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"error":{"message":"The model gpt-9 does not exist","type":"invalid_request_error","code":"model_not_found"}}`)
	})
	c, _ = newTestClient(api)
	_, err = c.Stream(t.Context(), userRequest("hi"), nil)
	if e := asError(t, err); strings.Contains(e.Error(), "nothing answers") || !strings.Contains(e.Error(), "check the base URL and the model name") {
		t.Fatalf("an API's 404 lost its hint: %v", e)
	}
}

// A whole JSON answer to a streaming request is complete once read, even
// when the server leaves its finish_reason null: it is taken, not retried
// as a stream cut short.
func TestWholeAnswerWithoutFinishReason(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":null}]}`)
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	if resp.Content != "hi" || resp.FinishReason != "stop" || resp.Attempts != 1 {
		t.Fatalf("content %q, finish %q, attempts %d", resp.Content, resp.FinishReason, resp.Attempts)
	}
}

// Servers whose OpenAI-compatible API lives under /v1 answer a base URL
// without it in their own way: vLLM and other FastAPI servers with a JSON
// 404 of {"detail":"Not Found"}, LM Studio with 200 and an error that names
// the path. Both say where nothing answered and that the path usually ends
// in /v1, as a plain 404 page does.
func TestBaseURLWithoutV1NamesTheURL(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
	}{
		{"fastapi", http.StatusNotFound, `{"detail":"Not Found"}`},
		{"lmstudio", http.StatusOK, `{"error":"Unexpected endpoint or method. (POST /chat/completions). Returning 200 anyway"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			c := New(Config{BaseURL: srv.URL, MaxRetries: 2, Sleep: func(context.Context, time.Duration) error { return nil }})
			_, err := c.Stream(t.Context(), userRequest("hi"), nil)
			e := asError(t, err)
			want := "nothing answers at " + srv.URL + "/chat/completions: check the base URL (OpenAI-compatible servers serve under /v1"
			if e.Retryable || !strings.Contains(e.Error(), want) {
				t.Fatalf("error = %v (retryable %v), want it to hold %q", e, e.Retryable, want)
			}
		})
	}
}

// An answer that is only tool calls as JSON, without tags (Llama 3 on a
// server without a tool parser), is those calls when they name tools the
// request offered; JSON of the model's own is left an answer.
func TestBareJSONToolCalls(t *testing.T) {
	has := func(name string) bool { return name == "read_file" || name == "list_files" }
	for _, tc := range []struct {
		name, content string
		want          []string // name and arguments of each call; nil: an answer
	}{
		{"one", `{"name": "read_file", "parameters": {"path": "main.go"}}`, []string{`read_file {"path":"main.go"}`}},
		{"fenced", "```json\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n```", []string{`read_file {"path":"a"}`}},
		{"a list", `[{"name": "list_files", "arguments": {}}, {"name": "read_file", "arguments": "{\"path\":\"b\"}"}]`,
			[]string{`list_files {}`, `read_file {"path":"b"}`}},
		{"a tool not offered", `{"name": "delete_everything", "arguments": {}}`, nil},
		{"JSON of its own", `{"name": "Ada", "age": 36}`, nil},
		{"arguments not an object", `{"name": "read_file", "arguments": "main.go"}`, nil},
		{"prose around it", `Calling {"name": "read_file", "arguments": {}} now`, nil},
		{"one of two not offered", `[{"name": "read_file", "arguments": {}}, {"name": "nope", "arguments": {}}]`, nil},
		{"empty list", `[]`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls, ok := bareToolCalls(tc.content, has)
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v, calls %+v", ok, calls)
			}
			var got []string
			for _, c := range calls {
				got = append(got, c.Name+" "+c.Arguments)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("calls %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBareJSONToolCallFromAServer(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk(`{"name": "read_file", `))
		s.data(contentChunk(`"parameters": {"path": "main.go"}}`))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	req := userRequest("read main.go")
	req.ToolSet = NewToolSet([]Tool{{Name: "read_file", Parameters: json.RawMessage(`{"type":"object"}`)}})
	resp := mustStream(t, c, req, nil)
	if resp.Content != "" || len(resp.ToolCalls) != 1 || resp.ToolCalls[0].Name != "read_file" || resp.ToolCalls[0].Arguments != `{"path":"main.go"}` {
		t.Fatalf("content %q, calls %+v", resp.Content, resp.ToolCalls)
	}
}
