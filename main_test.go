package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/config"
)

// goOwnProcs is the processors Go gives this test binary by itself: a
// package variable is set before the testing package applies -cpu.
var goOwnProcs = goruntime.GOMAXPROCS(0)

// The process runs with one processor more than Go would take by itself,
// and a GOMAXPROCS set by the user is left as it is. The bench reports the
// count the process ran with.
func TestProcessSchedulerProcessors(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary; skipped with -short")
	}
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set for the tests: Go's own choice is unknown")
	}
	bin := buildSwarmdeck(t)
	procs := func(env ...string) int {
		t.Helper()
		cmd := exec.Command(bin, "bench", "--agents", "2", "--latency", "0", "--json")
		cmd.Env = append(isolatedEnv(t), env...)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bench %v: %v\n%s", env, err, out)
		}
		var rep struct {
			GOMAXPROCS int `json:"gomaxprocs"`
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("bench %v: %v\n%s", env, err, out)
		}
		return rep.GOMAXPROCS
	}
	// goOwnProcs is Go's own count, taken before a -cpu flag of the test
	// binary set another.
	if got, want := procs(), goOwnProcs+1; got != want {
		t.Errorf("without GOMAXPROCS: the process ran with %d processors, want %d", got, want)
	}
	for _, n := range []int{1, 5} {
		if got := procs("GOMAXPROCS=" + strconv.Itoa(n)); got != n {
			t.Errorf("with GOMAXPROCS=%d: the process ran with %d processors", n, got)
		}
	}
}

// A log past maxLogBytes is moved to .1 at the next start, which writes a
// new one: the log stays bounded over years of runs, and the last stretch
// of the old one is kept.
func TestOpenLogMovesABigLogAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "swarmdeck.log")
	// A log of maxLogBytes exactly is not past it: it stays.
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), maxLogBytes), 0o644); err != nil {
		t.Fatal(err)
	}
	_, closeLog, _, err := openLog(&config.Config{LogFile: path})
	if err != nil {
		t.Fatal(err)
	}
	closeLog()
	if _, err := os.Stat(path + ".1"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a log of %d bytes was moved aside (%v)", maxLogBytes, err)
	}
	old := bytes.Repeat([]byte("level=INFO msg=\"run ended\"\n"), maxLogBytes/27+1)
	if err := os.WriteFile(path, old, 0o644); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"first start", "second start"} {
		log, closeLog, _, err := openLog(&config.Config{LogFile: path})
		if err != nil {
			t.Fatal(err)
		}
		log.Info(want)
		closeLog()
		moved, err := os.ReadFile(path + ".1")
		if err != nil || !bytes.Equal(moved, old) {
			t.Fatalf("start %d: %s.1 holds %d bytes (%v), want the old log's %d", i+1, path, len(moved), err, len(old))
		}
	}
	now, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(now, []byte("first start")) || !bytes.Contains(now, []byte("second start")) || len(now) > 1000 {
		t.Errorf("the new log holds %d bytes, want both starts' lines only:\n%s", len(now), now[:min(len(now), 400)])
	}
}
