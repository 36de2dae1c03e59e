package llm

import (
	"cmp"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// A server that does not know the model asked for says so, but rarely says
// which models it does know, and that is what a user needs next: a local
// server (Ollama, LM Studio, vLLM) names its models in its own way, and a
// base URL given without a model asks it for the default provider's. So
// once a call has failed that way, the client asks the server for its list
// (GET {base}/models, which every OpenAI-compatible server answers) and
// names them in the error.

const (
	// modelsWait bounds asking for the list; the call has failed already,
	// and the answer only improves its message.
	modelsWait = 3 * time.Second
	// maxModelsBody bounds the list read: OpenRouter's is about 300 KB.
	maxModelsBody = 4 << 20
	// modelsShown is how many models the hint names at most.
	modelsShown = 8
)

// unknownModel reports whether e says the model asked for does not exist.
// A 404 from an API (not a page missing: that has its own hint) says so
// for OpenAI, Ollama and vLLM; others refuse the request with a message
// about the model.
func unknownModel(e *Error) bool {
	if e.hint != "" {
		return false
	}
	if e.Kind == NotFound || strings.EqualFold(e.Code, "model_not_found") {
		return true
	}
	if e.Kind != BadRequest {
		return false
	}
	m := strings.ToLower(e.Message)
	if !strings.Contains(m, "model") {
		return false
	}
	for _, s := range []string{"not found", "does not exist", "not a valid model", "invalid model", "unknown model", "no such model", "not available"} {
		if strings.Contains(m, s) {
			return true
		}
	}
	return false
}

// serverModels asks the server which models it serves. It returns nil when
// the server does not answer with a list in time.
func (c *Client) serverModels(ctx context.Context) []string {
	base := c.cfg.BaseURL
	if base == "" {
		base = "https://api.openai.com/v1"
	}
	body := c.getBounded(ctx, strings.TrimSuffix(base, "/")+"/models", modelsWait, maxModelsBody)
	if body == nil {
		return nil
	}
	return parseModels(body)
}

// getBounded GETs url from the server, with the call's credentials and
// headers, and returns the body of a 200 answer of at most limit bytes
// received within wait; nil for anything else. It serves the questions the
// client asks besides its calls, which only ever improve a message.
func (c *Client) getBounded(ctx context.Context, url string, wait time.Duration, limit int) []byte {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil
	}
	addQuery(req.URL, c.query)
	req.Header.Set("Accept", "application/json")
	if c.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
	}
	for k, v := range c.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(limit)+1))
	if err != nil || len(body) > limit {
		return nil
	}
	return body
}

// parseModels reads the ids of an OpenAI model list, {"data":[{"id":..}]},
// in the server's order, without duplicates or blanks. Ollama's own
// /api/tags shape ({"models":[{"name":..}]}) is read too, for a base URL
// that points there.
func parseModels(body []byte) []string {
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Models []struct {
			Name string `json:"name"`
			ID   string `json:"id"`
		} `json:"models"`
	}
	if json.Unmarshal(body, &list) != nil {
		return nil
	}
	var ids []string
	add := func(id string) {
		if id = textcut.OneLine(id, 200); id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	for _, m := range list.Data {
		add(m.ID)
	}
	for _, m := range list.Models {
		add(cmp.Or(m.ID, m.Name))
	}
	return ids
}

// noModelPhrase starts the hint for a model the server does not have.
const noModelPhrase = "the server has no model "

// SaysNoSuchModel reports whether a failure's reason is that the server
// does not have the model asked for: another model fixes it, not a retry.
func SaysNoSuchModel(reason string) bool { return strings.Contains(reason, noModelPhrase) }

// modelsHint is the hint for a model the server does not know, given the
// models it lists; "" when the list does not help (empty, or it holds the
// model after all, and the default hint stands).
func modelsHint(model string, models []string) string {
	if len(models) == 0 || slices.Contains(models, model) {
		return ""
	}
	// Names that share the model's family come first: asked for "llama3",
	// "llama3.1:8b" is the likely one.
	family := strings.ToLower(model)
	if i := strings.LastIndexByte(family, '/'); i >= 0 {
		family = family[i+1:]
	}
	if i := strings.IndexAny(family, ":@"); i >= 0 {
		family = family[:i]
	}
	var ranked, rest []string
	for _, m := range models {
		if family != "" && strings.Contains(strings.ToLower(m), family) {
			ranked = append(ranked, m)
		} else {
			rest = append(rest, m)
		}
	}
	ranked = append(ranked, rest...)
	var b strings.Builder
	b.WriteString(noModelPhrase)
	b.WriteString(strconv.Quote(model))
	b.WriteString(" but serves ")
	if len(ranked) > 1 {
		b.WriteString(strconv.Itoa(len(ranked)))
		b.WriteString(" models: ")
	}
	b.WriteString(strings.Join(ranked[:min(len(ranked), modelsShown)], ", "))
	if n := len(ranked) - modelsShown; n > 0 {
		b.WriteString(" and ")
		b.WriteString(strconv.Itoa(n))
		b.WriteString(" more")
	}
	return b.String()
}
