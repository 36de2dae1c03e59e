package runlock

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Holders names the other processes that hold locks, and says which are
// stopped: a stopped process keeps the database's lock with its runs'.
func TestHoldersSaysWhichAreStopped(t *testing.T) {
	holdAsChild("r-2")
	dir := filepath.Join(t.TempDir(), "db.locks")
	own, err := Acquire(dir, "r-own")
	if err != nil {
		t.Fatal(err)
	}
	defer own.Release()
	cmd := startHolder(t, "TestHoldersSaysWhichAreStopped", dir)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
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
