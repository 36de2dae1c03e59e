package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// coalesceWindow bounds how often runtime events cause a render: events that
// arrive within one window reach Update as one message (about 30 a second).
const coalesceWindow = 33 * time.Millisecond

// lossyBuffer is how many undelivered token deltas the bus keeps for us
// before dropping new ones.
const lossyBuffer = 256

// eventsMsg carries a batch of runtime events, in order.
type eventsMsg struct {
	events []event.Event
	closed bool // the subscription ended; no more events will come
}

// listen returns a command that waits for the next event on sub, then keeps
// collecting for one coalescing window, and returns the batch. Update
// re-issues it after applying each batch, so at most one read is in flight
// and events wait in the subscription's own queue meanwhile (must-deliver
// events are queued without bound there; deltas are dropped when behind).
// When ctx ends the command closes the subscription.
func listen(ctx context.Context, sub *event.Subscription, window time.Duration) tea.Cmd {
	return func() tea.Msg {
		var batch []event.Event
		select {
		case e, ok := <-sub.C:
			if !ok {
				return eventsMsg{closed: true}
			}
			batch = coalesce(batch, e)
		case <-ctx.Done():
			sub.Close()
			return nil
		}
		timer := time.NewTimer(window)
		defer timer.Stop()
		for {
			select {
			case e, ok := <-sub.C:
				if !ok {
					return eventsMsg{events: batch, closed: true}
				}
				batch = coalesce(batch, e)
			case <-timer.C:
				return eventsMsg{events: batch}
			case <-ctx.Done():
				sub.Close()
				return nil
			}
		}
	}
}

// coalesce appends e, merging a token delta into the previous one when both
// continue the same session's stream: a flood of tiny deltas then costs one
// update instead of hundreds. Events are shared with other subscribers, so a
// merged delta is a new value.
func coalesce(batch []event.Event, e event.Event) []event.Event {
	if e.Type == event.MessageDelta && e.Delta != nil && !e.Delta.Reset && len(batch) > 0 {
		last := &batch[len(batch)-1]
		if last.Type == event.MessageDelta && last.Delta != nil && last.SessionID == e.SessionID &&
			(e.Delta.ToolName == "" || e.Delta.ToolName == last.Delta.ToolName) {
			merged := *last.Delta
			merged.Content += e.Delta.Content
			last.Delta = &merged
			last.Time = e.Time
			return batch
		}
	}
	return append(batch, e)
}
