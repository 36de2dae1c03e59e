package tui

import (
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// The header leaves out or shortens whole items where the line is short,
// and never cuts one inside: "1,0…" would read as another number.
func TestHeaderItemsWholeAtAnyWidth(t *testing.T) {
	snap, _ := tuitest.Large(t0, 1000, 0)
	snap.Run.ID, snap.Run.Status = "r-0d0206", "completed"
	snap.Run.EndedAt = snap.Run.StartedAt.Add(90 * time.Second)
	snap.Run.Usage.TotalTokens = 7_407_166
	m, _ := readOnlyModel(t, snap, 200, 48)

	want := map[int]string{
		200: " run r-0d0206 · completed · 1m30s · 7,407,166 tokens · 1,000 sessions · scripted / demo ",
		110: " run r-0d0206 · completed · 1m30s · 7,407,166 tokens · 1,000 sessions ",
		95:  " run r-0d0206 · completed · 1m30s · 7.4M tokens · 1,000 sessions ",
		92:  " run r-0d0206 · completed · 1m30s · 7.4M tokens · 1.0k sessions ",
		80:  " run r-0d0206 · completed · 1m30s · 7.4M tokens ",
		74:  " run r-0d0206 · completed · 1m30s · 7.4M tok ",
		65:  " run r-0d0206 · completed · 1m30s ",
		60:  " run r-0d0206 · completed ",
	}
	for w := 200; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 48))
		header := strings.Split(plainView(m), "\n")[1]
		if strings.Contains(header, m.styles.g.ellipsis) {
			t.Fatalf("at %d columns the header cuts an item:\n%s", w, header)
		}
		if !strings.Contains(header, "SCRIPTED MODEL   READ-ONLY") {
			t.Fatalf("at %d columns the header lost its marks:\n%s", w, header)
		}
		if s, ok := want[w]; ok && !strings.HasPrefix(header, s) {
			t.Fatalf("at %d columns the header reads\n%q\nwant it to begin\n%q", w, header, s)
		}
	}
}

// A run from another day says when it started: the feed and transcripts
// give times of the clock alone, which read as today's.
func TestHeaderDatesARunOfAnotherDay(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Run.StartedAt = t0.Add(-90 * 24 * time.Hour)
	snap.Run.EndedAt = snap.Run.StartedAt.Add(3 * time.Minute)
	snap.Run.Status = "completed"
	m, _ := newTestModel(t, snap, 160, 48)
	at := snap.Run.StartedAt.In(m.loc)
	mustContain(t, m, "completed · started "+at.Format("2006-01-02 15:04")+" · 3m00s")
	m, _ = newTestModel(t, snap, 60, 30) // the date stays, shortened
	mustContain(t, m, "completed · "+at.Format("2006-01-02"))

	m, _ = demoModel(t, 160, 48) // today's run: no date
	mustNotContain(t, m, "started ")
}
