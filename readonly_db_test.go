package main

import (
	"bytes"
	"database/sql"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

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
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o755)
			}
			return nil
		})
		os.RemoveAll(dir)
	})
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
	schema, err := os.ReadFile(filepath.Join("runtime", "store", "migrations", "0001_init.sql"))
	if err != nil {
		t.Fatal(err)
	}
	dir := cliEnv(t)
	db := filepath.Join(dir, "old.db")
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
	var stdout, stderr bytes.Buffer
	if code := run([]string{"runs", "--db", db}, strings.NewReader(""), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "r-old001") {
		t.Errorf("runs on an older database: exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}
