package runtime

import (
	"context"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Task plans through the planning tools (seed 002, DESIGN.md §3 Planning).

func planTaskIDs(ts []agents.PlanTaskView) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID)
	}
	return ids
}

func TestPlanToolsThroughTheRuntime(t *testing.T) {
	var book idBook
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			// A researcher has no plan of its own but can look at others'.
			if c.turns == 0 {
				return do(
					call("view_agent_tasks", obj{}),
					call("view_agent_tasks", obj{"agent_id": book.get("root")}),
					call("view_agent_tasks", obj{"agent_id": "s-none"}),
				)
			}
			return say("seen")
		}
		book.set("root", c.id)
		switch c.turns {
		case 0:
			return do(
				call("create_task_plan", obj{"tasks": raw(`[{"id":"a","description":"A","depends_on":["b"]},{"id":"b","description":"B","depends_on":["a"]}]`)}),
				call("create_task_plan", obj{"tasks": raw(`[{"id":"x","description":"X first","depends_on":[1]},"Y second"]`)}),
				call("get_task_plan", obj{}),
			)
		case 1:
			// Several plan calls in one answer run in the order given.
			return do(
				call("create_task_plan", obj{"tasks": raw(`["Research the market",{"id":"channels","description":"Pick channels"},{"id":"draft","description":"Draft the plan","depends_on":[0,"channels"]},{"id":"review","description":"Review","depends_on":["draft"]}]`)}),
				call("add_task", obj{"description": "Publish", "depends_on": []string{"review"}}),
				call("update_task_status", obj{"task_id": "t1", "status": "in_progress"}),
				call("get_ready_tasks", obj{}),
				call("get_blocked_tasks", obj{}),
			)
		case 2:
			return do(
				call("update_task_status", obj{"task_id": "t1", "status": "completed"}),
				call("update_task_status", obj{"task_id": "channels", "status": "completed"}),
				call("delete_task", obj{"task_id": "draft"}),
				call("edit_task", obj{"task_id": "review", "description": "Review carefully"}),
				call("delete_task", obj{"task_id": "t2"}),
			)
		case 3:
			return do(call("sessions_spawn", obj{"task": "Look at the plans", "label": "viewer", "wait": true}))
		case 4:
			return do(
				call("create_task_plan", obj{"tasks": []string{"1", "2", "3", "4", "5", "6"}}),
				call("add_task", obj{"description": "Fifth task"}),
				call("add_task", obj{"description": "One too many"}),
				call("update_task_status", obj{"task_id": "nope", "status": "completed"}),
			)
		}
		return say("planned")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) { cfg.Coordination.MaxTasksPerPlan = 5 })
	mustComplete(t, x, code)
	root := rootOf(x)
	creates := callResults(root, "create_task_plan")
	if e := toolError(creates[0]); !strings.Contains(e, "cycle") || !strings.Contains(e, `"a"`) || !strings.Contains(e, `"b"`) {
		t.Errorf("a cyclic plan gave %s", creates[0])
	}
	if e := toolError(creates[1]); !strings.Contains(e, `tasks[0] "x"`) || !strings.Contains(e, "comes later") {
		t.Errorf("a forward reference gave %s", creates[1])
	}
	if e := toolError(callResults(root, "get_task_plan")[0]); !strings.Contains(e, "no task plan") {
		t.Errorf("a rejected plan left a plan behind: %s", callResults(root, "get_task_plan")[0])
	}

	var created struct {
		Tasks []agents.PlanTaskView `json:"tasks"`
		Ready []string              `json:"ready"`
	}
	decode(t, creates[2], &created)
	if ids := planTaskIDs(created.Tasks); strings.Join(ids, ",") != "t1,channels,draft,review" {
		t.Errorf("plan ids %v", ids)
	}
	if deps := created.Tasks[2].DependsOn; strings.Join(deps, ",") != "t1,channels" {
		t.Errorf("draft depends_on %v, want index 0 stored as its id t1", deps)
	}
	if strings.Join(created.Ready, ",") != "t1,channels" {
		t.Errorf("ready %v", created.Ready)
	}
	var added struct {
		Task agents.PlanTaskView `json:"task"`
	}
	decode(t, callResults(root, "add_task")[0], &added)
	if added.Task.ID != "t2" || strings.Join(added.Task.DependsOn, ",") != "review" {
		t.Errorf("add_task gave %+v", added.Task)
	}
	var ready struct {
		Ready []agents.PlanTaskView `json:"ready_tasks"`
	}
	decode(t, callResults(root, "get_ready_tasks")[0], &ready)
	if ids := planTaskIDs(ready.Ready); strings.Join(ids, ",") != "channels" {
		t.Errorf("ready tasks %v, want channels (t1 is in progress)", ids)
	}
	var blocked struct {
		Blocked []agents.PlanTaskView `json:"blocked_tasks"`
	}
	decode(t, callResults(root, "get_blocked_tasks")[0], &blocked)
	waiting := map[string]string{}
	for _, b := range blocked.Blocked {
		waiting[b.ID] = strings.Join(b.WaitingOn, ",")
	}
	if sprint(waiting) != sprint(map[string]string{"draft": "t1,channels", "review": "draft", "t2": "review"}) {
		t.Errorf("blocked tasks waiting on %v", waiting)
	}

	updates := callResults(root, "update_task_status")
	var upd struct {
		Task     agents.PlanTaskView   `json:"task"`
		NewReady []agents.PlanTaskView `json:"newly_ready_tasks"`
	}
	decode(t, updates[1], &upd)
	if upd.Task.Status != "completed" || len(upd.NewReady) != 0 {
		t.Errorf("completing t1 gave %s; draft still waits on channels", updates[1])
	}
	decode(t, updates[2], &upd)
	if ids := planTaskIDs(upd.NewReady); strings.Join(ids, ",") != "draft" {
		t.Errorf("completing channels made %v ready, want draft", ids)
	}
	if e := toolError(updates[3]); !strings.Contains(e, `"nope"`) {
		t.Errorf("an unknown task id gave %s", updates[3])
	}
	deletes := callResults(root, "delete_task")
	if e := toolError(deletes[0]); !strings.Contains(e, `"draft" cannot be deleted`) || !strings.Contains(e, `"review"`) {
		t.Errorf("deleting a task others depend on gave %s", deletes[0])
	}
	if toolError(deletes[1]) != "" {
		t.Errorf("deleting a task nobody depends on gave %s", deletes[1])
	}

	// The plan size limit, for a new plan and for additions.
	if e := toolError(creates[3]); !strings.Contains(e, "6 tasks") || !strings.Contains(e, "5") {
		t.Errorf("a 6-task plan gave %s", creates[3])
	}
	adds := callResults(root, "add_task")
	if toolError(adds[1]) != "" || !strings.Contains(toolError(adds[2]), "limit") {
		t.Errorf("adding to the limit gave %s, then %s", adds[1], adds[2])
	}

	// view_agent_tasks from another session, read-only.
	viewer := mustLabel(t, x, "viewer")
	views := callResults(viewer, "view_agent_tasks")
	for _, v := range views[:2] {
		var res struct {
			Plans []struct {
				TaskID  string                `json:"task_id"`
				Summary string                `json:"summary"`
				Tasks   []agents.PlanTaskView `json:"tasks"`
			} `json:"plans"`
		}
		decode(t, v, &res)
		if len(res.Plans) != 1 || res.Plans[0].TaskID != root.ID || strings.Join(planTaskIDs(res.Plans[0].Tasks), ",") != "t1,channels,draft,review" || res.Plans[0].Summary == "" {
			t.Errorf("view_agent_tasks gave %s", v)
		}
	}
	if e := toolError(views[2]); !strings.Contains(e, "s-none") {
		t.Errorf("viewing an unknown session gave %s", views[2])
	}
	if len(views) != 3 {
		t.Errorf("%d views", len(views))
	}

	// The stored plan, as exported.
	var plan *store.ExportPlan
	for i := range x.Plans {
		if x.Plans[i].SessionID == root.ID {
			plan = &x.Plans[i]
		}
	}
	if plan == nil {
		t.Fatalf("no exported plan for the root: %+v", x.Plans)
	}
	got := map[string]string{}
	for _, task := range plan.Tasks {
		got[task.ID] = task.Status + " " + task.Description + " <" + strings.Join(task.DependsOn, ",") + ">"
	}
	want := map[string]string{
		"t1":       "completed Research the market <>",
		"channels": "completed Pick channels <>",
		"draft":    "pending Draft the plan <t1,channels>",
		"review":   "pending Review carefully <draft>",
		"t3":       "pending Fifth task <>",
	}
	if sprint(got) != sprint(want) {
		t.Errorf("exported plan %v\nwant %v", got, want)
	}
	for _, pl := range x.Plans {
		if pl.SessionID == viewer.ID {
			t.Errorf("viewing a plan created one for the viewer")
		}
	}
}

// A plan survives an interrupted run: the resumed session finds it as it
// was, keeps working on it, and the export shows the result.
func TestPlanSurvivesResume(t *testing.T) {
	dir := t.TempDir()
	reached, release := newGate(), newGate()
	first := policyFor(func(c *convo) scripted.Reply {
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"a","description":"Gather"},{"id":"b","description":"Write","depends_on":["a"]}]`)}))
		case 1:
			return do(call("update_task_status", obj{"task_id": "a", "status": "in_progress"}))
		}
		reached.open()
		release.wait() // the run is interrupted during this call
		return say("never seen")
	})
	e1 := engineAt(t, dir, first, nil)
	t.Cleanup(func() { release.open(); e1.Close() })
	run, err := e1.Start(context.Background(), "plan and stop")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-reached.ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("the root never reached its third turn")
	}
	run.Interrupt()
	release.open()
	if err := e1.Close(); err != nil {
		t.Fatal(err)
	}

	second := policyFor(func(c *convo) scripted.Reply {
		switch c.turns {
		case 2:
			return do(call("get_task_plan", obj{}), call("update_task_status", obj{"task_id": "a", "status": "completed"}))
		}
		return say("resumed and done")
	})
	e2 := engineAt(t, dir, second, nil)
	t.Cleanup(func() { e2.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := e2.Headless(ctx, HeadlessOptions{JSON: true, Out: io.Discard}, func(ctx context.Context) (*Run, error) {
		return e2.Resume(ctx, run.ID())
	})
	if err != nil || code != ExitOK {
		dumpRun(t, e2)
		t.Fatalf("resume: exit %d, %v", code, err)
	}
	x, err := e2.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	root := rootOf(x)
	var plan struct {
		Tasks []agents.PlanTaskView `json:"tasks"`
	}
	decode(t, callResults(root, "get_task_plan")[0], &plan)
	if len(plan.Tasks) != 2 || plan.Tasks[0].Status != "in_progress" || strings.Join(plan.Tasks[1].DependsOn, ",") != "a" {
		t.Errorf("after resume the plan read %+v", plan.Tasks)
	}
	var upd struct {
		NewReady []agents.PlanTaskView `json:"newly_ready_tasks"`
	}
	decode(t, callResults(root, "update_task_status")[1], &upd)
	if strings.Join(planTaskIDs(upd.NewReady), ",") != "b" {
		t.Errorf("completing a after resume made %+v ready", upd.NewReady)
	}
	if len(x.Plans) != 1 || len(x.Plans[0].Tasks) != 2 || x.Plans[0].Tasks[0].Status != "completed" || x.Plans[0].Tasks[1].Status != "pending" {
		t.Errorf("exported plans %+v", x.Plans)
	}
}

// add_task without a plan starts one: the model need not create an empty
// plan first (create_task_plan refuses one without tasks).
func TestAddTaskStartsAPlan(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.turns == 0 {
			return do(
				call("add_task", obj{"description": "First thing"}),
				call("add_task", obj{"description": "Second thing", "depends_on": []string{"t1"}}),
				call("get_blocked_tasks", obj{}),
			)
		}
		return say("done")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	root := rootOf(x)
	for _, res := range callResults(root, "add_task") {
		if e := toolError(res); e != "" {
			t.Errorf("add_task without a plan gave %s", res)
		}
	}
	if len(x.Plans) != 1 || len(x.Plans[0].Tasks) != 2 || strings.Join(x.Plans[0].Tasks[1].DependsOn, ",") != "t1" {
		t.Errorf("exported plans %+v", x.Plans)
	}
}

// The dynamic reminder names what a blocked task waits on; a task marked
// blocked by hand (or by a failed delegation) waits on no task, and the
// reminder must not print an empty "(waiting on )".
func TestBlockedTaskReminderSaysWhy(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"deploy","description":"Deploy"},{"id":"announce","description":"Announce","depends_on":["deploy"]}]`)}))
		case 1:
			return do(call("update_task_status", obj{"task_id": "deploy", "status": "blocked", "note": "the staging server is down"}))
		case 2:
			return do(call("get_blocked_tasks", obj{}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	var reminder string
	for _, m := range rootOf(x).Messages {
		if m.Role == "user" && strings.Contains(m.Content, "<reminder>") && strings.Contains(m.Content, "deploy") {
			reminder = m.Content
		}
	}
	if reminder == "" {
		t.Fatalf("no reminder about the blocked task")
	}
	if strings.Contains(reminder, "(waiting on )") {
		t.Errorf("the reminder lists a blocked task as waiting on nothing:\n%s", reminder)
	}
}

// A plan replaced says what it replaced, and a task completed before what
// it depends on says so: neither is refused, but neither goes unsaid.
func TestPlanChangesThatLoseTrackAreSaid(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": []obj{{"id": "a", "description": "First"}, {"id": "b", "description": "Second", "depends_on": []string{"a"}}}}))
		case 1:
			return do(call("update_task_status", obj{"task_id": "b", "status": "completed"}))
		case 2:
			return do(call("create_task_plan", obj{"tasks": []string{"Start over"}}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	root := rootOf(x)
	if res := callResults(root, "update_task_status"); len(res) != 1 || !strings.Contains(res[0], "depends on tasks not completed yet: a") {
		t.Errorf("completing b before a: %q", res)
	}
	res := callResults(root, "create_task_plan")
	if len(res) != 2 || strings.Contains(res[0], "replaced") || !strings.Contains(res[1], "this replaced your previous plan of 2 tasks (1 of them completed)") {
		t.Errorf("create_task_plan results: %q", res)
	}
}

// A delegate at the delegation depth limit is not told to delegate, nor
// offered it: its prompt has no delegation section, its requests no
// delegation tools, and the reminder of ready tasks points to
// sessions_spawn. It was told to use delegate_task, and every call was
// refused.
func TestDelegateAtTheDepthLimitIsNotToldToDelegate(t *testing.T) {
	var delegateSystem string
	var delegateTools []string
	var mu sync.Mutex
	p := policyFor(func(c *convo) scripted.Reply {
		if c.isRoot() {
			if c.turns == 0 {
				return do(call("delegate_task", obj{"description": "Plan the release", "wait": true}))
			}
			return say("done")
		}
		mu.Lock()
		delegateSystem, delegateTools = c.system, c.req.Tools
		mu.Unlock()
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": raw(`[{"id":"notes","description":"Write notes"},{"id":"tag","description":"Tag it"}]`)}))
		case 1:
			return do(call("get_task_plan", obj{}))
		}
		return say("planned")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) { cfg.Coordination.MaxDelegationDepth = 1 })
	mustComplete(t, x, code)
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(delegateSystem, "delegate_task") || !strings.Contains(delegateSystem, "sessions_spawn") {
		t.Errorf("the delegate's prompt tells of delegating, or not of spawning:\n%s", delegateSystem)
	}
	for _, name := range []string{"delegate_task", "check_delegation_status", "get_delegation_result"} {
		if slices.Contains(delegateTools, name) {
			t.Errorf("the delegate is offered %s: %v", name, delegateTools)
		}
	}
	if !slices.Contains(delegateTools, "sessions_spawn") {
		t.Errorf("the delegate is not offered sessions_spawn: %v", delegateTools)
	}
	var reminder string
	for _, s := range x.Sessions {
		if s.ParentID == "" {
			continue
		}
		for _, m := range s.Messages {
			if m.Role == "user" && strings.Contains(m.Content, "Several tasks are ready") {
				reminder = m.Content
			}
		}
	}
	if !strings.Contains(reminder, "sessions_spawn") || strings.Contains(reminder, "delegate_task") {
		t.Errorf("the delegate's reminder:\n%s\nwant sessions_spawn, not delegate_task", reminder)
	}
	if !strings.Contains(rootOf(x).Messages[0].Content, "Delegations nest at most 1 level deep.") || strings.Contains(rootOf(x).Messages[0].Content, "You are that deep already") {
		t.Error("the root's prompt is not that of a session that may delegate")
	}
}
