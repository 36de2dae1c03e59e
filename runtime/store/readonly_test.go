package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// storeOneRun makes a database at path holding one completed run, r-1,
// and closes it.
func storeOneRun(t *testing.T, path string) {
	t.Helper()
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Do(context.Background(), func(tx *Tx) error {
		return tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "completed", CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	w.Close()
}

// A database opened read-only is read without writing anything: not the
// file, and nothing left beside it. One the user may write is read with
// SQLite's locks (their -wal and -shm exist while it is open, and go with
// it); one the user may only read is read as it is (see
// TestRunsAndExportReadADatabaseTheUserMayOnlyRead, which runs as another
// user: here the tests may write every file).
func TestOpenReadOnlyWritesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	storeOneRun(t, path)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := dirNames(t, dir)

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := r.Runs(ctx, 0)
	if err != nil || len(runs) != 1 || runs[0].ID != "r-1" {
		t.Errorf("runs read: %v, %v", runs, err)
	}
	if x, err := r.Export(ctx, "r-1"); err != nil || x.Run.Goal != "g" {
		t.Errorf("export: %v", err)
	}
	if err := r.Do(ctx, func(tx *Tx) error { return nil }); !errors.Is(err, ErrReadOnly) {
		t.Errorf("a write on a read-only store: %v", err)
	}
	if r.Immutable() {
		t.Error("a database the user may write is read as immutable, without locks")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if got := dirNames(t, dir); !slices.Equal(got, names) {
		t.Errorf("after reading, the directory holds %v; before, %v", got, names)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Error("reading changed the database file")
	}
}

// While a process has the database open, what it has written is read too,
// from its write-ahead log.
func TestOpenReadOnlySeesALiveWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Do(ctx, func(tx *Tx) error {
		return tx.InsertRun(&Run{ID: "r-live", Goal: "g", Status: "running", CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := r.Run(ctx, "r-live"); err != nil {
		t.Errorf("the live writer's run: %v", err)
	}
	if err := w.Do(ctx, func(tx *Tx) error {
		return tx.InsertRun(&Run{ID: "r-later", Goal: "g", Status: "running", CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, "r-later"); err != nil {
		t.Errorf("a run written after the read-only open: %v", err)
	}
	if r.Immutable() {
		t.Error("a database a process writes is read as immutable")
	}
	// The last event's number, which a viewer follows from, is read
	// without a writer.
	if err := w.Do(ctx, func(tx *Tx) error {
		_, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: "r-later"})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if seq, err := r.LastSeq(ctx, "r-later"); err != nil || seq != 1 {
		t.Errorf("last event of the run: %d, %v; want 1", seq, err)
	}
	if seq, err := r.LastSeq(ctx, "r-none"); err != nil || seq != 0 {
		t.Errorf("last event of a run without any: %d, %v; want 0", seq, err)
	}
}

// What cannot be read is said by name, and nothing is created.
func TestOpenReadOnlyRefusals(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	if _, err := OpenReadOnly(missing); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("a database that does not exist: %v", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reading %s made it", missing)
	}
	if _, err := OpenReadOnly(dir); err == nil || !strings.Contains(err.Error(), dir+" is a directory") {
		t.Errorf("a directory: %v", err)
	}
	// A database of an older schema cannot be read by this swarmdeck's
	// queries until it is upgraded, which OpenReadOnly does not do.
	old := filepath.Join(dir, "old.db")
	makeVersion1(t, old)
	if _, err := OpenReadOnly(old); !errors.Is(err, ErrOldSchema) || !strings.Contains(err.Error(), old) {
		t.Errorf("an older schema: %v", err)
	}
}

// The reads of a Snapshot see the database as at the first of them, while
// the writer goes on; reads outside it see the writes.
func TestSnapshotReadsOneMoment(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "t.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(id string) {
		t.Helper()
		if err := s.Do(ctx, func(tx *Tx) error {
			if err := tx.InsertRun(&Run{ID: id, Goal: "g", Status: "running", CreatedAt: time.Now()}); err != nil {
				return err
			}
			_, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: "r-1"})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	write("r-1")
	err = s.Snapshot(ctx, func(ctx context.Context) error {
		if seq, err := s.LastSeq(ctx, "r-1"); err != nil || seq != 1 {
			t.Errorf("first read: last event %d, %v; want 1", seq, err)
		}
		write("r-2") // committed by the writer while the snapshot is open
		if seq, err := s.LastSeq(ctx, "r-1"); err != nil || seq != 1 {
			t.Errorf("a read after a commit: last event %d, %v; want 1 as at the first read", seq, err)
		}
		if _, err := s.Run(ctx, "r-2"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a run written after the first read: %v; want not found", err)
		}
		if seq, err := s.LastSeq(context.Background(), "r-1"); err != nil || seq != 2 {
			t.Errorf("a read outside the snapshot: last event %d, %v; want 2", seq, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(ctx, "r-2"); err != nil {
		t.Errorf("after the snapshot: %v", err)
	}
}

// A reader of a database no process had open holds SQLite's locks, so that
// a compaction (delete, prune) does not rewrite the file under it: it waits
// for the reader, and gives up in use. Read without locks, the reader saw
// the file half rewritten ("malformed"), or a run without its broadcasts.
func TestCompactWaitsForAReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	w, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"r-keep", "r-gone"} {
		if err := w.Do(ctx, func(tx *Tx) error {
			if err := tx.InsertRun(&Run{ID: id, Goal: "g", Status: "completed", CreatedAt: time.Now()}); err != nil {
				return err
			}
			for i := range 200 {
				if err := tx.InsertMessage(&Message{RunID: id, SessionID: "s-1", Index: i, Role: "user", Content: strings.Repeat("x", 2000)}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.DeleteRun(ctx, "r-gone"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := os.Stat(path + "-wal"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the database is still open somewhere: %v", err)
	}

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Snapshot(ctx, func(ctx context.Context) error {
		if _, err := r.Run(ctx, "r-keep"); err != nil {
			return err
		}
		compacted, err := Compact(ctx, path, CompactOptions{Wait: 100 * time.Millisecond})
		if compacted || !errors.Is(err, ErrInUse) {
			t.Errorf("Compact while a reader reads = %v, %v; want ErrInUse", compacted, err)
		}
		x, err := r.Export(ctx, "r-keep")
		if err == nil && x.Run.ID != "r-keep" {
			t.Errorf("the export is of %q", x.Run.ID)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	if compacted, err := Compact(ctx, path, CompactOptions{Wait: time.Second}); !compacted || err != nil {
		t.Errorf("Compact once the reader has gone = %v, %v", compacted, err)
	}
}

// A database with two names (hard links) is not written: SQLite keeps its
// log by name, and two processes using the two names damage it. Reading
// it is harmless.
func TestDatabaseWithTwoNamesIsNotWritten(t *testing.T) {
	if goruntime.GOOS == "windows" {
		t.Skip("the number of names is not asked on Windows")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "a.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	other := filepath.Join(dir, "b.db")
	if err := os.Link(path, other); err != nil {
		t.Skip("no hard links here:", err)
	}
	for _, name := range []string{path, other} {
		if s, err := Open(name, nil); err == nil || !strings.Contains(err.Error(), "has 2 names (hard links)") {
			if err == nil {
				s.Close()
			}
			t.Errorf("Open(%s): %v, want a refusal of its second name", name, err)
		}
		if _, err := Compact(context.Background(), name, CompactOptions{Wait: time.Second}); err == nil || !strings.Contains(err.Error(), "hard links") {
			t.Errorf("Compact(%s): %v, want a refusal", name, err)
		}
	}
	r, err := OpenReadOnly(other)
	if err != nil {
		t.Fatalf("reading through the second name: %v", err)
	}
	r.Close()
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, nil)
	if err != nil {
		t.Fatalf("with one name again: %v", err)
	}
	s.Close()
}

// A database path that is a symbolic link into a directory that does not
// exist is said as such; one into a directory that does is followed.
func TestDatabaseLinkIntoNowhere(t *testing.T) {
	dir := t.TempDir()
	link := filepath.Join(dir, "a.db")
	if err := os.Symlink(filepath.Join("gone", "x.db"), link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	if s, err := Open(link, nil); err == nil || !strings.Contains(err.Error(), "is a symbolic link to "+filepath.Join(dir, "gone", "x.db")+", in a directory that does not exist") {
		if err == nil {
			s.Close()
		}
		t.Fatalf("Open through a link into nowhere: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "gone")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the link's target directory was made: %v", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	s, err := Open(link, nil)
	if err != nil {
		t.Fatalf("Open through a link into a directory: %v", err)
	}
	s.Close()
	if _, err := os.Stat(filepath.Join(dir, "gone", "x.db")); err != nil {
		t.Errorf("the database is not where the link points: %v", err)
	}
}

// A database path longer than SQLite opens is refused with its length and
// the limit, where SQLite says only "unable to open database file"; the
// longest it opens is opened, for writing and for reading.
func TestDatabasePathLength(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir()) // /tmp is a link on some systems
	if err != nil {
		t.Fatal(err)
	}
	at := func(n int) string {
		// Directories of 100 bytes, then a file name that makes n.
		p := dir
		for n-len(p) > 200 {
			p = filepath.Join(p, strings.Repeat("d", 99))
		}
		return filepath.Join(p, strings.Repeat("f", n-len(p)-1-len(".db"))+".db")
	}
	longest := at(maxPath)
	if len(longest) != maxPath {
		t.Fatalf("made a path of %d bytes, want %d", len(longest), maxPath)
	}
	s, err := Open(longest, nil)
	if err != nil {
		t.Fatalf("the longest path SQLite opens: %v", err)
	}
	s.Close()
	r, err := OpenReadOnly(longest)
	if err != nil {
		t.Fatalf("the longest path SQLite opens, read: %v", err)
	}
	r.Close()

	tooLong := at(maxPath + 1)
	want := fmt.Sprintf("is %d bytes long as an absolute path with its symbolic links followed (as SQLite follows them), and SQLite opens paths of at most %d", maxPath+1, maxPath)
	if _, err := Open(tooLong, nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a path too long: %v", err)
	}
	// A short link to its directory does not make it shorter for SQLite.
	link := filepath.Join(dir, "l")
	if err := os.Symlink(filepath.Dir(tooLong), link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(link, filepath.Base(tooLong)), nil); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a path too long, through a link to its directory: %v", err)
	}
	if err := os.WriteFile(tooLong, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenReadOnly(tooLong); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a path too long, read: %v", err)
	}
}
