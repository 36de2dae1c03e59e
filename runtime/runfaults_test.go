package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Fault tests at the run level: a whole headless run against an
// OpenAI-compatible server that misbehaves, at one chosen request, the way
// real servers and proxies do. The llm package tests the client against
// each fault; these check what the user of a run sees: the run ends, a
// fault that retrying fixes leaves a completed run with nothing lost or
// doubled, and one it cannot fix fails the session with its reason in the
// session's error, the run.finished event, the progress on stderr and the
// exit status, with every message stored before it intact.

// fltPolicy is a small swarm: the root spawns a worker and, once the
// worker's <task_result> is in, writes its final answer quoting it; the
// worker reads a file and answers. Each of them always takes the same
// turns, so a retried request must leave exactly these messages. The worker
// gives its answer only once the root has asked for its waiting turn, so
// the result always arrives after that turn (as a wake-up), whatever the
// timing.
func fltPolicy() scripted.Policy {
	var once sync.Once
	rootWaiting := make(chan struct{})
	return scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		role, _ := recRole(req)
		turn := recTurn(req)
		if role == "orchestrator" {
			result := ""
			for _, m := range req.Messages {
				if m.Role == "user" && strings.HasPrefix(m.Content, "<task_result ") {
					result = m.Content
				}
			}
			switch {
			case turn == 0:
				return scripted.Reply{Content: "Starting a worker.", ToolCalls: []scripted.Call{{Name: "sessions_spawn",
					Args: map[string]any{"task": "Read the README and report", "label": "worker", "agent": "researcher"}}}}
			case turn == 1:
				once.Do(func() { close(rootWaiting) })
				// The result is here already only when this turn is asked
				// again, after the worker finished (a resumed run).
				if result == "" {
					return scripted.Reply{Content: "Waiting for the worker to report back."}
				}
			}
			return scripted.Reply{Content: "Final answer. The worker said: " + result}
		}
		if turn == 0 {
			return scripted.Reply{Content: "Reading the README first.", ToolCalls: []scripted.Call{{Name: "read_file", Args: map[string]any{"path": "README.md"}}}}
		}
		select {
		case <-rootWaiting:
		case <-time.After(30 * time.Second):
		}
		return scripted.Reply{Content: "The README says this is a demo project."}
	})
}

// Where a fault strikes: the request of this role's turn.
type fltTarget struct {
	role string // orchestrator or researcher
	turn int
}

var (
	rootTurn0   = fltTarget{"orchestrator", 0}
	rootTurn1   = fltTarget{"orchestrator", 1}
	rootTurn2   = fltTarget{"orchestrator", 2}
	workerTurn0 = fltTarget{"researcher", 0}
	workerTurn1 = fltTarget{"researcher", 1}
)

// fltFault answers one request wrongly. rec is what the scripted model
// would have answered (the SSE stream of the right reply), for faults that
// damage a stream instead of replacing it.
type fltFault func(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte)

// fltDouble is the misbehaving server: the scripted model, except that the
// first request for the target gets the fault. Before serving it, it
// exports the run, so the test can check that what was stored before the
// fault survives it.
type fltDouble struct {
	t      *testing.T
	inner  http.Handler
	target fltTarget
	fault  fltFault
	always bool // every request for the target gets the fault, not only the first
	before func() *store.Export

	mu       sync.Mutex
	fired    bool
	hits     int // requests for the target, the faulty one included
	snapshot *store.Export
}

func (d *fltDouble) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		d.inner.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	json.Unmarshal(body, &req)
	sreq := &scripted.Request{}
	for _, m := range req.Messages {
		sreq.Messages = append(sreq.Messages, scripted.Message{Role: m.Role, Content: m.Content})
	}
	role, _ := recRole(sreq)
	d.mu.Lock()
	onTarget := role == d.target.role && recTurn(sreq) == d.target.turn
	hit := onTarget && (!d.fired || d.always)
	if onTarget {
		d.hits++
		d.fired = true
	}
	d.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !hit {
		d.inner.ServeHTTP(w, r)
		return
	}
	d.mu.Lock()
	first := d.snapshot == nil
	d.mu.Unlock()
	if first {
		snap := d.before()
		d.mu.Lock()
		d.snapshot = snap
		d.mu.Unlock()
	}
	rec := httptest.NewRecorder()
	d.inner.ServeHTTP(rec, r.Clone(r.Context()))
	d.fault(d.t, w, r, rec.Body.Bytes())
}

func (d *fltDouble) result() (hits int, snap *store.Export) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits, d.snapshot
}

// ---- the faults ----

func fltStatus(status int, header map[string]string, body string) fltFault {
	return func(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		if strings.HasPrefix(body, "{") {
			w.Header().Set("Content-Type", "application/json")
		} else {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// fltRetryAfterDate is a 429 whose Retry-After is an HTTP date, computed
// when the fault strikes.
func fltRetryAfterDate() fltFault {
	return func(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
		date := time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat)
		fltStatus(429, map[string]string{"Retry-After": date}, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`)(t, w, r, rec)
	}
}

// fltEvents splits a recorded SSE stream into its events ("data: ...").
func fltEvents(rec []byte) []string {
	var out []string
	for _, ev := range strings.Split(string(rec), "\n\n") {
		if ev = strings.TrimSpace(ev); ev != "" {
			out = append(out, ev)
		}
	}
	return out
}

func fltStreamHead(w http.ResponseWriter) http.Flusher {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	f.Flush()
	return f
}

// fltKeepAlive sends SSE comment lines before and between the events, as
// OpenRouter and proxies do while a model thinks.
func fltKeepAlive(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
	f := fltStreamHead(w)
	io.WriteString(w, ": OPENROUTER PROCESSING\n\n: keep-alive\n\n")
	f.Flush()
	for _, ev := range fltEvents(rec) {
		io.WriteString(w, ": keep-alive\n\n"+ev+"\n\n")
		f.Flush()
	}
}

// fltStall sends the first event, then nothing, for longer than the idle
// timeout; it gives up when the client does.
func fltStall(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
	f := fltStreamHead(w)
	io.WriteString(w, fltEvents(rec)[0]+"\n\n")
	f.Flush()
	select {
	case <-r.Context().Done():
	case <-time.After(30 * time.Second):
		t.Errorf("the client waited 30s on a stalled stream")
	}
}

// fltReset sends half the events, then resets the connection (RST, not an
// orderly close), as a crashing server or a proxy dropping it does.
func fltReset(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
	f := fltStreamHead(w)
	evs := fltEvents(rec)
	for _, ev := range evs[:max(1, len(evs)/2)] {
		io.WriteString(w, ev+"\n\n")
	}
	f.Flush()
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

// fltErrorEvent sends the first events, then an error event, then ends the
// stream, as OpenAI does when the model fails mid-answer.
var fltErrorEvent = fltErrorEventOf(`{"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}`)

func fltErrorEventOf(payload string) fltFault {
	return func(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
		f := fltStreamHead(w)
		evs := fltEvents(rec)
		for _, ev := range evs[:max(1, len(evs)/2)] {
			io.WriteString(w, ev+"\n\n")
		}
		io.WriteString(w, "data: "+payload+"\n\n")
		f.Flush()
	}
}

// fltContentFiltered sends the first event, then ends the answer with
// finish_reason "content_filter", as Azure OpenAI does when its filter
// stops a model mid-answer.
func fltContentFiltered(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
	f := fltStreamHead(w)
	io.WriteString(w, fltEvents(rec)[0]+"\n\n")
	io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}]}`+"\n\ndata: [DONE]\n\n")
	f.Flush()
}

// fltArgsAsObject sends the reply with each tool call's arguments as a
// JSON object instead of a string holding one, as some servers do.
func fltArgsAsObject(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
	f := fltStreamHead(w)
	changed := 0
	for _, ev := range fltEvents(rec) {
		data, ok := strings.CutPrefix(ev, "data: ")
		var chunk map[string]any
		if ok && json.Unmarshal([]byte(data), &chunk) == nil {
			choices, _ := chunk["choices"].([]any)
			for _, c := range choices {
				delta, _ := c.(map[string]any)["delta"].(map[string]any)
				calls, _ := delta["tool_calls"].([]any)
				for _, tc := range calls {
					fn, _ := tc.(map[string]any)["function"].(map[string]any)
					if s, ok := fn["arguments"].(string); ok && strings.HasPrefix(s, "{") {
						fn["arguments"] = json.RawMessage(s)
						changed++
					}
				}
			}
			b, _ := json.Marshal(chunk)
			ev = "data: " + string(b)
		}
		io.WriteString(w, ev+"\n\n")
		f.Flush()
	}
	if changed == 0 {
		t.Errorf("the reply had no tool call arguments to send as an object:\n%s", rec)
	}
}

// ---- running one faulty run ----

type fltRun struct {
	hits     int // requests for the faulty turn: 1 when not retried
	x        *store.Export
	events   []event.Event
	code     int
	log      string
	snapshot *store.Export
}

// fltSwarm runs fltPolicy headless against the double and returns what the
// user gets.
func fltSwarm(t *testing.T, target fltTarget, fault fltFault, asJSON bool) fltRun {
	t.Helper()
	return fltSwarmWith(t, target, fault, asJSON, false, 4)
}

// fltSwarmWith is fltSwarm with a fault that strikes every request for the
// target (always) and the client's max_retries.
func fltSwarmWith(t *testing.T, target fltTarget, fault fltFault, asJSON, always bool, retries int) fltRun {
	t.Helper()
	e, d := fltEngine(t, target, fault, always, retries)
	events, code, log := recRun(t, e, asJSON, func(ctx context.Context) (*Run, error) { return e.Start(ctx, "Report on the README") })
	x, err := e.Export(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	hits, snap := d.result()
	if hits == 0 {
		t.Fatalf("the fault never struck: no request of %s turn %d", target.role, target.turn)
	}
	return fltRun{hits: hits, x: x, events: events, code: code, log: log, snapshot: snap}
}

// fltEngine is an engine on the double, with a workspace holding the
// README the worker reads, a 1 s stream idle timeout and the client's
// max_retries.
func fltEngine(t *testing.T, target fltTarget, fault fltFault, always bool, retries int) (*Engine, *fltDouble) {
	t.Helper()
	srv := scripted.New(scripted.Config{Policy: fltPolicy()})
	var e *Engine
	d := &fltDouble{t: t, inner: srv.Handler(), target: target, fault: fault, always: always, before: func() *store.Export {
		x, err := e.Export(context.Background(), "")
		if err != nil {
			t.Errorf("export before the fault: %v", err)
		}
		return x
	}}
	hs := httptest.NewServer(d)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	e = recEngine(t, t.TempDir(), hs.URL+"/v1", func(c *config.Config) {
		c.Limits.StreamIdleTimeout = config.Duration(time.Second)
		c.Limits.MaxRetries = retries
	})
	if err := os.WriteFile(filepath.Join(e.Config().Workspace, "README.md"), []byte("# Demo project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e, d
}

// intact checks that every message stored before the fault is still stored,
// at the same place, unchanged.
func (fr fltRun) intact(t *testing.T) {
	t.Helper()
	if fr.snapshot == nil {
		t.Fatal("no export was taken before the fault")
	}
	for _, before := range fr.snapshot.Sessions {
		after := findSession(fr.x, before.ID)
		for i, m := range before.Messages {
			if i >= len(after.Messages) {
				t.Errorf("session %s lost message %d (%s) stored before the fault", before.ID, i, m.Role)
				break
			}
			a := after.Messages[i]
			if a.Role != m.Role || a.Content != m.Content || len(a.ToolCalls) != len(m.ToolCalls) || a.ToolCallID != m.ToolCallID {
				t.Errorf("session %s: message %d changed after the fault:\nbefore %s %.100q\nafter  %s %.100q", before.ID, i, m.Role, m.Content, a.Role, a.Content)
			}
		}
	}
}

func (fr fltRun) finished(t *testing.T) *event.RunInfo {
	t.Helper()
	if n := len(fr.events); n > 0 && fr.events[n-1].Type == event.RunFinished {
		return fr.events[n-1].Run
	}
	t.Fatalf("the last --json event is not run.finished")
	return nil
}

// assistantTexts lists a session's answers, the tool calls named.
func assistantTexts(s *store.ExportSession) []string {
	var out []string
	for _, m := range s.Messages {
		if m.Role != "assistant" {
			continue
		}
		text := m.Content
		for _, c := range m.ToolCalls {
			text += " [" + c.Name + " " + c.Arguments + "]"
		}
		out = append(out, text)
	}
	return out
}

// Faults that retrying fixes: the run completes, each session has exactly
// the answers of a run without the fault (no partial or doubled answer from
// a failed attempt), every tool call worked, and what was stored before the
// fault is intact.
func TestRunRecoversFromRetryableServerFaults(t *testing.T) {
	rateLimited := `{"error":{"message":"Rate limit reached for requests","type":"requests","param":null,"code":"rate_limit_exceeded"}}`
	for _, tc := range []struct {
		name   string
		target fltTarget
		fault  fltFault
		tries  int // requests for the faulty turn: 2 when the fault makes the client retry
	}{
		{"429 Retry-After seconds", rootTurn1, fltStatus(429, map[string]string{"Retry-After": "1"}, rateLimited), 2},
		{"429 Retry-After HTTP date", workerTurn0, fltRetryAfterDate(), 2},
		{"429 retry-after-ms", rootTurn2, fltStatus(429, map[string]string{"retry-after-ms": "300"}, rateLimited), 2},
		{"500 JSON body", rootTurn0, fltStatus(500, nil, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`), 2},
		{"502 HTML body", workerTurn1, fltStatus(502, nil, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body></html>"), 2},
		{"503 JSON body", rootTurn1, fltStatus(503, nil, `{"error":{"message":"The engine is currently overloaded, please try again later","type":"server_error"}}`), 2},
		{"503 HTML body", workerTurn0, fltStatus(503, nil, "<!DOCTYPE html><html><body><h1>503 Service Unavailable</h1><p>No server is available to handle this request.</p></body></html>"), 2},
		{"keep-alive comments", rootTurn0, fltKeepAlive, 1},
		{"stall longer than the idle timeout", workerTurn1, fltStall, 2},
		{"connection reset mid-stream", rootTurn2, fltReset, 2},
		{"error event mid-stream", workerTurn0, fltErrorEvent, 2},
		{"arguments as a JSON object (spawn)", rootTurn0, fltArgsAsObject, 1},
		{"arguments as a JSON object (read_file)", workerTurn0, fltArgsAsObject, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fr := fltSwarm(t, tc.target, tc.fault, true)
			if fr.code != ExitOK || fr.x.Run.Status != RunCompleted {
				t.Fatalf("exit %d, run %s: %s", fr.code, fr.x.Run.Status, fr.x.Run.Error)
			}
			if info := fr.finished(t); info.Status != RunCompleted || info.Error != "" {
				t.Errorf("run.finished says %s (%s)", info.Status, info.Error)
			}
			fr.intact(t)
			if fr.hits != tc.tries {
				t.Errorf("the faulty turn was requested %d times, want %d", fr.hits, tc.tries)
			}
			// A retry is announced while it waits, and withdrawn after.
			noted, cleared := "", false
			for _, ev := range fr.events {
				switch {
				case ev.Type != event.SessionStatus || ev.Session == nil:
				case ev.Session.Retrying != "":
					noted = ev.Session.Retrying
				case noted != "":
					cleared = true
				}
			}
			if tc.tries == 2 && (!strings.HasPrefix(noted, "attempt 2 of 5 in ") || !strings.Contains(noted, "s: LLM ") || !cleared) {
				t.Errorf("the retry was announced as %q, then withdrawn: %v", noted, cleared)
			}
			if tc.tries == 1 && noted != "" {
				t.Errorf("a retry was announced for a call made once: %q", noted)
			}
			if len(fr.x.Sessions) != 2 {
				t.Fatalf("%d sessions, want the root and one worker", len(fr.x.Sessions))
			}
			root, worker := &fr.x.Sessions[0], &fr.x.Sessions[1]
			for _, s := range fr.x.Sessions {
				if s.Status != StatusCompleted {
					t.Errorf("session %s is %s: %s", s.ID, s.Status, s.Error)
				}
				for _, m := range s.Messages {
					if m.Role == "tool" && strings.HasPrefix(m.Content, `{"error"`) {
						t.Errorf("session %s: a tool call failed: %s", s.ID, m.Content)
					}
				}
			}
			wantRoot := []string{
				`Starting a worker. [sessions_spawn {"agent":"researcher","label":"worker","task":"Read the README and report"}]`,
				"Waiting for the worker to report back.",
			}
			for _, m := range root.Messages {
				if m.Role == "user" && strings.HasPrefix(m.Content, "<task_result ") {
					wantRoot = append(wantRoot, "Final answer. The worker said: "+m.Content)
				}
			}
			if got := assistantTexts(root); strings.Join(got, "\n") != strings.Join(wantRoot, "\n") ||
				!strings.Contains(got[2], "The README says this is a demo project.") {
				t.Errorf("root answers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantRoot, "\n"))
			}
			wantWorker := []string{`Reading the README first. [read_file {"path":"README.md"}]`, "The README says this is a demo project."}
			if got := assistantTexts(worker); strings.Join(got, "\n") != strings.Join(wantWorker, "\n") {
				t.Errorf("worker answers:\n%s", strings.Join(got, "\n"))
			}
		})
	}
}

// Faults that retrying cannot fix. Striking the root, they fail it and the
// run: the reason is in the root's error, in run.finished, on stderr, and
// the exit status is 1. Striking the worker, they fail the worker with the
// reason, the root gets a <task_result status="failed"> that carries it,
// and the root carries on to its final answer.
func TestRunReportsFatalServerFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fault  fltFault
		reason []string // all in the error the user sees
	}{
		{"insufficient_quota", fltStatus(429, nil, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`),
			[]string{"429", "You exceeded your current quota", "check the account's plan, billing or credits"}},
		{"context length exceeded", fltStatus(400, nil, `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your messages resulted in 9001 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`),
			[]string{"400", "maximum context length is 8192 tokens", "longer than the model's context window"}},
		{"context length as an error event mid-stream", fltErrorEventOf(`{"error":{"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","code":400}}`),
			[]string{"exceeds the available context size", "longer than the model's context window"}},
		{"401 bad key", fltStatus(401, nil, `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`),
			[]string{"401", "Incorrect API key provided", "check the API key"}},
		{"a login page with status 200", fltStatus(200, nil, `<html><head><title>Guest Wi-Fi</title></head><body><h1>Sign in to continue</h1></body></html>`),
			[]string{"200 OK with text/html, not an event stream", "Guest Wi-Fi Sign in to continue", "check that the base URL"}},
		{"an answer stopped by the content filter", fltContentFiltered,
			[]string{`content filter stopped the answer (finish_reason "content_filter")`}},
	} {
		has := func(s string) bool {
			for _, r := range tc.reason {
				if !strings.Contains(s, r) {
					return false
				}
			}
			return true
		}
		for _, asJSON := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/root/json=%v", tc.name, asJSON), func(t *testing.T) {
				t.Parallel()
				fr := fltSwarm(t, rootTurn1, tc.fault, asJSON)
				if fr.code != ExitFailed || fr.x.Run.Status != RunFailed {
					t.Fatalf("exit %d, run %s, want exit 1 and a failed run", fr.code, fr.x.Run.Status)
				}
				root := &fr.x.Sessions[0]
				if root.Status != StatusFailed || !has(root.Error) {
					t.Errorf("root is %s with error %q, want failed with %q", root.Status, root.Error, tc.reason)
				}
				if !has(fr.x.Run.Error) {
					t.Errorf("exported run error %q lacks %q", fr.x.Run.Error, tc.reason)
				}
				if asJSON {
					if info := fr.finished(t); info.Status != RunFailed || !has(info.Error) {
						t.Errorf("run.finished says %s (%q), want failed with %q", info.Status, info.Error, tc.reason)
					}
				} else if !has(fr.log) || !strings.Contains(fr.log, "failed") {
					t.Errorf("stderr does not say why the run failed:\n%s", fr.log)
				}
				fr.intact(t)
				if fr.hits != 1 {
					t.Errorf("the faulty turn was requested %d times: a fault retrying cannot fix was retried", fr.hits)
				}
				if n := len(assistantTexts(root)); n != 1 {
					t.Errorf("root has %d answers, want only the one before the fault", n)
				}
			})
		}
		t.Run(tc.name+"/worker", func(t *testing.T) {
			t.Parallel()
			fr := fltSwarm(t, workerTurn1, tc.fault, true)
			fr.intact(t)
			if fr.hits != 1 {
				t.Errorf("the faulty turn was requested %d times: a fault retrying cannot fix was retried", fr.hits)
			}
			worker := sessionByLabel(fr.x, "worker")
			if worker == nil || worker.Status != StatusFailed || !has(worker.Error) {
				t.Fatalf("worker: %+v, want failed with %q", worker, tc.reason)
			}
			failed := false
			for _, ev := range fr.events {
				if ev.Type == event.SessionStatus && ev.SessionID == worker.ID && ev.Session.Status == StatusFailed && has(ev.Session.Reason) {
					failed = true
				}
			}
			if !failed {
				t.Errorf("no session.status event says the worker failed and why")
			}
			root := &fr.x.Sessions[0]
			head := fmt.Sprintf(`<task_result task_id="%s" agent="researcher" status="failed">`, worker.ID)
			n := 0
			for _, m := range root.Messages {
				if m.Role == "user" && strings.HasPrefix(m.Content, head) {
					n++
					if !has(m.Content) {
						t.Errorf("the failed <task_result> does not say why: %s", m.Content)
					}
				}
			}
			if n != 1 {
				t.Errorf("the root got %d failed <task_result> messages for the worker, want 1", n)
			}
			if fr.code != ExitOK || fr.x.Run.Status != RunCompleted || root.Status != StatusCompleted {
				t.Fatalf("the root did not carry on: exit %d, run %s, root %s (%s)", fr.code, fr.x.Run.Status, root.Status, root.Error)
			}
			if got := assistantTexts(root); len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "Final answer. The worker said: "+head) {
				t.Errorf("the root's final answer does not use the failed result: %q", got)
			}
		})
	}
}

// Faults that retrying could fix but that outlast max_retries: an outage,
// whether it strikes the orchestrator or a sub-agent, is no reason to lose
// the run, or to finish it with an answer made of failures. The run stops
// "interrupted", resumable, with the reason in run.finished and in the
// error Headless returns; every session stays where it was (none fails);
// and once the server answers again, a resume completes the run with every
// answer once and what was stored before the fault intact.
func TestRunSuspendsWhenTheServerFails(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target fltTarget
		fault  fltFault
		reason []string
	}{
		{"503 every time, orchestrator", rootTurn1, fltStatus(503, nil, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`),
			[]string{"the model server failed", "503 Service Unavailable after 2 attempts", "The engine is currently overloaded", "resume it once the server answers"}},
		{"stall every time, orchestrator", rootTurn1, fltStall, []string{"the model server failed", "LLM stream stalled after 2 attempts", "no data for 1s"}},
		{"503 every time, sub-agent", workerTurn0, fltStatus(503, nil, `{"error":{"message":"The engine is currently overloaded","type":"server_error"}}`),
			[]string{"the model server failed", "503 Service Unavailable after 2 attempts", "The engine is currently overloaded"}},
		{"reset every time, sub-agent", workerTurn1, fltReset, []string{"the model server failed", "after 2 attempts", "connection lost mid-stream"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			e, d := fltEngine(t, tc.target, tc.fault, true, 1)
			has := func(s string) bool {
				for _, r := range tc.reason {
					if !strings.Contains(s, r) {
						return false
					}
				}
				return true
			}

			var out bytes.Buffer
			code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) { return e.Start(ctx, "Report on the README") })
			if ctx.Err() != nil {
				t.Fatal("the run did not end: it hangs")
			}
			var ie *InterruptedError
			if code != ExitFailed || !errors.As(err, &ie) || !has(ie.Reason) {
				t.Fatalf("exit %d, error %v; want exit 1 and an interruption that says %q", code, err, tc.reason)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			var last event.Event
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil || last.Type != event.RunFinished ||
				last.Run.Status != RunInterrupted || !has(last.Run.Error) {
				t.Errorf("the last event is not run.finished, interrupted, with the reason: %s", lines[len(lines)-1])
			}
			x, err := e.Export(context.Background(), ie.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if x.Run.Status != RunInterrupted || !has(x.Run.Error) {
				t.Fatalf("stored: run %s (%q); want an interrupted run", x.Run.Status, x.Run.Error)
			}
			for _, s := range x.Sessions {
				if terminal(s.Status) && s.Agent != "orchestrator" && tc.target.role == "orchestrator" {
					continue // the worker may have finished before the root's fault
				}
				if terminal(s.Status) {
					t.Errorf("session %s (%s) is %s (%s): an outage ended it", s.ID, s.Label, s.Status, s.Error)
				}
			}
			hits, snap := d.result()
			if hits != 2 {
				t.Errorf("the faulty turn was requested %d times, want 2 (max_retries 1)", hits)
			}

			// The server answers again: the run goes on from where it was.
			d.mu.Lock()
			d.always = false
			d.mu.Unlock()
			out.Reset()
			code, err = e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) { return e.Resume(ctx, ie.RunID) })
			if code != ExitOK || err != nil {
				t.Fatalf("resume: exit %d, %v", code, err)
			}
			x, err = e.Export(context.Background(), ie.RunID)
			if err != nil {
				t.Fatal(err)
			}
			fr := fltRun{x: x, snapshot: snap}
			fr.intact(t)
			root := &x.Sessions[0]
			if x.Run.Status != RunCompleted || x.Run.Error != "" || root.Status != StatusCompleted {
				t.Fatalf("after the resume: run %s (%q), root %s", x.Run.Status, x.Run.Error, root.Status)
			}
			// The worker may have finished while the run was stopped: the
			// root then has its result when it asks its turn again, and
			// answers at once. Either way each answer is there once.
			got := assistantTexts(root)
			final := got[len(got)-1]
			if n := len(got); n < 2 || n > 3 || !strings.HasPrefix(got[0], "Starting a worker.") || (n == 3 && got[1] != "Waiting for the worker to report back.") ||
				!strings.HasPrefix(final, "Final answer. The worker said: <task_result ") || !strings.Contains(final, "The README says this is a demo project.") {
				t.Errorf("root answers after the resume:\n%s", strings.Join(got, "\n"))
			}
			if w := sessionByLabel(x, "worker"); w.Status != StatusCompleted || len(assistantTexts(w)) != 2 {
				t.Errorf("worker %s with answers %q", w.Status, assistantTexts(w))
			}
		})
	}
}

// A store that fails (here an operation that fails after writing, which
// stops the store as a full disk would) ends the run at once with the
// reason, instead of leaving it waiting for writes that will never commit;
// what was committed before stays, and another process can resume the run.
func TestRunStopsWhenTheStoreFails(t *testing.T) {
	held := newGate()
	asked := make(chan struct{}, 1)
	p := policyFor(func(c *convo) scripted.Reply {
		select {
		case asked <- struct{}{}:
		default:
		}
		held.wait()
		return say("done")
	})
	e := testEngine(t, nil, p, nil)
	t.Cleanup(held.open)
	var out bytes.Buffer
	var run *Run
	type result struct {
		code int
		err  error
	}
	finished := make(chan result, 1)
	started := make(chan struct{})
	go func() {
		code, err := e.Headless(context.Background(), HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) {
			r, err := e.Start(ctx, "coordinate")
			run = r
			close(started)
			return r, err
		})
		finished <- result{code, err}
	}()
	<-started
	<-asked
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		tx.InsertEffect("r-other", "s-1", "call_1", 0, "test", []byte(`{}`))
		return fmt.Errorf("a write half done")
	})
	if err == nil {
		t.Fatal("the store took an operation that failed after writing")
	}
	var res result
	select {
	case res = <-finished:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after the store failed")
	}
	// Interrupted, as the store still has it and every reader says: the
	// way back is a resume, which the error carries.
	var ie *InterruptedError
	if !errors.As(res.err, &ie) || res.code != ExitFailed || ie.RunID != run.ID() {
		t.Fatalf("headless = %d, %v; want exit %d, interrupted", res.code, res.err, ExitFailed)
	}
	var last event.Event
	for dec := json.NewDecoder(&out); dec.More(); {
		if err := dec.Decode(&last); err != nil {
			t.Fatal(err)
		}
	}
	if last.Type != event.RunFinished || last.Run == nil || last.Run.Status != RunInterrupted || !strings.Contains(last.Run.Error, "the database failed") ||
		!strings.Contains(last.Run.Error, "a write half done") || !strings.Contains(last.Run.Error, "resume the run once the cause is fixed") {
		t.Fatalf("last event %s %+v, want run.finished, interrupted, with the database's error and how to resume", last.Type, last.Run)
	}
	if got := run.Status(); got != RunInterrupted {
		t.Errorf("run status %s, want %s", got, RunInterrupted)
	}
	// Stored as running, it is one that an exit at once names.
	if _, left := leftRunning.Load(run.ID()); !left {
		t.Errorf("run %s is not among the runs the process leaves stored as running", run.ID())
	}
	// What was committed before the failure is there for a resume.
	other, err := store.Open(e.Store().Path(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r, err := other.Run(context.Background(), run.ID()); err != nil || r.Status != RunRunning {
		t.Fatalf("stored run = %+v, %v; want it stored as running (resumable)", r, err)
	}
}

// fltEndedWithUsage sends the first event, then ends the answer with
// finish_reason reason and the usage the server counted for it: 7,000
// prompt and 900 completion tokens. "content_filter" fails the call,
// "error" is retried.
func fltEndedWithUsage(reason string) fltFault {
	return func(t *testing.T, w http.ResponseWriter, r *http.Request, rec []byte) {
		f := fltStreamHead(w)
		io.WriteString(w, fltEvents(rec)[0]+"\n\n")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"`+reason+`"}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":7000,"completion_tokens":900,"total_tokens":7900}}`+"\n\ndata: [DONE]\n\n")
		f.Flush()
	}
}

// Tokens a server reports for an answer it then failed are spent: they
// count in the session's usage and the run's (and so in its budget), as
// the server bills them.
func TestUsageOfAFailedCallCounts(t *testing.T) {
	fr := fltSwarm(t, workerTurn1, fltEndedWithUsage("content_filter"), true)
	worker := sessionByLabel(fr.x, "worker")
	if worker == nil || worker.Status != StatusFailed {
		t.Fatalf("worker: %+v, want failed", worker)
	}
	if worker.Usage.TotalTokens < 7900 || worker.Usage.PromptTokens < 7000 || worker.Usage.CompletionTokens < 900 {
		t.Errorf("the failed worker's usage is %+v: the 7,000/900 tokens of its failed call are not in it", worker.Usage)
	}
	sum := 0
	for _, s := range fr.x.Sessions {
		sum += s.Usage.TotalTokens
	}
	if fr.x.Run.Usage.TotalTokens != sum {
		t.Errorf("the run's usage (%d tokens) is not its sessions' (%d)", fr.x.Run.Usage.TotalTokens, sum)
	}
}

// A run stopped because every attempt failed keeps the tokens those
// attempts were billed in the session that made them, not only in the
// run's total: its sessions' usage adds up to the run's.
func TestUsageOfAnOutageIsTheSessions(t *testing.T) {
	e, _ := fltEngine(t, workerTurn1, fltEndedWithUsage("error"), true, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	_, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) { return e.Start(ctx, "Report on the README") })
	var ie *InterruptedError
	if !errors.As(err, &ie) {
		t.Fatalf("the run was not interrupted: %v", err)
	}
	x, err := e.Export(context.Background(), ie.RunID)
	if err != nil {
		t.Fatal(err)
	}
	worker := sessionByLabel(x, "worker")
	if worker == nil || worker.Usage.TotalTokens < 2*7900 {
		t.Fatalf("worker: %+v, want the 2 failed attempts' 15,800 tokens in its usage", worker)
	}
	sum := 0
	for _, s := range x.Sessions {
		sum += s.Usage.TotalTokens
	}
	if x.Run.Usage.TotalTokens != sum {
		t.Errorf("the run's usage (%d tokens) is not its sessions' (%d)", x.Run.Usage.TotalTokens, sum)
	}
}

// A shadow answer whose call fails charges the tokens the server reported
// to the session it answered for, as an answer would: the sessions' usage
// adds up to the run's.
func TestUsageOfAFailedShadowAnswerIsTheSessions(t *testing.T) {
	p, r2Started, r2Release := askWhileBusy(obj{"question": "Which database should we use?", "timeout": 3600}, func(c *convo) scripted.Reply {
		return say("never sent")
	})
	srv := scripted.New(scripted.Config{Policy: p})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		if !bytes.Contains(body, []byte("You are answering a question on behalf of")) {
			srv.Handler().ServeHTTP(w, r)
			return
		}
		f := fltStreamHead(w)
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{"content":"partial"}}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[{"index":0,"delta":{},"finish_reason":"error"}]}`+"\n\n")
		io.WriteString(w, `data: {"choices":[],"usage":{"prompt_tokens":700,"completion_tokens":77,"total_tokens":777}}`+"\n\ndata: [DONE]\n\n")
		f.Flush()
	}))
	t.Cleanup(func() { r2Started.open(); r2Release.open(); hs.Close(); srv.Close() })
	e := recEngine(t, t.TempDir(), hs.URL+"/v1", func(c *config.Config) { c.Limits.MaxRetries = 0 })
	events, code, _ := recRun(t, e, true, func(ctx context.Context) (*Run, error) { return e.Start(ctx, "ask") })
	if code != ExitOK {
		t.Fatalf("exit %d: %+v", code, events[len(events)-1].Run)
	}
	x := exportLatest(t, e)
	sum := 0
	for _, s := range x.Sessions {
		sum += s.Usage.TotalTokens
	}
	if x.Run.Usage.TotalTokens != sum {
		t.Errorf("the run's usage (%d tokens) is not its sessions' (%d)", x.Run.Usage.TotalTokens, sum)
	}
}
