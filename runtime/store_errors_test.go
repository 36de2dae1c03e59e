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
}
