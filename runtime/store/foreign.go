package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
)

// ErrNoSchema is returned by OpenReadOnly for a database without
// swarmdeck's schema and without tables of its own: a new one, or one that
// another process is creating right now. Open writes the schema into it.
var ErrNoSchema = errors.New("the database has no swarmdeck schema yet")

// ErrForeign marks a SQLite database of another program: it has tables
// and no swarmdeck schema. swarmdeck neither reads it nor writes its own
// tables into it, where --db most likely names the wrong file.
var ErrForeign = errors.New("not a swarmdeck database")

type foreignError struct{ tables []string }

func (e *foreignError) Error() string {
	return fmt.Sprintf("this SQLite database is not a swarmdeck database: it holds tables of another program (%s) and no swarmdeck schema, "+
		"and swarmdeck writes nothing into it; give --db the file swarmdeck stores its runs in, or a new one", strings.Join(e.tables, ", "))
}

func (e *foreignError) Is(target error) bool { return target == ErrForeign }

// queryer is what notOurs reads through: a connection, a pool or a
// transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// notOurs is the error of a database at the given schema version whose
// tables are another program's, nil for one of swarmdeck's or an empty
// one. swarmdeck sets the version in the transaction that makes its
// tables, so tables at version 0 are another program's; at another
// version (which other programs set too) they are swarmdeck's when they
// hold its runs table, the runs with their goal, and two tables of names
// no other program is likely to use together: call_effects and
// plan_tasks (runs, sessions and messages are common names).
func notOurs(ctx context.Context, q queryer, version int) error {
	rows, err := q.QueryContext(ctx, `SELECT name FROM sqlite_master
		WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite!_%' ESCAPE '!' ORDER BY name`)
	if err != nil {
		return err
	}
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		names = append(names, name)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	if version != 0 && slices.Contains(names, "runs") && slices.Contains(names, "call_effects") && slices.Contains(names, "plan_tasks") {
		rows, err := q.QueryContext(ctx, `SELECT 1 FROM pragma_table_info('runs') WHERE name = 'goal'`)
		if err != nil {
			return err
		}
		ours := rows.Next()
		rows.Close()
		if ours {
			return nil
		}
	}
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return &foreignError{tables: names}
}

// foreign is the error of notOurs when the database is another program's,
// nil otherwise: a schema that cannot be read (a damaged file) is said by
// what reads the database next, as it was before the look.
func foreign(ctx context.Context, q queryer, version int) error {
	if err := notOurs(ctx, q, version); errors.Is(err, ErrForeign) {
		return err
	}
	return nil
}

// refuseForeign looks, before the writer opens the database at path, for
// a database of another program in rollback-journal mode: the writer's
// first act would turn it to WAL. Every database swarmdeck makes is in WAL
// mode, which the file's header says, so the look is a read of 100 bytes
// for those. (A foreign database already in WAL mode is found
// by migrate, under the write lock, before anything is written.)
func refuseForeign(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // missing, or a reason the opening proper reports
	}
	var header [100]byte
	_, err = io.ReadFull(f, header[:])
	f.Close()
	if err != nil || string(header[:16]) != "SQLite format 3\x00" {
		return nil // empty, or no database: SQLite says so
	}
	if header[18] == 2 && header[19] == 2 {
		return nil // WAL
	}
	db, err := sql.Open("sqlite", fileURI(path)+"?mode=ro&_pragma="+busyPragma())
	if err != nil {
		return nil
	}
	defer db.Close()
	ctx := context.Background()
	var version int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return nil // SQLite says why when the writer opens it
	}
	return foreign(ctx, db, version)
}
