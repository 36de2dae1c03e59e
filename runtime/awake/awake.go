// Package awake measures time as the process lives it: a stretch during
// which the process stood stopped (ctrl+z in the dashboard, SIGSTOP) does
// not count.
//
// A run's limits are meant for the work: a session's half hour, a call's
// three minutes, a stream's silence. While the process is stopped nothing
// works, and counted on the wall clock a long ctrl+z failed every session
// as timed out the moment fg continued it.
//
// A stop is seen as a gap in a heartbeat that beats every beat: whichever
// sees a gap longer than beat+overdue first, the heartbeat or a call of
// Now, counts it as a stop as long as the gap less one beat. A stop is so
// counted short by at most a beat, and a heartbeat delayed more than
// overdue on a starved machine counts as a stop.
//
// A sleep of the whole machine (a laptop's lid closed) is another kind of
// stop: Go's monotonic clock, which the gaps are measured on, does not
// advance while the system is suspended, so awake time already leaves it
// out, but the wall clock does advance. The heartbeat sees it as the wall
// clock gaining more than overdue on the monotonic one between two beats,
// and tells it among the Stops (a wall clock set forward that far looks
// the same, and is left out of a run's elapsed time the same way).
package awake

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

const (
	beat    = 500 * time.Millisecond
	overdue = time.Second
)

var (
	epoch   = time.Now()
	alive   atomic.Int64 // since epoch, the last sign of life
	stopped atomic.Int64 // the stops seen so far, in all
	seen    atomic.Int64 // how many stops were seen, sleeps included
	mu      sync.Mutex   // held to count a stop
	stops   []stop       // the stops seen, oldest first; mu guards it
	// watchers are called once a stop is seen; mu guards them.
	watchers = map[*int]func(){}
	start    sync.Once
)

// stop is a stretch the process stood stopped, as seen once it ran again.
type stop struct {
	end   time.Time
	d     time.Duration
	sleep bool // the machine's: not on the monotonic clock
}

// Now is the awake time since the process started.
func Now() time.Duration {
	start.Do(heartbeat)
	at := time.Since(epoch)
	if at-time.Duration(alive.Load()) > beat+overdue {
		return count(at)
	}
	return at - time.Duration(stopped.Load())
}

// count takes a gap before at for a stop, once: whoever sees it first.
func count(at time.Duration) time.Duration {
	mu.Lock()
	defer mu.Unlock()
	if gap := at - time.Duration(alive.Load()); gap > beat+overdue {
		d := gap - beat
		stopped.Add(int64(d))
		// The wall clock's now, not epoch's plus at, which falls behind
		// it by every sleep of the machine.
		addLocked(stop{end: time.Now(), d: d})
	}
	if at > time.Duration(alive.Load()) {
		alive.Store(int64(at))
	}
	return at - time.Duration(stopped.Load())
}

// maxStops bounds the stops remembered for StoppedSince: a process stopped
// and continued all day keeps the latest.
const maxStops = 256

// heartbeat starts the sign of life that dates the start of a stop.
func heartbeat() {
	alive.Store(int64(time.Since(epoch)))
	go func() {
		prev := time.Now()
		for range time.Tick(beat) {
			now := time.Now()
			at := now.Sub(epoch)
			if last := alive.Load(); at-time.Duration(last) > beat+overdue {
				count(at)
			} else {
				alive.CompareAndSwap(last, int64(at)) // unless a gap was just counted
			}
			if d := slept(now.Round(0).Sub(prev.Round(0)), now.Sub(prev)); d > 0 {
				addSleep(now, d)
			}
			prev = now
		}
	}()
}

// addLocked notes a stop and tells the watchers.
func addLocked(s stop) {
	stops = append(stops, s)
	seen.Add(1)
	if len(stops) > maxStops {
		stops = append(stops[:0], stops[len(stops)-maxStops:]...)
	}
	for _, fn := range watchers {
		go fn() // whoever counted the stop goes on at once
	}
}

// slept is how long the machine slept between two beats that the wall
// clock put wall apart and the monotonic clock mono: none unless the wall
// clock gained more than overdue.
func slept(wall, mono time.Duration) time.Duration {
	if d := wall - mono; d > overdue {
		return d
	}
	return 0
}

// addSleep notes a sleep of the machine of d that ended at end.
func addSleep(end time.Time, d time.Duration) {
	mu.Lock()
	defer mu.Unlock()
	addLocked(stop{end: end, d: d, sleep: true})
}

// Seen counts the stops seen so far, sleeps of the machine included: a
// caller that polls it learns that Stops has more to tell.
func Seen() int64 {
	Now() // a stop not yet seen is counted
	return seen.Load()
}

// StoppedSince is how long the process stood stopped after t, by the stops
// it has seen so far, on the monotonic clock: sleeps of the machine, which
// it does not count, are not in it.
func StoppedSince(t time.Time) time.Duration {
	Now() // a stop not yet seen is counted
	mu.Lock()
	defer mu.Unlock()
	var d time.Duration
	for _, s := range stops {
		if !s.sleep && s.end.After(t) {
			d += min(s.d, s.end.Sub(t))
		}
	}
	return d
}

// OnStop calls fn, on a goroutine of its own, each time a stop of the
// process is seen: soon after the process is continued. Call the function
// it returns to stop the calls.
func OnStop(fn func()) (remove func()) {
	Now() // the heartbeat runs
	key := new(int)
	mu.Lock()
	watchers[key] = fn
	mu.Unlock()
	return func() {
		mu.Lock()
		delete(watchers, key)
		mu.Unlock()
	}
}

// A Stop is a stretch the process stood stopped, on the wall clock.
type Stop struct{ From, To time.Time }

// Stops are the stops seen so far that ended after t, oldest first, each
// cut to its part after t.
func Stops(t time.Time) []Stop {
	Now() // a stop not yet seen is counted
	mu.Lock()
	defer mu.Unlock()
	var out []Stop
	for _, s := range stops {
		if s.end.After(t) {
			// On the wall clock: the monotonic one leaves sleeps out.
			out = append(out, Stop{From: s.end.Add(-min(s.d, s.end.Round(0).Sub(t.Round(0)))), To: s.end})
		}
	}
	return out
}

// Since is the awake time from the wall-clock time t to now.
func Since(t time.Time) time.Duration {
	return time.Since(t) - StoppedSince(t)
}

// A Timer calls its function once the awake time it was given has passed.
type Timer struct {
	mu    sync.Mutex
	t     *time.Timer
	from  time.Duration
	d     time.Duration
	done  bool // stopped, or its function called
	fired func()
}

// AfterFunc calls f in its own goroutine once d of awake time has passed.
func AfterFunc(d time.Duration, f func()) *Timer {
	t := &Timer{from: Now(), d: d, fired: f}
	t.mu.Lock()
	t.t = time.AfterFunc(d, t.check)
	t.mu.Unlock()
	return t
}

func (t *Timer) check() {
	t.mu.Lock()
	if t.done {
		t.mu.Unlock()
		return
	}
	if left := t.d - (Now() - t.from); left > 0 {
		t.t.Reset(left) // the process stood stopped meanwhile
		t.mu.Unlock()
		return
	}
	t.done = true
	t.mu.Unlock()
	t.fired()
}

// Stop keeps the timer's function from being called, and reports whether
// it did: false once the function has been called or the timer stopped.
func (t *Timer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.t.Stop()
	return true
}

// WithTimeoutCause is context.WithTimeoutCause on awake time: the context
// ends with cause once d of awake time has passed. Its Deadline is unset:
// no wall-clock time says when that will be.
func WithTimeoutCause(ctx context.Context, d time.Duration, cause error) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := AfterFunc(d, func() { cancel(cause) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}
