package event

import "sync"

// Bus fans events out to subscribers. Publish never blocks the publisher:
// must-deliver events are queued without bound per subscriber (the queue is
// drained by the subscriber's own goroutine), while lossy events (token
// deltas) are dropped for a subscriber whose lossy buffer is full.
type Bus struct {
	mu   sync.Mutex
	subs []*Subscription
}

// Subscription receives events on C until Close.
type Subscription struct {
	C <-chan Event

	bus    *Bus
	out    chan Event
	mu     sync.Mutex
	queue  []Event
	signal chan struct{}
	lossy  chan Event
	done   chan struct{}
	closed bool
}

// Subscribe returns a subscription. lossyBuffer bounds how many undelivered
// token deltas are kept before new ones are dropped.
func (b *Bus) Subscribe(lossyBuffer int) *Subscription {
	if lossyBuffer < 1 {
		lossyBuffer = 1
	}
	s := &Subscription{
		bus:    b,
		out:    make(chan Event),
		signal: make(chan struct{}, 1),
		lossy:  make(chan Event, lossyBuffer),
		done:   make(chan struct{}),
	}
	s.C = s.out
	b.mu.Lock()
	b.subs = append(b.subs, s)
	b.mu.Unlock()
	go s.pump()
	return s
}

// Publish delivers e to every subscriber, in publish order.
func (b *Bus) Publish(events ...Event) {
	b.mu.Lock()
	subs := b.subs
	b.mu.Unlock()
	for _, s := range subs {
		s.enqueue(events)
	}
}

// PublishLossy offers e to every subscriber, dropping it for any that is
// behind.
func (b *Bus) PublishLossy(e Event) {
	b.mu.Lock()
	subs := b.subs
	b.mu.Unlock()
	for _, s := range subs {
		select {
		case s.lossy <- e:
		default:
		}
	}
}

func (s *Subscription) enqueue(events []Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, events...)
	s.mu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// pump moves queued events to C. Must-deliver events go first so that a
// flood of deltas cannot delay a status change.
func (s *Subscription) pump() {
	defer close(s.out)
	var batch []Event
	for {
		s.mu.Lock()
		batch, s.queue = s.queue, batch[:0]
		s.mu.Unlock()
		for _, e := range batch {
			select {
			case s.out <- e:
			case <-s.done:
				return
			}
		}
		if len(batch) > 0 {
			continue
		}
		select {
		case <-s.signal:
		case e := <-s.lossy:
			select {
			case s.out <- e:
			case <-s.done:
				return
			}
		case <-s.done:
			return
		}
	}
}

// Close stops delivery; C is closed soon after.
func (s *Subscription) Close() {
	s.bus.mu.Lock()
	for i, x := range s.bus.subs {
		if x == s {
			s.bus.subs = append(s.bus.subs[:i:i], s.bus.subs[i+1:]...)
			break
		}
	}
	s.bus.mu.Unlock()
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
	}
	s.mu.Unlock()
}
