package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// sd runs a command in-process and returns its exit status and output.
func sd(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// storedIDs lists the runs a database holds, as runs --json says.
func storedIDs(t *testing.T, db string) []string {
	t.Helper()
	code, out, errOut := sd("runs", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("runs: exit %d: %s", code, errOut)
	}
	var ids []string
	for _, m := range regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(out, -1) {
		ids = append(ids, m[1])
	}
	slices.Sort(ids)
	return ids
}

// delete checks every id first and deletes nothing when one is unknown,
// ambiguous or running; else it deletes each, a run whose process died
// with its lock file, leaves the others as they were, and compacts the
// file unless another process has it open.
func TestDeleteRuns(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "d.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "first goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "second goal", Status: "interrupted", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000003", Goal: "third goal", Status: "failed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-dead01", Goal: "left by a kill -9", Status: "running", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-0000a1", Goal: "to go alone", Status: "completed", Provider: "scripted", Scripted: true})
	// The process that ran r-dead01 died holding its lock: the file stays.
	stale := filepath.Join(db+".locks", "r-dead01.lock")
	os.MkdirAll(filepath.Dir(stale), 0o755)
	if err := os.WriteFile(stale, []byte("999999\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, kept, _ := sd("export", "--db", db, "r-000002")

	code, out, errOut := sd("delete", "--db", db, "r-0000a1")
	if code != 0 || errOut != "" || !regexp.MustCompile(`^deleted r-0000a1 \(completed, last active \d{4}-\d\d-\d\d \d\d:\d\d\): to go alone\n`+
		regexp.QuoteMeta(db)+`: \d+ KB before, \d+ KB now\n$`).MatchString(out) {
		t.Errorf("delete alone: exit %d\n%s%s", code, out, errOut)
	}

	// Mistakes: nothing is deleted, and every one is said.
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"r-000001", "r-zzzzzz"}, []string{`nothing deleted: run "r-zzzzzz": not found`}},
		{[]string{"r-00000", "nope", "r-000003"}, []string{"nothing deleted:\n", `run "r-00000" is ambiguous`, `run "nope": not found`}},
		{[]string{}, []string{"delete: give the id of each run to delete (`swarmdeck --db " + db + " runs` lists them) (usage: swarmdeck delete RUN_ID...)"}},
	} {
		code, out, errOut := sd(append([]string{"delete", "--db", db}, c.args...)...)
		if code != 2 || out != "" {
			t.Errorf("delete %v: exit %d, stdout %q", c.args, code, out)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("delete %v says %q, want %q in it", c.args, errOut, w)
			}
		}
	}
	if code, _, errOut := sd("delete", "--db", filepath.Join(dir, "none.db"), "r-000001"); code != 2 || !strings.Contains(errOut, "no database at") {
		t.Errorf("delete in a database that is not there: exit %d, %s", code, errOut)
	}
	if got, want := storedIDs(t, db), []string{"r-000001", "r-000002", "r-000003", "r-dead01"}; !slices.Equal(got, want) {
		t.Fatalf("after refused deletes the runs are %v, want %v", got, want)
	}

	_, live := startSlowRun(t, db, "still going")
	defer live.Interrupt()
	code, out, errOut = sd("delete", "--db", db, "r-000001", live.ID())
	if code != 2 || out != "" || !strings.Contains(errOut, "nothing deleted: run "+live.ID()+" is running in another swarmdeck process (pid "+strconv.Itoa(os.Getpid())+"): stop that process first") {
		t.Errorf("delete of a live run: exit %d, %q, %q", code, out, errOut)
	}
	// A resume of it is refused as such before a terminal is looked for:
	// the headless command the terminal's refusal suggests would fail.
	for _, id := range []string{live.ID(), live.ID()[:len(live.ID())-1]} { // its id, or the start of it
		code, _, errOut = sd("resume", "--db", db, id)
		if code != 2 || !strings.Contains(errOut, "run "+live.ID()+" is running in another swarmdeck process (pid "+strconv.Itoa(os.Getpid())+")") {
			t.Errorf("resume %s of a live run with no terminal: exit %d, %q", id, code, errOut)
		}
	}
	code, out, _ = sd("__complete", "--db", db, "delete", "r-000001", "")
	if code != 0 || strings.Contains(out, live.ID()) || strings.Contains(out, "r-000001") ||
		!strings.Contains(out, "r-000002\tinterrupted: second goal") || !strings.Contains(out, "r-dead01\tstopped*: left by a kill -9") {
		t.Errorf("delete completes %q", out)
	}

	// The live run's process has the database open: it keeps its size.
	code, out, errOut = sd("delete", "--db", db, "r-000001", "r-dead", "r-000001")
	if code != 0 || !regexp.MustCompile(`^deleted r-000001 \(completed, .*\): first goal\ndeleted r-dead01 \(stopped when its process died, .*\): left by a kill -9\n$`).MatchString(out) {
		t.Errorf("delete: exit %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, db+" is open in another process (a swarmdeck running, or another program such as sqlite3), so it keeps its size") ||
		!strings.Contains(errOut, "`swarmdeck --db "+db+" prune --vacuum-only` gives it back") {
		t.Errorf("delete beside a live run says %q", errOut)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the dead run's lock file is left: %v", err)
	}
	if got, want := storedIDs(t, db), []string{"r-000002", "r-000003", live.ID()}; !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("after the delete the runs are %v, want %v", got, want)
	}
	if _, now, _ := sd("export", "--db", db, "r-000002"); now != kept {
		t.Errorf("a run kept exports otherwise after the delete:\n%s\nwas\n%s", now, kept)
	}
}

// prune deletes the runs that ended and were idle for longer than the
// age, never a live one; --dry-run lists them and deletes nothing.
func TestPruneRuns(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "p.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "first goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "second goal", Status: "interrupted", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-dead01", Goal: "left by a kill -9", Status: "running", Provider: "scripted", Scripted: true})
	_, live := startSlowRun(t, db, "still going")
	defer live.Interrupt()
	// Three days on, every run was last written to two to three days ago.
	saved := now
	now = func() time.Time { return time.Now().Add(72 * time.Hour) }
	t.Cleanup(func() { now = saved })
	all := slices.Sorted(slices.Values([]string{"r-000001", "r-000002", "r-dead01", live.ID()}))

	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "prune: give --older-than AGE"},
		{[]string{"--older-than", "0"}, "--older-than 0: give an age above zero"},
		{[]string{"--older-than", "-1h"}, "--older-than -1h: give an age above zero"},
		{[]string{"--older-than", "0d"}, "--older-than 0d: give an age above zero"},
		{[]string{"--older-than", "0d0h"}, "--older-than 0d0h: give an age above zero"},
		{[]string{"--older-than", "30 days"}, `--older-than "30 days" is not an age`},
		// A flag after it is not taken for its value unnoticed.
		{[]string{"--older-than", "--dry-run"}, `prune: --older-than takes an age, such as 30d, not "--dry-run"`},
		{[]string{"--older-than", "1d", "--vacuum-only"}, "--vacuum-only deletes no run"},
		{[]string{"r-000001"}, `prune: takes no arguments, and was given "r-000001"`},
		// An age without its flag is shown where it goes.
		{[]string{"30d"}, "prune: the age goes after --older-than: `swarmdeck --db " + db + " prune --older-than 30d`"},
	} {
		code, out, errOut := sd(append([]string{"prune", "--db", db}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("prune %v: exit %d, %q, %q; want %q", c.args, code, out, errOut, c.want)
		}
	}

	code, out, errOut := sd("prune", "--db", db, "--older-than", "2d", "--dry-run")
	if code != 0 || !regexp.MustCompile(`^(would delete r-\S+ \((completed|interrupted|stopped when its process died), last active .*\): .*\n){3}3 runs would be deleted \(ended, and last active before .*, 2d ago\); nothing was deleted \(--dry-run\)\n$`).MatchString(out) ||
		strings.Contains(out, live.ID()) || !strings.Contains(errOut, "kept run "+live.ID()+": a swarmdeck process is running it") {
		t.Errorf("prune --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	if got := storedIDs(t, db); !slices.Equal(got, all) {
		t.Fatalf("after --dry-run the runs are %v, want %v", got, all)
	}
	code, out, _ = sd("prune", "--db", db, "--older-than", "4d")
	if code != 0 || !strings.HasPrefix(out, "no run ended and last active before ") {
		t.Errorf("prune of nothing: exit %d\n%s", code, out)
	}
	if got := storedIDs(t, db); !slices.Equal(got, all) {
		t.Fatalf("after a prune of nothing the runs are %v, want %v", got, all)
	}

	code, out, errOut = sd("prune", "--db", db, "--older-than", "1d12h")
	if code != 0 || !strings.HasSuffix(out, "\n3 runs deleted\n") || strings.Count(out, "deleted r-") != 3 ||
		!strings.Contains(errOut, "is open in another process") {
		t.Errorf("prune: exit %d\n%s%s", code, out, errOut)
	}
	if got := storedIDs(t, db); !slices.Equal(got, []string{live.ID()}) {
		t.Errorf("after prune the runs are %v, want the live one alone", got)
	}
}

// delete and prune whose report cannot be written (a full disk) still do
// all they were asked, and fail at the end, so that the lost record of
// what was deleted does not pass unnoticed.
func TestDeleteAndPruneToAFullDisk(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "f.db")
	storeRuns(t, db,
		store.Run{ID: "r-000001", Goal: "first goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000002", Goal: "second goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000003", Goal: "third goal", Status: "completed", Provider: "scripted", Scripted: true},
		store.Run{ID: "r-000004", Goal: "fourth goal", Status: "completed", Provider: "scripted", Scripted: true})
	saved := now
	now = func() time.Time { return time.Now().Add(72 * time.Hour) }
	t.Cleanup(func() { now = saved })
	for _, tc := range []struct {
		args []string
		left []string
	}{
		{[]string{"delete", "r-000001", "r-000002"}, []string{"r-000003", "r-000004"}},
		{[]string{"prune", "--older-than", "1d", "--dry-run"}, []string{"r-000003", "r-000004"}},
		{[]string{"prune", "--older-than", "1d"}, nil},
		{[]string{"prune", "--vacuum-only"}, nil},
	} {
		var errOut bytes.Buffer
		code := run(append(tc.args, "--db", db), strings.NewReader(""), fullWriter{}, &errOut)
		if code != 1 || !strings.Contains(errOut.String(), "writing the output: no space left on device") {
			t.Errorf("%s to a full disk: exit %d, %q", strings.Join(tc.args, " "), code, errOut.String())
		}
		if got := storedIDs(t, db); !slices.Equal(got, tc.left) {
			t.Errorf("after %s to a full disk the runs are %v, want %v", strings.Join(tc.args, " "), got, tc.left)
		}
	}
}

func TestParseAge(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "12h": 12 * time.Hour, "90m": 90 * time.Minute, "1d12h": 36 * time.Hour,
		"1.5d": 36 * time.Hour, " 2d ": 48 * time.Hour, "0.5h": 30 * time.Minute, "36500d": 36500 * 24 * time.Hour, "35000d24000h": 36000 * 24 * time.Hour,
	} {
		if got, err := parseAge(in); err != nil || got != want {
			t.Errorf("parseAge(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"": "is not an age", "0": "above zero", "0d": "above zero", "0s": "above zero", "-1d": "above zero", "-2h": "above zero",
		"d": "is not an age", "1y": "is not an age", "1dd": "is not an age", "30 days": "is not an age", "NaNd": "is not an age", "Infd": "is not an age",
		"1d-2h": "no part below zero", "50000d": "at most 36500d", "1e9d": "at most 36500d", "1e400d": "at most 36500d",
		"36500d2562047h": "at most 36500d", "1d2562047h": "at most 36500d", "2562048h": "at most 36500d", "36500d1h": "at most 36500d",
		"9223372036854775807ns": "at most 36500d", "1h-": "is not an age",
	} {
		if got, err := parseAge(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseAge(%q) = %s, %v; want an error saying %q", in, got, err, want)
		}
	}
}

// A run held by another process is said as it is stored: a live run is
// resumable once stopped, an ended one is held by the dashboard still
// open on it.
func TestHeldRunText(t *testing.T) {
	held := &runtime.RunHeldError{RunID: "r-000001", PID: 42}
	for status, want := range map[string]string{
		runtime.RunRunning: "run r-000001 is running in another swarmdeck process (pid 42): stop that process first (its run stays resumable), then delete it",
		"":                 "run r-000001 is running in another swarmdeck process (pid 42): stop that process first",
		"completed":        "run r-000001 (completed) is still open in another swarmdeck process (pid 42): quit that dashboard first, then delete it",
		"failed":           "run r-000001 (failed) is still open in another swarmdeck process (pid 42): quit that dashboard first",
	} {
		if got := heldText(held, status).Error(); !strings.HasPrefix(got, want) {
			t.Errorf("held %q: %q, want %q", status, got, want)
		}
	}
}

// A compaction stopped by a signal says so, and what finishes it: not that
// the disk may be full.
func TestCompactionStopped(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "c.db")
	storeRuns(t, db, store.Run{ID: "r-000001", Goal: "g", Status: "completed", Provider: "scripted", Scripted: true})
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(signalCause("interrupt signal received"))
	cf := &commonFlags{db: db}
	err := cf.reclaim(ctx, db, store.FileSize(db), 1, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "the runs are deleted, but "+db+" was not compacted: stopped before the end; `swarmdeck prune --vacuum-only` compacts it") ||
		strings.Contains(err.Error(), "disk space") {
		t.Errorf("a compaction stopped by a signal: %v", err)
	}
}

// A prune that finds nothing to delete, or a delete of a run that is not
// there, ends at once on a database another program holds: it has nothing
// to write, so nothing to wait for (they took 10 to 12 s, waiting to
// compact and to fold the log back).
func TestNothingToDeleteDoesNotWaitForAHolder(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "h.db")
	storeRuns(t, db, store.Run{ID: "r-000001", Goal: "g", Status: "completed", Provider: "scripted", Scripted: true})
	holder, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	c, err := holder.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")
	type result struct {
		code     int
		out, err string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errOut := sd("prune", "--db", db, "--older-than", "30d")
		if code != 0 || !strings.HasPrefix(out, "no run ended and last active before ") || errOut != "" {
			t.Errorf("prune of nothing on a held database: exit %d\n%s%s", code, out, errOut)
		}
		code, out, errOut = sd("delete", "--db", db, "r-nothere")
		done <- result{code, out, errOut}
	}()
	select {
	case r := <-done:
		if r.code != 2 || !strings.Contains(r.err, `nothing deleted: run "r-nothere": not found`) {
			t.Errorf("delete of no run on a held database: exit %d\n%s%s", r.code, r.out, r.err)
		}
	case <-time.After(10 * time.Second):
		c.ExecContext(context.Background(), "ROLLBACK")
		<-done
		t.Fatal("prune or delete with nothing to delete waited for the program holding the database")
	}
}
