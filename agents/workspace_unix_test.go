//go:build unix

package agents

import (
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
