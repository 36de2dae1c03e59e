// Package event defines the runtime's events and the broker that carries them
// to the store's event log, to `--json` output and to the dashboard.
//
// Every state change is written to the store first and published second, in
// the order of its sequence number. Token deltas are the one exception: they
// are never stored, carry sequence 0, and are dropped for a subscriber that
// cannot keep up.
package event

import (
	"encoding/json"
	"time"
)

// Type names an event; the strings are part of the public `--json` interface.
type Type string

const (
	RunStarted        Type = "run.started"
	RunFinished       Type = "run.finished"
	SessionCreated    Type = "session.created"
	SessionStatus     Type = "session.status"
	MessageAppended   Type = "message.appended"
	MessageDelta      Type = "message.delta"
	ToolStarted       Type = "tool.started"
	ToolFinished      Type = "tool.finished"
	BroadcastSent     Type = "broadcast.sent"
	PlanUpdated       Type = "plan.updated"
	DelegationUpdated Type = "delegation.updated"
	QuestionOpened    Type = "question.opened"
	QuestionAnswered  Type = "question.answered"
	QuestionClosed    Type = "question.closed"
	Error             Type = "error"
)

// Event is one thing that happened in a run. Exactly one of the pointer
// fields is set, matching Type (Error events set Error instead).
//
// SessionID is the session the event concerns. It is written even when
// empty, as `--json` promises the key on every line. The run's own events
// (run.started, run.finished) and errors about the whole run name the root
// session, the orchestrator; broadcast.sent names the sender, "" for the
// human.
type Event struct {
	Seq       int64     `json:"seq"`
	Time      time.Time `json:"time"`
	Type      Type      `json:"type"`
	RunID     string    `json:"run_id"`
	SessionID string    `json:"session_id"`

	Run        *RunInfo        `json:"run,omitempty"`
	Session    *SessionInfo    `json:"session,omitempty"`
	Message    *MessageInfo    `json:"message,omitempty"`
	Delta      *DeltaInfo      `json:"delta,omitempty"`
	Tool       *ToolInfo       `json:"tool,omitempty"`
	Broadcast  *BroadcastInfo  `json:"broadcast,omitempty"`
	Plan       *PlanInfo       `json:"plan,omitempty"`
	Delegation *DelegationInfo `json:"delegation,omitempty"`
	Question   *QuestionInfo   `json:"question,omitempty"`
	Error      string          `json:"error,omitempty"`
}

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// RunInfo rides on run.started and run.finished.
type RunInfo struct {
	ID        string    `json:"id"`
	Goal      string    `json:"goal"`
	Status    string    `json:"status"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Scripted  bool      `json:"scripted,omitempty"`
	Resumed   bool      `json:"resumed,omitempty"`
	Workspace string    `json:"workspace,omitempty"`
	Result    string    `json:"result,omitempty"`
	Error     string    `json:"error,omitempty"`
	Usage     Usage     `json:"usage"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at,omitzero"` // once it has ended (completed, failed, cancelled, interrupted)
	// Pauses are the stretches the run stood stopped before it was
	// resumed: they are not part of its elapsed time, nor of its sessions'.
	Pauses []Pause `json:"pauses,omitempty"`
	// NotResumed says why resume would refuse the run whatever its status
	// (a bench run), for the hints that would otherwise offer it.
	NotResumed string `json:"-"`
}

// StoredForResume ends the error of a run stopped because its model
// server failed. Where the way back is shown already (the dashboard's
// status line says the resume command first), it can go.
const StoredForResume = "The run is stored as it was: resume it once the server answers"

// MinPause is the shortest stop of a running process (ctrl+z, SIGSTOP) that
// becomes one of its run's pauses: a second or two is nothing on a clock
// that shows seconds, and a busy machine can hold the process up that long.
const MinPause = 3 * time.Second

// Pause is a stretch of time a run stood stopped, from when it stopped to
// when it was resumed.
type Pause struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Paused is how much of the time from start to end the run stood stopped.
func (r *RunInfo) Paused(start, end time.Time) time.Duration {
	var d time.Duration
	for _, p := range r.Pauses {
		from, to := p.From, p.To
		if from.Before(start) {
			from = start
		}
		if to.After(end) {
			to = end
		}
		if to.After(from) {
			d += to.Sub(from)
		}
	}
	return d
}

// SessionInfo rides on session.created and session.status.
type SessionInfo struct {
	ID            string          `json:"id"`
	ParentID      string          `json:"parent_id,omitempty"`
	Agent         string          `json:"agent"`
	Label         string          `json:"label,omitempty"`
	Title         string          `json:"title,omitempty"`
	Status        string          `json:"status"`
	Depth         int             `json:"depth"`
	Kind          string          `json:"kind,omitempty"` // "task" or "delegation"
	SharedContext json.RawMessage `json:"shared_context,omitempty"`
	Reason        string          `json:"reason,omitempty"` // why the status changed (pending on, failed because)
	Result        string          `json:"result,omitempty"`
	Error         string          `json:"error,omitempty"`
	Usage         Usage           `json:"usage"`
	Turns         int             `json:"turns"`
	WaitingHuman  bool            `json:"waiting_human,omitempty"`
	Retrying      string          `json:"retrying,omitempty"` // a model call failed and is tried again: what failed and when
	LastTool      string          `json:"last_tool,omitempty"`
	// LastToolFailed: the last call of LastTool's answer failed.
	LastToolFailed bool      `json:"last_tool_failed,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	EndedAt        time.Time `json:"ended_at,omitzero"`
}

// ToolCall is a tool call as stored and exported.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// MessageInfo rides on message.appended.
type MessageInfo struct {
	ID         int64      `json:"id"`    // store row id
	Index      int        `json:"index"` // position in the session's history, 0 = system prompt
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Synthetic  bool       `json:"synthetic"`
	NoReply    bool       `json:"no_reply"`
	Source     string     `json:"source"` // agent, human, system
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Usage      *Usage     `json:"usage,omitempty"`     // on assistant messages: the call's tokens
	CreatedAt  time.Time  `json:"created_at,omitzero"` // when the message was made, which its event may follow
}

// DeltaInfo rides on message.delta (streamed tokens, lossy, never stored).
type DeltaInfo struct {
	Content  string `json:"content,omitempty"`
	ToolName string `json:"tool_name,omitempty"`
	Reset    bool   `json:"reset,omitempty"`
}

// ToolInfo rides on tool.started and tool.finished.
type ToolInfo struct {
	CallID     string `json:"call_id"`
	Name       string `json:"name"`
	Arguments  string `json:"arguments,omitempty"`
	Result     string `json:"result,omitempty"`
	IsError    bool   `json:"is_error,omitempty"`
	DurationMS int64  `json:"duration_ms,omitempty"`
}

// Broadcast kinds shown in the dashboard's feed.
const (
	KindBroadcast = "broadcast" // task_broadcast
	KindAnnounce  = "announce"  // announce / broadcast_message without response
	KindMessage   = "message"   // task_send_message
	KindHuman     = "human"     // typed by the person at the dashboard or --control
)

// BroadcastInfo rides on broadcast.sent: every broadcast, announcement,
// direct message and human message.
type BroadcastInfo struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	FromSession string    `json:"from_session,omitempty"` // empty for the human
	From        string    `json:"from"`                   // "researcher (r-1)" or "human"
	Category    string    `json:"category,omitempty"`
	Target      string    `json:"target"`
	Message     string    `json:"message"`
	Recipients  []string  `json:"recipients"`
	Skipped     int       `json:"skipped,omitempty"`
	NoReply     bool      `json:"no_reply,omitempty"`
	Timestamp   time.Time `json:"timestamp"`
}

// PlanTask is one task of a session's plan.
type PlanTask struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	DependsOn   []string `json:"depends_on"`
	WaitingOn   []string `json:"waiting_on,omitempty"`
	Ready       bool     `json:"ready,omitempty"`
	Note        string   `json:"note,omitempty"` // why blocked, which delegation
}

// PlanInfo rides on plan.updated and carries the whole plan.
type PlanInfo struct {
	SessionID string     `json:"session_id"`
	Tasks     []PlanTask `json:"tasks"`
}

// DelegationInfo rides on delegation.updated.
type DelegationInfo struct {
	ID            string    `json:"id"`
	ParentSession string    `json:"parent_session"`
	SessionID     string    `json:"session_id,omitempty"`
	PlanTaskID    string    `json:"plan_task_id,omitempty"`
	Description   string    `json:"description"`
	Status        string    `json:"status"` // pending, running, completed, failed, cancelled
	Depth         int       `json:"depth"`
	Result        string    `json:"result,omitempty"`
	Error         string    `json:"error,omitempty"`
	CreatedAt     time.Time `json:"created_at"`
	StartedAt     time.Time `json:"started_at,omitzero"`
	EndedAt       time.Time `json:"ended_at,omitzero"`
}

// Option is one structured answer offered by ask_others.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// QuestionInfo rides on question.opened, question.answered and question.closed.
type QuestionInfo struct {
	ID             string            `json:"id"`
	FromSession    string            `json:"from_session"`
	From           string            `json:"from"`
	Question       string            `json:"question"`
	Options        []Option          `json:"options,omitempty"`
	MultiSelect    bool              `json:"multi_select,omitempty"`
	AllowHuman     bool              `json:"allow_human"`
	Status         string            `json:"status"` // open, answered, timed_out, skipped, closed
	Responses      map[string]string `json:"responses,omitempty"`
	HumanResponded bool              `json:"human_responded"`
	TimedOut       []string          `json:"timed_out,omitempty"`
	Deadline       time.Time         `json:"deadline,omitzero"`
	// Remembered is an earlier human answer to the same question, offered
	// to the person as a default.
	Remembered string `json:"remembered,omitempty"`
	// HumanAbsent: the question was asked of the person, but nobody can
	// answer it where the run runs now (a headless run without --control,
	// or one whose control input ended): it waits for the agents alone.
	HumanAbsent bool `json:"human_absent,omitempty"`
}
