package bench

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
)

// A bench removes the temporary directories that killed benches left, and
// none that a bench still running holds, nor one just made.
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
	old := mk("swarmdeck-bench-4")      // no lock, from before benches took one
	long := time.Now().Add(-2 * unlockedAge)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	other := mk("swarmdeck-startup-1") // another prefix
	if err := os.Chtimes(other, long, long); err != nil {
		t.Fatal(err)
	}

	dir, remove, err := scratch("swarmdeck-bench-")
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{killed: false, running: true, starting: true, old: false, other: true, dir: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
	remove()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the bench's own directory is left: %v", err)
	}
}
