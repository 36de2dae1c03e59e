// Package bench owns `swarmdeck bench`, the runtime's own performance
// report: it runs a swarm of a chosen shape on the scripted model over real
// HTTP with the real store (Run), and measures the whole process as a user
// starts it against an HTTP model (Startup). It compares what it measures
// with the ideal a runtime that cost nothing would reach, and with the
// project's targets.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/rusage"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// Options describe one bench run; DefaultOptions gives those of
// `swarmdeck bench`.
type Options struct {
	Agents     int           // sessions wanted, the root included
	Fanout     int           // children each parent spawns in parallel
	Turns      int           // LLM calls per leaf
	Latency    time.Duration // of every LLM call
	Broadcasts int           // task_broadcast calls per leaf on its first turn (none when Turns is 1)
	// DB is the SQLite file to use; "" means a fresh one in a temporary
	// directory, removed afterwards.
	DB string
	// Progress receives a line a second while the run lasts; nil for none.
	Progress io.Writer
	// Logger receives the runtime's logs; nil discards them.
	Logger *slog.Logger
	// CPUProfile, when set, receives a pprof CPU profile of the run (from
	// its start to its end, set-up and tear-down excluded).
	CPUProfile io.Writer
	// MemProfile, when set, receives a pprof allocation profile ("allocs")
	// written when the run has finished. It counts from process start, so
	// the engine's set-up is in it too, a small part beside the run.
	MemProfile io.Writer
}

// DefaultOptions are the defaults of `swarmdeck bench`: the shape and the
// latency of the headline target, 1,000 agents on 1 s LLM calls.
func DefaultOptions() Options {
	return Options{Agents: 1000, Fanout: 10, Turns: 2, Latency: time.Second, Broadcasts: 1}
}

// ErrBadOptions marks the errors that say an option is out of range: bad
// usage, as opposed to a bench that failed.
var ErrBadOptions = errors.New("bad bench options")

func badOption(format string, args ...any) error {
	return &optionError{fmt.Sprintf(format, args...)}
}

type optionError struct{ msg string }

func (e *optionError) Error() string        { return e.msg }
func (e *optionError) Is(target error) bool { return target == ErrBadOptions }

// dbError is a database DB names that cannot be used: bad usage, as a bad
// --db is for `swarmdeck run`. The runtime's error names the file.
type dbError struct{ err error }

func (e *dbError) Error() string        { return e.err.Error() }
func (e *dbError) Unwrap() error        { return e.err }
func (e *dbError) Is(target error) bool { return target == ErrBadOptions }

// maxAgents bounds a bench swarm: past it, memory, not the runtime, is
// what a run would measure.
const maxAgents = 20000

// maxTurns and maxBroadcasts bound a leaf's work: its history grows with
// each turn and each broadcast, and past them a run measures encoding one
// ever longer conversation, not what a turn costs (and takes hours).
const (
	maxTurns      = 1000
	maxBroadcasts = 1000
)

// Check refuses options that describe no swarm to measure, naming the
// flag; Run and Floor check too.
func (o *Options) Check() error {
	switch {
	case o.Agents < 1:
		return badOption("--agents %d: a swarm has at least 1 agent (the orchestrator)", o.Agents)
	case o.Agents > maxAgents:
		return badOption("--agents %d: at most %d (a run holds about 0.2 MB per agent, so %d would need about %.0f GB)",
			o.Agents, maxAgents, o.Agents, float64(o.Agents)*0.22/1024)
	case o.Fanout < 1:
		return badOption("--fanout %d: each parent spawns at least 1 child", o.Fanout)
	case o.Fanout > agents.MaxSpawnTasks:
		return badOption("--fanout %d: at most %d, the most children one sessions_spawn call starts", o.Fanout, agents.MaxSpawnTasks)
	case o.Turns < 1:
		return badOption("--turns %d: each agent takes at least 1 turn", o.Turns)
	case o.Turns > maxTurns:
		return badOption("--turns %d: at most %d (each turn adds to a leaf's history, which every later turn sends again)", o.Turns, maxTurns)
	case o.Latency < 0:
		return badOption("--latency %s is negative; use 0 for none", o.Latency)
	case o.Broadcasts < 0:
		return badOption("--broadcasts-per-agent %d is negative; use 0 for none", o.Broadcasts)
	case o.Broadcasts > maxBroadcasts:
		return badOption("--broadcasts-per-agent %d: at most %d (each one adds to the histories of the leaf and its siblings)", o.Broadcasts, maxBroadcasts)
	}
	return nil
}

// Report is what a bench run measured. The JSON keys are what `swarmdeck
// bench --json` prints.
type Report struct {
	RunID string `json:"run_id"`
	// DB is the database the run is kept in (--db); "" when it was a
	// temporary one, removed with the run.
	DB                 string  `json:"db,omitempty"`
	Status             string  `json:"status"`
	RequestedAgents    int     `json:"requested_agents"`
	Agents             int     `json:"agents"` // sessions actually created
	Depth              int     `json:"depth"`
	Fanout             int     `json:"fanout"`
	Turns              int     `json:"turns"`
	BroadcastsPerAgent int     `json:"broadcasts_per_agent"`
	LatencyS           float64 `json:"latency_s"`
	IdealS             float64 `json:"ideal_s"`
	WallS              float64 `json:"wall_s"`
	// Efficiency is ideal / wall; 0 when the latency is 0 (the ideal is 0
	// and only the CPU cost per turn means anything), which the JSON
	// writes as null, not as a measured 0.
	Efficiency              float64 `json:"efficiency"`
	PeakRSSMB               float64 `json:"peak_rss_mb"`
	LLMCalls                int64   `json:"llm_calls"`
	ExpectedLLMCalls        int     `json:"expected_llm_calls"`
	CPUS                    float64 `json:"cpu_s"`
	CPUMicrosPerTurn        float64 `json:"cpu_us_per_turn"`
	Events                  int     `json:"events"`
	StoredMessages          int     `json:"stored_messages"`
	Broadcasts              int     `json:"broadcasts"`
	BroadcastsDelivered     int     `json:"broadcasts_delivered"`
	BroadcastsDeliveredPerS float64 `json:"broadcasts_delivered_per_s"`
	GoVersion               string  `json:"go_version"`
	GOMAXPROCS              int     `json:"gomaxprocs"`
	HeapAllocMB             float64 `json:"heap_alloc_mb"` // live heap when the run finished
	GCCycles                uint32  `json:"gc_cycles"`     // during the run
	LLMCallsPerS            float64 `json:"llm_calls_per_s"`
	// RequestKBPerCall is the mean size of a chat request body (the
	// scripted server counts a prompt token per 4 bytes): it drives the
	// cost of encoding and decoding every turn.
	RequestKBPerCall         float64 `json:"request_kb_per_call"`
	StoredMessagesPerSession float64 `json:"stored_messages_per_session"`
	Targets                  []Check `json:"targets"` // those that apply to this shape
}

// MarshalJSON writes the report with its efficiency null where it has
// none (at 0 latency).
func (r Report) MarshalJSON() ([]byte, error) {
	type plain Report
	return json.Marshal(struct {
		plain
		Efficiency *float64 `json:"efficiency"`
	}{plain(r), ratioOrNil(r.IdealS, r.Efficiency)})
}

// ratioOrNil is &eff, or nil when there was no ideal time to measure
// against.
func ratioOrNil(ideal, eff float64) *float64 {
	if ideal <= 0 {
		return nil
	}
	return &eff
}

// Run builds a fresh engine on the scripted model with the bench policy,
// runs a swarm of the shape o describes to its end, and reports. A run that
// does not complete is an error that gives its reason.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	tmp, removeTmp, err := scratch("swarmdeck-bench-")
	if err != nil {
		return nil, err
	}
	defer removeTmp()
	ws := filepath.Join(tmp, "workspace")
	if err := os.Mkdir(ws, 0o755); err != nil {
		return nil, err
	}
	db := o.DB
	if db == "" {
		db = filepath.Join(tmp, "bench.db")
	}
	cfg := engineConfig(o, ws, db, filepath.Join(tmp, "swarmdeck.log"))
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("bench configuration: %w", err)
	}
	// The environment is ignored: the scripted provider needs no key, and a
	// key in the environment must not change what is measured.
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	eng, err := runtime.New(runtime.Options{Config: cfg, Resolved: res, Policy: scripted.Bench(), DBPath: db, Logger: log})
	if err != nil {
		if o.DB != "" && errors.Is(err, runtime.ErrDatabase) {
			return nil, &dbError{err}
		}
		return nil, fmt.Errorf("start the engine: %w", err)
	}
	defer eng.Close()

	sessions, depth := scripted.BenchShape(o.Agents, o.Fanout)
	rep := &Report{RequestedAgents: o.Agents, Depth: depth, Fanout: o.Fanout, Turns: o.Turns, BroadcastsPerAgent: o.Broadcasts,
		LatencyS: o.Latency.Seconds(), IdealS: scripted.BenchIdeal(o.Agents, o.Fanout, o.Turns, o.Latency).Seconds(),
		ExpectedLLMCalls: scripted.BenchCalls(o.Agents, o.Fanout, o.Turns),
		GoVersion:        goruntime.Version(), GOMAXPROCS: goruntime.GOMAXPROCS(0)}

	// A dashboard or `run --headless` always follows the run's events, so
	// the bench does too: the subscriber's cost is part of a real run. It
	// also drives the progress line.
	sub := eng.Bus().Subscribe(1024)
	defer sub.Close()

	// Settle the start-up garbage before measuring, so that the run's GC
	// cycles are its own.
	goruntime.GC()
	var ms0 goruntime.MemStats
	goruntime.ReadMemStats(&ms0)
	if o.CPUProfile != nil {
		if err := pprof.StartCPUProfile(o.CPUProfile); err != nil {
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
	}
	cpu0 := rusage.CPU()
	t0 := time.Now()
	run, err := eng.Start(ctx, scripted.BenchGoal(o.Agents, o.Fanout, o.Turns, o.Broadcasts))
	if err != nil {
		if o.CPUProfile != nil {
			pprof.StopCPUProfile()
		}
		return nil, fmt.Errorf("start the bench run: %w", err)
	}
	rep.RunID, rep.DB = run.ID(), o.DB
	err = follow(ctx, run, sub, sessions, eng.Scripted(), t0, o.Progress)
	wall := time.Since(t0)
	cpu := rusage.CPU() - cpu0
	if o.CPUProfile != nil {
		pprof.StopCPUProfile()
	}
	if err != nil {
		run.Interrupt()
		return nil, err
	}
	var ms1 goruntime.MemStats
	goruntime.ReadMemStats(&ms1)

	rep.Status = run.Status()
	if rep.Status != runtime.RunCompleted {
		_, reason := run.Result()
		if reason == "" {
			reason = "no reason recorded"
		}
		return rep, fmt.Errorf("the bench run %s ended %s: %s", run.ID(), rep.Status, reason)
	}
	rep.WallS = wall.Seconds()
	if rep.IdealS > 0 {
		rep.Efficiency = rep.IdealS / rep.WallS
	}
	rep.PeakRSSMB = rusage.PeakRSSMB()
	stats := eng.Scripted().Stats()
	rep.LLMCalls = stats.Requests
	rep.CPUS = cpu.Seconds()
	if rep.LLMCalls > 0 {
		rep.CPUMicrosPerTurn = float64(cpu.Microseconds()) / float64(rep.LLMCalls)
	}
	rep.LLMCallsPerS = float64(rep.LLMCalls) / rep.WallS
	if stats.Requests > 0 {
		rep.RequestKBPerCall = float64(stats.PromptTokens*4) / 1024 / float64(stats.Requests)
	}
	rep.HeapAllocMB = float64(ms1.HeapAlloc) / (1 << 20)
	rep.GCCycles = ms1.NumGC - ms0.NumGC
	if err := countStored(ctx, eng, rep); err != nil {
		return rep, err
	}
	rep.Targets = rep.checks()
	if o.MemProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(o.MemProfile, 0); err != nil {
			return rep, fmt.Errorf("memory profile: %w", err)
		}
	}
	return rep, nil
}

// engineConfig is the configuration of a bench engine: the defaults, on the
// scripted model with the bench's latency and no streaming delay, with every
// limit raised so that the runtime, not a limit, is what is measured.
func engineConfig(o Options, ws, db, logFile string) *config.Config {
	cfg := config.Defaults()
	cfg.Provider = config.TypeScripted
	sp := *cfg.Providers[config.TypeScripted]
	sp.Latency = config.Duration(o.Latency)
	sp.StreamSpeed = 0
	cfg.Providers[config.TypeScripted] = &sp
	cfg.Workspace = ws
	cfg.DB = db
	cfg.LogFile = logFile

	sessions, depth := scripted.BenchShape(o.Agents, o.Fanout)
	ideal := scripted.BenchIdeal(o.Agents, o.Fanout, o.Turns, o.Latency)
	margin := 16 + sessions/10
	lim := &cfg.Limits
	lim.MaxSessionsPerRun = max(lim.MaxSessionsPerRun, sessions+margin)
	lim.MaxConcurrentSessions = max(lim.MaxConcurrentSessions, sessions+margin)
	lim.MaxConcurrentLLMCalls = max(lim.MaxConcurrentLLMCalls, sessions)
	lim.MaxSpawnDepth = max(lim.MaxSpawnDepth, depth)
	lim.MaxTurnsPerSession = max(lim.MaxTurnsPerSession, o.Turns+4)
	lim.TokenBudgetPerRun = 0
	// Generous, and growing with the run: a loaded 2-core machine must not
	// turn a slow bench into a timeout.
	lim.CallTimeout = config.Duration(max(lim.CallTimeout.D(), 4*o.Latency+5*time.Minute))
	lim.StreamIdleTimeout = config.Duration(max(lim.StreamIdleTimeout.D(), 4*o.Latency+5*time.Minute))
	lim.SessionTimeout = config.Duration(max(lim.SessionTimeout.D(), 20*ideal+time.Hour))
	co := &cfg.Coordination
	co.EnableBroadcasts = true
	co.MaxBroadcastsPerSession = max(co.MaxBroadcastsPerSession, o.Broadcasts)
	return cfg
}

// follow waits for the run to finish, printing progress once a second.
func follow(ctx context.Context, run *runtime.Run, sub *event.Subscription, total int, srv *scripted.Server, t0 time.Time, progress io.Writer) error {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	done := map[string]bool{}
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return errors.New("the event stream closed before the run finished")
			}
			if ev.Type == event.SessionStatus && ev.Session != nil && terminal(ev.Session.Status) {
				done[ev.SessionID] = true
			}
		case <-tick.C:
			if progress != nil {
				fmt.Fprintf(progress, "bench: %5.1fs  %d/%d sessions done  %d LLM calls\n",
					time.Since(t0).Seconds(), len(done), total, srv.Stats().Requests)
			}
		case <-run.Done():
			return nil
		case <-ctx.Done():
			return fmt.Errorf("bench interrupted after %s: %w", time.Since(t0).Round(time.Millisecond), context.Cause(ctx))
		}
	}
}

func terminal(status string) bool {
	return status == runtime.StatusCompleted || status == runtime.StatusFailed || status == runtime.StatusCancelled
}

// countStored fills in what the store holds about the run.
func countStored(ctx context.Context, eng *runtime.Engine, rep *Report) error {
	st := eng.Store()
	sessions, err := st.Sessions(ctx, rep.RunID)
	if err != nil {
		return fmt.Errorf("count sessions: %w", err)
	}
	rep.Agents = len(sessions)
	// A swarm that did not take its shape was not the bench asked for: a
	// limit refused a spawn, or a session failed.
	for _, x := range sessions {
		if x.Status != runtime.StatusCompleted {
			why := x.Error
			if why == "" {
				why = x.Reason
			}
			return fmt.Errorf("session %s (%s) of the bench run ended %s: %s", x.ID, x.Agent, x.Status, why)
		}
	}
	if want, _ := scripted.BenchShape(rep.RequestedAgents, rep.Fanout); rep.Agents != want {
		result, _ := eng.Store().Run(ctx, rep.RunID)
		answer := ""
		if result != nil {
			answer = ": " + result.Result
		}
		return fmt.Errorf("the bench run created %d sessions where its shape has %d%s", rep.Agents, want, answer)
	}
	if rep.Events, err = st.EventCount(ctx, rep.RunID); err != nil {
		return fmt.Errorf("count events: %w", err)
	}
	if rep.StoredMessages, err = st.MessageCount(ctx, rep.RunID); err != nil {
		return fmt.Errorf("count messages: %w", err)
	}
	if rep.Agents > 0 {
		rep.StoredMessagesPerSession = float64(rep.StoredMessages) / float64(rep.Agents)
	}
	bs, err := st.Broadcasts(ctx, rep.RunID, 0, 0)
	if err != nil {
		return fmt.Errorf("count broadcasts: %w", err)
	}
	rep.Broadcasts = len(bs)
	for _, b := range bs {
		for _, r := range b.Recipients {
			if r.Status == "delivered" {
				rep.BroadcastsDelivered++
			}
		}
	}
	if rep.WallS > 0 {
		rep.BroadcastsDeliveredPerS = float64(rep.BroadcastsDelivered) / rep.WallS
	}
	return nil
}
