package llm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Kind says what went wrong with an LLM call, in terms a caller can act on.
type Kind int

// Kinds of Error. The zero Kind is never returned.
const (
	RateLimited   Kind = iota + 1 // 429 or a rate-limit error event; retried
	QuotaExceeded                 // insufficient_quota, out of credits; not retried
	ContextLength                 // the conversation does not fit the model; not retried
	Auth                          // 401/403: key missing, wrong or not allowed
	BadRequest                    // the server (or go-openai) refused the request as sent
	NotFound                      // 404: wrong base URL or unknown model
	Server                        // 5xx, 409 or an error event from the server
	Network                       // connection refused, reset, EOF before headers
	Truncated                     // the stream ended without a finish reason
	IdleTimeout                   // the stream went silent for IdleTimeout
	Timeout                       // an attempt exceeded CallTimeout, or 408
	Canceled                      // the caller's context ended
	BadResponse                   // an answer that cannot be read as a chat completion stream, or one too large to hold
)

var kindNames = [...]string{
	RateLimited:   "rate_limited",
	QuotaExceeded: "quota_exceeded",
	ContextLength: "context_length",
	Auth:          "auth",
	BadRequest:    "bad_request",
	NotFound:      "not_found",
	Server:        "server",
	Network:       "network",
	Truncated:     "truncated",
	IdleTimeout:   "idle_timeout",
	Timeout:       "timeout",
	Canceled:      "canceled",
	BadResponse:   "bad_response",
}

func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Error is the error every failed call returns; use errors.As to get it.
type Error struct {
	Kind       Kind
	Status     int           // HTTP status, 0 when there was no HTTP error response
	Code       string        // the server's error code, e.g. "context_length_exceeded"
	Type       string        // the server's error type, e.g. "invalid_request_error"
	Message    string        // the server's message, or what failed, on one line
	Retryable  bool          // whether this failure was worth retrying
	Attempts   int           // attempts made, the first included
	RetryAfter time.Duration // the server's Retry-After, 0 when it sent none
	Err        error         // the underlying error, if any (ctx.Err() for Canceled)
	// Usage is what the server reported for the attempts that failed: it
	// counts (and is billed) though no answer came.
	Usage Usage

	midStream bool   // a Network error after the response had begun
	hint      string // what to check, when the client knows better than the kind
}

func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	var b strings.Builder
	if e.Status > 0 {
		b.WriteString("LLM server returned ")
		b.WriteString(strconv.Itoa(e.Status))
		if t := http.StatusText(e.Status); t != "" {
			b.WriteByte(' ')
			b.WriteString(t)
		}
	} else {
		b.WriteString(kindSummary(e.Kind))
	}
	if e.Attempts > 1 {
		b.WriteString(" after ")
		b.WriteString(strconv.Itoa(e.Attempts))
		b.WriteString(" attempts")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	h := e.hint
	if h == "" {
		h = kindHint(e.Kind)
	}
	if h != "" && !e.midStream {
		b.WriteString(" (")
		b.WriteString(h)
		b.WriteByte(')')
	}
	return b.String()
}

func kindSummary(k Kind) string {
	switch k {
	case Network:
		return "LLM connection failed"
	case Truncated:
		return "LLM stream ended before the answer was complete"
	case IdleTimeout:
		return "LLM stream stalled"
	case Timeout:
		return "LLM call timed out"
	case Canceled:
		return "LLM call canceled"
	case BadRequest:
		return "LLM request rejected"
	case BadResponse:
		return "LLM server sent an unusable answer"
	default:
		return "LLM server reported an error"
	}
}

func kindHint(k Kind) string {
	switch k {
	case Auth:
		return "check the API key and its permissions"
	case QuotaExceeded:
		return "check the account's plan, billing or credits"
	case ContextLength:
		return "the conversation is longer than the model's context window"
	case NotFound:
		return "check the base URL and the model name"
	case Network:
		return "check that the server is running and the base URL is right"
	}
	return ""
}

// classify fills Kind and Retryable from what the server said. status is 0
// for an error event inside a stream.
func classify(status int, code, typ, msg string) (Kind, bool) {
	lc, lt := strings.ToLower(code), strings.ToLower(typ)
	if status == 0 && len(code) == 3 {
		// Some servers put the HTTP status into the code of an error event.
		if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 600 {
			status = n
		}
	}
	// A rate-limit message talks about tokens too; only its code may say
	// context length.
	if status == http.StatusTooManyRequests {
		msg = ""
	}
	switch {
	case isContextLength(lc, lt, msg):
		return ContextLength, false
	case strings.Contains(lc, "insufficient_quota") || strings.Contains(lt, "insufficient_quota") || status == http.StatusPaymentRequired:
		return QuotaExceeded, false
	}
	switch {
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return Auth, false
	case status == http.StatusNotFound:
		return NotFound, false
	case status == http.StatusMethodNotAllowed || status == http.StatusNotImplemented:
		// Not there, or not supported (a plain web server, llama.cpp's
		// not_supported_error): another attempt will not change it.
		return BadRequest, false
	case status == http.StatusRequestTimeout:
		return Timeout, true
	case status == http.StatusTooManyRequests:
		return RateLimited, true
	case status == http.StatusConflict || status >= 500:
		return Server, true
	case status >= 400:
		return BadRequest, false
	}
	// An error event mid-stream carries no status: judge by type and code.
	switch {
	case strings.Contains(lt, "rate_limit") || strings.Contains(lc, "rate_limit"):
		return RateLimited, true
	case isServerErrorName(lt) || isServerErrorName(lc):
		return Server, true
	case strings.Contains(lt, "invalid_request") || strings.Contains(lc, "invalid_request"):
		return BadRequest, false
	case lt == "" && lc == "" && soundsPassing(msg):
		// Local servers send a bare message when a model is swapped out
		// under a call (LM Studio, Ollama): another attempt loads it.
		return Server, true
	}
	return Server, false
}

// soundsPassing reports whether an error's message says the trouble will
// pass: the model is being loaded or was unloaded, the server is busy.
func soundsPassing(msg string) bool {
	m := strings.ToLower(msg)
	for _, w := range []string{"unloaded", "loading", "overloaded", "busy", "try again", "temporarily", "unavailable"} {
		if strings.Contains(m, w) {
			return true
		}
	}
	return false
}

func isServerErrorName(s string) bool {
	if s == "" {
		return false
	}
	for _, w := range []string{"server_error", "server error", "overloaded", "internal", "unavailable", "timeout", "api_error", "bad_gateway"} {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func isContextLength(code, typ, msg string) bool {
	if strings.Contains(code, "context_length") || strings.Contains(typ, "context_length") ||
		strings.Contains(code, "exceed_context_size") || strings.Contains(typ, "exceed_context_size") {
		return true
	}
	m := strings.ToLower(msg)
	for _, p := range []string{"maximum context length", "context length", "context_length", "too many tokens", "exceeds the available context size", "context window"} {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

// errorFields is the union of the error shapes servers send: OpenAI's
// {"error": {"message", "type", "code"}}, Ollama's {"error": "text"},
// vLLM's top-level {"object": "error", "message", "type", "code"} and
// FastAPI's {"detail": ...}.
type errorFields struct {
	Message string
	Type    string
	Code    string
}

// parseErrorBody reads a server error from a response body or an error
// event. ok is false when the body is not JSON that looks like an error.
func parseErrorBody(body []byte) (errorFields, bool) {
	var top struct {
		Error   json.RawMessage `json:"error"`
		Object  json.RawMessage `json:"object"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
		Type    json.RawMessage `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &top) != nil {
		return errorFields{}, false
	}
	if len(top.Error) > 0 && string(top.Error) != "null" {
		if top.Error[0] == '{' {
			var inner struct {
				Message json.RawMessage `json:"message"`
				Type    json.RawMessage `json:"type"`
				Code    json.RawMessage `json:"code"`
			}
			if json.Unmarshal(top.Error, &inner) == nil {
				return errorFields{Message: jsonText(inner.Message), Type: jsonText(inner.Type), Code: jsonText(inner.Code)}, true
			}
		}
		return errorFields{Message: jsonText(top.Error), Type: jsonText(top.Type), Code: jsonText(top.Code)}, true
	}
	if jsonText(top.Object) == "error" || len(top.Message) > 0 || len(top.Detail) > 0 {
		msg := jsonText(top.Message)
		if msg == "" {
			msg = jsonText(top.Detail)
		}
		return errorFields{Message: msg, Type: jsonText(top.Type), Code: jsonText(top.Code)}, true
	}
	return errorFields{}, false
}

// jsonText renders a JSON value as plain text: strings unquoted, arrays of
// strings joined, anything else as compact JSON.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	if raw[0] == '[' || raw[0] == '{' {
		// FastAPI validation details: [{"loc": [...], "msg": "..."}].
		var items []struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(raw, &items) == nil {
			msgs := make([]string, 0, len(items))
			for _, it := range items {
				if it.Msg != "" {
					msgs = append(msgs, it.Msg)
				}
			}
			if len(msgs) > 0 {
				return strings.Join(msgs, "; ")
			}
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		return buf.String()
	}
	return string(raw)
}

// readableBody turns a non-JSON error body (often an HTML page from a proxy)
// into a short line of text. A body that is not text (compressed, binary)
// is only counted: its bytes would garble the message.
func readableBody(body []byte) string {
	if text := body[:len(body)-incompleteTail(body)]; !utf8.Valid(text) || bytes.IndexByte(text, 0) >= 0 {
		return fmt.Sprintf("%d bytes that are not text", len(body))
	}
	s := string(bytes.TrimSpace(body))
	if looksLikeHTML(s) {
		s = stripTags(dropRepeatedTitle(s))
		return textcut.OneLine(html.UnescapeString(s), 200)
	}
	return textcut.OneLine(s, 300)
}

// dropRepeatedTitle leaves out a page's <title> where its body says the
// same ("502 Bad Gateway" as title and heading), which would read twice.
func dropRepeatedTitle(s string) string {
	lower := strings.ToLower(s)
	i := strings.Index(lower, "<title")
	if i < 0 {
		return s
	}
	open := strings.IndexByte(lower[i:], '>')
	end := strings.Index(lower[i:], "</title>")
	if open < 0 || end < open {
		return s
	}
	title := strings.TrimSpace(stripTags(s[i+open+1 : i+end]))
	rest := s[:i] + s[i+end+len("</title>"):]
	if title == "" || !strings.Contains(stripTags(rest), title) {
		return s
	}
	return rest
}

func looksLikeHTML(s string) bool {
	if len(s) == 0 || s[0] != '<' {
		return false
	}
	head := strings.ToLower(s[:min(len(s), 512)])
	return strings.Contains(head, "<html") || strings.Contains(head, "<!doctype") ||
		strings.Contains(head, "<head") || strings.Contains(head, "<body") ||
		strings.Contains(head, "<title") || strings.Contains(head, "<h1")
}

// stripTags removes tags, and the contents of script and style elements.
func stripTags(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexByte(s, '<')
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i])
		s = s[i:]
		j := strings.IndexByte(s, '>')
		if j < 0 {
			break
		}
		tag := strings.ToLower(s[:j+1])
		s = s[j+1:]
		for _, el := range []string{"script", "style"} {
			if strings.HasPrefix(tag, "<"+el) {
				if k := strings.Index(strings.ToLower(s), "</"+el); k >= 0 {
					s = s[k:]
				}
			}
		}
		b.WriteByte(' ')
	}
	return b.String()
}
