package prompts

// Data is what a system prompt template sees.
type Data struct {
	Role        string // e.g. "orchestrator", "researcher"
	Description string // the role's one-line description from the roster
	SessionID   string // the session's task id, e.g. "s-3f9a"
	Label       string // the label given at spawn time, may be empty
	Depth       int    // 0 for the root orchestrator
	Goal        string // the run's goal

	// Template names the role template to render (the roster's `prompt`
	// setting, without .md). "" means Role; an unknown name falls back to
	// Role, then to the generic agent template.
	Template string

	IsRoot    bool // the run's root orchestrator
	Delegated bool // a sub-orchestrator started by delegate_task
	HasParent bool // any session but the root
	CanSpawn  bool
	CanWrite  bool

	// Tool groups available to this session (spawn, tasks, broadcasts,
	// planning, delegation, questions, context, workspace), after the
	// coordination feature switches have been applied.
	Groups map[string]bool

	Roster    []RosterEntry // roles this session may spawn
	Workspace string        // absolute path of the workspace

	// SharedContext is the rendered "[Shared Context]:" block, or "".
	SharedContext string

	MaxSpawnDepth      int
	MaxDelegationDepth int
	// DelegationDepth counts the delegations this session is inside of:
	// 1 for a sub-orchestrator that delegate_task started, 0 for the root.
	DelegationDepth int
}

// Has reports whether the tool group is enabled. Templates call it as
// {{if .Has "planning"}} so that a missing map key reads as "off".
func (d Data) Has(group string) bool { return d.Groups[group] }

// RosterEntry is one role of the roster, as listed in prompts.
type RosterEntry struct {
	Role        string
	Description string
}

// ShadowData is what the shadow responder prompt sees: one tool-less call
// answering a question on behalf of another session.
type ShadowData struct {
	Agent   string // "researcher (research-1)"
	AskedBy string // "orchestrator (s-1a2b)"
	// Question and Options are the asker's text, escaped as tag bodies
	// are. The built-in template leaves them out: the responder reads them
	// in the next message, so that agents' text never becomes part of a
	// system prompt. They are here for overrides that want them.
	Question    string
	Options     []string // "a: Next week", ...
	MultiSelect bool     // the asker accepts several options
}

// ReminderData is what the dynamic reminders injected at turn boundaries see.
type ReminderData struct {
	Blocked []string // "review (waiting on draft, checklist)"
	Ready   []string // "research: Research the market"

	// Groups are the session's tool groups, so that a reminder only names
	// tools the session has. Nil gives tool-neutral wording.
	Groups map[string]bool
}

// Has reports whether the tool group is enabled (see Data.Has).
func (d ReminderData) Has(group string) bool { return d.Groups[group] }
