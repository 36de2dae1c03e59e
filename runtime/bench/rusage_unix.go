//go:build unix

package bench

import (
	goruntime "runtime"
	"syscall"
	"time"
)

// processCPU is the user and system CPU time the whole process has used:
// the runtime, the in-process scripted server, SQLite and the GC.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSSMB is the process's peak resident set size so far, in MiB.
func peakRSSMB() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	kb := float64(ru.Maxrss) // kilobytes on Linux and the BSDs
	if goruntime.GOOS == "darwin" || goruntime.GOOS == "ios" {
		kb /= 1024 // bytes there
	}
	return kb / 1024
}
