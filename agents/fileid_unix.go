//go:build unix

package agents

import (
	"io/fs"
	"os"
	"syscall"
)

// links is how many names the file has (hard links); 1 when unknown.
func links(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Nlink)
	}
	return 1
}

// foreign reports whether the file belongs to another user than the one
// swarmdeck runs as: a file renamed over it would change its owner.
func foreign(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) != os.Geteuid()
}
