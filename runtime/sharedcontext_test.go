package runtime

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Seed 003's acceptance criteria and DESIGN.md §3 "Shared context", through
// sessions_spawn and get_shared_context.

// sharedOf decodes a session's stored effective context.
func sharedOf(t *testing.T, s *store.ExportSession) map[string]any {
	t.Helper()
	var m map[string]any
	decode(t, string(s.SharedContext), &m)
	return m
}

// getSharedContext decodes a get_shared_context tool result.
func getSharedContext(t *testing.T, result string) map[string]any {
	t.Helper()
	var res struct {
		SharedContext map[string]any `json:"shared_context"`
	}
	decode(t, result, &res)
	if res.SharedContext == nil {
		t.Fatalf("get_shared_context returned no shared_context object: %s", result)
	}
	return res.SharedContext
}

// A parallel spawn gives every member the same context, injected into its
// system prompt in the exact block format and readable with
// get_shared_context; a spawn without sharedContext works as before.
func TestSharedContextParallelSpawn(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.isRoot() {
			if c.turns == 0 {
				return do(
					call("sessions_spawn", obj{"task": []string{"Research frameworks", "Research hosting", "Research pricing"}, "parallel": true, "label": "team",
						"sharedContext": raw(`{"projectGoal": "Build a modern web app", "constraints": ["budget", "timeline"]}`)}),
					call("sessions_spawn", obj{"task": "Work without context", "label": "plain"}),
				)
			}
			return say("all done")
		}
		if c.turns == 0 {
			return do(call("get_shared_context", obj{}))
		}
		return say("finished " + c.label)
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)

	const block = "[Shared Context]:\n- projectGoal: \"Build a modern web app\"\n- constraints: [\"budget\",\"timeline\"]\n"
	want := map[string]any{"projectGoal": "Build a modern web app", "constraints": []any{"budget", "timeline"}}
	for _, label := range []string{"team-1", "team-2", "team-3"} {
		s := mustLabel(t, x, label)
		sys := s.Messages[0].Content
		i := strings.Index(sys, block)
		if i < 0 {
			t.Errorf("%s: system prompt lacks the exact block %q:\n%s", label, block, sys)
		} else if next := sys[i+len(block):]; strings.HasPrefix(next, "- ") {
			t.Errorf("%s: the block has more lines than the two keys: %q", label, next)
		}
		if got := sharedOf(t, s); sprint(got) != sprint(want) {
			t.Errorf("%s: stored shared_context %s, want %s", label, s.SharedContext, sprint(want))
		}
		res := toolResults(s, "get_shared_context")
		if len(res) != 1 {
			t.Fatalf("%s: %d get_shared_context results", label, len(res))
		}
		if got := getSharedContext(t, res[0]); sprint(got) != sprint(want) {
			t.Errorf("%s: get_shared_context = %s, want %s", label, res[0], sprint(want))
		}
	}
	// Key order is the order given, identical for every member.
	if a, b := string(mustLabel(t, x, "team-1").SharedContext), string(mustLabel(t, x, "team-3").SharedContext); a != b {
		t.Errorf("parallel members got different contexts: %s vs %s", a, b)
	}

	plain := mustLabel(t, x, "plain")
	if strings.Contains(plain.Messages[0].Content, "[Shared Context]") {
		t.Errorf("a spawn without sharedContext got a shared context block")
	}
	if string(plain.SharedContext) != "{}" {
		t.Errorf("plain shared_context = %s, want {}", plain.SharedContext)
	}
	if res := toolResults(plain, "get_shared_context"); len(res) != 1 || len(getSharedContext(t, res[0])) != 0 {
		t.Errorf("plain get_shared_context = %v, want an empty object", res)
	}
	if plain.Status != "completed" {
		t.Errorf("plain is %s: %s", plain.Status, plain.Error)
	}
}

// A child's context is its parent's, overridden and extended by the keys
// given at spawn, over three levels; and nothing a child does changes its
// parent's context.
func TestSharedContextInheritanceThreeLevels(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot():
			if c.turns == 0 {
				return do(call("sessions_spawn", obj{"task": "Lead the launch", "label": "lead", "agent": "planner",
					"sharedContext": raw(`{"projectGoal": "Launch", "audience": "developers"}`)}))
			}
			return say("done")
		case c.label == "lead":
			switch c.turns {
			case 0:
				return do(call("sessions_spawn", obj{"task": "Plan the middle", "label": "mid", "agent": "planner",
					"sharedContext": raw(`{"audience": "early adopters", "tier": 2}`)}))
			case 1:
				return do(call("get_shared_context", obj{}))
			}
			return say("lead done")
		case c.label == "mid":
			switch c.turns {
			case 0:
				return do(
					call("sessions_spawn", obj{"task": "Do the leaf work", "label": "leaf", "sharedContext": raw(`{"tier": 3, "extra": true, "projectGoal": "Leaf goal"}`)}),
					call("sessions_spawn", obj{"task": "Do the bare work", "label": "bare"}),
				)
			case 1:
				return do(call("get_shared_context", obj{}))
			}
			return say("mid done")
		}
		if c.turns == 0 {
			return do(call("get_shared_context", obj{}))
		}
		return say("leaf done")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)

	cases := []struct {
		label string
		want  string // JSON with keys in the order they must keep
	}{
		{"lead", `{"projectGoal":"Launch","audience":"developers"}`},
		{"mid", `{"projectGoal":"Launch","audience":"early adopters","tier":2}`},
		{"leaf", `{"projectGoal":"Leaf goal","audience":"early adopters","tier":3,"extra":true}`},
		{"bare", `{"projectGoal":"Launch","audience":"early adopters","tier":2}`},
	}
	for _, tc := range cases {
		s := mustLabel(t, x, tc.label)
		if got := string(s.SharedContext); got != tc.want {
			t.Errorf("%s (depth %d): shared_context %s, want %s", tc.label, s.Depth, got, tc.want)
		}
		res := toolResults(s, "get_shared_context")
		if len(res) == 0 {
			t.Fatalf("%s never called get_shared_context", tc.label)
		}
		// Read after its own children were spawned with other values.
		var got struct {
			SharedContext json.RawMessage `json:"shared_context"`
		}
		decode(t, res[len(res)-1], &got)
		if string(got.SharedContext) != tc.want {
			t.Errorf("%s: get_shared_context = %s, want %s", tc.label, got.SharedContext, tc.want)
		}
	}
	if d := mustLabel(t, x, "leaf").Depth; d != 3 {
		t.Errorf("leaf depth %d, want 3", d)
	}
	leafSys := mustLabel(t, x, "leaf").Messages[0].Content
	if !strings.Contains(leafSys, "[Shared Context]:\n- projectGoal: \"Leaf goal\"\n- audience: \"early adopters\"\n- tier: 3\n- extra: true\n") {
		t.Errorf("leaf system prompt block is wrong:\n%s", leafSys)
	}
	if root := rootOf(x); string(root.SharedContext) != "{}" {
		t.Errorf("the root's context changed: %s", root.SharedContext)
	}
}

// "$label": "reference" includes a finished sibling's result under the
// label; a reference to an unfinished sibling chains the new session after
// it (pending, then running with the result); an unknown name is a tool
// error.
func TestSharedContextReferences(t *testing.T) {
	slow := newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot():
			switch c.turns {
			case 0:
				return do(call("sessions_spawn", obj{"task": "Research the market", "label": "research", "wait": true}))
			case 1:
				return do(
					call("sessions_spawn", obj{"task": "Design from the research", "label": "design", "sharedContext": obj{"brand": "acme", "$research": "reference"}}),
					call("sessions_spawn", obj{"task": "Slow work", "label": "slow"}),
					call("sessions_spawn", obj{"task": "Use the slow result", "label": "after", "sharedContext": obj{"$slow": "reference"}}),
					call("sessions_spawn", obj{"task": "Broken reference", "label": "bad", "sharedContext": obj{"$nobody": "reference"}}),
				)
			case 2:
				slow.open()
			}
			return say("done")
		case c.label == "slow":
			slow.wait()
			return say("SLOW RESULT: 42")
		case c.label == "research":
			return say("Research says: use \"Go\" & <SQLite>")
		}
		if c.turns == 0 {
			return do(call("get_shared_context", obj{}))
		}
		return say("done " + c.label)
	})
	x, events, code := swarm(t, p, nil, slow)
	mustComplete(t, x, code)
	root := rootOf(x)
	research, design, after, slowS := mustLabel(t, x, "research"), mustLabel(t, x, "design"), mustLabel(t, x, "after"), mustLabel(t, x, "slow")

	// A finished sibling: included under the key without "$", at once.
	dctx := sharedOf(t, design)
	if dctx["research"] != research.Result || dctx["brand"] != "acme" || dctx["$research"] != nil {
		t.Errorf("design context = %s, want research = %q and brand", design.SharedContext, research.Result)
	}
	var line strings.Builder
	enc := json.NewEncoder(&line)
	enc.SetEscapeHTML(false)
	enc.Encode(research.Result)
	if !strings.Contains(design.Messages[0].Content, "- research: "+line.String()) {
		t.Errorf("design's system prompt lacks the research line:\n%s", design.Messages[0].Content)
	}
	if st := statuses(events, design.ID); len(st) == 0 || st[0] != "running" {
		t.Errorf("design statuses %v: a reference to a finished sibling must not wait", st)
	}

	// An unfinished sibling: the new session waits, then runs with the result.
	spawns := toolResults(root, "sessions_spawn")
	if len(spawns) != 5 {
		t.Fatalf("root made %d spawns", len(spawns))
	}
	var res struct {
		Sessions []struct {
			Status    string   `json:"status"`
			WaitingOn []string `json:"waiting_on"`
		} `json:"sessions"`
	}
	decode(t, spawns[3], &res)
	if len(res.Sessions) != 1 || res.Sessions[0].Status != "pending" || strings.Join(res.Sessions[0].WaitingOn, ",") != slowS.ID {
		t.Errorf("spawn with $slow returned %s, want pending waiting on %s", spawns[3], slowS.ID)
	}
	if st := statuses(events, after.ID); strings.Join(st, ",") != "pending,running,completed" {
		t.Errorf("after went through %v, want pending, running, completed", st)
	}
	if statusSeq(events, after.ID, "running") < statusSeq(events, slowS.ID, "completed") {
		t.Errorf("after started before slow completed")
	}
	if actx := sharedOf(t, after); actx["slow"] != "SLOW RESULT: 42" {
		t.Errorf("after context = %s, want slow's result", after.SharedContext)
	}
	if r := toolResults(after, "get_shared_context"); len(r) != 1 || getSharedContext(t, r[0])["slow"] != "SLOW RESULT: 42" {
		t.Errorf("after get_shared_context = %v", r)
	}
	if !strings.Contains(after.Messages[0].Content, "- slow: \"SLOW RESULT: 42\"") {
		t.Errorf("after's system prompt lacks the resolved reference:\n%s", after.Messages[0].Content)
	}

	// An unknown name: a tool error naming it, and no session.
	if e := toolError(spawns[4]); !strings.Contains(e, "$nobody") || !strings.Contains(e, "no earlier sub-agent") {
		t.Errorf("unknown reference gave %s", spawns[4])
	}
	if sessionByLabel(x, "bad") != nil {
		t.Errorf("a spawn with an unknown reference created a session")
	}
}
