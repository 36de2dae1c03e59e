package runtime

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// A demo run, which writes to nearly every table, is deleted whole: no
// table the schema has holds a row of it or a text only it used, and the
// run beside it exports as before, byte for byte.
func TestDeletedDemoRunLeavesNothing(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	ctx := context.Background()
	if _, code := headless(t, e, "plan a product launch", nil); code != ExitOK {
		t.Fatalf("first run: exit %d", code)
	}
	gone := exportLatest(t, e).Run.ID
	if _, code := headless(t, e, "write the launch notes", nil); code != ExitOK {
		t.Fatalf("second run: exit %d", code)
	}
	kept := exportLatest(t, e).Run.ID
	// Deleted from another process, as the command does: this one holds
	// its runs while it lives.
	path := e.Store().Path()
	e.Close()
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var before bytes.Buffer
	if err := st.WriteExport(ctx, kept, &before, nil); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", st.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	rows, err := db.Query(`SELECT s.name FROM sqlite_schema s WHERE s.type = 'table' AND s.name NOT LIKE 'sqlite_%'
		AND EXISTS (SELECT 1 FROM pragma_table_info(s.name) c WHERE c.name = 'run_id')`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	rows.Close()
	if len(tables) < 5 {
		t.Fatalf("the schema has only %v with a run_id column", tables)
	}
	filled := 0
	for _, table := range tables {
		if count(`SELECT COUNT(*) FROM `+table+` WHERE run_id = ?`, gone) > 0 {
			filled++
		}
	}
	if filled < len(tables)-2 {
		t.Fatalf("the demo run has rows in %d of %v only: the test shows little", filled, tables)
	}
	sharedBefore := count(`SELECT COUNT(*) FROM shared_contents`)

	release, err := ClaimStoredRun(st.Path(), gone)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.DeleteRun(ctx, gone); err != nil {
		t.Fatal(err)
	}
	release()

	for _, table := range tables {
		if n := count(`SELECT COUNT(*) FROM `+table+` WHERE run_id = ?`, gone); n > 0 {
			t.Errorf("%s holds %d rows of the deleted run", table, n)
		}
	}
	if n := count(`SELECT COUNT(*) FROM runs WHERE id = ?`, gone); n > 0 {
		t.Error("the deleted run's row is left")
	}
	unused := count(`SELECT COUNT(*) FROM shared_contents WHERE id NOT IN (SELECT content_ref FROM messages) AND id NOT IN (SELECT content_ref FROM inbox)`)
	if unused > 0 || count(`SELECT COUNT(*) FROM shared_contents`) >= sharedBefore {
		t.Errorf("%d shared texts are left that no row uses (of %d before the delete)", unused, sharedBefore)
	}
	var after bytes.Buffer
	if err := st.WriteExport(ctx, kept, &after, nil); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before.Bytes(), after.Bytes()) {
		t.Errorf("the kept run exports otherwise after the delete")
	}
	if _, err := os.Stat(filepath.Join(st.Path()+".locks", gone+".lock")); !os.IsNotExist(err) {
		t.Errorf("the deleted run's lock file is left: %v", err)
	}
}

// A run another process holds is refused with that process's pid.
func TestClaimStoredRunRefusesALiveRun(t *testing.T) {
	db := filepath.Join(t.TempDir(), "d.db")
	release, err := ClaimStoredRun(db, "r-000001")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ClaimStoredRun(db, "r-000001")
	var held *RunHeldError
	if !errors.As(err, &held) || held.RunID != "r-000001" || held.PID != os.Getpid() {
		t.Errorf("a claimed run claimed again: %v", err)
	}
	release()
	release, err = ClaimStoredRun(db, "r-000001")
	if err != nil {
		t.Fatalf("a released run: %v", err)
	}
	release()
	if _, err := os.Stat(db + ".locks"); !os.IsNotExist(err) {
		t.Errorf("the lock directory is left: %v", err)
	}
}

// StopAtOnce, for a process about to exit without stopping its runs, names
// the runs it was running, each stored, and removes their lock files: the
// exit would leave them behind.
func TestStopAtOnceNamesTheRunsAndLeavesNoLockFile(t *testing.T) {
	e := testEngine(t, nil, nil, func(c *config.Config) {
		c.Providers["scripted"].Latency = config.Duration(time.Minute) // the run stays under way
	})
	r, err := e.Start(context.Background(), "a quick demo")
	if err != nil {
		t.Fatal(err)
	}
	lock := filepath.Join(runlock.Dir(e.dbPath), r.ID()+".lock")
	if _, err := os.Stat(lock); err != nil {
		t.Fatalf("the run's lock file: %v", err)
	}
	if ids := StopAtOnce(); !slices.Contains(ids, r.ID()) {
		t.Errorf("StopAtOnce named %v, not the run %s", ids, r.ID())
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Errorf("the lock file is left: %v", err)
	}
	// The process goes on as if nothing happened until it exits: the run
	// ends as ever, and is named no more.
	e.Close()
	<-r.Done()
	if ids := StopAtOnce(); slices.Contains(ids, r.ID()) {
		t.Errorf("an ended run named: %v", ids)
	}
}
