//go:build unix

package llm

import "syscall"

// processCPU is the CPU time the test process has used, user and system.
// Benchmarks report it per call next to wall time, which on a shared
// machine mostly measures the other tenants.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
