//go:build unix

package store

import "syscall"

// writable reports whether this process may write path (a file, or a
// directory to make files in), as the kernel would decide it.
func writable(path string) bool {
	const wOK = 2
	return syscall.Access(path, wOK) == nil
}
