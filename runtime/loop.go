package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/prompts"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

var errSessionTimeout = errors.New("session timeout")

// start launches the session's goroutine unless it is running already.
func (s *Session) start() {
	if s.r.stopping.Load() {
		return
	}
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return
	}
	s.running = true
	s.mu.Unlock()
	s.r.wg.Add(1)
	go s.loop()
}

// loop is the session's goroutine: turns until it completes, fails, is
// cancelled, or the run is interrupted.
func (s *Session) loop() {
	defer s.r.wg.Done()
	defer func() {
		if p := recover(); p != nil {
			s.r.e.log.Error("session panicked", "run", s.r.id, "session", s.id, "panic", p, "stack", string(debug.Stack()))
			s.fail(fmt.Sprintf("internal error in swarmdeck (please report it): %v", p))
		}
		s.releaseSlot()
		s.mu.Lock()
		s.running = false
		s.mu.Unlock()
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
			// Resumed after a crash in the middle of executing tools.
			s.runTools(pending)
			continue
		}
		lim := s.r.e.Config().Limits
		s.mu.Lock()
		turns := s.rec.Turns
		s.mu.Unlock()
		if lim.MaxTurnsPerSession > 0 && turns >= lim.MaxTurnsPerSession {
			s.fail(fmt.Sprintf("reached max_turns_per_session (%d) without a final answer", lim.MaxTurnsPerSession))
			return
		}
		resp, err := s.callModel()
		if err != nil {
			if s.stopped() {
				return
			}
			s.fail(err.Error())
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
			s.runTools(calls)
			continue
		}
		outcome, err := s.endTurn(resp.Content)
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

func (s *Session) timeoutReason() string {
	if s.delegationID != "" {
		return fmt.Sprintf("delegation timed out after %s (delegation_timeout)", s.r.e.Config().Coordination.DelegationTimeout.D())
	}
	return fmt.Sprintf("session timed out after %s (session_timeout)", s.r.e.Config().Limits.SessionTimeout.D())
}

// armTimeout bounds the session's wall-clock time while its goroutine runs;
// the returned function disarms it (a finished session must not time out
// later, when it may be woken again).
func (s *Session) armTimeout() (disarm func()) {
	cfg := s.r.e.Config()
	d := cfg.Limits.SessionTimeout.D()
	if s.delegationID != "" && cfg.Coordination.DelegationTimeout.D() > 0 {
		d = cfg.Coordination.DelegationTimeout.D()
	}
	if d <= 0 {
		return func() {}
	}
	s.mu.Lock()
	started := s.startedAt
	s.mu.Unlock()
	remaining := d - time.Since(started)
	if remaining <= 0 {
		remaining = time.Millisecond
	}
	cancel := s.cancel
	t := time.AfterFunc(remaining, func() { cancel(errSessionTimeout) })
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
		lim := s.r.e.Config().Limits.MaxConcurrentSessions
		s.r.e.store.Do(s.ctx, func(tx *store.Tx) error {
			if terminal(s.status()) {
				return nil
			}
			return s.setStatusTx(tx, StatusPending, fmt.Sprintf("waiting for a free session slot (max_concurrent_sessions is %d)", lim))
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
	source := "agent"
	if s.parent == nil {
		source = "human"
	}
	err = s.r.e.store.Do(s.ctx, func(tx *store.Tx) error {
		s.mu.Lock()
		if s.started {
			s.mu.Unlock()
			return nil
		}
		if err := s.appendMessageTx(tx, &store.Message{Role: llm.RoleSystem, Content: system, Source: "system"}); err != nil {
			s.mu.Unlock()
			return err
		}
		if err := s.appendMessageTx(tx, &store.Message{Role: llm.RoleUser, Content: s.task, Source: source}); err != nil {
			s.mu.Unlock()
			return err
		}
		s.started = true
		s.startedAt = s.r.e.now()
		s.mu.Unlock()
		return s.setStatusTx(tx, StatusRunning, "")
	})
	if err != nil {
		if !errors.Is(err, context.Canceled) {
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
		case agents.GroupQuestions:
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

func (s *Session) tools() []*agents.Tool {
	return s.r.e.tools.ForGroups(s.groups(), s.role.CanWrite)
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
	return s.r.e.prompts.System(prompts.Data{
		Role: s.agent, Template: s.role.Prompt, Description: s.role.Description, SessionID: s.id, Label: s.label,
		Depth: s.depth, Goal: s.r.goal, IsRoot: s.parent == nil, Delegated: s.kind == kindDelegation,
		HasParent: s.parent != nil, CanSpawn: s.role.CanSpawn, CanWrite: s.role.CanWrite, Groups: s.groups(),
		Roster: entries, Workspace: s.r.ws.Dir(), SharedContext: shared,
		MaxSpawnDepth: cfg.Limits.MaxSpawnDepth, MaxDelegationDepth: cfg.Coordination.MaxDelegationDepth,
	})
}

// beginTurn moves the inbox into the history and decides whether the model
// must be called (something non-passive arrived since its last answer).
func (s *Session) beginTurn() (bool, error) {
	need := false
	reminder := s.reminder()
	// The common case needs no write: nothing arrived, the status stays.
	// inTurn is guarded by s.mu, which deliverTx holds too, so an item
	// arriving now goes to the inbox and is drained at the next boundary.
	s.mu.Lock()
	if len(s.inbox) == 0 {
		need = !s.passiveTail || s.pendingCallsLocked()
		if !(need && reminder != "" && reminder != s.lastReminder) && (!need || s.rec.Status == StatusRunning) {
			s.inTurn = need
			s.mu.Unlock()
			return need, nil
		}
	}
	s.mu.Unlock()
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		s.mu.Lock()
		items := s.inbox
		s.inbox = nil
		var ids []int64
		for _, it := range items {
			if err := s.appendMessageTx(tx, inboxMessage(it)); err != nil {
				s.inbox = items
				s.mu.Unlock()
				return err
			}
			ids = append(ids, it.ID)
		}
		need = !s.passiveTail || s.pendingCallsLocked()
		if need && reminder != "" && reminder != s.lastReminder {
			if err := s.appendMessageTx(tx, &store.Message{Role: llm.RoleUser, Content: reminder, Synthetic: true, NoReply: true}); err != nil {
				s.mu.Unlock()
				return err
			}
			s.lastReminder = reminder
		}
		s.inTurn = need
		status := s.rec.Status
		s.mu.Unlock()
		if err := tx.MarkDelivered(s.r.id, ids, ""); err != nil {
			return err
		}
		if need && status != StatusRunning && !terminal(status) {
			return s.setStatusTx(tx, StatusRunning, "")
		}
		return nil
	})
	return need, err
}

// inboxMessage turns an inbox item into a history message.
func inboxMessage(it *store.InboxItem) *store.Message {
	return &store.Message{Role: llm.RoleUser, Content: it.Content, Synthetic: true, NoReply: !it.Waking, Source: it.Source}
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
		d.Blocked = append(d.Blocked, fmt.Sprintf("%s (waiting on %s)", b.ID, strings.Join(b.WaitingOn, ", ")))
	}
	for _, t := range p.Ready() {
		d.Ready = append(d.Ready, t.ID+": "+t.Description)
	}
	d.Groups = s.groups()
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
	msgs := make([]llm.Message, 0, len(hist))
	for _, m := range hist {
		// Servers with strict chat templates reject consecutive user
		// messages: injected items are merged into one.
		if n := len(msgs); n > 0 && m.Role == llm.RoleUser && msgs[n-1].Role == llm.RoleUser && len(msgs[n-1].ToolCalls) == 0 {
			msgs[n-1].Content += "\n\n" + m.Content
			continue
		}
		// Malformed arguments stay in the store as the model sent them, but
		// some servers (Ollama) refuse a history that holds them.
		for i, c := range m.ToolCalls {
			if !json.Valid([]byte(c.Arguments)) {
				calls := append([]llm.ToolCall(nil), m.ToolCalls...)
				calls[i].Arguments = "{}"
				m.ToolCalls = calls
			}
		}
		msgs = append(msgs, m)
	}
	tools := s.tools()
	specs := make([]llm.Tool, 0, len(tools))
	for _, t := range tools {
		specs = append(specs, t.Spec())
	}
	model := s.r.e.Model()
	if s.role.Model != "" {
		model = s.role.Model
	}
	return llm.Request{Model: model, Messages: msgs, Tools: specs}
}

// callModel makes one streaming call, under the run's LLM concurrency limit.
func (s *Session) callModel() (*llm.Response, error) {
	req := s.request()
	select {
	case s.r.llmSem <- struct{}{}:
	case <-s.ctx.Done():
		return nil, context.Cause(s.ctx)
	}
	defer func() { <-s.r.llmSem }()
	bus := s.r.e.bus
	onDelta := func(d llm.Delta) {
		bus.PublishLossy(event.Event{Type: event.MessageDelta, Time: time.Now(), RunID: s.r.id, SessionID: s.id,
			Delta: &event.DeltaInfo{Content: d.Content, ToolName: d.ToolName, Reset: d.Reset}})
	}
	return s.r.e.llm.Stream(s.ctx, req, onDelta)
}

// recordAssistant stores the model's answer and returns the tool calls to
// run, with ids made unique within the session.
func (s *Session) recordAssistant(resp *llm.Response) ([]llm.ToolCall, error) {
	calls := s.uniqueCallIDs(resp.ToolCalls)
	u := store.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, TotalTokens: resp.Usage.TotalTokens}
	if u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	msg := &store.Message{Role: llm.RoleAssistant, Content: resp.Content, Source: "agent", Usage: u}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, store.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		s.mu.Lock()
		if err := s.appendMessageTx(tx, msg); err != nil {
			s.mu.Unlock()
			return err
		}
		s.rec.Turns++
		s.rec.Usage.PromptTokens += u.PromptTokens
		s.rec.Usage.CompletionTokens += u.CompletionTokens
		s.rec.Usage.TotalTokens += u.TotalTokens
		if len(calls) > 0 {
			s.rec.LastTool = calls[len(calls)-1].Name
		}
		rec := s.rec
		info := s.infoLocked()
		s.mu.Unlock()
		if err := tx.UpsertSession(&rec); err != nil {
			return err
		}
		if _, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: s.r.id, SessionID: s.id, Session: info}); err != nil {
			return err
		}
		s.r.mu.Lock()
		s.r.addUsageLocked(u)
		run := s.r.rec
		s.r.mu.Unlock()
		if err := tx.UpdateRun(&run); err != nil {
			return err
		}
		for _, c := range calls {
			if _, err := tx.Emit(event.Event{Type: event.ToolStarted, RunID: s.r.id, SessionID: s.id,
				Tool: &event.ToolInfo{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}}); err != nil {
				return err
			}
		}
		return nil
	})
	return calls, err
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

// runTools executes the calls of one answer and stores each result as it
// comes. Calls that change the session's family, plan or delegations run in
// order on one lane (a spawn may refer to the label of one just before it);
// the others run concurrently.
func (s *Session) runTools(calls []llm.ToolCall) {
	var wg sync.WaitGroup
	var lane []llm.ToolCall
	for _, c := range calls {
		if t, ok := s.r.e.tools.Get(c.Name); ok && (t.Group == agents.GroupSpawn || t.Group == agents.GroupPlanning || t.Group == agents.GroupDelegation) {
			lane = append(lane, c)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.runTool(c)
		}()
	}
	if len(lane) > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range lane {
				s.runTool(c)
			}
		}()
	}
	wg.Wait()
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
	if s.ctx.Err() != nil {
		return
	}
	lim := s.r.e.Config().Limits.MaxToolOutput
	if lim > 0 && len(content) > lim {
		content = content[:lim] + fmt.Sprintf("\n[output truncated: %d more characters]", len(content)-lim)
	}
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		s.mu.Lock()
		err := s.appendMessageTx(tx, &store.Message{Role: llm.RoleTool, Content: content, ToolCallID: c.ID, Source: "system"})
		s.mu.Unlock()
		if err != nil {
			return err
		}
		_, err = tx.Emit(event.Event{Type: event.ToolFinished, RunID: s.r.id, SessionID: s.id, Tool: &event.ToolInfo{
			CallID: c.ID, Name: c.Name, Result: content, IsError: isErr, DurationMS: time.Since(started).Milliseconds()}})
		return err
	})
	if err != nil {
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
	available := s.tools()
	var tool *agents.Tool
	for _, t := range available {
		if t.Name == c.Name {
			tool = t
			break
		}
	}
	if tool == nil {
		return errorJSON(agents.UnknownTool(c.Name, available).Error()), true, nil
	}
	res, err := tool.Run(s.ctx, &agents.Call{ID: c.ID, Name: c.Name, Host: (*host)(s)}, c.Arguments)
	if err != nil {
		if !agents.IsToolError(err) && s.ctx.Err() == nil {
			s.r.e.log.Warn("tool failed", "tool", c.Name, "session", s.id, "err", err)
		}
		return errorJSON(err.Error()), true, nil
	}
	b, err := json.Marshal(res)
	if err != nil {
		return errorJSON("could not encode the result: " + err.Error()), true, nil
	}
	return string(b), false, nil
}

func errorJSON(msg string) string {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return string(b)
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
	err = s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		outcome = turnWait
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
		s.running = false
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
	item := &store.InboxItem{Key: fmt.Sprintf("result/%s/%d/%s", s.id, n, status), Kind: "task_result", Waking: true,
		Content: coordination.FormatTaskResult(s.id, s.agent, status, body), Source: "system", FromSession: s.id}
	_, err := s.parent.deliverTx(tx, item)
	return err
}

// fail ends the session with a reason, reports to the parent and cancels
// whatever it left running.
func (s *Session) fail(reason string) {
	err := s.r.e.store.Do(context.Background(), func(tx *store.Tx) error {
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
		return s.r.cancelChildrenTx(tx, s, "parent "+s.id+" failed")
	})
	if err != nil {
		s.r.e.log.Error("could not record a session failure", "session", s.id, "reason", reason, "err", err)
	}
	s.cancel(errors.New(reason))
}
