package runtime

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// A failed run resumes once the cause is fixed: the sessions its failure
// ended come back and finish their work; a failure a parent has answered
// stays, and so does what completed.

const quotaBody = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`

// quotaServer serves policy, except that every chat request gets
// insufficient_quota while broke is set.
func quotaServer(t *testing.T, policy scripted.Policy, broke *atomic.Bool) *httptest.Server {
	t.Helper()
	srv := scripted.New(scripted.Config{Policy: policy})
	inner := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broke.Load() && strings.HasSuffix(r.URL.Path, "/chat/completions") {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, quotaBody)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs
}

// failedResult is how a parent's history starts the report of a child
// that failed.
func failedResult(id string) string {
	return `<task_result task_id="` + id + `" agent="researcher" status="failed">`
}

// resumeElsewhere resumes e's failed run, as another process would after
// the fix: it closes e and resumes on a new engine on the same database
// with the configuration mod makes. It returns the resume's events and the
// run, failing the test unless the run completed with every message stored
// in before (if given) still there, at the same place, unchanged.
func resumeElsewhere(t *testing.T, e *Engine, dir, baseURL string, mod func(*config.Config), before *store.Export) ([]event.Event, *store.Export) {
	t.Helper()
	x, err := e.Export(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	e = recEngine(t, dir, baseURL, mod)
	events, code, _ := recRun(t, e, true, func(ctx context.Context) (*Run, error) { return e.Resume(ctx, x.Run.ID) })
	x, err = e.Export(context.Background(), x.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK || x.Run.Status != RunCompleted || x.Run.Error != "" {
		t.Fatalf("after the resume: exit %d, run %s (%q), sessions %s", code, x.Run.Status, x.Run.Error, sessionStates(x))
	}
	if before != nil {
		fr := fltRun{x: x, snapshot: before}
		fr.intact(t)
	}
	return events, x
}

// The quota runs out while one worker has finished and another is at work:
// the second worker fails, its report reaches the orchestrator, whose next
// call fails too, and the run fails. Once credit is added, a resume brings
// back the orchestrator and the second worker (its failure was never
// answered); the orchestrator waits for it, is told that its failure no
// longer stands, and finishes with both results. The first worker is not
// run again, and nothing stored before is changed.
func TestFailedRunResumesOnceTheQuotaIsBack(t *testing.T) {
	var broke atomic.Bool
	alphaSeen := newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Say alpha", "label": "alpha", "agent": "researcher"}),
				call("sessions_spawn", obj{"task": "Read the README", "label": "beta", "agent": "researcher"}))
		case c.isRoot() && c.saw(`status="completed">`+"\nBeta done.") && c.saw("\nAlpha done."):
			return say("Final answer: alpha and beta are done.")
		case c.isRoot():
			if c.saw("\nAlpha done.") {
				alphaSeen.open()
			}
			return say("Waiting for the others.")
		case c.label == "alpha":
			return say("Alpha done.")
		case c.label == "beta" && c.turns == 0:
			alphaSeen.wait()
			broke.Store(true) // from the next request on
			return do(call("read_file", obj{"path": "README.md"}))
		default:
			return say("Beta done.")
		}
	})
	hs := quotaServer(t, p, &broke)
	dir := t.TempDir()
	e := recEngine(t, dir, hs.URL+"/v1", nil)
	writeReadme(t, e)

	x := failRun(t, e, "Two workers")
	alpha, beta := sessionByLabel(x, "alpha"), sessionByLabel(x, "beta")
	if alpha == nil || beta == nil ||
		alpha.Status != StatusCompleted || beta.Status != StatusFailed || x.Sessions[0].Status != StatusFailed {
		t.Fatalf("before the resume: sessions %s", sessionStates(x))
	}
	if !strings.Contains(x.Run.Error, "You exceeded your current quota") {
		t.Fatalf("run error %q", x.Run.Error)
	}
	before := x

	// Credit is added, and the run resumed by another process.
	broke.Store(false)
	events, x := resumeElsewhere(t, e, dir, hs.URL+"/v1", nil, before)
	root := &x.Sessions[0]
	if got := assistantTexts(root); got[len(got)-1] != "Final answer: alpha and beta are done." {
		t.Errorf("root's answers: %q", got)
	}
	if got := assistantTexts(sessionByLabel(x, "alpha")); len(got) != 1 {
		t.Errorf("alpha ran again: %q", got)
	}
	beta = sessionByLabel(x, "beta")
	if got := assistantTexts(beta); beta.Status != StatusCompleted || len(got) != 2 || got[1] != "Beta done." {
		t.Errorf("beta is %s with answers %q", beta.Status, got)
	}
	// The root's history keeps the failure, then says it no longer
	// stands, then has beta's result, in that order.
	var order []string
	for _, m := range root.Messages {
		switch {
		case strings.HasPrefix(m.Content, failedResult(beta.ID)):
			order = append(order, "failed")
		case strings.HasPrefix(m.Content, "<"+coordination.TagRunResumed+" "):
			order = append(order, "resumed")
			if !m.NoReply || !strings.Contains(m.Content, beta.ID) || !strings.Contains(m.Content, "You exceeded your current quota") {
				t.Errorf("the note of the resume: no_reply %v, %s", m.NoReply, m.Content)
			}
		case strings.HasPrefix(m.Content, `<task_result task_id="`+beta.ID+`" agent="researcher" status="completed">`):
			order = append(order, "completed")
		}
	}
	if strings.Join(order, " ") != "failed resumed completed" {
		t.Errorf("beta in the root's history: %q", order)
	}
	revived := map[string]bool{}
	for _, ev := range events {
		if ev.Type == event.SessionStatus && ev.Session.Reason == reasonRevived {
			revived[ev.SessionID] = true
		}
	}
	if len(revived) != 2 || !revived[root.ID] || !revived[beta.ID] {
		t.Errorf("sessions.status events say these came back: %v, want the root and beta", revived)
	}
}

// Deeper: the root delegates to a sub-orchestrator, which spawns two
// leaves. The quota runs out under the first leaf; its failure reaches the
// sub-orchestrator, whose call fails, which cancels the second leaf (still
// at work) and reaches the root, whose call fails. A resume brings all four
// back: the second leaf because it was cancelled only as its parent failed.
// The delegation runs again, and each parent is told only of the children
// whose failure it had read.
func TestFailedRunResumesAWholeTree(t *testing.T) {
	var broke atomic.Bool
	var leaf2Calls atomic.Int32
	stopped, rootWaits, subWaits, leaf2Works := newGate(), newGate(), newGate(), newGate()
	t.Cleanup(stopped.open)
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("delegate_task", obj{"description": "Run the leaves", "custom_config": obj{"label": "sub"}}))
		case c.isRoot() && c.saw(`status="completed">`):
			return say("Final answer: the leaves are done.")
		case c.isRoot():
			rootWaits.open()
			return say("Waiting for the delegation.")
		case c.task == "Run the leaves" && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Leaf one", "label": "leaf1", "agent": "researcher"}),
				call("sessions_spawn", obj{"task": "Leaf two", "label": "leaf2", "agent": "researcher"}))
		case c.task == "Run the leaves" && c.saw("\nLeaf one done.") && c.saw("\nLeaf two done."):
			return say("Both leaves done.")
		case c.task == "Run the leaves":
			subWaits.open()
			return say("Waiting for the leaves.")
		case c.label == "leaf1" && c.turns == 0:
			// Both parents have answered and the other leaf is at work
			// before the quota runs out.
			rootWaits.wait()
			subWaits.wait()
			leaf2Works.wait()
			broke.Store(true)
			return do(call("read_file", obj{"path": "README.md"}))
		case c.label == "leaf1":
			return say("Leaf one done.")
		case c.label == "leaf2":
			if leaf2Calls.Add(1) == 1 {
				leaf2Works.open()
				stopped.wait() // at work until the run has failed
			}
			return say("Leaf two done.")
		}
		return say("unexpected: " + c.task)
	})
	hs := quotaServer(t, p, &broke)
	dir := t.TempDir()
	e := recEngine(t, dir, hs.URL+"/v1", nil)
	writeReadme(t, e)
	x := failRun(t, e, "A tree")
	stopped.open()
	sub, leaf1, leaf2 := sessionByLabel(x, "sub"), sessionByLabel(x, "leaf1"), sessionByLabel(x, "leaf2")
	if sub == nil || leaf1 == nil || leaf2 == nil ||
		sub.Status != StatusFailed || leaf1.Status != StatusFailed || leaf2.Status != StatusCancelled {
		t.Fatalf("before the resume: sessions %s", sessionStates(x))
	}
	if len(x.Delegations) != 1 || x.Delegations[0].Status != delegFailed {
		t.Fatalf("delegations before the resume: %+v", x.Delegations)
	}
	before := x

	broke.Store(false)
	events, x := resumeElsewhere(t, e, dir, hs.URL+"/v1", nil, before)
	for _, s := range x.Sessions {
		if s.Status != StatusCompleted {
			t.Errorf("session %s (%s) is %s: %s", s.ID, s.Label, s.Status, s.Error)
		}
	}
	if len(x.Delegations) != 1 || x.Delegations[0].Status != delegCompleted || x.Delegations[0].Error != "" {
		t.Errorf("delegation after the resume: %+v", x.Delegations)
	}
	revived := map[string]bool{}
	for _, ev := range events {
		if ev.Type == event.SessionStatus && ev.Session.Reason == reasonRevived {
			revived[ev.SessionID] = true
		}
	}
	if len(revived) != 4 {
		t.Errorf("%d sessions came back, want 4", len(revived))
	}
	told := func(s *store.ExportSession) (names []string) {
		for _, m := range s.Messages {
			if d, ok := coordination.ParseDelivered(m.Content); ok && d.Tag == coordination.TagRunResumed {
				for _, k := range x.Sessions {
					if strings.Contains(d.Body, k.ID) {
						names = append(names, k.Label)
					}
				}
			}
		}
		return names
	}
	if got := told(&x.Sessions[0]); strings.Join(got, ",") != "sub" {
		t.Errorf("the root was told that %q came back, want sub", got)
	}
	if got := told(sessionByLabel(x, "sub")); strings.Join(got, ",") != "leaf1" {
		t.Errorf("sub was told that %q came back, want leaf1", got)
	}
	if got := assistantTexts(sessionByLabel(x, "leaf2")); len(got) != 1 || got[0] != "Leaf two done." {
		t.Errorf("leaf2's answers: %q", got)
	}
}

// A failure that never reached its parent's history is withdrawn: the
// worker fails while the orchestrator's own call is on its way, so the
// report waits in the orchestrator's inbox, and that call fails too. The
// resume brings both back; the orchestrator never sees the failure, nor a
// note about it, only the worker's result.
func TestFailedRunWithdrawsAnUnreadFailure(t *testing.T) {
	var fixed atomic.Bool
	rootAsks := newGate()
	t.Cleanup(rootAsks.open)
	quota := &scripted.Fault{Status: 429, Body: quotaBody}
	var e *Engine
	workerFailed := func() bool {
		for range 500 {
			if x, err := e.Export(context.Background(), ""); err == nil {
				if w := sessionByLabel(x, "worker"); w != nil && w.Status == StatusFailed {
					return true
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && c.saw(`status="completed">`):
			return say("Final answer: the worker is done.")
		case c.isRoot() && !fixed.Load():
			rootAsks.open()
			if !workerFailed() {
				t.Error("the worker did not fail")
			}
			return scripted.Reply{Fault: quota}
		case c.isRoot():
			return say("Waiting for the worker.")
		case !fixed.Load():
			rootAsks.wait()
			return scripted.Reply{Fault: quota}
		default:
			return say("Worker done.")
		}
	})
	hs := recServer(t, p)
	dir := t.TempDir()
	e = recEngine(t, dir, hs.URL+"/v1", nil)
	x := failRun(t, e, "One worker")
	if sessionByLabel(x, "worker").Status != StatusFailed {
		t.Fatalf("before the resume: sessions %s", sessionStates(x))
	}
	worker := sessionByLabel(x, "worker").ID
	for _, m := range x.Sessions[0].Messages {
		if strings.HasPrefix(m.Content, failedResult(worker)) {
			t.Fatalf("the worker's failure reached the root's history before the resume: the test did not set up what it means to")
		}
	}
	before := x
	fixed.Store(true)
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", nil, before)
	for _, m := range x.Sessions[0].Messages {
		if strings.HasPrefix(m.Content, failedResult(worker)) || strings.HasPrefix(m.Content, "<"+coordination.TagRunResumed) {
			t.Errorf("the root was told of a failure it never read: %s", m.Content)
		}
	}
	if got := assistantTexts(&x.Sessions[0]); got[len(got)-1] != "Final answer: the worker is done." {
		t.Errorf("root's answers: %q", got)
	}
}

// A failure its parent has answered stays: the worker fails on its own
// (its prompt is too long for the model), the orchestrator reads that and
// goes on without it, and only then does the quota run out. The resume
// brings back the orchestrator alone.
func TestFailedRunKeepsAnsweredFailures(t *testing.T) {
	var broke atomic.Bool
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && c.last("read_file") != "":
			return say("Final answer: done without the worker.")
		case c.isRoot() && c.saw(`status="failed">`):
			broke.Store(true)
			return do(call("read_file", obj{"path": "README.md"}))
		case c.isRoot():
			return say("Waiting for the worker.")
		default:
			return scripted.Reply{Fault: &scripted.Fault{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 8192 tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`}}
		}
	})
	hs := quotaServer(t, p, &broke)
	dir := t.TempDir()
	e := recEngine(t, dir, hs.URL+"/v1", nil)
	writeReadme(t, e)
	x := failRun(t, e, "One worker")
	if sessionByLabel(x, "worker").Status != StatusFailed {
		t.Fatalf("before the resume: sessions %s", sessionStates(x))
	}
	before := x
	broke.Store(false)
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", nil, before)
	w := sessionByLabel(x, "worker")
	if w.Status != StatusFailed || len(w.Messages) != len(sessionByLabel(before, "worker").Messages) {
		t.Errorf("the worker whose failure was answered came back: %s, %d messages", w.Status, len(w.Messages))
	}
	for _, m := range x.Sessions[0].Messages {
		if strings.HasPrefix(m.Content, "<"+coordination.TagRunResumed) {
			t.Errorf("the root was told of a resume that brought none of its children back: %s", m.Content)
		}
	}
}

// A run stopped by its token budget cannot resume until the budget is
// raised, and says so; then every session the budget ended comes back.
func TestFailedRunOnItsBudgetResumesOnceRaised(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && c.saw(`status="completed">`):
			return say("Final answer: the worker read it.")
		case c.isRoot():
			return say("Waiting for the worker.")
		case c.turns == 0:
			return do(call("read_file", obj{"path": "README.md"}))
		default:
			return say("It is a demo.")
		}
	})
	hs := recServer(t, p)
	dir := t.TempDir()
	e := recEngine(t, dir, hs.URL+"/v1", budget(1))
	writeReadme(t, e)
	x := failRun(t, e, "One worker")
	if !strings.Contains(x.Run.Error, "token budget exhausted") {
		t.Fatalf("run error %q", x.Run.Error)
	}
	e.Close()
	e = recEngine(t, dir, hs.URL+"/v1", budget(1))
	if _, err := e.Resume(context.Background(), x.Run.ID); err == nil || !strings.Contains(err.Error(), "raise the limit") ||
		!strings.Contains(err.Error(), "limits.token_budget_per_run is 1") {
		t.Fatalf("resume within the same budget: %v", err)
	}
	if got, _ := e.Export(context.Background(), x.Run.ID); got.Run.Status != RunFailed {
		t.Fatalf("a refused resume left the run %s", got.Run.Status)
	}
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", budget(0), x)
	for _, s := range x.Sessions {
		if s.Status != StatusCompleted {
			t.Errorf("session %s (%s) is %s: %s", s.ID, s.Label, s.Status, s.Error)
		}
	}
}

// budget sets the run's token budget.
func budget(n int) func(*config.Config) {
	return func(c *config.Config) { c.Limits.TokenBudgetPerRun = n }
}

// failRun runs goal on e, headless, and returns the run, failing the test
// unless the run failed.
func failRun(t *testing.T, e *Engine, goal string) *store.Export {
	t.Helper()
	_, code, _ := recRun(t, e, true, func(ctx context.Context) (*Run, error) { return e.Start(ctx, goal) })
	x, err := e.Export(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitFailed || x.Run.Status != RunFailed {
		t.Fatalf("exit %d, run %s (%q), sessions %s; want a failed run", code, x.Run.Status, x.Run.Error, sessionStates(x))
	}
	return x
}

func sessionStates(x *store.Export) string {
	var b strings.Builder
	for _, s := range x.Sessions {
		b.WriteString(s.ID + "(" + s.Label + ")=" + s.Status + " ")
	}
	return b.String()
}

func writeReadme(t *testing.T, e *Engine) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.Config().Workspace, "README.md"), []byte("# Demo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Whether a parent read a child's failure, and answered it, from what its
// history holds and the report's inbox item.
func TestAnsweredBy(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	report := coordination.FormatTaskResult("s-c", "researcher", StatusFailed, "429 quota")
	msg := func(i int, role, source, content string, at time.Time) store.Message {
		return store.Message{Index: i, Role: role, Source: source, Content: content, CreatedAt: at}
	}
	tool := func(i int, callID string) store.Message {
		return store.Message{Index: i, Role: "tool", ToolCallID: callID, Source: "system", CreatedAt: t0}
	}
	base := []store.Message{msg(0, "system", "system", "prompt", t0), msg(1, "user", "human", "goal", t0), msg(2, "assistant", "agent", "spawning", t0)}
	with := func(ms ...store.Message) []store.Message { return append(append([]store.Message(nil), base...), ms...) }
	for _, tc := range []struct {
		name                string
		history             []store.Message
		rep                 *store.Report
		delivered, answered bool
	}{
		{"in the history, answered", with(msg(3, "user", "system", report, t0), msg(4, "assistant", "agent", "ok", t0)), nil, true, true},
		{"in the history, the parent's call failed", with(msg(3, "user", "system", report, t0)), nil, true, false},
		{"carried by a message the inbox knows", with(msg(3, "user", "system", "x", t0), msg(4, "assistant", "agent", "ok", t0)),
			&store.Report{Index: 3}, true, true},
		{"still in the inbox", base, &store.Report{Index: -1}, false, false},
		{"returned by task_wait, answered", with(tool(3, "call-9"), msg(4, "assistant", "agent", "ok", t0)),
			&store.Report{Index: -1, ConsumedBy: "call-9"}, true, true},
		{"returned by task_wait, not answered", with(tool(3, "call-9")), &store.Report{Index: -1, ConsumedBy: "call-9"}, true, false},
		{"never reported (the budget ended it)", base, nil, false, false},
		{"a report of an earlier failure, answered", with(msg(3, "user", "system", report, t0.Add(-time.Hour)), msg(4, "assistant", "agent", "ok", t0)),
			nil, false, false},
		{"the same words from an agent", with(msg(3, "user", "agent", report, t0), msg(4, "assistant", "agent", "ok", t0)), nil, false, false},
		{"another child's report", with(msg(3, "user", "system", coordination.FormatTaskResult("s-d", "researcher", StatusFailed, "x"), t0),
			msg(4, "assistant", "agent", "ok", t0)), nil, false, false},
		{"a completed result", with(msg(3, "user", "system", coordination.FormatTaskResult("s-c", "researcher", StatusCompleted, "x"), t0),
			msg(4, "assistant", "agent", "ok", t0)), nil, false, false},
	} {
		delivered, answered := answeredBy(tc.history, "s-c", tc.rep, t0)
		if delivered != tc.delivered || answered != tc.answered {
			t.Errorf("%s: delivered %v, answered %v; want %v, %v", tc.name, delivered, answered, tc.delivered, tc.answered)
		}
	}
}

// A run whose orchestrator used up max_turns_per_session cannot resume
// until the limit is raised, and says so: revived, it failed again before
// its first call, after saying it had resumed.
func TestFailedRunOnItsTurnLimitResumesOnceRaised(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.turns < 2 {
			return do(call("list_files", obj{}))
		}
		return say("Final answer: listed.")
	})
	hs := recServer(t, p)
	dir := t.TempDir()
	turns := func(n int) func(*config.Config) {
		return func(c *config.Config) { c.Limits.MaxTurnsPerSession = n }
	}
	e := recEngine(t, dir, hs.URL+"/v1", turns(2))
	x := failRun(t, e, "List the files")
	if !strings.Contains(x.Run.Error, "max_turns_per_session") {
		t.Fatalf("run error %q", x.Run.Error)
	}
	e.Close()
	// Lowered since, the limit is below the calls made: the refusal says
	// both, and how far to raise it.
	e = recEngine(t, dir, hs.URL+"/v1", turns(1))
	if _, err := e.Resume(context.Background(), x.Run.ID); err == nil ||
		!strings.Contains(err.Error(), "it has made 2 model calls and limits.max_turns_per_session is 1; raise the limit above 2") {
		t.Fatalf("resume within the limit: %v", err)
	}
	e.Close()
	e = recEngine(t, dir, hs.URL+"/v1", turns(2))
	if _, err := e.Resume(context.Background(), x.Run.ID); err == nil ||
		!strings.Contains(err.Error(), "it has made 2 model calls and limits.max_turns_per_session is 2; raise the limit above 2") {
		t.Fatalf("resume within the same limit: %v", err)
	}
	if got, _ := e.Export(context.Background(), x.Run.ID); got.Run.Status != RunFailed {
		t.Fatalf("a refused resume left the run %s", got.Run.Status)
	}
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", turns(3), x)
	if x.Run.Status != RunCompleted {
		t.Errorf("resumed with the limit raised, the run is %s: %s", x.Run.Status, x.Run.Error)
	}
}

// A call that the failure cut short (the orchestrator's spawn, waiting for
// its worker when the budget ran out) keeps its result, which says it did
// not run to its end; the orchestrator that comes back is told which
// calls those were, and makes them again.
func TestFailedRunTellsOfTheCallsItCutShort(t *testing.T) {
	var note atomic.Value
	note.Store("")
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher", "wait": true}))
		case c.isRoot() && c.saw("<run_resumed") && c.turns == 1:
			for _, m := range c.req.Messages {
				if strings.Contains(m.Content, "<run_resumed") {
					note.Store(m.Content)
				}
			}
			return do(call("sessions_spawn", obj{"task": "Read the README again", "label": "again", "agent": "researcher", "wait": true}))
		case c.isRoot():
			return say("Final answer: read.")
		case c.turns == 0:
			return do(call("read_file", obj{"path": "README.md"}))
		default:
			return say("It is a demo.")
		}
	})
	hs := recServer(t, p)
	dir := t.TempDir()
	// Enough for the orchestrator's first call, not for the worker's.
	e := recEngine(t, dir, hs.URL+"/v1", budget(1))
	writeReadme(t, e)
	x := failRun(t, e, "One worker")
	var spawnID string
	for _, m := range rootOf(x).Messages {
		if m.Role == "tool" && strings.Contains(m.Content, "not run to its end") {
			spawnID = m.ToolCallID
		}
	}
	if spawnID == "" {
		t.Fatalf("the failure cut no call short: %q", toolResults(rootOf(x), "sessions_spawn"))
	}
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", budget(0), x)
	got, _ := note.Load().(string)
	d, ok := coordination.ParseDelivered(got)
	if !ok || !strings.Contains(d.Body, "These calls of yours were cut short by the failure and did not run to their end: sessions_spawn ("+spawnID+")") {
		t.Fatalf("the orchestrator's note after the resume: %q", got)
	}
	if strings.Contains(d.Body, "These sessions are running again") {
		t.Errorf("the note names sessions that came back, and none had been reported failed: %q", d.Body)
	}
	if s := sessionByLabel(x, "again"); s == nil || s.Status != StatusCompleted {
		t.Errorf("the call made again did not run: sessions %s", sessionStates(x))
	}
}
