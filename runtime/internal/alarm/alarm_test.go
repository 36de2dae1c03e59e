package alarm

import (
	"container/heap"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// idle waits until c's goroutine has handled every alarm and exited.
func idle(t *testing.T, c *clock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		running, pending := c.running, len(c.due)
		c.mu.Unlock()
		if !running {
			if pending != 0 {
				t.Fatalf("the alarm stopped with %d alarms pending", pending)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alarm still runs with %d alarms pending", pending)
		}
		time.Sleep(time.Millisecond)
	}
}

func linuxOnly(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux only; elsewhere an alarm never goes off")
	}
}

func TestAlarmsGoOffInOrderAndTheLoopStops(t *testing.T) {
	linuxOnly(t)
	var c clock
	now := time.Now()
	// Out of order, one in the past, two equal: each goes off once it is
	// due, never before, and the goroutine ends with the last.
	var as []*Alarm
	for _, d := range []time.Duration{20, 5, -1, 10, 10, 1} {
		as = append(as, c.set(now.Add(d*time.Millisecond)))
	}
	c.mu.Lock()
	ok := c.ok
	c.mu.Unlock()
	if !ok {
		t.Fatal("no timerfd on Linux")
	}
	for _, a := range as {
		select {
		case <-a.C:
		case <-time.After(10 * time.Second):
			t.Fatalf("the alarm due at +%s never went off", a.at.Sub(now))
		}
		if late := time.Since(a.at); late < 0 {
			t.Fatalf("the alarm due at +%s went off %s early", a.at.Sub(now), -late)
		}
	}
	idle(t, &c)

	// It starts again for a later alarm.
	a := c.set(time.Now().Add(3 * time.Millisecond))
	<-a.C
	idle(t, &c)
}

// A wait that ends early withdraws its alarm, which then never goes off;
// once nothing is pending the goroutine ends at once instead of sleeping
// until the last alarm withdrawn.
func TestCancelWithdrawsTheAlarm(t *testing.T) {
	linuxOnly(t)
	var c clock
	far := c.set(time.Now().Add(time.Hour))
	farther := c.set(time.Now().Add(2 * time.Hour))
	soon := c.set(time.Now().Add(time.Millisecond))
	soon.Cancel()
	far.Cancel()
	far.Cancel() // no longer pending: ignored
	c.mu.Lock()
	pending := len(c.due)
	c.mu.Unlock()
	if pending != 1 {
		t.Fatalf("%d alarms pending after two of three were withdrawn", pending)
	}
	time.Sleep(5 * time.Millisecond)
	select {
	case <-soon.C:
		t.Fatal("a cancelled alarm went off")
	default:
	}
	farther.Cancel()
	idle(t, &c)
}

// Where the timer file cannot be used, an alarm never goes off and
// cancelling it is harmless: the caller's own timer does the waking.
func TestWithoutTimerFileAlarmsStaySilent(t *testing.T) {
	var c clock
	c.once.Do(func() {}) // never opened
	a := c.set(time.Now())
	time.Sleep(2 * time.Millisecond)
	select {
	case <-a.C:
		t.Fatal("an alarm went off without a timer file")
	default:
	}
	a.Cancel()
	if c.running {
		t.Fatal("a loop started without a timer file")
	}
}

func TestSetAndCancelFromManyGoroutines(t *testing.T) {
	var c clock
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				a := c.set(time.Now().Add(time.Duration((g*50+i)%7) * time.Millisecond))
				if i%3 == 0 {
					a.Cancel()
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	idle(t, &c)
}

func TestAlarmsPopInOrderAndKeepTheirIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Now()
	var h alarms
	var all []*Alarm
	for range 500 {
		a := &Alarm{at: base.Add(time.Duration(r.IntN(1000)) * time.Microsecond)}
		heap.Push(&h, a)
		all = append(all, a)
	}
	for _, a := range all[:100] { // removal by index, as Cancel does
		heap.Remove(&h, a.i)
		if a.i != -1 {
			t.Fatalf("a removed alarm kept index %d", a.i)
		}
	}
	for i, a := range h {
		if a.i != i {
			t.Fatalf("alarm at %d believes it is at %d", i, a.i)
		}
	}
	prev := time.Time{}
	for h.Len() > 0 {
		got := heap.Pop(&h).(*Alarm)
		if got.at.Before(prev) {
			t.Fatalf("popped %v after %v", got.at, prev)
		}
		prev = got.at
	}
}
