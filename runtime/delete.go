package runtime

import (
	"fmt"

	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
)

// RunHeldError is a run that another process is running: its PID says
// which, when the process told.
type RunHeldError = runlock.HeldError

// ClaimStoredRun takes the run lock of a stored run of the database at
// dbPath, so that no process starts or resumes it while it is changed
// outside a run (deleted). It fails with a *RunHeldError while a process
// runs it. release gives the lock up and removes its file, which removes
// a lock file left by a process that died holding it, too.
//
// Where no lock can be made (a directory beside the database that may not
// be written), the run is claimed without one when the lock says that no
// process runs it, and refused when that cannot be told.
func ClaimStoredRun(dbPath, runID string) (release func(), err error) {
	dir := runlock.Dir(dbPath)
	l, err := runlock.AcquireToDelete(dir, runID)
	if err == nil {
		return l.Release, nil
	}
	if runlock.IsHeld(err) {
		return nil, err
	}
	if held, known := runlock.Held(dir, runID); known && !held {
		return func() {}, nil
	}
	return nil, fmt.Errorf("cannot tell whether a swarmdeck process is running run %s (%w): stop any that may, then try again", runID, err)
}
