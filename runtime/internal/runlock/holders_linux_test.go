package runlock

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Holders names the other processes that hold locks, and says which are
// stopped: a stopped process keeps the database's lock with its runs'.
func TestHoldersSaysWhichAreStopped(t *testing.T) {
	if os.Getenv("RUNLOCK_CHILD") != "" {
		if _, err := Acquire(os.Getenv("RUNLOCK_CHILD"), "r-2"); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString("held\n")
		os.Stdout.Sync()
		select {} // until killed
	}
	dir := filepath.Join(t.TempDir(), "db.locks")
	own, err := Acquire(dir, "r-own")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldersSaysWhichAreStopped$")
	cmd.Env = append(os.Environ(), "RUNLOCK_CHILD="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	buf := make([]byte, 5)
	if _, err := out.Read(buf); err != nil || string(buf) != "held\n" {
		t.Fatalf("child did not take the lock: %q %v", buf, err)
	}
	want := Holder{PID: cmd.Process.Pid, RunID: "r-2"}
	if got := Holders(dir); len(got) != 1 || got[0] != want {
		t.Fatalf("Holders = %+v, want only %+v (not this process)", got, want)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Signal(syscall.SIGCONT)
	want.Stopped = true
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := Holders(dir)
		if len(got) == 1 && got[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Holders of a stopped holder = %+v, want %+v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
