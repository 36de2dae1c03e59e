package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// StartupOptions describe the whole-process measurement.
type StartupOptions struct {
	// Binary is the swarmdeck executable to start; "" means this one.
	Binary string
	// Runs is how many times each measurement is repeated (K).
	Runs int
	// Latency of the HTTP model's every reply.
	Latency time.Duration
	// Fanout is the number of parallel sub-agents of the wide fan-out run,
	// compared with a run of one sub-agent.
	Fanout int
	// Progress receives a line per round; nil for none.
	Progress io.Writer
}

// DefaultStartupOptions are the defaults of `swarmdeck bench --startup`.
func DefaultStartupOptions() StartupOptions {
	return StartupOptions{Runs: 20, Latency: 100 * time.Millisecond, Fanout: 50}
}

// Stats summarises repeated measurements, in milliseconds.
type Stats struct {
	Median float64 `json:"median"`
	P90    float64 `json:"p90"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// StartupReport is what the whole-process measurement found. The JSON keys
// are what `swarmdeck bench --startup --json` prints.
type StartupReport struct {
	Runs     int     `json:"runs"`
	LatencyS float64 `json:"latency_s"`
	// ExecBaselineMS is `swarmdeck --help` from start to exit: what the
	// kernel, the Go runtime and the package initialisers cost before
	// swarmdeck does anything of its own.
	ExecBaselineMS Stats `json:"exec_baseline_ms"`
	// FirstRequestMS is `swarmdeck run --headless` from process start to
	// the arrival of its first LLM request: config, store (fresh, so with
	// its migrations), engine and the first prompt.
	FirstRequestMS Stats `json:"first_request_ms"`
	// RunWallMS is that run (one LLM call) from start to exit.
	RunWallMS Stats `json:"run_wall_ms"`
	Fanout    int   `json:"fanout"`
	// FanoutOneWallMS and FanoutWallMS are whole-process runs whose root
	// spawns 1 and Fanout sub-agents in parallel, each answering at once:
	// three LLM calls on the critical path either way.
	FanoutOneWallMS Stats `json:"fanout_1_wall_ms"`
	FanoutWallMS    Stats `json:"fanout_n_wall_ms"`
	// PerSubAgentMS is (wall(Fanout) - wall(1)) / (Fanout - 1) over the
	// rounds, each round running both back to back.
	PerSubAgentMS Stats   `json:"per_sub_agent_ms"`
	Targets       []Check `json:"targets"`
	GoVersion     string  `json:"go_version"`
	GOMAXPROCS    int     `json:"gomaxprocs"`
}

// Startup measures swarmdeck as a user starts it: it serves the scripted
// model over HTTP in this process with a fixed latency, then executes the
// binary as `run --headless --provider openai --base-url ...` again and
// again, timing the start-up (to the first request) and the cost of each
// additional parallel sub-agent.
func Startup(ctx context.Context, o StartupOptions) (*StartupReport, error) {
	if o.Runs < 1 {
		return nil, badOption("--runs %d: measure at least once", o.Runs)
	}
	if o.Fanout < 2 {
		return nil, badOption("--fanout %d: the fan-out cost compares 1 sub-agent with at least 2", o.Fanout)
	}
	if o.Fanout > agents.MaxSpawnTasks {
		return nil, badOption("--fanout %d: at most %d, the most sub-agents one sessions_spawn call starts", o.Fanout, agents.MaxSpawnTasks)
	}
	if o.Latency < 0 {
		return nil, badOption("--latency %s is negative; use 0 for none", o.Latency)
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, fmt.Errorf("find the swarmdeck binary to start: %w", err)
		}
	}
	tmp, removeTmp, err := scratch("swarmdeck-startup-")
	if err != nil {
		return nil, err
	}
	defer removeTmp()

	model, err := startModel(o.Latency)
	if err != nil {
		return nil, err
	}
	defer model.close()
	p, err := newProcRunner(bin, tmp, model, o.Fanout)
	if err != nil {
		return nil, err
	}

	// One round of everything first, not counted: it pages the binary in
	// and makes the file system caches as warm as a user's second run.
	rounds := make([]round, 0, o.Runs)
	t0 := time.Now()
	for i := -1; i < o.Runs; i++ {
		r, err := p.round(ctx, o.Fanout)
		if ctx.Err() != nil {
			// A child's exit or a cut request is what the stop looks like
			// from here; the stop is what to say.
			return nil, fmt.Errorf("startup measurement interrupted after %s: %w", time.Since(t0).Round(time.Millisecond), context.Cause(ctx))
		}
		if err != nil {
			return nil, err
		}
		if i < 0 {
			continue
		}
		rounds = append(rounds, r)
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "startup %d/%d: first request %.1f ms, fan-out 1 %.0f ms, fan-out %d %.0f ms\n",
				i+1, o.Runs, ms(r.firstRequest), ms(r.fanOne), o.Fanout, ms(r.fanN))
		}
	}
	rep := &StartupReport{Runs: o.Runs, LatencyS: o.Latency.Seconds(), Fanout: o.Fanout,
		GoVersion: goruntime.Version(), GOMAXPROCS: goruntime.GOMAXPROCS(0)}
	pick := func(f func(round) float64) Stats {
		xs := make([]float64, len(rounds))
		for i, r := range rounds {
			xs[i] = f(r)
		}
		return summarize(xs)
	}
	rep.ExecBaselineMS = pick(func(r round) float64 { return ms(r.baseline) })
	rep.FirstRequestMS = pick(func(r round) float64 { return ms(r.firstRequest) })
	rep.RunWallMS = pick(func(r round) float64 { return ms(r.runWall) })
	rep.FanoutOneWallMS = pick(func(r round) float64 { return ms(r.fanOne) })
	rep.FanoutWallMS = pick(func(r round) float64 { return ms(r.fanN) })
	rep.PerSubAgentMS = pick(func(r round) float64 { return ms(r.fanN-r.fanOne) / float64(o.Fanout-1) })
	rep.Targets = rep.checks()
	return rep, nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// summarize computes the median, the 90th percentile (nearest rank), the
// minimum and the maximum.
func summarize(xs []float64) Stats {
	if len(xs) == 0 {
		return Stats{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	median := s[len(s)/2]
	if len(s)%2 == 0 {
		median = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	rank := (9*len(s) + 9) / 10 // ceil(0.9 n), 1-based
	return Stats{Median: median, P90: s[rank-1], Min: s[0], Max: s[len(s)-1]}
}

// model is the HTTP model the child processes talk to. It notes when each
// chat request arrives, before the body is read, which is the moment a
// real server would start working on it.
type model struct {
	srv     *scripted.Server
	hs      *http.Server
	served  chan struct{}
	baseURL string

	mu       sync.Mutex
	arrivals []time.Time
}

func startModel(latency time.Duration) (*model, error) {
	m := &model{srv: scripted.New(scripted.Config{Latency: latency, StreamSpeed: 0, Policy: scripted.Bench()}), served: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen for the model: %w", err)
	}
	h := m.srv.Handler()
	m.hs = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/chat/completions") {
			now := time.Now()
			m.mu.Lock()
			m.arrivals = append(m.arrivals, now)
			m.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})}
	go func() {
		defer close(m.served)
		m.hs.Serve(ln)
	}()
	m.baseURL = "http://" + ln.Addr().String() + "/v1"
	return m, nil
}

// reset forgets the arrivals so far.
func (m *model) reset() {
	m.mu.Lock()
	m.arrivals = m.arrivals[:0]
	m.mu.Unlock()
}

// first is when the first request since the reset arrived, and how many
// arrived in all.
func (m *model) first() (time.Time, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.arrivals) == 0 {
		return time.Time{}, 0
	}
	return m.arrivals[0], len(m.arrivals)
}

func (m *model) close() {
	m.hs.Close()
	<-m.served
	m.srv.Close()
}

// procRunner starts swarmdeck processes against the model.
type procRunner struct {
	bin, dir, config string
	env              []string
	model            *model
	n                int // databases made so far
}

// childEnv is the environment of the child processes: this one, with the
// XDG directories moved into dir so that nothing of the user's (config,
// database, logs) is read or written, and without the OpenAI key, which the
// local model does not need and must not receive.
func childEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "OPENAI_API_KEY", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME":
			continue
		}
		env = append(env, kv)
	}
	return append(env, "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg", "config"),
		"XDG_DATA_HOME="+filepath.Join(dir, "xdg", "data"), "XDG_STATE_HOME="+filepath.Join(dir, "xdg", "state"))
}

func newProcRunner(bin, dir string, m *model, fanout int) (*procRunner, error) {
	ws := filepath.Join(dir, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return nil, err
	}
	// The child needs limits wide enough for the fan-out (the default
	// allows 16 concurrent LLM calls), and an openai provider whose key
	// variable is certainly unset: a base URL that is not api.openai.com
	// needs no key.
	cfg := fmt.Sprintf(`# written by swarmdeck bench --startup
provider: openai
providers:
  openai:
    type: openai
    base_url: %s
    api_key_env: SWARMDECK_BENCH_NO_KEY
    model: m
workspace: %s
log_file: %s
limits:
  max_sessions_per_run: %d
  max_concurrent_sessions: %d
  max_concurrent_llm_calls: %d
`, m.baseURL, strconv.Quote(ws), strconv.Quote(filepath.Join(dir, "swarmdeck.log")), fanout+16, fanout+16, fanout+16)
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return &procRunner{bin: bin, dir: dir, config: path, env: childEnv(dir), model: m}, nil
}

// round is one measurement of each kind.
type round struct {
	baseline, firstRequest, runWall, fanOne, fanN time.Duration
}

func (p *procRunner) round(ctx context.Context, fanout int) (round, error) {
	var r round
	var err error
	if r.baseline, err = p.exec(ctx, "--help"); err != nil {
		return r, err
	}
	if r.runWall, r.firstRequest, err = p.run(ctx, 1, 1); err != nil {
		return r, err
	}
	if r.fanOne, _, err = p.run(ctx, 2, 1); err != nil {
		return r, err
	}
	if r.fanN, _, err = p.run(ctx, fanout+1, fanout); err != nil {
		return r, err
	}
	return r, nil
}

// run executes one headless run of a bench swarm of agents on a fresh
// database and returns its wall time and the time to its first LLM
// request. A run that made fewer calls than its shape needs (its children
// were not all spawned) measured something else, and is an error.
func (p *procRunner) run(ctx context.Context, agents, fanout int) (wall, first time.Duration, err error) {
	goal := scripted.BenchGoal(agents, fanout, 1, 0)
	p.n++
	db := filepath.Join(p.dir, "db", "run-"+strconv.Itoa(p.n)+".db")
	p.model.reset()
	t0 := time.Now()
	wall, err = p.execAt(ctx, t0, "--config", p.config, "run", "--headless", "--db", db,
		"--provider", "openai", "--base-url", p.model.baseURL, "--model", "m", goal)
	if err != nil {
		return 0, 0, err
	}
	at, calls := p.model.first()
	if calls == 0 {
		return 0, 0, fmt.Errorf("swarmdeck run %q finished without calling the model", goal)
	}
	if want := scripted.BenchCalls(agents, fanout, 1); calls != want {
		return 0, 0, fmt.Errorf("swarmdeck run %q made %d model calls where its shape needs %d: its sub-agents were not all started", goal, calls, want)
	}
	return wall, at.Sub(t0), nil
}

func (p *procRunner) exec(ctx context.Context, args ...string) (time.Duration, error) {
	return p.execAt(ctx, time.Now(), args...)
}

// execAt runs the binary to its end and returns the time from t0 to its
// exit. A failure carries the end of what it wrote on stderr.
func (p *procRunner) execAt(ctx context.Context, t0 time.Time, args ...string) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, p.bin, args...)
	cmd.Dir = p.dir
	cmd.Env = p.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	wall := time.Since(t0)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "…" + msg[len(msg)-2000:]
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return 0, fmt.Errorf("%s %s exited with status %d: %s", filepath.Base(p.bin), strings.Join(args[:min(len(args), 4)], " "), ee.ExitCode(), msg)
		}
		return 0, fmt.Errorf("start %s: %w", p.bin, err)
	}
	return wall, nil
}
