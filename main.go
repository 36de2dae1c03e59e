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
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/bench"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
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

func (e *exitError) Unwrap() error { return e.err }

func usageErr(err error) error { return &exitError{runtime.ExitUsage, err} }

// readErr names the database a read failed in, as SQLite's own errors do
// not ("database disk image is malformed"); a run not found says its own.
func readErr(path string, err error) error {
	var ee *exitError
	var we *store.WriteError
	code, _ := store.SQLiteCode(err)
	switch {
	case errors.As(err, &we):
		return outputErr(we.Err)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAmbiguous), errors.As(err, &ee), errors.Is(err, syscall.EPIPE):
		return err
	case code == 11 || code == 26:
		return damagedErr(path, err)
	}
	return fmt.Errorf("read %s: %w", path, err)
}

// fullErr says that the disk holding the database at path is full.
func fullErr(path string, err error) error {
	return fmt.Errorf("the disk that holds %s is full (%w): free some space there, or give --db a database on another disk", path, err)
}

// damagedErr says of a database that SQLite cannot read as one what it is,
// and what to do; nil for an error of another kind.
func damagedErr(path string, err error) error {
	switch code, _ := store.SQLiteCode(err); code {
	case 11: // SQLITE_CORRUPT
		return fmt.Errorf("%s is damaged (%w): `sqlite3 %s \"PRAGMA integrity_check\"` says where; the runs it holds may still be read with sqlite3's .recover", path, err, shellQuote(path))
	case 26: // SQLITE_NOTADB
		return fmt.Errorf("%s is not a SQLite database (%w): give --db the file swarmdeck stores its runs in", path, err)
	}
	return nil
}

// damagedDB is err said as damagedErr says it when it came from a
// database SQLite cannot read (opened, or read at the start of a run or a
// delete), unless it says so already.
func (cf *commonFlags) damagedDB(err error) error {
	code, _ := store.SQLiteCode(err)
	if code != 11 && code != 26 || strings.Contains(err.Error(), " is damaged (") || strings.Contains(err.Error(), " is not a SQLite database (") {
		return err
	}
	path := cf.db
	if cfg, cerr := cf.configFile(); cerr == nil {
		path = cfg.DBPath()
	}
	if path == "" {
		return err
	}
	return damagedErr(path, err)
}

// say writes a line of a command's output.
func say(w io.Writer, line string) error {
	if _, err := fmt.Fprintln(w, line); err != nil {
		return outputErr(err)
	}
	return nil
}

// outputErr is a failure to write a command's output (a full disk): not a
// mistake in how it was called. A reader that went away (EPIPE) is none.
func outputErr(err error) error {
	if errors.Is(err, syscall.EPIPE) {
		return err
	}
	return &exitError{runtime.ExitFailed, fmt.Errorf("writing the output: %w", err)}
}

// flags shared by every command.
type commonFlags struct {
	config, db, provider, baseURL, model, workspace string
	scriptedLatency                                 time.Duration
	latencySet                                      bool
	scriptedSpeed                                   int
	speedSet                                        bool
	// fromRun marks the provider, base URL and model that resume filled in
	// from the run, where no flag gave them. They are no flags the person
	// typed, and the next resume finds them in the run again.
	fromRun struct{ provider, baseURL, model bool }
	// onlyDB: the command needs the database and nothing else from the
	// configuration (runs, export), so with --db a configuration that
	// cannot be read is left out instead of refused.
	onlyDB bool
	// stderr is where a command says what it does before its output,
	// such as upgrading the database.
	stderr io.Writer
	// dbInUse is the database a run or resume opened, where no --db named
	// it, and dbMoved that the configuration file last reloaded points at
	// another (db: takes effect at the next start): the commands suggested
	// afterwards then name it.
	// (dbMoved is shared by the copies a command makes of its flags.)
	dbInUse string
	dbMoved *atomic.Bool
	// fileSaid is what the configuration file said, when last loaded, for
	// the settings a typed flag (flags) or the resumed run (run) takes
	// the place of (config.Flagged): a reload that changes one of them
	// says that the edit is not taken.
	fileSaid struct{ flags, run map[string]string }
	// dashboardStarting, when set, is true while a dashboard's run is
	// being started or resumed, before the dashboard draws: what the
	// engine has to say meanwhile (another process holds the database)
	// goes to stderr, where it is seen, as well as to the dashboard once
	// it is up.
	dashboardStarting *atomic.Bool
	// busyTold, made by newEngine, is set once a wait for a database
	// that another process holds has been told.
	busyTold *atomic.Bool
}

func main() {
	tuneGC()
	tuneScheduler()
	keepOnBrokenPipe()
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// keepOnBrokenPipe lets a write to a closed stdout fail with EPIPE instead
// of killing the process (`swarmdeck run --headless --json GOAL | head`):
// the run is then stopped and stored as interrupted, not left "running".
// The signal is caught, not ignored, so that the programs swarmdeck starts
// get the default behaviour back.
func keepOnBrokenPipe() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
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
	var flags atomic.Pointer[commonFlags]
	ctx, stop := watchSignals(stderr, func() string { return stoppedAtOnce(flags.Load()) })
	defer stop()
	out := &recorded{w: stdout}
	root, cf := newRootCmd(stdin, out, stderr)
	parsed := root.PersistentPreRunE
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		flags.Store(cf) // read from the signal handler once parsed
		return parsed(cmd, args)
	}
	root.SetArgs(args)
	hideRefusedInCompletion(root, args)
	root.SetOut(out)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee *exitError
	if out.err != nil && !errors.As(err, &ee) {
		// Output that could not be written fails every command alike:
		// help and --version, whose writes cobra does not check; bench,
		// which returns the bare error; delete and prune, which go on
		// deleting and report as they go.
		err = outputErr(out.err)
	}
	if err == nil || errors.Is(err, syscall.EPIPE) {
		// A reader that stopped reading (`swarmdeck export | head`) had
		// what it wanted: nothing to report.
		return 0
	}
	if stoppedBySignal(ctx, err) {
		// Stopped before the command had anything to show or store.
		fmt.Fprintf(stderr, "swarmdeck: stopped (%v)\n", context.Cause(ctx))
		return runtime.ExitFailed
	}
	if gone := goneWorkingDir(err); gone != err {
		// Whatever the command: the way it was started needs changing.
		fmt.Fprintln(stderr, "swarmdeck:", gone.Error())
		return runtime.ExitUsage
	}
	if errors.As(err, &ee) {
		if ee.err != nil {
			ee.err = cf.damagedDB(ee.err)
			// Errors quote goals, model servers and files: their controls
			// are shown, not obeyed.
			fmt.Fprintln(stderr, "swarmdeck:", runtime.TerminalText(cf.withFlags(ee.err.Error())))
		}
		return ee.code
	}
	if d := cf.damagedDB(err); d != err {
		fmt.Fprintln(stderr, "swarmdeck:", runtime.TerminalText(cf.withFlags(d.Error())))
		return runtime.ExitFailed
	}
	// Cobra's own errors: unknown flags, wrong argument counts.
	fmt.Fprintln(stderr, "swarmdeck:", runtime.TerminalText(cf.withFlags(err.Error())))
	return runtime.ExitUsage
}

// goneWorkingDir says what to do when the current directory was removed
// after the shell entered it: relative paths, the default workspace "."
// among them, are taken from it, and Go's own error ("getwd: no such file
// or directory") does not say so.
func goneWorkingDir(err error) error {
	var se *os.SyscallError
	if errors.As(err, &se) && se.Syscall == "getwd" && errors.Is(se.Err, syscall.ENOENT) {
		return errors.New("the current directory no longer exists (it was removed or moved after this shell entered it), and relative paths are taken from it (the default workspace \".\" too): cd to a directory that exists, or give absolute paths")
	}
	return err
}

// stoppedAtOnce tidies up for an exit at once on ctrl+c (a second one, or
// one after quitting the dashboard while the stop waits), which does not
// wait for the process's runs to stop, and says which runs it left as after
// a crash (none when the first write of a new run was still waiting), with
// the command that resumes them.
func stoppedAtOnce(cf *commonFlags) string {
	text := "swarmdeck: stopped at once; nothing stored is lost"
	resume := func(id string) string {
		if cf == nil {
			return "swarmdeck resume " + id
		}
		return cf.resumeCommand(id, runningHeadless.Load())
	}
	switch ids := runtime.StopAtOnce(); {
	case len(ids) == 0:
		return text
	case runningBench.Load():
		// A bench run is measured once; resume refuses it.
		return text + " (the bench's run is not resumed)"
	case len(ids) == 1:
		return text + fmt.Sprintf(": run %s resumes as if its process had died (`%s`)", ids[0], resume(ids[0]))
	default:
		return text + ": runs " + strings.Join(ids, ", ") + " resume as if their process had died (`" + resume("RUN_ID") + "`)"
	}
}

// runningHeadless: the command runs a run without the dashboard, so the
// resume it suggests on a second ctrl+c is headless too.
var runningHeadless atomic.Bool

// runningBench: the command runs a bench, whose run is not resumed.
var runningBench atomic.Bool

// recorded is stdout, remembering the first error of writing to it.
type recorded struct {
	w   io.Writer
	err error
}

func (r *recorded) Write(p []byte) (int, error) {
	n, err := r.w.Write(p)
	if err != nil && r.err == nil {
		r.err = err
	}
	return n, err
}

// looksLikeRunID reports whether s has the shape of a run's id: r- and
// six hex digits.
func looksLikeRunID(s string) bool {
	hex, ok := strings.CutPrefix(s, "r-")
	if !ok || len(hex) != 6 {
		return false
	}
	for _, c := range hex {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}

// notACommand are words typed alone as if they were commands, with what
// to do instead. Taken for a goal, each would start a run.
var notACommand = func() map[string]string {
	stop := "a run stops with q or ctrl+c in its dashboard, or with ctrl+c or a signal to its process when headless; `swarmdeck runs` lists the runs"
	settings := "settings live in config.yaml (./config.yaml, else $XDG_CONFIG_HOME/swarmdeck/config.yaml); the one in swarmdeck's source explains each setting, and `swarmdeck --help` shows the flags"
	logs := "the log is $XDG_STATE_HOME/swarmdeck/swarmdeck.log unless log_file: in config.yaml names another; `swarmdeck view` shows a run"
	return map[string]string{
		"stop": stop, "kill": stop, "cancel": stop, "pause": stop, "quit": stop, "exit": stop,
		"config": settings, "configure": settings, "init": settings, "setup": settings, "settings": settings,
		"log": logs, "logs": logs,
	}
}()

// version is how this swarmdeck was built: the module's version, or the
// commit it was built from.
func version() string {
	v := "(devel)"
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	if info.Main.Version != "" {
		v = info.Main.Version
	}
	var rev, at, dirty string
	for _, st := range info.Settings {
		switch st.Key {
		case "vcs.revision":
			rev = st.Value[:min(len(st.Value), 12)]
		case "vcs.time":
			at = st.Value
		case "vcs.modified":
			if st.Value == "true" {
				dirty = "+changes"
			}
		}
	}
	if rev != "" {
		v += " " + rev + dirty
		if at != "" {
			v += " " + at
		}
	}
	return v + " " + info.GoVersion
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) (*cobra.Command, *commonFlags) {
	cf := commonFlags{stderr: stderr}
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
			// A lone word close to a command's name is a typo, not a goal;
			// so is one followed by a run id (`swarmdeck resum r-3f9a1c`).
			// After "--" every word is the goal's, as the person said.
			if len(args) > 0 && cmd.ArgsLenAtDash() != 0 && strings.TrimSpace(args[0]) != "" && !strings.ContainsAny(args[0], " \t") &&
				(len(args) == 1 || slices.ContainsFunc(args[1:], looksLikeRunID)) {
				if hint, ok := notACommand[strings.ToLower(args[0])]; ok {
					// A word a person types as a command: run as a goal,
					// it would start a swarm (and spend tokens).
					return usageErr(fmt.Errorf("there is no %q command: %s (to run it as a goal: %s)",
						args[0], hint, cf.asGoal(strings.Join(args, " "))))
				}
				if near := cmd.SuggestionsFor(args[0]); len(near) > 0 {
					return usageErr(fmt.Errorf("unknown command %q: did you mean %s? (to run it as a goal: %s)",
						args[0], strings.Join(near, " or "), cf.asGoal(strings.Join(args, " "))))
				}
			}
			return dashboard(cmd.Context(), &cf, strings.Join(args, " "), "", false, stdout)
		},
	}
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(flagError)
	root.Version = version()
	root.SetVersionTemplate("swarmdeck {{.Version}}\n")
	pf := root.PersistentFlags()
	pf.StringVar(&cf.config, "config", "", "config file (default ./config.yaml, then $XDG_CONFIG_HOME/swarmdeck/config.yaml)")
	pf.StringVar(&cf.db, "db", "", "SQLite database file (default $XDG_DATA_HOME/swarmdeck/swarmdeck.db)")
	pf.StringVar(&cf.provider, "provider", "", "provider from the config (auto, openai, scripted, ...)")
	pf.StringVar(&cf.baseURL, "base-url", "", "base URL of an OpenAI-compatible server, e.g. http://localhost:11434/v1")
	pf.StringVar(&cf.model, "model", "", "model to request")
	pf.StringVar(&cf.workspace, "workspace", "", "directory the file tools may use (default: the current directory; for resume, the run's own)")
	pf.DurationVar(&cf.scriptedLatency, "scripted-latency", 0, "latency of the scripted model before each reply, e.g. 50ms")
	pf.IntVar(&cf.scriptedSpeed, "scripted-stream-speed", 0, "chunks per second the scripted model streams its replies at (0: each reply at once; default: stream_speed in the config)")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		cf.latencySet = cmd.Flags().Changed("scripted-latency")
		cf.speedSet = cmd.Flags().Changed("scripted-stream-speed")
		return refuseEmpty(cmd)
	}
	root.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print how this swarmdeck was built",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return say(stdout, "swarmdeck "+version())
		},
	})
	root.AddCommand(runCmd(&cf, stdin, stdout, stderr), runsCmd(&cf, stdout), exportCmd(&cf, stdout),
		resumeCmd(&cf, stdin, stdout, stderr), viewCmd(&cf, stdout), deleteCmd(&cf, stdout, stderr), pruneCmd(&cf, stdout, stderr),
		mockCmd(&cf, stdout, stderr), benchCmd(&cf, stdout, stderr))
	for _, c := range root.Commands() {
		c.Args = argsWithUsage(c.Args)
		if why, ok := storedOnly[c.Name()]; ok {
			unused := []string{"provider", "base-url", "model", "workspace", "scripted-latency", "scripted-stream-speed"}
			c.PreRunE = func(cmd *cobra.Command, args []string) error {
				return refuseFlags(cmd, why, unused...)
			}
			hideInHelp(c, unused...)
		}
		switch c.Name() {
		case "mock-llm":
			hideInHelp(c, sharedFlags...)
		case "bench":
			// It refuses them itself, each with its own reason.
			hideInHelp(c, slices.DeleteFunc(slices.Clone(sharedFlags), func(f string) bool { return f == "db" })...)
		case "version":
			takesNoSharedFlags(c, "it prints which swarmdeck this is")
		}
	}
	// --workspace completes to directories; --config to YAML files.
	root.MarkPersistentFlagDirname("workspace")
	root.MarkPersistentFlagFilename("config", "yaml", "yml")
	// --provider completes to the configuration's providers.
	root.RegisterFlagCompletionFunc("provider", func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		cfg, err := cf.configFile()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		names := []string{config.ProviderAuto}
		for name := range cfg.Providers {
			names = append(names, name)
		}
		slices.Sort(names[1:])
		var out []cobra.Completion
		for _, n := range names {
			if strings.HasPrefix(n, toComplete) {
				out = append(out, n)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	})
	// cobra's help command shows the root's help, with status 0, for a
	// topic it does not know: a typo would look answered.
	help := &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			var names []string
			for _, sc := range c.Root().Commands() {
				if len(args) == 0 && sc.IsAvailableCommand() && strings.HasPrefix(sc.Name(), toComplete) {
					names = append(names, sc.Name())
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || cmd == nil || len(rest) > 0 || (len(args) > 0 && cmd == c.Root()) {
				return usageErr(fmt.Errorf("no help on %q: there is no such command (`swarmdeck --help` lists them)", strings.Join(args, " ")))
			}
			cmd.InitDefaultHelpFlag()
			return cmd.Help()
		},
	}
	takesNoSharedFlags(help, "it shows the help of a command")
	root.SetHelpCommand(help)
	// cobra's completion command shows its help, with status 0, for a shell
	// it does not know: `completion tcsh > file` filled the file with help.
	root.SetOut(stdout) // the completion scripts are written where it says now
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c.Name() == "completion" {
		takesNoSharedFlags(c, "the script it prints is the same whatever they say")
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr(errors.New("completion: which shell? give bash, zsh, fish or powershell (`swarmdeck completion --help` says how to install each)"))
			}
			return usageErr(fmt.Errorf("completion: no script for the shell %q: choose bash, zsh, fish or powershell", args[0]))
		}
		// A script that could not be written (a full disk) is a failure,
		// as for every command's output, not bad usage.
		for _, sh := range c.Commands() {
			takesNoSharedFlags(sh, "the script it prints is the same whatever they say")
			if write := sh.RunE; write != nil {
				sh.RunE = func(cmd *cobra.Command, args []string) error {
					if err := write(cmd, args); err != nil {
						return outputErr(err)
					}
					return nil
				}
			}
		}
	}
	return root, &cf
}

// storedOnly are the commands that work on what is stored, and take only
// --config and --db of the shared flags: why the others do nothing there.
var storedOnly = map[string]string{
	"runs":   "it lists the runs stored",
	"export": "it prints a run as stored",
	"view":   "it shows a run as stored, and runs nothing",
	"delete": "it removes stored runs",
	"prune":  "it removes stored runs",
}

// refuseEmpty refuses a shared flag given an empty value: `--db "$DB"`
// with DB unset would otherwise fall back to the default database, and a
// delete there would delete from the wrong one.
func refuseEmpty(cmd *cobra.Command) error {
	for _, name := range []string{"config", "db", "provider", "base-url", "model", "workspace"} {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed && strings.TrimSpace(f.Value.String()) == "" {
			return usageErr(fmt.Errorf("--%s is empty: give it a value, or leave it out for the default", name))
		}
	}
	return nil
}

// sharedFlags are the flags every command is given, most of which only
// the commands that run something take.
var sharedFlags = []string{"config", "db", "provider", "base-url", "model", "workspace", "scripted-latency", "scripted-stream-speed"}

// takesNoSharedFlags makes command c refuse every shared flag, and leave
// them out of its help.
func takesNoSharedFlags(c *cobra.Command, why string) {
	c.PreRunE = func(cmd *cobra.Command, args []string) error {
		return refuseFlags(cmd, why, sharedFlags...)
	}
	hideInHelp(c, sharedFlags...)
}

// refusedAnnotation lists, on a command, the shared flags it refuses.
const refusedAnnotation = "swarmdeck/refused-flags"

// hideInHelp leaves the shared flags that command c refuses out of its
// help, which would list them with the others, and out of what the shell
// completes after it (see hideRefusedInCompletion).
func hideInHelp(c *cobra.Command, names ...string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[refusedAnnotation] = strings.Join(names, " ")
	help := c.HelpFunc()
	c.SetHelpFunc(func(cmd *cobra.Command, args []string) {
		for _, name := range names {
			if f := cmd.InheritedFlags().Lookup(name); f != nil && !f.Hidden {
				f.Hidden = true
				defer func() { f.Hidden = false }()
			}
		}
		help(cmd, args)
	})
}

// hideRefusedInCompletion hides the shared flags that the command being
// completed refuses, when args ask cobra for completions: offered after
// `swarmdeck runs --`, --model would only lead to an error. The flags are
// the root's, shared by every command, so this is done once the command
// is known, for a process that does nothing else.
func hideRefusedInCompletion(root *cobra.Command, args []string) {
	if len(args) == 0 || (args[0] != cobra.ShellCompRequestCmd && args[0] != cobra.ShellCompNoDescRequestCmd) {
		return
	}
	root.InitDefaultHelpCmd() // which cobra adds only as it executes
	c, _, err := root.Find(args[1:])
	if err != nil || c == nil {
		return
	}
	for _, name := range strings.Fields(c.Annotations[refusedAnnotation]) {
		if f := root.PersistentFlags().Lookup(name); f != nil {
			f.Hidden = true
		}
	}
}

// refuseFlags refuses the shared flags a command does not use: ignored,
// they would let a person believe they had an effect (--model on runs).
func refuseFlags(cmd *cobra.Command, why string, names ...string) error {
	for _, name := range names {
		if cmd.Flags().Changed(name) {
			return usageErr(fmt.Errorf("--%s has no effect on %s: %s", name, strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), why))
		}
	}
	return nil
}

// argsWithUsage names the command and its usage line when its arguments
// are wrong: cobra's own "accepts 1 arg(s), received 0" said neither which
// command nor what it wanted.
func argsWithUsage(check cobra.PositionalArgs) cobra.PositionalArgs {
	if check == nil {
		return nil
	}
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return fmt.Errorf("%s: %w (usage: %s %s)", cmd.Name(), err, cmd.Root().Name(), cmd.Use)
		}
		return nil
	}
}

// flagError words a flag the command does not have, or a value its flag
// cannot take, for a person: the flag they probably meant, and what the
// value should look like (pflag says "strconv.ParseInt: parsing").
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	var invalid *pflag.InvalidValueError
	switch {
	case errors.As(err, &unknown):
		where := ""
		if cmd.HasParent() {
			where = cmd.Name() + ": "
		}
		name := "--" + unknown.GetSpecifiedName()
		if group := unknown.GetSpecifiedShortnames(); group != "" {
			name = "-" + unknown.GetSpecifiedName()
			if len(group) > 1 {
				name += " (in -" + group + ")"
			}
		} else {
			var names []string
			cmd.Flags().VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					names = append(names, f.Name)
				}
			})
			if near := config.Suggest(unknown.GetSpecifiedName(), names); near != "" {
				return usageErr(fmt.Errorf("%sunknown flag %s: did you mean --%s?", where, name, near))
			}
		}
		return usageErr(fmt.Errorf("%sunknown flag %s: `%s --help` lists the flags", where, name, cmd.CommandPath()))
	case errors.As(err, &invalid):
		f := invalid.GetFlag()
		want := map[string]string{
			"int":      "a whole number",
			"duration": "a duration such as 50ms, 2s or 1m30s",
			"bool":     fmt.Sprintf("true or false (or the flag alone: --%s)", f.Name),
		}[f.Value.Type()]
		if want == "" {
			want = "a " + f.Value.Type()
		}
		if errors.Is(err, strconv.ErrRange) {
			return usageErr(fmt.Errorf("--%s %s is out of range", f.Name, invalid.GetValue()))
		}
		return usageErr(fmt.Errorf("--%s takes %s, not %q", f.Name, want, invalid.GetValue()))
	}
	return usageErr(err)
}

// withFlags gives the commands an error suggests (`swarmdeck view RUN_ID`,
// `swarmdeck runs`) the --config and --db of this one, so that they find
// the same database; the runtime that words them does not know the flags.
func (cf *commonFlags) withFlags(msg string) string {
	flags := cf.storeFlags()
	if len(flags) == 0 {
		return msg
	}
	return strings.ReplaceAll(msg, "`swarmdeck ", "`swarmdeck "+strings.Join(flags, " ")+" ")
}

// storeFlags are the --config and --db given to this command, quoted for a
// shell: what another command needs to find the same database.
func (cf *commonFlags) storeFlags() []string {
	var flags []string
	if cf.config != "" {
		flags = append(flags, "--config", shellQuote(cf.config))
	}
	switch {
	case cf.db != "":
		flags = append(flags, "--db", shellQuote(cf.db))
	case cf.dbMoved != nil && cf.dbMoved.Load():
		flags = append(flags, "--db", shellQuote(cf.dbInUse))
	}
	return flags
}

// configReloaded notes whether the configuration file, as reloaded, still
// points at the database in use.
func (cf *commonFlags) configReloaded(next *config.Config) {
	if cf.dbMoved != nil {
		cf.dbMoved.Store(!sameFile(next.DBPath(), cf.dbInUse))
	}
}

// openedDB notes the database a run or resume opened from the
// configuration, for configReloaded.
func (cf *commonFlags) openedDB(path string) {
	cf.dbInUse, cf.dbMoved = path, new(atomic.Bool)
}

// sameFile reports whether two paths name one file, as far as their
// absolute forms tell.
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

// loadConfig finds, loads and overrides the configuration, and resolves
// its provider.
func loadConfig(cf *commonFlags) (*config.Config, config.Resolved, error) {
	cfg, err := cf.configFile()
	if err != nil {
		return nil, config.Resolved{}, err
	}
	res, err := cfg.Resolve(os.Getenv)
	if err != nil {
		return nil, config.Resolved{}, usageErr(err)
	}
	return cfg, res, nil
}

// configFile finds, loads and overrides the configuration.
func (cf *commonFlags) configFile() (*config.Config, error) {
	path, err := config.Find(cf.config)
	if err != nil {
		return nil, usageErr(err)
	}
	cfg := config.Defaults()
	if path != "" {
		if cfg, err = config.Load(path); err != nil {
			return nil, usageErr(err)
		}
	}
	cf.fileSaid.flags, cf.fileSaid.run = cfg.Flagged(cf.typedOverrides(), cf.provider), cfg.Flagged(cf.runOverrides(), cf.provider)
	if err := cfg.Apply(cf.overrides()); err != nil {
		return nil, usageErr(err)
	}
	return cfg, nil
}

// typedOverrides are the overrides the person typed: not what resume
// took from the run.
func (cf *commonFlags) typedOverrides() config.Overrides {
	o := cf.overrides()
	if cf.fromRun.provider {
		o.Provider = ""
	}
	if cf.fromRun.baseURL {
		o.BaseURL = ""
	}
	if cf.fromRun.model {
		o.Model = ""
	}
	return o
}

// runOverrides are the overrides resume took from the run.
func (cf *commonFlags) runOverrides() config.Overrides {
	var o config.Overrides
	if cf.fromRun.provider {
		o.Provider = cf.provider
	}
	if cf.fromRun.baseURL {
		o.BaseURL = cf.baseURL
	}
	if cf.fromRun.model {
		o.Model = cf.model
	}
	return o
}

func (cf *commonFlags) overrides() config.Overrides {
	o := config.Overrides{Provider: cf.provider, BaseURL: cf.baseURL, Model: cf.model, Workspace: cf.workspace, DB: cf.db}
	if cf.latencySet {
		d := cf.scriptedLatency
		o.ScriptedLatency = &d
	}
	if cf.speedSet {
		n := cf.scriptedSpeed
		o.ScriptedSpeed = &n
	}
	return o
}

// openLog opens the log file: logs never go to the terminal, which belongs
// to the dashboard or to --json output. One that log_file names and that cannot be
// written is refused, since some things are said only there (a refused
// reload in a headless run, a prompt that is missing); when the default
// place cannot be written, swarmdeck runs without a log.
//
// undo closes the log and removes what opening it made (the file, and the
// directories made for it), for a start that fails after it: a refused
// start leaves nothing behind. A log that was there before keeps what the
// start appended.
func openLog(cfg *config.Config) (log *slog.Logger, closeLog, undo func(), err error) {
	path := cfg.LogPath()
	made := missingDirs(filepath.Dir(path))
	err = os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		_, statErr := os.Stat(path)
		var f *os.File
		if f, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
			f = rotateLog(f, path)
			closeLog = func() { f.Close() }
			undo = func() {
				f.Close()
				if !errors.Is(statErr, fs.ErrNotExist) {
					return
				}
				os.Remove(path)
				for _, dir := range made {
					os.Remove(dir) // only while empty
				}
			}
			return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelInfo})), closeLog, undo, nil
		}
	}
	if cfg.LogFile != "" {
		where, ok := cfg.Where("log_file")
		if !ok {
			where = "log_file"
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, nil, nil, fmt.Errorf("%s: cannot write the log at %s: %w", where, path, err)
	}
	return slog.New(slog.DiscardHandler), func() {}, func() {}, nil
}

// maxLogBytes is the size past which a start moves the log aside: the log
// grows by a few lines per run, and by a line per retried call, so a log
// kept for years stays within twice this size.
const maxLogBytes = 8 << 20

// rotateLog moves the log f, opened at path, to path.1 (replacing the one
// there) and returns a new, empty log at path, once f has grown past
// maxLogBytes. It returns f itself when f is small enough, and when the
// move fails; another process that started at the same time may have
// moved it already, in which case f is still written where it now is.
func rotateLog(f *os.File, path string) *os.File {
	st, err := f.Stat()
	if err != nil || st.Size() <= maxLogBytes {
		return f
	}
	if now, err := os.Stat(path); err != nil || !os.SameFile(st, now) {
		return f
	}
	if os.Rename(path, path+".1") != nil {
		return f
	}
	fresh, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return f // keeps writing the moved log
	}
	f.Close()
	return fresh
}

// missingDirs lists dir and those of its parents that do not exist yet,
// deepest first: what os.MkdirAll(dir) would make.
func missingDirs(dir string) []string {
	var out []string
	for {
		if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
			return out
		}
		out = append(out, dir)
		parent := filepath.Dir(dir)
		if parent == dir {
			return out
		}
		dir = parent
	}
}

// engineFor is what a command builds its engine for.
type engineFor int

const (
	forNewRun    engineFor = iota // to start a run in the configured workspace
	forStoredRun                  // to continue a stored run, in the workspace it recorded
	forView                       // to show a stored run: a database it may only read will do
)

// newEngine loads the configuration and starts the engine. A live reload
// of the configuration file is logged, and also sent to notices when it is
// not nil (the dashboard shows it, a headless run prints it on stderr; a
// send never blocks).
func newEngine(ctx context.Context, cf *commonFlags, use engineFor, notices chan<- tui.Notice) (*runtime.Engine, func(), error) {
	cfg, res, err := loadConfig(cf)
	if err != nil {
		return nil, nil, err
	}
	if use != forView && res.Provider.Type != config.TypeScripted {
		// Refused rather than ignored: the person asked for a delay or a
		// pace this run's model will not have.
		for _, f := range []struct {
			set  bool
			name string
		}{{cf.latencySet, "scripted-latency"}, {cf.speedSet, "scripted-stream-speed"}} {
			if f.set {
				return nil, nil, usageErr(fmt.Errorf("--%s applies to the built-in scripted model only, and this run talks to provider %q (%s): leave the flag out, or run on the scripted model with --provider scripted", f.name, res.Name, shownURL(res.Provider.BaseURL)))
			}
		}
	}
	if use == forNewRun {
		// Before the log and the database are made: a start refused for
		// its workspace leaves nothing behind.
		if err := runtime.CheckWorkspace(cfg); err != nil {
			return nil, nil, usageErr(err)
		}
	}
	log, closeLog, undoLog, err := openLog(cfg)
	if err != nil {
		return nil, nil, usageErr(err)
	}
	notify := func(n tui.Notice) {
		if notices == nil {
			return
		}
		select {
		case notices <- n:
		default:
		}
	}
	// A database that another process keeps locked (one stopped with
	// ctrl+z, say) is waited for, since a run can lose nothing by waiting
	// and everything by failing; the person is told who holds it, in the
	// dashboard until it is free again.
	if cf.busyTold == nil {
		cf.busyTold = new(atomic.Bool)
	}
	busyTold := cf.busyTold
	storeBusy := func(waiting bool, why string) {
		text := "the database is free again: the run goes on"
		if waiting {
			busyTold.Store(true)
			text = "waiting, losing nothing: " + why
			log.Warn("waiting for the database", "why", why)
		} else {
			log.Info("the database is free again")
		}
		if b := cf.dashboardStarting; b != nil && b.Load() && cf.stderr != nil {
			fmt.Fprintln(cf.stderr, "swarmdeck: "+runtime.TerminalText(text))
		}
		notify(tui.Notice{Topic: "database", Err: waiting, Text: text})
	}
	eng, err := runtime.New(runtime.Options{Config: cfg, Resolved: res, Logger: log, View: use == forView, Upgrading: cf.upgrading, StoreBusy: storeBusy, StoreGiveUp: ctx.Done()})
	if err == nil && use != forView && cf.db == "" {
		cf.openedDB(cfg.DBPath())
	}
	if err != nil {
		undoLog()
		if store.IsBusy(err) {
			return nil, nil, busyErr(cfg.DBPath(), err)
		}
		if errors.Is(err, store.ErrOlderInUse) {
			return nil, nil, &exitError{runtime.ExitFailed, err}
		}
		if store.IsFull(err) {
			return nil, nil, &exitError{runtime.ExitFailed, fullErr(cfg.DBPath(), err)}
		}
		if note := dbInWorkingDirNote(cfg); note != "" {
			// Where the database was looked for is part of the mistake.
			err = fmt.Errorf("%w; %s", err, note)
		}
		return nil, nil, usageErr(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	// A template edit that does not load is said where the person looks,
	// not only in the log: new sessions go on with the previous ones. The
	// error stands in the dashboard until a reload goes through.
	eng.Prompts().OnError(func(err error) {
		notify(tui.Notice{Topic: "prompts", Err: true,
			Text: "prompt templates not reloaded, new sessions get the previous ones: " + err.Error()})
	})
	eng.Prompts().OnReload(func(dir string) {
		notify(tui.Notice{Topic: "prompts", Text: "prompt templates reloaded from " + dir})
	})
	if cfg.Path != "" {
		refused := func(err error) {
			log.Warn("config reload refused", "err", err)
			notify(tui.Notice{Topic: "config", Err: true,
				Text: "configuration not reloaded, the running settings stay: " + err.Error()})
		}
		// What waits for the next start is told against the settings this
		// process started with, not the last file read: an edit undone
		// leaves nothing waiting, and an unrelated edit does not hide one
		// that is.
		started, fileSaid := eng.Config(), cf.fileSaid
		go config.Watch(wctx, cfg.Path, func(next *config.Config) {
			var kept keptSettings
			kept.byFlags = config.Outvoted(fileSaid.flags, next.Flagged(cf.typedOverrides(), cf.provider))
			kept.byRun = config.Outvoted(fileSaid.run, next.Flagged(cf.runOverrides(), cf.provider))
			if err := next.Apply(cf.overrides()); err != nil {
				refused(err)
				return
			}
			if err := eng.Reload(next); err != nil {
				refused(err)
				return
			}
			cf.configReloaded(next)
			atStart, atNextRun := config.NotLive(started, next)
			log.Info("config reloaded", "path", cfg.Path, "waiting_for_start", atStart, "waiting_for_next_run", atNextRun,
				"kept_by_flags", kept.byFlags, "kept_by_run", kept.byRun)
			notify(tui.Notice{Topic: "config", Text: reloadedText(cfg.Path, atStart, atNextRun, kept)})
		}, refused)
	}
	go eng.Prompts().Watch(wctx)
	return eng, func() {
		cancel()
		eng.Close()
		closeLog()
	}, nil
}

// dbInWorkingDirNote says where the database is when neither HOME nor
// XDG_DATA_HOME tells where data lives, and how to choose another place;
// "" when they, db: or --db do. Documented, but easy to miss: a run started
// from another directory will not find this one's database.
func dbInWorkingDirNote(cfg *config.Config) string {
	if !cfg.DBInWorkingDir() {
		return ""
	}
	path := cfg.DBPath()
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	return "the database is " + path + " (neither HOME nor XDG_DATA_HOME is set); --db FILE or XDG_DATA_HOME puts it elsewhere"
}

// keptSettings are the settings a reload changed that do not take effect:
// a flag given decides them, or the resumed run keeps its own.
type keptSettings struct{ byFlags, byRun []string }

// reloadedText says that the configuration at path was reloaded, which of
// its settings wait for the next start or run, and which edits are not
// taken.
func reloadedText(path string, atStart, atNextRun []string, kept keptSettings) string {
	text := "configuration reloaded from " + path
	if len(atStart) > 0 {
		text += "; " + strings.Join(atStart, ", ") + " changed, which take effect at the next start"
	}
	if len(atNextRun) > 0 {
		text += "; " + strings.Join(atNextRun, ", ") + " from the next run or resume"
	}
	if n := len(kept.byFlags); n > 0 {
		named := make([]string, n)
		for i, setting := range kept.byFlags {
			named[i] = setting + " (" + config.FlagOf(setting) + ")"
		}
		wins := "the flag given wins"
		if n > 1 {
			wins = "the flags given win"
		}
		text += "; " + strings.Join(named, ", ") + " changed, but " + wins
	}
	if len(kept.byRun) > 0 {
		text += "; " + strings.Join(kept.byRun, ", ") + " changed, but the resumed run keeps its own"
	}
	return text
}

func runCmd(cf *commonFlags, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON, deltas bool
	var control string
	cmd := &cobra.Command{
		Use:        "run [--headless] [--json] [--control -] GOAL",
		SuggestFor: []string{"start", "new"},
		Short:      "Run a goal (with --headless: without the dashboard, for scripts)",
		Args:       atLeastOne(`the goal: what the swarm should do, e.g. swarmdeck run --headless "summarize README.md"`),
		RunE: func(cmd *cobra.Command, args []string) error {
			goal := strings.TrimSpace(strings.Join(args, " "))
			if goal == "" {
				return usageErr(errors.New("the goal is empty: say what the swarm should do"))
			}
			if err := checkHeadlessFlags(cmd, headless); err != nil {
				return err
			}
			if !headless {
				return dashboard(cmd.Context(), cf, goal, "", false, stdout)
			}
			in, err := controlInput(control, stdin)
			if err != nil {
				return err
			}
			return headlessRun(cmd.Context(), cf, forNewRun, asJSON, deltas, in, stdout, stderr, func(ctx context.Context, eng *runtime.Engine) (*runtime.Run, error) {
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

// checkHeadlessFlags refuses the output and input flags of a headless run
// on the dashboard, which owns the terminal, instead of ignoring them.
func checkHeadlessFlags(cmd *cobra.Command, headless bool) error {
	f := cmd.Flags()
	if !headless {
		for _, name := range []string{"json", "json-deltas", "control"} {
			if f.Changed(name) {
				return usageErr(fmt.Errorf("--%s needs --headless: without it the dashboard owns the terminal", name))
			}
		}
	}
	if f.Changed("json-deltas") && !f.Changed("json") {
		return usageErr(errors.New("--json-deltas adds token deltas to --json output: give --json too"))
	}
	return nil
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

func headlessRun(ctx context.Context, cf *commonFlags, use engineFor, asJSON, deltas bool, control io.Reader, stdout, stderr io.Writer,
	start func(context.Context, *runtime.Engine) (*runtime.Run, error)) error {
	runningHeadless.Store(true)
	notices := make(chan tui.Notice, 4)
	eng, closeEng, err := newEngine(ctx, cf, use, notices)
	if err != nil {
		return err
	}
	defer closeEng()
	if note := dbInWorkingDirNote(eng.Config()); note != "" {
		fmt.Fprintln(stderr, "swarmdeck: "+runtime.TerminalText(note))
	}
	// Without a status line, what became of an edit of the configuration
	// file is told on stderr, in both modes: stdout may be events only.
	// While the run is being started, the output shows nothing yet: what
	// is said meanwhile (another process holds the database) is written
	// at once.
	lines := make(chan string, 4)
	stop := make(chan struct{})
	var starting atomic.Bool
	defer close(stop)
	go func() {
		for {
			select {
			case n := <-notices:
				line := "swarmdeck: " + n.Text
				if starting.Load() {
					fmt.Fprintln(stderr, runtime.TerminalText(line))
					continue
				}
				select {
				case lines <- line:
				default:
				}
			case <-stop:
				return
			}
		}
	}()
	opts := runtime.HeadlessOptions{JSON: asJSON, Deltas: deltas, Out: stdout, OutTerminal: isTerminal(stdout), Log: stderr, ASCII: tui.ASCIILocale(os.Getenv),
		Control: control, Notices: lines}
	var run *runtime.Run
	code, err := eng.Headless(ctx, opts, func(ctx context.Context) (*runtime.Run, error) {
		starting.Store(true)
		r, err := start(ctx, eng)
		starting.Store(false)
		run = r
		return r, err
	})
	var ie *runtime.InterruptedError
	if errors.As(err, &ie) {
		err = cf.withResume(ie, true)
	}
	if run == nil && store.IsBusy(err) {
		// Given up waiting for the database (ctrl+c).
		return cf.startFailed(ctx, eng.Store().Path(), err)
	}
	if err == nil && code == runtime.ExitFailed && run != nil && run.Status() == runtime.RunFailed {
		// Why it failed is printed (or in the events); the way back is
		// not, and a failure is often fixed outside swarmdeck (credit, a
		// key, a server, a limit in the configuration).
		_, why := run.Result()
		err = fmt.Errorf("run %s failed; once the cause is fixed, continue it with: %s", run.ID(), cf.resumeAfterFailure(run.ID(), why, true))
	}
	if code != runtime.ExitOK || err != nil {
		return &exitError{code, err}
	}
	return nil
}

// withResume is an interrupted run's error with the command that continues it.
func (cf *commonFlags) withResume(ie *runtime.InterruptedError, headless bool) error {
	return fmt.Errorf("%w; continue it with: %s", ie, cf.resumeCommand(ie.RunID, headless))
}

// resumeAfterFailure is the command that continues a failed run once the
// cause is fixed. A model the server does not have, or one that cannot call
// tools, is fixed by naming another, so the command does not repeat the one
// given: MODEL stands for one that will do.
func (cf *commonFlags) resumeAfterFailure(id, why string, headless bool) string {
	var which string
	switch {
	case llm.SaysNoSuchModel(why):
		which = "one the server serves"
	case llm.SaysModelLacksTools(why):
		which = "one that can call tools"
	default:
		return cf.resumeCommand(id, headless)
	}
	c := *cf
	c.model, c.fromRun.model = "MODEL", false
	return c.resumeCommand(id, headless) + " (MODEL: " + which + ")"
}

// resumeCommand is the command line that continues run id, on the provider
// and pace flags given to this one. Those that resume took from the run are left
// out: a resume without them continues on the run's provider anyway.
func (cf *commonFlags) resumeCommand(id string, headless bool) string {
	var args []string
	if headless {
		args = append(args, "--headless")
	}
	args = append(args, cf.modelFlags()...)
	args = append(args, cf.paceFlags()...)
	return cf.commandLine("resume", append(args, id)...) + cf.hiddenNote()
}

// commandLine is a swarmdeck command line for a hint, with the --config and
// --db given to this one, so that it finds the same database.
func (cf *commonFlags) commandLine(sub string, args ...string) string {
	out := []string{"swarmdeck", sub}
	out = append(out, args[:len(args)-1]...)
	out = append(out, cf.storeFlags()...)
	return strings.Join(append(out, args[len(args)-1]), " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain
// path characters.
func shellQuote(s string) string {
	plain := s != ""
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._-+,:=@%", c)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runLine is a run as `swarmdeck runs --json` prints it, one per line.
type runLine struct {
	ID     string `json:"id"`
	Goal   string `json:"goal"`
	Status string `json:"status"`
	// Stopped marks a run stored as running that no swarmdeck process
	// runs any more (it was killed or crashed). Its status is then
	// "interrupted" and its error says so, as in export: resume continues
	// it.
	Stopped   bool        `json:"stopped"`
	Provider  string      `json:"provider"`
	Model     string      `json:"model"`
	Workspace string      `json:"workspace"`
	Usage     store.Usage `json:"usage"`
	Error     string      `json:"error"`
	CreatedAt time.Time   `json:"created_at"`
	EndedAt   string      `json:"ended_at"` // "" while it has not ended
}

func runsCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	var asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:        "runs [--json] [--limit N]",
		SuggestFor: []string{"list", "ls", "ps", "history", "status"},
		Short:      "List stored runs, newest first",
		Long: `runs lists the stored runs, newest first: id, status, start, tokens and goal.
A run marked stopped* is stored as running but no swarmdeck process runs it
any more (it was killed or crashed); resume continues it.

With --json it prints one JSON object per run and line instead:
{"id", "goal", "status", "stopped", "provider", "model", "workspace",
"usage": {"prompt_tokens", "completion_tokens", "total_tokens"}, "error",
"created_at", "ended_at"}, and nothing at all when no run is stored. A
stopped* run is "interrupted" there, as in export, with "stopped": true;
resume continues it, and a failed run once what made it fail is fixed.`,
		Example: `  swarmdeck runs --limit 5
  swarmdeck runs --json | jq -r 'select(.status == "interrupted") | .id'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 0 {
				return usageErr(fmt.Errorf("--limit %d is negative: give how many of the newest runs to list, or 0 for all", limit))
			}
			cf.onlyDB = true
			st, closeStore, err := openStore(cf)
			var nd *noDBError
			if errors.As(err, &nd) {
				// Nothing to list, which is not a mistake on a new
				// install; a mistyped --db is told apart from an empty
				// database by saying that there is none.
				if asJSON {
					return nil
				}
				return say(stdout, cf.withFlags(fmt.Sprintf("no runs stored: there is no database at %s yet (check --db, or start a run with `swarmdeck \"your goal\"`)", nd.path)))
			}
			if err != nil {
				return err
			}
			defer closeStore()
			runs, err := st.Runs(cmd.Context(), limit)
			if err != nil {
				return &exitError{1, readErr(st.Path(), err)}
			}
			if len(runs) == 0 {
				if asJSON {
					return nil
				}
				return say(stdout, cf.withFlags(fmt.Sprintf("no runs stored in %s yet: start one with `swarmdeck \"your goal\"`", st.Path())))
			}
			lines := make([]runLine, len(runs))
			for i, r := range runs {
				stopped := runtime.Orphaned(st.Path(), r.ID, r.Status)
				if r.Status != runtime.RunCompleted && r.Status != runtime.RunFailed && r.Status != runtime.RunCancelled {
					// The row's figures are written now and then; the
					// sessions say what a run not yet ended has spent.
					if ss, err := st.Sessions(cmd.Context(), r.ID); err == nil {
						if u := store.SessionsUsage(ss); u.TotalTokens > r.Usage.TotalTokens {
							r.Usage = u
						}
					}
				}
				if stopped {
					r.Status, r.Error = runtime.RunInterrupted, runtime.OrphanedReason(r.ID, r.Goal, r.Scripted)
				}
				lines[i] = runLine{ID: r.ID, Goal: r.Goal, Status: r.Status, Stopped: stopped, Provider: r.Provider, Model: r.Model,
					Workspace: r.Workspace, Usage: r.Usage, Error: r.Error, CreatedAt: r.CreatedAt, EndedAt: store.Time(r.EndedAt)}
			}
			if asJSON {
				enc := json.NewEncoder(stdout)
				enc.SetEscapeHTML(false)
				for _, l := range lines {
					if err := enc.Encode(l); err != nil {
						return outputErr(err)
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "RUN\tSTATUS\tSTARTED\tTOKENS\tGOAL")
			// The run the footnote names: the newest stopped one resume
			// takes, else the newest stopped one.
			var orphan, benchOrphan string
			for i, l := range lines {
				status := l.Status
				if l.Stopped {
					status = "stopped*"
					switch {
					case runtime.NotResumed(&runs[i]) != "":
						if benchOrphan == "" {
							benchOrphan = l.ID
						}
					case orphan == "":
						orphan = l.ID
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", l.ID, status, l.CreatedAt.Local().Format("2006-01-02 15:04"), l.Usage.TotalTokens, runtime.TerminalText(runtime.OneLineCells(l.Goal, 60)))
			}
			if err := tw.Flush(); err != nil {
				return outputErr(err)
			}
			const footnote = "\n* stored as running, but no swarmdeck process runs it (it was killed, crashed, or stopped when its database failed): "
			switch {
			case orphan != "":
				if err := say(stdout, cf.withFlags(fmt.Sprintf(footnote+"`swarmdeck resume %s` continues it", orphan))); err != nil {
					return err
				}
			case benchOrphan != "":
				if err := say(stdout, cf.withFlags(fmt.Sprintf(footnote+"a bench run is not resumed, and `swarmdeck delete %s` removes it", benchOrphan))); err != nil {
					return err
				}
			}
			if limit > 0 && len(runs) == limit {
				if total, err := st.RunCount(cmd.Context()); err == nil && total > limit {
					return say(stdout, fmt.Sprintf("\n%d of %d runs shown: --limit 0 lists them all", limit, total))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per run and line")
	cmd.Flags().IntVar(&limit, "limit", 0, "list only the newest N runs (0: all)")
	return cmd
}

func exportCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "export [RUN_ID]",
		SuggestFor:        []string{"dump"},
		Short:             "Print one run as JSON (default: the latest)",
		Args:              atMostOne("run id"),
		ValidArgsFunction: completeRunIDs(cf, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			cf.onlyDB = true
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
					return notFound(err)
				}
				id = latest.ID
			}
			err = st.WriteExport(cmd.Context(), id, stdout, func(r *store.ExportRun) {
				if runtime.Orphaned(st.Path(), r.ID, r.Status) {
					// As runs and view say: stored as running, but dead.
					r.Status = runtime.RunInterrupted
					r.Error = runtime.OrphanedReason(r.ID, r.Goal, r.Scripted)
				}
			})
			if err != nil {
				return notFound(readErr(st.Path(), err))
			}
			return nil
		},
	}
}

func resumeCmd(cf *commonFlags, stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	var headless, asJSON, deltas bool
	var control string
	cmd := &cobra.Command{
		Use:        "resume [--headless] RUN_ID",
		SuggestFor: []string{"continue"},
		Short:      "Continue an interrupted or failed run",
		Long: `resume continues a stored run where it stopped: one that was interrupted
(Ctrl-C, the dashboard closed, the process killed) or one that failed, once
the cause is fixed (a quota, an API key, a server; for a run stopped by its
token budget, limits.token_budget_per_run raised). No stored message is
changed or removed; the sessions cut short go on from their last message.
It continues in the run's own workspace; --workspace DIR continues it in DIR
instead (for a directory that was moved or removed), which becomes the run's.`,
		Args: oneRunID,
		ValidArgsFunction: completeRunIDs(cf, func(r *store.Run, live bool) bool {
			// A run another process is running is not offered, nor a
			// bench run: resume would refuse them.
			if runtime.NotResumed(r) != "" {
				return false
			}
			return r.Status == runtime.RunInterrupted || r.Status == runtime.RunFailed || (r.Status == runtime.RunRunning && !live)
		}),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				// The command to suggest is this one with the id: its
				// flags, and --headless where there is no terminal for
				// the dashboard.
				var flags []string
				if headless || checkTerminal() != nil {
					flags = append(flags, "--headless")
				}
				if asJSON {
					flags = append(flags, "--json")
				}
				if deltas {
					flags = append(flags, "--json-deltas")
				}
				if control != "" {
					flags = append(flags, "--control", shellQuote(control))
				}
				return usageErr(cf.whichToResume(cmd.Context(), append(flags, cf.runFlags()...)))
			}
			id := args[0]
			if err := checkHeadlessFlags(cmd, headless); err != nil {
				return err
			}
			if err := cf.keepRunProvider(cmd.Context(), id); err != nil {
				return cf.stoppedBeforeResume(cmd.Context(), id, headless, err)
			}
			if !headless {
				return cf.stoppedBeforeResume(cmd.Context(), id, headless, dashboard(cmd.Context(), cf, "", id, false, stdout))
			}
			in, err := controlInput(control, stdin)
			if err != nil {
				return err
			}
			return cf.stoppedBeforeResume(cmd.Context(), id, headless, headlessRun(cmd.Context(), cf, forStoredRun, asJSON, deltas, in, stdout, stderr, func(ctx context.Context, eng *runtime.Engine) (*runtime.Run, error) {
				r, err := eng.ResumeIn(ctx, id, cf.workspace)
				if gone := (*runtime.WorkspaceGoneError)(nil); errors.As(err, &gone) {
					gone.Headless = true
				}
				return r, err
			}))
		},
	}
	cmd.Flags().BoolVar(&headless, "headless", false, "continue without the dashboard")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON event per line on stdout")
	cmd.Flags().BoolVar(&deltas, "json-deltas", false, "with --json: include streamed token deltas")
	cmd.Flags().StringVar(&control, "control", "", `read control commands from "-" (stdin), one JSON object per line`)
	return cmd
}

// stoppedBeforeResume is err, unless a stop signal came while the run was
// still being read or taken up and all err says is that: the run was then
// left as it was, and the person is told so, with the command that resumes
// it, instead of a bare "context canceled".
func (cf *commonFlags) stoppedBeforeResume(ctx context.Context, id string, headless bool, err error) error {
	var ie *runtime.InterruptedError
	if !stoppedBySignal(ctx, err) || errors.As(err, &ie) {
		return err
	}
	return &exitError{runtime.ExitFailed, fmt.Errorf("stopped (%v) before run %s was resumed; it is as it was: continue it with: %s",
		context.Cause(ctx), id, cf.resumeCommand(id, headless))}
}

// stoppedBySignal reports whether err says only that ctx was cancelled,
// and a stop signal cancelled it.
func stoppedBySignal(ctx context.Context, err error) bool {
	var sc signalCause
	return err != nil && errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &sc) &&
		strings.HasSuffix(err.Error(), context.Canceled.Error())
}

// whichToResume is the error of a resume without a run id: it names the
// newest run that can be continued (interrupted, failed, or stored as
// running by a process that is gone), so that the next command is one copy
// away: with this one's flags, and (as every command an error names) its
// --config and --db. A resume acts, so it never picks that run by itself.
func (cf *commonFlags) whichToResume(ctx context.Context, flags []string) error {
	const need = "resume: which run? give its id (usage: swarmdeck resume [--headless] RUN_ID)"
	// A flag given without its value took the run id for it (`resume
	// --model r-1a2b3c`): it is named, and the command to copy, when the
	// run is found, leaves it out.
	at, swallowed, value := -1, "", ""
	for i := 0; i+1 < len(flags); i++ {
		if strings.HasPrefix(flags[i], "--") && runIDShape.MatchString(flags[i+1]) {
			at, swallowed, value = i, flags[i], flags[i+1]
			break
		}
	}
	for _, f := range []struct{ name, value string }{{"--config", cf.config}, {"--db", cf.db}} {
		if swallowed == "" && runIDShape.MatchString(f.value) {
			swallowed, value = f.name, f.value
		}
	}
	took := ""
	if swallowed != "" {
		took = fmt.Sprintf("resume: which run? %s took %s, a run id by the look of it, as its value, and no run id was left: give a value after %s, or leave it out",
			swallowed, value, swallowed)
	}
	st, closeStore, err := openStore(cf)
	if err != nil {
		if took != "" {
			return errors.New(took + " (usage: swarmdeck resume [--headless] RUN_ID)")
		}
		return errors.New(need)
	}
	defer closeStore()
	runs, err := st.Runs(ctx, 0)
	if err != nil {
		return errors.New(need)
	}
	if at >= 0 {
		for _, r := range runs {
			if strings.HasPrefix(r.ID, strings.ToLower(value)) {
				rest := slices.Delete(slices.Clone(flags), at, at+2)
				return fmt.Errorf("%s: `swarmdeck resume %s`%s", took, strings.Join(append(rest, r.ID), " "), cf.hiddenNote())
			}
		}
	}
	if took != "" {
		return errors.New(took + " (usage: swarmdeck resume [--headless] RUN_ID)")
	}
	for _, r := range runs {
		if runtime.NotResumed(&r) != "" {
			continue // a bench run, which resume refuses
		}
		if r.Status == runtime.RunInterrupted || r.Status == runtime.RunFailed || runtime.Orphaned(st.Path(), r.ID, r.Status) {
			return fmt.Errorf("%s; the newest run that can be continued is %s (%s, %s): `swarmdeck resume %s`",
				need, r.ID, runtime.TerminalText(runtime.OneLine(r.Goal, 40)), r.CreatedAt.Local().Format("2006-01-02 15:04"), strings.Join(append(flags, r.ID), " "))
		}
	}
	return errors.New(need + "; no stored run can be continued: `swarmdeck runs` lists them")
}

// runIDShape is what a run id, or the start of one, looks like.
var runIDShape = regexp.MustCompile(`^(?i)r-[0-9a-f]{2,}$`)

// keepRunProvider makes a resume continue on the provider, server and
// model its run was started with, each unless a flag gives it: --model
// alone changes the model on the same server, --base-url alone moves the
// same provider and model to another address, and --provider chooses
// anew (its server and model then come from the flags or the
// configuration). What the configuration and the environment resolve to
// now (an API key set since, an edited config) must not move a run
// elsewhere unnoticed, such as from the offline scripted model to a paid
// one. A run resume refuses whatever its status (a bench run) is refused
// here, before a terminal is looked for.
func (cf *commonFlags) keepRunProvider(ctx context.Context, id string) error {
	st, closeStore, err := openStore(cf)
	if err != nil {
		return err
	}
	rec, err := st.Run(ctx, id)
	closeStore()
	if err != nil {
		return notFound(err)
	}
	if err := runtime.Unresumable(rec); err != nil {
		// Before the dashboard or the terminal are looked at.
		return usageErr(err)
	}
	if err := runtime.HeldElsewhere(st.Path(), rec.ID); err != nil {
		return usageErr(err)
	}
	if cf.provider != "" {
		// Another provider, chosen anew: the run's server and model were
		// the old one's.
		return nil
	}
	if rec.Scripted {
		if cf.baseURL != "" {
			// An offline run taken to a server: the built-in model's name
			// means nothing there, and the configuration's default model
			// would be taken without a word.
			if cf.model == "" {
				return usageErr(fmt.Errorf("run %s ran on the built-in scripted model, which no server serves: give --model with --base-url to say which model continues it", id))
			}
			return nil
		}
		cf.provider, cf.fromRun.provider = config.TypeScripted, true
		if cf.model == "" && rec.Model != "" {
			// As for a server's run: the configuration's model is for new
			// runs, and would be written into this one's record.
			cf.model, cf.fromRun.model = rec.Model, true
		}
		return nil
	}
	name, _, _ := strings.Cut(rec.Provider, " (")
	cfg, err := cf.configFile()
	if err != nil {
		return err
	}
	if _, ok := cfg.Providers[name]; !ok {
		return usageErr(fmt.Errorf("run %s was started on %s, and the configuration has no provider %q now: choose what to continue it on with --provider, --base-url and --model",
			id, rec.Provider, name))
	}
	cf.provider, cf.fromRun.provider = name, true
	if cf.model == "" {
		cf.model, cf.fromRun.model = rec.Model, true
	}
	if cf.baseURL != "" {
		return nil // the run's server, moved: the flag says where it is now
	}
	// where is the provider's label and base URL as the run records them.
	where := func() (string, string, error) {
		next, err := cf.configFile()
		if err != nil {
			return "", "", err
		}
		if err := next.Apply(cf.overrides()); err != nil {
			return "", "", usageErr(err)
		}
		// Where the provider points decides; a key it lacks is reported
		// later, once it is the right server.
		res, err := next.Resolve(func(k string) string {
			if v := os.Getenv(k); v != "" {
				return v
			}
			return "unset"
		})
		if err != nil {
			return "", "", usageErr(err)
		}
		return runtime.ProviderLabel(res), runtime.RedactedBaseURL(res.Provider.BaseURL), nil
	}
	now, base, err := where()
	if err != nil {
		return err
	}
	if rec.BaseURL != "" && (now != rec.Provider || !sameURL(base, rec.BaseURL)) {
		// Started with --base-url (or a configuration that has changed
		// since): the run says where its server was. The label names
		// only the host: a gateway serves other models under other
		// paths of the same one.
		if hidden := runtime.HiddenInURL(rec.BaseURL); len(hidden) > 0 {
			// Its query's values, or its user and password, were not
			// stored: they may hold a key.
			return usageErr(fmt.Errorf("run %s was started on %s, %s: give the whole URL again with --base-url to continue it", id, rec.BaseURL, notStored(hidden)))
		}
		cf.baseURL, cf.fromRun.baseURL = rec.BaseURL, true
		if now, _, err = where(); err != nil {
			return err
		}
	}
	if now != rec.Provider {
		return usageErr(fmt.Errorf("run %s was started on %s, but provider %q is now %s: give --base-url (and --provider, --model) to say where to continue it",
			id, rec.Provider, name, now))
	}
	return nil
}

// notStored says that the parts of a base URL a run hid were not stored,
// and why.
func notStored(parts []string) string {
	switch len(parts) {
	case 1:
		if parts[0] == "query" {
			return "whose query is not stored (its values may hold a key)"
		}
		return "whose " + parts[0] + " is not stored (it may hold a key)"
	default:
		last := len(parts) - 1
		return "whose " + strings.Join(parts[:last], ", ") + " and " + parts[last] + " are not stored (they may hold a key)"
	}
}

// sameURL reports whether two base URLs name the same place, a slash at
// the end aside.
func sameURL(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

func viewCmd(cf *commonFlags, stdout io.Writer) *cobra.Command {
	return &cobra.Command{
		Use:               "view [RUN_ID]",
		SuggestFor:        []string{"open", "show", "inspect", "info"},
		Short:             "Open a run read-only in the dashboard (default: the latest; follows a run another process is running)",
		Args:              atMostOne("run id"),
		ValidArgsFunction: completeRunIDs(cf, nil),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := ""
			if len(args) == 1 {
				if id = args[0]; strings.TrimSpace(id) == "" {
					// As export, resume and delete take it: `view "$ID"`
					// with ID unset would open the latest run instead.
					return usageErr(errors.New("an empty run id names no run: give one (`swarmdeck runs` lists them), or leave it out for the latest"))
				}
			}
			if _, _, err := storedDB(cf); err != nil {
				return notFound(err)
			}
			return dashboard(cmd.Context(), cf, "", id, true, stdout)
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
		Long: `mock-llm serves the built-in scripted model over HTTP at
/v1/chat/completions and /v1/models, in the wire format of OpenAI or of the
OpenAI-compatible endpoints of Ollama or llama.cpp (--dialect): for swarmdeck
on another machine, or for testing your own tools. It answers any model name.

Without --scenario it plays the demo the dashboard shows offline. A scenario
file (YAML or JSON) scripts the replies instead, by the role and turn of the
session asking (turn n of a session gets item n of its list; labels: wins
over roles; sub-orchestrator: among the roles scripts the sessions
delegate_task starts; default: answers any turn not scripted):

  roles:
    orchestrator:
      - tool_calls:
          - name: sessions_spawn
            args: {task: "Look around", agent: explorer}
      - content: done
    explorer:
      - fault: {status: 503, retry_after: 1}   # served once, then the reply
        content: looked around
  labels:
    writer: [{content: "a draft"}]
  shadow: {content: "I'd pick a."}             # answers ask_others for others
  default: {content: ok}

A fault takes status (400-599), body, retry_after (seconds or an HTTP date),
retry_after_ms, truncate (end the stream early), stall (a pause after the
first chunk, e.g. 5s) and times (how often, default 1; -1 always). A mistake
in the file is reported with its line.`,
		Example: `  swarmdeck mock-llm --addr 127.0.0.1:8089
  swarmdeck mock-llm --addr 127.0.0.1:8089 --scenario faults.yaml --latency 0
  swarmdeck --provider openai --base-url http://127.0.0.1:8089/v1 --model swarmdeck-scripted "a goal"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if latency < 0 {
				return usageErr(fmt.Errorf("--latency %s: a latency cannot be negative", latency))
			}
			if speed < 0 {
				return usageErr(fmt.Errorf("--stream-speed %d is negative; use 0 to send each reply at once", speed))
			}
			if cmd.Flags().Changed("scripted-latency") {
				return usageErr(errors.New("mock-llm takes its delay from --latency, not --scripted-latency"))
			}
			if cmd.Flags().Changed("scripted-stream-speed") {
				return usageErr(errors.New("mock-llm takes its speed from --stream-speed, not --scripted-stream-speed"))
			}
			if err := refuseFlags(cmd, "it serves the scripted model as its own flags say, with no configuration or database",
				"config", "db", "provider", "base-url", "model", "workspace"); err != nil {
				return err
			}
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
	cmd.Flags().StringVar(&scenario, "scenario", "", "YAML or JSON file scripting the replies by role and turn, instead of the demo (see above)")
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
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			progress := stderr
			// Flags a mode does not use are refused rather than ignored.
			ignored := map[string][]string{
				"startup": {"agents", "turns", "broadcasts-per-agent", "floor", "cpuprofile", "memprofile", "db"},
				"floor":   {"runs", "broadcasts-per-agent", "cpuprofile", "memprofile", "db"},
				"":        {"runs"},
			}
			// bench always measures the scripted model on the runtime's
			// defaults: the flags that choose or shape a run's model and
			// configuration would be ignored.
			const defaults = "bench measures the built-in scripted model on the runtime's defaults"
			if err := refuseFlags(cmd, defaults, "config", "provider", "base-url", "model", "workspace"); err != nil {
				return err
			}
			if err := refuseFlags(cmd, "the model's delay is --latency", "scripted-latency"); err != nil {
				return err
			}
			if err := refuseFlags(cmd, defaults, "scripted-stream-speed"); err != nil {
				return err
			}
			mode := ""
			switch {
			case startup:
				mode = "startup"
			case floor:
				mode = "floor"
			}
			for _, name := range ignored[mode] {
				if cmd.Flags().Changed(name) {
					if mode == "" {
						return usageErr(fmt.Errorf("--%s applies to bench --startup only", name))
					}
					return usageErr(fmt.Errorf("--%s has no effect with --%s", name, mode))
				}
			}
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
			if err := o.Check(); err != nil {
				return benchErr(err) // before a profile file is made
			}
			var made []*os.File
			defer func() {
				for _, f := range made {
					f.Close()
				}
			}()
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
				made = append(made, f)
				*p.w = f
			}
			runningBench.Store(true)
			rep, err := bench.Run(ctx, o)
			if err != nil {
				// A bench that failed before it profiled anything (its
				// --db, say) leaves no empty profile behind.
				for _, f := range made {
					if fi, statErr := f.Stat(); statErr == nil && fi.Size() == 0 {
						os.Remove(f.Name())
					}
				}
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
	f.IntVar(&o.Fanout, "fanout", o.Fanout, "children each parent spawns in parallel (with --startup: the wide fan-out)")
	f.IntVar(&o.Turns, "turns", o.Turns, "LLM turns each leaf takes")
	f.DurationVar(&o.Latency, "latency", o.Latency, "latency of every LLM call, e.g. 1s, 50ms, 0")
	// One default line each, for both uses.
	f.Lookup("fanout").DefValue = fmt.Sprintf("%d, or %d with --startup", o.Fanout, so.Fanout)
	f.Lookup("latency").DefValue = fmt.Sprintf("%s, or %s with --startup", o.Latency, so.Latency)
	f.IntVar(&o.Broadcasts, "broadcasts-per-agent", o.Broadcasts, "task_broadcast calls each leaf makes to its siblings")
	f.BoolVar(&asJSON, "json", false, "print one JSON object on stdout")
	f.BoolVar(&startup, "startup", false, "measure start-up and fan-out cost of whole swarmdeck processes instead")
	f.BoolVar(&floor, "floor", false, "make the same calls with HTTP alone (no runtime): the most this machine allows")
	f.IntVar(&so.Runs, "runs", so.Runs, "with --startup: runs of each measurement")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a pprof CPU profile of the run to `FILE`")
	f.StringVar(&memProfile, "memprofile", "", "write a pprof allocation profile of the run to `FILE`")
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

// completeRunIDs completes a run id from the database the flags name,
// newest first, with its status and goal as the description; keep, when
// set, picks the runs that make sense for the command.
func completeRunIDs(cf *commonFlags, keep func(r *store.Run, live bool) bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return runIDCompletions(cf, cmd.Context(), toComplete, keep, nil), cobra.ShellCompDirectiveNoFileComp
	}
}

// completeRunIDList is completeRunIDs for a command that takes several run
// ids: the runs already named are not offered again.
func completeRunIDList(cf *commonFlags, keep func(r *store.Run, live bool) bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return runIDCompletions(cf, cmd.Context(), toComplete, keep, args), cobra.ShellCompDirectiveNoFileComp
	}
}

func runIDCompletions(cf *commonFlags, ctx context.Context, toComplete string, keep func(r *store.Run, live bool) bool, named []string) []cobra.Completion {
	st, closeStore, err := openStore(cf)
	if err != nil {
		return nil
	}
	defer closeStore()
	// Every stored run that fits is a candidate, however old: the newest
	// maxCompletions of them are offered.
	var out []cobra.Completion
	st.EachRun(ctx, toComplete, func(r *store.Run) bool {
		if slices.Contains(named, r.ID) {
			return true
		}
		live, known := runtime.RunIsLive(st.Path(), r.ID)
		if keep != nil && !keep(r, live) {
			return true
		}
		// As runs shows it: a run no process runs is stopped, and a
		// goal's control characters are escaped.
		status := r.Status
		if r.Status == runtime.RunRunning && known && !live {
			status = "stopped*"
		}
		out = append(out, cobra.CompletionWithDesc(r.ID, status+": "+runtime.TerminalText(runtime.OneLine(r.Goal, 50))))
		return len(out) < maxCompletions
	})
	return out
}

// maxCompletions bounds the run ids a completion offers: a shell lists
// them all, and one more character of the id narrows them down.
const maxCompletions = 200

// storedDB is the database the configuration names, for commands that
// read what is stored: one that does not exist yet is an error (noDBError)
// rather than an empty file made by a mistyped --db.
func storedDB(cf *commonFlags) (string, *config.Config, error) {
	cfg, err := cf.configFile()
	if err != nil {
		if cf.db == "" || !cf.onlyDB {
			return "", nil, err
		}
		// --db names the database, so reading it needs nothing else from a
		// configuration that cannot be read: it is said, not refused.
		if cf.stderr != nil {
			fmt.Fprintf(cf.stderr, "swarmdeck: reading %s without the configuration, which has a mistake: %s\n",
				runtime.TerminalText(cf.db), runtime.TerminalText(err.Error()))
		}
		cfg = config.Defaults()
		cfg.DB = cf.db
	}
	db := cfg.DBPath()
	if _, err := filepath.Abs(db); err != nil {
		// A relative path in a current directory that was removed: the
		// file is not missing, there is no place to look for it.
		return db, cfg, err
	}
	if _, err := os.Stat(db); errors.Is(err, os.ErrNotExist) {
		return db, cfg, dbSetting(cfg, &noDBError{db})
	}
	if err := store.CheckFile(db); err != nil {
		return db, cfg, usageErr(dbSetting(cfg, err))
	}
	return db, cfg, nil
}

// dbSetting says at which line of the configuration file db is set, when
// it is the file that names the database err is about; or, for the
// database under the current directory that nothing set, why it is there.
func dbSetting(cfg *config.Config, err error) error {
	if where, ok := cfg.Where("db"); ok {
		return fmt.Errorf("%s: %w", where, err)
	}
	if note := dbInWorkingDirNote(cfg); note != "" {
		return fmt.Errorf("%w; %s", err, note)
	}
	return err
}

// noDBError says that the database to read does not exist.
type noDBError struct{ path string }

func (e *noDBError) Error() string {
	return fmt.Sprintf("no database at %s: nothing is stored there yet (check --db, or start a run with `swarmdeck \"your goal\"`)", e.path)
}

// upgrading says that a database written by an older swarmdeck is being
// brought up to date: a large one takes seconds, before anything else shows.
func (cf *commonFlags) upgrading(path string, from, to int) {
	if cf.stderr != nil {
		fmt.Fprintf(cf.stderr, "swarmdeck: upgrading the database %s from schema %d to %d, once (a large one takes a few seconds)\n",
			runtime.TerminalText(path), from, to)
	}
}

// openStore opens the database named by the configuration read-only, for
// commands that only read it: a database the user may only read can be
// listed and exported. One written by an older swarmdeck is opened for
// writing instead, which brings its schema up to date.
func openStore(cf *commonFlags) (*store.Store, func(), error) {
	db, cfg, err := storedDB(cf)
	if err != nil {
		return nil, nil, notFound(err)
	}
	st, err := store.OpenReadOnly(db)
	switch {
	case errors.Is(err, store.ErrNoSchema):
		// A new database, or one that another process is making: the
		// schema is made here unless that process holds it.
		st, err = store.OpenWith(db, nil, store.OpenOptions{})
	case errors.Is(err, store.ErrOldSchema):
		if st, err = store.OpenWith(db, nil, store.OpenOptions{Upgrading: cf.upgrading}); err != nil && !errors.Is(err, store.ErrOlderInUse) {
			err = fmt.Errorf("%s was written by an older swarmdeck and must be upgraded before this one can read it, which needs write access to it and its directory: %w", db, err)
		}
	}
	if err != nil {
		// Not a database, a directory, unreadable: --db names the wrong
		// thing, as when a run is started on it.
		return nil, nil, openErr(cfg, db, "", err)
	}
	return st, func() { st.Close() }, nil
}

// openErr is the error of opening the database at path: bad usage for a
// file that is no database or cannot be read or, when the command must
// write it (need says what for), written; a failure for a database that
// another process kept locked, which passes.
func openErr(cfg *config.Config, path, need string, err error) error {
	if store.IsBusy(err) {
		return busyErr(path, err)
	}
	if errors.Is(err, store.ErrOlderInUse) {
		return &exitError{runtime.ExitFailed, err}
	}
	code, _ := store.SQLiteCode(err)
	switch {
	case store.IsFull(err):
		return &exitError{runtime.ExitFailed, fullErr(path, err)}
	case code == 8 && need != "": // SQLITE_READONLY
		return readOnlyErr(path, need)
	case code == 11: // the right file, damaged
		return &exitError{runtime.ExitFailed, damagedErr(path, err)}
	case code == 26: // --db names another file
		return usageErr(dbSetting(cfg, damagedErr(path, err)))
	}
	return usageErr(dbSetting(cfg, err))
}

// openToChange opens the database at path for a command that changes it
// outside a run (need: delete, prune). One this user may not write is
// refused first: SQLite would open it read-only without a word, fail at
// the first write and leave its -wal and -shm files behind.
func (cf *commonFlags) openToChange(cfg *config.Config, path, need string) (*store.Store, error) {
	if ok, known := store.Writable(path); known && !ok {
		return nil, readOnlyErr(path, need)
	}
	st, err := store.OpenWith(path, nil, store.OpenOptions{Upgrading: cf.upgrading})
	if err != nil {
		return nil, openErr(cfg, path, need, err)
	}
	return st, nil
}

func readOnlyErr(path, need string) error {
	return usageErr(fmt.Errorf("the database %s is read-only here (the file, or the directory its -wal and -shm files go in): %s needs to write both; make them writable, or run as a user who may", path, need))
}

// busyErr is SQLite's "database is locked" said for a person: another
// process held the database for longer than swarmdeck waits, and who that
// may be.
func busyErr(path string, err error) error {
	return &exitError{runtime.ExitFailed, fmt.Errorf("%s; try again then (%w)", store.BusyReason(path), err)}
}

// startFailed is startErr for a start or resume under ctx: one that a
// person stopped (ctrl+c) while it waited for a database another process
// holds says so, and who may hold it unless that was said when the wait
// began.
func (cf *commonFlags) startFailed(ctx context.Context, path string, err error) error {
	if ctx.Err() == nil || !store.IsBusy(err) {
		return startErr(path, err)
	}
	why := store.StoppedWaitingReason(path)
	if b := cf.busyTold; b != nil && b.Load() {
		why = "stopped waiting for the database " + path + ", which another process has locked (as said above)"
	}
	return &exitError{runtime.ExitFailed, fmt.Errorf("%s; nothing stored is lost: try again once it is free (%w)", why, err)}
}

// startErr is the exit of a run that could not be started or resumed on
// the database at path, as run and resume give it: bad usage (a run that
// has ended, one running elsewhere, a workspace that is gone), unless the
// database could not take it (a full disk, or another process holding it).
func startErr(path string, err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if store.IsBusy(err) {
		return busyErr(path, err)
	}
	if _, ok := store.SQLiteCode(err); ok || errors.Is(err, store.ErrOlderInUse) {
		return &exitError{runtime.ExitFailed, err}
	}
	return usageErr(err)
}

// notFound gives a run or a database that does not exist the status of bad
// usage, as every command names them; other errors keep theirs, or fail.
func notFound(err error) error {
	var ee *exitError
	var nd *noDBError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &nd), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrAmbiguous):
		return usageErr(err)
	}
	return &exitError{runtime.ExitFailed, err}
}

// checkTerminal is tui.CheckTerminal; tests replace it, since whether they
// have a terminal depends on where they run.
var checkTerminal = tui.CheckTerminal

// runFlags are the shared flags given to this command that choose a
// run's model and workspace, quoted for a shell: what a command suggested
// in its place needs to do the same. --config and --db are not among
// them (see withFlags), nor what resume took from the run itself.
func (cf *commonFlags) runFlags() []string {
	flags := append(cf.modelFlags(), givenFlags([]givenFlag{
		{"--workspace", cf.workspace, cf.workspace != ""},
	})...)
	return append(flags, cf.paceFlags()...)
}

// paceFlags are the --scripted-latency and --scripted-stream-speed given
// to this command: the scripted model's pace is not stored with a run, so
// a command that continues it needs them to keep it.
func (cf *commonFlags) paceFlags() []string {
	return givenFlags([]givenFlag{
		{"--scripted-latency", cf.scriptedLatency.String(), cf.latencySet},
		{"--scripted-stream-speed", strconv.Itoa(cf.scriptedSpeed), cf.speedSet},
	})
}

// modelFlags are the --provider, --base-url and --model given to this
// command, quoted for a shell; not what resume took from the run. The
// secrets of --base-url are hidden (see hiddenNote): a suggested command
// is shown, and may end up in a log or a CI's output.
func (cf *commonFlags) modelFlags() []string {
	shown, _ := llm.HideURLSecrets(cf.baseURL)
	return givenFlags([]givenFlag{
		{"--provider", cf.provider, cf.provider != "" && !cf.fromRun.provider},
		{"--base-url", shown, cf.baseURL != "" && !cf.fromRun.baseURL},
		{"--model", cf.model, cf.model != "" && !cf.fromRun.model},
	})
}

// hiddenNote is what a suggested command line that repeats --base-url
// adds when modelFlags hid some of it: the command works once they are
// put back.
func (cf *commonFlags) hiddenNote() string {
	if _, hid := llm.HideURLSecrets(cf.baseURL); hid && cf.baseURL != "" && !cf.fromRun.baseURL {
		return " (with the --base-url given before: " + llm.Hidden + " stands for its secrets)"
	}
	return ""
}

// shownURL is a base URL as an error shows it, its secrets hidden.
func shownURL(raw string) string {
	shown, _ := llm.HideURLSecrets(raw)
	return shown
}

// givenFlag is a flag for a suggested command line, if it was given.
type givenFlag struct {
	name, value string
	given       bool
}

func givenFlags(flags []givenFlag) []string {
	var out []string
	for _, f := range flags {
		if f.given {
			out = append(out, f.name, shellQuote(f.value))
		}
	}
	return out
}

// goalArg is a goal as the last argument of a suggested command line:
// quoted, and after "--" when it starts with a dash, which would make it
// a flag.
func goalArg(goal string) string {
	if strings.HasPrefix(goal, "-") {
		return "-- " + shellQuote(goal)
	}
	return shellQuote(goal)
}

// asGoal is the command that runs words typed as a command as a goal
// instead, with this command's flags, quoted for a shell.
func (cf *commonFlags) asGoal(goal string) string {
	return "`" + strings.Join(append(append([]string{"swarmdeck", "run"}, cf.runFlags()...), goalArg(goal)), " ") + "`" + cf.hiddenNote()
}

// noDashboard says why the dashboard cannot open here, and what does the
// same without it: the run headless, or, for a run to read, its export (a
// headless run is no help to someone who wants to read one).
func (cf *commonFlags) noDashboard(err error, goal, runID string, readOnly bool) error {
	var why string
	switch {
	case errors.Is(err, tui.ErrNoTerminal):
		why = "the dashboard needs a terminal, and there is none here"
	case errors.Is(err, tui.ErrDumbTerminal):
		why = "the dashboard needs a terminal that can move its cursor, and TERM=dumb says this one cannot"
	default:
		return usageErr(err)
	}
	var instead string
	switch {
	case readOnly && runID != "":
		instead = fmt.Sprintf("to read run %s without it, use `swarmdeck export %s`", runID, runID)
	case readOnly:
		instead = "to read the latest run without it, use `swarmdeck export`"
	case runID != "":
		instead = fmt.Sprintf("to continue run %s without it, use `swarmdeck resume %s %s`%s", runID, strings.Join(append([]string{"--headless"}, cf.runFlags()...), " "), runID, cf.hiddenNote())
	case strings.TrimSpace(goal) != "":
		instead = fmt.Sprintf("to run without it, use `swarmdeck run %s %s`%s", strings.Join(append([]string{"--headless"}, cf.runFlags()...), " "), goalArg(goal), cf.hiddenNote())
	default:
		instead = "for scripts and CI use `swarmdeck run --headless GOAL`"
	}
	if errors.Is(err, tui.ErrDumbTerminal) {
		instead += ", or set TERM (for example TERM=xterm-256color) if the terminal can"
	}
	return usageErr(fmt.Errorf("%s: %s", why, instead))
}

// dashboard opens the terminal UI on a new run (goal, or a prompt for one
// when empty), a resumed run, or a stored run read-only.
func dashboard(ctx context.Context, cf *commonFlags, goal, runID string, readOnly bool, stdout io.Writer) error {
	// Before a run is started or resumed that nobody could watch. A run
	// to view is looked up first: one that does not exist is the error
	// to give, not the missing terminal.
	if !readOnly {
		if err := checkTerminal(); err != nil {
			return cf.noDashboard(err, goal, runID, false)
		}
	}
	use := forNewRun
	switch {
	case readOnly:
		use = forView
	case runID != "":
		use = forStoredRun
	}
	notices := make(chan tui.Notice, 4)
	cf.dashboardStarting = new(atomic.Bool)
	eng, closeEng, err := newEngine(ctx, cf, use, notices)
	if err != nil {
		return err
	}
	defer closeEng()
	cfg := eng.Config()
	if note := dbInWorkingDirNote(cfg); note != "" && !readOnly {
		// On stderr, where it stays once the dashboard has closed, and on
		// the dashboard's status line meanwhile.
		if cf.stderr != nil {
			fmt.Fprintln(cf.stderr, "swarmdeck: "+runtime.TerminalText(note))
		}
		select { // as every notice, never blocking
		case notices <- tui.Notice{Text: note}:
		default:
		}
	}
	eng.AttachHuman(true)
	opts := tui.Options{Keys: cfg.UI.Keys, Theme: cfg.UI.Theme, Notices: notices,
		ResumeCommand: func(id, why string) string { return cf.resumeAfterFailure(id, why, false) },
		Provider:      eng.ProviderLabel(), Model: eng.Model(), Scripted: eng.Scripted() != nil}
	var run *runtime.Run
	switch {
	case readOnly:
		if opts.Controller, err = eng.View(ctx, runID); err != nil {
			return notFound(err)
		}
		if err := checkTerminal(); err != nil {
			return cf.noDashboard(err, "", runID, true)
		}
		status := opts.Controller.Snapshot().Run.Status
		if eng.Store().Immutable() && status != runtime.RunCompleted && status != runtime.RunFailed && status != runtime.RunCancelled {
			// The run could still be resumed, by someone who may write
			// the database; this view would not show it.
			select { // as every notice, never blocking
			case notices <- tui.Notice{Text: "the database is read-only here and open in no swarmdeck process: the run is shown as stored, and a later resume of it is not followed"}:
			default:
			}
		}
	case runID != "":
		cf.dashboardStarting.Store(true)
		run, err = eng.ResumeIn(ctx, runID, cf.workspace)
		cf.dashboardStarting.Store(false)
		if err != nil {
			return cf.startFailed(ctx, eng.Store().Path(), err)
		}
	case goal != "":
		cf.dashboardStarting.Store(true)
		run, err = eng.Start(ctx, goal)
		cf.dashboardStarting.Store(false)
		if err != nil {
			return cf.startFailed(ctx, eng.Store().Path(), err)
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
	tuiErr := tui.Run(ctx, opts)
	if tuiErr != nil && !errors.Is(tuiErr, context.Canceled) {
		return &exitError{1, tuiErr}
	}
	if run == nil {
		return nil
	}
	var why string // the person quit
	switch {
	case errors.Is(tuiErr, tui.ErrTerminalGone):
		why = "the dashboard's terminal is gone"
	case ctx.Err() != nil:
		why = context.Cause(ctx).Error() // a signal
	}
	return cf.dashboardEnd(run, stdout, why)
}

// dashboardEnd says how the run the dashboard showed ended, with its exit
// status: 0 only for a completed run. A run still going when the person
// quit is stopped and stored, and the command that continues it printed;
// stoppedBy says what closed the dashboard when the person did not.
func (cf *commonFlags) dashboardEnd(run *runtime.Run, stdout io.Writer, stoppedBy string) error {
	status := run.Status()
	if status == runtime.RunRunning {
		why := "the dashboard was closed while it ran"
		if stoppedBy != "" {
			why = stoppedBy
		}
		// Storing the run's end takes milliseconds, unless another process
		// holds the database: then the person, back at the shell with the
		// dashboard gone, is told what is happening and how to end it.
		var slow *time.Timer
		if stoppedBy == "" && cf.stderr != nil {
			slow = time.AfterFunc(stillStopping, func() {
				stopUnderWay.Store(true)
				fmt.Fprintf(cf.stderr, "swarmdeck: still stopping run %s (storing where it stopped); press Ctrl-C to stop at once\n", run.ID())
			})
		}
		run.InterruptFor(why)
		if slow != nil {
			slow.Stop()
		}
		return &exitError{runtime.ExitFailed, cf.withResume(&runtime.InterruptedError{RunID: run.ID(), Reason: why}, false)}
	}
	if status == runtime.RunInterrupted {
		_, why := run.Result()
		return &exitError{runtime.ExitFailed, cf.withResume(&runtime.InterruptedError{RunID: run.ID(), Reason: why}, false)}
	}
	fmt.Fprintf(stdout, "run %s %s; see it again with: %s  (or: %s)\n", run.ID(), status, cf.commandLine("view", run.ID()), cf.commandLine("export", run.ID()))
	if status != runtime.RunCompleted {
		_, why := run.Result()
		if status == runtime.RunFailed {
			if why == "" {
				why = "run " + run.ID() + " failed"
			}
			return &exitError{runtime.ExitFailed, fmt.Errorf("%s; once the cause is fixed, continue it with: %s", why, cf.resumeAfterFailure(run.ID(), why, false))}
		}
		if why != "" {
			return &exitError{runtime.ExitFailed, errors.New(why)}
		}
		return &exitError{runtime.ExitFailed, nil}
	}
	return nil
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	if r, ok := w.(*recorded); ok {
		w = r.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(f.Fd())
}
