package runtime

import (
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// Tool results and errors go to the model and the transcript as plain
// JSON: no \u003e for ">" (a plan's cycle is "a -> b -> a"), and still
// JSON that decodes to the same value.
func TestToolResultsArePlainJSON(t *testing.T) {
	msg := `dependency cycle: draft -> review -> draft; <tags> & "quotes"` + "\n\u2028"
	got := errorJSON(msg)
	want := `{"error":"dependency cycle: draft -> review -> draft; <tags> & \"quotes\"\n\u2028"}`
	if got != want {
		t.Errorf("errorJSON:\n got %s\nwant %s", got, want)
	}
	var back map[string]string
	if err := json.Unmarshal([]byte(got), &back); err != nil || back["error"] != msg {
		t.Errorf("does not decode back: %v %q", err, back["error"])
	}
}

// The results of one answer's calls go back to the model in the order of
// the calls, whichever finished first: chat templates that drop
// tool_call_id pair results with calls by position.
func TestToolResultsSentInCallOrder(t *testing.T) {
	var order atomic.Value
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if firstLineRole(req) != "orchestrator" {
			time.Sleep(150 * time.Millisecond) // the child's answer is slow
			return limSay("child done")
		}
		switch turnsOf(req) {
		case 0:
			return limDo(scripted.Call{Name: "sessions_spawn", Args: limArgs{"task": "slow work", "label": "slow"}})
		case 1:
			// task_wait finishes long after get_shared_context.
			return limDo(scripted.Call{Name: "task_wait", Args: limArgs{}}, scripted.Call{Name: "get_shared_context", Args: limArgs{}})
		}
		var calls, results []string
		for i, m := range req.Messages {
			if m.Role == "assistant" && len(m.ToolCalls) == 2 {
				for _, c := range m.ToolCalls {
					calls = append(calls, c.ID)
				}
				for _, r := range req.Messages[i+1:] {
					if r.Role != "tool" {
						break
					}
					results = append(results, r.ToolCallID)
				}
			}
		}
		order.Store([2][]string{calls, results})
		return limSay("done")
	})
	e := testEngine(t, nil, policy, nil)
	if _, code := headless(t, e, "order", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	got, _ := order.Load().([2][]string)
	if len(got[0]) != 2 || !slices.Equal(got[0], got[1]) {
		t.Fatalf("calls %v answered in the order %v", got[0], got[1])
	}
}
