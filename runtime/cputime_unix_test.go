//go:build unix

package runtime

import (
	"syscall"
	"time"
)

// cpuTime is the process's user and system CPU time so far. Benchmarks
// report CPU per operation next to wall time: on a shared machine the wall
// figure moves with everyone else's load, the CPU figure much less.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
