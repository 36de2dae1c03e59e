package agents

import (
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestProtectedPathsAreNotWritten(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("limits:\n  max_turns_per_session: 3\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "prompts"), 0o755)
	os.WriteFile(filepath.Join(dir, "prompts", "researcher.md"), []byte("You are the researcher\n"), 0o644)
	os.Symlink("config.yaml", filepath.Join(dir, "cfg-link.yaml"))
	os.Symlink("prompts", filepath.Join(dir, "p"))
	w.Protect(cfg, "configuration file")
	w.Protect(filepath.Join(dir, "prompts"), "prompt templates")
	w.Protect(filepath.Join(dir, "run.db"), "database") // not there yet
	w.Protect("", "nothing")

	refused := []struct{ path, want string }{
		{"config.yaml", "config.yaml is swarmdeck's own configuration file"},
		{"./config.yaml", "configuration file"},
		{"cfg-link.yaml", "configuration file"},
		{"prompts/researcher.md", "prompt templates"},
		{"prompts/new.md", "prompt templates"},
		{"p/researcher.md", "prompt templates"},
		{"run.db", "database"},
	}
	for _, tt := range refused {
		_, err := w.Write(tt.path, []byte("max_turns_per_session: 1000\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Write(%q) error = %v, want %q", tt.path, err, tt.want)
		}
	}
	if _, err := w.Write("prompts-notes.md", []byte("ok\n")); err != nil {
		t.Errorf("a file beside the protected ones was refused: %v", err)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), "max_turns_per_session: 3") {
		t.Errorf("the configuration changed: %s", b)
	}
	if _, err := os.Stat(filepath.Join(dir, "prompts", "new.md")); err == nil {
		t.Errorf("a new template was written")
	}
	// Reading them stays allowed.
	if _, err := w.Read("config.yaml", 0, 0); err != nil {
		t.Errorf("reading the configuration: %v", err)
	}
}

func TestCRLFFilesReadAndEdit(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.WriteFile(filepath.Join(dir, "win.txt"), []byte("line one\r\nline two\r\nline three\r\n"), 0o644)
	got, err := w.Read("win.txt", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got.Content != "line one\nline two\nline three\n" || got.LineEndings != "crlf" || got.TotalLines != 3 {
		t.Errorf("Read = %+v", got)
	}
	// The text as read_file shows it matches, and the file keeps CR LF.
	_, content, n, err := w.PlanEdit("win.txt", "line one\nline two", "first\nsecond", false)
	if err != nil || n != 1 {
		t.Fatalf("PlanEdit: n %d, %v", n, err)
	}
	if want := "first\r\nsecond\r\nline three\r\n"; string(content) != want {
		t.Errorf("edited = %q, want %q", content, want)
	}
	// A file with LF endings says nothing of them.
	if got, _ := w.Read("src/main.go", 0, 0); got.LineEndings != "" {
		t.Errorf("LF file: line_endings %q", got.LineEndings)
	}
}

func TestWriteANameNearTheLimit(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	name := strings.Repeat("L", 240) + ".txt" // 244 bytes: fits in 255
	if _, err := w.Write(name, []byte("hi\n")); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if _, err := w.Write(name, []byte("again\n")); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, name)); string(b) != "again\n" {
		t.Errorf("content %q", b)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".swarmdeck-") {
			t.Errorf("a temporary file was left: %s", e.Name())
		}
	}
}

// A temporary file that a write killed before its rename left behind is
// out of the listing and the search, and the repeat of that write (its
// name comes from the target's) replaces it once it is stale.
func TestWriteLeavesNoTemporaryFile(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	if _, err := w.Write("notes/a.md", []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	tmp, f, err := w.createTemp("notes/a.md", 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half a wri")
	f.Close()
	if !isTemp(path.Base(tmp)) || path.Dir(tmp) != "notes" {
		t.Fatalf("temporary file %s", tmp)
	}
	l, _ := w.List(".", true, 0)
	for _, e := range l.Entries {
		if strings.Contains(e.Name, tempPrefix) {
			t.Errorf("list_files shows %s", e.Name)
		}
	}
	if s, _ := w.Search("half", ".", "", 0); len(s.Matches) > 0 {
		t.Errorf("search_files finds the temporary file: %+v", s.Matches)
	}
	// A fresh one may be another process's: the write goes elsewhere and
	// leaves it alone.
	if _, err := w.Write("notes/a.md", []byte("second\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, tmp)); err != nil {
		t.Errorf("a fresh temporary file was removed: %v", err)
	}
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(filepath.Join(dir, tmp), old, old)
	if _, err := w.Write("notes/a.md", []byte("third\n")); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Join(dir, "notes"))
	if len(entries) != 1 || entries[0].Name() != "a.md" {
		t.Errorf("notes/ holds %v after a write over a stale temporary file", entries)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes", "a.md")); string(b) != "third\n" {
		t.Errorf("a.md holds %q", b)
	}
}

// Paths whose shape says something else than the name they would write
// get a tool error that says so; a backslash separates directories.
func TestPathShapes(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"write to a trailing slash", func() error { _, err := w.Write("newdir/", []byte("x")); return err }(), `"newdir/" ends with a slash`},
		{"edit with a trailing slash", func() error { _, _, _, err := w.PlanEdit("a.txt/", "a", "b", false); return err }(), `"a.txt/" ends with a slash`},
		{"read a file with a trailing slash", func() error { _, err := w.Read("a.txt/", 0, 0); return err }(), "a.txt is a file, not a directory"},
		{"a replacement character", func() error { _, err := w.Write("bad\uFFFD.txt", []byte("x")); return err }(), "contains U+FFFD"},
		{"a file as a directory", func() error { _, err := w.Write("a.txt/child", []byte("x")); return err }(), "a.txt is a file, not a directory, so it cannot hold other files"},
		{"a file deeper as a directory", func() error { _, err := w.Write("a.txt/b/c", []byte("x")); return err }(), "a.txt is a file, not a directory"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, tc.err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "newdir")); err == nil {
		t.Error("a write to newdir/ made a file newdir")
	}
	if _, err := w.Write(`win\style.txt`, []byte("w\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "win", "style.txt")); err != nil || string(b) != "w\n" {
		t.Errorf("a backslash did not separate directories: %q, %v", b, err)
	}
	if got, err := w.Read(`win\style.txt`, 0, 0); err != nil || got.Content != "w\n" {
		t.Errorf("reading back with a backslash: %+v, %v", got, err)
	}
}

// A line longer than the reader's buffer (1 MiB and more: a minified
// bundle) is read as any long line is: its start, cut, and the reading
// goes on after it.
func TestReadALineOfMegabytes(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	long := strings.Repeat("x", 3<<20)
	os.WriteFile(filepath.Join(dir, "bundle.js"), []byte("head\n"+long+"\ntail\n"), 0o644)
	fc, err := w.Read("bundle.js", 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fc.LineCut != 2 || fc.NextOffset != 3 || fc.TotalLines != 3 || len(fc.Content) != maxReadBytes+1 {
		t.Errorf("line_cut %d, next %d, total %d, %d bytes", fc.LineCut, fc.NextOffset, fc.TotalLines, len(fc.Content))
	}
	if fc, err := w.Read("bundle.js", 3, 0); err != nil || fc.Content != "tail\n" {
		t.Errorf("after the long line: %+v, %v", fc, err)
	}
	// A long line of a binary file is still found out.
	os.WriteFile(filepath.Join(dir, "blob"), append(make([]byte, 2<<20), '\n'), 0o644)
	if _, err := w.Read("blob", 0, 0); err == nil || !strings.Contains(err.Error(), "not a text file") {
		t.Errorf("a binary file with a long line: %v", err)
	}
}
