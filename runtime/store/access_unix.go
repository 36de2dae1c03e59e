//go:build unix

package store

import (
	"os"
	"path/filepath"
	"syscall"
)

// writable reports whether this process may write path (a file, or a
// directory to make files in), as the kernel would decide it.
func writable(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}

// Writable reports whether this process may write the database at path
// and make its -wal and -shm files beside it; known is false where that
// cannot be asked without writing.
func Writable(path string) (ok, known bool) {
	return writable(path) && writable(filepath.Dir(path)), true
}

// links is how many names (hard links) the file has.
func links(info os.FileInfo) int {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}
