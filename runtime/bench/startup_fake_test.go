package bench

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
)

// fakeChildEnv makes this test binary act as a swarmdeck that calls the
// model once per run, whatever the run's shape: a run whose sub-agents
// were never started.
const fakeChildEnv = "SWARMDECK_BENCH_FAKE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(fakeChildEnv) != "" {
		os.Exit(fakeChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeChild(args []string) int {
	i := slices.Index(args, "--base-url")
	if !slices.Contains(args, "run") || i < 0 || i+1 >= len(args) {
		return 0 // --help
	}
	resp, err := http.Post(args[i+1]+"/chat/completions", "application/json", strings.NewReader("{}"))
	if err != nil {
		return 1
	}
	resp.Body.Close()
	return 0
}

// A run that called the model but fewer times than its shape needs
// measured something else than a fan-out, and says so.
func TestStartupReportsAChildThatSpawnedTooFew(t *testing.T) {
	t.Setenv(fakeChildEnv, "1")
	_, err := Startup(context.Background(), StartupOptions{Binary: os.Args[0], Runs: 1, Fanout: 2})
	if err == nil || !strings.Contains(err.Error(), "made 1 model calls where its shape needs 3: its sub-agents were not all started") {
		t.Fatalf("err = %v", err)
	}
}
