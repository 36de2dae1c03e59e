package tuitest

import (
	"bytes"
	"testing"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// WaitForText waits up to timeout until every text has been drawn by tm,
// styling stripped. Each call consumes the output it reads, so texts drawn
// in the same frame go in one call. It suits text that appears whole (a new
// row or line), not a figure that changes in place.
func WaitForText(t testing.TB, tm *teatest.TestModel, timeout time.Duration, texts ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		screen := []byte(ansi.Strip(string(b)))
		for _, text := range texts {
			if !bytes.Contains(screen, []byte(text)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(timeout), teatest.WithCheckInterval(20*time.Millisecond))
}
