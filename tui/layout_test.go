package tui

import (
	"fmt"
	"strings"
	"testing"
)

// Every visible area must lie on screen and no two may overlap; together
// they must cover every cell (a gap would show stale characters).
func TestLayoutTilesTheScreen(t *testing.T) {
	chromes := []chrome{
		{footerRows: 1},
		{banner: true, statusRows: 1, footerRows: 1},
		{banner: true, sheetRows: 12, footerRows: 1},
		{sheetRows: 40, footerRows: 1}, // taller than the screen
		{sessionView: true, footerRows: 1},
		{sessionView: true, banner: true, sheetRows: 5, statusRows: 3, footerRows: 1},
	}
	for w := minWidth; w <= 200; w += 7 {
		for h := minHeight; h <= 60; h += 5 {
			for _, c := range chromes {
				l := computeLayout(w, h, c)
				areas := []rect{l.header, l.banner, l.sessions, l.broadcasts, l.plans, l.delegations, l.transcript, l.sheet, l.status, l.footer}
				cells := make([]int, w*h)
				for _, a := range areas {
					if a.empty() {
						continue
					}
					if a.x < 0 || a.y < 0 || a.x+a.w > w || a.y+a.h > h {
						t.Fatalf("%dx%d %+v: area %+v is off screen", w, h, c, a)
					}
					for y := a.y; y < a.y+a.h; y++ {
						for x := a.x; x < a.x+a.w; x++ {
							cells[y*w+x]++
						}
					}
				}
				for i, n := range cells {
					if n != 1 {
						t.Fatalf("%dx%d %+v: cell (%d,%d) covered %d times", w, h, c, i%w, i/w, n)
					}
				}
				if body := l.sessions.h + l.plans.h; !c.sessionView && l.kind == layoutWide && body < minBody {
					t.Fatalf("%dx%d %+v: only %d rows left for panes", w, h, c, body)
				}
			}
		}
	}
}

func TestLayoutKinds(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		want layoutKind
	}{
		{160, 48, layoutWide}, {100, 30, layoutWide}, {99, 30, layoutStacked}, {60, 16, layoutStacked},
		{59, 30, layoutTooSmall}, {100, 15, layoutTooSmall},
	} {
		if got := computeLayout(tc.w, tc.h, chrome{footerRows: 1}).kind; got != tc.want {
			t.Errorf("%dx%d: kind %d, want %d", tc.w, tc.h, got, tc.want)
		}
	}
	l := computeLayout(160, 48, chrome{footerRows: 1})
	if l.sessions.x != 0 || l.broadcasts.x <= l.sessions.x || l.broadcasts.y != l.sessions.y {
		t.Fatalf("wide: Sessions should be left of Broadcasts on the same rows: %+v %+v", l.sessions, l.broadcasts)
	}
	if l.plans.y <= l.sessions.y || l.delegations.y <= l.broadcasts.y {
		t.Fatal("wide: Plans and Delegations should be below")
	}
	s := computeLayout(80, 40, chrome{footerRows: 1})
	if !(s.sessions.y < s.broadcasts.y && s.broadcasts.y < s.plans.y && s.plans.y < s.delegations.y) || s.broadcasts.x != 0 {
		t.Fatalf("stacked: panes should be one above the other: %+v", s)
	}
}

func TestLayoutSheetKeepsPanesVisible(t *testing.T) {
	l := computeLayout(100, 30, chrome{banner: true, sheetRows: 50, footerRows: 1})
	if l.sheet.h == 0 || l.sessions.h+l.plans.h < minBody {
		t.Fatalf("a tall sheet should be clipped to keep %d rows of panes: sheet %d, panes %d", minBody, l.sheet.h, l.sessions.h+l.plans.h)
	}
}

// On small terminals every stacked pane keeps enough rows to use; the shares
// only divide what is left. Heights add up to the screen in every case.
func TestLayoutPaneHeights(t *testing.T) {
	for _, tc := range []struct {
		w, h int
		c    chrome
		// want is each pane's content rows (its height less the border) at
		// least, in the order Sessions, Broadcasts, Plans, Delegations; 0
		// where the pane is not shown.
		want [4]int
	}{
		{80, 24, chrome{footerRows: 1}, [4]int{3, 2, 3, 2}},
		{80, 24, chrome{banner: true, footerRows: 1}, [4]int{3, 2, 3, 2}},
		{80, 24, chrome{banner: true, statusRows: 1, footerRows: 1}, [4]int{2, 2, 2, 2}},
		{80, 30, chrome{banner: true, footerRows: 1}, [4]int{3, 2, 3, 2}},
		{60, 16, chrome{banner: true, footerRows: 1}, [4]int{2, 2, 2, 0}},
		{100, 30, chrome{banner: true, footerRows: 1}, [4]int{3, 3, 3, 3}},
		{160, 48, chrome{banner: true, statusRows: 3, footerRows: 1}, [4]int{3, 3, 3, 3}},
		{40, 12, chrome{footerRows: 1}, [4]int{}},
		{20, 8, chrome{banner: true, footerRows: 1}, [4]int{}},
	} {
		l := computeLayout(tc.w, tc.h, tc.c)
		panes := [4]rect{l.sessions, l.broadcasts, l.plans, l.delegations}
		for _, a := range append(panes[:], l.header, l.banner, l.transcript, l.sheet, l.status, l.footer) {
			if a.x < 0 || a.y < 0 || a.w < 0 || a.h < 0 {
				t.Fatalf("%dx%d %+v: negative area %+v", tc.w, tc.h, tc.c, a)
			}
		}
		if tc.w < minWidth || tc.h < minHeight {
			if l.kind != layoutTooSmall || l.header.h+l.sessions.h+l.footer.h != 0 {
				t.Fatalf("%dx%d: want only the too-small notice, got %+v", tc.w, tc.h, l)
			}
			continue
		}
		chromeRows := l.header.h + l.banner.h + l.sheet.h + l.status.h + l.footer.h
		columns := [][]rect{{l.sessions, l.broadcasts, l.plans, l.delegations}}
		if l.kind == layoutWide {
			columns = [][]rect{{l.sessions, l.plans}, {l.broadcasts, l.delegations}}
		}
		for _, col := range columns {
			rows := chromeRows
			for _, a := range col {
				rows += a.h
			}
			if rows != tc.h {
				t.Errorf("%dx%d %+v: rows add up to %d, want %d: %+v", tc.w, tc.h, tc.c, rows, tc.h, l)
			}
		}
		for i, a := range panes {
			content := max(a.h-2, 0)
			if tc.want[i] == 0 && a.h != 0 {
				t.Errorf("%dx%d %+v: pane %d shown with %d rows, want none", tc.w, tc.h, tc.c, i, a.h)
			}
			if content < tc.want[i] {
				t.Errorf("%dx%d %+v: pane %d has %d content rows, want at least %d", tc.w, tc.h, tc.c, i, content, tc.want[i])
			}
		}
	}
}

// Over every body the stacked panes can get: they add up to it, the shown
// ones are the most important, and each keeps its minimum where the body
// has room for all of them (two rows of content otherwise).
func TestStackedHeights(t *testing.T) {
	for body := 1; body <= 60; body++ {
		rows := stackedHeights(body)
		if len(rows) == 0 || sum(rows) != body {
			t.Fatalf("body %d: heights %v do not add up", body, rows)
		}
		for i, r := range rows {
			least := stackedTightRows
			if body >= sum(stackedMinRows[:]) {
				least = stackedMinRows[i]
			}
			if r < least && len(rows) > 1 {
				t.Fatalf("body %d: heights %v, pane %d under %d rows", body, rows, i, least)
			}
		}
		if body >= sum(stackedMinRows[:]) && len(rows) != len(stackedMinRows) {
			t.Fatalf("body %d: only %d panes shown, room for all", body, len(rows))
		}
	}
	// Where the shares already give every pane its minimum, they decide.
	if got := stackedHeights(40); fmt.Sprint(got) != "[14 12 8 6]" {
		t.Fatalf("body 40: heights %v, want the plain shares [14 12 8 6]", got)
	}
}

// At 80x24 with a question waiting, the stacked panes below the tree still
// show something to read: a whole broadcast, the plan's summary and two of
// its tasks, two delegations.
func TestStackedPanesUsableAt80x24(t *testing.T) {
	m, _ := demoModel(t, 80, 24)
	mustContain(t, m,
		"Handler needs the storage decision", // the latest broadcast's text
		"✓ 1  Draft the plan", "✓ 2  Research storage engines",
		"⠋ running   dl-1", "✗ failed    dl-2",
	)
}

// At 120 columns the two columns of the wide layout keep what each row is
// about: a session's title beside its name (the label alone names it where
// role and label would leave the title a stub), and a broadcast's kind in
// brackets whole (the recipient named by its label where both names do
// not fit). At 160 the tree's names stay whole.
func TestWideColumnsAt120KeepTitlesAndKinds(t *testing.T) {
	snap := demoWithResearchLabels()
	snap.Broadcasts[2].From = "researcher (research-1)"
	snap.Broadcasts[3].From, snap.Broadcasts[3].FromSession = "researcher (research-1)", "s-res1"

	m, _ := newTestModel(t, snap, 120, 40)
	l, _ := m.layout()
	lines := strings.Split(plainView(m), "\n")
	var sessions, feed []string
	for _, line := range lines[l.sessions.y : l.sessions.y+l.sessions.h] {
		r := []rune(line)
		sessions = append(sessions, string(r[:l.sessions.w]))
		feed = append(feed, string(r[l.broadcasts.x:]))
	}
	tree, broadcasts := strings.Join(sessions, "\n"), strings.Join(feed, "\n")
	for _, s := range snap.Sessions {
		name, desc := s.Agent, s.Title
		if s.Label != "" {
			name = s.Label
		}
		if s.Error != "" {
			desc = s.Error
		}
		if want := name + " " + desc[:12]; !strings.Contains(tree, want) {
			t.Errorf("120x40: the tree does not show %q:\n%s", want, tree)
		}
	}
	for _, want := range []string{"research-1 → research-2 [message, no-reply]", "[context]", "[announce]", "researcher (research-1) → all [discovery]",
		"[warning]", "[human · blocker]", "[blocker]"} {
		if !strings.Contains(broadcasts, want) {
			t.Errorf("120x40: the feed does not show %q:\n%s", want, broadcasts)
		}
	}

	m, _ = newTestModel(t, snap, 160, 48)
	mustContain(t, m, "researcher (research-1) Compare storage", "researcher (research-2) Survey analytics",
		"researcher (research-1) → research-2 [message, no-reply]", "researcher (research-1) → all [discovery]")
}
