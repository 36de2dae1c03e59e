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

// A stream silent across a real stop of the process (SIGSTOP for longer
// than the idle timeout, then SIGCONT) is not stalled: its silence is
// counted in awake time.
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
