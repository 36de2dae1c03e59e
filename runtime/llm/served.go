package llm

import (
	"context"
	"encoding/json"
	"strings"
	"time"
)

// Ollama gives a model a context window of its own choosing (4,096 tokens
// on a machine with less than 24 GiB of video memory, unless
// OLLAMA_CONTEXT_LENGTH or the model's num_ctx says otherwise), and cuts a
// prompt that does not fit without an error: the call succeeds, and the
// model answers without the instructions and tools that were cut. An
// agent's prompt with its tools is several thousand tokens, so this is the
// first thing a user of a local model meets. The OpenAI-compatible API does
// not say what the window is; Ollama's own GET /api/ps does, for the models
// it has loaded.

const (
	// servedWait bounds the question: it only ever adds a warning.
	servedWait = 3 * time.Second
	// maxServedBody bounds the list read: a few hundred bytes a model.
	maxServedBody = 1 << 20
)

// ServedContext asks the server how many tokens of context it gives model,
// and reports false when it cannot tell: the server is not a local Ollama
// (only plain http:// servers are asked, never a cloud API), it does not
// list the model as loaded, or it does not answer in time. Ask after a
// call has succeeded, when the model is loaded.
func (c *Client) ServedContext(ctx context.Context, model string) (int, bool) {
	if c.direct == nil || model == "" {
		return 0, false
	}
	root := strings.TrimSuffix(strings.TrimSuffix(c.cfg.BaseURL, "/"), "/v1")
	body := c.getBounded(ctx, root+"/api/ps", servedWait, maxServedBody)
	if body == nil {
		return 0, false
	}
	return servedContext(body, model)
}

// servedContext reads the context window of model from an Ollama /api/ps
// answer, {"models":[{"name","model","context_length"}]}. A model asked
// for without a tag is listed with ":latest".
func servedContext(body []byte, model string) (int, bool) {
	var ps struct {
		Models []struct {
			Name          string `json:"name"`
			Model         string `json:"model"`
			ContextLength int    `json:"context_length"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &ps) != nil {
		return 0, false
	}
	same := func(listed string) bool {
		return listed != "" && (listed == model || listed == model+":latest")
	}
	for _, m := range ps.Models {
		if (same(m.Name) || same(m.Model)) && m.ContextLength > 0 {
			return m.ContextLength, true
		}
	}
	return 0, false
}

// PromptTokens estimates the tokens of req's prompt the way the usage of a
// server that reports none is estimated: a token per four bytes of the
// messages and the tools' schemas.
func PromptTokens(req *Request) int {
	n := 0
	for i := range req.Messages {
		m := &req.Messages[i]
		n += len(m.Content) + len(m.Name) + len(m.ToolCallID) + 16 // role and framing
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	if req.ToolSet != nil {
		n += req.ToolSet.chars
	} else {
		for _, t := range req.Tools {
			n += len(t.Name) + len(t.Description) + len(t.Parameters)
		}
	}
	return (n + 3) / 4
}
