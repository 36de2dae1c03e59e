package agents

import (
	"testing"
	"time"
)

// A timeout argument of 0 is the tool's default; a tiny one is a short
// wait, not the default; one too large for a Duration is a day, not a
// number that wraps to a negative one (and so to the default).
func TestTimeoutSeconds(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want time.Duration
	}{
		{0, 0},
		{1e-10, time.Millisecond},
		{0.25, 250 * time.Millisecond},
		{30, 30 * time.Second},
		{86400, maxTimeout},
		{1e12, maxTimeout},
		{1e300, maxTimeout},
	} {
		if got := seconds(tc.in); got != tc.want {
			t.Errorf("seconds(%g) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
