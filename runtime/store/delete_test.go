package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// crossRunTables are the tables without a run_id column, and what deleting
// a run does to them.
var crossRunTables = map[string]string{
	"runs":            "the run's row goes (keyed by id)",
	"shared_contents": "the texts only the run refers to go",
	"human_answers":   "kept: the person's answers by question, for every later run",
}

// schemaTables lists the database's tables, and which have a run_id column.
func schemaTables(t *testing.T, s *Store) (all []string, perRun map[string]bool) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.read.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		all = append(all, n)
	}
	rows.Close()
	perRun = map[string]bool{}
	for _, n := range all {
		for _, c := range tableColumns(t, s, n) {
			if c.name == "run_id" {
				perRun[n] = true
			}
		}
	}
	return all, perRun
}

type column struct {
	name, typ string
}

func tableColumns(t *testing.T, s *Store, table string) []column {
	t.Helper()
	rows, err := s.read.QueryContext(context.Background(), `SELECT name, type FROM pragma_table_info(?) ORDER BY cid`, table)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var c column
		rows.Scan(&c.name, &c.typ)
		out = append(out, c)
	}
	return out
}

// fillRun gives run a row in every table that has a run_id column, of
// whatever shape the schema says (so a table added later is filled too),
// with its messages and inbox items referring to the shared texts refs.
func fillRun(t *testing.T, s *Store, run string, refs ...int64) {
	t.Helper()
	_, perRun := schemaTables(t, s)
	err := s.Do(context.Background(), func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: run, Goal: "goal of " + run, Status: "completed", CreatedAt: time.Now()}); err != nil {
			return err
		}
		for table := range perRun {
			cols := tableColumns(t, s, table)
			for i := range max(len(refs), 1) {
				var names []string
				var args []any
				for _, c := range cols {
					names = append(names, c.name)
					switch {
					case c.name == "run_id":
						args = append(args, run)
					case c.name == "content_ref" && len(refs) > 0:
						args = append(args, refs[i])
					case strings.Contains(strings.ToUpper(c.typ), "INT"):
						args = append(args, nextValue())
					default:
						args = append(args, fmt.Sprint("v", nextValue()))
					}
				}
				q := `INSERT INTO ` + table + ` (` + strings.Join(names, ", ") + `) VALUES (?` + strings.Repeat(", ?", len(names)-1) + `)`
				if _, err := tx.exec(q, args...); err != nil {
					return fmt.Errorf("%s: %w", table, err)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

var valueSeq int64

func nextValue() int64 { valueSeq++; return valueSeq }

// rowsOf dumps every row of a table that the condition picks, as text.
func rowsOf(t *testing.T, s *Store, table, where string, args ...any) []string {
	t.Helper()
	rows, err := s.read.QueryContext(context.Background(), `SELECT * FROM `+table+` WHERE `+where, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v", vals))
	}
	slices.Sort(out)
	return out
}

func insertShared(t *testing.T, s *Store, ids ...int64) {
	t.Helper()
	err := s.Do(context.Background(), func(tx *Tx) error {
		for _, id := range ids {
			if _, err := tx.exec(`INSERT INTO shared_contents (id, content) VALUES (?, ?)`, id, fmt.Sprint("shared text ", id)); err != nil {
				return err
			}
		}
		_, err := tx.exec(`INSERT INTO human_answers (question_key, answer, updated_at) VALUES ('which colour?', 'blue', '2026-01-01T00:00:00Z')`)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A deleted run leaves no row in any table the schema has, and the rows
// of the other runs, the texts they share and the remembered answers stay
// as they were.
func TestDeleteRunLeavesNoRow(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	all, perRun := schemaTables(t, s)
	for _, table := range all {
		if !perRun[table] && crossRunTables[table] == "" {
			t.Errorf("table %s has no run_id column: decide what deleting a run does to it (Tx.DeleteRun), and say so in crossRunTables", table)
		}
	}
	var listed []string
	for table := range perRun {
		listed = append(listed, table)
	}
	slices.Sort(listed)
	if want := slices.Sorted(slices.Values(runTables)); !slices.Equal(listed, want) {
		t.Errorf("the tables with a run_id column are %v, but Tx.DeleteRun clears %v", listed, want)
	}
	// 1 is the gone run's alone, 2 the kept run's, 3 both's; 4 nobody's.
	insertShared(t, s, 1, 2, 3, 4)
	fillRun(t, s, "r-00000a", 1, 3)
	fillRun(t, s, "r-00000b", 2, 3)
	keep := map[string][]string{}
	for _, table := range all {
		if perRun[table] {
			if len(rowsOf(t, s, table, "run_id = ?", "r-00000a")) == 0 {
				t.Fatalf("%s holds no row of the run to delete: the test shows nothing", table)
			}
			keep[table] = rowsOf(t, s, table, "run_id <> ?", "r-00000a")
		} else {
			keep[table] = rowsOf(t, s, table, "1")
		}
	}

	n, err := s.DeleteRun(ctx, "r-00000a")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1 + 1 + 2*len(runTables)); n != want {
		t.Errorf("DeleteRun removed %d rows, want %d", n, want)
	}
	for _, table := range all {
		if perRun[table] {
			if left := rowsOf(t, s, table, "run_id = ?", "r-00000a"); len(left) > 0 {
				t.Errorf("%s still holds %d rows of the deleted run", table, len(left))
			}
			if got := rowsOf(t, s, table, "1"); !slices.Equal(got, keep[table]) {
				t.Errorf("%s: the other run's rows changed:\n got %v\nwant %v", table, got, keep[table])
			}
			continue
		}
		got := rowsOf(t, s, table, "1")
		want := keep[table]
		switch table {
		case "runs":
			want = slices.DeleteFunc(slices.Clone(want), func(r string) bool { return strings.HasPrefix(r, "[r-00000a ") })
		case "shared_contents":
			want = slices.DeleteFunc(slices.Clone(want), func(r string) bool { return strings.HasPrefix(r, "[1 ") })
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s after the delete:\n got %v\nwant %v", table, got, want)
		}
	}
	if _, err := s.Run(ctx, "r-00000a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the deleted run still loads: %v", err)
	}
	if _, err := s.DeleteRun(ctx, "r-00000a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("a refused delete stopped the store: %v", err)
	}
	// The same id stored again starts a run of its own: its events count
	// from 1, not on from the deleted run's.
	err = s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: "r-00000a", Goal: "again", Status: "running", CreatedAt: time.Now()}); err != nil {
			return err
		}
		seq, err := tx.LastSeq("r-00000a")
		if seq != 0 {
			return fmt.Errorf("a new run under a deleted run's id has last event %d", seq)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setRunTimes dates a run's row, sessions and messages at t.
func setRunTimes(t *testing.T, s *Store, run string, at time.Time) {
	t.Helper()
	err := s.Do(context.Background(), func(tx *Tx) error {
		for _, q := range []string{
			`UPDATE runs SET created_at = ?1, updated_at = ?1 WHERE id = ?2`,
			`UPDATE sessions SET created_at = ?1, updated_at = ?1 WHERE run_id = ?2`,
			`UPDATE messages SET created_at = ?1 WHERE run_id = ?2`,
		} {
			if _, err := tx.exec(q, Time(at), run); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// IdleRuns picks the runs by when they were last written to: the row, a
// session or a message, whichever is latest.
func TestIdleRunsByLastWrite(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, r := range []string{"r-00000a", "r-00000b", "r-00000c"} {
		fillRun(t, s, r)
	}
	setRunTimes(t, s, "r-00000a", now.Add(-40*24*time.Hour))
	setRunTimes(t, s, "r-00000b", now.Add(-40*24*time.Hour))
	setRunTimes(t, s, "r-00000c", now.Add(-time.Hour))
	// b started long ago, but one of its sessions wrote yesterday.
	err := s.Do(ctx, func(tx *Tx) error {
		_, err := tx.exec(`UPDATE sessions SET updated_at = ? WHERE run_id = 'r-00000b'`, Time(now.Add(-24*time.Hour)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ids := func(cutoff time.Time) []string {
		idle, err := s.IdleRuns(ctx, cutoff)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range idle {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	for _, c := range []struct {
		age  time.Duration
		want []string
	}{
		{30 * 24 * time.Hour, []string{"r-00000a"}},
		{12 * time.Hour, []string{"r-00000a", "r-00000b"}},
		{time.Minute, []string{"r-00000a", "r-00000b", "r-00000c"}},
		{50 * 24 * time.Hour, nil},
	} {
		if got := ids(now.Add(-c.age)); !slices.Equal(got, c.want) {
			t.Errorf("idle for %s: %v, want %v", c.age, got, c.want)
		}
	}
}

// bigRun stores a run with about size bytes of messages.
func bigRun(t *testing.T, s *Store, run string, size int) {
	t.Helper()
	fillRun(t, s, run)
	text := strings.Repeat("a long tool result ", 1000)
	err := s.Do(context.Background(), func(tx *Tx) error {
		for i := 0; i*len(text) < size; i++ {
			if _, err := tx.exec(`INSERT INTO messages (id, run_id, session_id, idx, role, content, created_at) VALUES (?, ?, 's-1', ?, 'tool', ?, ?)`,
				nextValue(), run, 100+i, text, Time(time.Now())); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Compact gives a deleted run's space back to the file system, and while
// another process has the database open it gives up without waiting long
// and without touching the file: the deletion stands.
func TestCompactGivesSpaceBackWhenAlone(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	bigRun(t, s, "r-00000a", 4<<20)
	bigRun(t, s, "r-00000b", 64<<10)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	full := FileSize(path)
	if full < 4<<20 {
		t.Fatalf("the database is %d bytes, want over 4 MiB", full)
	}
	if did, err := Compact(ctx, path, CompactOptions{Wait: time.Second}); err != nil || did {
		t.Fatalf("Compact with no free page: %v, %v; want false, nil", did, err)
	}

	// Another process with the database open: here another Store, one
	// that only reads and one that runs runs. (A reader that opened the
	// database while no process had it open reads it as a file that does
	// not change, and takes no lock: it cannot be told of.)
	for i, open := range []func(string) (*Store, error){OpenReadOnly, func(p string) (*Store, error) { return Open(p, nil) }} {
		s, err = Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			if _, err := s.DeleteRun(ctx, "r-00000a"); err != nil {
				t.Fatal(err)
			}
		}
		other, err := open(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := other.Runs(ctx, 0); err != nil {
			t.Fatal(err)
		}
		s.Close()
		start := time.Now()
		did, err := Compact(ctx, path, CompactOptions{Wait: 100 * time.Millisecond, Rewriting: func() { t.Error("Compact rewrites a database open elsewhere") }})
		if !errors.Is(err, ErrInUse) || did {
			t.Fatalf("Compact beside another connection: %v, %v; want ErrInUse", did, err)
		}
		if waited := time.Since(start); waited > 3*time.Second {
			t.Errorf("Compact waited %s for the other connection", waited)
		}
		if runs, err := other.Runs(ctx, 0); err != nil || len(runs) != 1 || runs[0].ID != "r-00000b" {
			t.Fatalf("after a refused Compact the other connection reads %v, %v", runs, err)
		}
		other.Close()
	}

	rewriting := false
	did, err := Compact(ctx, path, CompactOptions{Wait: time.Second, Rewriting: func() { rewriting = true }})
	if err != nil || !did || !rewriting {
		t.Fatalf("Compact alone: %v, %v (told of the rewrite: %v)", did, err, rewriting)
	}
	if after := FileSize(path); after > full/4 {
		t.Errorf("the database is %d bytes after Compact, %d before the delete", after, full)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if ms, err := s.Messages(ctx, "r-00000b", "s-1", 0, 0); err != nil || len(ms) == 0 {
		t.Errorf("the kept run's messages after Compact: %d, %v", len(ms), err)
	}
}

// A database that another connection holds whole, as Compact does, makes
// Open give up with "database is locked" after about one lock wait: each
// of its tries waited a whole lock wait, and a held database was said
// after minutes.
func TestOpenGivesUpOnAHeldDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	holder, err := sql.Open("sqlite", fileURI(path)+"?_pragma=locking_mode(EXCLUSIVE)")
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	c, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE; SELECT count(*) FROM runs; COMMIT"); err != nil {
		t.Fatal(err)
	}
	saved := lockWait
	lockWait = 200 * time.Millisecond
	defer func() { lockWait = saved }()
	start := time.Now()
	s, err = Open(path, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open took a database another connection holds")
	}
	if !IsBusy(err) {
		t.Errorf("Open of a held database: %v; want database is locked", err)
	}
	// Generous: one wait is 200 ms, and one per try came to 7 s.
	if waited := time.Since(start); waited > 10*lockWait {
		t.Errorf("Open waited %s for a held database, with a lock wait of %s", waited, lockWait)
	}
}

// heldDatabase opens a store at a new path with o, while another
// connection holds the database's write lock, with the lock wait
// shortened; release lets the lock go, as the test's end does.
func heldDatabase(t *testing.T, o OpenOptions) (s *Store, path string, release func()) {
	t.Helper()
	ctx := context.Background()
	saved := lockWait
	lockWait = 100 * time.Millisecond
	t.Cleanup(func() { lockWait = saved })
	path = filepath.Join(t.TempDir(), "t.db")
	s, err := OpenWith(path, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	holder, err := sql.Open("sqlite", fileURI(path))
	if err != nil {
		t.Fatal(err)
	}
	c, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := c.ExecContext(ctx, "ROLLBACK"); err != nil {
				t.Error(err)
			}
			c.Close()
			holder.Close()
		})
	}
	t.Cleanup(release)
	return s, path, release
}

// insertRun stores a run r-1 and waits for the commit.
func insertRun(s *Store) error {
	return s.Do(context.Background(), func(tx *Tx) error {
		return tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: time.Now()})
	})
}

// With OpenOptions.Busy, a database that another connection keeps locked
// past the lock wait (a process stopped while it writes) is waited for,
// said, and written once it is free: nothing of the batch was written, and
// failing would stop every run of the process.
func TestWriterWaitsForAHeldDatabase(t *testing.T) {
	type notice struct {
		waiting bool
		why     string
	}
	told := make(chan notice, 8)
	s, path, release := heldDatabase(t, OpenOptions{Busy: func(waiting bool, why string) { told <- notice{waiting, why} }})
	done := make(chan error, 1)
	go func() { done <- insertRun(s) }()
	select {
	case n := <-told:
		if !n.waiting || !strings.Contains(n.why, "another process has kept the database "+path+" locked") {
			t.Fatalf("told %+v, want a wait with who may hold the database", n)
		}
	case err := <-done:
		t.Fatalf("the write ended (%v) while another connection held the database", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not told of the wait")
	}
	// Several lock waits later, it is still waiting.
	select {
	case err := <-done:
		t.Fatalf("the write gave up: %v", err)
	case <-time.After(5 * lockWait):
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("the write after the database was let go: %v", err)
	}
	if n := <-told; n.waiting {
		t.Errorf("told %+v, want that the wait is over", n)
	}
	select {
	case n := <-told:
		t.Errorf("told %+v as well: a wait is told once, and its end once", n)
	default:
	}
	if err := s.Err(); err != nil {
		t.Errorf("the store failed: %v", err)
	}
	if r, err := s.Run(context.Background(), "r-1"); err != nil || r.Goal != "g" {
		t.Errorf("the run written after the wait: %+v, %v", r, err)
	}
}

// Without it, the writer gives up after the lock wait, and says so.
func TestWriterWithoutBusyGivesUp(t *testing.T) {
	s, _, _ := heldDatabase(t, OpenOptions{})
	if err := insertRun(s); !IsBusy(err) {
		t.Errorf("write to a held database: %v, want database is locked", err)
	}
}

// A wait given up before it has lasted the lock wait is never told: the
// person who stopped it is not then told that it waits.
func TestWaitGivenUpEarlyIsNotTold(t *testing.T) {
	giveUp := make(chan struct{})
	told := make(chan bool, 8)
	s, _, _ := heldDatabase(t, OpenOptions{GiveUp: giveUp, Busy: func(w bool, _ string) { told <- w }})
	done := make(chan error, 1)
	go func() { done <- insertRun(s) }()
	time.Sleep(lockWait / 5)
	close(giveUp)
	if err := <-done; !IsBusy(err) {
		t.Errorf("the write given up: %v, want database is locked", err)
	}
	select {
	case w := <-told:
		t.Errorf("told (waiting %v) of a wait given up before the lock wait", w)
	default:
	}
}

// A ctrl+c in the first seconds of a wait ends it within a try (a
// second), not after the whole lock wait of SQLite's own busy timeout.
func TestWaitGivenUpEarlyEndsSoon(t *testing.T) {
	s, path, _ := heldDatabase(t, OpenOptions{})
	s.Close()
	lockWait = BusyTimeout
	giveUp := make(chan struct{})
	s, err := OpenWith(path, nil, OpenOptions{GiveUp: giveUp, Busy: func(bool, string) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() { done <- insertRun(s) }()
	time.Sleep(50 * time.Millisecond)
	close(giveUp)
	select {
	case err := <-done:
		if !IsBusy(err) {
			t.Errorf("the write given up: %v, want database is locked", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a wait given up early went on for the whole lock wait")
	}
}

// A store that wrote nothing closes at once on a database another process
// holds: its closing checkpoint has nothing of its own to fold back, and
// waiting for the holder made a prune with nothing to delete take 12 s.
func TestCloseWithoutWritesDoesNotWaitForAHolder(t *testing.T) {
	s, _, release := heldDatabase(t, OpenOptions{})
	s.Close()
	// Opened again with the whole lock wait, as a prune opens it.
	lockWait = BusyTimeout
	s, err := OpenWith(s.Path(), nil, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		release()
		<-closed
		t.Fatal("Close waited for the process holding the database, with nothing written")
	}
}

// A wait for a held database ends when GiveUp is closed (a ctrl+c): what
// waited fails, saying the database is locked.
func TestWriterGivesUpWhenAsked(t *testing.T) {
	giveUp := make(chan struct{})
	waiting := make(chan struct{}, 1)
	s, _, _ := heldDatabase(t, OpenOptions{GiveUp: giveUp, Busy: func(w bool, _ string) {
		if w {
			waiting <- struct{}{}
		}
	}})
	done := make(chan error, 1)
	go func() { done <- insertRun(s) }()
	<-waiting
	close(giveUp)
	select {
	case err := <-done:
		if !IsBusy(err) {
			t.Errorf("the write given up: %v, want database is locked", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait went on after GiveUp was closed")
	}
}
