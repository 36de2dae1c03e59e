package llm

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// backoff is the wait before retry number n (0 for the first retry): the
// server's Retry-After when it gave one, else exponential with jitter so
// hundreds of sessions hitting the same limit do not come back in step.
// Either way it is capped at MaxRetryWait.
func (c *Client) backoff(n int, e *Error) time.Duration {
	d := e.RetryAfter
	if d <= 0 {
		base := min(baseBackoff<<min(n, 16), maxBackoff)
		d = base/2 + rand.N(base/2+1)
	}
	return min(d, c.cfg.MaxRetryWait)
}

// retryAfter reads retry-after-ms (OpenAI, Azure) or Retry-After, in
// seconds or as an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
