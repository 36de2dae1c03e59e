//go:build unix

package store

import (
	"os"

	"golang.org/x/sys/unix"
)

// openElsewhere reports whether another process has the database at path
// open. Every connection to a database in WAL mode holds a shared lock on
// one byte of its -shm file (SQLite's "DMS" lock, at offset 128) for as
// long as it is open; a process never conflicts with its own POSIX locks,
// so only other processes' connections are seen. Call it before this
// process opens the database: it opens and closes the -shm file, and the
// close drops every POSIX lock the process holds on that file.
func openElsewhere(path string) bool {
	f, err := os.Open(path + "-shm")
	if err != nil {
		return false
	}
	defer f.Close()
	lk := unix.Flock_t{Type: unix.F_WRLCK, Start: 128, Len: 1}
	if unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk) != nil {
		return false
	}
	return lk.Type != unix.F_UNLCK
}
