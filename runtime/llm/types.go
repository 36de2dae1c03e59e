// Package llm is swarmdeck's client for OpenAI-compatible chat completion
// servers (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter and the
// built-in scripted model). It streams every call through go-openai, with
// a request body it encodes itself (encode.go), and smooths over the
// differences between servers: how tool calls are split across chunks,
// where usage arrives, how errors and rate limits look.
package llm

import "time"

import "encoding/json"

// Role of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one chat message as sent to the model.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"` // tool name on tool results
}

// ToolCall is one function call requested by the model. Arguments is the raw
// JSON text as the server sent it, malformed or not; empty arguments come
// back as "{}", and when a server sent an object instead of a string it is
// re-encoded as compact JSON text. A server that sent no id gets a
// generated one.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Tool describes a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON Schema object
}

// Request is one chat completion call.
type Request struct {
	Model    string
	Messages []Message
	// Tools is encoded anew on every call; ToolSet, when set, is used
	// instead and costs nothing per call.
	Tools       []Tool
	ToolSet     *ToolSet
	Temperature *float32
	MaxTokens   int
	// OnRetry, when set, is told of each failed attempt that is about to
	// be tried again, before the wait; it runs on the caller's goroutine.
	OnRetry func(Retry)
}

// hasTool reports whether the request offers a tool named name.
func (r *Request) hasTool(name string) bool {
	if r.ToolSet != nil {
		return r.ToolSet.Has(name)
	}
	for _, t := range r.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// Retry is a failed attempt of a call that will be tried again.
type Retry struct {
	Attempt int           // the attempt that failed, from 1
	Of      int           // attempts at most, the first included
	Wait    time.Duration // until the next
	Reason  string        // what failed, as the call's error would say it
}

// ToolSet is a list of tools encoded once, for the many calls of a session
// that offer the same tools: encoding and checking some thirty JSON schemas
// on every call was a large share of a swarm's CPU time. A ToolSet is
// immutable and safe for concurrent use; its methods take a nil *ToolSet
// as a set without tools.
type ToolSet struct {
	json  []byte // the OpenAI "tools" array, compact
	names map[string]bool
	len   int
	chars int   // length of names, descriptions and schemas, for usage estimates
	err   error // why a schema cannot be sent
}

// NewToolSet encodes tools. A tool whose Parameters are empty or null gets
// an empty object schema; one whose Parameters are not valid JSON makes
// every call with the set fail as a BadRequest before anything is sent, as
// Request.Tools does (Err reports it earlier).
func NewToolSet(tools []Tool) *ToolSet {
	s := &ToolSet{len: len(tools), names: make(map[string]bool, len(tools))}
	for i := range tools {
		t := &tools[i]
		s.chars += len(t.Name) + len(t.Description) + len(t.Parameters)
		s.names[t.Name] = true
	}
	s.json, s.err = appendTools(make([]byte, 0, s.chars+64*len(tools)), tools)
	if s.err != nil {
		s.json = nil
	}
	return s
}

// Has reports whether the set has a tool named name.
func (s *ToolSet) Has(name string) bool {
	return s != nil && s.names[name]
}

// Len is the number of tools in the set.
func (s *ToolSet) Len() int {
	if s == nil {
		return 0
	}
	return s.len
}

// Err reports a tool whose schema is not valid JSON.
func (s *ToolSet) Err() error {
	if s == nil {
		return nil
	}
	return s.err
}

// Usage counts tokens of one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		PromptTokens:     u.PromptTokens + o.PromptTokens,
		CompletionTokens: u.CompletionTokens + o.CompletionTokens,
		TotalTokens:      u.TotalTokens + o.TotalTokens,
	}
}

// Response is the accumulated result of one completed call.
type Response struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason string
	Usage        Usage
	// UsageEstimated is set when the server reported no usage and Usage was
	// estimated from the text length (about four characters a token).
	UsageEstimated bool
	Model          string
	Attempts       int // 1 when the first attempt succeeded
	// FromOllama is set when the server signed its answer as Ollama's
	// (system_fingerprint "fp_ollama"): see Client.ServedContext.
	FromOllama bool
}

// Delta is a piece of streamed output, delivered as it arrives so the
// dashboard can show tokens live. Deltas of an attempt that is later retried
// are followed by a Delta with Reset set, telling the receiver to discard
// what it showed for this call.
type Delta struct {
	Content  string
	ToolName string // set when a tool call starts streaming
	Reset    bool
}
