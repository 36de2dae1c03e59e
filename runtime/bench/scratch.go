package bench

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
)

// scratchLock names the lock a bench holds in its temporary directory
// while it runs.
const scratchLock = "bench"

// unlockedAge is how old a temporary directory without a lock file must
// be to be taken for a leftover: one just made has no lock yet.
const unlockedAge = 24 * time.Hour

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
// own, whose bench has ended: their lock is not held, or they have none
// and are older than unlockedAge (left by a swarmdeck that took none).
// Where the lock cannot be probed, nothing is removed.
func sweepLeftovers(pattern, own string) {
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		if d == own {
			continue
		}
		_, err := os.Stat(filepath.Join(d, scratchLock+".lock"))
		switch {
		case err == nil:
			if held, known := runlock.Held(d, scratchLock); held || !known {
				continue
			}
		case errors.Is(err, fs.ErrNotExist):
			info, err := os.Lstat(d)
			if err != nil || !info.IsDir() || time.Since(info.ModTime()) < unlockedAge {
				continue
			}
		default:
			continue
		}
		os.RemoveAll(d)
	}
}
