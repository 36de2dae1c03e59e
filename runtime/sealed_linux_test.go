//go:build linux

package runtime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/internal/proclocks"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// heldLocks counts the POSIX locks this process holds on the file at path
// that start at byte start.
func heldLocks(t *testing.T, path string, start int64) int {
	t.Helper()
	n, err := proclocks.Held(os.Getpid(), path, start)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// With the database inside the workspace (the default workspace is the
// current directory, and the default database under ~/.local), the file
// tools leave it alone: closing any descriptor of a file drops every POSIX
// lock the process holds on it, so a read or a search of the database
// unlocked it under the run, and another process then deleted its WAL.
func TestFileToolsLeaveTheDatabaseAlone(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if c.turns == 0 {
			return do(
				call("read_file", obj{"path": "swarmdeck.db"}),
				call("read_file", obj{"path": "swarmdeck.db-shm"}),
				call("search_files", obj{"query": "SQLite format"}),
			)
		}
		return say("done")
	})
	var dir string
	e := testEngine(t, nil, p, func(cfg *config.Config) {
		dir = filepath.Dir(cfg.Workspace) // where the database is
		cfg.Workspace = dir
	})
	db := filepath.Join(dir, "swarmdeck.db")
	// A hard link is the same file under another name.
	if err := os.Link(db, filepath.Join(dir, "copy.db")); err != nil {
		t.Fatal(err)
	}
	shmBefore := heldLocks(t, db+"-shm", 128)
	if shmBefore == 0 {
		t.Fatalf("the process holds no lock on byte 128 of %s-shm to begin with", db)
	}
	_, code := headless(t, e, "look at the files", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	root := rootOf(x)
	reads := toolResults(root, "read_file")
	if len(reads) != 2 {
		t.Fatalf("read_file results: %v", reads)
	}
	for _, r := range reads {
		if !strings.Contains(toolError(r), "is swarmdeck's own database, which the file tools leave alone") {
			t.Errorf("read_file of the database: %s", r)
		}
	}
	search := toolResults(root, "search_files")[0]
	for _, name := range []string{"swarmdeck.db", "swarmdeck.db-wal", "swarmdeck.db-shm", "copy.db"} {
		if strings.Contains(search, `"path":"`+name+`","line"`) {
			t.Errorf("the search read %s: %s", name, search)
		}
	}
	if !strings.Contains(search, `{"path":"copy.db","reason":"it is swarmdeck's own database, which the file tools leave alone"}`) {
		t.Errorf("the search does not say it left the database's other name alone: %s", search)
	}
	if got := heldLocks(t, db+"-shm", 128); got != shmBefore {
		t.Errorf("after the file tools the process holds %d locks on byte 128 of the -shm, where it held %d", got, shmBefore)
	}
}
