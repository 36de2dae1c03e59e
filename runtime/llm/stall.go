package llm

import (
	"sync"
	"sync/atomic"
	"time"
)

// A stream's silence is counted from its last line, or from the moment
// this process was last continued after a stop (ctrl+z in the dashboard,
// SIGSTOP), whichever is later: while the process was stopped the server
// went on sending, and what it sent waits in the socket, read as soon as
// the process runs. Counted from the last line, a stop longer than the
// idle timeout aborted every stream in flight, each call then retried
// and paid for again.
var (
	epoch       = time.Now()
	continuedAt atomic.Int64 // time since epoch of the last continue; 0: none
	watchOnce   sync.Once
)

// noteContinued records that the process was continued now.
func noteContinued() { continuedAt.Store(int64(time.Since(epoch))) }

// sinceContinued is how long ago the process was last continued after a
// stop (a very long time if never).
func sinceContinued() time.Duration {
	at := continuedAt.Load()
	if at == 0 {
		return 1 << 62
	}
	return time.Since(epoch) - time.Duration(at)
}

// stallTimer calls fire once d has passed with no Reset, not counting the
// time before the process was last continued: a timer due within d of a
// continue waits for the rest of d from it.
func stallTimer(d time.Duration, fire func()) *time.Timer {
	watchOnce.Do(watchContinues)
	var t atomic.Pointer[time.Timer]
	t.Store(time.AfterFunc(d, func() {
		if left := d - sinceContinued(); left > 0 {
			if tt := t.Load(); tt != nil {
				tt.Reset(left)
				return
			}
		}
		fire()
	}))
	return t.Load()
}
