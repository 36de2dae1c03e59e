//go:build !windows

package llm

import (
	"net/http"
	"os"
	"syscall"
	"testing"
	"time"
)

// A stream silent for longer than the idle timeout is not stalled when
// the process was stopped and continued meanwhile (ctrl+z, then fg): its
// silence counts from the continue. Without one, the same silence is.
func TestIdleTimeoutCountsFromAContinue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		continued bool
		attempts  int
	}{
		{"continued", true, 1},
		{"not continued", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				s := startSSE(w)
				s.data(contentChunk("Hello, "))
				if n == 1 {
					// The first chunk is read; 0.6 s on, the process is
					// "continued"; the next chunk comes 1.2 s after the
					// first, past the 1 s idle timeout from it, but not
					// from the continue.
					time.Sleep(600 * time.Millisecond)
					if tc.continued {
						syscall.Kill(os.Getpid(), syscall.SIGCONT)
					}
					select {
					case <-time.After(600 * time.Millisecond):
					case <-r.Context().Done():
						return
					}
				}
				s.data(contentChunk("world"))
				s.data(finishChunk("stop"))
				s.done()
			})
			c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = time.Second })
			resp := mustStream(t, c, userRequest("x"), nil)
			if resp.Attempts != tc.attempts || resp.Content != "Hello, world" {
				t.Errorf("attempts = %d, content %q; want %d attempts", resp.Attempts, resp.Content, tc.attempts)
			}
		})
	}
}
