package runtime

import (
	"fmt"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// A failed run can be resumed once the cause of its failure is fixed:
// credit added after insufficient_quota, a key or a model corrected, a
// limit raised. The sessions its failure ended come back and take up their
// work where it stopped. Which ones is read from the store:
//
//   - the root, whose failure ended the run;
//   - below a session that comes back, each child that failed before its
//     parent could answer the failure: the report is still in the parent's
//     inbox, or is the last thing its history holds (the parent's model
//     call failed in turn), or there was none (the run's token budget ended
//     the child with the rest);
//   - and each child cancelled because its parent failed.
//
// A failure its parent has answered with a reply of its model stays: the
// parent has acted on it, perhaps given the work to another session. A
// session cancelled by a person or by an agent stays cancelled.

// reasonRevived is the status reason of a session brought back.
const reasonRevived = "resumed after the run failed"

// consumedByRevival marks a failure report withdrawn before it was
// delivered, because its session came back.
const consumedByRevival = "revived"

// revival is what resuming a failed run changes.
type revival struct {
	sessions []*Session // to bring back, each after its children
	withdraw []int64    // failure reports not delivered yet: their sessions come back
	// told lists, for a parent that comes back, its children that come
	// back although its history says they failed or were cancelled.
	told map[*Session][]*Session
	// cut lists, for a session that comes back, its calls that the
	// failure cut short ("sessions_spawn (call_7)"): their results say
	// they did not run to their end, and the session is told it may make
	// them again.
	cut map[*Session][]string
	// failure is why the run failed.
	failure string
}

// planRevival chooses the sessions of a failed run that come back (see
// above). msgs are the run's stored messages by session, reports its
// <task_result> items by key.
func (r *Run) planRevival(msgs map[string][]store.Message, reports map[string]store.Report) *revival {
	v := &revival{told: map[*Session][]*Session{}, cut: map[*Session][]string{}}
	r.mu.Lock()
	root := r.root
	v.failure = r.rec.Error
	r.mu.Unlock()
	if root == nil || root.status() != StatusFailed {
		return v // it stopped in a way the store did not record: a plain resume
	}
	var walk func(p *Session)
	walk = func(p *Session) {
		for _, c := range p.childList() {
			c.mu.Lock()
			status, reason, n, ended := c.rec.Status, c.rec.Reason, c.rec.Completions, c.rec.EndedAt
			c.mu.Unlock()
			switch status {
			case StatusFailed:
				var rep *store.Report
				if x, ok := reports[reportKey(c.id, n, status)]; ok {
					rep = &x
				}
				switch delivered, answered := answeredBy(msgs[p.id], c.id, rep, ended); {
				case answered:
					continue
				case delivered:
					v.told[p] = append(v.told[p], c)
				case rep != nil:
					v.withdraw = append(v.withdraw, rep.ID)
				}
			case StatusCancelled:
				if reason != reasonParentFailed(p.id) {
					continue
				}
			default:
				continue
			}
			walk(c)
		}
		v.sessions = append(v.sessions, p)
	}
	walk(root)
	for _, s := range v.sessions {
		if calls := cutShort(msgs[s.id]); len(calls) > 0 {
			v.cut[s] = calls
		}
	}
	return v
}

// cutShort names the calls of the last answer in history whose results
// say that the session's end cut them short (see closeUnansweredCalls):
// "sessions_spawn (call_7)".
func cutShort(history []store.Message) []string {
	last := -1
	for i := len(history) - 1; i >= 0 && last < 0; i-- {
		if history[i].Role == "assistant" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	var out []string
	for _, c := range history[last].ToolCalls {
		for _, m := range history[last+1:] {
			if m.Role == "tool" && m.ToolCallID == c.ID && strings.Contains(m.Content, notRunToItsEnd) {
				out = append(out, c.Name+" ("+c.ID+")")
				break
			}
		}
	}
	return out
}

// reasonParentFailed is the reason of a session cancelled because its
// parent failed.
func reasonParentFailed(parentID string) string {
	return "parent " + parentID + " failed"
}

// answeredBy reports whether the report of a child's failure reached the
// parent's history (delivered), and whether the parent's model has replied
// since (answered). history is the parent's stored messages, in order; rep
// is the report's inbox item, which a report delivered straight into the
// history of a parent between turns does not have; ended is when the child
// ended, which such a report is not older than (a report of an earlier
// failure, undone by an earlier resume, is).
func answeredBy(history []store.Message, childID string, rep *store.Report, ended time.Time) (delivered, answered bool) {
	at := -1
	switch {
	case rep != nil && rep.Index >= 0:
		at = rep.Index
	case rep != nil && rep.ConsumedBy != "" && rep.ConsumedBy != consumedByRevival:
		// Returned by a waiting tool call: it is in the call's result.
		for _, m := range history {
			if m.Role == "tool" && m.ToolCallID == rep.ConsumedBy {
				at = m.Index
			}
		}
	case rep == nil:
		for i := len(history) - 1; i >= 0 && at < 0; i-- {
			if m := history[i]; m.Role == "user" && m.Source == "system" && !m.CreatedAt.Before(ended) {
				if d, ok := coordination.ParseDelivered(m.Content); ok && d.Tag == coordination.TagTaskResult && d.TaskID == childID &&
					(d.Status == StatusFailed || d.Status == StatusCancelled) {
					at = m.Index
				}
			}
		}
	}
	if at < 0 {
		return false, false
	}
	for _, m := range history {
		if m.Index > at && m.Role == "assistant" {
			return true, true
		}
	}
	return true, false
}

// reviveTx brings the planned sessions back, children first, so that a
// parent with children at work again waits for them instead of calling its
// model at once; a parent told that they had failed gets a note that they
// have not. Runs inside the store operation that records the resume.
func (r *Run) reviveTx(tx *store.Tx, v *revival) error {
	if err := tx.MarkConsumed(v.withdraw, consumedByRevival); err != nil {
		return err
	}
	withdrawn := map[int64]bool{}
	for _, id := range v.withdraw {
		withdrawn[id] = true
	}
	for _, s := range v.sessions {
		s.mu.Lock()
		kept := s.inbox[:0:0]
		for _, it := range s.inbox {
			if !withdrawn[it.ID] {
				kept = append(kept, it)
			}
		}
		s.inbox = kept
		s.mu.Unlock()
	}
	for _, s := range v.sessions {
		if err := s.reviveTx(tx); err != nil {
			return err
		}
		if kids, calls := v.told[s], v.cut[s]; len(kids)+len(calls) > 0 {
			names := make([]string, len(kids))
			for i, k := range kids {
				names[i] = k.display() + " " + k.id
			}
			note := coordination.FormatRunResumed(v.failure, names, calls)
			if _, err := s.deliverTx(tx, &store.InboxItem{Kind: "note", Content: note, Source: "system"}); err != nil {
				return err
			}
		}
	}
	return nil
}

// reviveTx brings one session of a failed run back: it waits for its
// predecessors or a free delegation place if it never started, runs the
// tools its end cut short, waits for children that came back before it,
// or else takes its turn again.
func (s *Session) reviveTx(tx *store.Tx) error {
	s.mu.Lock()
	started, waitsOn := s.started, len(s.waitOn) > 0 || len(s.refs) > 0
	s.inTurn = started && s.pendingCallsLocked()
	inTurn := s.inTurn
	s.mu.Unlock()
	status := StatusRunning
	switch {
	case !started && (waitsOn || s.delegationID != ""):
		status = StatusPending
	case started && !inTurn && s.activeChildren() > 0:
		status = StatusWaiting
	}
	s.mu.Lock()
	if status == StatusWaiting {
		// What its history ends with is answered with the children's
		// results, when the first of them wakes it.
		s.passiveTail = true
	}
	s.rec.Error = ""
	// The next report gets a key of its own: the failure's was used.
	s.rec.Completions++
	s.startedAt = s.r.e.now()
	s.mu.Unlock()
	if err := s.changeStatusTx(tx, status, reasonRevived, true); err != nil {
		return err
	}
	if s.delegationID != "" {
		return s.r.delegationRevivedTx(tx, s, started)
	}
	return nil
}

// delegationRevivedTx puts the delegation of a session that came back
// back to running (pending if it never started), and the plan task it
// had blocked back in progress.
func (r *Run) delegationRevivedTx(tx *store.Tx, s *Session, started bool) error {
	r.mu.Lock()
	d := r.delegations[s.delegationID]
	if d == nil || (d.rec.Status != delegFailed && d.rec.Status != delegCancelled) {
		r.mu.Unlock()
		return nil
	}
	d.rec.Status = delegPending
	if started {
		d.rec.Status = delegRunning
	}
	d.rec.Error, d.rec.EndedAt = "", time.Time{}
	rec := d.rec
	r.mu.Unlock()
	if err := r.saveDelegationTx(tx, d); err != nil {
		return err
	}
	if rec.PlanTaskID == "" || s.parent == nil {
		return nil
	}
	s.parent.planMu.Lock()
	p := s.parent.plan
	s.parent.planMu.Unlock()
	if p == nil {
		return nil
	}
	if t, ok := p.Get(rec.PlanTaskID); !ok || t.Status != coordination.TaskBlocked || !strings.HasPrefix(t.Note, "delegation "+rec.ID+" ") {
		return nil
	}
	return s.parent.markPlanTaskTx(tx, rec.PlanTaskID, coordination.TaskInProgress, fmt.Sprintf("delegation %s resumed", rec.ID))
}
