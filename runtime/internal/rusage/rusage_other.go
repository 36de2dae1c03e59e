//go:build !unix

// Package rusage reads what the process has used so far, for the bench and
// the benchmarks.
package rusage

import "time"

// CPU is 0 where getrusage is missing.
func CPU() time.Duration { return 0 }

// PeakRSSMB is 0 where getrusage is missing.
func PeakRSSMB() float64 { return 0 }
