package store

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

var updateSchema = flag.Bool("update", false, "rewrite schema.sql from the migrations")

// schemaRows is a database's schema as SQLite stores it, in the order it
// was created, with its version.
func schemaRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	var version int
	if err := db.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	rows, err := db.Query("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := []string{fmt.Sprintf("version %d", version)}
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+" "+name+" on "+table+": "+text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A new database is made from schema.sql, an older one by its pending
// migrations: both must end with the same schema, to the letter.
func TestSchemaMatchesMigrations(t *testing.T) {
	dir := t.TempDir()
	migrated, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "migrated.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	all, err := migrationList()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range all {
		body, err := migrations.ReadFile("migrations/" + m.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := migrated.Exec(string(body)); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
	}
	latest := all[len(all)-1].version
	if _, err := migrated.Exec(fmt.Sprintf("PRAGMA user_version = %d", latest)); err != nil {
		t.Fatal(err)
	}
	want := schemaRows(t, migrated)

	if *updateSchema {
		writeSchema(t, migrated, latest)
		t.Skip("schema.sql rewritten")
	}
	if v, ok := schemaVersion(schema); !ok || v != latest {
		t.Fatalf("schema.sql stands for version %d (read: %v), the migrations reach %d: run go test ./runtime/store -run TestSchemaMatchesMigrations -update", v, ok, latest)
	}
	s, err := Open(filepath.Join(dir, "new.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := schemaRows(t, s.read); !slices.Equal(got, want) {
		t.Fatalf("a new database's schema differs from the migrated one's: run go test ./runtime/store -run TestSchemaMatchesMigrations -update\nnew:\n%s\nmigrated:\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// writeSchema writes schema.sql: the statements SQLite stores for db, in
// the order they were made.
func writeSchema(t *testing.T, db *sql.DB, version int) {
	t.Helper()
	rows, err := db.Query("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "-- The schema of a new database: what the migrations in migrations/ leave,\n")
	fmt.Fprintf(&b, "-- as SQLite stores it. Written by\n")
	fmt.Fprintf(&b, "-- go test ./runtime/store -run TestSchemaMatchesMigrations -update\n")
	fmt.Fprintf(&b, "-- version: %d\n", version)
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "\n%s;\n", text)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("schema.sql", []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A database at an older version takes only its pending migrations, not
// the whole schema, and says so first; a new one and an up-to-date one do
// not.
func TestOlderDatabaseTakesItsMigrations(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "v1.db")
	makeVersion1(t, path)
	var told []string
	o := OpenOptions{Upgrading: func(p string, from, to int) {
		told = append(told, fmt.Sprintf("%s %d->%d", filepath.Base(p), from, to))
	}}
	s, err := OpenWith(path, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := s.read.QueryRowContext(context.Background(), "PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	s.Close()
	all, _ := migrationList()
	latest := all[len(all)-1].version
	if version != latest {
		t.Fatalf("version %d after opening, want %d", version, latest)
	}
	for _, p := range []string{path, filepath.Join(dir, "new.db")} {
		s, err := OpenWith(p, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
	}
	if want := []string{fmt.Sprintf("v1.db 1->%d", latest)}; !slices.Equal(told, want) {
		t.Errorf("told of upgrades %q, want %q", told, want)
	}
}

// Migration 7 moves the event log to a table with row ids: a database
// whose log was kept in its key's B-tree keeps every event, in order, and
// its runs go on numbering their events from where they were.
func TestEventLogKeepsItsEventsThroughMigration7(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	group := func(run string, seqs ...int) string {
		var evs []string
		for _, n := range seqs {
			evs = append(evs, fmt.Sprintf(`{"seq":%d,"type":"session.status","run_id":"%s"}`, n, run))
		}
		return fmt.Sprintf(`INSERT INTO events (run_id, seq, last_seq, data) VALUES ('%s', %d, %d, '[%s]')`,
			run, seqs[0], seqs[len(seqs)-1], strings.Join(evs, ","))
	}
	makeVersion1(t, path, group("r-1", 1, 2, 3), group("r-2", 1, 2), group("r-1", 4))
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	seqs := func(run string, after int64) []int64 {
		t.Helper()
		evs, err := s.EventsAfter(ctx, run, after)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, e := range evs {
			if e.RunID != run {
				t.Errorf("run %s's log holds an event of %s", run, e.RunID)
			}
			out = append(out, e.Seq)
		}
		return out
	}
	if got := seqs("r-1", 0); !slices.Equal(got, []int64{1, 2, 3, 4}) {
		t.Errorf("r-1's events after the migration: %v", got)
	}
	if got := seqs("r-1", 2); !slices.Equal(got, []int64{3, 4}) {
		t.Errorf("r-1's events after 2: %v", got)
	}
	if got := seqs("r-2", 0); !slices.Equal(got, []int64{1, 2}) {
		t.Errorf("r-2's events: %v", got)
	}
	for run, want := range map[string]int64{"r-1": 4, "r-2": 2, "r-3": 0} {
		if n, err := s.EventCount(ctx, run); err != nil || n != int(want) {
			t.Errorf("EventCount(%s) = %d, %v; want %d", run, n, err, want)
		}
		if last, err := s.LastSeq(ctx, run); err != nil || last != want {
			t.Errorf("LastSeq(%s) = %d, %v; want %d", run, last, err, want)
		}
	}
	if err := s.Do(ctx, func(tx *Tx) error {
		_, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: "r-1"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if got := seqs("r-1", 3); !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("r-1's events after a new one: %v", got)
	}
}

// Migration 8 moves sessions and delegations to tables with row ids: every
// row keeps its text, and writing a session or a delegation again still
// changes its row instead of adding one.
func TestSessionsKeepTheirRowsThroughMigration8(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	result := strings.Repeat("a long final answer ", 250)
	makeVersion1(t, path,
		`INSERT INTO sessions (run_id, id, parent_id, agent, task, status, depth, result, created_at, updated_at)
			VALUES ('r-1', 's-1', '', 'orchestrator', 'the goal', 'completed', 0, '`+result+`', '2026-01-01T00:00:00Z', '2026-01-01T00:00:01Z')`,
		`INSERT INTO sessions (run_id, id, parent_id, agent, task, status, depth, created_at, updated_at)
			VALUES ('r-1', 's-2', 's-1', 'researcher', 'a task', 'running', 1, '2026-01-01T00:00:02Z', '2026-01-01T00:00:02Z')`,
		`INSERT INTO delegations (run_id, id, parent_session, session_id, description, status, depth, result, created_at)
			VALUES ('r-1', 'd-1', 's-1', 's-2', 'the checklist', 'running', 1, '`+result+`', '2026-01-01T00:00:02Z')`)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	sessions := func() []Session {
		t.Helper()
		out, err := s.Sessions(ctx, "r-1")
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := sessions()
	if len(got) != 2 || got[0].ID != "s-1" || got[0].Result != result || got[1].ID != "s-2" || got[1].ParentID != "s-1" || got[1].Status != "running" {
		t.Fatalf("sessions after the migration: %+v", got)
	}
	ds, err := s.Delegations(ctx, "r-1")
	if err != nil || len(ds) != 1 || ds[0].SessionID != "s-2" || ds[0].Result != result {
		t.Fatalf("delegations after the migration: %+v, %v", ds, err)
	}
	next := got[1]
	next.Status, next.Result = "completed", "done"
	d := ds[0]
	d.Status = "completed"
	if err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.UpsertSession(&next); err != nil {
			return err
		}
		return tx.UpsertDelegation(&d)
	}); err != nil {
		t.Fatal(err)
	}
	if got := sessions(); len(got) != 2 || got[1].Status != "completed" || got[1].Result != "done" || got[0].Result != result {
		t.Errorf("sessions after writing s-2 again: %+v", got)
	}
	if ds, err := s.Delegations(ctx, "r-1"); err != nil || len(ds) != 1 || ds[0].Status != "completed" {
		t.Errorf("delegations after writing d-1 again: %+v, %v", ds, err)
	}
}

// Migration 9 records whether a person can answer a run's questions: a
// run stored before it assumes one, as it did, and the record is written
// with the run and when it changes.
func TestRunsRecordWhetherAPersonCanAnswerThroughMigration9(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v1.db")
	makeVersion1(t, path,
		`INSERT INTO runs (id, goal, status, created_at, updated_at) VALUES ('r-old', 'the goal', 'running', '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')`)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	run := func(id string) *Run {
		t.Helper()
		r, err := s.Run(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	old := run("r-old")
	if old.HumanAbsent {
		t.Errorf("a run stored before migration 9 reads as having nobody to answer")
	}
	old.HumanAbsent = true
	fresh := &Run{ID: "r-new", Goal: "g", Status: "running", HumanAbsent: true, CreatedAt: time.Now()}
	if err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.UpdateRun(old); err != nil {
			return err
		}
		return tx.InsertRun(fresh)
	}); err != nil {
		t.Fatal(err)
	}
	if !run("r-old").HumanAbsent || !run("r-new").HumanAbsent {
		t.Fatalf("written as having nobody to answer, read back as %v and %v", run("r-old").HumanAbsent, run("r-new").HumanAbsent)
	}
	back := run("r-new")
	back.HumanAbsent = false // resumed where a person answers
	if err := s.Do(ctx, func(tx *Tx) error { return tx.UpdateRun(back) }); err != nil {
		t.Fatal(err)
	}
	if run("r-new").HumanAbsent {
		t.Errorf("a run resumed where a person answers still reads as having nobody to answer")
	}
}

// makeVersion1 writes a database as version 1 of the schema left it, with
// the given statements run on it after.
func makeVersion1(t *testing.T, path string, then ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	v1, err := migrations.ReadFile("migrations/0001_init.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range append([]string{string(v1), "PRAGMA user_version = 1"}, then...) {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
}

func TestSchemaVersion(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   int
		ok     bool
	}{
		{"-- about\n-- version: 6\nCREATE TABLE t (a);", 6, true},
		{"  -- version: 12  \n", 12, true},
		{"-- version: six\n", 0, false},
		{"CREATE TABLE t (a);", 0, false},
		{"", 0, false},
	} {
		v, ok := schemaVersion(tc.script)
		if v != tc.want || ok != tc.ok {
			t.Errorf("schemaVersion(%q) = %d, %v; want %d, %v", tc.script, v, ok, tc.want, tc.ok)
		}
	}
}
