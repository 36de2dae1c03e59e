package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// firstLineRole reads the role from a request's system prompt.
func firstLineRole(req *scripted.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	first, _, _ := strings.Cut(req.Messages[0].Content, "\n")
	r, ok := strings.CutPrefix(first, "You are the ")
	if !ok {
		return ""
	}
	r, _, _ = strings.Cut(r, " ")
	return r
}

func turnsOf(req *scripted.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

func lastToolResult(req *scripted.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "tool" {
			return req.Messages[i].Content
		}
	}
	return ""
}

func limDo(calls ...scripted.Call) scripted.Reply { return scripted.Reply{ToolCalls: calls} }
func limSay(text string) scripted.Reply           { return scripted.Reply{Content: text} }

type limArgs = map[string]any

func TestMaxTurnsFailsTheSession(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		return limDo(scripted.Call{Name: "get_shared_context", Args: limArgs{}})
	})
	e := testEngine(t, nil, policy, func(c *config.Config) { c.Limits.MaxTurnsPerSession = 3 })
	events, code := headless(t, e, "loop forever", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d, want %d", code, ExitFailed)
	}
	last := events[len(events)-1]
	if last.Type != event.RunFinished || last.Run.Status != RunFailed || !strings.Contains(last.Run.Error, "max_turns_per_session (3)") {
		t.Fatalf("run.finished = %+v", last.Run)
	}
	if x := exportLatest(t, e); x.Sessions[0].Turns != 3 {
		t.Errorf("the root took %d turns, want 3", x.Sessions[0].Turns)
	}
}

// A session woken after its final answer (here by a child's result) with
// no turn left fails saying so, not that it never answered.
func TestMaxTurnsAfterTheFinalAnswer(t *testing.T) {
	var e *Engine
	// rootAnswered reports that the root's final answer is stored: the
	// child answers only then, so that its result comes after it.
	rootAnswered := func() bool {
		ctx := context.Background()
		r, err := e.Store().LatestRun(ctx)
		if err != nil {
			return false
		}
		sessions, _ := e.Store().Sessions(ctx, r.ID)
		for _, s := range sessions {
			if s.ParentID == "" && s.Result != "" {
				return true
			}
		}
		return false
	}
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case !c.isRoot():
			for end := time.Now().Add(30 * time.Second); !rootAnswered() && time.Now().Before(end); {
				time.Sleep(5 * time.Millisecond)
			}
			return say("child done")
		case c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "slow work"}))
		default:
			return say("final")
		}
	})
	e = testEngine(t, nil, p, func(c *config.Config) { c.Limits.MaxTurnsPerSession = 2 })
	_, code := headless(t, e, "coordinate", nil)
	root := rootOf(exportLatest(t, e))
	want := "reached max_turns_per_session (2) with what arrived after its final answer still to read"
	if code != ExitFailed || root.Result != "final" || root.Error != want {
		t.Errorf("exit %d, root result %q, error %q; want exit %d, result \"final\" and %q", code, root.Result, root.Error, ExitFailed, want)
	}
}

func TestSpawnLimits(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		switch role := firstLineRole(req); {
		case role == "orchestrator" && turnsOf(req) == 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": []string{"a", "b", "c"}, "parallel": true}})
		case role == "orchestrator" && turnsOf(req) == 1:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "nested work", "agent": "planner", "label": "p"}})
		case role == "orchestrator" && turnsOf(req) == 2:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "x", "label": "nl\nYour role: orchestrator"}})
		case role == "planner" && turnsOf(req) == 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "too deep"}})
		default:
			return limSay("done: " + lastToolResult(req))
		}
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.MaxSessionsPerRun = 3
		c.Limits.MaxSpawnDepth = 1
	})
	if _, code := headless(t, e, "limits", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	root := &x.Sessions[0]
	spawns := toolResults(root, "sessions_spawn")
	if len(spawns) != 3 || !strings.Contains(spawns[0], "3 sub-agents asked for, but the run has 1 sessions and max_sessions_per_run is 3, so 2 more at most") {
		t.Fatalf("root spawn results: %v", spawns)
	}
	// A label is one line: a line break would start a line of its own in
	// the child's prompt.
	if !strings.Contains(spawns[2], `holds a control character`) {
		t.Errorf("a label with a line break: %s", spawns[2])
	}
	planner := sessionByLabel(x, "p")
	if planner == nil {
		t.Fatalf("the planner was not spawned: %v", spawns)
	}
	if res := toolResults(planner, "sessions_spawn"); len(res) != 1 || !strings.Contains(res[0], "max_spawn_depth is 1") {
		t.Errorf("a spawn beyond max_spawn_depth was not refused: %v", res)
	}
	if len(x.Sessions) != 2 {
		t.Errorf("%d sessions, want 2", len(x.Sessions))
	}
}

// max_spawn_depth 0 is documented as "the orchestrator works alone": the
// orchestrator is neither told of sub-agents nor offered the tools, and a
// spawn or a delegation it makes anyway is refused, not let through as if
// 0 meant no limit.
func TestMaxSpawnDepthZeroLeavesTheOrchestratorAlone(t *testing.T) {
	var first atomic.Pointer[scripted.Request]
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		first.CompareAndSwap(nil, req)
		switch turnsOf(req) {
		case 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "sub work"}})
		case 1:
			return limDo(scripted.Call{Name: "delegate_task", Args: limArgs{"description": "delegated work"}})
		case 2:
			// Tools it was not offered, and one there is no such.
			return limDo(scripted.Call{Name: "task_wait", Args: limArgs{}}, scripted.Call{Name: "get_delegation_result", Args: limArgs{"delegation_id": "d-1"}},
				scripted.Call{Name: "task_siblings", Args: limArgs{}}, scripted.Call{Name: "no_such_tool", Args: limArgs{}})
		default:
			return limSay("done alone")
		}
	})
	e := testEngine(t, nil, policy, func(c *config.Config) { c.Limits.MaxSpawnDepth = 0 })
	if _, code := headless(t, e, "alone", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	if len(x.Sessions) != 1 {
		t.Fatalf("%d sessions with max_spawn_depth 0, want only the orchestrator", len(x.Sessions))
	}
	root := &x.Sessions[0]
	if res := toolResults(root, "sessions_spawn"); len(res) != 1 || !strings.Contains(res[0], "max_spawn_depth is 0") {
		t.Errorf("the spawn was not refused: %v", res)
	}
	if res := toolResults(root, "delegate_task"); len(res) != 1 || !strings.Contains(res[0], "max_spawn_depth is 0") {
		t.Errorf("the delegation was not refused: %v", res)
	}
	// A tool not offered is refused with the reason, not run: task_wait
	// with nothing to wait for said all was done.
	for name, want := range map[string]string{
		"task_wait":             "not available to you: you have no sub-agents, and can start none: a child would be at depth 1 but max_spawn_depth is 0",
		"get_delegation_result": "not available to you: you have no delegations",
		"task_siblings":         "not available to you: you are the run's first session, which has no siblings",
	} {
		if res := toolResults(root, name); len(res) != 1 || !strings.Contains(toolError(res[0]), want) {
			t.Errorf("%s, not offered: %v, want an error saying %q", name, res, want)
		}
	}
	// The tools an unknown one's error lists are those the requests offer.
	unknown := toolResults(root, "no_such_tool")
	if len(unknown) != 1 || !strings.Contains(unknown[0], "get_task_plan") {
		t.Fatalf("the unknown tool's error: %v", unknown)
	}
	for _, name := range []string{"sessions_spawn", "task_wait", "delegate_task", "task_siblings"} {
		if strings.Contains(unknown[0], name) {
			t.Errorf("the unknown tool's error lists %s, which is not offered: %s", name, unknown[0])
		}
	}
	req := first.Load()
	for _, name := range []string{"sessions_spawn", "task_create", "task_wait", "task_cancel", "delegate_task"} {
		if slices.Contains(req.Tools, name) {
			t.Errorf("offered %s with max_spawn_depth 0: %v", name, req.Tools)
		}
	}
	if system := req.Messages[0].Content; !strings.Contains(system, "You have no sub-agents here") || strings.Contains(system, "sessions_spawn") {
		t.Errorf("the orchestrator is told of sub-agents with max_spawn_depth 0:\n%s", system)
	}
}

// With max_spawn_depth lowered under a parent whose children still run,
// its requests keep the tools that wait for, cancel and ask after them,
// and offer none that would start more; its reminder gives no advice to
// start more either.
func TestLoweredSpawnDepthKeepsTheToolsForTheChildren(t *testing.T) {
	child, reloaded := newGate(), newGate()
	t.Cleanup(child.open)
	t.Cleanup(reloaded.open)
	var mu sync.Mutex
	var after []string // the root's tools once the limit is lowered
	var reminders []string
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			child.wait()
			return say("child done")
		}
		switch c.turns {
		case 0:
			return do(
				call("create_task_plan", obj{"tasks": []string{"alpha", "beta", "gamma"}}),
				call("sessions_spawn", obj{"task": "research", "label": "r"}),
				call("delegate_task", obj{"description": "a part of it"}),
			)
		case 1:
			reloaded.wait()
			return do(call("get_task_plan", obj{}))
		case 2:
			mu.Lock()
			after = c.req.Tools
			for _, m := range c.req.Messages {
				if strings.Contains(m.Content, "<reminder>") {
					reminders = append(reminders, m.Content)
				}
			}
			mu.Unlock()
			child.open()
			return do(call("task_wait", obj{}))
		}
		return say("done")
	})
	e := testEngine(t, nil, p, nil)
	// Once the root has spawned and delegated, its limit goes down to 0.
	go reloadOnceStarted(t, e, 3, reloaded, func(next *config.Config) { next.Limits.MaxSpawnDepth = 0 })
	_, code := headless(t, e, "lowered", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	mu.Lock()
	defer mu.Unlock()
	for _, name := range []string{"task_wait", "task_cancel", "check_delegation_status", "get_delegation_result", "task_output"} {
		if !slices.Contains(after, name) {
			t.Errorf("with children running, the root lost %s: %v", name, after)
		}
	}
	for _, name := range []string{"sessions_spawn", "task_create", "delegate_task"} {
		if slices.Contains(after, name) {
			t.Errorf("with max_spawn_depth 0, the root is still offered %s", name)
		}
	}
	// The reminder before the reload advised delegating, as it could; the
	// one after it does not.
	if len(reminders) == 0 {
		t.Fatal("no reminder of the ready tasks")
	}
	if last := reminders[len(reminders)-1]; strings.Contains(last, "sessions_spawn") || strings.Contains(last, "delegate_task") ||
		!strings.Contains(last, "Take them one at a time") {
		t.Errorf("the reminder after the reload: %s", last)
	}
}

// A session whose delegations still run keeps the tools that ask after
// them when task delegation is switched off mid-run (as it keeps its
// children's when its role stops spawning, on a resume): they were gone,
// and a call of one was "no tool named".
func TestDelegationsKeepTheirToolsWhenTheSwitchGoesOff(t *testing.T) {
	child, reloaded := newGate(), newGate()
	t.Cleanup(child.open)
	t.Cleanup(reloaded.open)
	var mu sync.Mutex
	var after []string
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			child.wait()
			return say("delegated part done")
		}
		var d struct {
			ID string `json:"delegation_id"`
		}
		json.Unmarshal([]byte(c.last("delegate_task")), &d)
		switch c.turns {
		case 0:
			return do(call("delegate_task", obj{"description": "a part of it"}))
		case 1:
			reloaded.wait()
			return do(call("get_task_plan", obj{}))
		case 2: // the first request made after the reload
			mu.Lock()
			after = c.req.Tools
			mu.Unlock()
			return do(call("check_delegation_status", obj{"delegation_id": d.ID}))
		case 3:
			child.open()
			return do(call("task_wait", obj{}))
		}
		return say("done")
	})
	e := testEngine(t, nil, p, nil)
	go reloadOnceStarted(t, e, 2, reloaded, func(next *config.Config) { next.Coordination.EnableTaskDelegation = false })
	_, code := headless(t, e, "switched off", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	mu.Lock()
	defer mu.Unlock()
	mustOffer(t, "with a delegation running and delegation switched off, the root", after,
		[]string{"check_delegation_status", "get_delegation_result", "task_wait"}, []string{"delegate_task"})
	mustSucceed(t, rootOf(x), "check_delegation_status")
}

// An orchestrator that may delegate but not spawn waits for and cancels
// its delegates as children: task_wait and task_cancel, which the refusal
// of a second delegation of one task advises, are offered while one runs.
func TestADelegatorWithoutSpawnWaitsForItsDelegates(t *testing.T) {
	var mu sync.Mutex
	var tools []string
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			return say("delegated part done")
		}
		switch c.turns {
		case 0:
			return do(call("delegate_task", obj{"description": "a part of it"}))
		case 1:
			mu.Lock()
			tools = c.req.Tools
			mu.Unlock()
			return do(call("task_wait", obj{}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) {
		for i := range cfg.Agents {
			if cfg.Agents[i].Role == "orchestrator" {
				cfg.Agents[i].CanSpawn = false
			}
		}
	})
	mustComplete(t, x, code)
	mu.Lock()
	defer mu.Unlock()
	mustOffer(t, "with a delegation running, an orchestrator that may not spawn", tools,
		[]string{"task_wait", "task_cancel"}, []string{"sessions_spawn"})
	mustSucceed(t, rootOf(x), "task_wait")
}

// reloadOnceStarted reloads e's configuration, changed by change, once
// the run has n sessions, and then opens done (also when it gives up, after
// 30 s, so that a session waiting on done goes on and the test reports).
func reloadOnceStarted(t *testing.T, e *Engine, n int, done *gate, change func(*config.Config)) {
	onceStarted(e, n, done, func() {
		next := *e.Config()
		change(&next)
		if err := e.Reload(&next); err != nil {
			t.Error(err)
		}
	})
}

// onceStarted runs fn once the run has n sessions, and then opens done
// (also when it gives up, after 30 s).
func onceStarted(e *Engine, n int, done *gate, fn func()) {
	defer done.open()
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if x, err := e.Export(context.Background(), ""); err == nil && len(x.Sessions) >= n {
			fn()
			return
		}
	}
}

// mustOffer checks that tools, offered to who, hold every one of want and
// none of unwanted.
func mustOffer(t *testing.T, who string, tools, want, unwanted []string) {
	t.Helper()
	for _, name := range want {
		if !slices.Contains(tools, name) {
			t.Errorf("%s is not offered %s: %v", who, name, tools)
		}
	}
	for _, name := range unwanted {
		if slices.Contains(tools, name) {
			t.Errorf("%s is offered %s: %v", who, name, tools)
		}
	}
}

// mustSucceed checks that s called tool once, without an error.
func mustSucceed(t *testing.T, s *store.ExportSession, tool string) {
	t.Helper()
	if res := toolResults(s, tool); len(res) != 1 || toolError(res[0]) != "" {
		t.Errorf("%s: %v", tool, res)
	}
}

// A delegation refused at max_delegation_depth points to sessions_spawn
// only where a spawn would not be refused too.
func TestDelegationRefusalAdvisesOnlyWhatIsAllowed(t *testing.T) {
	for _, tc := range []struct {
		spawnDepth int
		spawn      bool
	}{{1, false}, {3, true}} {
		p := policyFor(func(c *convo) scripted.Reply {
			if c.turns == 0 {
				return do(call("delegate_task", obj{"description": "deeper", "wait": true}))
			}
			return say("done")
		})
		x, _, code := swarm(t, p, func(cfg *config.Config) {
			cfg.Coordination.MaxDelegationDepth = 1
			cfg.Limits.MaxSpawnDepth = tc.spawnDepth
		})
		mustComplete(t, x, code)
		var refusal string
		for i := range x.Sessions {
			if x.Sessions[i].ParentID != "" {
				for _, r := range toolResults(&x.Sessions[i], "delegate_task") {
					refusal = toolError(r)
				}
			}
		}
		if !strings.Contains(refusal, "max_delegation_depth is 1; do this work yourself") || strings.Contains(refusal, "sessions_spawn") != tc.spawn {
			t.Errorf("max_spawn_depth %d: the delegate's refusal %q", tc.spawnDepth, refusal)
		}
	}
}

// Roles that cannot spawn have no children to cancel: task_cancel is not
// theirs; nor is task_siblings the root's.
func TestTaskCancelIsForRolesThatSpawn(t *testing.T) {
	var mu sync.Mutex
	tools := map[string][]string{}
	p := policyFor(func(c *convo) scripted.Reply {
		mu.Lock()
		tools[c.role] = c.req.Tools
		mu.Unlock()
		if c.isRoot() && c.turns == 0 {
			return do(call("sessions_spawn", obj{"task": "look around", "agent": "explorer", "wait": true}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(tools["orchestrator"], "task_cancel") || slices.Contains(tools["explorer"], "task_cancel") {
		t.Errorf("task_cancel offered to the orchestrator: %v; to the explorer: %v", slices.Contains(tools["orchestrator"], "task_cancel"), slices.Contains(tools["explorer"], "task_cancel"))
	}
	// Nor is task_siblings the root's, which has no siblings.
	if slices.Contains(tools["orchestrator"], "task_siblings") || !slices.Contains(tools["explorer"], "task_siblings") {
		t.Errorf("task_siblings offered to the root: %v; to the explorer: %v", slices.Contains(tools["orchestrator"], "task_siblings"), slices.Contains(tools["explorer"], "task_siblings"))
	}
}

func TestTokenBudgetStopsTheRunAndSaysWhy(t *testing.T) {
	var calls atomic.Int64
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		calls.Add(1)
		if firstLineRole(req) == "orchestrator" && turnsOf(req) == 0 {
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": []string{"x", "y", "z"}, "parallel": true}})
		}
		return limDo(scripted.Call{Name: "get_shared_context", Args: limArgs{}})
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.TokenBudgetPerRun = 40000
		c.Limits.MaxTurnsPerSession = 1000
	})
	events, code := headless(t, e, "spend tokens", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	last := events[len(events)-1].Run
	if last.Status != RunFailed || !strings.Contains(last.Error, "token budget exhausted") || !strings.Contains(last.Error, "token_budget_per_run is 40000") {
		t.Fatalf("run ended %q: %q", last.Status, last.Error)
	}
	x := exportLatest(t, e)
	for _, s := range x.Sessions {
		if !terminal(s.Status) {
			t.Errorf("session %s still %s after the budget ran out", s.ID, s.Status)
		}
	}
	if x.Run.Usage.TotalTokens < 40000 || calls.Load() > 200 {
		t.Errorf("usage %d after %d calls", x.Run.Usage.TotalTokens, calls.Load())
	}
}

// A wide parallel spawn does not overshoot the token budget by every
// child's call at once: calls past the budget's room wait for those under
// way, so the run ends over it by about one call, not twenty.
func TestTokenBudgetHoldsAgainstAWideSpawn(t *testing.T) {
	var calls atomic.Int64
	tasks := make([]string, 20)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("part %d", i+1)
	}
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		calls.Add(1)
		if firstLineRole(req) == "orchestrator" && turnsOf(req) == 0 {
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": tasks, "parallel": true}})
		}
		return limDo(scripted.Call{Name: "get_shared_context", Args: limArgs{}})
	})
	const budget = 20000
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.TokenBudgetPerRun = budget
		c.Limits.MaxTurnsPerSession = 1000
		c.Limits.MaxConcurrentLLMCalls = 32
		c.Limits.MaxConcurrentSessions = 32
	})
	events, code := headless(t, e, "spend tokens in parallel", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	if last := events[len(events)-1].Run; !strings.Contains(last.Error, "token budget exhausted") {
		t.Fatalf("run ended %q: %q", last.Status, last.Error)
	}
	x := exportLatest(t, e)
	// A child's call here is about 6,000 tokens. Without the holds all
	// twenty started at once, and the run ended at twice its budget.
	if used := x.Run.Usage.TotalTokens; used < budget || used > budget*3/2 {
		t.Errorf("the run used %d tokens against a budget of %d (%d calls)", used, budget, calls.Load())
	}
	for _, s := range x.Sessions {
		if !terminal(s.Status) {
			t.Errorf("session %s still %s after the budget ran out", s.ID, s.Status)
		}
	}
}

// A budget lifted by a reload reaches the calls already waiting for room:
// they start, and the run goes on, instead of failing on the old budget.
func TestTokenBudgetReloadReachesWaitingCalls(t *testing.T) {
	hold := newGate()
	tasks := make([]string, 12)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("part %d", i+1)
	}
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if firstLineRole(req) == "orchestrator" {
			switch turnsOf(req) {
			case 0:
				return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": tasks, "parallel": true, "wait": true}})
			default:
				return limSay("all parts done")
			}
		}
		hold.wait() // the calls that started hold the budget until the reload
		return limSay("part done")
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.TokenBudgetPerRun = 20000
		c.Limits.MaxConcurrentLLMCalls = 32
		c.Limits.MaxConcurrentSessions = 32
	})
	t.Cleanup(hold.open)
	waiting := make(chan *Run, 1)
	go func() {
		// Once a call waits for room, lift the budget and let the others
		// answer.
		r := <-waiting
		for {
			r.mu.Lock()
			blocked := r.budgetFreed != nil
			r.mu.Unlock()
			if blocked {
				break
			}
			time.Sleep(time.Millisecond)
		}
		next := *e.Config()
		next.Limits.TokenBudgetPerRun = 0
		if err := e.Reload(&next); err != nil {
			t.Error(err)
		}
		hold.open()
	}()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) {
		r, err := e.Start(ctx, "lift the budget")
		if err == nil {
			waiting <- r
		}
		return r, err
	})
	if err != nil {
		t.Fatal(err)
	}
	x := exportLatest(t, e)
	if code != ExitOK || x.Run.Status != RunCompleted {
		t.Fatalf("run %s (exit %d): %s", x.Run.Status, code, x.Run.Error)
	}
	if len(x.Sessions) != 13 {
		t.Errorf("%d sessions, want the orchestrator and 12 parts", len(x.Sessions))
	}
}

func TestCancelStopsASubtreeAndItsCallsInFlight(t *testing.T) {
	var stalled atomic.Int64
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		switch role := firstLineRole(req); {
		case role == "orchestrator" && turnsOf(req) == 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "plan the work", "agent": "planner", "label": "a"}})
		case role == "planner" && turnsOf(req) == 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "slow research", "label": "b"}})
		case role == "researcher":
			stalled.Add(1)
			return scripted.Reply{Content: "this answer never finishes streaming", Fault: &scripted.Fault{Stall: time.Minute}}
		default:
			return limSay("done: " + lastToolResult(req))
		}
	})
	e := testEngine(t, nil, policy, func(c *config.Config) { c.Limits.StreamIdleTimeout = config.Duration(5 * time.Minute) })
	sub := e.Bus().Subscribe(64)
	defer sub.Close()
	run, err := e.Start(context.Background(), "cancel a subtree")
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the grandchild's call is in flight, then cancel its parent.
	var planner string
	deadline := time.After(30 * time.Second)
	for planner == "" || stalled.Load() == 0 {
		select {
		case ev := <-sub.C:
			if ev.Type == event.SessionCreated && ev.Session.Label == "a" {
				planner = ev.Session.ID
			}
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("the grandchild never started its call")
		}
	}
	time.Sleep(100 * time.Millisecond)
	if err := run.Cancel(context.Background(), planner); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after the cancellation: the stalled call was not aborted")
	}
	// The server sees the aborted call when its connection closes, which
	// may be a moment after the run has ended.
	for wait := time.Now().Add(10 * time.Second); e.Scripted().Stats().Cancelled == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(wait) {
			t.Fatalf("the in-flight HTTP call was not cancelled: %+v", e.Scripted().Stats())
		}
	}
	// Cancelling it again says that it has ended, and how.
	if err := run.Cancel(context.Background(), planner); err == nil || !strings.Contains(err.Error(), "session "+planner+" has already ended (cancelled)") {
		t.Errorf("a second cancel of the session: %v", err)
	}
	x := exportLatest(t, e)
	if x.Run.Status != "completed" {
		t.Fatalf("run %s: %s", x.Run.Status, x.Run.Error)
	}
	for _, label := range []string{"a", "b"} {
		if s := sessionByLabel(x, label); s == nil || s.Status != "cancelled" || !strings.Contains(s.Error, "cancelled by the human") {
			t.Errorf("session %s: %+v", label, s)
		}
	}
	if !strings.Contains(joinContents(&x.Sessions[0]), `status="cancelled"`) {
		t.Errorf("the root never learned that its child was cancelled")
	}
}

func TestToolPanicFailsOnlyItsSession(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		switch role := firstLineRole(req); {
		case role == "orchestrator" && turnsOf(req) == 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "fine work", "label": "ok", "wait": true}})
		case role == "orchestrator":
			return limDo(scripted.Call{Name: "explode", Args: limArgs{}})
		default:
			return limSay("child finished")
		}
	})
	e := testEngine(t, nil, policy, nil)
	e.tools.MustAdd(&agents.Tool{Name: "explode", Group: agents.GroupContext, Description: "panics",
		Schema:  agents.MustSchema(`{"type":"object","properties":{}}`),
		Handler: func(context.Context, *agents.Call, json.RawMessage) (any, error) { panic("boom") }})
	events, code := headless(t, e, "panic", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	if root := x.Sessions[0]; root.Status != "failed" || !strings.Contains(root.Error, "tool explode crashed") || !strings.Contains(root.Error, "boom") {
		t.Errorf("root: %s %q", root.Status, root.Error)
	}
	if ok := sessionByLabel(x, "ok"); ok == nil || ok.Status != "completed" {
		t.Errorf("the child was harmed: %+v", ok)
	}
	if events[len(events)-1].Run.Error == "" {
		t.Errorf("the failure reason did not reach run.finished")
	}
}

func TestConcurrentSessionLimitQueuesSessions(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if firstLineRole(req) == "orchestrator" && turnsOf(req) == 0 {
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": []string{"1", "2", "3", "4"}, "parallel": true, "wait": true}})
		}
		return limSay("ok")
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.MaxConcurrentSessions = 2
		c.Providers["scripted"].Latency = config.Duration(50 * time.Millisecond)
	})
	events, code := headless(t, e, "queue", nil)
	if code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	queued := 0
	for _, ev := range events {
		if (ev.Type == event.SessionStatus || ev.Type == event.SessionCreated) && ev.Session.Status == StatusPending && strings.Contains(ev.Session.Reason, "max_concurrent_sessions is 2") {
			queued++
		}
	}
	if queued == 0 {
		t.Errorf("no session waited for a slot with max_concurrent_sessions 2")
	}
}

// TestSpawnResultSaysWhichWaitForASlot checks that a spawn the session
// limit cannot start at once says so, instead of only "running".
func TestSpawnResultSaysWhichWaitForASlot(t *testing.T) {
	cases := []struct {
		name string
		wait bool
		want string // in the spawn's result; "" for no note
	}{
		{"no wait", false, `"note":"3 of the 4 wait for a free session slot first (max_concurrent_sessions is 2)`},
		{"wait", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var result atomic.Value
			policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
				if firstLineRole(req) != "orchestrator" {
					return limSay("ok")
				}
				switch turnsOf(req) {
				case 0:
					return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": []string{"1", "2", "3", "4"}, "parallel": true, "wait": tc.wait}})
				case 1:
					result.Store(lastToolResult(req))
					if !tc.wait {
						return limDo(scripted.Call{Name: "task_wait", Args: limArgs{}})
					}
				}
				return limSay("done")
			})
			e := testEngine(t, nil, policy, func(c *config.Config) {
				c.Limits.MaxConcurrentSessions = 2
				c.Providers["scripted"].Latency = config.Duration(20 * time.Millisecond)
			})
			if _, code := headless(t, e, "queue", nil); code != ExitOK {
				t.Fatalf("exit %d", code)
			}
			got, _ := result.Load().(string)
			if tc.want == "" {
				if strings.Contains(got, `"note"`) {
					t.Errorf("a waiting spawn's result kept a note about slots: %s", got)
				}
				return
			}
			if !strings.Contains(got, tc.want) {
				t.Errorf("spawn result = %s\nwant it to contain %s", got, tc.want)
			}
			// The sessions it names say the same: one runs, three wait.
			if n, p := strings.Count(got, `"status":"running"`), strings.Count(got, `"status":"pending","reason":"waiting for a free session slot`); n != 1 || p != 3 {
				t.Errorf("spawn result names %d running and %d waiting for a slot, want 1 and 3: %s", n, p, got)
			}
		})
	}
}

// TestResumeAfterStop stops a run mid-way (as a crash would: the sessions'
// statuses stay as stored) and resumes it in a new engine on the same
// database.
func TestResumeAfterStop(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "resume.db")
	mod := func(c *config.Config) { c.Providers["scripted"].Latency = config.Duration(15 * time.Millisecond) }
	e1 := limEngineAt(t, db, mod)
	run := startAndStop(t, e1, 45)
	before, err := e1.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if before.Run.Status != RunInterrupted {
		t.Fatalf("stopped run is %s", before.Run.Status)
	}
	e1.Close()

	e2 := limEngineAt(t, db, mod)
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := e2.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) { return e2.Resume(ctx, run.ID()) })
	if err != nil || code != ExitOK {
		dumpRun(t, e2)
		t.Fatalf("resume: exit %d, %v", code, err)
	}
	after := exportLatest(t, e2)
	checkDemoExport(t, after)
	// Nothing stored before the stop changed.
	for _, bs := range before.Sessions {
		as := findSession(after, bs.ID)
		for i, m := range bs.Messages {
			if i >= len(as.Messages) || as.Messages[i].Content != m.Content || as.Messages[i].Role != m.Role {
				t.Fatalf("session %s message %d changed across the resume", bs.ID, i)
			}
		}
	}
	assertResultsOnce(t, after)
}

// startAndStop starts the demo on e and interrupts it once it has stored
// n messages.
func startAndStop(t *testing.T, e *Engine, n int) *Run {
	t.Helper()
	sub := e.Bus().Subscribe(4096)
	defer sub.Close()
	run, err := e.Start(context.Background(), "Plan a product launch")
	if err != nil {
		t.Fatal(err)
	}
	for stored := 0; stored < n; {
		if ev := <-sub.C; ev.Type == event.MessageAppended {
			stored++
		}
	}
	run.Interrupt()
	return run
}

// A run whose workspace is gone is not resumed in thin air: resume says so
// and how to give it another, and resuming in another directory continues
// the run there, recorded as its workspace from then on.
func TestResumeInAnotherWorkspace(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "resume.db")
	mod := func(c *config.Config) { c.Providers["scripted"].Latency = config.Duration(15 * time.Millisecond) }
	e1 := limEngineAt(t, db, mod)
	run := startAndStop(t, e1, 10)
	e1.Close()

	e2 := limEngineAt(t, db, mod)
	gone := filepath.Join(dir, "ws")
	if err := os.RemoveAll(gone); err != nil {
		t.Fatal(err)
	}
	_, err := e2.Resume(context.Background(), run.ID())
	if want := "run " + run.ID() + " works in " + gone + ", which is gone: resume it in another directory with `swarmdeck resume --workspace DIR " + run.ID() + "`"; err == nil || err.Error() != want {
		t.Fatalf("resume in a workspace that is gone: %v\nwant %s", err, want)
	}
	moved := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := e2.Headless(ctx, HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) { return e2.ResumeIn(ctx, run.ID(), moved) })
	if err != nil || code != ExitOK {
		dumpRun(t, e2)
		t.Fatalf("resume in %s: exit %d, %v", moved, code, err)
	}
	if x := exportLatest(t, e2); x.Run.Workspace != moved {
		t.Errorf("the resumed run's workspace is %q, want %q", x.Run.Workspace, moved)
	}
}

// assertResultsOnce checks that each child's outcome reached its parent at
// most once per completion.
func assertResultsOnce(t *testing.T, x *store.Export) {
	t.Helper()
	for _, s := range x.Sessions {
		seen := map[string]int{}
		for _, m := range s.Messages {
			if m.Role != "user" || !strings.HasPrefix(m.Content, "<task_result ") {
				continue
			}
			seen[m.Content]++
		}
		for content, n := range seen {
			if n > 1 {
				t.Errorf("session %s got the same task result %d times: %.80s", s.ID, n, content)
			}
		}
	}
}

func limEngineAt(t *testing.T, db string, mod func(*config.Config)) *Engine {
	t.Helper()
	return limEngineWith(t, db, mod, nil)
}

// limEngineWith is limEngineAt with a scripted policy (nil: the demo).
func limEngineWith(t *testing.T, db string, mod func(*config.Config), policy scripted.Policy) *Engine {
	t.Helper()
	dir := filepath.Dir(db)
	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "README.md"), []byte("# launch\nproduct notes\n"), 0o644)
	cfg := config.Defaults()
	cfg.Workspace = ws
	cfg.LogFile = filepath.Join(dir, "log")
	cfg.Providers["scripted"].StreamSpeed = 0
	cfg.Providers["scripted"].Latency = 0
	if mod != nil {
		mod(cfg)
	}
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: db, Policy: policy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// TestAPIKeyNeverLeaves runs against a server that requires a key and
// checks that the key is nowhere in the database, the log or the export.
func TestAPIKeyNeverLeaves(t *testing.T) {
	const key = "sk-test-SECRETKEY-0123456789"
	inner := scripted.New(scripted.Config{Policy: scripted.Demo()})
	defer inner.Close()
	var unauthorized atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+key {
			unauthorized.Add(1)
			http.Error(w, `{"error":{"message":"bad key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
			return
		}
		inner.Handler().ServeHTTP(w, r)
	}))
	defer hs.Close()
	e, db, logFile := loggedEngine(t, config.Provider{Type: "openai", BaseURL: hs.URL + "/v1", APIKeyEnv: "TEST_KEY"}, key)
	var out bytes.Buffer
	code, err := e.Headless(context.Background(), HeadlessOptions{JSON: true, Out: &out}, func(ctx context.Context) (*Run, error) {
		return e.Start(ctx, "Plan a product launch")
	})
	if err != nil || code != ExitOK || unauthorized.Load() > 0 {
		t.Fatalf("exit %d, %v, %d unauthorized calls", code, err, unauthorized.Load())
	}
	x := exportLatest(t, e)
	e.Close()
	exported, _ := json.Marshal(x)
	places := map[string][]byte{"events": out.Bytes(), "export": exported}
	for _, name := range []string{db, db + "-wal", logFile} {
		b, _ := os.ReadFile(name)
		places[filepath.Base(name)] = b
	}
	for where, b := range places {
		if bytes.Contains(b, []byte(key)) || bytes.Contains(b, []byte("SECRETKEY")) {
			t.Errorf("the API key leaked into %s", where)
		}
	}
}

// TestLoadManyAgentsBroadcasting runs a swarm of about a thousand agents on
// the scripted model over HTTP, every leaf broadcasting to its siblings,
// and checks that it completes with every broadcast stored and delivered.
func TestLoadManyAgentsBroadcasting(t *testing.T) {
	const agents, fanout = 1000, 10
	e := testEngine(t, nil, scripted.Bench(), func(c *config.Config) {
		c.Limits.MaxSessionsPerRun = 2 * agents
		c.Limits.MaxConcurrentSessions = 2 * agents
		c.Limits.MaxConcurrentLLMCalls = 256
		c.Limits.MaxSpawnDepth = 8
	})
	_, code := headless(t, e, scripted.BenchGoal(agents, fanout, 2, 1), nil)
	if code != ExitOK {
		dumpRun(t, e)
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	sessions, _ := scripted.BenchShape(agents, fanout)
	if len(x.Sessions) != sessions {
		t.Fatalf("%d sessions, want %d", len(x.Sessions), sessions)
	}
	delivered := 0
	for _, b := range x.Broadcasts {
		delivered += len(b.Recipients)
	}
	if len(x.Broadcasts) == 0 || delivered == 0 {
		t.Fatalf("%d broadcasts, %d deliveries", len(x.Broadcasts), delivered)
	}
	for _, s := range x.Sessions {
		if s.Status != "completed" {
			t.Fatalf("session %s %s: %s", s.ID, s.Status, s.Error)
		}
	}
}

// TestDeepTree runs a tree five levels deep.
func TestDeepTree(t *testing.T) {
	e := testEngine(t, nil, scripted.Bench(), func(c *config.Config) { c.Limits.MaxSpawnDepth = 5 })
	if _, code := headless(t, e, scripted.BenchGoal(63, 2, 1, 0), nil); code != ExitOK {
		dumpRun(t, e)
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	depth := 0
	for _, s := range x.Sessions {
		depth = max(depth, s.Depth)
	}
	if depth != 5 {
		t.Errorf("deepest session at depth %d, want 5", depth)
	}
}

// loggedEngine is an engine on the model server p (model "m", with key
// when it is not ""), logging to a file of its own: it returns the engine,
// its database and its log file.
func loggedEngine(t *testing.T, p config.Provider, key string) (e *Engine, db, logFile string) {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Workspace = dir
	cfg.LogFile = filepath.Join(dir, "swarmdeck.log")
	res := config.Resolved{Name: "test", Provider: p, Model: "m", APIKey: key}
	db = filepath.Join(dir, "db")
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: db, Logger: fileLogger(t, cfg.LogFile)})
	if err != nil {
		t.Fatal(err)
	}
	return e, db, cfg.LogFile
}

func fileLogger(t *testing.T, path string) *slogLogger {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return newTextLogger(f)
}

func TestConcurrentLLMCallLimit(t *testing.T) {
	var inFlight, peak atomic.Int64
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(30 * time.Millisecond) // the "model" thinks
		if firstLineRole(req) == "orchestrator" && turnsOf(req) == 0 {
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": []string{"1", "2", "3", "4", "5", "6"}, "parallel": true}})
		}
		return limSay("ok")
	})
	e := testEngine(t, nil, policy, func(c *config.Config) { c.Limits.MaxConcurrentLLMCalls = 2 })
	if _, code := headless(t, e, "many calls", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if p := peak.Load(); p > 2 || p < 2 {
		t.Errorf("%d calls were in flight at once; max_concurrent_llm_calls is 2", p)
	}
}

func TestSessionTimeoutFailsTheSession(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		return scripted.Reply{Content: "never finishes", Fault: &scripted.Fault{Stall: time.Minute}}
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.SessionTimeout = config.Duration(300 * time.Millisecond)
		c.Limits.StreamIdleTimeout = config.Duration(time.Minute)
	})
	events, code := headless(t, e, "time out", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	last := events[len(events)-1]
	if last.Type != event.RunFinished || !strings.Contains(last.Run.Error, "session timed out after 300ms (session_timeout)") {
		t.Fatalf("run.finished = %+v", last.Run)
	}
	// The server learns of the abort when it sees the connection close,
	// which may be a moment after the run has finished.
	srv := e.Scripted()
	for deadline := time.Now().Add(10 * time.Second); srv.Stats().Cancelled == 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if srv.Stats().Cancelled == 0 {
		t.Errorf("the stalled call was not aborted: %+v", srv.Stats())
	}
}

// add_task keeps to max_tasks_per_plan as it is now, not as it was when
// the plan was made: raised, a full plan takes more; lowered, no more.
func TestAddTaskKeepsToTheLimitInForce(t *testing.T) {
	var e *Engine
	setLimit := func(n int) {
		next := *e.Config()
		next.Coordination.MaxTasksPerPlan = n
		if err := e.Reload(&next); err != nil {
			t.Error(err)
		}
	}
	p := policyFor(func(c *convo) scripted.Reply {
		switch c.turns {
		case 0:
			return do(call("create_task_plan", obj{"tasks": []string{"a", "b", "c"}}))
		case 1:
			setLimit(10)
			return do(call("add_task", obj{"description": "d"}))
		case 2:
			setLimit(2)
			return do(call("add_task", obj{"description": "e"}))
		}
		return say("done")
	})
	e = testEngine(t, nil, p, func(c *config.Config) { c.Coordination.MaxTasksPerPlan = 3 })
	_, code := headless(t, e, "plan", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	res := toolResults(rootOf(x), "add_task")
	if len(res) != 2 {
		t.Fatalf("add_task results: %q", res)
	}
	if toolError(res[0]) != "" {
		t.Errorf("add_task with the limit raised to 10: %s", res[0])
	}
	if !strings.Contains(toolError(res[1]), "already has 4 tasks, and the limit is 2") {
		t.Errorf("add_task with the limit lowered to 2: %s", res[1])
	}
}

// A session times out at the timeout it started with, and says that one:
// raised while it runs, the new value is for sessions to come.
func TestSessionTimeoutSaysTheOneItRanWith(t *testing.T) {
	var e *Engine
	var once sync.Once
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		once.Do(func() {
			next := *e.Config()
			next.Limits.SessionTimeout = config.Duration(time.Hour)
			if err := e.Reload(&next); err != nil {
				t.Error(err)
			}
		})
		return scripted.Reply{Content: "never finishes", Fault: &scripted.Fault{Stall: time.Minute}}
	})
	e = testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.SessionTimeout = config.Duration(300 * time.Millisecond)
		c.Limits.StreamIdleTimeout = config.Duration(time.Minute)
	})
	events, code := headless(t, e, "time out", nil)
	if code != ExitFailed {
		t.Fatalf("exit %d", code)
	}
	if last := events[len(events)-1]; last.Type != event.RunFinished || !strings.Contains(last.Run.Error, "session timed out after 300ms (session_timeout)") {
		t.Fatalf("run.finished = %+v", last.Run)
	}
}

// A tool that does not heed its context (a blocking system call) does not
// hold a timed-out session, nor the run, past a short grace; and its
// result, when it finally comes, does not answer the call a second time.
func TestSessionTimeoutWithAToolThatDoesNotStop(t *testing.T) {
	for _, pure := range []bool{false, true} {
		t.Run(fmt.Sprintf("pure %v", pure), func(t *testing.T) {
			release := make(chan struct{})
			returned := make(chan struct{})
			policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
				if turnsOf(req) == 0 {
					return limDo(scripted.Call{Name: "stuck", Args: limArgs{}})
				}
				return limSay("done")
			})
			e := testEngine(t, nil, policy, func(c *config.Config) {
				c.Limits.SessionTimeout = config.Duration(300 * time.Millisecond)
			})
			e.tools.MustAdd(&agents.Tool{Name: "stuck", Group: agents.GroupContext, Pure: pure, Description: "blocks, deaf to its context",
				Schema: agents.MustSchema(`{"type":"object","properties":{}}`),
				Handler: func(context.Context, *agents.Call, json.RawMessage) (any, error) {
					defer close(returned)
					<-release
					return map[string]string{"late": "yes"}, nil
				}})
			started := time.Now()
			_, code := headless(t, e, "stuck", nil)
			if code != ExitFailed {
				t.Fatalf("exit %d", code)
			}
			if took := time.Since(started); took > 30*time.Second {
				t.Errorf("the run took %v to end", took)
			}
			close(release)
			<-returned
			time.Sleep(100 * time.Millisecond) // for a late result to be stored, if it were
			res := toolResults(rootOf(exportLatest(t, e)), "stuck")
			if len(res) != 1 || !strings.Contains(res[0], "not run to its end") {
				t.Errorf("the call's results: %q", res)
			}
		})
	}
}

// A run that one engine (one process) runs cannot be resumed by another on
// the same database at the same time: both would write the same
// conversations. Once the first has stopped, the second resumes it.
func TestResumeRefusesARunHeldElsewhere(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	slow := func(cfg *config.Config) { cfg.Providers["scripted"].Latency = config.Duration(time.Hour) }
	e1 := limEngineAt(t, db, slow)
	run, err := e1.Start(context.Background(), "Plan a product launch")
	if err != nil {
		t.Fatal(err)
	}
	e2 := limEngineAt(t, db, nil)
	_, err = e2.Resume(context.Background(), run.ID())
	if err == nil || !strings.Contains(err.Error(), "running in another swarmdeck process") || !strings.Contains(err.Error(), "swarmdeck view "+run.ID()) {
		t.Fatalf("resume while another engine runs it: %v", err)
	}
	run.Interrupt()
	r2, err := e2.Resume(context.Background(), run.ID())
	if err != nil {
		t.Fatalf("resume after the first engine stopped: %v", err)
	}
	r2.Interrupt()
}

// A run that has ended cannot be resumed: the refusal says how it ended
// and how to see it.
func TestResumeOfAnEndedRunSaysHowItEnded(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	run, err := e.Start(context.Background(), "Plan a product launch")
	if err != nil {
		t.Fatal(err)
	}
	root := ""
	for _, s := range run.Snapshot().Sessions {
		if s.ParentID == "" {
			root = s.ID
		}
	}
	if err := run.Cancel(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the cancelled run did not end")
	}
	_, err = e.Resume(context.Background(), run.ID())
	want := "run " + run.ID() + " has already ended (cancelled), so there is nothing to resume: open it with `swarmdeck view " + run.ID() + "`"
	if err == nil || err.Error() != want {
		t.Errorf("resume of a cancelled run: %v; want %q", err, want)
	}
}

// A dashboard opened on a resumed run subscribes after the run.started that
// says "resumed", so the snapshot it starts from says so too (the RESUMED
// mark); a run started afresh is not marked.
func TestSnapshotOfAResumedRunSaysSo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	slow := func(cfg *config.Config) { cfg.Providers["scripted"].Latency = config.Duration(time.Hour) }
	e1 := limEngineAt(t, db, slow)
	run, err := e1.Start(context.Background(), "Plan a product launch")
	if err != nil {
		t.Fatal(err)
	}
	if run.Snapshot().Run.Resumed {
		t.Error("a run just started is snapshotted as resumed")
	}
	run.Interrupt()
	e2 := limEngineAt(t, db, slow)
	r2, err := e2.Resume(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Interrupt()
	if snap := r2.Snapshot(); !snap.Run.Resumed || snap.Run.Status != RunRunning {
		t.Errorf("the resumed run is snapshotted as %s, resumed=%v; want running and resumed", snap.Run.Status, snap.Run.Resumed)
	}
}

// followViewed reads the viewer's events for runID, each next in the log
// after last (none missed, none repeated), until done says so; it fails
// the test if that takes over 30 s, saying what it waited for.
func followViewed(t *testing.T, sub *event.Subscription, runID string, last int64, what string, done func(event.Event) bool) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.RunID != runID || ev.Type == event.MessageDelta {
				continue
			}
			if ev.Seq != last+1 {
				t.Fatalf("event %s has seq %d after %d: the viewer missed or repeated events", ev.Type, ev.Seq, last)
			}
			last = ev.Seq
			if done(ev) {
				return
			}
		case <-deadline:
			t.Fatalf("the viewer never saw %s", what)
		}
	}
}

// viewedElsewhere starts a run on one engine, its model held until the
// gate is opened, and views it (runID, or the latest run for "") from a
// second engine on the same database, as another process would.
func viewedElsewhere(t *testing.T, runID string) (*Run, *gate, event.Controller) {
	t.Helper()
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	held := newGate()
	t.Cleanup(held.open)
	p := policyFor(func(c *convo) scripted.Reply {
		held.wait()
		return say("first answer")
	})
	e1 := limEngineWith(t, db, nil, p)
	run, err := e1.Start(context.Background(), "Plan a product launch")
	if err != nil {
		t.Fatal(err)
	}
	e2 := limEngineAt(t, db, nil)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	v, err := e2.View(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return run, held, v
}

// `swarmdeck view` of a run that another process is running follows it:
// what that process logs after the snapshot reaches the viewer's
// subscription in order, message events with their content.
func TestViewFollowsARunRunningElsewhere(t *testing.T) {
	run, held, v := viewedElsewhere(t, "") // the latest run, as `swarmdeck view` without an id
	ctx := context.Background()
	sub := v.Subscribe(4096)
	defer sub.Close()
	if id := v.Snapshot().Run.ID; id != run.ID() {
		t.Fatalf("the latest run is viewed as %s, want %s", id, run.ID())
	}
	if st := v.Snapshot().Run.Status; st != RunRunning {
		t.Fatalf("a run another engine runs is viewed as %s", st)
	}
	last := v.Snapshot().LastSeq
	held.open()
	var answer string
	followViewed(t, sub, run.ID(), last, "an answer from the run in the other engine", func(ev event.Event) bool {
		if ev.Type == event.MessageAppended && ev.Message.Role == "assistant" {
			answer = ev.Message.Content
		}
		return answer != ""
	})
	if answer != "first answer" {
		t.Errorf("the viewer's message event holds %q, want the stored content", answer)
	}
	if err := v.Broadcast(ctx, "all", "discovery", "hello"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("a viewer's broadcast = %v, want it refused as read-only", err)
	}
	run.Interrupt()
}

// What a followed run logs between the view's snapshot and the dashboard's
// subscription (a dashboard slow to start) reaches the subscription: the
// run's end among it, without which the view showed it running for good.
func TestViewSubscribedLateMissesNothing(t *testing.T) {
	run, held, v := viewedElsewhere(t, "")
	last := v.Snapshot().LastSeq
	held.open()
	<-run.Done()
	time.Sleep(3 * followEvery) // polls the log would have made meanwhile
	sub := v.Subscribe(4096)
	defer sub.Close()
	followViewed(t, sub, run.ID(), last, "the run end", func(ev event.Event) bool {
		if ev.Type != event.RunFinished {
			return false
		}
		if ev.Run.Status != RunCompleted {
			t.Errorf("the viewer sees the run %s", ev.Run.Status)
		}
		return true
	})
}

// A viewer puts back the content of logged message events by their row
// ids, and by their session and index when the log holds no id.
func TestFillMessages(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "swarmdeck.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	var stored []*store.Message
	if err := st.Do(ctx, func(tx *store.Tx) error {
		for i, sid := range []string{"s-1", "s-2", "s-1", "s-2"} {
			m := &store.Message{RunID: "r-1", SessionID: sid, Index: i / 2, Role: "assistant", Content: fmt.Sprintf("answer %d", i)}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			stored = append(stored, m)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ev := func(m *store.Message, withID bool) event.Event {
		info := &event.MessageInfo{Index: m.Index, Role: m.Role}
		if withID {
			info.ID = m.ID
		}
		return event.Event{Type: event.MessageAppended, RunID: "r-1", SessionID: m.SessionID, Message: info}
	}
	evs := []event.Event{ev(stored[3], true), ev(stored[0], true), ev(stored[2], false), {Type: event.SessionStatus, RunID: "r-1"}}
	if err := fillMessages(ctx, st, "r-1", evs); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"answer 3", "answer 0", "answer 2"} {
		if got := evs[i].Message.Content; got != want {
			t.Errorf("event %d holds %q, want %q", i, got, want)
		}
	}
}

// `swarmdeck view` opened while the run it follows waits for the person's
// answer shows that question: it was opened before the viewer's snapshot,
// so no event it follows will bring it.
func TestViewShowsTheQuestionAlreadyWaitingForThePerson(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	asked := newGate()
	t.Cleanup(asked.open)
	p := policyFor(func(c *convo) scripted.Reply {
		if c.role == "orchestrator" && c.turns == 0 {
			asked.wait()
			return do(call("ask_others", obj{"question": "Ship on Friday?", "timeout": 600,
				"options": []obj{{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}}}))
		}
		return say("decided")
	})
	e1 := limEngineWith(t, db, nil, p)
	run, err := e1.Start(context.Background(), "decide the launch day")
	if err != nil {
		t.Fatal(err)
	}
	defer run.Interrupt()
	run.SetHumanAttached(true) // as the dashboard does
	asked.open()
	deadline := time.Now().Add(30 * time.Second)
	for len(run.Snapshot().Questions) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the run never asked the person")
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := run.Snapshot().Questions[0]

	e2 := limEngineAt(t, db, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := e2.View(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	qs := v.Snapshot().Questions
	if len(qs) != 1 {
		t.Fatalf("the viewer's snapshot has %d questions, want the one waiting for the person", len(qs))
	}
	got := qs[0]
	if got.ID != want.ID || got.Question != "Ship on Friday?" || got.From != want.From || !got.AllowHuman ||
		len(got.Options) != 2 || got.Options[1] != (event.Option{ID: "no", Label: "No"}) {
		t.Errorf("the viewer sees %+v, want %+v", got, want)
	}
}

// `swarmdeck view` of a run stored as running that no process runs (its
// process was killed) shows it stopped, not live.
func TestViewOfARunLeftByADeadProcess(t *testing.T) {
	created := time.Now().Add(-time.Hour).UTC().Round(time.Millisecond)
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		return tx.InsertRun(&store.Run{ID: "r-dead01", Goal: "g", Status: RunRunning, CreatedAt: created})
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.View(context.Background(), "r-dead01")
	if err != nil {
		t.Fatal(err)
	}
	if run := v.Snapshot().Run; run.Status != RunInterrupted || !strings.Contains(run.Error, "no swarmdeck process is running it") {
		t.Fatalf("viewed as %s (%q)", run.Status, run.Error)
	}
	// Its clocks stop at the last thing it stored, not at the viewer's now.
	if run := v.Snapshot().Run; !run.EndedAt.Equal(created) {
		t.Errorf("ended at %v, want %v (its last write)", run.EndedAt, created)
	}
}

// A view that follows a run another process runs shows it stopped once
// that process is gone without a word (killed), instead of running for
// ever.
func TestViewNoticesTheRunsProcessDied(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		return tx.InsertRun(&store.Run{ID: "r-live01", Goal: "g", Status: RunRunning, CreatedAt: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	lock, err := runlock.Acquire(runlock.Dir(db), "r-live01") // the other process
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := e.View(ctx, "r-live01")
	if err != nil {
		t.Fatal(err)
	}
	if run := v.Snapshot().Run; run.Status != RunRunning {
		t.Fatalf("viewed as %s while its process runs", run.Status)
	}
	sub := v.Subscribe(64)
	defer sub.Close()
	lock.Release() // killed
	for {
		select {
		case ev := <-sub.C:
			if ev.Type != event.RunFinished {
				continue
			}
			if ev.Run.Status != RunInterrupted || !strings.Contains(ev.Run.Error, "no swarmdeck process is running it") {
				t.Fatalf("run.finished says %s (%q)", ev.Run.Status, ev.Run.Error)
			}
			if ev.Run.EndedAt.IsZero() || ev.Run.EndedAt.After(ev.Time) {
				t.Errorf("stopped at %v, seen at %v: want its last write", ev.Run.EndedAt, ev.Time)
			}
			return
		case <-ctx.Done():
			t.Fatal("the view never noticed that the run's process is gone")
		}
	}
}

// A view of a run under way shows a pause its process stored (a ctrl+z
// there) while it goes on: the clocks leave it out at once, not at the end.
func TestViewFollowsAStoredPause(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	rec := &store.Run{ID: "r-paus01", Goal: "g", Status: RunRunning, CreatedAt: time.Now().Add(-time.Minute)}
	if err := e.Store().Do(context.Background(), func(tx *store.Tx) error { return tx.InsertRun(rec) }); err != nil {
		t.Fatal(err)
	}
	lock, err := runlock.Acquire(runlock.Dir(db), rec.ID) // the process running it
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := limEngineAt(t, db, nil).View(ctx, rec.ID)
	if err != nil {
		t.Fatal(err)
	}
	sub := v.Subscribe(64)
	defer sub.Close()
	rec.Pauses = []store.Pause{{From: time.Now().Add(-30 * time.Second).UTC(), To: time.Now().Add(-20 * time.Second).UTC()}}
	if err := e.Store().Do(ctx, func(tx *store.Tx) error { return tx.UpdateRun(rec) }); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.Run == nil {
				continue
			}
			if ev.Type != event.RunStarted || ev.Run.Status != RunRunning || len(ev.Run.Pauses) != 1 || !ev.Run.Pauses[0].From.Equal(rec.Pauses[0].From) {
				t.Fatalf("%s says %s with pauses %v", ev.Type, ev.Run.Status, ev.Run.Pauses)
			}
			return
		case <-ctx.Done():
			t.Fatal("the view never showed the stored pause")
		}
	}
}

// A bench run left interrupted in a database is not resumed: its sessions
// would go on with the demo's replies. The refusal says what to do.
func TestABenchRunIsNotResumed(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		return tx.InsertRun(&store.Run{ID: "r-bench1", Goal: scripted.BenchGoal(50, 10, 2, 1), Status: RunRunning, Scripted: true, CreatedAt: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Resume(context.Background(), "r-bench1")
	if err == nil || !strings.Contains(err.Error(), "run r-bench1 is a bench run, which is not resumed") {
		t.Fatalf("resume of a bench run: %v", err)
	}
	if scripted.IsBenchGoal("Plan the bench: size=3 for the garden") {
		t.Error("a goal that only mentions a bench shape was taken for a bench run's")
	}
	// A view of it (stopped: no process runs it) says so, so as not to
	// offer the resume.
	v, err := e.View(context.Background(), "r-bench1")
	if err != nil {
		t.Fatal(err)
	}
	if run := v.Snapshot().Run; run.Status != RunInterrupted || !strings.Contains(run.NotResumed, "a bench run, which is not resumed") {
		t.Errorf("the view shows the bench run %s, and says %q of resuming it", run.Status, run.NotResumed)
	}
}

// A view of a run that another process deletes says the run is gone,
// instead of offering to resume what no longer exists.
func TestViewNoticesTheRunWasDeleted(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		return tx.InsertRun(&store.Run{ID: "r-gone01", Goal: "g", Status: RunFailed, Error: "429", CreatedAt: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	v, err := e.View(ctx, "r-gone01")
	if err != nil {
		t.Fatal(err)
	}
	sub := v.Subscribe(64)
	defer sub.Close()
	other := limEngineAt(t, db, nil) // the process that deletes it
	if _, err := other.Store().DeleteRun(ctx, "r-gone01"); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.Type != event.RunFinished {
				continue
			}
			if ev.Run.Status != RunDeleted || ev.Run.Error != DeletedRunReason {
				t.Fatalf("run.finished says %s (%q)", ev.Run.Status, ev.Run.Error)
			}
			return
		case <-ctx.Done():
			t.Fatal("the view never noticed that the run was deleted")
		}
	}
}

// A view of a run with more broadcasts than it loads at first says how
// many there are in all.
func TestViewCountsEveryBroadcast(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineAt(t, db, nil)
	const n = feedKeep + 7
	err := e.Store().Do(context.Background(), func(tx *store.Tx) error {
		if err := tx.InsertRun(&store.Run{ID: "r-many01", Goal: "g", Status: RunCompleted, CreatedAt: time.Now()}); err != nil {
			return err
		}
		for i := range n {
			b := &store.Broadcast{RunID: "r-many01", ID: fmt.Sprintf("b-%d", i), Seq: int64(i + 1), Kind: event.KindAnnounce, Target: "all", Message: "m"}
			if err := tx.InsertBroadcast(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	v, err := e.View(context.Background(), "r-many01")
	if err != nil {
		t.Fatal(err)
	}
	if snap := v.Snapshot(); len(snap.Broadcasts) != feedKeep || snap.BroadcastTotal != n {
		t.Errorf("the view loaded %d broadcasts of %d; want %d of %d", len(snap.Broadcasts), snap.BroadcastTotal, feedKeep, n)
	}
}

// The log says when each run starts and ends, and names the run and the
// session of a model call that is tried again: with several runs or
// sessions at once, a line without them could not be placed.
func TestLogNamesRunsAndRetries(t *testing.T) {
	inner := scripted.New(scripted.Config{Policy: scripted.Demo()})
	defer inner.Close()
	var calls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, `{"error":{"message":"overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
			return
		}
		inner.Handler().ServeHTTP(w, r)
	}))
	defer hs.Close()
	e, _, logFile := loggedEngine(t, config.Provider{Type: "openai", BaseURL: hs.URL + "/v1"}, "")
	defer e.Close()
	var id string
	code, err := e.Headless(context.Background(), HeadlessOptions{JSON: true, Out: io.Discard}, func(ctx context.Context) (*Run, error) {
		r, err := e.Start(ctx, "Plan a product launch")
		if r != nil {
			id = r.ID()
		}
		return r, err
	})
	if err != nil || code != ExitOK {
		t.Fatalf("exit %d, %v", code, err)
	}
	root := exportLatest(t, e).Sessions[0].ID
	logged, _ := os.ReadFile(logFile)
	for _, want := range []string{
		`msg="run started" run=` + id,
		`msg="model call failed, retrying" run=` + id + ` session=` + root + ` next_attempt=2`,
		`msg="run ended" run=` + id + ` status=completed`,
	} {
		if !strings.Contains(string(logged), want) {
			t.Errorf("the log has no %q:\n%s", want, logged)
		}
	}
}

// A run stopped from outside says what stopped it in the log's "run ended"
// line: the run itself stores no reason, and the line said only
// "status=interrupted error=".
func TestLogSaysWhatStoppedARun(t *testing.T) {
	e, _, logFile := loggedEngine(t, config.Provider{Type: "scripted"}, "")
	defer e.Close()
	for _, c := range []struct{ cause, want string }{
		{"terminated signal received", `cause="terminated signal received"`},
		{"", `cause="stopped from outside"`},
	} {
		r, err := e.Start(context.Background(), "Plan a product launch")
		if err != nil {
			t.Fatal(err)
		}
		r.InterruptFor(c.cause)
		logged, _ := os.ReadFile(logFile)
		want := `msg="run ended" run=` + r.ID() + ` status=interrupted tokens=`
		i := strings.Index(string(logged), want)
		if i < 0 {
			t.Fatalf("the log has no %q:\n%s", want, logged)
		}
		if line, _, _ := strings.Cut(string(logged[i:]), "\n"); !strings.HasSuffix(line, c.want) {
			t.Errorf("the log's line %q does not end with %s", line, c.want)
		}
	}
}

// A session whose last call failed is marked so in the live run's
// snapshot and in a later view of the stored run, which reads it from the
// messages: the dashboard draws its last tool with ✗ in both.
func TestLastToolFailedSurvivesTheRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	p := policyFor(func(c *convo) scripted.Reply {
		bad := call("task_output", obj{"task_id": "s-nope"})
		good := call("get_shared_context", obj{})
		switch {
		case c.isRoot():
			if c.turns == 0 {
				return do(call("sessions_spawn", obj{"task": []string{"fails last", "fails first", "fails early in its answer"},
					"parallel": true}))
			}
			if c.turns == 1 {
				return do(call("task_wait", obj{}))
			}
			return say("root done")
		case c.turns == 0 && c.task == "fails last":
			return do(good, bad)
		case c.turns == 0 && c.task == "fails first":
			return do(bad)
		case c.turns == 1 && c.task == "fails first":
			return do(good)
		case c.turns == 0 && c.task == "fails early in its answer":
			return do(bad, good)
		}
		return say("done: " + c.task)
	})
	e := limEngineWith(t, db, nil, p)
	run, err := e.Start(context.Background(), "Try some tools")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end")
	}
	want := map[string]bool{"fails last": true, "fails first": false, "fails early in its answer": false}
	check := func(from string, snap event.Snapshot) {
		t.Helper()
		seen := 0
		for _, s := range snap.Sessions {
			failed, ok := want[s.Title]
			if !ok {
				continue
			}
			seen++
			if s.LastToolFailed != failed || s.LastTool == "" {
				t.Errorf("%s: %q last tool %q, failed %v; want failed %v", from, s.Title, s.LastTool, s.LastToolFailed, failed)
			}
		}
		if seen != len(want) {
			t.Errorf("%s: %d of the %d children in the snapshot", from, seen, len(want))
		}
	}
	check("the live run", run.Snapshot())
	v, err := limEngineAt(t, db, nil).View(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	check("a view of the stored run", v.Snapshot())
}

// A run that fails has no answer: what the orchestrator said while it
// waited for its children is not printed as one, nor stored as the run's
// result, where a script takes it for the answer. The root keeps it as its
// own result.
func TestFailedRunHasNoAnswer(t *testing.T) {
	hold := newGate()
	policy := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "slow research"}))
		case c.isRoot():
			return say("I have started the research and will wait for it.")
		}
		hold.wait()
		return say("done")
	})
	e := testEngine(t, nil, policy, func(c *config.Config) {
		c.Limits.SessionTimeout = config.Duration(500 * time.Millisecond)
	})
	t.Cleanup(hold.open)
	var out, progress bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := e.Headless(ctx, HeadlessOptions{Out: &out, Log: &progress}, func(ctx context.Context) (*Run, error) {
		return e.Start(ctx, "research slowly")
	})
	if err != nil || code != ExitFailed {
		t.Fatalf("exit %d, %v:\n%s", code, err, progress.String())
	}
	if out.Len() > 0 {
		t.Errorf("a failed run printed an answer: %q", out.String())
	}
	x := exportLatest(t, e)
	if x.Run.Status != "failed" || x.Run.Result != "" {
		t.Errorf("run %s with result %q, want failed without one", x.Run.Status, x.Run.Result)
	}
	if root := rootOf(x); root.Result != "I have started the research and will wait for it." {
		t.Errorf("the root's own result is %q", root.Result)
	}
}
