package llm

import (
	"sync"
	"sync/atomic"
	"time"
)

// A stream's silence is counted from its last line, but not across a stop
// of this process (ctrl+z in the dashboard, SIGSTOP): while the process was
// stopped the server went on sending, and what it sent waits in the
// socket, read as soon as the process runs. Counted across the stop, a
// stop longer than the idle timeout aborted every stream in flight, each
// call then retried and paid for again.
//
// A continue shows in two ways, as either may come first: the watchdog's
// timer goes off long after it was due (a timer overdue when the process
// continues fires before the SIGCONT reaches os/signal), or the SIGCONT
// was seen less than the idle timeout ago.
var (
	epoch       = time.Now()
	continuedAt atomic.Int64 // since epoch, of the last continue; 0: none
	watchOnce   sync.Once
)

// overdue is how late a watchdog must go off to be taken for a stop of
// the process: far more than a busy machine delays a timer.
const overdue = time.Second

// now is the time since epoch.
func now() time.Duration { return time.Since(epoch) }

// noteContinued records that the process was continued now.
func noteContinued() { continuedAt.Store(int64(now())) }

// sinceContinued is how long ago the process was last continued after a
// stop (a very long time if never).
func sinceContinued() time.Duration {
	at := continuedAt.Load()
	if at == 0 {
		return 1 << 62
	}
	return now() - time.Duration(at)
}

// stallWatch calls fire once a stream has been silent for d, not counting
// a stop of the process.
type stallWatch struct {
	d    time.Duration
	fire func()
	t    *time.Timer
	last atomic.Int64 // since epoch, of the last line
	due  atomic.Int64 // since epoch, when t goes off
}

// newStallWatch starts a watch whose stream has just sent a line.
func newStallWatch(d time.Duration, fire func()) *stallWatch {
	watchOnce.Do(watchContinues)
	w := &stallWatch{d: d, fire: fire}
	w.t = time.AfterFunc(time.Hour, w.check)
	w.seen()
	w.arm(d)
	return w
}

// seen records a line of the stream.
func (w *stallWatch) seen() { w.last.Store(int64(now())) }

func (w *stallWatch) arm(after time.Duration) {
	w.due.Store(int64(now() + after))
	w.t.Reset(after)
}

func (w *stallWatch) check() {
	at := now()
	cont, quiet := sinceContinued(), at-time.Duration(w.last.Load())
	switch {
	case at-time.Duration(w.due.Load()) > overdue:
		w.arm(w.d) // the process was stopped: the silence starts now
	case cont < w.d:
		w.arm(w.d - cont)
	case quiet < w.d:
		w.arm(w.d - quiet)
	default:
		w.fire()
	}
}

// stop stops the watch.
func (w *stallWatch) stop() { w.t.Stop() }
