// Package tuitest provides an in-memory event.Controller and deterministic
// run states for testing the dashboard (and anything else that consumes the
// runtime's events) without a runtime, a store or an LLM.
package tuitest

import (
	"context"
	"sync"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Call is one action the controller received.
type Call struct {
	Op         string // broadcast, message, answer, skip, skip_all, cancel
	Text       string
	Target     string // broadcast target: "all" or a session id
	Category   string
	SessionID  string // message and cancel
	NoReply    bool
	QuestionID string // answer and skip
}

// Controller is a fake event.Controller. Its snapshot is fixed at creation
// (events published later go only to subscribers, as with the runtime), it
// records every action, and it serves transcripts and older broadcasts from
// memory. It is safe for concurrent use.
type Controller struct {
	bus event.Bus

	mu          sync.Mutex
	snap        event.Snapshot
	readOnly    bool
	err         error
	calls       []Call
	transcripts map[string][]event.MessageInfo
	history     []event.BroadcastInfo // older broadcasts, oldest first
	seq         int64
	called      chan struct{}
}

var _ event.Controller = (*Controller)(nil)

// NewController returns a fake controller whose Snapshot is snap.
func NewController(snap event.Snapshot) *Controller {
	return &Controller{
		snap:        snap,
		seq:         snap.LastSeq,
		transcripts: map[string][]event.MessageInfo{},
		called:      make(chan struct{}, 1024),
	}
}

// SetReadOnly makes the controller report a stored run.
func (c *Controller) SetReadOnly(ro bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readOnly = ro
}

// SetError makes every later action fail with err (nil: succeed).
func (c *Controller) SetError(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
}

// SetTranscript sets the stored messages of a session.
func (c *Controller) SetTranscript(sessionID string, msgs []event.MessageInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transcripts[sessionID] = append([]event.MessageInfo(nil), msgs...)
}

// SetHistory sets broadcasts older than the snapshot's, oldest first, served
// by Broadcasts.
func (c *Controller) SetHistory(items []event.BroadcastInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.history = append([]event.BroadcastInfo(nil), items...)
}

// Publish sends events to subscribers. Events with Seq 0 (other than token
// deltas) are numbered after the snapshot, as the runtime would.
func (c *Controller) Publish(events ...event.Event) {
	events = append([]event.Event(nil), events...)
	c.mu.Lock()
	for i := range events {
		if events[i].Seq == 0 && events[i].Type != event.MessageDelta {
			c.seq++
			events[i].Seq = c.seq
		}
	}
	c.mu.Unlock()
	for _, e := range events {
		if e.Type == event.MessageDelta {
			c.bus.PublishLossy(e)
			continue
		}
		c.bus.Publish(e)
	}
}

// Calls returns the actions received so far.
func (c *Controller) Calls() []Call {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Call(nil), c.calls...)
}

// Called is signalled once per action received.
func (c *Controller) Called() <-chan struct{} { return c.called }

func (c *Controller) record(call Call) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readOnly {
		return errReadOnly
	}
	if c.err != nil {
		return c.err
	}
	c.calls = append(c.calls, call)
	select {
	case c.called <- struct{}{}:
	default:
	}
	return nil
}

type constError string

func (e constError) Error() string { return string(e) }

const errReadOnly = constError("the run is stored, not running")

// Snapshot implements event.Controller.
func (c *Controller) Snapshot() event.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// Subscribe implements event.Controller.
func (c *Controller) Subscribe(lossyBuffer int) *event.Subscription {
	return c.bus.Subscribe(lossyBuffer)
}

// ReadOnly implements event.Controller.
func (c *Controller) ReadOnly() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.readOnly
}

// Broadcast implements event.Controller.
func (c *Controller) Broadcast(_ context.Context, text, target, category string) error {
	return c.record(Call{Op: "broadcast", Text: text, Target: target, Category: category})
}

// SendMessage implements event.Controller.
func (c *Controller) SendMessage(_ context.Context, sessionID, text string, noReply bool) error {
	return c.record(Call{Op: "message", SessionID: sessionID, Text: text, NoReply: noReply})
}

// Answer implements event.Controller.
func (c *Controller) Answer(_ context.Context, questionID, text string) error {
	return c.record(Call{Op: "answer", QuestionID: questionID, Text: text})
}

// Skip implements event.Controller.
func (c *Controller) Skip(_ context.Context, questionID string) error {
	return c.record(Call{Op: "skip", QuestionID: questionID})
}

// SkipAll implements event.Controller.
func (c *Controller) SkipAll(context.Context) error {
	return c.record(Call{Op: "skip_all"})
}

// Cancel implements event.Controller.
func (c *Controller) Cancel(_ context.Context, sessionID string) error {
	return c.record(Call{Op: "cancel", SessionID: sessionID})
}

// Transcript implements event.Controller.
func (c *Controller) Transcript(_ context.Context, sessionID string, from, limit int) ([]event.MessageInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event.MessageInfo
	for _, m := range c.transcripts[sessionID] {
		if m.Index >= from && len(out) < limit {
			out = append(out, m)
		}
	}
	return out, nil
}

// Broadcasts implements event.Controller: the history, then the snapshot's
// broadcasts, read backwards from before.
func (c *Controller) Broadcasts(_ context.Context, before string, limit int) ([]event.BroadcastInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	all := append(append([]event.BroadcastInfo(nil), c.history...), c.snap.Broadcasts...)
	end := len(all)
	if before != "" {
		end = 0
		for i, b := range all {
			if b.ID == before {
				end = i
				break
			}
		}
	}
	start := max(end-limit, 0)
	return append([]event.BroadcastInfo(nil), all[start:end]...), nil
}
