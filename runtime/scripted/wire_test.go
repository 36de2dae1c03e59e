package scripted

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	openai "github.com/sashabaranov/go-openai"
	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

func TestDecodeRequestMatchesTheClient(t *testing.T) {
	req := openai.ChatCompletionRequest{
		Model:         "m",
		Stream:        true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
		Messages: []openai.ChatCompletionMessage{
			{Role: "system", Content: "You are the researcher agent of a swarmdeck swarm.\nLine \"two\"\t\\ é 😀 \u2028"},
			{Role: "user", MultiContent: []openai.ChatMessagePart{{Type: "text", Text: "part one "}, {Type: "image_url", ImageURL: &openai.ChatMessageImageURL{URL: "x"}}, {Type: "text", Text: "part two"}}},
			{Role: "assistant", ToolCalls: []openai.ToolCall{
				{ID: "call_1", Type: "function", Function: openai.FunctionCall{Name: "list_files", Arguments: `{"path":"."}`}},
				{ID: "call_2", Type: "function", Function: openai.FunctionCall{Name: "get_shared_context", Arguments: ``}},
			}},
			{Role: "tool", ToolCallID: "call_1", Name: "list_files", Content: `{"entries":[]}`},
		},
		Tools: []openai.Tool{
			{Type: "function", Function: &openai.FunctionDefinition{Name: "list_files", Description: "Lists \"files\"", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}},
			{Type: "function", Function: &openai.FunctionDefinition{Name: "get_shared_context", Parameters: json.RawMessage(`{"type":"object"}`)}},
		},
		Temperature: 0.5,
	}
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	got, err := decodeRequest(string(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &wireRequest{Stream: true, IncludeUsage: true, Request: Request{
		Model: "m",
		Tools: []string{"list_files", "get_shared_context"},
		Messages: []Message{
			{Role: "system", Content: req.Messages[0].Content},
			{Role: "user", Content: "part one part two"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "call_1", Name: "list_files", Arguments: `{"path":"."}`}, {ID: "call_2", Name: "get_shared_context"}}},
			{Role: "tool", ToolCallID: "call_1", Name: "list_files", Content: `{"entries":[]}`},
		},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

func TestDecodeRequestShapesSeenInTheWild(t *testing.T) {
	got, err := decodeRequest(`{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","function":{"name":"f","arguments":{"a":[1,{"b":null}]}}}]},` +
		`{"role":"user","content":"\ud83d\ude00 \u00e9\/"}],"tools":null,"stream_options":null,"n":1,"stop":["x"],"x":{"y":[true,false,-1.5e3]}}`)
	if err != nil {
		t.Fatal(err)
	}
	if a := got.Messages[0].ToolCalls[0].Arguments; a != `{"a":[1,{"b":null}]}` {
		t.Fatalf("object arguments = %q", a)
	}
	if c := got.Messages[1].Content; c != "😀 é/" {
		t.Fatalf("content = %q", c)
	}
}

// FuzzDecodeRequest checks the hand-written reader against encoding/json on
// requests built from arbitrary strings.
func FuzzDecodeRequest(f *testing.F) {
	f.Add("hello", "list_files", `{"path":"."}`, "tool")
	f.Add("line\nbreak \"quoted\" \\ \x00 \xff", "x\u2028", "", "user")
	f.Add("😀\xed\xa0\x80", "é", `{"a":"\"}`, "assistant")
	f.Add("0", "0", "0", "0")
	f.Fuzz(func(t *testing.T, content, name, args, role string) {
		if role == "" {
			role = "user"
		}
		req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{
			{Role: role, Content: content, ToolCallID: name},
			{Role: "assistant", ToolCalls: []openai.ToolCall{{ID: content, Type: "function", Function: openai.FunctionCall{Name: name, Arguments: args}}}},
		}, Tools: []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: name, Description: content}}}}
		body, err := json.Marshal(req)
		if err != nil {
			t.Skip()
		}
		var ref openai.ChatCompletionRequest
		if err := json.Unmarshal(body, &ref); err != nil {
			t.Fatal(err)
		}
		got, err := decodeRequest(string(body))
		if !knownRole(role) {
			// A role no chat API has is refused, naming it.
			if err == nil || !strings.Contains(err.Error(), "is not one of") {
				t.Fatalf("role %q: decoded with error %v", role, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
		m0, m1 := got.Messages[0], got.Messages[1]
		if m0.Role != ref.Messages[0].Role || m0.Content != ref.Messages[0].Content || m0.ToolCallID != ref.Messages[0].ToolCallID ||
			m1.ToolCalls[0].ID != ref.Messages[1].ToolCalls[0].ID || m1.ToolCalls[0].Name != ref.Messages[1].ToolCalls[0].Function.Name ||
			m1.ToolCalls[0].Arguments != ref.Messages[1].ToolCalls[0].Function.Arguments {
			t.Fatalf("decoded %+v\nencoding/json %+v", got.Messages, ref.Messages)
		}
		if name != "" && (len(got.Tools) != 1 || got.Tools[0] != ref.Tools[0].Function.Name) {
			t.Fatalf("tools %v", got.Tools)
		}
	})
}

// FuzzDecodeRequestRaw feeds arbitrary bytes: the reader must not panic,
// and must agree with encoding/json on what is valid JSON when it accepts.
func FuzzDecodeRequestRaw(f *testing.F) {
	f.Add(`{"messages":[{"role":"user","content":"x"}]}`)
	f.Add(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}],"tools":[{"function":{"name":"n","parameters":{"a":[[[]]]}}}]}`)
	f.Add(`{"messages":[`)
	f.Add(strings.Repeat("[", 2000))
	f.Fuzz(func(t *testing.T, body string) {
		req, err := decodeRequest(body)
		// A cache of tools arrays never changes what a body means: the
		// second read of the same body takes the cached array.
		var cache toolsCache
		for range 2 {
			cached, cerr := decodeBody(body, false, &cache)
			if (cerr == nil) != (err == nil) || (err == nil && !reflect.DeepEqual(cached.Tools, req.Tools)) {
				t.Fatalf("with a cache: %v %v, without: %v %v", cached, cerr, req, err)
			}
		}
		if err != nil {
			return
		}
		if len(req.Messages) == 0 {
			t.Fatal("accepted a request without messages")
		}
		for _, m := range req.Messages {
			if !utf8.ValidString(m.Content) && strings.Contains(body, `\`) {
				t.Fatalf("unescaped content is not valid UTF-8: %q", m.Content)
			}
		}
	})
}

// Bodies that share a tools array are read from the cache; one whose array
// only starts the same way is read in full.
func TestToolsCache(t *testing.T) {
	var cache toolsCache
	body := func(tools string) string {
		return `{"messages":[{"role":"user","content":"x"}],"tools": ` + tools + `,"stream":true}`
	}
	a := `[{"type":"function","function":{"name":"alpha","parameters":{"type":"object"}}}]`
	b := `[{"type":"function","function":{"name":"alpha","parameters":{"type":"object"}}},{"type":"function","function":{"name":"beta"}}]`
	for _, tc := range []struct {
		tools string
		want  []string
	}{{a, []string{"alpha"}}, {a, []string{"alpha"}}, {b, []string{"alpha", "beta"}}, {b, []string{"alpha", "beta"}}, {"[]", nil}} {
		req, err := decodeBody(body(tc.tools), true, &cache)
		if err != nil || !reflect.DeepEqual(req.Tools, tc.want) || !req.Stream {
			t.Fatalf("tools %s: got %v (stream %v), err %v; want %v", tc.tools, req.Tools, req.Stream, err, tc.want)
		}
		req.Tools = append(req.Tools, "changed by a policy") // must not reach the cache
	}
	if n := len(cache.entries); n != 3 {
		t.Fatalf("%d cached arrays, want 3", n)
	}
}

// What the scripted model writes as a JSON string, its own request reader
// reads back.
func FuzzStringRoundTrip(f *testing.F) {
	f.Add("plain")
	f.Add("\"\\\n\r\t\b\f\x00\x1f\x7f é 😀 \u2028\u2029 \xff\xfe <>&")
	f.Fuzz(func(t *testing.T, s string) {
		b := jsontext.AppendString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q -> invalid JSON %s: %v", s, b, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		_ = json.Unmarshal(ref, &want)
		if got != want {
			t.Fatalf("%q: got %q, encoding/json gives %q", s, got, want)
		}
		// And the reader reads it back.
		r := &jsonReader{s: string(b)}
		if back := r.str(); r.err != nil || back != want {
			t.Fatalf("read back %q (%v), want %q", back, r.err, want)
		}
	})
}

func TestItemsParsing(t *testing.T) {
	msg := "Research the market\n\n" + siblingTable + "\n\n" +
		`<new_sibling task_id="s-9" agent="writer (w-1)" title="Write &quot;it&quot;">` + "\n\n" +
		`<sibling_broadcast from="researcher (r-1)" task_id="s-3" category="discovery" timestamp="t">a &lt;b&gt; &amp; c</sibling_broadcast>` + "\n\n" +
		`<human_message>hi</human_message>`
	items := parseItems(msg, 2, nil)
	var tags []string
	for _, it := range items {
		tags = append(tags, it.tag)
	}
	if strings.Join(tags, ",") != ",sibling_tasks,new_sibling,sibling_broadcast,human_message" {
		t.Fatalf("tags = %v", tags)
	}
	if items[0].body != "Research the market" || items[2].attr("title") != `Write "it"` || items[2].attr("task_id") != "s-9" ||
		items[3].body != "a <b> & c" || items[3].attr("from") != "researcher (r-1)" || items[4].body != "hi" || items[4].after != 2 {
		t.Fatalf("items = %+v", items)
	}
	rows := siblingRows(items[1].body)
	if len(rows) != 2 || rows[1] != (sibling{taskID: "s-r2", agent: "researcher", label: "research-2", title: "Research channels"}) {
		t.Fatalf("rows = %+v", rows)
	}
	if plainOf(msg) != "Research the market" {
		t.Fatalf("plain = %q", plainOf(msg))
	}
}

func TestIdentify(t *testing.T) {
	id := identify(&Request{Messages: []Message{{Role: "system", Content: "\nYou are the planner agent of a swarmdeck swarm.\nYour task id: s-1\nYour label: plan-2\nYou are a sub-orchestrator working on a delegated task.\n"}}})
	if id != (identity{role: "planner", taskID: "s-1", label: "plan-2", delegated: true}) {
		t.Fatalf("id = %+v", id)
	}
	id = identify(&Request{Messages: []Message{{Role: "system", Content: "You are the planner agent of a swarm."}}})
	if id.role != "" {
		t.Fatalf("id = %+v", id)
	}
}

// An answer without tool calls, streamed unpaced, carries no tool_calls
// field at all: OpenAI never sends an empty one, and a client that tells
// a call by the field being there would see one.
func TestUnpacedTextStreamHasNoToolCalls(t *testing.T) {
	var st stream
	encodeStream(&st, dialectOpenAI, "chatcmpl-1", 1, "Just text.", nil, false, true, usage{})
	body := string(st.buf)
	if strings.Contains(body, "tool_calls") || !strings.Contains(body, `"content":"Just text."`) {
		t.Errorf("stream:\n%s", body)
	}
}
