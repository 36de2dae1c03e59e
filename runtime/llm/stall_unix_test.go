//go:build !windows

package llm

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
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
			// The first chunk is read; 0.6 s on, the process is
			// "continued"; the next chunk comes 1.2 s after the first,
			// past the 1 s idle timeout from it, but not from the continue.
			fs := newFakeServer(t, pausingReply(func() {
				time.Sleep(600 * time.Millisecond)
				if tc.continued {
					syscall.Kill(os.Getpid(), syscall.SIGCONT)
				}
			}, 600*time.Millisecond))
			c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = time.Second })
			resp := mustStream(t, c, userRequest("x"), nil)
			if resp.Attempts != tc.attempts || resp.Content != "Hello, world" {
				t.Errorf("attempts = %d, content %q; want %d attempts", resp.Attempts, resp.Content, tc.attempts)
			}
		})
	}
}

// A stream silent across a real stop of the process (SIGSTOP for longer
// than the idle timeout, then SIGCONT) is not stalled: the watchdog,
// overdue when the process continues, goes off before the SIGCONT is
// seen, and takes its own lateness for the stop.
func TestIdleTimeoutSpansAStop(t *testing.T) {
	if os.Getenv("SWARMDECK_STALL_CHILD") == "1" {
		streamAcrossAStop(t)
		return
	}
	if testing.Short() {
		t.Skip("stops a process for 3 s; skipped with -short")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestIdleTimeoutSpansAStop$", "-test.v")
	cmd.Env = append(os.Environ(), "SWARMDECK_STALL_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	var seen []string
	for lines.Scan() {
		seen = append(seen, lines.Text())
		if lines.Text() == "first chunk sent" {
			time.Sleep(300 * time.Millisecond) // for the client to read it
			cmd.Process.Signal(syscall.SIGSTOP)
			time.Sleep(3 * time.Second)
			cmd.Process.Signal(syscall.SIGCONT)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the stream across a stop failed: %v\n%s", err, strings.Join(seen, "\n"))
	}
	if !slices.Contains(seen, "attempts: 1") {
		t.Fatalf("the stream across a stop was not read in one attempt:\n%s", strings.Join(seen, "\n"))
	}
}

// streamAcrossAStop streams a reply whose second chunk comes 2 s after
// the first, with an idle timeout of 1 s; the parent test stops this
// process right after the first.
func streamAcrossAStop(t *testing.T) {
	fs := newFakeServer(t, pausingReply(func() { fmt.Println("first chunk sent") }, 2*time.Second))
	c, _ := newTestClient(fs, func(c *Config) { c.IdleTimeout = time.Second })
	resp := mustStream(t, c, userRequest("x"), nil)
	fmt.Printf("attempts: %d\n", resp.Attempts)
}

// pausingReply answers "Hello, world" in two chunks. Between them, on the
// first request only, it runs mid and then waits pause (less if the client
// leaves).
func pausingReply(mid func(), pause time.Duration) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, r *http.Request) {
		s := startSSE(w)
		s.data(contentChunk("Hello, "))
		if n == 1 {
			mid()
			select {
			case <-time.After(pause):
			case <-r.Context().Done():
				return
			}
		}
		s.data(contentChunk("world"))
		s.data(finishChunk("stop"))
		s.done()
	}
}
