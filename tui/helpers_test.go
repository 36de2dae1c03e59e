package tui

import (
	"strings"
	"testing"
	"time"
	"unicode"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// t0 is the fixed clock of every test.
var t0 = time.Date(2026, 1, 26, 19, 30, 0, 0, time.UTC)

// newTestModel returns a dashboard connected to a fake controller holding
// snap, sized w×h, with a fixed clock and no timers. The event listener is
// not started: tests feed eventsMsg to Update themselves.
func newTestModel(t testing.TB, snap event.Snapshot, w, h int) (Model, *tuitest.Controller) {
	t.Helper()
	ctl := tuitest.NewController(snap)
	return startTestModel(t, ctl, Options{}, w, h), ctl
}

// readOnlyModel is newTestModel on a stored run opened read-only (view).
func readOnlyModel(t testing.TB, snap event.Snapshot, w, h int) (Model, *tuitest.Controller) {
	t.Helper()
	ctl := tuitest.NewController(snap)
	ctl.SetReadOnly(true)
	return startTestModel(t, ctl, Options{}, w, h), ctl
}

// startTestModel makes the dashboard of newTestModel on ctl, with opts
// (the controller and theme are set here).
func startTestModel(t testing.TB, ctl *tuitest.Controller, opts Options, w, h int) Model {
	opts.Controller, opts.Theme = ctl, "dark"
	m := New(opts)
	t.Cleanup(m.cancel)
	m.now = func() time.Time { return t0 }
	m.loc = time.UTC
	m.ticks = false
	m, _ = update(m, tea.WindowSizeMsg{Width: w, Height: h})
	return connect(m, ctl)
}

// connect applies what connectCmd would deliver, without a subscription, so
// no listener runs.
func connect(m Model, ctl *tuitest.Controller) Model {
	m, _ = update(m, connectedMsg{ctl: ctl, snap: ctl.Snapshot(), readOnly: ctl.ReadOnly()})
	return m
}

func demoModel(t testing.TB, w, h int) (Model, *tuitest.Controller) {
	t.Helper()
	return newTestModel(t, tuitest.Demo(t0), w, h)
}

func update(m Model, msg tea.Msg) (Model, tea.Cmd) {
	next, cmd := m.Update(msg)
	return next.(Model), cmd
}

// drive runs cmd as the program would, feeding every message it produces
// back into Update (and so on), and returns the model and the messages seen.
// Commands must be quick: tests never start timers or the listener.
func drive(t testing.TB, m Model, cmd tea.Cmd) (Model, []tea.Msg) {
	t.Helper()
	var seen []tea.Msg
	queue := []tea.Cmd{cmd}
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 100 {
			t.Fatal("drive: too many commands; a command loops")
		}
		c := queue[0]
		queue = queue[1:]
		if c == nil {
			continue
		}
		done := make(chan tea.Msg, 1)
		go func() { done <- c() }()
		var msg tea.Msg
		select {
		case msg = <-done:
		case <-time.After(5 * time.Second):
			t.Fatal("drive: a command did not return")
		}
		if msg == nil {
			continue
		}
		if batch, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, batch...)
			continue
		}
		seen = append(seen, msg)
		if _, ok := msg.(tea.QuitMsg); ok {
			continue
		}
		var next tea.Cmd
		m, next = update(m, msg)
		queue = append(queue, next)
	}
	return m, seen
}

// press sends keys (Bubble Tea key names, one per argument) and drives the
// commands they return.
func press(t testing.TB, m Model, keys ...string) (Model, []tea.Msg) {
	t.Helper()
	var all []tea.Msg
	for _, k := range keys {
		var cmd tea.Cmd
		m, cmd = update(m, keyMsg(k))
		var seen []tea.Msg
		m, seen = drive(t, m, cmd)
		all = append(all, seen...)
	}
	return m, all
}

// typeText types text into whatever has the keyboard.
func typeText(t testing.TB, m Model, text string) Model {
	t.Helper()
	for _, r := range text {
		m, _ = press(t, m, string(r))
	}
	return m
}

func keyMsg(s string) tea.KeyPressMsg {
	switch s {
	case "enter":
		return tea.KeyPressMsg{Code: tea.KeyEnter}
	case "esc":
		return tea.KeyPressMsg{Code: tea.KeyEscape}
	case "tab":
		return tea.KeyPressMsg{Code: tea.KeyTab}
	case "shift+tab":
		return tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift}
	case "space":
		return tea.KeyPressMsg{Code: tea.KeySpace, Text: " "}
	case "up":
		return tea.KeyPressMsg{Code: tea.KeyUp}
	case "down":
		return tea.KeyPressMsg{Code: tea.KeyDown}
	case "pgup":
		return tea.KeyPressMsg{Code: tea.KeyPgUp}
	case "pgdown":
		return tea.KeyPressMsg{Code: tea.KeyPgDown}
	case "home":
		return tea.KeyPressMsg{Code: tea.KeyHome}
	case "end":
		return tea.KeyPressMsg{Code: tea.KeyEnd}
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "delete":
		return tea.KeyPressMsg{Code: tea.KeyDelete}
	case "left":
		return tea.KeyPressMsg{Code: tea.KeyLeft}
	case "right":
		return tea.KeyPressMsg{Code: tea.KeyRight}
	}
	if rest, ok := strings.CutPrefix(s, "ctrl+"); ok {
		return tea.KeyPressMsg{Code: []rune(rest)[0], Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	if unicode.IsUpper(r) {
		return tea.KeyPressMsg{Code: unicode.ToLower(r), ShiftedCode: r, Text: s, Mod: tea.ModShift}
	}
	return tea.KeyPressMsg{Code: r, Text: s}
}

// plainView is what the person sees: the frame without styles.
func plainView(m Model) string { return ansi.Strip(m.View().Content) }

func mustContain(t testing.TB, m Model, want ...string) {
	t.Helper()
	s := plainView(m)
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Fatalf("screen does not show %q:\n%s", w, s)
		}
	}
}

func mustNotContain(t testing.TB, m Model, bad ...string) {
	t.Helper()
	s := plainView(m)
	for _, w := range bad {
		if strings.Contains(s, w) {
			t.Fatalf("screen shows %q but should not:\n%s", w, s)
		}
	}
}

// ev builds an event for tests.
func ev(typ event.Type, sessionID string) event.Event {
	return event.Event{Type: typ, SessionID: sessionID, Time: t0, RunID: "r-7c1e"}
}

// runFinished is the demo run's run.finished with status and reason.
func runFinished(status, reason string) event.Event {
	fin := ev(event.RunFinished, "")
	run := tuitest.Demo(t0).Run
	run.Status, run.Error = status, reason
	fin.Run = &run
	return fin
}

// apply feeds events to the model as one coalesced batch, numbering them
// after everything already applied.
func apply(m Model, events ...event.Event) Model {
	for i := range events {
		if events[i].Seq == 0 && events[i].Type != event.MessageDelta {
			events[i].Seq = m.st.lastSeq + int64(i) + 1
		}
	}
	m, _ = update(m, eventsMsg{events: events})
	return m
}

func windowSize(w, h int) tea.WindowSizeMsg { return tea.WindowSizeMsg{Width: w, Height: h} }

func deltaEvent(sessionID, content string, reset bool) event.Event {
	e := ev(event.MessageDelta, sessionID)
	e.Delta = &event.DeltaInfo{Content: content, Reset: reset}
	return e
}

type timeT = time.Time

func ansiStrip(s string) string { return ansi.Strip(s) }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// demoWithResearchLabels is the demo run with its two researchers labelled
// as the scripted model labels them, research-1 and research-2: names that
// a cut to the same width makes alike.
func demoWithResearchLabels() event.Snapshot {
	snap := tuitest.Demo(t0)
	for i := range snap.Sessions {
		switch snap.Sessions[i].ID {
		case "s-res1":
			snap.Sessions[i].Label = "research-1"
		case "s-res2":
			snap.Sessions[i].Label = "research-2"
		}
	}
	return snap
}

// afterAPause moves the model's clock on by typingPause: what the person
// types next is not part of the burst before it (see dropTyping, and a
// dialog's dropUntil).
func afterAPause(m Model) Model {
	at := m.now().Add(typingPause)
	m.now = func() time.Time { return at }
	return m
}
