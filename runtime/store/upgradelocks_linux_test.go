//go:build linux

package store

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
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
	fi, err := os.Stat(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	want := fmt.Sprintf(":%d 128 128", fi.Sys().(*syscall.Stat_t).Ino)
	for _, line := range strings.Split(string(locks), "\n") {
		if f := strings.Fields(line); len(f) >= 8 && f[1] == "POSIX" && f[4] == fmt.Sprint(os.Getpid()) && strings.Contains(line, want) {
			return
		}
	}
	t.Errorf("after the upgrade the process holds no lock on byte 128 of the -shm:\n%s", locks)
}
