package runtime

import (
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// deliverTx hands an item to the session, inside a store operation: a
// session between turns (waiting or finished) gets it in its history at
// once; a session in a turn, or not started yet, finds it in its inbox at
// the next turn boundary. A waking item wakes an idle session and
// resurrects a completed one. It reports false when the session cannot
// receive anything (cancelled).
func (s *Session) deliverTx(tx *store.Tx, it *store.InboxItem) (bool, error) {
	it.RunID, it.SessionID = s.r.id, s.id
	// An item without a key of its own cannot be a duplicate; the store
	// gives it one in id order (see store.Tx.AppendInbox).
	generatedKey := it.Key == ""
	s.mu.Lock()
	status := s.rec.Status
	if status == StatusCancelled {
		s.mu.Unlock()
		return false, nil
	}
	if !s.started || s.inTurn {
		inserted := true
		var err error
		if generatedKey {
			err = tx.AppendInbox(it)
		} else {
			inserted, err = tx.InsertInbox(it)
		}
		if err != nil {
			s.mu.Unlock()
			return false, err
		}
		if inserted {
			s.inbox = append(s.inbox, it)
		}
		s.mu.Unlock()
		return true, nil
	}
	if err := s.flushInboxLocked(tx); err != nil {
		s.mu.Unlock()
		return false, err
	}
	if err := s.appendMessageTx(tx, inboxMessage(it)); err != nil {
		s.mu.Unlock()
		return false, err
	}
	s.mu.Unlock()
	if !it.Waking || status == StatusFailed {
		return true, nil
	}
	if status == StatusCompleted {
		return true, s.resurrectTx(tx)
	}
	s.signal()
	return true, nil
}

// flushInboxLocked moves whatever waits in the inbox into the history, in
// arrival order, once the session is between turns. The inbox holds what
// arrived during a turn or before the session started; left there, it
// would come after later items that went straight into the history, or
// never show at all in a session that is not woken again, though every
// sender was told it was delivered. Runs inside a store operation; s.mu
// must be held.
func (s *Session) flushInboxLocked(tx *store.Tx) error {
	if s.inTurn || !s.started || len(s.inbox) == 0 {
		return nil
	}
	for len(s.inbox) > 0 {
		if err := s.appendMessageTx(tx, inboxMessage(s.inbox[0])); err != nil {
			return err
		}
		s.inbox = s.inbox[1:]
	}
	s.inbox = nil
	return nil
}

// resurrectTx brings a completed session back to take another turn.
func (s *Session) resurrectTx(tx *store.Tx) error {
	if err := s.r.reopenTx(tx); err != nil {
		return err
	}
	s.mu.Lock()
	s.startedAt = s.r.e.now() // a woken session gets a fresh session_timeout
	s.mu.Unlock()
	if err := s.setStatusTx(tx, StatusRunning, "woken by a new message"); err != nil {
		return err
	}
	s.signal()
	s.start()
	return nil
}

// consumeResults marks the <task_result> items of the given children as
// taken by a tool call that returned their outcomes itself, so that they
// are not injected a second time. The call returned each child's latest
// result; what a child reported before a message woke it again is taken
// too, and returned, oldest first, for the call to give along with the
// latest: delivered after the call, an earlier result would be the last
// word the parent read about that child.
func (s *Session) consumeResults(callID string, children map[string]bool) (earlier map[string][]string, err error) {
	err = s.r.e.store.Apply(s.ctx, func(tx *store.Tx) error {
		s.mu.Lock()
		var ids []int64
		earlier = nil
		latest := map[string]int{}
		for i, it := range s.inbox {
			if it.Kind == "task_result" && children[it.FromSession] {
				latest[it.FromSession] = i
			}
		}
		kept := s.inbox[:0:0]
		for i, it := range s.inbox {
			if it.Kind != "task_result" || !children[it.FromSession] {
				kept = append(kept, it)
				continue
			}
			ids = append(ids, it.ID)
			if i != latest[it.FromSession] {
				if earlier == nil {
					earlier = map[string][]string{}
				}
				earlier[it.FromSession] = append(earlier[it.FromSession], it.Content)
			}
		}
		s.inbox = kept
		s.mu.Unlock()
		return tx.MarkConsumed(ids, callID)
	})
	return earlier, err
}
