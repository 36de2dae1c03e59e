package tui

import (
	"context"
	"errors"
	"image/color"
	"log/slog"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// run executes one command and returns its message (which must not block).
func run(t *testing.T, cmd tea.Cmd) tea.Msg {
	t.Helper()
	if cmd == nil {
		t.Fatal("no command")
	}
	done := make(chan tea.Msg, 1)
	go func() { done <- cmd() }()
	select {
	case msg := <-done:
		return msg
	case <-time.After(5 * time.Second):
		t.Fatal("command did not return")
	}
	return nil
}

func TestGoalPromptStartsARun(t *testing.T) {
	ctl := tuitest.NewController(tuitest.Demo(t0))
	var gotGoal string
	m := New(Options{Theme: "dark", Start: func(_ context.Context, goal string) (event.Controller, error) {
		gotGoal = goal
		return ctl, nil
	}})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() time.Time { return t0 }, false
	m, _ = update(m, windowSize(100, 30))
	mustContain(t, m, "What should the swarm work on?")

	m, _ = press(t, m, "enter")
	mustContain(t, m, "type a goal first")
	// Typing answers the complaint; esc clears a typed goal before it quits.
	m = typeText(t, m, "a first draft")
	mustNotContain(t, m, "type a goal first")
	mustContain(t, m, "esc clear")
	m, cmd := update(m, keyMsg("esc"))
	if cmd != nil {
		t.Fatal("esc with a goal typed quit instead of clearing it")
	}
	mustNotContain(t, m, "a first draft")
	mustContain(t, m, "esc quit")
	m = typeText(t, m, "q is typed, not quit")
	m, cmd = update(m, keyMsg("enter"))
	mustContain(t, m, "starting the run…")
	m, cmd = update(m, run(t, cmd)) // startedMsg -> connect
	if gotGoal != "q is typed, not quit" {
		t.Fatalf("Start got goal %q", gotGoal)
	}
	msg := run(t, cmd).(connectedMsg)
	t.Cleanup(msg.sub.Close)
	m, _ = update(m, msg) // the listener command it returns is not run here
	mustContain(t, m, "Sessions · 11", "goal: Design and build a URL shortener")
}

func TestGoalPromptShowsStartError(t *testing.T) {
	m := New(Options{Theme: "dark", Start: func(context.Context, string) (event.Controller, error) {
		return nil, errors.New("no API key in OPENAI_API_KEY")
	}})
	t.Cleanup(m.cancel)
	m.ticks = false
	m, _ = update(m, windowSize(100, 30))
	m = typeText(t, m, "anything")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "could not start the run: no API key in OPENAI_API_KEY")
	// The person can fix things and try again; esc clears the goal, then
	// quits.
	_, msgs := press(t, m, "esc", "esc")
	if !quitSeen(msgs) {
		t.Fatal("esc at the goal prompt did not quit")
	}
}

// quietLog drops the log for a test that provokes errors on purpose.
func quietLog(t *testing.T) {
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.DiscardHandler))
	t.Cleanup(func() { slog.SetDefault(prev) })
}

func TestPanicInUpdateQuitsCleanly(t *testing.T) {
	quietLog(t)
	m, _ := demoModel(t, 100, 30)
	m.st = nil // any use of the state now panics
	_, msgs := press(t, m, "down")
	if !quitSeen(msgs) {
		t.Fatal("a panic in Update did not quit the program")
	}
	if m.crashed == nil {
		t.Fatal("the panic was not recorded for Run to return")
	}
}

func TestPanicInCommandBecomesStatus(t *testing.T) {
	quietLog(t)
	m, _ := demoModel(t, 100, 30)
	msg := run(t, guard(func() tea.Msg { panic("boom") }))
	m, _ = update(m, msg)
	mustContain(t, m, "internal error: boom")
}

func TestStatusExpiresOnTick(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	m, _ = press(t, m, "s") // skipping gives a status line
	mustContain(t, m, "skipped the question")
	now := t0
	m.now = func() time.Time { return now }
	m, _ = update(m, tickMsg{})
	mustContain(t, m, "skipped the question")
	now = t0.Add(statusTTL + time.Second)
	m, _ = update(m, tickMsg{})
	mustNotContain(t, m, "skipped the question")
}

func TestTickAdvancesSpinner(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	mustContain(t, m, unicodeGlyphs.spinner[0]+" orchestrator")
	m, _ = update(m, tickMsg{})
	mustContain(t, m, unicodeGlyphs.spinner[1]+" orchestrator")
}

func TestThemeFollowsTerminalBackground(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	dark := m.View().Content
	m.opts.Theme = "auto"
	m, _ = update(m, tea.BackgroundColorMsg{Color: color.White})
	if m.isDark {
		t.Fatal("a white background was taken for dark")
	}
	if m.View().Content == dark {
		t.Fatal("the light theme draws the same colours as the dark one")
	}
	if plainView(m) != ansiStrip(dark) {
		t.Fatal("the theme changed the text, not just the colours")
	}
	// An explicit theme is kept.
	m.opts.Theme = "dark"
	m, _ = update(m, tea.BackgroundColorMsg{Color: color.White})
	if m.isDark {
		t.Fatal("an explicit theme should ignore the terminal background")
	}
}

func TestNoColorScreenHasNoColour(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m.noColor = true
	m.applyTheme()
	for _, keys := range [][]string{nil, {"a"}, {"esc", "?"}, {"?", "b"}} {
		m, _ = press(t, m, keys...)
		if out := m.View().Content; hasColour(out) {
			t.Fatalf("colour codes with NO_COLOR after %v", keys)
		}
	}
	// Selection stays visible without colour: reverse video.
	if out := m.View().Content; !contains(out, "\x1b[7m") {
		t.Fatal("no reverse video: the selection is invisible without colour")
	}
}

func TestPasteGoesToTheDialog(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "b", "ctrl+u", "enter")
	mustContain(t, m, "type the broadcast first")
	m, _ = update(m, tea.PasteMsg{Content: "pasted text"})
	mustNotContain(t, m, "type the broadcast first") // answered by the paste
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "pasted text", Target: "all", Category: "discovery"})
	mustContain(t, m, "broadcast sent to all sessions")
}

// The dialog's input is one line: a paste of several says what became of
// its line breaks, as the goal prompt does.
func TestPastedLinesInADialogSaySo(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "b")
	m, _ = update(m, tea.PasteMsg{Content: "one line\n"})
	mustNotContain(t, m, "line breaks became spaces")
	m, _ = update(m, tea.PasteMsg{Content: " then\nline two\r\nline three"})
	mustContain(t, m, "pasted: its line breaks became spaces")
	m, _ = press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "broadcast", Text: "one line  then line two line three", Target: "all", Category: "discovery"})

	// Cleared, the text takes the note with it.
	m, _ = press(t, m, "b")
	m, _ = update(m, tea.PasteMsg{Content: "a\nb"})
	mustContain(t, m, "pasted: its line breaks became spaces")
	m, _ = press(t, m, "ctrl+u")
	mustNotContain(t, m, "line breaks became spaces")
}

// A long pasted message reaches the runtime whole: the dialog does not cut
// it (the runtime allows more than a broadcast tool's 2,000 characters, and
// refuses, with its length, what is over its own limit).
func TestLongPasteIsSentWhole(t *testing.T) {
	m, ctl := demoModel(t, 100, 30)
	m, _ = press(t, m, "down", "m")
	long := strings.Repeat("abcdefghi ", 300) + "THE END"
	m, _ = update(m, tea.PasteMsg{Content: long})
	press(t, m, "enter")
	wantCalls(t, ctl, tuitest.Call{Op: "message", SessionID: "s-plan", Text: long})
}

func TestViewSetsAltScreenAndMouse(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	v := m.View()
	if !v.AltScreen || v.MouseMode != tea.MouseModeCellMotion {
		t.Fatalf("AltScreen %v MouseMode %v", v.AltScreen, v.MouseMode)
	}
}

// The question banner shows some of the question at every width: the key
// hints give way first, then a long name of the asker.
func TestBannerKeepsTheQuestion(t *testing.T) {
	for _, tc := range []struct {
		from string
		w    int
		want string
	}{
		{"researcher (r-1)", 60, " ? researcher (r-1) asks: Which storage engine shou… 1 of 2 "},
		{"researcher (r-1)", 80, "asks: Which storage engine should the sh… 1 of 2 · a answer "},
		{"researcher (r-1)", 120, "1 of 2 · a answer · s skip · S skip all "},
		{"researcher (r-1) of the storage and analytics team", 60, " ? researcher (r-1) of t… asks: Which storage engin… 1 of 2 "},
	} {
		snap := tuitest.Demo(t0)
		snap.Questions[0].From = tc.from
		m, _ := newTestModel(t, snap, tc.w, 16)
		mustContain(t, m, tc.want)
	}
}

// At the narrowest width the dashboard takes, the footer still shows the
// way out (help and quit, or a dialog's close): keys before them give way,
// the line is not cut short of them.
func TestFooterKeepsTheWayOutAtMinimumWidth(t *testing.T) {
	for _, tc := range []struct {
		name string
		keys []string
		want []string
	}{
		{"dashboard", nil, []string{"? help", "q quit"}},
		{"session view", []string{"enter"}, []string{"? help", "q quit"}},
		{"broadcast dialog", []string{"b"}, []string{"enter send", "esc close"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := demoModel(t, minWidth, minHeight)
			m, _ = press(t, m, tc.keys...)
			rows := strings.Split(plainView(m), "\n")
			footer := rows[len(rows)-1]
			for _, w := range tc.want {
				if !strings.Contains(footer, w) {
					t.Errorf("footer %q lacks %q", footer, w)
				}
			}
			if strings.Contains(footer, "…") {
				t.Errorf("footer %q is cut", footer)
			}
		})
	}
}

// The footer offers only keys that act: while the run runs, no answer or
// skip without a question; once it has ended, no
// broadcast, no answer or skip without a question, no cancel with every
// session ended, and no message in a cancelled run. Pressed anyway, each is
// refused with a reason (TestActionsOnWhatHasEnded).
func TestFooterAfterTheRunEnds(t *testing.T) {
	footer := func(status string, ended bool, questions bool) string {
		snap := tuitest.Demo(t0)
		snap.Run.Status = status
		if ended {
			for i := range snap.Sessions {
				snap.Sessions[i].Status = "completed"
			}
		}
		if !questions {
			snap.Questions = nil
		}
		m, _ := newTestModel(t, snap, 200, 30)
		rows := strings.Split(plainView(m), "\n")
		return rows[len(rows)-1]
	}
	for _, tc := range []struct {
		status           string
		ended, questions bool
		want, not        []string
	}{
		{"running", true, true, []string{"b broadcast", "m message", "a answer", "s skip", "x cancel"}, nil},
		// While it runs, answer and skip wait for a question.
		{"running", false, false, []string{"b broadcast", "m message", "x cancel"}, []string{"a answer", "s skip"}},
		{"completed", true, false, []string{"m message", "? help", "q quit"}, []string{"broadcast", "answer", "skip", "cancel"}},
		{"cancelled", true, false, []string{"? help"}, []string{"broadcast", "message", "answer", "cancel"}},
		// A failed run's sessions left unfinished can still be cancelled,
		// so that resuming it does not take them up again.
		{"failed", false, false, []string{"m message", "x cancel"}, []string{"broadcast", "answer"}},
		// A question still open after the end can be answered.
		{"completed", true, true, []string{"a answer", "s skip"}, []string{"broadcast", "cancel"}},
	} {
		f := footer(tc.status, tc.ended, tc.questions)
		for _, w := range tc.want {
			if !strings.Contains(f, w) {
				t.Errorf("%s run (sessions ended %v, questions %v): footer %q lacks %q", tc.status, tc.ended, tc.questions, f, w)
			}
		}
		for _, w := range tc.not {
			if strings.Contains(f, w) {
				t.Errorf("%s run (sessions ended %v, questions %v): footer %q offers %q", tc.status, tc.ended, tc.questions, f, w)
			}
		}
	}
}

// Typing past the width of a dialog's input, with an emoji sequence in
// sight that is shown wider than the input measures it, the person still
// sees the last characters they typed: the start of the text in sight
// gives way, not its end.
func TestDialogInputKeepsWhatWasJustTyped(t *testing.T) {
	m, _ := demoModel(t, 80, 24)
	m, _ = press(t, m, "b")
	m = typeText(t, m, strings.Repeat("word ", 10)+"👩\u200d💻 and 🇫🇷 then the end of it")
	row := ""
	for _, r := range strings.Split(plainView(m), "\n") {
		if strings.Contains(r, "> ") {
			row = r
		}
	}
	if !strings.Contains(row, "the end of it ") {
		t.Fatalf("input row %q does not end with what was typed last", row)
	}
	if !strings.Contains(row, "👩💻 and [FR]") {
		t.Fatalf("input row %q lost the emoji in sight", row)
	}
}

// The cursor after the text stays in sight too when the text in sight is
// cut at its start: with a space typed last (the input's padding is
// spaces as well), and with a cut that falls inside a wide character.
func TestDialogInputKeepsItsCursor(t *testing.T) {
	for _, tc := range []struct{ name, text, last string }{
		{"a space typed last", strings.Repeat("word ", 10) + "👩\u200d💻 and 🇫🇷 then the end of it ", "the end of it "},
		{"a wide character astride the cut", strings.Repeat("👩\u200d💻", 25) + "x", "👩💻x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := demoModel(t, 80, 24)
			m, _ = press(t, m, "b")
			m = typeText(t, m, tc.text)
			in := &m.dialog.input
			room := cellWidth(in.Prompt) + in.Width() + 1
			shown := ansi.Strip(inputView(in))
			if w := ansi.StringWidth(shown); w > room {
				t.Errorf("input %q is %d cells wide, over its %d", shown, w, room)
			}
			_, cursor, ok := strings.Cut(shown, tc.last)
			if !ok {
				t.Fatalf("input %q does not show %q, typed last", shown, tc.last)
			}
			if cursor == "" {
				t.Errorf("input %q ends at %q, typed last: the cursor after it is cut", shown, tc.last)
			}
		})
	}
}

func TestTerminalProblem(t *testing.T) {
	for _, tc := range []struct {
		tty  bool
		term string
		want error
	}{
		{false, "xterm-256color", ErrNoTerminal},
		{false, "dumb", ErrNoTerminal},
		{true, "dumb", ErrDumbTerminal},
		{true, "xterm", nil},
		{true, "", nil},
	} {
		if got := terminalProblem(tc.tty, tc.term); got != tc.want {
			t.Errorf("terminalProblem(%v, %q) = %v, want %v", tc.tty, tc.term, got, tc.want)
		}
	}
}

// On a light background the prompt of a text field, its cursor and the
// footer's help are drawn in colours that show on white, not in the
// terminal's white or the pale greys meant for a dark background.
func TestLightThemeShowsOnWhite(t *testing.T) {
	s := newStyles(false, false, false)
	light := func(what string, c color.Color) {
		t.Helper()
		if c == nil {
			t.Errorf("%s has no colour", what)
			return
		}
		r, g, b, _ := c.RGBA()
		// Relative brightness on 0..1; #a8a8a8 (a separator) is 0.66.
		if y := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(b)) / 0xffff; y > 0.7 {
			t.Errorf("%s is drawn at brightness %.2f, too pale for a white background", what, y)
		}
	}
	light("the focused prompt", s.input.Focused.Prompt.GetForeground())
	light("the blurred prompt", s.input.Blurred.Prompt.GetForeground())
	light("the cursor", s.input.Cursor.Color)
	light("a help key", s.help.ShortKey.GetForeground())
	light("a help description", s.help.ShortDesc.GetForeground())
	light("a help separator", s.help.ShortSeparator.GetForeground())
}

// A pane too short for its rows counts those out of sight in its title,
// above and below, as Broadcasts counts older and newer ones.
func TestShortPanesCountTheRowsOutOfSight(t *testing.T) {
	m, _ := demoModel(t, 80, 24)
	mustContain(t, m, "Sessions · 11 · 5 running · ↓ 7 below", "Plans · orchestrator · s-root · ↓ 4 below")
	m, _ = press(t, m, "G")
	mustContain(t, m, "Sessions · 11 · 5 running · ↑ 7 above")
	mustNotContain(t, m, "below · 2 ask you")
	m, _ = demoModel(t, 160, 48)
	mustNotContain(t, m, "below", "above")
}

// Keys typed while a run starts from the goal prompt, and while its
// snapshot is on its way, are held and act once the dashboard is up: a
// broadcast typed ahead reaches the run instead of being lost.
func TestKeysTypedWhileTheRunStartsAreHeld(t *testing.T) {
	ctl := tuitest.NewController(tuitest.Demo(t0))
	m := New(Options{Theme: "dark", Start: func(context.Context, string) (event.Controller, error) { return ctl, nil }})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() time.Time { return t0 }, false
	m, _ = update(m, windowSize(100, 30))
	m = typeText(t, m, "a goal")
	m, start := update(m, keyMsg("enter"))
	ahead := func(keys ...string) {
		for _, k := range keys {
			var cmd tea.Cmd
			if m, cmd = update(m, keyMsg(k)); cmd != nil {
				t.Fatalf("%q typed while busy acted", k)
			}
		}
	}
	ahead("b", "h") // while starting
	m, connect := update(m, run(t, start))
	ahead("i", "enter") // while connecting
	msg := run(t, connect).(connectedMsg)
	t.Cleanup(msg.sub.Close)
	// The command it returns (the listener, and the send) is not run here:
	// the held keys have opened the broadcast dialog, typed and sent.
	m, _ = update(m, msg)
	if d := m.dialog; d.kind != dialogBroadcast || !d.sending || d.input.Value() != "hi" || len(m.held) != 0 {
		t.Errorf("dialog %v (sending %v) holding %q, %d keys held; want the broadcast typed while the run started, sent",
			d.kind, d.sending, d.input.Value(), len(m.held))
	}
}

// Keys typed while a dialog's send is in flight are held, in order, and
// act once it is done: a second message typed right after the first is
// sent too, and its letters are not read as commands. When the send fails
// they are dropped, and the status line says so: typed on, they would land
// in the text kept for a retry.
func TestKeysTypedWhileSendingAreHeld(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	m, _ = press(t, m, "m")
	m = typeText(t, m, "one")
	m, send := update(m, keyMsg("enter"))
	if !m.dialog.sending {
		t.Fatal("enter did not send")
	}
	for _, k := range append(append([]string{"m"}, strings.Split("Sure two", "")...), "enter") {
		var cmd tea.Cmd
		if m, cmd = update(m, keyMsg(k)); cmd != nil {
			t.Fatalf("%q typed while sending acted", k)
		}
	}
	m, _ = drive(t, m, send)
	calls := ctl.Calls()
	if len(calls) != 2 || calls[0].Text != "one" || calls[1].Text != "Sure two" || calls[1].SessionID != calls[0].SessionID {
		t.Fatalf("calls %+v, want both messages to the same session", calls)
	}
	if m.dialog.kind != dialogNone {
		t.Errorf("dialog %v open after both sends", m.dialog.kind)
	}

	ctl.SetError(errors.New("the run has ended"))
	m, _ = press(t, m, "m")
	m = typeText(t, m, "three")
	m, send = update(m, keyMsg("enter"))
	for _, k := range []string{"x", "y"} {
		m, _ = update(m, keyMsg(k))
	}
	m, _ = drive(t, m, send)
	if v := m.dialog.input.Value(); m.dialog.kind != dialogMessage || v != "three" {
		t.Errorf("after a failed send: dialog %v holding %q, want the message dialog with \"three\"", m.dialog.kind, v)
	}
	mustContain(t, m, "2 keys typed meanwhile were dropped")

	// A failure that comes back before the rest of the burst is typed:
	// that rest is dropped too, not added to the text kept for a retry
	// (its enter would send "fourmfive").
	m = afterAPause(m)
	m, _ = press(t, m, "esc", "m", "ctrl+u") // the draft of "three" cleared
	m = typeText(t, m, "four")
	m, _ = press(t, m, "enter")
	m = typeText(t, m, "mfive")
	m, _ = press(t, m, "enter")
	if v := m.dialog.input.Value(); m.dialog.kind != dialogMessage || v != "four" {
		t.Errorf("after a failed send and keys typed on: dialog %v holding %q, want \"four\"", m.dialog.kind, v)
	}
	mustContain(t, m, "6 keys typed right after it were dropped")
	// After a pause the text is the person's again.
	ctl.SetError(nil)
	m, _ = press(t, afterAPause(m), "enter")
	if calls := ctl.Calls(); len(calls) != 3 || calls[2].Text != "four" {
		t.Errorf("calls %+v, want the retried \"four\" last", calls)
	}
}

// Where the answer dialog's footer does not fit, skip all goes before
// skip: it asks before it acts, and skip is the one a person looks for.
func TestNarrowAnswerFooterKeepsSkip(t *testing.T) {
	for _, tc := range []struct {
		keys []string
	}{{[]string{"a"}}, {[]string{"a", "ctrl+s", "a"}}} { // the second with a remembered answer
		m, _ := demoModel(t, 60, 16)
		m, _ = press(t, m, tc.keys...)
		lines := strings.Split(strings.TrimRight(plainView(m), "\n"), "\n")
		footer := lines[len(lines)-1]
		if !strings.Contains(footer, "ctrl+s skip") || !strings.Contains(footer, "esc close") || !strings.Contains(footer, "enter") {
			t.Errorf("after %v the footer reads %q, want send, skip and close", tc.keys, footer)
		}
	}
}
