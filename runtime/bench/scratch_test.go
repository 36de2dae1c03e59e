package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
)

// A bench removes the temporary directories that killed benches left, and
// none that a bench still running holds, nor one just made, nor one of the
// user's that shares the prefix.
func TestScratchSweepsWhatKilledBenchesLeft(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	mk := func(name string) string {
		d := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(d, "workspace"), 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	killed := mk("swarmdeck-bench-1") // its lock file left, the lock gone with the process
	if l, err := runlock.Acquire(killed, scratchLock); err != nil {
		t.Fatal(err)
	} else {
		l.Release()
		os.WriteFile(filepath.Join(killed, scratchLock+".lock"), []byte("1\n"), 0o600)
	}
	running := mk("swarmdeck-bench-2")
	l, err := runlock.Acquire(running, scratchLock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	starting := mk("swarmdeck-bench-3") // no lock yet
	long := time.Now().Add(-48 * time.Hour)
	old := mk("swarmdeck-bench-4") // no lock, from before benches took one: not known to be ours
	os.Chtimes(old, long, long)
	other := mk("swarmdeck-startup-1") // another prefix
	os.WriteFile(filepath.Join(other, scratchLock+".lock"), []byte("1\n"), 0o600)
	// A bench stopped at once, which removed its lock file as it exited,
	// an hour ago; and one with no lock file that was at work a moment ago.
	stopped := mk("swarmdeck-bench-5")
	os.WriteFile(filepath.Join(stopped, "bench.db"), []byte("db"), 0o600)
	os.Chtimes(filepath.Join(stopped, "bench.db"), long, long)
	os.Chtimes(filepath.Join(stopped, "workspace"), long, long)
	os.Chtimes(stopped, long, long)
	recent := mk("swarmdeck-bench-6")
	os.WriteFile(filepath.Join(recent, "bench.db"), []byte("db"), 0o600)
	// The same with --db: its database was elsewhere.
	stoppedDB := mk("swarmdeck-bench-7")
	os.Chtimes(filepath.Join(stoppedDB, "workspace"), long, long)
	os.Chtimes(stoppedDB, long, long)
	// Laid out like one, but with the user's files in it.
	kept := mk("swarmdeck-bench-1000")
	os.WriteFile(filepath.Join(kept, "bench.db"), []byte("db"), 0o600)
	os.WriteFile(filepath.Join(kept, "results.txt"), []byte("mine"), 0o600)
	for _, p := range []string{"bench.db", "results.txt", "workspace", ""} {
		os.Chtimes(filepath.Join(kept, p), long, long)
	}
	// The user's own, sharing the prefix, with a lock file of its own.
	users := mk("swarmdeck-bench-results")
	os.WriteFile(filepath.Join(users, scratchLock+".lock"), []byte("mine\n"), 0o600)
	os.Chtimes(users, long, long)

	dir, remove, err := scratch("swarmdeck-bench-")
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{killed: false, running: true, starting: true, old: true, other: true, users: true, stopped: false, recent: true, stoppedDB: false, kept: true, dir: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the bench's own directory is left: %v", err)
	}
}
