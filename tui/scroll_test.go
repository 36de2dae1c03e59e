package tui

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
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

// shownNumbers are the numbers the pattern's group matches on the screen,
// in order.
func shownNumbers(m Model, pattern string) []int {
	var out []int
	for _, g := range regexp.MustCompile(pattern).FindAllStringSubmatch(plainView(m), -1) {
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
		for _, n := range shownNumbers(m, `note (\d+)`) {
			seen[n] = true
		}
		for range 30 {
			m, _ = press(t, m, "pgdown")
			shown := shownNumbers(m, `note (\d+)`)
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
			for _, n := range shownNumbers(m, `note (\d+)`) {
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

// messagesOfManyHeights is a transcript whose messages take from two rows
// to more than the pane.
func messagesOfManyHeights(n int) []event.MessageInfo {
	var msgs []event.MessageInfo
	for i := range n {
		lines := i * 7 % 13
		if i%50 == 25 {
			lines = 80 // taller than the pane
		}
		msgs = append(msgs, event.MessageInfo{Index: i, Role: "assistant", Content: strings.Repeat("text\n", lines) + fmt.Sprintf("end of %04d", i)})
	}
	return msgs
}

// Paging through a transcript shows every message on the way, whatever
// their heights.
func TestTranscriptPagesSkipNothing(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", messagesOfManyHeights(300))
	m, _ = press(t, m, "down", "down", "enter", "home")
	for _, dir := range []string{"pgdown", "pgup"} {
		seen := map[int]bool{}
		for range 200 {
			for _, n := range shownNumbers(m, `#(\d+) assistant`) {
				seen[n] = true
			}
			for _, n := range shownNumbers(m, `end of (\d+)`) {
				seen[-1-n] = true
			}
			m, _ = press(t, m, dir)
		}
		for i := range 300 {
			if !seen[i] {
				t.Fatalf("%s: the start of message #%d was never on screen", dir, i)
			}
			if !seen[-1-i] && i > 0 { // #0 is shown folded, as a system prompt
				t.Fatalf("%s: the end of message #%d was never on screen", dir, i)
			}
		}
	}
}
