package runtime

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// Siblings' system prompts share all but their first paragraph: the
// common end is stored once, and every stored prompt still reads back as
// exactly what its session sent to the model.
func TestSystemPromptsShareTheirEnd(t *testing.T) {
	var mu sync.Mutex
	sent := map[string]string{} // session id -> system prompt the model got
	p := policyFor(func(c *convo) scripted.Reply {
		mu.Lock()
		sent[c.id] = c.system
		mu.Unlock()
		if c.isRoot() && c.turns == 0 {
			return do(call("sessions_spawn", obj{"task": []string{"Check A", "Check B", "Check C", "Check D", "Check E"},
				"parallel": true, "label": "w", "agent": "researcher", "wait": true}))
		}
		return say("done")
	})
	e := testEngine(t, nil, p, nil)
	_, code := headless(t, e, "coordinate", nil)
	x := exportLatest(t, e)
	mustComplete(t, x, code)
	if len(x.Sessions) != 6 {
		t.Fatalf("%d sessions, want 6", len(x.Sessions))
	}
	for _, s := range x.Sessions {
		if len(s.Messages) == 0 || s.Messages[0].Role != "system" {
			t.Fatalf("session %s has no system prompt stored first", s.ID)
		}
		if got, want := s.Messages[0].Content, sent[s.ID]; got != want || want == "" {
			t.Errorf("session %s: stored system prompt (%d bytes) differs from the one sent (%d bytes)", s.ID, len(got), len(want))
		}
	}

	db, err := sql.Open("sqlite", e.Store().Path())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var referring, own, total int
	err = db.QueryRowContext(context.Background(), `SELECT COUNT(*), COALESCE(SUM(LENGTH(content)), 0) FROM messages WHERE role = 'system' AND content_ref <> 0`).Scan(&referring, &own)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(context.Background(), `SELECT SUM(LENGTH(content)) FROM messages WHERE role = 'system'`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	// The root's prompt (another role) and the first worker's are stored
	// whole; the second worker's end is shared and the other three refer
	// to it.
	if referring != 4 {
		t.Errorf("%d system prompts refer to a shared end, want 4", referring)
	}
	if full := len(sent[x.Sessions[1].ID]); own*10 > full*4 {
		t.Errorf("the 4 sharing prompts store %d bytes of their own, want a small part of %d bytes each", own, full)
	}
	t.Logf("system prompts: %d bytes stored in all", total)
}
