package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A database the engine could open but never write is refused up front,
// by name, instead of at the first write with SQLite's bare "attempt to
// write a readonly database".
func TestCheckWritableNamesTheDatabase(t *testing.T) {
	dir := t.TempDir()
	if err := checkWritable(filepath.Join(dir, "new.db")); err != nil {
		t.Errorf("a database still to be made: %v", err)
	}
	if err := checkWritable(dir); err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("a directory as the database: %v", err)
	}
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files: the permission case needs another user")
	}
	ro := filepath.Join(dir, "ro.db")
	if err := os.WriteFile(ro, nil, 0o444); err != nil {
		t.Fatal(err)
	}
	if err := checkWritable(ro); err == nil || !strings.Contains(err.Error(), "the database "+ro+" is read-only") {
		t.Errorf("a read-only database: %v", err)
	}
	// SQLite makes the database, and the log beside an existing one, in
	// its directory: one that cannot be written is named up front too,
	// instead of failing with "unable to open database file (14)" or
	// "attempt to write a readonly database".
	roDir := filepath.Join(dir, "ro")
	if err := os.Mkdir(roDir, 0o755); err != nil {
		t.Fatal(err)
	}
	existing := filepath.Join(roDir, "existing.db")
	if err := os.WriteFile(existing, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(roDir, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(roDir, 0o755) })
	for _, db := range []string{existing, filepath.Join(roDir, "new.db")} {
		if err := checkWritable(db); err == nil || !strings.Contains(err.Error(), "the directory "+roDir+" of the database "+db+" is read-only") {
			t.Errorf("a database in a read-only directory: %v", err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the check left files behind: %v", entries)
	}
}
