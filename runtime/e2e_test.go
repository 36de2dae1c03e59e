package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// testEngine builds an engine on a fresh database and workspace. With a
// non-nil server the provider is an OpenAI-type one pointing at it, else
// the in-process scripted model.
func testEngine(t *testing.T, server *httptest.Server, policy scripted.Policy, mod func(*config.Config)) *Engine {
	t.Helper()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(ws, "docs"), 0o755)
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# Demo project\nA product launch plan lives here.\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "docs", "notes.md"), []byte("launch notes\nproduct ideas\n"), 0o644)
	cfg := config.Defaults()
	cfg.Workspace = ws
	cfg.LogFile = filepath.Join(dir, "log")
	sp := cfg.Providers["scripted"]
	sp.Latency = 0
	sp.StreamSpeed = 0
	cfg.Limits.MaxRetries = 4
	if mod != nil {
		mod(cfg)
	}
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if server != nil {
		res.Name = "test"
		res.Provider = config.Provider{Type: "openai", BaseURL: server.URL + "/v1"}
		res.Model = "test-model"
	}
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: filepath.Join(dir, "swarmdeck.db"), Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// scriptedServer serves a policy over HTTP in a given dialect.
func scriptedServer(t *testing.T, dialect string, policy scripted.Policy) *httptest.Server {
	t.Helper()
	// A little latency keeps the demo's order realistic: its question is
	// asked while the other sessions still work.
	srv := scripted.New(scripted.Config{Dialect: dialect, Policy: policy, Latency: 10 * time.Millisecond})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs
}

// headless runs a goal to the end and returns its events and exit status.
func headless(t *testing.T, e *Engine, goal string, control io.Reader) ([]event.Event, int) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out, Control: control}, func(ctx context.Context) (*Run, error) {
		return e.Start(ctx, goal)
	})
	if err != nil {
		dumpRun(t, e)
		t.Fatalf("headless run: %v", err)
	}
	var events []event.Event
	dec := json.NewDecoder(&out)
	for dec.More() {
		var ev event.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("bad JSON event: %v", err)
		}
		events = append(events, ev)
	}
	return events, code
}

func exportLatest(t *testing.T, e *Engine) *store.Export {
	t.Helper()
	x, err := e.Export(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func sessionByLabel(x *store.Export, label string) *store.ExportSession {
	for i := range x.Sessions {
		if x.Sessions[i].Label == label {
			return &x.Sessions[i]
		}
	}
	return nil
}

func toolResults(s *store.ExportSession, name string) []string {
	ids := map[string]bool{}
	for _, m := range s.Messages {
		for _, c := range m.ToolCalls {
			if c.Name == name {
				ids[c.ID] = true
			}
		}
	}
	var out []string
	for _, m := range s.Messages {
		if m.Role == "tool" && ids[m.ToolCallID] {
			out = append(out, m.Content)
		}
	}
	return out
}

// checkDemoExport asserts what a run of the demo policy must show.
// sessionsUsage is what the sessions of an export add up to.
func sessionsUsage(x *store.Export) store.Usage {
	var sum store.Usage
	for _, s := range x.Sessions {
		sum.PromptTokens += s.Usage.PromptTokens
		sum.CompletionTokens += s.Usage.CompletionTokens
		sum.TotalTokens += s.Usage.TotalTokens
	}
	return sum
}

func checkDemoExport(t *testing.T, x *store.Export) {
	t.Helper()
	if x.Run.Status != "completed" {
		t.Fatalf("run status %q, error %q", x.Run.Status, x.Run.Error)
	}
	if x.Run.Workspace == "" || x.Run.EndedAt == "" {
		t.Errorf("the run's workspace %q or end %q is missing", x.Run.Workspace, x.Run.EndedAt)
	}
	// Every token the sessions spent counts to the run. (The run may count
	// more: an answer that arrived as the run was interrupted was paid for
	// but not kept.)
	if sum := sessionsUsage(x); sum.TotalTokens > x.Run.Usage.TotalTokens {
		t.Errorf("the sessions add up to %+v, more than the run's %+v", sum, x.Run.Usage)
	}
	var root *store.ExportSession
	children := 0
	for i := range x.Sessions {
		s := &x.Sessions[i]
		if s.Status != "completed" {
			t.Errorf("session %s (%s) is %s: %s", s.ID, s.Agent, s.Status, s.Error)
		}
		if ended := store.ParseTime(s.EndedAt); s.CreatedAt.IsZero() || ended.Before(s.CreatedAt) {
			t.Errorf("session %s: created %v, ended %q", s.ID, s.CreatedAt, s.EndedAt)
		}
		if len(s.Messages) == 0 || s.Messages[0].Role != "system" || !strings.HasPrefix(s.Messages[0].Content, "You are the "+s.Agent+" agent") {
			t.Errorf("session %s: first message is not its system prompt", s.ID)
		}
		calls, results := 0, 0
		for _, m := range s.Messages {
			calls += len(m.ToolCalls)
			if m.Role == "tool" {
				results++
				if m.ToolCallID == "" {
					t.Errorf("session %s: tool result without tool_call_id", s.ID)
				}
			}
		}
		if calls == 0 || calls != results {
			t.Errorf("session %s: %d tool calls, %d results", s.ID, calls, results)
		}
		if s.ParentID == "" {
			root = s
		} else if s.ParentID == x.Sessions[0].ID {
			children++
		}
	}
	if root == nil || children < 2 {
		t.Fatalf("want a root and at least two children, got root=%v children=%d", root != nil, children)
	}
	if !strings.HasPrefix(x.Run.Result, "[scripted model]") {
		t.Errorf("run result should say it is scripted: %.80q", x.Run.Result)
	}

	// Shared context: the children's system prompts carry the block; the
	// grandchild inherits projectGoal and overrides audience; the writer's
	// $ references were resolved into its context.
	r1 := sessionByLabel(x, "research-1")
	if r1 == nil || !strings.Contains(r1.Messages[0].Content, "[Shared Context]:\n- ") || !strings.Contains(r1.Messages[0].Content, "\n- projectGoal: \"") {
		t.Errorf("research-1 system prompt lacks the shared context block:\n%s", r1.Messages[0].Content)
	}
	assets := sessionByLabel(x, "assets")
	if assets == nil {
		t.Fatalf("no grandchild labelled assets")
	}
	var actx map[string]any
	json.Unmarshal(assets.SharedContext, &actx)
	if actx["projectGoal"] == nil || actx["audience"] != "early adopters" || assets.Depth != 2 {
		t.Errorf("grandchild context = %v (depth %d), want projectGoal inherited and audience overridden", actx, assets.Depth)
	}
	writer := sessionByLabel(x, "writer")
	var wctx map[string]any
	json.Unmarshal(writer.SharedContext, &wctx)
	if s, _ := wctx["research-1"].(string); !strings.Contains(s, "[scripted model]") {
		t.Errorf("writer context lacks the resolved $research-1 reference: %v", wctx)
	}

	// Sibling awareness and broadcasts.
	if !strings.Contains(joinContents(r1), "<sibling_tasks>") {
		t.Errorf("research-1 never got a <sibling_tasks> table")
	}
	var bc *store.ExportBroadcast
	for i := range x.Broadcasts {
		if x.Broadcasts[i].Kind == "broadcast" {
			bc = &x.Broadcasts[i]
			break
		}
	}
	if bc == nil || len(bc.Recipients) == 0 {
		t.Fatalf("no stored broadcast with recipients")
	}
	for _, rid := range bc.Recipients {
		found := false
		for _, s := range x.Sessions {
			if s.ID != rid {
				continue
			}
			for _, m := range s.Messages {
				if m.NoReply && m.Synthetic && strings.Contains(m.Content, "<sibling_broadcast from=") && strings.Contains(m.Content, `task_id="`+bc.FromSession+`"`) {
					found = true
				}
			}
		}
		if !found {
			t.Errorf("broadcast %s not passive in the history of recipient %s", bc.ID, rid)
		}
	}
	if res := toolResults(r1, "task_send_message"); len(res) == 0 || !strings.Contains(res[0], `"delivered"`) {
		t.Errorf("research-1 task_send_message results: %v", res)
	}
	if res := toolResults(r1, "task_output"); len(res) == 0 || strings.Contains(res[0], "error") {
		t.Errorf("research-1 task_output results: %v", res)
	}

	// Plans: a cyclic plan rejected, then one with index dependencies stored as ids.
	plans := toolResults(root, "create_task_plan")
	if len(plans) < 2 || !strings.Contains(plans[0], "cycle") || strings.Contains(plans[1], "error") {
		t.Errorf("create_task_plan results: %v", plans)
	}
	var rootPlan *store.ExportPlan
	for i := range x.Plans {
		if x.Plans[i].SessionID == root.ID {
			rootPlan = &x.Plans[i]
		}
	}
	if rootPlan == nil {
		t.Fatalf("root has no stored plan")
	}
	for _, task := range rootPlan.Tasks {
		if task.ID == "draft" && strings.Join(task.DependsOn, ",") != "research,channels" {
			t.Errorf("draft depends_on = %v, want ids research,channels", task.DependsOn)
		}
		if task.ID == "checklist" && task.Status != "completed" {
			t.Errorf("delegated plan task checklist is %s", task.Status)
		}
	}
	// Delegation completed. At the depth limit the sub-orchestrator is
	// neither told of delegating nor offered it, so it does not try.
	if len(x.Delegations) != 1 || x.Delegations[0].Status != "completed" || x.Delegations[0].PlanTaskID != "checklist" {
		t.Errorf("delegations = %+v", x.Delegations)
	}
	sub := findSession(x, x.Delegations[0].SessionID)
	if res := toolResults(sub, "delegate_task"); len(res) != 0 {
		t.Errorf("the sub-orchestrator at the delegation depth limit delegated: %v", res)
	}
	if prompt := sub.Messages[0].Content; strings.Contains(prompt, "## Delegation") || strings.Contains(prompt, "delegate_task") {
		t.Errorf("the sub-orchestrator at the delegation depth limit is told to delegate:\n%s", prompt)
	}
	// The question got shadow answers from the other running sessions.
	if len(x.Questions) == 0 || len(x.Questions[0].Responses) < 2 {
		t.Errorf("questions = %+v", x.Questions)
	}
}

func joinContents(s *store.ExportSession) string {
	var b strings.Builder
	for _, m := range s.Messages {
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

func findSession(x *store.Export, id string) *store.ExportSession {
	for i := range x.Sessions {
		if x.Sessions[i].ID == id {
			return &x.Sessions[i]
		}
	}
	return &store.ExportSession{}
}

func TestHeadlessDemoOnScriptedModel(t *testing.T) {
	e := testEngine(t, nil, nil, func(c *config.Config) { c.Providers["scripted"].Latency = config.Duration(10 * time.Millisecond) })
	events, code := headless(t, e, "Plan a product launch", nil)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if events[0].Type != event.RunStarted || events[len(events)-1].Type != event.RunFinished {
		t.Errorf("events run from %s to %s", events[0].Type, events[len(events)-1].Type)
	}
	for i := 1; i < len(events); i++ {
		if events[i].Seq != events[i-1].Seq+1 {
			t.Fatalf("event seq jumps from %d to %d", events[i-1].Seq, events[i].Seq)
		}
	}
	// A call's tool.started comes before its result's message.appended and
	// its tool.finished, as a script reading the events expects.
	started := map[string]bool{}
	for _, ev := range events {
		switch {
		case ev.Type == event.ToolStarted:
			started[ev.SessionID+" "+ev.Tool.CallID] = true
		case ev.Type == event.ToolFinished && !started[ev.SessionID+" "+ev.Tool.CallID],
			ev.Type == event.MessageAppended && ev.Message.Role == "tool" && !started[ev.SessionID+" "+ev.Message.ToolCallID]:
			t.Errorf("event %d (%s) of %s comes before the call's tool.started", ev.Seq, ev.Type, ev.SessionID)
		}
	}
	x := exportLatest(t, e)
	checkDemoExport(t, x)
	// Uninterrupted, every token the run spent counts to a session, shadow
	// answers to ask_others included: the sessions add up to the run.
	if sum := sessionsUsage(x); sum != x.Run.Usage {
		t.Errorf("the sessions add up to %+v, the run says %+v", sum, x.Run.Usage)
	}
}

func TestDemoOverEachDialect(t *testing.T) {
	for _, dialect := range []string{"openai", "ollama", "llamacpp"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			hs := scriptedServer(t, dialect, scripted.Demo())
			e := testEngine(t, hs, nil, nil)
			_, code := headless(t, e, "Design a landing page for a CLI tool", nil)
			if code != ExitOK {
				t.Fatalf("exit %d", code)
			}
			checkDemoExport(t, exportLatest(t, e))
		})
	}
}

// faulty wraps a policy and answers chosen requests (by arrival order)
// with a fault instead.
type faulty struct {
	inner  scripted.Policy
	mu     sync.Mutex
	n      int
	faults map[int]*scripted.Fault
	mangle string // corrupt the arguments of the first call of this tool
}

func (f *faulty) Reply(req *scripted.Request) scripted.Reply {
	f.mu.Lock()
	f.n++
	n := f.n
	fault := f.faults[n]
	f.mu.Unlock()
	if fault != nil {
		return scripted.Reply{Fault: fault}
	}
	rep := f.inner.Reply(req)
	for i, c := range rep.ToolCalls {
		f.mu.Lock()
		hit := c.Name == f.mangle
		if hit {
			f.mangle = ""
		}
		f.mu.Unlock()
		if hit {
			b, _ := json.Marshal(c.Args)
			rep.ToolCalls[i].Args = json.RawMessage(b[:len(b)-1]) // drop the closing brace
		}
	}
	return rep
}

func TestRunSurvivesServerFaults(t *testing.T) {
	for _, dialect := range []string{"openai", "ollama", "llamacpp"} {
		t.Run(dialect, func(t *testing.T) {
			t.Parallel()
			f := &faulty{inner: scripted.Demo(), faults: map[int]*scripted.Fault{
				1: {Status: 429, RetryAfter: "1"},
				2: {Status: 503, Body: `{"error":{"message":"model overloaded","type":"server_error"}}`},
				3: {Status: 502, Body: "<html><body><h1>502 Bad Gateway</h1></body></html>"},
				5: {Truncate: true},
			}, mangle: "list_files"}
			hs := scriptedServer(t, dialect, f)
			e := testEngine(t, hs, nil, nil)
			_, code := headless(t, e, "Plan a product launch", nil)
			if code != ExitOK {
				t.Fatalf("exit %d", code)
			}
			x := exportLatest(t, e)
			checkDemoExport(t, x)
			// The mangled call reached the model as a tool error it could read.
			root := &x.Sessions[0]
			found := false
			for _, m := range root.Messages {
				if m.Role == "tool" && strings.Contains(m.Content, "not valid JSON") {
					found = true
				}
			}
			if !found {
				t.Errorf("the malformed arguments did not come back as a tool error")
			}
		})
	}
}

// dumpRun logs where each session of the latest run stands, to explain a hang.
func dumpRun(t *testing.T, e *Engine) {
	x, err := e.Export(context.Background(), "")
	if err != nil {
		t.Logf("export: %v", err)
		return
	}
	for _, s := range x.Sessions {
		last := ""
		if n := len(s.Messages); n > 0 {
			m := s.Messages[n-1]
			last = m.Role + ": " + m.Content
			if len(m.ToolCalls) > 0 {
				last += " calls " + m.ToolCalls[0].Name
			}
		}
		if len(last) > 300 {
			last = last[:300]
		}
		t.Logf("%s %s/%s %s (%d msgs) last=%q err=%q", s.ID, s.Agent, s.Label, s.Status, len(s.Messages), last, s.Error)
	}
}

// TestStartStoresTheRunUnderAFreshID: Start returns once the run is stored,
// and draws another id when the one it drew is taken, leaving the run that
// has it untouched.
func TestStartStoresTheRunUnderAFreshID(t *testing.T) {
	e := testEngine(t, nil, scripted.Bench(), nil)
	ctx := context.Background()
	first, err := e.Start(ctx, scripted.BenchGoal(1, 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := e.Store().Run(ctx, first.ID()); err != nil || rec == nil {
		t.Fatalf("run %s not stored when Start returned: %v", first.ID(), err)
	}
	<-first.Done()

	ids := []string{first.ID(), "r-0fresh"}
	defer func(orig func() string) { newRunID = orig }(newRunID)
	newRunID = func() string {
		id := ids[0]
		ids = ids[1:]
		return id
	}
	second, err := e.Start(ctx, "another goal")
	if err != nil {
		t.Fatal(err)
	}
	defer second.Interrupt()
	if second.ID() != "r-0fresh" {
		t.Fatalf("second run has id %s, want r-0fresh (the first id drawn was taken)", second.ID())
	}
	rec, err := e.Store().Run(ctx, first.ID())
	if err != nil || rec == nil {
		t.Fatalf("first run: %v", err)
	}
	if rec.Goal != scripted.BenchGoal(1, 1, 1, 0) || rec.Status != RunCompleted {
		t.Errorf("first run changed: goal %q, status %s", rec.Goal, rec.Status)
	}
	if rec, err := e.Store().Run(ctx, second.ID()); err != nil || rec == nil || rec.Goal != "another goal" {
		t.Fatalf("second run not stored when Start returned: %+v, %v", rec, err)
	}
	sessions, err := e.Store().Sessions(ctx, first.ID())
	if err != nil || len(sessions) != 1 {
		t.Fatalf("first run has %d sessions, want its 1 (%v)", len(sessions), err)
	}
}

// A session's prompt and task are stored while the model works on its
// first call, not only with the answer: a first answer may take minutes,
// and a transcript (or a view from another process) shows what the session
// was given meanwhile.
func TestPromptStoredBeforeTheFirstAnswer(t *testing.T) {
	var e *Engine
	var stored atomic.Int64
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if turnsOf(req) == 0 {
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				runs, _ := e.store.Runs(context.Background(), 1)
				if len(runs) == 1 {
					all, _ := e.store.AllMessages(context.Background(), runs[0].ID)
					for _, msgs := range all {
						if len(msgs) >= 2 && msgs[0].Role == "system" && msgs[1].Role == "user" {
							stored.Add(1)
							return scripted.Reply{Content: "done"}
						}
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}
		return scripted.Reply{Content: "done"}
	})
	e = testEngine(t, nil, policy, nil)
	if _, code := headless(t, e, "look", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if stored.Load() != 1 {
		t.Errorf("the root's prompt and task were not stored while its first call was under way")
	}
}

// Every message event says when its message was made: the event may follow
// it (a turn's messages are stored together), and DESIGN's message has a
// timestamp.
func TestMessageEventsCarryTheirTime(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	started := time.Now().Add(-time.Second)
	events, code := headless(t, e, "Plan a product launch", nil)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	n := 0
	for _, ev := range events {
		if ev.Type != event.MessageAppended {
			continue
		}
		n++
		if at := ev.Message.CreatedAt; at.Before(started) || at.After(ev.Time) {
			t.Fatalf("message %d of %s: created_at %v, event at %v", ev.Message.Index, ev.SessionID, at, ev.Time)
		}
	}
	if n == 0 {
		t.Fatal("no message events")
	}
}

// `swarmdeck export` writes a session at a time (WriteExport); what it
// writes is the JSON of Export, indented, byte for byte.
func TestWriteExportIsExportsJSON(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	if _, code := headless(t, e, "Plan a product launch", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	if len(x.Sessions) < 2 || len(x.Broadcasts) == 0 || len(x.Plans) == 0 {
		t.Fatalf("the run has too little to compare: %d sessions, %d broadcasts, %d plans", len(x.Sessions), len(x.Broadcasts), len(x.Plans))
	}
	x.Run.Error = "a <fixed> & changed run"
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(x); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	err := e.store.WriteExport(context.Background(), x.Run.ID, &got, func(r *store.ExportRun) { r.Error = "a <fixed> & changed run" })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		g, w := got.String(), want.String()
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Fatalf("WriteExport differs at byte %d of %d:\n got …%.200s\nwant …%.200s", i, len(w), g[max(i-40, 0):], w[max(i-40, 0):])
	}
	// An empty run's lists are [] as Export's are.
	if err := e.store.WriteExport(context.Background(), "r-nosuch", &got, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}
