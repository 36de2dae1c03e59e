package agents

import (
	"context"
	"encoding/json"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
)

// Host is what a tool handler can do to the swarm, on behalf of the session
// that made the call. The runtime implements it. Methods that change state
// are idempotent per call id: a call re-run after a crash returns the result
// recorded the first time instead of acting twice.
type Host interface {
	Self() Self

	// Spawning and tasks.
	Spawn(ctx context.Context, c *Call, req SpawnRequest) (*SpawnResult, error)
	TaskOutput(ctx context.Context, c *Call, taskID string, wait bool, timeout time.Duration) (*TaskOutcome, error)
	SendMessage(ctx context.Context, c *Call, taskID, message string, noReply bool) (*SendResult, error)
	CancelTask(ctx context.Context, c *Call, taskID string) (*CancelResult, error)
	WaitTasks(ctx context.Context, c *Call, taskIDs []string, timeout time.Duration) (*WaitResult, error)
	Siblings(ctx context.Context) []TaskRef

	// Broadcasts and context.
	Broadcast(ctx context.Context, c *Call, message, category, target string) (*BroadcastResult, error)
	ReadBroadcasts(ctx context.Context, category string, limit int, source string) (*BroadcastsRead, error)
	SharedContext() json.RawMessage

	// Planning: fn runs atomically against the session's plan (nil when it
	// has none) and returns the plan to keep and the tool result.
	PlanOp(ctx context.Context, c *Call, fn func(p *coordination.Plan) (*coordination.Plan, any, error)) (any, error)
	ViewPlans(ctx context.Context, sessionID string) (any, error)

	// Delegation.
	Delegate(ctx context.Context, c *Call, req DelegateRequest) (*DelegationStatus, error)
	DelegationStatus(ctx context.Context, id string) (*DelegationStatus, error)

	// Questions and announcements.
	Ask(ctx context.Context, c *Call, req AskRequest) (*AskResult, error)
	Announce(ctx context.Context, c *Call, message string) (*AnnounceResult, error)

	// Workspace.
	Workspace() *Workspace
	// Intent records what a workspace write is about to do (for a re-run
	// after a crash to repeat exactly that) and returns the intent recorded
	// earlier for this call, if any.
	Intent(ctx context.Context, c *Call, data []byte) (earlier []byte, err error)
}

// Self describes the calling session.
type Self struct {
	ID       string
	ParentID string
	Agent    string
	Label    string
	Depth    int
	Kind     string
	CanSpawn bool
	CanWrite bool

	MaxTasksPerPlan int
	// BroadcastResponseRequired is broadcast_message's default for
	// requires_response (config coordination.broadcast_response_required).
	BroadcastResponseRequired bool
}

// SpawnRequest is sessions_spawn (and task_create) after argument checks.
type SpawnRequest struct {
	Tasks         []string
	Titles        []string // optional, parallel to Tasks
	Label         string
	Agent         string
	Parallel      bool
	SharedContext json.RawMessage
	ChainAfter    []string
	Wait          bool
	Timeout       time.Duration
}

// TaskRef names a session in results.
type TaskRef struct {
	TaskID string `json:"task_id"`
	Label  string `json:"label,omitempty"`
	Agent  string `json:"agent"`
	Title  string `json:"title,omitempty"`
	Status string `json:"status"`
}

// SpawnResult is returned by sessions_spawn.
type SpawnResult struct {
	Status   string        `json:"status"`
	Sessions []TaskOutcome `json:"sessions"`
	Note     string        `json:"note,omitempty"`
}

// TaskOutcome is the state and output of one task.
type TaskOutcome struct {
	TaskID    string   `json:"task_id"`
	Label     string   `json:"label,omitempty"`
	Agent     string   `json:"agent"`
	Status    string   `json:"status"`
	Reason    string   `json:"reason,omitempty"`
	Output    string   `json:"output,omitempty"`
	Error     string   `json:"error,omitempty"`
	TimedOut  bool     `json:"timed_out,omitempty"`
	WaitingOn []string `json:"waiting_on,omitempty"`
	// Earlier holds what the task reported before a message woke it
	// again, oldest first: Output is its latest word.
	Earlier []string `json:"earlier_results,omitempty"`
}

// SendResult is returned by task_send_message.
type SendResult struct {
	Status  string `json:"status"`
	TaskID  string `json:"task_id"`
	NoReply bool   `json:"no_reply"`
	Note    string `json:"note,omitempty"`
}

// CancelResult is returned by task_cancel.
type CancelResult struct {
	Status    string   `json:"status"`
	TaskID    string   `json:"task_id"`
	Cancelled []string `json:"cancelled"`
}

// WaitResult is returned by task_wait.
type WaitResult struct {
	Results  []TaskOutcome `json:"results"`
	TimedOut []string      `json:"timed_out"`
	Note     string        `json:"note,omitempty"`
}

// BroadcastResult is returned by task_broadcast (seed 000).
type BroadcastResult struct {
	Status      string   `json:"status"`
	DeliveredTo int      `json:"delivered_to"`
	Skipped     int      `json:"skipped"`
	Target      string   `json:"target"`
	Errors      []string `json:"errors,omitempty"`
	Error       string   `json:"error,omitempty"`
}

// BroadcastItem is one broadcast as read back.
type BroadcastItem struct {
	From      string `json:"from"`
	TaskID    string `json:"task_id"`
	Category  string `json:"category"`
	Timestamp string `json:"timestamp"`
	Message   string `json:"message"`
	Source    string `json:"source"`
}

// BroadcastsRead is returned by task_broadcasts_read.
type BroadcastsRead struct {
	Broadcasts []BroadcastItem `json:"broadcasts"`
	Total      int             `json:"total"`
}

// DelegateRequest is delegate_task after argument checks.
type DelegateRequest struct {
	Description  string
	PlanTaskID   string
	Wait         bool
	CustomConfig json.RawMessage
}

// DelegationStatus describes a delegation.
type DelegationStatus struct {
	DelegationID string `json:"delegation_id"`
	SessionID    string `json:"session_id,omitempty"`
	PlanTaskID   string `json:"plan_task_id,omitempty"`
	Description  string `json:"description,omitempty"`
	Status       string `json:"status"`
	Depth        int    `json:"depth"`
	Completed    bool   `json:"completed"`
	Result       string `json:"result,omitempty"`
	Error        string `json:"error,omitempty"`
	Note         string `json:"note,omitempty"`
}

// AskRequest is ask_others / broadcast_message after argument checks.
type AskRequest struct {
	Kind             string // ask_others or broadcast_message
	Question         string
	AllowHuman       bool
	SpecificAgents   []string
	Timeout          time.Duration
	Options          []coordination.Option
	MultiSelect      bool
	RequiresResponse bool
}

// AskResult is returned by ask_others.
type AskResult struct {
	QuestionID     string            `json:"question_id"`
	Status         string            `json:"status"`
	Responses      map[string]string `json:"responses"`
	HumanResponded bool              `json:"human_responded"`
	TimedOut       []string          `json:"timed_out"`
	Note           string            `json:"note,omitempty"`
}

// AnnounceResult is returned by announce.
type AnnounceResult struct {
	Status      string `json:"status"`
	DeliveredTo int    `json:"delivered_to"`
}
