// Command swarmdeck runs a local swarm of LLM agents and lets a person watch
// and steer it from a terminal dashboard. This file only wires: flags and
// subcommands, configuration, the runtime, and the dashboard or headless
// output.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/bench"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/tui"
)

// exitError carries an exit status through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return ""
	}
	return e.err.Error()
}

func usageErr(err error) error { return &exitError{runtime.ExitUsage, err} }

// flags shared by every command.
type commonFlags struct {
	config, db, provider, baseURL, model, workspace string
	scriptedLatency                                 time.Duration
	latencySet                                      bool
}

func main() {
	tuneGC()
	tuneScheduler()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// gcPercent is the garbage collector's target unless GOGC is set. A swarm
// starts hundreds of sessions and connections in a burst; at the default
// of 100 the collector ran several cycles inside each burst, scanning
// thousands of goroutine stacks while the sessions waited. At 200 a
// thousand-agent bench keeps 0.005 more of its ideal time for about 40 MB
// more peak memory (see runtime/bench/PERFORMANCE.md).
const gcPercent = 200

func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// tuneScheduler runs Go with one processor more than it would take by
// itself (the machine's cores, or the container's limit), unless GOMAXPROCS
// is set. All of a run's writes go through one goroutine, the store's
// writer, and Go's scheduler has no priorities: when a model's answers
// wake hundreds of sessions at once, a writer preempted after its 10 ms
// waits in the run queue behind all of them, and every session that needs
// a write waits with it. With a processor more than there are cores, the
// kernel shares the cores among the threads instead, and the writer is back
// within a time slice. In four batches of interleaved thousand-agent bench
// runs it moved the median efficiency by +0.004 to +0.006 three times and
// by nothing once, with no change at 10 agents or in CPU per turn (see
// runtime/bench/PERFORMANCE.md).
func tuneScheduler() {
	if os.Getenv("GOMAXPROCS") == "" {
		goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(0) + 1)
	}
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "swarmdeck:", ee.err)
		}
		return ee.code
	}
	// Cobra's own errors: unknown flags, wrong argument counts.
	fmt.Fprintln(stderr, "swarmdeck:", err)
	return runtime.ExitUsage
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var cf commonFlags
	root := &cobra.Command{
		Use:   "swarmdeck [GOAL]",
		Short: "Run a local swarm of LLM agents and watch it from a terminal dashboard",
		Long: `swarmdeck runs an orchestrator and its sub-agents as a local swarm over any
OpenAI-compatible API (OpenAI, Ollama, llama.cpp, vLLM, LM Studio, OpenRouter),
or offline on its built-in scripted model, and shows it live in a dashboard.

Without an API key it uses the scripted model, so "swarmdeck" works offline.`,
		Args:          cobra.ArbitraryArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return dashboard(cmd.Context(), &cf, strings.Join(args, " "), "", false, stdout)
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&cf.config, "config", "", "config file (default ./config.yaml, then $XDG_CONFIG_HOME/swarmdeck/config.yaml)")
	pf.StringVar(&cf.db, "db", "", "SQLite database file (default $XDG_DATA_HOME/swarmdeck/swarmdeck.db)")
	pf.StringVar(&cf.provider, "provider", "", "provider from the config (auto, openai, scripted, ...)")
	pf.StringVar(&cf.baseURL, "base-url", "", "base URL of an OpenAI-compatible server, e.g. http://localhost:11434/v1")
	pf.StringVar(&cf.model, "model", "", "model to request")
	pf.StringVar(&cf.workspace, "workspace", "", "directory the file tools may use (default: the current directory)")
	pf.DurationVar(&cf.scriptedLatency, "scripted-latency", 0, "latency of the scripted model before each reply, e.g. 50ms")
	root.PersistentPreRun = func(cmd *cobra.Command, args []string) {
		cf.latencySet = cmd.Flags().Changed("scripted-latency")
	}
	root.AddCommand(runCmd(&cf, stdin, stdout, stderr), runsCmd(&cf, stdout), exportCmd(&cf, stdout),
		resumeCmd(&cf, stdin, stdout, stderr), viewCmd(&cf, stdout), mockCmd(&cf, stdout, stderr),
		benchCmd(&cf, stdout, stderr))
	return root
}

// loadConfig finds, loads and overrides the configuration.
func loadConfig(cf *commonFlags) (*config.Config, config.Resolved, error) {
	path, err := config.Find(cf.config)
	if err != nil {
		return nil, config.Resolved{}, usageErr(err)
	}
	cfg := config.Defaults()
	if path != "" {
		if cfg, err = config.Load(path); err != nil {
			return nil, config.Resolved{}, usageErr(err)
		}
	}
	if err := cfg.Apply(cf.overrides()); err != nil {
		return nil, config.Resolved{}, usageErr(err)
	}
	res, err := cfg.Resolve(os.Getenv)
	if err != nil {
		return nil, config.Resolved{}, usageErr(err)
	}
	return cfg, res, nil
}

func (cf *commonFlags) overrides() config.Overrides {
	o := config.Overrides{Provider: cf.provider, BaseURL: cf.baseURL, Model: cf.model, Workspace: cf.workspace, DB: cf.db}
	if cf.latencySet {
		d := cf.scriptedLatency
		o.ScriptedLatency = &d
	}
	return o
}

// openLog opens the log file: logs never go to the terminal, which belongs
// to the dashboard or to --json output.
func openLog(cfg *config.Config) (*slog.Logger, func()) {
	path := cfg.LogPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err == nil {
		if f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})), func() { f.Close() }
		}
	}
	return slog.New(slog.DiscardHandler), func() {}
}

// newEngine builds the runtime, and keeps config and prompts live.
func newEngine(ctx context.Context, cf *commonFlags) (*runtime.Engine, func(), error) {
	cfg, res, err := loadConfig(cf)
	if err != nil {
		return nil, nil, err
	}
	log, closeLog := openLog(cfg)
	eng, err := runtime.New(runtime.Options{Config: cfg, Resolved: res, Logger: log})
	if err != nil {
		closeLog()
		return nil, nil, usageErr(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	if cfg.Path != "" {
		go config.Watch(wctx, cfg.Path, func(next *config.Config) {
			if err := next.Apply(cf.overrides()); err != nil {
				log.Warn("config reload refused", "err", err)
				return
			}
			if err := eng.Reload(next); err != nil {
				log.Warn("config reload refused", "err", err)
				return
			}
			log.Info("config reloaded", "path", cfg.Path)
		}, func(err error) { log.Warn("config reload refused", "err", err) })
	}
	go eng.Prompts().Watch(wctx)
	return eng, func() {
		cancel()
		eng.Close()
		closeLog()
	}, nil
}

func runCmd(cf *commonFlags, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON, deltas bool
	var control string
	cmd := &cobra.Command{
		Use:   "run [--headless] [--json] [--control -] GOAL",
		Short: "Run a goal (with --headless: without the dashboard, for scripts)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			goal := strings.TrimSpace(strings.Join(args, " "))
			if goal == "" {
				return usageErr(errors.New("the goal is empty: say what the swarm should do"))
			}
			if !headless {
				return dashboard(cmd.Context(), cf, goal, "", false, stdout)
			}
			in, err := controlInput(control, stdin)
			if err != nil {
				return err
			}
			return headlessRun(cmd.Context(), cf, asJSON, deltas, in, stdout, stderr, func(ctx context.Context, eng *runtime.Engine) (*runtime.Run, error) {
				return eng.Start(ctx, goal)
			})
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "run without the dashboard")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line on stdout")
	cmd.Flags().BoolVar(&deltas, "json-deltas", false, "with --json: include streamed token deltas")
	cmd.Flags().StringVar(&control, "control", "", `read control commands from "-" (stdin), one JSON object per line`)
	return cmd
}

func controlInput(control string, stdin io.Reader) (io.Reader, error) {
	switch control {
	case "":
		return nil, nil
	case "-":
		return stdin, nil
	default:
		return nil, usageErr(fmt.Errorf(`--control takes "-" (read commands from stdin), got %q`, control))
	}
}

func headlessRun(ctx context.Context, cf *commonFlags, asJSON, deltas bool, control io.Reader, stdout, stderr io.Writer,
	start func(context.Context, *runtime.Engine) (*runtime.Run, error)) error {
	eng, closeEng, err := newEngine(ctx, cf)
	if err != nil {
		return err
	}
	defer closeEng()
	opts := runtime.HeadlessOptions{JSON: asJSON, Deltas: deltas, Out: stdout, Log: stderr, Control: control}
	code, err := eng.Headless(ctx, opts, func(ctx context.Context) (*runtime.Run, error) { return start(ctx, eng) })
	if code != runtime.ExitOK || err != nil {
		return &exitError{code, err}
	}
	return nil
}

func runsCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "runs",
		Short: "List stored runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, closeStore, err := openStore(cf)
			if err != nil {
				return err
			}
			defer closeStore()
			runs, err := st.Runs(cmd.Context(), 0)
			if err != nil {
				return &exitError{1, err}
			}
			if len(runs) == 0 {
				fmt.Fprintf(stdout, "no runs stored in %s yet: start one with `swarmdeck \"your goal\"`\n", st.Path())
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tTOKENS\tGOAL")
			for _, r := range runs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", r.ID, r.Status, r.CreatedAt.Local().Format("2006-01-02 15:04"), r.Usage.TotalTokens, clip(r.Goal, 60))
			}
			return tw.Flush()
		},
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

func exportCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "export [RUN_ID]",
		Short: "Print one run as JSON (default: the latest)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, closeStore, err := openStore(cf)
			if err != nil {
				return err
			}
			defer closeStore()
			id := ""
			if len(args) == 1 {
				id = args[0]
			} else {
				latest, err := st.LatestRun(cmd.Context())
				if err != nil {
					return &exitError{1, err}
				}
				id = latest.ID
			}
			x, err := st.Export(cmd.Context(), id)
			if err != nil {
				return &exitError{1, err}
			}
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(x)
		},
	}
}

func resumeCmd(cf *commonFlags, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON, deltas bool
	var control string
	cmd := &cobra.Command{
		Use:   "resume [--headless] RUN_ID",
		Short: "Continue an interrupted run",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			if !headless {
				return dashboard(cmd.Context(), cf, "", id, false, stdout)
			}
			in, err := controlInput(control, stdin)
			if err != nil {
				return err
			}
			return headlessRun(cmd.Context(), cf, asJSON, deltas, in, stdout, stderr, func(ctx context.Context, eng *runtime.Engine) (*runtime.Run, error) {
				return eng.Resume(ctx, id)
			})
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "continue without the dashboard")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line on stdout")
	cmd.Flags().BoolVar(&deltas, "json-deltas", false, "with --json: include streamed token deltas")
	cmd.Flags().StringVar(&control, "control", "", `read control commands from "-" (stdin)`)
	return cmd
}

func viewCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:   "view RUN_ID",
		Short: "Open a run read-only in the dashboard (follows a run another process is running)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return dashboard(cmd.Context(), cf, "", args[0], true, stdout)
		},
	}
}

func mockCmd(cf *commonFlags, stdout, stderr io.Writer) *cobra.Command {
	var addr, dialect, scenario string
	var latency time.Duration
	var speed int
	cmd := &cobra.Command{
		Use:   "mock-llm --addr HOST:PORT",
		Short: "Serve the built-in scripted model as an OpenAI-compatible server",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var policy scripted.Policy
			if scenario != "" {
				var err error
				if policy, err = scripted.LoadScenario(scenario); err != nil {
					return usageErr(err)
				}
			}
			srv := scripted.New(scripted.Config{Latency: latency, StreamSpeed: speed, Dialect: dialect, Policy: policy})
			base, err := srv.Start(addr)
			if err != nil {
				return usageErr(err)
			}
			defer srv.Close()
			fmt.Fprintf(stdout, "swarmdeck scripted model (offline demo, not a real LLM) serving at %s\n", base)
			fmt.Fprintf(stdout, "try: swarmdeck --provider openai --base-url %s --model swarmdeck-scripted \"your goal\"\n", base)
			<-cmd.Context().Done()
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "address to listen on")
	cmd.Flags().StringVar(&dialect, "dialect", "openai", "wire dialect: openai, ollama or llamacpp")
	cmd.Flags().DurationVar(&latency, "latency", 400*time.Millisecond, "delay before each reply")
	cmd.Flags().IntVar(&speed, "stream-speed", 60, "chunks per second while streaming (0: all at once)")
	cmd.Flags().StringVar(&scenario, "scenario", "", "scenario file replacing the demo policy")
	return cmd
}

func benchCmd(cf *commonFlags, stdout, stderr io.Writer) *cobra.Command {
	o := bench.DefaultOptions()
	so := bench.DefaultStartupOptions()
	var asJSON, startup, floor bool
	var cpuProfile, memProfile string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure the runtime: a swarm on the scripted model, or start-up as a whole process",
		Long: `bench runs a swarm of about --agents sessions on the built-in scripted model,
over real HTTP and with the real store (a fresh temporary database unless
--db is given): a tree where each parent spawns --fanout children in
parallel, as deep as needed, each leaf taking --turns turns of --latency
and broadcasting --broadcasts-per-agent times to its siblings. It reports
the ideal time (the critical path: the run if the runtime cost nothing),
the wall time, efficiency = ideal / wall, peak RSS, LLM calls, the CPU
time per LLM turn (getrusage, scripted server included), events, stored
messages and broadcasts delivered per second. Progress goes to stderr.
The configuration file and the provider flags play no part: what is
measured is always the runtime on its defaults with the limits raised.

bench --startup starts this binary as "run --headless --provider openai
--base-url URL" against an HTTP model served here with a fixed --latency
(default 100ms), --runs times, and reports the time from process start to
its first LLM request, and the wall time each additional parallel
sub-agent adds (a root spawning 1, then --fanout (default 50) children).

bench --floor makes the calls of the same shape with HTTP alone: a bare
server waiting --latency and the runtime's client transport, no store,
prompts or sessions. Its efficiency is about the most any runtime
speaking HTTP/1.1 can reach on this machine.

Targets on a 2-core machine:
  1,000 agents at --latency 1s   efficiency >= 0.97, peak RSS <= 300 MB
  10 agents at --latency 50ms    efficiency >= 0.98
  --latency 0                    CPU per LLM turn <= 200 µs
  --startup                      first LLM request <= 15 ms after start,
                                 <= 1 ms per additional parallel sub-agent`,
		Example: `  swarmdeck bench --agents 1000 --latency 1s
  swarmdeck bench --agents 10 --latency 50ms --json
  swarmdeck bench --agents 1000 --latency 0
  swarmdeck bench --agents 10 --latency 50ms --floor
  swarmdeck bench --startup`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			progress := stderr
			if startup {
				if cmd.Flags().Changed("latency") {
					so.Latency = o.Latency
				}
				if cmd.Flags().Changed("fanout") {
					so.Fanout = o.Fanout
				}
				so.Progress = progress
				rep, err := bench.Startup(ctx, so)
				if err != nil {
					return benchErr(err)
				}
				if asJSON {
					return writeJSON(stdout, rep)
				}
				return bench.WriteStartup(stdout, rep)
			}
			if floor {
				o.Progress = progress
				rep, err := bench.Floor(ctx, o)
				if err != nil {
					return benchErr(err)
				}
				if asJSON {
					return writeJSON(stdout, rep)
				}
				return bench.WriteFloor(stdout, rep)
			}
			o.DB, o.Progress = cf.db, progress
			for _, p := range []struct {
				path string
				w    *io.Writer
			}{{cpuProfile, &o.CPUProfile}, {memProfile, &o.MemProfile}} {
				if p.path == "" {
					continue
				}
				f, err := os.Create(p.path)
				if err != nil {
					return usageErr(err)
				}
				defer f.Close()
				*p.w = f
			}
			rep, err := bench.Run(ctx, o)
			if err != nil {
				return benchErr(err)
			}
			if asJSON {
				return writeJSON(stdout, rep)
			}
			return bench.WriteReport(stdout, rep)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Agents, "agents", o.Agents, "sessions in the swarm, the orchestrator included")
	f.IntVar(&o.Fanout, "fanout", o.Fanout, "children each parent spawns in parallel (with --startup: the wide fan-out, default 50)")
	f.IntVar(&o.Turns, "turns", o.Turns, "LLM turns each leaf takes")
	f.DurationVar(&o.Latency, "latency", o.Latency, "latency of every LLM call, e.g. 1s, 50ms, 0 (with --startup: default 100ms)")
	f.IntVar(&o.Broadcasts, "broadcasts-per-agent", o.Broadcasts, "task_broadcast calls each leaf makes to its siblings")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on stdout")
	f.BoolVar(&startup, "startup", false, "measure start-up and fan-out cost of whole swarmdeck processes instead")
	f.BoolVar(&floor, "floor", false, "make the same calls with HTTP alone (no runtime): the most this machine allows")
	f.IntVar(&so.Runs, "runs", so.Runs, "with --startup: runs of each measurement")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the run to `FILE`")
	f.StringVar(&memProfile, "memprofile", "", "write a pprof allocation profile of the run to `FILE`")
	f.MarkHidden("cpuprofile")
	f.MarkHidden("memprofile")
	return cmd
}

// benchErr is bad usage for an option out of range, else a failed bench.
func benchErr(err error) error {
	if errors.Is(err, bench.ErrBadOptions) {
		return usageErr(err)
	}
	return &exitError{1, err}
}

// writeJSON prints v as one line of JSON, with <, > and & left readable.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// openStore opens the database named by the configuration, for commands
// that only read it.
func openStore(cf *commonFlags) (*store.Store, func(), error) {
	path, err := config.Find(cf.config)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	cfg := config.Defaults()
	if path != "" {
		if cfg, err = config.Load(path); err != nil {
			return nil, nil, usageErr(err)
		}
	}
	if err := cfg.Apply(cf.overrides()); err != nil {
		return nil, nil, usageErr(err)
	}
	st, err := store.Open(cfg.DBPath(), nil)
	if err != nil {
		return nil, nil, &exitError{1, err}
	}
	return st, func() { st.Close() }, nil
}

// dashboard opens the terminal UI on a new run (goal, or a prompt for one
// when empty), a resumed run, or a stored run read-only.
func dashboard(ctx context.Context, cf *commonFlags, goal, runID string, readOnly bool, stdout io.Writer) error {
	eng, closeEng, err := newEngine(ctx, cf)
	if err != nil {
		return err
	}
	defer closeEng()
	cfg := eng.Config()
	eng.AttachHuman(true)
	opts := tui.Options{Keys: cfg.UI.Keys, Theme: cfg.UI.Theme}
	var run *runtime.Run
	switch {
	case readOnly:
		if opts.Controller, err = eng.View(ctx, runID); err != nil {
			return &exitError{1, err}
		}
	case runID != "":
		if run, err = eng.Resume(ctx, runID); err != nil {
			return &exitError{1, err}
		}
	case goal != "":
		if run, err = eng.Start(ctx, goal); err != nil {
			return &exitError{1, err}
		}
	default:
		opts.Start = func(ctx context.Context, goal string) (event.Controller, error) {
			r, err := eng.Start(ctx, goal)
			if err != nil {
				return nil, err
			}
			r.SetHumanAttached(true)
			run = r
			return r, nil
		}
	}
	if run != nil {
		run.SetHumanAttached(true)
		opts.Controller = run
	}
	if err := tui.Run(ctx, opts); err != nil && !errors.Is(err, context.Canceled) {
		return &exitError{1, err}
	}
	if run == nil {
		return nil
	}
	status := run.Status()
	if status == runtime.RunRunning {
		run.Interrupt()
		fmt.Fprintf(stdout, "run %s stopped and stored; continue it with: swarmdeck resume %s\n", run.ID(), run.ID())
		return nil
	}
	fmt.Fprintf(stdout, "run %s %s; see it again with: swarmdeck view %s  (or: swarmdeck export %s)\n", run.ID(), status, run.ID(), run.ID())
	if status != runtime.RunCompleted {
		return &exitError{1, nil}
	}
	return nil
}
