package coordination

import "sync"

// Counter counts uses per key (a session id, usually) against one limit,
// e.g. task_broadcast calls per session. It only counts; the runtime words
// the error a model sees. It is safe for concurrent use.
type Counter struct {
	mu    sync.Mutex
	limit int
	used  map[string]int
}

// NewCounter returns a Counter allowing limit uses per key; limit <= 0
// means no limit (uses are still counted).
func NewCounter(limit int) *Counter {
	return &Counter{limit: limit, used: make(map[string]int)}
}

// Allow records one use of key if the limit permits it. It reports whether
// the use was allowed and how many uses key has after the call (so a
// refused call returns the limit).
func (c *Counter) Allow(key string) (ok bool, used int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.used[key]
	if c.limit > 0 && n >= c.limit {
		return false, n
	}
	n++
	if c.used == nil {
		c.used = make(map[string]int) // the zero Counter is usable
	}
	c.used[key] = n
	return true, n
}

// Used reports how many uses key has had.
func (c *Counter) Used(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used[key]
}

// SetUsed sets key's count, for a run resumed from the store whose earlier
// uses must still count against the limit.
func (c *Counter) SetUsed(key string, used int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if used <= 0 {
		delete(c.used, key)
		return
	}
	if c.used == nil {
		c.used = make(map[string]int)
	}
	c.used[key] = used
}

// Limit returns the per-key limit (<= 0 means none).
func (c *Counter) Limit() int { return c.limit }
