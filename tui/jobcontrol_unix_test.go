//go:build linux

package tui

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
)

func TestParentOf(t *testing.T) {
	if got := parentOf(os.Getpid()); got != os.Getppid() {
		t.Errorf("parentOf(self) = %d, want %d", got, os.Getppid())
	}
	// A command name with a space and a parenthesis, as /proc/PID/stat
	// writes it unescaped.
	dir := t.TempDir()
	odd := dir + "/a) b"
	if err := os.Symlink("/bin/sleep", odd); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(odd, "5")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep to start: %v", err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if got := parentOf(cmd.Process.Pid); got != os.Getpid() {
		t.Errorf("parentOf(%q) = %d, want %d", "a) b", got, os.Getpid())
	}
	if got := parentOf(1 << 30); got != 0 {
		t.Errorf("parentOf(no such process) = %d, want 0", got)
	}
}

// A process in a session of its own, as one that tmux or a terminal
// emulator starts, has no shell to continue it after a stop.
func TestJobControlNeedsAShell(t *testing.T) {
	if os.Getenv("SWARMDECK_JOBCONTROL_CHILD") == "1" {
		if jobControl() {
			os.Exit(3)
		}
		os.Exit(0)
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestJobControlNeedsAShell$")
	cmd.Env = append(os.Environ(), "SWARMDECK_JOBCONTROL_CHILD=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Run(); err != nil {
		t.Fatalf("a session leader of its own was taken for a job of a shell: %v", err)
	}
}
