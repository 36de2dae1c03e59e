package alarm

import (
	"container/heap"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
)

// idle waits until c's goroutine has handled every time and exited.
func idle(t *testing.T, c *clock) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		running, pending := c.running, len(c.due)
		c.mu.Unlock()
		if !running {
			if pending != 0 {
				t.Fatalf("the alarm stopped with %d times pending", pending)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the alarm still runs with %d times pending", pending)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestSetHandlesEveryTimeAndStops(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux only; elsewhere Set does nothing")
	}
	var c clock
	now := time.Now()
	// Out of order, one in the past, two equal: each is handled once it is
	// due, the earliest first, and the goroutine ends with the last.
	for _, d := range []time.Duration{20, 5, -1, 10, 10, 1} {
		c.set(now.Add(d * time.Millisecond))
	}
	c.mu.Lock()
	ok := c.ok
	c.mu.Unlock()
	if !ok {
		t.Fatal("no timerfd on Linux")
	}
	idle(t, &c)
	if time.Since(now) < 20*time.Millisecond {
		t.Fatal("the alarm finished before its last time was due")
	}

	// It starts again for a later time, and a timer due then still fires.
	tm := time.NewTimer(3 * time.Millisecond)
	c.set(time.Now().Add(3 * time.Millisecond))
	<-tm.C
	idle(t, &c)
}

// A wait that ends early withdraws its time; once nothing is pending the
// goroutine ends at once instead of sleeping until the last time withdrawn.
func TestCancelEndsTheWait(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("timerfd is Linux only; elsewhere Set does nothing")
	}
	var c clock
	far, farther := time.Now().Add(time.Hour), time.Now().Add(2*time.Hour)
	c.set(far)
	c.set(farther)
	c.cancel(far)
	c.cancel(far) // no longer pending: ignored
	c.mu.Lock()
	pending := len(c.due)
	c.mu.Unlock()
	if pending != 1 {
		t.Fatalf("%d times pending after one of two was withdrawn", pending)
	}
	c.cancel(farther)
	idle(t, &c)
	c.cancel(time.Now()) // nothing pending, nothing running
}

func TestSetFromManyGoroutines(t *testing.T) {
	var c clock
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				c.set(time.Now().Add(time.Duration((g*50+i)%7) * time.Millisecond))
			}
		}()
	}
	for range 8 {
		<-done
	}
	idle(t, &c)
}

func TestTimesPopInOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Now()
	var h times
	for range 500 {
		heap.Push(&h, base.Add(time.Duration(r.IntN(1000))*time.Microsecond))
	}
	prev := time.Time{}
	for h.Len() > 0 {
		got := heap.Pop(&h).(time.Time)
		if got.Before(prev) {
			t.Fatalf("popped %v after %v", got, prev)
		}
		prev = got
	}
}
