package store

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// loggedForm is what the log keeps of e, built with encoding/json: the
// event as it is, but a message reduced to its address.
func loggedForm(t testing.TB, e event.Event) []byte {
	t.Helper()
	if e.Message != nil {
		m := e.Message
		e.Message = &event.MessageInfo{ID: m.ID, Index: m.Index, Role: m.Role, Source: m.Source, Synthetic: m.Synthetic, NoReply: m.NoReply}
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	return b
}

// checkAppendEvent fails unless appendEvent writes valid JSON that decodes
// to what encoding/json writes of the logged form, both as an Event and as
// plain JSON values (which also catches a key misspelt while empty).
func checkAppendEvent(t testing.TB, e event.Event) {
	t.Helper()
	_, wantErr := json.Marshal(e)
	got, err := appendEvent([]byte("prefix"), &e)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("appendEvent error %v, encoding/json error %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if string(got[:6]) != "prefix" {
		t.Fatalf("appendEvent overwrote what the buffer held: %q", got)
	}
	got = got[6:]
	want := loggedForm(t, e)

	var gotEv, wantEv event.Event
	if err := json.Unmarshal(got, &gotEv); err != nil {
		t.Fatalf("appendEvent wrote invalid JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal(want, &wantEv); err != nil {
		t.Fatalf("decode encoding/json's output: %v", err)
	}
	if !reflect.DeepEqual(gotEv, wantEv) {
		t.Fatalf("decoded events differ\n got: %s\nwant: %s", got, want)
	}

	var gotAny, wantAny map[string]any
	if err := json.Unmarshal(got, &gotAny); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(want, &wantAny); err != nil {
		t.Fatal(err)
	}
	if m, ok := wantAny["message"].(map[string]any); ok {
		delete(m, "content") // not omitempty in MessageInfo, and empty in the log
	}
	if !reflect.DeepEqual(gotAny, wantAny) {
		t.Fatalf("JSON values differ\n got: %s\nwant: %s", got, want)
	}
}

func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 21, 17, 25, 38, 435788758, time.UTC)
	local := time.Date(2026, 3, 1, 9, 0, 0, 0, time.FixedZone("CET", 3600))
	weird := "quote \" backslash \\ newline \n tab \t <html> & \u2028 \x01 invalid \xff é 日本"
	cases := []struct {
		name string
		e    event.Event
	}{
		{"run started", event.Event{Seq: 1, Time: at, Type: event.RunStarted, RunID: "r-1",
			Run: &event.RunInfo{ID: "r-1", Goal: weird, Status: "running", Provider: "scripted", Model: "m",
				Scripted: true, Workspace: "/tmp/ws", StartedAt: local}}},
		{"run finished", event.Event{Seq: 9, Time: at, Type: event.RunFinished, RunID: "r-1",
			Run: &event.RunInfo{ID: "r-1", Status: "failed", Resumed: true, Result: "done", Error: weird,
				Usage: event.Usage{PromptTokens: 7, CompletionTokens: 8, TotalTokens: 15}, EndedAt: at.Add(time.Second)}}},
		{"run resumed twice", event.Event{Seq: 12, Time: at, Type: event.RunStarted, RunID: "r-1",
			Run: &event.RunInfo{ID: "r-1", Status: "running", Resumed: true, StartedAt: local,
				Pauses: []event.Pause{{From: at, To: at.Add(time.Hour)}, {From: local.Add(2 * time.Hour), To: at.Add(3 * time.Hour)}}}}},
		{"session created, bare", event.Event{Seq: 2, Time: at, Type: event.SessionCreated, RunID: "r-1", SessionID: "s-1",
			Session: &event.SessionInfo{ID: "s-1", Agent: "orchestrator", Status: "running", CreatedAt: at}}},
		{"session status, every field", event.Event{Seq: 3, Time: at, Type: event.SessionStatus, RunID: "r-1", SessionID: "s-2",
			Session: &event.SessionInfo{ID: "s-2", ParentID: "s-1", Agent: "researcher", Label: "leaf-1", Title: weird,
				Status: "failed", Depth: 3, Kind: "delegation", SharedContext: json.RawMessage(" { \"a\" : [1, 2] } "),
				Reason: weird, Result: "r", Error: "e", Usage: event.Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3},
				Turns: 4, WaitingHuman: true, Retrying: weird, LastTool: "task_broadcast", LastToolFailed: true, CreatedAt: local, EndedAt: at}}},
		{"message appended", event.Event{Seq: 4, Time: at, Type: event.MessageAppended, RunID: "r-1", SessionID: "s-1",
			Message: &event.MessageInfo{ID: 12, Index: 3, Role: "tool", Content: weird, Synthetic: true, NoReply: true,
				Source: "agent", ToolCalls: []event.ToolCall{{ID: "c", Name: "n", Arguments: "{}"}}, ToolCallID: "call-1",
				Usage: &event.Usage{TotalTokens: 5}}}},
		{"tool started", event.Event{Seq: 5, Time: at, Type: event.ToolStarted, RunID: "r-1", SessionID: "s-1",
			Tool: &event.ToolInfo{CallID: "call-1", Name: "sessions_spawn", Arguments: `{"task":["a"]}`}}},
		{"tool finished with an error", event.Event{Seq: 6, Time: at, Type: event.ToolFinished, RunID: "r-1", SessionID: "s-1",
			Tool: &event.ToolInfo{CallID: "call-1", Name: "read_file", Result: weird, IsError: true, DurationMS: 12}}},
		{"broadcast", event.Event{Seq: 7, Time: at, Type: event.BroadcastSent, RunID: "r-1", SessionID: "s-1",
			Broadcast: &event.BroadcastInfo{ID: "b-1", Kind: event.KindBroadcast, FromSession: "s-1", From: "researcher (leaf-1)",
				Category: "discovery", Target: "siblings", Message: weird, Recipients: []string{"s-2", "s-3"}, Skipped: 1,
				NoReply: true, Timestamp: at}}},
		{"broadcast from the human to nobody", event.Event{Seq: 8, Time: at, Type: event.BroadcastSent, RunID: "r-1",
			Broadcast: &event.BroadcastInfo{ID: "b-2", Kind: event.KindHuman, From: "human", Target: "all", Message: "hi", Timestamp: at}}},
		{"broadcast with empty recipients", event.Event{Seq: 8, Time: at, Type: event.BroadcastSent, RunID: "r-1",
			Broadcast: &event.BroadcastInfo{ID: "b-3", Kind: event.KindMessage, From: "x", Target: "s-2", Recipients: []string{}, Timestamp: at}}},
		{"plan", event.Event{Seq: 10, Time: at, Type: event.PlanUpdated, RunID: "r-1", SessionID: "s-1",
			Plan: &event.PlanInfo{SessionID: "s-1", Tasks: []event.PlanTask{{ID: "t1", Description: weird, Status: "pending", DependsOn: []string{"t0"}}}}}},
		{"delegation", event.Event{Seq: 11, Time: at, Type: event.DelegationUpdated, RunID: "r-1", SessionID: "s-1",
			Delegation: &event.DelegationInfo{ID: "d-1", ParentSession: "s-1", Description: "d", Status: "running", Depth: 1, CreatedAt: at}}},
		{"question", event.Event{Seq: 12, Time: at, Type: event.QuestionOpened, RunID: "r-1", SessionID: "s-1",
			Question: &event.QuestionInfo{}}},
		{"error", event.Event{Seq: 13, Time: at, Type: event.Error, RunID: "r-1", Error: weird}},
		{"zero times", event.Event{Seq: 14, Type: event.SessionStatus, RunID: "r-1",
			Session: &event.SessionInfo{ID: "s-1"}}},
		{"time out of range", event.Event{Seq: 15, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Type: event.Error, RunID: "r-1"}},
		{"invalid shared context", event.Event{Seq: 16, Time: at, Type: event.SessionCreated, RunID: "r-1",
			Session: &event.SessionInfo{ID: "s-1", SharedContext: json.RawMessage(`{"a":`)}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkAppendEvent(t, c.e) })
	}
}

// FuzzAppendEvent builds events of every hand-encoded kind from the fuzzed
// values and checks each against encoding/json.
func FuzzAppendEvent(f *testing.F) {
	f.Add(int64(1), "r-1", "s-1", "title", "reason", "message", 3, true, int64(1763745938435788758), []byte(`{"k":"v"}`))
	f.Add(int64(0), "", "", "", "", "", 0, false, int64(0), []byte(nil))
	f.Add(int64(-5), "r-\"x\"", "s\\1", "<b>&</b>", "\u2028\u2029", "\xff\xfe", -1, true, int64(-62135596800000000), []byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, seq int64, runID, sessionID, a, b, c string, n int, flag bool, nanos int64, raw []byte) {
		at := time.Unix(0, nanos).UTC()
		events := []event.Event{
			{Seq: seq, Time: at, Type: event.RunStarted, RunID: runID, SessionID: sessionID,
				Run: &event.RunInfo{ID: runID, Goal: a, Status: b, Provider: c, Model: a, Scripted: flag, Resumed: !flag,
					Workspace: b, Result: c, Error: a, Usage: event.Usage{PromptTokens: n, TotalTokens: -n}, StartedAt: at,
					EndedAt: at.Add(time.Duration(n)), Pauses: []event.Pause{{From: at, To: at.Add(time.Duration(n))}}}},
			{Seq: seq, Time: at, Type: event.SessionStatus, RunID: runID, SessionID: sessionID,
				Session: &event.SessionInfo{ID: sessionID, ParentID: a, Agent: b, Label: c, Title: a, Status: b, Depth: n,
					Kind: c, SharedContext: json.RawMessage(raw), Reason: a, Result: b, Error: c, Turns: n,
					WaitingHuman: flag, LastTool: a, LastToolFailed: !flag, CreatedAt: at, EndedAt: at.Add(time.Duration(n))}},
			{Seq: seq, Time: at, Type: event.MessageAppended, RunID: runID, SessionID: sessionID,
				Message: &event.MessageInfo{ID: seq, Index: n, Role: a, Content: b, Synthetic: flag, NoReply: !flag, Source: c, ToolCallID: a}},
			{Seq: seq, Time: at, Type: event.ToolFinished, RunID: runID, SessionID: sessionID,
				Tool: &event.ToolInfo{CallID: a, Name: b, Arguments: c, Result: a, IsError: flag, DurationMS: int64(n)}},
			{Seq: seq, Time: at, Type: event.BroadcastSent, RunID: runID, SessionID: sessionID,
				Broadcast: &event.BroadcastInfo{ID: a, Kind: b, FromSession: c, From: a, Category: b, Target: c, Message: a,
					Recipients: []string{a, b, c}[:min(max(n, 0), 3)], Skipped: n, NoReply: flag, Timestamp: at}},
			{Seq: seq, Time: at, Type: event.Type(a), RunID: runID, Error: b},
		}
		for _, e := range events {
			checkAppendEvent(t, e)
		}
	})
}
