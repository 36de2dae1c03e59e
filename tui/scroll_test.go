package tui

import (
	tea "charm.land/bubbletea/v2"

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

func numberedMessages(n int) []event.MessageInfo {
	var msgs []event.MessageInfo
	for i := range n {
		msgs = append(msgs, event.MessageInfo{Index: i, Role: "assistant", Content: fmt.Sprintf("message %04d", i)})
	}
	return msgs
}

// Home in a transcript goes to its first message, reading the older pages
// it needs from the store and saying how far it has to go meanwhile.
func TestTranscriptHomeReadsBackToTheFirstMessage(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", numberedMessages(1200))
	m, _ = press(t, m, "down", "down", "enter")
	m, cmd := update(m, keyMsg("home"))
	mustContain(t, m, "loading older… 700 to go")
	m, _ = drive(t, m, cmd)
	if first := m.transcript.msgs[0].Index; first != 0 {
		t.Fatalf("home stopped with #%d the oldest in memory, want #0", first)
	}
	mustContain(t, m, "┃▌ #0 assistant")
	mustNotContain(t, m, "older")
	// Everything is in memory now, yet what is above the view is older.
	m, _ = press(t, m, "pgdown")
	mustContain(t, m, "↑ older")

	// Another key takes over from home's reading back.
	m, _ = press(t, m, "esc", "enter")
	m, cmd = update(m, keyMsg("home"))
	m, _ = press(t, m, "end")
	m, _ = drive(t, m, cmd)
	mustContain(t, m, "message 1199")
	if m.transcript.loadingOlder {
		t.Fatal("home read on after end was pressed")
	}
}

// Where a transcript is longer than the dashboard keeps, home reads as far
// as it keeps and says so; the title still says older messages exist.
func TestTranscriptHomeStopsAtWhatIsKept(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", numberedMessages(3000))
	m, _ = press(t, m, "down", "down", "enter")
	// 2,500 are older than the 500 shown, but home reads pages of 200
	// only until it keeps 2,000.
	m, cmd := update(m, keyMsg("home"))
	mustContain(t, m, "loading older… 1,600 to go")
	m, _ = drive(t, m, cmd)
	tr := &m.transcript
	n := len(tr.msgs)
	if n < transcriptKeep+transcriptExtra {
		t.Fatalf("%d messages in memory, want at least %d", n, transcriptKeep+transcriptExtra)
	}
	mustContain(t, m, fmt.Sprintf("message %04d", tr.msgs[0].Index), "↑ older",
		"showing the newest "+fmtCount(n)+" messages; older ones stay in the store")
}

// feedModel is the demo run with total broadcasts, the newest feedKeep in
// the snapshot and the rest in the store.
func feedModel(t *testing.T, total int) Model {
	t.Helper()
	all := notes("note", total)
	snap := tuitest.Demo(t0)
	snap.Broadcasts = all[total-feedKeep:]
	snap.BroadcastTotal = total
	m, ctl := newTestModel(t, snap, 160, 48)
	ctl.SetHistory(all[:total-feedKeep])
	return m
}

// Home in the feed goes to the run's first broadcast, reading the older
// pages it needs from the store; the title says how many lie above the
// view, read or not.
func TestBroadcastHomeReadsBackToTheFirst(t *testing.T) {
	m := feedModel(t, 3556)
	m, _ = press(t, m, "tab")
	mustContain(t, m, "Broadcasts · 3,556 · ↑ 3,544 older ━")
	m, cmd := update(m, keyMsg("home"))
	mustContain(t, m, "Broadcasts · 3,556 · loading older… 1,556 to go")
	m, _ = drive(t, m, cmd)
	mustContain(t, m, "Broadcasts · 3,556 · ↓ 3,544 newer", "note 0000")
	mustNotContain(t, m, "older")
	if b := m.broadcasts.selected(&m.st.feed); b == nil || b.Message != "note 0000" {
		t.Fatalf("home selected %+v, want note 0000", b)
	}
	m, _ = press(t, m, "pgdown", "pgdown")
	mustContain(t, m, "· ↑ 11 older · ↓ 3,533 newer")
}

// Where the run has more broadcasts than the dashboard keeps, home reads
// as far as it keeps and says so; the title still counts the rest.
func TestBroadcastHomeStopsAtWhatIsKept(t *testing.T) {
	m := feedModel(t, 12000)
	m, _ = press(t, m, "tab")
	// 10,000 are older than the 2,000 shown, but home reads only until
	// it keeps 10,000.
	m, cmd := update(m, keyMsg("home"))
	mustContain(t, m, "loading older… 8,000 to go")
	m, _ = drive(t, m, cmd)
	kept := feedKeep + feedHistoryMax
	if n := len(m.st.feed.items); n != kept {
		t.Fatalf("%d broadcasts in memory, want %d", n, kept)
	}
	mustContain(t, m, fmt.Sprintf("note %04d", 12000-kept), "↑ 2,000 older",
		"showing the newest 10,000 broadcasts; older ones stay in the store")
}

// A filter whose only match was read back from the store keeps it: moving
// onto it, the newest match, does not drop what was read, so that the
// next key does not make it vanish and the one after bring it back.
func TestFilteredFeedKeepsAMatchReadBack(t *testing.T) {
	m := feedModel(t, 2021)
	m, _ = press(t, m, "tab", "/")
	m = typeText(t, m, "note 0007")
	m, _ = press(t, m, "enter")
	mustContain(t, m, "0 matches")
	m, cmd := update(m, keyMsg("k"))
	m, _ = drive(t, m, cmd)
	for i := range 4 {
		if b := m.broadcasts.selected(&m.st.feed); b == nil || b.Message != "note 0007" {
			t.Fatalf("after %d more presses of k the selection is %+v, want note 0007", i, b)
		}
		mustContain(t, m, "1 match")
		m, cmd = update(m, keyMsg("k"))
		m, _ = drive(t, m, cmd)
	}
}

// Tool results loaded before the message that calls them are named by
// their tool once the call is read, not left with the call's id.
func TestToolResultsNamedOnceTheirCallIsRead(t *testing.T) {
	var msgs []event.MessageInfo
	call := 0 // the assistant message calling the tools of what follows
	for i := range 600 {
		m := event.MessageInfo{Index: i, Role: "user", Content: "go on"}
		switch {
		case i == 0:
			m.Role = "system"
		case i > 2 && (i-3)%6 == 0:
			call = i
			m.Role, m.Content = "assistant", ""
			for j := range 5 {
				m.ToolCalls = append(m.ToolCalls, event.ToolCall{ID: fmt.Sprintf("call-%d-%d", i, j), Name: "read_file", Arguments: `{"path":"a.txt"}`})
			}
		case i > 2:
			m.Role, m.Content, m.ToolCallID = "tool", "hello", fmt.Sprintf("call-%d-%d", call, i-call-1)
		}
		msgs = append(msgs, m)
	}
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", msgs)
	m, _ = press(t, m, "down", "down", "enter")
	// Page up to the oldest message in memory, a result of #99's call,
	// drawing each page as the person would see it.
	for range 100 {
		if m.transcript.firstIndex() < 100 {
			break
		}
		plainView(m)
		m, _ = press(t, m, "pgup")
	}
	if m.transcript.firstIndex() >= 100 {
		t.Fatal("paging up never read older messages")
	}
	m, _ = press(t, m, "up")
	mustContain(t, m, "#99 assistant", "#100 tool · result of read_file")
	mustNotContain(t, m, "result of call-")
}

// Scrolled up in a transcript, the title says how many newer messages
// are below the view, counting those that arrive meanwhile; at the end it
// says nothing of them.
func TestTranscriptScrolledUpCountsNewerMessages(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", numberedMessages(100))
	m, _ = press(t, m, "down", "down", "enter")
	mustNotContain(t, m, "newer")
	m, _ = press(t, m, "pgup", "pgup")
	shown := shownNumbers(m, `message (\d+)`)
	if len(shown) == 0 {
		t.Fatal("no message in sight after pgup")
	}
	below := 99 - shown[len(shown)-1]
	mustContain(t, m, fmt.Sprintf("↓ %d newer", below))
	m = apply(m, event.Event{Type: event.MessageAppended, SessionID: "s-res1",
		Message: &event.MessageInfo{Index: 100, Role: "assistant", Content: "message 0100"}, Time: t0})
	mustContain(t, m, fmt.Sprintf("↓ %d newer", below+1))
	m, _ = press(t, m, "end")
	mustNotContain(t, m, "newer")
	mustContain(t, m, "message 0100")
}

// A click on a message in a transcript selects it, wherever on the
// message, and leaves the view where it is; a click between messages does
// nothing.
func TestTranscriptClickSelectsAMessage(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", messagesOfManyHeights(40))
	m, _ = press(t, m, "down", "down", "enter", "home")
	l, _ := m.layout()
	lines := strings.Split(plainView(m), "\n")
	rowOf := func(text string) int {
		for y, line := range lines {
			if y > l.transcript.y && strings.Contains(line[:min(len(line), l.transcript.w*3)], text) {
				return y
			}
		}
		t.Fatalf("%q is not in the transcript:\n%s", text, plainView(m))
		return -1
	}
	before := plainView(m)
	y := rowOf("end of 0002") // the last line of #2, not its header
	m, _ = update(m, tea.MouseClickMsg{X: l.transcript.x + 10, Y: y, Button: tea.MouseLeft})
	if got := m.transcript.msgs[m.transcript.sel()].Index; got != 2 {
		t.Fatalf("a click on the end of #2 selected #%d", got)
	}
	mustContain(t, m, "┃▌ #2 assistant", "┃▌   end of 0002")
	if strings.Count(plainView(m), "#") != strings.Count(before, "#") || !strings.Contains(plainView(m), "end of 0001") {
		t.Errorf("the view moved on a click:\n%s", plainView(m))
	}
	// The blank line under #2 belongs to no message.
	m, _ = update(m, tea.MouseClickMsg{X: l.transcript.x + 10, Y: y + 1, Button: tea.MouseLeft})
	if got := m.transcript.msgs[m.transcript.sel()].Index; got != 2 {
		t.Errorf("a click between messages selected #%d", got)
	}

	// Followed at the newest message, the view hangs from its end: a click
	// on one above selects it there, and the view stays.
	m, _ = press(t, m, "end")
	before = plainView(m)
	lines = strings.Split(before, "\n")
	header, n := -1, 0
	for y := l.transcript.y + 1; y < len(lines) && header < 0; y++ {
		if sm := regexp.MustCompile(`#(\d+) assistant`).FindStringSubmatch(lines[y]); sm != nil {
			header, n = y, atoi(t, sm[1])
		}
	}
	if header < 0 || n == 39 {
		t.Fatalf("no message above the newest in sight:\n%s", before)
	}
	m, _ = update(m, tea.MouseClickMsg{X: l.transcript.x + 10, Y: header, Button: tea.MouseLeft})
	if got := m.transcript.msgs[m.transcript.sel()].Index; got != n || m.transcript.follow {
		t.Fatalf("a click on #%d while following selected #%d (following: %v)", n, got, m.transcript.follow)
	}
	if after := strings.Split(plainView(m), "\n"); !strings.Contains(after[header], fmt.Sprintf("▌ #%d assistant", n)) {
		t.Errorf("the view moved on a click while following: row %d is %q", header, after[header])
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The wheel moves nothing behind an open dialog, as clicks do not: the
// session the tree shows selected stays the one the dialog acts on.
func TestWheelBehindADialogMovesNothing(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m, _ = press(t, m, "down", "down", "x")
	target := m.sessions.current()
	mustContain(t, m, "Cancel session?")
	l, _ := m.layout()
	for _, b := range []tea.MouseButton{tea.MouseWheelDown, tea.MouseWheelDown, tea.MouseWheelUp, tea.MouseWheelDown} {
		for _, r := range []rect{l.sessions, l.broadcasts, l.plans, l.delegations} {
			m, _ = update(m, tea.MouseWheelMsg{X: r.x + 5, Y: r.y + 2, Button: b})
		}
	}
	if got := m.sessions.current(); got != target {
		t.Fatalf("the wheel moved the tree behind the dialog from %s to %s", target, got)
	}
	mustContain(t, m, "Cancel session?")
}

// The wheel moves the view a few rows a notch, whatever the heights of the
// messages: every row of a tall message and every short message passes
// through the view, both ways and at a small size too; at the top a notch
// up leaves the view where it is.
func TestWheelReadsATallMessageWhole(t *testing.T) {
	for _, size := range [][2]int{{160, 48}, {80, 24}} {
		m, ctl := demoModel(t, size[0], size[1])
		var msgs []event.MessageInfo
		for i := range 14 {
			content := fmt.Sprintf("short %02d", i)
			if i == 6 || i == 11 {
				var rows []string
				for r := range 150 {
					rows = append(rows, fmt.Sprintf("row %d%03d", i, r))
				}
				content = strings.Join(rows, "\n")
			}
			msgs = append(msgs, event.MessageInfo{Index: i, Role: "assistant", Content: content})
		}
		ctl.SetTranscript("s-res1", msgs)
		m, _ = press(t, m, "down", "down", "enter")
		l, _ := m.layout()
		for _, dir := range []struct {
			key    string
			button tea.MouseButton
		}{{"end", tea.MouseWheelUp}, {"home", tea.MouseWheelDown}} {
			m, _ = press(t, m, dir.key)
			seen := map[int]bool{}
			for range 400 {
				for _, n := range shownNumbers(m, `row (\d+)`) {
					seen[n] = true
				}
				for _, n := range shownNumbers(m, `short (\d+)`) {
					seen[-1-n] = true
				}
				m, _ = update(m, tea.MouseWheelMsg{X: l.transcript.x + 10, Y: l.transcript.y + 5, Button: dir.button})
			}
			for _, i := range []int{6, 11} {
				for r := range 150 {
					if !seen[i*1000+r] {
						t.Fatalf("%dx%d, wheel %v from %s: row %d of message #%d was never on screen", size[0], size[1], dir.button, dir.key, r, i)
					}
				}
			}
			for i := 1; i < 14; i++ { // #0 is shown folded, as a system prompt
				if i != 6 && i != 11 && !seen[-1-i] {
					t.Fatalf("%dx%d, wheel %v from %s: message #%d was never on screen", size[0], size[1], dir.button, dir.key, i)
				}
			}
		}
		// At the top, a notch up leaves the view as it is.
		m, _ = press(t, m, "home")
		before := plainView(m)
		m, _ = update(m, tea.MouseWheelMsg{X: l.transcript.x + 10, Y: l.transcript.y + 5, Button: tea.MouseWheelUp})
		if after := plainView(m); after != before {
			t.Errorf("%dx%d: a notch up at the top moved the view:\n%s", size[0], size[1], after)
		}
	}
}
