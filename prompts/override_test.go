package prompts

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const customResearcher = `{{template "_header" .}}

Custom researcher guidance.

{{template "_protocols" .}}
`

func TestOverrideReplacesEmbedded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "researcher.md", customResearcher)
	// A partial override reaches every role that includes it.
	writeFile(t, dir, "_planning.md", `{{if .Has "planning"}}## Plan
Plan with care.{{end}}`)
	// A new file is a new role, in the same set as the embedded partials.
	writeFile(t, dir, "designer.md", "{{template \"_header\" .}}\nDesign things.\n{{template \"_shared_context\" .}}\n{{template \"_closing\" .}}\n")
	// An empty partial removes its section.
	writeFile(t, dir, "_questions.md", "")
	// Not templates: ignored.
	writeFile(t, dir, "notes.txt", "{{broken")
	writeFile(t, dir, ".#researcher.md", "{{broken")
	// Markdown that is no template (no {{ and not a prompt's first line),
	// such as a README beside the overrides: ignored too.
	writeFile(t, dir, "README.md", "# My prompt overrides\nresearcher.md makes it terser.\n")

	// A byte order mark, which some editors write, is no part of it.
	writeFile(t, dir, "explorer.md", "\ufeff"+customResearcher)

	l := newLibrary(t, dir)
	if out := render(t, l, childData("researcher", everyGroup...)); !strings.Contains(out, "Custom researcher guidance.") || strings.Contains(out, "Find and weigh") {
		t.Errorf("researcher override not used:\n%s", out)
	}
	if out := render(t, l, childData("executor", everyGroup...)); strings.Contains(out, "Custom researcher") || !strings.Contains(out, "Make the change") {
		t.Errorf("executor changed by a researcher override:\n%s", out)
	}
	out := render(t, l, rootData())
	if !strings.Contains(out, "Plan with care.") || strings.Contains(out, "create_task_plan") {
		t.Errorf("_planning override not used:\n%s", out)
	}
	if strings.Contains(out, "ask_others") {
		t.Error("an empty _questions.md did not remove the section")
	}
	d := childData("designer", "workspace")
	if out := render(t, l, d); !strings.Contains(out, "Design things.") {
		t.Errorf("new role template not used:\n%s", out)
	}
	if names := l.Names(); !slices.Contains(names, "designer") || slices.Contains(names, "notes") || slices.Contains(names, "README") {
		t.Errorf("Names() = %v", names)
	}
}

func TestBrokenOverrideRejected(t *testing.T) {
	cases := []struct {
		name, file, text string
		line             int
		msg              string
	}{
		{"parse error", "researcher.md", "{{template \"_header\" .}}\n\n{{if .Role}\n", 3, "bad character"},
		{"unknown field", "researcher.md", "{{template \"_header\" .}}\n{{.NoSuchField}}\n", 2, "NoSuchField"},
		{"undefined template", "planner.md", "{{template \"_header\" .}}\n{{template \"_nope\" .}}\n", 2, "_nope"},
		{"broken partial", "_spawn.md", "{{if .Has \"spawn\"}}\nSpawn things: {{.Spawnz}}\n{{end}}", 2, "Spawnz"},
		{"first line changed", "orchestrator.md", "Hello.\n{{template \"_protocols\" .}}", 0, `got "Hello.": start the file with {{template "_header" .}}`},
		{"task id line dropped", "explorer.md", "You are the {{.Role}} agent of a swarmdeck swarm.\n", 0, "Your task id:"},
		{"shared context dropped", "executor.md", "{{template \"_header\" .}}\nJust do it.\n", 0, `"the shared context block, verbatim"; {{template "_header" .}} writes the identity lines, and {{template "_shared_context" .}}`},
		{"shadow first line", "shadow.md", "Answer for {{.Agent}}.", 0, "first line"},
		{"reminder without tags", "reminder.md", "{{range .Blocked}}{{.}}{{end}}", 0, "<reminder>"},
		// A new role's prompt with no template in it at all still says
		// what it lacks.
		{"not UTF-8", "researcher.md", "{{template \"_header\" .}}\nCaf\xe9 cr\xe8me.\n{{template \"_protocols\" .}}\n", 2, "not UTF-8 text"},
		{"new role without its task id", "designer.md", "You are the designer agent of a swarmdeck swarm.\nDesign.\n", 0, "Your task id:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeFile(t, dir, c.file, c.text)
			_, err := New(dir, nil)
			if err == nil {
				t.Fatal("broken override accepted")
			}
			var te *TemplateError
			if !errors.As(err, &te) {
				t.Fatalf("error %v is not a *TemplateError", err)
			}
			if te.File != path || te.Line != c.line {
				t.Errorf("error at %s:%d, want %s:%d (%v)", te.File, te.Line, path, c.line, err)
			}
			if !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), path) {
				t.Errorf("error %q should start with the file and mention %q", err, c.msg)
			}
		})
	}
}

func TestMissingOverrideDir(t *testing.T) {
	if _, err := New(filepath.Join(t.TempDir(), "nope"), nil); err == nil || !strings.Contains(err.Error(), "prompts_dir") {
		t.Errorf("missing directory: err = %v", err)
	}
}

func TestSetDir(t *testing.T) {
	good, bad := t.TempDir(), t.TempDir()
	writeFile(t, good, "researcher.md", customResearcher)
	writeFile(t, bad, "researcher.md", "{{if}")
	d := childData("researcher", "workspace")

	l := newLibrary(t, "")
	if err := l.SetDir(good); err != nil {
		t.Fatal(err)
	}
	if out := render(t, l, d); !strings.Contains(out, "Custom researcher guidance.") {
		t.Fatal("SetDir did not apply the override")
	}
	err := l.SetDir(bad)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(bad, "researcher.md")+":1:") {
		t.Fatalf("SetDir(broken) err = %v", err)
	}
	if out := render(t, l, d); !strings.Contains(out, "Custom researcher guidance.") {
		t.Error("a refused SetDir replaced the templates")
	}
	if err := l.SetDir(""); err != nil {
		t.Fatal(err)
	}
	if out := render(t, l, d); strings.Contains(out, "Custom researcher") {
		t.Error("SetDir(\"\") kept the override")
	}
}

// The built-in templates are not rendered when they load (see compile):
// this renders them with the sample data an override would get.
func TestBuiltInTemplatesValidate(t *testing.T) {
	srcs, _, err := readSources("")
	if err != nil {
		t.Fatal(err)
	}
	s, err := compile(srcs)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.overrides) != 0 || len(s.names) == 0 {
		t.Fatalf("built-in set: %d templates, overrides %v", len(s.names), s.overrides)
	}
	if err := s.validateAll(); err != nil {
		t.Fatal(err)
	}
}

// An override that leaves itself valid but breaks a built-in template that
// includes it is refused too.
func TestOverrideBreakingABuiltInIsRejected(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "_protocols.md", "{{.NoSuchField}}")
	_, err := New(dir, nil)
	var te *TemplateError
	if !errors.As(err, &te) {
		t.Fatalf("New = %v, want a TemplateError", err)
	}
}
