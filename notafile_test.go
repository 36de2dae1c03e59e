//go:build unix

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A --db that names a device or a pipe is refused before anything opens
// it: /dev/null passed for a database of an older swarmdeck, and opening a
// pipe waited for ever for its other end.
func TestDatabaseThatIsNotAFile(t *testing.T) {
	dir := cliEnv(t)
	pipe := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(pipe, 0o644); err != nil {
		t.Skipf("no named pipe: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "--db", "/dev/null"}, "the database /dev/null is not a file (a character device): give the database file"},
		{[]string{"export", "--db", pipe}, "the database " + pipe + " is not a file (a named pipe)"},
		{[]string{"prune", "--vacuum-only", "--db", pipe}, "is not a file (a named pipe)"},
		{[]string{"run", "--headless", "--db", pipe, "a goal"}, "is not a file (a named pipe)"},
		{[]string{"run", "--headless", "--db", "/dev/null", "a goal"}, "is not a file (a character device)"},
	} {
		done := make(chan struct{})
		var code int
		var errOut bytes.Buffer
		go func() {
			defer close(done)
			code = run(tc.args, strings.NewReader(""), &bytes.Buffer{}, &errOut)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: still waiting after 30 s", strings.Join(tc.args, " "))
		}
		if code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%s: exit %d, %q; want 2 and %q", strings.Join(tc.args, " "), code, errOut.String(), tc.want)
		}
	}
}
