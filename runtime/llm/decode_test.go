package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// summarize renders what the accumulator reads from a chunk.
func summarize(ch *chunk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "object=%q model=%q error=%q usage=%s groq=%s\n", ch.Object, ch.Model, ch.Error,
		summarizeUsage(ch.Usage), summarizeGroq(ch.XGroq))
	for _, c := range ch.Choices {
		fmt.Fprintf(&b, "choice index=%q finish=%q\n", c.Index, c.FinishReason)
		for _, d := range []chunkDelta{c.Delta, c.Message} {
			fmt.Fprintf(&b, "  content=%q\n", d.Content)
			for _, tc := range d.ToolCalls {
				fmt.Fprintf(&b, "  call index=%q id=%q name=%q args=%q\n", tc.Index, tc.ID, tc.Function.Name, tc.Function.Arguments)
			}
		}
	}
	return b.String()
}

func summarizeUsage(u *chunkUsage) string {
	if u == nil || (u.PromptTokens == nil && u.CompletionTokens == nil && u.TotalTokens == nil) {
		return "none"
	}
	return fmt.Sprintf("%q/%q/%q", u.PromptTokens, u.CompletionTokens, u.TotalTokens)
}

func summarizeGroq(g *xGroq) string {
	if g == nil {
		return "none"
	}
	return summarizeUsage(g.Usage)
}

var chunkKeys = []string{"object", "model", "choices", "usage", "x_groq", "error", "index", "delta", "message",
	"finish_reason", "content", "tool_calls", "id", "function", "name", "arguments",
	"prompt_tokens", "completion_tokens", "total_tokens"}

// plainKeys reports whether every member name in line is written without
// escapes, appears once in its object, and matches a chunk field exactly or
// not at all. Where it does not, encoding/json's case-insensitive and
// merging rules differ from parseChunk on purpose.
func plainKeys(line []byte) bool {
	dec := json.NewDecoder(strings.NewReader(string(line)))
	type level struct {
		object  bool
		wantKey bool
		seen    map[string]bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:len(stack)-1]
				if len(stack) > 0 && stack[len(stack)-1].object {
					stack[len(stack)-1].wantKey = true
				}
				continue
			}
			k := tok.(string)
			if top.seen[k] || !strings.Contains(string(line), `"`+k+`"`) {
				return false
			}
			for _, known := range chunkKeys {
				if k != known && strings.EqualFold(k, known) {
					return false
				}
			}
			top.seen[k] = true
			top.wantKey = false
			continue
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &level{object: true, wantKey: true, seen: map[string]bool{}})
			continue
		case json.Delim('['):
			stack = append(stack, &level{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].wantKey = true
		}
	}
}

// checkParseChunk compares parseChunk with encoding/json on one line.
func checkParseChunk(t *testing.T, line string) {
	t.Helper()
	var got chunk
	ok := parseChunk([]byte(line), &got)
	var ref chunk
	err := json.Unmarshal([]byte(line), &ref)
	var typeErr *json.UnmarshalTypeError
	isObject := strings.HasPrefix(strings.TrimLeft(line, " \t\r\n"), "{")
	if !(err == nil || (errors.As(err, &typeErr) && isObject)) || !plainKeys([]byte(line)) {
		return
	}
	if !isObject {
		// null is the one such line encoding/json reads into a struct, as
		// nothing at all; parseChunk calls it no chunk. The stream skips
		// the line either way.
		if ok {
			t.Fatalf("parseChunk accepted %q, which is not an object", line)
		}
		return
	}
	if !ok {
		t.Fatalf("parseChunk rejected %q, which encoding/json reads", line)
	}
	if g, w := summarize(&got), summarize(&ref); g != w {
		t.Fatalf("parseChunk(%q):\n%s\nencoding/json:\n%s", line, g, w)
	}
}

func TestParseChunkMatchesEncodingJSON(t *testing.T) {
	for _, line := range []string{
		`{"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi \"there\""},"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]}}]}`,
		` { "choices" : [ { "delta" : { "tool_calls" : [ 5, null, { "function" : { "arguments" : { "a" : [ 1 , 2 ] } } } ] } } ] } `,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
		`{"choices":[7,"x",{"message":{"content":[{"type":"text","text":"p"}]},"finish_reason":"stop"}],"usage":null,"x_groq":{"id":"q","usage":{"prompt_tokens":"4"}}}`,
		`{"error":{"message":"m","code":500},"object":"error"}`,
		`{"choices":{"index":0},"usage":5,"x_groq":[1],"model":12.5e3,"extra":{"deep":[{"a":"}"}]}}`,
		`{"choices":[{"delta":"str","index":"1","finish_reason":false}]}`,
	} {
		checkParseChunk(t, line)
	}
	// Not JSON objects: rejected.
	for _, line := range []string{``, `ping`, `[1]`, `{"a":1} trailing`, `{"a":`, `{"a":"unterminated}`, `"str"`, `null`, ` null `} {
		var ch chunk
		if parseChunk([]byte(line), &ch) {
			t.Errorf("parseChunk accepted %q", line)
		}
	}
}

func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{
		`{"choices":[{"index":0,"delta":{"content":"a"},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":1,"id":"c","function":{"name":"n","arguments":"{\"k\":\"v\"}"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`,
		`{"error":{"message":"boom","type":"server_error"}}`,
		`{"x_groq":{"usage":{"prompt_tokens":1}},"choices":[{"message":{"content":"m"}}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		checkParseChunk(t, line)
	})
}
