package llm

import (
	"sync/atomic"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/awake"
)

// A stream's silence is counted from its last line in awake time: while the
// process stood stopped (ctrl+z in the dashboard, SIGSTOP) the server went
// on sending, and what it sent waits in the socket, read as soon as the
// process runs. Counted across the stop, a stop longer than the idle
// timeout aborted every stream in flight, each call then retried and paid
// for again.

// stallWatch calls fire once a stream has been silent for d.
type stallWatch struct {
	d    time.Duration
	fire func()
	t    *time.Timer
	last atomic.Int64 // awake time of the last line
}

// newStallWatch starts a watch whose stream has just sent a line.
func newStallWatch(d time.Duration, fire func()) *stallWatch {
	w := &stallWatch{d: d, fire: fire}
	w.seen()
	w.t = time.AfterFunc(time.Hour, w.check) // set before check can read it
	w.t.Reset(d)
	return w
}

// seen records a line of the stream.
func (w *stallWatch) seen() { w.last.Store(int64(awake.Now())) }

func (w *stallWatch) check() {
	if quiet := awake.Now() - time.Duration(w.last.Load()); quiet < w.d {
		w.t.Reset(w.d - quiet)
		return
	}
	w.fire()
}

// stop stops the watch.
func (w *stallWatch) stop() { w.t.Stop() }
