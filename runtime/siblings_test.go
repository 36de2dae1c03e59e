package runtime

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Sibling awareness: FR-9, FR-10 and AC-7 of seeds 000/001.

// siblingRows parses the rows of a <sibling_tasks> table: task id, agent,
// title.
func siblingRows(content string) [][3]string {
	var rows [][3]string
	for line := range strings.Lines(content) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "| s-") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), " | ")
		if len(cells) == 3 {
			rows = append(rows, [3]string{strings.TrimSpace(cells[0]), strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2])})
		}
	}
	return rows
}

var newSiblingRE = regexp.MustCompile(`<new_sibling task_id="([^"]+)" agent="([^"]+)"`)

// siblingIDs reads the sibling ids a session was told about, by label.
func (c *convo) siblingIDs() map[string]string {
	out := map[string]string{}
	add := func(id, agent string) {
		if _, label, ok := strings.Cut(strings.TrimSuffix(agent, ")"), " ("); ok {
			out[label] = id
		}
	}
	for _, m := range c.req.Messages {
		if m.Role != "user" {
			continue
		}
		if strings.Contains(m.Content, "<sibling_tasks>") {
			for _, r := range siblingRows(m.Content) {
				add(r[0], r[1])
			}
		}
		for _, n := range newSiblingRE.FindAllStringSubmatch(m.Content, -1) {
			add(n[1], n[2])
		}
	}
	return out
}

// A parallel batch is created first and injected second: every member
// gets a <sibling_tasks> table of all the others; a later child gets the
// table of all existing ones, and they a passive <new_sibling> naming its
// real agent. None of it starts a turn.
func TestSiblingAwareness(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.isRoot() {
			switch c.turns {
			case 0:
				return do(call("sessions_spawn", obj{"task": []string{"Explore the config", "Research the API", "Review the docs"}, "parallel": true, "label": "batch", "wait": true}))
			case 1:
				return do(call("sessions_spawn", obj{"task": "Implement the loader", "label": "late", "agent": "explorer", "title": "Implement config loader"}))
			}
			return say("done")
		}
		return say("finished " + c.label)
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	batch := []*store.ExportSession{mustLabel(t, x, "batch-1"), mustLabel(t, x, "batch-2"), mustLabel(t, x, "batch-3")}
	late := mustLabel(t, x, "late")

	for _, s := range batch {
		tables := injected(s, "sibling_tasks")
		if len(tables) != 1 {
			t.Fatalf("%s got %d <sibling_tasks> messages", s.Label, len(tables))
		}
		m := tables[0]
		if !m.NoReply || !m.Synthetic || m.Source != "system" {
			t.Errorf("%s: <sibling_tasks> is not a passive system injection: %+v", s.Label, m)
		}
		rows := siblingRows(m.Content)
		var want [][3]string
		for _, o := range batch {
			if o != s {
				want = append(want, [3]string{o.ID, "researcher (" + o.Label + ")", o.Title})
			}
		}
		if fmt.Sprint(rows) != fmt.Sprint(want) {
			t.Errorf("%s table rows %v, want %v", s.Label, rows, want)
		}
		// The later sibling is announced with its real agent name.
		news := injected(s, "new_sibling")
		wantNews := coordination.FormatNewSibling(late.ID, "explorer (late)", "Implement config loader")
		if len(news) != 1 || news[0].Content != wantNews || !news[0].NoReply || !news[0].Synthetic {
			t.Errorf("%s <new_sibling> = %+v, want passive %q", s.Label, news, wantNews)
		}
		// Completed before the announcement, and not woken by it.
		if s.Status != "completed" || s.Turns != 1 {
			t.Errorf("%s is %s after %d turns", s.Label, s.Status, s.Turns)
		}
	}
	lt := injected(late, "sibling_tasks")
	if len(lt) != 1 || len(siblingRows(lt[0].Content)) != 3 {
		t.Errorf("late child's table: %+v", lt)
	}
	if len(injected(late, "new_sibling")) != 0 {
		t.Errorf("a new child was announced to itself")
	}
	// The root is nobody's sibling.
	if len(injected(rootOf(x), "sibling_tasks"))+len(injected(rootOf(x), "new_sibling")) != 0 {
		t.Errorf("the root got sibling injections")
	}
}

// A 200-child parallel batch: every table is cut at max_sibling_rows with
// a summary line, so each child's context stays bounded, and
// task_siblings lists all 199 siblings.
func TestSiblingTablesStayBoundedForLargeBatch(t *testing.T) {
	const n = 200
	tasks := make([]string, n)
	for i := range tasks {
		tasks[i] = fmt.Sprintf("Check item %d", i+1)
	}
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot():
			if c.turns == 0 {
				return do(call("sessions_spawn", obj{"task": tasks, "parallel": true, "label": "w", "wait": true}))
			}
			return say("done")
		case c.label == "w-1":
			// Page through task_siblings as a model would.
			if c.turns == 0 {
				return do(call("task_siblings", obj{}))
			}
			var page struct {
				Next *int `json:"next_offset"`
			}
			decode(t, c.last("task_siblings"), &page)
			if page.Next != nil {
				return do(call("task_siblings", obj{"offset": *page.Next}))
			}
		}
		return say("ok")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	root := rootOf(x)
	// The result is longer than max_tool_output: it is cut, and still a
	// spawn result a model can read.
	var spawned struct {
		Status    string            `json:"status"`
		Sessions  []json.RawMessage `json:"sessions"`
		Omitted   int               `json:"sessions_omitted"`
		Truncated bool              `json:"truncated"`
	}
	res := toolResults(root, "sessions_spawn")[0]
	if err := json.Unmarshal([]byte(res), &spawned); err != nil || spawned.Status != "completed" || !spawned.Truncated ||
		len(spawned.Sessions)+spawned.Omitted != n || len([]rune(res)) > 16000 {
		t.Errorf("spawn with wait returned %.200s (%v)", res, err)
	}
	if len(x.Sessions) != n+1 {
		t.Fatalf("%d sessions", len(x.Sessions))
	}
	for _, s := range x.Sessions {
		if s.Status != "completed" {
			t.Errorf("%s is %s", s.Label, s.Status)
		}
	}
	const summary = "… and 179 more siblings (use task_siblings to list them all)"
	for i := 1; i <= n; i++ {
		s := mustLabel(t, x, fmt.Sprintf("w-%d", i))
		tables := injected(s, "sibling_tasks")
		if len(tables) != 1 {
			t.Fatalf("%s got %d tables", s.Label, len(tables))
		}
		rows := siblingRows(tables[0].Content)
		if len(rows) != 20 || !strings.Contains(tables[0].Content, summary) {
			t.Fatalf("%s table has %d rows, summary present %v", s.Label, len(rows), strings.Contains(tables[0].Content, summary))
		}
		if len(tables[0].Content) > 4000 {
			t.Errorf("%s table is %d bytes", s.Label, len(tables[0].Content))
		}
		for _, r := range rows {
			if r[0] == s.ID {
				t.Errorf("%s lists itself", s.Label)
			}
		}
		if len(injected(s, "new_sibling")) != 0 {
			t.Errorf("%s got <new_sibling>: batch members learn of each other from the table", s.Label)
		}
	}
	w1 := mustLabel(t, x, "w-1")
	seen := map[string]bool{}
	pages := callResults(w1, "task_siblings")
	for _, res := range pages {
		var page struct {
			Siblings []struct {
				TaskID string `json:"task_id"`
			} `json:"siblings"`
			Total int `json:"total"`
		}
		decode(t, res, &page) // each page is whole JSON, within max_tool_output
		if page.Total != n-1 {
			t.Errorf("task_siblings total %d, want %d", page.Total, n-1)
		}
		for _, s := range page.Siblings {
			seen[s.TaskID] = true
		}
	}
	if len(seen) != n-1 || seen[w1.ID] || len(pages) > 5 {
		t.Errorf("task_siblings listed %d distinct siblings in %d pages (self listed: %v), want %d", len(seen), len(pages), seen[w1.ID], n-1)
	}
}

// Children spawned one after another: each one's <sibling_tasks> lists the
// siblings created before it and comes first in its history, before the
// <new_sibling> announcements of those created after it, even when an
// announcement arrives between the child's start and its first turn.
func TestSiblingTableComesBeforeAnnouncements(t *testing.T) {
	const n = 12
	p := policyFor(func(c *convo) scripted.Reply {
		if c.isRoot() {
			if c.turns == 0 {
				var calls []scripted.Call
				for i := 0; i < n; i++ {
					calls = append(calls, call("sessions_spawn", obj{"task": fmt.Sprintf("Work %d", i), "label": fmt.Sprintf("k%d", i)}))
				}
				return do(calls...)
			}
			return say("done")
		}
		return say("ok")
	})
	x, _, code := swarm(t, p, nil)
	mustComplete(t, x, code)
	for i := 0; i < n; i++ {
		s := mustLabel(t, x, fmt.Sprintf("k%d", i))
		var order []string
		for _, m := range s.Messages {
			switch {
			case m.Role != "user":
			case strings.Contains(m.Content, "<sibling_tasks>"):
				order = append(order, fmt.Sprintf("table of %d", len(siblingRows(m.Content))))
			case strings.Contains(m.Content, "<new_sibling"):
				order = append(order, "new")
			}
		}
		want := []string{fmt.Sprintf("table of %d", i)}
		for j := i + 1; j < n; j++ {
			want = append(want, "new")
		}
		if strings.Join(order, ",") != strings.Join(want, ",") {
			t.Errorf("k%d history: %v, want %v", i, order, want)
		}
	}
}

// Two siblings that wait for each other are told at once that the wait
// would never end, instead of both sitting out its whole timeout.
func TestWaitsThatWouldNeverEndAreRefused(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": []string{"one", "two"}, "parallel": true, "agent": "researcher", "label": "r"}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "r-1" && c.turns == 0:
			return do(call("task_output", obj{"task_id": "r-2", "wait": true, "timeout": 60}))
		case c.label == "r-2" && c.turns == 0:
			return do(call("task_output", obj{"task_id": "r-1", "wait": true, "timeout": 60}))
		default:
			return say(c.label + " done.")
		}
	})
	e := testEngine(t, nil, p, nil)
	start := time.Now()
	if _, code := headless(t, e, "wait for each other", nil); code != ExitOK {
		t.Fatalf("exit %d", code)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %s: a wait sat out its timeout", d)
	}
	x := exportLatest(t, e)
	var refused []string
	for _, label := range []string{"r-1", "r-2"} {
		for _, res := range toolResults(sessionByLabel(x, label), "task_output") {
			if strings.Contains(res, "cannot end before you do") {
				refused = append(refused, label+": "+res)
			}
		}
	}
	// One of the pair is refused; the other's wait then ends with it.
	if len(refused) != 1 {
		t.Errorf("refused waits:\n%s", strings.Join(refused, "\n"))
	}
}

// A wait for a sibling that cannot start before the waiter ends is refused
// at once too: one chained after the waiter (a chain, chainAfter, or a
// reference to its result), a delegation queued behind the waiter's own
// place under max_concurrent_delegations, and a wait made while another
// wait of the same turn has ended (each wait of a session counts until it
// ends).
func TestWaitsForWhatCannotStartAreRefused(t *testing.T) {
	const refusal = "cannot end before you do"
	refused := func(t *testing.T, x *store.Export, label string) bool {
		t.Helper()
		for _, res := range toolResults(mustLabel(t, x, label), "task_output") {
			if strings.Contains(res, refusal) {
				return true
			}
		}
		return false
	}
	t.Run("chained", func(t *testing.T) {
		spawned := newGate() // c and u exist: the spawns run together
		defer spawned.open()
		p := policyFor(func(c *convo) scripted.Reply {
			switch {
			case c.isRoot() && c.turns == 0:
				return do(
					call("sessions_spawn", obj{"task": []string{"Collect the data", "Summarize the data"}, "label": "step", "agent": "researcher"}),
					call("sessions_spawn", obj{"task": "Draft", "label": "d", "agent": "researcher"}),
					call("sessions_spawn", obj{"task": "Check the draft", "label": "c", "agent": "researcher", "chainAfter": "d"}),
					call("sessions_spawn", obj{"task": "Use it", "label": "u", "agent": "researcher", "sharedContext": obj{"$d": "reference"}}))
			case c.isRoot() && c.turns == 1:
				spawned.open()
				return do(call("task_wait", obj{}))
			case c.isRoot():
				return say("Root done.")
			case c.turns > 0:
				return say(c.label + " done.")
			case c.label == "step-1":
				return do(call("task_output", obj{"task_id": "step-2", "wait": true, "timeout": 120}))
			case c.label == "d":
				spawned.wait()
				return do(call("task_output", obj{"task_id": "c", "wait": true, "timeout": 120}),
					call("task_output", obj{"task_id": "u", "wait": true, "timeout": 120}))
			default:
				return say(c.label + " done.")
			}
		})
		x, _, code := swarm(t, p, nil)
		mustComplete(t, x, code)
		for _, label := range []string{"step-1", "d"} {
			if !refused(t, x, label) {
				t.Errorf("%s waited for a sibling chained after it: %q", label, toolResults(mustLabel(t, x, label), "task_output"))
			}
		}
		if res := toolResults(mustLabel(t, x, "d"), "task_output"); len(res) != 2 || !strings.Contains(res[1], refusal) {
			t.Errorf("d's wait for u, which reads d's result, was not refused: %q", res)
		}
	})
	t.Run("queued delegation", func(t *testing.T) {
		both := newGate()
		defer both.open()
		p := policyFor(func(c *convo) scripted.Reply {
			switch {
			case c.isRoot() && c.turns == 0:
				return do(
					call("delegate_task", obj{"description": "Part one", "custom_config": obj{"label": "l1"}}),
					call("delegate_task", obj{"description": "Part two", "custom_config": obj{"label": "l2"}}))
			case c.isRoot() && c.turns == 1:
				both.open()
				return do(call("task_wait", obj{}))
			case c.isRoot():
				return say("Root done.")
			case c.label == "l1" && c.turns == 0:
				both.wait()
				return do(call("task_output", obj{"task_id": "l2", "wait": true, "timeout": 120}))
			default:
				return say(c.label + " done.")
			}
		})
		x, _, code := swarm(t, p, func(c *config.Config) { c.Coordination.MaxConcurrentDelegations = 1 })
		mustComplete(t, x, code)
		if !refused(t, x, "l1") {
			t.Errorf("l1 waited for a delegation queued behind it: %q", toolResults(mustLabel(t, x, "l1"), "task_output"))
		}
	})
	t.Run("delegations holding the places", func(t *testing.T) {
		// d1 and d2 hold both places and wait for x-1, which waits for
		// x-2: x-2 may not wait for d3, queued behind them. x-2 asks
		// again, briefly, until the others' waits have begun.
		p := policyFor(func(c *convo) scripted.Reply {
			switch {
			case c.isRoot() && c.turns == 0:
				return do(call("sessions_spawn", obj{"task": []string{"middle", "reader"}, "parallel": true, "label": "x", "agent": "researcher"}))
			case c.isRoot() && c.turns == 1:
				return do(
					call("delegate_task", obj{"description": "one", "custom_config": obj{"label": "d1"}}),
					call("delegate_task", obj{"description": "two", "custom_config": obj{"label": "d2"}}),
					call("delegate_task", obj{"description": "three", "custom_config": obj{"label": "d3"}}))
			case c.isRoot() && c.turns == 2:
				return do(call("task_wait", obj{"timeout": 120}))
			case c.isRoot():
				return say("Root done.")
			case (c.label == "d1" || c.label == "d2") && c.turns == 0:
				return do(call("task_output", obj{"task_id": "x-1", "wait": true, "timeout": 120}))
			case c.label == "x-1" && c.turns == 0:
				return do(call("task_output", obj{"task_id": "x-2", "wait": true, "timeout": 120}))
			case c.label == "x-2" && !strings.Contains(c.last("task_output"), refusal) && c.turns < 30:
				return do(call("task_output", obj{"task_id": "d3", "wait": true, "timeout": 0.25}))
			default:
				return say(c.label + " done.")
			}
		})
		x, _, code := swarm(t, p, func(c *config.Config) { c.Coordination.MaxConcurrentDelegations = 2 })
		mustComplete(t, x, code)
		if !refused(t, x, "x-2") {
			t.Errorf("x-2 waited for d3, queued behind delegations that wait for it: %q", toolResults(mustLabel(t, x, "x-2"), "task_output"))
		}
	})
	t.Run("two waits in a turn", func(t *testing.T) {
		p := policyFor(func(c *convo) scripted.Reply {
			switch {
			case c.isRoot() && c.turns == 0:
				return do(call("sessions_spawn", obj{"task": []string{"one", "two"}, "parallel": true, "agent": "researcher", "label": "x"}))
			case c.isRoot():
				return say("Root done.")
			case c.label == "x-1" && c.turns == 0:
				return do(call("task_output", obj{"task_id": "x-2", "wait": true, "timeout": 0.1}),
					call("task_output", obj{"task_id": "x-2", "wait": true, "timeout": 120}))
			case c.label == "x-2" && c.turns == 0:
				time.Sleep(time.Second) // after x-1's short wait has ended
				return do(call("task_output", obj{"task_id": "x-1", "wait": true, "timeout": 120}))
			default:
				return say(c.label + " done.")
			}
		})
		x, _, code := swarm(t, p, nil)
		mustComplete(t, x, code)
		// On a machine slow enough that x-2 asks first, x-1 is the one refused.
		if !refused(t, x, "x-2") && !refused(t, x, "x-1") {
			t.Errorf("x-1 and x-2 waited for each other: %q, %q",
				toolResults(mustLabel(t, x, "x-1"), "task_output"), toolResults(mustLabel(t, x, "x-2"), "task_output"))
		}
	})
}

// A wait for a session that has started is not refused for the chain it
// started after: t, chained after s, runs, wakes s with a message and
// then waits for a free session slot; s may wait for t, whose chain was
// released long before.
func TestWaitForAReleasedChainIsNotRefused(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(
				call("sessions_spawn", obj{"task": "first step", "label": "s", "agent": "researcher"}),
				call("sessions_spawn", obj{"task": "second step", "label": "t", "agent": "researcher", "chainAfter": "s"}),
				call("sessions_spawn", obj{"task": "filler", "label": "f", "agent": "researcher"}))
		case c.isRoot() && c.turns == 1:
			return do(call("task_wait", obj{"timeout": 120}))
		case c.isRoot():
			return say("Root done.")
		case c.label == "s" && c.turns == 1:
			time.Sleep(2 * time.Second) // until t waits for a slot
			return do(call("task_output", obj{"task_id": "t", "wait": true, "timeout": 60}))
		case c.label == "t" && c.turns == 0:
			return do(call("task_send_message", obj{"task_id": "s", "message": "check my output when I am done"}),
				call("task_output", obj{"task_id": "f", "wait": true, "timeout": 1}))
		case c.label == "f":
			time.Sleep(6 * time.Second)
			return say("f done.")
		default:
			return say(c.label + " done.")
		}
	})
	x, _, code := swarm(t, p, func(c *config.Config) { c.Limits.MaxConcurrentSessions = 2 })
	mustComplete(t, x, code)
	for _, res := range toolResults(mustLabel(t, x, "s"), "task_output") {
		if strings.Contains(res, "cannot end before you do") {
			t.Errorf("s's wait for t, whose chain after s was released, was refused: %s", res)
		}
	}
}
