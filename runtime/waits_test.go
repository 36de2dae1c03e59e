package runtime

import (
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

const waitRefused = "cannot end before you do"

// someResult reports whether one of the results of the named tool that
// the session labelled label got holds text.
func someResult(t *testing.T, x *store.Export, label, tool, text string) bool {
	t.Helper()
	for _, res := range toolResults(mustLabel(t, x, label), tool) {
		if strings.Contains(res, text) {
			return true
		}
	}
	return false
}

// A session chained after several fails as soon as one of them fails or
// is cancelled, whichever comes first in its list: a sibling may then
// wait for it.
func TestChainFailsWhenAnyPredecessorFails(t *testing.T) {
	hold := newGate()
	defer hold.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(
				call("sessions_spawn", obj{"task": "slow", "label": "s", "agent": "researcher"}),
				call("sessions_spawn", obj{"task": "doomed", "label": "a", "agent": "researcher"}))
		case c.isRoot() && c.turns == 1:
			return do(call("sessions_spawn", obj{"task": "after both", "label": "x", "agent": "researcher", "dependsOn": []string{"s", "a"}}))
		case c.isRoot() && c.turns == 2:
			return do(call("task_cancel", obj{"task_id": "a"}))
		case c.isRoot() && c.turns == 3:
			return do(call("task_wait", obj{"timeout": 60}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "a":
			hold.wait()
			return say("a done.")
		case c.label == "s" && !strings.Contains(c.last("task_output"), `"failed"`) && c.turns < 30:
			time.Sleep(50 * time.Millisecond)
			return do(call("task_output", obj{"task_id": "x", "wait": true, "timeout": 20}))
		default:
			return say(c.label + " done.")
		}
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	if !someResult(t, x, "s", "task_output", `"failed"`) {
		t.Errorf("x, chained after a cancelled a, did not fail while s ran: %q", toolResults(mustLabel(t, x, "s"), "task_output"))
	}
	if got := mustLabel(t, x, "x"); got.Status != StatusFailed || !strings.Contains(got.Error, "cancelled") {
		t.Errorf("x ended %s (%s), want failed for its predecessor", got.Status, got.Error)
	}
}

// A delegation made inside a delegate's subtree runs in its ancestor's
// place: it does not queue behind other delegates' nested delegations.
func TestNestedDelegationsTakeNoPlaceOfTheirOwn(t *testing.T) {
	nested := newGate() // d1a is running
	release := newGate()
	defer nested.open()
	defer release.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(
				call("delegate_task", obj{"description": "one", "custom_config": obj{"label": "d1"}}),
				call("delegate_task", obj{"description": "two", "custom_config": obj{"label": "d2"}}))
		case c.isRoot() && c.turns == 1:
			return do(call("task_wait", obj{"timeout": 60}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "d1" && c.turns == 0:
			return do(call("delegate_task", obj{"description": "one deeper", "custom_config": obj{"label": "d1a"}}))
		case c.label == "d1a":
			nested.open()
			release.wait()
			return say("d1a done.")
		case c.label == "d2" && c.turns == 0:
			nested.wait()
			return do(call("delegate_task", obj{"description": "two deeper", "custom_config": obj{"label": "d2a"}}))
		case c.label == "d2" && c.turns == 1:
			release.open()
			return do(call("task_wait", obj{"timeout": 60}))
		default:
			return say(c.label + " done.")
		}
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) {
		cfg.Coordination.MaxDelegationDepth = 2
		cfg.Coordination.MaxConcurrentDelegations = 2
	})
	mustComplete(t, x, code)
	if someResult(t, x, "d2", "delegate_task", "queued") {
		t.Errorf("d2's own delegation was queued: %q", toolResults(mustLabel(t, x, "d2"), "delegate_task"))
	}
}

// delegatesD1AndSpawnsA is the orchestrator of TestWaitsThroughDelegationPlaces:
// it delegates d1, spawns the orchestrator a, and waits for both.
func delegatesD1AndSpawnsA(c *convo) scripted.Reply {
	switch c.turns {
	case 0:
		return do(
			call("delegate_task", obj{"description": "one", "custom_config": obj{"label": "d1"}}),
			call("sessions_spawn", obj{"task": "coordinate", "label": "a", "agent": "orchestrator"}))
	case 1:
		return do(call("task_wait", obj{"timeout": 60}))
	}
	return say("Root done.")
}

// Waits through the places of delegations: the place holder d1 waits for
// a, and a for d2, queued behind d1 (d1's own nested delegation takes no
// place of its own); and a spawn or a delegation made with wait: true is
// a wait like task_wait, refused or counted alike.
func TestWaitsThroughDelegationPlaces(t *testing.T) {
	limitOne := func(cfg *config.Config) {
		cfg.Coordination.MaxDelegationDepth = 2
		cfg.Coordination.MaxConcurrentDelegations = 1
	}
	t.Run("a nested delegation beside the holder", func(t *testing.T) {
		release := newGate() // d1a runs until d1 is done asking
		defer release.open()
		p := policyFor(func(c *convo) scripted.Reply {
			switch {
			case c.isRoot():
				return delegatesD1AndSpawnsA(c)
			case c.label == "d1" && c.turns == 0:
				return do(call("delegate_task", obj{"description": "one deeper", "custom_config": obj{"label": "d1a"}}))
			case c.label == "d1" && !strings.Contains(c.last("task_output"), waitRefused) && !strings.Contains(c.last("task_output"), "a done") && c.turns < 30:
				return do(call("task_output", obj{"task_id": "a", "wait": true, "timeout": 0.25}))
			case c.label == "d1a":
				release.wait()
				return say("d1a done.")
			case c.label == "d1":
				release.open()
				return say("d1 done.")
			case c.label == "a" && c.turns == 0:
				return do(call("delegate_task", obj{"description": "two", "custom_config": obj{"label": "d2"}}))
			case c.label == "a" && c.turns == 1:
				return do(call("task_wait", obj{"timeout": 20}))
			default:
				return say(c.label + " done.")
			}
		})
		x, _, code := swarm(t, p, limitOne)
		mustComplete(t, x, code)
		if !someResult(t, x, "a", "task_wait", waitRefused) && !someResult(t, x, "d1", "task_output", waitRefused) {
			t.Errorf("a waited for d2, queued behind d1, which waits for a: %q", toolResults(mustLabel(t, x, "a"), "task_wait"))
		}
	})
	for _, tool := range []string{"delegate_task", "sessions_spawn"} {
		t.Run(tool+" with wait", func(t *testing.T) {
			p := policyFor(func(c *convo) scripted.Reply {
				switch {
				case c.isRoot():
					return delegatesD1AndSpawnsA(c)
				case c.label == "d1" && c.turns == 0:
					time.Sleep(time.Second) // mostly after a's wait has begun
					return do(call("task_output", obj{"task_id": "a", "wait": true, "timeout": 5}))
				case c.label == "a" && c.turns == 0 && tool == "delegate_task":
					return do(call("delegate_task", obj{"description": "two", "wait": true, "custom_config": obj{"label": "d2"}}))
				case c.label == "a" && c.turns == 0:
					return do(call("delegate_task", obj{"description": "two", "custom_config": obj{"label": "y"}}))
				case c.label == "a" && c.turns == 1 && tool == "sessions_spawn":
					return do(call("sessions_spawn", obj{"task": "after y", "label": "z", "agent": "researcher", "chainAfter": "y", "wait": true, "timeout": 20}))
				default:
					return say(c.label + " done.")
				}
			})
			x, _, code := swarm(t, p, limitOne)
			mustComplete(t, x, code)
			if !someResult(t, x, "a", tool, "not waited for: ") && !someResult(t, x, "d1", "task_output", waitRefused) {
				t.Errorf("a's %s and d1's task_output waited for each other: %q, %q", tool,
					toolResults(mustLabel(t, x, "a"), tool), toolResults(mustLabel(t, x, "d1"), "task_output"))
			}
		})
	}
}

// A limit of delegations raised while the run goes starts the queued ones
// at once, not when a running one ends.
func TestRaisedDelegationLimitStartsTheQueued(t *testing.T) {
	var e *Engine
	started := newGate()
	defer started.open()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(
				call("delegate_task", obj{"description": "one", "custom_config": obj{"label": "d1"}}),
				call("delegate_task", obj{"description": "two", "custom_config": obj{"label": "d2"}}))
		case c.isRoot() && c.turns == 1:
			next := *e.Config()
			next.Coordination.MaxConcurrentDelegations = 2
			if err := e.Reload(&next); err != nil {
				return say("reload refused: " + err.Error())
			}
			return do(call("task_wait", obj{"timeout": 60}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "d1":
			select {
			case <-started.ch:
				return say("d1 done after d2 started.")
			case <-time.After(20 * time.Second):
				return say("d1 done; d2 never started.")
			}
		case c.label == "d2":
			started.open()
			return say("d2 done.")
		default:
			return say(c.label + " done.")
		}
	})
	e = testEngine(t, nil, p, func(cfg *config.Config) { cfg.Coordination.MaxConcurrentDelegations = 1 })
	if _, code := headless(t, e, "coordinate", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	x := exportLatest(t, e)
	if got := mustLabel(t, x, "d1"); got.Result != "d1 done after d2 started." {
		t.Errorf("d1 ended with %q", got.Result)
	}
}
