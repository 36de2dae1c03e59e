package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// runTables are the tables that hold rows of one run each, keyed by a
// run_id column. A run's rows are in these, in the runs table itself, and
// in shared_contents (texts its messages and inbox items refer to).
// human_answers belongs to no run: it remembers the person's answers by
// question, for every later run that asks the same.
// TestDeleteRunLeavesNoRow reads the schema to check that this list is
// whole.
var runTables = []string{
	"messages", "inbox", "call_effects", "broadcasts", "plan_tasks",
	"questions", "question_responses", "events", "sessions", "delegations",
}

// deleteSharedSQL removes the shared texts that run ?1 refers to and no
// other run does. Texts are shared within a run only (a run's system
// prompts, one broadcast to many), so the other runs are checked to keep
// their texts whatever may change in how texts are shared.
var deleteSharedSQL = `DELETE FROM shared_contents
	WHERE id IN (SELECT content_ref FROM messages WHERE run_id = ?1 AND content_ref <> 0
		UNION SELECT content_ref FROM inbox WHERE run_id = ?1 AND content_ref <> 0)
	AND id NOT IN (SELECT content_ref FROM messages WHERE run_id <> ?1 AND content_ref <> 0)
	AND id NOT IN (SELECT content_ref FROM inbox WHERE run_id <> ?1 AND content_ref <> 0)`

// DeleteRun removes run id and every row stored for it. Nothing outside
// the database is touched: the caller makes sure no process runs the run
// (its run lock). It returns how many rows were removed; a run that is not
// stored is ErrNotFound.
func (tx *Tx) DeleteRun(id string) (int64, error) {
	var n int64
	del := func(query string, args ...any) error {
		res, err := tx.exec(query, args...)
		if err != nil {
			return err
		}
		k, _ := res.RowsAffected()
		n += k
		return nil
	}
	// Looked up first: an operation that fails after writing stops the
	// store (see Store.run).
	if ok, err := tx.RunExists(id); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("run %q: %w", id, ErrNotFound)
		}
		return 0, err
	}
	if err := del(`DELETE FROM runs WHERE id = ?`, id); err != nil {
		return 0, fmt.Errorf("delete run %s: %w", id, err)
	}
	// Before the messages and inbox items that say which texts are the run's.
	if err := del(deleteSharedSQL, id); err != nil {
		return 0, fmt.Errorf("delete run %s's shared texts: %w", id, err)
	}
	for _, t := range runTables {
		if err := del(`DELETE FROM `+t+` WHERE run_id = ?`, id); err != nil {
			return 0, fmt.Errorf("delete run %s from %s: %w", id, t, err)
		}
	}
	// A run stored again under the same id starts its events afresh.
	s := tx.s
	s.seqMu.Lock()
	if old, had := s.seqs[id]; had {
		s.seqUndo = append(s.seqUndo, seqChange{id, old, had})
		delete(s.seqs, id)
	}
	s.seqMu.Unlock()
	return n, nil
}

// DeleteRun removes run id (a whole id, not a prefix) and everything stored
// for it in one transaction, and returns how many rows that was.
func (s *Store) DeleteRun(ctx context.Context, id string) (int64, error) {
	var n int64
	err := s.Do(ctx, func(tx *Tx) error {
		var err error
		n, err = tx.DeleteRun(id)
		return err
	})
	return n, err
}

// RunActivity is a run with the time it was last written to.
type RunActivity struct {
	Run
	LastWrite time.Time
}

// IdleRuns lists the runs last written to before cutoff (see LastWrite),
// newest first, whatever their status.
func (s *Store) IdleRuns(ctx context.Context, cutoff time.Time) ([]RunActivity, error) {
	var out []RunActivity
	err := s.Snapshot(ctx, func(ctx context.Context) error {
		runs, err := s.Runs(ctx, 0)
		if err != nil {
			return err
		}
		for _, r := range runs {
			if r.UpdatedAt.After(cutoff) || r.UpdatedAt.Equal(cutoff) {
				continue // no need to look further
			}
			last, err := s.LastWrite(ctx, r.ID)
			if err != nil {
				return err
			}
			if last.Before(cutoff) {
				out = append(out, RunActivity{Run: r, LastWrite: last})
			}
		}
		return nil
	})
	return out, err
}

// FileSize is the space the database at path takes: its file and its
// write-ahead log.
func FileSize(path string) int64 {
	var n int64
	for _, p := range []string{path, path + "-wal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n
}

// ErrInUse is Compact's error when another connection has the database
// open: rewriting it would hold up every write of that process, a running
// run's included, for as long as it takes.
var ErrInUse = errors.New("the database is open in another process")

// Compact gives the pages that deleted rows left free back to the file
// system: it rewrites the database at path (VACUUM) and folds the
// write-ahead log back into it. It needs the database to itself, and waits
// up to o.Wait for other connections to close it before it gives up with
// ErrInUse; the free pages are then reused by later writes instead. It
// reports whether there was anything to give back. Close every Store on
// path in this process first.
//
// Readers (runs, export, view) take SQLite's locks when they may write
// the database (see OpenReadOnly): one open now is waited for, and one
// that opens during the rewrite waits for it. A reader that may not write
// the database reads it as a file that does not change, and cannot be; it
// cannot be compacted by such a user either.
func Compact(ctx context.Context, path string, o CompactOptions) (bool, error) {
	// In exclusive locking mode a connection to a database in WAL mode
	// takes an exclusive lock on the file at its first read, which it
	// gets only while no other connection has the database open; it then
	// keeps it, so nothing else opens the database meanwhile.
	if err := checkToWrite(path); err != nil {
		return false, err
	}
	dsn := fileURI(path) + "?_pragma=busy_timeout(" + strconv.FormatInt(o.Wait.Milliseconds(), 10) + ")&_pragma=locking_mode(EXCLUSIVE)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return false, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	c, err := db.Conn(ctx)
	if err != nil {
		return false, inUse(err)
	}
	defer c.Close()
	// Another program's database is not rewritten (see notOurs).
	var version int
	if err := c.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return false, inUse(err)
	}
	if err := foreign(ctx, c, version); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	var free int64
	if err := c.QueryRowContext(ctx, "PRAGMA freelist_count").Scan(&free); err != nil {
		return false, inUse(err)
	}
	if free == 0 {
		return false, nil
	}
	if o.Rewriting != nil {
		o.Rewriting()
	}
	if _, err := c.ExecContext(ctx, "VACUUM"); err != nil {
		return false, inUse(err)
	}
	// The rewritten pages are in the log until they are folded back, and
	// the file is cut to its new size then.
	if _, err := c.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return true, inUse(err)
	}
	return true, nil
}

// CompactOptions are the settings of Compact.
type CompactOptions struct {
	// Wait is how long to wait for other connections to close the
	// database.
	Wait time.Duration
	// Rewriting, when set, is told when the rewrite starts, once the
	// database is Compact's alone: a large one takes a while.
	Rewriting func()
}

// inUse is err, or ErrInUse when it says that another connection holds the
// database.
func inUse(err error) error {
	if IsBusy(err) {
		return fmt.Errorf("%w (%w)", ErrInUse, err)
	}
	return err
}
