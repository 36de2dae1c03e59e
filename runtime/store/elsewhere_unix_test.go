//go:build unix

package store

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// A database of a schema whose swarmdeck took no run locks is not upgraded
// while another process has it open: that may be such a swarmdeck running
// a run, which would look like one whose process died once it is upgraded,
// and could be resumed or deleted under it. With the file closed there, it
// is upgraded.
func TestOlderDatabaseOpenElsewhereWaitsToBeUpgraded(t *testing.T) {
	if path := os.Getenv("STORE_HOLD_OPEN"); path != "" {
		holdOpen(path)
	}
	path := filepath.Join(t.TempDir(), "v1.db")
	makeVersion1(t, path, "PRAGMA journal_mode=WAL")

	cmd := exec.Command(os.Args[0], "-test.run=^TestOlderDatabaseOpenElsewhereWaitsToBeUpgraded$")
	cmd.Env = append(os.Environ(), "STORE_HOLD_OPEN="+path)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	if line, err := bufio.NewReader(out).ReadString('\n'); line != "open\n" {
		t.Fatalf("the other process did not open the database: %q %v", line, err)
	}

	s, err := OpenWith(path, nil, OpenOptions{})
	var inUse *olderInUseError
	if !errors.As(err, &inUse) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("opened while another process has it open: %v", err)
	}
	if version := userVersion(t, path); version != 1 {
		t.Fatalf("schema version %d after the refusal, want 1 as it was", version)
	}

	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the other process: %v", err)
	}
	s, err = OpenWith(path, nil, OpenOptions{})
	if err != nil {
		t.Fatalf("not opened once nothing else has it open: %v", err)
	}
	s.Close()
	all, _ := migrationList()
	if version, latest := userVersion(t, path), all[len(all)-1].version; version != latest {
		t.Fatalf("schema version %d, want %d", version, latest)
	}
}

// holdOpen keeps the database at path open, as another process would,
// until its input ends; then the process exits.
func holdOpen(path string) {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		os.Exit(3)
	}
	var n int
	if err := db.QueryRowContext(context.Background(), "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		os.Exit(4)
	}
	os.Stdout.WriteString("open\n")
	io.Copy(io.Discard, os.Stdin)
	db.Close()
	os.Exit(0)
}

func userVersion(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	return version
}
