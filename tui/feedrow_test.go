package tui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Where a feed row is short, the names give way to their labels and the
// time goes before a name is cut; a name cut keeps its end, which tells
// research-1 from research-2, and the kind in brackets stays whole.
func TestFeedRowsKeepNamesApartAndTheKindWhole(t *testing.T) {
	snap := demoWithResearchLabels()
	msg := func(id, from, fromSession, to string) event.BroadcastInfo {
		return event.BroadcastInfo{ID: id, Kind: event.KindMessage, NoReply: true, From: from, FromSession: fromSession,
			Target: to, Message: "compare notes", Timestamp: t0.Add(-time.Minute)}
	}
	snap.Broadcasts = []event.BroadcastInfo{
		msg("b-1", "researcher (research-1)", "s-res1", "s-res2"),
		msg("b-2", "researcher (research-2)", "s-res2", "s-res1"),
	}
	m, _ := newTestModel(t, snap, 100, 30)

	want := map[int][2]string{
		100: {"research-1 → research-2 [message, no-reply]", "research-2 → research-1 [message, no-reply]"},
	}
	for w := 130; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 30))
		screen := plainView(m)
		rows := [2]string{}
		for i := range rows {
			rows[i] = paneRow(screen, "Broadcasts", 1+i*m.broadcasts.linesPer())
		}
		for _, r := range rows {
			if !strings.Contains(r, " [message, no-reply]") {
				t.Fatalf("at %d columns a feed row cuts its kind: %s", w, r)
			}
		}
		a, _, _ := strings.Cut(rows[0], " [")
		b, _, _ := strings.Cut(rows[1], " [")
		if a == b {
			t.Fatalf("at %d columns two rows name their sessions alike: %s", w, a)
		}
		if s, ok := want[w]; ok && (!strings.Contains(rows[0], s[0]) || !strings.Contains(rows[1], s[1])) {
			t.Fatalf("at %d columns the rows read\n%s\n%s\nwant\n%s\n%s", w, rows[0], rows[1], s[0], s[1])
		}
	}

	// Narrower than any pane draws it, the names are cut in their middle,
	// keeping their ends.
	c := &renderCtx{st: m.st, styles: &m.styles, keys: &m.keys, now: t0, loc: m.loc}
	for _, tc := range []struct {
		i, w int
		want string
	}{
		{0, 37, "re…ch-1 → re…ch-2 [message, no-reply]"},
		{1, 37, "re…ch-2 → re…ch-1 [message, no-reply]"},
		{0, 42, "research-1 → re…arch-2 [message, no-reply]"}, // no more than it needs
	} {
		if got := ansiStrip(m.broadcasts.head(c, &snap.Broadcasts[tc.i], tc.w, 0)); got != tc.want {
			t.Errorf("cut to %d cells, a feed row reads %q, want %q", tc.w, got, tc.want)
		}
	}
}

// The rows on screen write their times alike: where a row with long names
// needs its time shorter, or gone, the others follow, so that the column
// of times reads as one.
func TestFeedRowsShareTheirTimeForm(t *testing.T) {
	snap := demoWithResearchLabels()
	at := t0.Add(-time.Minute)
	snap.Broadcasts = []event.BroadcastInfo{
		{ID: "b-1", Kind: event.KindMessage, From: "researcher (research-1)", FromSession: "s-res1", Target: "s-res2", Message: "a", Timestamp: at},
		{ID: "b-2", Kind: event.KindBroadcast, From: "human", Target: "all", Message: "b", Timestamp: at},
		{ID: "b-3", Kind: event.KindMessage, NoReply: true, From: "researcher (research-2)", FromSession: "s-res2", Target: "s-res1", Message: "c", Timestamp: at},
	}
	m, _ := newTestModel(t, snap, 100, 50)
	clock := regexp.MustCompile(`^[^0-9a-z]*(\d\d:\d\d:\d\d|\d\d:\d\d)? `)
	forms := map[string]bool{}
	for w := 160; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 50))
		screen := plainView(m)
		seen := map[string]bool{}
		for i := range snap.Broadcasts {
			row := paneRow(screen, "Broadcasts", 1+i*m.broadcasts.linesPer())
			row = strings.TrimLeft(row, "│┃|# ")
			form := "none"
			if g := clock.FindStringSubmatch(row); g != nil && g[1] != "" {
				form = map[int]string{8: "hh:mm:ss", 5: "hh:mm"}[len(g[1])]
			}
			seen[form] = true
			forms[form] = true
		}
		if len(seen) > 1 {
			t.Fatalf("at %d columns the rows write their times differently: %v\n%s", w, seen, screen)
		}
	}
	if len(forms) < 2 {
		t.Fatalf("the widths tried show the times in one form only (%v): the test does not reach a row that gives way", forms)
	}
}
