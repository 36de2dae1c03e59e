package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
