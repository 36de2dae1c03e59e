package llm

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"

	openai "github.com/sashabaranov/go-openai"
)

// emptySchema stands in for a tool without parameters: servers reject a
// null schema.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// chatRequest maps a Request to go-openai's form. StreamOptions is set per
// attempt.
func chatRequest(req *Request) openai.ChatCompletionRequest {
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i := range req.Messages {
		m := &req.Messages[i]
		om := openai.ChatCompletionMessage{
			Role:       m.Role,
			Content:    m.Content,
			Name:       m.Name,
			ToolCallID: m.ToolCallID,
		}
		// go-openai omits empty content, and servers reject a tool result
		// or user message without any.
		if om.Content == "" && (m.Role == RoleTool || m.Role == RoleUser) {
			om.Content = " "
		}
		if len(m.ToolCalls) > 0 {
			om.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}" // servers that parse the arguments reject ""
				}
				om.ToolCalls[j] = openai.ToolCall{
					ID:       tc.ID,
					Type:     openai.ToolTypeFunction,
					Function: openai.FunctionCall{Name: tc.Name, Arguments: args},
				}
			}
		}
		msgs[i] = om
	}
	out := openai.ChatCompletionRequest{Model: req.Model, Messages: msgs}
	if len(req.Tools) > 0 {
		out.Tools = make([]openai.Tool, len(req.Tools))
		for i, t := range req.Tools {
			params := t.Parameters
			if p := bytes.TrimSpace(params); len(p) == 0 || string(p) == "null" {
				params = emptySchema
			}
			out.Tools[i] = openai.Tool{Type: openai.ToolTypeFunction, Function: &openai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			}}
		}
	}
	if req.Temperature != nil {
		out.Temperature = *req.Temperature
		if out.Temperature == 0 {
			// go-openai omits a zero temperature, which servers read as
			// their default (often 0.7 or 1); this is as close to 0 as
			// float32 gets and still sent.
			out.Temperature = math.SmallestNonzeroFloat32
		}
	}
	if req.MaxTokens > 0 {
		if reasoningModel(req.Model) {
			out.MaxCompletionTokens = req.MaxTokens
		} else {
			// Local servers know max_tokens; not all know the newer name.
			out.MaxTokens = req.MaxTokens
		}
	}
	return out
}

// reasoningModel reports the OpenAI models that refuse max_tokens (go-openai
// rejects it for them before sending).
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5", "gpt-6"} {
		if strings.HasPrefix(model, p) {
			return true
		}
	}
	return false
}

// newCallID makes an id for a tool call the server sent without one; the
// tool result must name it.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "call_" + hex.EncodeToString(b[:])
}
