package main

import (
	"encoding/json"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"
	"testing"
)

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
	// This test binary has not tuned its scheduler: its count is Go's own.
	if got, want := procs(), goruntime.GOMAXPROCS(0)+1; got != want {
		t.Errorf("without GOMAXPROCS: the process ran with %d processors, want %d", got, want)
	}
	for _, n := range []int{1, 5} {
		if got := procs("GOMAXPROCS=" + strconv.Itoa(n)); got != n {
			t.Errorf("with GOMAXPROCS=%d: the process ran with %d processors", n, got)
		}
	}
}
