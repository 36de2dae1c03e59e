package tui

import (
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
		if got := ansiStrip(m.broadcasts.head(c, &snap.Broadcasts[tc.i], tc.w)); got != tc.want {
			t.Errorf("cut to %d cells, a feed row reads %q, want %q", tc.w, got, tc.want)
		}
	}
}
