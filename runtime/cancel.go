package runtime

import (
	"context"
	"errors"
	"fmt"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// cancelTree ends a session and every active descendant with status
// (cancelled, or failed when the run cannot go on) and the reason. In-flight
// LLM calls and tools stop through the sessions' contexts. The parent of the
// top session gets a <task_result> unless skipReport.
func (r *Run) cancelTree(top *Session, reason, status string, skipReport func()) []string {
	var ended []string
	err := r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		ended = ended[:0]
		if skipReport != nil {
			skipReport()
		}
		return r.endSubtreeTx(tx, top, reason, status, true, &ended)
	})
	if err != nil {
		r.e.log.Error("could not record a cancellation", "session", top.id, "err", err)
	}
	return ended
}

// cancelChildrenTx ends the active descendants of s (not s itself).
func (r *Run) cancelChildrenTx(tx *store.Tx, s *Session, reason string) error {
	var ended []string
	for _, c := range s.childList() {
		if err := r.endSubtreeTx(tx, c, reason, StatusCancelled, false, &ended); err != nil {
			return err
		}
	}
	return nil
}

func (r *Run) endSubtreeTx(tx *store.Tx, s *Session, reason, status string, report bool, ended *[]string) error {
	// Children first, so that a parent never sees a child still active
	// after it has itself ended.
	for _, c := range s.childList() {
		if err := r.endSubtreeTx(tx, c, reason, status, false, ended); err != nil {
			return err
		}
	}
	if terminal(s.status()) {
		return nil
	}
	s.mu.Lock()
	if err := s.flushLocked(tx); err != nil {
		s.mu.Unlock()
		return err
	}
	s.rec.Error = reason
	s.inTurn = false
	s.mu.Unlock()
	if err := s.setStatusTx(tx, status, reason); err != nil {
		return err
	}
	*ended = append(*ended, s.id)
	s.cancel(errors.New(reason))
	if report {
		return s.reportTx(tx)
	}
	return nil
}

// checkChainTx starts a pending session whose predecessors have all
// finished, or fails it when one of them failed or was cancelled.
func (r *Run) checkChainTx(tx *store.Tx, s *Session) error {
	if s.status() != StatusPending {
		return nil
	}
	s.mu.Lock()
	waitOn := append([]string(nil), s.waitOn...)
	refs := s.refs
	s.mu.Unlock()
	// A predecessor that failed or was cancelled fails the session at
	// once, whichever others are still at work.
	var unfinished bool
	for _, id := range waitOn {
		p := r.session(id)
		if p == nil {
			continue
		}
		st := p.status()
		switch {
		case st == StatusFailed || st == StatusCancelled:
			p.mu.Lock()
			why := p.rec.Error
			p.mu.Unlock()
			reason := fmt.Sprintf("predecessor %s %s", p.display(), st)
			if why != "" {
				reason += ": " + why
			}
			s.mu.Lock()
			s.rec.Error = reason
			s.mu.Unlock()
			if err := s.setStatusTx(tx, StatusFailed, reason); err != nil {
				return err
			}
			return s.reportTx(tx)
		case !terminal(st):
			unfinished = true
		}
	}
	if unfinished {
		return nil // still waiting
	}
	// Every predecessor completed: the chain holds the session back no
	// more, even if one of them is woken again before it starts (it may
	// wait for a free slot or place first), and a resume knows it too.
	s.mu.Lock()
	s.waitOn, s.rec.WaitOn = nil, nil
	s.mu.Unlock()
	// Resolve the $ references into the context.
	if len(refs) > 0 {
		res, err := coordination.ResolveReferences(refs, r.refLookup(s.parent))
		if err != nil {
			s.mu.Lock()
			s.rec.Error = err.Error()
			s.mu.Unlock()
			if err := s.setStatusTx(tx, StatusFailed, err.Error()); err != nil {
				return err
			}
			return s.reportTx(tx)
		}
		s.mu.Lock()
		s.sharedCtx = res.Apply(s.sharedCtx)
		s.refs = nil
		s.rec.Refs = nil
		s.rec.SharedContext, _ = s.sharedCtx.MarshalJSON()
		s.mu.Unlock()
	}
	if s.delegationID != "" && !r.delegationMayStart(s) {
		return s.setStatusTx(tx, StatusPending, "queued: max_concurrent_delegations reached")
	}
	if err := s.setStatusTx(tx, StatusRunning, ""); err != nil {
		return err
	}
	s.start()
	return nil
}

// refLookup finds a sibling by label or task id for $ references.
func (r *Run) refLookup(parent *Session) func(name string) (coordination.RefTarget, bool) {
	return func(name string) (coordination.RefTarget, bool) {
		var kids []*Session
		if parent != nil {
			kids = parent.childList()
		}
		for _, k := range kids {
			if k.label == name || k.id == name {
				k.mu.Lock()
				t := coordination.RefTarget{SessionID: k.id, Label: k.label, Status: k.rec.Status, Result: k.rec.Result}
				k.mu.Unlock()
				return t, true
			}
		}
		return coordination.RefTarget{}, false
	}
}
