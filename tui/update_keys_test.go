package tui

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

func wantCalls(t *testing.T, ctl *tuitest.Controller, want ...tuitest.Call) {
	t.Helper()
	got := ctl.Calls()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("controller calls:\n got %+v\nwant %+v", got, want)
	}
}

func quitSeen(msgs []tea.Msg) bool {
	for _, m := range msgs {
		if _, ok := m.(tea.QuitMsg); ok {
			return true
		}
	}
	return false
}

// Session rows of the Demo tree, in order:
// 0 s-root, 1 s-plan, 2 s-res1, 3 s-exp1, 4 s-res2, 5 s-exp2, 6 s-exp3,
// 7 s-dlg1, 8 s-exe1, 9 s-rev1, 10 s-cxl.

func TestBroadcastToSubtreeWithCategory(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down", "b") // researcher (r-1)
	mustContain(t, m, "Broadcast", "● all sessions", "○ subtree of researcher (r-1)", "● discovery")
	m = typeText(t, m, "use sqlite")
	m, _ = press(t, m, "tab", "ctrl+t", "ctrl+t")
	mustContain(t, m, "● subtree of researcher (r-1)", "● context", "> use sqlite")
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "use sqlite", Target: "s-res1", Category: "context"})
	if m.dialog.kind != dialogNone {
		t.Fatal("the dialog stays open after a successful send")
	}
	// x-1 below r-1 has completed: the person learns it will not read this.
	mustContain(t, m, "broadcast sent to the subtree of researcher (r-1) · context · 1 finished won't read it (m wakes it)")
	mustNotContain(t, m, "> use sqlite")
}

func TestBroadcastToAllDefaults(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "b")
	m = typeText(t, m, "stop and report")
	m, _ = press(t, m, "tab", "tab", "ctrl+t", "ctrl+t", "ctrl+t", "ctrl+t", "enter") // toggles and cycles back
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "stop and report", Target: "all", Category: "discovery"})
	mustContain(t, m, "broadcast sent to all sessions · discovery · 3 finished won't read it (m wakes one)")
}

func TestBroadcastEscAndEmpty(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "b", "enter")
	mustContain(t, m, "type the broadcast first")
	m = typeText(t, m, "never sent")
	m, _ = press(t, m, "esc")
	wantCalls(t, ctl)
	mustNotContain(t, m, "never sent", "Broadcast ━")
}

func TestBroadcastErrorKeepsDialog(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	ctl.SetError(errors.New("bus closed"))
	m, _ = press(t, m, "b")
	m = typeText(t, m, "hello")
	m, _ = press(t, m, "enter")
	if m.dialog.kind != dialogBroadcast {
		t.Fatal("a failed send closed the dialog; the typed text is lost")
	}
	mustContain(t, m, "broadcast failed: bus closed", "> hello")
	// Retry once the runtime recovers.
	ctl.SetError(nil)
	m, _ = press(t, afterAPause(m), "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "hello", Target: "all", Category: "discovery"})
	mustNotContain(t, m, "broadcast failed")
}

func TestMessageNoReplyToggle(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "m") // planner (plan)
	mustContain(t, m, "Message planner (plan) · s-plan", "● wake the session")
	m = typeText(t, m, "fyi: plan v2")
	m, _ = press(t, m, "tab")
	mustContain(t, m, "● no-reply")
	m, _ = press(t, m, "enter")
	m, _ = press(t, m, "m")
	m = typeText(t, m, "wake up")
	m, _ = press(t, m, "tab", "tab", "enter")
	wantCalls(t, ctl,
		tuitest.Call{Op: "message", SessionID: "s-plan", Text: "fyi: plan v2", NoReply: true},
		tuitest.Call{Op: "message", SessionID: "s-plan", Text: "wake up", NoReply: false},
	)
	mustContain(t, m, "message sent to planner (plan)")
}

func TestAnswerWithOptionNumber(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	mustContain(t, m, "researcher (r-1) asks: Which storage engine", "1 of 2")
	m, _ = press(t, m, "a")
	mustContain(t, m, "Question 1 of 2 · from researcher (r-1)", "1. PostgreSQL [pg]", "2. SQLite [sqlite]", "3. Redis [redis]")
	m, _ = press(t, m, "2", "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "answer", QuestionID: "q-1", Text: "2"})
	// The banner moves on to the next question at once.
	mustContain(t, m, "researcher (r-2) asks: How long", "1 of 1")
	mustNotContain(t, m, "Which storage engine")
}

func TestAnswerFreeTextAndRemembered(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "a")
	m = typeText(t, m, "SQLite, but keep a Postgres path open")
	m, _ = press(t, m, "enter")
	m, _ = press(t, m, "a")
	mustContain(t, m, "you answered this before: “90 days”")
	m, _ = press(t, m, "tab", "enter")
	wantCalls(t, ctl,
		tuitest.Call{Op: "answer", QuestionID: "q-1", Text: "SQLite, but keep a Postgres path open"},
		tuitest.Call{Op: "answer", QuestionID: "q-2", Text: "90 days"},
	)
	mustNotContain(t, m, " asks: ")
}

// An error about the text typed goes once tab puts the remembered answer
// in its place.
func TestRememberedAnswerClearsTheDialogError(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "a")
	m = typeText(t, m, "SQLite")
	m, _ = press(t, m, "enter", "a", "enter")
	mustContain(t, m, "type an answer, or")
	m, _ = press(t, m, "tab")
	mustNotContain(t, m, "type an answer, or")
	mustContain(t, m, "90 days")
}

// The answer dialog's footer offers the remembered answer only for a
// question that has one: for any other, tab does nothing.
func TestAnswerFooterOffersRememberedOnlyWhenThereIsOne(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "a") // q-1: never answered before
	mustNotContain(t, m, "use remembered", "you answered this before")
	mustContain(t, m, "enter send • ctrl+s skip")
	m, _ = press(t, m, "ctrl+s", "a") // q-2: answered "90 days" before
	mustContain(t, m, "you answered this before: “90 days”", "tab use remembered")
}

// A long answer given before is shown on one line: the question and its
// options stay in the sheet at 80x24, and tab still puts in all of it.
func TestLongRememberedAnswerKeepsTheQuestionInSight(t *testing.T) {
	snap := tuitest.Demo(t0)
	long := strings.Repeat("a reason to wait ", 300)
	for i := range snap.Questions {
		snap.Questions[i].Remembered = long
	}
	m, ctl := newTestModel(t, snap, 80, 24)
	m, _ = press(t, m, "a")
	q := snap.Questions[0]
	mustContain(t, m, "you answered this before: “a reason to wait", "…”", "> ")
	mustContain(t, m, strings.Fields(q.Question)[0])
	if len(q.Options) > 0 {
		mustContain(t, m, "1. "+q.Options[0].Label)
	}
	press(t, m, "tab", "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "answer", QuestionID: q.ID, Text: strings.TrimSpace(long)})
}

func TestAnswerEmptyIsRefused(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "a", "enter")
	wantCalls(t, ctl)
	mustContain(t, m, "type an answer, or ctrl+s to skip")
}

func TestSkipFromMainViewAndDialog(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "s")
	mustContain(t, m, "✓ skipped the question from researcher (r-1)", "researcher (r-2) asks")
	m, _ = press(t, m, "a", "ctrl+s")
	wantCalls(t, ctl, tuitest.Call{Op: "skip", QuestionID: "q-1"}, tuitest.Call{Op: "skip", QuestionID: "q-2"})
	mustNotContain(t, m, " asks: ")
	// With nothing pending, s says so instead of calling the runtime.
	// It is a note, not a success.
	m, _ = press(t, m, "s")
	mustContain(t, m, "· no question is waiting for you")
	if len(ctl.Calls()) != 2 {
		t.Fatal("s with no question called the controller")
	}
}

func TestSkipAllConfirm(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "S")
	mustContain(t, m, "Skip 2 open questions and stop asking you for the rest of this run?")
	m, _ = press(t, m, "n")
	wantCalls(t, ctl)
	mustContain(t, m, "1 of 2")

	m, _ = press(t, m, "S", "y")
	wantCalls(t, ctl, tuitest.Call{Op: "skip_all"})
	mustNotContain(t, m, " asks: ")
	mustContain(t, m, "skipped all questions")
}

func TestSkipAllFromAnswerDialog(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "a", "ctrl+a")
	mustContain(t, m, "Skip all questions?")
	m, _ = press(t, m, "y")
	wantCalls(t, ctl, tuitest.Call{Op: "skip_all"})
	mustNotContain(t, m, " asks: ")
}

// Declining "skip all" from the answer dialog ("n keep answering") goes
// back to answering, with what was typed, instead of closing the dialog.
func TestSkipAllDeclinedFromAnswerDialogKeepsAnswering(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "a")
	m = typeText(t, m, "half an answer")
	m, _ = press(t, m, "ctrl+a")
	mustContain(t, m, "keep answering")
	m, _ = press(t, m, "n")
	wantCalls(t, ctl)
	if m.dialog.kind != dialogAnswer {
		t.Fatalf("after declining skip all the dialog is %v, want the answer dialog back", m.dialog.kind)
	}
	mustContain(t, m, "> half an answer")
	m = typeText(t, m, "!")
	press(t, m, "enter")
	if calls := ctl.Calls(); len(calls) != 1 || calls[0].Op != "answer" || calls[0].Text != "half an answer!" {
		t.Fatalf("calls %+v, want the answer typed before and after the confirmation", calls)
	}
}

func TestCancelConfirm(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down", "down", "down", "x") // researcher (r-2) with two children
	mustContain(t, m, "Cancel researcher (r-2) · s-res2 and its 2 descendant sessions?")
	m, _ = press(t, m, "n")
	wantCalls(t, ctl)
	m, _ = press(t, m, "x", "esc")
	wantCalls(t, ctl)
	m, _ = press(t, m, "x", "y")
	wantCalls(t, ctl, tuitest.Call{Op: "cancel", SessionID: "s-res2"})
	mustContain(t, m, "cancelled researcher (r-2) and its subtree")
}

// Cancelling the root session cancels the run; the confirmation says so
// before the person agrees to it.
func TestCancelConfirmOfTheRootSaysTheRunEnds(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "x") // the root, selected at start
	mustContain(t, m, "Cancel orchestrator · s-root", "the whole run ends")
	m, _ = press(t, m, "n", "down", "down", "down", "down", "x") // researcher (r-2)
	mustContain(t, m, "Cancel researcher (r-2)")
	mustNotContain(t, m, "the whole run ends")
	press(t, m, "y")
	wantCalls(t, ctl, tuitest.Call{Op: "cancel", SessionID: "s-res2"})
}

func TestQuitConfirmWhileRunning(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, msgs := press(t, m, "q")
	if quitSeen(msgs) {
		t.Fatal("q quit a running run without asking")
	}
	mustContain(t, m, "swarmdeck resume r-7c1e", "stays stored")
	m, msgs = press(t, m, "n")
	if quitSeen(msgs) || m.dialog.kind != dialogNone {
		t.Fatal("n did not keep the dashboard open")
	}
	_, msgs = press(t, m, "q", "y")
	if !quitSeen(msgs) {
		t.Fatal("q, y did not quit")
	}
}

// The quit dialog shows the resume command the caller gives, which carries
// the flags that find the same database.
func TestQuitConfirmShowsTheCallersResumeCommand(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m.opts.ResumeCommand = func(id, _ string) string { return "swarmdeck resume --db /tmp/x.db " + id }
	m, _ = press(t, m, "q")
	mustContain(t, m, "swarmdeck resume --db /tmp/x.db r-7c1e")
}

// The resume command is not broken across rows at the width it fits in:
// wrapped with the sentence, it split after one of its hyphens ("--" at
// the end of a row, "provider" at the start of the next).
func TestQuitConfirmKeepsTheResumeCommandWhole(t *testing.T) {
	const cmd = "swarmdeck resume --provider scripted --db /tmp/size-work/3.db r-7c1e"
	for _, w := range []int{80, 100, 120} {
		m, _ := demoModel(t, w, 30)
		m.opts.ResumeCommand = func(id, _ string) string {
			return "swarmdeck resume --provider scripted --db /tmp/size-work/3.db " + id
		}
		m, _ = press(t, m, "q")
		mustContain(t, m, cmd)
	}
}

func TestQuitImmediatelyWhenFinished(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m = apply(m, runFinished("completed", ""))
	mustContain(t, m, "completed")
	_, msgs := press(t, m, "q")
	if !quitSeen(msgs) {
		t.Fatal("q did not quit a finished run at once")
	}
}

// A run that ends without completing says why on the status line: the
// header shows only its status, and the reason was otherwise one transcript
// away. A run stopped by an outage can be left at once, and so can a failed
// one, which continues too once its cause is fixed. A completed run
// says where its answer is.
func TestRunEndReasonOnTheStatusLine(t *testing.T) {
	for _, tc := range []struct{ status, reason, want string }{
		{"failed", "429 Too Many Requests: You exceeded your current quota",
			"✗ run failed; once the cause is fixed, quit (q), then swarmdeck resume r-7c1e continues it. Why: 429 Too Many Requests: You exceeded your current quota"},
		// The way back comes first, before a reason that may be cut.
		{"interrupted", "the model server failed: LLM connection failed after 5 attempts. The run is stored as it was: resume it once the server answers",
			"✗ run interrupted; quit (q), then swarmdeck resume r-7c1e continues it. Why: the model server failed: LLM connection failed after 5 attempts."},
	} {
		m, _ := demoModel(t, 200, 48)
		m = apply(m, runFinished(tc.status, tc.reason))
		mustContain(t, m, tc.want)
		// What the run left running does not spin once it has stopped.
		mustNotContain(t, m, unicodeGlyphs.spinner...)
		if _, msgs := press(t, m, "q"); !quitSeen(msgs) {
			t.Errorf("q did not quit a %s run at once", tc.status)
		}
	}
	// A completed run points to its answer instead, whole at 80 columns.
	for _, w := range []int{200, 80} {
		m, _ := demoModel(t, w, 24)
		m = apply(m, runFinished("completed", ""))
		mustContain(t, m, "run completed: the answer is the orchestrator's last message (enter on it)")
	}
	// Reopened (a person woke a session), the run's end is not shown any
	// more: neither the completion nor a failure's reason.
	for _, status := range []string{"completed", "failed"} {
		m, _ := demoModel(t, 160, 24)
		m = apply(m, runFinished(status, "quota"))
		again := runFinished("running", "")
		again.Type = event.RunStarted
		m = apply(m, again)
		mustNotContain(t, m, "run completed", "run failed")
	}
}

// Keys that would act on nothing say so instead: x on a subtree that has
// ended, b on a run that has ended (nobody would read it).
func TestActionsOnWhatHasEnded(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	// The subtree is chosen in a fixed order, and not a cancelled one: m
	// below is refused on a cancelled session, and a map's order would make
	// the test pass or fail by chance.
	var done string
	for _, id := range slices.Sorted(maps.Keys(m.st.sessions)) {
		n := m.st.sessions[id]
		if !n.anyActive() && n.info.Status != "cancelled" {
			done = id
			break
		}
	}
	if done == "" {
		t.Fatal("the demo has no ended subtree that was not cancelled")
	}
	m.sessions.selected = done
	m, _ = press(t, m, "x")
	if m.dialog.kind != dialogNone {
		t.Fatal("x offered to cancel a subtree that has ended")
	}
	mustContain(t, m, "already: nothing to cancel")
	if !m.status.note {
		t.Fatal("nothing to cancel is shown as a success")
	}

	m = apply(m, runFinished("completed", ""))
	m, _ = press(t, m, "b")
	if m.dialog.kind != dialogNone {
		t.Fatal("b opened a broadcast on a run that has ended")
	}
	mustContain(t, m, "the run has completed: a broadcast would reach nobody")
	// A message still wakes a session, once the refusal has been read.
	m.now = func() time.Time { return t0.Add(2 * time.Second) }
	m, _ = press(t, m, "m")
	if m.dialog.kind != dialogMessage {
		t.Errorf("m did not open the message dialog on an ended run")
	}
	wantCalls(t, ctl)
}

func TestCtrlCQuitsImmediately(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "b") // even with a dialog open
	_, msgs := press(t, m, "ctrl+c")
	if !quitSeen(msgs) {
		t.Fatal("ctrl+c did not quit")
	}
}

func TestFocusCycling(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	order := []string{"┏━ Broadcasts", "┏━ Plans", "┏━ Delegations", "┏━ Sessions"}
	mustContain(t, m, "┏━ Sessions")
	for _, want := range order {
		m, _ = press(t, m, "tab")
		mustContain(t, m, want)
		if strings.Count(plainView(m), "┏━") != 1 {
			t.Fatal("more than one pane looks focused")
		}
	}
	m, _ = press(t, m, "shift+tab")
	mustContain(t, m, "┏━ Delegations")
}

func TestTreeNavigationAndCollapse(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down", "down", "down") // researcher (r-2)
	mustContain(t, m, "›  ▾ ◔ ? researcher (r-2)")
	mustContain(t, m, "explorer (x-2) Benchmark", "explorer (x-3) per-call")

	m, _ = press(t, m, "space")
	mustContain(t, m, "›  ▸ ◔ ? researcher (r-2) +2 Survey analytics")
	mustNotContain(t, m, "explorer (x-2) Benchmark", "explorer (x-3) per-call")
	// Folded children still count in the parent's tokens.
	mustContain(t, m, "3.2k")
	m, _ = press(t, m, "down")
	mustContain(t, m, "›  ▾ ⠋ orchestrator (d-1)")

	m, _ = press(t, m, "up", "space")
	mustContain(t, m, "explorer (x-2) Benchmark")

	// The Plans pane follows the selection.
	m, _ = press(t, m, "down", "down", "down") // orchestrator (d-1)
	mustContain(t, m, "Plans · orchestrator (d-1)", "Write the redirect handler")
}

func TestTreeJumpKeysOnDashboard(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down") // s-res1
	steps := []struct{ key, want string }{
		{"c", "s-exp1"}, {"p", "s-res1"}, {"]", "s-res2"}, {"[", "s-res1"}, {"p", "s-root"},
	}
	for _, s := range steps {
		m, _ = press(t, m, s.key)
		if m.sessions.selected != s.want {
			t.Fatalf("after %q selected %s, want %s", s.key, m.sessions.selected, s.want)
		}
	}
	m, _ = press(t, m, "p")
	mustContain(t, m, "no parent: this is a root session")
}

func TestSessionViewOpenJumpAndBack(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	ctl.SetTranscript("s-root", []event.MessageInfo{{Index: 0, Role: "system", Content: "root prompt"}, {Index: 1, Role: "user", Content: "Build a URL shortener"}})
	ctl.SetTranscript("s-exp1", []event.MessageInfo{{Index: 1, Role: "user", Content: "Scan the repo"}})

	m, _ = press(t, m, "down", "down", "enter")
	mustContain(t, m, "Transcript · researcher (r-1) · s-res1", "#5 assistant", "SQLite in WAL mode is enough for v1", "injected", "no-reply")
	mustContain(t, m, "▸ system prompt · 4 lines")
	mustNotContain(t, m, "Answer with facts.") // the system prompt is collapsed

	for _, step := range []struct{ key, title, text string }{
		{"c", "Transcript · explorer (x-1) · s-exp1", "Scan the repo"},
		{"p", "Transcript · researcher (r-1) · s-res1", "#5 assistant"},
		{"]", "Transcript · researcher (r-2) · s-res2", "no messages yet"},
		{"[", "Transcript · researcher (r-1) · s-res1", "#4 user"},
		{"[", "Transcript · planner (plan) · s-plan", "no messages yet"},
		{"p", "Transcript · orchestrator · s-root", "Build a URL shortener"},
	} {
		m, _ = press(t, m, step.key)
		mustContain(t, m, step.title, step.text)
	}
	m, _ = press(t, m, "esc")
	mustContain(t, m, "Plans · orchestrator", "┏━ Sessions")
	mustNotContain(t, m, "Transcript ·")
	if m.sessions.selected != "s-root" {
		t.Fatalf("back on the dashboard the selection is %s, want the last viewed session s-root", m.sessions.selected)
	}
}

func TestSessionViewExpandToolAndSystemPrompt(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
	m, _ = press(t, m, "down", "down", "enter")
	mustContain(t, m, `▸ search_files pattern: sql · path: .`)
	m, _ = press(t, m, "up", "up", "up", "space") // #2 assistant with the tool call
	mustContain(t, m, "▾ search_files call-1", "pattern: sql", "path: .")
	m, _ = press(t, m, "home", "enter") // #0 system prompt
	mustContain(t, m, "Answer with facts.")
}

// Closing a message read partway down shows it from its header: the
// lines scrolled past may be all there is of it once closed.
func TestClosingAMessageReadPartwayShowsItsHeader(t *testing.T) {
	m, ctl := demoModel(t, 100, 18)
	tr := tuitest.DemoTranscript()
	tr[0].Content = strings.Repeat("A rule of the system prompt.\n", 40)
	ctl.SetTranscript("s-res1", tr)
	m, _ = press(t, m, "down", "down", "enter", "home", "space")
	mustContain(t, m, "#0 system")
	m, _ = press(t, m, "j", "j", "j", "j", "j", "j")
	mustNotContain(t, m, "#0 system") // read into it
	m, _ = press(t, m, "space")
	mustContain(t, m, "#0 system")
}

func TestFilterBroadcasts(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "tab", "/")
	if m.focus != focusBroadcasts || !m.broadcasts.filtering {
		t.Fatal("/ in the feed did not filter it")
	}
	m = typeText(t, m, "BLOCKER")
	mustContain(t, m, "2 matches for “BLOCKER”", "Do not store raw IP addresses", "Handler needs the storage")
	mustNotContain(t, m, "SQLite in WAL mode handles", "base62 encoder")
	m, _ = press(t, m, "enter") // keep the filter, leave the input
	m = typeText(t, m, "j")     // navigation again, not typing
	mustContain(t, m, "filter: BLOCKER")
	m, _ = press(t, m, "esc")
	mustContain(t, m, "SQLite in WAL mode handles", "Broadcasts · 7")
	mustNotContain(t, m, "matches for")

	// A filter on the sender.
	m, _ = press(t, m, "/")
	m = typeText(t, m, "explorer (x-")
	mustContain(t, m, "2 matches")
	m, _ = press(t, m, "esc")
	mustNotContain(t, m, "matches for")

	// And on the recipient, by the name the feed shows for it.
	m, _ = press(t, m, "/")
	m = typeText(t, m, "(r-2)")
	mustContain(t, m, "1 match for", "Wrap up the analytics survey")
	m, _ = press(t, m, "esc")

	// A session's id finds what it sent and what reached it: among many
	// sessions of one label, that is how one is told apart.
	m, _ = press(t, m, "/")
	m = typeText(t, m, "s-exp3")
	mustContain(t, m, "3 matches for", "golang.org/x/time/rate", "base62 encoder", "Do not store raw IP")
	press(t, m, "esc")
}

// A filter finds an accented letter however it is written: as one
// character, as typed on most keyboards, or as a letter and a combining
// accent, as some systems store file names.
func TestFilterMatchesEitherFormOfAnAccent(t *testing.T) {
	for _, tc := range []struct {
		text, typed string
		want        bool
	}{
		{"Plan the f\u00eate in Paris", "f\u00eate", true},
		{"Plan the fe\u0302te in Paris", "f\u00eate", true},
		{"Plan the f\u00eate in Paris", "fe\u0302te", true},
		{"PLAN THE F\u00caTE", "f\u00eate", true},
		{"Plan the fate", "f\u00eate", false},
	} {
		if got := containsFold(tc.text, foldText(tc.typed)); got != tc.want {
			t.Errorf("%q filtered by %q: %v, want %v", tc.text, tc.typed, got, tc.want)
		}
	}
}

// With the Sessions pane focused, / filters the tree, not the feed: by
// label, role, id or task, each match under the sessions it descends from,
// and the footer says what the filter is on.
func TestFilterSessions(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, "/ filter sessions")
	m, _ = press(t, m, "/")
	if m.focus != focusSessions || m.broadcasts.filtering {
		t.Fatal("/ in the Sessions pane did not filter the sessions")
	}
	mustContain(t, m, "enter keep session filter • esc clear session filter", "label, role, id or task")
	m = typeText(t, m, "x-")
	mustContain(t, m, "Sessions · 11 · 5 running · 3 matches for “x-”", "explorer (x-1) Scan the existing code",
		"explorer (x-2) Benchmark", "explorer (x-3) per-call timeout",
		"orchestrator Build a URL shortener", "researcher (r-1) Compare", "researcher (r-2) Survey", // where they are
		"Broadcasts · 7 ─", "SQLite in WAL mode handles") // the feed as it was
	mustNotContain(t, m, "planner (plan) Draft", "executor (e-1) Write", "reviewer (v-1)", "executor (e-9)", "Broadcasts · 7 · ")
	if m.sessions.selected != "s-exp1" {
		t.Fatalf("the selection is on %s, not on the first match", m.sessions.selected)
	}

	m, _ = press(t, m, "enter") // keep the filter, leave the input
	mustContain(t, m, "filter: x-  (/ edit · esc clear)", "/ filter sessions")
	m, _ = press(t, m, "down")
	if m.sessions.selected != "s-res2" {
		t.Fatalf("down under the filter went to %s, not to the next row shown", m.sessions.selected)
	}
	// A click selects the row under it, below the filter's row.
	for y, line := range strings.Split(plainView(m), "\n") {
		if strings.Contains(line, "explorer (x-3) per-call") {
			m, _ = update(m, tea.MouseClickMsg{X: 10, Y: y, Button: tea.MouseLeft})
		}
	}
	if m.sessions.selected != "s-exp3" {
		t.Fatalf("a click on explorer (x-3) selected %s", m.sessions.selected)
	}
	m, _ = press(t, m, "up", "up")
	m, _ = press(t, m, "esc")
	mustContain(t, m, "planner (plan) Draft", "reviewer (v-1)")
	mustNotContain(t, m, "matches for", "filter: ")
	if m.sessions.selected != "s-res2" {
		t.Fatal("clearing the filter moved the selection")
	}

	for _, tc := range []struct{ typed, shows string }{
		{"REVIEWER", "reviewer (v-1) Review the handler"}, // role
		{"s-exe1", "executor (e-1) Write the redirect"},   // id
		{"legacy links", "executor (e-9) Migrate"},        // task
		{"e-9", "executor (e-9) Migrate"},                 // label
	} {
		m, _ = press(t, m, "/")
		m = typeText(t, m, tc.typed)
		mustContain(t, m, "1 match for", tc.shows)
		m, _ = press(t, m, "esc")
	}

	m, _ = press(t, m, "/")
	m = typeText(t, m, "nobody")
	mustContain(t, m, "0 matches for", "no session matches")
	m, _ = press(t, m, "esc")

	// From Plans and Delegations, which have no filter, / filters the feed
	// as before, and the footer says so.
	m, _ = press(t, m, "tab", "tab")
	mustContain(t, m, "/ filter broadcasts")
	m, _ = press(t, m, "/")
	if m.focus != focusBroadcasts || !m.broadcasts.filtering {
		t.Fatal("/ from the Plans pane did not filter the feed")
	}
}

// A session reached by a key that a filter hides (its parent, a sibling)
// shows: the filter is cleared rather than leave the selection unseen.
func TestSessionFilterGivesWayToASessionGoneTo(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "/")
	m = typeText(t, m, "x-1")
	m, _ = press(t, m, "enter", "]")
	mustContain(t, m, "1 match for")
	m, _ = press(t, m, "p")
	if m.sessions.selected != "s-res1" {
		t.Fatalf("p went to %s", m.sessions.selected)
	}
	m, _ = press(t, m, "]")
	if m.sessions.selected != "s-res2" {
		t.Fatalf("] went to %s", m.sessions.selected)
	}
	mustContain(t, m, "planner (plan) Draft")
	mustNotContain(t, m, "match for", "filter: ")
}

// A run with more broadcasts than the dashboard has read says how many
// there are, and a filter says its count is of those read.
func TestBroadcastCountsOfALongRun(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.BroadcastTotal = 5000
	m, _ := newTestModel(t, snap, 160, 48)
	mustContain(t, m, "Broadcasts · 5,000")
	m, _ = press(t, m, "tab", "/")
	m = typeText(t, m, "BLOCKER")
	mustContain(t, m, "Broadcasts · 5,000 · 2 matches for “BLOCKER” in the 7 newest")
}

// While the filter is edited every printable key is typed into it, so the
// footer lists only the keys that are not: the dashboard's "b broadcast" or
// "q quit" there would be typed, not done.
func TestFilterFooterListsOnlyItsOwnKeys(t *testing.T) {
	for _, tc := range []struct{ keys, footer string }{
		{"/", "enter keep session filter • esc clear session filter"},
		{"tab /", "enter keep broadcast filter • esc clear broadcast filter"},
	} {
		m, _ := demoModel(t, 160, 48)
		m, _ = press(t, m, strings.Fields(tc.keys)...)
		mustContain(t, m, tc.footer)
		mustNotContain(t, m, "b broadcast", "q quit")
		m = typeText(t, m, "bq")
		mustContain(t, m, "/ bq")
		m, _ = press(t, m, "enter")
		mustContain(t, m, "b broadcast", "q quit")
		mustNotContain(t, m, "keep session filter", "keep broadcast filter")
	}
}

// "↓ N newer" counts what is out of sight below the feed's window, not
// what lies below the selection when every item is on screen.
func TestBroadcastsNewerCountsWhatIsOutOfSight(t *testing.T) {
	m, _ := demoModel(t, 160, 48) // all 7 broadcasts fit
	m, _ = press(t, m, "tab", "up", "up", "up")
	mustNotContain(t, m, "newer")
	m, _ = demoModel(t, 100, 24) // a few fit
	m, _ = press(t, m, "tab")
	for range 6 {
		m, _ = press(t, m, "up")
	}
	mustContain(t, m, "newer")
}

func TestReadOnlyRefusesActions(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Run.Status = "completed"
	m, ctl := readOnlyModel(t, snap, 160, 48)
	mustContain(t, m, "READ-ONLY")
	for _, k := range []string{"b", "m", "a", "s", "S", "x"} {
		m, _ = press(t, m, k)
		if m.dialog.kind != dialogNone {
			t.Fatalf("%s opened a dialog on a stored run", k)
		}
		// resume refuses a completed run: the refusal does not send the
		// person there.
		mustContain(t, m, "read-only: view only shows a run, and this one has completed")
		mustNotContain(t, m, "resume")
		m, _ = press(t, m, "esc")
	}
	wantCalls(t, ctl)
	// The footer offers only what works here.
	mustNotContain(t, m, "b broadcast", "x cancel", "a answer")
	mustContain(t, m, "q quit")
	// Navigation still works.
	m, _ = press(t, m, "down", "enter")
	mustContain(t, m, "Transcript · planner (plan)")
}

func TestResizeBetweenLayouts(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down")
	sideBySide := func() bool {
		for _, l := range strings.Split(plainView(m), "\n") {
			if strings.Contains(l, "Sessions ·") && strings.Contains(l, "Broadcasts ·") {
				return true
			}
		}
		return false
	}
	if !sideBySide() {
		t.Fatal("160 columns: Sessions and Broadcasts are not side by side")
	}
	m, _ = update(m, windowSize(80, 30))
	if sideBySide() {
		t.Fatal("80 columns: panes are still side by side")
	}
	mustContain(t, m, "Sessions ·", "Broadcasts ·", "Plans · researcher (r-1)", "Delegations ·")
	m, _ = update(m, windowSize(50, 12))
	mustContain(t, m, "Terminal too small: need at least 60x16")
	mustNotContain(t, m, "Sessions ·")
	m, msgs := press(t, m, "down", "q") // ignored while too small: no confirmation could be shown
	if quitSeen(msgs) {
		t.Fatal("q quit a running run without a confirmation while the terminal was too small")
	}
	m, _ = update(m, windowSize(100, 30))
	if !sideBySide() {
		t.Fatal("100 columns: Sessions and Broadcasts are not side by side")
	}
	if m.sessions.selected != "s-res1" {
		t.Fatalf("the selection moved while resizing: %s", m.sessions.selected)
	}
	checkFrame(t, plainView(m), 100, 30)
}

func TestMouseClickAndWheel(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	l, _ := m.layout()
	// Sessions rows start under the border and the column header.
	m, _ = update(m, tea.MouseClickMsg{X: l.sessions.x + 5, Y: l.sessions.y + 2 + 4, Button: tea.MouseLeft})
	if m.sessions.selected != "s-res2" {
		t.Fatalf("click selected %s, want s-res2", m.sessions.selected)
	}
	mustContain(t, m, "›  ▾ ◔ ? researcher (r-2)")
	m, _ = update(m, tea.MouseClickMsg{X: l.delegations.x + 5, Y: l.delegations.y + 1, Button: tea.MouseLeft})
	mustContain(t, m, "┏━ Delegations")
	// The wheel scrolls the pane under the pointer, not the focused one.
	m, _ = update(m, tea.MouseWheelMsg{X: l.sessions.x + 5, Y: l.sessions.y + 3, Button: tea.MouseWheelDown})
	if m.sessions.selected != "s-dlg1" {
		t.Fatalf("wheel down over Sessions selected %s, want s-dlg1 (three rows down)", m.sessions.selected)
	}
	if m.focus != focusDelegations {
		t.Fatal("the wheel changed focus")
	}
}

func TestKeyOverrides(t *testing.T) {
	ctl := tuitest.NewController(tuitest.Demo(t0))
	m := New(Options{Controller: ctl, Theme: "dark", Keys: map[string][]string{"broadcast": {"B"}, "quit": {"ctrl+q"}, "bogus": {"z"}}})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() timeT { return t0 }, false
	m, _ = update(m, windowSize(160, 48))
	m = connect(m, ctl)
	mustContain(t, m, "B broadcast", "ctrl+q quit", "unknown key actions in the keys setting: bogus")
	m, _ = press(t, m, "b")
	if m.dialog.kind != dialogNone {
		t.Fatal("the old broadcast key still works")
	}
	m, _ = press(t, m, "B")
	if m.dialog.kind != dialogBroadcast {
		t.Fatal("the new broadcast key does not open the dialog")
	}
}

// What the status line says at a run's end names the keys as they are
// bound.
func TestRunEndNamesRemappedKeys(t *testing.T) {
	for _, tc := range []struct{ status, want, not string }{
		{"completed", "run completed: the answer is the orchestrator's last message (o on it)", "(enter on it)"},
		{"interrupted", "run interrupted; quit (ctrl+q), then swarmdeck resume r-7c1e continues it", "(q)"},
		{"failed", "run failed; once the cause is fixed, quit (ctrl+q), then swarmdeck resume", "(q)"},
	} {
		ctl := tuitest.NewController(tuitest.Demo(t0))
		m := startTestModel(t, ctl, Options{Keys: map[string][]string{"open": {"o"}, "quit": {"ctrl+q"}}}, 160, 48)
		m = apply(m, runFinished(tc.status, ""))
		mustContain(t, m, tc.want)
		mustNotContain(t, m, tc.not)
	}
}

// The keymap binds exactly the actions the config file may rebind, with
// the defaults the config package checks overrides against.
func TestKeyMapIsTheConfigKeyTable(t *testing.T) {
	k, _ := newKeyMap(nil, &unicodeGlyphs)
	var names []string
	defaults := config.DefaultKeys()
	for _, a := range k.actions() {
		names = append(names, a.action)
		if got := a.b.Keys(); !reflect.DeepEqual(got, defaults[a.action]) {
			t.Errorf("%s is bound to %v, config's default is %v", a.action, got, defaults[a.action])
		}
	}
	if !reflect.DeepEqual(names, config.KeyActions) {
		t.Errorf("keymap actions %v\nconfig.KeyActions %v", names, config.KeyActions)
	}
}

// A dialog's key may be a key of the main view, as the config accepts: each
// does its own thing where it is read.
func TestDialogKeySharedWithTheMainView(t *testing.T) {
	ctl := tuitest.NewController(tuitest.Demo(t0))
	keys := map[string][]string{"yes": {"b"}}
	cfg := config.Defaults()
	cfg.UI.Keys = keys
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := New(Options{Controller: ctl, Theme: "dark", Keys: keys})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() timeT { return t0 }, false
	m, _ = update(m, windowSize(160, 48))
	m = connect(m, ctl)
	m, _ = press(t, m, "b")
	if m.dialog.kind != dialogBroadcast {
		t.Fatal("b no longer opens the broadcast dialog")
	}
	m, _ = press(t, m, "esc", "q")
	_, msgs := press(t, m, "b")
	if !quitSeen(msgs) {
		t.Fatal("b does not confirm the quit")
	}
}

// In a narrow Sessions pane siblings of one role stay apart: where
// "researcher (r-1)" would be cut to the same stub for both, the label is
// shown alone.
func TestNarrowSessionRowsKeepTheLabel(t *testing.T) {
	snap := demoWithResearchLabels()
	m, _ := newTestModel(t, snap, 100, 30)
	rows := 0
	for _, line := range strings.Split(plainView(m), "\n") {
		if strings.Contains(line, "1m38s") || strings.Contains(line, "1m37s") { // the two researchers' rows
			rows++
			if !strings.Contains(line, "research-1") && !strings.Contains(line, "research-2") {
				t.Errorf("a researcher's row lost its label:\n%s", line)
			}
		}
	}
	if rows < 2 {
		t.Fatalf("found %d researcher rows:\n%s", rows, plainView(m))
	}
	// Where the whole name fits, it is shown whole.
	m, _ = newTestModel(t, snap, 160, 48)
	mustContain(t, m, "researcher (research-1)", "researcher (research-2)")
}

// At the smallest size the dashboard draws, every dialog still shows its
// input line: the panes behind it give way, and a sheet that must still be
// clipped loses its middle, not its end.
func TestDialogsFitTheSmallestScreen(t *testing.T) {
	for _, size := range [][2]int{{60, 16}, {80, 18}, {100, 16}} {
		for _, tc := range []struct{ key, want string }{
			{"a", "> your answer"},
			{"b", "> what every agent should know"},
			{"?", "? or esc closes this"},
		} {
			m, _ := demoModel(t, size[0], size[1])
			m, _ = press(t, m, tc.key)
			view := plainView(m)
			lines := strings.Split(strings.TrimRight(view, "\n"), "\n")
			if !strings.Contains(view, tc.want) || len(lines) > size[1] {
				t.Errorf("%dx%d, %s: %q not on a screen of %d lines:\n%s", size[0], size[1], tc.key, tc.want, len(lines), view)
			}
		}
	}
}

// S stops the run asking the person even before any question is open, as
// the README says, after the same confirmation.
func TestSkipAllWithNoQuestionOpen(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Questions = nil
	m, ctl := newTestModel(t, snap, 160, 48)
	m, _ = press(t, m, "S")
	mustContain(t, m, "Stop agents asking you anything for the rest of this run?")
	press(t, m, "y")
	wantCalls(t, ctl, tuitest.Call{Op: "skip_all"})
}

// m on a cancelled session is refused at once, as x on an ended one is,
// instead of after the message has been typed.
func TestMessageToACancelledSessionIsRefusedBeforeTyping(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	for i := 0; i < 20 && m.selectedSession() != "s-cxl"; i++ {
		m, _ = press(t, m, "down")
	}
	if m.selectedSession() != "s-cxl" {
		t.Fatalf("could not select the cancelled session; selected %q", m.selectedSession())
	}
	m, _ = press(t, m, "m")
	if m.dialog.kind != dialogNone {
		t.Fatalf("m opened a dialog for a cancelled session")
	}
	mustContain(t, m, "was cancelled: it cannot receive messages")
	wantCalls(t, ctl)
}

// In a run the person cancelled, m is refused at once: the runtime takes
// no more messages there, waking or not.
func TestMessageInACancelledRunIsRefusedBeforeTyping(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Run.Status = "cancelled"
	m, ctl := newTestModel(t, snap, 160, 48)
	if m.selectedSession() == "" {
		t.Fatal("no session selected")
	}
	m, _ = press(t, m, "m")
	if m.dialog.kind != dialogNone {
		t.Fatalf("m opened a dialog in a cancelled run")
	}
	mustContain(t, m, "the run was cancelled: it takes no more messages")
	wantCalls(t, ctl)
}

// An action's error shown in its dialog goes with the dialog: after esc the
// status line no longer shows it.
func TestDialogErrorGoesWithTheDialog(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetError(errors.New("there is no option 7"))
	m, _ = press(t, m, "a", "7", "enter")
	mustContain(t, m, "answer failed: there is no option 7")
	if m.dialog.kind != dialogAnswer {
		t.Fatal("the answer dialog closed on a failed answer")
	}
	m, _ = press(t, m, "esc")
	mustNotContain(t, m, "there is no option 7")
	// An error with no dialog behind it stays until it is dismissed.
	m, _ = press(t, m, "s", "down")
	mustContain(t, m, "skip failed: there is no option 7")
	// ... or until a dialog opens: it was about what came before.
	m, _ = press(t, m, "b")
	mustNotContain(t, m, "skip failed")
	m, _ = press(t, m, "esc")

	// Once the person edits the refused answer, the status line stops
	// repeating the old refusal; the dialog says what is wrong now.
	m, _ = press(t, m, "a") // the 7 typed before is kept
	mustContain(t, m, "> 7")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "answer failed: there is no option 7")
	ctl.SetError(nil)
	m, _ = press(t, afterAPause(m), "backspace", "enter")
	mustContain(t, m, "type an answer, or ctrl+s to skip")
	mustNotContain(t, m, "there is no option 7")
}

// The runtime's refusals of an unclear answer (an id and a label of two
// options, a list naming an option that is none) are long; the answer
// dialog shows each whole, wrapped inside the sheet, with the input and
// what was typed still on the screen at the smallest sizes, and the
// person corrects the answer and sends it.
func TestAnswerDialogShowsAWholeRefusal(t *testing.T) {
	q := tuitest.Demo(t0).Questions[0]
	opts := make([]coordination.Option, len(q.Options))
	for i, o := range q.Options {
		opts[i] = coordination.Option{ID: o.ID, Label: o.Label}
	}
	for _, typed := range []string{"sqlite: Redis", "pg, x"} {
		_, refusal := coordination.ParseAnswer(typed, opts, q.MultiSelect)
		if refusal == nil {
			t.Fatalf("%q is taken as an answer to %v", typed, opts)
		}
		for _, size := range [][2]int{{60, 16}, {80, 18}, {160, 48}} {
			m, ctl := demoModel(t, size[0], size[1])
			ctl.SetError(refusal)
			m, _ = press(t, m, "a")
			m = typeText(t, m, typed)
			m, _ = press(t, m, "enter")
			out := strings.TrimRight(plainView(m), "\n")
			checkFrame(t, out, size[0], size[1])
			if !strings.Contains(out, "┃ > "+typed) {
				t.Errorf("%dx%d: the input with %q is not in sight:\n%s", size[0], size[1], typed, out)
			}
			// The sheet's lines from the refusal's to the sheet's end,
			// borders and wrapping undone.
			var shown []string
			for _, l := range strings.Split(out, "\n") {
				if strings.HasPrefix(l, "┗") {
					break
				}
				if strings.HasPrefix(l, "┃") && !strings.HasSuffix(l, " ┃") {
					t.Errorf("%dx%d: a line of the sheet touches its right border: %q", size[0], size[1], l)
				}
				if strings.HasPrefix(l, "┃ ✗ ") || len(shown) > 0 {
					shown = append(shown, strings.TrimSpace(strings.Trim(l, "┃")))
				}
			}
			if got := strings.Join(shown, " "); got != "✗ "+refusal.Error() {
				t.Errorf("%dx%d: the dialog shows the refusal of %q as %q, want it whole:\n%s", size[0], size[1], typed, got, out)
			}
			ctl.SetError(nil)
			m, _ = press(t, afterAPause(m), "ctrl+u")
			m = typeText(t, m, "sqlite")
			m, _ = press(t, m, "enter")
			if m.dialog.kind != dialogNone {
				t.Errorf("%dx%d: the corrected answer left the dialog open", size[0], size[1])
			}
			wantCalls(t, ctl, tuitest.Call{Op: "answer", QuestionID: q.ID, Text: "sqlite"})
		}
	}
}

// A dialog open while the terminal is resized keeps its input on one line
// of the new width, with the cursor's end of a long text in sight, and
// uses the room it gets back when the terminal grows again.
func TestDialogInputFollowsTheWindowWidth(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "m")
	m = typeText(t, m, strings.Repeat("word ", 40)+"END")
	inputLine := func(w int) string {
		t.Helper()
		out := plainView(m)
		checkFrame(t, out, w, strings.Count(out, "\n")+1)
		lines := strings.Split(out, "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "┃ > ") {
				if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "┗") {
					t.Fatalf("%d columns: the input runs onto a second line:\n%s", w, out)
				}
				return l
			}
		}
		t.Fatalf("%d columns: no input line:\n%s", w, out)
		return ""
	}
	wide := inputLine(160)
	for _, w := range []int{100, 60, 160} {
		m, _ = update(m, windowSize(w, 30))
		l := inputLine(w)
		if !strings.Contains(l, "END") {
			t.Fatalf("%d columns: the end of the text, where the cursor is, is out of sight: %q", w, l)
		}
		if w == 160 && l != wide {
			t.Fatalf("back at 160 columns the input is not as wide as before:\n%q\n%q", l, wide)
		}
	}
}

// Enter on a plan task opens the session its delegation started; on a task
// with none, and on a delegation without a session, it says why nothing
// opens. Space, offered in every pane, says where it works.
func TestPlanTaskOpensItsDelegatedSession(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "tab", "tab") // Plans, showing the root's plan
	if m.focus != focusPlans {
		t.Fatalf("focus %d, want the Plans pane", m.focus)
	}
	m, _ = press(t, m, "enter")
	mustContain(t, m, "· task 1 is not delegated: it has no session of its own to open (orchestrator's plan)")
	m, _ = press(t, m, "space")
	mustContain(t, m, "· space folds a subtree of the Sessions pane (tab moves there)")
	m, _ = press(t, m, "down", "down", "down", "down", "enter") // task 5: its delegation failed
	mustContain(t, m, "· delegation dl-2 failed before it started a session")
	m, _ = press(t, m, "up", "enter") // task 4, delegated to dl-1
	if m.screen != screenSession || m.transcript.sessionID != "s-dlg1" {
		t.Fatalf("enter on a delegated task opened %q, want the delegation's session s-dlg1", m.transcript.sessionID)
	}
	mustContain(t, m, "Transcript · orchestrator (d-1) · s-dlg1")

	// Esc returns to the Plans pane, on the plan it showed.
	m, _ = press(t, m, "esc")
	if m.focus != focusPlans || m.plans.session != "s-root" {
		t.Fatalf("esc returned to pane %d showing the plan of %q; want Plans with the root's", m.focus, m.plans.session)
	}
	mustContain(t, m, "Plans · orchestrator · s-root")
	m, _ = press(t, m, "tab", "down", "enter") // Delegations: dl-2
	mustContain(t, m, "· delegation dl-2 failed before it started a session")
}

// Esc closes a dialog but keeps what was typed: the same dialog opened
// again holds it, says so, and loses it only once it is sent. A long
// answer is not lost to a key pressed by mistake.
func TestEscKeepsWhatWasTyped(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "a")
	m = typeText(t, m, "SQLite, with a Postgres path")
	m, _ = press(t, m, "esc")
	if m.dialog.kind != dialogNone {
		t.Fatal("esc did not close the answer dialog")
	}
	// Another dialog has its own text.
	m, _ = press(t, m, "b")
	mustNotContain(t, m, "SQLite, with a Postgres path", "what you typed before")
	m, _ = press(t, m, "esc", "a")
	mustContain(t, m, "> SQLite, with a Postgres path", "what you typed before · ctrl+u clears it")
	m = typeText(t, m, " open")
	mustNotContain(t, m, "what you typed before")
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "answer", QuestionID: "q-1", Text: "SQLite, with a Postgres path open"})

	// Sent, the draft is gone: a message typed, kept, sent, then opened
	// again starts empty.
	m, _ = press(t, m, "m")
	m = typeText(t, m, "check the docs")
	m, _ = press(t, m, "esc", "m")
	mustContain(t, m, "> check the docs")
	m, _ = press(t, m, "enter", "m")
	mustNotContain(t, m, "> check the docs", "what you typed before")
	// Emptied and closed, nothing is kept either.
	m = typeText(t, m, "x")
	m, _ = press(t, m, "backspace", "esc", "m")
	mustNotContain(t, m, "what you typed before")
}

// What was chosen in a dialog closed with esc comes back with its text:
// the broadcast's target and category, the message's no-reply. One enter
// must not send to everyone, or wake a session, against that choice.
func TestEscKeepsWhatWasChosen(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	sel := m.selectedSession()
	m, _ = press(t, m, "b", "tab", "ctrl+t")
	m = typeText(t, m, "look at the docs")
	m, _ = press(t, m, "esc", "down", "b")
	if d := m.dialog; !d.subtree || d.target != sel || categories[d.category] != "warning" {
		t.Fatalf("the broadcast reopened with subtree %v of %q, category %s; want the subtree of %q, warning",
			d.subtree, d.target, categories[d.category], sel)
	}
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "look at the docs", Target: sel, Category: "warning"})

	m, _ = press(t, m, "m", "tab")
	m = typeText(t, m, "FYI only")
	m, _ = press(t, m, "esc", "m")
	if !m.dialog.noReply {
		t.Fatal("the message reopened as waking; it was no-reply")
	}
	press(t, m, "enter")
	if calls := ctl.Calls(); len(calls) == 0 || !calls[len(calls)-1].NoReply {
		t.Errorf("calls %+v; want the message sent no-reply", calls)
	}
}

// Who is asked is said as it is: a stored run in view, where nobody can
// answer, has sessions that ask the person running it, not "you"; and S on
// a run that has ended, with no question left, says none can come instead
// of asking to stop them.
func TestAskingSaysWhoCanAnswer(t *testing.T) {
	snap := tuitest.Demo(t0)
	m := viewModel(t, snap, true)
	mustContain(t, m, "ask the person")
	mustNotContain(t, m, "ask you")
	m = viewModel(t, snap, false)
	mustContain(t, m, "ask you")

	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "s", "s") // both questions
	m = apply(m, runFinished("completed", ""))
	m, _ = press(t, m, "S")
	if m.dialog.kind != dialogNone {
		t.Fatal("S asked to stop questions on a run that has completed")
	}
	mustContain(t, m, "the run has completed: no question can come any more")
	wantCalls(t, ctl,
		tuitest.Call{Op: "skip", QuestionID: "q-1"},
		tuitest.Call{Op: "skip", QuestionID: "q-2"},
	)
}

// The header names the provider and model where they fit, and leaves them
// out whole where they do not, rather than cutting them.
func TestHeaderProviderWholeOrNot(t *testing.T) {
	m, _ := demoModel(t, 200, 48)
	mustContain(t, m, "11 sessions · scripted / swarmdeck-demo")
	m, _ = demoModel(t, 100, 30)
	mustNotContain(t, m, "· scripted /")
}

// A note answers one key: the next key that works takes it away, in a
// transcript as on the dashboard.
func TestNoteGoesWithTheNextKey(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "enter", "p")
	mustContain(t, m, "no parent: this is a root session")
	m, _ = press(t, m, "c")
	mustNotContain(t, m, "no parent")
	m, _ = press(t, m, "esc", "p", "p")
	mustContain(t, m, "no parent: this is a root session")
	m, _ = press(t, m, "down")
	mustNotContain(t, m, "no parent")
}

// A question that nobody can answer where its run runs (a headless run
// without --control) is shown as asked of the agents alone, not as waiting
// for the person, and the keys that answer and skip refuse it, saying why,
// in a view of the run and wherever else it is shown.
func TestQuestionWithNoPersonToAnswer(t *testing.T) {
	for _, readOnly := range []bool{true, false} {
		snap := tuitest.Demo(t0)
		for i := range snap.Questions {
			snap.Questions[i].HumanAbsent = true
		}
		m := viewModel(t, snap, readOnly)
		mustContain(t, m, "? researcher (r-1) asks the agents: Which storage engine", "no person to answer · 1 of 2")
		mustNotContain(t, m, "asks the person", "ask the person", "asks you", "ask you", "⠋ ? researcher (r-1)", "researcher (r-1) asks:")
		if m.st.waitingHuman(m.st.sessions["s-res1"]) {
			t.Errorf("read-only %v: the asking session is shown waiting for the person", readOnly)
		}
		for _, k := range []string{"a", "s", "S"} {
			m, _ = press(t, m, k)
			if m.dialog.kind != dialogNone {
				t.Fatalf("read-only %v: %s opened a dialog for a question nobody can answer", readOnly, k)
			}
			mustContain(t, m, "nobody can answer q-1: it is asked of the agents only, as no person is attached")
			m, _ = press(t, m, "esc")
		}
	}

	// Followed live: the person's question, told again once the person
	// has gone (their control input ended), leaves the person's banner.
	m := viewModel(t, tuitest.Demo(t0), true)
	mustContain(t, m, "researcher (r-1) asks: Which storage engine", "2 ask the person")
	q := tuitest.Demo(t0).Questions
	for i := range q {
		q[i].HumanAbsent = true
		m = applyQuestion(m, event.QuestionOpened, q[i].FromSession, q[i])
	}
	mustContain(t, m, "researcher (r-1) asks the agents: Which storage engine", "no person to answer · 1 of 2")
	mustNotContain(t, m, "ask the person")
	// Closed, it goes; and a resume where a person can answer asks it of
	// them again.
	m = applyQuestion(m, event.QuestionClosed, "s-res1", event.QuestionInfo{ID: "q-1", Status: "answered"})
	mustContain(t, m, "researcher (r-2) asks the agents: How long", "no person to answer · 1 of 1")
	q[1].HumanAbsent = false
	m = applyQuestion(m, event.QuestionOpened, "s-res2", q[1])
	mustContain(t, m, "researcher (r-2) asks: How long", "1 asks the person")
	mustNotContain(t, m, "no person to answer")
}

// A viewed run that another process deletes says so, and no longer
// offers its resume command; the action keys say why they do nothing.
func TestAViewedRunThatIsDeleted(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Run.Status, snap.Run.Error = "failed", "429 Too Many Requests"
	m := viewModel(t, snap, true)
	mustContain(t, m, "swarmdeck resume r-7c1e continues it")
	m = apply(m, runFinished("deleted", "another swarmdeck process deleted it from the database (delete or prune): what is shown is all that is left of it"))
	mustContain(t, m, "✗ run deleted: another swarmdeck process deleted it from the database")
	mustNotContain(t, m, "swarmdeck resume")
	m, _ = press(t, m, "b")
	mustContain(t, m, "read-only: this run is deleted from the database, and nothing steers or resumes it")
	// A transcript not read before finds nothing now, and says why.
	m, _ = press(t, m, "esc", "down", "down", "down", "down", "down", "enter")
	mustContain(t, m, "Transcript · explorer (x-2) · s-exp2", "the messages were deleted with the run")
}

// A run that has failed or was cancelled takes no broadcast, and the
// refusal says what reaches it instead; a message to a failed session is
// kept, and the confirmation says it is read only after a resume.
func TestEndedRunsSayWhatReachesThem(t *testing.T) {
	for _, tc := range []struct{ status, want string }{
		{"failed", "the run has failed: a broadcast would reach nobody (swarmdeck resume "},
		{"cancelled", "the run was cancelled: a broadcast would reach nobody (start a new run instead)"},
	} {
		m, _ := demoModel(t, 200, 48)
		m = apply(m, runFinished(tc.status, "why"))
		m, _ = press(t, m, "b")
		if m.dialog.kind != dialogNone {
			t.Fatalf("b opened a broadcast on a run that has %s", tc.status)
		}
		mustContain(t, m, tc.want)
		mustNotContain(t, m, "has cancelled")
	}

	m, ctl := demoModel(t, 200, 48)
	m, _ = press(t, m, "down") // planner (plan)
	m.st.sessions["s-plan"].info.Status = "failed"
	m, _ = press(t, m, "m")
	m = typeText(t, m, "try the other source")
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "message", SessionID: "s-plan", Text: "try the other source"})
	mustContain(t, m, "message sent to planner (plan); it has failed, and reads it only if the run stops and is resumed, not if the run completes")

	m = apply(m, runFinished("failed", "why"))
	m, _ = press(t, m, "m")
	m = typeText(t, m, "and this")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "message sent to planner (plan); it has failed, and reads it once the run is resumed (swarmdeck resume r-7c1e)")
}

// A message dialog whose title does not fit leaves the session's id out
// whole: cut at the border, "s-pl…" read as another session's id.
func TestMessageTitleLeavesTheIDOutWhole(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Sessions[1].Label = "the-planner-of-every-launch-task"
	m, _ := newTestModel(t, snap, 60, 30)
	m, _ = press(t, m, "down", "m")
	mustContain(t, m, "Message planner (the-planner-of-every-launch-task) ━")
	mustNotContain(t, m, "· s-p")
	m, _ = newTestModel(t, snap, 100, 30)
	m, _ = press(t, m, "down", "m")
	mustContain(t, m, "Message planner (the-planner-of-every-launch-task) · s-plan")
}

// A view of a run that resume refuses (a bench run) does not offer the
// resume, whether the run stopped or failed.
func TestAViewDoesNotOfferAResumeRefused(t *testing.T) {
	for _, status := range []string{"interrupted", "failed"} {
		snap := tuitest.Demo(t0)
		snap.Run.Status = status
		snap.Run.NotResumed = "a bench run, which is not resumed: run the bench again"
		m, _ := readOnlyModel(t, snap, 200, 48)
		mustContain(t, m, "run "+status+"; it is a bench run, which is not resumed: run the bench again")
		mustNotContain(t, m, "swarmdeck resume")
		if status == "failed" {
			m, _ = press(t, m, "b")
			mustContain(t, m, "read-only: view only shows a run, and this one has failed; it is a bench run")
			mustNotContain(t, m, "swarmdeck resume")
		}
	}
}

// Text typed right after a refused b (without looking at the screen) is
// dropped instead of acting as keys: in a view, q would quit and the
// arrows' letters move the selection. Only a pause ends it.
func TestTypingAfterARefusalIsDropped(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Run.Status = "completed"
	m, _ := readOnlyModel(t, snap, 160, 48)
	clock := t0
	m.now = func() time.Time { return clock }
	m, _ = press(t, m, "b")
	refusal := m.status.text
	before := plainView(m)
	for _, r := range "quit the xs now" {
		clock = clock.Add(300 * time.Millisecond)
		var msgs []tea.Msg
		m, msgs = press(t, m, string(r))
		for _, msg := range msgs {
			if _, ok := msg.(tea.QuitMsg); ok {
				t.Fatalf("%q typed after a refusal quit the view", r)
			}
		}
	}
	m, _ = press(t, m, "enter")
	if got := plainView(m); got != before {
		t.Fatalf("typing after a refusal changed the screen:\n%s", got)
	}
	if m.status.text != refusal {
		t.Errorf("the refusal gave way to %q while typing was dropped", m.status.text)
	}

	// After a pause keys act again.
	clock = clock.Add(typingPause)
	m, _ = press(t, m, "?")
	if !m.showHelp {
		t.Error("? after a pause did not open the help sheet")
	}

	// A key that is not typing acts at once, and the hold goes on: a tab
	// meant for the dialog that did not open (its no-reply, its target)
	// is followed by the text meant for it.
	m, _ = press(t, m, "?", "b", "down")
	if m.sessions.selected == snap.Sessions[0].ID {
		t.Error("down after a refusal did not move the selection")
	}
	for _, k := range []string{"tab", "q", "u", "i", "e", "t", "shift+tab", "?"} {
		clock = clock.Add(300 * time.Millisecond)
		var msgs []tea.Msg
		m, msgs = press(t, m, k)
		for _, msg := range msgs {
			if _, ok := msg.(tea.QuitMsg); ok {
				t.Fatalf("%q typed after a refusal and a tab quit the view", k)
			}
		}
	}
	if m.showHelp {
		t.Error("? typed after a refusal and a tab opened the help sheet")
	}
	clock = clock.Add(typingPause)
	m, _ = press(t, m, "?")
	if !m.showHelp {
		t.Error("? after a pause did not open the help sheet")
	}

	// esc dismisses the refusal: keys act again at once.
	m, _ = press(t, m, "?", "b", "esc", "?")
	if !m.showHelp {
		t.Error("? after a refusal and esc did not open the help sheet")
	}
}

// A read-only view refuses the action keys with what can be done about
// the run as it stands: resume takes a stopped or failed run, not a
// completed or cancelled one.
func TestReadOnlyRefusalFitsTheRunsEnd(t *testing.T) {
	for status, want := range map[string]string{
		"running":     readOnlyText,
		"interrupted": readOnlyText,
		"failed":      "this one has failed; swarmdeck resume r-7c1e continues it once the cause is fixed",
		"cancelled":   "read-only: view only shows a run, and this one has cancelled",
	} {
		snap := tuitest.Demo(t0)
		snap.Run.Status = status
		m, _ := readOnlyModel(t, snap, 200, 48)
		m, _ = press(t, m, "b")
		if got := m.status.text; got != want && !strings.HasSuffix(got, want) {
			t.Errorf("%s: b says %q, want %q", status, got, want)
		}
	}
}

// esc from the transcript of a delegated task opened in Plans comes back
// to that task, not to the top of the plan.
func TestPlansComeBackToTheTaskOpened(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	for m.focus != focusPlans {
		m, _ = press(t, m, "tab")
	}
	m, _ = press(t, m, "down", "down", "down") // task 4, delegated to s-dlg1
	m, _ = press(t, m, "enter")
	if m.screen != screenSession || m.transcript.sessionID != "s-dlg1" {
		t.Fatalf("enter on task 4 opened %v %q, want the transcript of s-dlg1", m.screen, m.transcript.sessionID)
	}
	m, _ = press(t, m, "esc")
	if m.focus != focusPlans || m.plans.session != "s-root" || m.plans.cursor != 3 {
		t.Errorf("esc came back to focus %v, the plan of %s at task %d; want Plans, s-root, task 4 (row 3)", m.focus, m.plans.session, m.plans.cursor)
	}
}

// A session selected through the filter inside a folded subtree is
// still where it is once the filter is cleared: on its folded ancestor,
// not on whatever row took its place.
func TestClearingTheFilterKeepsAFoldedSelection(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down", "down", "down") // researcher (r-2)
	if m.sessions.selected != "s-res2" {
		t.Fatalf("selected %s, want s-res2", m.sessions.selected)
	}
	m, _ = press(t, m, "space", "/")
	m = typeText(t, m, "x-3")
	m, _ = press(t, m, "enter")
	if m.sessions.selected != "s-exp3" {
		t.Fatalf("the filter selected %s, want its match s-exp3", m.sessions.selected)
	}
	m, _ = press(t, m, "/", "esc")
	if m.sessions.selected != "s-res2" {
		t.Errorf("with the filter cleared, %s is selected, want the folded s-res2 that holds s-exp3", m.sessions.selected)
	}
}

// A Sessions filter that hides every row leaves nothing selected: the
// keys that act on the selected session say so instead of acting on one
// out of sight, and the selection is back once the filter is cleared.
func TestFilterHidingEverySessionSelectsNone(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down") // researcher (r-1)
	m, _ = press(t, m, "/")
	m = typeText(t, m, "zzz")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "no session matches", "select a session to see its plan")
	for _, k := range []string{"x", "m"} {
		m, _ = press(t, m, k)
		if m.dialog.kind != dialogNone {
			t.Fatalf("%s opened a dialog on a session the filter hides:\n%s", k, plainView(m))
		}
	}
	mustContain(t, m, "the filter shows no session to message: esc in Sessions clears it")
	m, _ = press(t, m, "enter")
	if m.screen != screenDashboard {
		t.Fatal("enter opened the transcript of a session the filter hides")
	}
	wantCalls(t, ctl)

	m, _ = press(t, m, "esc", "x")
	if m.dialog.kind != dialogConfirm || m.dialog.target != "s-res1" {
		t.Fatalf("with the filter cleared, x does not act on the session selected before:\n%s", plainView(m))
	}
}

// On a terminal too short for all four panes, tab moves only between the
// panes drawn, and a pane that a shrinking terminal leaves out gives the
// focus back to Sessions.
func TestFocusSkipsPanesNotDrawn(t *testing.T) {
	m, _ := demoModel(t, 60, 16)
	l, _ := m.layout()
	if !l.delegations.empty() {
		t.Skip("60x16 draws every pane now; the test needs a size that does not")
	}
	seen := map[focus]bool{}
	for range 8 {
		m, _ = press(t, m, "tab")
		seen[m.focus] = true
		if l.pane(m.focus).empty() {
			t.Fatalf("tab focused pane %d, which is not drawn:\n%s", m.focus, plainView(m))
		}
	}
	for range 8 {
		m, _ = press(t, m, "shift+tab")
		if l.pane(m.focus).empty() {
			t.Fatalf("shift+tab focused pane %d, which is not drawn", m.focus)
		}
	}
	if !seen[focusSessions] || !seen[focusBroadcasts] {
		t.Errorf("tab did not reach every pane drawn: %v", seen)
	}

	m, _ = demoModel(t, 160, 48)
	m, _ = press(t, m, "shift+tab")
	if m.focus != focusDelegations {
		t.Fatalf("shift+tab from Sessions focused %d, want Delegations", m.focus)
	}
	m, _ = update(m, windowSize(60, 16))
	plainView(m)
	if m.focus != focusSessions {
		t.Errorf("after the terminal shrank under Delegations the focus is %d, want Sessions", m.focus)
	}
}

// A quick double esc arrives as one alt+esc: it acts as the two presses.
func TestDoubleEscArrivingAsAltEsc(t *testing.T) {
	altEsc := tea.KeyPressMsg{Code: tea.KeyEscape, Mod: tea.ModAlt}
	m, _ := demoModel(t, 80, 24)
	m, _ = press(t, m, "?")
	mustContain(t, m, "Keys")
	var cmd tea.Cmd
	m, cmd = update(m, altEsc)
	m, _ = drive(t, m, cmd)
	if m.showHelp {
		t.Fatal("a double esc left the help sheet open")
	}

	m, _ = press(t, m, "down", "m")
	m = typeText(t, m, "draft")
	m, cmd = update(m, altEsc)
	m, _ = drive(t, m, cmd)
	if m.dialog.kind != dialogNone {
		t.Fatal("a double esc left the message dialog open")
	}
	m, _ = press(t, m, "m")
	mustContain(t, m, "> draft") // kept for the next time, as after one esc
}

// m and x act on the session the focused pane points at: a broadcast's
// sender, a delegation's session; the Sessions pane's selection elsewhere.
func TestMessageAndCancelFollowTheFocusedPane(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "tab")
	if m.focus != focusBroadcasts {
		t.Fatalf("focus %v after tab, want Broadcasts", m.focus)
	}
	b := m.broadcasts.selected(&m.st.feed)
	if b == nil || b.FromSession == "" {
		t.Fatalf("selected broadcast %+v: want one from a session", b)
	}
	m, _ = press(t, m, "m")
	if m.dialog.kind != dialogMessage || m.dialog.target != b.FromSession {
		t.Fatalf("m in Broadcasts opened %v for %q, want a message to the sender %q", m.dialog.kind, m.dialog.target, b.FromSession)
	}
	m, _ = press(t, m, "esc")

	for m.focus != focusDelegations {
		m, _ = press(t, m, "tab")
	}
	d := m.delegations.selected(m.st)
	if d == nil || d.SessionID == "" {
		t.Fatalf("selected delegation %+v: want one with a session", d)
	}
	m, _ = press(t, m, "x")
	if m.dialog.kind != dialogConfirm || m.dialog.target != d.SessionID {
		t.Fatalf("x in Delegations asked %v about %q, want a cancel of %q", m.dialog.kind, m.dialog.target, d.SessionID)
	}
	mustContain(t, m, "Cancel "+m.st.sessionRef(d.SessionID))
	m, _ = press(t, m, "n")

	// A pane that points at no session says so, rather than act on the
	// Sessions pane's selection, out of sight from there.
	for m.focus != focusBroadcasts {
		m, _ = press(t, m, "tab")
	}
	m, _ = press(t, m, "/")
	m = typeText(t, m, "zzzz")
	m, _ = press(t, m, "enter")
	clock := t0
	m.now = func() time.Time { return clock }
	for _, k := range []string{"m", "x"} {
		m, _ = press(t, m, k)
		if m.dialog.kind != dialogNone {
			t.Fatalf("%s with no broadcast shown opened %v for %q", k, m.dialog.kind, m.dialog.target)
		}
		// From Broadcasts, tab goes on to Plans: the key named is the one
		// that reaches Sessions.
		mustContain(t, m, "no broadcast is selected in Broadcasts: shift+tab moves on to the Sessions pane")
		clock = clock.Add(typingPause) // the refusal read: x acts as a key
	}
	m, _ = press(t, m, "shift+tab")
	if m.focus != focusSessions {
		t.Errorf("shift+tab from Broadcasts moved to %v, not Sessions", m.focus)
	}
}

// A tool result in JSON reads as a call's arguments do: member by member,
// its text with real line breaks, folded to "name: value" pairs.
func TestJSONToolResultReadsAsText(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	msgs := tuitest.DemoTranscript()
	for i := range msgs {
		if msgs[i].Role == "tool" {
			msgs[i].Content = `{"path":"notes/plan.md","content":"first line\nsecond line"}`
		}
	}
	ctl.SetTranscript("s-res1", msgs)
	m, _ = press(t, m, "down", "down", "enter")
	mustContain(t, m, "result of search_files", "path: notes/plan.md · content: first line second line")
	mustNotContain(t, m, `\n`)
	m, _ = press(t, m, "up", "up", "space")
	mustContain(t, m, "▾ expanded", "first line", "second line")
	mustNotContain(t, m, `\n`, `"path"`)
}

// A transcript's footer leaves out the keys to relatives its session has
// none of: they would only answer "no children".
func TestTranscriptFooterOffersOnlyRelativesThereAre(t *testing.T) {
	footer := func(m Model) string {
		lines := strings.Split(strings.TrimRight(plainView(m), "\n"), "\n")
		return lines[len(lines)-1]
	}
	for _, tc := range []struct {
		name      string
		keys      []string
		id        string
		want, not []string
	}{
		{"the root", []string{"enter"}, "s-root", []string{"c first child"}, []string{"p parent", "sibling"}},
		{"a leaf alone under its parent", []string{"down", "down", "down", "enter"}, "s-exp1", []string{"p parent"}, []string{"c first child", "sibling"}},
		{"the first of its siblings", []string{"down", "down", "down", "down", "down", "enter"}, "s-exp2", []string{"p parent", "] next sibling"}, []string{"c first child", "prev sibling"}},
		{"the last of its siblings", []string{"down", "down", "down", "down", "down", "down", "enter"}, "s-exp3", []string{"p parent", "[ prev sibling"}, []string{"c first child", "next sibling"}},
		{"between siblings", []string{"down", "down", "enter"}, "s-res1", []string{"p parent", "[ prev sibling", "] next sibling", "c first child"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := demoModel(t, 160, 48)
			m, _ = press(t, m, tc.keys...)
			if m.screen != screenSession || m.transcript.sessionID != tc.id {
				t.Fatalf("opened %q, want %s", m.transcript.sessionID, tc.id)
			}
			f := footer(m)
			for _, w := range tc.want {
				if !strings.Contains(f, w) {
					t.Errorf("footer %q lacks %q", f, w)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(f, n) {
					t.Errorf("footer %q offers %q", f, n)
				}
			}
		})
	}
}
