package prompts

import (
	"strings"
	"testing"
	"text/template"
)

// direct renders d without the cache, as System did before it had one.
func direct(t *testing.T, l *Library, d Data) string {
	t.Helper()
	s := l.cur.Load()
	out, err := s.render(l.roleTemplate(s, d), d)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The embedded templates qualify for the cache, and every prompt taken
// from it is the prompt a full rendering gives, byte for byte.
func TestCachedPromptsEqualFullRenderings(t *testing.T) {
	l := newLibrary(t, "")
	if !l.cur.Load().opaque {
		t.Fatal("the embedded templates do not qualify for the prompt cache")
	}
	var cases []Data
	for _, role := range roles {
		for _, d := range []Data{rootData(), childData(role, everyGroup...), childData(role, "tasks"), delegatedData()} {
			d.Role = role
			cases = append(cases, d)
		}
	}
	ids := []string{"s-7c21", "s-0000", "s-ffffffff", "$1", `\n`, "${label}"}
	labels := []string{"", "research", "ux & copy", "100%", "$0 %v {{.Label}}", "über-label", "a", "Your task id: x"}
	for _, d := range cases {
		for i, id := range ids {
			d.SessionID, d.Label = id, labels[i%len(labels)]
			for _, label := range []string{d.Label, labels[(i+3)%len(labels)]} {
				d.Label = label
				if got, want := render(t, l, d), direct(t, l, d); got != want {
					t.Fatalf("%s id %q label %q: cached prompt differs\n--- cached\n%s\n--- rendered\n%s", d.Role, id, label, got, want)
				}
			}
		}
	}
	if n := len(l.cur.Load().prompts.m); n == 0 || n > len(cases)*2 {
		t.Fatalf("%d renderings cached for %d shapes", n, len(cases))
	}
}

// Values a stand-in could not stand for are rendered in full.
func TestUnusualValuesBypassTheCache(t *testing.T) {
	l := newLibrary(t, "")
	for _, label := range []string{" padded ", "two\nlines", "tab\there", "nul\x00"} {
		d := childData("researcher", everyGroup...)
		d.Label = label
		before := len(l.cur.Load().prompts.m)
		if got, err := l.System(d); err == nil && got != direct(t, l, d) {
			t.Errorf("label %q: got a different prompt", label)
		}
		if after := len(l.cur.Load().prompts.m); after != before {
			t.Errorf("label %q was rendered with stand-ins", label)
		}
	}
}

// Templates that do more with the id or the label than print or test them
// turn the cache off, and their prompts stay right.
func TestOpaqueTemplates(t *testing.T) {
	for _, tc := range []struct {
		body string
		ok   bool
	}{
		{`Your task id: {{.SessionID}}`, true},
		{`{{with .Label}}Your label: {{.}}{{end}}`, true},
		{`{{if .Label}}labelled {{.Label}}{{else}}none{{end}}`, true},
		{`{{range .Roster}}{{.Role}} {{.}}{{end}}{{with .Goal}}{{.}}{{end}}`, true},
		{`{{template "part" .}}`, true},
		{`{{if eq .Label "x"}}x{{end}}`, false},
		{`{{printf "%q" .Label}}`, false},
		{`{{.Label | len}}`, false},
		{`{{$.Label}}`, false},
		{`{{$l := .Label}}{{$l}}`, false},
		{`{{with .Label}}{{printf "%q" .}}{{end}}`, false},
		{`{{with .Label}}{{template "part" .}}{{end}}`, false},
		{`{{template "part" .SessionID}}`, false},
		{`{{printf "%v" .}}`, false},
		{`{{.}}`, false},
		{`{{if .}}x{{end}}`, false},
		{`{{range .Roster}}{{$.Label}}{{end}}`, false},
		{`{{with .Goal}}{{len $.SessionID}}{{end}}`, false},
		{`{{(.Label)}}`, false},
	} {
		tmpl := template.Must(template.New("role").Parse(tc.body))
		template.Must(tmpl.New("part").Parse(`part`))
		if got := opaque(tmpl); got != tc.ok {
			t.Errorf("opaque(%s) = %v, want %v", tc.body, got, tc.ok)
		}
	}
}

// An override that compares the label is rendered in full, label by label.
func TestNonOpaqueOverrideRendersEachPrompt(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "researcher.md", `{{template "_header" .}}
{{if eq .Label "lead"}}You lead the others.{{else}}You follow the lead.{{end}}
{{template "_shared_context" .}}
`)
	l := newLibrary(t, dir)
	if l.cur.Load().opaque {
		t.Fatal("a template comparing the label qualified for the cache")
	}
	d := childData("researcher", everyGroup...)
	for label, want := range map[string]string{"lead": "You lead the others.", "second": "You follow the lead."} {
		d.Label = label
		if out := render(t, l, d); !strings.Contains(out, want) {
			t.Errorf("label %q: prompt lacks %q:\n%s", label, want, out)
		}
	}
}

// FuzzPromptCache: whatever the task id and label, System gives what a full
// rendering gives.
func FuzzPromptCache(f *testing.F) {
	f.Add("s-7c21", "research")
	f.Add("s-0000", "")
	f.Add("$1", "%v")
	f.Add("s-1", " x ")
	l, err := New("", nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, id, label string) {
		d := childData("researcher", everyGroup...)
		d.SessionID, d.Label = id, label
		s := l.cur.Load()
		want, werr := s.render(l.roleTemplate(s, d), d)
		if werr == nil {
			werr = checkMarkers(want, d)
		}
		got, err := l.System(d)
		if (err == nil) != (werr == nil) || (err == nil && got != want) {
			t.Fatalf("id %q label %q: System = %q, %v; full rendering = %q, %v", id, label, got, err, want, werr)
		}
	})
}
