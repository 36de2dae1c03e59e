//go:build linux

package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
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

// holdDatabase makes a database at db and takes it whole, as a `delete`
// compacting it does, until the test ends.
func holdDatabase(t *testing.T, db string) {
	t.Helper()
	conn := openConn(t, db, true)
	for _, q := range []string{"PRAGMA locking_mode=EXCLUSIVE", "BEGIN EXCLUSIVE", "SELECT count(*) FROM runs", "COMMIT"} {
		if _, err := conn.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// holdWrites makes a database at db and keeps a write transaction open on
// it until the test ends: others may read it, and their writes wait.
func holdWrites(t *testing.T, db string) {
	t.Helper()
	if _, err := openConn(t, db, true).ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
}

// openConn opens a connection of its own to the database at db, made
// first when create is set, until the test ends. It waits for a lock
// another process holds, as a person's sqlite3 would.
func openConn(t *testing.T, db string, create bool) *sql.Conn {
	t.Helper()
	if create {
		s, err := store.Open(db, nil)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	h, err := sql.Open("sqlite", "file:"+db+"?_pragma=busy_timeout(20000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	conn, err := h.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
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
	if !strings.Contains(stderr.String(), "stopped at once; nothing stored is lost") {
		t.Errorf("stderr does not say it stopped at once:\n%s", stderr.String())
	}
}

// A run whose first write waits for a database another process holds is
// stopped at once by a second Ctrl-C too. Its run was never stored: the
// message does not offer to resume it, and its lock file, made while the
// run was being stored, is not left beside the database.
func TestSecondSignalBeforeTheRunIsStored(t *testing.T) {
	bin := dashboardBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "held.db")
	holdWrites(t, db)

	cmd := exec.Command(bin, "run", "--headless", "--db", db, "--workspace", dir, "a quick demo")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "OPENAI_API_KEY=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	locks := db + ".locks"
	waitFor(t, "the run's lock file", func() bool {
		entries, _ := os.ReadDir(locks)
		return len(entries) == 1
	})
	waitFor(t, "the database to be opened", func() bool { return opened(cmd.Process.Pid, db) })
	// Both before the first one's wait ends (a second at most).
	cmd.Process.Signal(syscall.SIGINT)
	time.Sleep(20 * time.Millisecond)
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(store.BusyTimeout / 2):
		t.Fatalf("still running after two Ctrl-C; stderr:\n%s", stderr.String())
	}
	out := stderr.String()
	if strings.Contains(out, "stopped at once") {
		if want := "swarmdeck: stopped at once; nothing stored is lost\n"; !strings.HasSuffix(out, want) {
			t.Errorf("stderr ends %q, want %q", out, want)
		}
	} else {
		// The first Ctrl-C's stop won the race: it says so its own way.
		t.Logf("the first Ctrl-C's stop ended the wait first:\n%s", out)
	}
	if entries, err := os.ReadDir(locks); !os.IsNotExist(err) {
		t.Errorf("lock files left beside the database: %v (%v)", entries, err)
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

// A run's limits count the time its process works, not the time it stood
// stopped (ctrl+z, SIGSTOP): a stop longer than the session, call and
// question timeouts, mid-run, fails nothing. Counted on the wall clock,
// every session failed as timed out the moment the process continued.
func TestARunOutlastsAStop(t *testing.T) {
	bin := dashboardBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte("limits:\n  session_timeout: 4s\n  call_timeout: 3s\ncoordination:\n  broadcast_timeout: 3s\n"), 0o644)
	cmd := exec.Command(bin, "run", "--headless", "--json", "--config", cfg, "--db", filepath.Join(dir, "s.db"), "--workspace", dir,
		"--provider", "scripted", "--scripted-latency", "100ms", "--scripted-stream-speed", "0", "Plan a product launch")
	cmd.Env = isolatedEnv(t)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var events []string
	lines := bufio.NewScanner(out)
	lines.Buffer(nil, 1<<20)
	stopped := false
	midRun := make(chan string, 1) // what the store says of the pause while the run goes on
	for lines.Scan() {
		events = append(events, lines.Text())
		// Once the orchestrator has children, the run is under way with
		// every kind of wait: sessions, calls, questions.
		if !stopped && strings.Contains(lines.Text(), `"type":"session.created"`) && strings.Contains(lines.Text(), `"parent_id"`) {
			stopped = true
			cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(5 * time.Second)
			cmd.Process.Signal(syscall.SIGCONT)
			var ev struct {
				RunID string `json:"run_id"`
			}
			json.Unmarshal([]byte(events[0]), &ev)
			go func() { midRun <- storedPauses(filepath.Join(dir, "s.db"), ev.RunID) }()
		}
	}
	if err := cmd.Wait(); err != nil || !stopped {
		t.Fatalf("the run did not complete across a 5 s stop (stopped: %v): %v\nstderr:\n%s\nlast events:\n%s",
			stopped, err, stderr.String(), strings.Join(events[max(len(events)-8, 0):], "\n"))
	}
	for _, e := range events {
		if strings.Contains(e, "timed out") || strings.Contains(e, "took longer than") {
			t.Errorf("a limit counted the stop: %s", e)
		}
	}
	// Nor is the stop part of the run's elapsed time: it is a pause, as
	// the time between two processes is for a resumed run.
	var fin struct {
		Type string
		Run  struct {
			Pauses []struct{ From, To time.Time }
		}
	}
	if err := json.Unmarshal([]byte(events[len(events)-1]), &fin); err != nil || fin.Type != "run.finished" {
		t.Fatalf("last event %s (%v), want run.finished", events[len(events)-1], err)
	}
	if p := fin.Run.Pauses; len(p) != 1 || p[0].To.Sub(p[0].From) < 4*time.Second || p[0].To.Sub(p[0].From) > 6*time.Second {
		t.Errorf("the run's pauses are %+v, want one of about 5 s", p)
	}
	// It is stored as soon as the process goes on, for a view or an export
	// of the run under way.
	if got := <-midRun; got != "" {
		t.Error(got)
	}
}

// storedPauses waits up to 3 s for the run's record to hold a pause while
// the run is still running, and says what it found instead ("" if so).
func storedPauses(db, runID string) string {
	s, err := store.OpenReadOnly(db)
	if err != nil {
		return err.Error()
	}
	defer s.Close()
	var last string
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		rec, err := s.Run(context.Background(), runID)
		if err != nil {
			last = err.Error()
			continue
		}
		if len(rec.Pauses) > 0 {
			if rec.Status != "running" {
				return "the pause was stored only once the run had " + rec.Status
			}
			return ""
		}
		last = fmt.Sprintf("no pause stored while the run is %s", rec.Status)
	}
	return last
}

// Ctrl-C during a bench stops it with the signal as the reason, not a
// bare "context canceled", in the bench itself and in --startup.
func TestBenchInterruptSaysWhy(t *testing.T) {
	bin := dashboardBinary(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "--agents", "10", "--latency", "10s"}, "swarmdeck: bench interrupted after "},
		{[]string{"bench", "--startup", "--runs", "500"}, "swarmdeck: startup measurement interrupted after "},
	} {
		dir := t.TempDir()
		cmd := exec.Command(bin, tc.args...)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// The progress line says the measurement is under way, its signal
		// handling set up.
		waitFor(t, "the bench's progress", func() bool { return strings.Contains(stderr.String(), "/") })
		cmd.Process.Signal(syscall.SIGINT)
		err := cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 1 {
			t.Errorf("%v: exit status %d (%v), want 1", tc.args, code, err)
		}
		out := stderr.String()
		if !strings.Contains(out, tc.want) || !strings.Contains(out, ": interrupt signal received\n") || strings.Contains(out, "context canceled") {
			t.Errorf("%v: stderr does not give the signal as the reason:\n%s", tc.args, out)
		}
	}
}

// Quitting the dashboard while another process holds the database: the
// stop waits to store where the run stopped, the terminal, the dashboard
// gone, says so once that is slow, and Ctrl-C then ends the process at
// once, naming the run to resume.
func TestDashboardQuitWhileTheDatabaseIsHeld(t *testing.T) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmdeck.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, demoArgs(db, dir)...)
	scr := startOnPTY(t, ctx, cmd, master, slave)
	defer cmd.Process.Kill()

	if _, err := openConn(t, db, false).ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	master.Write([]byte("q"))
	waitFor(t, "the quit confirmation", func() bool { return strings.Contains(scr.String(), "Quit") })
	master.Write([]byte("y"))
	waitFor(t, "the word that the stop is slow", func() bool { return strings.Contains(scr.String(), "swarmdeck: still stopping run r-") })
	master.Write([]byte{3}) // ctrl+c, the dashboard gone
	if !waitExit(cmd, func() { cmd.Process.Kill() }) {
		t.Fatal("ctrl+c did not end the process")
	}
	waitFor(t, "the message of the exit", func() bool { return strings.Contains(scr.String(), "stopped at once; nothing stored is lost: run r-") })
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
}

// A command stopped by a signal exits a moment after its handler is done:
// a signal in that moment (the rest of a burst, a shell's second hangup,
// Ctrl-\ pressed again) is caught and dropped, not given its default,
// which for SIGQUIT is a dump of every goroutine and exit status 2. The
// test runs itself as the command, to send it the signals.
func TestSignalsAfterTheStopAreDropped(t *testing.T) {
	if os.Getenv("SWARMDECK_SIGNALS_CHILD") == "1" {
		ctx, stop := watchSignals(os.Stderr, func() string { return "at once" })
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		<-ctx.Done()
		stop()
		syscall.Kill(os.Getpid(), syscall.SIGQUIT)
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(100 * time.Millisecond) // for a signal's default to act
		fmt.Println("outlived the signals")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSignalsAfterTheStopAreDropped$")
	cmd.Env = append(os.Environ(), "SWARMDECK_SIGNALS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "outlived the signals") {
		t.Fatalf("signals after the stop ended the process (%v):\n%.600s", err, out)
	}
}

// With no signal, the stop hands signals back to their defaults, for a
// test or a program that goes on after the command.
func TestStopWithoutASignalReleasesThem(t *testing.T) {
	if os.Getenv("SWARMDECK_SIGNALS_CHILD") == "2" {
		_, stop := watchSignals(os.Stderr, func() string { return "at once" })
		stop()
		syscall.Kill(os.Getpid(), syscall.SIGHUP)
		time.Sleep(time.Second)
		fmt.Println("outlived the hangup")
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestStopWithoutASignalReleasesThem$")
	cmd.Env = append(os.Environ(), "SWARMDECK_SIGNALS_CHILD=2")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGHUP {
		t.Fatalf("a hangup after a stop without a signal: %v\n%.600s", err, out)
	}
}

// A bench stopped at once by a second Ctrl-C does not tell to resume its
// run: a bench run is measured once, and resume refuses it.
func TestSecondSignalStopsABenchWithoutAResumeHint(t *testing.T) {
	bin := dashboardBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "bench.db")
	cmd := exec.Command(bin, "bench", "--agents", "20", "--latency", "2s", "--db", db)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "TMPDIR="+dir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	waitFor(t, "the bench's run to be stored", func() bool {
		st, err := store.OpenReadOnly(db)
		if err != nil {
			return false
		}
		defer st.Close()
		runs, err := st.Runs(context.Background(), 1)
		return err == nil && len(runs) == 1
	})
	holdWrites(t, db) // the stop's writes wait, so a second Ctrl-C comes while it waits
	cmd.Process.Signal(syscall.SIGINT)
	waitFor(t, "the hint after a first Ctrl-C", func() bool { return strings.Contains(stderr.String(), "press Ctrl-C again") })
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-exited:
	case <-time.After(store.BusyTimeout / 2):
		t.Fatalf("still running after a second Ctrl-C; stderr:\n%s", stderr.String())
	}
	out := stderr.String()
	if !strings.Contains(out, "stopped at once; nothing stored is lost (the bench's run is not resumed)") || strings.Contains(out, "swarmdeck resume") {
		t.Errorf("stderr:\n%s", out)
	}
}
