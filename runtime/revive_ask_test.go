package runtime

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// An ask_others under way when the run fails is closed by its asker, which
// the parent's failure cancels, before the run's end is reported, and a
// resume neither asks it again nor waits for its answers: the call has
// exactly one result, "closed", and the revived asker goes on from it.
func TestFailedRunDoesNotAskAQuestionAgain(t *testing.T) {
	var fixed atomic.Bool
	var shadows atomic.Int32
	asked, released := newGate(), newGate()
	t.Cleanup(released.open)
	t.Cleanup(asked.open)
	quota := &scripted.Fault{Status: 429, Body: quotaBody}
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.shadow != "":
			// The root and the worker are asked; the first answer comes
			// only after the run has failed.
			if shadows.Add(1) == 1 {
				asked.open()
				released.wait()
			}
			return say("Friday works.")
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Ask about Friday", "label": "asker", "agent": "researcher"}),
				call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && !fixed.Load():
			asked.wait()
			return scripted.Reply{Fault: quota}
		case c.isRoot() && c.saw("Asker done.") && c.saw("Worker done."):
			return say("Final answer: both are done.")
		case c.isRoot():
			return say("Waiting.")
		case c.label == "asker" && c.turns == 0:
			return do(call("ask_others", obj{"question": "Ship on Friday?", "allow_human_response": false, "timeout": 600}))
		case c.label == "asker":
			return say("Asker done.")
		default:
			return say("Worker done.")
		}
	})
	hs := recServer(t, p)
	dir := t.TempDir()
	e := recEngine(t, dir, hs.URL+"/v1", nil)
	x := failRun(t, e, "Ask and work")
	released.open()
	if a := sessionByLabel(x, "asker"); a == nil || a.Status != StatusCancelled || len(x.Questions) != 1 || x.Questions[0].Status != QuestionClosed {
		t.Fatalf("before the resume: sessions %s, questions %+v; want the asker cancelled with its question closed", sessionStates(x), x.Questions)
	}
	before, asked1 := x, shadows.Load()
	fixed.Store(true)
	_, x = resumeElsewhere(t, e, dir, hs.URL+"/v1", nil, before)

	if len(x.Questions) != 1 {
		t.Fatalf("questions after the resume: %+v; want the one", x.Questions)
	}
	q := x.Questions[0]
	if q.Status != QuestionClosed {
		t.Errorf("the question is %s after the resume; want it still closed", q.Status)
	}
	if n := shadows.Load(); n != asked1 {
		t.Errorf("the resume asked for %d shadow answers; want none", n-asked1)
	}
	asker := sessionByLabel(x, "asker")
	var callID string
	var results []string
	for _, m := range asker.Messages {
		for _, tc := range m.ToolCalls {
			if tc.Name == "ask_others" {
				if callID != "" {
					t.Errorf("the asker called ask_others again: %s", tc.Arguments)
				}
				callID = tc.ID
			}
		}
		if m.Role == "tool" && m.ToolCallID == callID {
			results = append(results, m.Content)
		}
	}
	if len(results) != 1 || !strings.Contains(results[0], `"question_id":"`+q.ID+`"`) || !strings.Contains(results[0], `"status":"closed"`) {
		t.Errorf("results of the ask_others call: %q; want one, for %s", results, q.ID)
	}
	if got := assistantTexts(asker); asker.Status != StatusCompleted || got[len(got)-1] != "Asker done." {
		t.Errorf("asker is %s with answers %q", asker.Status, got)
	}
}
