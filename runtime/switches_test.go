package runtime

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// The coordination feature switches (config coordination.enable_*): off
// removes the feature's tools from every role and its guidance from the
// prompts, and nothing else.
func TestFeatureSwitches(t *testing.T) {
	cases := []struct {
		name    string
		off     func(*config.Coordination)
		gone    []string // tools no session may be offered
		kept    []string // tools the root keeps
		prompt  []string // guidance no system prompt may hold
		told    []string // what no message a session gets may hold
		tryTool string   // a removed tool the root calls anyway
	}{
		{
			name:    "planning",
			off:     func(c *config.Coordination) { c.EnableAgentPlanning = false },
			gone:    []string{"create_task_plan", "add_task", "update_task_status", "edit_task", "delete_task", "get_task_plan", "get_ready_tasks", "get_blocked_tasks"},
			kept:    []string{"sessions_spawn", "delegate_task", "task_broadcast", "ask_others"},
			prompt:  []string{"## Task plan", "create_task_plan(", "get_ready_tasks()"},
			tryTool: "create_task_plan",
		},
		{
			name: "broadcasts",
			off:  func(c *config.Coordination) { c.EnableBroadcasts = false },
			// config.yaml: "enable_broadcasts: ... task_broadcast, ask_others, broadcast_message, announce";
			// and the max_broadcasts_per_session check says to use it to turn broadcasts off.
			gone:   []string{"task_broadcast", "task_broadcasts_read", "ask_others", "broadcast_message", "announce", "view_agent_tasks"},
			kept:   []string{"sessions_spawn", "delegate_task", "create_task_plan", "task_send_message"},
			prompt: []string{"## Coordinating with other agents", "ask_others(", "task_broadcast("},
			// The sibling tables and announcements name what there is.
			told:    []string{"task_broadcast"},
			tryTool: "ask_others",
		},
		{
			name:    "delegation",
			off:     func(c *config.Coordination) { c.EnableTaskDelegation = false },
			gone:    []string{"delegate_task", "check_delegation_status", "get_delegation_result"},
			kept:    []string{"sessions_spawn", "create_task_plan", "task_broadcast", "ask_others"},
			prompt:  []string{"## Delegation", "delegate_task("},
			tryTool: "delegate_task",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			offered := map[string][]string{} // role -> tools of its first request
			p := policyFor(func(c *convo) scripted.Reply {
				mu.Lock()
				if _, ok := offered[c.role]; !ok {
					offered[c.role] = c.req.Tools
				}
				mu.Unlock()
				if !c.isRoot() {
					return say("child done")
				}
				switch c.turns {
				case 0:
					return do(
						call("sessions_spawn", obj{"task": "Research", "label": "r"}),
						call("sessions_spawn", obj{"task": "Plan", "label": "p", "agent": "planner"}),
						call("sessions_spawn", obj{"task": "Build", "label": "e", "agent": "executor"}),
					)
				case 1:
					return do(call(tc.tryTool, obj{"description": "x", "question": "x", "tasks": []string{"x"}}))
				}
				return say("done")
			})
			x, _, code := swarm(t, p, func(cfg *config.Config) { tc.off(&cfg.Coordination) })
			mustComplete(t, x, code)
			mu.Lock()
			defer mu.Unlock()
			for _, role := range []string{"orchestrator", "researcher", "planner", "executor"} {
				tools, ok := offered[role]
				if !ok {
					t.Fatalf("no request from %s", role)
				}
				for _, name := range tc.gone {
					if slices.Contains(tools, name) {
						t.Errorf("%s is offered %s with the feature off", role, name)
					}
				}
			}
			for _, name := range tc.kept {
				if !slices.Contains(offered["orchestrator"], name) {
					t.Errorf("the orchestrator lost %s", name)
				}
			}
			siblingNews := 0
			for _, s := range x.Sessions {
				for _, g := range tc.prompt {
					if strings.Contains(s.Messages[0].Content, g) {
						t.Errorf("%s's system prompt still holds %q", s.Agent, g)
					}
				}
				for _, m := range s.Messages[1:] {
					if m.Role != "user" {
						continue
					}
					if strings.Contains(m.Content, "<sibling_tasks>") || strings.Contains(m.Content, "<new_sibling") {
						siblingNews++
					}
					for _, g := range tc.told {
						if strings.Contains(m.Content, g) {
							t.Errorf("%s is told of %q: %s", s.Agent, g, m.Content)
						}
					}
				}
			}
			if siblingNews == 0 {
				t.Error("no session was told of its siblings")
			}
			if e := toolError(toolResults(rootOf(x), tc.tryTool)[0]); !strings.Contains(e, "no tool named") {
				t.Errorf("calling %s anyway gave %q", tc.tryTool, e)
			}
		})
	}
}
