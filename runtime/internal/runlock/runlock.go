// Package runlock keeps two swarmdeck processes from running the same run.
//
// The process that runs a run holds an advisory lock (flock) on a small
// file named after the run, in a directory beside the database. The kernel
// drops the lock when the process ends, however it ends: a run left behind
// by a crash can be resumed at once, and one that another process is still
// running cannot be resumed a second time (both would append to the same
// conversations and event log).
package runlock

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Dir is the directory of the lock files of the database at dbPath,
// beside the file it names once symbolic links are followed: SQLite opens
// that file whatever link leads to it, and a lock kept beside the link
// would let a second process run a run that another runs through the file
// itself. A database not made yet has its locks beside the path as given.
func Dir(dbPath string) string {
	if real, err := filepath.EvalSymlinks(dbPath); err == nil {
		dbPath = real
	}
	return dbPath + ".locks"
}

// HeldError reports a run that another process holds.
type HeldError struct {
	RunID string
	PID   int // 0 when the holder did not say
	// Deleting: the holder is deleting the run, not running it.
	Deleting bool
}

func (e *HeldError) Error() string {
	if e.Deleting {
		return fmt.Sprintf("run %s is being deleted by %s", e.RunID, e.Holder())
	}
	return fmt.Sprintf("run %s is running in %s: stop that process first (its run stays resumable), or follow it with `swarmdeck view %s`", e.RunID, e.Holder(), e.RunID)
}

// Holder names the process that holds the run, with its pid when known.
func (e *HeldError) Holder() string {
	if e.PID > 0 {
		return "another swarmdeck process (pid " + strconv.Itoa(e.PID) + ")"
	}
	return "another swarmdeck process"
}

// deleting is the second line of the lock file of a run being deleted.
const deleting = "deleting"

// Lock is a held run lock.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the lock of runID in dir, to run the run, creating both
// as needed. It fails with a *HeldError when another process holds it.
func Acquire(dir, runID string) (*Lock, error) { return acquire(dir, runID, false) }

// AcquireToDelete is Acquire for a process that deletes the run: another
// that wants the run is told so.
func AcquireToDelete(dir, runID string) (*Lock, error) { return acquire(dir, runID, true) }

func acquire(dir, runID string, toDelete bool) (*Lock, error) {
	if runID == "" || strings.ContainsAny(runID, `/\`) || strings.Contains(runID, "..") {
		return nil, fmt.Errorf("run lock: bad run id %q", runID)
	}
	path := filepath.Join(dir, runID+".lock")
	f, err := create(dir, path)
	if err != nil {
		return nil, fmt.Errorf("run lock: %w", err)
	}
	held, err := tryLock(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("run lock %s: %w", path, err)
	}
	if held {
		// The holder writes its pid just after taking the lock: one that
		// has only just taken it is given a moment to.
		held := &HeldError{RunID: runID}
		for wait := time.Millisecond; held.PID == 0 && wait < 100*time.Millisecond; wait *= 2 {
			b := make([]byte, 64)
			n, _ := f.ReadAt(b, 0)
			pid, doing, _ := strings.Cut(string(b[:n]), "\n")
			if held.PID, _ = strconv.Atoi(strings.TrimSpace(pid)); held.PID == 0 {
				time.Sleep(wait)
			}
			held.Deleting = strings.TrimSpace(doing) == deleting
		}
		f.Close()
		return nil, held
	}
	// Who holds it and why, for the message another process shows: the
	// pid on the first line, as it always was, and what it does after.
	holder := strconv.Itoa(os.Getpid()) + "\n"
	if toDelete {
		holder += deleting + "\n"
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(holder), 0)
	}
	l := &Lock{f: f, path: path}
	holding.Lock()
	holding.locks[l] = true
	holding.Unlock()
	return l, nil
}

// holding are the locks this process holds, for Abandon.
var holding = struct {
	sync.Mutex
	locks map[*Lock]bool
}{locks: map[*Lock]bool{}}

// Abandon removes the files of the locks this process holds, for a process
// about to exit at once, without releasing them: the kernel drops the locks
// as the process ends, and no file is left behind for a run that was never
// stored. The locks stay held until then.
func Abandon() {
	holding.Lock()
	defer holding.Unlock()
	for l := range holding.locks {
		os.Remove(l.path)
		os.Remove(filepath.Dir(l.path)) // if that was its last lock
	}
}

// create opens the lock file at path, making its directory as needed. The
// directory goes when its last lock is released (see Release), so another
// process may remove it while this one makes it or opens the file in it:
// that is tried again, for up to raceTimeout. Runs released over and over
// in the same directory could win every race against a plain loop (under
// the race detector, a hundred times in a row), so a lost one waits a
// little, a random part of a wait that grows to a millisecond.
func create(dir, path string) (*os.File, error) {
	deadline := time.Now().Add(raceTimeout)
	for wait := 10 * time.Microsecond; ; wait = min(2*wait, time.Millisecond) {
		err := os.MkdirAll(dir, 0o755)
		var f *os.File
		if err == nil {
			f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		}
		raced := errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrExist)
		if err == nil || !raced || time.Now().After(deadline) {
			return f, err
		}
		time.Sleep(rand.N(wait))
	}
}

// raceTimeout bounds how long create keeps losing the race for a lock
// directory before it gives up.
const raceTimeout = 2 * time.Second

// Release gives the lock up and removes its file. It may be called more
// than once, and on a nil Lock.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	holding.Lock()
	delete(holding.locks, l)
	holding.Unlock()
	// Removed while still held, so that no other process can be holding
	// the file that is removed.
	os.Remove(l.path)
	l.f.Close()
	l.f = nil
	// The directory too, if that was its last lock: nothing is left beside
	// the database once its runs have stopped. Removing a directory that
	// is not empty fails, and leaves it.
	os.Remove(filepath.Dir(l.path))
}

// IsHeld reports whether err says another process holds a run.
func IsHeld(err error) bool {
	var h *HeldError
	return errors.As(err, &h)
}

// Held reports whether a process holds the lock of runID in dir, that is,
// whether the run is being run now; known is false where that cannot be
// told (no flock on this system, a lock file that cannot be read).
func Held(dir, runID string) (held, known bool) {
	if !canProbe {
		return false, false
	}
	f, err := os.Open(filepath.Join(dir, runID+".lock"))
	if errors.Is(err, fs.ErrNotExist) {
		return false, true // a process that runs a run keeps its lock file
	}
	if err != nil {
		return false, false
	}
	defer f.Close()
	return probeLock(f)
}

// Holder is a process that holds a run lock in a directory.
type Holder struct {
	PID      int
	RunID    string
	Deleting bool // deleting the run, not running it
	// Stopped: the process is suspended (ctrl+z, SIGSTOP), as far as this
	// system tells (Linux's /proc); a stopped process keeps whatever it
	// held, the database's write lock among it.
	Stopped bool
}

// Holders lists the processes other than this one that hold a run lock in
// dir, by pid, one entry a process; nil where that cannot be told.
func Holders(dir string) []Holder {
	if !canProbe {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Holder
	seen := map[int]bool{os.Getpid(): true}
	for _, e := range entries {
		runID, ok := strings.CutSuffix(e.Name(), ".lock")
		if !ok {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		held, _ := probeLock(f)
		b := make([]byte, 64)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		line, doing, _ := strings.Cut(string(b[:n]), "\n")
		pid, _ := strconv.Atoi(strings.TrimSpace(line))
		if !held || pid <= 0 || seen[pid] {
			continue
		}
		seen[pid] = true
		out = append(out, Holder{PID: pid, RunID: runID, Deleting: strings.TrimSpace(doing) == deleting, Stopped: stopped(pid)})
	}
	return out
}

// stopped reports whether process pid is suspended, from its state in
// /proc/PID/stat (T: stopped by a signal, t: by a debugger); false where
// there is no such file.
func stopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// "pid (name) state ...": the name may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] == 'T' || b[i+2] == 't'
}
