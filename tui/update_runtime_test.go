package tui

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

func sessionEvent(typ event.Type, info event.SessionInfo) event.Event {
	e := ev(typ, info.ID)
	e.Session = &info
	return e
}

func TestEventSessionCreatedAndStatus(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	child := event.SessionInfo{ID: "s-new", ParentID: "s-exp2", Agent: "executor", Label: "e-7", Title: "Hash benchmark harness",
		Status: "running", Depth: 3, Usage: event.Usage{TotalTokens: 1000}, CreatedAt: t0.Add(-5 * time.Second)}
	m = apply(m, sessionEvent(event.SessionCreated, child))
	// Under explorer (x-2), one level deeper, and rolled up into every ancestor.
	mustContain(t, m, "Sessions · 12 · 6 running", "     ▾ ⠋ explorer (x-2)", "┃         ⠋ executor (e-7) Hash benchmark")
	mustContain(t, m, "1.6k", "4.2k", "18.6k") // x-2: 640+1000, r-2: 3250+1000, root: 17630+1000
	mustContain(t, m, "18,630 tokens")

	child.Status = "completed"
	child.Usage.TotalTokens = 1500
	child.EndedAt = t0
	m = apply(m, sessionEvent(event.SessionStatus, child))
	mustContain(t, m, "✓ executor (e-7)", "Sessions · 12 · 5 running", "19,130 tokens", "2.1k")
}

func TestEventSessionBeforeItsParent(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	kid := event.SessionInfo{ID: "s-kid", ParentID: "s-late", Agent: "explorer", Label: "k", Title: "early child", Status: "running", Usage: event.Usage{TotalTokens: 50}}
	parent := event.SessionInfo{ID: "s-late", ParentID: "s-root", Agent: "researcher", Label: "late", Title: "late parent", Status: "running", Usage: event.Usage{TotalTokens: 100}}
	m = apply(m, sessionEvent(event.SessionCreated, kid))
	mustContain(t, m, "explorer (k) early child")
	m = apply(m, sessionEvent(event.SessionCreated, parent))
	// The child moves under its parent and its tokens roll up.
	mustContain(t, m, "  ▾ ⠋ researcher (late) late parent", "      ⠋ explorer (k) early child")
	if got := m.st.sessions["s-root"].subtreeTokens; got != 17630+150 {
		t.Fatalf("root tokens %d, want %d", got, 17630+150)
	}
}

func TestEventToolStartedShowsLastTool(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	e := ev(event.ToolStarted, "s-exe1")
	e.Tool = &event.ToolInfo{CallID: "c9", Name: "edit_file"}
	m = apply(m, e)
	mustContain(t, m, "▶ edit_file")
	e = ev(event.ToolFinished, "s-exe1")
	e.Tool = &event.ToolInfo{CallID: "c9", Name: "edit_file", IsError: true}
	m = apply(m, e)
	mustContain(t, m, "✗ edit_file")
}

// A session read from a snapshot (a resumed run, a stored run's view)
// whose last call failed shows its tool with ✗, as it showed live.
func TestSnapshotShowsAFailedLastTool(t *testing.T) {
	snap := tuitest.Demo(t0)
	for i := range snap.Sessions {
		switch snap.Sessions[i].ID {
		case "s-exe1":
			snap.Sessions[i].LastTool, snap.Sessions[i].LastToolFailed = "edit_file", true
		case "s-res1":
			snap.Sessions[i].LastTool, snap.Sessions[i].LastToolFailed = "read_file", false
		}
	}
	m, _ := readOnlyModel(t, snap, 160, 48)
	mustContain(t, m, "✗ edit_file")
	if s := plainView(m); !strings.Contains(s, "read_file") || strings.Contains(s, "✗ read_file") {
		t.Errorf("a last tool that did not fail is drawn as failed, or not at all:\n%s", s)
	}
}

func TestEventBroadcastSent(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	e := ev(event.BroadcastSent, "s-exp2")
	e.Broadcast = &event.BroadcastInfo{ID: "b-99", Kind: event.KindBroadcast, From: "explorer (x-2)", FromSession: "s-exp2",
		Category: "discovery", Target: "siblings", Message: "xxhash is 4x faster than sha256 here", Timestamp: t0}
	m = apply(m, e)
	mustContain(t, m, "Broadcasts · 8", "19:30:00 explorer (x-2) → siblings [discovery]", "   xxhash is 4x faster")
	// Newest at the bottom: the new row comes after the previous newest.
	s := plainView(m)
	if strings.Index(s, "xxhash") < strings.Index(s, "Handler needs the storage") {
		t.Fatal("the new broadcast is not below the older ones")
	}
}

// A person's broadcast to a subtree reads as one, not as a message to the
// session at its top; a person's message to a session reads as a message.
func TestHumanBroadcastToASubtree(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	b := ev(event.BroadcastSent, "")
	b.Broadcast = &event.BroadcastInfo{ID: "b-98", Kind: event.KindHuman, From: "human", Category: "context",
		Target: "s-res1", Message: "use SQLite", Timestamp: t0}
	msg := ev(event.BroadcastSent, "")
	msg.Broadcast = &event.BroadcastInfo{ID: "b-99", Kind: event.KindHuman, From: "human",
		Target: "s-res2", Message: "wrap up", Timestamp: t0}
	m = apply(m, b, msg)
	mustContain(t, m, "human → subtree of researcher (r-1)", "human → researcher (r-2)")

	// A session without a label is named with its id, as agents' rows
	// name their senders, and a no-reply message says so.
	kid := event.SessionInfo{ID: "s-nolab", ParentID: "s-root", Agent: "researcher", Title: "Pricing", Status: "running", Depth: 1, CreatedAt: t0}
	quiet := ev(event.BroadcastSent, "")
	quiet.Broadcast = &event.BroadcastInfo{ID: "b-100", Kind: event.KindHuman, From: "human",
		Target: "s-nolab", Message: "FYI only", NoReply: true, Timestamp: t0}
	m = apply(m, sessionEvent(event.SessionCreated, kid), quiet)
	mustContain(t, m, "human → researcher (s-nolab) [human, no-reply]")
}

func TestEventPlanUpdated(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	e := ev(event.PlanUpdated, "s-root")
	e.Plan = &event.PlanInfo{SessionID: "s-root", Tasks: []event.PlanTask{
		{ID: "1", Description: "Draft the plan", Status: "completed"},
		{ID: "2", Description: "Research storage engines", Status: "completed"},
		{ID: "3", Description: "Research analytics options", Status: "completed"},
		{ID: "4", Description: "Implement the redirect service", Status: "in_progress", DependsOn: []string{"2"}},
		{ID: "5", Description: "Integrate analytics", Status: "pending", DependsOn: []string{"3"}},
		{ID: "6", Description: "Ship v1", Status: "blocked", DependsOn: []string{"4", "5"}, WaitingOn: []string{"4", "5"}},
	}}
	m = apply(m, e)
	mustContain(t, m, "3/6 done · 1 in progress · 1 ready · 0 waiting · 1 blocked", "◐ 4  Implement the redirect service",
		"○ 5  Integrate analytics", "blocked · waits on 4, 5")
	mustNotContain(t, m, "after 3, 4")
}

// A plan whose owner waits for the person's answer says it is on hold: only
// its owner moves it, whatever its children finish meanwhile.
func TestPlanOnHoldWhileItsOwnerAsks(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, "Plans · orchestrator")
	mustNotContain(t, m, "on hold")
	m = applyQuestion(m, event.QuestionOpened, "s-root", event.QuestionInfo{ID: "q-9", FromSession: "s-root", From: "orchestrator",
		Question: "Which launch window?", AllowHuman: true, Status: "open"})
	mustContain(t, m, "on hold until you answer · 2/6 done")
	m = applyQuestion(m, event.QuestionAnswered, "s-root", event.QuestionInfo{ID: "q-9", Status: "answered", HumanResponded: true})
	mustNotContain(t, m, "on hold")
}

func TestEventDelegationUpdated(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	d := event.DelegationInfo{ID: "dl-4", ParentSession: "s-dlg1", PlanTaskID: "b", Description: "Review in depth", Status: "pending", Depth: 2, CreatedAt: t0}
	e := ev(event.DelegationUpdated, "s-dlg1")
	e.Delegation = &d
	m = apply(m, e)
	mustContain(t, m, "Delegations · 4 · 2 active", "○ pending   dl-4     d2     0s task b —")
	d.Status, d.SessionID, d.StartedAt = "completed", "s-rev1", t0.Add(-30*time.Second)
	d.EndedAt = t0
	e = ev(event.DelegationUpdated, "s-dlg1")
	e.Delegation = &d
	m = apply(m, e)
	mustContain(t, m, "Delegations · 4 · 1 active", "✓ completed dl-4     d2    30s task b s-rev1")
}

// A delegation's plan task is named whole, as in the plans pane, and the
// columns after it line up from row to row.
func TestDelegationTaskIDIsNotCut(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	d := event.DelegationInfo{ID: "dl-4", ParentSession: "s-root", SessionID: "s-rev1", PlanTaskID: "checklist",
		Description: "Prepare the launch checklist", Status: "running", Depth: 1, CreatedAt: t0, StartedAt: t0}
	e := ev(event.DelegationUpdated, "s-root")
	e.Delegation = &d
	m = apply(m, e)
	mustContain(t, m, "task checklist s-rev1   Prepare the lau", "task 4         s-dlg1   Implement the r")
	mustNotContain(t, m, "task che…")
}

// applyQuestion applies a question event of typ from session.
func applyQuestion(m Model, typ event.Type, session string, q event.QuestionInfo) Model {
	e := ev(typ, session)
	e.Question = &q
	return apply(m, e)
}

func TestEventQuestionOpenedAnsweredClosed(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m = applyQuestion(m, event.QuestionOpened, "s-exe1", event.QuestionInfo{ID: "q-3", FromSession: "s-exe1", From: "executor (e-1)",
		Question: "May I run go test?", AllowHuman: true, Status: "open"})
	mustContain(t, m, "1 of 3", "Sessions · 11 · 5 running · 3 ask you", "⠋ ? executor (e-1)")
	// A question not for the human is not shown.
	m = applyQuestion(m, event.QuestionOpened, "s-exe1", event.QuestionInfo{ID: "q-4", FromSession: "s-exe1",
		Question: "agents only", AllowHuman: false, Status: "open"})
	mustContain(t, m, "1 of 3")

	m = applyQuestion(m, event.QuestionAnswered, "s-res1", event.QuestionInfo{ID: "q-1", Status: "answered", HumanResponded: false})
	mustContain(t, m, "researcher (r-2) asks", "1 of 2")
	mustNotContain(t, m, "⠋ ? researcher (r-1)")

	m = applyQuestion(m, event.QuestionClosed, "s-res2", event.QuestionInfo{ID: "q-2", Status: "timed_out"})
	mustContain(t, m, "executor (e-1) asks: May I run go test?", "1 of 1")
}

func TestQuestionClosedWhileAnswering(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	clock := t0
	m.now = func() time.Time { return clock }
	m, _ = press(t, m, "a")
	m = applyQuestion(m, event.QuestionClosed, "s-res1", event.QuestionInfo{ID: "q-1", Status: "timed_out"})
	if m.dialog.kind != dialogNone {
		t.Fatal("the answer dialog stayed open for a question that closed")
	}
	mustContain(t, m, "that question was answered or closed elsewhere")

	// Nothing was typed yet: the answer typed once the question was read
	// does not act as keys (the S of "Sure" asks to skip every question,
	// its y says yes).
	clock = clock.Add(3 * time.Second)
	for _, r := range "Sure, yes" {
		m, _ = press(t, m, string(r))
		clock = clock.Add(200 * time.Millisecond)
		if m.dialog.kind != dialogNone {
			t.Fatalf("%q typed after the question closed opened a dialog (%v)", r, m.dialog.kind)
		}
	}

	// Once typing has paused, keys are keys again.
	clock = clock.Add(2 * time.Second)
	m, _ = press(t, m, "b")
	if m.dialog.kind != dialogBroadcast {
		t.Errorf("b after a pause opened %v, want the broadcast dialog", m.dialog.kind)
	}
}

// A question that closes while its answer is being typed: the rest of the
// answer does not act as keys (the x of "next" then the y of "yes" would
// cancel a session), and the note says the answer was not sent.
func TestTypingOnAfterTheQuestionClosedIsDropped(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	clock := t0
	m.now = func() time.Time { return clock }
	m, _ = press(t, m, "a")
	for _, r := range "I'd say " {
		m, _ = press(t, m, string(r))
	}
	m = applyQuestion(m, event.QuestionClosed, "s-res1", event.QuestionInfo{ID: "q-1", Status: "timed_out"})
	mustContain(t, m, "your answer was not sent")
	for _, r := range "next quarter, yes" {
		clock = clock.Add(150 * time.Millisecond)
		m, _ = press(t, m, string(r))
		if m.dialog.kind != dialogNone {
			t.Fatalf("%q typed after the question closed opened a dialog (%v)", r, m.dialog.kind)
		}
	}
	mustContain(t, m, "your answer was not sent")
}

func TestEventsCoveredBySnapshotAreSkipped(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	old := ev(event.BroadcastSent, "s-root")
	old.Seq = 100 // Demo's LastSeq
	old.Broadcast = &event.BroadcastInfo{ID: "b-dup", Kind: event.KindAnnounce, From: "orchestrator", Message: "already in the snapshot"}
	m, _ = update(m, eventsMsg{events: []event.Event{old}})
	mustNotContain(t, m, "already in the snapshot")
}

func TestTranscriptLiveMessagesAndDeltas(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down", "enter")

	m = apply(m, deltaEvent("s-res1", "Checking the ", false), deltaEvent("s-res1", "write path…", false))
	mustContain(t, m, "assistant streaming…", "Checking the write path…")
	// Deltas of another session do not leak into this transcript.
	m = apply(m, deltaEvent("s-res2", "other session tokens", false))
	mustNotContain(t, m, "other session tokens")
	// A reset starts the reply over.
	m = apply(m, deltaEvent("s-res1", "Second try", true))
	mustContain(t, m, "Second try")
	mustNotContain(t, m, "Checking the write path")

	e := ev(event.MessageAppended, "s-res1")
	e.Message = &event.MessageInfo{ID: 7, Index: 6, Role: "assistant", Source: "agent", Content: "Second try: WAL is fine.", Usage: &event.Usage{TotalTokens: 300}}
	inj := ev(event.MessageAppended, "s-res1")
	inj.Message = &event.MessageInfo{ID: 8, Index: 7, Role: "user", Source: "human", Synthetic: true, NoReply: true, Content: "Do not store raw IP addresses anywhere."}
	m = apply(m, e, inj)
	mustContain(t, m, "#6 assistant · 300 tok", "Second try: WAL is fine.", "#7 user · human · injected · no-reply")
	mustNotContain(t, m, "streaming…")
}

// A transcript opened while its session's reply streams shows the reply
// from its first token, and the tool it calls, not only what arrives after
// the opening; closed and opened again, it still does.
func TestTranscriptOpenedMidReplyShowsItFromTheStart(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	tool := deltaEvent("s-res1", "", false)
	tool.Delta.ToolName = "write_file"
	m = apply(m, deltaEvent("s-res1", "START of the reply, ", false), tool, deltaEvent("s-res2", "other session tokens", false))
	m, _ = press(t, m, "down", "down", "enter")
	mustContain(t, m, "assistant streaming… calling write_file", "START of the reply,")
	m = apply(m, deltaEvent("s-res1", "and its end.", false))
	mustContain(t, m, "START of the reply, and its end.")
	mustNotContain(t, m, "other session tokens")

	m, _ = press(t, m, "esc")
	m = apply(m, deltaEvent("s-res1", " More.", false))
	m, _ = press(t, m, "enter")
	mustContain(t, m, "START of the reply, and its end. More.")

	// Appended, the reply is a message, and a delta sent before it (the
	// bus gives must-deliver events first) does not start another.
	e := ev(event.MessageAppended, "s-res1")
	e.Message = &event.MessageInfo{ID: 7, Index: 6, Role: "assistant", Source: "agent", Content: "The reply, whole."}
	late := deltaEvent("s-res1", "stale tail", false)
	late.Time = e.Time.Add(-time.Millisecond)
	m = apply(m, e, late)
	mustContain(t, m, "The reply, whole.")
	mustNotContain(t, m, "streaming…", "stale tail")
}

// A person reading back keeps what they read while a reply streams: the
// reply belongs after the newest message, out of view, and the title says
// it is arriving. Back at the bottom it is followed as before.
func TestTranscriptScrolledUpStaysPutWhileStreaming(t *testing.T) {
	m, ctl := demoModel(t, 80, 24)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down", "enter", "up", "up", "up")
	before := strings.Split(plainView(m), "\n")

	m = apply(m, deltaEvent("s-res1", "Confirmed: SQLite in WAL mode, ", false), deltaEvent("s-res1", "one writer at a time.", false))
	after := strings.Split(plainView(m), "\n")
	const titleRow = 3 // under the header and the question banner
	if !strings.Contains(after[titleRow], "Transcript") || !strings.Contains(after[titleRow], "↓ streaming") {
		t.Fatalf("title row %q should say a reply streams below", after[titleRow])
	}
	for i := range before {
		if i != titleRow && before[i] != after[i] {
			t.Fatalf("row %d moved while scrolled up:\nbefore %q\nafter  %q", i, before[i], after[i])
		}
	}
	mustNotContain(t, m, "streaming…", "Confirmed: SQLite")

	m, _ = press(t, m, "end")
	mustContain(t, m, "assistant streaming…", "Confirmed: SQLite in WAL mode, one writer at a time.")
	mustNotContain(t, m, "↓ streaming")
}

// Read back with the newest message still in view, the reply shows in the
// free rows under it, and nothing above moves.
func TestTranscriptScrolledUpShowsStreamInFreeRows(t *testing.T) {
	m, ctl := demoModel(t, 80, 40) // the transcript has the full width
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down", "enter", "up")
	before := strings.Split(plainView(m), "\n")

	m = apply(m, deltaEvent("s-res1", "Confirmed: SQLite", false))
	after := strings.Split(plainView(m), "\n")
	mustContain(t, m, "assistant streaming…", "Confirmed: SQLite", "#5 assistant")
	mustNotContain(t, m, "↓ streaming")
	for i := range before {
		// The rows under the newest message are free, the line that said
		// the session waits for its model among them: the reply takes it.
		free := strings.Trim(before[i], "┃ ") == "" || strings.Contains(before[i], "waiting for the model")
		if !free && before[i] != after[i] {
			t.Fatalf("row %d moved while scrolled up:\nbefore %q\nafter  %q", i, before[i], after[i])
		}
	}
}

func TestTranscriptMessagesDuringLoadAreKept(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down")
	m, cmd := update(m, keyMsg("enter")) // load not run yet
	live := ev(event.MessageAppended, "s-res1")
	live.Message = &event.MessageInfo{Index: 6, Role: "assistant", Content: "arrived while loading"}
	m = apply(m, live)
	m, _ = drive(t, m, cmd)
	mustContain(t, m, "#0 system", "#5 assistant", "#6 assistant", "arrived while loading")
	if n := len(m.transcript.msgs); n != 7 {
		t.Fatalf("%d messages, want 7 (no duplicates, none lost)", n)
	}
}

func TestSubscriptionClosedIsShown(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = update(m, eventsMsg{closed: true})
	mustContain(t, m, "DISCONNECTED", "the run stopped sending events")
}

func TestErrorEventShownInStatus(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	e := ev(event.Error, "")
	e.Error = "store: disk full"
	m = apply(m, e)
	mustContain(t, m, "✗ runtime: store: disk full")
}

func TestAgentTextCannotInjectEscapes(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	e := ev(event.BroadcastSent, "s-root")
	e.Broadcast = &event.BroadcastInfo{ID: "b-x", Kind: event.KindAnnounce, From: "orchestrator",
		Message: "evil \x1b]0;pwned\x07title \x1b[2Jclear", Timestamp: t0}
	m = apply(m, e)
	raw := m.View().Content
	if strings.Contains(raw, "pwned") || strings.Contains(raw, "\x1b[2J") || strings.Contains(raw, "\x1b]0;") {
		t.Fatal("escape sequences from an agent reached the terminal")
	}
	mustContain(t, m, "evil title clear")
}

// A delta of a reply that was already appended (the bus sends must-deliver
// events ahead of deltas) must not bring the streaming line back.
func TestLateDeltaAfterAppendIsDropped(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down", "enter")
	msg := ev(event.MessageAppended, "s-res1")
	msg.Time = t0
	msg.Message = &event.MessageInfo{Index: 6, Role: "assistant", Content: "Final answer."}
	late := deltaEvent("s-res1", "Final ans", false)
	late.Time = t0.Add(-time.Millisecond)
	m = apply(m, msg, late)
	mustContain(t, m, "Final answer.")
	mustNotContain(t, m, "streaming…")
	next := deltaEvent("s-res1", "Next reply", false)
	next.Time = t0.Add(time.Second)
	m = apply(m, next)
	mustContain(t, m, "streaming…", "Next reply")
}

// A run that stops before its end (the model server failed it, or it was
// interrupted) leaves sessions stored as running, to go on when resumed.
// The dashboard shows them stopped, their times frozen at the run's end,
// says why in full and how to continue, and offers no action that could
// not reach the run.
func TestInterruptedRunShowsItsSessionsStopped(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	why := "the model server failed: Post \"http://127.0.0.1:9/v1/chat/completions\": dial tcp 127.0.0.1:9: connect: connection refused (check the base URL and that the server is up). The run is stored as it was: resume it once the server answers"
	m.opts.ResumeCommand = func(id, _ string) string { return "swarmdeck resume --db /tmp/x.db " + id }
	m = apply(m, runFinished("interrupted", why))
	before := plainView(m)
	m.now = func() time.Time { return t0.Add(10 * time.Minute) }
	m, _ = update(m, tickMsg{})
	if after := plainView(m); after != before {
		t.Error("the screen of a stopped run still changes with the clock")
	}
	golden.RequireEqual(t, before)
	mustNotContain(t, m, " running", "b broadcast")
	mustContain(t, m, "Sessions · 11 · 7 stopped", "◌ orchestrator", "check the base URL", "swarmdeck resume --db /tmp/x.db r-7c1e continues it")
	m, _ = press(t, m, "m")
	if m.dialog.kind != dialogNone {
		t.Fatal("m opened a dialog on a stopped run")
	}
	mustContain(t, m, "the run has stopped: nothing here reaches it now")
	wantCalls(t, ctl)
}

// A stopped run's questions cannot be answered: the banner and the count
// of sessions that ask go, and come back if the run goes on (a resume
// followed in a view), less any question closed meanwhile.
func TestStoppedRunHidesItsQuestionsUntilResumed(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, " asks: ", "2 ask you")
	m = apply(m, runFinished("interrupted", "killed"))
	mustNotContain(t, m, " asks: ", "ask you")
	closed := ev(event.QuestionClosed, "")
	closed.Question = &event.QuestionInfo{ID: m.st.held[1].ID, Status: "closed"}
	m = apply(m, closed)
	again := runFinished("running", "")
	again.Type = event.RunStarted
	m = apply(m, again)
	mustContain(t, m, " asks: ", "1 of 1", "1 asks you")
}

// sessionStatus applies a session.status event for id, its info as the
// model has it, changed by change.
func sessionStatus(m Model, id string, change func(*event.SessionInfo)) Model {
	info := m.st.sessions[id].info
	change(&info)
	e := ev(event.SessionStatus, id)
	e.Session = &info
	return apply(m, e)
}

// A session cancelled while it waited for the person no longer shows that
// it asks, even when its last status still said so.
func TestEndedSessionDoesNotAsk(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, "⠋ ? researcher (r-1)")
	m = sessionStatus(m, "s-res1", func(info *event.SessionInfo) { info.Status, info.WaitingHuman = "cancelled", true })
	mustNotContain(t, m, "⊘ ? researcher (r-1)")
	mustContain(t, m, "⊘ researcher (r-1)")
}

// A notice from outside the run (a configuration reload) shows on the
// status line, an error as one, and the model waits for the next.
func TestNoticesReachTheStatusLine(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	ch := make(chan Notice, 1)
	m.opts.Notices = ch
	m, cmd := update(m, noticeMsg{Text: "configuration not reloaded, the running settings stay: live.yaml:2: too small", Err: true})
	mustContain(t, m, "✗ configuration not reloaded, the running settings stay: live.yaml:2: too small")
	if cmd == nil {
		t.Fatal("no wait for the next notice")
	}
	ch <- Notice{Text: "configuration reloaded from live.yaml"}
	m, _ = update(m, cmd())
	mustContain(t, m, "· configuration reloaded from live.yaml")
}

// A note longer than the screen is wide goes on to a second row, rather
// than lose its end: that is where it says when a change takes effect.
func TestALongNoteWraps(t *testing.T) {
	m, _ := demoModel(t, 80, 24)
	m, _ = update(m, noticeMsg{Text: "configuration reloaded from /home/someone/.config/swarmdeck/config.yaml; ui changed, which take effect at the next start"})
	mustContain(t, m, "· configuration reloaded from /home/someone/.config/swarmdeck/config.yaml; ui", "   changed, which take effect at the next start")
}

// A configuration error stands: something else said since replaces it on
// the status line only for a while, and it comes back until a reload goes
// through. Errors of two topics both stand; the latest shows.
func TestAConfigErrorStandsUntilItIsFixed(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	const broken = "configuration not reloaded, the running settings stay: live.yaml:2: too small"
	m, _ = update(m, noticeMsg{Topic: "config", Err: true, Text: broken})
	mustContain(t, m, "✗ "+broken)

	m, _ = update(m, noticeMsg{Text: "the database is elsewhere"})
	mustNotContain(t, m, broken)
	m.now = func() time.Time { return t0.Add(time.Minute) }
	m, _ = update(m, tickMsg{})
	mustContain(t, m, "✗ "+broken)
	m, _ = press(t, m, "esc") // dismissing it does not make the file good
	mustContain(t, m, "✗ "+broken)

	const prompts = "prompt templates not reloaded, new sessions get the previous ones: p/researcher.md:3: unexpected }"
	m, _ = update(m, noticeMsg{Topic: "prompts", Err: true, Text: prompts})
	m, _ = update(m, noticeMsg{Topic: "config", Text: "configuration reloaded from live.yaml"})
	mustContain(t, m, "· configuration reloaded from live.yaml")
	m.now = func() time.Time { return t0.Add(2 * time.Minute) }
	m, _ = update(m, tickMsg{})
	mustNotContain(t, m, broken)
	mustContain(t, m, "✗ "+prompts)

	m, _ = update(m, noticeMsg{Topic: "prompts", Text: "prompt templates reloaded from p"})
	m.now = func() time.Time { return t0.Add(3 * time.Minute) }
	m, _ = update(m, tickMsg{})
	mustNotContain(t, m, "not reloaded")
}

// A model call being tried again says so in the session's row, and the row
// goes back to its title once the call is through.
func TestSessionRowShowsARetry(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m = sessionStatus(m, "s-root", func(info *event.SessionInfo) {
		info.Retrying = "attempt 2 of 5 in 1.5s: LLM server returned 503 Service Unavailable: The engine is overloaded"
	})
	mustContain(t, m, "orchestrator ↻ attempt 2 of 5 in 1.5s: LLM serv")
	m = sessionStatus(m, "s-root", func(info *event.SessionInfo) { info.Retrying = "" })
	mustNotContain(t, m, "↻")
	mustContain(t, m, "orchestrator Build a URL shortener")
}

// The wait before the next attempt counts down as it passes, from when the
// session said so, instead of standing at what it was when it began; once
// it is over, the row says the attempt is under way.
func TestSessionRowCountsTheRetryWaitDown(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m = sessionStatus(m, "s-root", func(info *event.SessionInfo) {
		info.Retrying = "attempt 2 of 5 in 30s: LLM server returned 429 Too Many Requests"
	})
	mustContain(t, m, "orchestrator ↻ attempt 2 of 5 in 30s: LLM serv")
	for _, tc := range []struct {
		after time.Duration
		want  string
	}{
		{12 * time.Second, "↻ attempt 2 of 5 in 18s: LLM serv"},
		{27*time.Second + 550*time.Millisecond, "↻ attempt 2 of 5 in 2.5s: LLM serv"},
		{31 * time.Second, "↻ attempt 2 of 5 now: LLM serv"},
	} {
		m.now = func() time.Time { return t0.Add(tc.after) }
		mustContain(t, m, tc.want)
	}
	// The next attempt's notice starts its own wait.
	e := ev(event.SessionStatus, "s-root")
	info := m.st.sessions["s-root"].info
	info.Retrying = "attempt 4 of 5 in 4s: LLM server returned 429 Too Many Requests"
	e.Session, e.Time = &info, t0.Add(30*time.Second)
	m = apply(m, e)
	mustContain(t, m, "↻ attempt 4 of 5 in 3s: LLM serv")
}

// Why a run stopped, and the command that continues it, is the status line's
// resting state once the run has ended: a refusal or a note shows for a
// while, and when it is dismissed or expires the reason comes back.
func TestRunEndReasonComesBack(t *testing.T) {
	for _, tc := range []struct{ status, reason, want string }{
		{"interrupted", "the model server failed: connection refused",
			"✗ run interrupted; quit (q), then swarmdeck resume r-7c1e continues it. Why: the model server failed: connection refused"},
		{"failed", "429 Too Many Requests", "✗ run failed; once the cause is fixed, quit (q), then swarmdeck resume r-7c1e continues it. Why: 429 Too Many Requests"},
		{"cancelled", "cancelled by the human", "✗ run cancelled: cancelled by the human"},
	} {
		m, _ := demoModel(t, 160, 48)
		m = apply(m, runFinished(tc.status, tc.reason))
		mustContain(t, m, tc.want)

		m, _ = press(t, m, "b")
		mustNotContain(t, m, tc.want)
		m, _ = press(t, m, "esc")
		mustContain(t, m, tc.want)

		m, _ = update(m, noticeMsg{Text: "configuration reloaded from live.yaml"})
		mustContain(t, m, "· configuration reloaded from live.yaml")
		mustNotContain(t, m, tc.want)
		m.now = func() time.Time { return t0.Add(time.Minute) }
		m, _ = update(m, tickMsg{})
		mustNotContain(t, m, "configuration reloaded")
		mustContain(t, m, tc.want)
	}
}

// viewModel is a dashboard connected to snap as `swarmdeck view` shows a
// stored run (readOnly) or as the process running it does.
func viewModel(t *testing.T, snap event.Snapshot, readOnly bool) Model {
	t.Helper()
	ctl := tuitest.NewController(snap)
	ctl.SetReadOnly(readOnly)
	m := New(Options{Controller: ctl, Theme: "dark"})
	t.Cleanup(m.cancel)
	m.now, m.loc, m.ticks = func() time.Time { return t0 }, time.UTC, false
	m, _ = update(m, windowSize(160, 48))
	return connect(m, ctl)
}

// A stored run that ended without completing says why, and how to continue
// it, as soon as it is opened, as it did to a view open when it stopped. A
// completed run opens with nothing on the status line.
func TestStoredRunSaysWhyItStopped(t *testing.T) {
	for _, tc := range []struct {
		status, reason string
		readOnly       bool
		want           string
	}{
		{"interrupted", "the dashboard was closed while it ran", true,
			"✗ run interrupted; swarmdeck resume r-7c1e continues it. Why: the dashboard was closed while it ran"},
		{"interrupted", "", true, "✗ run interrupted; swarmdeck resume r-7c1e continues it"},
		{"failed", "429 Too Many Requests", true, "✗ run failed; once the cause is fixed, swarmdeck resume r-7c1e continues it. Why: 429 Too Many Requests"},
		{"interrupted", "the model server failed", false,
			"✗ run interrupted; quit (q), then swarmdeck resume r-7c1e continues it. Why: the model server failed"},
	} {
		snap := tuitest.Demo(t0)
		snap.Run.Status, snap.Run.Error = tc.status, tc.reason
		m := viewModel(t, snap, tc.readOnly)
		mustContain(t, m, tc.want)
		// It is the resting state there too.
		m, _ = press(t, m, "b", "esc")
		mustContain(t, m, tc.want)
	}

	snap := tuitest.Demo(t0)
	snap.Run.Status = "completed"
	m := viewModel(t, snap, true)
	if got := m.statusLines(m.width); got != nil {
		t.Errorf("a completed run opens with a status line: %q", got)
	}

	// A view open when the run stops says the same.
	m = viewModel(t, tuitest.Demo(t0), true)
	m = apply(m, runFinished("interrupted", "the dashboard was closed while it ran"))
	mustContain(t, m, "✗ run interrupted; swarmdeck resume r-7c1e continues it. Why: the dashboard was closed while it ran")
}

// The Sessions title of a stopped run counts the rows it shows stopped:
// sessions that were pending or waiting as well as those running, as their
// statuses changed before the run stopped.
func TestStoppedCountMatchesTheRows(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	info := m.st.sessions["s-rev1"].info // pending
	info.Status = "running"
	m = apply(m, sessionEvent(event.SessionStatus, info))
	info.Status = "completed"
	m = apply(m, sessionEvent(event.SessionStatus, info))
	m = apply(m, runFinished("interrupted", ""))
	shown := 0
	for _, n := range m.st.sessions {
		if m.st.shownStatus(&n.info) == "stopped" {
			shown++
		}
	}
	if shown != 6 {
		t.Fatalf("%d sessions show stopped, the test expects 6", shown)
	}
	mustContain(t, m, "Sessions · 11 · 6 stopped")
}

// A message taller than the pane is read whole: the moving keys scroll it
// line by line (up from the end where the newest message is followed, down
// from its start when selected from above) before they go on to the next
// message, and moving down past the newest one follows it again.
func TestTranscriptTallMessageIsReadWhole(t *testing.T) {
	var long []string
	for i := 1; i <= 80; i++ {
		long = append(long, fmt.Sprintf("answer line %02d", i))
	}
	var prompt []string
	for i := 1; i <= 60; i++ {
		prompt = append(prompt, fmt.Sprintf("prompt line %02d", i))
	}
	msgs := tuitest.DemoTranscript()
	msgs[0].Content = strings.Join(prompt, "\n")
	msgs = append(msgs, event.MessageInfo{ID: 7, Index: 6, Role: "assistant", Source: "agent", Content: strings.Join(long, "\n")})

	m, ctl := demoModel(t, 100, 30)
	ctl.SetTranscript("s-res1", msgs)
	m, _ = press(t, m, "down", "down", "enter")
	mustContain(t, m, "answer line 80")
	mustNotContain(t, m, "answer line 01")

	seen := func(lines []string, keys ...string) {
		t.Helper()
		missing := map[string]bool{}
		for _, l := range lines {
			missing[l] = true
		}
		for i := 0; i < 200 && len(missing) > 0; i++ {
			view := plainView(m)
			for _, l := range lines {
				if strings.Contains(view, l) {
					delete(missing, l)
				}
			}
			m, _ = press(t, m, keys...)
		}
		for _, l := range lines {
			if missing[l] {
				t.Fatalf("%q never came into sight pressing %v:\n%s", l, keys, plainView(m))
			}
		}
	}
	// Up from the end of the newest message, through all of it.
	seen(long, "up")
	mustContain(t, m, "#6 assistant")
	if m.transcript.sel() != len(m.transcript.msgs)-1 {
		t.Fatal("reading the newest message up moved the selection off it")
	}
	// Down through it again, then on past its end: followed as before.
	m, _ = press(t, m, "home")
	m, _ = press(t, m, "enter") // expand the system prompt
	seen(prompt, "down")
	seen(long, "down")
	m, _ = press(t, m, "down")
	if !m.transcript.follow {
		t.Fatal("moving down past the end of the newest message does not follow it")
	}
	e := ev(event.MessageAppended, "s-res1")
	e.Message = &event.MessageInfo{ID: 8, Index: 7, Role: "assistant", Content: "a newer reply"}
	m = apply(m, e)
	mustContain(t, m, "a newer reply")
	// Page keys read a tall message a page at a time (the system prompt
	// is still expanded).
	m, _ = press(t, m, "home", "pgdown")
	mustContain(t, m, "prompt line 30")
	mustNotContain(t, m, "#0 system")
	m, _ = press(t, m, "pgup")
	mustContain(t, m, "#0 system", "prompt line 01")
}

// A session waiting for its model's first token says so, and for how long,
// where the reply will stream: before its first reply its transcript has
// nothing stored yet, and a local model may read a long prompt for minutes.
func TestTranscriptSaysTheSessionWaitsForItsModel(t *testing.T) {
	root := event.SessionInfo{ID: "s-root", Agent: "orchestrator", Title: "Write a haiku", Status: "running"}
	m, _ := newTestModel(t, event.Snapshot{Run: event.RunInfo{ID: "r-1", Status: "running", StartedAt: t0.Add(-time.Minute)},
		Sessions: []event.SessionInfo{root}}, 100, 30)
	started := ev(event.SessionStatus, "s-root")
	started.Session, started.Time = &root, t0.Add(-47*time.Second)
	m = apply(m, started)
	m, cmd := update(m, keyMsg("enter"))
	m, _ = drive(t, m, cmd)
	mustContain(t, m, "Transcript · orchestrator", "assistant "+unicodeGlyphs.spinner[0]+" waiting for the model · 47s")
	mustNotContain(t, m, "no messages yet")

	m = apply(m, deltaEvent("s-root", "An empty cup", false))
	mustContain(t, m, "assistant streaming…", "An empty cup")
	mustNotContain(t, m, "waiting for the model")

	// The reply is stored and its tool runs: the tool is what it waits for,
	// and then the model again.
	reply := ev(event.MessageAppended, "s-root")
	reply.Message = &event.MessageInfo{Index: 2, Role: "assistant", Content: "An empty cup, steam rising.",
		ToolCalls: []event.ToolCall{{ID: "c1", Name: "task_broadcast", Arguments: `{"message":"haiku drafted"}`}}}
	call := ev(event.ToolStarted, "s-root")
	call.Tool = &event.ToolInfo{CallID: "c1", Name: "task_broadcast"}
	m = apply(m, reply, call)
	mustContain(t, m, "An empty cup, steam rising.")
	mustNotContain(t, m, "waiting for the model", "streaming…")

	done := ev(event.ToolFinished, "s-root")
	done.Tool, done.Time = &event.ToolInfo{CallID: "c1", Name: "task_broadcast", Result: "delivered"}, t0.Add(-3*time.Second)
	m = apply(m, done)
	mustContain(t, m, "waiting for the model · 3s")

	// The call fails and is tried again: the transcript says why, whole,
	// and counts the wait down.
	retrying := root
	retrying.Retrying = "attempt 2 of 5 in 4s: the server answered 503 Service Unavailable: the model is still loading into memory, try again shortly"
	status := ev(event.SessionStatus, "s-root")
	status.Session, status.Time = &retrying, t0.Add(-time.Second)
	m = apply(m, status)
	mustContain(t, m, "assistant ↻ model call failed, attempt 2 of 5 in 3s:", "the server answered 503", "again shortly")
	mustNotContain(t, m, "waiting for the model")
}

// A failed run's status line gives the command the caller makes of its
// reason: another model, for one that cannot call tools.
func TestFailedRunResumeCommandSeesTheReason(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	var got string
	m.opts.ResumeCommand = func(id, why string) string {
		got = why
		return "swarmdeck resume --model MODEL " + id
	}
	m = apply(m, runFinished("failed", "this model cannot call tools"))
	mustContain(t, m, "swarmdeck resume --model MODEL r-7c1e continues it")
	if got != "this model cannot call tools" {
		t.Errorf("the resume command was made for %q", got)
	}
}

// A sheet too short for a long question and its options keeps the start
// of the question and says how many rows of options it leaves out, above
// the input line: the person sees what they answer, and that there is more.
func TestAnswerSheetFitsAShortTerminal(t *testing.T) {
	var opts []event.Option
	for i := range 8 {
		opts = append(opts, event.Option{ID: fmt.Sprintf("o%d", i), Label: strings.Repeat("a long option label ", 3) + fmt.Sprint(i)})
	}
	question := "START of a long question. " + strings.Repeat("More words of the question to read. ", 12)
	for _, size := range [][2]int{{60, 16}, {80, 20}, {100, 30}} {
		m, _ := demoModel(t, size[0], size[1])
		m = applyQuestion(m, event.QuestionClosed, "s-res1", event.QuestionInfo{ID: "q-1", Status: "timed_out"})
		m = applyQuestion(m, event.QuestionClosed, "s-res2", event.QuestionInfo{ID: "q-2", Status: "timed_out"})
		m = applyQuestion(m, event.QuestionOpened, "s-res1", event.QuestionInfo{ID: "q-9", FromSession: "s-res1", From: "researcher (r-1)",
			Question: question, Options: opts, AllowHuman: true, Status: "open", Remembered: "an answer from before"})
		m, _ = press(t, m, "a")
		mustContain(t, m, "START of a long question", "> ")
		view := plainView(m)
		if !strings.Contains(view, "1. a long option") {
			t.Errorf("%dx%d: the first option is not shown:\n%s", size[0], size[1], view)
		}
		if all, said := strings.Contains(view, "8. a long option"), strings.Contains(view, "of options not shown"); all == said {
			t.Errorf("%dx%d: the last option shown %v, options said to be left out %v:\n%s", size[0], size[1], all, said, view)
		}
		if size[1] >= 30 && !strings.Contains(view, "an answer from before") {
			t.Errorf("%dx%d: the answer given before is left out where there is room:\n%s", size[0], size[1], view)
		}
	}
}

// With the rows a refusal takes (in the sheet and on the status line), the
// answer sheet at the smallest size still starts with the question, and
// counts every row of options it leaves out.
func TestAnswerSheetKeepsTheQuestionUnderARefusal(t *testing.T) {
	var opts []event.Option
	for i := range 10 {
		opts = append(opts, event.Option{ID: fmt.Sprintf("o%d", i), Label: fmt.Sprintf("Option number %d with a fairly long label", i)})
	}
	m, ctl := demoModel(t, 60, 16)
	m = applyQuestion(m, event.QuestionClosed, "s-res1", event.QuestionInfo{ID: "q-1", Status: "timed_out"})
	m = applyQuestion(m, event.QuestionClosed, "s-res2", event.QuestionInfo{ID: "q-2", Status: "timed_out"})
	m = applyQuestion(m, event.QuestionOpened, "s-res1", event.QuestionInfo{ID: "q-9", FromSession: "s-res1", From: "researcher (r-1)",
		Question: "START of a question of three lines. " + strings.Repeat("Which of these windows fits? ", 4), Options: opts, AllowHuman: true, Status: "open"})
	ctl.SetError(errors.New("the answer is 10989 characters; the limit is 8000"))
	m, _ = press(t, m, "a")
	m = typeText(t, m, "a long answer")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "START of a question", "> a long answer", "the limit is 8000")
	view := plainView(m)
	shown := strings.Count(view, "Option number")
	var notShown int
	if i := strings.Index(view, "options not shown ("); i >= 0 {
		fmt.Sscanf(view[i+len("options not shown ("):], "%d", &notShown)
	} else if i := strings.Index(view, " rows of options not shown"); i >= 0 {
		j := strings.LastIndex(view[:i], " ")
		fmt.Sscanf(view[j+1:i], "%d", &notShown)
	}
	if shown+notShown != 10 {
		t.Errorf("%d options shown and %d said to be left out, of 10:\n%s", shown, notShown, view)
	}
	checkFrame(t, view, 60, 16)
}

// A streaming reply is wrapped as the message it becomes will be, so its
// lines stay put when it is stored; and with few messages above it, a
// long reply takes the rows they leave rather than stopping half-way down
// the pane.
func TestStreamingReplyWrapsAsItsMessage(t *testing.T) {
	m, ctl := demoModel(t, 80, 24)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript()[:2])
	m, _ = press(t, m, "down", "down", "enter")
	var words []string
	for i := range 40 {
		// Five cells each with the space: 15 fill the 74 cells of text
		// of the pane, 80 wide, to the last cell.
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	text := strings.Join(words, " ") + " ok"
	m = apply(m, deltaEvent("s-res1", text, false))
	streamed := linesWith(plainView(m), "w0")

	e := ev(event.MessageAppended, "s-res1")
	e.Message = &event.MessageInfo{ID: 7, Index: 2, Role: "assistant", Source: "agent", Content: text}
	m = apply(m, e)
	stored := linesWith(plainView(m), "w0")
	if len(streamed) == 0 || !slices.Equal(streamed, stored) {
		t.Errorf("streamed as\n%s\nstored as\n%s", strings.Join(streamed, "\n"), strings.Join(stored, "\n"))
	}

	// A reply longer than the pane under few messages: its tail fills the
	// pane to its bottom.
	m, ctl = demoModel(t, 80, 24)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript()[:2])
	m, _ = press(t, m, "down", "down", "enter")
	long := strings.Repeat("word ", 400) + "LAST"
	m = apply(m, deltaEvent("s-res1", long, false))
	rows := strings.Split(plainView(m), "\n")
	last := -1
	for i, r := range rows {
		if strings.Contains(r, "LAST") {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("the end of the reply is not shown:\n%s", plainView(m))
	}
	if below := rows[last+1]; !strings.HasPrefix(below, "╰") && !strings.HasPrefix(below, "┗") {
		t.Errorf("under the reply's last line %q comes %q, not the pane's border:\n%s", rows[last], rows[last+1], plainView(m))
	}
}

// linesWith are the lines of s that hold sub, with the panes' borders,
// the selected message's bar and the space around them trimmed.
func linesWith(s, sub string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, strings.TrimLeft(strings.TrimSpace(strings.Trim(l, "│┃")), "▌ "))
		}
	}
	return out
}
