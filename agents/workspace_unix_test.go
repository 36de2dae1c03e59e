//go:build unix

package agents

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFilesAreRefused checks that a named pipe in the workspace
// gets a tool error at once: opening it to read or write would block the
// tool, and the session with it, for as long as nothing is at its other end.
func TestSpecialFilesAreRefused(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe"), 0o644); err != nil {
		t.Skip("no named pipes here:", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := w.Read("pipe", 0, 0); err == nil || !strings.Contains(err.Error(), "not a regular file (a named pipe)") {
			t.Errorf("Read: %v", err)
		}
		if _, err := w.Write("pipe", []byte("x")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Write: %v", err)
		}
		if _, _, _, err := w.PlanEdit("pipe", "a", "b", false); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("PlanEdit: %v", err)
		}
		// The listing does not call it a file.
		if l, err := w.List(".", false, 0); err != nil {
			t.Error(err)
		} else {
			for _, e := range l.Entries {
				if e.Name == "pipe" && e.Type != "other" {
					t.Errorf("list_files gives the named pipe as %+v", e)
				}
			}
		}
		// Through a link inside the workspace too.
		if err := syscall.Symlink("pipe", filepath.Join(dir, "to-pipe")); err != nil {
			t.Error(err)
			return
		}
		if _, err := w.Write("to-pipe", []byte("x")); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Write through a link: %v", err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("a tool blocked on a named pipe")
	}
}

// A file the person made read-only keeps agents off it: the write that
// replaces a file by a rename asks the file's own permission first, as a
// write in place would. (As root every file may be written, so the test
// needs another user.)
func TestWriteRespectsAReadOnlyFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root may write any file")
	}
	w, dir, _ := testWorkspace(t)
	ro := filepath.Join(dir, "ro.txt")
	os.WriteFile(ro, []byte("the person's\n"), 0o444)
	_, err := w.Write("ro.txt", []byte("the agent's\n"))
	if err == nil || !strings.Contains(err.Error(), "ro.txt may not be written: permission denied") {
		t.Errorf("Write over a read-only file: %v", err)
	}
	if b, _ := os.ReadFile(ro); string(b) != "the person's\n" {
		t.Errorf("the read-only file now holds %q", b)
	}
}

// A file with other names (hard links), or another user's, is written in
// place: a new file renamed over it would leave its other names on the
// old content, or make it swarmdeck's user's.
func TestWriteKeepsAFilesIdentity(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	a, b := filepath.Join(dir, "a.txt"), filepath.Join(dir, "b.txt")
	os.WriteFile(a, []byte("old\n"), 0o644)
	if err := os.Link(a, b); err != nil {
		t.Skip("no hard links here:", err)
	}
	if _, err := w.Write("a.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(b); string(got) != "new\n" {
		t.Errorf("the other name of the file holds %q", got)
	}
	if os.Geteuid() != 0 {
		return // only root can give a file away
	}
	theirs := filepath.Join(dir, "theirs.txt")
	os.WriteFile(theirs, []byte("old\n"), 0o666)
	if err := os.Chown(theirs, 65534, 65534); err != nil {
		t.Skip("cannot give a file away:", err)
	}
	if _, err := w.Write("theirs.txt", []byte("new\n")); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(theirs)
	if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != 65534 {
		t.Errorf("the file changed hands: owner %d", uid)
	}
	if got, _ := os.ReadFile(theirs); string(got) != "new\n" {
		t.Errorf("theirs.txt holds %q", got)
	}
}

// A hard link to a protected file is the file under another name: a
// symbolic link to it would be written through, in place, and change the
// configuration.
func TestProtectedThroughAHardLink(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("max_turns_per_session: 3\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, "prompts"), 0o755)
	tpl := filepath.Join(dir, "prompts", "worker.md")
	os.WriteFile(tpl, []byte("You are the worker\n"), 0o644)
	if err := os.Link(cfg, filepath.Join(dir, "hard.yaml")); err != nil {
		t.Skip("no hard links here:", err)
	}
	os.Link(tpl, filepath.Join(dir, "hard.md"))
	os.Symlink("hard.yaml", filepath.Join(dir, "sym-hard"))
	w.Protect(cfg, "configuration file")
	w.Protect(filepath.Join(dir, "prompts"), "prompt templates")
	for _, tc := range []struct{ path, want string }{
		{"sym-hard", "another name (a hard link) for swarmdeck's own configuration file"},
		{"hard.yaml", "configuration file"},
		{"hard.md", "prompt templates"},
	} {
		if _, err := w.Write(tc.path, []byte("max_turns_per_session: 9999\n")); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Write(%q): %v, want %q", tc.path, err, tc.want)
		}
		if _, _, _, err := w.PlanEdit(tc.path, "3", "9999", false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PlanEdit(%q): %v, want %q", tc.path, err, tc.want)
		}
	}
	if b, _ := os.ReadFile(cfg); string(b) != "max_turns_per_session: 3\n" {
		t.Errorf("the configuration changed: %q", b)
	}
}

// A workspace directory removed while the swarm runs gets a tool error
// that says so from every file tool, not that the file asked for (or ".")
// does not exist; once a directory is back at its path, the tools work in
// it.
func TestWorkspaceDirectoryRemoved(t *testing.T) {
	w, dir, _ := testWorkspace(t)
	os.WriteFile(filepath.Join(dir, "first.txt"), []byte("one\n"), 0o644)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	calls := map[string]func() error{
		"read_file":    func() error { _, err := w.Read("second.txt", 0, 0); return err },
		"list_files":   func() error { _, err := w.List(".", false, 0); return err },
		"search_files": func() error { _, err := w.Search("one", "", "", 0); return err },
		"write_file":   func() error { _, err := w.Write("second.txt", []byte("two\n")); return err },
		"edit_file":    func() error { _, _, _, err := w.PlanEdit("first.txt", "one", "1", false); return err },
	}
	want := "the workspace directory " + dir + " has been removed; no file tool can work until it is back"
	for name, call := range calls {
		err := call()
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "list_files") {
			t.Errorf("%s in a removed workspace: %v, want %q", name, err, want)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatal("a tool made the removed workspace directory again")
	}

	// A file in its place is not a workspace either.
	os.WriteFile(dir, []byte("not a directory\n"), 0o644)
	if _, err := w.Read("first.txt", 0, 0); err == nil || !strings.Contains(err.Error(), "is no longer a directory (a file is in its place)") {
		t.Errorf("read_file with a file in the workspace's place: %v", err)
	}

	// Back as a directory, the workspace works again.
	os.Remove(dir)
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "first.txt"), []byte("one again\n"), 0o644)
	if fc, err := w.Read("first.txt", 0, 0); err != nil || fc.Content != "one again\n" {
		t.Errorf("read_file once the directory is back: %+v, %v", fc, err)
	}
	if _, err := w.Write("second.txt", []byte("two\n")); err != nil {
		t.Errorf("write_file once the directory is back: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "second.txt")); string(b) != "two\n" {
		t.Errorf("second.txt holds %q", b)
	}
}

// list_files of a path that does not exist does not send the model to
// list_files; it names the deepest directory of the path that exists.
func TestListAMissingDirectory(t *testing.T) {
	w, _, _ := testWorkspace(t)
	_, err := w.List("src/gone/deeper", false, 0)
	if err == nil || !strings.Contains(err.Error(), "src/gone/deeper does not exist in the workspace; the deepest directory on that path that does is src") || strings.Contains(err.Error(), "list_files") {
		t.Errorf("List of a missing directory: %v", err)
	}
}
