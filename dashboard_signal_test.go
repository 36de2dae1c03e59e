//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// openPTY opens a pseudo-terminal of the given size and returns its two
// ends: the one a test reads and writes, and the one a program runs on.
func openPTY(t *testing.T, rows, cols uint16) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { master.Close() })
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slave.Close() })
	if err := unix.IoctlSetWinsize(int(slave.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: rows, Col: cols}); err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// dashboardBinary is the swarmdeck binary for a test that runs its
// dashboard; such tests are skipped with -short.
func dashboardBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	return buildSwarmdeck(t)
}

// demoArgs run the scripted demo slowly enough to act on mid-run, with
// the database db and the workspace dir.
func demoArgs(db, dir string) []string {
	return []string{"--db", db, "--provider", "scripted", "--scripted-latency", "500ms", "--workspace", dir, "Plan a product launch"}
}

// screen collects what a program writes to its terminal.
type screen struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.Write(p)
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.out.String()
}

// startOnPTY starts cmd as the session leader of the pseudo-terminal
// slave, whose output master collects, and returns once the dashboard
// shows its run running.
func startOnPTY(t *testing.T, ctx context.Context, cmd *exec.Cmd, master, slave *os.File) *screen {
	t.Helper()
	return startOnPTYWith(t, ctx, cmd, master, slave)
}

// startOnPTYWith is startOnPTY with more variables in cmd's environment.
func startOnPTYWith(t *testing.T, ctx context.Context, cmd *exec.Cmd, master, slave *os.File, env ...string) *screen {
	t.Helper()
	scr := launchOnPTY(t, cmd, master, slave, env...)
	for !strings.Contains(scr.String(), "running") {
		if ctx.Err() != nil {
			t.Fatalf("the dashboard never showed the run running:\n%q", scr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return scr
}

// launchOnPTY starts cmd on the terminal whose ends are master and slave,
// in an isolated environment with env added, and collects what it draws.
func launchOnPTY(t *testing.T, cmd *exec.Cmd, master, slave *os.File, env ...string) *screen {
	t.Helper()
	cmd.Env = append(append(isolatedEnv(t), "TERM=xterm-256color"), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	scr := &screen{}
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := master.Read(buf)
			scr.Write(buf[:n])
			if err != nil {
				return
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return scr
}

// The dashboard stops on SIGTERM as on ctrl+c: the run stored resumable,
// the command that continues it printed, exit status 1. Bubble Tea's own
// signal handler used to take the same signal, and its quit message, no
// longer read once the run's context had ended the program, held the
// program's shutdown for good: the dashboard froze until SIGKILL.
func TestDashboardStopsOnSIGTERM(t *testing.T) {
	bin := dashboardBinary(t)
	for i := range 2 { // the freeze came in most runs, not all
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			master, slave := openPTY(t, 40, 120)
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, demoArgs(filepath.Join(dir, "swarmdeck.db"), dir)...)
			scr := startOnPTY(t, ctx, cmd, master, slave)
			time.Sleep(300 * time.Millisecond) // into the run's first model calls
			cmd.Process.Signal(syscall.SIGTERM)
			if !waitExit(cmd, func() { cmd.Process.Kill() }) {
				t.Fatal("the dashboard did not stop within 20 s of SIGTERM")
			}
			if code := cmd.ProcessState.ExitCode(); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			// The terminal's output ends after the process exits.
			deadline := time.Now().Add(5 * time.Second)
			for !strings.Contains(scr.String(), "continue it with: swarmdeck resume") && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			if out := scr.String(); !strings.Contains(out, "continue it with: swarmdeck resume") {
				t.Errorf("no resume command on the terminal after SIGTERM; its last output:\n%q", out[max(len(out)-600, 0):])
			}
		})
	}
}

// A dashboard whose terminal closes without a SIGHUP reaching it (one
// ignored by whoever started it, as nohup and some shells do) stops the
// run as for a quit, instead of running on unseen with the run held under
// its lock.
func TestDashboardStopsWhenItsTerminalIsGone(t *testing.T) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmdeck.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The shell leads the terminal's session with SIGHUP ignored, as a
	// `trap "" HUP` does, and runs the dashboard as its child.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `trap "" HUP; "$0" "$@"; echo "exit $?" >&2`, bin}, demoArgs(db, dir)...)...)
	startOnPTY(t, ctx, cmd, master, slave)
	slave.Close()
	master.Close() // the terminal goes away
	if !waitExit(cmd, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) {
		t.Fatal("the dashboard ran on for 20 s after its terminal was gone")
	}
	out, err := exec.Command(bin, "--db", db, "runs").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "interrupted") {
		t.Errorf("the run is not stored interrupted: %v\n%s", err, out)
	}
}

// A dashboard stopped and continued from outside (kill -STOP, then -CONT
// or the shell's fg) takes its terminal back: the shell that reported the
// stop put the terminal in its own, cooked, modes, where the dashboard's
// keys were echoed and waited for enter.
func TestDashboardTakesItsTerminalBackAfterSIGCONT(t *testing.T) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, demoArgs(filepath.Join(dir, "swarmdeck.db"), dir)...)
	startOnPTY(t, ctx, cmd, master, slave)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	canonical := func() bool {
		tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
		if err != nil {
			t.Fatal(err)
		}
		return tio.Lflag&unix.ICANON != 0
	}
	if canonical() {
		t.Fatal("the dashboard runs with its terminal in canonical mode")
	}
	cmd.Process.Signal(syscall.SIGSTOP)
	// What a shell does when it reports the stopped job.
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	tio.Lflag |= unix.ICANON | unix.ECHO
	if err := unix.IoctlSetTermios(int(slave.Fd()), unix.TCSETS, tio); err != nil {
		t.Fatal(err)
	}
	cmd.Process.Signal(syscall.SIGCONT)
	deadline := time.Now().Add(10 * time.Second)
	for canonical() {
		if time.Now().After(deadline) {
			t.Fatal("the dashboard left its terminal in the shell's modes after SIGCONT")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A dashboard whose stdout goes to a file (`swarmdeck GOAL > out.txt`)
// draws on the terminal it was started from: drawn into the file, its
// frames were unreadable there and the terminal stayed blank.
func TestDashboardDrawsOnTheTerminalWhenStdoutIsAFile(t *testing.T) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	outPath := filepath.Join(dir, "out.txt")
	// The shell leads the terminal's session and sends the dashboard's
	// stdout to the file, as a user's shell does.
	cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", `"$0" "$@" > "$OUT"`, bin}, demoArgs(filepath.Join(dir, "swarmdeck.db"), dir)...)...)
	startOnPTYWith(t, ctx, cmd, master, slave, "OUT="+outPath)
	syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM) // the shell and the dashboard
	if !waitExit(cmd, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) {
		t.Fatal("the dashboard did not stop within 20 s of SIGTERM")
	}
	out, err := os.ReadFile(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(out, []byte("\x1b[")) || bytes.Contains(out, []byte("Sessions")) {
		t.Errorf("the dashboard drew into the file that stdout went to:\n%q", out[:min(len(out), 400)])
	}
}

// A stopped dashboard killed by its shell's `kill %1` (SIGTERM, then
// SIGCONT so that the job takes it) ends, its run stored interrupted. It
// used to restore its terminal from the background, which stopped it
// again, and it waited stopped, its run held under its lock, until fg:
// after a stop from outside, and after its own ctrl+z.
func TestStoppedDashboardEndsOnKill(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for job control")
	}
	t.Run("SIGSTOP", func(t *testing.T) {
		testStoppedDashboardEndsOnKill(t, func(pid int, _ *os.File) { syscall.Kill(pid, syscall.SIGSTOP) }, false)
	})
	// After its own ctrl+z the terminal is the shell's: the dashboard
	// ends without drawing on it or setting its modes.
	t.Run("ctrl+z", func(t *testing.T) {
		testStoppedDashboardEndsOnKill(t, func(_ int, master *os.File) { master.Write([]byte{0x1a}) }, true)
	})
}

func testStoppedDashboardEndsOnKill(t *testing.T, stop func(pid int, master *os.File), quiet bool) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmdeck.db")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// bash with job control runs the dashboard as a foreground job; once
	// the job stops, bash takes the terminal back and kills it as a
	// person would.
	script := `set -m
"$0" "$@"
echo "job stopped" >&2
kill %1
wait %1
echo "job ended: $?" >&2`
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, bin}, demoArgs(db, dir)...)...)
	scr := startOnPTY(t, ctx, cmd, master, slave)
	out, err := exec.Command("pgrep", "-f", "-n", "^"+bin).Output()
	if err != nil {
		t.Skipf("no pgrep to find the dashboard: %v", err)
	}
	var pid int
	fmt.Sscan(string(out), &pid)
	defer syscall.Kill(pid, syscall.SIGKILL) // a dashboard left stopped
	stop(pid, master)
	if !waitExit(cmd, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); syscall.Kill(pid, syscall.SIGKILL) }) {
		t.Fatalf("the killed dashboard did not end within 20 s; its terminal's last output:\n%q", tail(scr.String(), 600))
	}
	// The terminal's output ends after the process exits.
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(scr.String(), "job ended") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(scr.String(), "job ended: 1") {
		t.Errorf("the job did not end with exit status 1; its terminal's last output:\n%q", tail(scr.String(), 600))
	}
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatal("the killed dashboard is still there, stopped again")
		}
		time.Sleep(20 * time.Millisecond)
	}
	runs, err := exec.Command(bin, "--db", db, "runs").CombinedOutput()
	if err != nil || !strings.Contains(string(runs), "interrupted") {
		t.Errorf("the run is not stored interrupted: %v\n%s\nterminal: %q", err, runs, tail(scr.String(), 800))
	}
	if _, after, _ := strings.Cut(scr.String(), "job stopped"); quiet && strings.Contains(after, "\x1b[") {
		t.Errorf("the dashboard drew on the shell's terminal as it ended:\n%q", after)
	}
}

// waitExit waits 20 s at most for cmd to exit; past that it kills what
// kill kills, waits for that, and reports false.
func waitExit(cmd *exec.Cmd, kill func()) bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
		return true
	case <-time.After(20 * time.Second):
		kill()
		<-done
		return false
	}
}

func tail(s string, n int) string { return s[max(len(s)-n, 0):] }

// The dashboard's resume refuses a run it cannot continue with the exit
// status resume --headless gives: 2, bad usage, not 1 as for a run that
// failed.
func TestDashboardResumeRefusalIsBadUsage(t *testing.T) {
	bin := dashboardBinary(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "swarmdeck.db")
	storeRuns(t, db, store.Run{ID: "r-done01", Goal: "finished", Status: "completed", Provider: "scripted", Scripted: true, Workspace: dir})
	for _, args := range [][]string{{"resume", "r-done01"}, {"resume", "--headless", "r-done01"}} {
		master, slave := openPTY(t, 40, 120)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, bin, append([]string{"--db", db}, args...)...)
		scr := launchOnPTY(t, cmd, master, slave)
		if !waitExit(cmd, func() { cmd.Process.Kill() }) {
			t.Fatalf("swarmdeck %s did not end", strings.Join(args, " "))
		}
		cancel()
		if code := cmd.ProcessState.ExitCode(); code != 2 {
			t.Errorf("swarmdeck %s: exit status %d, want 2; the terminal read:\n%s", strings.Join(args, " "), code, tail(scr.String(), 600))
		}
	}
}

// ctrl+z in the dashboard stops it as a job of the shell, its terminal
// handed back; fg continues it with the terminal taken again and a word
// that the run was paused.
//
// bg first lets the run go on without a screen: fg sends no continue to a
// running job, and the dashboard comes back all the same.
func TestDashboardSuspendsOnCtrlZ(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash for job control")
	}
	t.Run("fg", func(t *testing.T) {
		testDashboardSuspends(t, `fg %1 >/dev/null`, "back: the run was paused while swarmdeck was suspended")
	})
	t.Run("bg then fg", func(t *testing.T) {
		testDashboardSuspends(t, `bg %1 >/dev/null; sleep 1; fg %1 >/dev/null`, "back: the run went on while swarmdeck was in the background")
	})
}

func testDashboardSuspends(t *testing.T, continueJob, note string) {
	bin := dashboardBinary(t)
	master, slave := openPTY(t, 40, 120)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := `set -m
"$0" "$@"
echo "job stopped: $?" >&2
` + continueJob + `
echo "job ended: $?" >&2`
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, bin}, demoArgs(filepath.Join(dir, "swarmdeck.db"), dir)...)...)
	scr := startOnPTY(t, ctx, cmd, master, slave)
	defer syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	waitScreen := func(what string) {
		t.Helper()
		for !strings.Contains(scr.String(), what) {
			if ctx.Err() != nil {
				t.Fatalf("the terminal never showed %q; its last output:\n%q", what, tail(scr.String(), 600))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	master.Write([]byte{0x1a}) // ctrl+z, a key in the dashboard's raw mode
	waitScreen("job stopped: 148")
	waitScreen(note)
	tio, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if tio.Lflag&unix.ICANON != 0 {
		t.Error("the continued dashboard left its terminal in the shell's modes")
	}
	master.Write([]byte{0x03}) // ctrl+c
	if !waitExit(cmd, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }) {
		t.Fatalf("the dashboard did not end on ctrl+c after it was continued; its last output:\n%q", tail(scr.String(), 600))
	}
	// The terminal's output ends after the process exits.
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(scr.String(), "job ended") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(scr.String(), "job ended: 1") {
		t.Errorf("the job did not end with exit status 1 (run stopped, resumable); its last output:\n%q", tail(scr.String(), 600))
	}
}
