package tui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// helpRows is the text of the `?` sheet's rows on screen, between its
// borders, the closing line included.
func helpRows(t *testing.T, m Model) []string {
	t.Helper()
	var rows []string
	in := false
	for _, l := range strings.Split(plainView(m), "\n") {
		switch {
		case strings.HasPrefix(l, "┏━ Keys "):
			in = true
		case in && strings.HasPrefix(l, "┗"):
			return rows
		case in:
			rows = append(rows, strings.TrimSpace(strings.Trim(l, "┃")))
		}
	}
	t.Fatalf("no Keys sheet on screen:\n%s", plainView(m))
	return nil
}

const lastHelpLine = "TOKENS are the session's and everything under it."

// At the smallest size the sheet shows a window of the keys and where it
// is; the moving keys scroll it to its last line and back, and leave the
// panes behind it alone.
func TestHelpSheetScrollsAtTheSmallestSize(t *testing.T) {
	m, _ := demoModel(t, 60, 16)
	selected := m.sessions.selected
	m, _ = press(t, m, "?")
	rows := helpRows(t, m)
	if rows[0] != "Move                    Panes" || !strings.HasPrefix(rows[len(rows)-1], "1-6 of 29 · ↓ more · ? or esc closes this") {
		t.Fatalf("the sheet opens elsewhere than its top:\n%s", plainView(m))
	}

	// Line by line to the end, which stops there.
	for range 40 {
		m, _ = press(t, m, "j")
	}
	rows = helpRows(t, m)
	if rows[len(rows)-2] != lastHelpLine || !strings.HasPrefix(rows[len(rows)-1], "24-29 of 29 · ↑ more") {
		t.Fatalf("j did not reach the last line:\n%s", plainView(m))
	}
	if m.sessions.selected != selected {
		t.Error("scrolling the sheet moved the selection behind it")
	}

	m, _ = press(t, m, "home")
	if rows = helpRows(t, m); rows[0] != "Move                    Panes" {
		t.Fatalf("home did not go back to the top:\n%s", plainView(m))
	}
	m, _ = press(t, m, "pgdown")
	if rows = helpRows(t, m); !strings.HasPrefix(rows[len(rows)-1], "6-11 of 29 · ↑↓ more") {
		t.Fatalf("pgdown did not move a page less a line:\n%s", plainView(m))
	}
	m, _ = press(t, m, "end")
	if rows = helpRows(t, m); rows[len(rows)-2] != lastHelpLine {
		t.Fatalf("end did not reach the last line:\n%s", plainView(m))
	}
	m, _ = press(t, m, "pgup", "k")
	if rows = helpRows(t, m); !strings.HasPrefix(rows[len(rows)-1], "18-23 of 29") {
		t.Fatalf("pgup and k did not scroll back:\n%s", plainView(m))
	}

	// Closed and opened again, it starts at the top.
	m, _ = press(t, m, "esc", "?")
	if rows = helpRows(t, m); rows[0] != "Move                    Panes" {
		t.Fatalf("the sheet reopened scrolled:\n%s", plainView(m))
	}
}

// Every key of the sheet can be read whole at every size: columns that do
// not fit side by side go one under another, and scrolling shows them all.
func TestHelpSheetShowsEveryKeyWhole(t *testing.T) {
	for _, size := range [][2]int{{60, 16}, {80, 24}, {100, 30}, {160, 48}} {
		m, _ := demoModel(t, size[0], size[1])
		m, _ = press(t, m, "?")
		seen := map[string]bool{}
		for range 40 {
			for _, r := range helpRows(t, m) {
				seen[r] = true
			}
			m, _ = press(t, m, "down")
		}
		all := strings.Join(mapKeys(seen), "\n")
		for _, c := range m.keys.helpColumns() {
			if !strings.Contains(all, c.title) {
				t.Errorf("%dx%d: heading %q never shown", size[0], size[1], c.title)
			}
			for _, b := range c.keys {
				h := b.Help()
				if !strings.Contains(all, h.Key+" ") {
					t.Errorf("%dx%d: key %s never shown", size[0], size[1], h.Key)
				}
				// A long description wraps within its column.
				for _, w := range strings.Fields(h.Desc) {
					if !strings.Contains(all, w) {
						t.Errorf("%dx%d: %q of %s %s never shown", size[0], size[1], w, h.Key, h.Desc)
					}
				}
			}
		}
		if strings.Contains(all, "…") {
			t.Errorf("%dx%d: the sheet cuts a line:\n%s", size[0], size[1], all)
		}
	}
}

func mapKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// A key that does something different in each dialog is one row naming
// each; rebound apart, each has its own row.
func TestHelpSheetDialogKeysOnce(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "?")
	if n := strings.Count(plainView(m), "tab     target / no-reply /"); n != 1 {
		t.Fatalf("the dialogs' tab is on %d rows:\n%s", n, plainView(m))
	}
	mustContain(t, m, "        remembered answer")

	ctl := tuitest.NewController(tuitest.Demo(t0))
	m = New(Options{Controller: ctl, Theme: "dark", Keys: map[string][]string{"use_remembered": {"ctrl+r"}}})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() timeT { return t0 }, false
	m, _ = update(m, windowSize(160, 48))
	m = connect(m, ctl)
	m, _ = press(t, m, "?")
	mustContain(t, m, "tab     target / no-reply  ", "ctrl+r  remembered answer")
}

func TestHelpSheetScrollsWithTheWheel(t *testing.T) {
	m, _ := demoModel(t, 60, 16)
	m, _ = press(t, m, "?")
	l, _ := m.layout()
	m, _ = update(m, tea.MouseWheelMsg{X: 5, Y: l.sheet.y + 2, Button: tea.MouseWheelDown})
	if rows := helpRows(t, m); !strings.HasPrefix(rows[len(rows)-1], "4-9 of 29") {
		t.Fatalf("the wheel did not scroll the sheet:\n%s", plainView(m))
	}
}

// A read-only view's sheet, as its footer, lists no key it refuses: no
// action, and no dialog, which nothing there opens.
func TestHelpSheetOfAReadOnlyView(t *testing.T) {
	m := viewModel(t, tuitest.Demo(t0), true)
	m, _ = press(t, m, "?")
	mustContain(t, m, "Act", "?       help", "q       quit")
	mustNotContain(t, m, "In a dialog", "b       broadcast", "m       message", "a       answer", "s       skip", "x       cancel", "y       yes")
}

// The `?` sheet keeps a cell of margin at its right border, as at its
// left, whatever the width.
func TestHelpKeepsARightMargin(t *testing.T) {
	for w := 60; w <= 160; w++ {
		m, _ := demoModel(t, w, 60)
		m, _ = press(t, m, "?")
		in := false
		for _, l := range strings.Split(plainView(m), "\n") {
			if strings.Contains(l, " Keys ") {
				in = true // the sheet's top border
				continue
			}
			if in && (strings.HasSuffix(l, "┃") || strings.HasSuffix(l, "│")) {
				body := strings.TrimSuffix(strings.TrimSuffix(l, "┃"), "│")
				if !strings.HasSuffix(body, " ") {
					t.Fatalf("at width %d a line of help touches the border:\n%s", w, l)
				}
			}
		}
		if !in {
			t.Fatalf("at width %d no help sheet:\n%s", w, plainView(m))
		}
	}
}
