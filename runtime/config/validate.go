package config

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/internal/secret"
)

// Validate checks a Config built or changed in code (Parse already validated
// what it returns). Its errors carry no line numbers: it does not know where
// the values came from.
func (c *Config) Validate() error {
	name := c.Path
	if name == "" {
		name = "configuration"
	}
	return c.validate(name, nil)
}

// problems collects validation errors. lines maps key paths to the line that
// sets them; a value the file does not set is reported at its nearest
// enclosing key that it does set, or without a line.
type problems struct {
	file  string
	lines map[string]int
	errs  []*Error
}

func (p *problems) add(key, format string, args ...any) {
	p.addAt(key, key, format, args...)
}

// addAt reports key but points at the line of at (a list item inside key,
// say, so "agents[2].tools" is reported on the line of the bad tool).
func (p *problems) addAt(key, at, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Line: p.line(at), Key: key, Msg: fmt.Sprintf(format, args...)})
}

func (p *problems) line(key string) int {
	for key != "" {
		if l, ok := p.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// first is the problem nearest the top of the file: one error, the one a
// reader reaching it in order would fix first.
func (p *problems) first() error {
	if len(p.errs) == 0 {
		return nil
	}
	best := p.errs[0]
	for _, e := range p.errs[1:] {
		if e.Line > 0 && (best.Line == 0 || e.Line < best.Line) {
			best = e
		}
	}
	return best
}

var (
	// Role and prompt names become file names under prompts/ and labels in
	// the dashboard, so they are single words: no spaces, dots or slashes
	// (which would also let a prompt name escape the prompts directory).
	wordName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	envName  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	// RFC 9110 token characters.
	headerName = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
)

func (c *Config) validate(file string, lines map[string]int) error {
	p := &problems{file: file, lines: lines}
	c.validateProviders(p)
	c.validateLimits(p)
	c.validateAgents(p)
	c.validateUI(p)
	return p.first()
}

func (c *Config) providerNames() []string { return sortedKeys(c.Providers) }

// unknownProvider is shared by the provider key and the --provider flag.
func (c *Config) unknownProvider(name string) string {
	return fmt.Sprintf("%q is not a configured provider (configured: %s)", name, strings.Join(c.providerNames(), ", "))
}

func (c *Config) validateProviders(p *problems) {
	switch _, ok := c.Providers[c.Provider]; {
	case c.Provider == "":
		p.add("provider", "missing; write auto, or the name of an entry under providers:")
	case c.Provider != ProviderAuto && !ok:
		p.add("provider", "%s", c.unknownProvider(c.Provider))
	}

	for _, name := range c.providerNames() {
		key := joinKey("providers", name)
		pr := c.Providers[name]
		if name == "" {
			p.add("providers", "a provider has an empty name")
			continue
		}
		if name == ProviderAuto {
			p.add(key, "the name auto is reserved for choosing a provider automatically; pick another name")
		}
		if pr == nil {
			pr = &Provider{}
		}
		validateProvider(p, key, pr)
	}
}

func validateProvider(p *problems, key string, pr *Provider) {
	types := []string{TypeOpenAI, TypeScripted}
	switch pr.Type {
	case TypeOpenAI:
		if pr.BaseURL == "" {
			p.add(key+".base_url", "missing; an openai provider needs the server's URL, like http://localhost:11434/v1")
		} else if msg := checkURL(pr.BaseURL); msg != "" {
			p.add(key+".base_url", "%s", msg)
		}
		if pr.Latency != 0 {
			p.add(key+".latency", "only the scripted provider has a latency; remove it here")
		}
		if pr.StreamSpeed != 0 {
			p.add(key+".stream_speed", "only the scripted provider has a stream speed; remove it here")
		}
		if pr.Scenario != "" {
			p.add(key+".scenario", "only the scripted provider plays scenarios; remove it here")
		}
	case TypeScripted:
		if pr.BaseURL != "" {
			p.add(key+".base_url", "the scripted provider runs inside swarmdeck and has no base_url (to use a standalone swarmdeck mock-llm, add an openai provider with its address)")
		}
		if pr.Latency < 0 {
			p.add(key+".latency", "%s is negative; use 0 for no delay", pr.Latency)
		}
		if pr.StreamSpeed < 0 {
			p.add(key+".stream_speed", "%d is negative; use 0 to send each reply at once", pr.StreamSpeed)
		}
	case "":
		p.add(key+".type", "missing; write type: openai for an OpenAI-compatible server, or type: scripted")
	default:
		p.add(key+".type", "%q is not a provider type%s", pr.Type, choices(pr.Type, types))
	}
	// Never echo the value: when it is not a variable name it is most
	// likely the key itself, which must not end up in a terminal or a log.
	if pr.APIKeyEnv != "" && !envName.MatchString(pr.APIKeyEnv) {
		p.add(key+".api_key_env", "must name the environment variable that holds the key (like OPENAI_API_KEY), not contain the key itself")
	}
	for _, h := range sortedKeys(pr.Headers) {
		if !headerName.MatchString(h) {
			p.addAt(key+".headers", joinKey(key+".headers", h), "%q is not a valid HTTP header name", h)
		}
	}
}

// checkURL returns what is wrong with an http(s) base URL, or "".
func checkURL(s string) string {
	u, err := url.Parse(s)
	shown := s
	if err == nil {
		// Quoted with its secrets hidden, since the error may end up in a
		// log; as written where there are none, so that it can be found.
		if hidden, hid := secret.HideInURL(s); hid {
			shown = hidden
		}
	}
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Sprintf("%q is not an http(s) URL (write it like http://localhost:11434/v1)", shown)
	}
	// A space parses in a query, and goes into the request line as it is,
	// which no server takes.
	if strings.Contains(s, " ") {
		return fmt.Sprintf("%q has a space, which a URL cannot carry: write it as %%20", shown)
	}
	// A port out of range parses, and fails only at the first call, as a
	// connection error retried until the run gives up.
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Sprintf("%q has port %s, which is not a port number from 1 to 65535 (write it like http://localhost:11434/v1)", shown, p)
		}
	}
	return ""
}

// intRule is one integer limit: its key, value, smallest allowed value and
// what to say when it is smaller.
type intRule struct {
	key  string
	val  int
	min  int
	hint string
}

type durRule struct {
	key string
	val Duration
}

func (c *Config) validateLimits(p *problems) {
	l, co := c.Limits, c.Coordination
	ints := []intRule{
		{"limits.max_turns_per_session", l.MaxTurnsPerSession, 1, ""},
		{"limits.max_sessions_per_run", l.MaxSessionsPerRun, 1, "the orchestrator is a session"},
		{"limits.max_spawn_depth", l.MaxSpawnDepth, 0, "0 lets only the orchestrator work"},
		{"limits.max_concurrent_llm_calls", l.MaxConcurrentLLMCalls, 1, ""},
		{"limits.max_concurrent_sessions", l.MaxConcurrentSessions, 1, ""},
		{"limits.token_budget_per_run", l.TokenBudgetPerRun, 0, "0 means unlimited"},
		{"limits.max_retries", l.MaxRetries, 0, "0 means no retries"},
		{"limits.max_sibling_rows", l.MaxSiblingRows, 0, "0 shows only the summary line"},
		{"limits.max_tool_output", l.MaxToolOutput, 500, "a shorter result could not hold a tool's error message whole"},
		{"coordination.max_delegation_depth", co.MaxDelegationDepth, 1, "to turn delegation off, set coordination.enable_task_delegation: false"},
		{"coordination.max_concurrent_delegations", co.MaxConcurrentDelegations, 1, "to turn delegation off, set coordination.enable_task_delegation: false"},
		{"coordination.max_broadcasts_per_session", co.MaxBroadcastsPerSession, 1, "to turn broadcasts off, set coordination.enable_broadcasts: false"},
		{"coordination.max_questions_per_session", co.MaxQuestionsPerSession, 1, "to stop a role asking, remove the questions group from its tools"},
		{"coordination.max_tasks_per_plan", co.MaxTasksPerPlan, 1, "to turn planning off, set coordination.enable_agent_planning: false"},
	}
	for _, r := range ints {
		if r.val >= r.min {
			continue
		}
		msg := fmt.Sprintf("%d is too small; the minimum is %d", r.val, r.min)
		if r.min == 0 {
			msg = fmt.Sprintf("%d is negative", r.val)
		}
		if r.hint != "" {
			msg += " (" + r.hint + ")"
		}
		p.add(r.key, "%s", msg)
	}
	durs := []durRule{
		{"limits.call_timeout", l.CallTimeout},
		{"limits.stream_idle_timeout", l.StreamIdleTimeout},
		{"limits.session_timeout", l.SessionTimeout},
		{"coordination.broadcast_timeout", co.BroadcastTimeout},
		{"coordination.delegation_timeout", co.DelegationTimeout},
	}
	for _, r := range durs {
		if r.val <= 0 {
			p.add(r.key, "%s must be longer than zero (write it like 30s or 2m)", r.val)
		}
	}
}

func (c *Config) validateAgents(p *problems) {
	if len(c.Agents) == 0 {
		p.add("agents", "the roster is empty; it needs at least the %s role", OrchestratorRole)
		return
	}
	firstAt := map[string]int{}
	for i, a := range c.Agents {
		key := fmt.Sprintf("agents[%d]", i)
		switch {
		case a.Role == "":
			p.add(key+".role", "missing; every roster entry needs a role name")
		case !wordName.MatchString(a.Role):
			p.add(key+".role", "%q is not a valid role name (one word of letters, digits, - or _)", a.Role)
		default:
			if j, dup := firstAt[a.Role]; dup {
				p.add(key+".role", "%q is already the role of agents[%d]; roles must be unique", a.Role, j)
			} else {
				firstAt[a.Role] = i
			}
		}
		if a.Prompt != "" && !wordName.MatchString(a.Prompt) {
			p.add(key+".prompt", "%q is not a template name (one word, without .md or a directory, naming a file in prompts/)", a.Prompt)
		}
		for j, t := range a.Tools {
			if !slices.Contains(ToolGroups, t) {
				p.addAt(key+".tools", fmt.Sprintf("%s.tools[%d]", key, j), "unknown tool group %q%s", t, choices(t, ToolGroups))
			}
		}
	}
	if _, ok := firstAt[OrchestratorRole]; !ok {
		p.add("agents", "no %q role; the root session of every run plays it, so the roster must have one", OrchestratorRole)
	}
}

func (c *Config) validateUI(p *problems) {
	if !slices.Contains(Themes, c.UI.Theme) {
		p.add("ui.theme", "%q is not a theme%s", c.UI.Theme, choices(c.UI.Theme, Themes))
	}
	c.validateKeys(p)
}

// choices is the parenthesised list after an invalid enum value.
func choices(got string, valid []string) string {
	hint := ""
	if s := Suggest(got, valid); s != "" {
		hint = "did you mean " + s + "? "
	}
	return " (" + hint + "valid: " + strings.Join(valid, ", ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// normalize fills the values whose default depends on other values and
// expands a leading ~ in paths, which YAML (unlike a shell) leaves alone.
func (c *Config) normalize() {
	for i := range c.Agents {
		if c.Agents[i].Prompt == "" {
			c.Agents[i].Prompt = c.Agents[i].Role
		}
	}
	for _, s := range []*string{&c.Workspace, &c.DB, &c.LogFile, &c.PromptsDir} {
		*s = expandHome(*s)
	}
	for _, pr := range c.Providers {
		if pr != nil {
			pr.Scenario = expandHome(pr.Scenario)
		}
	}
}

func expandHome(path string) string {
	if path != "~" && !strings.HasPrefix(path, "~/") {
		return path
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return path
	}
	return filepath.Join(home, path[1:])
}
