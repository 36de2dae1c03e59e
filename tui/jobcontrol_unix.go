//go:build !windows

package tui

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// jobControl reports whether a stop of this process could be undone from
// its terminal: whether its process group has a parent in another group of
// the same session, a shell with job control. Without one the group is
// orphaned, and the kernel drops the stop a ctrl+z sends it; the dashboard
// would hand back the terminal and wait for a continue that never comes
// (swarmdeck started directly by tmux, ssh or a terminal emulator).
//
// It follows the line of parents from this process up, which is where
// that parent is in practice (a shell, or a script a shell started).
func jobControl() bool {
	sid, err := unix.Getsid(0)
	if err != nil {
		return false
	}
	pgrp := unix.Getpgrp()
	pid := os.Getppid()
	for range 64 {
		if pid <= 1 {
			return false
		}
		psid, err1 := unix.Getsid(pid)
		ppgrp, err2 := unix.Getpgid(pid)
		if err1 != nil || err2 != nil || psid != sid {
			return false
		}
		if ppgrp != pgrp {
			return true
		}
		// A parent in this group: look at its own parent.
		if pid = parentOf(pid); pid == 0 {
			return false
		}
	}
	return false
}

// parentOf is the parent of process pid from /proc (0 where there is no
// /proc, or no such process).
func parentOf(pid int) int {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := strings.LastIndex(string(stat), ") ")
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(stat[i+2:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
