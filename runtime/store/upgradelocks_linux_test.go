//go:build linux

package store

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/internal/proclocks"
)

// An older database is looked at for other processes before this one opens
// it: the look opens and closes its -shm file, which, done with the
// database open, dropped every POSIX lock the process held on the file, the
// lock by which SQLite tells others the database is in use among them.
func TestUpgradeKeepsTheLocks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	makeVersion1(t, path, "PRAGMA journal_mode=WAL")
	s, err := OpenWith(path, nil, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n, err := proclocks.Held(os.Getpid(), path+"-shm", 128)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Error("after the upgrade the process holds no lock on byte 128 of the -shm")
	}
}
