//go:build unix

package runlock

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on f without waiting; held reports that
// another open file description (another process) has it.
func tryLock(f *os.File) (held bool, err error) {
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}

// canProbe says that probeLock can tell.
const canProbe = true

// probeLock reports whether another open file description holds f's lock,
// without taking it for more than the probe: a shared lock, dropped at
// once, so that it cannot keep a process that runs the run from holding it
// (an Acquire at that very instant fails and may be tried again).
func probeLock(f *os.File) (held, known bool) {
	var err error
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, true
	case err != nil:
		return false, false
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, true
}
