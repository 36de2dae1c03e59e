package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/config"
)

// A reload refused for one setting changes none: a prompts_dir that cannot
// be read, in the same edit as a limit, leaves the limit and the prompts
// as they were, and the same edit is taken once the directory is there.
func TestReloadRefusedChangesNothing(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	dir := filepath.Join(t.TempDir(), "prompts")
	next := *e.Config()
	next.PromptsDir = dir
	next.Limits.MaxTurnsPerSession = 77
	if err := e.Reload(&next); err == nil || !strings.Contains(err.Error(), dir) {
		t.Fatalf("reload with a missing prompts_dir: %v", err)
	}
	if got := e.Config(); got.Limits.MaxTurnsPerSession == 77 || got.PromptsDir == dir {
		t.Fatalf("the refused reload took effect: max_turns %d, prompts_dir %q", got.Limits.MaxTurnsPerSession, got.PromptsDir)
	}
	// A role naming a template that is not there is refused as at start.
	bad := *e.Config()
	bad.Agents = append([]config.Agent(nil), bad.Agents...)
	bad.Agents[0].Prompt = "nosuchtemplate"
	bad.Limits.MaxTurnsPerSession = 78
	if err := e.Reload(&bad); err == nil || !strings.Contains(err.Error(), `names prompt "nosuchtemplate"`) {
		t.Fatalf("reload with an unknown prompt: %v", err)
	}
	if e.Config().Limits.MaxTurnsPerSession == 78 {
		t.Fatal("the refused reload took effect")
	}
	// Once the directory is there, the edit is taken.
	os.MkdirAll(dir, 0o755)
	if err := e.Reload(&next); err != nil {
		t.Fatal(err)
	}
	if got := e.Config(); got.Limits.MaxTurnsPerSession != 77 || got.PromptsDir != dir {
		t.Fatalf("the reload did not take: max_turns %d, prompts_dir %q", got.Limits.MaxTurnsPerSession, got.PromptsDir)
	}
}

// A role of the configuration's own without a template of its name renders
// the fallback template: it is not refused at start, as a prompt naming a
// template that is not there is.
func TestCustomRoleWithoutATemplate(t *testing.T) {
	e := testEngine(t, nil, nil, func(c *config.Config) {
		c.Agents = append(c.Agents, config.Agent{Role: "scribe", Prompt: "scribe", Tools: []string{"context"}})
	})
	if _, ok := e.roster.Load().Get("scribe"); !ok {
		t.Fatal("the role is not in the roster")
	}
}
