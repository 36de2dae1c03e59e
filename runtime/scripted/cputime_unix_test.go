//go:build unix

package scripted

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process has used:
// benchmarks report it per operation because wall time on a shared machine
// says more about the neighbours than about the code.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
