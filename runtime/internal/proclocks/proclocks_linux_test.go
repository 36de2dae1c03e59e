package proclocks

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// A lock taken with fcntl is counted, at its start, until its file's
// descriptor closes.
func TestHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	lk := syscall.Flock_t{Type: syscall.F_RDLCK, Start: 128, Len: 1}
	if err := syscall.FcntlFlock(f.Fd(), syscall.F_SETLK, &lk); err != nil {
		t.Fatal(err)
	}
	if n, err := Held(os.Getpid(), path, 128); n != 1 || err != nil {
		t.Fatalf("Held = %d, %v with the lock taken", n, err)
	}
	if n, _ := Held(os.Getpid(), path, 0); n != 0 {
		t.Errorf("Held at byte 0 = %d", n)
	}
	f.Close()
	if n, _ := Held(os.Getpid(), path, 128); n != 0 {
		t.Errorf("Held = %d after the close", n)
	}
}
