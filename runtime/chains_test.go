package runtime

import (
	"context"
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Chains and fan-in barriers (DESIGN.md §3 sessions_spawn: chainAfter,
// dependsOn, an array without parallel).

// chainAfter by label, dependsOn by id and label, and an array without
// parallel each make the new session wait for its predecessors; a label
// already used among the caller's children is a tool error.
func TestChainsAndFanIn(t *testing.T) {
	// "a" answers only once the root's first turn is over, so that "b" is
	// spawned while "a" is still running (else b may rightly start at once).
	aMayAnswer := newGate()
	t.Cleanup(aMayAnswer.open)
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			if c.label == "a" {
				aMayAnswer.wait()
			}
			return say("result of " + c.label)
		}
		if c.turns > 0 {
			aMayAnswer.open()
		}
		switch c.turns {
		case 0:
			return do(
				call("sessions_spawn", obj{"task": "First", "label": "a"}),
				call("sessions_spawn", obj{"task": "Second", "label": "b", "chainAfter": "a"}),
				call("sessions_spawn", obj{"task": []string{"Step one", "Step two", "Step three"}, "label": "step"}),
			)
		case 1:
			ids := spawned(t, c.results("sessions_spawn")[0])
			return do(
				call("sessions_spawn", obj{"task": "Combine everything", "label": "fanin", "dependsOn": []string{ids["a"], "b", "step-3"}}),
				call("sessions_spawn", obj{"task": "Clash", "label": "a"}),
			)
		}
		return say("done")
	})
	x, events, code := swarm(t, p, nil)
	mustComplete(t, x, code)

	id := func(label string) string { return mustLabel(t, x, label).ID }
	after := func(later, earlier string) {
		t.Helper()
		run, done := statusSeq(events, id(later), "running"), statusSeq(events, id(earlier), "completed")
		if run == 0 || done == 0 || run < done {
			t.Errorf("%s started (seq %d) before %s completed (seq %d)", later, run, earlier, done)
		}
	}
	after("b", "a")
	after("step-2", "step-1")
	after("step-3", "step-2")
	for _, pred := range []string{"a", "b", "step-3"} {
		after("fanin", pred)
	}
	for _, label := range []string{"b", "step-2", "step-3"} {
		if st := statuses(events, id(label)); len(st) == 0 || st[0] != "pending" {
			t.Errorf("%s statuses %v: a chained session starts pending", label, st)
		}
	}
	if st := statuses(events, id("step-1")); len(st) == 0 || st[0] != "running" {
		t.Errorf("the head of a chain statuses %v, want running at once", st)
	}
	for _, s := range x.Sessions {
		if s.Status != "completed" {
			t.Errorf("%s is %s: %s", s.Label, s.Status, s.Error)
		}
	}
	root := rootOf(x)
	spawns := toolResults(root, "sessions_spawn")
	if e := toolError(spawns[len(spawns)-1]); !strings.Contains(e, `label "a" is already used`) {
		t.Errorf("a label clash gave %s", spawns[len(spawns)-1])
	}
	n := 0
	for _, s := range x.Sessions {
		if s.Label == "a" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d sessions labelled a", n)
	}
}

// A predecessor that fails or is cancelled fails what is chained after it
// (by chainAfter or by a $ reference) with that reason, and the run ends.
func TestChainPredecessorFailsOrCancelled(t *testing.T) {
	doomed, broken := newGate(), newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot():
			switch c.turns {
			case 0:
				return do(
					call("sessions_spawn", obj{"task": "Never finishes", "label": "doomed"}),
					call("sessions_spawn", obj{"task": "After doomed", "label": "next", "chainAfter": "doomed"}),
					call("sessions_spawn", obj{"task": "Uses doomed", "label": "uses", "sharedContext": obj{"$doomed": "reference"}}),
					call("sessions_spawn", obj{"task": "Breaks", "label": "broken"}),
					call("sessions_spawn", obj{"task": "After broken", "label": "afterbroken", "dependsOn": []string{"broken"}}),
				)
			case 1:
				broken.open()
				return do(call("task_cancel", obj{"task_id": "doomed"}))
			case 2:
				doomed.open()
			}
			return say("done")
		case c.label == "doomed":
			doomed.wait()
			return say("too late")
		case c.label == "broken":
			broken.wait()
			return scripted.Reply{Fault: &scripted.Fault{Status: 400, Body: `{"error":{"message":"this model cannot do that","type":"invalid_request_error"}}`}}
		}
		return say("should not run: " + c.label)
	})
	x, _, code := swarm(t, p, nil, doomed, broken)
	mustComplete(t, x, code)

	want := map[string]string{
		"doomed":      "cancelled",
		"next":        "failed",
		"uses":        "failed",
		"broken":      "failed",
		"afterbroken": "failed",
	}
	for label, st := range want {
		s := mustLabel(t, x, label)
		if s.Status != st {
			t.Errorf("%s is %s, want %s (error %q)", label, s.Status, st, s.Error)
		}
	}
	for _, label := range []string{"next", "uses"} {
		if e := mustLabel(t, x, label).Error; !strings.Contains(e, "predecessor researcher (doomed) cancelled") {
			t.Errorf("%s error %q does not give the predecessor's cancellation", label, e)
		}
	}
	if e := mustLabel(t, x, "afterbroken").Error; !strings.Contains(e, "predecessor researcher (broken) failed") || !strings.Contains(e, "cannot do that") {
		t.Errorf("afterbroken error %q does not give the predecessor's failure", e)
	}
	for _, label := range []string{"next", "uses", "afterbroken"} {
		if s := mustLabel(t, x, label); len(s.Messages) != 0 || s.Turns != 0 {
			t.Errorf("%s ran (%d messages) although its predecessor did not complete", label, len(s.Messages))
		}
	}
	// The parent hears about each failure as a <task_result>.
	root := rootOf(x)
	for _, label := range []string{"next", "uses", "afterbroken"} {
		s := mustLabel(t, x, label)
		found := false
		for _, m := range injected(root, "task_result") {
			if strings.Contains(m.Content, `task_id="`+s.ID+`"`) && strings.Contains(m.Content, `status="failed"`) {
				found = true
			}
		}
		if !found {
			t.Errorf("the root got no failed <task_result> for %s", label)
		}
	}
}

// TestEndedSessionStaysEnded: once failed or cancelled, a session's status
// does not change again, whatever a late caller asks; a completed one may
// still be woken.
func TestEndedSessionStaysEnded(t *testing.T) {
	e := testEngine(t, nil, scripted.Bench(), nil)
	ctx := context.Background()
	run, err := e.Start(ctx, scripted.BenchGoal(1, 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	root := run.root
	set := func(status string) {
		t.Helper()
		if err := e.store.Do(ctx, func(tx *store.Tx) error { return root.setStatusTx(tx, status, "test") }); err != nil {
			t.Fatal(err)
		}
	}
	stored := func() string {
		t.Helper()
		ss, err := e.Store().Sessions(ctx, run.ID())
		if err != nil || len(ss) != 1 {
			t.Fatalf("sessions: %v, %v", ss, err)
		}
		return ss[0].Status
	}
	set(StatusRunning) // completed -> running: a woken session
	if got := root.status(); got != StatusRunning {
		t.Fatalf("completed session set running is %s", got)
	}
	for _, final := range []string{StatusFailed, StatusCancelled} {
		set(final)
		for _, later := range []string{StatusRunning, StatusWaiting, StatusCompleted, StatusPending} {
			set(later)
			if got := root.status(); got != final {
				t.Errorf("%s session set %s is now %s in memory", final, later, got)
			}
			if got := stored(); got != final {
				t.Errorf("%s session set %s is stored as %s", final, later, got)
			}
		}
		// Bring it back the way a test may, to try the other final status.
		root.mu.Lock()
		root.rec.Status = StatusRunning
		root.mu.Unlock()
	}
}

// A session cancelled in the middle of a tool call (its sessions_spawn
// waiting for a child) keeps no call without a result: the export shows
// what became of every call, and a history sent to a model again is one
// a chat API accepts.
func TestCancelledSessionAnswersItsCalls(t *testing.T) {
	blocked, release := newGate(), newGate()
	defer release.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Plan the work", "label": "p", "agent": "planner", "wait": false}))
		case c.isRoot() && c.turns == 1:
			blocked.wait()
			return do(call("task_cancel", obj{"task_id": "p"}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "p" && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Slow part", "label": "slow", "agent": "researcher", "wait": true}))
		case c.label == "slow":
			blocked.open()
			release.wait()
			return say("slow done")
		default:
			return say("done")
		}
	})
	e := testEngine(t, nil, p, nil)
	if _, code := headless(t, e, "cancel mid-call", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	for _, s := range x.Sessions {
		results := map[string]int{}
		var calls []string
		for _, m := range s.Messages {
			for _, tc := range m.ToolCalls {
				calls = append(calls, tc.ID+" "+tc.Name)
			}
			if m.Role == "tool" {
				results[m.ToolCallID]++
			}
		}
		for _, c := range calls {
			id, name, _ := strings.Cut(c, " ")
			if results[id] != 1 {
				t.Errorf("%s (%s, %s): call %s has %d results", s.ID, s.Label, s.Status, name, results[id])
				for _, m := range s.Messages {
					t.Logf("  %s %q %d calls, for %s", m.Role, textcut.Clip(m.Content, 120), len(m.ToolCalls), m.ToolCallID)
				}
			}
		}
	}
	if planner := sessionByLabel(x, "p"); planner == nil || planner.Status != StatusCancelled {
		t.Fatalf("planner %+v; want it cancelled", planner)
	} else if res := toolResults(planner, "sessions_spawn"); len(res) != 1 || !strings.Contains(res[0], "cancelled") {
		t.Errorf("the planner's spawn ended with %q", res)
	}
}

// A message to a task that failed before it started says it waits for the
// task, not that it is in a history the task never had.
func TestMessageToATaskThatNeverStarted(t *testing.T) {
	broken := newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Breaks", "label": "broken"}),
				call("sessions_spawn", obj{"task": "After broken", "label": "after", "dependsOn": []string{"broken"}}))
		case c.isRoot() && c.turns == 1:
			broken.open() // both are spawned by now
			return do(call("task_wait", obj{"task_ids": []string{"broken", "after"}, "timeout": 30}))
		case c.isRoot() && c.turns == 2:
			return do(call("task_send_message", obj{"task_id": "after", "message": "FYI", "noReply": true}))
		case c.isRoot():
			return say("done")
		case c.label == "broken":
			broken.wait()
			return scripted.Reply{Fault: &scripted.Fault{Status: 400, Body: `{"error":{"message":"this model cannot do that","type":"invalid_request_error"}}`}}
		}
		return say("should not run: " + c.label)
	})
	x, _, code := swarm(t, p, nil, broken)
	mustComplete(t, x, code)
	res := toolResults(rootOf(x), "task_send_message")
	if len(res) != 1 || !strings.Contains(res[0], "failed before it started: the message waits for it") {
		t.Errorf("the message to a task that never started: %q", res)
	}
}
