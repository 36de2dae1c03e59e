package awake

import (
	"context"
	"errors"
	"testing"
	"time"
)

// pretendStopped makes the process look as if it had just been continued
// after standing stopped for d: its last sign of life was d ago.
func pretendStopped(d time.Duration) {
	Now() // the heartbeat runs
	mu.Lock()
	alive.Store(int64(time.Since(epoch) - d))
	mu.Unlock()
}

func TestAStopIsNotAwakeTime(t *testing.T) {
	from := time.Now()
	before := Now()
	pretendStopped(10 * time.Second)
	// The stop is counted as the gap less a beat, by whichever of Now and
	// the heartbeat sees it first.
	if got := Now() - before; got > 0 {
		t.Errorf("awake time went on by %s across a 10 s stop", got)
	}
	if got := StoppedSince(from.Add(-time.Minute)); got < 10*time.Second-beat {
		t.Errorf("StoppedSince before the stop = %s, want at least %s", got, 10*time.Second-beat)
	}
	if got := Since(from.Add(-time.Minute)); got > time.Minute-10*time.Second+beat+time.Second {
		t.Errorf("Since a minute ago = %s across a 10 s stop", got)
	}
	if got := StoppedSince(time.Now().Add(time.Second)); got != 0 {
		t.Errorf("StoppedSince a time after the stop = %s, want 0", got)
	}
	// The stop's stretch is there to be told, cut at the time asked from.
	st := Stops(from.Add(-time.Minute))
	if len(st) == 0 {
		t.Fatal("Stops before the stop: none")
	}
	last := st[len(st)-1]
	if d := last.To.Sub(last.From); d < 10*time.Second-beat || d > 10*time.Second {
		t.Errorf("the stop lasted %s, want 10 s less at most a beat", d)
	}
	// (Stops of the tests run before this one, with -count, may end
	// within that second too: this one is told by its end.)
	ours := func(st []Stop) []Stop {
		var out []Stop
		for _, s := range st {
			if s.To.Equal(last.To) {
				out = append(out, s)
			}
		}
		return out
	}
	if cut := ours(Stops(last.To.Add(-time.Second))); len(cut) != 1 || !cut[0].From.Equal(last.To.Add(-time.Second)) {
		t.Errorf("Stops from a second before its end = %v, want one from then to %v", cut, last.To)
	}
	if after := ours(Stops(last.To)); len(after) != 0 {
		t.Errorf("Stops from its end = %v, want none", after)
	}
	// A gap shorter than a beat and overdue is a busy moment, not a stop.
	stopped := StoppedSince(from.Add(-time.Minute))
	pretendStopped(beat + overdue/2)
	if got := StoppedSince(from.Add(-time.Minute)); got != stopped {
		t.Errorf("a gap of %s counted as a stop of %s", beat+overdue/2, got-stopped)
	}
}

// A timer's function waits for the awake time it was given: a stop before
// it was due puts it off by the stop.
func TestTimerWaitsOutAStop(t *testing.T) {
	start := time.Now()
	fired := make(chan time.Duration, 1)
	AfterFunc(200*time.Millisecond, func() { fired <- time.Since(start) })
	pretendStopped(2 * time.Second)
	select {
	case after := <-fired:
		if after < 1500*time.Millisecond {
			t.Errorf("fired %s after it was set, across a 1.5 s stop and a 200 ms timeout", after)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the timer never fired")
	}
}

func TestTimerStop(t *testing.T) {
	called := make(chan bool, 1)
	tm := AfterFunc(time.Millisecond, func() { called <- true })
	<-called
	if tm.Stop() {
		t.Error("Stop reported stopping a timer whose function ran")
	}
	tm = AfterFunc(time.Hour, func() { called <- true })
	if !tm.Stop() {
		t.Error("Stop did not report stopping a pending timer")
	}
	if tm.Stop() {
		t.Error("a second Stop reported stopping the timer again")
	}
}

func TestWithTimeoutCause(t *testing.T) {
	cause := errors.New("too slow")
	ctx, cancel := WithTimeoutCause(context.Background(), 10*time.Millisecond, cause)
	defer cancel()
	<-ctx.Done()
	if !errors.Is(context.Cause(ctx), cause) {
		t.Errorf("cause %v, want %v", context.Cause(ctx), cause)
	}
	ctx, cancel = WithTimeoutCause(context.Background(), time.Hour, cause)
	cancel()
	if !errors.Is(context.Cause(ctx), context.Canceled) {
		t.Errorf("cancelled before its time: cause %v, want context.Canceled", context.Cause(ctx))
	}
	if _, ok := ctx.Deadline(); ok {
		t.Error("a deadline in awake time has no wall-clock deadline to give")
	}
}

// A stop is told to those watching for one, once it is seen; a watcher
// removed is not called.
func TestOnStop(t *testing.T) {
	seen := make(chan struct{}, 4)
	removed := 0
	remove := OnStop(func() { seen <- struct{}{} })
	removeOther := OnStop(func() { removed++ })
	removeOther()
	pretendStopped(3 * time.Second)
	Now()
	select {
	case <-seen:
	case <-time.After(5 * time.Second):
		t.Fatal("the stop was not told")
	}
	remove()
	pretendStopped(3 * time.Second)
	Now()
	select {
	case <-seen:
		t.Error("a removed watcher was called")
	case <-time.After(200 * time.Millisecond):
	}
	if removed != 0 {
		t.Errorf("a watcher removed before the stop was called %d times", removed)
	}
}

// A sleep of the machine is told when the wall clock gains on the
// monotonic one between two beats by more than overdue; a heartbeat that
// is late on both clocks alike is no sleep.
func TestSlept(t *testing.T) {
	for _, tc := range []struct{ wall, mono, want time.Duration }{
		{beat, beat, 0},
		{10 * time.Second, 10 * time.Second, 0}, // a stop of the process: both clocks went on
		{beat + overdue, beat, 0},
		{time.Hour + beat, beat, time.Hour},
		{beat - time.Minute, beat, 0}, // the wall clock set back
	} {
		if got := slept(tc.wall, tc.mono); got != tc.want {
			t.Errorf("slept(%s, %s) = %s, want %s", tc.wall, tc.mono, got, tc.want)
		}
	}
}

// A sleep is among the Stops, which a run's pauses come from, and is
// counted by Seen; it is not in StoppedSince, as the monotonic clock the
// timeouts run on never counted it.
func TestASleepIsAStopOnTheWallClock(t *testing.T) {
	from := time.Now()
	before, stopped := Seen(), StoppedSince(from)
	end := time.Now()
	addSleep(end, time.Hour)
	if got := Seen(); got != before+1 {
		t.Errorf("Seen went from %d to %d across a sleep", before, got)
	}
	if got := StoppedSince(from); got != stopped {
		t.Errorf("StoppedSince took in a sleep: %s, was %s", got, stopped)
	}
	// Asked from before the sleep began, it is whole; from within it, cut.
	st := Stops(from.Add(-2 * time.Hour))
	if len(st) == 0 || !st[len(st)-1].To.Equal(end) || st[len(st)-1].To.Sub(st[len(st)-1].From) != time.Hour {
		t.Fatalf("Stops = %v, want the hour's sleep up to %v last", st, end)
	}
	// (The other tests' stops end later than the test began: only the last
	// one is this sleep.)
	if cut := Stops(end.Add(-time.Minute)); len(cut) == 0 || !cut[len(cut)-1].To.Equal(end) || cut[len(cut)-1].To.Sub(cut[len(cut)-1].From) != time.Minute {
		t.Errorf("Stops from a minute before the sleep's end = %v", cut)
	}
}
