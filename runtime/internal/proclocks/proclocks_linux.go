// Package proclocks reads the POSIX locks a process holds from Linux's
// /proc/locks, for tests that check that swarmdeck keeps SQLite's locks:
// closing any descriptor of a file drops every POSIX lock the process
// holds on it, which nothing else would notice until another process
// takes the database for unused.
package proclocks

import (
	"fmt"
	"os"
	"strings"
	"syscall"
)

// Held counts the POSIX locks process pid holds on the file at path that
// start at byte start.
func Held(pid int, path string, start int64) (int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	locks, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0, err
	}
	n := 0
	for _, line := range strings.Split(string(locks), "\n") {
		// 1: POSIX  ADVISORY  READ 4711 08:01:1234567 128 128
		f := strings.Fields(line)
		if len(f) >= 8 && f[1] == "POSIX" && f[4] == fmt.Sprint(pid) &&
			strings.HasSuffix(f[5], fmt.Sprintf(":%d", ino)) && f[6] == fmt.Sprint(start) {
			n++
		}
	}
	return n, nil
}
