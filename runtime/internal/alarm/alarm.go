// Package alarm wakes an idle process at the moment a timer is due.
//
// When every goroutine of a Go program is blocked, the scheduler sleeps in
// epoll_wait, whose timeout is whole milliseconds: a timer then fires up to
// a millisecond late (a quarter to half of one on average). That is noise
// for most waits, but not for the scripted model, whose latency is the
// yardstick `swarmdeck bench` measures the runtime against: every wait that
// overshoots is charged to the runtime. Set arms a Linux timerfd for the
// time a timer is due; the poller wakes when it expires, and the timer
// fires on time. Elsewhere Set does nothing and timers keep Go's precision.
package alarm

import (
	"container/heap"
	"sync"
	"time"
)

// Set asks for the process to be awake at t. It does not wait and has no
// other effect: the caller still waits on its own timer, due at t.
func Set(t time.Time) { std.set(t) }

func (c *clock) set(t time.Time) {
	c.once.Do(c.open)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok { // no timerfd, or reading it failed
		return
	}
	heap.Push(&c.due, t)
	if c.due[0].Equal(t) {
		c.arm(t)
	}
	if !c.running {
		c.running = true
		go c.loop()
	}
}

// Cancel withdraws a time given to Set by a wait that ended before it. A
// time no longer pending (or never set) is ignored. With nothing left
// pending, the goroutine that waits on the timer file ends.
func Cancel(t time.Time) { std.cancel(t) }

func (c *clock) cancel(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok {
		return
	}
	for i, d := range c.due {
		if d.Equal(t) {
			heap.Remove(&c.due, i)
			break
		}
	}
	switch {
	case !c.running:
	case len(c.due) == 0:
		c.arm(time.Time{}) // expire now: the loop finds nothing due and ends
	case t.Before(c.due[0]):
		c.arm(c.due[0])
	}
}

// clock is one timer file and the times it is due at. The loop goroutine
// runs while any time is pending and waits for the file to expire.
type clock struct {
	once    sync.Once
	timer   timerFile
	mu      sync.Mutex
	ok      bool // the timer file works; guarded by mu after open
	due     times
	running bool
}

var std clock

func (c *clock) open() {
	t, err := openTimer()
	c.timer, c.ok = t, err == nil
}

// arm sets the timer file to expire at t; mu is held.
func (c *clock) arm(t time.Time) {
	c.timer.set(max(time.Until(t), time.Nanosecond))
}

func (c *clock) loop() {
	for {
		if err := c.timer.wait(); err != nil {
			c.mu.Lock()
			c.ok = false // leave timers to Go's own precision
			c.due = c.due[:0]
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		now := time.Now()
		for len(c.due) > 0 && !c.due[0].After(now) {
			heap.Pop(&c.due)
		}
		if len(c.due) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.arm(c.due[0])
		c.mu.Unlock()
	}
}

// times is a min-heap of due times.
type times []time.Time

func (h times) Len() int           { return len(h) }
func (h times) Less(i, j int) bool { return h[i].Before(h[j]) }
func (h times) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *times) Push(x any)        { *h = append(*h, x.(time.Time)) }
func (h *times) Pop() any {
	old := *h
	t := old[len(old)-1]
	*h = old[:len(old)-1]
	return t
}
