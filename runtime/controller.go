package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// maxHumanText bounds what a person can send in one broadcast or message.
const maxHumanText = 8000

// feedKeep is how many feed items a run keeps in memory for snapshots.
const feedKeep = 2000

var _ event.Controller = (*Run)(nil)

// Snapshot is the run's current state (event.Controller).
func (r *Run) Snapshot() event.Snapshot {
	var snap event.Snapshot
	// Taken inside a store operation: the state is that of every operation
	// so far, and LastSeq is the sequence of the last event they emitted.
	err := r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		snap = r.snapshotLocked()
		seq, err := tx.LastSeq(r.id)
		snap.LastSeq = seq
		return err
	})
	if err != nil {
		snap = r.snapshotLocked()
	}
	return snap
}

func (r *Run) snapshotLocked() event.Snapshot {
	r.mu.Lock()
	snap := event.Snapshot{Run: *r.runInfo()}
	// A dashboard opened on a resumed run subscribes after its run.started.
	snap.Run.Resumed = r.resumed
	sessions := append([]*Session(nil), r.order...)
	snap.Broadcasts = append([]event.BroadcastInfo(nil), r.feed...)
	snap.BroadcastTotal = r.feedTotal
	var dels []store.Delegation
	for _, d := range r.delegations {
		dels = append(dels, d.rec)
	}
	r.mu.Unlock()
	for _, s := range sessions {
		snap.Sessions = append(snap.Sessions, *s.info())
		s.planMu.Lock()
		if s.plan != nil {
			snap.Plans = append(snap.Plans, *planInfo(s.id, s.plan))
		}
		s.planMu.Unlock()
	}
	for i := range dels {
		snap.Delegations = append(snap.Delegations, *delegationInfo(&dels[i]))
	}
	sortDelegations(snap.Delegations)
	snap.Questions = r.questions.unsettled()
	return snap
}

func sortDelegations(ds []event.DelegationInfo) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].CreatedAt.Before(ds[j-1].CreatedAt); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// Subscribe opens a subscription to the engine's events.
func (r *Run) Subscribe(lossyBuffer int) *event.Subscription { return r.e.bus.Subscribe(lossyBuffer) }

// ReadOnly is false for a live run.
func (r *Run) ReadOnly() bool { return false }

func checkHumanText(text string) (string, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", errors.New("the text is empty")
	}
	if n := utf8.RuneCountInString(text); n > maxHumanText {
		return "", fmt.Errorf("the text is %d characters; the limit is %d", n, maxHumanText)
	}
	return text, nil
}

// subtree lists s and its descendants.
func (s *Session) subtree() []*Session {
	out := []*Session{s}
	for _, c := range s.childList() {
		out = append(out, c.subtree()...)
	}
	return out
}

// Broadcast sends a human broadcast, passively, to every session or to a
// session's subtree.
func (r *Run) Broadcast(ctx context.Context, text, target, category string) error {
	text, err := checkHumanText(text)
	if err != nil {
		return err
	}
	if category == "" {
		category = "context"
	}
	if err := coordination.CheckCategory(category); err != nil {
		return err
	}
	// A broadcast is passive: in a run that has ended nobody would read it.
	r.mu.Lock()
	finished, status := r.finished, r.rec.Status
	r.mu.Unlock()
	if finished {
		switch status {
		case RunCancelled:
			return fmt.Errorf("run %s was cancelled: a broadcast would reach nobody (start a new run instead)", r.id)
		case RunFailed:
			return fmt.Errorf("run %s has failed: a broadcast would reach nobody (resume the run first: `swarmdeck resume %s`)", r.id, r.id)
		}
		return fmt.Errorf("run %s has %s: a broadcast would reach nobody (a message to a session wakes it)", r.id, status)
	}
	var recipients []*Session
	switch target {
	case "", "all":
		target = "all"
		recipients = r.allSessions()
	default:
		s := r.session(target)
		if s == nil {
			return fmt.Errorf("no session %q in run %s", target, r.id)
		}
		recipients = s.subtree()
	}
	return r.e.store.Do(ctx, func(tx *store.Tx) error {
		content := coordination.FormatHumanBroadcast(category, text)
		rec := &store.Broadcast{Kind: event.KindHuman, FromLabel: "human", Category: category, Target: target, Message: text, NoReply: true}
		shared, err := tx.ShareContent(content)
		if err != nil {
			return err
		}
		for _, k := range recipients {
			ok, err := k.deliverTx(tx, &store.InboxItem{Kind: "human", Content: content, Source: "human", Shared: shared})
			if err != nil {
				return err
			}
			if ok {
				rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "delivered"})
			} else {
				rec.Skipped++
				rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "skipped", Reason: "cancelled"})
			}
		}
		return r.recordFeedTx(tx, rec)
	})
}

// SendMessage sends a human message to one session; unless noReply it
// wakes the session (resurrecting it when it had completed).
func (r *Run) SendMessage(ctx context.Context, sessionID, text string, noReply bool) error {
	text, err := checkHumanText(text)
	if err != nil {
		return err
	}
	s := r.session(sessionID)
	if s == nil {
		return fmt.Errorf("no session %q in run %s", sessionID, r.id)
	}
	if st := s.status(); st == StatusCancelled {
		return fmt.Errorf("session %s was cancelled: it cannot receive messages", sessionID)
	}
	// A cancelled run was ended on purpose: a message would start it again
	// (and spend tokens), or, passive, reach nobody.
	r.mu.Lock()
	cancelled := r.finished && r.rec.Status == RunCancelled
	r.mu.Unlock()
	if cancelled {
		return fmt.Errorf("run %s was cancelled: it takes no more messages (start a new run instead)", r.id)
	}
	return r.e.store.Do(ctx, func(tx *store.Tx) error {
		item := &store.InboxItem{Kind: "human", Waking: !noReply, Content: coordination.FormatHumanMessage(text), Source: "human"}
		ok, err := s.deliverTx(tx, item)
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("session %s cannot receive messages", sessionID)
		}
		return r.recordFeedTx(tx, &store.Broadcast{Kind: event.KindHuman, FromLabel: "human", Target: s.id, Message: text, NoReply: noReply,
			Recipients: []store.Recipient{{SessionID: s.id, Status: "delivered"}}})
	})
}

// Answer answers an open question for the human.
func (r *Run) Answer(ctx context.Context, questionID, text string) error {
	return r.answerHuman(ctx, questionID, text, false)
}

// Skip declines to answer a question.
func (r *Run) Skip(ctx context.Context, questionID string) error {
	return r.answerHuman(ctx, questionID, "", true)
}

// SkipAll declines every question of the run, now and later.
func (r *Run) SkipAll(ctx context.Context) error { return r.skipAll(ctx) }

// Cancel cancels a session and its subtree; cancelling the root cancels
// the run.
func (r *Run) Cancel(ctx context.Context, sessionID string) error {
	s := r.session(sessionID)
	if s == nil {
		return fmt.Errorf("no session %q in run %s", sessionID, r.id)
	}
	if st := s.status(); terminal(st) {
		return fmt.Errorf("session %s has already ended (%s): there is nothing to cancel", sessionID, st)
	}
	r.cancelTree(s, "cancelled by the human", StatusCancelled, nil)
	return nil
}

// Transcript reads a session's messages from the store.
func (r *Run) Transcript(ctx context.Context, sessionID string, from, limit int) ([]event.MessageInfo, error) {
	return transcriptFrom(ctx, r.e.store, r.id, sessionID, from, limit)
}

func transcriptFrom(ctx context.Context, st *store.Store, runID, sessionID string, from, limit int) ([]event.MessageInfo, error) {
	msgs, err := st.Messages(ctx, runID, sessionID, from, limit)
	if err != nil {
		return nil, err
	}
	out := make([]event.MessageInfo, 0, len(msgs))
	for i := range msgs {
		out = append(out, *messageInfo(&msgs[i]))
	}
	return out, nil
}

// Broadcasts reads older feed items from the store.
func (r *Run) Broadcasts(ctx context.Context, before string, limit int) ([]event.BroadcastInfo, error) {
	return feedFrom(ctx, r.e.store, r.id, before, limit)
}

func feedFrom(ctx context.Context, st *store.Store, runID, before string, limit int) ([]event.BroadcastInfo, error) {
	var seq int64
	if before != "" {
		var err error
		if seq, err = st.BroadcastSeq(ctx, runID, before); err != nil {
			return nil, err
		}
	}
	bs, err := st.Broadcasts(ctx, runID, seq, limit)
	if err != nil {
		return nil, err
	}
	out := make([]event.BroadcastInfo, 0, len(bs))
	for _, b := range bs {
		out = append(out, feedInfo(&b))
	}
	return out, nil
}

func feedInfo(b *store.Broadcast) event.BroadcastInfo {
	info := event.BroadcastInfo{ID: b.ID, Kind: b.Kind, FromSession: b.FromSession, From: b.FromLabel, Category: b.Category,
		Target: b.Target, Message: b.Message, Skipped: b.Skipped, NoReply: b.NoReply, Timestamp: b.CreatedAt, Recipients: []string{}}
	for _, rc := range b.Recipients {
		if rc.Status == "delivered" {
			info.Recipients = append(info.Recipients, rc.SessionID)
		}
	}
	return info
}
