package tui

import (
	"fmt"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/golden"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// openDemoBroadcast focuses the feed, moves up from the newest broadcast by
// up rows and presses enter.
func openDemoBroadcast(t *testing.T, m Model, up int) Model {
	t.Helper()
	m, _ = press(t, m, "tab")
	for range up {
		m, _ = press(t, m, "up")
	}
	m, _ = press(t, m, "enter")
	if !m.detail.open {
		t.Fatalf("enter on a broadcast opened no sheet:\n%s", plainView(m))
	}
	return m
}

// sheetText is the text inside the sheet's frame, row by row, without the
// borders.
func sheetText(t *testing.T, m Model) []string {
	t.Helper()
	l, _ := m.layout()
	if l.sheet.empty() {
		t.Fatalf("no sheet on screen:\n%s", plainView(m))
	}
	lines := strings.Split(plainView(m), "\n")
	var rows []string
	for _, line := range lines[l.sheet.y+1 : l.sheet.y+l.sheet.h-1] {
		r := []rune(line)
		rows = append(rows, strings.TrimSpace(string(r[1:len(r)-1])))
	}
	return rows
}

// A feed row is cut to the pane; enter shows the broadcast in full with
// who sent it to whom, and at the smallest size the moving keys scroll to
// its end.
func TestBroadcastSheetShowsTheWholeBroadcast(t *testing.T) {
	const text = "SQLite in WAL mode handles 5k writes/s on this box; Postgres is not needed for v1."
	m, _ := demoModel(t, 100, 30)
	if strings.Contains(plainView(m), text) {
		t.Fatal("the feed already shows the whole text: this test would prove nothing")
	}
	m = openDemoBroadcast(t, m, 4)
	mustContain(t, m, "┏━ Broadcast ━",
		"time:     2026-01-26 19:29:20 · 40s ago",
		"from:     researcher (r-1) · s-res1",
		"to:       all: the siblings and children of researcher (r-1)",
		"category: discovery · broadcast",
		"reached:  4 sessions",
		text,
		"received by planner (plan), researcher (r-2), orchestrator (d-1), explorer (x-1)",
		"esc close", "enter open sender")
	// The pane marks the one open.
	mustContain(t, m, "┃›researcher (r-1) → all [discovery]")

	m, _ = demoModel(t, 60, 16)
	m = openDemoBroadcast(t, m, 4)
	checkFrame(t, plainView(m), 60, 16)
	rows := sheetText(t, m)
	if !strings.HasPrefix(rows[0], "time:") || !strings.HasPrefix(rows[len(rows)-1], "1-6 of 12 · ↓ more · esc closes this") {
		t.Fatalf("60x16: the sheet does not start at the top with where it is:\n%s", plainView(m))
	}
	mustContain(t, m, "↑/k ↓/j scroll", "esc close")
	mustNotContain(t, m, "Postgres is not needed")

	// Line by line, every line of it comes into sight, up to the end.
	seen := strings.Join(rows[:len(rows)-1], "\n")
	for range 12 {
		m, _ = press(t, m, "j")
		rows = sheetText(t, m)
		seen += "\n" + rows[len(rows)-2]
	}
	if !strings.HasPrefix(rows[len(rows)-1], "7-12 of 12 · ↑ more") {
		t.Fatalf("j did not reach the end:\n%s", plainView(m))
	}
	flat := strings.Join(strings.Fields(seen), " ")
	for _, want := range []string{"to: all: the siblings and children of researcher (r-1)", "category: discovery · broadcast",
		"reached: 4 sessions", text, "received by planner (plan), researcher (r-2), orchestrator (d-1), explorer (x-1)"} {
		if !strings.Contains(flat, want) {
			t.Errorf("scrolling through never showed %q; it showed:\n%s", want, seen)
		}
	}

	m, _ = press(t, m, "home")
	if rows = sheetText(t, m); !strings.HasPrefix(rows[0], "time:") {
		t.Fatalf("home did not go back to the top:\n%s", plainView(m))
	}
	m, _ = press(t, m, "pgdown", "pgdown")
	if rows = sheetText(t, m); !strings.HasPrefix(rows[len(rows)-1], "7-12 of 12") {
		t.Fatalf("pgdown did not reach the end:\n%s", plainView(m))
	}
	m, _ = press(t, m, "k", "k")
	if rows = sheetText(t, m); !strings.HasPrefix(rows[len(rows)-1], "5-10 of 12 · ↑↓ more") {
		t.Fatalf("k did not scroll back:\n%s", plainView(m))
	}

	m, _ = press(t, m, "esc")
	mustNotContain(t, m, "┏━ Broadcast ━")
	if m.focus != focusBroadcasts || m.broadcasts.selected(&m.st.feed).ID != "b-3" {
		t.Fatal("closing the sheet lost the feed's focus or selection")
	}
}

// A long message keeps its own line breaks, wraps to the width and can be
// read to its last word at the smallest size and at a large one, the wheel
// scrolling it too; the question banner and an error on the status line
// stay on screen with it.
func TestBroadcastSheetLongHumanMessage(t *testing.T) {
	var words []string
	for i := range 60 {
		words = append(words, fmt.Sprintf("word%02d", i))
	}
	msg := "First paragraph: " + strings.Join(words[:30], " ") + ".\nSecond paragraph: " + strings.Join(words[30:], " ") + " THE-END"
	b := ev(event.BroadcastSent, "")
	b.Broadcast = &event.BroadcastInfo{ID: "b-long", Kind: event.KindHuman, From: "human", Category: "warning",
		Target: "s-res2", Message: msg, Recipients: []string{"s-res2", "s-exp2", "s-exp3"}, Timestamp: t0}

	for _, size := range [][2]int{{60, 16}, {160, 48}} {
		m, _ := demoModel(t, size[0], size[1])
		m = apply(m, b)
		m.setStatus("the model provider refused the request: rate limited; the run retries in a minute", true)
		m = openDemoBroadcast(t, m, 0)
		mustContain(t, m, "? researcher (r-1", "✗ the model provider refused", "┏━ Broadcast ━")
		checkFrame(t, plainView(m), size[0], size[1])
		var seen []string
		for range 40 {
			seen = append(seen, sheetText(t, m)...)
			l, _ := m.layout()
			m, _ = update(m, tea.MouseWheelMsg{X: 5, Y: l.sheet.y + 2, Button: tea.MouseWheelDown})
		}
		all := strings.Join(seen, "\n")
		for _, want := range []string{"from:     human", "to:       subtree of researcher (r-2) · s-res2",
			"category: warning · human broadcast", "reached:  3 sessions", "First paragraph: word00", "Second paragraph: word30", "THE-END"} {
			if !strings.Contains(all, want) {
				t.Errorf("%dx%d: never showed %q:\n%s", size[0], size[1], want, all)
			}
		}
		for _, line := range seen {
			if strings.Contains(line, "word29.") && strings.Contains(line, "Second") {
				t.Errorf("%dx%d: the message's line break was lost: %q", size[0], size[1], line)
				break
			}
		}
		// A person's broadcast has no transcript to open.
		mustNotContain(t, m, "open sender")
		m, _ = press(t, m, "enter")
		if m.screen != screenDashboard || !m.detail.open {
			t.Fatalf("%dx%d: enter on a person's broadcast left the sheet", size[0], size[1])
		}
		mustContain(t, m, "a person sent this: there is no transcript to open")
	}
}

// Enter in the sheet goes on to the sender's transcript; q asks to quit as
// from the `?` sheet, and staying comes back to the sheet; the keys of the
// panes behind do nothing.
func TestBroadcastSheetKeys(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	m = openDemoBroadcast(t, m, 4)
	m, _ = press(t, m, "tab", "b", "/")
	if !m.detail.open || m.dialog.kind != dialogNone || m.broadcasts.filtering || m.focus != focusBroadcasts {
		t.Fatal("a key of the panes behind acted while the sheet was open")
	}
	m, _ = press(t, m, "q")
	mustContain(t, m, "Quit?")
	m, _ = press(t, m, "n")
	mustContain(t, m, "┏━ Broadcast ━", "researcher (r-1) · s-res1")
	m, _ = press(t, m, "enter")
	if m.screen != screenSession || m.transcript.sessionID != "s-res1" || m.detail.open {
		t.Fatalf("enter did not open the sender's transcript:\n%s", plainView(m))
	}
	// Esc comes back to the sheet, over the Broadcasts pane, with the
	// tree on the sender.
	m, _ = press(t, m, "esc")
	if m.screen != screenDashboard || !m.detail.open || m.focus != focusBroadcasts || m.sessions.selected != "s-res1" {
		t.Fatalf("esc from the sender's transcript: screen %d, sheet open %v, focus %d, selected %q",
			m.screen, m.detail.open, m.focus, m.sessions.selected)
	}
	mustContain(t, m, "┏━ Broadcast ━", "researcher (r-1) · s-res1")
}

// The sheet holds what it opened: new broadcasts do not move the marked
// row, the bounded feed dropping it does not empty the sheet, and closing
// it resumes following the feed when it followed before.
func TestBroadcastSheetKeepsWhatItOpened(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m = openDemoBroadcast(t, m, 0) // the newest, b-7, with the feed following
	more := func(n int, prefix string) []event.Event {
		out := make([]event.Event, n)
		for i := range out {
			out[i] = ev(event.BroadcastSent, "s-root")
			out[i].Broadcast = &event.BroadcastInfo{ID: fmt.Sprintf("%s-%d", prefix, i), Kind: event.KindAnnounce, From: "orchestrator",
				FromSession: "s-root", Target: "all", Message: fmt.Sprintf("%s note %d", prefix, i)}
		}
		return out
	}
	m = apply(m, more(3, "new")...)
	if b := m.broadcasts.selected(&m.st.feed); b == nil || b.ID != "b-7" {
		t.Fatalf("new broadcasts moved the selection off the one open: %+v", b)
	}
	mustContain(t, m, "┃›19:29:55 executor (e-1) → siblings [blocker]")
	m, _ = press(t, m, "esc")
	if b := m.broadcasts.selected(&m.st.feed); b == nil || b.ID != "new-2" {
		t.Fatalf("closing the sheet did not resume following the feed: %+v", b)
	}

	// Open the oldest, then let far more arrive than the feed keeps.
	m, _ = press(t, m, "home", "enter")
	mustContain(t, m, "Plan is up: 6 tasks, storage and analytics research run in parallel.")
	for range 13 {
		m = apply(m, more(1000, "flood")...)
	}
	if m.st.feed.at(0) != nil || m.st.feed.items[0].ID == "b-1" {
		t.Fatal("the feed still holds the first broadcast: this test would prove nothing")
	}
	mustContain(t, m, "┏━ Broadcast ━", "from:     planner (plan) · s-plan", "to:       siblings of planner (plan)",
		"Plan is up: 6 tasks, storage and analytics research run in parallel.")
}

// A click on a broadcast focuses the feed and selects it, which enter then
// opens; while the sheet is open the mouse does nothing behind it.
func TestClickSelectsBroadcast(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	l, _ := m.layout()
	y := -1
	for i, line := range strings.Split(plainView(m), "\n") {
		if strings.Contains(line, "→ r-2 [message, no-reply]") {
			y = i
		}
	}
	if y < l.broadcasts.y {
		t.Fatalf("b-4 is not in the feed:\n%s", plainView(m))
	}
	// Its second row, the text, selects it as well as the first.
	m, _ = update(m, tea.MouseClickMsg{X: l.broadcasts.x + 5, Y: y + 1, Button: tea.MouseLeft})
	if m.focus != focusBroadcasts || m.broadcasts.selected(&m.st.feed).ID != "b-4" {
		t.Fatalf("the click selected %s", m.broadcasts.selected(&m.st.feed).ID)
	}
	mustContain(t, m, "┃›orchestrator → r-2 [message, no-reply]")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "┏━ Message ━", "to:       researcher (r-2) · s-res2", "category: none · direct message, no-reply")
	m, _ = update(m, tea.MouseClickMsg{X: l.sessions.x + 5, Y: l.sessions.y + 3, Button: tea.MouseLeft})
	l, _ = m.layout()
	m, _ = update(m, tea.MouseWheelMsg{X: l.broadcasts.x + 5, Y: l.broadcasts.y + 1, Button: tea.MouseWheelDown})
	if m.focus != focusBroadcasts || !m.detail.open || m.broadcasts.selected(&m.st.feed).ID != "b-4" {
		t.Fatal("the mouse acted behind the open sheet")
	}
}

// TestGoldenBroadcastSheet is the sheet on the demo's long broadcast at a
// common size (all of it) and the smallest (scrolled to its end).
func TestGoldenBroadcastSheet(t *testing.T) {
	for _, tc := range []struct {
		name string
		w, h int
		keys []string
	}{
		{"100x30", 100, 30, nil},
		{"60x16", 60, 16, []string{"end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := demoModel(t, tc.w, tc.h)
			m = openDemoBroadcast(t, m, 4)
			m, _ = press(t, m, tc.keys...)
			out := plainView(m)
			checkFrame(t, out, tc.w, tc.h)
			golden.RequireEqual(t, out)
		})
	}
}

// The sheet breaks its lines between words: a label with a hyphen in it,
// in the sender's name or the list of who received it, stays whole on one
// line where the line runs out right after its hyphen.
func TestBroadcastSheetKeepsLabelsWhole(t *testing.T) {
	snap := tuitest.Demo(t0)
	for i := range snap.Sessions {
		switch snap.Sessions[i].ID {
		case "s-res1":
			snap.Sessions[i].Label = "storage-engines-1"
		case "s-res2":
			snap.Sessions[i].Label = "analytics-survey"
		}
	}
	snap.Broadcasts[2].From = "researcher (storage-engines-1)"
	m, _ := newTestModel(t, snap, 60, 40)
	m = openDemoBroadcast(t, m, 4)
	rows := sheetText(t, m)
	all := strings.Join(rows, "\n")
	for _, want := range []string{"(analytics-survey),", "researcher (storage-engines-1) · s-res1"} {
		if !strings.Contains(all, want) {
			t.Errorf("%q is not whole on one line of the sheet:\n%s", want, all)
		}
	}
	for _, r := range rows {
		if strings.HasSuffix(r, "-") {
			t.Errorf("a line of the sheet ends inside a word: %q\n%s", r, all)
		}
	}
}

// A sender without a label is named with its id already: the sheet does
// not repeat it.
func TestBroadcastSheetNamesAnUnlabelledSenderOnce(t *testing.T) {
	m, _ := demoModel(t, 100, 30)
	e := ev(event.BroadcastSent, "s-root")
	e.Broadcast = &event.BroadcastInfo{ID: "b-99", Kind: event.KindAnnounce, From: "orchestrator (s-root)", FromSession: "s-root",
		Category: "context", Target: "all", Message: "checklist started", Timestamp: t0}
	m = apply(m, e)
	m = openDemoBroadcast(t, m, 0)
	mustContain(t, m, "from:     orchestrator (s-root)")
	mustNotContain(t, m, "orchestrator (s-root) · s-root")
}
