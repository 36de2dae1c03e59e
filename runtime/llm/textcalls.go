package llm

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Local models often write into the content what their server was meant to
// parse out of it: a reasoning block before the answer (<think>...</think>,
// from DeepSeek-R1, QwQ and Qwen3 served without a reasoning parser), and
// tool calls as Hermes-style tags (<tool_call>{"name": ..., "arguments":
// ...}</tool_call>, from Qwen, Hermes and others served without a tool
// parser). Left as they are, the reasoning becomes part of a session's
// result and goes back to the model with every later call, and the calls
// become a final answer that ends the session with the tags as its result.

const (
	thinkOpen     = "<think>"
	thinkClose    = "</think>"
	toolCallOpen  = "<tool_call>"
	toolCallClose = "</tool_call>"
)

// stripThinking removes the reasoning block at the start of content. A
// block that is never closed (the output limit came first) is all
// reasoning; a closing tag with no opening one is a block whose opening tag
// was in the prompt (chat templates that start the answer inside it).
func stripThinking(content string) string {
	if !strings.Contains(content, "think>") {
		return content
	}
	rest := strings.TrimLeft(content, " \t\r\n")
	if after, ok := strings.CutPrefix(rest, thinkOpen); ok {
		_, answer, closed := strings.Cut(after, thinkClose)
		if !closed {
			return ""
		}
		return strings.TrimLeft(answer, " \t\r\n")
	}
	if before, answer, ok := strings.Cut(content, thinkClose); ok && !strings.Contains(before, thinkOpen) {
		return strings.TrimLeft(answer, " \t\r\n")
	}
	return content
}

// textToolCalls reads the tool calls written as <tool_call> tags in
// content. It reports ok only when there is at least one and every one is
// a JSON object with a name, so that prose that merely mentions the tag is
// left alone; rest is the content outside the tags. The last tag may be
// unclosed: models that stop at the end of their turn often leave it so.
func textToolCalls(content string) (rest string, calls []ToolCall, ok bool) {
	if !strings.Contains(content, toolCallOpen) {
		return content, nil, false
	}
	var kept []string // the text between the tags, one paragraph each
	s := content
	for {
		before, after, found := strings.Cut(s, toolCallOpen)
		if text := strings.TrimSpace(before); text != "" {
			kept = append(kept, text)
		}
		if !found {
			break
		}
		body, next, closed := strings.Cut(after, toolCallClose)
		if !closed {
			next = ""
		}
		call, good := parseTextCall(body)
		if !good {
			return content, nil, false
		}
		calls = append(calls, call)
		s = next
	}
	return strings.Join(kept, "\n\n"), calls, true
}

// parseTextCall decodes the body of one <tool_call> tag: {"name": ...,
// "arguments": {...}}, the arguments also accepted as a JSON string or
// under "parameters".
func parseTextCall(body string) (ToolCall, bool) {
	var c struct {
		Name       string          `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	if json.Unmarshal([]byte(strings.TrimSpace(body)), &c) != nil || strings.TrimSpace(c.Name) == "" {
		return ToolCall{}, false
	}
	args := c.Arguments
	if len(args) == 0 {
		args = c.Parameters
	}
	var text string
	switch {
	case len(args) == 0 || string(args) == "null":
		text = "{}"
	case args[0] == '"':
		if json.Unmarshal(args, &text) != nil {
			return ToolCall{}, false
		}
		if strings.TrimSpace(text) == "" {
			text = "{}" // "arguments": "" is a call without any
		}
	default:
		var b bytes.Buffer
		if json.Compact(&b, args) != nil {
			return ToolCall{}, false
		}
		text = b.String()
	}
	return ToolCall{ID: newCallID(), Name: strings.TrimSpace(c.Name), Arguments: text}, true
}

// bareToolCalls reads an answer that is nothing but tool calls written as
// JSON, without tags: {"name": ..., "arguments": ...}, or a list of them,
// perhaps in a ```json fence (Llama 3 and others served without a tool
// parser write them so). It reports ok only when every call names a tool
// the request offered (has), so that an answer that is JSON of its own is
// left alone.
func bareToolCalls(content string, has func(string) bool) ([]ToolCall, bool) {
	s := strings.TrimSpace(content)
	if inner, ok := strings.CutPrefix(s, "```"); ok {
		inner = strings.TrimPrefix(inner, "json")
		inner, ok = strings.CutSuffix(strings.TrimSpace(inner), "```")
		if !ok {
			return nil, false
		}
		s = strings.TrimSpace(inner)
	}
	var bodies []json.RawMessage
	switch {
	case strings.HasPrefix(s, "{"):
		bodies = []json.RawMessage{json.RawMessage(s)}
	case strings.HasPrefix(s, "["):
		if json.Unmarshal([]byte(s), &bodies) != nil || len(bodies) == 0 {
			return nil, false
		}
	default:
		return nil, false
	}
	calls := make([]ToolCall, 0, len(bodies))
	for _, b := range bodies {
		c, ok := parseTextCall(string(b))
		if !ok || !has(c.Name) || !isObject(c.Arguments) {
			return nil, false
		}
		calls = append(calls, c)
	}
	return calls, true
}

func isObject(text string) bool { return strings.HasPrefix(strings.TrimSpace(text), "{") }
