package llm

import (
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

// chatParams is the request handed to go-openai: every field its
// client-side checks read (model, temperature, the token limits, whether
// there are tools) and nothing else. The body sent is encodeBody's, with
// the temperature chosen here; go-openai's own encoding of this small
// request is thrown away (see doer).
func chatParams(req *Request) openai.ChatCompletionRequest {
	out := openai.ChatCompletionRequest{Model: req.Model}
	if req.ToolSet.Len() > 0 || (req.ToolSet == nil && len(req.Tools) > 0) {
		// Some models refuse tools on this endpoint; go-openai only needs to
		// see that there are some.
		out.Tools = toolsPresent
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
			//lint:ignore SA1019 deprecated by OpenAI only
			out.MaxTokens = req.MaxTokens
		}
	}
	return out
}

// checkParams runs the checks go-openai makes of a request's model and
// parameters before sending it, then takes the tools out of oreq: past
// the checks go-openai only encodes them, into a body the doer throws
// away, and its encoding of a tool (a map marshalled by reflection) costs
// more than the rest of that body. What is left for go-openai to check,
// whether the endpoint serves the model, reads the model alone.
func checkParams(oreq *openai.ChatCompletionRequest) error {
	if len(oreq.Tools) == 0 {
		return nil // go-openai checks the same request itself
	}
	check := *oreq
	check.Stream = true // as CreateChatCompletionStream checks it
	if err := openai.NewReasoningValidator().Validate(check); err != nil {
		return err
	}
	oreq.Tools = nil
	return nil
}

// toolsPresent stands in for a request's tools in chatParams. It is never
// changed.
var toolsPresent = []openai.Tool{{Type: openai.ToolTypeFunction}}

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
