//go:build unix

package main

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// inBackground reports whether stderr is a terminal whose foreground is
// another process group: a job put in the background, or a stopped one
// that `kill %1` continued, which a Ctrl-C typed there does not reach.
func inBackground(stderr io.Writer) bool {
	f, ok := stderr.(*os.File)
	if !ok {
		return false
	}
	pgrp, err := unix.IoctlGetInt(int(f.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp != unix.Getpgrp()
}
