package agents

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

func testWorkspace(t *testing.T) (*Workspace, string, string) {
	t.Helper()
	base := t.TempDir()
	dir := filepath.Join(base, "ws")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(dir, "src", "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644)
	os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret\n"), 0o644)
	// A link that leaves the workspace, one that stays inside, and a
	// directory link out.
	os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape.txt"))
	os.Symlink("src/main.go", filepath.Join(dir, "inside.go"))
	os.Symlink(outside, filepath.Join(dir, "outdir"))
	w, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w, dir, outside
}

func TestWorkspaceConfinement(t *testing.T) {
	w, _, outside := testWorkspace(t)
	refused := []struct{ path, want string }{
		{"../outside/secret.txt", `contains ".."`},
		{"src/../../outside/secret.txt", `contains ".."`},
		{"/etc/passwd", "is absolute"},
		{filepath.Join(outside, "secret.txt"), "is absolute"},
		{"escape.txt", "outside the workspace"},
		{"outdir/secret.txt", "outside the workspace"},
		{strings.Repeat("a/", 600) + "x", "the limit is 1024"},
		{"a\x00b", "NUL"},
	}
	for _, tt := range refused {
		_, err := w.Read(tt.path, 0, 0)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%.40q) error = %v, want %q", tt.path, err, tt.want)
		}
		if _, err := w.Write(tt.path, []byte("x")); err == nil {
			t.Errorf("Write(%.40q) was allowed", tt.path)
		}
	}
	if _, err := w.List("outdir", false, 0); err == nil {
		t.Errorf("listing a directory link out of the workspace was allowed")
	}
	// Writing through a link that points out must not touch the target.
	w.Write("escape.txt", []byte("overwritten"))
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "top secret\n" {
		t.Fatalf("a write escaped the workspace: %q", b)
	}
	// A link that stays inside works.
	fc, err := w.Read("inside.go", 0, 0)
	if err != nil || !strings.Contains(fc.Content, "package main") {
		t.Errorf("Read(inside.go) = %v, %v", fc, err)
	}
}

// A path the model gives names one file, read as it is: no white space
// trimmed off to reach another file, no characters that make a name read
// as something else.
func TestWorkspacePathsSayWhatTheyName(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("original\n"), 0o644)
	for _, tt := range []struct{ path, want string }{
		{"a.txt ", "begins or ends with white space"},
		{"a.txt\n", "begins or ends with white space"},
		{" a.txt", "begins or ends with white space"},
		{"nl\nname.txt", "control character (U+000A)"},
		{"evil\x1b[31m.txt", "control character (U+001B)"},
		{"c1\u009b.txt", "control character (U+009B)"},
		{"new\u202edir/x.txt", "bidirectional control character (U+202E)"},
		{"iso\u2066x.txt", "bidirectional control character (U+2066)"},
		{"con\u200bfig.yaml", "invisible format character (U+200B)"},
		{"con\u200dfig.yaml", "invisible format character (U+200D)"},
		{"\u200d\U0001F4BB.txt", "invisible format character (U+200D)"},
		{"\U0001F469\u200d.txt", "invisible format character (U+200D)"},
		{"\U0001F469\u200d\u200d\U0001F4BB.txt", "invisible format character (U+200D)"},
		{"caf\u00e9\u200cx.md", "invisible format character (U+200C)"},
		{"\u65e5\u200d\u672c.txt", "invisible format character (U+200D)"},
		{"\u043f\u0440\u0438\u200c\u0432\u0435\u0442.md", "invisible format character (U+200C)"},
		{"\U0001F469\u200c\U0001F4BB.txt", "invisible format character (U+200C)"},
		{"word\u2060joiner.txt", "invisible format character (U+2060)"},
		{"\ufeffbom.txt", "invisible format character (U+FEFF)"},
		{"soft\u00adhyphen.md", "invisible format character (U+00AD)"},
		{"tag\U000E0041.txt", "invisible format character (U+E0041)"},
		{"bad\xffname", "not valid UTF-8"},
	} {
		if _, err := w.Write(tt.path, []byte("x")); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Write(%q) error = %v, want %q", tt.path, err, tt.want)
		}
		if _, err := w.Read(tt.path, 0, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%q) error = %v, want %q", tt.path, err, tt.want)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(b) != "original\n" {
		t.Errorf("a.txt was overwritten: %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if checkNameChars(e.Name()) != nil {
			t.Errorf("a file named %q was created", e.Name())
		}
	}
	// Names with spaces inside, and letters of any script, are fine.
	// The joiners where they join: an emoji of several, a Persian word.
	for _, ok := range []string{"my notes.md", "日本語/ノート.txt", "café.md", "", "\U0001F469\u200d\U0001F4BB notes.md", "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645.txt",
		"\u2764\ufe0f\u200d\U0001F525.md", "\U0001F44B\U0001F3FD\u200d\u2640.md", "\u0915\u094d\u200d\u0937.txt"} {
		if _, err := w.Clean(ok); err != nil {
			t.Errorf("Clean(%q) = %v", ok, err)
		}
	}
}

// A symbolic link that names a file inside the workspace by its absolute
// path is refused (only relative links are followed), and the refusal says
// that, and which path to use, not that the file is outside.
func TestAbsoluteLinkInsideTheWorkspace(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.Symlink(filepath.Join(dir, "src", "main.go"), filepath.Join(dir, "abs.go"))
	os.Symlink(filepath.Join(dir, "src"), filepath.Join(dir, "absdir"))
	for _, tt := range []struct{ path, want string }{
		{"abs.go", "abs.go goes through abs.go, a symbolic link that names its target by an absolute path, which the file tools do not follow; it points to src/main.go in the workspace"},
		{"absdir/main.go", "it points to src/main.go in the workspace"},
		{"escape.txt", "leads outside the workspace"},
	} {
		if _, err := w.Read(tt.path, 0, 0); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%s) error = %v, want %q", tt.path, err, tt.want)
		}
	}
}

func TestWorkspaceTools(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	if _, err := w.Write("notes/plan.md", []byte("one\ntwo\nthree\n")); err != nil {
		t.Fatal(err)
	}
	fc, err := w.Read("notes/plan.md", 2, 1)
	if err != nil || fc.Content != "two\n" || fc.TotalLines != 3 || !fc.Truncated {
		t.Errorf("Read window = %+v, %v", fc, err)
	}
	list, err := w.List(".", true, 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list.Entries {
		names = append(names, e.Name)
	}
	if !strings.Contains(strings.Join(names, ","), "notes/plan.md") {
		t.Errorf("recursive listing = %v", names)
	}
	sr, err := w.Search("TWO", "", "*.md", 0)
	if err != nil || len(sr.Matches) != 1 || sr.Matches[0].Line != 2 {
		t.Errorf("Search = %+v, %v", sr, err)
	}
	// A long matching line is cut at a character, never inside one.
	os.WriteFile(filepath.Join(dir, "long.txt"), []byte("needle "+strings.Repeat("語", 300)+"\n"), 0o644)
	sr, err = w.Search("needle", "", "long.txt", 0)
	if want := "needle " + strings.Repeat("語", matchShown-7) + "…"; err != nil || len(sr.Matches) != 1 || sr.Matches[0].Text != want {
		t.Errorf("Search of a long line = %+v, %v; want the text %q", sr, err, want)
	}
	path, content, n, err := w.PlanEdit("notes/plan.md", "two", "2", false)
	if err != nil || n != 1 || string(content) != "one\n2\nthree\n" || path != "notes/plan.md" {
		t.Errorf("PlanEdit = %q %q %d %v", path, content, n, err)
	}
	if _, _, _, err := w.PlanEdit("notes/plan.md", "missing", "x", false); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("edit of missing text: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "dup.txt"), []byte("a a"), 0o644)
	if _, _, _, err := w.PlanEdit("dup.txt", "a", "b", false); err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Errorf("ambiguous edit: %v", err)
	}
	if _, err := w.Read("bin", 0, 0); err == nil {
		t.Errorf("reading a missing file worked")
	}
	os.WriteFile(filepath.Join(dir, "blob"), []byte{0, 1, 2, '\n'}, 0o644)
	if _, err := w.Read("blob", 0, 0); err == nil || !strings.Contains(err.Error(), "not a text file") {
		t.Errorf("binary read: %v", err)
	}
}

// A read bounded by what the runtime keeps of a result returns whole
// lines that fit, encoded, counts them right, and says where to go on.
func TestReadWithinABudget(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "line %04d: \"quoted\" and a tab\there\n", i)
	}
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(b.String()), 0o644)
	const budget = 4000
	fc, err := w.ReadWithin("big.txt", 1, 0, budget)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(fc.Content)
	if len(enc)-2 > budget || !fc.Truncated || fc.TotalLines != 2000 {
		t.Fatalf("content of %d encoded characters (budget %d), truncated %v, total %d", len(enc)-2, budget, fc.Truncated, fc.TotalLines)
	}
	if got := strings.Count(fc.Content, "\n"); got != fc.Lines || fc.NextOffset != fc.Lines+1 {
		t.Errorf("%d lines in the content, %d said, next offset %d", got, fc.Lines, fc.NextOffset)
	}
	next, err := w.ReadWithin("big.txt", fc.NextOffset, 0, budget)
	if err != nil || !strings.HasPrefix(next.Content, fmt.Sprintf("line %04d:", fc.NextOffset)) || next.StartLine != fc.NextOffset {
		t.Errorf("reading on from %d: %v, starts %q", fc.NextOffset, err, next.Content[:20])
	}
	// Unbounded, the whole file fits and nothing says to go on.
	if all, err := w.Read("big.txt", 0, 0); err != nil || all.Truncated || all.NextOffset != 0 || all.Lines != 2000 {
		t.Errorf("an unbounded read: %v, truncated %v, next %d, lines %d", err, all.Truncated, all.NextOffset, all.Lines)
	}
}

// A line longer than the budget alone is shown cut, and reading goes on
// after it: sent on whole, it could never be read.
func TestReadALineLongerThanTheBudget(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	long := strings.Repeat(`{"k":"v\"é"},`, 400) // 5,200 characters, 6,400 as JSON
	os.WriteFile(filepath.Join(dir, "min.json"), []byte("first\n"+long+"\nlast\n"), 0o644)
	const budget = 2000
	fc, err := w.ReadWithin("min.json", 2, 0, budget)
	if err != nil {
		t.Fatal(err)
	}
	enc, _ := json.Marshal(fc.Content)
	chars := utf8.RuneCount(enc) - 2
	if fc.Lines != 1 || fc.LineCut != 2 || !fc.Truncated || fc.NextOffset != 3 || chars > budget || chars < budget-20 {
		t.Fatalf("lines %d, cut %d, truncated %v, next %d, %d encoded characters", fc.Lines, fc.LineCut, fc.Truncated, fc.NextOffset, chars)
	}
	if !strings.HasPrefix(long, strings.TrimSuffix(fc.Content, "\n")) {
		t.Errorf("the content is not the line's start: %.60q", fc.Content)
	}
	next, err := w.ReadWithin("min.json", fc.NextOffset, 0, budget)
	if err != nil || next.Content != "last\n" || next.LineCut != 0 {
		t.Errorf("reading on: %+v, %v", next, err)
	}
	// Lines that fit are shown whole, and a long one after them waits for
	// the next read.
	fc, _ = w.ReadWithin("min.json", 1, 0, budget)
	if fc.Content != "first\n" || fc.NextOffset != 2 || fc.LineCut != 0 {
		t.Errorf("from the start: %+v", fc)
	}
}
