// Package config owns swarmdeck's configuration: the types, their defaults,
// loading from YAML with errors that name file, line and key, discovery of the
// config file, the overrides that command-line flags apply on top, provider
// resolution (which endpoint, model and API key a run uses) and live reload
// of the file while swarmdeck runs.
package config

import "time"

// Config is the whole configuration of swarmdeck. The YAML keys are the
// snake_case names in the struct tags; config.yaml documents each one.
type Config struct {
	// Provider names the entry of Providers to use. "auto" picks the first
	// provider of type openai whose API key variable is set, else "scripted".
	Provider  string               `yaml:"provider"`
	Model     string               `yaml:"model"` // overrides the provider's model when set
	Providers map[string]*Provider `yaml:"providers"`

	Workspace  string `yaml:"workspace"`   // directory the workspace tools are confined to
	DB         string `yaml:"db"`          // SQLite file; default $XDG_DATA_HOME/swarmdeck/swarmdeck.db
	LogFile    string `yaml:"log_file"`    // default $XDG_STATE_HOME/swarmdeck/swarmdeck.log
	PromptsDir string `yaml:"prompts_dir"` // *.md here override the embedded prompts

	Limits       Limits       `yaml:"limits"`
	Coordination Coordination `yaml:"coordination"`
	Agents       []Agent      `yaml:"agents"`
	UI           UI           `yaml:"ui"`

	// Path is the file the configuration was loaded from ("" for defaults).
	Path string `yaml:"-"`
	// lines maps the key paths the file set to their lines (nil when it
	// set none), for errors found once a value is used (see Where).
	lines map[string]int
	// urlFlagged is the provider entry whose base_url --base-url replaced
	// in Apply ("" when none), and fileURL what the file said there, so
	// that a reload tells an edit of the file from the flag moving with
	// provider: (see NotLive).
	urlFlagged, fileURL string
}

// Provider is one OpenAI-compatible endpoint, or the built-in scripted model.
type Provider struct {
	Type      string `yaml:"type"`        // "openai" or "scripted"
	BaseURL   string `yaml:"base_url"`    // e.g. http://localhost:11434/v1 for Ollama
	APIKeyEnv string `yaml:"api_key_env"` // environment variable holding the key (never the key itself)
	Model     string `yaml:"model"`

	// Scripted model only.
	Latency     Duration `yaml:"latency"`      // delay before the first token of each reply
	StreamSpeed int      `yaml:"stream_speed"` // chunks per second while streaming; 0 streams at once
	Scenario    string   `yaml:"scenario"`     // optional scenario file replacing the demo policy

	// Extra request headers (OpenRouter wants HTTP-Referer / X-Title, for instance).
	Headers map[string]string `yaml:"headers"`
}

// Limits are the hard bounds of DESIGN.md section 2. Hitting one is a clear
// tool error or a failed session with the reason, never a hang.
type Limits struct {
	MaxTurnsPerSession    int      `yaml:"max_turns_per_session"`
	MaxSessionsPerRun     int      `yaml:"max_sessions_per_run"`
	MaxSpawnDepth         int      `yaml:"max_spawn_depth"`
	MaxConcurrentLLMCalls int      `yaml:"max_concurrent_llm_calls"`
	MaxConcurrentSessions int      `yaml:"max_concurrent_sessions"`
	TokenBudgetPerRun     int      `yaml:"token_budget_per_run"` // 0 means unlimited
	CallTimeout           Duration `yaml:"call_timeout"`         // one LLM call, retries excluded
	StreamIdleTimeout     Duration `yaml:"stream_idle_timeout"`  // silence allowed inside a stream
	SessionTimeout        Duration `yaml:"session_timeout"`      // per session, in time the process runs (runtime/awake)
	MaxRetries            int      `yaml:"max_retries"`          // per LLM call
	MaxSiblingRows        int      `yaml:"max_sibling_rows"`     // rows of <sibling_tasks> before a summary line
	MaxToolOutput         int      `yaml:"max_tool_output"`      // characters of a tool result, or of a child's result to its parent, kept in history
}

// Coordination switches and bounds the coordination features of seed 002 and
// the broadcast rate limit of seed 000.
type Coordination struct {
	EnableAgentPlanning       bool     `yaml:"enable_agent_planning"`
	EnableBroadcasts          bool     `yaml:"enable_broadcasts"`
	EnableTaskDelegation      bool     `yaml:"enable_task_delegation"`
	BroadcastTimeout          Duration `yaml:"broadcast_timeout"` // default ask_others timeout
	BroadcastResponseRequired bool     `yaml:"broadcast_response_required"`
	MaxDelegationDepth        int      `yaml:"max_delegation_depth"`
	DelegationTimeout         Duration `yaml:"delegation_timeout"`
	MaxConcurrentDelegations  int      `yaml:"max_concurrent_delegations"`
	MaxBroadcastsPerSession   int      `yaml:"max_broadcasts_per_session"` // task_broadcast
	MaxQuestionsPerSession    int      `yaml:"max_questions_per_session"`  // ask_others / broadcast_message
	MaxTasksPerPlan           int      `yaml:"max_tasks_per_plan"`
}

// Agent is one role of the roster.
type Agent struct {
	Role        string   `yaml:"role"`
	Description string   `yaml:"description"`
	Prompt      string   `yaml:"prompt"` // template name in prompts/ (without .md); default: the role
	Tools       []string `yaml:"tools"`  // tool groups: spawn, tasks, broadcasts, planning, delegation, questions, context, workspace
	Model       string   `yaml:"model"`  // optional per-role model
	CanSpawn    bool     `yaml:"can_spawn"`
	CanWrite    bool     `yaml:"can_write"`
}

// UI configures the dashboard.
type UI struct {
	Theme string              `yaml:"theme"` // auto, dark or light
	Keys  map[string][]string `yaml:"keys"`  // action name -> keys, overriding the defaults
}

// ToolGroups lists every valid tool group name.
var ToolGroups = []string{"spawn", "tasks", "broadcasts", "planning", "delegation", "questions", "context", "workspace"}

// Duration is a time.Duration written in YAML as "300ms", "2m" or "1h".
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }
