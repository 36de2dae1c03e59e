//go:build !unix

package scripted

import "time"

func processCPU() time.Duration { return 0 }
