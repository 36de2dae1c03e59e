package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// notes are n announcements "note 000", "note 001", ... oldest first.
func notes(prefix string, n int) []event.BroadcastInfo {
	var out []event.BroadcastInfo
	for i := range n {
		out = append(out, event.BroadcastInfo{ID: fmt.Sprintf("%s-%04d", prefix, i), Kind: event.KindAnnounce, From: "orchestrator",
			Message: fmt.Sprintf("%s %04d", prefix, i), Timestamp: t0.Add(time.Duration(i-n) * time.Second)})
	}
	return out
}

// shownNumbers are the numbers after prefix on the screen, in order.
func shownNumbers(m Model, prefix string) []int {
	var out []int
	for _, g := range regexp.MustCompile(prefix+` (\d+)`).FindAllStringSubmatch(plainView(m), -1) {
		n, _ := strconv.Atoi(g[1])
		out = append(out, n)
	}
	return out
}

// Paging through the feed shows every broadcast on the way, with a
// broadcast of two rows as with one: a page is of broadcasts, not rows.
func TestBroadcastPagesSkipNothing(t *testing.T) {
	for _, w := range []int{160, 200} { // two rows per broadcast, then one
		snap := tuitest.Demo(t0)
		snap.Broadcasts = notes("note", 100)
		m, _ := newTestModel(t, snap, w, 48)
		m, _ = press(t, m, "tab", "home")
		seen := map[int]bool{}
		for _, n := range shownNumbers(m, "note") {
			seen[n] = true
		}
		for range 30 {
			m, _ = press(t, m, "pgdown")
			shown := shownNumbers(m, "note")
			if len(shown) == 0 {
				t.Fatalf("width %d: no note on screen:\n%s", w, plainView(m))
			}
			if !seen[shown[0]] {
				t.Fatalf("width %d: page down showed note %04d at the top, but the note before it was never on screen:\n%s",
					w, shown[0], plainView(m))
			}
			for _, n := range shown {
				seen[n] = true
			}
		}
		for i := range 100 {
			if !seen[i] {
				t.Fatalf("width %d: note %04d was never on screen paging down", w, i)
			}
		}
		seen = map[int]bool{}
		for range 30 {
			m, _ = press(t, m, "pgup")
			for _, n := range shownNumbers(m, "note") {
				seen[n] = true
			}
		}
		for i := range 100 {
			if !seen[i] {
				t.Fatalf("width %d: note %04d was never on screen paging up", w, i)
			}
		}
	}
}
