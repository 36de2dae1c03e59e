package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// lineWriter hands each complete line written to it to fn, in order.
type lineWriter struct {
	mu  sync.Mutex
	buf []byte
	fn  func(line []byte)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(bytes.Clone(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// Every --json line says which session it concerns (DESIGN.md section 7):
// the run's own events name the orchestrator, and an error from the
// control channel names the session its command was about, or the
// orchestrator when it was about none.
func TestJSONLinesAllCarrySessionID(t *testing.T) {
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if role, _ := recRole(req); role != "orchestrator" {
			return scripted.Reply{Content: "3 files"}
		}
		switch recTurn(req) {
		case 0:
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "sessions_spawn", Args: map[string]any{"task": "count the files", "label": "counter", "wait": true}}}}
		case 1:
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_others", Args: map[string]any{"question": "Ship on Friday?", "timeout": 600}}}}
		}
		return scripted.Reply{Content: "shipping on Friday"}
	})
	hs := recServer(t, policy)
	e := recEngine(t, t.TempDir(), hs.URL+"/v1", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	controlR, controlW := io.Pipe()
	defer controlW.Close()
	var (
		lines               []map[string]any
		root, child, asked  string
		childDone, sentOnce bool
	)
	out := &lineWriter{fn: func(line []byte) {
		var ev map[string]any
		if err := json.Unmarshal(line, &ev); err != nil {
			t.Errorf("bad --json line %q: %v", line, err)
			return
		}
		lines = append(lines, ev)
		switch ev["type"] {
		case "session.created":
			s := ev["session"].(map[string]any)
			if s["parent_id"] == nil {
				root = s["id"].(string)
			} else {
				child = s["id"].(string)
			}
		case "session.status":
			if s := ev["session"].(map[string]any); s["id"] == child && s["status"] == StatusCompleted {
				childDone = true
			}
		case "question.opened":
			asked = ev["question"].(map[string]any)["id"].(string)
		}
		if childDone && asked != "" && !sentOnce {
			sentOnce = true
			commands := "not json\n" +
				`{"op":"cancel","session_id":"` + child + `"}` + "\n" +
				`{"op":"skip","question_id":"q-nope"}` + "\n" +
				`{"op":"answer","question_id":"` + asked + `","text":"yes"}` + "\n"
			go io.WriteString(controlW, commands)
		}
	}}
	code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: out, Control: controlR},
		func(ctx context.Context) (*Run, error) { return e.Start(ctx, "decide the launch day") })
	if ctx.Err() != nil {
		t.Fatal("the run did not end")
	}
	if err != nil || code != ExitOK {
		t.Fatalf("exit %d: %v", code, err)
	}
	if root == "" || child == "" || !sentOnce {
		t.Fatalf("the run did not go as scripted: root %q, child %q, control sent %v", root, child, sentOnce)
	}

	wantErrors := map[string]string{
		"not a JSON command":            root,
		"has already ended (completed)": child,
		`no question "q-nope" in`:       root,
	}
	seen := map[string]int{}
	for _, ev := range lines {
		typ, _ := ev["type"].(string)
		sid, ok := ev["session_id"].(string)
		if !ok {
			t.Errorf("%s line has no session_id: %v", typ, ev)
			continue
		}
		seen[typ]++
		switch typ {
		case "run.started", "run.finished":
			if sid != root {
				t.Errorf("%s names session %q, want the orchestrator %q", typ, sid, root)
			}
		case "error":
			msg, _ := ev["error"].(string)
			matched := false
			for part, want := range wantErrors {
				if strings.Contains(msg, part) {
					matched = true
					if sid != want {
						t.Errorf("error %q names session %q, want %q", msg, sid, want)
					}
				}
			}
			if !matched {
				t.Errorf("unexpected error event %q", msg)
			}
		}
	}
	if seen["run.started"] != 1 || seen["run.finished"] != 1 || seen["error"] != len(wantErrors) {
		t.Errorf("events seen: %v", seen)
	}
}

type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// A run whose answer cannot be written (stdout on a full disk, closed) does
// not exit 0 as if a script had its answer: it says where the answer is.
func TestAnswerThatCannotBeWrittenFails(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code, err := e.Headless(ctx, HeadlessOptions{Out: fullWriter{}, Log: &log}, func(ctx context.Context) (*Run, error) {
		return e.Start(ctx, "Plan a product launch")
	})
	if code != ExitFailed || err == nil || !strings.Contains(err.Error(), "completed, but its answer could not be written to the output (no space left on device): `swarmdeck export r-") {
		t.Fatalf("exit %d, %v", code, err)
	}
	if !strings.Contains(log.String(), "completed (") {
		t.Errorf("the progress lost the run's end: %q", log.String())
	}
}

// In a locale that is not UTF-8 the progress marks are ASCII: the
// demo's run, which spawns, calls tools, broadcasts and delegates, prints
// none of ✓ → ✉ ⇢ then.
func TestProgressInASCII(t *testing.T) {
	logs := map[bool]string{}
	for _, ascii := range []bool{false, true} {
		e := testEngine(t, nil, nil, nil)
		var out, log bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		code, err := e.Headless(ctx, HeadlessOptions{Out: &out, Log: &log, ASCII: ascii}, func(ctx context.Context) (*Run, error) {
			return e.Start(ctx, "Plan a product launch")
		})
		cancel()
		if code != ExitOK || err != nil {
			t.Fatalf("exit %d, %v", code, err)
		}
		logs[ascii] = log.String()
	}
	for _, mark := range []string{"✓", "→", "✉", "⇢"} {
		if !strings.Contains(logs[false], mark) {
			t.Errorf("the progress has no %s to write in ASCII:\n%s", mark, logs[false])
		}
	}
	for _, r := range logs[true] {
		if r > 0x7f {
			t.Fatalf("the ASCII progress holds %q:\n%s", r, logs[true])
		}
	}
	if !strings.Contains(logs[true], " -> ") || !strings.Contains(logs[true], "  ok ") {
		t.Errorf("the ASCII progress has no -> or ok:\n%s", logs[true])
	}
}

// A model's answer printed on a terminal cannot drive it: its control
// characters are escaped, while a pipe or a file gets the answer as it is.
func TestAnswerOnATerminalIsEscaped(t *testing.T) {
	const answer = "done \x1b]0;owned\a\x1b[2J"
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply { return limSay(answer) })
	for _, terminal := range []bool{true, false} {
		e := testEngine(t, nil, policy, nil)
		var out, log bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		code, err := e.Headless(ctx, HeadlessOptions{Out: &out, OutTerminal: terminal, Log: &log}, func(ctx context.Context) (*Run, error) {
			return e.Start(ctx, "Plan a product launch")
		})
		cancel()
		if code != ExitOK || err != nil {
			t.Fatalf("exit %d, %v", code, err)
		}
		want := answer
		if terminal {
			want = `done \x1b]0;owned\x07\x1b[2J`
		}
		if got := strings.TrimSpace(out.String()); got != want {
			t.Errorf("terminal %v: the answer printed is %q, want %q", terminal, got, want)
		}
	}
}

type codedErr struct{ code int }

func (e codedErr) Error() string { return fmt.Sprintf("database or disk is full (%d)", e.code) }
func (e codedErr) Code() int     { return e.code }

// A run the database could not take (a full disk) exits 1, not 2: nothing
// was wrong with how swarmdeck was called.
func TestStartRefusedByTheStoreIsNoUsageError(t *testing.T) {
	e := testEngine(t, nil, nil, nil)
	for _, tc := range []struct {
		err  error
		want int
	}{
		{fmt.Errorf("store x.db: commit: %w", codedErr{13}), ExitFailed},
		{errors.New("the goal is empty: say what the swarm should do"), ExitUsage},
	} {
		code, err := e.Headless(context.Background(), HeadlessOptions{Out: io.Discard}, func(context.Context) (*Run, error) { return nil, tc.err })
		if code != tc.want || err == nil {
			t.Errorf("%v: exit %d (%v), want %d", tc.err, code, err, tc.want)
		}
	}
}

// Text bound for a terminal shows its controls as escapes: those that move
// the cursor or set the title, and the bidi controls that show the rest of
// a line reversed; other text, right-to-left scripts included, is kept.
func TestTerminalText(t *testing.T) {
	for in, want := range map[string]string{
		"plain goal":               "plain goal",
		"red \x1b[31m":             `red \x1b[31m`,
		"c1 \u009b2J":              `c1 \u009b2J`,
		"Bidi \u202eevil\u202c ok": `Bidi \u202eevil\u202c ok`,
		"\u2066isolated\u2069":     `\u2066isolated\u2069`,
		"שלום … “quoted” • kept":   "שלום … “quoted” • kept",
		"lines\nand\ttabs":         "lines\nand\ttabs",
		"not utf-8 \xff":           `not utf-8 \xff`,
	} {
		if got := TerminalText(in); got != want {
			t.Errorf("TerminalText(%q) = %q, want %q", in, got, want)
		}
	}
}
