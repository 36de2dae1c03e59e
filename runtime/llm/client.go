package llm

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/internal/secret"
	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Config configures a Client.
type Config struct {
	BaseURL      string            // e.g. http://localhost:11434/v1; default OpenAI's
	APIKey       string            // may be empty (Ollama, llama.cpp)
	Headers      map[string]string // extra request headers
	CallTimeout  time.Duration     // bound of one attempt (0 = none)
	IdleTimeout  time.Duration     // max silence between stream chunks within an attempt (0 = none)
	MaxRetries   int               // retries after the first attempt
	MaxRetryWait time.Duration     // cap on any single wait, Retry-After included (default 2m)
	NoKeyHint    string            // said of an authentication failure when no key was sent, e.g. "set X"
	// ChosenHint, when set, is said with a failure to connect or to
	// authenticate: why this server was chosen and how to choose another
	// (provider auto took it for a key in the environment).
	ChosenHint string
	ModelHint  string       // said after the models a server lists when it lacks the one asked for, e.g. "pick one with X"
	HTTPClient *http.Client // optional; default: keep-alive transport with a large idle pool
	Logger     *slog.Logger // optional

	// Sleep waits between attempts; tests inject it. The default is a timer
	// that returns early with ctx's error when ctx ends.
	Sleep func(ctx context.Context, d time.Duration) error
}

const (
	defaultMaxRetryWait = 2 * time.Minute
	baseBackoff         = 500 * time.Millisecond
	maxBackoff          = 30 * time.Second
	// drainWait bounds reading the tail of a finished stream.
	drainWait = time.Second
)

// Client makes chat completion calls. It is safe for concurrent use.
type Client struct {
	cfg   Config // its BaseURL without the query
	query string // the base URL's query, which every request carries
	// secrets are what an error message from the server must not repeat:
	// the key, and what may be one in the headers and the URL. Longest
	// first.
	secrets []string
	oa      *openai.Client
	hc      *http.Client
	log     *slog.Logger
	sleep   func(context.Context, time.Duration) error

	// noStreamOptions is set once the server refused stream_options.
	noStreamOptions atomic.Bool

	// direct and directAddr are set when calls go through directTransport
	// (a plain http:// server, no proxy): Preconnect opens connections there.
	direct     *directTransport
	directAddr string

	maxAnswer int // bound of one call's answer, 0 for maxAnswer; tests lower it

	// The limits a reload of the configuration may change while calls
	// go on (SetLimits); each call reads them as it goes.
	callTimeout, idleTimeout atomic.Int64 // time.Duration
	maxRetries               atomic.Int64
}

// Limits are the call limits SetLimits changes.
type Limits struct {
	CallTimeout time.Duration // 0 = none
	IdleTimeout time.Duration // 0 = none
	MaxRetries  int
}

// SetLimits changes the call limits from the next attempt on (the
// configuration was reloaded).
func (c *Client) SetLimits(l Limits) {
	c.callTimeout.Store(int64(l.CallTimeout))
	c.idleTimeout.Store(int64(l.IdleTimeout))
	c.maxRetries.Store(int64(max(l.MaxRetries, 0)))
}

// New returns a Client for cfg.
func New(cfg Config) *Client {
	if cfg.MaxRetryWait <= 0 {
		cfg.MaxRetryWait = defaultMaxRetryWait
	}
	cfg.MaxRetries = max(cfg.MaxRetries, 0)
	hc := cfg.HTTPClient
	if hc == nil {
		hc = newHTTPClient()
	}
	calls := *hc // the caller's client stays as it was
	calls.CheckRedirect = keepMethod(hc.CheckRedirect)
	// A query in the base URL (Azure's ?api-version=) goes on every
	// request, after the endpoint's path: go-openai appends the path to
	// the base URL as a string, which put it inside the query.
	var query string
	cfg.BaseURL, query, _ = strings.Cut(cfg.BaseURL, "?")
	d := &doer{hc: &calls, query: query}
	for _, k := range slices.Sorted(maps.Keys(cfg.Headers)) {
		d.headers = append(d.headers, headerKV{k, cfg.Headers[k]})
	}
	oc := openai.DefaultConfig(cfg.APIKey)
	if cfg.BaseURL != "" {
		oc.BaseURL = cfg.BaseURL
	}
	oc.HTTPClient = d
	// go-openai gives up after this many non-data lines in a row; stalls are
	// IdleTimeout's job.
	oc.EmptyMessagesLimit = math.MaxUint32
	c := &Client{cfg: cfg, query: query, oa: openai.NewClientWithConfig(oc), hc: hc, log: cfg.Logger, sleep: cfg.Sleep,
		secrets: secrets(cfg.APIKey, cfg.BaseURL, query, cfg.Headers)}
	c.SetLimits(Limits{CallTimeout: cfg.CallTimeout, IdleTimeout: cfg.IdleTimeout, MaxRetries: cfg.MaxRetries})
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if t, ok := hc.Transport.(*directTransport); ok {
		if req, err := http.NewRequest(http.MethodPost, oc.BaseURL, nil); err == nil && t.serves(req) {
			c.direct, c.directAddr = t, hostPort(req.URL)
		}
	}
	return c
}

// keepMethod refuses to follow a redirect that would turn the POST into a
// GET (301, 302 and 303 do): the request body would be lost, and what the
// server answers the GET (a 404, a 405, a page) would not say that the API
// has moved. The redirect is answered instead, with where it points. next
// is the client's own policy, nil for net/http's.
func keepMethod(next func(*http.Request, []*http.Request) error) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		if req.Method != via[0].Method {
			return http.ErrUseLastResponse
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
}

// Preconnect opens connections to the server in the background, up to n
// kept ready, for n calls about to start: a run being stored before its
// first call, sub-agents being created. It does nothing for https or
// proxied servers, where the transport is net/http's.
func (c *Client) Preconnect(n int) {
	if c.direct != nil && n > 0 {
		c.direct.preconnect(c.directAddr, n)
	}
}

// CloseIdleConnections closes the connections kept for later calls.
func (c *Client) CloseIdleConnections() { c.hc.CloseIdleConnections() }

// Stream makes one chat completion call, streaming, and returns the whole
// answer. onDelta (may be nil) receives content pieces and tool names as
// they arrive, on the calling goroutine, so it must be quick; when an
// attempt fails after deltas went out and the call is retried, onDelta gets
// a Delta with Reset set first. Every failure is an *Error.
func (c *Client) Stream(ctx context.Context, req Request, onDelta func(Delta)) (*Response, error) {
	if ctx.Err() != nil {
		return nil, canceled(ctx, 0)
	}
	oreq := chatParams(&req)
	if err := checkParams(&oreq); err != nil {
		return nil, &Error{Kind: BadRequest, Attempts: 1, Err: err, Message: c.clean(err.Error())}
	}
	body, err := encodeBody(&req, oreq.Temperature)
	if err != nil {
		// What go-openai used to refuse before sending; it counted as the
		// first attempt.
		return nil, &Error{Kind: BadRequest, Attempts: 1, Err: err, Message: c.clean(err.Error())}
	}
	defer func() {
		if body != nil {
			body.release()
		}
	}()
	acc := &accumulator{onDelta: onDelta, limit: c.maxAnswer}
	retries := 0
	fellBack := false
	// What the server reported for attempts that failed: a stream that
	// ends in an error may still carry its usage, and those tokens count.
	var spent Usage
	failed := func(e *Error) (*Response, error) {
		e.Usage = spent
		return nil, e
	}
	for attempt := 1; ; attempt++ {
		if body == nil {
			// A retry: the last attempt gave its body back once it was
			// sent, so that a thousand calls waiting for their models do
			// not each hold one.
			if body, err = encodeBody(&req, oreq.Temperature); err != nil {
				return nil, &Error{Kind: BadRequest, Attempts: attempt, Err: err, Message: c.clean(err.Error())}
			}
		}
		withUsage := !c.noStreamOptions.Load()
		e := c.attempt(ctx, oreq, body, withUsage, acc)
		body = nil // released by attempt
		if e == nil && ctx.Err() != nil {
			// The answer arrived, but the caller gave up on it first: a
			// cancelled call never returns a result.
			if acc.hasUsage {
				spent = spent.Add(acc.usage)
			}
			return failed(canceled(ctx, attempt))
		}
		if e == nil {
			resp := acc.response(&req)
			resp.Attempts = attempt
			resp.Usage = resp.Usage.Add(spent)
			return resp, nil
		}
		if acc.hasUsage {
			spent = spent.Add(acc.usage)
		}
		e.Attempts = attempt
		if e.Kind == Canceled {
			return failed(e)
		}
		if withUsage && !fellBack && refusesStreamOptions(e) {
			// Older servers reject the field outright; ask again without it
			// and stop sending it to this server.
			fellBack = true
			c.noStreamOptions.Store(true)
			c.log.Info("LLM server does not accept stream_options; usage will come from the stream or be estimated",
				"base_url", c.clean(redactURL(c.cfg.BaseURL)))
			acc.withdraw()
			continue
		}
		if e.Kind == Auth && c.cfg.APIKey == "" && c.cfg.NoKeyHint != "" {
			e.hint = c.cfg.NoKeyHint
		}
		if (e.Kind == Auth || e.Kind == Network) && c.cfg.ChosenHint != "" {
			h := e.hint
			if h == "" {
				h = kindHint(e.Kind)
			}
			e.hint = h + "; " + c.cfg.ChosenHint
		}
		if !e.Retryable || retries >= int(c.maxRetries.Load()) {
			if unknownModel(e) {
				if h := modelsHint(req.Model, c.serverModels(ctx)); h != "" {
					if c.cfg.ModelHint != "" {
						h += "; " + c.cfg.ModelHint
					}
					e.hint = c.clean(h)
				}
			}
			return failed(e)
		}
		wait := c.backoff(retries, e)
		retries++
		if req.OnRetry == nil {
			// A caller with a hook logs the retry itself, naming its run
			// and session.
			c.log.Warn("LLM call failed, retrying",
				"attempt", attempt, "kind", e.Kind.String(), "status", e.Status, "wait", wait, "error", e.Error())
		} else {
			one := *e
			one.Attempts = 1 // the error of this attempt, not of the call
			req.OnRetry(Retry{Attempt: attempt, Of: int(c.maxRetries.Load()) + 1, Wait: wait, Reason: one.Error()})
		}
		acc.withdraw()
		if err := c.sleep(ctx, wait); err != nil || ctx.Err() != nil {
			return failed(canceled(ctx, attempt))
		}
	}
}

// Causes of an attempt's context ending, so a failed read can be told apart
// from the timers that aborted it.
var (
	errIdleStall   = errors.New("stream idle timeout")
	errCallTimeout = errors.New("call timeout")
	errAborted     = errors.New("attempt aborted")
)

// attempt makes one HTTP request and reads its stream into acc. The doer
// sends body, with stream_options when withUsage, in place of go-openai's
// encoding of oreq. attempt releases the caller's reference to body as soon
// as the response has begun: the request is sent by then, and net/http
// holds references of its own while it still needs the bytes.
func (c *Client) attempt(ctx context.Context, oreq openai.ChatCompletionRequest, body *preparedBody, withUsage bool, acc *accumulator) *Error {
	acc.reset()
	info := &respInfo{reqBody: body, tail: tailPlain}
	if withUsage {
		info.tail = tailWithUsage
	}
	actx, cancel := context.WithCancelCause(withRespInfo(ctx, info))
	defer cancel(errAborted)
	// The call's time is awake time: a ctrl+z of the dashboard longer than
	// the timeout does not fail the calls it stopped.
	if callTimeout := time.Duration(c.callTimeout.Load()); callTimeout > 0 {
		t := awake.AfterFunc(callTimeout, func() { cancel(errCallTimeout) })
		defer t.Stop()
	}

	stream, err := c.oa.CreateChatCompletionStream(actx, oreq)
	body.release()
	if err != nil {
		return c.failure(ctx, actx, info, err, false)
	}
	// The idle watchdog starts with the stream's first line: the wait for
	// it includes prompt processing, which can be long on local servers,
	// some of which send the response headers before it (vLLM), and is
	// CallTimeout's to bound.
	var watchdog *stallWatch
	idle := time.Duration(c.idleTimeout.Load())
	var (
		ch      chunk
		failure error
	)
	for {
		line, err := stream.RecvRaw()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				failure = err
			}
			break
		}
		switch {
		case idle <= 0:
		case watchdog == nil:
			watchdog = newStallWatch(idle, func() { cancel(errIdleStall) })
		default:
			watchdog.seen()
		}
		if len(line) == 0 {
			continue
		}
		if err := acc.feed(&ch, line); err != nil {
			failure = err
			break
		}
	}
	if failure != nil && acc.finish != "" && errors.Is(context.Cause(actx), errIdleStall) {
		// The answer was whole (its finish_reason came) and only the
		// stream's end never did: a server that keeps the stream open
		// after its last chunk. The answer stands; its usage, if it never
		// came, is estimated as for any server that sends none.
		failure = nil
	}
	switch {
	case failure != nil:
	case acc.finish == "" && info.whole && acc.choices:
		// A whole JSON answer was read to its end: it is complete even
		// when the server left its finish_reason null.
		acc.finish = "stop"
		if len(acc.calls) > 0 {
			acc.finish = "tool_calls"
		}
	case acc.finish == "":
		failure = unfinished(info, acc)
	default:
		failure = finishFailure(acc.finish)
	}
	if watchdog != nil {
		watchdog.stop()
	}
	if failure != nil {
		cancel(errAborted) // so Close does not wait to drain a broken stream
		stream.Close()
		return c.failure(ctx, actx, info, failure, true)
	}
	// Draining the tail keeps the connection reusable; bound it in case a
	// server holds the stream open after its last chunk.
	drain := time.AfterFunc(drainWait, func() { cancel(errAborted) })
	stream.Close()
	drain.Stop()
	return nil
}

// failure turns what went wrong in an attempt into an *Error; streaming
// tells whether the response had begun.
func (c *Client) failure(ctx, actx context.Context, info *respInfo, err error, streaming bool) *Error {
	if ctx.Err() != nil {
		return canceled(ctx, 0)
	}
	// What the server said wins over a timer that fired meanwhile.
	if info.status != 0 {
		return c.httpError(info, err)
	}
	var se *streamError
	if errors.As(err, &se) {
		kind, retry := classify(0, se.Code, se.Type, se.Message)
		e := &Error{Kind: kind, Retryable: retry, Code: se.Code, Type: se.Type,
			Message: c.clean(se.Message), Err: err}
		if info.whole && noSuchPath(se.errorFields) {
			e.hint = c.noEndpointHint("nothing answers at %s")
		}
		return e
	}
	var bad *badAnswer
	if errors.As(err, &bad) {
		return &Error{Kind: BadResponse, Err: err, Message: c.clean(bad.reason), hint: bad.hint}
	}
	var stopped *stoppedAnswer
	if errors.As(err, &stopped) {
		return &Error{Kind: Server, Retryable: true, Err: err, Message: stopped.reason}
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errIdleStall):
		return &Error{Kind: IdleTimeout, Retryable: true, Err: err,
			Message: fmt.Sprintf("no data for %s", time.Duration(c.idleTimeout.Load()))}
	case errors.Is(cause, errCallTimeout):
		return &Error{Kind: Timeout, Retryable: true, Err: err,
			Message: fmt.Sprintf("an attempt took longer than %s (limits.call_timeout; a slow local model may need more)", time.Duration(c.callTimeout.Load()))}
	}
	var ae *openai.APIError
	if errors.As(err, &ae) {
		// A JSON error body on a 200 response, found by go-openai at EOF.
		code := fmt.Sprint(ae.Code)
		if ae.Code == nil {
			code = ""
		}
		kind, retry := classify(ae.HTTPStatusCode, code, ae.Type, ae.Message)
		return &Error{Kind: kind, Retryable: retry, Status: ae.HTTPStatusCode, Code: code, Type: ae.Type,
			Message: c.clean(ae.Message), Err: err}
	}
	if errors.Is(err, errTruncated) {
		e := &Error{Kind: Truncated, Retryable: true, Err: err}
		switch {
		case errors.Is(err, errPartChunk):
			e.Message = partChunkReason
		case info.done:
			// Not a connection cut short: this server ends its answers
			// without saying why, and every attempt will do the same.
			e.Message = "the server sent [DONE] without a finish_reason in any chunk"
		case !info.data:
			e.Message = "the server answered " + statusLine(info.okStatus) + " and sent no data"
		}
		return e
	}
	if !info.sent {
		// go-openai refused the request before sending it (parameters the
		// model does not support).
		return &Error{Kind: BadRequest, Err: err, Message: c.clean(err.Error())}
	}
	if streaming {
		return &Error{Kind: Network, Retryable: true, Err: err, midStream: true,
			Message: "connection lost mid-stream: " + c.clean(err.Error())}
	}
	return &Error{Kind: Network, Retryable: true, Err: err, Message: c.clean(err.Error())}
}

// finishFailure is the failure a finish_reason reports, nil when it ends
// an answer that is whole. What came before a failure is cut where it
// struck: taken as an answer, it would stand as a session's result with
// nobody told why it is short.
//
// Servers send more reasons than OpenAI's ("eos" from Together, "eos_token"
// and "stop_sequence" from text-generation-inference, "load" from Ollama,
// "repetition" from vLLM), and a router passes on what its model's server
// sent: a reason not known to report a failure ends an answer as "stop"
// does, and is kept as it came.
func finishFailure(reason string) error {
	switch strings.ToLower(reason) {
	case "content_filter":
		return &badAnswer{reason: `the server's content filter stopped the answer (finish_reason "content_filter")`}
	case "error":
		// OpenRouter and other routers, when the model's server fails
		// mid-answer, often with an error object that says why (read as
		// an error event before this); vLLM, for an error it calls
		// retryable.
		return &stoppedAnswer{reason: `the server stopped the answer with an error (finish_reason "error")`}
	case "abort":
		// vLLM, for an answer it gave up on: its engine was paused or
		// shut down, or the request was cancelled on its side.
		return &stoppedAnswer{reason: `the server aborted the answer (finish_reason "abort")`}
	case "insufficient_system_resource":
		// DeepSeek, for an answer cut short when its servers ran short.
		return &stoppedAnswer{reason: `the server ran out of resources for the answer (finish_reason "insufficient_system_resource")`}
	}
	return nil
}

// unfinished says why a response read to its end brought no finished
// answer: mostly a stream cut short, but a server may have answered with
// something else than a chat completion, a login page or another API's
// reply, which another attempt would only get again.
func unfinished(info *respInfo, acc *accumulator) error {
	const hint = "check that the base URL is the server's OpenAI-compatible API, like http://localhost:11434/v1"
	switch {
	case !info.data && len(bytes.TrimSpace(info.head)) > 0:
		return &badAnswer{hint: hint, reason: fmt.Sprintf("the server answered %s with %s, not an event stream: %s",
			statusLine(info.okStatus), mediaType(info.contentType), readableBody(info.head))}
	case info.whole && !acc.choices:
		return &badAnswer{hint: hint, reason: fmt.Sprintf("the server answered %s with JSON that holds no chat completion: %s",
			statusLine(info.okStatus), textcut.OneLine(string(info.head), 300))}
	}
	return errTruncated
}

// statusLine is an HTTP status as a person reads it: "200 OK".
func statusLine(status int) string {
	if t := http.StatusText(status); t != "" {
		return fmt.Sprintf("%d %s", status, t)
	}
	return strconv.Itoa(status)
}

// mediaType names a Content-Type for a message.
func mediaType(contentType string) string {
	if contentType == "" {
		return "no Content-Type"
	}
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		return mt
	}
	return strconv.Quote(contentType)
}

func (c *Client) httpError(info *respInfo, err error) *Error {
	f, ok := parseErrorBody(info.body)
	msg := textcut.OneLine(f.Message, 500)
	if !ok || msg == "" {
		msg = readableBody(info.body)
	}
	kind, retry := classify(info.status, f.Code, f.Type, msg)
	e := &Error{Kind: kind, Retryable: retry, Status: info.status, Code: f.Code, Type: f.Type,
		Message: c.clean(msg), Err: err}
	if info.location != "" {
		e.Message = c.clean("redirected to " + redactURL(info.location))
		e.hint = "the API has moved: a POST does not follow this redirect; check the base URL"
		if base, ok := strings.CutSuffix(info.location, "/chat/completions"); ok {
			e.hint = "the API has moved: set the base URL to " + c.clean(redactURL(base))
		}
	}
	switch {
	case info.location != "":
	case info.status == http.StatusNotFound && (!ok || noSuchPath(f)):
		// Not an API's "no such model" but a page that is not there: the
		// base URL names no chat completions endpoint.
		e.hint = c.noEndpointHint("nothing answers at %s")
	case info.status == http.StatusMethodNotAllowed && (!ok || f.Type == "" && f.Code == ""),
		info.status == http.StatusNotImplemented && (!ok || f.Type == "" && f.Code == "" && (noSuchPath(f) || strings.EqualFold(strings.TrimSpace(msg), http.StatusText(info.status)))):
		// A server that answers, but takes no POST there: a web server or
		// a web framework's app (FastAPI's {"detail":"Method Not Allowed"},
		// Django's, Laravel's), not a model's API: a 405 that is no API
		// error, or a 501 that says only that. An API's own error (llama.cpp
		// says 501 of what it does not support) says what is wrong itself.
		e.hint = c.noEndpointHint("the server at %s takes no POST, so it is no chat completions API")
	}
	if h := toolsHint(msg); h != "" && e.hint == "" {
		// Not worth retrying either: the server will refuse the tools again.
		e.hint, e.Retryable = h, false
	}
	if d, ok := retryAfter(info.header, time.Now()); ok {
		e.RetryAfter = d
	}
	return e
}

// noToolsPhrase starts the hint for a model that cannot call tools.
const noToolsPhrase = "this model cannot call tools"

// SaysModelLacksTools reports whether a failure's reason is that the model
// cannot call tools: another model fixes it, not a retry.
func SaysModelLacksTools(reason string) bool { return strings.Contains(reason, noToolsPhrase) }

// toolsHint says what to do when a server refuses the request's tools,
// which every agent needs: each local server words it its own way.
func toolsHint(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "does not support tools"): // Ollama
		return noToolsPhrase + ", and swarmdeck's agents work through them: pick one that can, such as llama3.1 or qwen2.5"
	case strings.Contains(m, "--jinja"): // llama.cpp
		return "start llama-server with --jinja, so that it takes tools"
	case strings.Contains(m, "--enable-auto-tool-choice"): // vLLM
		return "start vLLM with --enable-auto-tool-choice and the --tool-call-parser for the model, so that it takes tools"
	}
	return ""
}

// noEndpointHint is the hint for an answer that says the base URL names no
// chat completions endpoint: what (a format with the endpoint's URL for
// its %s), and what to check.
func (c *Client) noEndpointHint(what string) string {
	at := strings.TrimSuffix(redactURL(c.cfg.BaseURL), "/") + "/chat/completions"
	hint := fmt.Sprintf(what, c.clean(at)) + ": check the base URL"
	if !strings.Contains(c.cfg.BaseURL, "/v1") {
		hint += " (OpenAI-compatible servers serve under /v1, as in http://localhost:11434/v1)"
	}
	return hint
}

// noSuchPath reports an error that says no endpoint answers at the path
// asked, in the JSON a server sends for it: FastAPI's 404 (vLLM, SGLang)
// and LM Studio's, which it sends with 200.
func noSuchPath(f errorFields) bool {
	return f.Code == "" && f.Type == "" &&
		(strings.EqualFold(f.Message, "Not Found") || strings.HasPrefix(f.Message, "Unexpected endpoint or method"))
}

// clean makes a message one line and keeps the API key out of it, in case a
// server or proxy echoes the request back.
func (c *Client) clean(msg string) string {
	if c.query != "" {
		// A URL in a transport error, whose query may carry a key.
		msg = strings.ReplaceAll(msg, "?"+c.query, "?[redacted]")
	}
	for _, k := range c.secrets {
		msg = strings.ReplaceAll(msg, k, "[redacted]")
	}
	// Redacted before it is cut, so that no key is cut in two here; a body
	// is often cut before it comes here, though, and a key cut there ends
	// at the ellipsis.
	msg = textcut.OneLine(msg, 500)
	for _, k := range c.secrets {
		msg = redactCutSecret(msg, k)
	}
	return msg
}

// redactCutSecret redacts what is left of secret where msg was cut: its
// start (four characters or more) right before an ellipsis.
func redactCutSecret(msg, secret string) string {
	const cutMark = "…"
	if !strings.Contains(msg, cutMark) {
		return msg
	}
	var b strings.Builder
	rest := msg
	for {
		i := strings.Index(rest, cutMark)
		if i < 0 {
			break
		}
		before := rest[:i]
		n := 0
		for l := min(len(secret)-1, len(before)); l >= 4; l-- {
			if strings.HasSuffix(before, secret[:l]) {
				n = l
				break
			}
		}
		b.WriteString(before[:len(before)-n])
		if n > 0 {
			b.WriteString("[redacted]")
		}
		b.WriteString(cutMark)
		rest = rest[i+len(cutMark):]
	}
	b.WriteString(rest)
	return b.String()
}

// secrets lists what a client's messages must not repeat: the API key, a
// password in the base URL, and the values of headers and query
// parameters that look like keys (Azure's api-key header or parameter, a
// proxy's token), in the forms a server may echo them in. A value that
// does not look like one, such as api-version=2024-06-01, stays readable
// in an error that names it.
func secrets(apiKey, baseURL, query string, headers map[string]string) []string {
	var out []string
	add := func(v string) {
		if len(v) >= 4 && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if !placeholderKey(apiKey) {
		add(apiKey)
	}
	if u, err := url.Parse(baseURL); err == nil && u.User != nil {
		user := u.User.Username()
		p, ok := u.User.Password()
		if ok {
			add(p)
			add(url.PathEscape(p))
		} else if secret.Like("user", user) {
			add(user) // a user alone is how some gateways take a key
		}
		if ok || secret.Like("user", user) {
			// As HTTP sends them, in an Authorization: Basic header that a
			// server may quote back.
			add(base64.StdEncoding.EncodeToString([]byte(user + ":" + p)))
		}
	}
	if vs, err := url.ParseQuery(query); err == nil {
		for name, values := range vs {
			for _, v := range values {
				if secret.Like(name, v) {
					add(v)
					add(url.QueryEscape(v))
				}
			}
		}
	}
	for name, v := range headers {
		if secret.Like(name, v) {
			add(v)
			if _, token, ok := strings.Cut(v, " "); ok { // "Bearer TOKEN"
				add(token)
			}
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// placeholderKey reports whether an API key is one of the words that
// guides give servers which check none ("ollama", "lm-studio", "EMPTY"):
// short, and letters and hyphens only. Hidden, it would blank that word
// out of every message, the model's name among them ("ollama-llama3",
// "registry.ollama.ai/library/llama3.1 does not support tools").
func placeholderKey(k string) bool {
	if len(k) >= 10 {
		return false
	}
	for _, r := range k {
		if !unicode.IsLetter(r) && r != '-' {
			return false
		}
	}
	return true
}

func refusesStreamOptions(e *Error) bool {
	return (e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity) &&
		strings.Contains(strings.ToLower(e.Message), "stream_options")
}

// redactURL hides a password in a base URL before it is logged.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// HideURLSecrets is a base URL as it may be shown: its password, its
// fragment and the values of its query that may carry a secret replaced by
// Hidden. hid reports whether anything was, in which case the URL shown no
// longer works as it is.
func HideURLSecrets(raw string) (shown string, hid bool) { return secret.HideInURL(raw) }

// Hidden stands for a secret left out of a URL that is shown.
const Hidden = secret.Hidden

func canceled(ctx context.Context, attempts int) *Error {
	e := &Error{Kind: Canceled, Attempts: attempts, Err: ctx.Err()}
	if cause := context.Cause(ctx); cause != nil {
		e.Message = cause.Error()
	}
	return e
}
