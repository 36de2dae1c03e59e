//go:build linux

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// holdDatabase takes db whole, as a `delete` compacting it does, until the
// test ends.
func holdDatabase(t *testing.T, db string) {
	t.Helper()
	h, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	conn, err := h.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	for _, q := range []string{"PRAGMA locking_mode=EXCLUSIVE", "BEGIN EXCLUSIVE", "SELECT count(*) FROM runs", "COMMIT"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// opened reports whether process pid has path open.
func opened(pid int, path string) bool {
	fds, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/fd/*")
	for _, fd := range fds {
		if to, err := os.Readlink(fd); err == nil && to == path {
			return true
		}
	}
	return false
}

// waitFor polls cond until it holds, failing the test after a while.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// A command waiting inside SQLite for a database another process holds
// does not look at its context: after a first Ctrl-C it says it is still
// stopping, and a second one ends it at once instead of after the wait.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	bin := dashboardBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "held.db")
	s, err := store.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	holdDatabase(t, db)

	cmd := exec.Command(bin, "runs", "--db", db)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	// Once the database is open the process is in SQLite's wait, its
	// signal handling long set up.
	waitFor(t, "the database to be opened", func() bool { return opened(cmd.Process.Pid, db) })
	cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, "the hint after a first Ctrl-C", func() bool { return strings.Contains(stderr.String(), "press Ctrl-C again") })
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case err := <-exited:
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("exit status %d (%v), want 1", code, err)
		}
	case <-time.After(store.BusyTimeout / 2):
		t.Fatalf("still waiting on the database after a second Ctrl-C; stderr:\n%s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "stopped at once on a second signal; nothing stored is lost") {
		t.Errorf("stderr does not say it stopped at once:\n%s", stderr.String())
	}
}

// A job in the background cannot be reached by a Ctrl-C typed at its
// shell: after a SIGTERM (the shell's `kill %1`) the hint names the
// signal to send it instead, and that signal ends it at once.
func TestStillStoppingInTheBackground(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for job control")
	}
	bin := dashboardBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "held.db")
	s, err := store.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	holdDatabase(t, db)

	master, slave := openPTY(t, 40, 120)
	script := `set -m
"$0" "$@" &
echo "started $!" >&2
wait $!
echo "job ended: $?" >&2`
	cmd := exec.Command("bash", "-c", script, bin, "runs", "--db", db)
	scr := launchOnPTY(t, cmd, master, slave)
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	var pid int
	started := regexp.MustCompile(`started (\d+)\r?\n`)
	waitFor(t, "the job to start", func() bool {
		m := started.FindStringSubmatch(scr.String())
		if m != nil {
			pid, _ = strconv.Atoi(m[1])
		}
		return m != nil
	})
	defer syscall.Kill(pid, syscall.SIGKILL)
	waitFor(t, "the database to be opened", func() bool { return opened(pid, db) })
	syscall.Kill(pid, syscall.SIGTERM)
	hint := fmt.Sprintf("still stopping (terminated); kill -INT %d to stop at once", pid)
	waitFor(t, "the hint for a job in the background", func() bool { return strings.Contains(scr.String(), hint) })
	syscall.Kill(pid, syscall.SIGINT)
	waitFor(t, "the job to end", func() bool { return strings.Contains(scr.String(), "job ended") })
	if !strings.Contains(scr.String(), "job ended: 1") {
		t.Errorf("the job did not end with exit status 1; the terminal read:\n%q", tail(scr.String(), 600))
	}
}
