//go:build unix

// Package rusage reads what the process has used so far, for the bench and
// the benchmarks: on a shared machine wall time mostly measures the other
// tenants, CPU time much less.
package rusage

import (
	goruntime "runtime"
	"syscall"
	"time"
)

// CPU is the user and system CPU time the whole process has used: the
// runtime, an in-process scripted server, SQLite and the collector.
func CPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// PeakRSSMB is the process's peak resident set size so far, in MiB.
func PeakRSSMB() float64 {
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
