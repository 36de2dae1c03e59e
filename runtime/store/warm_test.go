package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

func TestChunk(t *testing.T) {
	for _, c := range []struct {
		n, most int
		want    []int
	}{
		{1, 64, []int{1}},
		{2, 64, []int{2}},
		{3, 64, []int{2, 1}},
		{46, 64, []int{32, 8, 4, 2}},
		{64, 64, []int{64}},
		{131, 64, []int{64, 64, 2, 1}},
		{200, 128, []int{128, 64, 8}},
	} {
		var got []int
		for left := c.n; left > 0; {
			k := chunk(left, c.most)
			got = append(got, k)
			left -= k
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%d rows, at most %d a statement: %v, want %v", c.n, c.most, got, c.want)
		}
	}
}

// preparedCount is how many statements the writer holds, those run
// through database/sql and the multi-row inserts, read on the writer.
func preparedCount(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.Do(context.Background(), func(tx *Tx) error {
		n = len(tx.s.stmts) + len(tx.s.batch)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// The writer prepares its statements while it waits for work, and a run's
// writes then prepare nothing: every statement the writer runs is among
// those prepared ahead. A statement added without hot (or a multi-row size
// that chunk does not produce) fails this test.
func TestWriterPreparesAheadWhileIdle(t *testing.T) {
	s := openTest(t, nil)
	keys := map[string]bool{}
	for _, w := range warmList() {
		keys[w.key] = true
	}
	// The operation that counts also runs BEGIN and COMMIT, which are
	// among the warm statements.
	deadline := time.Now().Add(30 * time.Second)
	for preparedCount(t, s) < len(keys) {
		if time.Now().After(deadline) {
			t.Fatalf("the writer prepared %d statements of %d", preparedCount(t, s), len(keys))
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := preparedCount(t, s)

	ctx := context.Background()
	now := time.Now()
	var inboxIDs []int64
	ops := []func(tx *Tx) error{
		func(tx *Tx) error {
			if ok, err := tx.RunExists("r-1"); ok || err != nil {
				return fmt.Errorf("run exists = %v, %v", ok, err)
			}
			return tx.InsertRun(&Run{ID: "r-1", Goal: "g", Status: "running", CreatedAt: now})
		},
		func(tx *Tx) error {
			if _, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: "r-1"}); err != nil {
				return err
			}
			return tx.UpsertSession(&Session{RunID: "r-1", ID: "s-1", Agent: "orchestrator", Status: "running"})
		},
		func(tx *Tx) error {
			// 46 messages and 46 inbox items: four statements each.
			for i := range 46 {
				if err := tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: i, Role: "user", Content: "m"}); err != nil {
					return err
				}
				it := &InboxItem{RunID: "r-1", SessionID: "s-1", Kind: "note", Content: "n"}
				if err := tx.AppendInbox(it); err != nil {
					return err
				}
				inboxIDs = append(inboxIDs, it.ID)
			}
			_, err := tx.InsertInbox(&InboxItem{RunID: "r-1", SessionID: "s-1", Key: "result/s-2", Kind: "task_result", Content: "r"})
			return err
		},
		func(tx *Tx) error { return tx.MarkConsumed(inboxIDs, "call_1") },
		func(tx *Tx) error {
			shared, err := tx.ShareContent("to everyone")
			if err != nil {
				return err
			}
			if err := tx.InsertMessage(&Message{RunID: "r-1", SessionID: "s-1", Index: 46, Role: "user", Shared: shared}); err != nil {
				return err
			}
			if err := tx.InsertEffect("r-1", "s-1", "call_2", 0, "broadcast", []byte(`{}`)); err != nil {
				return err
			}
			return tx.InsertBroadcast(&Broadcast{RunID: "r-1", ID: "b-1", FromSession: "s-1", Message: "hi",
				Recipients: []Recipient{{SessionID: "s-2", Status: "delivered"}, {SessionID: "s-3", Status: "skipped"}}})
		},
		func(tx *Tx) error {
			if err := tx.ReplacePlan("r-1", "s-1", []PlanTask{{ID: "a", Description: "a", Status: "pending"}}); err != nil {
				return err
			}
			if err := tx.UpsertDelegation(&Delegation{RunID: "r-1", ID: "d-1", ParentSession: "s-1", Status: "running"}); err != nil {
				return err
			}
			if err := tx.UpsertQuestion(&Question{RunID: "r-1", ID: "q-1", FromSession: "s-1", Question: "?", Status: "open",
				Responses: []Response{{Responder: "human", Content: "yes"}}}); err != nil {
				return err
			}
			return tx.RememberAnswer("key", "yes")
		},
		func(tx *Tx) error {
			tx.Nested(func() error { return errors.New("refused") })
			if err := tx.Nested(func() error { return nil }); err != nil {
				return err
			}
			return tx.UpdateRun(&Run{ID: "r-1", Status: "completed", EndedAt: time.Now()})
		},
	}
	for i, op := range ops {
		if err := s.Do(ctx, op); err != nil {
			t.Fatalf("operation %d: %v", i, err)
		}
	}
	if after := preparedCount(t, s); after != before {
		t.Errorf("the writes prepared %d statements the writer had not prepared ahead", after-before)
	}
	msgs, err := s.Messages(ctx, "r-1", "s-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 47 || msgs[46].Content != "to everyone" {
		t.Fatalf("%d messages stored", len(msgs))
	}
}
