package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// delegation is a task handed to a sub-orchestrator (seed 002).
type delegation struct {
	rec     store.Delegation // guarded by Run.mu
	session *Session
	// taskText is the linked plan task's description when it was
	// delegated: a plan replaced meanwhile may have another task under
	// the same id, which the delegation's end must not mark. "" when not
	// known (a delegation restored by a resume).
	taskText string
}

// Delegation statuses.
const (
	delegPending   = "pending"
	delegRunning   = "running"
	delegCompleted = "completed"
	delegFailed    = "failed"
	delegCancelled = "cancelled"
)

// delegationDepth is how many delegations lead to s (0 for the root).
func (s *Session) delegationDepth() int {
	n := 0
	for x := s; x != nil; x = x.parent {
		if x.kind == kindDelegation {
			n++
		}
	}
	return n
}

func delegationInfo(d *store.Delegation) *event.DelegationInfo {
	return &event.DelegationInfo{ID: d.ID, ParentSession: d.ParentSession, SessionID: d.SessionID, PlanTaskID: d.PlanTaskID,
		Description: d.Description, Status: d.Status, Depth: d.Depth, Result: d.Result, Error: d.Error,
		CreatedAt: d.CreatedAt, StartedAt: d.StartedAt, EndedAt: d.EndedAt}
}

func (r *Run) saveDelegationTx(tx *store.Tx, d *delegation) error {
	r.mu.Lock()
	rec := d.rec
	r.mu.Unlock()
	if err := tx.UpsertDelegation(&rec); err != nil {
		return err
	}
	_, err := tx.Emit(event.Event{Type: event.DelegationUpdated, RunID: r.id, SessionID: rec.ParentSession, Delegation: delegationInfo(&rec)})
	return err
}

// delegationMayStart reports whether a delegation can run now under
// max_concurrent_delegations, and takes the place if so. A delegation made
// inside another's subtree (a nested one, at depth 2 or more) runs in the
// place of the one above it, not a place of its own: that one waits on it,
// so counting it would leave nested delegations queued behind their own
// ancestors, or behind each other, once the places are taken.
func (r *Run) delegationMayStart(s *Session) bool {
	limit := r.e.Config().Coordination.MaxConcurrentDelegations
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.delegations[s.delegationID]
	if d == nil {
		return true
	}
	if d.rec.Status == delegRunning {
		return true
	}
	if d.holdsPlace() && limit > 0 && len(r.placeHoldersLocked()) >= limit {
		return false
	}
	d.rec.Status = delegRunning
	d.rec.StartedAt = r.e.now()
	return true
}

// queuedReason is the status reason of a delegation queued behind
// max_concurrent_delegations, with running delegations holding places.
func queuedReason(running, limit int) string {
	return fmt.Sprintf("queued: %d running, and max_concurrent_delegations is %d", running, limit)
}

// holdsPlace reports whether d takes a place of its own under
// max_concurrent_delegations when it runs: it is not nested in another.
func (d *delegation) holdsPlace() bool { return d.rec.Depth <= 1 }

// placeHoldersLocked are the sessions of the running delegations that hold
// a place under max_concurrent_delegations. r.mu is held.
func (r *Run) placeHoldersLocked() []*Session {
	var out []*Session
	for _, x := range r.delegations {
		if x.rec.Status == delegRunning && x.holdsPlace() {
			out = append(out, x.session)
		}
	}
	return out
}

// customConfig is what delegate_task's custom_config may override.
type customConfig struct {
	SharedContext json.RawMessage `json:"sharedContext"`
	Agent         string          `json:"agent"`
	Label         string          `json:"label"`
}

func parseCustomConfig(raw json.RawMessage) (customConfig, error) {
	var cc customConfig
	if len(raw) == 0 || string(raw) == "null" {
		return cc, nil
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return cc, agents.Errorf("custom_config must be an object: %v", err)
	}
	for k := range keys {
		switch k {
		case "sharedContext", "shared_context", "agent", "label":
		case "model":
			return cc, agents.Errorf("custom_config key \"model\" is not supported: a delegate runs on the run's model, or on its role's (agent) where the configuration gives one; use sharedContext, agent or label")
		default:
			return cc, agents.Errorf("custom_config key %q is not supported; use sharedContext, agent or label", k)
		}
	}
	if v, ok := keys["shared_context"]; ok {
		keys["sharedContext"] = v
	}
	if v, ok := keys["sharedContext"]; ok {
		cc.SharedContext = v
	}
	if v, ok := keys["agent"]; ok {
		if err := json.Unmarshal(v, &cc.Agent); err != nil {
			return cc, agents.Errorf("custom_config.agent must be a role name string")
		}
	}
	if v, ok := keys["label"]; ok {
		if err := json.Unmarshal(v, &cc.Label); err != nil {
			return cc, agents.Errorf("custom_config.label must be a string")
		}
	}
	return cc, nil
}

func (h *host) Delegate(ctx context.Context, c *agents.Call, req agents.DelegateRequest) (*agents.DelegationStatus, error) {
	s := h.s()
	r := s.r
	cfg := r.e.Config()
	depth := s.delegationDepth() + 1
	if max := cfg.Coordination.MaxDelegationDepth; depth > max {
		advice := "do this work yourself"
		if spawn, _ := s.mayStart(); spawn && s.groups()[agents.GroupSpawn] {
			advice += ", or spawn sub-agents with sessions_spawn"
		}
		return nil, agents.Errorf("delegation refused: this would be a delegation at depth %d, but max_delegation_depth is %d; %s", depth, max, advice)
	}
	if max := cfg.Limits.MaxSpawnDepth; s.depth+1 > max {
		return nil, agents.Errorf("delegation refused: the sub-orchestrator would be at depth %d but max_spawn_depth is %d", s.depth+1, max)
	}
	cc, err := parseCustomConfig(req.CustomConfig)
	if err != nil {
		return nil, err
	}
	roster := r.e.roster.Load()
	roleName := "orchestrator"
	if cc.Agent != "" {
		roleName = cc.Agent
	}
	role, ok := roster.Get(roleName)
	if !ok {
		return nil, agents.Errorf("custom_config.agent %q is not in the roster (%s)", roleName, strings.Join(roster.Names(), ", "))
	}
	var given coordination.Context
	if len(cc.SharedContext) > 0 {
		var refs []coordination.Reference
		if given, refs, err = coordination.ParseSpawnContext(cc.SharedContext); err != nil {
			return nil, &agents.Error{Msg: "custom_config.sharedContext: " + err.Error()}
		}
		if len(refs) > 0 {
			return nil, agents.Errorf("custom_config.sharedContext cannot hold $ references; spawn with sessions_spawn to chain after results")
		}
	}
	var child *Session
	startNow := false
	raw, err := s.effect(c, "delegate", func(tx *store.Tx) (any, error) {
		child, startNow = nil, false
		r.mu.Lock()
		total := len(r.order)
		r.mu.Unlock()
		if max := cfg.Limits.MaxSessionsPerRun; max > 0 && total+1 > max {
			return nil, agents.Errorf("delegation refused: the run has %d sessions and max_sessions_per_run is %d", total, max)
		}
		var planTask coordination.Task
		if req.PlanTaskID != "" {
			s.planMu.Lock()
			p := s.plan
			s.planMu.Unlock()
			if p == nil {
				return nil, agents.Errorf("task_id %q: you have no task plan; create one with create_task_plan or leave task_id out", req.PlanTaskID)
			}
			t, ok := p.Get(req.PlanTaskID)
			if !ok {
				var ids []string
				for _, t := range p.Tasks() {
					ids = append(ids, t.ID)
				}
				return nil, agents.Errorf("task_id %q is not in your plan (your tasks: %s)", req.PlanTaskID, strings.Join(ids, ", "))
			}
			if d := r.activeDelegation(s, t); d != nil {
				return nil, agents.Errorf("task_id %q is already delegated to %s, which is %s; wait for it (task_wait on %s, then get_delegation_result %q), or stop it with task_cancel on %s first", t.ID, d.rec.ID, d.rec.Status, d.rec.SessionID, d.rec.ID, d.rec.SessionID)
			}
			if t.Status == coordination.TaskCompleted {
				// Its start would set it in progress again, and a failure
				// then blocked: work recorded as done, undone unsaid.
				return nil, agents.Errorf("task_id %q is completed already; to have it done again, set it back with update_task_status (status pending) first, or delegate without task_id", t.ID)
			}
			planTask = t
		}
		if err := checkLabel(cc.Label); err != nil {
			return nil, err
		}
		if cc.Label != "" {
			if k := findChild(s.childList(), cc.Label); k != nil {
				return nil, agents.Errorf("label %q is already used by your child %s", cc.Label, k.id)
			}
		}
		r.mu.Lock()
		id := r.newDelegationIDLocked()
		r.mu.Unlock()
		title := OneLine(req.Description, 80)
		child = r.newSession(s, role, kindDelegation, cc.Label, title, req.Description, s.depth+1)
		child.delegationID = id
		child.spawnCall = s.id + "/" + callID(c)
		s.mu.Lock()
		child.sharedCtx = coordination.Merge(s.sharedCtx, given)
		s.mu.Unlock()
		d := &delegation{session: child, rec: store.Delegation{RunID: r.id, ID: id, ParentSession: s.id, SessionID: child.id,
			PlanTaskID: planTask.ID, Description: req.Description, Status: delegPending, Depth: depth,
			CustomConfig: req.CustomConfig, CreatedAt: r.e.now()}, taskText: planTask.Description}
		r.mu.Lock()
		r.delegations[id] = d
		r.mu.Unlock()
		if r.delegationMayStart(child) {
			child.rec.Status = StatusRunning
			startNow = true
			if slotsShort(r, 1, req.Wait) > 0 {
				// It starts once a session slot is free, and says so from
				// the start, as spawned children do.
				child.rec.Status, child.rec.Reason = StatusPending, slotWaitReason(cap(r.slotSem))
			}
		} else {
			r.mu.Lock()
			running := len(r.placeHoldersLocked())
			r.mu.Unlock()
			child.rec.Reason = queuedReason(running, cfg.Coordination.MaxConcurrentDelegations)
		}
		if err := r.createSessionTx(tx, child); err != nil {
			return nil, err
		}
		if err := r.injectSiblingsTx(tx, s, []*Session{child}); err != nil {
			return nil, err
		}
		if err := r.saveDelegationTx(tx, d); err != nil {
			return nil, err
		}
		if planTask.ID != "" {
			if err := s.markPlanTaskTx(tx, planTask.ID, coordination.TaskInProgress, fmt.Sprintf("delegated to %s (%s)", id, child.id)); err != nil {
				return nil, err
			}
		}
		r.mu.Lock()
		st := d.rec.Status
		r.mu.Unlock()
		return agents.DelegationStatus{DelegationID: id, SessionID: child.id, PlanTaskID: planTask.ID, Description: req.Description,
			Status: st, Depth: depth}, nil
	})
	if err != nil {
		return nil, err
	}
	if startNow && child != nil {
		child.start()
	}
	var res agents.DelegationStatus
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if res.Status == delegPending {
		res.Note = "queued until a running delegation finishes (max_concurrent_delegations); it will start on its own"
	} else if startNow && child.status() == StatusPending {
		res.Note = slotNote(r, 1, req.Wait)
	}
	if waits := s.unmetDependencies(res.PlanTaskID); len(waits) > 0 {
		// Whether it starts now or waits for a slot, it does not wait for
		// these.
		them := "it"
		if len(waits) > 1 {
			them = "them"
		}
		dep := fmt.Sprintf("task %s depends on %s, not completed yet, and the delegate does not wait for %s", res.PlanTaskID, strings.Join(waits, ", "), them)
		res.Note = joinNotes(res.Note, dep)
	}
	if !req.Wait {
		return &res, nil
	}
	if k := r.session(res.SessionID); k != nil {
		end, err := s.beginWait([]*Session{k})
		if err != nil {
			// Delegated, but not waited for: it runs on and reports.
			res.Note = joinNotes(res.Note, "not waited for: "+err.Error())
			return &res, nil
		}
		defer end()
		s.waitTerminal(ctx, c, []*Session{k}, 0x7fffffffffffffff)
	}
	return h.DelegationStatus(ctx, res.DelegationID)
}

// newDelegationIDLocked returns a delegation id not yet used in the run.
// r.mu must be held.
func (r *Run) newDelegationIDLocked() string {
	return shortID("d-", len(r.delegations), func(id string) bool { _, taken := r.delegations[id]; return taken })
}

// followRewordedTasks keeps the delegations of s's plan tasks linked to
// tasks that were reworded in place (was holds the descriptions before):
// their end marks the task, and a second delegation of it is refused.
// A task whose description changed with a plan replaced is another
// task, and is left alone (see delegation.taskText).
func (r *Run) followRewordedTasks(s *Session, was map[string]string, p *coordination.Plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.delegations {
		if d.rec.ParentSession != s.id || d.taskText == "" || was[d.rec.PlanTaskID] != d.taskText {
			continue
		}
		if t, ok := p.Get(d.rec.PlanTaskID); ok {
			d.taskText = t.Description
		}
	}
}

// activeDelegation is the delegation of s's plan task t that is queued or
// running, if there is one.
func (r *Run) activeDelegation(s *Session, t coordination.Task) *delegation {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.delegations {
		if d.rec.ParentSession == s.id && d.rec.PlanTaskID == t.ID && (d.taskText == "" || d.taskText == t.Description) &&
			(d.rec.Status == delegPending || d.rec.Status == delegRunning) {
			return d
		}
	}
	return nil
}

// unmetDependencies lists the tasks s's plan task id waits on that are
// not completed.
func (s *Session) unmetDependencies(id string) []string {
	if id == "" {
		return nil
	}
	s.planMu.Lock()
	defer s.planMu.Unlock()
	if s.plan == nil {
		return nil
	}
	t, ok := s.plan.Get(id)
	if !ok {
		return nil
	}
	var waits []string
	for _, dep := range t.DependsOn {
		if d, ok := s.plan.Get(dep); ok && d.Status != coordination.TaskCompleted {
			waits = append(waits, dep)
		}
	}
	return waits
}

// markPlanTaskTx sets the status of one task of s's plan and stores it.
func (s *Session) markPlanTaskTx(tx *store.Tx, taskID, status, note string) error {
	return s.markDelegatedTaskTx(tx, taskID, "", status, note)
}

// markDelegatedTaskTx is markPlanTaskTx for the task a delegation worked
// on, whose description was text ("" when not known): a task of that id
// with another description is another task (the plan was replaced, the
// task deleted and its id used again), and is left as it is.
func (s *Session) markDelegatedTaskTx(tx *store.Tx, taskID, text, status, note string) error {
	s.planMu.Lock()
	defer s.planMu.Unlock()
	if s.plan == nil {
		return nil
	}
	t, ok := s.plan.Get(taskID)
	if !ok || (text != "" && t.Description != text) {
		return nil
	}
	if status == coordination.TaskBlocked && t.Status == coordination.TaskCompleted {
		return nil // a failure does not undo work recorded as done
	}
	if _, _, err := s.plan.SetStatus(taskID, status, note); err != nil {
		return nil // the task was deleted meanwhile: nothing to mark
	}
	return s.savePlanTx(tx, s.plan)
}

// delegationEndedTx records the end of a delegation when its session ends,
// updates the linked plan task and starts a queued delegation.
func (r *Run) delegationEndedTx(tx *store.Tx, s *Session) error {
	r.mu.Lock()
	d := r.delegations[s.delegationID]
	r.mu.Unlock()
	if d == nil {
		return nil
	}
	s.mu.Lock()
	status, result, errText := s.rec.Status, s.rec.Result, s.rec.Error
	s.mu.Unlock()
	r.mu.Lock()
	switch status {
	case StatusCompleted:
		d.rec.Status = delegCompleted
	case StatusCancelled:
		d.rec.Status = delegCancelled
	default:
		d.rec.Status = delegFailed
	}
	d.rec.Result, d.rec.Error = result, errText
	d.rec.EndedAt = r.e.now()
	if d.rec.StartedAt.IsZero() {
		d.rec.StartedAt = d.rec.EndedAt
	}
	rec, text := d.rec, d.taskText
	r.mu.Unlock()
	if err := r.saveDelegationTx(tx, d); err != nil {
		return err
	}
	if rec.PlanTaskID != "" && s.parent != nil {
		if status == StatusCompleted {
			if err := s.parent.markDelegatedTaskTx(tx, rec.PlanTaskID, text, coordination.TaskCompleted, "completed by delegation "+rec.ID); err != nil {
				return err
			}
		} else {
			why := errText
			if why == "" {
				why = status
			}
			if err := s.parent.markDelegatedTaskTx(tx, rec.PlanTaskID, text, coordination.TaskBlocked, fmt.Sprintf("delegation %s %s: %s", rec.ID, status, why)); err != nil {
				return err
			}
		}
	}
	return r.startQueuedDelegationsTx(tx)
}

// startQueuedDelegationsTx starts delegations waiting for a free place, oldest first.
func (r *Run) startQueuedDelegationsTx(tx *store.Tx) error {
	r.mu.Lock()
	var queued []*delegation
	for _, d := range r.delegations {
		if d.rec.Status == delegPending && d.session != nil {
			queued = append(queued, d)
		}
	}
	r.mu.Unlock()
	sort.Slice(queued, func(i, j int) bool { return queued[i].rec.CreatedAt.Before(queued[j].rec.CreatedAt) })
	for _, d := range queued {
		if terminal(d.session.status()) || !r.delegationMayStart(d.session) {
			continue
		}
		if err := r.saveDelegationTx(tx, d); err != nil {
			return err
		}
		if err := d.session.setStatusTx(tx, StatusRunning, ""); err != nil {
			return err
		}
		d.session.start()
	}
	return nil
}

func (h *host) DelegationStatus(ctx context.Context, id string) (*agents.DelegationStatus, error) {
	s := h.s()
	r := s.r
	r.mu.Lock()
	d := r.delegations[id]
	var rec store.Delegation
	if d != nil {
		rec = d.rec
	}
	var mine []string
	for did, x := range r.delegations {
		if x.rec.ParentSession == s.id {
			mine = append(mine, did)
		}
	}
	r.mu.Unlock()
	if d == nil {
		sort.Strings(mine)
		if len(mine) == 0 {
			return nil, agents.Errorf("no delegation %q: you have not delegated anything yet", id)
		}
		return nil, agents.Errorf("no delegation %q; your delegations are: %s", id, strings.Join(mine, ", "))
	}
	done := rec.Status == delegCompleted || rec.Status == delegFailed || rec.Status == delegCancelled
	return &agents.DelegationStatus{DelegationID: rec.ID, SessionID: rec.SessionID, PlanTaskID: rec.PlanTaskID, Description: rec.Description,
		Status: rec.Status, Depth: rec.Depth, Completed: done, Result: rec.Result, Error: rec.Error}, nil
}

// isAncestorOf reports whether s is above k in the session tree.
func (s *Session) isAncestorOf(k *Session) bool {
	for x := k.parent; x != nil; x = x.parent {
		if x == s {
			return true
		}
	}
	return false
}
