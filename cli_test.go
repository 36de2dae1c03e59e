package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/tui"
)

// cliEnv keeps an in-process command away from the user's configuration,
// data and keys, and from whatever terminal the tests run in: the
// dashboard finds none.
func cliEnv(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, k := range []string{"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME"} {
		t.Setenv(k, dir)
	}
	t.Setenv("OPENAI_API_KEY", "")
	t.Chdir(dir) // no ./config.yaml
	saved := checkTerminal
	checkTerminal = func() error { return tui.ErrNoTerminal }
	t.Cleanup(func() { checkTerminal = saved })
	return dir
}

// storeRuns makes a database holding runs.
func storeRuns(t *testing.T, path string, runs ...store.Run) {
	t.Helper()
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	err = st.Do(context.Background(), func(tx *store.Tx) error {
		for i := range runs {
			if runs[i].CreatedAt.IsZero() {
				runs[i].CreatedAt = time.Now()
			}
			if err := tx.InsertRun(&runs[i]); err != nil {
				return err
			}
			// What a run's row gains later: its usage, its end, its error.
			if err := tx.UpdateRun(&runs[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Mistakes on the command line end in status 2 with a message that says
// what to do, and start, resume or create nothing.
func TestCLIRefusesMistakes(t *testing.T) {
	dir := cliEnv(t)
	stored := filepath.Join(dir, "stored.db")
	storeRuns(t, stored, store.Run{ID: "r-000001", Goal: "g", Status: "interrupted", Provider: "scripted", Scripted: true})
	ended := filepath.Join(dir, "ended.db")
	storeRuns(t, ended, store.Run{ID: "r-000009", Goal: "g", Status: "completed", Provider: "scripted", Scripted: true})
	failed := filepath.Join(dir, "failed.db")
	storeRuns(t, failed, store.Run{ID: "r-000007", Goal: "g", Status: "failed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000008", Goal: "g", Status: "cancelled", Provider: "scripted", Scripted: true},
		// A bench run stopped later, which resume refuses: not the one named.
		store.Run{ID: "r-000010", Goal: scripted.BenchGoal(50, 10, 2, 1), Status: "interrupted", Provider: "scripted", Scripted: true, CreatedAt: time.Now().Add(time.Minute)})
	fresh := filepath.Join(dir, "fresh", "x.db")
	// A database whose pages after the first are garbage: it opens, and
	// reading its runs finds the damage.
	corrupt := filepath.Join(dir, "corrupt.db")
	storeRuns(t, corrupt, store.Run{ID: "r-000003", Goal: "g", Status: "completed", Provider: "scripted", Scripted: true})
	if b, err := os.ReadFile(corrupt); err != nil || len(b) <= 4096 {
		t.Fatalf("%d bytes: %v", len(b), err)
	} else {
		for i := 4096; i < len(b); i++ {
			b[i] = 0xff
		}
		os.WriteFile(corrupt, b, 0o600)
	}
	badLog := filepath.Join(dir, "badlog.yaml")
	if err := os.WriteFile(badLog, []byte("log_file: "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badPrompts := filepath.Join(dir, "badprompts.yaml")
	if err := os.WriteFile(badPrompts, []byte("prompts_dir: "+badLog+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badWorkspace := filepath.Join(dir, "badworkspace.yaml")
	if err := os.WriteFile(badWorkspace, []byte("# the file tools' directory\nprovider: scripted\nworkspace: "+badLog+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badDB := filepath.Join(dir, "baddb.yaml")
	if err := os.WriteFile(badDB, []byte("provider: scripted\n\ndb: "+dir+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badScenario := filepath.Join(dir, "badscenario.yaml")
	if err := os.WriteFile(badScenario, []byte("providers:\n  scripted:\n    scenario: "+filepath.Join(dir, "none.yaml")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noModel := filepath.Join(dir, "nomodel.yaml")
	if err := os.WriteFile(noModel, []byte("provider: mine\nproviders:\n  mine:\n    type: openai\n    base_url: http://127.0.0.1:9/v1\n    model: \"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badRole := filepath.Join(dir, "badrole.yaml")
	if err := os.WriteFile(badRole, []byte("agents:\n  - role: orchestrator\n    prompt: nosuch\n    tools: [spawn, tasks]\n    can_spawn: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notDB := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notDB, []byte(strings.Repeat("not a database\n", 100)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Another program's SQLite database, named by mistake.
	foreign := filepath.Join(dir, "app.db")
	if db, err := sql.Open("sqlite", "file:"+foreign); err != nil {
		t.Fatal(err)
	} else {
		_, err := db.Exec("CREATE TABLE notes (body TEXT)")
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	badLimits := filepath.Join(dir, "badlimits.yaml")
	if err := os.WriteFile(badLimits, []byte("limits:\n  max_turns_per_session: -3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string // in the message
		stdout string
	}{
		{[]string{"run", "--json", "--db", fresh, "a goal"}, 2, "--json needs --headless", ""},
		{[]string{"run", "--control", "-", "--db", fresh, "a goal"}, 2, "--control needs --headless", ""},
		{[]string{"run", "--headless", "--json-deltas", "--db", fresh, "a goal"}, 2, "give --json too", ""},
		{[]string{"resume", "--json", "--db", stored, "r-000001"}, 2, "--json needs --headless", ""},
		// No terminal: refused before the run is stored.
		{[]string{"run", "--db", fresh, "a goal"}, 2, "the dashboard needs a terminal", ""},
		{[]string{"--db", fresh, "a goal"}, 2, "to run without it, use `swarmdeck --db " + fresh + " run --headless 'a goal'`", ""},
		{[]string{"--db", fresh}, 2, "for scripts and CI use `swarmdeck --db " + fresh + " run --headless GOAL`", ""},
		{[]string{"--db", fresh, "  "}, 2, "for scripts and CI use `swarmdeck --db " + fresh + " run --headless GOAL`", ""},
		// The suggestion does the same: the same model and workspace, and
		// a goal that starts with a dash after "--".
		{[]string{"--db", fresh, "--model", "m", "--workspace", "/tmp/a b", "--scripted-latency", "2s", "a goal"}, 2,
			"use `swarmdeck --db " + fresh + " run --headless --model m --workspace '/tmp/a b' --scripted-latency 2s 'a goal'`", ""},
		{[]string{"--db", fresh, "--", "--weird goal"}, 2, "use `swarmdeck --db " + fresh + " run --headless -- '--weird goal'`", ""},
		// After "--" a word is the goal, even one that names a command.
		{[]string{"--db", fresh, "--", "view"}, 2, "use `swarmdeck --db " + fresh + " run --headless view`", ""},
		{[]string{"resume", "--db", stored, "r-000001"}, 2, "to continue run r-000001 without it, use `swarmdeck --db " + stored + " resume --headless r-000001`", ""},
		{[]string{"view", "--db", stored, "r-000001"}, 2, "the dashboard needs a terminal, and there is none here: to read run r-000001 without it, use `swarmdeck --db " + stored + " export r-000001`", ""},
		{[]string{"view", "--db", stored}, 2, "the dashboard needs a terminal, and there is none here: to read the latest run without it, use `swarmdeck --db " + stored + " export`", ""},
		// A run that is not there is said first.
		{[]string{"view", "--db", stored, "r-nope"}, 2, `run "r-nope": not found (list runs with ` + "`swarmdeck --db " + stored + " runs`)", ""},
		// A wrong count of arguments names the command and its usage.
		{[]string{"resume", "--db", fresh}, 2, "resume: which run? give its id (usage: swarmdeck resume [--headless] RUN_ID)", ""},
		{[]string{"resume", "--db", stored, "r-000001", "r-000002"}, 2, "resume: takes one run id, and was given 2: \"r-000001\" \"r-000002\" (usage: swarmdeck resume [--headless] RUN_ID)", ""},
		{[]string{"runs", "--db", stored, "all"}, 2, `runs: takes no arguments, and was given "all" (usage: swarmdeck runs [--json] [--limit N])`, ""},
		{[]string{"run", "--db", fresh}, 2, `run: give the goal: what the swarm should do`, ""},
		// Without an id, resume names the newest run it could continue, and
		// does not continue it.
		{[]string{"resume", "--headless", "--db", stored}, 2, "the newest run that can be continued is r-000001 (g, ", ""},
		{[]string{"resume", "--headless", "--json", "--db", stored}, 2, "`swarmdeck --db " + stored + " resume --headless --json r-000001`", ""},
		// Here, with no terminal for the dashboard, headless; with every
		// flag given.
		{[]string{"resume", "--db", stored}, 2, "`swarmdeck --db " + stored + " resume --headless r-000001`", ""},
		{[]string{"resume", "--db", stored, "--json", "--json-deltas", "--control", "-", "--model", "a b"}, 2,
			"`swarmdeck --db " + stored + " resume --headless --json --json-deltas --control - --model 'a b' r-000001`", ""},
		// A flag without its value took the id: the command to copy
		// leaves the flag out.
		{[]string{"resume", "--headless", "--db", stored, "--model", "r-000001"}, 2,
			"--model took r-000001, a run id by the look of it, as its value, and no run id was left: give a value after --model, or leave it out: `swarmdeck --db " + stored + " resume --headless r-000001`", ""},
		{[]string{"resume", "--headless", "--db", stored, "--workspace", "R-0000"}, 2, "or leave it out: `swarmdeck --db " + stored + " resume --headless r-000001`", ""},
		{[]string{"resume", "--headless", "--db", stored, "--provider", "r-000001"}, 2,
			"--provider took r-000001, a run id by the look of it, as its value, and no run id was left: give a value after --provider, or leave it out (usage:", ""},
		{[]string{"resume", "--headless", "--db", "r-000001"}, 2, "--db took r-000001, a run id by the look of it, as its value", ""},
		{[]string{"resume", "--db", ended}, 2, "no stored run can be continued: `swarmdeck --db " + ended + " runs` lists them", ""},
		// A run that has ended is said to have, before a terminal is
		// looked for (the advice to resume it headless would fail).
		{[]string{"resume", "--db", ended, "r-000009"}, 2, "run r-000009 has already ended (completed), so there is nothing to resume", ""},
		{[]string{"resume", "--db", failed, "r-000008"}, 2, "run r-000008 has already ended (cancelled)", ""},
		{[]string{"resume", "--db", failed}, 2, "the newest run that can be continued is r-000007 (g, ", ""},
		{[]string{"run", "--headless", "--db", fresh}, 2, "(usage: swarmdeck run [--headless] [--json] [--control -] GOAL)", ""},
		{[]string{"--db", fresh, "rnus"}, 2, `unknown command "rnus": did you mean run or runs?`, ""},
		{[]string{"--db", fresh, "exprot"}, 2, "`swarmdeck --db " + fresh + " run exprot`", ""},
		// So does one followed by a run id; a goal of several words is a goal.
		{[]string{"--db", fresh, "resum", "r-af3162"}, 2, "unknown command \"resum\": did you mean resume? (to run it as a goal: `swarmdeck --db " + fresh + " run 'resum r-af3162'`)", ""},
		// The goal suggested is quoted for a shell, and keeps the flags.
		{[]string{"--db", fresh, "--model", "m", "--scripted-latency", "10ms", "vie$x", "r-af3162"}, 2,
			"did you mean view? (to run it as a goal: `swarmdeck --db " + fresh + " run --model m --scripted-latency 10ms 'vie$x r-af3162'`)", ""},
		{[]string{"--db", fresh, "rnus", "the", "tests"}, 2, "the dashboard needs a terminal", ""},
		// Help on something that is no command says so.
		{[]string{"help", "nosuch"}, 2, `no help on "nosuch": there is no such command`, ""},
		{[]string{"help", "resume"}, 0, "", "resume continues a stored run"},
		// Words people use for a command elsewhere point to it.
		{[]string{"--db", fresh, "list"}, 2, `unknown command "list": did you mean runs?`, ""},
		{[]string{"--db", fresh, "continue"}, 2, `unknown command "continue": did you mean resume?`, ""},
		{[]string{"--db", fresh, "show"}, 2, `unknown command "show": did you mean view?`, ""},
		{[]string{"--db", fresh, "status"}, 2, `unknown command "status": did you mean runs?`, ""},
		{[]string{"--db", fresh, "start"}, 2, `unknown command "start": did you mean run?`, ""},
		// Words typed as commands that swarmdeck has not: taken as goals,
		// they would start a run.
		{[]string{"--db", fresh, "stop"}, 2, `there is no "stop" command: a run stops with q or ctrl+c in its dashboard`, ""},
		{[]string{"--db", fresh, "Kill"}, 2, `there is no "Kill" command: a run stops with`, ""},
		{[]string{"--db", fresh, "config"}, 2, `there is no "config" command: settings live in config.yaml`, ""},
		{[]string{"--db", fresh, "logs"}, 2, `there is no "logs" command: the log is`, ""},
		{[]string{"version"}, 0, "", "swarmdeck "},
		// Shared flags a command does not use are refused, not ignored.
		{[]string{"runs", "--db", stored, "--model", "m"}, 2, "--model has no effect on runs: it lists the runs stored", ""},
		{[]string{"export", "--db", stored, "--workspace", dir, "r-000001"}, 2, "--workspace has no effect on export: it prints a run as stored", ""},
		{[]string{"view", "--db", stored, "--provider", "openai", "r-000001"}, 2, "--provider has no effect on view", ""},
		{[]string{"delete", "--db", stored, "--scripted-latency", "1s", "r-000001"}, 2, "--scripted-latency has no effect on delete", ""},
		{[]string{"prune", "--db", stored, "--base-url", "http://x", "--older-than", "1d"}, 2, "--base-url has no effect on prune", ""},
		{[]string{"mock-llm", "--db", stored, "--addr", "256.0.0.1:1"}, 2, "--db has no effect on mock-llm", ""},
		{[]string{"version", "--db", stored}, 2, "--db has no effect on version: it prints which swarmdeck this is", ""},
		{[]string{"completion", "zsh", "--model", "m"}, 2, "--model has no effect on completion zsh: the script it prints is the same whatever they say", ""},
		// A mistyped flag is named with the flag meant; a value a flag
		// cannot take, with what it takes.
		{[]string{"runs", "--limt", "3", "--db", stored}, 2, "runs: unknown flag --limt: did you mean --limit?", ""},
		{[]string{"--db", fresh, "--modle", "m", "a goal"}, 2, "swarmdeck: unknown flag --modle: did you mean --model?", ""},
		{[]string{"export", "--db", stored, "--frobnicate"}, 2, "export: unknown flag --frobnicate: `swarmdeck --db " + stored + " export --help` lists the flags", ""},
		{[]string{"runs", "--db", stored, "-x"}, 2, "runs: unknown flag -x: `swarmdeck --db " + stored + " runs --help` lists the flags", ""},
		{[]string{"runs", "--limit", "x", "--db", stored}, 2, `--limit takes a whole number, not "x"`, ""},
		{[]string{"runs", "--limit", "99999999999999999999", "--db", stored}, 2, `--limit 99999999999999999999 is out of range`, ""},
		{[]string{"bench", "--latency", "5"}, 2, `--latency takes a duration such as 50ms, 2s or 1m30s, not "5"`, ""},
		{[]string{"runs", "--json=maybe", "--db", stored}, 2, `--json takes true or false (or the flag alone: --json), not "maybe"`, ""},
		{[]string{"--version"}, 0, "", "swarmdeck "},
		// A database that does not exist is not made by reading it.
		{[]string{"runs", "--db", fresh}, 0, "", "no runs stored: there is no database at " + fresh + " yet (check --db, or start a run with `swarmdeck --db " + fresh + ` "your goal"`},
		// --db naming something that is not a database is bad usage, for
		// every command.
		{[]string{"runs", "--db", notDB}, 2, notDB, ""},
		// Flags a mode does not use are refused, not ignored.
		{[]string{"bench", "--startup", "--agents", "5"}, 2, "--agents has no effect with --startup", ""},
		{[]string{"bench", "--runs", "3"}, 2, "--runs applies to bench --startup only", ""},
		{[]string{"bench", "--floor", "--cpuprofile", filepath.Join(dir, "cpu.prof")}, 2, "--cpuprofile has no effect with --floor", ""},
		{[]string{"bench", "--startup", "--db", fresh}, 2, "--db has no effect with --startup", ""},
		{[]string{"bench", "--agents", "100000"}, 2, "--agents 100000: at most 20000", ""},
		{[]string{"bench", "--turns", "1000000"}, 2, "--turns 1000000: at most 1000", ""},
		{[]string{"bench", "--broadcasts-per-agent", "100000"}, 2, "--broadcasts-per-agent 100000: at most 1000", ""},
		// A --db that cannot be used is bad usage for bench as for run.
		{[]string{"bench", "--agents", "2", "--latency", "0", "--db", dir}, 2, "the database " + dir + " is a directory: give the database file", ""},
		{[]string{"bench", "--agents", "2", "--latency", "0", "--db", notDB}, 2, notDB + ": file is not a database", ""},
		{[]string{"bench", "--scripted-latency", "1s"}, 2, "--scripted-latency has no effect on bench: the model's delay is --latency", ""},
		{[]string{"bench", "--floor", "--model", "big"}, 2, "--model has no effect on bench", ""},
		// The scripted model's flags on a run of another model are refused.
		{[]string{"run", "--headless", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--scripted-latency", "1s", "--db", fresh, "a goal"}, 2,
			`--scripted-latency applies to the built-in scripted model only, and this run talks to provider "openai" (http://127.0.0.1:9/v1): leave the flag out, or run on the scripted model with --provider scripted`, ""},
		{[]string{"mock-llm", "--latency", "-1s"}, 2, "a latency cannot be negative", ""},
		{[]string{"mock-llm", "--scripted-latency", "5s"}, 2, "takes its delay from --latency", ""},
		{[]string{"mock-llm", "--scripted-stream-speed", "0"}, 2, "takes its speed from --stream-speed", ""},
		{[]string{"run", "--headless", "--scripted-stream-speed", "-1", "--db", fresh, "a goal"}, 2, "--scripted-stream-speed: -1 is negative; use 0 to send each reply at once", ""},
		{[]string{"mock-llm", "--stream-speed", "-5"}, 2, "--stream-speed -5 is negative", ""},
		// Paths in the configuration that do not work are named at the
		// line that sets them, as every error in the file is.
		{[]string{"run", "--headless", "--config", badPrompts, "--db", fresh, "a goal"}, 2, "swarmdeck: " + badPrompts + ":1: prompts_dir: open " + badLog + ": not a directory", ""},
		{[]string{"run", "--headless", "--config", badScenario, "--db", fresh, "a goal"}, 2, "swarmdeck: " + badScenario + ":3: providers.scripted.scenario: scenario file: open " + filepath.Join(dir, "none.yaml") + ": no such file or directory", ""},
		{[]string{"run", "--headless", "--config", badWorkspace, "--db", stored, "a goal"}, 2, "swarmdeck: " + badWorkspace + ":3: workspace: open " + badLog + ": not a directory", ""},
		{[]string{"run", "--headless", "--config", badDB, "a goal"}, 2, "swarmdeck: " + badDB + ":3: db: the database " + dir + " is a directory", ""},
		{[]string{"runs", "--config", badDB}, 2, "swarmdeck: " + badDB + ":3: db: the database " + dir + " is a directory", ""},
		// A flag has no line: its value is named by the error.
		{[]string{"run", "--headless", "--config", badWorkspace, "--workspace", notDB, "--db", stored, "a goal"}, 2, "swarmdeck: workspace " + notDB + ": open " + notDB + ": not a directory", ""},
		{[]string{"run", "--headless", "--config", noModel, "--db", fresh, "a goal"}, 2, noModel + `:6: providers.mine.model: provider "mine" names no model`, ""},
		{[]string{"run", "--headless", "--config", badRole, "--db", fresh, "a goal"}, 2, badRole + `:3: agents[0].prompt: role "orchestrator" names prompt "nosuch", which is not a template`, ""},
		// A log_file that cannot be written is named, not dropped silently.
		{[]string{"run", "--headless", "--config", badLog, "--db", fresh, "a goal"}, 2, badLog + ":1: log_file: cannot write the log at " + dir + ": is a directory", ""},
		{[]string{"runs", "--db", dir}, 2, dir, ""},
		// A configuration with a mistake does not stop reading the database
		// --db names; without --db it names the database, so it is refused.
		{[]string{"runs", "--config", badLimits, "--db", stored}, 0, "reading " + stored + " without the configuration, which has a mistake: " + badLimits + ":2:", "r-000001"},
		{[]string{"export", "--config", badLimits, "--db", stored, "r-000001"}, 0, "without the configuration", `"id": "r-000001"`},
		{[]string{"runs", "--config", badLimits}, 2, badLimits + ":2: limits.max_turns_per_session", ""},
		// view needs the configuration (its keys): one message, no promise.
		{[]string{"view", "--config", badLimits, "--db", stored}, 2, badLimits + ":2: limits.max_turns_per_session", ""},
		{[]string{"export", "--db", notDB}, 2, notDB + " is not a SQLite database", ""},
		{[]string{"runs", "--db", foreign}, 2, foreign + ": this SQLite database is not a swarmdeck database: it holds tables of another program (notes)", ""},
		{[]string{"run", "--headless", "--db", foreign, "a goal"}, 2, "not a swarmdeck database", ""},
		{[]string{"prune", "--vacuum-only", "--db", foreign}, 2, foreign + ": this SQLite database is not a swarmdeck database", ""},
		{[]string{"runs", "--db", notDB}, 2, "give --db the file swarmdeck stores its runs in", ""},
		{[]string{"delete", "--db", corrupt, "r-000003"}, 1, corrupt + " is damaged (", ""},
		// A damaged database is named, with the way to look into it.
		{[]string{"runs", "--db", corrupt}, 1, corrupt + " is damaged (database disk image is malformed", ""},
		{[]string{"export", "--db", corrupt, "r-000003"}, 1, "PRAGMA integrity_check", ""},
		{[]string{"export", "--db", fresh}, 2, "no database at " + fresh, ""},
		{[]string{"view", "--db", fresh, "r-000001"}, 2, "no database at " + fresh, ""},
		{[]string{"resume", "--headless", "--db", fresh, "r-000001"}, 2, "no database at " + fresh, ""},
		// An unknown run is bad usage wherever it is named.
		// ... and the commands an error suggests find the same database.
		{[]string{"export", "--db", stored, "r-nope"}, 2, "run \"r-nope\": not found (list runs with `swarmdeck --db " + stored + " runs`)", ""},
		// An id that names no run, or more than one, is bad usage too.
		{[]string{"export", "--db", failed, "r-00000"}, 2, `run "r-00000" is ambiguous: more than one run's id starts so`, ""},
		{[]string{"export", "--db", stored, ""}, 2, "an empty run id names no run", ""},
		{[]string{"view", "--db", stored, ""}, 2, "an empty run id names no run", ""},
		// An empty flag (`--db "$DB"` with DB unset) is refused, not taken
		// for the default: a delete would go to another database.
		{[]string{"delete", "--db", "", "r-000001"}, 2, "--db is empty", ""},
		{[]string{"runs", "--config", ""}, 2, "--config is empty", ""},
		{[]string{"resume", "--db", stored, "r-nope"}, 2, `run "r-nope": not found`, ""},
		{[]string{"resume", "--headless", "--db", stored, "r-nope"}, 2, `run "r-nope": not found`, ""},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.stderr) || !strings.Contains(stdout.String(), tc.stdout) {
			t.Errorf("swarmdeck %s: exit %d, stdout %q, stderr %q; want exit %d with %q", strings.Join(tc.args, " "),
				code, stdout.String(), stderr.String(), tc.code, tc.stderr+tc.stdout)
		}
		if _, err := os.Stat(filepath.Dir(fresh)); err == nil {
			t.Fatalf("swarmdeck %s made %s", strings.Join(tc.args, " "), filepath.Dir(fresh))
		}
	}
}

// A terminal that cannot move its cursor gets the same advice as none,
// and the TERM that would do.
func TestDumbTerminalSaysWhatDoesTheSame(t *testing.T) {
	dir := cliEnv(t)
	checkTerminal = func() error { return tui.ErrDumbTerminal }
	stored := filepath.Join(dir, "stored.db")
	storeRuns(t, stored, store.Run{ID: "r-000001", Goal: "g", Status: "interrupted", Provider: "scripted", Scripted: true})
	const why = "the dashboard needs a terminal that can move its cursor, and TERM=dumb says this one cannot: "
	const set = ", or set TERM (for example TERM=xterm-256color) if the terminal can"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"view", "--db", stored, "r-000001"}, "to read run r-000001 without it, use `swarmdeck --db " + stored + " export r-000001`"},
		{[]string{"resume", "--db", stored, "r-000001"}, "to continue run r-000001 without it, use `swarmdeck --db " + stored + " resume --headless r-000001`"},
		{[]string{"--db", stored, "it's a goal"}, "to run without it, use `swarmdeck --db " + stored + ` run --headless 'it'\''s a goal'` + "`"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if want := "swarmdeck: " + why + tc.want + set + "\n"; code != 2 || stderr.String() != want {
			t.Errorf("swarmdeck %s: exit %d, stderr %q; want exit 2 with %q", strings.Join(tc.args, " "), code, stderr.String(), want)
		}
	}
}

// A start refused for its workspace (missing, or a file), its prompts or
// its database says so and leaves nothing behind: not the default
// database, not the log, in the dashboard as headless.
func TestRefusedStartMakesNoFiles(t *testing.T) {
	dir := cliEnv(t)
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("not a directory\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "nope")
	inFile := filepath.Join(dir, "ws.yaml")
	if err := os.WriteFile(inFile, []byte("provider: scripted\nworkspace: "+missing+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noPrompts := filepath.Join(dir, "prompts.yaml")
	if err := os.WriteFile(noPrompts, []byte("provider: scripted\nprompts_dir: "+missing+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "swarmdeck", "swarmdeck.db") // the default, under XDG_DATA_HOME
	for _, tc := range []struct {
		args     []string
		terminal bool
		want     string
	}{
		{[]string{"run", "--headless", "--workspace", missing, "a goal"}, false, "workspace " + missing + ": open " + missing + ": no such file or directory"},
		{[]string{"run", "--headless", "--workspace", file, "a goal"}, false, "workspace " + file + ": open " + file + ": not a directory"},
		{[]string{"run", "--headless", "--config", inFile, "a goal"}, false, inFile + ":2: workspace: open " + missing + ": no such file or directory"},
		{[]string{"run", "--workspace", file, "a goal"}, true, "workspace " + file + ": open " + file + ": not a directory"},
		{[]string{"--workspace", missing}, true, "workspace " + missing + ": open " + missing + ": no such file or directory"},
		{[]string{"run", "--headless", "--config", noPrompts, "a goal"}, false, noPrompts + ":2: prompts_dir: open " + missing + ": no such file or directory"},
		{[]string{"--config", noPrompts}, true, noPrompts + ":2: prompts_dir: open " + missing + ": no such file or directory"},
		{[]string{"run", "--headless", "--db", dir, "a goal"}, false, "the database " + dir + " is a directory: give the database file"},
	} {
		checkTerminal = func() error { return tui.ErrNoTerminal }
		if tc.terminal {
			checkTerminal = func() error { return nil }
		}
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), "swarmdeck: "+tc.want) {
			t.Errorf("swarmdeck %s: exit %d, stderr %q; want exit 2 with %q", strings.Join(tc.args, " "), code, stderr.String(), tc.want)
		}
		if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("swarmdeck %s made the database %s (%v)", strings.Join(tc.args, " "), db, err)
		}
		if left, _ := os.ReadDir(filepath.Join(dir, "swarmdeck")); len(left) > 0 {
			t.Fatalf("swarmdeck %s left %s behind", strings.Join(tc.args, " "), left[0].Name())
		}
	}
	// A bench refused for its options makes no profile files either.
	cpu, mem := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "mem.prof")
	for _, args := range [][]string{
		{"bench", "--fanout", "300", "--cpuprofile", cpu, "--memprofile", mem},
		{"bench", "--turns", "0", "--cpuprofile", cpu, "--memprofile", mem},
		{"bench", "--agents", "2", "--latency", "0", "--db", dir, "--cpuprofile", cpu, "--memprofile", mem},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 2 {
			t.Errorf("swarmdeck %s: exit %d, stderr %q; want exit 2", strings.Join(args, " "), code, stderr.String())
		}
		for _, f := range []string{cpu, mem} {
			if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("swarmdeck %s made %s (%v)", strings.Join(args, " "), f, err)
			}
		}
	}
}

// --scripted-stream-speed 0 streams each of the scripted model's replies at
// once: with no latency either, the demo, about 13 s at the configured 60
// chunks a second, ends at once.
func TestScriptedStreamSpeedFlag(t *testing.T) {
	dir := cliEnv(t)
	var stdout, stderr bytes.Buffer
	began := time.Now()
	code := run([]string{"run", "--headless", "--scripted-latency", "0", "--scripted-stream-speed", "0", "--db", filepath.Join(dir, "d.db"), "a quick demo"},
		strings.NewReader(""), &stdout, &stderr)
	took := time.Since(began)
	if code != 0 || !strings.Contains(stdout.String(), "a quick demo") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if took > 5*time.Second {
		t.Errorf("the demo took %s: its replies were paced", took)
	}
}

// Without HOME and XDG_DATA_HOME, a run's database goes under the current
// directory, where the next run started elsewhere will not find it: the
// run says so on stderr, once, with the way to choose another place, and
// leaves --json output as events only. --db, and --help, say nothing of it.
func TestDatabaseInTheWorkingDirectoryIsTold(t *testing.T) {
	dir := cliEnv(t)
	t.Setenv("HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	quick := []string{"--scripted-latency", "0", "--scripted-stream-speed", "0"}
	db := filepath.Join(dir, "swarmdeck", "swarmdeck.db")
	note := "swarmdeck: the database is " + db + " (neither HOME nor XDG_DATA_HOME is set); --db FILE or XDG_DATA_HOME puts it elsewhere\n"

	var stdout, stderr bytes.Buffer
	code := run(append(append([]string{"run", "--headless", "--json"}, quick...), "a quick demo"), strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstderr: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), note); n != 1 {
		t.Errorf("stderr tells of the database %d times, want once as %q:\n%s", n, note, stderr.String())
	}
	if _, err := os.Stat(db); err != nil {
		t.Errorf("the database is not where the note says: %v", err)
	}
	for i, line := range strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("--json stdout line %d is not an event: %q", i+1, line)
		}
	}

	for _, args := range [][]string{
		append(append([]string{"run", "--headless", "--db", filepath.Join(dir, "chosen.db")}, quick...), "a quick demo"),
		{"--help"},
		{"run", "--help"},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := run(args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("swarmdeck %s: exit %d\nstderr: %s", strings.Join(args, " "), code, stderr.String())
		}
		if out := stdout.String() + stderr.String(); strings.Contains(out, "neither HOME nor XDG_DATA_HOME") {
			t.Errorf("swarmdeck %s tells of the database in the current directory:\n%s", strings.Join(args, " "), out)
		}
	}
}

// When that database cannot be made, the error says where it was looked
// for and why there, with the full path.
func TestDatabaseInTheWorkingDirectoryThatCannotBeMade(t *testing.T) {
	cliEnv(t)
	t.Setenv("HOME", "")
	t.Setenv("XDG_DATA_HOME", "")
	dir := t.TempDir()
	t.Chdir(dir)
	// A file where the directory would go.
	if err := os.WriteFile(filepath.Join(dir, "swarmdeck"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"run", "--headless", "a quick demo"}, strings.NewReader(""), &stdout, &stderr)
	want := ": not a directory; the database is " + filepath.Join(dir, "swarmdeck", "swarmdeck.db") +
		" (neither HOME nor XDG_DATA_HOME is set); --db FILE or XDG_DATA_HOME puts it elsewhere\n"
	if code != 2 || !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), want)
	}
	// So does a command that reads it.
	stderr.Reset()
	if code := run([]string{"runs"}, strings.NewReader(""), &stdout, &stderr); code != 2 || !strings.HasSuffix(stderr.String(), want) {
		t.Errorf("runs: exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), want)
	}
}

// A current directory removed after the shell entered it is named as the
// cause, by every command that would take a relative path from it; Go's own
// error ("getwd: no such file or directory") says neither what nor why.
// A run whose paths are all absolute does not need it.
func TestRemovedWorkingDirectory(t *testing.T) {
	home := cliEnv(t)
	gone := filepath.Join(t.TempDir(), "gone")
	if err := os.Mkdir(gone, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	const want = "swarmdeck: the current directory no longer exists (it was removed or moved after this shell entered it)"
	for _, c := range []struct {
		args   []string
		noHome bool // neither HOME nor XDG_DATA_HOME: the default database is there too
	}{
		{args: []string{"run", "--headless", "g"}}, // the workspace "."
		{args: []string{"--workspace", home, "--db", "k.db", "run", "--headless", "g"}},
		{args: []string{"--db", "k.db", "runs"}},
		{args: []string{"--db", "k.db", "export", "r-000001"}},
		{args: []string{"--db", "k.db", "delete", "r-000001"}},
		{args: []string{"--workspace", home, "run", "--headless", "g"}, noHome: true},
		{args: []string{"runs"}, noHome: true},
	} {
		if c.noHome {
			t.Setenv("HOME", "")
			t.Setenv("XDG_DATA_HOME", "")
		}
		var stdout, stderr bytes.Buffer
		code := run(c.args, strings.NewReader(""), &stdout, &stderr)
		if code != 2 || !strings.HasPrefix(stderr.String(), want) || strings.Contains(stderr.String(), "getwd") {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 saying %q", c.args, code, stderr.String(), want)
		}
	}
	// Absolute paths need no current directory.
	var stdout, stderr bytes.Buffer
	code := run([]string{"--workspace", home, "--db", filepath.Join(home, "abs.db"), "run", "--headless", "--scripted-latency", "0", "--scripted-stream-speed", "0", "a quick demo"},
		strings.NewReader(""), &stdout, &stderr)
	if code != 0 {
		t.Errorf("absolute paths: exit %d, stderr %q", code, stderr.String())
	}
}

// A resume continues on the provider and model its run began on, whatever
// the environment resolves to now: a run of the offline scripted model is
// not moved to a paid provider because an API key has been set since.
func TestResumeKeepsTheRunsProvider(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "runs.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "g", Status: "interrupted", Provider: "scripted", Model: "swarmdeck-scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "g", Status: "interrupted", Provider: "openai (api.openai.com)", Model: "gpt-test"},
		store.Run{ID: "r-000003", Goal: "g", Status: "interrupted", Provider: "openai (127.0.0.1:11434)", Model: "llama3.1"},
		store.Run{ID: "r-000004", Goal: "g", Status: "interrupted", Provider: "gone (example.com)", Model: "m"},
		// Started with --base-url: the run says where its server was.
		store.Run{ID: "r-000005", Goal: "g", Status: "interrupted", Provider: "openai (127.0.0.1:11434)", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"},
		// On the configured host under another path (a gateway's), and
		// under the configured one.
		store.Run{ID: "r-000006", Goal: "g", Status: "interrupted", Provider: "openai (api.openai.com)", BaseURL: "https://api.openai.com/gateway/v1", Model: "m"},
		store.Run{ID: "r-000007", Goal: "g", Status: "interrupted", Provider: "openai (api.openai.com)", BaseURL: "https://api.openai.com/v1/", Model: "m"},
		// Started with a query, whose values were not stored.
		store.Run{ID: "r-000008", Goal: "g", Status: "interrupted", Provider: "openai (az.example)", BaseURL: "https://az.example/v1?api-version=xxxxx", Model: "m"},
		// Started with a user and password, which were not stored either.
		store.Run{ID: "r-000009", Goal: "g", Status: "interrupted", Provider: "openai (127.0.0.1:18507)", BaseURL: "http://xxxxx:xxxxx@127.0.0.1:18507/v1", Model: "m"})
	ctx := context.Background()
	// Without a key, a run started on another server is told to give
	// --base-url, not to set a key for the configured one.
	cf := &commonFlags{db: db}
	if err := cf.keepRunProvider(ctx, "r-000003"); err == nil || !strings.Contains(err.Error(), "give --base-url") {
		t.Errorf("without a key: %v", err)
	}
	t.Setenv("OPENAI_API_KEY", "sk-test-not-used")
	for _, tc := range []struct {
		id, flagProvider, flagURL, flagModel string
		provider, model, baseURL             string // chosen
		err                                  string // or refused with
	}{
		{id: "r-000001", provider: "scripted", model: "swarmdeck-scripted"},
		{id: "r-000002", provider: "openai", model: "gpt-test"},
		{id: "r-000003", err: `was started on openai (127.0.0.1:11434), but provider "openai" is now openai (api.openai.com): give --base-url`},
		{id: "r-000004", err: `run r-000004 was started on gone (example.com), and the configuration has no provider "gone" now`},
		{id: "r-000005", provider: "openai", model: "llama3.1", baseURL: "http://127.0.0.1:11434/v1"},
		{id: "r-000006", provider: "openai", model: "m", baseURL: "https://api.openai.com/gateway/v1"},
		{id: "r-000007", provider: "openai", model: "m"},
		{id: "r-000008", err: "run r-000008 was started on https://az.example/v1?api-version=xxxxx, whose query is not stored (its values may hold a key): give the whole URL again with --base-url"},
		{id: "r-000008", flagURL: "https://az.example/v1?api-version=2024-06-01", provider: "openai", model: "m"},
		{id: "r-000009", err: "run r-000009 was started on http://xxxxx:xxxxx@127.0.0.1:18507/v1, whose user and password are not stored (they may hold a key): give the whole URL again with --base-url"},
		{id: "r-000009", flagURL: "http://u:pw@127.0.0.1:18507/v1", provider: "openai", model: "m"},
		// Flags choose for themselves; what they leave out comes from the
		// run, unless a provider is chosen anew.
		{id: "r-000001", flagProvider: "openai", provider: "openai"},
		{id: "r-000002", flagProvider: "openai", provider: "openai"},
		{id: "r-000003", flagURL: "http://127.0.0.1:11434/v1", provider: "openai", model: "llama3.1"},
		{id: "r-000005", flagModel: "qwen2.5:7b", provider: "openai", model: "qwen2.5:7b", baseURL: "http://127.0.0.1:11434/v1"},
		{id: "r-000002", flagModel: "gpt-other", provider: "openai", model: "gpt-other"},
		{id: "r-000001", flagModel: "any", provider: "scripted", model: "any"},
		{id: "r-000001", flagURL: "http://127.0.0.1:11434/v1", err: "ran on the built-in scripted model, which no server serves: give --model with --base-url"},
		{id: "r-000001", flagURL: "http://127.0.0.1:11434/v1", flagModel: "llama3.1", model: "llama3.1"},
		{id: "r-nope", err: `run "r-nope": not found`},
	} {
		cf := &commonFlags{db: db, provider: tc.flagProvider, baseURL: tc.flagURL, model: tc.flagModel}
		err := cf.keepRunProvider(ctx, tc.id)
		switch {
		case tc.err != "":
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.id, err, tc.err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.id, err)
		case cf.provider != tc.provider || cf.model != tc.model || (tc.flagURL == "" && cf.baseURL != tc.baseURL):
			t.Errorf("%s (flags %q %q %q): resumes on provider %q model %q at %q, want %q %q %q", tc.id, tc.flagProvider, tc.flagURL, tc.flagModel,
				cf.provider, cf.model, cf.baseURL, tc.provider, tc.model, tc.baseURL)
		}
	}
}

// The command that continues an interrupted run finds the same database
// and provider, quoted for a shell.
func TestResumeCommandCarriesTheFlags(t *testing.T) {
	for _, tc := range []struct {
		cf       commonFlags
		headless bool
		want     string
	}{
		{commonFlags{}, false, "swarmdeck resume r-1"},
		{commonFlags{db: "/tmp/a.db"}, true, "swarmdeck resume --headless --db /tmp/a.db r-1"},
		{commonFlags{db: "/tmp/my runs/a.db", config: "it's.yaml", provider: "ollama", baseURL: "http://h:1/v1", model: "m"}, true,
			`swarmdeck resume --headless --provider ollama --base-url http://h:1/v1 --model m --config 'it'\''s.yaml' --db '/tmp/my runs/a.db' r-1`},
		// A suggested command is shown, and may be logged: the secrets
		// of the URL are not repeated, and the command says so.
		{commonFlags{baseURL: "https://me:pw123@gw/v1?api-version=2024-06-01&api-key=sk-live-1"}, true,
			"swarmdeck resume --headless --base-url 'https://me:xxxxx@gw/v1?api-version=2024-06-01&api-key=xxxxx' r-1 (with the --base-url given before: xxxxx stands for its secrets)"},
	} {
		if got := tc.cf.resumeCommand("r-1", tc.headless); got != tc.want {
			t.Errorf("resumeCommand:\n got %s\nwant %s", got, tc.want)
		}
	}
}

// The command that continues a failed run repeats the flags given, except
// a model the server does not have: another one fixes that failure.
func TestResumeAfterFailureDropsAModelTheServerLacks(t *testing.T) {
	cf := commonFlags{db: "/tmp/a.db", provider: "ollama", model: "llama3"}
	noModel := `404 Not Found: model "llama3" not found (the server has no model "llama3" but serves 2 models: llama3.1:latest, qwen2.5:7b)`
	for _, tc := range []struct{ why, want string }{
		{"429 Too Many Requests: quota", "swarmdeck resume --headless --provider ollama --model llama3 --db /tmp/a.db r-1"},
		{noModel, "swarmdeck resume --headless --provider ollama --model MODEL --db /tmp/a.db r-1 (MODEL: one the server serves)"},
		{`400 Bad Request: registry.ollama.ai/library/llama3 does not support tools (this model cannot call tools, and swarmdeck's agents work through them: pick one that can, such as llama3.1 or qwen2.5)`,
			"swarmdeck resume --headless --provider ollama --model MODEL --db /tmp/a.db r-1 (MODEL: one that can call tools)"},
	} {
		if got := cf.resumeAfterFailure("r-1", tc.why, true); got != tc.want {
			t.Errorf("after %q:\n got %s\nwant %s", tc.why, got, tc.want)
		}
	}
}

// The command that continues a resumed run repeats the provider flags the
// person gave, not those the resume took from the run, which the next
// resume takes from it again.
func TestResumeCommandAfterAResume(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "runs.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "g", Status: "interrupted", Provider: "scripted", Model: "swarmdeck-scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "g", Status: "interrupted", Provider: "openai (127.0.0.1:11434)", BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3.1"})
	for _, tc := range []struct {
		id   string
		cf   commonFlags
		want string
	}{
		{"r-000001", commonFlags{db: db}, "swarmdeck resume --headless --db " + db + " r-000001"},
		{"r-000002", commonFlags{db: db}, "swarmdeck resume --headless --db " + db + " r-000002"},
		{"r-000001", commonFlags{db: db, provider: "scripted"}, "swarmdeck resume --headless --provider scripted --db " + db + " r-000001"},
		{"r-000002", commonFlags{db: db, baseURL: "http://127.0.0.1:11434/v1"},
			"swarmdeck resume --headless --base-url http://127.0.0.1:11434/v1 --db " + db + " r-000002"},
		// Only the model was given: the provider and server came from the run.
		{"r-000002", commonFlags{db: db, model: "qwen2.5:7b"}, "swarmdeck resume --headless --model qwen2.5:7b --db " + db + " r-000002"},
	} {
		cf := tc.cf
		if err := cf.keepRunProvider(context.Background(), tc.id); err != nil {
			t.Fatalf("%s: %v", tc.id, err)
		}
		if got := cf.resumeCommand(tc.id, true); got != tc.want {
			t.Errorf("%s with %+v:\n got %s\nwant %s", tc.id, tc.cf, got, tc.want)
		}
	}
}

// startSlowRun starts a run of goal in db on the scripted model, whose
// first reply takes an hour: the run is still going while the test looks
// at it. Its engine is closed when the test ends; the test interrupts it.
func startSlowRun(t *testing.T, db, goal string) (*commonFlags, *runtime.Run) {
	t.Helper()
	cf := &commonFlags{db: db, provider: "scripted", scriptedLatency: time.Hour, latencySet: true}
	eng, closeEng, err := newEngine(context.Background(), cf, forNewRun, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeEng)
	run, err := eng.Start(context.Background(), goal)
	if err != nil {
		t.Fatal(err)
	}
	return cf, run
}

// Closing the dashboard on a run still going stops it resumable and exits
// 1 with the command that continues it; only a completed run exits 0.
func TestDashboardEndSaysHowTheRunEnded(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	cf, run := startSlowRun(t, db, "a goal that takes an hour")
	var out bytes.Buffer
	err := cf.dashboardEnd(run, &out, "")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("closing on a running run: %v, want exit status 1", err)
	}
	want := "continue it with: swarmdeck resume --provider scripted --scripted-latency 1h0m0s --db " + db + " " + run.ID()
	if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "the dashboard was closed") {
		t.Fatalf("message %q does not say why or %q", err, want)
	}
	if st := run.Status(); st != "interrupted" {
		t.Fatalf("the run is %s after the dashboard closed, want interrupted", st)
	}

	fast := filepath.Join(dir, "fast.yaml")
	if err := os.WriteFile(fast, []byte("providers:\n  scripted:\n    stream_speed: 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cf.config, cf.scriptedLatency = fast, 0
	eng2, closeEng2, err := newEngine(context.Background(), cf, forNewRun, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEng2()
	eng2.AttachHuman(false) // nobody to answer the demo's question
	done, err := eng2.Start(context.Background(), "a quick goal")
	if err != nil {
		t.Fatal(err)
	}
	<-done.Done()
	out.Reset()
	if err := cf.dashboardEnd(done, &out, ""); err != nil {
		t.Fatalf("a completed run: %v, want exit status 0", err)
	}
	if !strings.Contains(out.String(), "completed; see it again with: swarmdeck view --config "+fast+" --db "+db) {
		t.Fatalf("stdout %q", out.String())
	}
}

// A run that failed while the dashboard showed it exits 1 with its reason
// and the command that continues it once the cause is fixed.
func TestDashboardEndSaysHowToContinueAFailedRun(t *testing.T) {
	dir := cliEnv(t)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		io.WriteString(w, `{"error":{"message":"You exceeded your current quota.","type":"insufficient_quota","code":"insufficient_quota"}}`)
	}))
	defer hs.Close()
	cfg := filepath.Join(dir, "quota.yaml")
	yaml := "provider: hosted\nproviders:\n  hosted:\n    type: openai\n    base_url: " + strconv.Quote(hs.URL+"/v1") +
		"\n    api_key_env: SWARMDECK_TEST_KEY\n    model: test-model\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SWARMDECK_TEST_KEY", "sk-test-0123456789abcdef")
	db := filepath.Join(dir, "q.db")
	cf := &commonFlags{config: cfg, db: db}
	eng, closeEng, err := newEngine(context.Background(), cf, forNewRun, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEng()
	run, err := eng.Start(context.Background(), "a goal with no quota left")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-run.Done():
	case <-time.After(time.Minute):
		t.Fatal("the run did not end")
	}
	var out bytes.Buffer
	err = cf.dashboardEnd(run, &out, "")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 1 {
		t.Fatalf("a failed run: %v, want exit status 1", err)
	}
	want := "once the cause is fixed, continue it with: swarmdeck resume --config " + cfg + " --db " + db + " " + run.ID()
	if msg := err.Error(); !strings.Contains(msg, "You exceeded your current quota") || !strings.Contains(msg, want) {
		t.Fatalf("message %q does not give the reason and %q", msg, want)
	}
	if !strings.Contains(out.String(), "run "+run.ID()+" failed; see it again with: swarmdeck view --config "+cfg) {
		t.Fatalf("stdout %q", out.String())
	}
}

// A live edit of the configuration file reaches the dashboard: a mistake
// with its line, a good edit as a note.
func TestDashboardHearsOfConfigReloads(t *testing.T) {
	dir := cliEnv(t)
	path := filepath.Join(dir, "live.yaml")
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("limits:\n  max_turns_per_session: 30\n")
	notices := make(chan tui.Notice, 4)
	// The model is a flag typed; the provider is one a resume took from
	// its run.
	cf := &commonFlags{config: path, db: filepath.Join(dir, "d.db"), provider: "scripted", model: "typed-model"}
	cf.fromRun.provider = true
	_, closeEng, err := newEngine(context.Background(), cf, forNewRun, notices)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEng()
	// The watcher starts on its own goroutine: write until it has seen a
	// change (each write differs, as it skips a content it has seen).
	edits := 0
	await := func(text string, want func(tui.Notice) bool) tui.Notice {
		t.Helper()
		deadline := time.After(20 * time.Second)
		again := time.NewTicker(300 * time.Millisecond)
		defer again.Stop()
		edit := func() {
			edits++
			write(text + "# edit " + strconv.Itoa(edits) + "\n")
		}
		edit()
		for {
			select {
			case n := <-notices:
				if want(n) {
					return n
				}
			case <-again.C:
				edit()
			case <-deadline:
				logData, _ := os.ReadFile(filepath.Join(dir, "swarmdeck", "swarmdeck.log"))
				t.Fatalf("no notice after writing %q; log:\n%s", text, logData)
			}
		}
	}
	bad := await("limits:\n  max_turns_per_session: -4\n", func(n tui.Notice) bool { return n.Err })
	if !strings.Contains(bad.Text, "not reloaded") || !strings.Contains(bad.Text, "live.yaml:2") {
		t.Errorf("refused reload: %q", bad.Text)
	}
	good := await("limits:\n  max_turns_per_session: 12\n", func(n tui.Notice) bool { return !n.Err })
	if !strings.Contains(good.Text, "configuration reloaded from "+path) || strings.Contains(good.Text, "wins") {
		t.Errorf("reload: %q", good.Text)
	}
	// An edit of what a flag decides is not taken, and the reload says so
	// rather than pass it over.
	outvoted := await("model: file-model\nlimits:\n  max_turns_per_session: 12\n", func(n tui.Notice) bool { return !n.Err })
	if want := "; model (--model) changed, but the flag given wins"; !strings.HasSuffix(outvoted.Text, want) {
		t.Errorf("reload of a setting a flag gave: %q, want it to end with %q", outvoted.Text, want)
	}
	kept := await("provider: openai\nmodel: file-model\nlimits:\n  max_turns_per_session: 12\n", func(n tui.Notice) bool { return !n.Err })
	// Told against the file as it was at the start, as the rest is.
	if want := "configuration reloaded from " + path + "; model (--model) changed, but the flag given wins; provider changed, but the resumed run keeps its own"; kept.Text != want {
		t.Errorf("reload of a setting the resumed run keeps: %q, want %q", kept.Text, want)
	}
}

// `runs` tells a run that a process is running from one stored as running
// by a process that died, and says how to continue the latter.
func TestRunsTellsADeadRunFromALiveOne(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	storeRuns(t, db, store.Run{ID: "r-dead01", Goal: "left by a kill -9", Status: "running", Provider: "scripted", Scripted: true})
	// Its session worked before the kill: its messages are stored, its row
	// and the run's were not written since.
	st, err := store.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = st.Do(context.Background(), func(tx *store.Tx) error {
		if err := tx.UpsertSession(&store.Session{RunID: "r-dead01", ID: "s-1", Agent: "orchestrator", Status: "running", CreatedAt: time.Now()}); err != nil {
			return err
		}
		return tx.InsertMessage(&store.Message{RunID: "r-dead01", SessionID: "s-1", Index: 0, Role: "assistant", Content: "working",
			Usage: store.Usage{PromptTokens: 1200, CompletionTokens: 34}, CreatedAt: time.Now()})
	})
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, live := startSlowRun(t, db, "still going")
	defer live.Interrupt()
	var out, errOut bytes.Buffer
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("runs: exit %d: %s", code, errOut.String())
	}
	got := out.String()
	if !regexp.MustCompile(live.ID() + ` +running `).MatchString(got) {
		t.Errorf("the live run is not shown running:\n%s", got)
	}
	if !regexp.MustCompile(`r-dead01 +stopped\* +\S+ \S+ +1234 `).MatchString(got) ||
		!strings.Contains(got, "no swarmdeck process runs it") || !strings.Contains(got, "`swarmdeck --db "+db+" resume r-dead01`") {
		t.Errorf("the dead run is not told apart, with what it spent:\n%s", got)
	}
	out.Reset()
	if code := run([]string{"export", "--db", db, "r-dead01"}, strings.NewReader(""), &out, &errOut); code != 0 {
		t.Fatalf("export: exit %d: %s", code, errOut.String())
	}
	var x struct {
		Run struct {
			Status, Error string
			Usage         struct {
				TotalTokens int `json:"total_tokens"`
			}
		}
	}
	if err := json.Unmarshal(out.Bytes(), &x); err != nil || x.Run.Status != "interrupted" || !strings.Contains(x.Run.Error, "no swarmdeck process") || x.Run.Usage.TotalTokens != 1234 {
		t.Errorf("export of the dead run: %+v (%v)", x.Run, err)
	}
}

// A killed bench run is shown stopped, but no hint offers to resume it,
// which resume refuses before it looks for a terminal; a stopped run that
// resume takes is still the one named.
func TestAKilledBenchRunIsNotOfferedToResume(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "b.db")
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	bench := store.Run{ID: "r-bench1", Goal: scripted.BenchGoal(1000, 10, 2, 1), Status: "running", Provider: "scripted", Scripted: true, CreatedAt: t0.Add(time.Hour)}
	storeRuns(t, db, bench)
	cli := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"--db", db}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if _, out, _ := cli("runs"); !strings.Contains(out, "r-bench1  stopped*") || strings.Contains(out, "resume r-bench1") ||
		!strings.Contains(out, "a bench run is not resumed, and `swarmdeck --db "+db+" delete r-bench1` removes it") {
		t.Errorf("runs:\n%s", out)
	}
	for _, args := range [][]string{{"resume", "r-bench1"}, {"resume", "--headless", "r-bench1"}, {"resume", "--provider", "scripted", "--headless", "r-bench1"}} {
		if code, _, errOut := cli(args...); code != 2 || !strings.Contains(errOut, "run r-bench1 is a bench run, which is not resumed: run the bench again, and `swarmdeck --db "+db+" delete r-bench1` removes this one") ||
			strings.Contains(errOut, "--headless r-bench1") {
			t.Errorf("%v: exit %d, %s", args, code, errOut)
		}
	}
	storeRuns(t, db, store.Run{ID: "r-dead01", Goal: "killed", Status: "running", Provider: "scripted", Scripted: true, CreatedAt: t0})
	if _, out, _ := cli("runs"); !strings.Contains(out, "`swarmdeck --db "+db+" resume r-dead01` continues it") {
		t.Errorf("runs with an older stopped run resume takes:\n%s", out)
	}
}

// `runs --json` prints a line per run with what the table shows, stopped
// runs marked; --limit keeps the newest and says how many there are.
func TestRunsJSONAndLimit(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	runs := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"runs", "--db", db}, args...), strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	if code, out, _ := runs("--json"); code != 0 || out != "" {
		t.Fatalf("runs --json without a database: exit %d, %q; want nothing", code, out)
	}
	t0 := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "first <one> & only", Status: "completed", Provider: "scripted", Model: "swarmdeck-scripted", Scripted: true,
			Usage: store.Usage{PromptTokens: 90, CompletionTokens: 10, TotalTokens: 100}, CreatedAt: t0, EndedAt: t0.Add(time.Minute)},
		store.Run{ID: "r-000002", Goal: "second", Status: "failed", Error: "the model said no", Provider: "openai (127.0.0.1:11434)", Model: "llama3.1",
			CreatedAt: t0.Add(time.Hour), EndedAt: t0.Add(2 * time.Hour)},
		store.Run{ID: "r-000003", Goal: "killed", Status: "running", Provider: "scripted", Scripted: true, CreatedAt: t0.Add(3 * time.Hour)})
	code, out, errOut := runs("--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []runLine
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var r runLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		got = append(got, r)
	}
	want := []runLine{
		{ID: "r-000003", Goal: "killed", Status: "interrupted", Stopped: true, Provider: "scripted", Error: runtime.OrphanedRunReason,
			CreatedAt: t0.Add(3 * time.Hour)},
		{ID: "r-000002", Goal: "second", Status: "failed", Provider: "openai (127.0.0.1:11434)", Model: "llama3.1", Error: "the model said no",
			CreatedAt: t0.Add(time.Hour), EndedAt: "2026-11-02T11:00:00Z"},
		{ID: "r-000001", Goal: "first <one> & only", Status: "completed", Provider: "scripted", Model: "swarmdeck-scripted",
			Usage: store.Usage{PromptTokens: 90, CompletionTokens: 10, TotalTokens: 100}, CreatedAt: t0, EndedAt: "2026-11-02T09:01:00Z"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("runs --json:\n got %+v\nwant %+v", got, want)
	}
	if !strings.Contains(out, `"goal":"first <one> & only"`) {
		t.Errorf("the goal is not written as it is: %s", out)
	}

	code, out, _ = runs("--limit", "2")
	if code != 0 || !strings.Contains(out, "r-000003") || !strings.Contains(out, "r-000002") || strings.Contains(out, "r-000001") ||
		!strings.Contains(out, "2 of 3 runs shown: --limit 0 lists them all") {
		t.Errorf("runs --limit 2: exit %d\n%s", code, out)
	}
	if code, out, _ = runs("--limit", "3"); code != 0 || strings.Contains(out, "runs shown") {
		t.Errorf("runs --limit 3 says some are left out:\n%s", out)
	}
	if code, out, _ = runs("--json", "--limit", "1"); code != 0 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"id":"r-000003"`) {
		t.Errorf("runs --json --limit 1: exit %d\n%s", code, out)
	}
	if code, _, errOut = runs("--limit", "-1"); code != 2 || !strings.Contains(errOut, "--limit -1 is negative") {
		t.Errorf("runs --limit -1: exit %d, %q", code, errOut)
	}
}

// epipeWriter is stdout whose reader has gone.
type epipeWriter struct{}

func (epipeWriter) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// fullWriter is stdout on a disk that is full by the time a write with
// text in it comes (every write, for no text).
type fullWriter struct{ text string }

func (w fullWriter) Write(p []byte) (int, error) {
	if !bytes.Contains(p, []byte(w.text)) {
		return len(p), nil
	}
	return 0, syscall.ENOSPC
}

// Completion finds a run however old it is, among many: the newest 200
// runs are no bound on what it offers for an id typed in part.
func TestCompletionFindsOldRuns(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "many.db")
	var runs []store.Run
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 260 {
		status := "completed"
		if i == 3 {
			status = "interrupted" // old, and the only one resume can continue
		}
		runs = append(runs, store.Run{ID: fmt.Sprintf("r-%06d", i), Goal: fmt.Sprintf("goal %d", i), Status: status,
			Provider: "scripted", Scripted: true, CreatedAt: at.Add(time.Duration(i) * time.Minute)})
	}
	storeRuns(t, db, runs...)
	complete := func(args ...string) string {
		var out, errOut bytes.Buffer
		if code := run(append([]string{"__complete", "--db", db}, args...), strings.NewReader(""), &out, &errOut); code != 0 {
			t.Fatalf("completion of %q: exit %d: %s", args, code, errOut.String())
		}
		return out.String()
	}
	if got := complete("export", "r-00001"); !strings.Contains(got, "r-000010\tcompleted: goal 10") || !strings.Contains(got, "r-000019\t") ||
		strings.Contains(got, "r-000100") {
		t.Errorf("export r-00001 completes %q", got)
	}
	if got := complete("resume", ""); !strings.Contains(got, "r-000003\tinterrupted: goal 3") {
		t.Errorf("resume completes %q, without the one run it can continue", got)
	}
	// With nothing typed, the newest 200.
	got := complete("view", "")
	if n := strings.Count(got, "\tcompleted: "); n != 200 || !strings.HasPrefix(got, "r-000259\t") {
		t.Errorf("view completes %d runs, from %q", n, got[:min(len(got), 40)])
	}
	// --workspace completes to directories, --config to YAML files (the
	// shell is told so by the directive on the last line).
	if got := complete("run", "--workspace", ""); !strings.HasSuffix(got, ":16\n") {
		t.Errorf("--workspace completes %q, want directories (:16)", got)
	}
	if got := complete("run", "--config", ""); got != "yaml\nyml\n:8\n" {
		t.Errorf("--config completes %q, want YAML files", got)
	}
}

// Completion offers run ids (resume only the ones it can continue) and
// refuses a shell it has no script for; a reader that stops reading the
// output of export is not an error.
func TestCompletionAndClosedOutput(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "c.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "first goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "second goal", Status: "interrupted", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000003", Goal: "third goal", Status: "failed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000004", Goal: scripted.BenchGoal(10, 10, 2, 1), Status: "interrupted", Provider: "scripted", Scripted: true})
	cli := func(w io.Writer, args ...string) (int, string) {
		var errOut bytes.Buffer
		return run(args, strings.NewReader(""), w, &errOut), errOut.String()
	}
	var out bytes.Buffer
	if code, _ := cli(&out, "__complete", "--db", db, "export", ""); code != 0 ||
		!strings.Contains(out.String(), "r-000001\tcompleted: first goal") || !strings.Contains(out.String(), "r-000002\tinterrupted: second goal") {
		t.Errorf("export completes %q", out.String())
	}
	out.Reset()
	if code, _ := cli(&out, "__complete", "--db", db, "resume", ""); code != 0 ||
		strings.Contains(out.String(), "r-000001") || !strings.Contains(out.String(), "r-000002") || !strings.Contains(out.String(), "r-000003\tfailed: third goal") ||
		strings.Contains(out.String(), "r-000004") {
		t.Errorf("resume completes %q (not a completed run, nor a bench run it refuses)", out.String())
	}
	// A goal's terminal controls are escaped, and a run another process
	// runs is not offered to resume.
	_, live := startSlowRun(t, db, "live \x1b[31mred")
	defer live.Interrupt()
	out.Reset()
	if code, _ := cli(&out, "__complete", "--db", db, "export", ""); code != 0 ||
		!strings.Contains(out.String(), live.ID()+"\trunning: live \\x1b[31mred") || strings.Contains(out.String(), "\x1b") {
		t.Errorf("export completes %q", out.String())
	}
	out.Reset()
	if code, _ := cli(&out, "__complete", "--db", db, "resume", ""); code != 0 || strings.Contains(out.String(), live.ID()) {
		t.Errorf("resume completes %q, a run live in this process among them", out.String())
	}
	// Flags a command refuses are not offered after it.
	for _, tc := range []struct {
		args      []string
		want, not string
	}{
		{[]string{"runs", "--"}, "--limit", "--model"},
		{[]string{"--db", db, "export", "r-000001", "--"}, "--config", "--workspace"},
		{[]string{"version", "--"}, "--help", "--db"},
		{[]string{"bench", "--"}, "--agents", "--scripted-latency"},
		{[]string{"mock-llm", "--"}, "--scenario", "--config"},
		{[]string{"completion", "bash", "--"}, "--no-descriptions", "--db"},
		{[]string{"completion", "--"}, "--help", "--model"},
		{[]string{"help", "--"}, "--help", "--base-url"},
		{[]string{"run", "--"}, "--model", "--limit"},
	} {
		out.Reset()
		code, _ := cli(&out, append([]string{"__complete"}, tc.args...)...)
		flags := "\n" + out.String()
		if code != 0 || !strings.Contains(flags, "\n"+tc.want+"\t") || strings.Contains(flags, "\n"+tc.not+"\t") {
			t.Errorf("%q completes %q: want %s, not %s", tc.args, out.String(), tc.want, tc.not)
		}
	}
	out.Reset()
	if code, _ := cli(&out, "__complete", "--provider", ""); code != 0 || !strings.HasPrefix(out.String(), "auto\nopenai\nscripted\n") {
		t.Errorf("--provider completes %q", out.String())
	}
	out.Reset()
	if code, msg := cli(&out, "completion"); code != 2 || !strings.Contains(msg, "completion: which shell?") || out.Len() != 0 {
		t.Errorf("completion without a shell: exit %d, %q, stdout %d bytes", code, msg, out.Len())
	}
	if code, msg := cli(&out, "completion", "tcsh"); code != 2 || !strings.Contains(msg, `no script for the shell "tcsh"`) || out.Len() != 0 {
		t.Errorf("completion tcsh: exit %d, %q, stdout %d bytes", code, msg, out.Len())
	}
	if code, msg := cli(epipeWriter{}, "export", "--db", db, "r-000001"); code != 0 || msg != "" {
		t.Errorf("export to a closed pipe: exit %d, %q", code, msg)
	}
	// Output that could not be written is a failure (1), whichever
	// command's it is, not bad usage and not success.
	for _, tc := range []struct {
		args []string
		full fullWriter
	}{
		{[]string{"completion", "bash"}, fullWriter{}},
		{[]string{"version"}, fullWriter{}},
		{[]string{"--version"}, fullWriter{}},
		{[]string{"--help"}, fullWriter{}},
		{[]string{"help", "runs"}, fullWriter{}},
		{[]string{"bench", "--agents", "2", "--latency", "0", "--db", filepath.Join(dir, "bench.db")}, fullWriter{}},
		{[]string{"runs", "--db", db}, fullWriter{}},
		{[]string{"runs", "--db", filepath.Join(dir, "none.db")}, fullWriter{"no runs stored"}},
		{[]string{"runs", "--db", db, "--limit", "1"}, fullWriter{"runs shown"}}, // the table fits, the note below does not
	} {
		if code, msg := cli(tc.full, tc.args...); code != 1 || !strings.Contains(msg, "writing the output: no space left on device") {
			t.Errorf("%s to a full disk: exit %d, %q", strings.Join(tc.args, " "), code, msg)
		}
	}
}

// lockedBuffer is a bytes.Buffer that a command writes while a test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A headless run says on stderr when an edit of its configuration file is
// refused, and when one is applied: it has no status line, and the log
// file alone would leave a mistake unseen while the old settings run on.
func TestHeadlessHearsOfConfigReloads(t *testing.T) {
	dir := cliEnv(t)
	write := func(path, text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	scenario := filepath.Join(dir, "ask.yaml")
	write(scenario, "roles:\n  orchestrator:\n    - tool_calls:\n        - name: ask_others\n          args: {question: \"Ship it?\", timeout: 600}\n    - content: shipped\n")
	path := filepath.Join(dir, "live.yaml")
	base := "providers:\n  scripted:\n    scenario: " + scenario + "\n    latency: 0s\n"
	write(path, base)
	control, answer := io.Pipe()
	defer answer.Close()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run([]string{"run", "--headless", "--json", "--control", "-", "--config", path, "--db", filepath.Join(dir, "d.db"), "ship"},
			control, &stdout, &stderr)
	}()
	qid := regexp.MustCompile(`"type":"question.opened".*?"question":\{"id":"(q-[0-9a-f]+)"`)
	// The watcher starts on its own goroutine: write until it has seen a
	// change (each write differs, as it skips a content it has seen).
	edits := 0
	await := func(text, want string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !strings.Contains(stderr.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("stderr does not say %q after writing %q:\n%s", want, text, stderr.String())
			}
			edits++
			write(path, text+"# edit "+strconv.Itoa(edits)+"\n")
			time.Sleep(300 * time.Millisecond)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for qid.FindStringSubmatch(stdout.String()) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no question asked:\n%s\n%s", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	await(base+"limits:\n  max_turns_per_session: -4\n", "configuration not reloaded, the running settings stay: "+path+":6:")
	await(base+"limits:\n  max_turns_per_session: 12\n", "configuration reloaded from "+path)
	// A setting for the next start is said to wait, until the edit is
	// undone: it is told against the settings the process started with.
	await(base+"workspace: "+dir+"\nlimits:\n  max_turns_per_session: 12\n", "workspace changed, which take effect at the next start")
	reloads := strings.Count(stderr.String(), "configuration reloaded")
	for undo := time.Now().Add(20 * time.Second); strings.Count(stderr.String(), "configuration reloaded") == reloads; {
		if time.Now().After(undo) {
			t.Fatalf("the undone edit was not reloaded:\n%s", stderr.String())
		}
		edits++
		write(path, base+"limits:\n  max_turns_per_session: 12\n# edit "+strconv.Itoa(edits)+"\n")
		time.Sleep(300 * time.Millisecond)
	}
	last := stderr.String()[strings.LastIndex(stderr.String(), "configuration reloaded"):]
	if last, _, _ = strings.Cut(last, "\n"); strings.Contains(last, "workspace") {
		t.Errorf("an undone edit is said to wait for the next start: %s", last)
	}
	id := qid.FindStringSubmatch(stdout.String())[1]
	io.WriteString(answer, `{"op":"answer","question_id":"`+id+`","text":"yes"}`+"\n")
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end after the answer")
	}
}

// `runs` shows the control characters of a goal as escapes, as a headless
// run's progress does: a goal stored by a script or another user must not
// drive the terminal that lists it.
func TestRunsEscapesTerminalControls(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	storeRuns(t, db, store.Run{ID: "r-000001", Goal: "launch \x1b]0;pwned\x07 plan \x1b[2J", Status: "completed", Provider: "scripted", Scripted: true})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if strings.ContainsAny(stdout.String(), "\x1b\x07") || !strings.Contains(stdout.String(), `launch \x1b]0;pwned\x07 plan \x1b[2J`) {
		t.Errorf("runs printed %q", stdout.String())
	}
}

// `runs` keeps one line per run: a goal of many lines and thousands of
// characters is listed as its first 60 characters, cut with an ellipsis.
func TestRunsShowsALongGoalOnOneLine(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	goal := "Überblick:\n\n  plan   the launch\n" + strings.Repeat("ä", 5000)
	storeRuns(t, db, store.Run{ID: "r-000001", Goal: goal, Status: "completed", Provider: "scripted", Scripted: true})
	var stdout, stderr bytes.Buffer
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimRight(stdout.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("runs printed %d lines, want a header and one run:\n%s", len(lines), stdout.String())
	}
	want := "Überblick: plan the launch " + strings.Repeat("ä", 32) + "…"
	if !strings.HasSuffix(lines[1], "  "+want) {
		t.Errorf("the run's line is %q, want it to end in %q", lines[1], want)
	}

	// A goal of wide characters takes as many columns as one of narrow
	// ones, and no flag is cut in two.
	storeRuns(t, db, store.Run{ID: "r-000002", Goal: strings.Repeat("漢", 45) + "🇯🇵", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000003", Goal: strings.Repeat("x", 58) + "🇯🇵🇺🇸", Status: "completed", Provider: "scripted", Scripted: true})
	stdout.Reset()
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, w := range []string{strings.Repeat("漢", 29) + "…", strings.Repeat("x", 58) + "…"} {
		if !strings.Contains(stdout.String(), "  "+w+"\n") {
			t.Errorf("runs shows no goal %q (60 columns):\n%s", w, stdout.String())
		}
	}
}

// Every flag the README documents is in the help of its command.
func TestHelpListsDocumentedFlags(t *testing.T) {
	cliEnv(t)
	for _, tc := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"--help"}, []string{"--config", "--db", "--provider", "--base-url", "--model", "--workspace", "--scripted-latency", "--scripted-stream-speed"}},
		{[]string{"run", "--help"}, []string{"--headless", "--json", "--json-deltas", "--control"}},
		{[]string{"resume", "--help"}, []string{"--headless", "--json", "--json-deltas", "--control"}},
		{[]string{"bench", "--help"}, []string{"--agents", "--latency", "--fanout", "--turns", "--floor", "--startup", "--cpuprofile", "--memprofile"}},
		{[]string{"mock-llm", "--help"}, []string{"--addr"}},
		{[]string{"resume", "--help"}, []string{"--model", "--workspace", "--db"}},
		{[]string{"runs", "--help"}, []string{"--config", "--db"}},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(tc.args, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("swarmdeck %s: exit %d, stderr %q", strings.Join(tc.args, " "), code, stderr.String())
		}
		for _, f := range tc.flags {
			if !strings.Contains(stdout.String(), f+" ") {
				t.Errorf("swarmdeck %s does not list %s", strings.Join(tc.args, " "), f)
			}
		}
	}
	// Nor the flags a command refuses.
	for _, tc := range []struct {
		args  []string
		flags []string
	}{
		{[]string{"runs", "--help"}, []string{"--model", "--provider", "--base-url", "--workspace", "--scripted-latency"}},
		{[]string{"help", "export"}, []string{"--model", "--workspace"}},
		{[]string{"mock-llm", "--help"}, []string{"--db", "--config", "--model"}},
		{[]string{"bench", "--help"}, []string{"--config", "--provider", "--base-url", "--model", "--workspace", "--scripted-latency", "--scripted-stream-speed"}},
		{[]string{"version", "--help"}, []string{"--db", "--config", "--model"}},
		{[]string{"completion", "bash", "--help"}, []string{"--db", "--provider"}},
	} {
		var stdout, stderr bytes.Buffer
		run(tc.args, strings.NewReader(""), &stdout, &stderr)
		for _, f := range tc.flags {
			// A line of the flag list, not prose that names the flag.
			if regexp.MustCompile(`(?m)^\s+(-[a-z], )?` + f + ` `).MatchString(stdout.String()) {
				t.Errorf("swarmdeck %s lists %s, which it refuses", strings.Join(tc.args, " "), f)
			}
		}
	}
}

// sqliteErr is an error SQLite returned, by its result code.
type sqliteErr int

func (e sqliteErr) Error() string { return fmt.Sprintf("sqlite error (%d)", int(e)) }
func (e sqliteErr) Code() int     { return int(e) }

// A database another process kept locked past the wait (a delete
// compacting it) is a failure that passes, said as such, not bad usage.
func TestLockedDatabaseIsSaid(t *testing.T) {
	locked := fmt.Errorf("open x.db: %w", sqliteErr(5))
	for name, c := range map[string]struct {
		err  error
		said string
	}{
		"opening to read": {openErr(config.Defaults(), "x.db", "", locked),
			"another process has kept the database x.db locked for longer than 10s: a swarmdeck delete or prune giving space back holds it until it is done"},
		"starting a run": {startErr("x.db", fmt.Errorf("store x.db: begin: %w", sqliteErr(5))),
			"another process has kept the database x.db locked for longer than 10s"},
	} {
		err, said := c.err, c.said
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != runtime.ExitFailed || !strings.Contains(err.Error(), said) || !strings.Contains(err.Error(), "(5)") {
			t.Errorf("%s: %v; want exit %d with %q", name, err, runtime.ExitFailed, said)
		}
	}
	if err := deleteFailed("x.db", "r-1", 0, fmt.Errorf("store x.db: begin: %w", sqliteErr(5))); !strings.Contains(err.Error(),
		"deleting run r-1 from x.db: another process has kept the database x.db locked for longer than 10s") || !store.IsBusy(err) {
		t.Errorf("a delete that found the database locked: %v", err)
	}
	// A start stopped (ctrl+c) while it waited says so, and who may hold
	// the database unless that was said when the wait began.
	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	locked = fmt.Errorf("store x.db: begin: %w", sqliteErr(5))
	cf := &commonFlags{}
	if err := cf.startFailed(stopped, "x.db", locked); !strings.Contains(err.Error(), "stopped waiting for the database x.db, which another process has locked: a swarmdeck delete or prune") ||
		!strings.Contains(err.Error(), "nothing stored is lost: try again once it is free") || strings.Contains(err.Error(), "longer than") {
		t.Errorf("a start stopped while it waited, untold: %v", err)
	}
	cf.busyTold = new(atomic.Bool)
	cf.busyTold.Store(true)
	if err := cf.startFailed(stopped, "x.db", locked); !strings.Contains(err.Error(), "stopped waiting for the database x.db, which another process has locked (as said above); nothing stored is lost") ||
		strings.Contains(err.Error(), "sqlite3;") {
		t.Errorf("a start stopped while it waited, told: %v", err)
	}
	if err := cf.startFailed(context.Background(), "x.db", locked); !strings.Contains(err.Error(), "locked for longer than 10s") {
		t.Errorf("a start that found the database locked, not stopped: %v", err)
	}
	var ee *exitError
	if err := openErr(config.Defaults(), "x.db", "", fmt.Errorf("open x.db: %w", sqliteErr(26))); !errors.As(err, &ee) || ee.code != runtime.ExitUsage {
		t.Errorf("not a database: %v; want bad usage", err)
	}
}

// The commands suggested after a run name the database it used when the
// configuration file now points at another (db: edited while it ran), and
// only then.
func TestSuggestedCommandsFollowTheDatabaseUsed(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.yaml")
	used := filepath.Join(dir, "used.db")
	if err := os.WriteFile(cfgPath, []byte("db: "+used+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cf := &commonFlags{config: cfgPath}
	cf.openedDB(used)
	if got := cf.commandLine("view", "r-1"); got != "swarmdeck view --config "+cfgPath+" r-1" {
		t.Errorf("unchanged configuration: %s", got)
	}
	if err := os.WriteFile(cfgPath, []byte("db: "+filepath.Join(dir, "other.db")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	next, err := cf.configFile() // as the watch reloads it
	if err != nil {
		t.Fatal(err)
	}
	cf.configReloaded(next)
	if got := cf.commandLine("view", "r-1"); got != "swarmdeck view --config "+cfgPath+" --db "+used+" r-1" {
		t.Errorf("db: pointed elsewhere: %s", got)
	}
}

// A headless resume of a run whose workspace is gone suggests a headless
// resume in another directory: the dashboard's fails without a terminal.
func TestHeadlessResumeOfARunWhoseWorkspaceIsGone(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "runs.db")
	gone := filepath.Join(dir, "gone")
	storeRuns(t, db, store.Run{ID: "r-000001", Goal: "g", Status: "interrupted", Provider: "scripted", Model: "swarmdeck-scripted", Scripted: true, Workspace: gone})
	var stdout, stderr bytes.Buffer
	code := run([]string{"resume", "--headless", "--db", db, "r-000001"}, strings.NewReader(""), &stdout, &stderr)
	want := "run r-000001 works in " + gone + ", which is gone: resume it in another directory with `swarmdeck --db " + shellQuote(db) + " resume --headless --workspace DIR r-000001`"
	if code != 2 || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, stderr %q; want exit 2 and %q", code, stderr.String(), want)
	}
}

// A stop signal that comes while resume still reads or takes up its run
// leaves the run as it was, and says so with the command that resumes it,
// not as a bare "context canceled" with the exit status of bad usage.
// Errors that say more than the cancellation are left as they are.
func TestStoppedBeforeResume(t *testing.T) {
	bySignal, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause("interrupt signal received"))
	plain, cancelPlain := context.WithCancel(context.Background())
	cancelPlain()
	interrupted := &exitError{runtime.ExitFailed, fmt.Errorf("%w; continue it", &runtime.InterruptedError{RunID: "r-1", Reason: "interrupt signal received"})}
	cf := &commonFlags{}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want string // "" for err unchanged
	}{
		{"read cancelled", bySignal, fmt.Errorf("resume r-1: %w", context.Canceled),
			"stopped (interrupt signal received) before run r-1 was resumed; it is as it was: continue it with: swarmdeck resume --headless r-1"},
		{"bare", bySignal, context.Canceled, "stopped (interrupt signal received) before run r-1 was resumed"},
		{"cancelled, not by a signal", plain, context.Canceled, ""},
		{"no error", bySignal, nil, ""},
		{"an error of its own", bySignal, errors.New("run r-1 is running in process 7"), ""},
		{"says more than the cancel", bySignal, fmt.Errorf("%w while waiting for the database", context.Canceled), ""},
		{"interrupted run", bySignal, interrupted, ""},
	} {
		got := cf.stoppedBeforeResume(tc.ctx, "r-1", true, tc.err)
		if tc.want == "" {
			if got != tc.err {
				t.Errorf("%s: %v, want the error unchanged", tc.name, got)
			}
			continue
		}
		var ee *exitError
		if !errors.As(got, &ee) || ee.code != runtime.ExitFailed || !strings.Contains(ee.err.Error(), tc.want) {
			t.Errorf("%s: %#v, want exit %d with %q", tc.name, got, runtime.ExitFailed, tc.want)
		}
	}
}
