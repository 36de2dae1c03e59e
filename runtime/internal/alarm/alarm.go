// Package alarm wakes a goroutine at the moment it is due, however busy or
// idle the rest of the process is.
//
// A Go timer lives on the scheduler's processor (P) that set it, and runs
// when that P next looks at its timers. Two cases make it late. When every
// goroutine is blocked, the scheduler sleeps in epoll_wait, whose timeout
// is whole milliseconds: the timer fires up to a millisecond late. And when
// the P that holds it has gone idle while the others stay busy, nobody
// looks at its timers until the system monitor notices, which a runtime
// trace of a bench run showed taking up to a millisecond more. That is
// noise for most waits, but not for the scripted model, whose latency is
// the yardstick `swarmdeck bench` measures the runtime against: every late
// reply is charged to the runtime.
//
// Set arms a Linux timerfd for the time a wait is due. Its expiry is a
// network event: it wakes epoll_wait, and the alarm's goroutine, readied by
// the poller on whichever P is free, closes the channel of every wait that
// is due. Callers wait on that channel and on their own Go timer, whichever
// comes first: the timer still serves when every P is busy and nobody
// polls. Elsewhere Set returns a channel that never closes, and the timer
// alone keeps Go's precision.
package alarm

import (
	"container/heap"
	"sync"
	"time"
)

// Alarm is one pending wake-up.
type Alarm struct {
	// C is closed when the alarm is due. It never closes where there is no
	// timer file, or once the alarm is cancelled.
	C   <-chan struct{}
	c   chan struct{}
	at  time.Time
	i   int // index in the clock's heap; -1 once it is no longer pending
	clk *clock
}

// Set returns an alarm that goes off at t. It does not wait: the caller
// waits on C together with its own timer for t.
func Set(t time.Time) *Alarm { return std.set(t) }

func (c *clock) set(t time.Time) *Alarm {
	c.once.Do(c.open)
	a := &Alarm{c: make(chan struct{}), at: t, i: -1, clk: c}
	a.C = a.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ok { // no timerfd, or reading it failed
		return a
	}
	heap.Push(&c.due, a)
	if a.i == 0 {
		c.arm(t)
	}
	if !c.running {
		c.running = true
		go c.loop()
	}
	return a
}

// Cancel withdraws an alarm whose wait ended before it went off; its
// channel then never closes. An alarm no longer pending is ignored. With
// nothing left pending, the goroutine that waits on the timer file ends.
func (a *Alarm) Cancel() {
	c := a.clk
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.i < 0 {
		return
	}
	earliest := a.i == 0
	heap.Remove(&c.due, a.i)
	switch {
	case !c.running:
	case len(c.due) == 0:
		c.arm(time.Time{}) // expire now: the loop finds nothing due and ends
	case earliest:
		c.arm(c.due[0].at)
	}
}

// clock is one timer file and the alarms pending on it. The loop goroutine
// runs while any alarm is pending and waits for the file to expire.
type clock struct {
	once    sync.Once
	timer   timerFile
	mu      sync.Mutex
	ok      bool // the timer file works; guarded by mu after open
	due     alarms
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
			c.ok = false // leave waits to their own timers
			for _, a := range c.due {
				a.i = -1
			}
			c.due = c.due[:0]
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		now := time.Now()
		for len(c.due) > 0 && !c.due[0].at.After(now) {
			close(heap.Pop(&c.due).(*Alarm).c)
		}
		if len(c.due) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.arm(c.due[0].at)
		c.mu.Unlock()
	}
}

// alarms is a min-heap of pending alarms by due time; each knows its index.
type alarms []*Alarm

func (h alarms) Len() int           { return len(h) }
func (h alarms) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h alarms) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].i, h[j].i = i, j
}
func (h *alarms) Push(x any) {
	a := x.(*Alarm)
	a.i = len(*h)
	*h = append(*h, a)
}
func (h *alarms) Pop() any {
	old := *h
	a := old[len(old)-1]
	old[len(old)-1] = nil
	a.i = -1
	*h = old[:len(old)-1]
	return a
}
