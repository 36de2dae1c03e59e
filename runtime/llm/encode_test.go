package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	openai "github.com/sashabaranov/go-openai"
)

// chatRequest maps a Request to go-openai's form, as the client did before
// it encoded bodies itself: the reference encodeBody must match.
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
		if om.Content == "" && (m.Role == RoleTool || m.Role == RoleUser || m.Role == RoleAssistant && len(m.ToolCalls) == 0) {
			om.Content = " "
		}
		if len(m.ToolCalls) > 0 {
			om.ToolCalls = make([]openai.ToolCall, len(m.ToolCalls))
			for j, tc := range m.ToolCalls {
				args := tc.Arguments
				if strings.TrimSpace(args) == "" {
					args = "{}"
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
	out := chatParams(req)
	out.Messages = msgs
	out.Tools = nil
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
	return out
}

// goOpenAIBody is the body go-openai sends for chatRequest(req).
func goOpenAIBody(req *Request, withUsage bool) ([]byte, error) {
	o := chatRequest(req)
	o.Stream = true
	if withUsage {
		o.StreamOptions = &openai.StreamOptions{IncludeUsage: true}
	}
	return json.Marshal(o)
}

// ourBody is the body the client sends for req.
func ourBody(req *Request, withUsage bool) ([]byte, error) {
	p := chatParams(req)
	body, err := encodeBody(req, p.Temperature)
	if err != nil {
		return nil, err
	}
	defer body.release()
	tail := tailPlain
	if withUsage {
		tail = tailWithUsage
	}
	r, err := body.reader(tail)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

// decodeJSON decodes with numbers kept as written, so a number formatted
// differently is a difference.
func decodeJSON(t testing.TB, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", trunc(string(b)), err)
	}
	if d.More() {
		t.Fatalf("trailing data after %s", trunc(string(b)))
	}
	return v
}

// checkSameBody checks that req encodes to what go-openai sent, with Tools
// and with the same tools as a ToolSet, with and without stream_options.
func checkSameBody(t testing.TB, req Request) {
	t.Helper()
	withSet := req
	withSet.ToolSet, withSet.Tools = NewToolSet(req.Tools), nil
	for _, withUsage := range []bool{true, false} {
		want, wantErr := goOpenAIBody(&req, withUsage)
		for _, r := range []*Request{&req, &withSet} {
			got, err := ourBody(r, withUsage)
			if (err != nil) != (wantErr != nil) {
				t.Fatalf("encodeBody error = %v, go-openai error = %v", err, wantErr)
			}
			if err != nil {
				continue
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON: %s", trunc(string(got)))
			}
			if g, w := decodeJSON(t, got), withCallNames(decodeJSON(t, want)); !reflect.DeepEqual(g, w) {
				t.Fatalf("toolSet=%v withUsage=%v:\n got %s\nwant %s", r.ToolSet != nil, withUsage, got, want)
			}
		}
	}
}

// withCallNames adds "name":"" to the function of each tool call in a
// decoded go-openai body that has none: go-openai leaves an empty name out,
// which the schema does not allow, and swarmdeck sends it.
func withCallNames(body any) any {
	msgs, _ := body.(map[string]any)["messages"].([]any)
	for _, m := range msgs {
		calls, _ := m.(map[string]any)["tool_calls"].([]any)
		for _, c := range calls {
			if fn, ok := c.(map[string]any)["function"].(map[string]any); ok {
				if _, named := fn["name"]; !named {
					fn["name"] = ""
				}
			}
		}
	}
	return body
}

func f32(f float32) *float32 { return &f }

func TestEncodeBodyMatchesGoOpenAI(t *testing.T) {
	tools := []Tool{
		{Name: "read_file", Description: "Read a file <of the workspace> & show it.", Parameters: json.RawMessage(`{
			"type": "object",
			"properties": {"path": {"type": "string", "description": "Path, e.g. \"a/b.go\" — relative"}},
			"required": ["path"]
		}`)},
		{Name: "get_task_plan", Description: "Show the plan."},
		{Name: "nulled", Parameters: json.RawMessage(" null\n")},
		{Name: "spaces", Description: "", Parameters: json.RawMessage("  \t")},
		{Name: "weird \"name\"\n", Description: "bad \xff byte, line\u2028separator", Parameters: json.RawMessage(`{"enum":["<>&","\u00e9"]}`)},
	}
	history := []Message{
		{Role: RoleSystem, Content: "You are the planner.\n\tQuote \"this\" and \\that\\."},
		{Role: RoleUser, Content: ""},
		{Role: RoleAssistant, Content: "", ToolCalls: []ToolCall{
			{ID: "call_1", Name: "read_file", Arguments: `{"path": "a.go"}`},
			{ID: "", Name: "", Arguments: ""},
			{ID: "call_3", Name: "x", Arguments: " \n\t\r\v\f "},
			{ID: "call_4", Name: "x", Arguments: "\u00a0\u3000"},
			{ID: "call_5", Name: "x", Arguments: "\u200b"}, // not a space to TrimSpace
		}},
		{Role: RoleTool, ToolCallID: "call_1", Name: "read_file", Content: "package a\x00\x01\x1f\x7f"},
		{Role: RoleTool, ToolCallID: "call_2", Content: ""},
		{Role: RoleAssistant, Content: "emoji 😀, invalid \xc3\x28 and \xed\xa0\x80 surrogate, \u2029 end"},
		{Role: "developer", Content: ""},
		{Role: "", Content: "no role", Name: "n"},
	}
	for _, tc := range []struct {
		name string
		req  Request
	}{
		{"no messages", Request{Model: "m"}},
		{"empty messages", Request{Model: "m", Messages: []Message{}}},
		{"history and tools", Request{Model: "qwen3:8b", Messages: history, Tools: tools}},
		{"temperature 0", Request{Model: "m", Messages: history[:2], Temperature: f32(0)}},
		{"temperature 0.7", Request{Model: "m", Temperature: f32(0.7)}},
		{"temperature 1", Request{Model: "m", Temperature: f32(1)}},
		{"temperature negative", Request{Model: "m", Temperature: f32(-0.25)}},
		{"temperature tiny", Request{Model: "m", Temperature: f32(3.5e-7)}},
		{"temperature huge", Request{Model: "m", Temperature: f32(2.5e21)}},
		{"temperature NaN", Request{Model: "m", Temperature: f32(float32(math.NaN()))}},
		{"max tokens", Request{Model: "llama3", MaxTokens: 512}},
		{"max tokens of a reasoning model", Request{Model: "o3-mini", MaxTokens: 100}},
		{"model needing escapes", Request{Model: "a\"b\\c\x01"}},
		{"invalid schema", Request{Model: "m", Tools: []Tool{{Name: "broken", Parameters: json.RawMessage(`{"type":`)}}}},
		{"realistic", realisticRequest(t)},
	} {
		t.Run(tc.name, func(t *testing.T) { checkSameBody(t, tc.req) })
	}
}

// Whatever the text of a request, its body decodes to what go-openai would
// have sent, and a schema is refused exactly when go-openai refuses it.
func FuzzEncodeBody(f *testing.F) {
	f.Add("qwen3", "hello \"world\"", "call_1", `{"a":1}`, "read_file", "Reads.", `{"type":"object"}`, uint32(0x3f000000), 100)
	f.Add("o1", "", "", " ", "", "", "", uint32(0x7fc00000), 0)
	f.Add("m", "\xff\u2028", "\x00", "\t", "n\"", "<&>", `{"type":`, uint32(0), -3)
	f.Fuzz(func(t *testing.T, model, content, id, args, name, desc, params string, tempBits uint32, maxTokens int) {
		temp := math.Float32frombits(tempBits)
		req := Request{
			Model: model,
			Messages: []Message{
				{Role: RoleSystem, Content: desc},
				{Role: RoleUser, Content: content},
				{Role: RoleAssistant, Content: content, ToolCalls: []ToolCall{{ID: id, Name: name, Arguments: args}}},
				{Role: RoleTool, ToolCallID: id, Name: name, Content: args},
			},
			Tools:       []Tool{{Name: name, Description: desc, Parameters: json.RawMessage(params)}},
			Temperature: &temp,
			MaxTokens:   maxTokens,
		}
		checkSameBody(t, req)
	})
}

func TestToolSet(t *testing.T) {
	tools := agentTools(t)
	s := NewToolSet(tools)
	if s.Len() != len(tools) || s.Err() != nil {
		t.Fatalf("Len = %d, Err = %v", s.Len(), s.Err())
	}
	// The set keeps its own copy: changing the tools afterwards changes
	// nothing sent.
	before, _ := ourBody(&Request{Model: "m", ToolSet: s}, true)
	tools[0].Parameters[0] = ' '
	tools[0].Name = "changed"
	after, _ := ourBody(&Request{Model: "m", ToolSet: s}, true)
	if !bytes.Equal(before, after) {
		t.Error("the body changed with the tools the set was built from")
	}
	var nilSet *ToolSet
	if nilSet.Len() != 0 || nilSet.Err() != nil {
		t.Error("a nil ToolSet is not an empty set")
	}
	bad := NewToolSet([]Tool{{Name: "ok"}, {Name: "broken", Parameters: json.RawMessage(`{"type": "object",}`)}})
	if err := bad.Err(); err == nil || !strings.Contains(err.Error(), `"broken"`) {
		t.Errorf("Err() = %v, want it to name the broken tool", err)
	}
}

// A ToolSet replaces Tools when both are set, also in usage estimates.
func TestToolSetWinsOverTools(t *testing.T) {
	set := NewToolSet([]Tool{{Name: "from_set", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}})
	req := Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "x"}},
		Tools: []Tool{{Name: "from_tools"}, {Name: "second"}}, ToolSet: set}
	body, err := ourBody(&req, false)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body, []byte(`"from_set"`)) || bytes.Contains(body, []byte("from_tools")) {
		t.Errorf("body = %s", body)
	}
	onlySet := Request{Model: "m", Messages: req.Messages, Tools: []Tool{{Name: "from_set", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}}
	if got, want := estimateUsage(&req, &Response{}, 0), estimateUsage(&onlySet, &Response{}, 0); got != want {
		t.Errorf("estimate with ToolSet = %+v, with the same Tools = %+v", got, want)
	}
}

func TestPreparedBodyReaders(t *testing.T) {
	req := Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: "hi"}}}
	p := chatParams(&req)
	body, err := encodeBody(&req, p.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true` + tailWithUsage
	r1, _ := body.reader(tailWithUsage)
	r2, _ := body.reader(tailWithUsage)
	for _, r := range []io.ReadCloser{r1, r2} {
		// One byte at a time crosses from the body into its tail.
		var got []byte
		buf := make([]byte, 1)
		for {
			n, err := r.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if string(got) != want || body.size(tailWithUsage) != int64(len(want)) {
			t.Errorf("read %s (size %d), want %s", got, body.size(tailWithUsage), want)
		}
	}
	r1.Close()
	r1.Close() // a second Close must not drop another reference
	if _, err := r1.Read(make([]byte, 8)); err == nil {
		t.Error("Read after Close succeeded")
	}
	body.release()
	// The call is over, but r2 is open and keeps the body alive.
	if r3, err := body.reader(tailPlain); err != nil {
		t.Errorf("reader while r2 is open: %v", err)
	} else {
		r3.Close()
	}
	r2.Close()
	if _, err := body.reader(tailPlain); !errors.Is(err, errBodyReleased) {
		t.Errorf("reader after the last release: err = %v", err)
	}
}

// bodyConn sends what net/http has not buffered of a body straight from
// the prepared buffer: after any prefix was read, under the declared
// length, and never after the reader was closed.
func TestBodyConnWritesTheRest(t *testing.T) {
	req := Request{Model: "m", Messages: []Message{{Role: RoleUser, Content: strings.Repeat("x", 100)}}}
	p := chatParams(&req)
	body, err := encodeBody(&req, p.Temperature)
	if err != nil {
		t.Fatal(err)
	}
	defer body.release()
	whole, size := string(body.data)+tailWithUsage, body.size(tailWithUsage)
	for _, prefix := range []int{0, 10, len(body.data), len(body.data) + 3, int(size)} {
		for _, limit := range []int64{size, size - 5, 7} {
			r, _ := body.reader(tailWithUsage)
			got := make([]byte, prefix)
			if _, err := io.ReadFull(r, got); err != nil && prefix > 0 {
				t.Fatal(err)
			}
			var out bytes.Buffer
			conn := &bodyConn{Conn: &bufferConn{w: &out}}
			lr := &io.LimitedReader{R: r, N: min(limit, size-int64(prefix))}
			want := min(lr.N, size-int64(prefix))
			n, err := conn.ReadFrom(lr)
			if err != nil || n != want || lr.N != 0 {
				t.Fatalf("prefix %d limit %d: wrote %d (left %d), err %v; want %d", prefix, limit, n, lr.N, err, want)
			}
			got = append(got, out.Bytes()...)
			if string(got) != whole[:prefix+int(want)] {
				t.Fatalf("prefix %d limit %d: sent %q", prefix, limit, got)
			}
			r.Close()
			if _, err := conn.ReadFrom(&io.LimitedReader{R: r, N: 1}); !errors.Is(err, errBodyReleased) {
				t.Fatalf("write after Close: err = %v", err)
			}
		}
	}
	// Any other reader is copied as usual.
	var out bytes.Buffer
	if n, err := (&bodyConn{Conn: &bufferConn{w: &out}}).ReadFrom(strings.NewReader("plain")); err != nil || n != 5 || out.String() != "plain" {
		t.Fatalf("plain copy: %d %v %q", n, err, out.String())
	}
}

// bufferConn is a net.Conn that writes into w.
type bufferConn struct {
	net.Conn
	w io.Writer
}

func (c *bufferConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// Every attempt of a call sends the same body, with the length declared,
// and the stream_options fallback sends it without only that field.
func TestRetriesResendTheBody(t *testing.T) {
	type sent struct {
		body          []byte
		contentLength int64
		chunked       bool
	}
	var (
		mu     sync.Mutex
		bodies []sent
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, sent{b, r.ContentLength, len(r.TransferEncoding) > 0})
		n := len(bodies)
		mu.Unlock()
		switch n {
		case 1:
			jsonError(w, 503, "", "", "busy")
		case 2:
			jsonError(w, 400, "invalid_request_error", "", "Unrecognized request argument supplied: stream_options")
		default:
			simpleAnswer(w)
		}
	}))
	defer srv.Close()
	rec := &sleepRecorder{}
	c := New(Config{BaseURL: srv.URL + "/v1", MaxRetries: 3, Sleep: rec.sleep})
	req := realisticRequest(t)
	req.ToolSet, req.Tools = NewToolSet(req.Tools), nil
	if resp := mustStream(t, c, req, nil); resp.Attempts != 3 {
		t.Fatalf("attempts = %d", resp.Attempts)
	}
	mu.Lock()
	defer mu.Unlock()
	want, _ := goOpenAIBody(&Request{Model: req.Model, Messages: req.Messages, Tools: agentTools(t),
		Temperature: req.Temperature, MaxTokens: req.MaxTokens}, true)
	for i, s := range bodies {
		if s.chunked || s.contentLength != int64(len(s.body)) {
			t.Errorf("request %d: Content-Length %d for %d bytes, chunked=%v", i, s.contentLength, len(s.body), s.chunked)
		}
	}
	if !reflect.DeepEqual(decodeJSON(t, bodies[0].body), decodeJSON(t, want)) {
		t.Errorf("first body differs from go-openai's:\n got %s\nwant %s", trunc(string(bodies[0].body)), trunc(string(want)))
	}
	if !bytes.Equal(bodies[1].body, bodies[0].body) {
		t.Error("the retry sent a different body")
	}
	without := bytes.Replace(bodies[0].body, []byte(`,"stream_options":{"include_usage":true}`), nil, 1)
	if !bytes.Equal(bodies[2].body, without) || bytes.Equal(without, bodies[0].body) {
		t.Errorf("after the fallback: %s", trunc(string(bodies[2].body)))
	}
}

// A redirect that keeps the method makes net/http send the body again,
// through GetBody.
func TestRedirectResendsTheBody(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			http.Redirect(w, r, "/v1/chat/completions?moved=1", http.StatusTemporaryRedirect)
			return
		}
		simpleAnswer(w)
	})
	c, _ := newTestClient(fs)
	mustStream(t, c, userRequest("follow me"), nil)
	if fs.requests.Load() != 2 || !reflect.DeepEqual(fs.body(0), fs.body(1)) || fs.body(1) == nil {
		t.Errorf("requests = %d, bodies %v and %v", fs.requests.Load(), fs.body(0), fs.body(1))
	}
}

// go-openai's checks of model and parameters still refuse a request before
// it is sent, tools given as a ToolSet included.
func TestClientSideChecksKept(t *testing.T) {
	set := NewToolSet([]Tool{{Name: "read_file"}})
	for _, tc := range []struct {
		name string
		req  Request
		want error
	}{
		{"tools with a GPT-6 reasoning model", Request{Model: openai.GPT6Astra, ToolSet: set}, openai.ErrReasoningToolsRequireResponses},
		{"legacy tools with a GPT-6 reasoning model", Request{Model: openai.GPT6Astra, Tools: []Tool{{Name: "read_file"}}}, openai.ErrReasoningToolsRequireResponses},
		{"temperature with a GPT-6 reasoning model", Request{Model: openai.GPT6Sol, Temperature: f32(0.5)}, openai.ErrReasoningSamplingUnsupported},
		{"temperature of o3", Request{Model: "o3-mini", Temperature: f32(0.5)}, openai.ErrReasoningModelLimitationsOther},
		{"completion-only model", Request{Model: "text-davinci-003"}, openai.ErrChatCompletionInvalidModel},
		{"NaN temperature", Request{Model: "m", Temperature: f32(float32(math.NaN()))}, nil},
		{"broken schema in a ToolSet", Request{Model: "m", ToolSet: NewToolSet([]Tool{{Name: "b", Parameters: json.RawMessage(`[`)}})}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
			c, rec := newTestClient(fs)
			tc.req.Messages = []Message{{Role: RoleUser, Content: "x"}}
			_, err := c.Stream(t.Context(), tc.req, nil)
			e := asError(t, err)
			if e.Kind != BadRequest || e.Retryable || e.Attempts != 1 || fs.requests.Load() != 0 || len(rec.got()) != 0 {
				t.Errorf("error = %+v, requests = %d", e, fs.requests.Load())
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error = %v, want %v", err, tc.want)
			}
		})
	}
	// Without tools or temperature the same model is let through.
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { simpleAnswer(w) })
	c, _ := newTestClient(fs)
	mustStream(t, c, Request{Model: openai.GPT6Astra, Messages: []Message{{Role: RoleUser, Content: "x"}}}, nil)
}

// Many sessions share one ToolSet and the body pool while servers answer
// some calls early, without reading the body: every call still sends its
// own messages. Run with -race: a buffer reused while net/http still reads
// it shows up here.
func TestConcurrentCallsKeepTheirBodies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Early") == "1" {
			// Answer before reading the body; the client is still writing it.
			jsonError(w, 503, "", "", "busy")
			return
		}
		var body struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			Tools []json.RawMessage `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Messages) == 0 {
			jsonError(w, 400, "", "", fmt.Sprintf("bad body: %v", err))
			return
		}
		s := startSSE(w)
		s.data(contentChunk(fmt.Sprintf("%s|%d", body.Messages[len(body.Messages)-1].Content, len(body.Tools))))
		s.data(finishChunk("stop"))
		s.done()
	}))
	defer srv.Close()
	base := realisticRequest(t)
	set := NewToolSet(base.Tools)
	const calls = 24
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			size := 100 + i*37
			if i%2 == 1 {
				size = 600 << 10 // more than the socket buffers take at once
			}
			marker := fmt.Sprintf("call %d: %s", i, strings.Repeat(string(rune('a'+i%26)), size))
			rec := &sleepRecorder{}
			c := New(Config{BaseURL: srv.URL + "/v1", MaxRetries: 2, Sleep: rec.sleep,
				Headers: map[string]string{"X-Early": fmt.Sprint(i % 2)}})
			req := base
			req.Tools, req.ToolSet = nil, set
			req.Messages = append(append([]Message(nil), base.Messages...), Message{Role: RoleUser, Content: marker})
			resp, err := c.Stream(t.Context(), req, nil)
			if i%2 == 1 {
				// Always answered early. Depending on when the server
				// closes the connection, the client sees its 503 or a
				// failed write.
				if e := asError(t, err); (e.Status != 503 && e.Kind != Network) || e.Attempts != 3 {
					t.Errorf("call %d: error = %+v", i, e)
				}
				return
			}
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			if want := fmt.Sprintf("%s|%d", marker, set.Len()); resp.Content != want {
				t.Errorf("call %d got another call's body: %.60q", i, resp.Content)
			}
		})
	}
	wg.Wait()
}

// lateTransport answers at once and reads each request body only after
// the test lets it, as net/http may do: it can still be writing a body
// after the response came, and closes it in its own time.
type lateTransport struct {
	t       *testing.T
	release chan struct{}
	wg      sync.WaitGroup
}

func (tr *lateTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	marker := r.Header.Get("X-Marker")
	tr.wg.Go(func() {
		<-tr.release
		defer r.Body.Close()
		var body struct {
			Messages []Message `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			tr.t.Errorf("%s: body unreadable after the call: %v", marker, err)
			return
		}
		if got := body.Messages[len(body.Messages)-1].Content; got != marker {
			tr.t.Errorf("%s: read another call's body (%.40q)", marker, got)
		}
	})
	return &http.Response{StatusCode: http.StatusServiceUnavailable, Header: http.Header{}, Request: r,
		Body: io.NopCloser(strings.NewReader(`{"error":{"message":"busy"}}`))}, nil
}

// A body net/http has not closed yet is never handed to another call, even
// after its own call returned.
func TestBodyKeptUntilTransportCloses(t *testing.T) {
	tr := &lateTransport{t: t, release: make(chan struct{})}
	base := realisticRequest(t)
	base.ToolSet, base.Tools = NewToolSet(base.Tools), nil
	for i := range 20 {
		marker := fmt.Sprintf("call %d %s", i, strings.Repeat("x", i*50))
		c := New(Config{BaseURL: "http://llm.invalid/v1", HTTPClient: &http.Client{Transport: tr},
			Headers: map[string]string{"X-Marker": marker}})
		req := base
		req.Messages = append(append([]Message(nil), base.Messages...), Message{Role: RoleUser, Content: marker})
		if _, err := c.Stream(t.Context(), req, nil); asError(t, err).Status != 503 {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	close(tr.release)
	tr.wg.Wait()
}

// An empty answer in the history (a model that said nothing) is sent with
// content: OpenAI, Mistral and others refuse an assistant message that has
// neither content nor tool calls.
func TestEmptyAnswerSentWithContent(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("ok"))
		s.data(finishChunk("stop"))
		s.done()
	})
	c, _ := newTestClient(fs)
	req := userRequest("x")
	req.Messages = append(req.Messages, Message{Role: RoleAssistant}, Message{Role: RoleUser, Content: "Your last answer was empty."})
	mustStream(t, c, req, nil)
	msgs, _ := fs.body(0)["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("messages = %v", msgs)
	}
	if m, _ := msgs[1].(map[string]any); m["role"] != "assistant" || m["content"] == nil {
		t.Errorf("the empty answer went out as %v, want it with content", m)
	}
}
