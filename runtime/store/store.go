// Package store is swarmdeck's persistence: one SQLite file in WAL mode
// holding runs, sessions, messages, inboxes, broadcasts, plans, delegations,
// questions and the event log.
//
// All writes go through one writer goroutine. Callers hand it operations
// (closures over a Tx); it runs whatever is queued in a single transaction,
// each operation inside its own savepoint, commits, and only then publishes
// the events the operations emitted. Serialising writes this way gives two
// things at once: group commit (hundreds of sessions share one commit), and a
// total order of state changes that the runtime relies on (an operation sees
// the effects of every operation before it).
package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// schema is the whole schema as the migrations leave it, in one script,
// for a new database: replaying the migrations' ALTER TABLEs, each of which
// makes SQLite rewrite and reparse the schema, was 2.5 ms of every first
// start. Its "-- version: N" line says which migration it stands for;
// TestSchemaMatchesMigrations checks that it matches them and rewrites it
// with -update.
//
//go:embed schema.sql
var schema string

// maxBatch bounds how many operations share one transaction.
const maxBatch = 2048

// commitWait is how long a transaction stays open for more operations
// after the last one that joined it, and commitMaxAge how long it stays
// open at most. A wave of sessions (sub-agents starting, answers arriving
// together) sends operations for a few milliseconds; committing once the
// wave has passed, rather than every half millisecond inside it, leaves the
// cores to the sessions on their way to their next model call and writes
// the same hot pages once instead of many times.
const (
	commitWait   = time.Millisecond
	commitMaxAge = 10 * time.Millisecond
)

// Store is an open database.
type Store struct {
	// file is the database file as it was opened: CheckFile compares the
	// file at path with it.
	file os.FileInfo

	path  string
	write *sql.DB // one connection, owned by the writer goroutine
	read  *sql.DB // a small pool for readers (WAL lets them run beside the writer)
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	// batch holds the multi-row inserts, run on the driver (batchstmt.go);
	// named is the argument slice they reuse.
	batch map[string]driver.StmtExecContext
	named []driver.NamedValue

	// readOnly: opened by OpenReadOnly, with read alone and no writer;
	// immutable: and read as a file that does not change.
	readOnly, immutable bool

	publish func([]event.Event)

	ops      chan *op
	closing  chan struct{}
	closed   chan struct{}
	failed   chan struct{} // closed when err is set
	closeMu  sync.Mutex
	isClosed bool

	// Checkpoints run on their own connection, off the writer: folding the
	// WAL back into the database is a tenth of the writer's time otherwise.
	ckpt       *sql.DB
	epoch      time.Time     // lastCommit counts from here
	lastCommit atomic.Int64  // when the last commit ended, in ns since epoch
	writing    atomic.Bool   // the writer has a batch in hand (the queue is len(ops))
	committed  chan struct{} // a commit since the checkpointer last looked (capacity 1)
	// checkpointQuiet and checkpointLatest, or others in tests (set before
	// the first write).
	ckQuiet, ckLatest time.Duration
	checkpoints       atomic.Int64 // checkpoints run
	// restart asks the writer, when idle, to start the WAL afresh after a
	// checkpoint folded all of it back (see restartWAL); restarts counts
	// the times it did.
	restart  chan struct{}
	restarts atomic.Int64
	appID    string // the database's application_id, read by the first restartWAL
	// ckptDone is closed when checkpointLoop has returned: Close waits for
	// a checkpoint in progress before its own.
	ckptDone chan struct{}
	// beforeCheckpoint, when set by a test, runs just before a checkpoint,
	// with the checkpointer's connection taken.
	beforeCheckpoint func(*sql.Conn)

	seqMu    sync.Mutex
	seqs     map[string]int64 // last event sequence per run
	seqUndo  []seqChange      // changes of seqs in the current batch
	msgID    int64            // last message id given out (0: not read yet)
	inboxID  int64            // likewise for inbox items
	sharedID int64            // and for shared contents
	err      error            // a failed commit poisons the store

	busy   func(waiting bool, why string) // OpenOptions.Busy
	giveUp <-chan struct{}                // OpenOptions.GiveUp

	eventBuf   []byte        // the writer's buffer for encoding a commit's events
	coalesce   *time.Timer   // the writer's commitWait timer
	maxAge     time.Duration // commitMaxAge, changed by tests
	commitWait time.Duration // commitWait, or another wait in tests
}

type op struct {
	fn      func(*Tx) error
	done    chan error // receives the outcome after the commit
	ran     chan error // receives the outcome as soon as fn has run
	ranSent bool       // (writer only)
	events  []event.Event
}

// Open opens (creating if needed) the database at path and brings its schema
// up to date. publish receives the events of each committed batch in order;
// it must not block.
func Open(path string, publish func([]event.Event)) (*Store, error) {
	return OpenWith(path, publish, OpenOptions{})
}

// OpenOptions are the rarer settings of OpenWith.
type OpenOptions struct {
	// Upgrading, when set, is told before a database written by an older
	// swarmdeck is brought up to date (schema version from to to), which
	// takes a while in a large one. A new database is not upgraded.
	Upgrading func(path string, from, to int)
	// Busy, when set, makes the writer wait for a database that another
	// process keeps locked past BusyTimeout instead of failing, since
	// nothing of the batch in hand is written yet: it is told when the wait
	// begins (waiting, with why: who holds it, see BusyReason) and when the
	// writer has the database again. Without it the store fails, as a
	// command that is done in a moment should.
	Busy func(waiting bool, why string)
	// GiveUp, when closed, ends such a wait: the person has asked the
	// process to stop (ctrl+c), and what waited fails as without Busy.
	GiveUp <-chan struct{}
}

// OpenWith is Open with options.
func OpenWith(path string, publish func([]event.Event), o OpenOptions) (*Store, error) {
	if path == "" {
		return nil, errors.New("store: no database path")
	}
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		// Readers and the checkpointer open connections of their own, and
		// an in-memory database is private to the connection that made it.
		return nil, fmt.Errorf("store: an in-memory database (%s) cannot be used: give a file, e.g. --db /tmp/swarmdeck.db", path)
	}
	if err := checkToWrite(path); err != nil {
		return nil, err
	}
	if err := checkLength(path); err != nil {
		return nil, err
	}
	_, statErr := os.Stat(path)
	isNew := errors.Is(statErr, os.ErrNotExist)
	if !isNew {
		if err := refuseForeign(path); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	// Absolute, so that the error names the directory in full.
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err) // the current directory is gone
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("could not make the database's directory: %w", err)
	}
	// Looked at before this process opens the database: the look opens
	// and closes its -shm file, and closing any descriptor of a file drops
	// every POSIX lock the process holds on it, SQLite's among them.
	elsewhere := openElsewhere(path)
	dsn := fileURI(path) + "?_pragma=" + busyPragma() + "&_pragma=cache_size(-8192)&_pragma=temp_store(MEMORY)&_pragma=wal_autocheckpoint(0)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(OFF)&_txlock=immediate"
	write, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	write.SetConnMaxIdleTime(0)
	if publish == nil {
		publish = func([]event.Event) {}
	}
	s := &Store{path: path, write: write, stmts: map[string]*sql.Stmt{}, batch: map[string]driver.StmtExecContext{}, publish: publish,
		ops: make(chan *op, 1024), closing: make(chan struct{}), closed: make(chan struct{}), failed: make(chan struct{}), seqs: map[string]int64{}}
	ctx := context.Background()
	// Turning a new database to WAL takes its lock without waiting for it:
	// processes started at once on a new database try again. A database
	// that another process holds makes each try wait BusyTimeout: the
	// tries stop at that much in all, so that a held database is said
	// after the wait every other command has, not after minutes.
	deadline := time.Now().Add(lockWait)
	for wait := 10 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		s.conn, err = write.Conn(ctx)
		if err == nil || !IsBusy(err) || time.Now().Add(wait).After(deadline) {
			break
		}
		time.Sleep(wait)
	}
	if err != nil {
		write.Close()
		if isNew && IsFull(err) {
			removeEmpty(path)
		}
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := s.migrate(ctx, o.Upgrading, elsewhere); err != nil {
		s.conn.Close()
		write.Close()
		if isNew && IsFull(err) {
			removeEmpty(path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s.file, _ = os.Stat(path)
	readDSN := fileURI(path) + "?_pragma=" + busyPragma() + "&_pragma=query_only(1)"
	if s.read, err = sql.Open("sqlite", readDSN); err != nil {
		s.conn.Close()
		write.Close()
		return nil, err
	}
	s.read.SetMaxOpenConns(4)
	ckDSN := fileURI(path) + "?_pragma=" + busyPragma()
	if s.ckpt, err = sql.Open("sqlite", ckDSN); err != nil {
		s.conn.Close()
		write.Close()
		s.read.Close()
		return nil, err
	}
	s.ckpt.SetMaxOpenConns(1)
	s.epoch = time.Now()
	s.committed = make(chan struct{}, 1)
	s.restart = make(chan struct{}, 1)
	s.ckQuiet, s.ckLatest = checkpointQuiet, checkpointLatest
	s.ckptDone = make(chan struct{})
	go s.checkpointLoop()
	s.coalesce = time.NewTimer(time.Hour)
	s.coalesce.Stop()
	s.commitWait, s.maxAge = commitWait, commitMaxAge
	s.busy, s.giveUp = o.Busy, o.GiveUp
	if s.busy != nil {
		// A held database is waited for in waitForLock, which looks
		// for a give-up (a ctrl+c) between tries: each try is short.
		s.conn.ExecContext(ctx, "PRAGMA busy_timeout = "+strconv.FormatInt(min(lockWait, time.Second).Milliseconds(), 10))
	}
	go s.loop()
	return s, nil
}

// maxPath is the longest absolute database path SQLite opens: its own
// limit on a path is 512 bytes, which the name of the database's -journal
// file must fit in too. A longer one fails with a bare "unable to open
// database file".
const maxPath = 512 - len("-journal")

// checkLength refuses a database path that SQLite could not open for its
// length, saying so. SQLite follows symbolic links to the file it opens,
// so the length that counts is that of the real path.
func checkLength(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		abs = real
	} else if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs)) // a database still to make
	}
	if len(abs) <= maxPath {
		return nil
	}
	return fmt.Errorf("the database path %s is %d bytes long as an absolute path with its symbolic links followed (as SQLite follows them), and SQLite opens paths of at most %d: keep the database in a directory of a shorter path", path, len(abs), maxPath)
}

// removeEmpty removes a database this process made and could not write
// its schema into (a full disk), with what SQLite made beside it, as long
// as nothing is in it: a refused start leaves nothing behind.
func removeEmpty(path string) {
	if info, err := os.Stat(path); err != nil || info.Size() != 0 {
		return
	}
	for _, p := range []string{path + "-wal", path + "-shm", path + "-journal"} {
		if info, err := os.Stat(p); err == nil && info.Size() > 32<<10 {
			return // more than a failed start leaves: not ours alone
		}
	}
	os.Remove(path + "-wal")
	os.Remove(path + "-shm")
	os.Remove(path + "-journal")
	os.Remove(path)
}

// BusyTimeout is how long a connection waits for a lock that another
// holds before it gives up with "database is locked".
const BusyTimeout = 10 * time.Second

// lockWait is BusyTimeout; tests shorten it.
var lockWait = BusyTimeout

// busyPragma sets the wait for a lock in a connection string.
func busyPragma() string {
	return "busy_timeout(" + strconv.FormatInt(lockWait.Milliseconds(), 10) + ")"
}

// waitForLock goes on trying to begin the transaction that a BEGIN tried
// at began could not (with err), while another process holds the
// database (see OpenOptions.Busy), until it begins, the store closes or
// GiveUp is closed. Each try waits a second at most, so that a Close is
// not kept waiting. The wait is told once it has lasted BusyTimeout, not before:
// SQLite may refuse a BEGIN at once for a moment (a checkpoint of
// another process restarting the log), which is no wait worth a word.
// It returns nil once the transaction has begun, and otherwise the error
// to fail with.
func (s *Store) waitForLock(err error, began time.Time) error {
	if s.busy == nil || !IsBusy(err) {
		return err
	}
	told := false
	for {
		select {
		case <-s.closing:
			return err
		case <-s.giveUp:
			return err
		default:
		}
		if !told && time.Since(began) >= lockWait {
			// Who holds it is said once: a holder told about is not
			// told again, even as it changes.
			s.busy(true, BusyReason(s.path))
			told = true
		}
		if _, err = s.control(beginSQL); err == nil {
			if told {
				s.busy(false, "")
			}
			return nil
		}
		if !IsBusy(err) {
			return err
		}
	}
}

// gaveUp reports whether OpenOptions.GiveUp is closed.
func (s *Store) gaveUp() bool {
	select {
	case <-s.giveUp:
		return true
	default:
		return false
	}
}

// BusyReason says who may be keeping the database at path locked: a
// swarmdeck process that is stopped (ctrl+z, SIGSTOP) while it holds the
// database, and how to let it go on, when one is; the likely holders
// otherwise.
func BusyReason(path string) string {
	if h := stoppedHolders(path); h != "" {
		return h
	}
	return fmt.Sprintf("another process has kept the database %s locked for longer than %v: %s", path, BusyTimeout, likelyHolders)
}

// StoppedWaitingReason is BusyReason for a wait that a person ended
// (ctrl+c) before the database was free, however long it had lasted.
func StoppedWaitingReason(path string) string {
	lead := "stopped waiting for the database " + path + ", which another process has locked: "
	if h := stoppedHolders(path); h != "" {
		return lead + h
	}
	return lead + likelyHolders
}

// likelyHolders are who keeps a database locked for long when no stopped
// swarmdeck process is known to.
const likelyHolders = "a swarmdeck delete or prune giving space back holds it until it is done (a while, for a large database), and so may another program such as sqlite3"

// stoppedHolders says which swarmdeck processes with runs of the database
// at path are stopped (ctrl+z, SIGSTOP), and how to let them go on, or ""
// when none is.
func stoppedHolders(path string) string {
	var stopped []runlock.Holder
	for _, h := range runlock.Holders(runlock.Dir(path)) {
		if h.Stopped {
			stopped = append(stopped, h)
		}
	}
	switch len(stopped) {
	case 0:
		return ""
	case 1:
		h := stopped[0]
		doing := "running"
		if h.Deleting {
			doing = "deleting"
		}
		return fmt.Sprintf("the swarmdeck process %d (%s %s on the database %s) is stopped, with ctrl+z or SIGSTOP, and may hold the database: `kill -CONT %d`, or `fg` in its terminal, lets it go on", h.PID, doing, h.RunID, path, h.PID)
	}
	pids := make([]string, len(stopped))
	for i, h := range stopped {
		pids[i] = strconv.Itoa(h.PID)
	}
	return fmt.Sprintf("the swarmdeck processes %s (with runs of the database %s) are stopped, with ctrl+z or SIGSTOP, and may hold the database: `kill -CONT %s` lets them go on", strings.Join(pids, ", "), path, strings.Join(pids, " "))
}

// IsBusy reports whether err is SQLite's "database is locked": another
// connection held a lock for longer than BusyTimeout. SQLite's "locking
// protocol" counts too: a reader gets it when, after about ten seconds of
// tries, another connection still holds the locks of the WAL's index, as
// a process stopped (ctrl+z, SIGSTOP) in the middle of opening the
// database does.
func IsBusy(err error) bool {
	code, ok := SQLiteCode(err)
	return ok && (code == 5 || code == 15) // SQLITE_BUSY, SQLITE_PROTOCOL
}

// IsFull reports whether err is SQLite finding no room on the disk:
// SQLITE_FULL, or SQLITE_IOERR_SHMSIZE, which is what it returns when it
// cannot grow a WAL database's -shm file, the first thing that fails on a
// full disk, even for a read.
func IsFull(err error) bool {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return false
	}
	return se.Code()&0xff == 13 || se.Code() == 4874
}

// SQLiteCode is the primary result code of an error that SQLite returned
// (5 busy, 11 corrupt, 13 full), and false for any other error.
func SQLiteCode(err error) (int, bool) {
	var se interface{ Code() int }
	if !errors.As(err, &se) {
		return 0, false
	}
	return se.Code() & 0xff, true
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// migrate brings the schema up to date. elsewhere says whether another
// process had the database open when this one opened it (openElsewhere).
func (s *Store) migrate(ctx context.Context, upgrading func(path string, from, to int), elsewhere bool) error {
	var version int
	if err := s.conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	all, err := migrationList()
	if err != nil {
		return err
	}
	latest := all[len(all)-1].version
	// Another program's database may carry any version, this one's too.
	if err := foreign(ctx, s.conn, version); err != nil {
		return err
	}
	if version == latest {
		return nil
	}
	if version > latest {
		return newerSchemaError(version, latest)
	}
	// Every pending migration goes in one transaction: a new database
	// takes them all, and each commit of its own cost start-up a
	// millisecond or so.
	if _, err := s.conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	rollback := func(err error) error {
		s.conn.ExecContext(ctx, "ROLLBACK")
		return err
	}
	// Another process may have migrated the database since it was read
	// above (two started at once on a new database): what counts is the
	// version under the write lock.
	if err := s.conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return rollback(fmt.Errorf("read schema version: %w", err))
	}
	if version == 0 {
		// Tables that another process committed meanwhile.
		if err := foreign(ctx, s.conn, version); err != nil {
			return rollback(err)
		}
	}
	if version > 0 && version <= lastUnlockedSchema && elsewhere {
		return rollback(&olderInUseError{version: version})
	}
	if version > 0 && version < latest && upgrading != nil {
		upgrading(s.path, version, latest)
	}
	if v, ok := schemaVersion(schema); ok && version == 0 && v == latest {
		if _, err := s.conn.ExecContext(ctx, schema); err != nil {
			return rollback(fmt.Errorf("create the schema: %w", err))
		}
		version, all = latest, nil
	}
	for _, m := range all {
		if m.version <= version {
			continue
		}
		body, err := migrations.ReadFile("migrations/" + m.name)
		if err != nil {
			return rollback(err)
		}
		if _, err := s.conn.ExecContext(ctx, string(body)); err != nil {
			return rollback(fmt.Errorf("migration %s: %w", m.name, err))
		}
		version = m.version
	}
	if _, err := s.conn.ExecContext(ctx, "PRAGMA user_version = "+strconv.Itoa(version)); err != nil {
		return rollback(fmt.Errorf("migrate: %w", err))
	}
	if _, err := s.conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}

type migration struct {
	version int
	name    string
}

// migrationList is the embedded migrations, oldest first.
func migrationList() ([]migration, error) {
	entries, err := fs.ReadDir(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	var all []migration
	for _, e := range entries {
		n, err := strconv.Atoi(strings.SplitN(e.Name(), "_", 2)[0])
		if err != nil {
			return nil, fmt.Errorf("migration %s: bad name", e.Name())
		}
		all = append(all, migration{n, e.Name()})
	}
	if len(all) == 0 {
		return nil, errors.New("no migrations")
	}
	sort.Slice(all, func(i, j int) bool { return all[i].version < all[j].version })
	return all, nil
}

// schemaVersion reads the "-- version: N" line of a schema script.
func schemaVersion(script string) (int, bool) {
	for line := range strings.Lines(script) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "-- version: "); ok {
			n, err := strconv.Atoi(v)
			return n, err == nil
		}
	}
	return 0, false
}

// lastUnlockedSchema is the last schema that a swarmdeck taking no run
// locks wrote: a run such a swarmdeck is running looks like one whose
// process died, which could be resumed or deleted under it.
const lastUnlockedSchema = 2

// olderInUseError is why a database of such a schema is not upgraded while
// another process has it open.
type olderInUseError struct{ version int }

// ErrOlderInUse is the error of opening, while another process has it
// open, a database of a schema whose swarmdeck took no run locks.
var ErrOlderInUse = errors.New("an older database is open in another process")

func (e *olderInUseError) Error() string {
	return fmt.Sprintf("the database was written by an older swarmdeck (schema %d), which does not mark the runs it is running, "+
		"and another process has it open: it is not upgraded under a run that such a swarmdeck may be running; "+
		"let that process finish, or stop it, then try again", e.version)
}

func (e *olderInUseError) Is(target error) bool { return target == ErrOlderInUse }

func newerSchemaError(version, latest int) error {
	return fmt.Errorf("the database has schema version %d but this swarmdeck knows only up to %d: use a newer swarmdeck or another --db", version, latest)
}

// Do runs fn in the writer and returns once its changes are committed and
// its events published. fn must be quick and must not block: it runs while
// every other write waits.
func (s *Store) Do(ctx context.Context, fn func(*Tx) error) error {
	if s.readOnly {
		return ErrReadOnly
	}
	o := &op{fn: fn, done: make(chan error, 1)}
	select {
	case s.ops <- o:
	case <-s.closing:
		return ErrClosed
	}
	// Wait for the commit even if ctx is cancelled meanwhile: the operation
	// is queued and will run; returning early would hide its outcome.
	return <-o.done
}

// Apply runs fn in the writer and returns as soon as it has run, without
// waiting for the commit of its batch. What fn changed in memory is visible
// to every goroutine from then on anyway, and every later write commits
// with or after it, so a caller that only goes on computing (a session that
// sends its next model call) loses nothing by not waiting: after a crash it
// would redo that work. Use Do before an effect outside the database (a
// file write) or a reply to a person, which must not get ahead of the
// commit. Events are published after the commit either way.
func (s *Store) Apply(ctx context.Context, fn func(*Tx) error) error {
	if s.readOnly {
		return ErrReadOnly
	}
	ran := make(chan error, 1)
	o := &op{fn: fn, ran: ran}
	select {
	case s.ops <- o:
	case <-s.closing:
		return ErrClosed
	}
	return <-ran
}

// Go queues fn without waiting for its commit. Errors are reported through
// the store's poisoned state (Err) only.
func (s *Store) Go(fn func(*Tx) error) {
	if s.readOnly {
		return
	}
	o := &op{fn: fn}
	select {
	case s.ops <- o:
	case <-s.closing:
	}
}

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("store is closed")

// Failed is closed when a failure stops the store (see Err).
func (s *Store) Failed() <-chan struct{} { return s.failed }

// Closed is closed once Close has finished the queued writes.
func (s *Store) Closed() <-chan struct{} { return s.closed }

// Err reports a commit failure that stopped the store, if any.
func (s *Store) Err() error {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	return s.err
}

func (s *Store) loop() {
	defer close(s.closed)
	batch := make([]*op, 0, maxBatch)
	// Statements are prepared ahead while the writer waits for work, one
	// at a time: an operation that arrives meanwhile waits for one of them
	// at most, and finds ready those prepared before it.
	warm := warmList()
	for {
		var o *op
		select {
		case o = <-s.ops:
		case <-s.closing:
			s.drain()
			return
		default:
			if len(warm) > 0 {
				// Nothing to do: prepare a statement a run will need, after
				// letting the goroutines the last batch woke run first.
				goruntime.Gosched()
				s.prepareAhead(warm[0])
				warm = warm[1:]
				continue
			}
			s.writing.Store(false)
			select {
			case o = <-s.ops:
			case <-s.restart:
				s.restartWAL()
				continue
			case <-s.closing:
				s.drain()
				return
			}
		}
		s.writing.Store(true)
		batch = append(batch[:0], o)
	fill:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.run(batch)
	}
}

// drain runs what was queued before Close.
func (s *Store) drain() {
	for {
		select {
		case o := <-s.ops:
			s.run([]*op{o})
		default:
			return
		}
	}
}

var (
	beginSQL    = hot("BEGIN IMMEDIATE")
	commitSQL   = hot("COMMIT")
	rollbackSQL = hot("ROLLBACK")
)

// run executes one batch in one transaction. An operation that fails
// before writing anything is simply left out (its events are dropped); one
// that fails after writing cannot be undone alone (savepoints per
// operation cost a journal copy of every page each one touches), so the
// whole batch is rolled back and the store stops: a write that fails
// half-way means the database is broken, and going on would lose data
// silently. Tx.Nested gives an operation an inner step it can undo.
func (s *Store) run(batch []*op) {
	ctx := context.Background()
	if err := s.Err(); err != nil {
		for _, o := range batch {
			o.finish(err)
		}
		return
	}
	began := time.Now()
	if _, err := s.control(beginSQL); err != nil {
		if err = s.waitForLock(err, began); err != nil {
			s.fail(batch, fmt.Errorf("begin: %w", err))
			return
		}
	}
	tx := &Tx{s: s, ctx: ctx}
	s.seqMu.Lock()
	s.seqUndo = s.seqUndo[:0]
	// The ids the store gives out are read again, inside the transaction,
	// the first time the batch needs one: another swarmdeck process using
	// the same database may have taken some since the last commit (its runs
	// are its own, but messages, inbox items and shared texts are numbered
	// across runs).
	s.msgID, s.inboxID, s.sharedID = 0, 0, 0
	s.seqMu.Unlock()
	results := make([]error, 0, len(batch))
	woke := false // an Apply caller was let go
	// exec runs one operation of the batch and reports whether the batch
	// can go on.
	exec := func(o *op) bool {
		mark := s.snapshotSeqs()
		rows := tx.rowMark()
		tx.events = tx.events[:0]
		writes := tx.writes
		tx.atEnd = tx.atEnd[:0]
		err := o.fn(tx)
		for i := 0; err == nil && i < len(tx.atEnd); i++ {
			err = tx.atEnd[i](tx)
		}
		results = append(results, nil)
		if tx.broken != nil {
			return false
		}
		if err != nil {
			tx.dropRowsTo(rows)
			s.restoreSeqs(mark)
			if tx.writes != writes {
				tx.broken = fmt.Errorf("an operation failed after writing: %w", err)
				return false
			}
			results[len(results)-1] = err
			o.running(err)
			return true
		}
		o.events = append(o.events[:0], tx.events...)
		o.running(nil)
		woke = woke || o.ran != nil
		return true
	}
	ok, waited := true, false
	for _, o := range batch {
		waited = waited || o.done != nil
		if ok = exec(o); !ok {
			break
		}
	}
	// Operations that arrive within commitWait of the last join the
	// transaction, for up to maxAge: their callers go on as soon as theirs
	// has run (Apply, Go), so the wait costs them nothing, and a turn's few
	// operations share one commit instead of each writing the same last
	// pages of the same tables again. Someone waiting for the commit itself
	// (Do) ends the wait.
	if ok && !waited && len(batch) < maxBatch {
		deadline := time.Now().Add(s.maxAge)
		s.coalesce.Reset(min(s.commitWait, s.maxAge))
	wait:
		for len(batch) < maxBatch {
			select {
			case o := <-s.ops:
				batch = append(batch, o)
				if !exec(o) || o.done != nil {
					break wait
				}
				s.coalesce.Reset(max(min(s.commitWait, time.Until(deadline)), 0))
			case <-s.coalesce.C:
				break wait
			case <-s.closing:
				break wait
			}
		}
		s.coalesce.Stop()
	}
	for len(results) < len(batch) {
		results = append(results, nil)
	}
	// Callers that only waited for their operation to run (Apply) are
	// woken now, on this core, and are on their way to a model call; the
	// commit is not, so they go first. Callers waiting for the commit
	// (Do) would only wait longer.
	if woke {
		goruntime.Gosched()
	}
	if tx.broken == nil {
		if err := tx.flushRows(); err != nil {
			tx.broken = err
		}
	}
	var events []event.Event
	for i, o := range batch {
		if results[i] == nil {
			events = append(events, o.events...)
		}
	}
	if tx.broken == nil && len(events) > 0 {
		if err := tx.writeEvents(events); err != nil {
			tx.broken = err
		}
	}
	if tx.broken != nil {
		s.control(rollbackSQL)
		s.fail(batch, tx.broken)
		return
	}
	if _, err := s.control(commitSQL); err != nil {
		s.control(rollbackSQL)
		s.fail(batch, fmt.Errorf("commit: %w", err))
		return
	}
	s.lastCommit.Store(int64(time.Since(s.epoch)))
	select {
	case s.committed <- struct{}{}:
	default:
	}
	if len(events) > 0 {
		s.publish(events)
	}
	for i, o := range batch {
		o.finish(results[i])
	}
}

// A checkpoint waits for the writes to pause this long, with the writer
// idle, so that folding the WAL back (copying every page written since the
// last one) does not take a core from a burst of work, such as a wave of
// sub-agents starting, that is still going on. A burst keeps the writer
// busy; a pause this long means the sessions are waiting for their models,
// and the checkpoint is done well before the shortest model call returns.
const checkpointQuiet = 15 * time.Millisecond

// checkpointLatest bounds how long a checkpoint waits for such a pause while
// the writes never stop, and so how large the WAL grows.
const checkpointLatest = 5 * time.Second

// checkpointLoop folds the WAL back into the database file once the writes
// pause after a commit (PASSIVE: it never waits for the writer or readers).
// It sleeps while nothing is written.
func (s *Store) checkpointLoop() {
	defer close(s.ckptDone)
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-s.committed:
		case <-s.closing:
			return
		}
		latest := time.Since(s.epoch) + s.ckLatest
		for {
			now := time.Since(s.epoch)
			due := min(time.Duration(s.lastCommit.Load())+s.ckQuiet, latest)
			if due <= now && now < latest && (s.writing.Load() || len(s.ops) > 0) {
				// Quiet only because the writer is behind (a burst that has
				// it waiting for a core): not a pause.
				due = now + s.ckQuiet
			}
			wait := due - now
			if wait <= 0 {
				break
			}
			t.Reset(wait)
			select {
			case <-t.C:
			case <-s.closing:
				return
			}
		}
		// Commits from here on signal again; the checkpoint may fold some of
		// them in already, and the next one then finds little to do.
		select {
		case <-s.committed:
		default:
		}
		busy, frames, folded, err := s.checkpoint()
		s.checkpoints.Add(1)
		if gone := s.CheckFile(); gone != nil {
			// Every later write would go to a file nobody can open.
			s.fail(nil, gone)
			return
		}
		if err == nil && busy == 0 && frames > 0 && folded == frames {
			select {
			case s.restart <- struct{}{}:
			default:
			}
		}
	}
}

// CheckFile reports whether the database file at the store's path is still
// the one it opened: one deleted or replaced meanwhile (rm, mv over it)
// holds none of what was written since, though SQLite goes on writing to
// the file it has open without a word.
func (s *Store) CheckFile() error {
	if s.file == nil {
		return nil
	}
	now, err := os.Stat(s.path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s was deleted while swarmdeck was using it, and what was stored since it was opened went with it", ErrFileGone, s.path)
	case err != nil:
		return nil // cannot tell
	case !os.SameFile(s.file, now):
		return fmt.Errorf("%w: %s was replaced by another file while swarmdeck was using it, and what was stored since it was opened is not in the file there now", ErrFileGone, s.path)
	}
	return nil
}

// ErrFileGone is CheckFile's error: the database file was deleted or
// replaced under the store.
var ErrFileGone = errors.New("the database file is gone")

// checkpoint runs one passive checkpoint on the checkpointer's connection.
func (s *Store) checkpoint() (busy, frames, folded int, err error) {
	ctx := context.Background()
	c, err := s.ckpt.Conn(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	defer c.Close()
	if s.beforeCheckpoint != nil {
		s.beforeCheckpoint(c)
	}
	err = c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &folded)
	return busy, frames, folded, err
}

// restartWAL starts the WAL afresh, while the writer has nothing else to
// do. Once a checkpoint has folded all of the WAL back, the next commit
// writes the log from its beginning again, and SQLite then syncs the new
// log header to disk before going on, even with synchronous=NORMAL: half a
// millisecond of fsync inside whatever commit comes first, which after a
// pause is the one a run is waiting on (a run's end, a wave of sub-agents
// starting). Rewriting the application id as it is makes that first commit
// now, during the pause. It is not a commit the checkpointer is told of: a
// one-page log is not worth folding back, and doing so would only call for
// another restart.
func (s *Store) restartWAL() {
	if s.Err() != nil {
		return
	}
	ctx := context.Background()
	if s.appID == "" {
		var id int64
		if err := s.conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err != nil {
			return // the next commit restarts the log as before
		}
		s.appID = strconv.FormatInt(id, 10)
	}
	if _, err := s.conn.ExecContext(ctx, "PRAGMA application_id = "+s.appID); err != nil {
		// Nothing is lost: the next commit restarts the log as before.
		return
	}
	s.restarts.Add(1)
}

// control runs a transaction control statement (BEGIN, SAVEPOINT, COMMIT,
// ...), prepared once: they run several times per commit.
func (s *Store) control(stmt string) (sql.Result, error) {
	st, ok := s.stmts[stmt]
	if !ok {
		var err error
		if st, err = s.conn.PrepareContext(context.Background(), stmt); err != nil {
			return nil, err
		}
		s.stmts[stmt] = st
	}
	return st.ExecContext(context.Background())
}

func (o *op) finish(err error) {
	o.running(err)
	if o.done != nil {
		o.done <- err
	}
}

// running tells an Apply caller the outcome of its function, once.
func (o *op) running(err error) {
	if o.ran != nil && !o.ranSent {
		o.ranSent = true
		o.ran <- err
	}
}

// fail poisons the store: a write that cannot be committed means the disk or
// the database is broken, and carrying on would lose data silently.
func (s *Store) fail(batch []*op, err error) {
	err = fmt.Errorf("store %s: %w", s.path, err)
	s.seqMu.Lock()
	if s.err == nil {
		s.err = err
		close(s.failed)
	}
	s.seqMu.Unlock()
	for _, o := range batch {
		o.finish(err)
	}
}

// counters holds what an operation may advance and must give back when it
// fails: event sequences and the ids the store gives out.
type counters struct {
	undo                     int // length of seqUndo
	msgID, inboxID, sharedID int64
}

// seqChange is a change of a run's last event sequence, for rolling back.
type seqChange struct {
	run string
	old int64
	had bool
}

func (s *Store) snapshotSeqs() counters {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	return counters{undo: len(s.seqUndo), msgID: s.msgID, inboxID: s.inboxID, sharedID: s.sharedID}
}

func (s *Store) restoreSeqs(c counters) {
	s.seqMu.Lock()
	defer s.seqMu.Unlock()
	s.msgID = c.msgID
	s.inboxID = c.inboxID
	s.sharedID = c.sharedID
	for i := len(s.seqUndo) - 1; i >= c.undo; i-- {
		ch := s.seqUndo[i]
		if ch.had {
			s.seqs[ch.run] = ch.old
		} else {
			delete(s.seqs, ch.run)
		}
	}
	s.seqUndo = s.seqUndo[:c.undo]
}

// setSeqLocked records a run's new last sequence so that it can be rolled
// back. s.seqMu must be held.
func (s *Store) setSeqLocked(run string, seq int64) {
	old, had := s.seqs[run]
	s.seqUndo = append(s.seqUndo, seqChange{run, old, had})
	s.seqs[run] = seq
}

// Close flushes queued writes and closes the database.
func (s *Store) Close() error {
	s.closeMu.Lock()
	if s.isClosed {
		s.closeMu.Unlock()
		return nil
	}
	s.isClosed = true
	close(s.closing)
	s.closeMu.Unlock()
	if s.readOnly {
		close(s.closed)
		return s.read.Close()
	}
	<-s.closed
	for _, st := range s.stmts {
		st.Close()
	}
	s.closeBatch()
	// Fold the WAL back into the main file so a copied .db is complete. A
	// checkpoint still folding on its own connection (one that started as a
	// run ended: tens of milliseconds in a large database) would make this
	// one give up busy, and the process could then exit with the WAL left
	// beside the database: it finishes first.
	<-s.ckptDone
	if s.gaveUp() || IsBusy(s.Err()) || s.lastCommit.Load() == 0 {
		// Another process holds the database, and the checkpoint would
		// wait for it as long again; or this store wrote nothing (a prune
		// with nothing to delete), and what the WAL holds is another
		// process's to fold back: a later process makes it.
		s.conn.ExecContext(context.Background(), "PRAGMA busy_timeout = 50")
	}
	s.conn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)")
	s.conn.Close()
	s.ckpt.Close()
	err := s.write.Close()
	s.read.Close()
	return err
}

// Time formats t for storage.
func Time(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ParseTime reads a stored time ("" is the zero time).
func ParseTime(s string) time.Time {
	if s == "" {
		return time.Time{}
	}
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// fileURI is path as the start of an SQLite URI filename. SQLite reads the
// name after "file:" as a URI path: a '?' or '#' in it would begin the
// query or the fragment, and a '%' an escape, so each is escaped.
func fileURI(path string) string {
	return "file:" + uriPath.Replace(filepath.Clean(path))
}

var uriPath = strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
