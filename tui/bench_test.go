package tui

import (
	"fmt"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// loadedModel is a dashboard holding 1,000 sessions (a tree four levels
// deep) that has received 10,000 broadcasts, at 160x48.
func loadedModel(b *testing.B) Model {
	snap, broadcasts := tuitest.Large(t0, 1000, 10000)
	m, _ := newTestModel(b, snap, 160, 48)
	for i := 0; i < len(broadcasts); i += 500 {
		m, _ = update(m, eventsMsg{events: broadcasts[i:min(i+500, len(broadcasts))]})
	}
	if len(m.st.sessions) != 1000 {
		b.Fatalf("%d sessions", len(m.st.sessions))
	}
	return m
}

// BenchmarkDashboardView is the cost of one frame of a large run.
func BenchmarkDashboardView(b *testing.B) {
	m := loadedModel(b)
	m, _ = press(b, m, "down", "down") // a selection inside the tree
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.frame = i // a new spinner frame every time, as when animating
		_ = m.View()
	}
}

// BenchmarkApplyStatusEvent is the cost of one session status change
// arriving, applied and synced, on the same large run.
func BenchmarkApplyStatusEvent(b *testing.B) {
	m := loadedModel(b)
	snap, _ := tuitest.Large(t0, 1000, 0)
	leaf := snap.Sessions[len(snap.Sessions)-1]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		leaf.Usage.TotalTokens = i
		leaf.LastTool = fmt.Sprint("tool-", i%7)
		e := event.Event{Seq: m.st.lastSeq + 1, Type: event.SessionStatus, SessionID: leaf.ID, Session: &leaf}
		m, _ = update(m, eventsMsg{events: []event.Event{e}})
	}
}
