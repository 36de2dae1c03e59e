package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// delegate_task and its companions (seed 002, DESIGN.md §3 Delegation).

func delegationOf(t *testing.T, s string) agents.DelegationStatus {
	t.Helper()
	var d agents.DelegationStatus
	decode(t, s, &d)
	return d
}

func exportedPlanTask(x *store.Export, sessionID, taskID string) store.ExportPlanTask {
	for _, p := range x.Plans {
		if p.SessionID != sessionID {
			continue
		}
		for _, t := range p.Tasks {
			if t.ID == taskID {
				return t
			}
		}
	}
	return store.ExportPlanTask{}
}

func exportedDelegation(x *store.Export, id string) store.ExportDelegation {
	for _, d := range x.Delegations {
		if d.ID == id {
			return d
		}
	}
	return store.ExportDelegation{}
}

// openWhen opens g once an event matching ok has been published.
func openWhen(t *testing.T, e *Engine, g *gate, ok func(ev event.Event) bool) {
	sub := e.Bus().Subscribe(64)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		defer sub.Close()
		for {
			select {
			case ev, more := <-sub.C:
				if !more {
					return
				}
				if ok(ev) {
					g.open()
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
}

// A delegation linked to a plan task marks it in_progress, then completed
// with the delegation, or blocked with the reason when the delegation
// fails; wait:true returns the result; a delegate cannot delegate past
// max_delegation_depth; the result is an error until the delegation ends;
// the parent does not complete while delegations run; all of it exported.
func TestDelegationLinkedToPlan(t *testing.T) {
	release := newGate()
	// The risky delegation fails only once the checklist has completed:
	// the root is woken by the checklist's report first, and its next turn
	// asks for that result.
	checklistDone := newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			switch c.task {
			case "Write the checklist":
				release.wait()
				return say("checklist written")
			case "Risky work":
				release.wait()
				checklistDone.wait()
				return scripted.Reply{Fault: &scripted.Fault{Status: 400, Body: `{"error":{"message":"the risky model refused","type":"invalid_request_error"}}`}}
			case "Blocking work":
				if c.turns == 0 {
					return do(call("delegate_task", obj{"description": "Nested work"}))
				}
				return say("blocking work done")
			}
			return say("unexpected delegation: " + c.task)
		}
		dl := func(i int) string { return delegationOf(t, c.results("delegate_task")[i]).DelegationID }
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"checklist","description":"Checklist"},{"id":"risky","description":"Risky"},{"id":"final","description":"Final","depends_on":["checklist","risky"]}]`)}))
		case 1:
			return do(
				call("delegate_task", obj{"description": "Write the checklist", "task_id": "checklist"}),
				call("delegate_task", obj{"description": "Risky work", "task_id": "risky"}),
				call("get_task_plan", obj{}),
			)
		case 2:
			return do(
				call("check_delegation_status", obj{"delegation_id": dl(0)}),
				call("get_delegation_result", obj{"delegation_id": dl(0)}),
				call("get_delegation_result", obj{"delegation_id": "d-none"}),
			)
		case 3:
			return do(call("delegate_task", obj{"description": "Blocking work", "wait": true}))
		case 4:
			return say("root final while delegations run")
		case 5:
			return do(call("get_delegation_result", obj{"delegation_id": dl(0)}))
		}
		return say("root final")
	})
	e := testEngine(t, nil, p, nil)
	t.Cleanup(release.open)
	t.Cleanup(checklistDone.open)
	// Release the delegations once the root has answered and waits for
	// them (not while it waits inside delegate_task with wait: true).
	openWhen(t, e, release, func(ev event.Event) bool {
		s := ev.Session
		return ev.Type == event.SessionStatus && s != nil && s.ParentID == "" && s.Status == StatusWaiting && strings.Contains(s.Reason, "active child")
	})
	openWhen(t, e, checklistDone, func(ev event.Event) bool {
		s := ev.Session
		return ev.Type == event.SessionStatus && s != nil && s.Kind == "delegation" && s.Title == "Write the checklist" && s.Status == StatusCompleted
	})
	events, code := headless(t, e, "delegate", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	root := rootOf(x)

	dels := callResults(root, "delegate_task")
	d1, d2, d3 := delegationOf(t, dels[0]), delegationOf(t, dels[1]), delegationOf(t, dels[2])
	if d1.Status != "running" || d1.PlanTaskID != "checklist" || d1.Depth != 1 || d1.SessionID == "" {
		t.Errorf("delegate_task returned %s", dels[0])
	}
	var plan struct {
		Tasks []agents.PlanTaskView `json:"tasks"`
	}
	decode(t, callResults(root, "get_task_plan")[0], &plan)
	for _, task := range plan.Tasks[:2] {
		if task.Status != "in_progress" || !strings.Contains(task.Note, "delegated to") {
			t.Errorf("plan task %s is %s (%q) right after delegating it", task.ID, task.Status, task.Note)
		}
	}
	if st := delegationOf(t, callResults(root, "check_delegation_status")[0]); st.Status != "running" || st.Completed {
		t.Errorf("check_delegation_status while running: %+v", st)
	}
	results := callResults(root, "get_delegation_result")
	if e := toolError(results[0]); !strings.Contains(e, "still running") {
		t.Errorf("get_delegation_result while running gave %s", results[0])
	}
	if e := toolError(results[1]); !strings.Contains(e, "d-none") || !strings.Contains(e, d1.DelegationID) {
		t.Errorf("an unknown delegation gave %s", results[1])
	}
	if r := delegationOf(t, results[2]); r.Status != "completed" || !r.Completed || r.Result != "checklist written" {
		t.Errorf("get_delegation_result after completion gave %s", results[2])
	}

	// wait: true returns the finished delegation; its sub-orchestrator could
	// not delegate again.
	if d3.Status != "completed" || !d3.Completed || d3.Result != "blocking work done" {
		t.Errorf("delegate_task with wait returned %s", dels[2])
	}
	sub := findSession(x, d3.SessionID)
	if sub.Kind != "delegation" || sub.Agent != "orchestrator" || !strings.Contains(sub.Messages[0].Content, "You are a sub-orchestrator working on a delegated task.") {
		t.Errorf("the delegation ran as %s/%s", sub.Kind, sub.Agent)
	}
	if e := toolError(toolResults(sub, "delegate_task")[0]); !strings.Contains(e, "max_delegation_depth") {
		t.Errorf("a nested delegation gave %s", toolResults(sub, "delegate_task")[0])
	}

	// What the store says.
	if d := exportedDelegation(x, d1.DelegationID); d.Status != "completed" || d.Result != "checklist written" || d.PlanTaskID != "checklist" || d.ParentSession != root.ID {
		t.Errorf("exported delegation %+v", d)
	}
	if d := exportedDelegation(x, d2.DelegationID); d.Status != "failed" || !strings.Contains(d.Error, "risky model refused") {
		t.Errorf("exported failed delegation %+v", d)
	}
	if d := exportedDelegation(x, d3.DelegationID); d.Status != "completed" || d.PlanTaskID != "" {
		t.Errorf("exported blocking delegation %+v", d)
	}
	if len(x.Delegations) != 3 {
		t.Errorf("%d delegations exported, want 3 (the nested one was refused)", len(x.Delegations))
	}
	if task := exportedPlanTask(x, root.ID, "checklist"); task.Status != "completed" || !strings.Contains(task.Note, d1.DelegationID) {
		t.Errorf("plan task checklist %+v", task)
	}
	if task := exportedPlanTask(x, root.ID, "risky"); task.Status != "blocked" || !strings.Contains(task.Note, "failed") || !strings.Contains(task.Note, "risky model refused") {
		t.Errorf("plan task risky %+v", task)
	}
	if task := exportedPlanTask(x, root.ID, "final"); task.Status != "pending" {
		t.Errorf("plan task final %+v", task)
	}

	// The root waited for its delegations before completing.
	rootDone := statusSeq(events, root.ID, "completed")
	for _, d := range []agents.DelegationStatus{d1, d2} {
		end := statusSeq(events, d.SessionID, "completed") + statusSeq(events, d.SessionID, "failed")
		if end == 0 || rootDone < end {
			t.Errorf("the root completed (seq %d) before delegation %s ended (seq %d)", rootDone, d.DelegationID, end)
		}
	}
	if st := statuses(events, root.ID); !strings.Contains(strings.Join(st, ","), "waiting") {
		t.Errorf("root statuses %v: it never waited for its delegations", st)
	}
}

// delegation_timeout fails a delegation (and blocks its plan task), and
// max_concurrent_delegations queues the next one as pending until a place
// frees up.
func TestDelegationTimeoutAndQueue(t *testing.T) {
	stuck := newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			if c.task == "Slow work" {
				stuck.wait() // past delegation_timeout
			}
			return say("done: " + c.task)
		}
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"slow","description":"Slow"},{"id":"quick","description":"Quick"}]`)}))
		case 1:
			return do(
				call("delegate_task", obj{"description": "Slow work", "task_id": "slow"}),
				call("delegate_task", obj{"description": "Quick work", "task_id": "quick"}),
			)
		}
		return say("root done")
	})
	x, events, code := swarm(t, p, func(cfg *config.Config) {
		// Short enough to wait out; the quick delegation, which runs under
		// the same limit, needs one model call.
		cfg.Coordination.DelegationTimeout = config.Duration(3 * time.Second)
		cfg.Coordination.MaxConcurrentDelegations = 1
	}, stuck)
	mustComplete(t, x, code)
	root := rootOf(x)
	dels := callResults(root, "delegate_task")
	slow, quick := delegationOf(t, dels[0]), delegationOf(t, dels[1])
	if slow.Status != "running" {
		t.Errorf("first delegation %s", dels[0])
	}
	if quick.Status != "pending" || !strings.Contains(quick.Note, "max_concurrent_delegations") {
		t.Errorf("second delegation over the limit returned %s, want pending and queued", dels[1])
	}
	if d := exportedDelegation(x, slow.DelegationID); d.Status != "failed" || !strings.Contains(d.Error, "delegation timed out") || !strings.Contains(d.Error, "delegation_timeout") {
		t.Errorf("timed-out delegation %+v", d)
	}
	if d := exportedDelegation(x, quick.DelegationID); d.Status != "completed" || d.Result != "done: Quick work" {
		t.Errorf("queued delegation %+v", d)
	}
	if task := exportedPlanTask(x, root.ID, "slow"); task.Status != "blocked" || !strings.Contains(task.Note, "timed out") {
		t.Errorf("plan task slow %+v", task)
	}
	if task := exportedPlanTask(x, root.ID, "quick"); task.Status != "completed" {
		t.Errorf("plan task quick %+v", task)
	}
	if st := strings.Join(statuses(events, quick.SessionID), ","); st != "pending,running,completed" {
		t.Errorf("queued delegation went through %s", st)
	}
	// Its reason gives the delegations running and the limit, apart.
	var queued string
	for _, ev := range events {
		if ev.Type == event.SessionCreated && ev.SessionID == quick.SessionID {
			queued = ev.Session.Reason
		}
	}
	if queued != "queued: 1 running, and max_concurrent_delegations is 1" {
		t.Errorf("the queued delegation's reason: %q", queued)
	}
	if run, end := statusSeq(events, quick.SessionID, "running"), statusSeq(events, slow.SessionID, "failed"); run < end {
		t.Errorf("the queued delegation started (seq %d) before the running one ended (seq %d)", run, end)
	}
	if s := findSession(x, slow.SessionID); s.Status != "failed" || !strings.Contains(s.Error, "delegation timed out") {
		t.Errorf("timed-out session %s: %s", s.Status, s.Error)
	}
}

// A delegation ends on the task it was given: a plan replaced meanwhile
// with another task under the same id keeps that task as it was.
func TestDelegationDoesNotMarkAnotherTaskOfItsID(t *testing.T) {
	release := newGate()
	defer release.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.label == "slowa":
			release.wait()
			return say("old A done")
		case c.isRoot() && c.turns == 0:
			return do(call("create_task_plan", obj{"tasks": []obj{{"id": "a", "description": "Old task A"}}}))
		case c.isRoot() && c.turns == 1:
			return do(call("delegate_task", obj{"description": "do old A", "task_id": "a", "custom_config": obj{"label": "slowa"}}))
		case c.isRoot() && c.turns == 2:
			return do(call("create_task_plan", obj{"tasks": []obj{{"id": "a", "description": "Brand-new unrelated A"}}}))
		case c.isRoot() && c.turns == 3:
			release.open()
			return say("Waiting for the delegation.")
		default:
			return say("Root done.")
		}
	})
	e := testEngine(t, nil, p, nil)
	if _, code := headless(t, e, "replan", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	task := exportedPlanTask(x, x.Sessions[0].ID, "a")
	if task.Description != "Brand-new unrelated A" || task.Status == "completed" {
		t.Errorf("the new task a is %+v; the old one's delegation must not have completed it", task)
	}
	if d := x.Delegations; len(d) != 1 || d[0].Status != "completed" {
		t.Errorf("delegations %+v; want the one, completed", d)
	}
}

// A task reworded with edit_task is the same task: a second delegation of
// it is refused while the first runs, and the first's end completes it,
// which readies the task after it. A completed task is not delegated
// again without being set back first.
func TestDelegationFollowsARewordedTask(t *testing.T) {
	release := newGate()
	defer release.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.label == "slowx":
			release.wait()
			return say("checklist written")
		case !c.isRoot():
			return say(c.task + " done")
		case c.turns == 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"x","description":"Write the checklist"},{"id":"y","description":"Publish","depends_on":["x"]},{"id":"z","description":"Announce"}]`)}))
		case c.turns == 1:
			return do(call("delegate_task", obj{"description": "Write the checklist", "task_id": "x", "custom_config": obj{"label": "slowx"}}))
		case c.turns == 2:
			return do(call("edit_task", obj{"task_id": "x", "description": "Write the launch checklist (with owners)"}))
		case c.turns == 3:
			return do(
				call("delegate_task", obj{"description": "Write it again", "task_id": "x"}),
				call("update_task_status", obj{"task_id": "z", "status": "completed"}),
			)
		case c.turns == 4:
			return do(call("delegate_task", obj{"description": "Announce again", "task_id": "z"}))
		case c.turns == 5:
			release.open()
			return say("Waiting for the delegation.")
		default:
			return say("Root done.")
		}
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	root := rootOf(x)
	res := toolResults(root, "delegate_task")
	if len(res) != 3 {
		t.Fatalf("delegate_task results %q", res)
	}
	if e := toolError(res[1]); !strings.Contains(e, `task_id "x" is already delegated to `) {
		t.Errorf("a second delegation of the reworded task: %s", res[1])
	}
	if e := toolError(res[2]); !strings.Contains(e, `task_id "z" is completed already`) {
		t.Errorf("a delegation of a completed task: %s", res[2])
	}
	if task := exportedPlanTask(x, root.ID, "x"); task.Status != "completed" {
		t.Errorf("task x %+v; want completed by its delegation", task)
	}
	if z := exportedPlanTask(x, root.ID, "z"); z.Status != "completed" {
		t.Errorf("task z %+v; want it left completed", z)
	}
	if n := len(x.Delegations); n != 1 {
		t.Errorf("%d delegations stored; want 1", n)
	}
}

// A plan task is worked on by one delegation at a time, and a delegation
// that fails does not undo a completion already recorded: the model
// marked b completed itself before b's delegate failed, and d, which
// waits on b, stays ready. Delegating a task whose dependencies are not
// done says so.
func TestDelegationFailureKeepsACompletedTask(t *testing.T) {
	release := newGate()
	defer release.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.label == "slowa" || c.label == "slowb":
			release.wait()
			return scripted.Reply{Fault: &scripted.Fault{Status: 400, Body: `{"error":{"message":"the slow model refused","type":"invalid_request_error"}}`}}
		case !c.isRoot():
			return say(c.task + " done")
		case c.turns == 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"a","description":"A"},{"id":"b","description":"B"},{"id":"d","description":"D","depends_on":["b"]}]`)}))
		case c.turns == 1:
			return do(
				call("delegate_task", obj{"description": "slow A", "task_id": "a", "custom_config": obj{"label": "slowa"}}),
				call("delegate_task", obj{"description": "A again", "task_id": "a"}),
				call("delegate_task", obj{"description": "slow B", "task_id": "b", "custom_config": obj{"label": "slowb"}}),
			)
		case c.turns == 2:
			return do(call("update_task_status", obj{"task_id": "b", "status": "completed"}))
		case c.turns == 3:
			release.open()
			return say("Waiting for the delegations.")
		default:
			return say("Root done.")
		}
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	root := rootOf(x)
	res := toolResults(root, "delegate_task")
	if len(res) != 3 {
		t.Fatalf("delegate_task results %q", res)
	}
	if e := toolError(res[1]); !strings.Contains(e, `task_id "a" is already delegated to `) || !strings.Contains(e, "get_delegation_result") {
		t.Errorf("a second delegation of a running task: %s", res[1])
	}
	if a := exportedPlanTask(x, root.ID, "a"); a.Status != "blocked" || !strings.Contains(a.Note, "the slow model refused") {
		t.Errorf("task a %+v; want blocked by its delegate's failure", a)
	}
	if b := exportedPlanTask(x, root.ID, "b"); b.Status != "completed" {
		t.Errorf("task b %+v; a failing delegation must not undo its completion", b)
	}
	if n := len(x.Delegations); n != 2 {
		t.Errorf("%d delegations stored; want 2", n)
	}
}

// Delegating a task whose dependencies are not completed goes ahead, and
// says so, in one note with what else there is to say (queued for a place
// under max_concurrent_delegations) that does not contradict it.
func TestDelegatingATaskWithUnmetDependenciesSaysSo(t *testing.T) {
	// The first delegate runs on until both delegations are made: the
	// second is queued behind it, whatever the machine's speed.
	delegated := newGate()
	defer delegated.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case !c.isRoot():
			delegated.wait()
			return say(c.task + " done")
		case c.turns == 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"a","description":"A"},{"id":"b","description":"B","depends_on":["a"]},{"id":"c","description":"C","depends_on":["a","b"]}]`)}))
		case c.turns == 1:
			return do(call("delegate_task", obj{"description": "B first", "task_id": "b"}),
				call("delegate_task", obj{"description": "C, queued", "task_id": "c"}))
		default:
			delegated.open()
			return say("Root done.")
		}
	})
	x, _, code := swarm(t, p, func(c *config.Config) { c.Coordination.MaxConcurrentDelegations = 1 })
	mustComplete(t, x, code)
	res := toolResults(rootOf(x), "delegate_task")
	if len(res) != 2 || delegationOf(t, res[0]).Note != "task b depends on a, not completed yet, and the delegate does not wait for it" {
		t.Fatalf("delegate_task results %q; want a note on the unmet dependency", res)
	}
	want := "queued until a running delegation finishes (max_concurrent_delegations); it will start on its own; " +
		"task c depends on a, b, not completed yet, and the delegate does not wait for them"
	if note := delegationOf(t, res[1]).Note; note != want {
		t.Errorf("the queued delegation's note %q, want %q", note, want)
	}
}

// Delegates that delegate further while every place under
// max_concurrent_delegations is taken by delegates like them: the nested
// delegations run in their ancestors' places instead of queueing behind
// them until delegation_timeout.
func TestNestedDelegationsDoNotQueueBehindTheirAncestors(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(
				call("delegate_task", obj{"description": "Part A"}),
				call("delegate_task", obj{"description": "Part B"}),
				call("delegate_task", obj{"description": "Part C"}),
			)
		case c.isRoot() && c.turns == 1:
			return do(call("task_wait", obj{}))
		case c.isRoot():
			return say("root done")
		case strings.HasPrefix(c.task, "Deeper") || c.turns > 0:
			return say("done: " + c.task)
		default:
			return do(call("delegate_task", obj{"description": "Deeper for " + c.task, "wait": false}))
		}
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) {
		cfg.Coordination.MaxDelegationDepth = 2
		cfg.Coordination.MaxConcurrentDelegations = 2
		// A deadlock shows as delegations failed on this, not as a hang.
		cfg.Coordination.DelegationTimeout = config.Duration(20 * time.Second)
	})
	mustComplete(t, x, code)
	if n := len(x.Delegations); n != 6 {
		t.Fatalf("%d delegations, want 3 and one below each", n)
	}
	for _, d := range x.Delegations {
		if d.Status != "completed" {
			t.Errorf("delegation %s (%s) ended %s: %s", d.ID, d.Description, d.Status, d.Error)
		}
	}
}

// A delegate that must wait for a session slot says so from the start,
// as spawned children do, and its delegation's result says why.
func TestDelegateWaitingForASlotSaysPending(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("delegate_task", obj{"description": "Part A"}))
		case c.isRoot() && c.turns == 1:
			return do(call("task_wait", obj{}))
		case c.isRoot():
			return say("root done")
		default:
			return say("done: " + c.task)
		}
	})
	x, events, code := swarm(t, p, func(cfg *config.Config) { cfg.Limits.MaxConcurrentSessions = 1 })
	mustComplete(t, x, code)
	res := callResults(rootOf(x), "delegate_task")
	if len(res) != 1 || !strings.Contains(res[0], "waits for a free session slot first (max_concurrent_sessions is 1)") {
		t.Fatalf("delegate_task returned %q", res)
	}
	d := delegationOf(t, res[0])
	for _, ev := range events {
		if ev.Type == event.SessionCreated && ev.Session.ID == d.SessionID {
			if ev.Session.Status != StatusPending || !strings.Contains(ev.Session.Reason, "free session slot") {
				t.Errorf("the delegate was created %s (%q)", ev.Session.Status, ev.Session.Reason)
			}
		}
	}
}

// custom_config takes what its description offers the model, and says what
// it does not take and why.
func TestCustomConfigKeys(t *testing.T) {
	for in, want := range map[string]string{
		`{"label":"x","agent":"orchestrator","sharedContext":{"a":1}}`: "",
		`{"shared_context":{"a":1}}`:                                   "",
		`{"model":"m"}`:                                                `custom_config key "model" is not supported: a delegate runs on the run's model`,
		`{"backend":"b"}`:                                              `custom_config key "backend" is not supported; use sharedContext, agent or label`,
	} {
		_, err := parseCustomConfig(json.RawMessage(in))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
	tool, _ := agents.NewRegistry().Get("delegate_task")
	if d := tool.Schema.Properties["custom_config"].Description; strings.Contains(d, "model") {
		t.Errorf("delegate_task's custom_config offers a model: %s", d)
	}
}
