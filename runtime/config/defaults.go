package config

import "time"

// Provider types.
const (
	TypeOpenAI   = "openai"   // any OpenAI-compatible HTTP server
	TypeScripted = "scripted" // the built-in offline model
)

// ProviderAuto is the Provider value that picks one at start-up (see Resolve).
const ProviderAuto = "auto"

// ScriptedModel is the model name the scripted provider reports when the
// configuration names none; it shows in the dashboard so nobody mistakes the
// demo for a real model.
const ScriptedModel = "swarmdeck-scripted"

// OrchestratorRole is the role the root session of every run plays, so the
// roster must contain it.
const OrchestratorRole = "orchestrator"

// Themes lists the valid values of ui.theme.
var Themes = []string{"auto", "dark", "light"}

// Defaults returns the built-in configuration, the one the root config.yaml
// spells out. A test parses that file and compares it with this, so the two
// cannot drift; change both together.
func Defaults() *Config {
	all := append([]string(nil), ToolGroups...)
	readOnly := []string{"tasks", "broadcasts", "questions", "context", "workspace"}
	return &Config{
		Provider: ProviderAuto,
		Model:    "",
		Providers: map[string]*Provider{
			"openai": {
				Type:      TypeOpenAI,
				BaseURL:   "https://api.openai.com/v1",
				APIKeyEnv: "OPENAI_API_KEY",
				Model:     "gpt-4o-mini",
			},
			"scripted": {
				Type:        TypeScripted,
				Latency:     Duration(400 * time.Millisecond),
				StreamSpeed: 60,
				Scenario:    "",
			},
		},
		Workspace:  ".",
		DB:         "",
		LogFile:    "",
		PromptsDir: "",
		Limits: Limits{
			MaxTurnsPerSession:    40,
			MaxSessionsPerRun:     300,
			MaxSpawnDepth:         4,
			MaxConcurrentLLMCalls: 16,
			MaxConcurrentSessions: 256,
			TokenBudgetPerRun:     0,
			CallTimeout:           Duration(3 * time.Minute),
			StreamIdleTimeout:     Duration(90 * time.Second),
			SessionTimeout:        Duration(30 * time.Minute),
			MaxRetries:            5,
			MaxSiblingRows:        20,
			MaxToolOutput:         16000,
		},
		Coordination: Coordination{
			EnableAgentPlanning:       true,
			EnableBroadcasts:          true,
			EnableTaskDelegation:      true,
			BroadcastTimeout:          Duration(120 * time.Second),
			BroadcastResponseRequired: true,
			MaxDelegationDepth:        1,
			DelegationTimeout:         Duration(30 * time.Minute),
			MaxConcurrentDelegations:  4,
			MaxBroadcastsPerSession:   10,
			MaxQuestionsPerSession:    5,
			MaxTasksPerPlan:           100,
		},
		Agents: []Agent{
			{
				Role:        "orchestrator",
				Description: "Owns the goal: splits it into work, runs sub-agents and delegations, and writes the final answer.",
				Prompt:      "orchestrator",
				Tools:       all,
				CanSpawn:    true,
			},
			{
				Role:        "planner",
				Description: "Turns a broad task into a dependency-ordered plan and hands its parts to sub-agents.",
				Prompt:      "planner",
				Tools:       []string{"spawn", "tasks", "broadcasts", "planning", "questions", "context", "workspace"},
				CanSpawn:    true,
			},
			{
				Role:        "explorer",
				Description: "Maps the workspace read-only: finds the files, structure and facts the others need.",
				Prompt:      "explorer",
				Tools:       append([]string(nil), readOnly...),
			},
			{
				Role:        "researcher",
				Description: "Answers one focused question from the sources at hand and reports findings with evidence.",
				Prompt:      "researcher",
				Tools:       append([]string(nil), readOnly...),
			},
			{
				Role:        "executor",
				Description: "Carries out a concrete task by writing and editing files in the workspace.",
				Prompt:      "executor",
				Tools:       []string{"tasks", "broadcasts", "planning", "questions", "context", "workspace"},
				CanWrite:    true,
			},
			{
				Role:        "reviewer",
				Description: "Checks finished work against its task and reports problems without editing anything.",
				Prompt:      "reviewer",
				Tools:       append([]string(nil), readOnly...),
			},
		},
		UI: UI{
			Theme: "auto",
			Keys:  map[string][]string{},
		},
	}
}
