package prompts

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"unicode/utf8"
)

//go:embed templates/*.md
var embedded embed.FS

// embeddedDir is how embedded files are named in error messages: their path
// in the repository, so a reader knows where to look.
const embeddedDir = "prompts/templates"

// Names of the templates with a fixed job. Every other template whose name
// does not start with "_" is a role prompt rendered by System.
const (
	fallbackTemplate = "agent"
	shadowTemplate   = "shadow"
	reminderTemplate = "reminder"
)

// isRoleName reports whether a template name is a role prompt rather than a
// partial ("_spawn") or one of the templates with their own data type.
func isRoleName(name string) bool {
	return name != "" && !strings.HasPrefix(name, "_") && name != shadowTemplate && name != reminderTemplate
}

// source is the text of one template file.
type source struct {
	file     string // shown in errors: the override's path, or the embedded path
	text     string
	override bool
}

// templateSet is one parsed, validated generation of the templates. It is
// never modified after compile returns, so sessions render it without locks.
type templateSet struct {
	tmpl      *template.Template
	files     map[string]string // template name -> file, for error messages
	names     []string          // sorted template names
	overrides []string          // sorted names taken from the override directory

	opaque  bool        // system prompts may be cached (see opaque)
	prompts promptCache // system prompts rendered with stand-ins
}

// TemplateError is a template that failed to parse, to execute, or to keep
// the marker lines other components depend on. File is the override path (or
// the embedded path); Line is 0 when the problem has no single line.
type TemplateError struct {
	File string
	Line int
	Msg  string
	Err  error // the text/template error, if any
}

func (e *TemplateError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

func (e *TemplateError) Unwrap() error { return e.Err }

// readSources returns the embedded templates with the *.md files of dir
// (if any) laid over them, and a digest of the overrides so that a watcher
// can tell a real change from editor noise.
func readSources(dir string) (map[string]source, [sha256.Size]byte, error) {
	srcs := map[string]source{}
	entries, err := fs.ReadDir(embedded, "templates")
	if err != nil {
		return nil, [sha256.Size]byte{}, fmt.Errorf("prompts: read embedded templates: %w", err)
	}
	for _, e := range entries {
		text, err := fs.ReadFile(embedded, path.Join("templates", e.Name()))
		if err != nil {
			return nil, [sha256.Size]byte{}, fmt.Errorf("prompts: read embedded template %s: %w", e.Name(), err)
		}
		srcs[strings.TrimSuffix(e.Name(), ".md")] = source{file: path.Join(embeddedDir, e.Name()), text: string(text)}
	}

	h := sha256.New()
	fmt.Fprintf(h, "%s\x00", dir)
	if dir == "" {
		return srcs, [sha256.Size]byte(h.Sum(nil)), nil
	}
	entries2, err := os.ReadDir(dir)
	if err != nil {
		return nil, [sha256.Size]byte{}, fmt.Errorf("prompts: read prompts directory: %w (check prompts_dir in the configuration)", err)
	}
	for _, e := range entries2 { // sorted by name, so the digest is stable
		name := e.Name()
		// Hidden files are editor locks and backups, not templates.
		if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") {
			continue
		}
		file := filepath.Join(dir, name)
		info, err := os.Stat(file) // follows symlinks: a linked template is fine
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		text, err := os.ReadFile(file)
		if err != nil {
			return nil, [sha256.Size]byte{}, fmt.Errorf("prompts: read override: %w", err)
		}
		// Some editors on Windows start a UTF-8 file with a byte order
		// mark, which would come before "You are the ROLE agent".
		text = bytes.TrimPrefix(text, []byte("\ufeff"))
		if !utf8.Valid(text) {
			for i, line := range bytes.Split(text, []byte("\n")) {
				if !utf8.Valid(line) {
					return nil, [sha256.Size]byte{}, &TemplateError{File: file, Line: i + 1, Msg: "not UTF-8 text (saved in another encoding?): save the template as UTF-8"}
				}
			}
		}
		tmpl := strings.TrimSuffix(name, ".md")
		if _, builtIn := srcs[tmpl]; !builtIn && !bytes.Contains(text, []byte("{{")) && !bytes.HasPrefix(text, []byte("You are ")) {
			// Not a template: a role's prompt starts "You are the ROLE
			// agent" and needs at least its task id ({{.SessionID}}). A
			// README or notes kept beside the templates are left alone;
			// a role's prompt that lacks the task id still gets the
			// error that says so.
			continue
		}
		srcs[tmpl] = source{file: file, text: string(text), override: true}
		fmt.Fprintf(h, "%s\x00%d\x00%s", name, len(text), text)
	}
	return srcs, [sha256.Size]byte(h.Sum(nil)), nil
}

// compile parses every source into one template set, so that any template
// may include any other, and validates the result by rendering sample data:
// text/template reports a missing field or an undefined template only when
// executing, and a broken override must be refused when loaded, not when a
// session starts. The built-in templates alone are not rendered: they are
// the same in every process and TestBuiltInTemplatesValidate renders them,
// and rendering them all cost every start-up nearly 2 ms.
func compile(srcs map[string]source) (*templateSet, error) {
	s := &templateSet{tmpl: template.New("swarmdeck"), files: map[string]string{}}
	for name, src := range srcs {
		s.names = append(s.names, name)
		s.files[name] = src.file
		if src.override {
			s.overrides = append(s.overrides, name)
		}
	}
	slices.Sort(s.names)
	slices.Sort(s.overrides)

	for _, name := range s.names {
		if _, err := s.tmpl.New(name).Parse(srcs[name].text); err != nil {
			return nil, s.wrap(err, name)
		}
	}
	if len(s.overrides) > 0 {
		if err := s.validateAll(); err != nil {
			return nil, err
		}
	}
	s.opaque = opaque(s.tmpl)
	return s, nil
}

// validateAll renders every template: an override may break a built-in
// template that includes it.
func (s *templateSet) validateAll() error {
	for _, name := range s.names {
		if err := s.validate(name); err != nil {
			return err
		}
	}
	return nil
}

// validate renders one template with the sample data of its kind.
func (s *templateSet) validate(name string) error {
	switch {
	case name == shadowTemplate:
		d := ShadowData{Agent: "researcher (r-1)", AskedBy: "orchestrator (s-0000)", Question: "Which one?", Options: []string{"a: this", "b: that"}, MultiSelect: true}
		out, err := s.render(name, d)
		if err != nil {
			return err
		}
		if first := firstLine(out); first != ShadowFirstLine(d.Agent) {
			return &TemplateError{File: s.files[name], Msg: fmt.Sprintf("the first line must be %q, got %q", ShadowFirstLine(d.Agent), first)}
		}
	case name == reminderTemplate:
		d := ReminderData{Blocked: []string{"b (waiting on a)"}, Ready: []string{"x: one", "y: two"}, Groups: allGroups()}
		out, err := s.render(name, d)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(out, "<reminder>") || !strings.HasSuffix(out, "</reminder>") {
			return &TemplateError{File: s.files[name], Msg: "a reminder must start with <reminder> and end with </reminder>"}
		}
	default:
		for _, d := range sampleData(name) {
			out, err := s.render(name, d)
			if err != nil {
				return err
			}
			if !isRoleName(name) {
				continue
			}
			if err := checkMarkers(out, d); err != nil {
				return &TemplateError{File: s.files[name], Msg: err.Error()}
			}
		}
	}
	return nil
}

// render executes one template and tidies the output.
func (s *templateSet) render(name string, data any) (string, error) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return "", s.wrap(err, name)
	}
	return tidy(b.String()), nil
}

// tmplErrRE splits text/template's "template: NAME:LINE[:COL]: MESSAGE".
var tmplErrRE = regexp.MustCompile(`(?s)^template: ([^:]+):(\d+):(?:\d+:)? ?(.*)$`)

// wrap turns a text/template error into a TemplateError naming the file the
// failing template came from (which may be a template included by name).
func (s *templateSet) wrap(err error, name string) error {
	te := &TemplateError{File: s.files[name], Msg: err.Error(), Err: err}
	if m := tmplErrRE.FindStringSubmatch(err.Error()); m != nil {
		if file, ok := s.files[m[1]]; ok {
			te.File = file
		}
		te.Line, _ = strconv.Atoi(m[2])
		te.Msg = m[3]
	}
	return te
}

// tidy collapses the runs of blank lines that disabled sections leave behind
// and trims the ends, so templates can stay readable instead of fighting
// whitespace. Non-blank lines are kept byte for byte (the shared context
// block must arrive verbatim).
func tidy(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := true // drops leading blank lines too
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if !blank {
				out = append(out, "")
			}
			blank = true
			continue
		}
		out = append(out, l)
		blank = false
	}
	return strings.TrimRight(strings.Join(out, "\n"), "\n")
}

// FirstLine is the exact first line of every system prompt; the scripted
// model and other components recognise a session's role from it.
func FirstLine(role string) string {
	return "You are the " + role + " agent of a swarmdeck swarm."
}

// DelegatedLine is present exactly when the session is a sub-orchestrator
// started by delegate_task.
const DelegatedLine = "You are a sub-orchestrator working on a delegated task."

// ShadowFirstLine is the exact first line of a shadow responder prompt.
func ShadowFirstLine(agent string) string {
	return "You are answering a question on behalf of " + agent + ", another agent of a swarmdeck swarm."
}

// checkMarkers enforces the lines of a system prompt that other components
// parse, so that an override cannot silently break them.
func checkMarkers(out string, d Data) error {
	var missing []string
	if first := firstLine(out); first != FirstLine(d.Role) {
		return fmt.Errorf("the first line must be %q, got %q: start the file with {{template \"_header\" .}}, which writes it and the lines swarmdeck reads", FirstLine(d.Role), first)
	}
	if d.Delegated && !hasLine(out, DelegatedLine) {
		missing = append(missing, DelegatedLine)
	}
	if !hasLine(out, "Your task id: "+d.SessionID) {
		missing = append(missing, "Your task id: "+d.SessionID)
	}
	if d.Label != "" && !hasLine(out, "Your label: "+d.Label) {
		missing = append(missing, "Your label: "+d.Label)
	}
	if sc := strings.TrimSpace(d.SharedContext); sc != "" && !strings.Contains(out, sc) {
		missing = append(missing, "the shared context block, verbatim")
	}
	if len(missing) > 0 {
		return errors.New("the prompt lacks the required line(s): " + strings.Join(quoteAll(missing), ", ") +
			`; {{template "_header" .}} writes the identity lines, and {{template "_shared_context" .}} (or {{template "_protocols" .}}, which holds it) the shared context`)
	}
	return nil
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}

func hasLine(s, line string) bool {
	for i := 0; ; {
		j := strings.Index(s[i:], line)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(line)
		if (j == 0 || s[j-1] == '\n') && (end == len(s) || s[end] == '\n') {
			return true
		}
		i = j + 1
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

func allGroups() map[string]bool {
	return map[string]bool{
		"spawn": true, "tasks": true, "broadcasts": true, "planning": true,
		"delegation": true, "questions": true, "context": true, "workspace": true,
	}
}

// sampleData covers the shapes a session can take: a root with everything,
// a labelled child with shared context (delegated when the template is the
// orchestrator's), and a bare leaf with no tools.
func sampleData(role string) []Data {
	roster := []RosterEntry{{Role: "researcher", Description: "finds things out"}, {Role: "executor"}}
	return []Data{
		{
			Role: role, Template: role, Description: "sample", SessionID: "s-0000", Goal: "sample goal",
			IsRoot: true, CanSpawn: true, CanWrite: true, Groups: allGroups(), Roster: roster,
			Workspace: "/tmp/ws", MaxSpawnDepth: 3, MaxDelegationDepth: 1,
		},
		{
			Role: role, Template: role, SessionID: "s-0001", Label: "sample-1", Depth: 1, Goal: "sample goal",
			Delegated: role == "orchestrator", HasParent: true, CanSpawn: true, Groups: allGroups(), Roster: roster,
			SharedContext: "[Shared Context]:\n- projectGoal: \"sample\"\n- constraints: [\"a\",\"b\"]",
			MaxSpawnDepth: 3, MaxDelegationDepth: 2,
		},
		{Role: role, Template: role, SessionID: "s-0002", Depth: 2, HasParent: true},
		{
			Role: role, Template: role, SessionID: "s-0003", Depth: 1, Goal: "sample goal", Delegated: true, HasParent: true,
			CanSpawn: true, Groups: allGroups(), Roster: roster, MaxSpawnDepth: 3, MaxDelegationDepth: 1, DelegationDepth: 1,
		},
	}
}
