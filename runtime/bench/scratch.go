package bench

import (
	"os"
	"path/filepath"
	"strings"
	"time"

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
// pattern's prefix and digits), holding a bench's lock file whose lock
// nobody holds, or without one but abandoned (see abandoned). A directory
// of the user's that happens to share the prefix
// ("swarmdeck-bench-results") is left alone. Where the lock cannot be
// probed, nothing is removed.
func sweepLeftovers(pattern, own string) {
	prefix := strings.TrimSuffix(filepath.Base(pattern), "*")
	dirs, _ := filepath.Glob(pattern)
	for _, d := range dirs {
		suffix := strings.TrimPrefix(filepath.Base(d), prefix)
		if d == own || suffix == "" || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		info, err := os.Lstat(filepath.Join(d, scratchLock+".lock"))
		switch {
		case err == nil && info.Mode().IsRegular():
			if held, known := runlock.Held(d, scratchLock); held || !known {
				continue
			}
		case os.IsNotExist(err):
			// A bench stopped at once (a second ctrl+c) removes its lock
			// file as it exits, and leaves the rest: a bench's layout,
			// untouched for a while, is taken for that.
			if !abandoned(d) {
				continue
			}
		default:
			continue
		}
		os.RemoveAll(d)
	}
}

// abandonedAge is how long a bench's directory without its lock file must
// have been left untouched to be removed.
const abandonedAge = time.Hour

// benchLeaves are the names a bench makes in its directory: none other
// is there in one it left.
var benchLeaves = map[string]bool{"workspace": true, "bench.db": true, "bench.db-wal": true, "bench.db-shm": true,
	"bench.db-journal": true, "bench.db.locks": true, "swarmdeck.log": true}

// abandoned reports whether d, which has no lock file, is a bench's
// directory that its bench left: it holds nothing but what a bench makes
// (its database, when not given with --db, its log and an empty
// workspace), and none of it has changed for abandonedAge. A directory of
// the user's that looks like one but holds anything else is left alone.
func abandoned(d string) bool {
	entries, err := os.ReadDir(d)
	if err != nil {
		return false
	}
	hasWorkspace := false
	for _, e := range entries {
		if !benchLeaves[e.Name()] {
			return false
		}
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < abandonedAge {
			return false
		}
		hasWorkspace = hasWorkspace || e.Name() == "workspace" && e.IsDir()
	}
	if ws, err := os.ReadDir(filepath.Join(d, "workspace")); err != nil || len(ws) > 0 || !hasWorkspace {
		return false
	}
	info, err := os.Stat(d)
	return err == nil && time.Since(info.ModTime()) >= abandonedAge
}
