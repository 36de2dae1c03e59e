package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

func runBench(t *testing.T, o Options) *Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rep, err := Run(ctx, o)
	if err != nil {
		t.Fatalf("Run(%+v): %v", o, err)
	}
	return rep
}

// A small swarm runs to its end, and what the report says agrees with the
// shape the policy builds and with what the store holds.
func TestRunSmallSwarm(t *testing.T) {
	for _, latency := range []time.Duration{0, 20 * time.Millisecond} {
		t.Run(latency.String(), func(t *testing.T) {
			o := Options{Agents: 20, Fanout: 5, Turns: 2, Broadcasts: 1, Latency: latency}
			var progress bytes.Buffer
			o.Progress = &progress
			rep := runBench(t, o)
			sessions, depth := scripted.BenchShape(20, 5)
			if rep.Status != "completed" || rep.Agents != sessions || rep.Depth != depth {
				t.Fatalf("status %s, %d agents at depth %d; the shape has %d at depth %d", rep.Status, rep.Agents, rep.Depth, sessions, depth)
			}
			if want := scripted.BenchCalls(20, 5, 2); rep.LLMCalls != int64(want) || rep.ExpectedLLMCalls != want {
				t.Fatalf("%d LLM calls (expected %d); the shape makes %d", rep.LLMCalls, rep.ExpectedLLMCalls, want)
			}
			if want := scripted.BenchIdeal(20, 5, 2, latency).Seconds(); rep.IdealS != want {
				t.Fatalf("ideal %v s, want %v s", rep.IdealS, want)
			}
			// 20 agents, fanout 5: four nodes of 4 and one of 3 under the
			// root, so 14 leaves, each broadcasting once to its 2 or 1
			// siblings.
			if rep.Broadcasts != 14 || rep.BroadcastsDelivered != 4*3*2+2*1 {
				t.Fatalf("%d broadcasts delivered %d times; want 14 and 26", rep.Broadcasts, rep.BroadcastsDelivered)
			}
			if rep.Events <= 0 || rep.StoredMessages < 2*rep.Agents || rep.WallS <= 0 || rep.PeakRSSMB <= 0 || rep.CPUMicrosPerTurn <= 0 {
				t.Fatalf("implausible report: %+v", rep)
			}
			var written map[string]any
			if b, err := json.Marshal(rep); err != nil || json.Unmarshal(b, &written) != nil {
				t.Fatalf("report as JSON: %v", err)
			}
			if eff, ok := written["efficiency"]; !ok || (latency == 0) != (eff == nil) {
				t.Fatalf("JSON efficiency %v (present %v) at latency %v; want null at 0 only", eff, ok, latency)
			}
			if latency == 0 {
				if rep.Efficiency != 0 {
					t.Fatalf("efficiency %v at 0 latency, want 0 (not meaningful)", rep.Efficiency)
				}
				if len(rep.Targets) == 0 || rep.Targets[len(rep.Targets)-1].Name != "cpu_us_per_turn" {
					t.Fatalf("targets at 0 latency: %+v", rep.Targets)
				}
			} else if rep.Efficiency <= 0 || rep.Efficiency > 1.05 {
				// Above 1 would mean the run beat its critical path: the
				// ideal formula overestimates.
				t.Fatalf("efficiency %v is outside (0, 1.05]: ideal %v s, wall %v s", rep.Efficiency, rep.IdealS, rep.WallS)
			}
		})
	}
}

// A node whose children are a mix of subtrees and leaves spawns them in two
// calls that the runtime runs in order; the run can never beat the ideal
// that accounts for it.
func TestRunMixedShapeIsNotFasterThanIdeal(t *testing.T) {
	rep := runBench(t, Options{Agents: 12, Fanout: 10, Turns: 1, Broadcasts: 0, Latency: 30 * time.Millisecond})
	// 11 below the root: a node of 2 and nine leaves, spawned alongside
	// each other. Calls on the critical path: the root's 2, then the
	// node's 2 and its leaf's 1 (the leaves' 1 beside them).
	if math.Abs(rep.IdealS-0.15) > 1e-9 {
		t.Fatalf("ideal %v s, want 0.15 s", rep.IdealS)
	}
	if rep.WallS < rep.IdealS {
		t.Fatalf("wall %v s is below the critical path %v s", rep.WallS, rep.IdealS)
	}
	if rep.Broadcasts != 0 || rep.LLMCalls != int64(scripted.BenchCalls(12, 10, 1)) {
		t.Fatalf("%d broadcasts, %d calls", rep.Broadcasts, rep.LLMCalls)
	}
}

// The JSON object carries the keys scripts read.
func TestReportJSONKeys(t *testing.T) {
	rep := runBench(t, Options{Agents: 3, Fanout: 2, Turns: 1, Latency: 0})
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"agents", "ideal_s", "wall_s", "efficiency", "peak_rss_mb", "llm_calls", "cpu_us_per_turn", "events",
		"stored_messages", "broadcasts_delivered_per_s", "fanout", "turns", "latency_s", "go_version", "gomaxprocs", "status", "targets"} {
		if _, ok := m[k]; !ok {
			t.Errorf("key %q missing from %s", k, b)
		}
	}
	if m["agents"].(float64) != 3 {
		t.Fatalf("agents = %v", m["agents"])
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []Options{
		{Agents: 0, Fanout: 10, Turns: 2},
		{Agents: 10, Fanout: 0, Turns: 2},
		{Agents: 10, Fanout: 10, Turns: 0},
		{Agents: 10, Fanout: 10, Turns: 2, Latency: -time.Second},
		{Agents: 10, Fanout: 10, Turns: 2, Broadcasts: -1},
		{Agents: maxAgents + 1, Fanout: 10, Turns: 2},
		{Agents: 300, Fanout: 201, Turns: 1}, // more than one sessions_spawn starts
	} {
		if _, err := Run(context.Background(), o); !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), "--") {
			t.Errorf("Run(%+v) = %v; want a bad-options error naming the flag", o, err)
		}
	}
	if _, err := Startup(context.Background(), StartupOptions{Runs: 0, Fanout: 50}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("Startup with no runs: %v", err)
	}
	if _, err := Startup(context.Background(), StartupOptions{Runs: 1, Fanout: 201}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("Startup with a fan-out sessions_spawn cannot start: %v", err)
	}
}

// A --db that cannot be used is bad usage, named, as for `swarmdeck run`;
// and the bench does not start.
func TestRunRejectsABadDB(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, db := range []string{dir, notDB, filepath.Join(notDB, "x.db")} {
		_, err := Run(context.Background(), Options{Agents: 2, Fanout: 2, Turns: 1, DB: db})
		if !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), db) {
			t.Errorf("--db %s: %v; want a bad-options error naming it", db, err)
		}
	}
}

// A run that cannot complete is an error, not a report of a fast run.
func TestRunCancelled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := Run(ctx, Options{Agents: 5, Fanout: 5, Turns: 1, Latency: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("err = %v", err)
	}
}

// Targets apply to the shapes they were set for and to easier ones.
func TestTargetsThatApply(t *testing.T) {
	names := func(r *Report) string {
		var out []string
		for _, c := range r.checks() {
			out = append(out, c.Name+" "+c.Target)
		}
		return strings.Join(out, ", ")
	}
	for _, tc := range []struct {
		agents  int
		latency float64
		want    string
	}{
		{1000, 1, "efficiency >= 0.97, peak_rss_mb <= 300"},
		{10, 0.05, "efficiency >= 0.98, peak_rss_mb <= 300"},
		{100, 0, "peak_rss_mb <= 300, cpu_us_per_turn <= 200"},
		{1000, 0.05, "peak_rss_mb <= 300"}, // no target was set there
		{5000, 1, ""},
	} {
		r := &Report{RequestedAgents: tc.agents, LatencyS: tc.latency}
		if got := names(r); got != tc.want {
			t.Errorf("%d agents at %vs: targets %q, want %q", tc.agents, tc.latency, got, tc.want)
		}
	}
	r := &Report{RequestedAgents: 1000, LatencyS: 1, Efficiency: 0.96, PeakRSSMB: 120}
	if c := r.checks(); c[0].OK || !c[1].OK {
		t.Fatalf("checks %+v", c)
	}
}

func TestWriteReport(t *testing.T) {
	r := &Report{RunID: "r-1", Status: "completed", RequestedAgents: 1000, Agents: 1000, Depth: 3, Fanout: 10, Turns: 2,
		BroadcastsPerAgent: 1, LatencyS: 1, IdealS: 8, WallS: 8.1, Efficiency: 8 / 8.1, PeakRSSMB: 350, LLMCalls: 2222,
		ExpectedLLMCalls: 2222, Events: 1, GoVersion: "go1.26", GOMAXPROCS: 2}
	r.Targets = r.checks()
	var b bytes.Buffer
	if err := WriteReport(&b, r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1000 agents", "0.988", "≥ 0.97", "✓", "350.0 MB", "≤ 300 MB  ✗", "run r-1 (in a temporary database, removed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// A run kept with --db says where.
	r.DB = "/tmp/b.db"
	b.Reset()
	if err := WriteReport(&b, r); err != nil || !strings.Contains(b.String(), "run r-1 in /tmp/b.db\n") {
		t.Errorf("a kept run's report: %v\n%s", err, b.String())
	}
	for line := range strings.Lines(out) {
		if strings.HasSuffix(line, " \n") {
			t.Errorf("trailing spaces: %q", line)
		}
	}
}

// A swarm too small for its fanout says how wide its tree really is:
// 10 agents are a root and nine children, whatever --fanout asks.
func TestReportHeaderSaysTheFanoutUsed(t *testing.T) {
	for _, tc := range []struct {
		agents, fanout int
		want           string
	}{
		{10, 10, "(tree of depth 1, fanout 9: --fanout 10 takes 11 agents)"},
		{11, 10, "(tree of depth 1, fanout 10)"},
		{1000, 10, "(tree of depth 3, fanout 10)"},
		{5, 2, "(tree of depth 2, fanout 2)"},
	} {
		var b strings.Builder
		_, depth := scripted.BenchShape(tc.agents, tc.fanout)
		if err := WriteReport(&b, &Report{RequestedAgents: tc.agents, Agents: tc.agents, Depth: depth, Fanout: tc.fanout, Turns: 2}); err != nil {
			t.Fatal(err)
		}
		if first, _, _ := strings.Cut(b.String(), "\n"); !strings.Contains(first, tc.want) {
			t.Errorf("%d agents, fanout %d: header %q, want %q in it", tc.agents, tc.fanout, first, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := summarize([]float64{5, 1, 4, 2, 3, 10, 6, 7, 9, 8})
	if s.Median != 5.5 || s.P90 != 9 || s.Min != 1 || s.Max != 10 {
		t.Fatalf("%+v", s)
	}
	if s := summarize([]float64{3, 1, 2}); s.Median != 2 || s.P90 != 3 {
		t.Fatalf("%+v", s)
	}
}

// buildSwarmdeck builds the command into a temporary directory, or skips
// the test when that is impossible here.
func buildSwarmdeck(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build swarmdeck with")
	}
	bin := filepath.Join(t.TempDir(), "swarmdeck")
	cmd := exec.Command(goBin, "build", "-o", bin, "github.com/swarmdeck/swarmdeck")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build swarmdeck: %v\n%s", err, out)
	}
	return bin
}

// The whole-process measurement runs the real binary against the model and
// sees its requests.
func TestStartup(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the swarmdeck binary")
	}
	bin := buildSwarmdeck(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Startup(ctx, StartupOptions{Binary: bin, Runs: 2, Latency: 10 * time.Millisecond, Fanout: 4, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs != 2 || rep.Fanout != 4 || len(rep.Targets) != 2 || strings.Count(progress.String(), "\n") != 2 {
		t.Fatalf("report %+v, progress %q", rep, progress.String())
	}
	for name, s := range map[string]Stats{"baseline": rep.ExecBaselineMS, "first request": rep.FirstRequestMS, "run": rep.RunWallMS,
		"fan-out 1": rep.FanoutOneWallMS, "fan-out 4": rep.FanoutWallMS} {
		if s.Min <= 0 || s.Median < s.Min || s.P90 < s.Median || s.Max < s.P90 {
			t.Errorf("%s: %+v", name, s)
		}
	}
	// The first request comes before the run's end, and a run of three
	// sequential calls lasts at least their latency.
	if rep.FirstRequestMS.Max >= rep.RunWallMS.Max || rep.FanoutOneWallMS.Min < 30 {
		t.Fatalf("first request %+v, run %+v, fan-out 1 %+v", rep.FirstRequestMS, rep.RunWallMS, rep.FanoutOneWallMS)
	}
	var b bytes.Buffer
	if err := WriteStartup(&b, rep); err != nil || !strings.Contains(b.String(), "first LLM request") {
		t.Fatalf("%v\n%s", err, b.String())
	}
}

// A child that fails says why.
func TestStartupReportsAFailingChild(t *testing.T) {
	_, err := Startup(context.Background(), StartupOptions{Binary: "/bin/false", Runs: 1, Fanout: 2})
	if err == nil || !strings.Contains(err.Error(), "exited with status 1") {
		t.Fatalf("err = %v", err)
	}
}

// A child that exits 0 without the calls its run needs measured nothing of
// the kind: it is an error, not a figure with a tick.
func TestStartupReportsAChildThatDidNotRun(t *testing.T) {
	_, err := Startup(context.Background(), StartupOptions{Binary: "/bin/true", Runs: 1, Fanout: 2})
	if err == nil || !strings.Contains(err.Error(), "without calling the model") {
		t.Fatalf("err = %v", err)
	}
}

// The floor makes exactly the calls of the bench shape, never beats the
// critical path (mixed shapes included), and reports its keys.
func TestFloor(t *testing.T) {
	for _, o := range []Options{
		{Agents: 20, Fanout: 5, Turns: 2, Latency: 20 * time.Millisecond},
		{Agents: 12, Fanout: 10, Turns: 1, Latency: 30 * time.Millisecond},
		{Agents: 30, Fanout: 10, Turns: 2, Latency: 0},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		rep, err := Floor(ctx, o)
		cancel()
		if err != nil {
			t.Fatalf("Floor(%+v): %v", o, err)
		}
		if want := scripted.BenchCalls(o.Agents, o.Fanout, o.Turns); rep.LLMCalls != int64(want) {
			t.Fatalf("%+v: %d calls, the shape makes %d", o, rep.LLMCalls, want)
		}
		if want := scripted.BenchIdeal(o.Agents, o.Fanout, o.Turns, o.Latency).Seconds(); rep.IdealS != want {
			t.Fatalf("%+v: ideal %v s, want %v s", o, rep.IdealS, want)
		}
		if rep.WallS < rep.IdealS || rep.CPUMicrosPerCall <= 0 {
			t.Fatalf("%+v: implausible report %+v", o, rep)
		}
		if o.Latency > 0 && (rep.Efficiency <= 0 || rep.Efficiency > 1) {
			t.Fatalf("%+v: efficiency %v", o, rep.Efficiency)
		}
		var out bytes.Buffer
		if err := WriteFloor(&out, rep); err != nil || !strings.Contains(out.String(), "efficiency") {
			t.Fatalf("WriteFloor: %v\n%s", err, out.String())
		}
	}
	if _, err := Floor(context.Background(), Options{Agents: 0, Fanout: 10, Turns: 1}); err == nil {
		t.Fatal("Floor accepted 0 agents")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Floor(ctx, Options{Agents: 10, Fanout: 10, Turns: 1, Latency: time.Second}); err == nil {
		t.Fatal("Floor of a cancelled context succeeded")
	}
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	var progress bytes.Buffer
	_, err := Floor(ctx, Options{Agents: 10, Fanout: 10, Turns: 1, Latency: 10 * time.Second, Progress: &progress})
	if err == nil || !strings.Contains(err.Error(), "floor interrupted after") || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Floor interrupted mid-run: %v", err)
	}
}

// With one turn per leaf there is no turn to broadcast in: the header says
// so instead of promising broadcasts.
func TestReportHeaderWithOneTurn(t *testing.T) {
	var b strings.Builder
	if err := WriteReport(&b, &Report{Agents: 10, Depth: 1, Fanout: 10, Turns: 1, BroadcastsPerAgent: 3}); err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(b.String(), "\n"); !strings.Contains(first, "no broadcasts (a leaf of one turn has no turn to broadcast in") {
		t.Errorf("header %q", first)
	}
}
