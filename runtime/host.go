package runtime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// host is a session seen by its tool handlers (agents.Host).
type host Session

var _ agents.Host = (*host)(nil)

func (h *host) s() *Session { return (*Session)(h) }

func (h *host) Self() agents.Self {
	s := h.s()
	coord := s.r.e.Config().Coordination
	return agents.Self{ID: s.id, ParentID: s.rec.ParentID, Agent: s.agent, Label: s.label, Depth: s.depth, Kind: s.kind,
		CanSpawn: s.role.CanSpawn, CanWrite: s.role.CanWrite, MaxTasksPerPlan: coord.MaxTasksPerPlan,
		BroadcastResponseRequired: coord.BroadcastResponseRequired}
}

func (h *host) Workspace() *agents.Workspace { return h.s().r.ws }

func (h *host) SharedContext() json.RawMessage {
	s := h.s()
	s.mu.Lock()
	defer s.mu.Unlock()
	b, _ := s.sharedCtx.MarshalJSON()
	return b
}

func effectKey(sessionID, callID string, n int) string {
	return fmt.Sprintf("%s/%s/%d", sessionID, callID, n)
}

// effect runs fn once per tool call and position: fn runs inside a store
// operation and its result is recorded together with its changes, so that a
// call re-run after a crash gets the recorded result instead of acting twice.
func (s *Session) effect(c *agents.Call, kind string, fn func(tx *store.Tx) (any, error)) (json.RawMessage, error) {
	key := ""
	n := 0
	if c != nil {
		s.mu.Lock()
		n = s.effectN[c.ID]
		s.effectN[c.ID] = n + 1
		s.mu.Unlock()
		key = effectKey(s.id, c.ID, n)
		s.r.mu.Lock()
		memo, ok := s.r.effects[key]
		s.r.mu.Unlock()
		if ok {
			return memo, nil
		}
	}
	var out []byte
	var fnErr error
	err := s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		// The call must be on record before its effect, and stays on record
		// when the effect is refused (the model gets the error as the
		// call's result).
		if err := s.flushTx(tx); err != nil {
			return err
		}
		// A session that has ended (cancelled, failed, out of budget)
		// while its tool ran must not act any more: its children would be
		// orphans.
		if terminal(s.status()) {
			fnErr = fmt.Errorf("session %s has %s: %w", s.id, s.status(), context.Canceled)
			return nil
		}
		fnErr = tx.Nested(func() error {
			v, err := fn(tx)
			if err != nil {
				return err
			}
			b, err := plainJSON(v)
			if err != nil {
				return err
			}
			if c != nil {
				if err := tx.InsertEffect(s.r.id, s.id, c.ID, n, kind, b); err != nil {
					return err
				}
				s.r.mu.Lock()
				s.r.effects[key] = b
				s.r.mu.Unlock()
			}
			out = b
			return nil
		})
		if fnErr == nil && c != nil && n == 0 {
			// A tool whose answer is this result is answered in the same
			// commit.
			if t, ok := s.r.e.tools.Get(c.Name); ok && t.ResultIsEffect {
				o := toolOutcome{call: llm.ToolCall{ID: c.ID, Name: c.Name}, content: s.clipOutput(string(out))}
				if err := s.recordResultTx(tx, o); err != nil {
					return err
				}
				s.mu.Lock()
				s.answered[c.ID] = true
				s.mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, fnErr
}

// Intent records the intent of a workspace write (see agents.Host).
func (h *host) Intent(ctx context.Context, c *agents.Call, data []byte) ([]byte, error) {
	s := h.s()
	key := effectKey(s.id, c.ID, -1)
	s.r.mu.Lock()
	earlier, ok := s.r.effects[key]
	s.r.mu.Unlock()
	if ok || data == nil {
		return earlier, nil
	}
	err := s.r.e.store.Do(ctx, func(tx *store.Tx) error {
		if err := s.flushTx(tx); err != nil {
			return err
		}
		if err := tx.InsertEffect(s.r.id, s.id, c.ID, -1, "intent", data); err != nil {
			return err
		}
		s.r.mu.Lock()
		s.r.effects[key] = data
		s.r.mu.Unlock()
		return nil
	})
	return nil, err
}

// ---- spawning ----

// checkLabel refuses a label a model gave that holds a control character:
// a label is printed into prompts and tables on one line, and a line break
// in it would start a line of its own there.
func checkLabel(label string) error {
	if strings.IndexFunc(label, unicode.IsControl) >= 0 {
		return agents.Errorf("label %q holds a control character (a line break, a tab); give a label of one line of plain text", label)
	}
	return nil
}

func (h *host) Spawn(ctx context.Context, c *agents.Call, req agents.SpawnRequest) (*agents.SpawnResult, error) {
	s := h.s()
	r := s.r
	cfg := r.e.Config()
	if !s.role.CanSpawn {
		return nil, agents.Errorf("your role (%s) may not spawn sub-agents", s.agent)
	}
	roster := r.e.roster.Load()
	agentName := req.Agent
	if agentName == "" {
		agentName = defaultChildRole(roster)
	}
	role, ok := roster.Get(agentName)
	if !ok {
		return nil, agents.Errorf("unknown agent %q; choose one of the roster: %s", agentName, strings.Join(roster.Names(), ", "))
	}
	if max := cfg.Limits.MaxSpawnDepth; s.depth+1 > max {
		return nil, agents.Errorf("spawn refused: a child would be at depth %d but max_spawn_depth is %d; do this work yourself", s.depth+1, max)
	}
	if err := checkLabel(req.Label); err != nil {
		return nil, err
	}
	var given coordination.Context
	var refs []coordination.Reference
	if len(req.SharedContext) > 0 && string(req.SharedContext) != "null" {
		var err error
		if given, refs, err = coordination.ParseSpawnContext(req.SharedContext); err != nil {
			return nil, &agents.Error{Msg: err.Error()}
		}
	}
	n := len(req.Tasks)
	labels := make([]string, n)
	for i := range labels {
		switch {
		case req.Label == "":
		case n == 1:
			labels[i] = req.Label
		default:
			labels[i] = fmt.Sprintf("%s-%d", req.Label, i+1)
		}
	}
	// The children call the model once they are stored: their connections
	// are opened meanwhile, as many as may call at once.
	calls := 1
	if req.Parallel {
		calls = min(n, cap(r.llmSem)-len(r.llmSem))
	}
	r.e.preconnect(calls)
	var started []*Session
	raw, err := s.effect(c, "spawn", func(tx *store.Tx) (any, error) {
		started = started[:0]
		r.mu.Lock()
		total := len(r.order)
		r.mu.Unlock()
		if max := cfg.Limits.MaxSessionsPerRun; max > 0 && total+n > max {
			if n > 1 && total < max {
				return nil, agents.Errorf("spawn refused: %d sub-agents asked for, but the run has %d sessions and max_sessions_per_run is %d, so %d more at most; spawn fewer, or finish with the sub-agents you have",
					n, total, max, max-total)
			}
			return nil, agents.Errorf("spawn refused: the run has %d sessions and max_sessions_per_run is %d; finish with the sub-agents you have", total, max)
		}
		family := s.childList()
		used := map[string]string{}
		for _, k := range family {
			if k.label != "" {
				used[k.label] = k.id
			}
		}
		for _, l := range labels {
			if l == "" {
				continue
			}
			if id, clash := used[l]; clash {
				return nil, agents.Errorf("label %q is already used by your child %s; labels are unique among your children: choose another", l, id)
			}
			if findChild(family, l) != nil {
				// The child's own task id: that name would reach it, not
				// this one.
				return nil, agents.Errorf("label %q is the task id of your child %s; a label must not name another child: choose another", l, l)
			}
			used[l] = "(this call)"
		}
		var chain []string
		for _, name := range req.ChainAfter {
			k := findChild(family, name)
			if k == nil {
				return nil, agents.Errorf("chainAfter/dependsOn names %q but none of your children has that label or task id (your children: %s)", name, familyNames(family))
			}
			switch st := k.status(); st {
			case StatusFailed, StatusCancelled:
				return nil, agents.Errorf("cannot chain after %s: it has %s", k.display(), st)
			case StatusCompleted:
			default:
				chain = appendUnique(chain, k.id)
			}
		}
		s.mu.Lock()
		effective := coordination.Merge(s.sharedCtx, given)
		s.mu.Unlock()
		var pendingRefs []coordination.Reference
		if len(refs) > 0 {
			res, err := coordination.ResolveReferences(refs, r.refLookup(s))
			if err != nil {
				return nil, &agents.Error{Msg: err.Error()}
			}
			effective = res.Apply(effective)
			if !res.Ready() {
				pendingRefs = refs
				for _, id := range res.Pending {
					chain = appendUnique(chain, id)
				}
			}
		}
		var batch []*Session
		for i, task := range req.Tasks {
			title := OneLine(task, 80)
			if i < len(req.Titles) && req.Titles[i] != "" {
				title = req.Titles[i]
			}
			child := r.newSession(s, role, kindTask, labels[i], title, task, s.depth+1)
			child.sharedCtx = effective
			child.spawnCall = s.id + "/" + callID(c)
			child.refs = pendingRefs
			child.waitOn = append([]string(nil), chain...)
			if !req.Parallel && i > 0 {
				child.waitOn = appendUnique(child.waitOn, batch[i-1].id)
				if len(pendingRefs) == 0 && len(refs) > 0 {
					child.refs = nil
				}
			}
			if len(child.waitOn) == 0 {
				child.rec.Status = StatusRunning
			} else {
				child.rec.Reason = "waiting for " + strings.Join(child.waitOn, ", ")
			}
			batch = append(batch, child)
		}
		// Those the free session slots do not cover say from the start that
		// they wait for one: the last of the batch, as they start in order.
		runnable := 0
		for _, child := range batch {
			if len(child.waitOn) == 0 {
				runnable++
			}
		}
		for i, queued := len(batch)-1, slotsShort(r, runnable, req.Wait); i >= 0 && queued > 0; i-- {
			if child := batch[i]; len(child.waitOn) == 0 {
				child.rec.Status, child.rec.Reason = StatusPending, slotWaitReason(cap(r.slotSem))
				queued--
			}
		}
		// Create the whole batch first, then inject: every member sees all others.
		for _, child := range batch {
			if err := r.createSessionTx(tx, child); err != nil {
				return nil, err
			}
		}
		if err := r.injectSiblingsTx(tx, s, batch); err != nil {
			return nil, err
		}
		res := &agents.SpawnResult{Status: "started"}
		for _, child := range batch {
			st := child.status()
			out := agents.TaskOutcome{TaskID: child.id, Label: child.label, Agent: child.agent, Status: st}
			switch {
			case len(child.waitOn) > 0:
				out.WaitingOn = child.waitOn
			case st == StatusPending:
				out.Reason = child.rec.Reason // a session slot
				started = append(started, child)
			default:
				started = append(started, child)
			}
			res.Sessions = append(res.Sessions, out)
		}
		if len(started) == 0 {
			res.Status = "pending"
		}
		res.Note = slotNote(r, len(started), req.Wait)
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	for _, child := range started {
		child.start()
	}
	var res agents.SpawnResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if !req.Wait {
		return &res, nil
	}
	var targets []*Session
	for _, o := range res.Sessions {
		if k := r.session(o.TaskID); k != nil {
			targets = append(targets, k)
		}
	}
	end, err := s.beginWait(targets)
	if err != nil {
		// Spawned, but not waited for: the children run on and report.
		res.Note = joinNotes(res.Note, "not waited for: "+err.Error())
		return &res, nil
	}
	defer end()
	outcomes, _ := s.waitTerminal(ctx, c, targets, req.Timeout)
	res.Sessions = outcomes
	res.Status, res.Note = "completed", ""
	for _, o := range outcomes {
		if o.Status != StatusCompleted {
			res.Status = "finished"
			if o.TimedOut {
				res.Status = "timed_out"
				break
			}
		}
	}
	return &res, nil
}

// slotNote says how many of n sessions about to start will first wait for
// a max_concurrent_sessions slot: those the free slots do not cover, the
// spawning session's own counted as free when it is about to wait.
func slotNote(r *Run, n int, wait bool) string {
	queued := slotsShort(r, n, wait)
	if queued == 0 {
		return ""
	}
	lim := cap(r.slotSem)
	if n == 1 {
		return fmt.Sprintf("it waits for a free session slot first (max_concurrent_sessions is %d): it starts as a running session finishes or waits", lim)
	}
	if queued == n {
		return fmt.Sprintf("all %d wait for a free session slot first (max_concurrent_sessions is %d): they start as running sessions finish or wait", n, lim)
	}
	return fmt.Sprintf("%d of the %d wait for a free session slot first (max_concurrent_sessions is %d): they start as running sessions finish or wait", queued, n, lim)
}

// slotsShort is how many of n sessions about to start will first wait for
// a max_concurrent_sessions slot (see slotNote).
func slotsShort(r *Run, n int, wait bool) int {
	free := cap(r.slotSem) - len(r.slotSem)
	if wait {
		free++
	}
	return max(n-max(free, 0), 0)
}

// slotWaitReason is the status reason of a session waiting for a slot.
func slotWaitReason(limit int) string {
	return fmt.Sprintf("waiting for a free session slot (max_concurrent_sessions is %d)", limit)
}

func callID(c *agents.Call) string {
	if c == nil {
		return ""
	}
	return c.ID
}

func defaultChildRole(roster *agents.Roster) string {
	if _, ok := roster.Get("researcher"); ok {
		return "researcher"
	}
	for _, r := range roster.Roles() {
		if r.Name != "orchestrator" {
			return r.Name
		}
	}
	return "orchestrator"
}

func appendUnique(list []string, id string) []string {
	for _, x := range list {
		if x == id {
			return list
		}
	}
	return append(list, id)
}

func findChild(family []*Session, name string) *Session {
	for _, k := range family {
		if k.id == name || (k.label != "" && k.label == name) {
			return k
		}
	}
	return nil
}

func familyNames(family []*Session) string {
	if len(family) == 0 {
		return "none yet"
	}
	var names []string
	for _, k := range family {
		names = append(names, k.name())
	}
	return strings.Join(names, ", ")
}

// agentColumn is how a session is named in sibling tables.
func (s *Session) agentColumn() string {
	if s.label != "" {
		return s.agent + " (" + s.label + ")"
	}
	return s.agent
}

// reach is which tools s has to reach its siblings, for the sibling
// tables and announcements to name only those.
func (s *Session) reach() coordination.Reach {
	g := s.offeredGroups()
	return coordination.Reach{Broadcast: g[agents.GroupBroadcasts], Tasks: g[agents.GroupTasks]}
}

// injectSiblingsTx gives every new child the table of its siblings and
// tells the existing siblings about the new ones (FR-9, FR-10), passively.
func (r *Run) injectSiblingsTx(tx *store.Tx, parent *Session, batch []*Session) error {
	family := parent.childList()
	inBatch := map[*Session]bool{}
	for _, b := range batch {
		inBatch[b] = true
	}
	maxRows := r.e.Config().Limits.MaxSiblingRows
	// Every child of the batch gets the table of the others.
	var rows []coordination.SiblingRow
	at := map[*Session]int{}
	for _, k := range family {
		if k.status() == StatusCancelled {
			continue
		}
		at[k] = len(rows)
		rows = append(rows, coordination.SiblingRow{TaskID: k.id, Agent: k.agentColumn(), Title: k.title})
	}
	table := coordination.NewSiblingTable(rows)
	for _, child := range batch {
		self, ok := at[child]
		if !ok {
			self = -1
		}
		item := &store.InboxItem{Kind: "sibling", Content: table.WithoutFor(self, maxRows, child.reach()), Source: "system", FromSession: parent.id}
		if _, err := child.deliverTx(tx, item); err != nil {
			return err
		}
	}
	const maxAnnounced = 5
	for _, k := range family {
		if inBatch[k] || k.status() == StatusCancelled {
			continue
		}
		var parts []string
		reach := k.reach()
		for i, b := range batch {
			if i == maxAnnounced {
				more := fmt.Sprintf("… and %d more new sibling tasks", len(batch)-maxAnnounced)
				if reach.Tasks {
					more += " (use task_siblings to list them all)"
				}
				parts = append(parts, more)
				break
			}
			parts = append(parts, coordination.FormatNewSiblingFor(b.id, b.agentColumn(), b.title, reach))
		}
		item := &store.InboxItem{Kind: "sibling", Content: strings.Join(parts, "\n"), Source: "system", FromSession: parent.id}
		if _, err := k.deliverTx(tx, item); err != nil {
			return err
		}
	}
	return nil
}

// related finds a child or sibling of s by id (or label), or says why
// taskID names none. Labels are unique among siblings only, so a label may
// name a child and a sibling at once: that is refused, not guessed.
func (s *Session) related(taskID string) (*Session, error) {
	child := findChild(s.childList(), taskID)
	sib := findChild(s.siblings(), taskID)
	switch {
	case child != nil && sib != nil && child.id != taskID && sib.id != taskID:
		return nil, agents.Errorf("%q names both your child %s and your sibling %s: give the task id of the one you mean", taskID, child.id, sib.id)
	case child != nil && (sib == nil || child.id == taskID):
		return child, nil
	case sib != nil:
		return sib, nil
	}
	return nil, s.invalidTask(taskID)
}

// invalidTask refuses taskID as the target of a task tool, and says what
// the id names when it names something: the caller itself, its parent or
// another session of the run.
func (s *Session) invalidTask(taskID string) error {
	const refused = "Invalid task ID - must be a child or sibling task"
	const listed = "your children and siblings are listed in <sibling_tasks> and spawn results"
	switch k := s.r.session(taskID); {
	case taskID == s.id || (s.label != "" && taskID == s.label):
		return agents.Errorf("%s (%q is your own task; %s)", refused, taskID, listed)
	case s.parent != nil && (taskID == s.parent.id || (s.parent.label != "" && taskID == s.parent.label)):
		return agents.Errorf("%s (%q is your parent: it gets your final answer when you finish, so put what it should know there, or ask it with ask_others)", refused, taskID)
	case k != nil:
		return agents.Errorf("%s (%q is another session of this run, neither your child nor your sibling; %s)", refused, taskID, listed)
	}
	return agents.Errorf("%s (got %q; %s)", refused, taskID, listed)
}

func outcomeOf(k *Session) agents.TaskOutcome {
	k.mu.Lock()
	defer k.mu.Unlock()
	o := agents.TaskOutcome{TaskID: k.id, Label: k.label, Agent: k.agent, Status: k.rec.Status}
	switch k.rec.Status {
	case StatusCompleted:
		o.Output = k.rec.Result
	case StatusFailed, StatusCancelled:
		o.Error = k.rec.Error
	case StatusPending:
		o.Reason = k.rec.Reason
		o.WaitingOn = k.waitOn
	default:
		o.Reason = k.rec.Reason
	}
	return o
}

// waitTerminal blocks until every target has finished, or the timeout
// (default 5 minutes) passes, then returns their outcomes. Results of the
// caller's own children are consumed: the caller gets them here, not again
// as <task_result> messages.
func (s *Session) waitTerminal(ctx context.Context, c *agents.Call, targets []*Session, timeout time.Duration) ([]agents.TaskOutcome, []string) {
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	expired := make(chan struct{}) // after timeout of awake time: a ctrl+z does not count
	deadline := awake.AfterFunc(timeout, func() { close(expired) })
	defer deadline.Stop()
	blocked := false
	defer func() {
		if blocked {
			s.endBlocking()
		}
	}()
	// Targets usually share one parent; when they do not (a child and a
	// sibling), a slow tick covers the changes of the other families.
	var tick <-chan time.Time
	if len(targets) > 1 {
		for _, t := range targets[1:] {
			if t.parent != targets[0].parent {
				tk := time.NewTicker(100 * time.Millisecond)
				defer tk.Stop()
				tick = tk.C
				break
			}
		}
	}
wait:
	for {
		var ch <-chan struct{}
		if p := targets[0].parent; p != nil {
			ch = p.childChanged()
		}
		pending := 0
		for _, t := range targets {
			if !terminal(t.status()) {
				pending++
			}
		}
		if pending == 0 {
			break
		}
		if !blocked {
			blocked = true
			s.beginBlocking(fmt.Sprintf("waiting for %d task(s)", pending))
		}
		select {
		case <-ch:
		case <-tick:
		case <-expired:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	var out []agents.TaskOutcome
	var timedOut []string
	mine := map[string]bool{}
	for _, t := range targets {
		o := outcomeOf(t)
		if !terminal(o.Status) {
			o.TimedOut = true
			timedOut = append(timedOut, t.id)
		} else if t.parent == s {
			mine[t.id] = true
		}
		out = append(out, o)
	}
	if len(mine) > 0 && ctx.Err() == nil {
		if earlier, err := s.consumeResults(callID(c), mine); err == nil {
			for i := range out {
				out[i].Earlier = earlier[out[i].TaskID]
			}
		}
	}
	if timedOut == nil {
		timedOut = []string{}
	}
	return out, timedOut
}

// beginBlocking marks the session as waiting inside a tool: it gives up its
// session slot so that the sessions it waits for can run.
func (s *Session) beginBlocking(reason string) {
	s.mu.Lock()
	s.blocking++
	first := s.blocking == 1
	s.mu.Unlock()
	if !first {
		return
	}
	s.releaseSlot()
	s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		if err := s.flushTx(tx); err != nil {
			return err
		}
		if st := s.status(); terminal(st) || st == StatusWaiting {
			return nil
		}
		return s.setStatusTx(tx, StatusWaiting, reason)
	})
}

func (s *Session) endBlocking() {
	s.mu.Lock()
	s.blocking--
	last := s.blocking == 0
	s.mu.Unlock()
	if !last || s.ctx.Err() != nil {
		return
	}
	s.acquireSlot()
	s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		if terminal(s.status()) {
			return nil
		}
		return s.setStatusTx(tx, StatusRunning, "")
	})
}

func (h *host) TaskOutput(ctx context.Context, c *agents.Call, taskID string, wait bool, timeout time.Duration) (*agents.TaskOutcome, error) {
	s := h.s()
	k, err := s.related(taskID)
	if err != nil {
		return nil, err
	}
	if wait {
		end, err := s.beginWait([]*Session{k})
		if err != nil {
			return nil, err
		}
		defer end()
		outs, _ := s.waitTerminal(ctx, c, []*Session{k}, timeout)
		return &outs[0], nil
	}
	o := outcomeOf(k)
	return &o, nil
}

func (h *host) WaitTasks(ctx context.Context, c *agents.Call, ids []string, timeout time.Duration) (*agents.WaitResult, error) {
	s := h.s()
	var targets []*Session
	if len(ids) == 0 {
		targets = s.childList()
		if len(targets) == 0 {
			return &agents.WaitResult{Results: []agents.TaskOutcome{}, TimedOut: []string{}}, nil
		}
	}
	for _, id := range ids {
		k, err := s.related(id)
		if err != nil {
			return nil, err
		}
		targets = append(targets, k)
	}
	end, err := s.beginWait(targets)
	if err != nil {
		return nil, err
	}
	defer end()
	outs, timedOut := s.waitTerminal(ctx, c, targets, timeout)
	return &agents.WaitResult{Results: outs, TimedOut: timedOut}, nil
}

// beginWait records that s is about to wait for targets (its children or
// siblings) to end, unless that wait could never end before its timeout:
// a target cannot end before s does (see blockedLocked). Two sessions
// waiting for each other would otherwise both sit out the whole timeout.
// The function it returns ends the record; a session may wait several
// times at once (calls of one turn run together), and each wait counts
// until it ends.
func (s *Session) beginWait(targets []*Session) (end func(), err error) {
	r := s.r
	limit := r.e.Config().Coordination.MaxConcurrentDelegations
	r.mu.Lock()
	defer r.mu.Unlock()
	blocked := r.blockedLocked(s, limit)
	for _, t := range targets {
		if blocked[t] {
			return nil, agents.Errorf("%s cannot end before you do: it waits for you, is chained after you, or is queued behind sessions that do, itself or through the sessions it waits for; "+
				"waiting for it would end only when a timeout ends one of the waits: finish your own task, or message it instead", t.id)
		}
	}
	if r.waitsOn == nil {
		r.waitsOn = map[*Session][]*Session{}
	}
	r.waitsOn[s] = append(r.waitsOn[s], targets...)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		left := r.waitsOn[s]
		for _, t := range targets {
			if i := slices.Index(left, t); i >= 0 {
				left = slices.Delete(left, i, i+1)
			}
		}
		if len(left) == 0 {
			delete(r.waitsOn, s)
		} else {
			r.waitsOn[s] = left
		}
	}, nil
}

// blockedLocked is the set of sessions that cannot end before s does: s
// itself; a session waiting for one of them, in a task_output, task_wait
// or a spawn or delegation that waits, as a pending session chained after
// it that has not started, or as its parent; and a delegation queued until a place
// under max_concurrent_delegations (limit) frees, when so many of the
// delegations holding one are in the set that none could free while they
// are. It is the least such set, built up until it stops growing: a cycle
// that does not pass through s keeps its sessions out, so that a wait is
// refused only when nothing but a timeout could end it. r.mu is held.
func (r *Run) blockedLocked(s *Session, limit int) map[*Session]bool {
	type needs struct {
		any     []*Session // blocked when one of them is
		holders bool       // blocked when limit of the place holders are
	}
	holders := r.placeHoldersLocked()
	graph := map[*Session]needs{}
	for _, x := range r.order {
		if x == s || terminal(x.status()) {
			continue
		}
		// A session does not end while a child of its is at work.
		n := needs{any: append(slices.Clip(r.waitsOn[x]), x.children...)}
		x.mu.Lock()
		chained := !x.started && x.rec.Status == StatusPending
		waitOn := x.waitOn
		x.mu.Unlock()
		if chained {
			for _, id := range waitOn {
				if y := r.sessions[id]; y != nil {
					n.any = append(n.any, y)
				}
			}
		}
		if d := r.delegations[x.delegationID]; d != nil && d.rec.Status == delegPending && d.holdsPlace() && limit > 0 {
			n.holders = true
		}
		if len(n.any) > 0 || n.holders {
			graph[x] = n
		}
	}
	blocked := map[*Session]bool{s: true}
	isBlocked := func(y *Session) bool { return blocked[y] }
	for grew := true; grew; {
		grew = false
		for x, n := range graph {
			if blocked[x] {
				continue
			}
			queued := n.holders && countFunc(holders, isBlocked) >= limit
			if queued || slices.ContainsFunc(n.any, isBlocked) {
				blocked[x] = true
				grew = true
			}
		}
	}
	return blocked
}

// joinNotes joins the notes of a tool result that has several to say.
func joinNotes(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

func countFunc[T any](xs []T, f func(T) bool) int {
	n := 0
	for _, x := range xs {
		if f(x) {
			n++
		}
	}
	return n
}

func (h *host) Siblings(ctx context.Context) []agents.TaskRef {
	var out []agents.TaskRef
	for _, k := range h.s().siblings() {
		out = append(out, agents.TaskRef{TaskID: k.id, Label: k.label, Agent: k.agentColumn(), Title: k.title, Status: k.status()})
	}
	return out
}

func (h *host) SendMessage(ctx context.Context, c *agents.Call, taskID, message string, noReply bool) (*agents.SendResult, error) {
	s := h.s()
	k, err := s.related(taskID)
	if err != nil {
		return nil, err
	}
	if k.status() == StatusCancelled {
		return nil, agents.Errorf("task %s was cancelled: it cannot receive messages", k.id)
	}
	raw, err := s.effect(c, "message", func(tx *store.Tx) (any, error) {
		before := k.status()
		item := &store.InboxItem{Kind: "message", Waking: !noReply, Source: "agent", FromSession: s.id,
			Content: coordination.FormatTaskMessage(s.display(), s.id, message)}
		ok, err := k.deliverTx(tx, item)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, agents.Errorf("task %s cannot receive messages", k.id)
		}
		res := agents.SendResult{Status: "delivered", TaskID: k.id, NoReply: noReply}
		switch {
		case !noReply && before == StatusCompleted:
			// The reply is the task's next result, which goes to its
			// parent: the sender learns where to read it.
			res.Note = "the task had completed: it was woken to answer, and its answer will be its new result (read it with task_output once it completes again)"
		case before == StatusFailed:
			k.mu.Lock()
			started := k.started
			k.mu.Unlock()
			res.Note = "the task has failed: the message is in its history but it will not act on it"
			if !started {
				res.Note = "the task failed before it started: the message waits for it, and is read only if the run is resumed and the task runs again"
			}
		}
		err = s.r.recordFeedTx(tx, &store.Broadcast{Kind: event.KindMessage, FromSession: s.id, FromLabel: s.display(),
			Target: k.id, Message: message, NoReply: noReply, Recipients: []store.Recipient{{SessionID: k.id, Status: "delivered"}}})
		return res, err
	})
	if err != nil {
		return nil, err
	}
	var res agents.SendResult
	return &res, json.Unmarshal(raw, &res)
}

func (h *host) CancelTask(ctx context.Context, c *agents.Call, taskID string) (*agents.CancelResult, error) {
	s := h.s()
	k := findChild(s.childList(), taskID)
	if k == nil {
		return nil, agents.Errorf("task %q is not one of your children: you can only cancel tasks you created", taskID)
	}
	if st := k.status(); terminal(st) {
		return &agents.CancelResult{Status: "already_" + st, TaskID: k.id, Cancelled: []string{}}, nil
	}
	ended := s.r.cancelTree(k, "cancelled by "+s.display(), StatusCancelled, func() {
		k.mu.Lock()
		k.resultConsumed = true
		k.mu.Unlock()
	})
	if ended == nil {
		ended = []string{}
	}
	return &agents.CancelResult{Status: "cancelled", TaskID: k.id, Cancelled: ended}, nil
}

// ---- broadcasts ----

// recordFeedTx stores a feed item (broadcast, announcement, direct or human
// message) and emits broadcast.sent.
func (r *Run) recordFeedTx(tx *store.Tx, b *store.Broadcast) error {
	b.RunID = r.id
	if b.ID == "" {
		b.ID = "b-" + randomHex(12)
	}
	if b.CreatedAt.IsZero() {
		b.CreatedAt = r.e.now()
	}
	info := &event.BroadcastInfo{ID: b.ID, Kind: b.Kind, FromSession: b.FromSession, From: b.FromLabel, Category: b.Category,
		Target: b.Target, Message: b.Message, Skipped: b.Skipped, NoReply: b.NoReply, Timestamp: b.CreatedAt, Recipients: []string{}}
	for _, rc := range b.Recipients {
		if rc.Status == "delivered" {
			info.Recipients = append(info.Recipients, rc.SessionID)
		}
	}
	sid := b.FromSession
	if sid == "" {
		// A person's: the event names the session it went to, or the
		// orchestrator's when it went to the whole run.
		sid = r.rootID()
		if b.Target != "" && b.Target != "all" && r.session(b.Target) != nil {
			sid = b.Target
		}
	}
	ev, err := tx.Emit(event.Event{Type: event.BroadcastSent, RunID: r.id, SessionID: sid, Broadcast: info})
	if err != nil {
		return err
	}
	b.Seq = ev.Seq
	if err := tx.InsertBroadcast(b); err != nil {
		return err
	}
	r.mu.Lock()
	if len(r.feed) >= feedKeep {
		r.feed = append(r.feed[:0], r.feed[len(r.feed)-feedKeep/2:]...)
	}
	r.feed = append(r.feed, *info)
	r.feedTotal++
	r.mu.Unlock()
	return nil
}

func (h *host) Broadcast(ctx context.Context, c *agents.Call, message, category, target string) (*agents.BroadcastResult, error) {
	s := h.s()
	if err := coordination.CheckBroadcastMessage(message); err != nil {
		return nil, &agents.Error{Msg: err.Error()}
	}
	if err := coordination.CheckCategory(category); err != nil {
		return nil, &agents.Error{Msg: err.Error()}
	}
	if err := coordination.CheckTarget(target); err != nil {
		return nil, &agents.Error{Msg: err.Error()}
	}
	if s.parent == nil && target == "siblings" {
		msg := "Not a child task - cannot broadcast to siblings (the orchestrator has no siblings; use target \"children\")"
		return &agents.BroadcastResult{Status: "failed", Target: target, Error: msg, Errors: []string{msg}}, nil
	}
	limit := s.r.e.Config().Coordination.MaxBroadcastsPerSession
	raw, err := s.effect(c, "broadcast", func(tx *store.Tx) (any, error) {
		s.mu.Lock()
		sent := s.broadcasts
		s.mu.Unlock()
		if limit > 0 && sent >= limit {
			return nil, agents.Errorf("broadcast limit reached: you have sent %d broadcasts and the limit is %d per session (max_broadcasts_per_session); put anything else in your final answer", sent, limit)
		}
		var candidates []*Session
		res := &agents.BroadcastResult{Target: target, Errors: nil}
		if target != "children" && s.parent != nil {
			candidates = append(candidates, s.siblings()...)
			res.Skipped++ // self
		}
		if target != "siblings" {
			candidates = append(candidates, s.childList()...)
		}
		ts := s.r.e.now()
		content := coordination.FormatBroadcast(s.display(), s.id, category, ts, message)
		rec := &store.Broadcast{Kind: event.KindBroadcast, FromSession: s.id, FromLabel: s.display(), Category: category, Target: target,
			Message: message, NoReply: true, CreatedAt: ts}
		var shared *store.SharedContent
		if len(candidates) > 1 {
			var err error
			if shared, err = tx.ShareContent(content); err != nil {
				return nil, err
			}
		}
		for _, k := range candidates {
			if k.status() == StatusCancelled {
				res.Skipped++
				res.Errors = append(res.Errors, fmt.Sprintf("%s (%s): skipped, the task was cancelled", k.id, k.agentColumn()))
				rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "skipped", Reason: "cancelled"})
				continue
			}
			ok, err := k.deliverTx(tx, &store.InboxItem{Kind: "broadcast", Content: content, Source: "agent", FromSession: s.id, Shared: shared})
			if err != nil {
				return nil, err
			}
			if !ok {
				res.Skipped++
				res.Errors = append(res.Errors, fmt.Sprintf("%s (%s): skipped, it cannot receive messages", k.id, k.agentColumn()))
				rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "skipped", Reason: "unavailable"})
				continue
			}
			res.DeliveredTo++
			rec.Recipients = append(rec.Recipients, store.Recipient{SessionID: k.id, Status: "delivered"})
		}
		rec.Skipped = res.Skipped
		switch {
		case len(res.Errors) == 0:
			res.Status = "success"
		case res.DeliveredTo > 0:
			res.Status = "partial"
		default:
			res.Status = "failed"
		}
		if err := s.r.recordFeedTx(tx, rec); err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.broadcasts++
		s.mu.Unlock()
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	var res agents.BroadcastResult
	return &res, json.Unmarshal(raw, &res)
}

func (h *host) ReadBroadcasts(ctx context.Context, category string, limit int, source string) (*agents.BroadcastsRead, error) {
	s := h.s()
	ids := []string{s.id}
	src := "self"
	if source == "children" {
		ids = ids[:0]
		for _, k := range s.childList() {
			ids = append(ids, k.id)
		}
		src = "child"
		if len(ids) == 0 {
			return &agents.BroadcastsRead{Broadcasts: []agents.BroadcastItem{}}, nil
		}
	}
	// Broadcasts are read back from the store: wait until what this
	// session (or anyone) has sent so far is committed.
	if err := s.r.e.store.Do(ctx, func(*store.Tx) error { return nil }); err != nil {
		return nil, err
	}
	items, total, err := s.r.e.store.ReadBroadcasts(ctx, s.r.id, ids, source == "children", category, limit)
	if err != nil {
		return nil, err
	}
	out := &agents.BroadcastsRead{Broadcasts: []agents.BroadcastItem{}, Total: total}
	for _, b := range items {
		from := b.FromLabel
		if from == "" {
			from = "human"
		}
		out.Broadcasts = append(out.Broadcasts, agents.BroadcastItem{From: from, TaskID: b.FromSession, Category: b.Category,
			Timestamp: b.CreatedAt.UTC().Format(time.RFC3339), Message: b.Message, Source: src})
	}
	return out, nil
}

// ---- planning ----

func (h *host) PlanOp(ctx context.Context, c *agents.Call, fn func(p *coordination.Plan) (*coordination.Plan, any, error)) (any, error) {
	s := h.s()
	if c == nil {
		s.planMu.Lock()
		defer s.planMu.Unlock()
		_, res, err := fn(s.plan)
		return res, err
	}
	raw, err := s.effect(c, "plan", func(tx *store.Tx) (any, error) {
		s.planMu.Lock()
		defer s.planMu.Unlock()
		old := s.plan
		var was map[string]string // the descriptions before fn, by task id
		if old != nil {
			was = make(map[string]string)
			for _, t := range old.Tasks() {
				was[t.ID] = t.Description
			}
		}
		next, res, err := fn(s.plan)
		if err != nil {
			return nil, err
		}
		if err := s.savePlanTx(tx, next); err != nil {
			return nil, err
		}
		if next == old && old != nil {
			// Changed in place (edit_task): a task reworded is the same
			// task, and its delegations stay linked to it.
			s.r.followRewordedTasks(s, was, next)
		}
		s.plan = next
		return res, nil
	})
	if err != nil {
		return nil, err
	}
	return raw, nil
}

// savePlanTx stores a plan and emits plan.updated; s.planMu must be held.
func (s *Session) savePlanTx(tx *store.Tx, p *coordination.Plan) error {
	var tasks []coordination.Task
	if p != nil {
		tasks = p.Tasks()
	}
	rows := make([]store.PlanTask, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, store.PlanTask{ID: t.ID, Description: t.Description, Status: t.Status, DependsOn: t.DependsOn, Note: t.Note,
			CreatedAt: t.CreatedAt, CompletedAt: t.CompletedAt})
	}
	if err := tx.ReplacePlan(s.r.id, s.id, rows); err != nil {
		return err
	}
	_, err := tx.Emit(event.Event{Type: event.PlanUpdated, RunID: s.r.id, SessionID: s.id, Plan: planInfo(s.id, p)})
	return err
}

func planInfo(sessionID string, p *coordination.Plan) *event.PlanInfo {
	info := &event.PlanInfo{SessionID: sessionID, Tasks: []event.PlanTask{}}
	if p == nil {
		return info
	}
	ready := map[string]bool{}
	for _, t := range p.Ready() {
		ready[t.ID] = true
	}
	waiting := map[string][]string{}
	for _, b := range p.Blocked() {
		waiting[b.ID] = b.WaitingOn
	}
	for _, t := range p.Tasks() {
		info.Tasks = append(info.Tasks, event.PlanTask{ID: t.ID, Description: t.Description, Status: t.Status,
			DependsOn: t.DependsOn, WaitingOn: waiting[t.ID], Ready: ready[t.ID], Note: t.Note})
	}
	return info
}

func (h *host) ViewPlans(ctx context.Context, sessionID string) (any, error) {
	s := h.s()
	type view struct {
		TaskID  string                `json:"task_id"`
		Agent   string                `json:"agent"`
		Label   string                `json:"label,omitempty"`
		Status  string                `json:"status"`
		Summary string                `json:"summary"`
		Tasks   []agents.PlanTaskView `json:"tasks"`
	}
	var targets []*Session
	if sessionID != "" {
		if k := s.r.session(sessionID); k != nil {
			targets = []*Session{k}
		} else {
			// A label is unique among siblings only: every session that
			// bears it is shown, each with its id.
			for _, x := range s.r.allSessions() {
				if x.label == sessionID {
					targets = append(targets, x)
				}
			}
		}
		if len(targets) == 0 {
			return nil, agents.Errorf("no session %q in this run", sessionID)
		}
	} else {
		for _, k := range s.r.allSessions() {
			if k != s {
				targets = append(targets, k)
			}
		}
	}
	out := []view{}
	for _, k := range targets {
		k.planMu.Lock()
		p := k.plan
		k.planMu.Unlock()
		if p == nil {
			continue
		}
		out = append(out, view{TaskID: k.id, Agent: k.agent, Label: k.label, Status: k.status(), Summary: p.Summary(), Tasks: agents.ViewTasks(p.Tasks())})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	if sessionID != "" && len(out) == 0 {
		return map[string]any{"plans": out, "note": sessionID + " has no task plan"}, nil
	}
	return map[string]any{"plans": out}, nil
}
