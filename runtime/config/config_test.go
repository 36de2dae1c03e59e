package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

// rootConfig is the documented default configuration at the repository root.
const rootConfig = "../../config.yaml"

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	cfg, err := Parse("config.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse(%q): %v", src, err)
	}
	return cfg
}

// asJSON gives configs a readable, comparable form (providers are pointers,
// so %v would print addresses).
func asJSON(t *testing.T, c *Config) string {
	t.Helper()
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRootConfigIsTheDefaults(t *testing.T) {
	cfg, err := Load(rootConfig)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Path != rootConfig {
		t.Errorf("Path = %q, want %q", cfg.Path, rootConfig)
	}
	cfg.Path, cfg.lines = "", nil // where the settings come from, not what they are
	want := Defaults()
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config.yaml and Defaults() differ; change both together\nconfig.yaml:\n%s\nDefaults():\n%s", asJSON(t, cfg), asJSON(t, want))
	}
}

func TestDefaultsAreValid(t *testing.T) {
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg := mustParse(t, ""); !reflect.DeepEqual(cfg, Defaults()) {
		t.Errorf("an empty file does not give the defaults:\n%s", asJSON(t, cfg))
	}
	if cfg := mustParse(t, "# just a comment\n"); !reflect.DeepEqual(cfg, Defaults()) {
		t.Errorf("a comment-only file does not give the defaults:\n%s", asJSON(t, cfg))
	}
}

func TestDefaultsShareNothing(t *testing.T) {
	a := Defaults()
	a.Agents[2].Tools[0] = "changed"
	a.Agents[0].Tools[0] = "changed"
	a.Providers["openai"].Model = "changed"
	a.UI.Keys["quit"] = []string{"x"}
	b := Defaults()
	if b.Agents[3].Tools[0] != "tasks" || b.Agents[5].Tools[0] != "tasks" || ToolGroups[0] != "spawn" {
		t.Error("Defaults() hands out shared tool slices")
	}
	if b.Providers["openai"].Model != "gpt-4o-mini" || len(b.UI.Keys) != 0 {
		t.Error("Defaults() hands out shared providers or keys")
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		line int
		key  string // "" for YAML syntax errors
		msg  string // a part of the message that tells the user what to do
	}{
		// Unknown keys, with a suggestion when one is close.
		{"unknown top key", "provider: auto\nprovder: x\n", 2, "provder", "did you mean provider?"},
		{"shortened key", "limits:\n  max_turn: 3\n", 2, "limits.max_turn", "unknown key (did you mean max_turns_per_session?)"},
		{"camelCase key", "limits:\n  callTimeout: 3m\n", 2, "limits.callTimeout", "did you mean call_timeout?"},
		{"unknown key lists the valid ones", "ui:\n  colours: x\n", 2, "ui.colours", "valid keys: theme, keys"},
		{"unknown provider key", "providers:\n  openai:\n    base_ur: http://x\n", 3, "providers.openai.base_ur", "did you mean base_url?"},
		{"unknown agent key", "agents:\n  - role: orchestrator\n    tool: [spawn]\n", 3, "agents[0].tool", "did you mean tools?"},
		{"seed 002 section", "orchestrator:\n  enable_broadcasts: true\n", 1, "orchestrator", "under coordination:"},

		// Values of the wrong kind.
		{"duration as word", "limits:\n  call_timeout: fast\n", 2, "limits.call_timeout", `"fast" is not a duration (write it like 30s or 2m)`},
		{"duration without unit", "limits:\n  session_timeout: 30\n", 2, "limits.session_timeout", "30 has no unit"},
		{"duration as list", "coordination:\n  broadcast_timeout: [1s]\n", 2, "coordination.broadcast_timeout", "expected a duration"},
		{"quoted number", "limits:\n  max_retries: \"5\"\n", 2, "limits.max_retries", "without quotes"},
		{"fraction", "limits:\n  max_retries: 2.5\n", 2, "limits.max_retries", "2.5 is not a whole number"},
		{"huge number", "limits:\n  max_tool_output: 99999999999999999999\n", 2, "limits.max_tool_output", "too large"},
		{"tool output too short to hold an error", "limits:\n  max_tool_output: 150\n", 2, "limits.max_tool_output", "150 is too small; the minimum is 500 (a shorter result could not hold a tool's error message whole)"},
		{"word for bool", "coordination:\n  enable_broadcasts: yes\n", 2, "coordination.enable_broadcasts", `"yes" is not true or false`},
		{"scalar for section", "limits: 3\n", 1, "limits", "expected key: value settings"},
		{"mapping for list", "agents:\n  role: orchestrator\n", 2, "agents", "expected a list"},
		{"list for text", "model: [a, b]\n", 1, "model", "expected text"},

		// Providers.
		{"unknown provider", "\n\n\n\nprovider: olama\n", 5, "provider", `"olama" is not a configured provider (configured: openai, scripted)`},
		{"empty provider", "provider: \"\"\n", 1, "provider", "missing"},
		{"provider type typo", "providers:\n  mine:\n    type: opnai\n", 3, "providers.mine.type", "did you mean openai?"},
		{"provider without type", "providers:\n  mine:\n    base_url: http://localhost:1/v1\n", 2, "providers.mine.type", "write type: openai"},
		{"openai without base_url", "providers:\n  mine:\n    type: openai\n", 2, "providers.mine.base_url", "needs the server's URL"},
		{"bad base_url", "providers:\n  openai:\n    base_url: localhost:11434\n", 3, "providers.openai.base_url", "not an http(s) URL"},
		{"base_url port out of range", "providers:\n  openai:\n    base_url: http://localhost:114340/v1\n", 3, "providers.openai.base_url", "port 114340, which is not a port number from 1 to 65535"},
		{"scripted with base_url", "providers:\n  scripted:\n    base_url: http://x/v1\n", 3, "providers.scripted.base_url", "has no base_url"},
		{"openai with latency", "providers:\n  openai:\n    latency: 1s\n", 3, "providers.openai.latency", "only the scripted provider"},
		{"negative latency", "providers:\n  scripted:\n    latency: -1s\n", 3, "providers.scripted.latency", "negative"},
		{"negative stream speed", "providers:\n  scripted:\n    stream_speed: -2\n", 3, "providers.scripted.stream_speed", "negative"},
		{"provider named auto", "providers:\n  auto:\n    type: scripted\n", 2, "providers.auto", "reserved"},
		{"bad header", "providers:\n  openai:\n    headers:\n      \"X Title\": a\n", 4, "providers.openai.headers", "not a valid HTTP header name"},

		// Limits: zero where it makes no sense, negative anywhere.
		{"zero turns", "limits:\n  max_turns_per_session: 0\n", 2, "limits.max_turns_per_session", "the minimum is 1"},
		{"negative retries", "limits:\n  max_retries: -1\n", 2, "limits.max_retries", "negative"},
		{"zero timeout", "limits:\n  call_timeout: 0s\n", 2, "limits.call_timeout", "longer than zero"},
		{"negative timeout", "coordination:\n  delegation_timeout: -5m\n", 2, "coordination.delegation_timeout", "longer than zero"},
		{"zero broadcasts", "coordination:\n  max_broadcasts_per_session: 0\n", 2, "coordination.max_broadcasts_per_session", "enable_broadcasts: false"},
		{"zero plan size", "coordination:\n  max_tasks_per_plan: 0\n", 2, "coordination.max_tasks_per_plan", "the minimum is 1"},

		// The roster.
		{"empty roster", "agents: []\n", 1, "agents", "needs at least the orchestrator"},
		{"no orchestrator", "agents:\n  - role: explorer\n", 1, "agents", `no "orchestrator" role`},
		{"duplicate role", "agents:\n  - role: orchestrator\n  - role: explorer\n  - role: explorer\n", 4, "agents[2].role", "already the role of agents[1]"},
		{"empty role", "agents:\n  - role: orchestrator\n  - description: x\n", 3, "agents[1].role", "missing"},
		{"role with space", "agents:\n  - role: orchestrator\n  - role: code reviewer\n", 3, "agents[1].role", "not a valid role name"},
		{"prompt leaving prompts dir", "agents:\n  - role: orchestrator\n    prompt: ../../etc/passwd\n", 3, "agents[0].prompt", "not a template name"},
		{"tool group typo", "agents:\n  - role: orchestrator\n  - role: x\n    tools:\n      - tasks\n      - spwan\n", 6, "agents[1].tools", `unknown tool group "spwan" (did you mean spawn? valid: spawn, tasks,`},

		// UI.
		{"theme", "ui:\n  theme: drak\n", 2, "ui.theme", `"drak" is not a theme (did you mean dark? valid: auto, dark, light)`},
		{"unknown action", "ui:\n  keys:\n    quitt: [q]\n", 3, "ui.keys.quitt", "did you mean quit?"},
		{"no keys", "ui:\n  keys:\n    quit: []\n", 3, "ui.keys.quit", "no keys given"},
		{"empty key", "ui:\n  keys:\n    help: [\"?\", \"\"]\n", 3, "ui.keys.help", `"" is not a key name`},
		{"key with space", "ui:\n  keys:\n    help:\n      - ctrl h\n", 4, "ui.keys.help", "not a key name"},
		{"unknown modifier", "ui:\n  keys:\n    quit: [notakey+zz]\n", 3, "ui.keys.quit", `"notakey" is not a modifier`},
		{"modifier typo", "ui:\n  keys:\n    quit: [ctl+q]\n", 3, "ui.keys.quit", "did you mean ctrl?"},
		{"unknown key name", "ui:\n  keys:\n    page_down: [pagedown]\n", 3, "ui.keys.page_down", "write pgdown"},
		{"modifiers out of order", "ui:\n  keys:\n    quit: [alt+ctrl+q]\n", 3, "ui.keys.quit", `write it "ctrl+alt+q"`},
		{"modifier alone", "ui:\n  keys:\n    quit: [ctrl+]\n", 3, "ui.keys.quit", "not a key name"},
		{"shifted letter", "ui:\n  keys:\n    skip_all: [shift+s]\n", 3, "ui.keys.skip_all", `write the character shift types, "S"`},
		{"upper case with ctrl", "ui:\n  keys:\n    quit: [ctrl+Q]\n", 3, "ui.keys.quit", `"ctrl+shift+q"`},
		{"ctrl+c", "ui:\n  keys:\n    help: [ctrl+c]\n", 3, "ui.keys.help", "always quits at once"},
		{"ctrl+z", "ui:\n  keys:\n    skip: [ctrl+z]\n", 3, "ui.keys.skip", "always suspends the dashboard"},
		// Keys a terminal sends as another key.
		{"ctrl+m is enter", "ui:\n  keys: {broadcast: [B], quit: [ctrl+m]}\n", 2, "ui.keys.quit", `"ctrl+m" never fires: terminals send it as enter; choose another key`},
		{"ctrl+i is tab", "ui:\n  keys:\n    help: [\"?\", ctrl+i]\n", 3, "ui.keys.help", `"ctrl+i" never fires: terminals send it as tab`},
		{"ctrl+[ is esc", "ui:\n  keys:\n    back: [\"ctrl+[\"]\n", 3, "ui.keys.back", `"ctrl+[" never fires: terminals send it as esc`},
		{"ctrl+alt+m is alt+enter", "ui:\n  keys:\n    quit: [ctrl+alt+m]\n", 3, "ui.keys.quit", "terminals send it as alt+enter"},
		{"ctrl+h is backspace", "ui:\n  keys:\n    help: [ctrl+h]\n", 3, "ui.keys.help", "the backspace character, which many terminals send for backspace"},
		{"ctrl+j is a newline", "ui:\n  keys:\n    quit: [ctrl+j]\n", 3, "ui.keys.quit", "the newline character"},
		{"no ctrl key that never fires suggested", "ui:\n  keys:\n    toggle_target: [m]\n", 3, "ui.keys.toggle_target", "like f2, or ctrl with another letter"},
		{"a default key of another action", "ui:\n  keys:\n    quit: [b]\n    help: [h]\n", 3, "ui.keys.quit",
			`"b" is also the default key of broadcast in the main view, where one key can do only one thing; rebind broadcast too`},
		{"two keys set alike", "ui:\n  keys:\n    broadcast: [z]\n\n    quit: [q, z]\n", 5, "ui.keys.quit", `"z" is also set for broadcast in the main view`},
		{"two keys set alike, reported at the later", "ui:\n  keys:\n    quit: z\n    broadcast: z\n", 4, "ui.keys.broadcast", `"z" is also set for quit`},
		{"two keys of one dialog", "ui:\n  keys:\n    dialog_skip: [tab]\n", 3, "ui.keys.dialog_skip", "default key of use_remembered in the answer dialog"},
		{"yes and no alike", "ui:\n  keys:\n    yes: [n]\n", 3, "ui.keys.yes", "default key of no in a yes/no confirmation"},
		{"a letter in a text dialog", "ui:\n  keys:\n    toggle_target: [t]\n", 3, "ui.keys.toggle_target", `"t" would no longer type t in the broadcast dialog; use a key that types nothing, like ctrl+t`},
		// Nor keys that mend what is typed there.
		{"an editing key in a text dialog", "ui:\n  keys:\n    dialog_skip: [ctrl+u]\n", 3, "ui.keys.dialog_skip",
			`"ctrl+u" clears what is typed before the cursor in the answer dialog, which it would no longer do; use a key that edits nothing there`},
		{"an editing key at the goal prompt", "ui:\n  keys:\n    send:\n      - enter\n      - backspace\n", 5, "ui.keys.send",
			`"backspace" deletes the character before the cursor in the broadcast dialog`},
		{"a moving key in a filter", "ui:\n  keys:\n    back: [esc, left]\n", 3, "ui.keys.back", `"left" moves the cursor left in the broadcast dialog`},

		// YAML itself.
		{"duplicate key", "model: a\nmodel: b\n", 2, "", `mapping key "model" already defined on line 1`},
		{"tab indent", "limits:\n\tmax_retries: 1\n", 2, "", "indent with spaces"},
		{"unclosed list", "agents: [\n", 1, "", "invalid YAML"},
		{"key indented too deep", "provider: scripted\nlimits:\n  max_turns: 5\n   max_depth: 3\n", 4, "",
			"invalid YAML: this key is indented deeper than the one on line 3, so YAML reads it as more of that key's value"},
		{"key under a scalar", "model: a\n  provider: b\n", 2, "", "indented deeper than the one on line 1"},
		{"key indented too deep under a comment", "provider: scripted\nlimits:\n  max_turns_per_session: 5  # a comment\n   max_retries: 3\n", 4, "",
			"invalid YAML: this key is indented deeper than the one on line 3, so YAML reads it as more of that key's value"},
		{"key indented too deep after a comment line", "limits:\n  max_turns_per_session: 5\n  # a comment\n   max_retries: 3\n", 4, "",
			"indented deeper than the one on line 2"},
		{"key indented too little", "limits:\n  max_turns_per_session: 5\nmax_retries: 3\n  call_timeout: 3m\n", 4, "",
			"indented deeper than the one on line 3, so YAML reads it as more of that key's value; indent it as far as the keys it belongs with, or, if line 3 is the one out of place, indent that one"},
		{"colon in a value", "title_hint: note: x\n", 1, "", `invalid YAML: mapping value is not allowed in this context; a value holding ": " must be in quotes`},
		{"not UTF-8", "provider: scripted\nmodel: caf\xe9\n", 2, "", "not UTF-8 text (saved in another encoding?): save the file as UTF-8"},
		{"key indented between levels", "limits:\n  max_turns: 1\n max_depth: 2\n", 3, "", "invalid YAML: this key's indent lines up with no key above it"},
		{"unclosed list, noticed a line later", "agents:\n  - name: a\n    tools: [read_file, list_files\n    prompt: x\n", 3, "",
			"invalid YAML: the list opened here with '[' is not closed (the parser expected ',' or ']' before line 4)"},
		{"unclosed list over lines", "agents:\n  - name: a\n    tools: [read_file,\n      list_files\n    prompt: x\n", 3, "",
			"the list opened here with '['"},
		{"unclosed map", "limits: {max_retries: 1\nmodel: x\n", 1, "", "the map opened here with '{' is not closed"},
		{"brackets in scalars and comments", "model: \"a [b\" # [c\ntitle_hint: it's [x\nagents: [{name: a, tools: ['[', x]},\n  {name: b\nprovider: y\n", 4, "",
			"the map opened here with '{'"},
		{"list at top", "- a\n", 1, "", "must be a mapping of settings"},
		{"two documents", "model: a\n---\nmodel: b\n", 3, "", "second YAML document"},
		{"alias without anchor", "model: *m\n", 1, "model", "no anchor &m"},
		{"self merge", "limits: &l\n  <<: *l\n", 2, "limits", "nest too deeply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("config.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("Parse(%q) succeeded, want an error", tt.src)
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if e.File != "config.yaml" || e.Line != tt.line || e.Key != tt.key {
				t.Errorf("error at %s:%d key %q, want config.yaml:%d key %q\n%v", e.File, e.Line, e.Key, tt.line, tt.key, err)
			}
			prefix := fmt.Sprintf("config.yaml:%d: ", tt.line)
			if tt.key != "" {
				prefix += tt.key + ": "
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, tt.msg) || strings.Contains(msg, "\n") {
				t.Errorf("error\n  %s\nwant one line starting %q and containing %q", msg, prefix, tt.msg)
			}
		})
	}
}

func TestKeysMayRepeatAcrossContexts(t *testing.T) {
	// A dialog's key may be a key of the main view: the main view does not
	// read keys while a dialog is open. Rebinding both sides of a default
	// pair is no clash either.
	for _, src := range []string{
		"ui:\n  keys:\n    yes: [b]\n",
		"ui:\n  keys:\n    toggle_target: [ctrl+b]\n    broadcast: [ctrl+b]\n",
		"ui:\n  keys:\n    dialog_skip: [tab]\n    use_remembered: [ctrl+r]\n",
		"ui:\n  keys:\n    quit: [b]\n    broadcast: [B]\n",
		"ui:\n  keys:\n    quit: [ctrl+alt+shift+q, f10, \"+\", ctrl++]\n",
	} {
		mustParse(t, src)
	}
}

func TestValidateRefusesClashingKeysSetInCode(t *testing.T) {
	c := Defaults()
	c.UI.Keys["quit"] = []string{"b"}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "ui.keys.quit: \"b\" is also the default key of broadcast") {
		t.Errorf("Validate() = %v", err)
	}
}

func TestDefaultKeysAreTheCallers(t *testing.T) {
	a := DefaultKeys()
	a["up"][0] = "changed"
	if b := DefaultKeys(); b["up"][0] != "up" || len(b) != len(KeyActions) {
		t.Errorf("DefaultKeys() = %v", b)
	}
}

func TestDialogKeysCanBeRebound(t *testing.T) {
	cfg := mustParse(t, "ui:\n  keys:\n    top: [t]\n    yes: [Y]\n")
	if !reflect.DeepEqual(cfg.UI.Keys, map[string][]string{"top": {"t"}, "yes": {"Y"}}) {
		t.Errorf("keys = %v", cfg.UI.Keys)
	}
}

func TestErrorNeverEchoesAnAPIKey(t *testing.T) {
	const secret = "sk-proj-abc123"
	_, err := Parse("config.yaml", []byte("providers:\n  openai:\n    api_key_env: "+secret+"\n"))
	if err == nil {
		t.Fatal("a key in api_key_env was accepted")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error repeats the key: %v", err)
	}
	if !strings.HasPrefix(err.Error(), "config.yaml:3: providers.openai.api_key_env: must name the environment variable") {
		t.Errorf("unexpected error: %v", err)
	}
}

// A byte order mark at the start (Notepad writes one) is allowed, as YAML
// allows it; a number with a leading zero, which YAML 1.1 reads as octal
// and 1.2 as decimal, is refused rather than read either way; a file of
// megabytes is refused before it is parsed.
func TestFileShapesThatSurprise(t *testing.T) {
	cfg, err := Parse("bom.yaml", []byte("\ufefflimits:\n  max_turns_per_session: 3\n"))
	if err != nil || cfg.Limits.MaxTurnsPerSession != 3 {
		t.Errorf("a file with a byte order mark: %v", err)
	}
	_, err = Parse("oct.yaml", []byte("limits:\n  max_turns_per_session: 010\n"))
	if err == nil || !strings.Contains(err.Error(), "oct.yaml:2: limits.max_turns_per_session: 010 starts with a 0") {
		t.Errorf("010: %v", err)
	}
	if cfg, err := Parse("zero.yaml", []byte("limits:\n  max_retries: 0\n")); err != nil || cfg.Limits.MaxRetries != 0 {
		t.Errorf("a plain 0: %v", err)
	}
	_, err = Parse("big.yaml", append([]byte("# "), bytes.Repeat([]byte("x"), maxFileBytes)...))
	if err == nil || !strings.Contains(err.Error(), "big.yaml: the file is") {
		t.Errorf("a file of a megabyte: %v", err)
	}
}

// A base URL that is refused is quoted without its secrets.
func TestBadURLErrorHidesItsSecrets(t *testing.T) {
	_, err := Parse("config.yaml", []byte("providers:\n  gw:\n    type: openai\n    base_url: ftp://me:pw-secret@gw/v1?token=q-secret\n    model: m\n"))
	if err == nil {
		t.Fatal("an ftp base_url was accepted")
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("error repeats a secret: %v", err)
	}
	if !strings.Contains(err.Error(), `"ftp://me:xxxxx@gw/v1?token=xxxxx" is not an http(s) URL`) {
		t.Errorf("unexpected error: %v", err)
	}
}

// A base_url in the file with a space is refused at its line, quoted as
// written.
func TestBaseURLWithASpace(t *testing.T) {
	_, err := Parse("config.yaml", []byte("providers:\n  gw:\n    type: openai\n    base_url: http://gw/v1?tag=a b\n    model: m\n"))
	if err == nil || !strings.Contains(err.Error(), `config.yaml:4: providers.gw.base_url: "http://gw/v1?tag=a b" has a space`) {
		t.Errorf("a base_url with a space: %v", err)
	}
}

func TestParseMergesOverDefaults(t *testing.T) {
	cfg := mustParse(t, `
model: gpt-4o
providers:
  openai:
    model: gpt-4.1     # only the model changes
  ollama:
    type: openai
    base_url: http://localhost:11434/v1
    model: llama3.1
limits:
  max_retries: 0
  call_timeout: 2m
coordination:
  enable_broadcasts:   # no value: keeps the default
ui:
  keys:
    quit: ctrl+q       # a single key reads as a list of one
    help: ["?", f1]
`)
	want := Defaults()
	want.Model = "gpt-4o"
	want.Providers["openai"].Model = "gpt-4.1"
	want.Providers["ollama"] = &Provider{Type: TypeOpenAI, BaseURL: "http://localhost:11434/v1", Model: "llama3.1"}
	want.Limits.MaxRetries = 0
	want.Limits.CallTimeout = Duration(2 * time.Minute)
	want.UI.Keys = map[string][]string{"quit": {"ctrl+q"}, "help": {"?", "f1"}}
	cfg.lines = nil // where the settings come from, not what they are
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got\n%s\nwant\n%s", asJSON(t, cfg), asJSON(t, want))
	}
}

func TestParseAgentsReplaceTheRoster(t *testing.T) {
	cfg := mustParse(t, `
agents:
  - &base
    role: orchestrator
    tools: [spawn, tasks]
    can_spawn: true
    model: gpt-4o
  - <<: *base
    role: writer
    prompt: executor
    can_spawn: false
    can_write: true
  - role: scout
    tools: context
`)
	want := []Agent{
		{Role: "orchestrator", Prompt: "orchestrator", Tools: []string{"spawn", "tasks"}, CanSpawn: true, Model: "gpt-4o"},
		{Role: "writer", Prompt: "executor", Tools: []string{"spawn", "tasks"}, Model: "gpt-4o", CanWrite: true},
		{Role: "scout", Prompt: "scout", Tools: []string{"context"}},
	}
	if !reflect.DeepEqual(cfg.Agents, want) {
		t.Errorf("agents = %+v\nwant %+v", cfg.Agents, want)
	}
}

func TestParseExpandsHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	// A bare ~ is YAML's null, so the home directory alone must be quoted.
	cfg := mustParse(t, "db: ~/data/s.db\nworkspace: \"~\"\nprompts_dir: ./p\n")
	if cfg.DB != filepath.Join(home, "data/s.db") || cfg.Workspace != home || cfg.PromptsDir != "./p" {
		t.Errorf("db %q workspace %q prompts_dir %q", cfg.DB, cfg.Workspace, cfg.PromptsDir)
	}
}

func TestDurationValues(t *testing.T) {
	for src, want := range map[string]time.Duration{
		"400ms": 400 * time.Millisecond, "2m": 2 * time.Minute, "1h": time.Hour, "1h30m": 90 * time.Minute, `"90s"`: 90 * time.Second,
	} {
		cfg := mustParse(t, "limits:\n  call_timeout: "+src+"\n")
		if got := cfg.Limits.CallTimeout.D(); got != want {
			t.Errorf("%s decoded to %v, want %v", src, got, want)
		}
	}
}

// Code that decodes a Duration with a general-purpose library gets the same
// rules as Parse, and encodes it readably.
func TestDurationWithOtherDecoders(t *testing.T) {
	var v struct {
		D Duration `yaml:"d" json:"d"`
	}
	if err := yaml.Unmarshal([]byte("d: 2m\n"), &v); err != nil || v.D.D() != 2*time.Minute {
		t.Errorf("yaml: %v, %v", v.D, err)
	}
	if err := yaml.Unmarshal([]byte("d: 30\n"), &v); err == nil || !strings.Contains(err.Error(), "no unit") {
		t.Errorf("yaml accepted a duration without unit: %v", err)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != `{"d":"2m0s"}` {
		t.Errorf("json: %s, %v", b, err)
	}
	if err := json.Unmarshal([]byte(`{"d":"fast"}`), &v); err == nil {
		t.Error("json accepted a bad duration")
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swarm.yaml")
	if err := os.WriteFile(path, []byte("provider: scripted\nlimits:\n  max_turn: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if err == nil || !strings.HasPrefix(err.Error(), path+":3: limits.max_turn: unknown key") {
		t.Errorf("Load error = %v", err)
	}

	if err := os.WriteFile(path, []byte("provider: scripted\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil || cfg.Path != path || cfg.Provider != "scripted" {
		t.Errorf("Load = %+v, %v", cfg, err)
	}

	missing := filepath.Join(dir, "nope.yaml")
	_, err = Load(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), missing+": ") {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestValidateWithoutFile(t *testing.T) {
	cfg := Defaults()
	cfg.Limits.MaxTurnsPerSession = 0
	err := cfg.Validate()
	if err == nil || err.Error() != "configuration: limits.max_turns_per_session: 0 is too small; the minimum is 1" {
		t.Errorf("Validate() = %v", err)
	}
}

func TestSuggest(t *testing.T) {
	candidates := []string{"max_turns_per_session", "max_sessions_per_run", "max_spawn_depth", "call_timeout"}
	for word, want := range map[string]string{
		"max_turn":           "max_turns_per_session",
		"maxSpawnDepth":      "max_spawn_depth",
		"call_timeot":        "call_timeout",
		"max":                "", // too many fit
		"session":            "", // two fit
		"max_sessions_per_r": "max_sessions_per_run",
		"zzz":                "",
	} {
		if got := Suggest(word, candidates); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", word, got, want)
		}
	}
	if got := Suggest("ui", []string{"up"}); got != "" {
		t.Errorf("two-letter word suggested %q", got)
	}
	if got := Suggest("spwan", ToolGroups); got != "spawn" {
		t.Errorf("Suggest(spwan) = %q", got)
	}
}

// A few lines of aliases or merge keys can describe a tree of billions of
// nodes; Parse must give up with a clear error instead of running away.
func TestParseBoundsAliasExpansion(t *testing.T) {
	var merges strings.Builder
	merges.WriteString("agents:\n  - &a0 {role: orchestrator, tools: [spawn]}\n")
	for i := 1; i < 40; i++ {
		fmt.Fprintf(&merges, "  - &a%d\n    <<: [*a%d, *a%d]\n", i, i-1, i-1)
	}
	var lists strings.Builder
	lists.WriteString("agents:\n  - role: orchestrator\n    tools: &t [" + strings.Repeat("tasks, ", 2000) + "tasks]\n")
	for i := range 2000 {
		fmt.Fprintf(&lists, "  - {role: r%d, tools: *t}\n", i)
	}
	for name, src := range map[string]string{"merge keys": merges.String(), "aliased lists": lists.String()} {
		_, err := Parse("config.yaml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), "too much data through aliases") {
			t.Errorf("%s: Parse = %v", name, err)
		}
	}
}

// Where names the line of a setting the file made, for errors found once
// the value is used; a flag's value has no line.
func TestWhereNamesTheLineOfASetting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte("provider: scripted\n\nworkspace: /w\nproviders:\n  scripted:\n    scenario: /s.yaml\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"workspace":                   path + ":3: workspace",
		"providers.scripted.scenario": path + ":6: providers.scripted.scenario",
		"db":                          "", // a default
	} {
		if got, ok := cfg.Where(key); got != want || ok != (want != "") {
			t.Errorf("Where(%q) = %q, %v; want %q", key, got, ok, want)
		}
	}
	flagged := *cfg
	if err := flagged.Apply(Overrides{Workspace: "/elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if where, ok := flagged.Where("workspace"); ok {
		t.Errorf("--workspace is said to be set at %s", where)
	}
	if _, ok := cfg.Where("workspace"); !ok {
		t.Error("a flag applied to a copy changed where the original's workspace is set")
	}
	if _, ok := Defaults().Where("workspace"); ok {
		t.Error("a default has a line")
	}
}
