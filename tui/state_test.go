package tui

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

func TestPlanViewReadiness(t *testing.T) {
	tasks := planView([]event.PlanTask{
		{ID: "a", Status: "completed"},
		{ID: "b", Status: "pending", DependsOn: []string{"a"}},      // ready: its one dependency is done
		{ID: "c", Status: "pending", DependsOn: []string{"a", "b"}}, // waits on b
		{ID: "d", Status: "pending"},                                // ready: no dependencies
		{ID: "e", Status: "in_progress", DependsOn: []string{"a"}},  // not pending: not ready
		{ID: "f", Status: "blocked", DependsOn: []string{"c"}, WaitingOn: []string{"x"}},
		{ID: "g", Status: "pending", DependsOn: []string{"zz"}, Ready: true}, // the runtime says so
	})
	ready := map[string]bool{}
	for _, v := range tasks {
		ready[v.ID] = v.ready
	}
	want := map[string]bool{"a": false, "b": true, "c": false, "d": true, "e": false, "f": false, "g": true}
	if !reflect.DeepEqual(ready, want) {
		t.Fatalf("ready = %v, want %v", ready, want)
	}
	if got := tasks[2].waiting; !reflect.DeepEqual(got, []string{"b"}) {
		t.Fatalf("c waits on %v, want [b]", got)
	}
	if got := tasks[5].waiting; !reflect.DeepEqual(got, []string{"x"}) {
		t.Fatalf("f waits on %v, want the runtime's WaitingOn [x]", got)
	}
}

// finishedIn counts who a broadcast reaches but will not read: completed and
// failed sessions, not cancelled ones (the runtime skips those) nor any that
// is still going.
func TestFinishedInCountsWhoWillNotRead(t *testing.T) {
	s := newRunState()
	s.applySnapshot(tuitest.Demo(time.Now()))
	for _, tc := range []struct {
		target string
		want   int
	}{
		{"all", 3},    // plan and x-1 completed, x-3 failed; e-9 cancelled
		{"", 3},       // the same: every session
		{"s-res1", 1}, // running, with x-1 completed below it
		{"s-res2", 1}, // waiting, x-2 running, x-3 failed
		{"s-dlg1", 0}, // running, e-1 running, v-1 pending
		{"s-plan", 1}, // itself
		{"s-cxl", 0},  // cancelled
		{"s-none", 0}, // not in the run
	} {
		if got := s.finishedIn(tc.target); got != tc.want {
			t.Errorf("finishedIn(%q) = %d, want %d", tc.target, got, tc.want)
		}
	}
}

// The feed keeps the last feedKeep broadcasts while following, however many
// arrive, and the view still shows the newest.
func TestFeedIsBoundedWhileFollowing(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	for i := 0; i < 10; i++ {
		batch := make([]event.Event, 1000)
		for j := range batch {
			n := i*1000 + j
			batch[j] = ev(event.BroadcastSent, "s-root")
			batch[j].Broadcast = &event.BroadcastInfo{ID: fmt.Sprintf("bx-%d", n), Kind: event.KindAnnounce, From: "orchestrator", Message: fmt.Sprintf("note %d", n)}
		}
		m = apply(m, batch...)
	}
	if n := len(m.st.feed.items); n > feedKeep+feedKeep/4 {
		t.Fatalf("%d broadcasts in memory, want at most about %d", n, feedKeep)
	}
	mustContain(t, m, "note 9999", "Broadcasts · 10,007")
}

// Scrolling above the oldest broadcast in memory reads older ones from the
// store, and the selection stays on the item it was on.
func TestFeedLoadsOlderOnScrollToTop(t *testing.T) {
	snap := tuitest.Demo(t0)
	ctl := tuitest.NewController(snap)
	var hist []event.BroadcastInfo
	for i := 0; i < 300; i++ {
		hist = append(hist, event.BroadcastInfo{ID: fmt.Sprintf("old-%03d", i), Kind: event.KindAnnounce, From: "orchestrator",
			Message: fmt.Sprintf("older note %03d", i), Timestamp: t0.Add(-time.Hour)})
	}
	ctl.SetHistory(hist)
	m := New(Options{Controller: ctl, Theme: "dark"})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() time.Time { return t0 }, false
	m, _ = update(m, windowSize(160, 48))
	m = connect(m, ctl)

	m, _ = press(t, m, "tab", "pgup") // focus the feed, go to the oldest in memory
	mustContain(t, m, "›19:28:20 planner (plan)")
	m, _ = press(t, m, "up") // past the top: load a page
	if got := len(m.st.feed.items); got != 7+feedPage {
		t.Fatalf("%d items after one load, want %d", got, 7+feedPage)
	}
	if b := m.broadcasts.selected(&m.st.feed); b == nil || b.ID != "b-1" {
		t.Fatalf("the selection moved while loading: %+v", b)
	}
	m, _ = press(t, m, "up")
	mustContain(t, m, "older note 299")
	m, _ = press(t, m, "home") // reads on to the first
	if got := len(m.st.feed.items); got != 7+300 {
		t.Fatalf("%d items, want all 307", got)
	}
	if !m.st.feed.olderDone {
		t.Fatal("the store ran out of older broadcasts but the feed did not notice")
	}
	mustContain(t, m, "older note 000")
	// Back to the bottom: following again, the history is dropped.
	m, _ = press(t, m, "end")
	mustContain(t, m, "Handler needs the storage")
}

func TestTranscriptLoadsTheTailAndOlderOnDemand(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	var msgs []event.MessageInfo
	for i := 0; i < 1200; i++ {
		msgs = append(msgs, event.MessageInfo{Index: i, Role: "assistant", Content: fmt.Sprintf("message %04d", i)})
	}
	ctl.SetTranscript("s-res1", msgs)
	m, _ = press(t, m, "down", "down", "enter")
	tr := &m.transcript
	if len(tr.msgs) != transcriptKeep || tr.msgs[0].Index != 1200-transcriptKeep {
		t.Fatalf("loaded %d messages from #%d, want the last %d", len(tr.msgs), tr.msgs[0].Index, transcriptKeep)
	}
	mustContain(t, m, "message 1199", "↑ older")
	// Paging up past the oldest message in memory reads one page more.
	for range 100 {
		if m.transcript.msgs[0].Index < 1200-transcriptKeep {
			break
		}
		m, _ = press(t, m, "pgup")
	}
	if first := m.transcript.msgs[0].Index; first != 1200-transcriptKeep-transcriptPage {
		t.Fatalf("after loading older the first message is #%d, want #%d", first, 1200-transcriptKeep-transcriptPage)
	}
	m, _ = press(t, m, "up")
	mustContain(t, m, fmt.Sprintf("message %04d", 1200-transcriptKeep-1))
}

// Events for sessions are applied in O(depth), not O(sessions): a status
// change of a deep session must not touch unrelated nodes.
func TestStatusChangeRollsUpIncrementally(t *testing.T) {
	st := newRunState()
	snap, _ := tuitest.Large(t0, 1000, 0)
	st.applySnapshot(snap)
	leaf := snap.Sessions[len(snap.Sessions)-1]
	before := map[string]int{}
	for id, n := range st.sessions {
		before[id] = n.subtreeTokens
	}
	leaf.Usage.TotalTokens += 7
	st.apply(event.Event{Type: event.SessionStatus, Session: &leaf})
	changed := 0
	for id, n := range st.sessions {
		if n.subtreeTokens != before[id] {
			changed++
			if n.subtreeTokens != before[id]+7 {
				t.Fatalf("%s rolled up %d, want +7", id, n.subtreeTokens-before[id])
			}
		}
	}
	if changed != 4 {
		t.Fatalf("%d sessions changed, want 4 (the leaf and its three ancestors)", changed)
	}
}

func TestFakeBroadcastsPaging(t *testing.T) {
	// The fake serves pages the way the Controller contract says.
	ctl := tuitest.NewController(event.Snapshot{Broadcasts: []event.BroadcastInfo{{ID: "c"}, {ID: "d"}}})
	ctl.SetHistory([]event.BroadcastInfo{{ID: "a"}, {ID: "b"}})
	got, _ := ctl.Broadcasts(context.Background(), "c", 1)
	if len(got) != 1 || got[0].ID != "b" {
		t.Fatalf("page before c = %+v, want [b]", got)
	}
}

// A resumed run's elapsed time, and its sessions' and delegations', leave
// out the stretches it stood stopped.
func TestElapsedLeavesOutThePauses(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	st := newRunState()
	st.applySnapshot(event.Snapshot{
		Run: event.RunInfo{ID: "r-1", Status: "running", Resumed: true, StartedAt: now.Add(-3 * time.Hour),
			// Stopped for an hour, then again for half an hour.
			Pauses: []event.Pause{{From: now.Add(-150 * time.Minute), To: now.Add(-90 * time.Minute)},
				{From: now.Add(-60 * time.Minute), To: now.Add(-30 * time.Minute)}}},
		Sessions: []event.SessionInfo{
			{ID: "s-1", Agent: "orchestrator", Status: "running", CreatedAt: now.Add(-3 * time.Hour)},
			{ID: "s-2", ParentID: "s-1", Agent: "worker", Status: "running", Depth: 1, CreatedAt: now.Add(-100 * time.Minute)},
			{ID: "s-3", ParentID: "s-1", Agent: "worker", Status: "completed", Depth: 1,
				CreatedAt: now.Add(-170 * time.Minute), EndedAt: now.Add(-80 * time.Minute)},
			{ID: "s-4", ParentID: "s-1", Agent: "worker", Status: "running", Depth: 1, CreatedAt: now.Add(-10 * time.Minute)},
		},
	})
	if got, want := st.elapsed(now), 90*time.Minute; got != want {
		t.Errorf("run elapsed %s, want %s", got, want)
	}
	for id, want := range map[string]time.Duration{
		"s-1": 90 * time.Minute,
		"s-2": 100*time.Minute - 10*time.Minute - 30*time.Minute, // created inside the first pause
		"s-3": 90*time.Minute - 60*time.Minute,
		"s-4": 10 * time.Minute,
	} {
		if got := st.sessionElapsed(st.sessions[id].info, now); got != want {
			t.Errorf("%s elapsed %s, want %s", id, got, want)
		}
	}
	// Once it has stopped again, its time stops too.
	st.apply(event.Event{Type: event.RunFinished, Time: now.Add(-5 * time.Minute),
		Run: &event.RunInfo{ID: "r-1", Status: "interrupted", StartedAt: st.run.StartedAt, Pauses: st.run.Pauses,
			EndedAt: now.Add(-5 * time.Minute)}})
	if got, want := st.elapsed(now), 85*time.Minute; got != want {
		t.Errorf("stopped run elapsed %s, want %s", got, want)
	}
}

// While a session waits for its model, the dashboard can tell: it is
// running, no tool of its runs, it is not retrying or waiting for the
// person, and its run goes on. Since when is the last thing it did.
func TestAwaitingModel(t *testing.T) {
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	session := func(status string, sec int, edit func(*event.SessionInfo)) event.Event {
		info := event.SessionInfo{ID: "s-1", Agent: "researcher", Status: status}
		if edit != nil {
			edit(&info)
		}
		return event.Event{Type: event.SessionStatus, SessionID: "s-1", Session: &info, Time: at(sec)}
	}
	tool := func(typ event.Type, call string, sec int) event.Event {
		return event.Event{Type: typ, SessionID: "s-1", Tool: &event.ToolInfo{CallID: call, Name: "read_file"}, Time: at(sec)}
	}
	message := func(sec int) event.Event {
		return event.Event{Type: event.MessageAppended, SessionID: "s-1", Message: &event.MessageInfo{Index: 2, Role: "tool"}, Time: at(sec)}
	}
	ended := event.Event{Type: event.RunFinished, Run: &event.RunInfo{ID: "r-1", Status: "interrupted"}, Time: at(9)}
	tests := []struct {
		name      string
		events    []event.Event
		want      bool
		wantSince time.Time
	}{
		{"created running", []event.Event{session("running", 1, nil)}, true, at(1)},
		{"pending", []event.Event{session("pending", 1, nil)}, false, time.Time{}},
		{"waiting for children", []event.Event{session("running", 1, nil), session("waiting", 2, nil)}, false, time.Time{}},
		{"a tool runs", []event.Event{session("running", 1, nil), tool(event.ToolStarted, "c1", 2)}, false, time.Time{}},
		{"its tool ended", []event.Event{session("running", 1, nil), tool(event.ToolStarted, "c1", 2), tool(event.ToolFinished, "c1", 3)}, true, at(3)},
		{"one of two tools ended", []event.Event{session("running", 1, nil), tool(event.ToolStarted, "c1", 2), tool(event.ToolStarted, "c2", 2),
			tool(event.ToolFinished, "c1", 3)}, false, time.Time{}},
		{"both tools ended, then the result stored", []event.Event{session("running", 1, nil), tool(event.ToolStarted, "c1", 2),
			tool(event.ToolStarted, "c2", 2), tool(event.ToolFinished, "c2", 3), tool(event.ToolFinished, "c1", 4), message(5)}, true, at(5)},
		{"retrying a failed call", []event.Event{session("running", 1, func(i *event.SessionInfo) { i.Retrying = "HTTP 503, again in 2s" })}, false, time.Time{}},
		{"asked the person", []event.Event{session("running", 1, func(i *event.SessionInfo) { i.WaitingHuman = true })}, false, time.Time{}},
		{"the run stopped", []event.Event{session("running", 1, nil), ended}, false, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newRunState()
			st.run = event.RunInfo{ID: "r-1", Status: "running"}
			for _, e := range tt.events {
				st.apply(e)
			}
			since, ok := st.awaitingModel("s-1")
			if ok != tt.want || !since.Equal(tt.wantSince) {
				t.Fatalf("awaitingModel = %v, %v; want %v, %v", since, ok, tt.wantSince, tt.want)
			}
		})
	}
	// Found running in a snapshot, a session that has had no reply yet has
	// waited since it was created; for one that has, the dashboard cannot
	// tell.
	st := newRunState()
	st.applySnapshot(event.Snapshot{Run: event.RunInfo{ID: "r-1", Status: "running"}, Sessions: []event.SessionInfo{
		{ID: "s-1", Agent: "researcher", Status: "running", CreatedAt: at(1)},
		{ID: "s-2", Agent: "researcher", Status: "running", CreatedAt: at(1), Turns: 3}}})
	if since, ok := st.awaitingModel("s-1"); !ok || !since.Equal(at(1)) {
		t.Fatalf("first call, from a snapshot: awaitingModel = %v, %v; want %v, true", since, ok, at(1))
	}
	if since, ok := st.awaitingModel("s-2"); !ok || !since.IsZero() {
		t.Fatalf("later call, from a snapshot: awaitingModel = %v, %v; want the zero time, true", since, ok)
	}
}

// The feed's count is of broadcasts, not of times one was held: those read
// back from the store after being dropped were counted as they arrived.
func TestFeedCountsEachBroadcastOnce(t *testing.T) {
	var f feed
	info := func(i int) event.BroadcastInfo { return event.BroadcastInfo{ID: fmt.Sprintf("b-%d", i)} }
	for i := range 3000 { // seen live from the run's start: older ones dropped
		f.append(info(i))
	}
	if f.base == 0 || f.total != 3000 {
		t.Fatalf("base %d, total %d", f.base, f.total)
	}
	for f.base > 0 { // read back to the first
		n := min(200, f.base)
		older := make([]event.BroadcastInfo, n)
		for i := range older {
			older[i] = info(f.base - n + i)
		}
		f.prepend(older)
	}
	if f.total != 3000 {
		t.Errorf("total %d after reading back, want 3000", f.total)
	}
	// Older than anything seen (a feed opened mid-run without a count):
	// new to the count.
	f.prepend([]event.BroadcastInfo{info(-2), info(-1)})
	if f.total != 3002 {
		t.Errorf("total %d, want 3002", f.total)
	}
}
