package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Resume continues an interrupted run from what is stored: finished
// sessions stay finished, the others continue from their last stored
// message, undelivered items are delivered, and tool calls that were cut
// short are run again (their recorded effects are not repeated). A failed
// run continues too, once the cause is fixed: the sessions its failure
// ended come back (see revive.go).
func (e *Engine) Resume(ctx context.Context, runID string) (*Run, error) {
	return e.ResumeIn(ctx, runID, "")
}

// NotResumed says why resume refuses a run whatever its status, or ""
// when it may take it: a bench run's sessions would go on with the demo's
// replies, not the bench's, and a bench measures a run from its start
// anyway.
func NotResumed(rec *store.Run) string {
	if rec.Scripted && scripted.IsBenchGoal(rec.Goal) {
		return "a bench run, which is not resumed: run the bench again, and `swarmdeck delete " + rec.ID + "` removes this one"
	}
	return ""
}

// Unresumable says why a run cannot be resumed whatever is done (it has
// ended, or is a bench run); nil if it may be.
func Unresumable(rec *store.Run) error {
	switch rec.Status {
	case RunCompleted, RunCancelled:
		return fmt.Errorf("run %s has already ended (%s), so there is nothing to resume: open it with `swarmdeck view %s`", rec.ID, rec.Status, rec.ID)
	}
	if why := NotResumed(rec); why != "" {
		return fmt.Errorf("run %s is %s", rec.ID, why)
	}
	return nil
}

// ResumeIn is Resume in another workspace than the run's (none: its own),
// which becomes the run's: for a run whose directory was moved or removed.
func (e *Engine) ResumeIn(ctx context.Context, runID, workspace string) (*Run, error) {
	st := e.store
	rec, err := st.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	if err := Unresumable(rec); err != nil {
		return nil, err
	}
	if workspace != "" {
		abs, err := filepath.Abs(workspace)
		if err != nil {
			return nil, err
		}
		rec.Workspace = abs
	} else if _, err := os.Stat(rec.Workspace); rec.Workspace != "" && errors.Is(err, fs.ErrNotExist) {
		return nil, &WorkspaceGoneError{RunID: rec.ID, Dir: rec.Workspace}
	}
	e.mu.Lock()
	_, live := e.runs[rec.ID]
	e.mu.Unlock()
	if live {
		return nil, fmt.Errorf("run %s is already running in this process", rec.ID)
	}
	lock, err := e.lockRun(rec.ID)
	if err != nil {
		return nil, err
	}
	e.preconnect(1)
	r, err := e.newRun(rec.ID, rec.Goal, *rec)
	if err != nil {
		lock.Release()
		return nil, err
	}
	r.lock = lock
	msgs, err := r.load(ctx)
	if err != nil {
		lock.Release()
		return nil, fmt.Errorf("resume %s: %w", rec.ID, err)
	}
	// A failed run comes back from its failure (see revive.go).
	var revived *revival
	if rec.Status == RunFailed {
		if r.overBudget() {
			lock.Release()
			return nil, fmt.Errorf("run %s failed on its token budget: it has used %d tokens and limits.token_budget_per_run is %d; raise the limit in the configuration (0 means none) to resume it",
				rec.ID, r.rec.Usage.TotalTokens, e.Config().Limits.TokenBudgetPerRun)
		}
		if turns, limit := r.rootTurns(), e.Config().Limits.MaxTurnsPerSession; limit > 0 && turns >= limit {
			// Revived, the orchestrator would fail again before its first
			// call.
			lock.Release()
			return nil, fmt.Errorf("run %s failed when its orchestrator reached its turn limit: it has made %d model calls and limits.max_turns_per_session is %d; raise the limit above %d in the configuration to resume it",
				rec.ID, turns, limit, turns)
		}
		reports, err := st.Reports(ctx, rec.ID)
		if err != nil {
			lock.Release()
			return nil, fmt.Errorf("resume %s: %w", rec.ID, err)
		}
		revived = r.planRevival(msgs, reports)
	}
	// The time it stood stopped is not part of its elapsed time: from its
	// end, or for a process that was killed, from the last thing stored.
	stopped := rec.EndedAt
	if stopped.IsZero() {
		if stopped, err = st.LastWrite(ctx, rec.ID); err != nil {
			lock.Release()
			return nil, fmt.Errorf("resume %s: %w", rec.ID, err)
		}
	}
	if now := e.now(); now.After(stopped) && !stopped.IsZero() {
		r.rec.Pauses = append(slices.Clip(rec.Pauses), store.Pause{From: stopped, To: now})
	}
	r.resumed = true
	r.rec.Status = RunRunning
	r.rec.Error = "" // why it stopped, if it said
	// It runs again: the end its interrupt stored is over. Kept, it would
	// be where the pause of a later kill begins, and the export of a
	// killed run would say it ended.
	r.rec.EndedAt = time.Time{}
	r.rec.Provider, r.rec.BaseURL, r.rec.Model, r.rec.Scripted = e.ProviderLabel(), e.BaseURL(), e.Model(), e.isScripted()
	// Whether a person can answer is this process's, not the one before.
	r.rec.HumanAbsent = !r.human.Load()
	err = st.Do(ctx, func(tx *store.Tx) error {
		run := r.rec
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		info := r.runInfo()
		info.Resumed = true
		if _, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: r.id, SessionID: r.rootID(), Run: info}); err != nil {
			return err
		}
		if revived != nil {
			if err := r.reviveTx(tx, revived); err != nil {
				return err
			}
		}
		// Questions still waiting for the person are asked again: whoever
		// follows this process (a --control client) has not seen them, and
		// cannot answer a question whose id it does not know. Those that
		// nobody can answer in this process are told again too: a viewer
		// saw them waiting for a person in the process before.
		for _, q := range r.questions.unsettled() {
			if _, err := tx.Emit(event.Event{Type: event.QuestionOpened, RunID: r.id, SessionID: q.FromSession, Question: &q}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		lock.Release()
		return nil, err
	}
	e.register(r)
	r.restart()
	e.log.Info("run resumed", "run", r.id, "provider", r.rec.Provider, "model", r.rec.Model)
	return r, nil
}

// load rebuilds the run's sessions and state from the store, and returns
// the stored messages by session.
func (r *Run) load(ctx context.Context) (map[string][]store.Message, error) {
	st := r.e.store
	roster := r.e.roster.Load()
	recs, err := st.Sessions(ctx, r.id)
	if err != nil {
		return nil, err
	}
	msgs, err := st.AllMessages(ctx, r.id)
	if err != nil {
		return nil, err
	}
	inbox, err := st.PendingInbox(ctx, r.id)
	if err != nil {
		return nil, err
	}
	plans, err := st.Plans(ctx, r.id)
	if err != nil {
		return nil, err
	}
	dels, err := st.Delegations(ctx, r.id)
	if err != nil {
		return nil, err
	}
	effects, err := st.Effects(ctx, r.id)
	if err != nil {
		return nil, err
	}
	questions, err := st.Questions(ctx, r.id)
	if err != nil {
		return nil, err
	}
	bcs, total, err := recentFeed(ctx, st, r.id)
	if err != nil {
		return nil, err
	}
	for _, b := range bcs {
		r.feed = append(r.feed, feedInfo(&b))
	}
	r.feedTotal = total
	for _, ef := range effects {
		r.effects[effectKey(ef.SessionID, ef.CallID, ef.N)] = ef.Result
	}
	sent := map[string]int{}
	for _, b := range bcs {
		if b.Kind == event.KindBroadcast {
			sent[b.FromSession]++
		}
	}
	asked := map[string]int{}
	for _, q := range questions {
		asked[q.FromSession]++
	}
	for i := range recs {
		rec := recs[i]
		role, ok := roster.Get(rec.Agent)
		if !ok {
			role = &agents.Role{Name: rec.Agent, Groups: map[string]bool{}}
			if o, ok := roster.Get("orchestrator"); ok && rec.ParentID == "" {
				role = o
			}
		}
		var parent *Session
		if rec.ParentID != "" {
			parent = r.sessions[rec.ParentID]
			if parent == nil {
				return nil, fmt.Errorf("session %s has an unknown parent %s", rec.ID, rec.ParentID)
			}
		}
		s := &Session{r: r, role: role, parent: parent, id: rec.ID, agent: rec.Agent, label: rec.Label, title: rec.Title,
			task: rec.Task, kind: rec.Kind, depth: rec.Depth, spawnCall: rec.SpawnCall, delegationID: rec.DelegationID,
			rec: rec, wake: make(chan struct{}, 1), childCh: make(chan struct{}), effectN: map[string]int{}, answered: map[string]bool{},
			broadcasts: sent[rec.ID], questions: asked[rec.ID], startedAt: r.e.now()}
		s.ctx, s.cancel = contextWithCancel(r)
		if len(rec.SharedContext) > 0 {
			if err := json.Unmarshal(rec.SharedContext, &s.sharedCtx); err != nil {
				return nil, fmt.Errorf("session %s: shared context: %w", rec.ID, err)
			}
		}
		for _, name := range rec.Refs {
			s.refs = append(s.refs, coordination.Reference{Key: "$" + name, Name: name})
		}
		s.waitOn = rec.WaitOn
		s.passiveTail = true
		// Usage, turns and the last tool come from the messages and shadow
		// answers (store.Sessions sets them): the row is not rewritten on
		// every turn.
		for _, m := range msgs[rec.ID] {
			s.history = append(s.history, sanitizeCalls(toLLM(&m)))
			s.nextIndex = m.Index + 1
			switch {
			case m.Role == llm.RoleAssistant:
				s.passiveTail = true
			case m.Role == llm.RoleUser && !m.NoReply, m.Role == llm.RoleTool:
				s.passiveTail = false
			}
			if m.Role == llm.RoleUser && m.Synthetic && strings.HasPrefix(m.Content, "<reminder>") {
				s.lastReminder = m.Content
			}
		}
		s.started = len(msgs[rec.ID]) > 0
		// A session stopped while its tools ran is still in that turn:
		// what arrives before it has run them waits in the inbox, so that
		// nothing comes between the tool calls and their results.
		s.inTurn = !terminal(rec.Status) && s.pendingCallsLocked()
		if tasks, ok := plans[rec.ID]; ok {
			var ts []coordination.Task
			for _, t := range tasks {
				ts = append(ts, coordination.Task{ID: t.ID, Description: t.Description, Status: t.Status, DependsOn: t.DependsOn,
					Note: t.Note, CreatedAt: t.CreatedAt, CompletedAt: t.CompletedAt})
			}
			s.plan = coordination.Restore(ts, r.e.Config().Coordination.MaxTasksPerPlan)
		}
		r.register(s)
		if !terminal(rec.Status) {
			r.active++
		}
	}
	// The run's usage: at least what its sessions add up to (the stored
	// figure can lag behind after a crash).
	if sum := store.SessionsUsage(recs); sum.TotalTokens > r.rec.Usage.TotalTokens {
		r.rec.Usage = sum
	}
	for i := range inbox {
		it := inbox[i]
		if s := r.sessions[it.SessionID]; s != nil {
			s.inbox = append(s.inbox, &it)
		}
	}
	for _, d := range dels {
		r.delegations[d.ID] = &delegation{rec: d, session: r.sessions[d.SessionID]}
	}
	for _, q := range questions {
		r.questions.ids[q.ID] = true
		if q.Status != QuestionOpen {
			r.questions.ended[q.ID] = q.Status
			continue
		}
		asker := r.sessions[q.FromSession]
		if asker == nil {
			continue
		}
		qq := &question{rec: q, asker: asker, expected: map[string]string{}, responses: map[string]string{}, changed: make(chan struct{})}
		json.Unmarshal(q.Options, &qq.options)
		var recips []*Session
		for _, id := range q.Recipients {
			if k := r.sessions[id]; k != nil {
				recips = append(recips, k)
			}
		}
		for id, name := range answerNames(recips) {
			qq.expected[id] = name
		}
		for _, resp := range q.Responses {
			qq.responses[resp.Responder] = resp.Content
		}
		if q.AllowHuman {
			qq.expected["human"] = "human"
			qq.humanWait = true
			_, answered := qq.responses["human"]
			switch {
			case q.HumanResponded || answered:
				qq.humanState = "answered"
			case q.HumanSkipped || r.rec.HumanSkipAll:
				qq.humanState = "skipped"
			case !r.human.Load():
				// Nobody can answer in this process: the question goes on
				// with the agents' answers alone.
				qq.humanState = "absent"
			default:
				r.questions.queue = append(r.questions.queue, q.ID)
				asker.waitingHuman++
				// The person's earlier answer is offered again, as when
				// the question was first asked.
				if a, ok := r.e.store.RememberedAnswer(ctx, coordination.NormalizeQuestion(q.Question)); ok {
					if fit, ok := coordination.FitRemembered(a, qq.options, q.MultiSelect); ok {
						qq.remembered = fit
					}
				}
			}
		}
		// The deadline restarts: the time the run was stopped does not count.
		qq.rec.Deadline = r.e.now().Add(q.Deadline.Sub(q.CreatedAt))
		r.questions.open[q.ID] = qq
	}
	return msgs, nil
}

func contextWithCancel(r *Run) (context.Context, context.CancelCauseFunc) {
	return context.WithCancelCause(r.ctx)
}

// restart sets the loaded sessions going again.
func (r *Run) restart() {
	for _, s := range r.allSessions() {
		switch st := s.status(); {
		case terminal(st):
		case st == StatusPending:
			if len(s.waitOn) > 0 || len(s.refs) > 0 {
				r.e.store.Do(context.Background(), func(tx *store.Tx) error { return r.checkChainTx(tx, s) })
			} else if s.delegationID != "" {
				r.e.store.Do(context.Background(), func(tx *store.Tx) error { return r.startQueuedDelegationsTx(tx) })
			} else {
				s.start()
			}
		default:
			s.start()
		}
	}
	// A run whose root had finished but whose end was not recorded.
	r.e.store.Do(context.Background(), func(tx *store.Tx) error { return r.maybeFinishTx(tx) })
}

// WorkspaceGoneError is a resume refused because the run's workspace is
// gone, with the command that resumes it in another directory.
type WorkspaceGoneError struct {
	RunID, Dir string
	// Headless: the resume was headless, and so is the command suggested
	// (the dashboard's resume fails where there is no terminal).
	Headless bool
}

func (e *WorkspaceGoneError) Error() string {
	resume := "resume"
	if e.Headless {
		resume += " --headless"
	}
	return fmt.Sprintf("run %s works in %s, which is gone: resume it in another directory with `swarmdeck %s --workspace DIR %s`", e.RunID, e.Dir, resume, e.RunID)
}
