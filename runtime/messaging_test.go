package runtime

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// task_send_message and task_output to children and siblings: FR-11..FR-13
// and AC-8..AC-10 of seeds 000/001.

// idBook lets one session's policy learn an id another session's policy
// saw (the root's own id, a cousin's), as a model never could: it is how
// the tests aim at targets that must be refused.
type idBook struct {
	mu  sync.Mutex
	ids map[string]string
}

func (b *idBook) set(k, v string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ids == nil {
		b.ids = map[string]string{}
	}
	b.ids[k] = v
}

func (b *idBook) get(k string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ids[k]
}

// Siblings message and read each other; anything but a child or a sibling
// is refused with the spec's error; noReply:true is passive and synthetic
// and starts no turn; noReply:false wakes a waiting sibling and resurrects
// a completed one, which completes again and reports a second time.
func TestSendMessageAndOutput(t *testing.T) {
	var book idBook
	pcGate, pcKnown := newGate(), newGate()
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot():
			book.set("root", c.id)
			switch c.turns {
			case 0:
				return do(
					call("sessions_spawn", obj{"task": []string{"Sibling one", "Sibling two"}, "parallel": true, "label": "s"}),
					call("sessions_spawn", obj{"task": "Lead a sub-team", "label": "p", "agent": "planner"}),
				)
			case 1:
				ids := spawned(t, c.results("sessions_spawn")[0])
				return do(
					call("task_output", obj{"task_id": ids["s-1"], "wait": true}),
					call("task_send_message", obj{"task_id": ids["s-2"], "message": "root note", "noReply": true}),
				)
			}
			return say("root done")
		case c.label == "p":
			switch c.turns {
			case 0:
				return do(call("sessions_spawn", obj{"task": "Sub work", "label": "pc"}))
			case 1:
				book.set("pc", spawned(t, c.last("sessions_spawn"))["pc"])
				pcKnown.open()
				return say("p waiting for pc")
			}
			if c.saw("wake up, p") {
				pcGate.open()
			}
			return say("p done")
		case c.label == "pc":
			pcGate.wait()
			return say("pc done")
		case c.label == "s-2":
			if c.turns == 0 {
				return say("s2 first answer")
			}
			return say("s2 second answer")
		case c.label == "s-1":
			sib := c.siblingIDs()["s-2"]
			switch c.turns {
			case 0:
				return do(call("task_output", obj{"task_id": sib, "wait": true}))
			case 1:
				return do(call("task_send_message", obj{"task_id": sib, "message": "FYI only", "noReply": true}))
			case 2:
				return do(call("task_output", obj{"task_id": sib}))
			case 3:
				return do(call("task_send_message", obj{"task_id": sib, "message": "Please redo it"}))
			case 4:
				pcKnown.wait()
				return do(
					call("task_send_message", obj{"task_id": book.get("root"), "message": "to my parent"}),
					call("task_output", obj{"task_id": book.get("root")}),
					call("task_send_message", obj{"task_id": book.get("pc"), "message": "to my cousin"}),
					call("task_output", obj{"task_id": book.get("pc")}),
					call("task_send_message", obj{"task_id": "s-nope", "message": "to nobody"}),
					call("task_send_message", obj{"task_id": c.id, "message": "to myself"}),
				)
			case 5:
				return do(call("task_send_message", obj{"task_id": c.siblingIDs()["p"], "message": "wake up, p"}))
			}
			return say("s1 done")
		}
		return say("?")
	})
	x, events, code := swarm(t, p, nil, pcGate, pcKnown)
	mustComplete(t, x, code)
	root, s1, s2, ps := rootOf(x), mustLabel(t, x, "s-1"), mustLabel(t, x, "s-2"), mustLabel(t, x, "p")

	var out agents.TaskOutcome
	decode(t, callResults(s1, "task_output")[0], &out)
	if out.TaskID != s2.ID || out.Status != "completed" || out.Output != "s2 first answer" {
		t.Errorf("task_output of a sibling = %+v", out)
	}
	decode(t, callResults(root, "task_output")[0], &out)
	if out.Status != "completed" || out.Output != "s1 done" {
		t.Errorf("task_output of a child = %+v", out)
	}

	// noReply: true is passive and synthetic, and starts no turn.
	sends := callResults(s1, "task_send_message")
	var sent agents.SendResult
	decode(t, sends[0], &sent)
	if sent.Status != "delivered" || !sent.NoReply {
		t.Errorf("noReply send returned %s", sends[0])
	}
	decode(t, callResults(s1, "task_output")[1], &out)
	if out.Status != "completed" || out.Output != "s2 first answer" {
		t.Errorf("after a noReply message s-2 is %+v, want still completed with its first answer", out)
	}
	var fyi, redo *store.ExportMessage
	for i, m := range s2.Messages {
		switch {
		case strings.Contains(m.Content, "FYI only"):
			fyi = &s2.Messages[i]
		case strings.Contains(m.Content, "Please redo it"):
			redo = &s2.Messages[i]
		}
	}
	if fyi == nil || !fyi.NoReply || !fyi.Synthetic || !strings.Contains(fyi.Content, `<task_message from="researcher (s-1)" task_id="`+s1.ID+`"`) {
		t.Errorf("the noReply message in s-2's history: %+v", fyi)
	}
	if redo == nil || redo.NoReply {
		t.Fatalf("the waking message in s-2's history: %+v", redo)
	}
	rootNote := false
	for _, m := range s2.Messages {
		if strings.Contains(m.Content, "root note") && m.NoReply {
			rootNote = true
		}
	}
	if !rootNote {
		t.Errorf("the root's passive message to its child is not in the child's history")
	}

	// noReply: false resurrected the completed sibling: it completed again
	// and its parent got a second <task_result>.
	decode(t, sends[1], &sent)
	if sent.NoReply || !strings.Contains(sent.Note, "woken") {
		t.Errorf("waking send returned %s", sends[1])
	}
	if s2.Turns != 2 || s2.Status != "completed" || s2.Result != "s2 second answer" {
		t.Errorf("s-2 is %s after %d turns with %q", s2.Status, s2.Turns, s2.Result)
	}
	if st := strings.Join(statuses(events, s2.ID), ","); st != "running,completed,running,completed" {
		t.Errorf("s-2 went through %s", st)
	}
	var results []string
	for _, m := range injected(root, "task_result") {
		if strings.Contains(m.Content, `task_id="`+s2.ID+`"`) {
			results = append(results, m.Content)
		}
	}
	if len(results) != 2 || !strings.Contains(results[0], "s2 first answer") || !strings.Contains(results[1], "s2 second answer") {
		t.Errorf("the root got these results of s-2: %q", results)
	}

	// Anything but a child or a sibling is refused, saying what the id
	// names.
	outputs := callResults(s1, "task_output")
	for i, x := range []struct{ res, says string }{
		{sends[2], "is your parent"}, {outputs[2], "is your parent"},
		{sends[3], "neither your child nor your sibling"}, {outputs[3], "neither your child nor your sibling"},
		{sends[4], `(got "s-nope"`},
		{sends[5], "is your own task"},
	} {
		if e := toolError(x.res); !strings.Contains(e, "Invalid task ID - must be a child or sibling task") || !strings.Contains(e, x.says) {
			t.Errorf("refused target %d gave %s, want it to say %q", i, x.res, x.says)
		}
	}
	if n := len(callResults(s1, "task_output")); n != 4 {
		t.Errorf("%d task_output results", n)
	}

	// A waking message to a sibling waiting for its children makes it take
	// a turn that sees the message.
	woke := -1
	for i, m := range ps.Messages {
		if strings.Contains(m.Content, "wake up, p") && !m.NoReply {
			woke = i
		}
	}
	if woke < 0 {
		t.Fatalf("p never got the waking message")
	}
	answered := false
	for _, m := range ps.Messages[woke:] {
		if m.Role == "assistant" {
			answered = true
		}
	}
	if !answered || ps.Status != "completed" {
		t.Errorf("p did not take a turn after the waking message (status %s)", ps.Status)
	}
}

// A tool result longer than max_tool_output is cut, and still JSON: every
// tool returns JSON (DESIGN.md §3), and a model given half an object may
// misread it (a sessions_spawn with wait of 200 children, or a long
// task_output, is easily over the default 16000 characters).
func TestCutToolResultIsStillJSON(t *testing.T) {
	long := strings.Repeat("très long résultat ", 100)
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			return say(long)
		}
		switch c.turns {
		case 0:
			return do(call("sessions_spawn", obj{"task": "Write a lot", "label": "w", "wait": true}))
		case 1:
			return do(call("task_output", obj{"task_id": "w"}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) { cfg.Limits.MaxToolOutput = 500 })
	mustComplete(t, x, code)
	for _, name := range []string{"sessions_spawn", "task_output"} {
		res := toolResults(rootOf(x), name)[0]
		if len(res) > 700 {
			t.Errorf("%s result is %d bytes: not cut", name, len(res))
		}
		if !json.Valid([]byte(res)) || !utf8.ValidString(res) {
			t.Errorf("the cut %s result is not valid JSON: ...%s", name, res[max(0, len(res)-80):])
		}
	}
}

// A child's long result reaches its parent's history cut to
// max_tool_output, as a tool result is; the child keeps all of it.
func TestLongChildResultIsCutForItsParent(t *testing.T) {
	long := strings.Repeat("un résultat très long ", 200)
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			return say(long)
		}
		if c.turns == 0 {
			return do(call("sessions_spawn", obj{"task": "Write a lot", "label": "w"}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) { cfg.Limits.MaxToolOutput = 500 })
	mustComplete(t, x, code)
	w := mustLabel(t, x, "w")
	if w.Result != long {
		t.Errorf("the child's own result is %d characters, want all %d", utf8.RuneCountInString(w.Result), utf8.RuneCountInString(long))
	}
	got := injected(rootOf(x), "task_result")
	if len(got) != 1 {
		t.Fatalf("the root got %d task results, want 1", len(got))
	}
	res := got[0].Content
	if n := utf8.RuneCountInString(res); n > 700 {
		t.Errorf("the task result in the root's history is %d characters: not cut", n)
	}
	more := utf8.RuneCountInString(long) - 500
	if want := fmt.Sprintf("…[cut: %d more characters, over max_tool_output (500)]\n</task_result>", more); !strings.Contains(res, want) {
		t.Errorf("the cut result does not end with %q: ...%s", want, res[max(0, len(res)-120):])
	}
	if !utf8.ValidString(res) || !strings.HasPrefix(res, `<task_result task_id="`+w.ID+`"`) {
		t.Errorf("the cut result is not a whole <task_result>: %.120s", res)
	}
}

// A task_wait over more outcomes than max_tool_output holds gives every
// task's id and status, each output cut alike: the outcomes it returns are
// delivered nowhere else, and the last ones were left out whole.
func TestWaitOverManyLongOutcomesKeepsEveryTask(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if !c.isRoot() {
			return say(strings.Repeat(c.label+" found something. ", 20))
		}
		switch c.turns {
		case 0:
			return do(call("sessions_spawn", obj{"task": []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, "parallel": true, "label": "k", "agent": "explorer"}))
		case 1:
			return do(call("task_wait", obj{}))
		}
		return say("done")
	})
	x, _, code := swarm(t, p, func(cfg *config.Config) { cfg.Limits.MaxToolOutput = 1000 })
	mustComplete(t, x, code)
	res := toolResults(rootOf(x), "task_wait")[0]
	if n := utf8.RuneCountInString(res); n > 1000 {
		t.Errorf("the task_wait result is %d characters", n)
	}
	var got struct {
		Results []struct {
			TaskID string `json:"task_id"`
			Status string `json:"status"`
			Output string `json:"output"`
		} `json:"results"`
		Omitted int    `json:"results_omitted"`
		Note    string `json:"note"`
	}
	decode(t, res, &got)
	if len(got.Results) != 10 || got.Omitted != 0 {
		t.Fatalf("%d outcomes shown and %d left out, want all 10 shown: %s", len(got.Results), got.Omitted, res)
	}
	for _, r := range got.Results {
		if r.TaskID == "" || r.Status != "completed" || strings.Count(r.Output, "found") > 1 {
			t.Errorf("outcome %+v: want its id, its status and its output cut", r)
		}
	}
	if !strings.Contains(got.Note, "to fit max_tool_output; task_output gives one whole") {
		t.Errorf("the note is %q", got.Note)
	}
}

// A child that completed, was woken by a sibling's message and completed
// again has two results. A task_wait that returns its latest must not
// swallow the first: the parent still receives it.
func TestWaitGivesAnEarlierResultOfAWokenChild(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": []string{"slow worker", "fast worker"}, "parallel": true, "label": "r", "agent": "researcher"}))
		case c.isRoot() && c.turns == 1:
			return do(call("task_wait", obj{}))
		case c.isRoot():
			return say("Final answer: both reported.")
		case c.label == "r-1" && c.turns == 0:
			return do(call("task_output", obj{"task_id": "r-2", "wait": true, "timeout": 10}))
		case c.label == "r-1" && c.turns == 1:
			return do(call("task_send_message", obj{"task_id": "r-2", "message": "Thanks for your findings."}))
		case c.label == "r-1":
			return say("r-1 is done.")
		case c.turns == 0:
			return say("IMPORTANT RESULT: the answer is 42.")
		default:
			return say("You are welcome.")
		}
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	var seen []string
	for _, m := range rootOf(x).Messages {
		for _, want := range []string{"IMPORTANT RESULT", "You are welcome."} {
			if strings.Contains(m.Content, want) {
				seen = append(seen, want)
			}
		}
	}
	if !slices.Contains(seen, "IMPORTANT RESULT") || !slices.Contains(seen, "You are welcome.") {
		t.Fatalf("the orchestrator saw %q of the worker's two results", seen)
	}
	// The earlier result came before the wait returned, or with it,
	// marked as earlier: after it, it would be the last word on the
	// worker.
	msgs := rootOf(x).Messages
	at := slices.IndexFunc(msgs, func(m store.ExportMessage) bool {
		return m.Role == "tool" && strings.HasPrefix(m.Content, `{"results":`)
	})
	if at < 0 {
		t.Fatal("no task_wait result")
	}
	before := slices.ContainsFunc(msgs[:at], func(m store.ExportMessage) bool { return strings.Contains(m.Content, "IMPORTANT RESULT") })
	with := strings.Contains(msgs[at].Content, `"earlier_results":["<task_result`) && strings.Contains(msgs[at].Content, "IMPORTANT RESULT")
	if !before && !with {
		t.Errorf("task_wait returned %q, without the worker's earlier result, which did not come before it either", msgs[at].Content)
	}
	for _, m := range msgs[at+1:] {
		if strings.Contains(m.Content, "IMPORTANT RESULT") {
			t.Errorf("the earlier result came again after the wait: %q", m.Content)
		}
	}
	// The sender is told where the woken task's answer will be.
	if res := callResults(mustLabel(t, x, "r-1"), "task_send_message"); len(res) != 1 || !strings.Contains(res[0], "read it with task_output") {
		t.Errorf("the sender was told %q", res)
	}
}
