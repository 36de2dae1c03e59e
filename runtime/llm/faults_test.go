package llm

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRetryAfterHonoured(t *testing.T) {
	for _, tc := range []struct {
		name   string
		header func(h http.Header)
		min    time.Duration
		max    time.Duration
	}{
		{"seconds", func(h http.Header) { h.Set("Retry-After", "2") }, 2 * time.Second, 2 * time.Second},
		{"milliseconds", func(h http.Header) { h.Set("retry-after-ms", "1500") }, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"ms wins over seconds", func(h http.Header) {
			h.Set("Retry-After", "9")
			h.Set("Retry-After-Ms", "250")
		}, 250 * time.Millisecond, 250 * time.Millisecond},
		// An HTTP date has one-second resolution; 9s ahead means 8-9s,
		// less the time the response took.
		{"http date", func(h http.Header) {
			h.Set("Retry-After", time.Now().Add(9*time.Second).UTC().Format(http.TimeFormat))
		}, 5 * time.Second, 9 * time.Second},
		{"capped at MaxRetryWait", func(h http.Header) { h.Set("Retry-After", "600") }, 10 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					tc.header(w.Header())
					jsonError(w, http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "Rate limit reached for requests")
					return
				}
				simpleAnswer(w)
			})
			c, rec := newTestClient(fs, func(c *Config) { c.MaxRetryWait = 10 * time.Second })
			resp := mustStream(t, c, userRequest("x"), nil)
			if resp.Attempts != 2 || resp.Content != "Hello, world" {
				t.Errorf("attempts = %d, content = %q", resp.Attempts, resp.Content)
			}
			waits := rec.got()
			if len(waits) != 1 || waits[0] < tc.min || waits[0] > tc.max {
				t.Errorf("waits = %v, want one in [%v, %v]", waits, tc.min, tc.max)
			}
		})
	}
}

// Errors that retrying cannot fix come back after one request.
func TestNotRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		typ    string
		code   string
		msg    string
		kind   Kind
		hint   string // what the error must say to do, if anything in particular
	}{
		{"insufficient quota 429", 429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota, please check your plan and billing details.", QuotaExceeded, ""},
		{"insufficient quota 403", 403, "insufficient_quota", "", "quota exhausted", QuotaExceeded, ""},
		{"context length code", 400, "invalid_request_error", "context_length_exceeded", "This model's maximum context length is 8192 tokens.", ContextLength, ""},
		{"llama.cpp context size", 400, "exceed_context_size_error", "", "the request exceeds the available context size, try increasing it", ContextLength, ""},
		{"context length message only", 500, "", "", "prompt has too many tokens for this model", ContextLength, ""},
		{"bad request", 400, "invalid_request_error", "", "messages: unknown role", BadRequest, ""},
		{"unprocessable", 422, "", "", "invalid tools", BadRequest, ""},
		{"unauthorized", 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided", Auth, ""},
		{"forbidden", 403, "", "", "not allowed", Auth, ""},
		{"model not found", 404, "invalid_request_error", "model_not_found", "The model `gpt-9` does not exist", NotFound, ""},
		// Servers that refuse tools, each in its own words; llama.cpp with a 500.
		{"ollama without tools", 400, "api_error", "", "registry.ollama.ai/library/gemma2:2b does not support tools", BadRequest, "(this model cannot call tools"},
		{"llama.cpp without --jinja", 500, "server_error", "", "tools param requires --jinja flag", Server, "(start llama-server with --jinja"},
		{"vllm without a tool parser", 400, "BadRequestError", "", `"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set`, BadRequest, "(start vLLM with --enable-auto-tool-choice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "1")
				jsonError(w, tc.status, tc.typ, tc.code, tc.msg)
			})
			c, rec := newTestClient(fs)
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			e := asError(t, err)
			if e.Kind != tc.kind || e.Retryable || e.Status != tc.status || e.Attempts != 1 {
				t.Errorf("error = %+v, want kind %v, not retryable, status %d, 1 attempt", e, tc.kind, tc.status)
			}
			if fs.requests.Load() != 1 || len(rec.got()) != 0 {
				t.Errorf("requests = %d, sleeps = %v; want 1 and none", fs.requests.Load(), rec.got())
			}
			if !strings.Contains(e.Error(), tc.msg) {
				t.Errorf("message %q lacks the server's %q", e.Error(), tc.msg)
			}
			if !strings.Contains(e.Error(), tc.hint) {
				t.Errorf("message %q does not say %q", e.Error(), tc.hint)
			}
		})
	}
}

// A server that refuses for want of a key, when none was sent, is told
// apart from a wrong key: the error names the variable to set.
func TestAuthFailureWithoutAKeyNamesTheVariable(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: .")
	})
	hint := "no API key was sent: OPENROUTER_API_KEY is not set in the environment"
	c, _ := newTestClient(fs, func(cfg *Config) { cfg.NoKeyHint = hint })
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	if e := asError(t, err); e.Kind != Auth || !strings.Contains(e.Error(), "("+hint+")") {
		t.Errorf("without a key: %v", err)
	}
	// With a key, the key is what to check.
	c, _ = newTestClient(fs, func(cfg *Config) { cfg.NoKeyHint, cfg.APIKey = hint, "sk-wrong" })
	_, err = c.Stream(context.Background(), userRequest("x"), nil)
	if e := asError(t, err); strings.Contains(e.Error(), hint) || !strings.Contains(e.Error(), "check the API key") {
		t.Errorf("with a wrong key: %v", err)
	}
}

func TestServerErrorThenSuccess(t *testing.T) {
	nginx502 := "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx/1.25.3</center>\r\n</body>\r\n</html>\r\n"
	for _, tc := range []struct {
		name string
		fail func(w http.ResponseWriter)
	}{
		{"503 json", func(w http.ResponseWriter) {
			jsonError(w, 503, "server_error", "", "The server is overloaded")
		}},
		{"502 html", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			_, _ = io.WriteString(w, nginx502)
		}},
		{"408", func(w http.ResponseWriter) { w.WriteHeader(408) }},
		{"409", func(w http.ResponseWriter) { jsonError(w, 409, "", "", "conflict") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					tc.fail(w)
					return
				}
				simpleAnswer(w)
			})
			c, rec := newTestClient(fs)
			req := userRequest("x")
			var told []Retry
			req.OnRetry = func(r Retry) { told = append(told, r) }
			resp := mustStream(t, c, req, nil)
			if resp.Attempts != 2 || resp.Content != "Hello, world" {
				t.Errorf("attempts = %d, content = %q", resp.Attempts, resp.Content)
			}
			// First retry: 500ms base with jitter, 250-500ms.
			w := rec.got()
			if len(w) != 1 || w[0] < 250*time.Millisecond || w[0] > 500*time.Millisecond {
				t.Errorf("waits = %v", w)
			}
			// The caller is told before the wait, with what failed.
			if len(told) != 1 || told[0].Attempt != 1 || told[0].Of != c.cfg.MaxRetries+1 || len(w) != 1 || told[0].Wait != w[0] || !strings.HasPrefix(told[0].Reason, "LLM server returned 4") && !strings.HasPrefix(told[0].Reason, "LLM server returned 5") {
				t.Errorf("OnRetry told %+v (waits %v)", told, w)
			}
		})
	}
}

func TestServerErrorExhausted(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 500, "server_error", "", "boom")
	})
	c, rec := newTestClient(fs)
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Kind != Server || e.Attempts != 4 || fs.requests.Load() != 4 {
		t.Errorf("error = %+v after %d requests", e, fs.requests.Load())
	}
	if got, want := e.Error(), "LLM server returned 500 Internal Server Error after 4 attempts: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	// Exponential backoff with jitter: each wait in [base/2, base].
	waits := rec.got()
	if len(waits) != 3 {
		t.Fatalf("waits = %v", waits)
	}
	for i, w := range waits {
		base := 500 * time.Millisecond << i
		if w < base/2 || w > base {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, w, base/2, base)
		}
	}
}

func TestHTMLErrorBodyIsReadable(t *testing.T) {
	page := "<!DOCTYPE html><html><head><title>Bad Gateway</title><style>body{color:red}</style></head><body><h1>502 Bad Gateway</h1><p>The upstream &amp; proxy failed.</p>" + strings.Repeat("<p>filler text</p>", 100) + "</body></html>"
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		_, _ = io.WriteString(w, page)
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 0 })
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	msg := asError(t, err).Error()
	if strings.ContainsAny(msg, "<>") || strings.Contains(msg, "color:red") || strings.Contains(msg, "\n") {
		t.Errorf("message keeps markup: %q", msg)
	}
	// The title, which the heading repeats, is said once.
	if !strings.HasPrefix(msg, "LLM server returned 502 Bad Gateway: 502 Bad Gateway The upstream & proxy failed.") {
		t.Errorf("message = %q", msg)
	}
	if len(msg) > 300 {
		t.Errorf("message is %d bytes long", len(msg))
	}
}

// A base URL that points at a web server, not a model's API, is answered
// 501 (Python's http.server) or 405: it fails at once, saying to check the
// base URL, where a 501 was retried as a server failure and then said to
// wait for the server.
func TestWebServerAtTheBaseURL(t *testing.T) {
	const page = `<!DOCTYPE HTML>
<html lang="en">
    <head>
        <meta charset="utf-8">
        <title>Error response</title>
    </head>
    <body>
        <h1>Error response</h1>
        <p>Error code: %d</p>
        <p>Message: Unsupported method ('POST').</p>
    </body>
</html>`
	for _, status := range []int{501, 405} {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html;charset=utf-8")
			w.WriteHeader(status)
			fmt.Fprintf(w, page, status)
		})
		c, _ := newTestClient(fs)
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		e := asError(t, err)
		msg := e.Error()
		if e.Retryable || fs.requests.Load() != 1 {
			t.Errorf("%d: retried (%d requests): %q", status, fs.requests.Load(), msg)
		}
		if !strings.Contains(msg, "check the base URL") || !strings.Contains(msg, ": Error response Error code: ") {
			t.Errorf("%d: %q", status, msg)
		}
	}
	// So does a web framework's JSON saying only the status.
	for _, body := range []string{`{"detail":"Method Not Allowed"}`, `{"timestamp":"2026-01-01T00:00:00Z","status":405,"error":"Method Not Allowed","path":"/v1/chat/completions"}`,
		`{"detail":"Method \"POST\" not allowed."}`, `{"message":"The POST method is not supported for route v1/chat/completions. Supported methods: GET, HEAD.","exception":"MethodNotAllowedHttpException"}`} {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(405)
			io.WriteString(w, body)
		})
		c, _ := newTestClient(fs)
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if msg := asError(t, err).Error(); !strings.Contains(msg, "check the base URL") {
			t.Errorf("a framework's 405 %s: %q", body, msg)
		}
	}
	// An API's own error with those statuses says what is wrong itself:
	// llama.cpp answers 501 of what it does not support.
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 501, "501", "not_supported_error", "tools are not supported by this model")
	})
	c, _ := newTestClient(fs)
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if msg := e.Error(); e.Retryable || strings.Contains(msg, "base URL") || !strings.Contains(msg, "tools are not supported by this model") {
		t.Errorf("an API's 501: %q", msg)
	}
}

// A stream that ends before its finish chunk is truncated: the partial
// answer is withdrawn with a Reset delta and the call retried.
func TestTruncatedStreamRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(s sse)
	}{
		{"EOF", func(s sse) {}},
		{"DONE without finish", func(s sse) { s.done() }},
		// Closed in the middle of a chunk's line: cut short like the
		// others, not a chunk of broken JSON (which is not retried).
		{"EOF inside a chunk", func(s sse) { s.raw(`data: {"id":"c1","objec`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					s := startSSE(w)
					s.data(contentChunk("Partial ans"))
					s.data(toolChunk(call(0, "c1", "read_file", `{"pa`)))
					tc.end(s)
					return
				}
				simpleAnswer(w)
			})
			c, _ := newTestClient(fs)
			var log deltaLog
			resp := mustStream(t, c, userRequest("x"), log.add)
			if resp.Content != "Hello, world" || len(resp.ToolCalls) != 0 || resp.Attempts != 2 {
				t.Errorf("resp = %+v", resp)
			}
			if got, want := log.String(), "Partial ans[tool:read_file]|RESET|Hello, world"; got != want {
				t.Errorf("deltas = %q, want %q", got, want)
			}
		})
	}
}

// A whole JSON answer (a server that does not stream) cut short is retried
// as a stream cut short is, not taken for a body that is no answer.
func TestCutJSONAnswerRetried(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hel`)
			return
		}
		simpleAnswer(w)
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	if resp.Content != "Hello, world" || resp.Attempts != 2 {
		t.Errorf("resp = %+v", resp)
	}
}

// A stream closed in the middle of a chunk's line, every attempt, says so.
func TestPartChunkExhausted(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("never finished"))
		s.raw(`data: {"id":"c1","choices":[{"delta":{"content":"more`)
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 1 })
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Kind != Truncated || !e.Retryable || e.Attempts != 2 {
		t.Errorf("error = %+v", e)
	}
	if want := "ended before the answer was complete after 2 attempts: the connection closed in the middle of the answer's JSON"; !strings.Contains(e.Error(), want) {
		t.Errorf("Error() = %q, want it to contain %q", e.Error(), want)
	}
}

func TestTruncatedExhausted(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("never finished"))
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 1 })
	var log deltaLog
	_, err := c.Stream(context.Background(), userRequest("x"), log.add)
	e := asError(t, err)
	if e.Kind != Truncated || e.Attempts != 2 {
		t.Errorf("error = %+v", e)
	}
	if !strings.Contains(e.Error(), "ended before the answer was complete after 2 attempts") {
		t.Errorf("Error() = %q", e.Error())
	}
	if got := log.String(); got != "never finished|RESET|never finished" {
		t.Errorf("deltas = %q", got)
	}
	if strings.Contains(e.Error(), "[DONE]") {
		t.Errorf("a stream cut off blames the server's [DONE]: %q", e.Error())
	}
}

// A server that ends every answer with [DONE] but never says why it
// finished is named for what it does, so that a person can tell it from a
// connection that breaks.
func TestDoneWithoutFinishReasonSaysSo(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("a whole answer"))
		s.done()
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 1 })
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Kind != Truncated || !strings.Contains(e.Error(), "the server sent [DONE] without a finish_reason in any chunk") {
		t.Errorf("error = %q", e.Error())
	}
}

// No Reset when the failed attempt showed nothing.
func TestNoResetWithoutDeltas(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			jsonError(w, 503, "", "", "busy")
			return
		}
		simpleAnswer(w)
	})
	c, _ := newTestClient(fs)
	var log deltaLog
	mustStream(t, c, userRequest("x"), log.add)
	if got := log.String(); got != "Hello, world" {
		t.Errorf("deltas = %q", got)
	}
}

// blockUntilGone keeps a stream open, silent, until the client leaves.
func blockUntilGone(r *http.Request) {
	<-r.Context().Done()
}

func TestIdleTimeout(t *testing.T) {
	t.Run("retried then success", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				s := startSSE(w)
				s.data(contentChunk("thinking"))
				s.raw(": keep-alive\n\n") // comments are not progress
				blockUntilGone(r)
				return
			}
			simpleAnswer(w)
		})
		c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
		var log deltaLog
		resp := mustStream(t, c, userRequest("x"), log.add)
		// On a loaded machine a later attempt could stall too; what matters
		// is that the stalled one was withdrawn and retried.
		got := log.String()
		if resp.Attempts < 2 || resp.Content != "Hello, world" ||
			!strings.HasPrefix(got, "thinking|RESET|") || !strings.HasSuffix(got, "Hello, world") {
			t.Errorf("attempts = %d, deltas = %q", resp.Attempts, got)
		}
	})
	// A server that sends its headers at once and then works on the prompt
	// (vLLM) is not stalled before its first chunk: that wait is the call
	// timeout's.
	t.Run("headers, then the prompt's time", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			w.(http.Flusher).Flush()
			time.Sleep(400 * time.Millisecond)
			s.data(contentChunk("Hello, "))
			s.data(contentChunk("world"))
			s.data(finishChunk("stop"))
			s.done()
		})
		c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Attempts != 1 || resp.Content != "Hello, world" || fs.requests.Load() != 1 {
			t.Errorf("attempts = %d, requests = %d, content %q", resp.Attempts, fs.requests.Load(), resp.Content)
		}
	})
	// An answer whose finish came, from a server that then keeps the
	// stream open without [DONE], is whole: taken, not retried.
	t.Run("finished, then silent", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(contentChunk("Hello, world"))
			s.data(finishChunk("stop"))
			blockUntilGone(r)
		})
		c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Attempts != 1 || resp.Content != "Hello, world" || fs.requests.Load() != 1 {
			t.Errorf("attempts = %d, requests = %d, content %q", resp.Attempts, fs.requests.Load(), resp.Content)
		}
	})
	// A stall in the middle of a chunk's line is a stall too: the part
	// read before it is no chunk of broken JSON.
	t.Run("inside a chunk, retried", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				s := startSSE(w)
				s.data(contentChunk("thinking"))
				s.raw(`data: {"id":"c1","objec`)
				blockUntilGone(r)
				return
			}
			simpleAnswer(w)
		})
		c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = 100 * time.Millisecond })
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Attempts < 2 || resp.Content != "Hello, world" {
			t.Errorf("attempts = %d, content %q", resp.Attempts, resp.Content)
		}
	})
	t.Run("exhausted", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(contentChunk("x"))
			blockUntilGone(r)
		})
		c, _ := newTestClient(fs, func(c *Config) {
			c.IdleTimeout = 50 * time.Millisecond
			c.MaxRetries = 1
		})
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		e := asError(t, err)
		if e.Kind != IdleTimeout || !e.Retryable || e.Attempts != 2 || fs.requests.Load() != 2 {
			t.Errorf("error = %+v, requests = %d", e, fs.requests.Load())
		}
		if !strings.Contains(e.Error(), "stalled after 2 attempts: no data for 50ms") {
			t.Errorf("Error() = %q", e.Error())
		}
	})
}

func TestCallTimeout(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		blockUntilGone(r) // never even sends headers
	})
	c, _ := newTestClient(fs, func(c *Config) {
		c.CallTimeout = 50 * time.Millisecond
		c.MaxRetries = 1
	})
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Kind != Timeout || e.Attempts != 2 {
		t.Errorf("error = %+v", e)
	}
}

// hijack takes the raw connection of a request.
func hijack(t *testing.T, w http.ResponseWriter) (net.Conn, *bufio.ReadWriter) {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return nil, nil
	}
	return conn, rw
}

// reset closes conn with a TCP RST rather than a FIN.
func reset(conn net.Conn) {
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	conn.Close()
}

func TestConnectionResetMidStream(t *testing.T) {
	// partial sends half an answer and resets the connection once the
	// client has shown it (or after a while, when nobody watches).
	partial := func(t *testing.T, w http.ResponseWriter, shown <-chan struct{}) {
		conn, rw := hijack(t, w)
		if conn == nil {
			return
		}
		_, _ = rw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
		line := `data: {"choices":[{"index":0,"delta":{"content":"half an "},"finish_reason":null}]}` + "\n\n"
		_, _ = rw.WriteString(strings.ToLower(strconvHex(len(line))) + "\r\n" + line + "\r\n")
		_ = rw.Flush()
		select {
		case <-shown:
		case <-time.After(50 * time.Millisecond):
		}
		reset(conn)
	}
	t.Run("retried", func(t *testing.T) {
		shown := make(chan struct{})
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			if n == 1 {
				partial(t, w, shown)
				return
			}
			simpleAnswer(w)
		})
		c, _ := newTestClient(fs)
		var log deltaLog
		var once sync.Once
		resp := mustStream(t, c, userRequest("x"), func(d Delta) {
			log.add(d)
			if d.Content == "half an " {
				once.Do(func() { close(shown) })
			}
		})
		if resp.Content != "Hello, world" || resp.Attempts != 2 {
			t.Errorf("resp = %+v", resp)
		}
		if got := log.String(); got != "half an |RESET|Hello, world" {
			t.Errorf("deltas = %q", got)
		}
	})
	t.Run("network error", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { partial(t, w, nil) })
		c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 0 })
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if e := asError(t, err); e.Kind != Network || !e.Retryable {
			t.Errorf("error = %+v", e)
		}
	})
}

func strconvHex(n int) string {
	const digits = "0123456789abcdef"
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 16 {
		b = append([]byte{digits[n%16]}, b...)
	}
	return string(b)
}

// The server closes the connection before sending any response.
func TestEOFBeforeHeaders(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			if conn, _ := hijack(t, w); conn != nil {
				reset(conn)
			}
			return
		}
		simpleAnswer(w)
	})
	c, _ := newTestClient(fs)
	resp := mustStream(t, c, userRequest("x"), nil)
	if resp.Attempts != 2 {
		t.Errorf("attempts = %d", resp.Attempts)
	}
}

func TestConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	rec := &sleepRecorder{}
	c := New(Config{BaseURL: "http://" + addr + "/v1", MaxRetries: 2, Sleep: rec.sleep})
	_, err = c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Kind != Network || e.Attempts != 3 || len(rec.got()) != 2 {
		t.Errorf("error = %+v, sleeps = %v", e, rec.got())
	}
	if !strings.Contains(e.Error(), "LLM connection failed after 3 attempts") || !strings.Contains(e.Error(), addr) {
		t.Errorf("Error() = %q", e.Error())
	}
}

func TestErrorEventMidStream(t *testing.T) {
	for _, tc := range []struct {
		name      string
		event     string
		kind      Kind
		retryable bool
		msg       string
	}{
		{"server error", `data: {"error": {"message": "model crashed", "type": "server_error"}}`, Server, true, "model crashed"},
		{"rate limit", `data: {"error":{"message":"slow down","type":"rate_limit_error","code":"rate_limit_exceeded"}}`, RateLimited, true, "slow down"},
		{"numeric code", `data: {"error":{"message":"upstream overloaded","code":503}}`, Server, true, "upstream overloaded"},
		{"invalid request", `data: {"error": {"message": "tool schema invalid", "type": "invalid_request_error"}}`, BadRequest, false, "tool schema invalid"},
		{"plain string", `data: {"error": "an error was encountered while running the model"}`, Server, false, "an error was encountered while running the model"},
		{"vLLM top level", `data: {"object": "error", "message": "out of KV cache", "type": "InternalServerError", "code": 500}`, Server, true, "out of KV cache"},
		{"after keep-alives", ": keep-alive\n\n: keep-alive\n\nevent: error\n" + `data: {"error": {"message": "overloaded", "type": "overloaded_error"}}`, Server, true, "overloaded"},
		{"context length", `data: {"error": {"message": "prompt exceeds the available context size", "type": "exceed_context_size_error"}}`, ContextLength, false, "available context size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 1 {
					s := startSSE(w)
					s.data(contentChunk("so far "))
					s.raw(tc.event + "\n\n")
					return
				}
				simpleAnswer(w)
			})
			c, _ := newTestClient(fs)
			var log deltaLog
			resp, err := c.Stream(context.Background(), userRequest("x"), log.add)
			if tc.retryable {
				if err != nil {
					t.Fatalf("Stream: %v", err)
				}
				if resp.Attempts != 2 || log.String() != "so far |RESET|Hello, world" {
					t.Errorf("attempts = %d, deltas = %q", resp.Attempts, log.String())
				}
				return
			}
			e := asError(t, err)
			if e.Kind != tc.kind || e.Retryable || e.Attempts != 1 || fs.requests.Load() != 1 {
				t.Errorf("error = %+v after %d requests", e, fs.requests.Load())
			}
			if !strings.Contains(e.Error(), tc.msg) {
				t.Errorf("Error() = %q, want it to contain %q", e.Error(), tc.msg)
			}
		})
	}
	// The retryable ones surface too, with the server's words, when retries
	// run out.
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.raw(`data: {"error": {"message": "model crashed", "type": "server_error"}}` + "\n\n")
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 0 })
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	if e := asError(t, err); e.Kind != Server || e.Error() != "LLM server reported an error: model crashed" {
		t.Errorf("error = %+v %q", e, e.Error())
	}
}

// A JSON error body sent with status 200 and no SSE framing.
func TestErrorBodyWithStatus200(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"error": {"message": "Invalid model name", "type": "invalid_request_error", "code": 400}}`)
	})
	c, _ := newTestClient(fs)
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	if e.Retryable || !strings.Contains(e.Error(), "Invalid model name") || fs.requests.Load() != 1 {
		t.Errorf("error = %+v %q", e, e.Error())
	}
}

func TestCancelAbortsInFlightCall(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("working"))
		blockUntilGone(r)
	})
	c, _ := newTestClient(fs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		resp *Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.Stream(ctx, userRequest("x"), func(d Delta) {
			if d.Content != "" {
				cancel()
			}
		})
		done <- result{resp, err}
	}()
	select {
	case r := <-done:
		e := asError(t, r.err)
		if e.Kind != Canceled || !errors.Is(r.err, context.Canceled) || e.Attempts != 1 {
			t.Errorf("error = %+v", e)
		}
		if fs.requests.Load() != 1 {
			t.Errorf("requests = %d", fs.requests.Load())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream did not return after its context was cancelled")
	}
}

// Cancelling during the wait between attempts stops at once, with the real
// sleeper.
func TestCancelDuringBackoff(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "3600")
		jsonError(w, 429, "", "rate_limit_exceeded", "slow down")
	})
	c := New(Config{BaseURL: fs.URL + "/v1", MaxRetries: 5})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	done := make(chan error, 1)
	go func() {
		_, err := c.Stream(ctx, userRequest("x"), nil)
		done <- err
	}()
	select {
	case err := <-done:
		if e := asError(t, err); e.Kind != Canceled || !errors.Is(err, context.Canceled) {
			t.Errorf("error = %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Stream kept waiting after its context was cancelled")
	}
}

func TestCanceledBeforeStart(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Stream(ctx, userRequest("x"), nil)
	if e := asError(t, err); e.Kind != Canceled || fs.requests.Load() != 0 {
		t.Errorf("error = %+v, requests = %d", e, fs.requests.Load())
	}
}

// A server that refuses stream_options gets the call again without it, and
// never sees it again from this client.
func TestStreamOptionsFallback(t *testing.T) {
	var (
		mu         sync.Mutex
		sawOptions []bool
	)
	refusing := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		_, has := requestBody(r)["stream_options"]
		mu.Lock()
		sawOptions = append(sawOptions, has)
		mu.Unlock()
		if has {
			jsonError(w, 400, "invalid_request_error", "", "Unrecognized request argument supplied: stream_options")
			return
		}
		s := startSSE(w)
		s.data(contentChunk("ok"))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, rec := newTestClient(refusing, func(c *Config) { c.MaxRetries = 0 })
	for i := range 2 {
		resp := mustStream(t, c, userRequest("x"), nil)
		if resp.Content != "ok" || !resp.UsageEstimated {
			t.Errorf("call %d: resp = %+v", i, resp)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(sawOptions) != 3 || !sawOptions[0] || sawOptions[1] || sawOptions[2] {
		t.Errorf("stream_options sent per request = %v, want [true false false]", sawOptions)
	}
	if len(rec.got()) != 0 {
		t.Errorf("the fallback waited: %v", rec.got())
	}
}

// cancelingTransport gives a whole, valid answer, but cancels the caller's
// context first: the answer arrives after the caller gave up, as when
// net/http has read the stream before it noticed the cancellation.
type cancelingTransport struct{ cancel context.CancelCauseFunc }

func (tr cancelingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	tr.cancel(errors.New("cancelled by orchestrator (s-1)"))
	body := "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"too late\"}}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n"
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Request: r, Body: io.NopCloser(strings.NewReader(body))}, nil
}

// A call cancelled while its answer was on the way returns the
// cancellation, never the answer.
func TestCanceledWhileAnswerArrives(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	c := New(Config{BaseURL: "http://llm.invalid/v1", HTTPClient: &http.Client{Transport: cancelingTransport{cancel}}})
	resp, err := c.Stream(ctx, Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}, nil)
	if resp != nil {
		t.Fatalf("a cancelled call returned %+v", resp)
	}
	if e := asError(t, err); e.Kind != Canceled || !strings.Contains(e.Error(), "cancelled by orchestrator") {
		t.Fatalf("error %v, want the cancellation with its cause", err)
	}
}

// endless sends piece after piece until the client leaves, and reports
// whether it did leave before limit bytes went out.
func endless(w http.ResponseWriter, r *http.Request, head, piece string, limit int, left *atomic.Bool) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	s := sse{w}
	s.raw(head)
	for sent := len(head); sent < limit; sent += len(piece) {
		if _, err := w.Write([]byte(piece)); err != nil || r.Context().Err() != nil {
			left.Store(true)
			return
		}
	}
	w.(http.Flusher).Flush()
}

// A server that sends without end, on one line or as a stream of deltas,
// is stopped at a bound, not followed until the memory runs out, and the
// error says what it did. Retrying would only do it again.
func TestEndlessAnswerStoppedAtABound(t *testing.T) {
	for _, tc := range []struct {
		name, head, piece, want string
	}{
		{"a line without end", `data: {"choices":[{"index":0,"delta":{"content":"`, strings.Repeat("a", 64<<10),
			"LLM server sent an unusable answer: a line of more than 32 MiB with no line break"},
		{"an event without end", `data: {"choices":[` + "\n", "data: " + strings.Repeat("a", 64<<10) + "\n",
			"LLM server sent an unusable answer: an event of more than 32 MiB in data lines with no blank line"},
		{"deltas without end", "", "data: " + `{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 64<<10) + `"}}]}` + "\n\n",
			"LLM server sent an unusable answer: the answer grew past 1 MiB without ending"},
		{"arguments without end", "", "data: " + `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"arguments":"` + strings.Repeat("a", 64<<10) + `"}}]}}]}` + "\n\n",
			"LLM server sent an unusable answer: the answer grew past 1 MiB without ending"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var left atomic.Bool
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				endless(w, r, tc.head, tc.piece, 256<<20, &left)
			})
			c, _ := newTestClient(fs)
			c.maxAnswer = 1 << 20 // 32 MiB takes seconds under -race
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			e := asError(t, err)
			if e.Kind != BadResponse || e.Retryable || fs.requests.Load() != 1 || e.Error() != tc.want {
				t.Errorf("error = %+v, requests = %d\n got %q\nwant %q", e, fs.requests.Load(), e.Error(), tc.want)
			}
			fs.CloseClientConnections()
			fs.Close()
			if !left.Load() {
				t.Error("the client read all 256 MiB")
			}
		})
	}
}

// A success status whose body is no chat completion stream (a Wi-Fi login
// page, a web app at the wrong base URL, another API's reply) is reported
// with what came, and not retried: every attempt would get the same. A
// body that never ends is not read to its end.
func TestSuccessThatIsNoStream(t *testing.T) {
	const hint = "(check that the base URL is the server's OpenAI-compatible API, like http://localhost:11434/v1)"
	for _, tc := range []struct {
		name        string
		contentType string
		body        string
		want        string
	}{
		{"login page", "text/html; charset=utf-8",
			"<!DOCTYPE html>\n<html><head><title>Guest Wi-Fi</title><style>p{x:1}</style></head>\n<body><h1>Sign in to continue</h1></body></html>\n",
			"the server answered 200 OK with text/html, not an event stream: Guest Wi-Fi Sign in to continue"},
		{"plain text", "text/plain", "Welcome to nginx!",
			"the server answered 200 OK with text/plain, not an event stream: Welcome to nginx!"},
		{"another API's lines", "application/x-ndjson", `{"model":"m","message":{"content":"hi"},"done":false}` + "\n",
			`the server answered 200 OK with application/x-ndjson, not an event stream: {"model":"m","message":{"content":"hi"},"done":false}`},
		{"JSON that is no completion", "application/json", `{"status": "ok"}`,
			`the server answered 200 OK with JSON that holds no chat completion: {"status":"ok"}`},
		{"a page without end", "text/html", "",
			"the server answered 200 OK with text/html, not an event stream: lorem ipsum lorem ipsum"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var left atomic.Bool
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				if tc.body == "" {
					endless(w, r, "<html><body>\n", strings.Repeat("<p>lorem ipsum</p>\n", 4<<10), 256<<20, &left)
					return
				}
				_, _ = io.WriteString(w, tc.body)
			})
			c, _ := newTestClient(fs)
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			e := asError(t, err)
			msg := e.Error()
			if e.Kind != BadResponse || e.Retryable || fs.requests.Load() != 1 ||
				!strings.HasPrefix(msg, "LLM server sent an unusable answer: "+tc.want) || !strings.HasSuffix(msg, hint) {
				t.Errorf("error = %+v, requests = %d\n%s", e, fs.requests.Load(), msg)
			}
			if tc.body == "" {
				fs.CloseClientConnections()
				fs.Close()
				if !left.Load() {
					t.Error("the client read all 256 MiB")
				}
			}
		})
	}
	// Nothing at all may be a connection cut short: it is retried, and
	// said.
	t.Run("empty", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.raw(": keep-alive\n\n")
		})
		c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 1 })
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		e := asError(t, err)
		if e.Kind != Truncated || !e.Retryable || fs.requests.Load() != 2 ||
			e.Error() != "LLM stream ended before the answer was complete after 2 attempts: the server answered 200 OK and sent no data" {
			t.Errorf("error = %+v\n%s", e, e.Error())
		}
	})
}

// A redirect that would turn the POST into a GET (301, 302, 303) is not
// followed: the GET would lose the request and get a 404, a 405 or a page
// that says nothing of the move. The error says where the API went.
func TestRedirectThatDropsTheBodyIsReported(t *testing.T) {
	for _, status := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "http://"+r.Host+"/moved/v1/chat/completions")
				w.WriteHeader(status)
			})
			c, _ := newTestClient(fs)
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			e := asError(t, err)
			want := fmt.Sprintf("LLM server returned %d %s: redirected to %s/moved/v1/chat/completions (the API has moved: set the base URL to %s/moved/v1)",
				status, http.StatusText(status), fs.URL, fs.URL)
			if e.Retryable || e.Status != status || e.Error() != want || fs.requests.Load() != 1 {
				t.Errorf("error = %+v, requests = %d\n got %s\nwant %s", e, fs.requests.Load(), e.Error(), want)
			}
		})
	}
}

// A server or proxy that compresses its answer unasked: gzip is read,
// streamed as it comes, success or error; what cannot be read is said.
func TestCompressedAnswers(t *testing.T) {
	gzipped := func(w http.ResponseWriter, status int, contentType string, body string) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Content-Encoding", "gzip")
		w.WriteHeader(status)
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, body)
		_ = zw.Close()
	}
	event := func(v any) string {
		b, _ := json.Marshal(v)
		return "data: " + string(b) + "\n\n"
	}
	t.Run("stream", func(t *testing.T) {
		shown := make(chan struct{})
		var waited atomic.Bool
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Encoding", "gzip")
			zw := gzip.NewWriter(w)
			send := func(text string) {
				_, _ = io.WriteString(zw, text)
				_ = zw.Flush()
				w.(http.Flusher).Flush()
			}
			send(event(contentChunk("Hello, ")))
			select {
			case <-shown:
			case <-time.After(5 * time.Second):
				waited.Store(true)
			}
			send(event(contentChunk("world")) + event(finishChunk("stop")) + "data: [DONE]\n\n")
			_ = zw.Close()
		})
		c, _ := newTestClient(fs)
		var once sync.Once
		resp := mustStream(t, c, userRequest("x"), func(d Delta) {
			if d.Content == "Hello, " {
				once.Do(func() { close(shown) })
			}
		})
		if resp.Content != "Hello, world" || resp.Attempts != 1 || waited.Load() {
			t.Errorf("resp = %+v; the first delta waited for the rest: %v", resp, waited.Load())
		}
	})
	t.Run("whole answer", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			gzipped(w, 200, "application/json", `{"choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`)
		})
		c, _ := newTestClient(fs)
		if resp := mustStream(t, c, userRequest("x"), nil); resp.Content != "whole" {
			t.Errorf("resp = %+v", resp)
		}
	})
	t.Run("error", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			gzipped(w, 400, "application/json", `{"error":{"message":"messages: unknown role","type":"invalid_request_error"}}`)
		})
		c, _ := newTestClient(fs)
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if e := asError(t, err); e.Error() != "LLM server returned 400 Bad Request: messages: unknown role" {
			t.Errorf("error = %q", e.Error())
		}
	})
	for _, tc := range []struct{ name, encoding, body, want string }{
		{"not gzip after all", "gzip", "data: [DONE]\n\n", "LLM server sent an unusable answer: the server's gzip-encoded answer is corrupt: gzip: invalid header"},
		{"another encoding", "br", "\x1b\x00\xf8\xa5", `LLM server sent an unusable answer: the server sent its answer compressed as "br", which swarmdeck neither asked for nor reads`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Content-Encoding", tc.encoding)
				_, _ = io.WriteString(w, tc.body)
			})
			c, _ := newTestClient(fs)
			_, err := c.Stream(context.Background(), userRequest("x"), nil)
			if e := asError(t, err); e.Retryable || e.Error() != tc.want || fs.requests.Load() != 1 {
				t.Errorf("error = %+v, requests = %d\n got %s\nwant %s", e, fs.requests.Load(), e.Error(), tc.want)
			}
		})
	} // An error body it cannot read is not shown as garbage.
	t.Run("an error in another encoding", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "br")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "\x1b\x00\xf8\xa5")
		})
		c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 0 })
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if e := asError(t, err); e.Error() != "LLM server returned 502 Bad Gateway: 4 bytes that are not text" {
			t.Errorf("error = %q", e.Error())
		}
	})
}

// An answer the server's content filter stopped is no answer: it fails,
// saying so, and is not asked again.
func TestContentFilterStopsTheCall(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("Here is how to"))
		s.data(finishChunk("content_filter"))
		s.done()
	})
	c, _ := newTestClient(fs)
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	e := asError(t, err)
	const want = `LLM server sent an unusable answer: the server's content filter stopped the answer (finish_reason "content_filter")`
	if e.Kind != BadResponse || e.Retryable || fs.requests.Load() != 1 || e.Error() != want {
		t.Errorf("error = %+v, requests = %d\n got %s\nwant %s", e, fs.requests.Load(), e.Error(), want)
	}
}

// A finish_reason that says the server failed to complete the answer fails
// the attempt with that reason, which reaches the user, and the call is
// asked again: what came is cut where the failure struck. It was taken as a
// complete answer. The other reasons servers send beside OpenAI's end an
// answer as "stop" does, and are kept as they came.
func TestFinishReasons(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{"error", `LLM server reported an error after 4 attempts: the server stopped the answer with an error (finish_reason "error")`},
		{"ERROR", `LLM server reported an error after 4 attempts: the server stopped the answer with an error (finish_reason "error")`},
		{"abort", `LLM server reported an error after 4 attempts: the server aborted the answer (finish_reason "abort")`},
		{"insufficient_system_resource", `LLM server reported an error after 4 attempts: the server ran out of resources for the answer (finish_reason "insufficient_system_resource")`},
		{"stop", ""},
		{"eos", ""},
		{"eos_token", ""},
		{"stop_sequence", ""},
		{"load", ""},
		{"repetition", ""},
		{"end_turn", ""},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				s := startSSE(w)
				s.data(contentChunk("Here is how to"))
				s.data(finishChunk(tc.reason))
				s.done()
			})
			c, _ := newTestClient(fs)
			resp, err := c.Stream(t.Context(), userRequest("x"), nil)
			if tc.want == "" {
				if err != nil || resp.Content != "Here is how to" || resp.FinishReason != tc.reason || resp.Attempts != 1 {
					t.Fatalf("resp = %+v, err = %v", resp, err)
				}
				return
			}
			e := asError(t, err)
			if e.Kind != Server || !e.Retryable || fs.requests.Load() != 4 || e.Error() != tc.want {
				t.Errorf("error = %+v, requests = %d\n got %s\nwant %s", e, fs.requests.Load(), e.Error(), tc.want)
			}
		})
	}
}

// A router whose model's server fails mid-answer ends the stream with
// finish_reason "error", often in a chunk whose error object says why: the
// error object's words are the reason. Another attempt that succeeds
// replaces what the failed one showed.
func TestErrorFinishRetried(t *testing.T) {
	for _, tc := range []struct{ name, chunk, reason string }{
		{"without an error object", `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
			`the server stopped the answer with an error (finish_reason "error")`},
		{"with an error object", `{"error":{"code":502,"message":"Provider disconnected unexpectedly"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}`,
			"Provider disconnected unexpectedly"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n > 1 {
					simpleAnswer(w)
					return
				}
				s := startSSE(w)
				s.data(contentChunk("so far "))
				s.data(tc.chunk)
				s.done()
			})
			var reasons []string
			req := userRequest("x")
			req.OnRetry = func(r Retry) { reasons = append(reasons, r.Reason) }
			c, _ := newTestClient(fs)
			var log deltaLog
			resp := mustStream(t, c, req, log.add)
			if resp.Content != "Hello, world" || resp.Attempts != 2 || log.String() != "so far |RESET|Hello, world" {
				t.Errorf("content %q, attempts %d, deltas %q", resp.Content, resp.Attempts, log.String())
			}
			if len(reasons) != 1 || !strings.HasSuffix(reasons[0], ": "+tc.reason) {
				t.Errorf("retried for %q, want the reason %q", reasons, tc.reason)
			}
		})
	}
}

// Limits set while the client is in use (a reload of the configuration)
// apply from the next call.
func TestSetLimitsAppliesToTheNextCall(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 503, "", "", "busy")
	})
	c, _ := newTestClient(fs, func(c *Config) { c.MaxRetries = 5 })
	c.SetLimits(Limits{MaxRetries: 1})
	_, err := c.Stream(context.Background(), userRequest("x"), nil)
	if e := asError(t, err); e.Attempts != 2 || fs.requests.Load() != 2 {
		t.Errorf("attempts %d, requests %d, want 2 after max_retries 1", e.Attempts, fs.requests.Load())
	}
	// A call timeout set the same way bounds the next call.
	slow := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { blockUntilGone(r) })
	c2, _ := newTestClient(slow)
	c2.SetLimits(Limits{CallTimeout: 50 * time.Millisecond})
	_, err = c2.Stream(context.Background(), userRequest("x"), nil)
	if e := asError(t, err); e.Kind != Timeout || !strings.Contains(e.Error(), "longer than 50ms") {
		t.Errorf("error = %v", e)
	}
}

// A query in the base URL (Azure's ?api-version=) goes after the
// endpoint's path on each request, and stays out of error messages, where
// it may carry a key.
func TestBaseURLWithAQuery(t *testing.T) {
	var query atomic.Value
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		query.Store(r.URL.RawQuery)
		simpleAnswer(w)
	})
	c, _ := newTestClient(fs, func(c *Config) { c.BaseURL += "?api-version=2024-06-01" })
	mustStream(t, c, userRequest("x"), nil) // the fake server answers /v1/chat/completions only
	if got := query.Load(); got != "api-version=2024-06-01" {
		t.Errorf("the request's query = %q, want the base URL's", got)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c = New(Config{BaseURL: "http://" + addr + "/v1?key=sk-in-the-query", MaxRetries: 0})
	_, err = c.Stream(context.Background(), userRequest("x"), nil)
	if msg := asError(t, err).Error(); strings.Contains(msg, "sk-in-the-query") || !strings.Contains(msg, "/v1/chat/completions?[redacted]") {
		t.Errorf("error = %q: want the URL with its query redacted", msg)
	}
}

// Tokens the server reports for an attempt that fails count: they are
// added to the answer of a retry, and carried by the error of a call that
// fails, so that usage and the token budget see what the server billed.
func TestUsageOfFailedAttemptsCounts(t *testing.T) {
	usage := func(s sse, p, c int) {
		s.data(obj{"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "test-model", "choices": []obj{}, "usage": usageOf(p, c)})
	}
	t.Run("retried", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			if n == 1 {
				s.data(contentChunk("Partial text that was generated"))
				s.data(finishChunk("error"))
				usage(s, 5000, 800)
				s.done()
				return
			}
			s.data(contentChunk("done"))
			s.data(finishChunk("stop"))
			usage(s, 100, 20)
			s.done()
		})
		c, _ := newTestClient(fs)
		resp, err := c.Stream(context.Background(), userRequest("x"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := (Usage{5100, 820, 5920}); resp.Usage != want || resp.Attempts != 2 {
			t.Errorf("usage %+v after %d attempts, want %+v after 2", resp.Usage, resp.Attempts, want)
		}
	})
	t.Run("failed", func(t *testing.T) {
		fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			s := startSSE(w)
			s.data(contentChunk("Here is how to"))
			s.data(finishChunk("content_filter"))
			usage(s, 100, 20)
			s.done()
		})
		c, _ := newTestClient(fs)
		_, err := c.Stream(context.Background(), userRequest("x"), nil)
		if e := asError(t, err); e.Usage != (Usage{100, 20, 120}) {
			t.Errorf("the error carries usage %+v, want 100/20", e.Usage)
		}
	})
}

// Where the server was chosen for the user (provider auto, for a key in
// the environment), a failure to reach it or to be let in says so, and
// how to choose another.
func TestChosenHintWithConnectionAndAuthFailures(t *testing.T) {
	const chosen = "provider auto chose openai because OPENAI_API_KEY is set"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	c := New(Config{BaseURL: closed, APIKey: "sk-test", MaxRetries: 0, ChosenHint: chosen, Sleep: func(context.Context, time.Duration) error { return nil }})
	_, err = c.Stream(context.Background(), userRequest("x"), nil)
	if msg := asError(t, err).Error(); !strings.Contains(msg, "(check that the server is running and the base URL is right; "+chosen+")") {
		t.Errorf("connection refused: %q", msg)
	}
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 401, "invalid_api_key", "invalid_request_error", "Incorrect API key provided")
	})
	c, _ = newTestClient(fs, func(c *Config) { c.APIKey, c.ChosenHint = "sk-test", chosen })
	_, err = c.Stream(context.Background(), userRequest("x"), nil)
	if msg := asError(t, err).Error(); !strings.Contains(msg, "(check the API key and its permissions; "+chosen+")") {
		t.Errorf("401: %q", msg)
	}
}
