//go:build !unix

package store

import "os"

// writable reports whether this process may write path. Where it cannot
// be asked without writing, it is taken as no: a database is then read as
// a file that does not change (see OpenReadOnly).
func writable(string) bool { return false }

// Writable reports whether this process may write the database at path
// and make its -wal and -shm files beside it; known is false where that
// cannot be asked without writing.
func Writable(string) (ok, known bool) { return false, false }

// links is how many names the file has: 1, where it is not asked.
func links(os.FileInfo) int { return 1 }
