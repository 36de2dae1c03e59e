//go:build !unix

package runlock

import "os"

// tryLock does nothing where flock is missing: runs are not guarded
// against a second process there.
func tryLock(*os.File) (bool, error) { return false, nil }

// canProbe says that probeLock cannot tell where flock is missing.
const canProbe = false

// probeLock cannot tell.
func probeLock(*os.File) (held, known bool) { return false, false }
