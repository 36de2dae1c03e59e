package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

func openTest(t *testing.T, publish func([]event.Event)) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "t.db"), publish)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestRefusedOperationLeavesOthersInItsBatch(t *testing.T) {
	var mu sync.Mutex
	var published []event.Event
	s := openTest(t, func(evs []event.Event) {
		mu.Lock()
		published = append(published, evs...)
		mu.Unlock()
	})
	ctx := context.Background()
	if err := s.Do(ctx, func(tx *Tx) error {
		return tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 40)
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Do(ctx, func(tx *Tx) error {
				if _, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "x"}); err != nil {
					return err
				}
				if i%2 == 1 {
					return errors.New("refused") // before writing anything
				}
				return tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: i, Role: "user", Content: "m"})
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if (i%2 == 1) != (err != nil) {
			t.Fatalf("op %d: err = %v", i, err)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatalf("a refusal stopped the store: %v", err)
	}
	msgs, err := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if err != nil || len(msgs) != 20 {
		t.Fatalf("%d messages stored (want 20): %v", len(msgs), err)
	}
	// Events of refused operations are neither stored nor published, and
	// the published sequence has no holes.
	mu.Lock()
	defer mu.Unlock()
	if len(published) != 20 {
		t.Fatalf("%d events published, want 20", len(published))
	}
	for i, e := range published {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
	}
	if n, _ := s.EventCount(ctx, "r-1"); n != 20 {
		t.Errorf("%d events logged, want 20", n)
	}
}

func TestFailureAfterWritingStopsTheStore(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: time.Now()}); err != nil {
			return err
		}
		return errors.New("half done")
	})
	if err == nil || !strings.Contains(err.Error(), "half done") {
		t.Fatalf("Do = %v", err)
	}
	if err := s.Do(ctx, func(tx *Tx) error { return nil }); err == nil {
		t.Fatalf("the store went on after a half-done write")
	}
	if _, err := s.Run(ctx, "r-1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the half-done write was committed: %v", err)
	}
}

func TestNestedUndoesOnlyItsStep(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	var inner error
	err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: 0, Role: "user", Content: "kept"}); err != nil {
			return err
		}
		tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "kept"})
		inner = tx.Nested(func() error {
			tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: 1, Role: "user", Content: "undone"})
			tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "undone"})
			return errors.New("refused")
		})
		return nil
	})
	if err != nil || inner == nil {
		t.Fatalf("Do = %v, nested = %v", err, inner)
	}
	msgs, _ := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if len(msgs) != 1 || msgs[0].Content != "kept" {
		t.Errorf("messages = %+v", msgs)
	}
	if n, _ := s.EventCount(ctx, "r-1"); n != 1 {
		t.Errorf("%d events logged, want 1", n)
	}
}

func TestReopenKeepsSequenceAndData(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Do(ctx, func(tx *Tx) error {
		tx.InsertRun(&Run{ID: "r-abc123", Goal: "g", Status: "running", CreatedAt: time.Now()})
		_, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: "r-abc123"})
		return err
	})
	s.Close()
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var seq int64
	s.Do(ctx, func(tx *Tx) error {
		e, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-abc123"})
		seq = e.Seq
		return err
	})
	if seq != 2 {
		t.Errorf("seq after reopen = %d, want 2", seq)
	}
	if r, err := s.Run(ctx, "r-abc"); err != nil || r.ID != "r-abc123" {
		t.Errorf("prefix lookup: %v %v", r, err)
	}
	if _, err := s.Run(ctx, "r-zzz"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}

// An id prefix that more than one run starts with names them, up to a
// few and a count of the rest.
func TestAmbiguousRunIDNamesTheCandidates(t *testing.T) {
	ctx := context.Background()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, id := range []string{"r-a1", "r-a2", "r-a3", "r-a4", "r-a5", "r-a6", "r-a7", "r-b1"} {
		s.Do(ctx, func(tx *Tx) error {
			tx.InsertRun(&Run{ID: id, Goal: "g", Status: "completed", CreatedAt: time.Now()})
			return nil
		})
	}
	for _, tc := range []struct{ prefix, want string }{
		{"r-", `run "r-" is ambiguous: more than one run's id starts so (r-a1, r-a2, r-a3, r-a4, r-a5 and 3 more); give more of it`},
		{"r-a", `(r-a1, r-a2, r-a3, r-a4, r-a5 and 2 more)`},
	} {
		_, err := s.Run(ctx, tc.prefix)
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Run(%q) = %v, want ErrAmbiguous with %q", tc.prefix, err, tc.want)
		}
	}
	s.Do(ctx, func(tx *Tx) error {
		tx.InsertRun(&Run{ID: "r-b2", Goal: "g", Status: "completed", CreatedAt: time.Now()})
		return nil
	})
	if _, err := s.Run(ctx, "r-b"); err == nil || !strings.Contains(err.Error(), "(r-b1, r-b2); give more of it") {
		t.Errorf("Run(r-b) = %v, want both candidates and nothing more", err)
	}
	if r, err := s.Run(ctx, "r-b1"); err != nil || r.ID != "r-b1" {
		t.Errorf("Run(r-b1) = %v, %v", r, err)
	}
}

func BenchmarkStoreAppend(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "b.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	content := "a message of ordinary length, about as long as a tool result summary line or a short answer"
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		sid := "s-" + time.Now().Format("150405.000000000")
		i := 0
		for pb.Next() {
			m := &Message{RunID: "r-1", SessionID: sid, Index: i, Role: "assistant", Content: content}
			if err := s.Do(ctx, func(tx *Tx) error { return tx.InsertMessage(m) }); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

func TestEventLogRowsAreJSON(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	err := s.Do(ctx, func(tx *Tx) error {
		tx.Emit(event.Event{Type: event.MessageAppended, RunID: "r-1", SessionID: "s-1", Message: &event.MessageInfo{ID: 7, Index: 2, Role: "user", Source: "agent", Content: "x", NoReply: true}})
		tx.Emit(event.Event{Type: event.MessageAppended, RunID: "r-1", SessionID: `s-"odd"`, Message: &event.MessageInfo{ID: 8, Role: "tool"}})
		_, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "bad \"thing\"\n"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var data string
	var first, last int64
	if err := s.read.QueryRowContext(ctx, `SELECT seq, last_seq, data FROM events WHERE run_id = 'r-1'`).Scan(&first, &last, &data); err != nil {
		t.Fatal(err)
	}
	var evs []event.Event
	if err := json.Unmarshal([]byte(data), &evs); err != nil {
		t.Fatalf("log row is not JSON: %v\n%s", err, data)
	}
	if first != 1 || last != 3 || len(evs) != 3 || evs[0].Message.ID != 7 || !evs[0].Message.NoReply || evs[1].SessionID != `s-"odd"` || evs[2].Error != "bad \"thing\"\n" {
		t.Errorf("log = %d..%d %+v", first, last, evs)
	}
	if evs[0].Message.Content != "" {
		t.Errorf("the log repeats message bodies")
	}
	if n, _ := s.EventCount(ctx, "r-1"); n != 3 {
		t.Errorf("EventCount = %d", n)
	}
}

// Items without a key of their own get keys in id order, across operations
// and reopenings, and an item with its own key is still kept only once.
func TestInboxKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ctx := context.Background()
	add := func(s *Store, items ...*InboxItem) []bool {
		t.Helper()
		var inserted []bool
		err := s.Do(ctx, func(tx *Tx) error {
			for _, it := range items {
				it.RunID, it.SessionID, it.Kind, it.Content, it.CreatedAt = "r-1", "s-1", "note", "x", time.Now()
				if it.Key == "" {
					inserted = append(inserted, true)
					if err := tx.AppendInbox(it); err != nil {
						return err
					}
					continue
				}
				ok, err := tx.InsertInbox(it)
				if err != nil {
					return err
				}
				inserted = append(inserted, ok)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return inserted
	}
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	add(s, &InboxItem{}, &InboxItem{Key: "result/s-2/0/completed"}, &InboxItem{})
	s.Close()
	if s, err = Open(path, nil); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := add(s, &InboxItem{}, &InboxItem{Key: "result/s-2/0/completed"}); !got[0] || got[1] {
		t.Fatalf("inserted = %v, want [true false]: a duplicate key must be kept once", got)
	}
	items, err := s.PendingInbox(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 {
		t.Fatalf("%d items pending, want 4", len(items))
	}
	var generated []string
	for _, it := range items {
		if it.Key != "result/s-2/0/completed" {
			generated = append(generated, it.Key)
		}
	}
	for i, k := range generated {
		if !strings.HasPrefix(k, "~") || len(k) != 17 || (i > 0 && k <= generated[i-1]) {
			t.Fatalf("generated keys %q: want \"~\" and 16 hex digits, in id order", generated)
		}
	}
}

// An inbox item stays pending until a message carrying its id is stored or
// a tool call consumes it; items a version-1 database marked delivered stay
// delivered after the upgrade.
func TestPendingInbox(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ctx := context.Background()

	// A database as version 1 of the schema left it: one item delivered
	// the old way, one pending.
	makeVersion1(t, path,
		`INSERT INTO inbox (id, run_id, session_id, key, kind, content, created_at, delivered_at) VALUES (1, 'r-1', 's-1', 'old/1', 'note', 'old, delivered', '', '2026-01-01')`,
		`INSERT INTO inbox (id, run_id, session_id, key, kind, content, created_at) VALUES (2, 'r-1', 's-1', 'old/2', 'note', 'old, pending', '')`)

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	items := []*InboxItem{{Content: "delivered by a message"}, {Content: "consumed"}, {Content: "pending"}}
	err = s.Do(ctx, func(tx *Tx) error {
		for _, it := range items {
			it.RunID, it.SessionID, it.Kind, it.CreatedAt = "r-1", "s-1", "note", time.Now()
			if err := tx.AppendInbox(it); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: 0, Role: "user", Content: items[0].Content, InboxID: items[0].ID}); err != nil {
			return err
		}
		return tx.MarkConsumed([]int64{items[1].ID}, "call_1")
	})
	if err != nil {
		t.Fatal(err)
	}
	got := pendingContents(t, s, "r-1")
	if want := []string{"old, pending", "pending"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %q, want %q", got, want)
	}
}

// Rows are queued by the operations of a batch and inserted when it
// commits; what an operation or a nested step undoes, and what later
// operations of the same batch say about queued rows, must hold as if each
// row had been written at once.
func TestQueuedRowsInOneBatch(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	// Hold the writer so that the operations below queue up and run as
	// one batch.
	release := make(chan struct{})
	held := make(chan struct{})
	s.Go(func(tx *Tx) error {
		close(held)
		<-release
		return nil
	})
	<-held
	const many = maxRowsPerInsert*2 + 3
	var results []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	apply := func(fn func(tx *Tx) error) {
		n := len(s.ops)
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Apply(ctx, fn)
			mu.Lock()
			results = append(results, err)
			mu.Unlock()
		}()
		// Keep the operations in order: each is in the queue before the
		// next is sent.
		for len(s.ops) == n {
			time.Sleep(time.Millisecond)
		}
	}
	item := func(key, content string) *InboxItem {
		return &InboxItem{RunID: "r-1", SessionID: "s-1", Key: key, Kind: "note", Content: content, CreatedAt: time.Now()}
	}
	var consumed *InboxItem
	var dup bool
	apply(func(tx *Tx) error {
		for i := range many {
			if err := tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: i, Role: "user", Content: "kept"}); err != nil {
				return err
			}
		}
		consumed = item("", "consumed")
		if err := tx.AppendInbox(consumed); err != nil {
			return err
		}
		_, err := tx.InsertInbox(item("result/s-2", "first result"))
		return err
	})
	apply(func(tx *Tx) error {
		tx.Nested(func() error {
			tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: many, Role: "user", Content: "undone"})
			tx.AppendInbox(item("", "undone"))
			return errors.New("refused")
		})
		ok, err := tx.InsertInbox(item("result/s-2", "second result"))
		dup = !ok
		if err != nil {
			return err
		}
		if err := tx.MarkConsumed([]int64{consumed.ID}, "call_1"); err != nil {
			return err
		}
		return tx.AppendInbox(item("", "pending"))
	})
	apply(func(tx *Tx) error { return errors.New("refused before writing") })
	close(release)
	wg.Wait()
	if slices.IndexFunc(results, func(err error) bool { return err == nil }) < 0 || len(results) != 3 {
		t.Fatalf("results = %v", results)
	}
	// Apply returns before the commit; a Do after the batch waits for it.
	if err := s.Do(ctx, func(*Tx) error { return nil }); err != nil {
		t.Fatalf("the store stopped: %v", err)
	}
	if !dup {
		t.Error("a key queued earlier in the batch was inserted twice")
	}
	msgs, err := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != many {
		t.Fatalf("%d messages stored, want %d", len(msgs), many)
	}
	for _, m := range msgs {
		if m.Content != "kept" {
			t.Fatalf("stored %q", m.Content)
		}
	}
	got := pendingContents(t, s, "r-1")
	if want := []string{"first result", "pending"}; !slices.Equal(got, want) {
		t.Fatalf("pending = %q, want %q", got, want)
	}
}

// An in-memory database cannot be shared with the reader connections: it
// is refused with a way out instead of hanging the first read.
func TestInMemoryRefused(t *testing.T) {
	for _, path := range []string{":memory:", "file::memory:?cache=shared", "x.db?mode=memory"} {
		s, err := Open(path, nil)
		if err == nil {
			s.Close()
			t.Fatalf("Open(%q) succeeded", path)
		}
		if !strings.Contains(err.Error(), "--db /tmp/swarmdeck.db") {
			t.Errorf("Open(%q): %v", path, err)
		}
	}
}

// Operations whose callers do not wait for the commit share a transaction
// with those that arrive while it is open; an operation whose caller waits
// for the commit (Do) ends the wait.
func TestLateOperationsJoinTheCommit(t *testing.T) {
	var mu sync.Mutex
	var commits [][]string
	s := openTest(t, func(evs []event.Event) {
		var names []string
		for _, e := range evs {
			names = append(names, e.Error)
		}
		mu.Lock()
		commits = append(commits, names)
		mu.Unlock()
	})
	// Wait (nearly) for ever, so that only the Do can end the wait. The
	// writer is idle, so the next operation starts a transaction that uses
	// the new wait.
	s.commitWait, s.maxAge = time.Hour, time.Hour
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if err := s.Apply(ctx, emitNamed(name)); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.Do(ctx, emitNamed("c")) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Do waited for the commit window")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(commits) != 1 || !slices.Equal(commits[0], []string{"a", "b", "c"}) {
		t.Fatalf("commits = %q, want one with a, b and c", commits)
	}
}

// emitNamed is an operation that emits one event carrying name.
func emitNamed(name string) func(*Tx) error {
	return func(tx *Tx) error {
		_, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: name})
		return err
	}
}

// A transaction stays open for at most maxAge: with a wait of an hour
// after each operation, the commit still comes.
func TestATransactionStaysOpenForAtMostMaxAge(t *testing.T) {
	committed := make(chan []string, 4)
	s := openTest(t, func(evs []event.Event) {
		var names []string
		for _, e := range evs {
			names = append(names, e.Error)
		}
		committed <- names
	})
	s.commitWait, s.maxAge = time.Hour, 50*time.Millisecond
	ctx := context.Background()
	for _, name := range []string{"a", "b"} {
		if err := s.Apply(ctx, emitNamed(name)); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case names := <-committed:
		// b may have come after a's transaction closed; either way a
		// commits on its own deadline.
		if names[0] != "a" {
			t.Fatalf("first commit %q, want a first", names)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the transaction waited past its maximum age")
	}
}

// pendingContents is the content of each pending inbox item of a run, in
// order.
func pendingContents(t *testing.T, s *Store, runID string) []string {
	t.Helper()
	pending, err := s.PendingInbox(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range pending {
		got = append(got, it.Content)
	}
	return got
}

// writeMessage stores message i of session s-1 and waits for the commit.
func writeMessage(t *testing.T, s *Store, i int) {
	t.Helper()
	if err := s.Do(context.Background(), func(tx *Tx) error {
		return tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: i, Role: "user", Content: "m"})
	}); err != nil {
		t.Fatal(err)
	}
}

// A checkpoint waits for the writes to pause, with the writer idle, and for
// no longer than checkpointLatest while they do not.
func TestCheckpointWaitsForAPause(t *testing.T) {
	s := openTest(t, nil)
	write := func(i int) {
		t.Helper()
		writeMessage(t, s, i)
	}
	waitFor := func(n int64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for s.checkpoints.Load() < n {
			if time.Now().After(deadline) {
				t.Fatalf("%d checkpoints, want %d", s.checkpoints.Load(), n)
			}
			time.Sleep(time.Millisecond)
		}
	}

	// Writes that keep coming hold the checkpoint back.
	s.ckQuiet, s.ckLatest = time.Hour, time.Hour
	for i := 0; i < 300; i++ {
		write(i)
		time.Sleep(2 * time.Millisecond)
	}
	if n := s.checkpoints.Load(); n != 0 {
		t.Fatalf("%d checkpoints while the writes went on", n)
	}

	// The latest bound ends the wait.
	s = openTest(t, nil)
	s.ckQuiet, s.ckLatest = time.Hour, 150*time.Millisecond
	start := time.Now()
	for i := 0; s.checkpoints.Load() == 0; i++ {
		if time.Since(start) > 30*time.Second {
			t.Fatal("no checkpoint while the writes went on")
		}
		write(i)
		time.Sleep(2 * time.Millisecond)
	}
	if took := time.Since(start); took < 150*time.Millisecond {
		t.Fatalf("checkpoint after %s of writes, before the 150ms bound", took)
	}

	// Once the writes pause, it runs after the quiet time, not before.
	s = openTest(t, nil)
	s.ckQuiet, s.ckLatest = 100*time.Millisecond, time.Hour
	// Taken before the write: its commit, where the quiet time starts, is
	// later, while the write may return well after it on a busy machine.
	last := time.Now()
	write(0)
	waitFor(1)
	if quiet := time.Since(last); quiet < 100*time.Millisecond {
		t.Fatalf("checkpoint %s after the last commit, want >= 100ms", quiet)
	}
	// Nothing written since: no more checkpoints.
	time.Sleep(200 * time.Millisecond)
	if n := s.checkpoints.Load(); n != 1 {
		t.Fatalf("%d checkpoints with one commit", n)
	}

	// A writer that is behind is no pause, however long ago it committed:
	// here an operation holds it while the last commit grows old.
	s = openTest(t, nil)
	s.ckQuiet, s.ckLatest = 50*time.Millisecond, time.Hour
	started, release := make(chan struct{}), make(chan struct{})
	s.Go(func(tx *Tx) error {
		close(started)
		<-release
		return tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: 0, Role: "user", Content: "m"})
	})
	<-started
	s.lastCommit.Store(int64(time.Since(s.epoch)))
	s.committed <- struct{}{}
	time.Sleep(300 * time.Millisecond)
	if n := s.checkpoints.Load(); n != 0 {
		close(release)
		t.Fatalf("%d checkpoints while the writer was busy", n)
	}
	close(release)
	waitFor(1)
}

// Close folds the WAL back even when a checkpoint of its own is under way
// as the store closes (a run's end in a large database, where folding takes
// tens of milliseconds): the database file is then complete on its own, with
// no WAL left beside it for a process that exits right after.
func TestCloseWaitsForACheckpointInProgress(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	starting := make(chan struct{})
	var once sync.Once
	s.ckQuiet, s.ckLatest = 5*time.Millisecond, time.Hour
	// The checkpoint holds its connection, open on the WAL, until well
	// after Close began.
	s.beforeCheckpoint = func(c *sql.Conn) {
		var n int
		if err := c.QueryRowContext(context.Background(), "SELECT count(*) FROM messages").Scan(&n); err != nil {
			t.Error(err)
		}
		once.Do(func() { close(starting) })
		<-s.closing
		time.Sleep(200 * time.Millisecond)
	}
	for i := range 20 {
		writeMessage(t, s, i)
	}
	<-starting
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		t.Fatalf("a WAL of %d bytes is left beside the database after Close", fi.Size())
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if n, err := ro.MessageCount(context.Background(), "r-1"); err != nil || n != 20 {
		t.Fatalf("the closed database holds %d messages (%v), want 20", n, err)
	}
}

// MessagesByID reads the messages asked for, of the run asked for only,
// whatever else was written between them.
func TestMessagesByID(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	var ids []int64
	if err := s.Do(ctx, func(tx *Tx) error {
		for i := range 6 {
			run := []string{"r-1", "r-2"}[i%2]
			m := &Message{RunID: run, SessionID: "s-" + strconv.Itoa(i%3), Index: i, Role: "user", Content: fmt.Sprintf("m%d", i)}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
			ids = append(ids, m.ID)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// ids[0], ids[2], ids[4] are r-1's; ask for two of them and one of r-2's.
	got, err := s.MessagesByID(ctx, "r-1", []int64{ids[4], ids[1], ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	var contents []string
	for _, m := range got {
		contents = append(contents, m.Content)
	}
	if !slices.Equal(contents, []string{"m0", "m4"}) {
		t.Errorf("MessagesByID = %q, want m0 and m4 (r-2's m1 left out)", contents)
	}
	if got, err := s.MessagesByID(ctx, "r-1", nil); err != nil || len(got) != 0 {
		t.Errorf("MessagesByID of no ids = %v, %v", got, err)
	}
}

// A message refers to a shared text for all of its content or for its end;
// the row keeps only the rest, and reading gives the whole text back. A
// shared text that is not how the content ends is not used.
func TestSharedContentEndsAMessage(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	tail := "\n\n" + strings.Repeat("the rules every sibling reads\n", 100)
	cases := []struct {
		content string
		wantRow string // what the row itself stores
		wantRef bool
	}{
		{"You are s-1\n" + tail, "You are s-1\n", true},
		{tail, "", true},
		{"", "", true}, // the shared text is the whole content
		{"You are s-2\n" + tail + "and something after", "You are s-2\n" + tail + "and something after", false},
	}
	err := s.Do(ctx, func(tx *Tx) error {
		shared, err := tx.ShareContent(tail)
		if err != nil {
			return err
		}
		for i, c := range cases {
			m := &Message{RunID: "r-1", SessionID: "s-1", Index: i, Role: "system", Content: c.content, Shared: shared}
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(cases) {
		t.Fatalf("%d messages, want %d", len(got), len(cases))
	}
	for i, c := range cases {
		want := c.content
		if want == "" {
			want = tail
		}
		if got[i].Content != want {
			t.Errorf("message %d reads back as %q..., want %q...", i, trimTo(got[i].Content, 40), trimTo(want, 40))
		}
		var row string
		var ref int64
		if err := s.read.QueryRowContext(ctx, `SELECT content, content_ref FROM messages WHERE run_id = 'r-1' AND idx = ?`, i).Scan(&row, &ref); err != nil {
			t.Fatal(err)
		}
		if row != c.wantRow || (ref != 0) != c.wantRef {
			t.Errorf("message %d row holds %q... (ref %d), want %q... (ref %v)", i, trimTo(row, 40), ref, trimTo(c.wantRow, 40), c.wantRef)
		}
	}
}

func trimTo(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// Sessions, effects, broadcasts and shared texts are queued and written at
// the commit: a session changed twice in a batch is written as it was last,
// and a nested step that fails takes its queued rows with it, without a
// savepoint (none is opened when the step runs no statement) and without
// undoing the rest of the operation.
func TestQueuedTablesInOneBatch(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	many := queuedTables[qSessions].most*2 + 3
	var inner error
	var shared *SharedContent
	err := s.Do(ctx, func(tx *Tx) error {
		for i := range many {
			x := &Session{RunID: "r-1", ID: fmt.Sprintf("s-%d", i), Agent: "worker", Status: "pending", Depth: 1}
			tx.UpsertSession(x)
			x.Status, x.Turns = "running", 1
			tx.UpsertSession(x)
		}
		tx.InsertEffect("r-1", "s-0", "call_1", 0, "spawn", []byte(`{"ok":true}`))
		tx.InsertBroadcast(&Broadcast{RunID: "r-1", ID: "b-1", Seq: 1, Kind: "broadcast", FromSession: "s-0", Message: "kept"})
		var err error
		if shared, err = tx.ShareContent("kept text"); err != nil {
			return err
		}
		inner = tx.Nested(func() error {
			tx.UpsertSession(&Session{RunID: "r-1", ID: "s-0", Agent: "worker", Status: "failed"})
			tx.UpsertSession(&Session{RunID: "r-1", ID: "s-undone", Agent: "worker", Status: "running"})
			tx.InsertEffect("r-1", "s-0", "call_2", 0, "spawn", []byte(`{}`))
			tx.InsertBroadcast(&Broadcast{RunID: "r-1", ID: "b-2", Seq: 2, Kind: "broadcast", FromSession: "s-0", Message: "undone"})
			if _, err := tx.ShareContent("undone text"); err != nil {
				return err
			}
			if len(tx.savepoints) != 1 || tx.savepoints[0] {
				t.Errorf("savepoints %v inside a step that ran no statement", tx.savepoints)
			}
			return errors.New("refused")
		})
		return nil
	})
	if err != nil || inner == nil {
		t.Fatalf("Do = %v, nested = %v", err, inner)
	}
	sessions, err := s.Sessions(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != many {
		t.Fatalf("%d sessions stored, want %d", len(sessions), many)
	}
	for _, x := range sessions {
		if x.Status != "running" || x.Turns != 1 {
			t.Errorf("session %s stored as %s after %d turns, want its last version (running, 1)", x.ID, x.Status, x.Turns)
		}
	}
	effects, err := s.Effects(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 1 || effects[0].CallID != "call_1" {
		t.Errorf("effects = %+v, want call_1's alone", effects)
	}
	bs, err := s.Broadcasts(ctx, "r-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Message != "kept" {
		t.Errorf("broadcasts = %+v, want the kept one alone", bs)
	}
	var texts []string
	rows, err := s.read.QueryContext(ctx, `SELECT id, content FROM shared_contents ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			t.Fatal(err)
		}
		if id != shared.ID {
			t.Errorf("shared text %q has id %d, want %d", text, id, shared.ID)
		}
		texts = append(texts, text)
	}
	if fmt.Sprint(texts) != "[kept text]" {
		t.Errorf("shared texts = %q", texts)
	}
}

// A nested step that runs a statement right away opens its savepoint (and
// its enclosing steps' savepoints) first, and a failure rolls the statement
// back.
func TestNestedOpensItsSavepointForAStatement(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	var inner error
	err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: "r-1", Goal: "kept", Status: "running"}); err != nil {
			return err
		}
		return tx.Nested(func() error {
			inner = tx.Nested(func() error {
				if err := tx.UpdateRun(&Run{ID: "r-1", Status: "failed"}); err != nil {
					return err
				}
				if fmt.Sprint(tx.savepoints) != "[true true]" {
					t.Errorf("savepoints %v after a statement, want both open", tx.savepoints)
				}
				return errors.New("refused")
			})
			return nil
		})
	})
	if err != nil || inner == nil {
		t.Fatalf("Do = %v, nested = %v", err, inner)
	}
	r, err := s.Run(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "running" {
		t.Errorf("run status %s: the nested update was not rolled back", r.Status)
	}
}

func TestLastOfEachKey(t *testing.T) {
	row := func(run, id, v string) []any { return []any{run, id, v} }
	cat := func(rs ...[]any) []any {
		var out []any
		for _, r := range rs {
			out = append(out, r...)
		}
		return out
	}
	for _, c := range []struct {
		name     string
		in, want []any
	}{
		{"none", nil, nil},
		{"one", row("r", "a", "1"), row("r", "a", "1")},
		{"distinct", cat(row("r", "a", "1"), row("r", "b", "1")), cat(row("r", "a", "1"), row("r", "b", "1"))},
		{"repeated", cat(row("r", "a", "1"), row("r", "b", "1"), row("r", "a", "2")), cat(row("r", "b", "1"), row("r", "a", "2"))},
		{"same id in two runs", cat(row("r", "a", "1"), row("q", "a", "1")), cat(row("r", "a", "1"), row("q", "a", "1"))},
		{"key parts do not run together", cat(row("ra", "b", "1"), row("r", "ab", "1")), cat(row("ra", "b", "1"), row("r", "ab", "1"))},
	} {
		if got := lastOfEachKey(c.in, 3, 2); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// Two processes may use one database at once, each with runs of its own:
// the ids the store gives out across runs (messages, inbox items, shared
// texts) are read again inside each transaction, so neither takes an id
// the other has stored.
func TestTwoStoresShareOneDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	ctx := context.Background()
	const perStore = 100
	var stores []*Store
	for range 2 {
		s, err := Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*perStore)
	for i, s := range stores {
		run := fmt.Sprintf("r-%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range perStore {
				// Do: one commit each, so that the two writers' transactions
				// alternate.
				errs <- s.Do(ctx, func(tx *Tx) error {
					text := fmt.Sprintf("shared %s %d", run, n)
					sh, err := tx.ShareContent(text)
					if err != nil {
						return err
					}
					if err := tx.InsertMessage(&Message{RunID: run, SessionID: "s-1", Index: n, Role: "user", Content: "x" + text, Shared: sh}); err != nil {
						return err
					}
					return tx.AppendInbox(&InboxItem{RunID: run, SessionID: "s-1", Kind: "note", Content: "x"})
				})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range stores {
		if err := s.Do(ctx, func(*Tx) error { return nil }); err != nil {
			t.Fatalf("store %d failed: %v", i, err)
		}
	}
	for i := range stores {
		run := fmt.Sprintf("r-%d", i)
		msgs, err := stores[0].Messages(ctx, run, "s-1", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != perStore {
			t.Fatalf("run %s has %d messages, want %d", run, len(msgs), perStore)
		}
		for n, m := range msgs {
			if want := fmt.Sprintf("xshared %s %d", run, n); m.Content != want {
				t.Fatalf("run %s message %d reads %q, want %q", run, n, m.Content, want)
			}
		}
	}
}

// EventsAfter gives every logged event past a sequence, in order, wherever
// that sequence falls in the groups the log stores events in.
func TestEventsAfter(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	total := 0
	for _, n := range []int{3, 1, 4} { // one group per commit
		err := s.Do(ctx, func(tx *Tx) error {
			for range n {
				if _, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "e"}); err != nil {
					return err
				}
			}
			_, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-2", Error: "other run"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	for after := 0; after <= total; after++ {
		evs, err := s.EventsAfter(ctx, "r-1", int64(after))
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != total-after {
			t.Fatalf("after %d: %d events, want %d", after, len(evs), total-after)
		}
		for i, e := range evs {
			if e.RunID != "r-1" || e.Seq != int64(after+1+i) {
				t.Fatalf("after %d: event %d is %s seq %d", after, i, e.RunID, e.Seq)
			}
		}
	}

	// A group read whole is not read again: a view polls a quiet run
	// four times a second, and the last group can be megabytes. Spoiled
	// here, the last group would fail to decode if it were.
	db, err := sql.Open("sqlite", "file:"+s.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE events SET data = 'not json' WHERE run_id = 'r-1' AND last_seq = ?`, total); err != nil {
		t.Fatal(err)
	}
	if evs, err := s.EventsAfter(ctx, "r-1", int64(total)); err != nil || len(evs) != 0 {
		t.Fatalf("after the last event: %d events, %v", len(evs), err)
	}
}

// Once a checkpoint has folded the whole WAL back, the writer starts the log
// afresh during the pause, so that the next commit appends to it instead of
// restarting it (and syncing its header) on the way of whoever waits.
func TestWALRestartsDuringThePause(t *testing.T) {
	s := openTest(t, nil)
	s.ckQuiet, s.ckLatest = 20*time.Millisecond, time.Hour
	ctx := context.Background()
	write := func(i int) {
		t.Helper()
		writeMessage(t, s, i)
	}
	// The WAL header's checkpoint sequence number (bytes 12 to 15) changes
	// with every restart of the log.
	sequence := func() uint32 {
		t.Helper()
		b, err := os.ReadFile(s.Path() + "-wal")
		if err != nil || len(b) < 32 {
			t.Fatalf("read the WAL header: %v (%d bytes)", err, len(b))
		}
		return binary.BigEndian.Uint32(b[12:16])
	}
	write(0)
	before := sequence()
	deadline := time.Now().Add(30 * time.Second)
	for s.restarts.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no restart of the WAL after %d checkpoints", s.checkpoints.Load())
		}
		time.Sleep(time.Millisecond)
	}
	restarted := sequence()
	if restarted == before {
		t.Fatal("the writer's restart left the WAL as it was")
	}
	// A one-page log is not worth a checkpoint: none follows the restart.
	n := s.checkpoints.Load()
	time.Sleep(100 * time.Millisecond)
	if got := s.checkpoints.Load(); got != n {
		t.Fatalf("%d checkpoints after the restart, want none", got-n)
	}
	write(1)
	if got := sequence(); got != restarted {
		t.Fatalf("the commit after the restart restarted the log again (sequence %d, then %d)", restarted, got)
	}
	// The restart wrote nothing of its own: the id is as it was, and both
	// messages are there.
	var appID string
	if err := s.read.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil || appID != s.appID {
		t.Fatalf("application_id %s (%v), want %s", appID, err, s.appID)
	}
	msgs, err := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("%d messages (%v), want 2", len(msgs), err)
	}
}

// A shadow answer's tokens are stored with it and read back, so that a
// resumed run still counts them to the session it answered for.
func TestResponseUsageIsStored(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: time.Now()}); err != nil {
			return err
		}
		if err := tx.UpsertQuestion(&Question{RunID: "r-1", ID: "q-1", FromSession: "s-1", Kind: "ask_others", Question: "?",
			Status: "open", CreatedAt: time.Now(), Deadline: time.Now().Add(time.Minute)}); err != nil {
			return err
		}
		return tx.InsertResponse("r-1", "q-1", Response{Responder: "s-2", Name: "s-2", Content: "yes",
			Usage: Usage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127}})
	})
	if err != nil {
		t.Fatal(err)
	}
	qs, err := s.Questions(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || len(qs[0].Responses) != 1 || qs[0].Responses[0].Usage != (Usage{PromptTokens: 120, CompletionTokens: 7, TotalTokens: 127}) {
		t.Fatalf("responses read back: %+v", qs)
	}
}

// A session's row lags behind its messages when the process was killed
// mid-work (it is written when the status changes): Sessions reports what
// the messages and shadow answers say it spent, its turns and last tool.
func TestSessionsCountWhatIsStoredOfThem(t *testing.T) {
	s := openTest(t, nil)
	ctx := context.Background()
	now := time.Now()
	err := s.Do(ctx, func(tx *Tx) error {
		if err := tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: now}); err != nil {
			return err
		}
		if err := tx.UpsertSession(&Session{RunID: "r-1", ID: "s-1", Agent: "researcher", Status: "running", CreatedAt: now}); err != nil {
			return err
		}
		for i, m := range []*Message{
			{Role: "system", Content: "sys"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c1", Name: "read_file", Arguments: "{}"}}, Usage: Usage{PromptTokens: 100, CompletionTokens: 10}},
			{Role: "tool", Content: "{}", ToolCallID: "c1"},
			{Role: "assistant", ToolCalls: []ToolCall{{ID: "c2", Name: "list_files"}, {ID: "c3", Name: "task_broadcast"}}, Usage: Usage{PromptTokens: 200, CompletionTokens: 20}},
		} {
			m.RunID, m.SessionID, m.Index, m.CreatedAt = "r-1", "s-1", i, now
			if err := tx.InsertMessage(m); err != nil {
				return err
			}
		}
		if err := tx.UpsertQuestion(&Question{RunID: "r-1", ID: "q-1", FromSession: "s-0", Kind: "ask_others", Question: "?",
			Status: "answered", CreatedAt: now, Deadline: now}); err != nil {
			return err
		}
		return tx.InsertResponse("r-1", "q-1", Response{Responder: "s-1", Name: "s-1", Content: "a", Usage: Usage{PromptTokens: 50, CompletionTokens: 5}})
	})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := s.Sessions(ctx, "r-1")
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{PromptTokens: 350, CompletionTokens: 35, TotalTokens: 385}
	if len(ss) != 1 || ss[0].Usage != want || ss[0].Turns != 2 || ss[0].LastTool != "task_broadcast" {
		t.Fatalf("sessions: %+v", ss)
	}
}

// Processes started at once on a new database all open it: one migrates,
// the others find it done under the write lock.
func TestConcurrentOpenOfANewDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "new.db")
	const n = 4
	errs := make(chan error, n)
	stores := make(chan *Store, n)
	for range n {
		go func() {
			s, err := Open(path, nil)
			errs <- err
			stores <- s
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
		if s := <-stores; s != nil {
			defer s.Close()
		}
	}
}

// A database path may hold the characters an SQLite URI gives a meaning
// to: the file is the one named, written and read back.
func TestPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a?b#c%20d")
	path := filepath.Join(dir, "runs?.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path it was given: %v", err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("files beside the database's directory: %v", names)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// The writer converts the arguments of its multi-row inserts itself
// (execBatch); it must bind what database/sql would have bound.
func TestDriverValueAsDatabaseSQL(t *testing.T) {
	type status string
	type count int
	for _, v := range []any{nil, 0, 7, -1 << 40, int64(300), 2.5, true, false, "text", []byte("b"), status("running"), count(12), uint8(3), int32(-9)} {
		got, err := driverValue(v)
		want, werr := driver.DefaultParameterConverter.ConvertValue(v)
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("driverValue(%#v) = %#v, %v; database/sql binds %#v, %v", v, got, err, want, werr)
		}
	}
	if _, err := driverValue(struct{}{}); err == nil {
		t.Error("a struct converted without an error")
	}
}

// AtEnd runs after the operation's own function, in order, in the same
// transaction, and only when that function succeeded; an error from it
// refuses the operation like one from the function would.
func TestAtEndRunsAfterTheOperation(t *testing.T) {
	var mu sync.Mutex
	var published []string
	s := openTest(t, func(evs []event.Event) {
		mu.Lock()
		for _, e := range evs {
			published = append(published, e.Error)
		}
		mu.Unlock()
	})
	ctx := context.Background()
	var order []string
	err := s.Do(ctx, func(tx *Tx) error {
		tx.AtEnd(func(tx *Tx) error {
			order = append(order, "first")
			tx.AtEnd(func(*Tx) error { order = append(order, "added by first"); return nil })
			_, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "at end"})
			return err
		})
		tx.AtEnd(func(*Tx) error { order = append(order, "second"); return nil })
		order = append(order, "fn")
		_, err := tx.Emit(event.Event{Type: event.Error, RunID: "r-1", Error: "in fn"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"fn", "first", "second", "added by first"}; !slices.Equal(order, want) {
		t.Errorf("order %q; want %q", order, want)
	}
	order = nil
	refused := errors.New("refused at the end")
	err = s.Do(ctx, func(tx *Tx) error {
		tx.AtEnd(func(*Tx) error { return refused })
		return errors.New("the function failed")
	})
	if err == nil || errors.Is(err, refused) {
		t.Errorf("an operation that failed ran its end: %v", err)
	}
	err = s.Do(ctx, func(tx *Tx) error {
		tx.AtEnd(func(*Tx) error { return refused })
		return nil
	})
	if !errors.Is(err, refused) {
		t.Errorf("an end that failed: %v; want %v", err, refused)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"in fn", "at end"}; !slices.Equal(published, want) {
		t.Errorf("published %q; want %q", published, want)
	}
}

// A database file deleted or replaced under the store is noticed: SQLite
// goes on writing to the file it has open, which nobody can open again.
func TestDatabaseFileGone(t *testing.T) {
	insert := func(s *Store, id string) error {
		return s.Do(context.Background(), func(tx *Tx) error {
			return tx.InsertRun(&Run{ID: id, Goal: "g", Status: "running", CreatedAt: time.Now()})
		})
	}
	for _, tc := range []struct {
		name string
		do   func(path string) error
		want string
	}{
		{"deleted", func(path string) error { return os.Remove(path) }, "was deleted while swarmdeck was using it"},
		{"replaced", func(path string) error {
			other := path + ".other"
			if err := os.WriteFile(other, nil, 0o644); err != nil {
				return err
			}
			return os.Rename(other, path)
		}, "was replaced by another file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := openTest(t, nil)
			s.ckQuiet = 10 * time.Millisecond
			if err := s.CheckFile(); err != nil {
				t.Fatalf("a file left alone: %v", err)
			}
			if err := insert(s, "r-1"); err != nil {
				t.Fatal(err)
			}
			if err := tc.do(s.Path()); err != nil {
				t.Fatal(err)
			}
			if err := s.CheckFile(); !errors.Is(err, ErrFileGone) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CheckFile = %v", err)
			}
			// The checkpointer looks after the next pause in the writes,
			// and the store stops with the reason.
			insert(s, "r-2")
			select {
			case <-s.Failed():
			case <-time.After(10 * time.Second):
				t.Fatal("the store did not stop")
			}
			if err := insert(s, "r-3"); !errors.Is(err, ErrFileGone) {
				t.Errorf("a write after: %v", err)
			}
		})
	}
}

// sqliteErr is an error with an SQLite result code, as the driver's are.
type sqliteErr int

func (e sqliteErr) Error() string { return "sqlite error " + strconv.Itoa(int(e)) }
func (e sqliteErr) Code() int     { return int(e) }

// A database another process holds is told as such whether SQLite says
// "locked" or, when the holder stopped with the WAL's index locked,
// "locking protocol" (seen with a process stopped while it opened the
// database): both mean wait, or let the holder go on.
func TestIsBusy(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{sqliteErr(5), true},                               // SQLITE_BUSY
		{sqliteErr(5 | 2<<8), true},                        // SQLITE_BUSY_SNAPSHOT
		{fmt.Errorf("open x.db: %w", sqliteErr(15)), true}, // SQLITE_PROTOCOL
		{sqliteErr(1), false},
		{sqliteErr(11), false}, // SQLITE_CORRUPT
		{errors.New("database is locked"), false},
	} {
		if got := IsBusy(tc.err); got != tc.want {
			t.Errorf("IsBusy(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
