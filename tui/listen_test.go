package tui

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

func statusEvent(i int) event.Event {
	e := ev(event.SessionStatus, "s-root")
	e.Session = &event.SessionInfo{ID: "s-root", Agent: "orchestrator", Status: "running", Turns: i}
	return e
}

// A burst of events arriving within one window reaches Update as one
// message, in order.
func TestListenCoalescesABurst(t *testing.T) {
	ctl := tuitest.NewController(event.Snapshot{})
	sub := ctl.Subscribe(lossyBuffer)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := 0; i < 50; i++ {
		ctl.Publish(statusEvent(i))
	}
	start := time.Now()
	msg := listen(ctx, sub, 100*time.Millisecond)().(eventsMsg)
	if len(msg.events) != 50 {
		t.Fatalf("got %d events in the batch, want all 50", len(msg.events))
	}
	for i, e := range msg.events {
		if e.Session.Turns != i {
			t.Fatalf("event %d out of order", i)
		}
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("the batch came after %v, before the window closed: renders would not be bounded", d)
	}
}

// Token deltas are lossy, everything else must be applied: under a flood of
// deltas every status event still arrives, in order.
func TestListenDeliversEveryEventUnderDeltaFlood(t *testing.T) {
	ctl := tuitest.NewController(event.Snapshot{})
	sub := ctl.Subscribe(4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for i := 0; i < 200; i++ {
			for j := 0; j < 50; j++ {
				ctl.Publish(deltaEvent("s-root", "tok ", false))
			}
			ctl.Publish(statusEvent(i))
		}
	}()
	next := 0
	deadline := time.Now().Add(10 * time.Second)
	for next < 200 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 200 status events arrived", next)
		}
		msg := listen(ctx, sub, 5*time.Millisecond)().(eventsMsg)
		for _, e := range msg.events {
			if e.Type == event.SessionStatus {
				if e.Session.Turns != next {
					t.Fatalf("status event %d arrived as number %d", e.Session.Turns, next)
				}
				next++
			}
		}
	}
}

func TestCoalesceMergesDeltasOfOneStream(t *testing.T) {
	var batch []event.Event
	shared := deltaEvent("s-1", "Hel", false)
	batch = coalesce(batch, shared)
	batch = coalesce(batch, deltaEvent("s-1", "lo", false))
	batch = coalesce(batch, deltaEvent("s-2", "other", false))
	batch = coalesce(batch, deltaEvent("s-2", "new", true))
	if len(batch) != 3 {
		t.Fatalf("got %d events, want 3 (s-1 merged, s-2, s-2 reset)", len(batch))
	}
	if batch[0].Delta.Content != "Hello" {
		t.Fatalf("merged delta %q, want Hello", batch[0].Delta.Content)
	}
	if shared.Delta.Content != "Hel" {
		t.Fatal("coalescing changed an event shared with other subscribers")
	}
}

func TestListenEndsWithContextAndClosedSubscription(t *testing.T) {
	ctl := tuitest.NewController(event.Snapshot{})
	sub := ctl.Subscribe(lossyBuffer)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan any)
	go func() { done <- listen(ctx, sub, time.Millisecond)() }()
	cancel()
	select {
	case msg := <-done:
		if msg != nil {
			t.Fatalf("got %v after the context ended, want nothing", msg)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the listener did not stop when the context ended")
	}
	// The listener closed the subscription: C is closed soon after.
	select {
	case _, ok := <-sub.C:
		if ok {
			t.Fatal("an event arrived after close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription was not closed")
	}

	sub2 := ctl.Subscribe(lossyBuffer)
	sub2.Close()
	msg := listen(context.Background(), sub2, time.Millisecond)().(eventsMsg)
	if !msg.closed {
		t.Fatal("a closed subscription was not reported")
	}
}

// The dashboard stays responsive when a thousand sessions arrive in one
// batch: the tree is rebuilt once per batch, not once per event.
func TestManySessionsInOneBatch(t *testing.T) {
	m, _ := newTestModel(t, event.Snapshot{Run: event.RunInfo{ID: "r", Status: "running"}}, 160, 48)
	snap, _ := tuitest.Large(t0, 1000, 0)
	events := make([]event.Event, len(snap.Sessions))
	for i := range snap.Sessions {
		events[i] = sessionEvent(event.SessionCreated, snap.Sessions[i])
	}
	before := m.sessions.rebuilds
	m = apply(m, events...)
	mustContain(t, m, "Sessions · 1,000")
	if n := m.sessions.rebuilds - before; n > 1 {
		t.Fatalf("the tree rows were rebuilt %d times for one batch, want once", n)
	}
	var rolled int
	for _, s := range snap.Sessions {
		rolled += s.Usage.TotalTokens
	}
	if got := m.st.sessions["s-0"].subtreeTokens; got != rolled {
		t.Fatalf("root rolls up %d tokens, want %d", got, rolled)
	}
	if !strings.Contains(plainView(m), fmt.Sprintf("%s tokens", fmtCount(rolled))) {
		t.Fatal("header total does not match the roll-up")
	}
}
