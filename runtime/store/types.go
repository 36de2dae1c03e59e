package store

import (
	"encoding/json"
	"time"
)

// Usage counts tokens.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Add adds v to u.
func (u *Usage) Add(v Usage) {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.TotalTokens += v.TotalTokens
}

// SessionsUsage is what sessions have spent together.
func SessionsUsage(sessions []Session) Usage {
	var sum Usage
	for i := range sessions {
		sum.Add(sessions[i].Usage)
	}
	return sum
}

// Run is one goal given to the swarm.
type Run struct {
	ID           string
	Goal         string
	Status       string // running, completed, failed, cancelled, interrupted
	Provider     string
	BaseURL      string // the model server's, without credentials; "" for the scripted model
	Model        string
	Scripted     bool
	Workspace    string
	Result       string
	Error        string
	Usage        Usage
	HumanSkipAll bool
	// HumanAbsent: nobody can answer the run's questions in the process
	// that runs it (a headless run without --control, or one whose control
	// input ended); false for runs stored before it was recorded.
	HumanAbsent bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	EndedAt     time.Time
	Pauses      []Pause // when it stood stopped before a resume, oldest first
}

// Pause is a stretch of time a run stood stopped (interrupted, killed)
// before it was resumed.
type Pause struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Session is one agent conversation.
type Session struct {
	RunID         string
	ID            string
	ParentID      string
	Agent         string
	Label         string
	Title         string
	Task          string
	Kind          string // task, delegation, root
	Status        string
	Reason        string
	Depth         int
	SharedContext json.RawMessage // the effective context, a JSON object
	WaitOn        []string        // session ids this one is chained after
	Refs          []string        // $ reference names still to resolve when it starts
	Result        string
	Error         string
	Usage         Usage
	Turns         int
	// Completions counts the outcomes reported before the current one
	// (completions, and failures undone by a resume): the key of the next
	// report.
	Completions  int
	SpawnCall    string // the tool call that created it (parent session id + "/" + call id)
	DelegationID string
	LastTool     string
	// LastToolFailed says that the last call of LastTool's answer failed.
	// It has no column: reads take it from the messages.
	LastToolFailed bool
	CreatedAt      time.Time
	UpdatedAt      time.Time
	EndedAt        time.Time
}

// ToolCall is a call requested by a model, as stored.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Message is one entry of a session's history.
type Message struct {
	ID         int64
	RunID      string
	SessionID  string
	Index      int
	Role       string
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	Synthetic  bool
	NoReply    bool
	Source     string // agent, human, system
	Usage      Usage
	CreatedAt  time.Time
	// InboxID is the inbox item this message delivered, if any: the
	// message is the record that the item was delivered.
	InboxID int64
	// Shared is set for a text that many messages carry, stored once (see
	// Tx.ShareContent): the whole Content (a text delivered to many
	// sessions), or its end (the part of a system prompt that siblings
	// have in common). The row then keeps only what comes before it.
	Shared *SharedContent
}

// SharedContent is a text stored once for many messages.
type SharedContent struct {
	ID   int64
	Text string
}

// InboxItem waits to enter a session's history at its next turn boundary.
type InboxItem struct {
	ID          int64
	RunID       string
	SessionID   string
	Key         string // unique per run: makes delivery idempotent
	Kind        string // task_result, broadcast, message, human, sibling, announce, note
	Waking      bool
	Content     string
	Source      string
	FromSession string
	CreatedAt   time.Time
	DeliveredAt time.Time
	ConsumedBy  string
	// Shared, when set, is Content stored once for many recipients.
	Shared *SharedContent
}

// Broadcast is a broadcast, announcement, direct or human message.
type Broadcast struct {
	RunID       string
	ID          string
	Seq         int64
	Kind        string
	FromSession string
	FromLabel   string
	Category    string
	Target      string
	Message     string
	NoReply     bool
	Skipped     int
	Recipients  []Recipient
	CreatedAt   time.Time
}

// Recipient is one addressee of a broadcast.
type Recipient struct {
	SessionID string `json:"session_id"`
	Status    string `json:"status"` // delivered, skipped
	Reason    string `json:"reason,omitempty"`
}

// PlanTask is one task of a session's plan.
type PlanTask struct {
	ID          string
	Position    int
	Description string
	Status      string
	DependsOn   []string
	Note        string
	CreatedAt   time.Time
	CompletedAt time.Time
}

// Delegation is a task handed to a sub-orchestrator.
type Delegation struct {
	RunID         string
	ID            string
	ParentSession string
	SessionID     string
	PlanTaskID    string
	Description   string
	Status        string
	Depth         int
	CustomConfig  json.RawMessage
	Result        string
	Error         string
	CreatedAt     time.Time
	StartedAt     time.Time
	EndedAt       time.Time
}

// Question is an ask_others / broadcast_message question.
type Question struct {
	RunID          string
	ID             string
	FromSession    string
	Kind           string // ask_others, broadcast_message
	Question       string
	AllowHuman     bool
	Options        json.RawMessage
	MultiSelect    bool
	Recipients     []string
	Status         string
	HumanResponded bool
	HumanSkipped   bool
	TimedOut       []string
	CreatedAt      time.Time
	Deadline       time.Time
	ClosedAt       time.Time
	Responses      []Response
}

// Response is one answer to a question.
type Response struct {
	Responder string // session id or "human"
	Name      string // label or id shown to the asker
	Content   string
	Usage     Usage // of a shadow answer; zero for the human's and a tool's
	CreatedAt time.Time
}
