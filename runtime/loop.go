package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime/debug"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/prompts"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

var errSessionTimeout = errors.New("session timeout")

// start launches the session's goroutine unless it is running already.
func (s *Session) start() {
	if s.r.stopping.Load() {
		return
	}
	s.mu.Lock()
	if s.running {
		// The goroutine may be past its last look at the session (a
		// completed session unwinding): it starts over once it has
		// cleaned up, rather than a second one running beside it.
		s.rerun = true
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	s.launch()
}

// launch starts the session's goroutine; s.running is already set.
func (s *Session) launch() {
	s.r.wg.Add(1)
	s.r.loopStarted()
	go s.loop()
}

// loop is the session's goroutine: turns until it completes, fails, is
// cancelled, or the run is interrupted.
func (s *Session) loop() {
	growStack()
	defer s.r.wg.Done()
	defer s.r.loopEnded()
	defer func() {
		if p := recover(); p != nil {
			s.r.e.log.Error("session panicked", "run", s.r.id, "session", s.id, "panic", p, "stack", string(debug.Stack()))
			s.fail(fmt.Sprintf("internal error in swarmdeck (please report it): %v", p))
		}
		s.closeUnansweredCalls()
		s.r.releaseTokens(s.heldTokens) // an answer dropped unrecorded
		s.heldTokens = 0
		s.releaseSlot()
		s.mu.Lock()
		// Only a session woken to run again goes on: a start that came
		// while this goroutine still had work ahead of it asked for
		// nothing more.
		again := s.rerun && s.rec.Status == StatusRunning && !s.r.stopping.Load()
		s.rerun = false
		s.running = again
		s.mu.Unlock()
		if again {
			s.launch() // before this one's wg.Done: the run never looks idle between them
		}
	}()
	if !s.acquireSlot() {
		return
	}
	if !s.ensureStarted() {
		return
	}
	defer s.armTimeout()()
	for {
		if s.stopped() {
			return
		}
		need, err := s.beginTurn()
		if err != nil {
			s.fail("could not store the session's messages: " + err.Error())
			return
		}
		if !need {
			if content, ok := s.unsettledFinal(); ok {
				// Resumed after a crash between storing a final answer and
				// recording what it meant: settle it now.
				outcome, err := s.endTurn(content)
				if err != nil || outcome == turnDone {
					return
				}
				if outcome == turnAgain {
					continue
				}
			}
			if !s.idle() {
				return
			}
			continue
		}
		if pending := s.pendingToolCalls(); len(pending) > 0 {
			// Resumed after a crash in the middle of executing tools: they
			// start again, in this process's events too.
			if err := s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error { return s.emitStarted(tx, pending) }); err != nil {
				s.fail("could not store the start of the tools: " + err.Error())
				return
			}
			s.runTools(pending)
			continue
		}
		lim := s.r.e.Config().Limits
		s.mu.Lock()
		turns := s.rec.Turns
		s.mu.Unlock()
		if lim.MaxTurnsPerSession > 0 && turns >= lim.MaxTurnsPerSession {
			s.mu.Lock()
			answered := s.rec.Result != ""
			s.mu.Unlock()
			if answered {
				// Woken after its final answer (a message, a child's
				// result) with no turn left to take it in.
				s.fail(fmt.Sprintf("reached max_turns_per_session (%d) with what arrived after its final answer still to read", lim.MaxTurnsPerSession))
			} else {
				s.fail(fmt.Sprintf("reached max_turns_per_session (%d) without a final answer", lim.MaxTurnsPerSession))
			}
			return
		}
		var early *time.Timer
		if turns == 0 {
			// A new session's prompt and task are stored while the model
			// works on them, not only with its first answer, which may
			// take minutes: a transcript shows what the session was
			// given. Not at once, where a wave of new sessions keeps the
			// cores busy, and not for an answer that comes quickly.
			early = time.AfterFunc(storeAheadAfter, func() { s.r.e.store.Go(s.flushTx) })
		}
		resp, err := s.callModel()
		if early != nil {
			early.Stop()
		}
		if err != nil {
			s.spentOnFailure(err)
			s.r.releaseTokens(s.heldTokens)
			s.heldTokens = 0
			if errors.Is(err, errBudgetSpent) {
				s.r.budgetExhausted()
				return
			}
			if s.stopped() {
				return
			}
			if retryable(err) {
				// The server did not answer, even after retries: an outage
				// or overload, which strikes every session of the run
				// alike. Nothing about the run is wrong, so it stops
				// resumable instead of failing its sessions one by one
				// and finishing on an answer made of their failures.
				go s.r.suspend(err.Error())
				return
			}
			s.fail(err.Error())
			return
		}
		if s.stopped() {
			// Cancelled while the answer was on its way: it is not
			// recorded, and its tools do not run.
			return
		}
		calls, err := s.recordAssistant(resp)
		if err != nil {
			s.fail("could not store the model's answer: " + err.Error())
			return
		}
		if s.r.overBudget() {
			s.r.budgetExhausted()
			return
		}
		if len(calls) > 0 {
			s.cutOff = resp.FinishReason == "length"
			s.runTools(calls)
			s.cutOff = false
			continue
		}
		if s.askAgain(resp) {
			continue
		}
		result := resp.Content
		if strings.TrimSpace(result) == "" && resp.FinishReason != "length" {
			// Empty again after the note asking for an answer, and not
			// for want of room (that is marked below): nothing can stand
			// as the session's result, and a run that "completed" with
			// nothing would not say why.
			s.fail(errEmptyAnswers)
			return
		}
		if resp.FinishReason == "length" {
			// Cut off after the model was asked again (for a shorter
			// answer, or for one at all after an empty one): the result
			// goes on as it is, saying so to the parent and the person.
			result = strings.TrimSpace(result + "\n\n" + markCutOff)
		}
		outcome, err := s.endTurn(result)
		if err != nil {
			s.fail("could not store the session's result: " + err.Error())
			return
		}
		switch outcome {
		case turnDone:
			return
		case turnAgain:
			continue
		}
		if !s.idle() {
			return
		}
	}
}

// storeAheadAfter is how long a session's first model call runs before
// its prompt and task are stored without waiting for the answer.
const storeAheadAfter = 250 * time.Millisecond

// Notes that answer a final answer unfit to be a session's result.
const (
	noteEmptyAnswer = "Your last answer was empty. Reply with your final answer as text, or call a tool to go on with the work."
	noteCutOff      = "Your last answer was cut off: it reached the model's output limit. Reply again with a shorter final answer that is complete."
	// markCutOff ends a result that was cut off at the model's output
	// limit after the model was asked again. It says nothing of how
	// often: an answer asked for after an empty one was cut off once.
	markCutOff = "[cut off: this answer reached the model's output limit and is incomplete]"
	// errEmptyAnswers fails a session whose model answered with nothing
	// twice, the second time when asked again.
	errEmptyAnswers = "the model answered with nothing, twice (the second time when asked again for an answer): " +
		"a small or overloaded local model does this; try another model, or a larger context window"
)

// askAgain answers a final answer that cannot stand as the session's
// result, one that is empty or was cut off at the model's output limit,
// with a note asking for another, and reports whether it did. It asks once:
// an answer to the note is taken as it is.
func (s *Session) askAgain(resp *llm.Response) bool {
	var note string
	switch {
	case strings.TrimSpace(resp.Content) == "":
		note = noteEmptyAnswer
	case resp.FinishReason == "length":
		note = noteCutOff
	default:
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// The history ends with this answer; look back to the one before it.
	for i := len(s.history) - 2; i >= 0 && s.history[i].Role != llm.RoleAssistant; i-- {
		if m := s.history[i]; m.Role == llm.RoleUser && (m.Content == noteEmptyAnswer || m.Content == noteCutOff) {
			return false
		}
	}
	s.addLocked(&store.Message{Role: llm.RoleUser, Content: note, Synthetic: true, Source: "system"})
	return true
}

// unsettledFinal reports a final answer whose end of turn was not
// recorded: the session is still "running" after it.
func (s *Session) unsettledFinal() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rec.Status != StatusRunning {
		return "", false
	}
	for i := len(s.history) - 1; i >= 0; i-- {
		m := s.history[i]
		switch m.Role {
		case llm.RoleAssistant:
			return m.Content, len(m.ToolCalls) == 0
		case llm.RoleTool:
			return "", false
		}
	}
	return "", false
}

// stopped reports whether the session must stop now. A timeout fails the
// session; an interrupt or a cancellation leaves the store as it is (the
// canceller recorded the status).
func (s *Session) stopped() bool {
	if s.ctx.Err() == nil {
		return false
	}
	if errors.Is(context.Cause(s.ctx), errSessionTimeout) {
		s.fail(s.timeoutReason())
	}
	return true
}

// timeoutReason says which timeout ended the session, with the duration
// it was armed with: the configuration may have changed since.
func (s *Session) timeoutReason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeoutWhy
}

// armTimeout bounds the session's wall-clock time while its goroutine runs;
// the returned function disarms it (a finished session must not time out
// later, when it may be woken again).
func (s *Session) armTimeout() (disarm func()) {
	cfg := s.r.e.Config()
	d := cfg.Limits.SessionTimeout.D()
	why := "session timed out after %s (session_timeout)"
	if s.delegationID != "" && cfg.Coordination.DelegationTimeout.D() > 0 {
		d = cfg.Coordination.DelegationTimeout.D()
		why = "delegation timed out after %s (delegation_timeout)"
	}
	if d <= 0 {
		return func() {}
	}
	s.mu.Lock()
	started := s.startedAt
	s.timeoutWhy = fmt.Sprintf(why, d)
	s.mu.Unlock()
	// Awake time: a ctrl+z of the dashboard, however long, does not use
	// the session's time up.
	remaining := d - awake.Since(started)
	if remaining <= 0 {
		remaining = time.Millisecond
	}
	cancel := s.cancel
	t := awake.AfterFunc(remaining, func() { cancel(errSessionTimeout) })
	return func() { t.Stop() }
}

// acquireSlot takes a max_concurrent_sessions slot, showing the session as
// pending while it waits for one.
func (s *Session) acquireSlot() bool {
	s.mu.Lock()
	held := s.slotHeld
	s.mu.Unlock()
	if held {
		return true
	}
	select {
	case s.r.slotSem <- struct{}{}:
	default:
		reason := slotWaitReason(cap(s.r.slotSem)) // the run's limit, which a reload does not change
		s.r.e.store.Do(s.ctx, func(tx *store.Tx) error {
			s.mu.Lock()
			st, said := s.rec.Status, s.rec.Status == StatusPending && s.rec.Reason == reason
			s.mu.Unlock()
			if terminal(st) || said {
				return nil // ended, or created saying so already
			}
			return s.setStatusTx(tx, StatusPending, reason)
		})
		select {
		case s.r.slotSem <- struct{}{}:
		case <-s.ctx.Done():
			return false
		}
	}
	s.mu.Lock()
	s.slotHeld = true
	s.mu.Unlock()
	return true
}

func (s *Session) releaseSlot() {
	s.mu.Lock()
	held := s.slotHeld
	s.slotHeld = false
	s.mu.Unlock()
	if held {
		<-s.r.slotSem
	}
}

// idle waits for a waking item. It releases the session slot meanwhile.
func (s *Session) idle() bool {
	s.releaseSlot()
	select {
	case <-s.wake:
	case <-s.ctx.Done():
		s.stopped()
		return false
	}
	return s.acquireSlot()
}

// errEndedBeforeStart is why a session that was ended while it waited to
// start does not start.
var errEndedBeforeStart = errors.New("the session ended before it started")

// ensureStarted writes the system prompt and the task, the first time.
func (s *Session) ensureStarted() bool {
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		return true
	}
	system, err := s.systemPrompt()
	if err != nil {
		s.fail("could not build the system prompt: " + err.Error())
		return false
	}
	// A child's task is its parent's text: what in it looks like a tag
	// the runtime injects is defused, so that no parent can pass words of
	// its own off as the person's, a sibling's or the system's.
	source, task := "agent", coordination.DefuseTags(s.task)
	if s.parent == nil {
		source, task = "human", s.task
	}
	// The prompt and the task are stored with the session's first write:
	// the model call does not wait for a commit. The session counts as in
	// its turn from here, so deliveries meanwhile go to its inbox.
	s.mu.Lock()
	if !s.started {
		s.addLocked(&store.Message{Role: llm.RoleSystem, Content: system, Source: "system"})
		s.addLocked(&store.Message{Role: llm.RoleUser, Content: task, Source: source})
		s.started = true
		s.inTurn = true
		s.startedAt = s.r.e.now()
	}
	status := s.rec.Status
	s.mu.Unlock()
	if status == StatusRunning {
		return true
	}
	err = s.r.e.store.Apply(s.ctx, func(tx *store.Tx) error {
		if terminal(s.status()) {
			// Cancelled or failed before its goroutine got here.
			return errEndedBeforeStart
		}
		if err := s.flushTx(tx); err != nil {
			return err
		}
		return s.setStatusTx(tx, StatusRunning, "")
	})
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, errEndedBeforeStart) {
			s.fail("could not store the session start: " + err.Error())
		}
		return false
	}
	return true
}

// groups are the tool groups this session has after the feature switches.
func (s *Session) groups() map[string]bool {
	cfg := s.r.e.Config().Coordination
	out := map[string]bool{}
	for g, on := range s.role.Groups {
		if !on {
			continue
		}
		switch g {
		case agents.GroupPlanning:
			on = cfg.EnableAgentPlanning
		case agents.GroupQuestions, agents.GroupBroadcasts:
			on = cfg.EnableBroadcasts
		case agents.GroupDelegation:
			on = cfg.EnableTaskDelegation
		case agents.GroupSpawn:
			on = s.role.CanSpawn
		}
		if on {
			out[g] = true
		}
	}
	return out
}

// mayStart reports whether the limits let the session start sub-agents
// (max_spawn_depth: a child would be too deep) and delegations (a
// delegate is a child too, and max_delegation_depth counts delegations).
func (s *Session) mayStart() (spawn, delegate bool) {
	cfg := s.r.e.Config()
	spawn = s.depth < cfg.Limits.MaxSpawnDepth
	return spawn, spawn && s.delegationDepth() < cfg.Coordination.MaxDelegationDepth
}

// offeredGroups are the tool groups the session's prompt and reminders
// tell of: its groups, less spawning and delegating where the limits
// refuse them. A model told to use tools that could only fail wasted turns
// on the refusals.
func (s *Session) offeredGroups() map[string]bool {
	g := s.groups()
	spawn, delegate := s.mayStart()
	if !spawn {
		delete(g, agents.GroupSpawn)
	}
	if !delegate {
		delete(g, agents.GroupDelegation)
	}
	return g
}

// Tools that start sub-agents or delegations, which the limits may refuse.
var (
	spawnTools    = []string{"sessions_spawn", "task_create"}
	delegateTools = []string{"delegate_task"}
)

// offer is what a request offers: as offeredGroups has it, except that a
// session with children keeps the tools that wait for, cancel and ask
// after them, less those that would start more (withheld): the limits,
// the switches or its role (on a resume) may have changed since they
// started. The root, which has no siblings, is not offered task_siblings.
// A call of a tool left out is refused (see execTool).
func (s *Session) offer() (groups map[string]bool, withheld []string) {
	own := s.groups()
	groups = maps.Clone(own)
	spawn, delegate := s.mayStart()
	var delegated bool
	kids := s.childList()
	for _, k := range kids {
		delegated = delegated || k.delegationID != ""
	}
	if !spawn || !own[agents.GroupSpawn] {
		if len(kids) > 0 { // a delegate is waited for and cancelled as a child
			groups[agents.GroupSpawn] = true
			withheld = append(withheld, spawnTools...)
		} else {
			delete(groups, agents.GroupSpawn)
		}
	}
	if !delegate || !own[agents.GroupDelegation] {
		if delegated || len(kids) > 0 && own[agents.GroupDelegation] {
			groups[agents.GroupDelegation] = true
			withheld = append(withheld, delegateTools...)
		} else {
			delete(groups, agents.GroupDelegation)
		}
	}
	if s.parent == nil {
		withheld = append(withheld, "task_siblings") // the root has none
	}
	return groups, withheld
}

// offeredTools are the encoded tools a request offers (see offer).
func (s *Session) offeredTools() *llm.ToolSet {
	g, withheld := s.offer()
	return s.r.e.toolSet(g, s.role.CanWrite, withheld...)
}

// offeredNow are the tools a request made now would offer (see offer).
func (s *Session) offeredNow() []*agents.Tool {
	g, withheld := s.offer()
	return slices.DeleteFunc(s.r.e.tools.ForGroups(g, s.role.CanWrite), func(t *agents.Tool) bool {
		return slices.Contains(withheld, t.Name)
	})
}

// tools are the tools of every one of the session's groups, offered or
// not.
func (s *Session) tools() []*agents.Tool {
	return s.r.e.tools.ForGroups(s.groups(), s.role.CanWrite)
}

// notOffered is why a tool of the session's groups that its requests do
// not offer is refused, for the model that calls it anyway. A tool that
// would start a sub-agent or a delegation runs instead, and is refused
// with the limit in its own words.
func (s *Session) notOffered(t *agents.Tool) (why string, refused bool) {
	switch {
	case slices.Contains(spawnTools, t.Name), slices.Contains(delegateTools, t.Name):
		return "", false
	case t.Name == "task_siblings" && s.parent == nil:
		return "you are the run's first session, which has no siblings", true
	case t.Group == agents.GroupSpawn:
		return fmt.Sprintf("you have no sub-agents, and can start none: a child would be at depth %d but max_spawn_depth is %d", s.depth+1, s.r.e.Config().Limits.MaxSpawnDepth), true
	case t.Group == agents.GroupDelegation:
		return "you have no delegations, and can start none (max_delegation_depth and max_spawn_depth)", true
	}
	return "it is not offered to you", true
}
func (s *Session) systemPrompt() (string, error) {
	cfg := s.r.e.Config()
	roster := s.r.e.roster.Load()
	var entries []prompts.RosterEntry
	for _, role := range roster.Roles() {
		if role.Name == "orchestrator" && s.parent != nil && !s.role.CanSpawn {
			continue
		}
		entries = append(entries, prompts.RosterEntry{Role: role.Name, Description: role.Description})
	}
	s.mu.Lock()
	shared := coordination.Render(s.sharedCtx)
	s.mu.Unlock()
	groups := s.offeredGroups()
	return s.r.e.prompts.System(prompts.Data{
		Role: s.agent, Template: s.role.Prompt, Description: s.role.Description, SessionID: s.id, Label: s.label,
		Depth: s.depth, Goal: s.r.goal, IsRoot: s.parent == nil, Delegated: s.kind == kindDelegation,
		HasParent: s.parent != nil, CanSpawn: s.role.CanSpawn && groups[agents.GroupSpawn], CanWrite: s.role.CanWrite, Groups: groups,
		Roster: entries, Workspace: s.r.ws.Dir(), SharedContext: shared,
		MaxSpawnDepth: cfg.Limits.MaxSpawnDepth, MaxDelegationDepth: cfg.Coordination.MaxDelegationDepth,
		DelegationDepth: s.delegationDepth(),
	})
}

// beginTurn moves the inbox into the history and decides whether the model
// must be called (something non-passive arrived since its last answer).
func (s *Session) beginTurn() (bool, error) {
	reminder := s.reminder()
	// Inbox items enter the history now and are stored with the session's
	// next write; only a status change needs a write of its own. inTurn is
	// guarded by s.mu, which deliverTx holds too, so an item arriving from
	// here on goes to the inbox and is drained at the next boundary.
	s.mu.Lock()
	// Tool calls cut short by a crash are answered first: nothing may come
	// between a call and its result, and a waiting tool (task_wait) takes
	// the results it returns out of the inbox.
	unanswered := s.pendingCallsLocked()
	if !unanswered {
		for _, it := range s.inbox {
			s.addLocked(inboxMessage(it))
		}
		s.inbox = nil
	}
	need := !s.passiveTail || unanswered
	if need && !unanswered && reminder != "" && reminder != s.lastReminder {
		s.addLocked(&store.Message{Role: llm.RoleUser, Content: reminder, Synthetic: true, NoReply: true})
		s.lastReminder = reminder
	}
	s.inTurn = need || len(s.pendingMsgs) > 0
	status := s.rec.Status
	pendingWrites := len(s.pendingMsgs) > 0
	s.mu.Unlock()
	switch {
	case need && status != StatusRunning && !terminal(status):
	case !need && pendingWrites:
		// Nothing to answer, but what was drained must reach the store
		// before the session goes back to being idle.
	default:
		return need, nil
	}
	err := s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		s.mu.Lock()
		err := s.flushLocked(tx)
		if !need {
			s.inTurn = false
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		if need && status != StatusRunning && !terminal(s.status()) {
			return s.setStatusTx(tx, StatusRunning, "")
		}
		return nil
	})
	return need, err
}

// inboxMessage turns an inbox item into a history message.
func inboxMessage(it *store.InboxItem) *store.Message {
	// Synthetic marks what the system injected. A message that wakes its
	// recipient was written by an agent or a person (task_send_message,
	// the dashboard); a child's result is the system's report.
	synthetic := !it.Waking || it.Kind == "task_result"
	return &store.Message{Role: llm.RoleUser, Content: it.Content, Synthetic: synthetic, NoReply: !it.Waking, Source: it.Source, Shared: it.Shared,
		InboxID: it.ID}
}

// reminder builds the dynamic planning reminder, or "".
func (s *Session) reminder() string {
	if !s.groups()[agents.GroupPlanning] {
		return ""
	}
	s.planMu.Lock()
	p := s.plan
	s.planMu.Unlock()
	if p == nil {
		return ""
	}
	var d prompts.ReminderData
	for _, b := range p.Blocked() {
		switch {
		case len(b.WaitingOn) > 0:
			d.Blocked = append(d.Blocked, fmt.Sprintf("%s (waiting on %s)", b.ID, strings.Join(b.WaitingOn, ", ")))
		case b.Note != "":
			d.Blocked = append(d.Blocked, fmt.Sprintf("%s (blocked: %s)", b.ID, b.Note))
		default:
			d.Blocked = append(d.Blocked, b.ID+" (marked blocked)")
		}
	}
	for _, t := range p.Ready() {
		d.Ready = append(d.Ready, t.ID+": "+t.Description)
	}
	// Fan-out advice names only what can succeed: a delegate at the
	// delegation depth limit, told to delegate, wasted turns on refusals.
	d.Groups = s.offeredGroups()
	return s.r.e.prompts.Reminder(d)
}

// pendingCallsLocked reports whether the last assistant message has tool
// calls without results (a crash interrupted their execution).
func (s *Session) pendingCallsLocked() bool {
	return len(s.unansweredLocked()) > 0
}

func (s *Session) unansweredLocked() []llm.ToolCall {
	for i := len(s.history) - 1; i >= 0; i-- {
		m := s.history[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		if len(m.ToolCalls) == 0 {
			return nil
		}
		answered := map[string]bool{}
		for _, later := range s.history[i+1:] {
			if later.Role == llm.RoleTool {
				answered[later.ToolCallID] = true
			}
		}
		var out []llm.ToolCall
		for _, c := range m.ToolCalls {
			if !answered[c.ID] {
				out = append(out, c)
			}
		}
		return out
	}
	return nil
}

// answeredLocked reports whether the history has a result for call id
// after the answer that made the call. s.mu must be held.
func (s *Session) answeredLocked(id string) bool {
	for i := len(s.history) - 1; i >= 0; i-- {
		m := s.history[i]
		switch {
		case m.Role == llm.RoleTool && m.ToolCallID == id:
			return true
		case m.Role == llm.RoleAssistant:
			for _, c := range m.ToolCalls {
				if c.ID == id {
					return false
				}
			}
		}
	}
	return false
}

func (s *Session) pendingToolCalls() []llm.ToolCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unansweredLocked()
}

// request builds the chat request from the history.
func (s *Session) request() llm.Request {
	s.mu.Lock()
	hist := s.history
	s.mu.Unlock()
	msgs := mergeUserRuns(hist)
	inCallOrder(msgs)
	model := s.r.e.Model()
	if s.role.Model != "" {
		model = s.role.Model
	}
	return llm.Request{Model: model, Messages: msgs, ToolSet: s.offeredTools()}
}

// mergeUserRuns copies hist with each run of consecutive user messages
// (broadcasts, messages and notes injected between turns) merged into one,
// their texts joined by a blank line: servers with strict chat templates
// reject consecutive user messages. Each run is joined at once: a session
// with hundreds of siblings gets thousands of broadcasts in a row, and
// appending each to the last made every request quadratic in them.
func mergeUserRuns(hist []llm.Message) []llm.Message {
	msgs := make([]llm.Message, 0, len(hist))
	for i := 0; i < len(hist); {
		m := hist[i]
		j := i + 1
		if m.Role == llm.RoleUser && len(m.ToolCalls) == 0 {
			for j < len(hist) && hist[j].Role == llm.RoleUser {
				j++
			}
		}
		if j > i+1 {
			texts := make([]string, 0, j-i)
			for _, x := range hist[i:j] {
				texts = append(texts, x.Content)
			}
			m.Content = strings.Join(texts, "\n\n")
		}
		msgs = append(msgs, m)
		i = j
	}
	return msgs
}

// inCallOrder puts the results that follow each answer with tool calls in
// the order of its calls. They are stored as the calls finish, but many
// local models' chat templates drop tool_call_id and pair each result with
// a call by its position.
func inCallOrder(msgs []llm.Message) {
	for i := 0; i < len(msgs); i++ {
		calls := msgs[i].ToolCalls
		if msgs[i].Role != llm.RoleAssistant || len(calls) < 2 {
			continue
		}
		end := i + 1
		for end < len(msgs) && msgs[end].Role == llm.RoleTool {
			end++
		}
		pos := func(m llm.Message) int {
			for j, c := range calls {
				if c.ID == m.ToolCallID {
					return j
				}
			}
			return len(calls)
		}
		slices.SortStableFunc(msgs[i+1:end], func(a, b llm.Message) int { return pos(a) - pos(b) })
		i = end - 1
	}
}

// sanitizeCalls keeps malformed arguments out of what is sent back to the
// model: they stay in the store as the model wrote them, but some servers
// (Ollama) refuse a history that holds them. Arguments over the tools'
// limit go too: the call was refused, and sending them again would cost
// their size in every later request of the session.
func sanitizeCalls(m llm.Message) llm.Message {
	for i, c := range m.ToolCalls {
		if len(c.Arguments) > agents.MaxArgBytes || !json.Valid([]byte(c.Arguments)) {
			calls := append([]llm.ToolCall(nil), m.ToolCalls...)
			calls[i].Arguments = "{}"
			m.ToolCalls = calls
		}
	}
	return m
}

// callModel makes one streaming call, under the run's LLM concurrency limit.
func (s *Session) callModel() (*llm.Response, error) {
	// The request, a copy of the whole history, is built once the call
	// has its place: built before, every session waiting for one held its
	// copy meanwhile, hundreds of them in a big run. What arrives while
	// it waits goes to the inbox, for the next turn, as before. Whoever
	// holds tokens of the budget has a place already, so waiting for the
	// budget with one cannot hold up the calls that give tokens back.
	select {
	case s.r.llmSem <- struct{}{}:
	case <-s.ctx.Done():
		return nil, context.Cause(s.ctx)
	}
	defer func() { <-s.r.llmSem }()
	req := s.request()
	held, err := s.r.reserveTokens(s.ctx, &req)
	if err != nil {
		return nil, err
	}
	// Given back with the answer's usage (recordAssistant), or by the
	// session's end if the answer is not recorded.
	s.heldTokens = held
	bus := s.r.e.bus
	onDelta := func(d llm.Delta) {
		bus.PublishLossy(event.Event{Type: event.MessageDelta, Time: time.Now(), RunID: s.r.id, SessionID: s.id,
			Delta: &event.DeltaInfo{Content: d.Content, ToolName: d.ToolName, Reset: d.Reset}})
	}
	req.OnRetry = func(rt llm.Retry) {
		s.r.e.log.Warn("model call failed, retrying", "run", s.r.id, "session", s.id, "next_attempt", rt.Attempt+1, "of", rt.Of,
			"wait", rt.Wait, "reason", rt.Reason)
		// When first, then why: a row cut at the pane's width keeps the
		// short part, and the start of the cause.
		s.noteRetry(fmt.Sprintf("attempt %d of %d in %s: %s", rt.Attempt+1, rt.Of, retryWait(rt.Wait),
			strings.TrimSuffix(rt.Reason, ".")))
	}
	resp, err := s.r.e.llm.Stream(s.ctx, req, onDelta)
	if err == nil {
		s.r.watchContext(s.id, &req, resp)
	}
	s.mu.Lock()
	retried := s.retrying != ""
	s.mu.Unlock()
	if retried {
		s.noteRetry("")
	}
	return resp, err
}

// noteRetry says, with a session.status event, that the session's model
// call failed and is being tried again (why), or that it no longer is
// (""): the wait can be long, and without it the session only looks stuck.
// Nothing is stored but the event.
func (s *Session) noteRetry(why string) {
	s.mu.Lock()
	s.retrying = why
	info := s.infoLocked()
	s.mu.Unlock()
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: s.r.id, SessionID: s.id, Session: info})
		return err
	})
	if err != nil {
		s.r.e.log.Warn("could not report a retry", "session", s.id, "err", err)
	}
}

// retryable reports whether err is a model call's failure that another
// attempt later could fix: the server unreachable, overloaded, rate
// limited, or cutting the stream off.
func retryable(err error) bool {
	var le *llm.Error
	return errors.As(err, &le) && le.Retryable
}

// recordAssistant stores the model's answer and returns the tool calls to
// run, with ids made unique within the session.
func (s *Session) recordAssistant(resp *llm.Response) ([]llm.ToolCall, error) {
	calls := s.uniqueCallIDs(resp.ToolCalls)
	u := storeUsage(resp.Usage)
	msg := &store.Message{Role: llm.RoleAssistant, Content: resp.Content, Source: "agent", Usage: u}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, store.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	// The answer is not written here: the next store operation of this
	// session writes it first (see Session.pending). Nothing can reach the
	// history in between: the session is in its turn, so deliveries go to
	// the inbox.
	s.mu.Lock()
	s.addLocked(msg)
	s.pendingCalls = calls
	s.rec.Turns++
	s.rec.Usage.PromptTokens += u.PromptTokens
	s.rec.Usage.CompletionTokens += u.CompletionTokens
	s.rec.Usage.TotalTokens += u.TotalTokens
	if len(calls) > 0 {
		s.rec.LastTool, s.rec.LastToolFailed = calls[len(calls)-1].Name, false
		s.lastCall = calls[len(calls)-1].ID
	}
	s.mu.Unlock()
	s.r.mu.Lock()
	s.r.addUsageLocked(u)
	s.r.releaseTokensLocked(s.heldTokens)
	s.r.mu.Unlock()
	s.heldTokens = 0
	return calls, nil
}

// spentOnFailure adds to the session's usage, and the run's, the tokens
// the server reported for a model call made for it that failed
// (llm.Error.Usage): no answer came, but they were spent, and the token
// budget counts them. They are stored at once, since what follows may not
// write the session (a run stopped for an outage leaves its sessions'
// rows as they were).
func (s *Session) spentOnFailure(err error) {
	var le *llm.Error
	if !errors.As(err, &le) || le.Usage == (llm.Usage{}) {
		return
	}
	u := storeUsage(le.Usage)
	werr := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		s.r.mu.Lock()
		s.r.addUsageLocked(u)
		run := s.r.rec
		s.r.mu.Unlock()
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		return s.addUsageTx(tx, u)
	})
	if werr != nil {
		s.r.e.log.Warn("could not store the usage of a failed call", "session", s.id, "err", werr)
	}
}

// storeUsage is a model call's usage as stored, its total made up where
// the server gave none.
func storeUsage(lu llm.Usage) store.Usage {
	u := store.Usage{PromptTokens: lu.PromptTokens, CompletionTokens: lu.CompletionTokens, TotalTokens: lu.TotalTokens}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	return u
}

// uniqueCallIDs fills in missing tool call ids and renames repeated ones:
// some servers send none, or restart at call_0 every turn, and results and
// recorded effects are keyed by id.
func (s *Session) uniqueCallIDs(calls []llm.ToolCall) []llm.ToolCall {
	s.mu.Lock()
	seen := map[string]bool{}
	for _, m := range s.history {
		for _, c := range m.ToolCalls {
			seen[c.ID] = true
		}
	}
	turn := s.rec.Turns
	s.mu.Unlock()
	out := make([]llm.ToolCall, len(calls))
	for i, c := range calls {
		if c.ID == "" || seen[c.ID] {
			base := c.ID
			if base == "" {
				base = "call"
			}
			c.ID = fmt.Sprintf("%s_t%d_%d", base, turn+1, i)
			for seen[c.ID] {
				c.ID += "x"
			}
		}
		seen[c.ID] = true
		out[i] = c
	}
	return out
}

// runTools executes the calls of one answer and stores their results.
// When every call only reads, they run concurrently and the answer and all
// results are stored in one operation. Otherwise each result is stored as it
// comes. From the first call that changes the session's family, plan or
// delegations on, the calls run in order on one lane: a later call may name
// what an earlier one created (a spawn the label of the one before it,
// task_output or task_send_message a child just spawned, a broadcast the
// children). The calls before it run concurrently. An answer that writes
// to the workspace has all its workspace calls on that lane, in their
// order too: a read_file after a write_file of the same file must see what
// it wrote, and one before it what was there.
func (s *Session) runTools(calls []llm.ToolCall) {
	if s.allPure(calls) {
		s.runPure(calls)
		return
	}
	writes := false
	for _, c := range calls {
		if t, ok := s.r.e.tools.Get(c.Name); ok && t.Group == agents.GroupWorkspace && !t.Pure {
			writes = true
		}
	}
	var alone, lane []llm.ToolCall
	for _, c := range calls {
		if t, ok := s.r.e.tools.Get(c.Name); len(lane) > 0 ||
			ok && (t.Group == agents.GroupSpawn || t.Group == agents.GroupPlanning || t.Group == agents.GroupDelegation) ||
			ok && writes && t.Group == agents.GroupWorkspace {
			lane = append(lane, c)
			continue
		}
		alone = append(alone, c)
	}
	n := len(alone)
	if len(lane) > 0 {
		n++
	}
	done := make(chan struct{}, n)
	for _, c := range alone {
		go func() {
			growStack()
			defer func() { done <- struct{}{} }()
			s.runTool(c)
		}()
	}
	if len(lane) > 0 {
		go func() {
			growStack()
			defer func() { done <- struct{}{} }()
			for _, c := range lane {
				s.runTool(c)
			}
		}()
	}
	s.waitTools(done, n)
}

// toolGrace is how long a session that has ended (cancelled, timed out,
// stopped with its run) waits for its running tools to return.
const toolGrace = 2 * time.Second

// waitTools waits for n running tools to say they are done on done, and
// once the session has ended, for toolGrace more at most: a tool that does
// not heed its context (a search of a vast workspace) must not hold a
// timed-out session, or a stopping run's exit, for as long as it takes.
// Such a tool's result, if it comes, is recorded only if the call has none
// yet (see closeUnansweredCalls).
func (s *Session) waitTools(done <-chan struct{}, n int) {
	for ; n > 0; n-- {
		select {
		case <-done:
			continue
		case <-s.ctx.Done():
		}
		t := time.NewTimer(toolGrace)
		defer t.Stop()
		for ; n > 0; n-- {
			select {
			case <-done:
			case <-t.C:
				s.r.e.log.Warn("tools still running after their session ended; not waiting for them", "run", s.r.id, "session", s.id, "tools", n)
				return
			}
		}
		return
	}
}

// notRunToItsEnd begins the reason in the result of a call cut short by
// its session's end.
const notRunToItsEnd = "not run to its end: the session "

// closeUnansweredCalls gives each tool call a session that has ended
// (cancelled, failed) left without a result one saying so: every call in
// a history has its result, as chat APIs require of a history sent back,
// and the export shows what became of it. A run being stopped is left as
// it is: a resume runs those calls again.
func (s *Session) closeUnansweredCalls() {
	if s.r.stopping.Load() {
		return
	}
	s.mu.Lock()
	status, why := s.rec.Status, s.rec.Error
	s.mu.Unlock()
	if status != StatusCancelled && status != StatusFailed {
		return
	}
	if why == "" {
		why = status
	}
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		for _, c := range s.pendingToolCalls() {
			o := toolOutcome{call: c, isErr: true, content: toolErrorJSON(c.Name, notRunToItsEnd+status+" ("+why+")")}
			if err := s.recordResultTx(tx, o); err != nil {
				return err
			}
		}
		// What it added to its history since its last write (a result
		// stored with its call's effect) would go with its next write,
		// and an ended session makes none.
		return s.flushTx(tx)
	})
	if err != nil {
		s.r.e.log.Error("could not close the calls of an ended session", "session", s.id, "err", err)
	}
}

func (s *Session) allPure(calls []llm.ToolCall) bool {
	for _, c := range calls {
		if t, ok := s.r.e.tools.Get(c.Name); !ok || !t.Pure {
			return false
		}
	}
	return true
}

type toolOutcome struct {
	call    llm.ToolCall
	content string
	isErr   bool
	took    time.Duration
}

// runPure runs read-only calls concurrently and stores them with their
// results at once.
func (s *Session) runPure(calls []llm.ToolCall) {
	out := make([]toolOutcome, len(calls))
	done := make(chan struct{}, len(calls))
	for i, c := range calls {
		go func() {
			defer func() { done <- struct{}{} }()
			started := time.Now()
			content, isErr, panicked := s.execTool(c)
			if panicked != nil {
				s.fail(panicked.msg)
				return
			}
			out[i] = toolOutcome{call: c, content: s.clipOutput(content), isErr: isErr, took: time.Since(started)}
		}()
	}
	s.waitTools(done, len(calls))
	if s.ctx.Err() != nil {
		return
	}
	err := s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		for _, o := range out {
			if err := s.recordResultTx(tx, o); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.fail("could not store tool results: " + err.Error())
	}
}

// clipOutput bounds a tool result to max_tool_output characters, keeping
// it JSON (every tool answers JSON, and half an object is unreadable): the
// longest strings are shortened first, then the longest lists lose their
// last items (with a count of what was left out), and only if that is not
// enough does the result become a note with its beginning as text.
func (s *Session) clipOutput(content string) string {
	lim := s.r.e.Config().Limits.MaxToolOutput
	if lim <= 0 || len(content) <= lim {
		return content
	}
	total := utf8.RuneCountInString(content)
	if total <= lim {
		return content
	}
	if out, ok := clipJSON(content, lim); ok {
		return out
	}
	shown := lim - 160
	for range 8 {
		if shown < 0 {
			shown = 0
		}
		b, _ := json.Marshal(struct {
			Truncated bool   `json:"truncated"`
			Note      string `json:"note"`
			Beginning string `json:"beginning"`
		}{true, fmt.Sprintf("%d characters, over max_tool_output (%d): ask for less", total, lim), firstRunes(content, shown)})
		if utf8.RuneCount(b) <= lim || shown == 0 {
			return string(b)
		}
		shown -= utf8.RuneCount(b) - lim
	}
	return `{"truncated":true}`
}

// clipJSON shortens a JSON object to at most lim characters, written as
// plainJSON writes it (the way the model reads every tool result). Every
// string longer than some length is cut to that length, the longest that
// fits but never under keepRunes; if that is not enough, the lists and maps
// with the most items lose their last ones, each with a count of what was
// left out beside it, so that the short fields (a status, an id) survive.
func clipJSON(content string, lim int) (string, bool) {
	dec := json.NewDecoder(strings.NewReader(content))
	dec.UseNumber()
	var root map[string]any
	if dec.Decode(&root) != nil {
		return "", false
	}
	root["truncated"] = true
	size := func(v any) int {
		b, err := plainJSON(v)
		if err != nil {
			return -1
		}
		return utf8.RuneCount(b)
	}
	if n := size(root); n < 0 {
		return "", false
	} else if n > lim {
		if longest := min(longestRunes(root), lim); longest > keepRunes {
			// The longest cut that fits, found by bisection: each probe
			// writes the object, so quotes and escapes count as written.
			lo, hi := keepRunes, longest
			if size(capStrings(root, lo)) > lim {
				hi = lo
			}
			for lo < hi {
				mid := (lo + hi + 1) / 2
				if size(capStrings(root, mid)) <= lim {
					lo = mid
				} else {
					hi = mid - 1
				}
			}
			root = capStrings(root, lo).(map[string]any)
		}
	}
	for range 100 {
		b, err := plainJSON(root)
		if err != nil {
			return "", false
		}
		over := utf8.RuneCount(b) - lim
		if over <= 0 {
			return string(b), true
		}
		if !dropItems(root, over) {
			break
		}
	}
	return "", false
}

// keepRunes is how long a string clipJSON leaves whole: ids, names and
// statuses stay as they are however many there are, and a longer text
// keeps enough to tell what it was (the whole of it is a tool call away:
// task_output, read_file's pages).
const keepRunes = 60

// cutMark ends a string clipJSON has shortened.
const cutMark = "…[cut]"

// longestRunes is the length of the longest string in v, in runes.
func longestRunes(v any) int {
	n := 0
	switch x := v.(type) {
	case string:
		n = utf8.RuneCountInString(x)
	case map[string]any:
		for _, val := range x {
			n = max(n, longestRunes(val))
		}
	case []any:
		for _, val := range x {
			n = max(n, longestRunes(val))
		}
	}
	return n
}

// capStrings is a copy of v in which every string longer than n runes is
// cut to n and marked so.
func capStrings(v any, n int) any {
	switch x := v.(type) {
	case string:
		if utf8.RuneCountInString(x) > n {
			return firstRunes(x, n) + cutMark
		}
		return x
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, val := range x {
			m[k] = capStrings(val, n)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, val := range x {
			a[i] = capStrings(val, n)
		}
		return a
	}
	return v
}

// dropItems takes about over characters out of the list or map with the
// most items (of two alike, the longer written), wherever it is below the
// object's own keys, but for the objects in a list, which are kept whole or
// left out whole: its last items (a map's in the order JSON writes them,
// by key) go, enough of them to make up over as far as that one holds, and
// the object key nearest above it records how many as key_omitted (for a
// list inside a list, the key that holds the outer one). It reports false
// when there is nothing left to drop.
func dropItems(root map[string]any, over int) bool {
	type place struct {
		obj map[string]any // the object whose key holds the container,
		key string         // directly or through lists
	}
	var (
		best      any
		bestAt    place
		setBest   func(any)
		most      = 0
		bestWrite = -1 // encodedRunes(best), worked out for a tie only
	)
	consider := func(v any, n int, at place, set func(any)) {
		switch {
		case n < most:
			return
		case n == most:
			if bestWrite < 0 {
				bestWrite = encodedRunes(best)
			}
			w := encodedRunes(v)
			if w <= bestWrite {
				return
			}
			bestWrite = w
		default:
			bestWrite = -1
		}
		best, bestAt, setBest, most = v, at, set, n
	}
	var walk func(v any, at place, set func(any), inList bool)
	walk = func(v any, at place, set func(any), inList bool) {
		n := items(v)
		if n == 0 {
			return
		}
		_, record := v.(map[string]any)
		if !record || !inList {
			// An object in a list is one item of it, a record (a match,
			// a task): one of its keys gone would read as an item gone.
			consider(v, n, at, set)
		}
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				walk(val, place{x, k}, func(nv any) { x[k] = nv }, false)
			}
		case []any:
			for i, val := range x {
				walk(val, at, func(nv any) { x[i] = nv }, true)
			}
		}
	}
	for k, val := range root {
		walk(val, place{root, k}, func(nv any) { root[k] = nv }, false)
	}
	if best == nil {
		return false
	}
	// The count written beside the list takes room too.
	want := over + utf8.RuneCountInString(bestAt.key) + len(`,"_omitted":`) + 8
	cut, freed := 0, 0
	switch x := best.(type) {
	case []any:
		for cut < len(x) && freed < want {
			cut++
			freed += encodedRunes(x[len(x)-cut]) + 1
		}
		setBest(x[:len(x)-cut])
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		for cut < len(keys) && freed < want {
			cut++
			k := keys[len(keys)-cut]
			freed += encodedRunes(k) + encodedRunes(x[k]) + 2
			delete(x, k)
		}
	}
	name := bestAt.key + "_omitted"
	bestAt.obj[name] = omittedBefore(bestAt.obj[name]) + cut
	return true
}

// items is how many items v holds if it is a list or a map.
func items(v any) int {
	switch x := v.(type) {
	case []any:
		return len(x)
	case map[string]any:
		return len(x)
	}
	return 0
}

// omittedBefore reads a count of items already left out, which the tool
// itself may have written (and the decoder kept as a json.Number).
func omittedBefore(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case json.Number:
		if n, err := x.Int64(); err == nil && n >= 0 && n < math.MaxInt32 {
			return int(n)
		}
	}
	return 0
}

// encodedRunes is how many characters plainJSON writes for v.
func encodedRunes(v any) int {
	b, _ := plainJSON(v)
	return utf8.RuneCount(b)
}

// firstRunes is the first n characters of s.
func firstRunes(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// recordResultTx stores one tool result and emits tool.finished.
func (s *Session) recordResultTx(tx *store.Tx, o toolOutcome) error {
	s.mu.Lock()
	if s.answeredLocked(o.call.ID) {
		// A tool that came back after its session ended and had its call
		// answered for it: one result per call.
		s.mu.Unlock()
		return nil
	}
	err := s.appendMessageTx(tx, &store.Message{Role: llm.RoleTool, Content: o.content, ToolCallID: o.call.ID, Source: "system"})
	if err == nil && o.call.ID == s.lastCall {
		s.rec.LastToolFailed = o.isErr
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	_, err = tx.Emit(event.Event{Type: event.ToolFinished, RunID: s.r.id, SessionID: s.id, Tool: &event.ToolInfo{
		CallID: o.call.ID, Name: o.call.Name, Result: o.content, IsError: o.isErr, DurationMS: o.took.Milliseconds()}})
	return err
}

type toolPanic struct{ msg string }

// runTool executes one call and stores its result.
func (s *Session) runTool(c llm.ToolCall) {
	started := time.Now()
	content, isErr, panicked := s.execTool(c)
	if panicked != nil {
		s.fail(panicked.msg)
		return
	}
	if s.ctx.Err() != nil && (s.r.stopping.Load() || !terminal(s.status())) {
		// Stopped with the run, the call is run again on resume; a session
		// that ends otherwise records what the call came to (see also
		// closeUnansweredCalls).
		return
	}
	s.mu.Lock()
	done := s.answered[c.ID]
	delete(s.answered, c.ID)
	s.mu.Unlock()
	if done {
		return // stored with the call's effect
	}
	o := toolOutcome{call: c, content: s.clipOutput(content), isErr: isErr, took: time.Since(started)}
	if err := s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error { return s.recordResultTx(tx, o) }); err != nil {
		s.fail("could not store a tool result: " + err.Error())
	}
}

// execTool runs a call, turning every failure into a result the model can
// read, and a panic into the session's failure.
func (s *Session) execTool(c llm.ToolCall) (content string, isErr bool, panicked *toolPanic) {
	defer func() {
		if p := recover(); p != nil {
			s.r.e.log.Error("tool panicked", "tool", c.Name, "session", s.id, "panic", p, "stack", string(debug.Stack()))
			panicked = &toolPanic{fmt.Sprintf("tool %s crashed (a bug in swarmdeck): %v", c.Name, p)}
		}
	}()
	offered := s.offeredNow()
	tool := findTool(offered, c.Name)
	if tool == nil {
		t := findTool(s.tools(), c.Name)
		if t == nil {
			return toolErrorJSON(c.Name, agents.UnknownTool(c.Name, offered).Error()), true, nil
		}
		if why, refused := s.notOffered(t); refused {
			return toolErrorJSON(c.Name, "not available to you: "+why), true, nil
		}
		tool = t
	}
	res, err := tool.Run(s.ctx, &agents.Call{ID: c.ID, Name: c.Name, Host: (*host)(s), MaxOutput: s.r.e.Config().Limits.MaxToolOutput}, c.Arguments)
	if err != nil {
		if !agents.IsToolError(err) && s.ctx.Err() == nil {
			s.r.e.log.Warn("tool failed", "tool", c.Name, "session", s.id, "err", err)
		}
		msg := err.Error()
		var ae *agents.ArgError
		if s.cutOff && errors.As(err, &ae) {
			// The arguments are most likely incomplete because the answer was.
			msg += " (your answer was cut off at the model's output limit, so this call's arguments may be incomplete: send less in one call, or split the work over several)"
		}
		return toolErrorJSON(c.Name, msg), true, nil
	}
	b, err := plainJSON(res)
	if err != nil {
		return toolErrorJSON(c.Name, "could not encode the result: "+err.Error()), true, nil
	}
	return string(b), false, nil
}

// findTool is the tool of ts named name, or nil.
func findTool(ts []*agents.Tool, name string) *agents.Tool {
	for _, t := range ts {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// toolErrorJSON is the result of a failed call of tool name:
// {"error":"name: msg"}. The model gets the results of several calls at
// once, and not every server or chat template keeps the tool_call_id that
// ties a result to its call: the name says which call failed. A message
// that already begins with the name keeps it once; a call without a name
// has none to give.
func toolErrorJSON(name, msg string) string {
	if name != "" && !strings.HasPrefix(msg, name+": ") {
		msg = name + ": " + msg
	}
	return errorJSON(msg)
}

func errorJSON(msg string) string {
	b, _ := plainJSON(map[string]string{"error": msg})
	return string(b)
}

// retryWait shows the wait before a retry to a tenth of a second, or to
// the millisecond under one (a server's retry-after-ms of 10 is not "0s").
func retryWait(d time.Duration) string {
	if d < 100*time.Millisecond {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}

// plainJSON is json.Marshal without its HTML escaping: tool results are
// read by models and people, for whom "a -> b" is clearer (and shorter)
// than "a -\u003e b", and JSON needs no such escape.
func plainJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// What a final answer leads to.
type turnOutcome int

const (
	turnWait  turnOutcome = iota // children are active: wait to be woken
	turnAgain                    // something woke the session during the turn
	turnDone                     // completed and reported
)

// endTurn handles a final answer: the session waits while children or
// delegations are active, else completes and reports to its parent.
func (s *Session) endTurn(content string) (outcome turnOutcome, err error) {
	err = s.r.e.store.Apply(context.Background(), func(tx *store.Tx) error {
		if st := s.status(); st == StatusCancelled || st == StatusFailed {
			// Ended by someone else (task_cancel, a failing parent) after
			// the answer arrived: that ending stands.
			outcome = turnDone
			return nil
		}
		outcome = turnWait
		if err := s.flushTx(tx); err != nil {
			return err
		}
		s.mu.Lock()
		waking := false
		for _, it := range s.inbox {
			if it.Waking {
				waking = true
			}
		}
		s.mu.Unlock()
		if waking {
			outcome = turnAgain
			return nil
		}
		if n := s.activeChildren(); n > 0 {
			s.mu.Lock()
			s.inTurn = false
			s.rec.Result = content
			s.mu.Unlock()
			return s.setStatusTx(tx, StatusWaiting, fmt.Sprintf("waiting for %d active child session(s)", n))
		}
		s.mu.Lock()
		s.inTurn = false
		s.rec.Result = content
		s.rec.Error = ""
		s.rec.Completions++
		s.mu.Unlock()
		if err := s.setStatusTx(tx, StatusCompleted, ""); err != nil {
			return err
		}
		outcome = turnDone
		return s.reportTx(tx)
	})
	return outcome, err
}

// reportTx delivers the session's outcome to its parent as a waking
// <task_result>. The key makes the delivery happen once per completion.
func (s *Session) reportTx(tx *store.Tx) error {
	if s.parent == nil {
		return nil
	}
	s.mu.Lock()
	status, result, errText, n := s.rec.Status, s.rec.Result, s.rec.Error, s.rec.Completions
	consumed := s.resultConsumed
	s.resultConsumed = false
	s.mu.Unlock()
	if consumed {
		return nil
	}
	body := result
	if status != StatusCompleted {
		body = errText
	}
	body = clipReport(body, s.r.e.Config().Limits.MaxToolOutput)
	item := &store.InboxItem{Key: reportKey(s.id, n, status), Kind: "task_result", Waking: true,
		Content: coordination.FormatTaskResult(s.id, s.agent, status, body), Source: "system", FromSession: s.id}
	_, err := s.parent.deliverTx(tx, item)
	return err
}

// clipReport bounds a child's result, as its parent's history gets it, to
// lim characters (max_tool_output), as a tool result is bounded: a parent
// of a hundred children would otherwise fill its context with their long
// answers. The child's own record keeps the whole of it (the export and
// the dashboard show it).
func clipReport(body string, lim int) string {
	if lim <= 0 || len(body) <= lim {
		return body
	}
	n := utf8.RuneCountInString(body)
	if n <= lim {
		return body
	}
	kept := textcut.Prefix(body, lim)
	return kept + fmt.Sprintf("\n…[cut: %d more characters, over max_tool_output (%d)]", n-utf8.RuneCountInString(kept), lim)
}

// reportKey is the inbox key of a session's report of how it ended, the
// n-th time (see store.Session.Completions).
func reportKey(sessionID string, n int, status string) string {
	return fmt.Sprintf("result/%s/%d/%s", sessionID, n, status)
}

// fail ends the session with a reason, reports to the parent and cancels
// whatever it left running.
func (s *Session) fail(reason string) {
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		if err := s.flushTx(tx); err != nil {
			return err
		}
		if terminal(s.status()) {
			return nil
		}
		s.mu.Lock()
		s.rec.Error = reason
		s.inTurn = false
		s.mu.Unlock()
		if err := s.setStatusTx(tx, StatusFailed, reason); err != nil {
			return err
		}
		if err := s.reportTx(tx); err != nil {
			return err
		}
		return s.r.cancelChildrenTx(tx, s, reasonParentFailed(s.id))
	})
	if err != nil {
		s.r.e.log.Error("could not record a session failure", "session", s.id, "reason", reason, "err", err)
	}
	s.cancel(errors.New(reason))
}
