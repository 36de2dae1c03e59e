package runtime

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Session statuses (DESIGN.md section 2).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusWaiting   = "waiting"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

func terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusCancelled
}

// Session is one agent conversation of a run.
type Session struct {
	r      *Run
	role   *agents.Role
	parent *Session

	// Fixed at creation.
	id, agent, label, title, task, kind string
	depth                               int
	spawnCall                           string
	delegationID                        string

	mu           sync.Mutex
	rec          store.Session
	sharedCtx    coordination.Context
	refs         []coordination.Reference // $ references resolved when it starts
	waitOn       []string                 // predecessors (session ids)
	history      []llm.Message            // what the model sees
	nextIndex    int                      // index of the next stored message
	passiveTail  bool                     // the messages after the last assistant turn are all passive
	inbox        []*store.InboxItem       // waiting for the next turn boundary
	started      bool                     // system prompt stored
	inTurn       bool                     // between the start and the end of a turn
	running      bool                     // the goroutine is alive
	rerun        bool                     // woken as its goroutine unwinds: run it again
	wake         chan struct{}
	ctx          context.Context
	cancel       context.CancelCauseFunc
	children     []*Session
	childCh      chan struct{} // closed and replaced when a child changes status
	plan         *coordination.Plan
	planMu       sync.Mutex
	effectN      map[string]int
	broadcasts   int
	questions    int
	waitingHuman int
	retrying     string // why the model call in progress is being tried again; "" when it is not
	blocking     int    // tool calls in flight that wait (slot released)
	slotHeld     bool   // holds a max_concurrent_sessions slot
	lastReminder string
	startedAt    time.Time
	timeoutWhy   string // what a timeout armed by armTimeout says, with its duration
	// resultConsumed skips the next <task_result> to the parent: the parent
	// learned the outcome from its own tool call (task_cancel).
	resultConsumed bool
	// Writes not stored yet: messages added to the history during a turn
	// (the session's start, inbox items drained at a turn boundary, the
	// model's answer) and the inbox items they came from. The session's
	// next store operation writes them first (flushLocked), so a turn
	// usually costs one commit. They exist only while the session is in a
	// turn: deliveries then go to the inbox, so no other session's
	// operation ever writes them. A crash loses only what a resume redoes
	// (the model call, the draining of still-undelivered inbox items).
	answered     map[string]bool // calls answered with their effect's commit
	pendingMsgs  []*store.Message
	pendingCalls []llm.ToolCall
	// lastCall is the id of the last call of the latest answer that made
	// any: its outcome is the record's LastToolFailed.
	lastCall string

	// cutOff: the answer whose calls are running stopped at the model's
	// output limit. Set by the session's goroutine around runTools, read by
	// the calls it runs.
	cutOff bool

	// heldTokens: the run's token budget held for the model call whose
	// answer is being recorded (see Run.reserveTokens). Session goroutine
	// only.
	heldTokens int
}

// Session kinds.
const (
	kindRoot       = "root"
	kindTask       = "task"
	kindDelegation = "delegation"
)

func (s *Session) ID() string { return s.id }

// status reads the current status.
func (s *Session) status() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.Status
}

// display names a session in messages: "researcher (research-1)".
func (s *Session) display() string {
	if s.label != "" {
		return s.agent + " (" + s.label + ")"
	}
	return s.agent + " (" + s.id + ")"
}

// name is how results address a session: its label, else its id.
func (s *Session) name() string {
	if s.label != "" {
		return s.label
	}
	return s.id
}

// infoLocked builds the event view of the session; s.mu must be held.
func (s *Session) infoLocked() *event.SessionInfo {
	return s.infoLockedCtx(false)
}

// infoLockedCtx is infoLocked with the shared context included: only
// session.created carries it (it never changes after the session starts
// but for resolved $ references, and status events are frequent).
func (s *Session) infoLockedCtx(withContext bool) *event.SessionInfo {
	var sc json.RawMessage
	if withContext && s.sharedCtx.Len() > 0 {
		sc, _ = json.Marshal(s.sharedCtx)
	}
	rec := &s.rec
	return &event.SessionInfo{ID: s.id, ParentID: rec.ParentID, Agent: s.agent, Label: s.label, Title: s.title,
		Status: rec.Status, Depth: s.depth, Kind: s.kind, SharedContext: sc, Reason: rec.Reason, Result: rec.Result,
		Error: rec.Error, Usage: event.Usage(rec.Usage), Turns: rec.Turns, WaitingHuman: s.waitingHuman > 0, Retrying: s.retrying,
		LastTool: rec.LastTool, LastToolFailed: rec.LastToolFailed, CreatedAt: rec.CreatedAt, EndedAt: rec.EndedAt}
}

func (s *Session) info() *event.SessionInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.infoLockedCtx(true)
}

// notifyChildChange wakes whoever waits on this session's children.
func (s *Session) notifyChildChange() {
	s.mu.Lock()
	close(s.childCh)
	s.childCh = make(chan struct{})
	s.mu.Unlock()
}

// childChanged returns a channel closed at the next change of a child.
func (s *Session) childChanged() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.childCh
}

// signal wakes the session's loop if it is idle.
func (s *Session) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// activeChildren counts children that are not finished.
func (s *Session) activeChildren() int {
	s.r.mu.Lock()
	kids := s.children
	s.r.mu.Unlock()
	n := 0
	for _, c := range kids {
		if !terminal(c.status()) {
			n++
		}
	}
	return n
}

// childList copies the children.
func (s *Session) childList() []*Session {
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	return append([]*Session(nil), s.children...)
}

// siblings lists the other children of the parent.
func (s *Session) siblings() []*Session {
	if s.parent == nil {
		return nil
	}
	s.r.mu.Lock()
	defer s.r.mu.Unlock()
	out := make([]*Session, 0, len(s.parent.children))
	for _, c := range s.parent.children {
		if c != s {
			out = append(out, c)
		}
	}
	return out
}

// appendMessageTx adds a message to the history and stores it (with any
// writes still pending) inside a store operation. s.mu must be held.
func (s *Session) appendMessageTx(tx *store.Tx, m *store.Message) error {
	s.addLocked(m)
	return s.flushLocked(tx)
}

// addLocked adds a message to the in-memory history; it is stored by the
// session's next store operation. s.mu must be held.
func (s *Session) addLocked(m *store.Message) {
	m.RunID, m.SessionID, m.Index = s.r.id, s.id, s.nextIndex
	if m.Source == "" {
		m.Source = "system"
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = s.r.e.now()
	}
	s.nextIndex++
	s.history = append(s.history, sanitizeCalls(toLLM(m)))
	switch {
	case m.Role == llm.RoleAssistant:
		s.passiveTail = true
	case m.Role == llm.RoleUser && !m.NoReply:
		s.passiveTail = false
	case m.Role == llm.RoleTool:
		s.passiveTail = false
	}
	s.pendingMsgs = append(s.pendingMsgs, m)
}

func toLLM(m *store.Message) llm.Message {
	lm := llm.Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		lm.ToolCalls = append(lm.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return lm
}

func messageInfo(m *store.Message) *event.MessageInfo {
	mi := &event.MessageInfo{ID: m.ID, Index: m.Index, Role: m.Role, Content: m.Content, Synthetic: m.Synthetic, CreatedAt: m.CreatedAt,
		NoReply: m.NoReply, Source: m.Source, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		mi.ToolCalls = append(mi.ToolCalls, event.ToolCall(c))
	}
	if m.Role == llm.RoleAssistant && (m.Usage.TotalTokens > 0 || m.Usage.PromptTokens > 0) {
		u := event.Usage(m.Usage)
		mi.Usage = &u
	}
	return mi
}

// setStatusTx changes the status inside a store operation and emits
// session.status. s.mu must NOT be held.
func (s *Session) setStatusTx(tx *store.Tx, status, reason string) error {
	return s.changeStatusTx(tx, status, reason, false)
}

// changeStatusTx is setStatusTx; revive lets a failed or cancelled session
// come back, which only a resume of a failed run does (see revive.go).
func (s *Session) changeStatusTx(tx *store.Tx, status, reason string, revive bool) error {
	s.mu.Lock()
	prev := s.rec.Status
	if (prev == StatusFailed || prev == StatusCancelled) && status != prev && !revive {
		// Failed and cancelled are final (a completed session may still be
		// woken by a message). The callers check before they get here; a
		// goroutine that raced with the end and did not is refused without
		// a write, so no session is ever stored as come back to life.
		s.mu.Unlock()
		s.r.e.log.Warn("refused to change the status of an ended session", "run", s.r.id, "session", s.id, "from", prev, "to", status)
		return nil
	}
	rec := s.rec
	rec.Status, rec.Reason = status, reason
	if terminal(status) && rec.EndedAt.IsZero() {
		rec.EndedAt = s.r.e.now()
	}
	if !terminal(status) {
		rec.EndedAt = time.Time{}
	}
	if err := tx.UpsertSession(&rec); err != nil {
		s.mu.Unlock()
		return err
	}
	s.rec = rec
	if status == StatusCompleted || status == StatusWaiting {
		if err := s.flushInboxLocked(tx); err != nil {
			s.mu.Unlock()
			return err
		}
	}
	info := s.infoLocked()
	s.mu.Unlock()
	if _, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: s.r.id, SessionID: s.id, Session: info}); err != nil {
		return err
	}
	if prev != status {
		return s.r.statusChanged(tx, s, prev, status)
	}
	return nil
}

// flushLocked stores the session's pending writes inside a store
// operation, and emits their events. s.mu must be held.
func (s *Session) flushLocked(tx *store.Tx) error {
	if len(s.pendingMsgs) == 0 {
		return nil
	}
	msgs := s.pendingMsgs
	for _, m := range msgs {
		if m.Role == llm.RoleSystem && m.Shared == nil {
			if err := s.r.prompts.shareTx(tx, m); err != nil {
				return err
			}
		}
		if err := tx.InsertMessage(m); err != nil {
			return err
		}
	}
	calls := s.pendingCalls
	s.pendingMsgs, s.pendingCalls = nil, nil
	answer := -1 // the answer that made the calls: the last one
	for i, m := range msgs {
		if m.Role == llm.RoleAssistant {
			answer = i
		}
	}
	for i, m := range msgs {
		if _, err := tx.Emit(event.Event{Type: event.MessageAppended, RunID: s.r.id, SessionID: s.id, Message: messageInfo(m)}); err != nil {
			return err
		}
		if i != answer {
			continue
		}
		// Turns, tokens and the last tool changed with the answer, and its
		// calls start: before the result of a quick one, which may be
		// among the messages still to come.
		if _, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: s.r.id, SessionID: s.id, Session: s.infoLocked()}); err != nil {
			return err
		}
		if err := s.emitStarted(tx, calls); err != nil {
			return err
		}
		calls = nil
	}
	return s.emitStarted(tx, calls)
}

// emitStarted emits tool.started for each call.
func (s *Session) emitStarted(tx *store.Tx, calls []llm.ToolCall) error {
	for _, c := range calls {
		if _, err := tx.Emit(event.Event{Type: event.ToolStarted, RunID: s.r.id, SessionID: s.id,
			Tool: &event.ToolInfo{CallID: c.ID, Name: c.Name, Arguments: c.Arguments}}); err != nil {
			return err
		}
	}
	return nil
}

// flushTx is flushLocked for callers that do not hold s.mu.
func (s *Session) flushTx(tx *store.Tx) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.flushLocked(tx)
}
