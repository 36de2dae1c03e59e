//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// runs and export read a database the user may only read, the file or the
// directory it is in, and leave nothing behind there. The commands run as
// another user when the tests run as root, for whom no file is read-only.
func TestRunsAndExportReadADatabaseTheUserMayOnlyRead(t *testing.T) {
	bin := buildSwarmdeck(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534} // nobody
		// The other user must reach the binary and the database.
		if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir, err := os.MkdirTemp("", "swarmdeck-readonly-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mode os.FileMode // of the directory
	}{{"shared", 0o777}, {"closed", 0o555}} {
		sub := filepath.Join(dir, tc.name)
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		db := filepath.Join(sub, "x.db")
		storeRuns(t, db, store.Run{ID: "r-ro0001", Goal: "read me", Status: "completed", Provider: "scripted", Scripted: true})
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(sub, tc.mode); err != nil {
			t.Fatal(err)
		}
	}
	removeReadOnly(t, dir)
	env := append(os.Environ(), "OPENAI_API_KEY=", "HOME="+dir, "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_STATE_HOME="+dir)
	for _, name := range []string{"shared", "closed"} {
		sub := filepath.Join(dir, name)
		db := filepath.Join(sub, "x.db")
		before, _ := os.ReadDir(sub)
		for _, args := range [][]string{{"runs", "--db", db}, {"export", "--db", db}} {
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = dir, env
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if cred != nil && err != nil && !errors.As(err, &ee) {
				t.Skipf("cannot run a command as another user: %v", err)
			}
			if err != nil || !strings.Contains(stdout.String(), "r-ro0001") {
				t.Errorf("%s directory: swarmdeck %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
			}
		}
		// Commands that change the database say why they cannot.
		for _, args := range [][]string{{"delete", "--db", db, "r-ro0001"}, {"prune", "--db", db, "--older-than", "1d"}, {"prune", "--db", db, "--vacuum-only"}} {
			cmd := exec.Command(bin, args...)
			cmd.Dir, cmd.Env = dir, env
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			out, err := cmd.CombinedOutput()
			need := args[0]
			if args[len(args)-1] == "--vacuum-only" {
				need += " --vacuum-only"
			}
			want := "swarmdeck: the database " + db + " is read-only here (the file, or the directory its -wal and -shm files go in): " + need + " needs to write both; make them writable, or run as a user who may"
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(out), want) {
				t.Errorf("%s directory: swarmdeck %s: %v\n%s\nwant exit 2 with %q", name, strings.Join(args, " "), err, out, want)
			}
		}
		after, _ := os.ReadDir(sub)
		names := func(es []os.DirEntry) []string {
			var out []string
			for _, e := range es {
				out = append(out, e.Name())
			}
			return out
		}
		if !slices.Equal(names(before), names(after)) {
			t.Errorf("%s directory: reading left %v behind (before: %v)", name, names(after), names(before))
		}
	}
}

// A database written by an older swarmdeck is still listed: its schema is
// brought up to date first, as any command that opens it does.
func TestRunsUpgradesAnOlderDatabase(t *testing.T) {
	dir := cliEnv(t)
	db := filepath.Join(dir, "old.db")
	writeOldDB(t, db)
	var stdout, stderr bytes.Buffer
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "r-old001") {
		t.Errorf("runs on an older database: exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}

// view shows a run from a database the user may only read: a finished run
// in a directory the user may not write, read as it is, and a run that
// another process is running, followed as it goes through the files that
// process keeps beside the database. The viewer runs as another user when
// the tests run as root, for whom no file is read-only.
func TestViewReadsADatabaseTheUserMayOnlyRead(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary as another process; skipped with -short")
	}
	cliEnv(t)
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		cred = &syscall.Credential{Uid: 65534, Gid: 65534} // nobody
	}
	// The other user must reach the test binary and the databases.
	shared, err := os.MkdirTemp("", "swarmdeck-view-")
	if err != nil {
		t.Fatal(err)
	}
	removeReadOnly(t, shared)
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(shared, "swarmdeck.test")
	if data, err := os.ReadFile(self); err != nil || os.WriteFile(bin, data, 0o755) != nil {
		t.Fatalf("copy the test binary: %v", err)
	}
	// view asks the person, in a read-only view, to run nothing: the child
	// prints what it shows, and waits for what it follows.
	viewer := func(db, runID, await string) (*exec.Cmd, *bufio.Reader, *bytes.Buffer) {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^TestViewHelperProcess$")
		cmd.Dir = shared
		cmd.Env = append(os.Environ(), "SWARMDECK_VIEW_HELPER="+db+"\n"+runID+"\n"+await,
			"OPENAI_API_KEY=", "HOME="+shared, "XDG_CONFIG_HOME="+shared, "XDG_DATA_HOME="+shared, "XDG_STATE_HOME="+shared)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			if cred != nil {
				t.Skipf("cannot run a command as another user: %v", err)
			}
			t.Fatal(err)
		}
		return cmd, bufio.NewReader(out), &stderr
	}
	line := func(r *bufio.Reader, stderr *bytes.Buffer) string {
		t.Helper()
		s, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the viewer said nothing more (%v); stderr:\n%s", err, stderr.String())
		}
		return strings.TrimSpace(s)
	}

	// A finished run, in a directory the user may not write.
	closed := filepath.Join(shared, "closed")
	if err := os.Mkdir(closed, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(closed, "x.db")
	storeRuns(t, db, store.Run{ID: "r-ro0001", Goal: "read me", Status: "completed", Provider: "scripted", Scripted: true})
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(closed, 0o555); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadDir(closed)
	cmd, out, stderr := viewer(db, "r-ro0001", "")
	if got := line(out, stderr); got != "shown r-ro0001 completed immutable=true" {
		t.Errorf("finished run in a read-only directory: %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("viewer: %v\n%s", err, stderr.String())
	}
	after, _ := os.ReadDir(closed)
	if len(after) != len(before) {
		t.Errorf("viewing left files in %s: %v", closed, after)
	}

	// A database of an older schema cannot be shown until it is upgraded,
	// which the viewer may not do: it is told who can.
	oldDir := filepath.Join(shared, "old")
	if err := os.Mkdir(oldDir, 0o755); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(oldDir, "x.db")
	writeOldDB(t, db)
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(oldDir, 0o555); err != nil {
		t.Fatal(err)
	}
	cmd, out, stderr = viewer(db, "r-old001", "")
	if got, want := line(out, stderr), "error: "+db+" was written by an older swarmdeck and must be upgraded before this one can show it"; !strings.HasPrefix(got, want) ||
		!strings.HasSuffix(got, "`swarmdeck runs` by a user who may write it upgrades it") {
		t.Errorf("older schema: %q", got)
	}
	cmd.Wait()

	// A run going on in this process, in a database the viewer may only
	// read; its -wal and -shm are this process's.
	live := filepath.Join(shared, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	db = filepath.Join(live, "x.db")
	_, run := startSlowRun(t, db, "a goal that takes an hour")
	defer run.Interrupt()
	if err := os.Chmod(db, 0o444); err != nil {
		t.Fatal(err)
	}
	cmd, out, stderr = viewer(db, run.ID(), "news for the viewer")
	if got, want := line(out, stderr), "shown "+run.ID()+" running immutable=false"; got != want {
		t.Fatalf("live run: %q, want %q", got, want)
	}
	if err := run.Broadcast(context.Background(), "news for the viewer", "all", "context"); err != nil {
		t.Fatal(err)
	}
	if got := line(out, stderr); got != "followed news for the viewer" {
		t.Errorf("live run: %q", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("viewer: %v\n%s", err, stderr.String())
	}
}

// TestViewHelperProcess is the viewer of TestViewReadsADatabaseTheUserMayOnlyRead,
// run as its own process.
func TestViewHelperProcess(t *testing.T) {
	args, ok := os.LookupEnv("SWARMDECK_VIEW_HELPER")
	if !ok {
		t.Skip("run by TestViewReadsADatabaseTheUserMayOnlyRead")
	}
	part := strings.SplitN(args, "\n", 3)
	db, runID, await := part[0], part[1], part[2]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Refusals are printed as the line the test reads.
	eng, closeEng, err := newEngine(ctx, &commonFlags{db: db}, forView, nil)
	if err != nil {
		fmt.Printf("error: %v\n", err)
		return
	}
	defer closeEng()
	v, err := eng.View(ctx, runID)
	if err != nil {
		fmt.Printf("error: %v\n", err)
		return
	}
	sub := v.Subscribe(16)
	snap := v.Snapshot()
	fmt.Printf("shown %s %s immutable=%t\n", snap.Run.ID, snap.Run.Status, eng.Store().Immutable())
	if await == "" {
		return
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.Type == event.BroadcastSent && ev.Broadcast != nil && ev.Broadcast.Message == await {
				fmt.Printf("followed %s\n", await)
				return
			}
		case <-ctx.Done():
			fmt.Println("error: no broadcast followed")
			return
		}
	}
}

// removeReadOnly removes dir when the test ends, its directories made
// writable first: t.TempDir's own clean-up fails on one made read-only.
func removeReadOnly(t *testing.T, dir string) {
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
}

// firstSchema is the path of the first schema, made absolute before a test
// changes to a directory of its own.
var firstSchema, _ = filepath.Abs(filepath.Join("runtime", "store", "migrations", "0001_init.sql"))

// writeOldDB writes at db a database of the first schema, as the first
// swarmdeck left it, holding one completed run, r-old001.
func writeOldDB(t *testing.T, db string) {
	t.Helper()
	schema, err := os.ReadFile(firstSchema)
	if err != nil {
		t.Fatal(err)
	}
	old, err := sql.Open("sqlite", db)
	if err != nil {
		t.Fatal(err)
	}
	_, err = old.Exec(string(schema) + `;PRAGMA user_version = 1;
		INSERT INTO runs (id, goal, status, created_at, updated_at) VALUES ('r-old001', 'from before', 'completed', '2026-01-02T03:04:05Z', '2026-01-02T03:04:05Z')`)
	old.Close()
	if err != nil {
		t.Fatal(err)
	}
}
