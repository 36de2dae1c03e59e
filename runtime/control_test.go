package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		line, op, err string
	}{
		{`{"op":"answer","question_id":"q-1","text":"2"}`, "answer", ""},
		{`{"op":"skip","question_id":"q-1"}`, "skip", ""},
		{`{"op":"skip_all"}`, "skip_all", ""},
		{`{"op":"broadcast","text":"hi","target":"all","category":"warning"}`, "broadcast", ""},
		{`{"op":"message","session_id":"s-1","text":"hi","no_reply":true}`, "message", ""},
		{`{"op":"cancel","session_id":"s-1"}`, "cancel", ""},
		{`  {"op":"skip_all"}  `, "skip_all", ""},
		{"\uFEFF{\"op\":\"skip_all\"}", "skip_all", ""}, // a byte order mark from a Windows tool
		{`{"op":"answer","question_id":"q-1"}`, "", `op "answer" needs "text"`},
		{`{"op":"message","text":"x"}`, "", `needs "session_id"`},
		{`{"op":"dance"}`, "", `unknown op "dance"`},
		{`{"text":"x"}`, "", `has no "op"`},
		{`{"op":"skip_all","extra":1}`, "", `unknown field "extra"`},
		{`not json`, "", "not a JSON command"},
		{`[1,2]`, "", "not a JSON command (it is a JSON array, and a command is an object)"},
		{`true`, "", "not a JSON command (it is a JSON boolean, and a command is an object)"},
		{`{"op":"message","session_id":"s-1","text":"x","no_reply":"yes"}`, "", `"no_reply" is a JSON string, and it takes a boolean (true or false)`},
		{`{"op":"answer","question_id":7,"text":"x"}`, "", `"question_id" is a JSON number, and it takes a string`},
		{`{"op":"skip_all"}{"op":"skip_all"}`, "", "more than one JSON value"},
		{`{"op":"answer","question_id":"q","text":` + `"` + strings.Repeat("x", MaxControlLine) + `"}`, "", "the limit is"},
	}
	for _, tt := range tests {
		c, err := ParseCommand([]byte(tt.line))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%.50q: error %v, want %q", tt.line, err, tt.err)
			}
			continue
		}
		if err != nil || c.Op != tt.op {
			t.Errorf("%.50q: got %+v, %v", tt.line, c, err)
		}
	}
}

// FuzzControlLine: no input crashes the parser, and whatever it accepts is
// a known op with the fields that op needs.
func FuzzControlLine(f *testing.F) {
	for _, s := range []string{`{"op":"answer","question_id":"q-1","text":"2"}`, `{"op":"skip_all"}`, `{"op":"message","session_id":"s","text":"t","no_reply":true}`,
		`{"op":"broadcast","text":"x","target":"s-1"}`, `{`, `{"op":null}`, `[]`, `"op"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		c, err := ParseCommand(line)
		if err != nil {
			return
		}
		switch c.Op {
		case "answer":
			if strings.TrimSpace(c.QuestionID) == "" || strings.TrimSpace(c.Text) == "" {
				t.Fatalf("accepted an answer without question or text: %+v", c)
			}
		case "skip", "skip_all", "broadcast", "message", "cancel":
		default:
			t.Fatalf("accepted unknown op %q", c.Op)
		}
	})
}

// Once the control input has ended nobody can answer, so a question to the
// person stops waiting for one at once instead of at its deadline.
func TestControlInputEndedMeansNobodyAnswers(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if role, _ := recRole(req); role == "orchestrator" && recTurn(req) == 0 {
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_others", Args: map[string]any{"question": "Ship on Friday?", "timeout": 600}}}}
		}
		return scripted.Reply{Content: "decided without an answer"}
	})
	hs := recServer(t, policy)
	e := recEngine(t, t.TempDir(), hs.URL+"/v1", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out, Control: strings.NewReader("")},
		func(ctx context.Context) (*Run, error) { return e.Start(ctx, "decide the launch day") })
	if ctx.Err() != nil {
		t.Fatal("the question waited for a person after the control input ended")
	}
	if err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	var runID string
	for _, line := range strings.Split(out.String(), "\n") {
		if runID == "" && strings.Contains(line, `"run.started"`) {
			var ev event.Event
			json.Unmarshal([]byte(line), &ev)
			runID = ev.RunID
		}
	}
	x, err := e.Export(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	res := toolResults(&x.Sessions[0], "ask_others")
	if len(res) != 1 || !strings.Contains(res[0], "no person is attached") || !strings.Contains(res[0], `"status":"timed_out"`) {
		t.Errorf("ask_others result: %q", res)
	}
	// Nobody answered: it is stored so, not as answered.
	if len(x.Questions) != 1 || x.Questions[0].Status != "timed_out" {
		t.Errorf("stored questions: %+v", x.Questions)
	}
}

// An answer to a question id the run never had says so, instead of
// claiming that the question was answered, skipped or timed out.
func TestControlAnswerToAnUnknownQuestion(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if role, _ := recRole(req); role == "orchestrator" && recTurn(req) == 0 {
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_others", Args: map[string]any{"question": "Ship on Friday?", "timeout": 600}}}}
		}
		return scripted.Reply{Content: "decided"}
	})
	hs := recServer(t, policy)
	e := recEngine(t, t.TempDir(), hs.URL+"/v1", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	control := strings.NewReader(`{"op":"answer","question_id":"q-nope","text":"yes"}` + "\n" + `{"op":"skip","question_id":"q-nope"}` + "\n")
	code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: &out, Control: control},
		func(ctx context.Context) (*Run, error) { return e.Start(ctx, "decide the launch day") })
	if err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	var errs []string
	for _, line := range strings.Split(out.String(), "\n") {
		var ev event.Event
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Type == event.Error {
			errs = append(errs, ev.Error)
		}
	}
	if len(errs) != 2 {
		t.Fatalf("error events: %q", errs)
	}
	for _, msg := range errs {
		if !strings.Contains(msg, `no question "q-nope" in run`) {
			t.Errorf("error event %q does not say that the run has no such question", msg)
		}
	}
}

// A headless run's progress says how each question ended, and each
// session's end once.
func TestProgressLines(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w}
	cancelled := &event.SessionInfo{ID: "s-2", Agent: "explorer", Label: "assets", Status: "cancelled", Reason: "parent s-1 failed"}
	p.print(event.Event{Type: event.SessionStatus, Session: cancelled})
	p.print(event.Event{Type: event.SessionStatus, Session: cancelled})
	p.print(event.Event{Type: event.QuestionClosed, Question: &event.QuestionInfo{ID: "q-1", Status: "timed_out",
		Responses: map[string]string{"s-3": "a"}, TimedOut: []string{"human"}}})
	p.print(event.Event{Type: event.QuestionClosed, Question: &event.QuestionInfo{ID: "q-2", Status: "closed",
		Responses: map[string]string{}, TimedOut: []string{}}})
	want := "  ✗ s-2 explorer (assets) cancelled: parent s-1 failed\n" +
		"  ? q-1 closed, timed out: 1 answer; no answer from human\n" +
		"  ? q-2 closed: the session that asked it ended\n"
	if w.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", w.String(), want)
	}
}

// A headless run's progress keeps each line short: a long goal and a long
// broadcast are cut, at a character and not inside one.
func TestProgressCutsLongText(t *testing.T) {
	var w bytes.Buffer
	p := &progress{w: &w}
	goal := "Write the design\nnote: " + strings.Repeat("設計 ", 400)
	p.print(event.Event{Type: event.RunStarted, Run: &event.RunInfo{ID: "r-1", Goal: goal, Provider: "openai", Model: "m"}})
	p.print(event.Event{Type: event.BroadcastSent, Broadcast: &event.BroadcastInfo{Kind: "discovery", From: "s-1", Target: "siblings",
		Message: strings.Repeat("é", 150)}})
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("progress:\n%s", w.String())
	}
	if !utf8.ValidString(w.String()) {
		t.Errorf("progress is not valid UTF-8:\n%q", w.String())
	}
	if got := utf8.RuneCountInString(lines[0]); got > len("run r-1 started: ")+goalShown || got < len("run r-1 started: ")+goalShown-1 {
		t.Errorf("the run's line is %d characters, want the goal cut to %d (less a space before the cut):\n%s", got, goalShown, lines[0])
	}
	if !strings.HasPrefix(lines[0], "run r-1 started: Write the design note: 設計 設計") || !strings.HasSuffix(lines[0], "設計…") {
		t.Errorf("the run's line: %s", lines[0])
	}
	if want := "  ✉ discovery s-1 → siblings: " + strings.Repeat("é", 99) + "…"; lines[2] != want {
		t.Errorf("the broadcast's line:\n%s\nwant:\n%s", lines[2], want)
	}
}

// A headless run's progress shows the control characters of what it
// prints as escapes: a goal, a task title or a message written by a model
// can hold terminal sequences (set the title or the clipboard, clear the
// screen), and stderr is most often a terminal. (A label with one is
// refused at the spawn: see TestSpawnLimits.)
func TestProgressEscapesTerminalControls(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Title \x1b]0;pwned\x07 with \x1b[2J escapes", "label": "x", "wait": true}),
				call("announce", obj{"message": "note \x1b]52;c;ZWNobyBoaQ==\x07 copied \u009b1m"}))
		case c.isRoot():
			return say("done")
		}
		return say("child done")
	})
	e := testEngine(t, nil, p, nil)
	var out, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, err := e.Headless(ctx, HeadlessOptions{Out: &out, Log: &stderr},
		func(ctx context.Context) (*Run, error) { return e.Start(ctx, "goal \x1b[5mblink") })
	log := stderr.String()
	if err != nil || code != ExitOK {
		t.Fatalf("exit %d (%v):\n%s", code, err, log)
	}
	if strings.ContainsAny(log, "\x1b\x07\u009b") {
		t.Errorf("progress holds raw terminal controls:\n%q", log)
	}
	for _, want := range []string{`goal \x1b[5mblink`, `Title \x1b]0;pwned\x07 with \x1b[2J escapes`, `note \x1b]52;c;ZWNobyBoaQ==\x07 copied \u009b1m`} {
		if !strings.Contains(log, want) {
			t.Errorf("progress does not show %s:\n%s", want, log)
		}
	}
}
