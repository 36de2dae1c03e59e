package runtime

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// The coordination tests drive the real runtime through the scripted
// model's HTTP server with small purpose-built policies. A policy sees one
// request at a time; convo reads it as the session that made it.

// convo is one chat request seen from the session that sent it.
type convo struct {
	req    *scripted.Request
	system string // the system prompt
	role   string // "" for a shadow-responder request
	shadow string // the agent a shadow responder answers for
	id     string // the session's task id
	label  string
	task   string // the first user message, without what was injected with it
	turns  int    // assistant messages so far
	calls  []callOut
}

// callOut is one tool call of the session and its result ("" while none).
type callOut struct {
	name, args, result string
}

func readConvo(req *scripted.Request) *convo {
	c := &convo{req: req}
	if len(req.Messages) > 0 && req.Messages[0].Role == "system" {
		c.system = req.Messages[0].Content
	}
	first, _, _ := strings.Cut(c.system, "\n")
	if r, ok := strings.CutPrefix(first, "You are the "); ok {
		c.role, _ = strings.CutSuffix(r, " agent of a swarmdeck swarm.")
	} else if a, ok := strings.CutPrefix(first, "You are answering a question on behalf of "); ok {
		c.shadow, _ = strings.CutSuffix(a, ", another agent of a swarmdeck swarm.")
	}
	c.id = promptLine(c.system, "Your task id: ")
	c.label = promptLine(c.system, "Your label: ")
	byID := map[string]int{}
	for _, m := range req.Messages {
		switch m.Role {
		case "user":
			if c.task == "" {
				// Items injected before the first turn are merged into
				// the same user message: the task is what comes first.
				c.task, _, _ = strings.Cut(m.Content, "\n\n<")
			}
		case "assistant":
			c.turns++
			for _, tc := range m.ToolCalls {
				byID[tc.ID] = len(c.calls)
				c.calls = append(c.calls, callOut{name: tc.Name, args: tc.Arguments})
			}
		case "tool":
			if i, ok := byID[m.ToolCallID]; ok {
				c.calls[i].result = m.Content
			}
		}
	}
	return c
}

func promptLine(sys, prefix string) string {
	for line := range strings.Lines(sys) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// isRoot reports a request of the run's root orchestrator.
func (c *convo) isRoot() bool {
	return c.role == "orchestrator" && !strings.Contains(c.system, "Your task comes in the next message")
}

// results lists the results of the session's calls of a tool, in order.
func (c *convo) results(name string) []string {
	var out []string
	for _, x := range c.calls {
		if x.name == name {
			out = append(out, x.result)
		}
	}
	return out
}

// last is the result of the session's latest call of a tool, or "".
func (c *convo) last(name string) string {
	r := c.results(name)
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

// saw reports whether any message of the conversation contains s.
func (c *convo) saw(s string) bool {
	for _, m := range c.req.Messages {
		if strings.Contains(m.Content, s) {
			return true
		}
	}
	return false
}

// spawned returns the task ids a sessions_spawn result names, by label.
func spawned(t testing.TB, result string) map[string]string {
	var res struct {
		Sessions []struct {
			TaskID string `json:"task_id"`
			Label  string `json:"label"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(result), &res); err != nil {
		t.Errorf("sessions_spawn result is not JSON: %v: %s", err, result)
	}
	out := map[string]string{}
	for _, s := range res.Sessions {
		out[s.Label] = s.TaskID
	}
	return out
}

func call(name string, args any) scripted.Call { return scripted.Call{Name: name, Args: args} }

func do(calls ...scripted.Call) scripted.Reply { return scripted.Reply{ToolCalls: calls} }

func say(text string) scripted.Reply { return scripted.Reply{Content: text} }

type obj = map[string]any

// policyFor wraps a convo function as a policy.
func policyFor(fn func(c *convo) scripted.Reply) scripted.Policy {
	return scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply { return fn(readConvo(req)) })
}

// gate holds a policy back until the test opens it: it makes "this
// session is still running" deterministic. The wait is bounded so that a
// failing test cannot hang the server's shutdown.
type gate struct {
	ch   chan struct{}
	once sync.Once
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() { g.once.Do(func() { close(g.ch) }) }

func (g *gate) wait() {
	select {
	case <-g.ch:
	case <-time.After(60 * time.Second):
	}
}

// swarm runs one goal on a fresh engine with the policy and returns the
// exported run, its events and the exit status. Gates are opened before
// the engine shuts down.
func swarm(t *testing.T, p scripted.Policy, mod func(*config.Config), gates ...*gate) (*store.Export, []event.Event, int) {
	t.Helper()
	e := testEngine(t, nil, p, mod)
	t.Cleanup(func() {
		for _, g := range gates {
			g.open()
		}
	})
	events, code := headless(t, e, "coordinate", nil)
	return exportLatest(t, e), events, code
}

// mustComplete fails the test unless the run completed.
func mustComplete(t *testing.T, x *store.Export, code int) {
	t.Helper()
	if code != ExitOK || x.Run.Status != "completed" {
		for _, s := range x.Sessions {
			t.Logf("%s %s/%s %s err=%q", s.ID, s.Agent, s.Label, s.Status, s.Error)
		}
		t.Fatalf("run %s (exit %d): %s", x.Run.Status, code, x.Run.Error)
	}
}

func rootOf(x *store.Export) *store.ExportSession {
	for i := range x.Sessions {
		if x.Sessions[i].ParentID == "" {
			return &x.Sessions[i]
		}
	}
	return nil
}

// mustLabel finds a session by label or stops the test.
func mustLabel(t *testing.T, x *store.Export, label string) *store.ExportSession {
	t.Helper()
	s := sessionByLabel(x, label)
	if s == nil {
		var have []string
		for _, s := range x.Sessions {
			have = append(have, s.Label)
		}
		t.Fatalf("no session labelled %q (labels: %q)", label, have)
	}
	return s
}

// decode unmarshals a tool result or fails the test.
func decode(t testing.TB, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("not JSON (%v): %s", err, s)
	}
}

// toolError returns the "error" of a tool result, or "".
func toolError(s string) string {
	var e struct {
		Error string `json:"error"`
	}
	json.Unmarshal([]byte(s), &e)
	return e.Error
}

// injected lists the synthetic user messages of a session holding tag.
func injected(s *store.ExportSession, tag string) []store.ExportMessage {
	var out []store.ExportMessage
	for _, m := range s.Messages {
		if m.Role == "user" && strings.Contains(m.Content, "<"+tag) {
			out = append(out, m)
		}
	}
	return out
}

// broadcastsIn parses every <sibling_broadcast> of a session's history.
func broadcastsIn(s *store.ExportSession) []coordination.Broadcast {
	var out []coordination.Broadcast
	for _, m := range s.Messages {
		if m.Role == "user" {
			out = append(out, coordination.ParseBroadcasts(m.Content)...)
		}
	}
	return out
}

// statusSeq returns the sequence number of the first session.status (or
// session.created) event putting a session in status, or 0.
func statusSeq(events []event.Event, sessionID, status string) int64 {
	for _, ev := range events {
		if (ev.Type == event.SessionStatus || ev.Type == event.SessionCreated) && ev.SessionID == sessionID && ev.Session != nil && ev.Session.Status == status {
			return ev.Seq
		}
	}
	return 0
}

// statuses lists the successive distinct statuses of a session.
func statuses(events []event.Event, sessionID string) []string {
	var out []string
	for _, ev := range events {
		if (ev.Type == event.SessionStatus || ev.Type == event.SessionCreated) && ev.SessionID == sessionID && ev.Session != nil {
			if n := len(out); n == 0 || out[n-1] != ev.Session.Status {
				out = append(out, ev.Session.Status)
			}
		}
	}
	return out
}

// sprint renders a value as JSON, to compare maps and slices in one line.
func sprint(v any) string { b, _ := json.Marshal(v); return string(b) }

// raw passes JSON text through verbatim (a Go map would sort the keys,
// and key order is part of what shared context keeps).
func raw(s string) json.RawMessage { return json.RawMessage(s) }

// callResults lists the results of a session's calls of a tool in the
// order the calls were made (toolResults gives them in the order they were
// stored, which for calls of one turn run concurrently is any order).
func callResults(s *store.ExportSession, name string) []string {
	byID := map[string]string{}
	for _, m := range s.Messages {
		if m.Role == "tool" {
			byID[m.ToolCallID] = m.Content
		}
	}
	var out []string
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == name {
				out = append(out, byID[c.ID])
			}
		}
	}
	return out
}

// engineAt builds an engine like testEngine, on the database and workspace
// of dir, so that a second engine can resume what a first one stored.
func engineAt(t *testing.T, dir string, p scripted.Policy, mod func(*config.Config)) *Engine {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	cfg := config.Defaults()
	cfg.Workspace = ws
	cfg.LogFile = filepath.Join(dir, "log")
	sp := cfg.Providers["scripted"]
	sp.Latency = 0
	sp.StreamSpeed = 0
	if mod != nil {
		mod(cfg)
	}
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: filepath.Join(dir, "swarmdeck.db"), Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
