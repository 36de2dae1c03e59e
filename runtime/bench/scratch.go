package bench

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
)

// scratchLock names the lock a bench holds in its temporary directory
// while it runs.
const scratchLock = "bench"

// scratch is a bench's temporary directory, named prefix and a random
// suffix, and what removes it. It holds a lock there while the bench runs,
// and first removes the directories that benches killed before they could
// remove theirs left (a 1,000-agent run's database is tens of megabytes):
// those whose lock nobody holds.
func scratch(prefix string) (dir string, remove func(), err error) {
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	lock, err := runlock.Acquire(dir, scratchLock)
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	sweepLeftovers(filepath.Join(filepath.Dir(dir), prefix+"*"), dir)
	return dir, func() {
		lock.Release()
		os.RemoveAll(dir)
	}, nil
}

// sweepLeftovers removes the directories matching pattern, other than
// own, that a bench made and left: named as os.MkdirTemp names them (the
// pattern's prefix and digits), holding a bench's lock file, and whose
// lock nobody holds. A directory of the user's that happens to share the
// prefix ("swarmdeck-bench-results") has neither, and is left alone, as
// is one left by a swarmdeck that took no lock. Where the lock cannot be
// probed, nothing is removed.
func sweepLeftovers(pattern, own string) {
	prefix := strings.TrimSuffix(filepath.Base(pattern), "*")
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		suffix := strings.TrimPrefix(filepath.Base(d), prefix)
		if d == own || suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		if info, err := os.Lstat(filepath.Join(d, scratchLock+".lock")); err != nil || !info.Mode().IsRegular() {
			continue
		}
		if held, known := runlock.Held(d, scratchLock); held || !known {
			continue
		}
		os.RemoveAll(d)
	}
}
