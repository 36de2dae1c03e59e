package rusage

import (
	goruntime "runtime"
	"testing"
	"time"
)

// Work done shows in CPU, and the heap in use in the peak.
func TestUsage(t *testing.T) {
	if goruntime.GOOS == "windows" || goruntime.GOOS == "plan9" {
		t.Skip("no getrusage here")
	}
	start := CPU()
	keep := make([]byte, 32<<20)
	for i := range keep {
		keep[i] = byte(i)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	if used := CPU() - start; used <= 0 {
		t.Errorf("CPU used %v after 20 ms of work", used)
	}
	if peak := PeakRSSMB(); peak < 32 {
		t.Errorf("peak RSS %.1f MiB with 32 MiB touched", peak)
	}
	goruntime.KeepAlive(keep)
}
