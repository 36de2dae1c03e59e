package tui

import (
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
