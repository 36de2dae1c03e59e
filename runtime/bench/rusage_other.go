//go:build !unix

package bench

import "time"

// Without getrusage the CPU time and peak RSS are reported as 0.
func processCPU() time.Duration { return 0 }

func peakRSSMB() float64 { return 0 }
