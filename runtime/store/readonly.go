package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/fileerr"
)

// ErrReadOnly is returned by Do and Apply on a store opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("store: the database was opened read-only")

// ErrOldSchema is returned by OpenReadOnly for a database written by an
// older swarmdeck: reading it needs its schema upgraded first, which Open
// does.
var ErrOldSchema = errors.New("the database was written by an older swarmdeck")

// Immutable reports whether the store reads its database as a file that
// does not change (see OpenReadOnly): what is written to it later is not
// seen, and reading while a process writes it would be unsafe.
func (s *Store) Immutable() bool { return s.immutable }

// OpenReadOnly opens an existing database for reading only, for commands
// that list or print what is stored: it writes nothing, so a database the
// user may only read (its file, or the directory it is in) can be read,
// and one that does not exist is not created.
//
// SQLite reads a WAL database through its -wal and -shm files, which
// exist while some process has the database open (a run going on, whose
// latest writes may be only in the -wal).
//   - A user who may write the database and its directory reads it as a
//     writer would, with query_only: with SQLite's locks, so that a process
//     that opens it meanwhile (a new run, a compaction by delete or prune)
//     and this read wait for each other rather than this read seeing the
//     file half rewritten. SQLite makes the -wal and -shm if they are
//     missing, and the last process to close the database removes them.
//   - Anyone else reads through the -wal and -shm as they are; a read-only
//     connection would make them when they are missing and leave them
//     behind, owned by the reader. When they are missing, no process has
//     the database open and all of it is in the main file, which is then
//     read as it is (SQLite's immutable), making nothing beside it.
func OpenReadOnly(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: no database path")
	}
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil, fmt.Errorf("store: an in-memory database (%s) holds nothing to read: give a file", path)
	}
	// SQLite's own "unable to open database file" says neither which file
	// nor why.
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	if err := regularFile(path, info); err != nil {
		return nil, err
	}
	if err := checkLength(path); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the database: %w", err)
	}
	f.Close()
	dsn := fileURI(path) + "?mode=ro&_pragma=" + busyPragma() + "&_pragma=query_only(1)"
	_, err = os.Lstat(path + "-wal")
	immutable := false
	switch {
	case writable(path) && writable(filepath.Dir(path)):
		dsn = fileURI(path) + "?_pragma=" + busyPragma() + "&_pragma=query_only(1)"
	case errors.Is(err, os.ErrNotExist):
		dsn = fileURI(path) + "?mode=ro&immutable=1&_pragma=query_only(1)"
		immutable = true
	}
	read, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	read.SetMaxOpenConns(4)
	var version int
	err = read.QueryRowContext(context.Background(), "PRAGMA user_version").Scan(&version)
	if err != nil && IsFull(err) && !immutable && emptyOrMissing(path+"-wal") {
		// A full disk, where SQLite could not make or grow the -shm file:
		// with nothing in the WAL, all of the database is in its main
		// file, which can be read as it is.
		read.Close()
		if read, err = sql.Open("sqlite", fileURI(path)+"?mode=ro&immutable=1&_pragma=query_only(1)"); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		read.SetMaxOpenConns(4)
		immutable = true
		err = read.QueryRowContext(context.Background(), "PRAGMA user_version").Scan(&version)
	}
	if err != nil {
		read.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	all, err := migrationList()
	if err != nil {
		read.Close()
		return nil, err
	}
	latest := all[len(all)-1].version
	if err := foreign(context.Background(), read, version); err != nil {
		read.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case version == 0:
		read.Close()
		return nil, fmt.Errorf("%s: %w", path, ErrNoSchema)
	case version > latest:
		read.Close()
		return nil, fmt.Errorf("%s: %w", path, newerSchemaError(version, latest))
	case version < latest:
		read.Close()
		return nil, fmt.Errorf("%s: %w (schema version %d; this swarmdeck reads %d)", path, ErrOldSchema, version, latest)
	}
	return &Store{path: path, read: read, readOnly: true, immutable: immutable,
		closing: make(chan struct{}), closed: make(chan struct{}), failed: make(chan struct{})}, nil
}

// emptyOrMissing reports whether the file at path is missing or empty.
func emptyOrMissing(path string) bool {
	info, err := os.Stat(path)
	return errors.Is(err, os.ErrNotExist) || err == nil && info.Size() == 0
}

// regularFile refuses a database path that names something else than a
// file: a directory, a device (/dev/null, which SQLite took for a database
// of an older swarmdeck) or a pipe, whose opening waits for a writer.
func regularFile(path string, info os.FileInfo) error {
	switch {
	case info.Mode().IsRegular():
		return nil
	case info.IsDir():
		return fmt.Errorf("the database %s is a directory: give the database file", path)
	}
	return fmt.Errorf("the database %s is not a file (%s): give the database file", path, fileerr.Kind(info.Mode()))
}

// CheckFile refuses a database path that names something else than a
// file, before anything opens it; a path where nothing is yet passes.
func CheckFile(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return nil // the opening that follows says what is wrong
	}
	return regularFile(path, info)
}

// checkToWrite is CheckFile for a process that will write the database,
// which must have one name only. SQLite finds a database's -wal and -shm
// files, and swarmdeck its run locks, by the name the database is opened
// under: two processes writing one file under two names (hard links) each
// keep a log of their own, and damage it.
func checkToWrite(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return danglingLink(path)
	}
	if err := regularFile(path, info); err != nil {
		return err
	}
	if n := links(info); n > 1 {
		return fmt.Errorf("the database %s has %d names (hard links), and SQLite keeps a database's write-ahead log by name: swarmdeck writes only a database with one name, since two processes using two of them would damage it; remove the other names (`find / -xdev -samefile %s` lists them), or give a copy", path, n, path)
	}
	return nil
}

// danglingLink refuses a database path that is a symbolic link to a file
// in a directory that does not exist, which SQLite can only call "unable
// to open database file". A path where nothing is gets its directories
// made; a link's target, which may be a drive not mounted, does not.
func danglingLink(path string) error {
	target, err := os.Readlink(path)
	if err != nil {
		return nil
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(path), target)
	}
	dir := filepath.Dir(target)
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return fmt.Errorf("the database %s is a symbolic link to %s, in a directory that does not exist (%s): make that directory, or give another database", path, target, dir)
}
