package llm

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"
)

func TestSSEFilter(t *testing.T) {
	long := strings.Repeat("x", 20000)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"passes data", "data: {\"a\":1}\n\ndata: [DONE]\n\n", "data: {\"a\":1}\n\ndata: [DONE]\n\n"},
		{"drops comments and fields", ": keep-alive\n\nevent: message\nid: 7\nretry: 10\ndata: x\n\n", "\ndata: x\n\n"},
		{"drops indented comment", "  : ping\ndata: x\n", "data: x\n"},
		{"rewrites error event", "data: {\"error\":{\"message\":\"m\"}}\n\n", "data: { \"error\":{\"message\":\"m\"}}\n\n"},
		{"rewrites error event without space", "data:{\"error\":\"m\"}\n", "data: { \"error\":\"m\"}\n"},
		{"keeps other json", "data: {\"errors\":1}\n", "data: {\"errors\":1}\n"},
		{"adds newline at EOF", "data: {\"a\":1}", "data: {\"a\":1}\n"},
		{"rewrites error at EOF", "data: {\"error\":\"m\"}", "data: { \"error\":\"m\"}\n"},
		{"long comment dropped", ": " + long + "\ndata: y\n", "data: y\n"},
		{"long data kept", "data: " + long + "\ndata: y\n", "data: " + long + "\ndata: y\n"},
		{"CR LF", ": c\r\ndata: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n", "data: {\"a\":1}\r\n\r\ndata: [DONE]\r\n\r\n"},
		{"lone CR", ": c\rdata: {\"a\":1}\r\rdata: [DONE]\r\r", "data: {\"a\":1}\n\ndata: [DONE]\n\n"},
		{"lone CR at EOF", "data: x\r", "data: x\n"},
		{"line ends mixed", "data: x\r\n\rdata: y\n\r\ndata: z\r", "data: x\r\n\ndata: y\n\r\ndata: z\n"},
		{"long data, lone CR", "data: " + long + "\rdata: y\r", "data: " + long + "\ndata: y\n"},
		{"joins an event's data lines", "data: {\"a\":\ndata: 1}\n\ndata: [DONE]\n\n", "data: {\"a\":\r1}\n\ndata: [DONE]\n\n"},
		{"joins pretty-printed JSON", "data: {\ndata:   \"a\": 1\ndata:}\n\n", "data: {\r\"a\": 1\r}\n\n"},
		{"joins over comments and fields", "data: {\"a\":\n: ping\nid: 2\ndata: 1}\n\n", "data: {\"a\":\r1}\n\n"},
		{"joins with CR LF", "data: {\"a\":\r\ndata: 1}\r\n\r\n", "data: {\"a\":\r1}\r\n\r\n"},
		{"joins with lone CR", "data: {\"a\":\rdata: 1}\r\r", "data: {\"a\":\r1}\n\n"},
		{"joins an error event", "data: {\"error\":\ndata: {\"message\":\"m\"}}\n\n", "data: { \"error\":\r{\"message\":\"m\"}}\n\n"},
		{"joins a long first line", "data: {\"a\":\"" + long + "\",\ndata: \"b\":1}\n\n", "data: {\"a\":\"" + long + "\",\r\"b\":1}\n\n"},
		{"whole lines without blank lines", "data: {\"a\":1}\ndata: {\"b\":2}\ndata: [DONE]\n", "data: {\"a\":1}\ndata: {\"b\":2}\ndata: [DONE]\n"},
		{"long whole line without blank line", "data: {\"a\":\"" + long + "\"}\ndata: {\"b\":2}\n", "data: {\"a\":\"" + long + "\"}\ndata: {\"b\":2}\n"},
		{"event ends at EOF", "data: {\"a\":\ndata: 1}", "data: {\"a\":\r1}\n"},
		{"other line ends the event", "data: {\"a\":\n<html>\n", "data: {\"a\":\n<html>\n"},
		{"broken chunk stays broken", "data: {\"a\":\n\ndata: [DONE]\n\n", "data: {\"a\":\n\ndata: [DONE]\n\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, oneByte := range []bool{false, true} {
				var r io.Reader = strings.NewReader(tc.in)
				if oneByte {
					r = iotest.OneByteReader(r)
				}
				f := newSSEFilter(io.NopCloser(r))
				got, err := io.ReadAll(iotest.HalfReader(f))
				if err != nil {
					t.Fatal(err)
				}
				if oneByte {
					// A CR LF that two reads split is read as a lone CR
					// and then skips its LF: the CR is not handed on.
					got = bytes.ReplaceAll(got, []byte("\r\n"), []byte("\n"))
					tc.want = strings.ReplaceAll(tc.want, "\r\n", "\n")
				}
				if string(got) != tc.want {
					t.Errorf("oneByte=%v: got %q, want %q", oneByte, trunc(string(got)), trunc(tc.want))
				}
				if err := f.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// The filter allocates nothing per line, whatever the lines end with and
// however an event's data is split: its cost is one of each stream.
func TestSSEFilterAllocatesPerStream(t *testing.T) {
	const event = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n"
	for _, tc := range []struct{ name, event string }{
		{"LF", event},
		{"CR LF", strings.ReplaceAll(event, "\n", "\r\n")},
		{"lone CR", strings.ReplaceAll(event, "\n", "\r")},
		{"several data lines", strings.Replace(event, "[", "[\ndata: ", 1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			allocs := func(events int) float64 {
				body := []byte(strings.Repeat(tc.event, events))
				r := bytes.NewReader(body)
				lines := bufio.NewReaderSize(nil, 4096) // as go-openai reads
				return testing.AllocsPerRun(20, func() {
					r.Reset(body)
					f := newSSEFilter(io.NopCloser(r))
					lines.Reset(f)
					for {
						if _, err := lines.ReadSlice('\n'); err != nil {
							break
						}
					}
					f.Close()
				})
			}
			// Allocations of other goroutines count too, and the race
			// detector's sync.Pool drops some of what is put back: the
			// allowance is far below one allocation for every event.
			if few, many := allocs(10), allocs(1000); many > few+50 {
				t.Errorf("%v allocations for 10 events, %v for 1000", few, many)
			}
		})
	}
}

func TestWholeObject(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`:                          true,
		`{"a":[1,{"b":2}]} ` + "\r\n": true,
		`{"a":"}]\"{"}`:               true,
		`{"a":`:                       false,
		`{"a":"}"`:                    false,
		`{"a":[1,2}`:                  false,
		`{"a":1} {`:                   false,
		`{"a":"\`:                     false,
	} {
		if got := wholeObject([]byte(in)); got != want {
			t.Errorf("wholeObject(%q) = %v, want %v", in, got, want)
		}
	}
}

func trunc(s string) string {
	if len(s) > 80 {
		return s[:40] + "..." + s[len(s)-40:]
	}
	return s
}

// feedLines runs data lines through an accumulator.
func feedLines(t *testing.T, lines ...string) (*accumulator, *Response) {
	t.Helper()
	a := &accumulator{}
	var ch chunk
	for _, l := range lines {
		if err := a.feed(&ch, []byte(l)); err != nil {
			t.Fatalf("feed(%s): %v", l, err)
		}
	}
	return a, a.response(&Request{Model: "m"})
}

func TestToolCallAccumulation(t *testing.T) {
	const pre = `{"choices":[{"index":0,"delta":{"tool_calls":[`
	const post = `]},"finish_reason":null}]}`
	for _, tc := range []struct {
		name   string
		deltas []string
		want   []ToolCall
	}{
		{"no index, no id continues the last call", []string{
			`{"id":"a","function":{"name":"f","arguments":"{\"x\""}}`,
			`{"function":{"arguments":":1}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}}},
		{"repeated id continues its call", []string{
			`{"id":"a","function":{"name":"f","arguments":"{\"x\""}}`,
			`{"id":"a","function":{"arguments":":1}"}}`,
			`{"id":"b","function":{"name":"g","arguments":"{}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "b", Name: "g", Arguments: `{}`}}},
		{"same index, new id opens a call", []string{
			`{"index":0,"id":"a","function":{"name":"f","arguments":"{}"}}`,
			`{"index":0,"id":"b","function":{"name":"f","arguments":"{\"y\":2}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{}`}, {ID: "b", Name: "f", Arguments: `{"y":2}`}}},
		// mlx-openai-server before its fix: a fresh id on every delta.
		{"same index, new id without a name continues the call", []string{
			`{"index":0,"id":"a","function":{"name":"f","arguments":""}}`,
			`{"index":0,"id":"b","function":{"arguments":"{\"task\": [\"A"}}`,
			`{"index":0,"id":"c","function":{"arguments":"\", \"B\"]}"}}`,
			`{"index":0,"id":"d","function":{"name":"g","arguments":"{}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{"task": ["A", "B"]}`}, {ID: "d", Name: "g", Arguments: `{}`}}},
		{"no index, new id without a name continues the call", []string{
			`{"id":"a","function":{"name":"f","arguments":"{\"x\""}}`,
			`{"id":"b","function":{"arguments":":1}"}}`,
			`{"id":"c","function":{"name":"g","arguments":"{}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{"x":1}`}, {ID: "c", Name: "g", Arguments: `{}`}}},
		{"interleaved indexes", []string{
			`{"index":0,"id":"a","function":{"name":"f"}}`,
			`{"index":1,"id":"b","function":{"name":"g"}}`,
			`{"index":1,"function":{"arguments":"[2]"}}`,
			`{"index":0,"function":{"arguments":"[1]"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `[1]`}, {ID: "b", Name: "g", Arguments: `[2]`}}},
		{"index as string, name repeated", []string{
			`{"index":"0","id":"a","function":{"name":"f","arguments":"{\"k\""}}`,
			`{"index":"0","function":{"name":"f","arguments":":true}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{"k":true}`}}},
		{"name in pieces", []string{
			`{"index":0,"id":"a","function":{"name":"read_"}}`,
			`{"index":0,"function":{"name":"file","arguments":"{}"}}`,
		}, []ToolCall{{ID: "a", Name: "read_file", Arguments: `{}`}}},
		{"null fields", []string{
			`{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":null}}`,
			`{"index":0,"id":null,"function":{"name":null,"arguments":"{}"}}`,
		}, []ToolCall{{ID: "a", Name: "f", Arguments: `{}`}}},
		{"empty delta is no call", []string{`{"index":0,"function":{}}`}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := make([]string, len(tc.deltas))
			for i, d := range tc.deltas {
				lines[i] = pre + d + post
			}
			lines = append(lines, `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
			_, resp := feedLines(t, lines...)
			wantToolCalls(t, resp.ToolCalls, tc.want...)
		})
	}
}

func TestChunkTolerance(t *testing.T) {
	_, resp := feedLines(t,
		`{"choices":[{"index":0,"delta":{"content":[{"type":"text","text":"parts "},"and strings"]}}]}`,
		`{"choices":[{"index":0,"delta":"not an object"}]}`, // wrong type: ignored
		`not json at all`,
		`{"choices":[{"index":1,"delta":{"content":"second choice, ignored"}}]}`,
		`{"choices":[{"index":0,"message":{"content":" via message"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":null},"finish_reason":"stop"}],"usage":{"prompt_tokens":"7","completion_tokens":3.0}}`,
	)
	if resp.Content != "parts and strings via message" || resp.FinishReason != "stop" {
		t.Errorf("resp = %+v", resp)
	}
	if resp.Usage != (Usage{7, 3, 10}) || resp.UsageEstimated {
		t.Errorf("usage = %+v", resp.Usage)
	}
	_, resp = feedLines(t,
		`{"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}],"x_groq":{"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}}`)
	if resp.Usage != (Usage{4, 1, 5}) {
		t.Errorf("groq usage = %+v", resp.Usage)
	}
}

func TestAppendUnquotedMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		`""`, `"plain"`, `"\"q\" \\ \/ \b\f\n\r\t"`, `"caf\u00e9 \u20ac"`, `"\ud83d\ude00 emoji"`,
		`"lone \ud83d surrogate"`, `"lone low \ude00"`, `"ünïcödé raw"`, "\"bad \xff byte\"", `"\u0000"`,
	} {
		var want string
		if err := json.Unmarshal([]byte(s), &want); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := string(appendUnquoted(nil, []byte(s))); got != want {
			t.Errorf("appendUnquoted(%s) = %q, want %q", s, got, want)
		}
	}
}

func FuzzAppendUnquoted(f *testing.F) {
	for _, s := range []string{`"a"`, `"\u00e9\n"`, `"\ud83d\ude00"`, `"\ud800x"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want string
		// appendUnquoted takes an exact literal, as the decoder hands it.
		if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' || json.Unmarshal([]byte(s), &want) != nil {
			return
		}
		if got := string(appendUnquoted(nil, []byte(s))); got != want {
			t.Errorf("appendUnquoted(%q) = %q, want %q", s, got, want)
		}
	})
}

// Whatever a server sends, feeding it never panics, and the arguments of a
// call always come back as the concatenated text of its string fragments.
func FuzzFeed(f *testing.F) {
	f.Add(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"f","arguments":"{\"x\":"}}]}}]}`, `{"x":`)
	f.Add(`{"choices":[{"delta":{"content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1}}`, "")
	f.Add(`{"error":{"message":"m"}}`, "")
	f.Fuzz(func(t *testing.T, line, args string) {
		a := &accumulator{onDelta: func(Delta) {}}
		var ch chunk
		_ = a.feed(&ch, []byte(line))
		frag, _ := json.Marshal(args)
		l := `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":99,"id":"fz","function":{"name":"fz","arguments":` + string(frag) + `}}]},"finish_reason":"stop"}]}`
		if err := a.feed(&ch, []byte(l)); err != nil {
			t.Fatal(err)
		}
		resp := a.response(&Request{})
		var found bool
		for _, c := range resp.ToolCalls {
			if c.ID == "fz" {
				found = true
				var want string
				_ = json.Unmarshal(frag, &want) // invalid UTF-8 became U+FFFD
				if strings.TrimSpace(want) == "" {
					want = "{}"
				}
				if c.Arguments != want {
					t.Errorf("arguments = %q, want %q", c.Arguments, want)
				}
			}
		}
		if !found {
			t.Error("fuzz call lost")
		}
		if !utf8.ValidString(resp.Content) {
			t.Error("content is not valid UTF-8")
		}
	})
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		status         int
		code, typ, msg string
		kind           Kind
		retryable      bool
	}{
		{429, "rate_limit_exceeded", "requests", "Rate limit reached: tokens per min, too many tokens", RateLimited, true},
		{429, "insufficient_quota", "", "", QuotaExceeded, false},
		{402, "", "", "Insufficient credits", QuotaExceeded, false},
		{400, "context_length_exceeded", "", "", ContextLength, false},
		{413, "", "", "This model's maximum context length is 4096 tokens", ContextLength, false},
		{413, "", "", "payload too large", BadRequest, false},
		{500, "", "", "boom", Server, true},
		{529, "", "overloaded_error", "", Server, true},
		{409, "", "", "", Server, true},
		{408, "", "", "", Timeout, true},
		{0, "", "server_error", "", Server, true},
		{0, "429", "", "", RateLimited, true},
		{0, "", "", "unexplained", Server, false},
		{0, "", "", "Model unloaded.", Server, true},
		{0, "", "", "Server busy, please try again later", Server, true},
		{0, "", "invalid_request_error", "model is loading", BadRequest, false},
	} {
		kind, retry := classify(tc.status, tc.code, tc.typ, tc.msg)
		if kind != tc.kind || retry != tc.retryable {
			t.Errorf("classify(%d, %q, %q, %q) = %v, %v; want %v, %v", tc.status, tc.code, tc.typ, tc.msg, kind, retry, tc.kind, tc.retryable)
		}
	}
}

// A password in the base URL goes to the server as a Basic credential, in
// base64; a server that quotes the request's headers back does not get
// it into the error either.
func TestBasicCredentialNeverInMessages(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 400, "", "", "bad request with headers: Authorization: "+r.Header.Get("Authorization"))
	})
	var logged bytes.Buffer
	c, _ := newTestClient(fs, func(c *Config) {
		c.BaseURL = strings.Replace(c.BaseURL, "http://", "http://bob:PWSECRET987654@", 1)
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	_, err := c.Stream(t.Context(), userRequest("x"), nil)
	msg := asError(t, err).Error()
	if !strings.Contains(msg, "Authorization: Basic ") {
		t.Fatalf("the server did not get a Basic credential: %q", msg)
	}
	cred := base64.StdEncoding.EncodeToString([]byte("bob:PWSECRET987654"))
	if strings.Contains(msg, cred) || strings.Contains(logged.String(), cred) {
		t.Errorf("the credential is in the error %q or the log", msg)
	}
}

func TestErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Kind: Server, Status: 503, Attempts: 4, Message: "model overloaded"}, "LLM server returned 503 Service Unavailable after 4 attempts: model overloaded"},
		{Error{Kind: Auth, Status: 401, Attempts: 1, Message: "Incorrect API key provided"}, "LLM server returned 401 Unauthorized: Incorrect API key provided (check the API key and its permissions)"},
		{Error{Kind: Canceled, Attempts: 1, Message: "context canceled"}, "LLM call canceled: context canceled"},
		{Error{Kind: Server, Status: 599, Attempts: 2}, "LLM server returned 599 after 2 attempts"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// Keys sent otherwise than as the API key (a header such as Azure's
// api-key, a query parameter, a password in the URL) stay out of error
// messages and the log as well, while a parameter that is no secret stays
// readable.
func TestKeysInHeadersAndQueryNeverInMessages(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		u, p, _ := r.BasicAuth()
		jsonError(w, 401, "", "", fmt.Sprintf("invalid subscription key %s (%s, %s); proxy token %s; api version %s; user %s:%s",
			r.Header.Get("Api-Key"), r.URL.Query().Get("api-key"), r.Header.Get("X-Proxy-Auth"), r.Header.Get("X-Long"),
			r.URL.Query().Get("api-version"), u, p))
	})
	var logged bytes.Buffer
	c, _ := newTestClient(fs, func(c *Config) {
		c.BaseURL += "?api-version=2024-06-01&api-key=QUERYKEY81"
		c.Headers = map[string]string{"api-key": "HDRKEY77", "X-Proxy-Auth": "Bearer pxy-999", "X-Long": "abcdefghijklmnopqrstuvwx", "X-Title": "my tool"}
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	_, err := c.Stream(t.Context(), userRequest("x"), nil)
	msg := asError(t, err).Error()
	for _, secret := range []string{"QUERYKEY81", "HDRKEY77", "pxy-999", "abcdefghijklmnopqrstuvwx"} {
		if strings.Contains(msg, secret) || strings.Contains(logged.String(), secret) {
			t.Errorf("%s is in the error %q or the log", secret, msg)
		}
	}
	if !strings.Contains(msg, "api version 2024-06-01") {
		t.Errorf("the error %q hides a parameter that is no secret", msg)
	}
}

func TestSecretsOfAClient(t *testing.T) {
	got := secrets("sk-1", "http://me:pa%2Fss@host/v1", "api-version=2024-06-01&token=ab+cd&x=1", map[string]string{
		"Authorization": "Bearer tok-123", "X-Title": "my tool", "X-Id": "0123456789abcdefXYZ"})
	// The password also as HTTP sends it: Basic base64("me:pa/ss").
	for _, want := range []string{"sk-1", "pa/ss", "pa%2Fss", "bWU6cGEvc3M=", "ab cd", "ab+cd", "Bearer tok-123", "tok-123", "0123456789abcdefXYZ"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets %q lack %q", got, want)
		}
	}
	for _, not := range []string{"2024-06-01", "my tool", "1", "me"} {
		if slices.Contains(got, not) {
			t.Errorf("secrets %q hold %q", got, not)
		}
	}
	for i := 1; i < len(got); i++ {
		if len(got[i]) > len(got[i-1]) {
			t.Fatalf("secrets %q are not longest first", got)
		}
	}
}

// The words guides give as the key of a server that checks none are not
// hidden: "ollama" would be blanked out of model names and messages. A
// user alone that looks like a key is hidden, with the Basic credential
// HTTP makes of it.
func TestSecretsLeavePlaceholderKeys(t *testing.T) {
	for _, k := range []string{"ollama", "lm-studio", "EMPTY", "none"} {
		if got := secrets(k, "http://127.0.0.1:11434/v1", "", nil); len(got) != 0 {
			t.Errorf("the key %q is taken for a secret: %q", k, got)
		}
	}
	for _, k := range []string{"hunter2", "sk-no-key-required", "abcdefghijkl"} {
		if got := secrets(k, "", "", nil); !slices.Contains(got, k) {
			t.Errorf("the key %q is not taken for a secret: %q", k, got)
		}
	}
	const user = "sk-0123456789abcdefghij"
	got := secrets("", "http://"+user+"@gw/v1", "", nil)
	if !slices.Contains(got, user) || !slices.Contains(got, base64.StdEncoding.EncodeToString([]byte(user+":"))) {
		t.Errorf("a key as the URL's user: secrets %q", got)
	}
}

// A server that echoes the request back (some proxies do) does not get the
// key into error messages or the log.
func TestAPIKeyNeverInMessagesOrLog(t *testing.T) {
	const key = "sk-secret-1234567890"
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		jsonError(w, 503, "", "", "upstream failed for "+r.Header.Get("Authorization"))
	})
	var logged bytes.Buffer
	c, _ := newTestClient(fs, func(c *Config) {
		c.APIKey = key
		c.MaxRetries = 1
		c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	_, err := c.Stream(t.Context(), userRequest("x"), nil)
	if e := asError(t, err); strings.Contains(e.Error(), key) || !strings.Contains(e.Error(), "[redacted]") {
		t.Errorf("Error() = %q", e.Error())
	}
	if !strings.Contains(logged.String(), "retrying") || strings.Contains(logged.String(), key) {
		t.Errorf("log = %q", logged.String())
	}
}

// A key that a server quotes where its message is cut (an error of 500
// characters, a body of 300, an HTML page of 200) leaves none of its start
// in the error, wherever the cut falls.
func TestAPIKeyCutInAnErrorIsRedacted(t *testing.T) {
	const key = "sk-QA49SECRETKEYabcdef0123456789"
	for _, shape := range []struct {
		name string
		cut  int // where the message is cut, in characters
		body func(pad string) (contentType, body string)
	}{
		{"json", 500, func(pad string) (string, string) {
			b, _ := json.Marshal(obj{"error": obj{"message": pad + "Authorization=Bearer " + key + " rest"}})
			return "application/json", string(b)
		}},
		{"text", 300, func(pad string) (string, string) { return "text/plain", pad + "Authorization=Bearer " + key + " rest" }},
		{"html", 200, func(pad string) (string, string) {
			return "text/html", "<html><body><p>" + pad + "Authorization=Bearer " + key + " rest</p></body></html>"
		}},
	} {
		for _, into := range []int{1, 4, 5, 12, len(key) - 1} {
			pad := strings.Repeat(".", shape.cut-1-len("Authorization=Bearer ")-into)
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				ct, body := shape.body(pad)
				w.Header().Set("Content-Type", ct)
				w.WriteHeader(401)
				_, _ = io.WriteString(w, body)
			})
			var logged bytes.Buffer
			c, _ := newTestClient(fs, func(c *Config) {
				c.APIKey = key
				c.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			_, err := c.Stream(t.Context(), userRequest("x"), nil)
			msg := asError(t, err).Error()
			if strings.Contains(msg, key[:4]) || strings.Contains(logged.String(), key[:4]) {
				t.Errorf("%s body cut %d characters into the key: the error %q or the log holds its start", shape.name, into, msg)
			}
			if !strings.Contains(msg, "Authorization=") {
				t.Errorf("%s body cut %d characters into the key: the error %q lost the text before it", shape.name, into, msg)
			}
		}
	}
}

func TestRetryAfterParsing(t *testing.T) {
	now := time.Date(2026, 1, 26, 19, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		h    http.Header
		want time.Duration
		ok   bool
	}{
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond, true},
		{http.Header{"Retry-After": {"Mon, 26 Jan 2026 19:30:20 GMT"}}, 20 * time.Second, true},
		{http.Header{"Retry-After": {"Mon, 26 Jan 2026 19:29:00 GMT"}}, 0, true},
		{http.Header{"Retry-After-Ms": {"20"}}, 20 * time.Millisecond, true},
		{http.Header{"Retry-After": {"soon"}}, 0, false},
		{http.Header{"Retry-After": {"-4"}}, 0, false},
		{nil, 0, false},
	} {
		got, ok := retryAfter(tc.h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%v) = %v, %v; want %v, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestBackoffCapped(t *testing.T) {
	c := New(Config{MaxRetryWait: 10 * time.Second})
	for n := range 40 {
		d := c.backoff(n, &Error{})
		if d <= 0 || d > 10*time.Second {
			t.Fatalf("backoff(%d) = %v", n, d)
		}
	}
	if d := New(Config{}).backoff(30, &Error{}); d < 15*time.Second || d > 30*time.Second {
		t.Errorf("backoff(30) = %v, want capped at 30s with jitter", d)
	}
}

var crBeforeLF = regexp.MustCompile("\r+\n")

// chunkReader hands on at most n bytes a read.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// What the filter hands on does not depend on how the body came in reads
// (but for CRs before a LF: a CR LF split between two reads loses its CR,
// where a joined line may have put a CR of its own), and it always comes
// to an end.
func FuzzSSEFilter(f *testing.F) {
	f.Add("data: {\"a\":1}\n\ndata: [DONE]\n\n", uint8(1))
	f.Add(": ping\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n", uint8(3))
	f.Add("data: {\"error\":\ndata: {\"message\":\"m\"}}\n\n", uint8(7))
	f.Add("data: {\"a\":\rdata: 1}\r\r<html>\n", uint8(2))
	f.Add("data: {\"a\":\"}\"\ndata: {\"b\":2}\n", uint8(5))
	f.Fuzz(func(t *testing.T, body string, chunk uint8) {
		read := func(r io.Reader) (string, bool) {
			sf := newSSEFilter(io.NopCloser(r))
			defer sf.Close()
			out, err := io.ReadAll(sf)
			return crBeforeLF.ReplaceAllString(string(out), "\n"), err != nil
		}
		whole, wholeErr := read(strings.NewReader(body))
		inReads, readsErr := read(chunkReader{strings.NewReader(body), int(chunk%16) + 1})
		if whole != inReads || wholeErr != readsErr {
			t.Fatalf("body %q: at once %q (failed %v), in reads of %d %q (failed %v)", body, whole, wholeErr, chunk%16+1, inReads, readsErr)
		}
	})
}

// A long data line is judged in the pieces it is read in, and the pieces
// must tell what the whole line tells: an escape or a string split between
// them is followed across.
func TestObjectScanInPieces(t *testing.T) {
	for _, tc := range []struct {
		in    string
		whole bool
	}{
		{`{"a":1}`, true},
		{"{\"a\":\"}\"}\r\n", true},
		{`{"a":"\"}"}`, true},
		{`{"a":"\\"}`, true},
		{`{"a":"\\\"}"}`, true},
		{`{"a":[{"b":"]"}]} `, true},
		{`{"a":1}}`, false},
		{`{"a":1} x`, false},
		{`{"a":"}"`, false},
		{`{"a":"\"}`, false},
		{`{"a":[1,{"b":2}`, false},
		{`{"a":{"b":"x"}}`, true},
		{`{"content":"many words"}}`, false},
	} {
		if got := wholeObject([]byte(tc.in)); got != tc.whole {
			t.Errorf("wholeObject(%s) = %v, want %v", tc.in, got, tc.whole)
		}
		for cut1 := 0; cut1 <= len(tc.in); cut1++ {
			for cut2 := cut1; cut2 <= len(tc.in); cut2++ {
				var o objectScan
				o.feed([]byte(tc.in[:cut1]))
				o.feed([]byte(tc.in[cut1:cut2]))
				o.feed([]byte(tc.in[cut2:]))
				if o.whole() != tc.whole {
					t.Fatalf("%s fed as %q %q %q: whole %v, want %v", tc.in, tc.in[:cut1], tc.in[cut1:cut2], tc.in[cut2:], o.whole(), tc.whole)
				}
			}
		}
	}
}
