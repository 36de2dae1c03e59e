package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// A database of another program given as --db is refused by Open and by
// OpenReadOnly, and left as it was: no swarmdeck tables written into it,
// its journal mode not turned to WAL.
func TestForeignDatabaseIsRefusedAndLeftAlone(t *testing.T) {
	tests := []struct {
		name  string
		setup []string
	}{
		{"rollback journal", []string{"CREATE TABLE notes (body TEXT)"}},
		{"WAL", []string{"PRAGMA journal_mode = WAL", "CREATE TABLE notes (body TEXT)"}},
		{"a version of its own", []string{"PRAGMA user_version = 3", "CREATE TABLE notes (body TEXT)"}},
		{"a version past swarmdeck's", []string{"PRAGMA user_version = 400", "CREATE TABLE notes (body TEXT)"}},
		{"a view only", []string{"CREATE VIEW one AS SELECT 1"}},
		{"swarmdeck's latest version", []string{"PRAGMA user_version = " + strconv.Itoa(latestVersion(t)), "CREATE TABLE notes (body TEXT)"}},
		{"a runs table of its own", []string{"PRAGMA user_version = 3", "CREATE TABLE runs (id INTEGER, started TEXT)"}},
		{"a runs table of its own in WAL", []string{"PRAGMA journal_mode = WAL", "PRAGMA user_version = 5", "CREATE TABLE runs (id INTEGER, started TEXT)"}},
		{"a runs table with a goal", []string{"PRAGMA user_version = 3", "CREATE TABLE runs (id TEXT PRIMARY KEY, goal TEXT, status TEXT)"}},
		{"runs, sessions and messages of its own", []string{"PRAGMA user_version = 9", "CREATE TABLE runs (id TEXT PRIMARY KEY, goal TEXT)",
			"CREATE TABLE sessions (id TEXT, run_id TEXT)", "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, content TEXT)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.db")
			db, err := sql.Open("sqlite", fileURI(path))
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range tt.setup {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			before := schemaOf(t, db)
			db.Close()
			mode := journalMode(t, path)

			if st, err := OpenReadOnly(path); !errors.Is(err, ErrForeign) {
				if st != nil {
					st.Close()
				}
				t.Fatalf("OpenReadOnly: %v, want ErrForeign", err)
			}
			if st, err := Open(path, nil); !errors.Is(err, ErrForeign) {
				if st != nil {
					st.Close()
				}
				t.Fatalf("Open: %v, want ErrForeign", err)
			}
			if _, err := Compact(context.Background(), path, CompactOptions{}); !errors.Is(err, ErrForeign) {
				t.Fatalf("Compact: %v, want ErrForeign", err)
			}
			db, err = sql.Open("sqlite", fileURI(path))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if after := schemaOf(t, db); !slices.Equal(after, before) {
				t.Errorf("schema after the refusals %v, want it left as %v", after, before)
			}
			if got := journalMode(t, path); got != mode {
				t.Errorf("journal mode %s after the refusals, want it left as %s", got, mode)
			}
		})
	}
}

// A new database that another process is making (its schema not
// committed yet) has no schema for a reader: it is neither another
// program's nor an older swarmdeck's.
func TestDatabaseBeingMadeHasNoSchemaYet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	maker, err := sql.Open("sqlite", fileURI(path)+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer maker.Close()
	ctx := context.Background()
	conn, err := maker.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{"BEGIN IMMEDIATE", "CREATE TABLE runs (id TEXT)", "CREATE TABLE messages (id TEXT)"} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	st, err := OpenReadOnly(path)
	if st != nil {
		st.Close()
	}
	if !errors.Is(err, ErrNoSchema) || errors.Is(err, ErrOldSchema) || errors.Is(err, ErrForeign) {
		t.Fatalf("OpenReadOnly of a database being made: %v, want ErrNoSchema alone", err)
	}
}

func latestVersion(t *testing.T) int {
	t.Helper()
	all, err := migrationList()
	if err != nil {
		t.Fatal(err)
	}
	return all[len(all)-1].version
}

func schemaOf(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query("SELECT type || ' ' || name FROM sqlite_master ORDER BY name")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// journalMode is the mode the database file's header says: WAL or a
// rollback journal.
func journalMode(t *testing.T, path string) string {
	t.Helper()
	header := make([]byte, 20)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Read(header); err != nil {
		t.Fatal(err)
	}
	if header[18] == 2 {
		return "wal"
	}
	return "rollback"
}
