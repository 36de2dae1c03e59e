package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Tests of what a stopped run finds when it is resumed. The crash test in
// the main package kills the real binary; these pin the cases it found to
// one deterministic sequence each.

// recEngine opens an engine on dir's database and workspace, talking to the
// OpenAI-compatible server at baseURL. Opening it again on the same dir is
// how a test restarts swarmdeck.
func recEngine(t *testing.T, dir, baseURL string, mod func(*config.Config)) *Engine {
	t.Helper()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Workspace = ws
	cfg.LogFile = filepath.Join(dir, "log")
	cfg.Limits.MaxRetries = 4
	if mod != nil {
		mod(cfg)
	}
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	res.Name = "test"
	res.Provider = config.Provider{Type: "openai", BaseURL: baseURL}
	res.Model = "test-model"
	e, err := New(Options{Config: cfg, Resolved: res, DBPath: filepath.Join(dir, "swarmdeck.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// recServer serves a policy over HTTP, outside any engine, so that it
// outlives the engines a test stops and restarts.
func recServer(t *testing.T, p scripted.Policy) *httptest.Server {
	t.Helper()
	srv := scripted.New(scripted.Config{Policy: p})
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return hs
}

// recRun follows a run started or resumed by start to its end, headless,
// and returns its --json events, the exit status, and what the same run
// printed for people (stderr without --json). It fails the test if the run
// has not ended after a generous guard.
func recRun(t *testing.T, e *Engine, asJSON bool, start func(context.Context) (*Run, error)) ([]event.Event, int, string) {
	t.Helper()
	var out, log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	opts := HeadlessOptions{JSON: asJSON, Out: &out}
	if !asJSON {
		opts.Log = &log
	}
	code, err := e.Headless(ctx, opts, start)
	if ctx.Err() != nil {
		t.Fatalf("the run did not end (it hangs): %v", err)
	}
	if err != nil {
		t.Fatalf("headless: %v", err)
	}
	var events []event.Event
	for dec := json.NewDecoder(&out); dec.More(); {
		var ev event.Event
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("bad --json line: %v", err)
		}
		events = append(events, ev)
	}
	return events, code, log.String()
}

// recRole reads who a request is for from its system prompt: the role and
// the label.
func recRole(req *scripted.Request) (role, label string) {
	if len(req.Messages) == 0 {
		return "", ""
	}
	sys := req.Messages[0].Content
	first, _, _ := strings.Cut(sys, "\n")
	role = strings.TrimSuffix(strings.TrimPrefix(first, "You are the "), " agent of a swarmdeck swarm.")
	if i := strings.Index(sys, "\nYour label: "); i >= 0 {
		label, _, _ = strings.Cut(sys[i+len("\nYour label: "):], "\n")
	}
	return role, strings.TrimSpace(label)
}

func recTurn(req *scripted.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// crashCopy copies the database in dir, with its WAL, to a new directory
// and returns that: what a kill -9 at this point would leave.
func crashCopy(t *testing.T, dir string) string {
	t.Helper()
	crashed := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(filepath.Join(dir, "swarmdeck.db"+suffix))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(crashed, "swarmdeck.db"+suffix), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return crashed
}

// recWaitFor polls the store until cond holds: the stopped state a test
// needs is reached by the sessions' goroutines, not by the test.
func recWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("never reached: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A session stopped while a tool of its turn ran (here task_wait, blocked
// on a slow child) has items in its inbox that arrived during that turn
// (the fast child's <task_result>). On resume the cut-short call must run
// first and its result follow the call: a chat API refuses a history with
// anything between an assistant's tool calls and their results, and the
// task_wait that returns the child's outcome consumes its <task_result>
// instead of the model getting it twice.
func TestResumeFinishesCutShortToolsBeforeTheInbox(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	// The fast child answers only once the root has asked for its
	// task_wait: its result must arrive during that turn (into the inbox),
	// not before it (when the turn's start would take it into the history).
	waitAsked := make(chan struct{})
	var askedOnce sync.Once
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		role, label := recRole(req)
		switch {
		case role == "orchestrator" && recTurn(req) == 0:
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "sessions_spawn",
				Args: map[string]any{"task": []string{"fast", "slow"}, "label": "w", "agent": "researcher", "parallel": true}}}}
		case role == "orchestrator" && recTurn(req) == 1:
			askedOnce.Do(func() { close(waitAsked) })
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "task_wait"}}}
		case label == "w-2":
			<-release
			return scripted.Reply{Content: "slow result"}
		case label == "w-1":
			<-waitAsked
			return scripted.Reply{Content: "fast result"}
		}
		return scripted.Reply{Content: "all done"}
	})
	hs := recServer(t, policy)
	t.Cleanup(open) // before the server's cleanup, which waits for its handlers
	dir := t.TempDir()

	e1 := recEngine(t, dir, hs.URL+"/v1", nil)
	run, err := e1.Start(context.Background(), "wait for two children")
	if err != nil {
		t.Fatal(err)
	}
	st := e1.Store()
	var rootID string
	recWaitFor(t, "the root blocked in task_wait with the fast child's result in its inbox", func() bool {
		x, err := st.Export(context.Background(), run.ID())
		if err != nil || len(x.Sessions) < 3 {
			return false
		}
		rootID = x.Sessions[0].ID
		msgs := x.Sessions[0].Messages
		last := msgs[len(msgs)-1]
		if last.Role != "assistant" || len(last.ToolCalls) != 1 || last.ToolCalls[0].Name != "task_wait" {
			return false
		}
		inbox, err := st.PendingInbox(context.Background(), run.ID())
		if err != nil {
			return false
		}
		for _, it := range inbox {
			if it.SessionID == rootID && it.Kind == "task_result" {
				return true
			}
		}
		return false
	})
	run.Interrupt()
	e1.Close()

	// Restart: the slow child can answer now.
	open()
	e2 := recEngine(t, dir, hs.URL+"/v1", nil)
	events, code, _ := recRun(t, e2, true, func(ctx context.Context) (*Run, error) { return e2.Resume(ctx, run.ID()) })
	x, err := e2.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK || x.Run.Status != RunCompleted {
		dumpRun(t, e2)
		t.Fatalf("resumed run: exit %d, status %s (%s)", code, x.Run.Status, x.Run.Error)
	}
	// The resumed process's events say that the cut-short call starts again
	// before they say that it finished.
	started := false
	for _, ev := range events {
		if ev.SessionID != rootID || ev.Tool == nil || ev.Tool.Name != "task_wait" {
			continue
		}
		if ev.Type == event.ToolStarted {
			started = true
		} else if ev.Type == event.ToolFinished && !started {
			t.Errorf("the resumed run's events finish the root's task_wait without starting it")
		}
	}
	root := findSession(x, rootID)
	fast := sessionByLabel(x, "w-1")
	for i, m := range root.Messages {
		if len(m.ToolCalls) == 1 && m.ToolCalls[0].Name == "task_wait" {
			if next := root.Messages[i+1]; next.Role != "tool" || next.ToolCallID != m.ToolCalls[0].ID {
				t.Errorf("after the task_wait call the root's history has a %s message, not its result: %.120q", next.Role, next.Content)
			}
		}
	}
	delivered := 0
	for _, m := range root.Messages {
		if m.Role == "user" && strings.HasPrefix(m.Content, `<task_result task_id="`+fast.ID+`"`) {
			delivered++
		}
	}
	waited := toolResults(root, "task_wait")
	if len(waited) != 1 || !strings.Contains(waited[0], "fast result") {
		t.Fatalf("task_wait results: %q", waited)
	}
	if delivered != 0 {
		t.Errorf("the fast child's result reached the root twice: in task_wait's result and as %d <task_result> message(s)", delivered)
	}
}

// askingRun starts a run whose orchestrator asks the person "Ship on
// Friday?" (timeout 600 s) on its first turn, with a person attached (the
// dashboard or a --control client), and answers final on its next turn.
func askingRun(t *testing.T, final string) (hs *httptest.Server, dir string, e *Engine, run *Run) {
	t.Helper()
	asked := make(chan struct{})
	policy := scripted.PolicyFunc(func(req *scripted.Request) scripted.Reply {
		if role, _ := recRole(req); role == "orchestrator" && recTurn(req) == 0 {
			<-asked
			return scripted.Reply{ToolCalls: []scripted.Call{{Name: "ask_others", Args: map[string]any{"question": "Ship on Friday?", "timeout": 600}}}}
		}
		return scripted.Reply{Content: final}
	})
	hs = recServer(t, policy)
	dir = t.TempDir()
	e = recEngine(t, dir, hs.URL+"/v1", nil)
	run, err := e.Start(context.Background(), "decide the launch day")
	if err != nil {
		t.Fatal(err)
	}
	run.SetHumanAttached(true)
	close(asked)
	return hs, dir, e, run
}

// A question that waits for a person, cut short by a crash, is restored on
// resume. A headless resume without --control has nobody to answer it: it
// must not wait out the question's whole timeout (ten minutes here) for an
// answer that cannot come.
func TestHeadlessResumeDoesNotWaitForAnAbsentHuman(t *testing.T) {
	hs, dir, e1, run := askingRun(t, "decided without an answer")
	st := e1.Store()
	recWaitFor(t, "the root waiting for the person's answer", func() bool {
		qs, err := st.Questions(context.Background(), run.ID())
		if err != nil || len(qs) != 1 || qs[0].Status != QuestionOpen {
			return false
		}
		ss, err := st.Sessions(context.Background(), run.ID())
		return err == nil && len(ss) == 1 && ss[0].Status == StatusWaiting
	})
	// The run is quiet now: a copy of the database is what a kill -9 at
	// this point would leave (an interrupt would close the question).
	crashed := crashCopy(t, dir)

	e2 := recEngine(t, crashed, hs.URL+"/v1", nil)
	_, code, _ := recRun(t, e2, true, func(ctx context.Context) (*Run, error) { return e2.Resume(ctx, run.ID()) })
	x, err := e2.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK || x.Run.Status != RunCompleted {
		t.Fatalf("resumed run: exit %d, status %s (%s)", code, x.Run.Status, x.Run.Error)
	}
	res := toolResults(&x.Sessions[0], "ask_others")
	if len(res) != 1 || !strings.Contains(res[0], "no person is attached") {
		t.Errorf("ask_others result after the resume: %q", res)
	}
}

// A question the person answered or skipped while it still waited for an
// agent's answer, cut short by a crash, is not asked of the person again
// on resume: what they did was stored when they did it.
func TestResumeDoesNotAskThePersonAgain(t *testing.T) {
	for _, skip := range []bool{true, false} {
		name := map[bool]string{true: "skipped", false: "answered"}[skip]
		t.Run(name, func(t *testing.T) {
			hold := newGate() // r-2's shadow answer never comes before the crash
			p, r2Started, r2Release := askWhileBusy(obj{"question": "Ship on Friday?", "timeout": 600}, func(c *convo) scripted.Reply {
				hold.wait()
				return say("shadow for " + c.shadow + ": yes")
			})
			hs := recServer(t, p)
			t.Cleanup(func() { hold.open(); r2Started.open(); r2Release.open() })
			dir := t.TempDir()
			e1 := recEngine(t, dir, hs.URL+"/v1", nil)
			run, err := e1.Start(context.Background(), "decide the launch day")
			if err != nil {
				t.Fatal(err)
			}
			run.SetHumanAttached(true)
			st := e1.Store()
			var qid string
			recWaitFor(t, "the question open", func() bool {
				qs, err := st.Questions(context.Background(), run.ID())
				if err != nil || len(qs) != 1 || qs[0].Status != QuestionOpen {
					return false
				}
				qid = qs[0].ID
				return true
			})
			if skip {
				err = run.Skip(context.Background(), qid)
			} else {
				err = run.Answer(context.Background(), qid, "Friday it is")
			}
			if err != nil {
				t.Fatal(err)
			}
			// A kill -9 now: the question still waits for r-2's answer.
			crashed := crashCopy(t, dir)
			run.Interrupt()

			e2 := recEngine(t, crashed, hs.URL+"/v1", nil)
			e2.AttachHuman(true) // as the dashboard does
			r2, err := e2.Resume(context.Background(), run.ID())
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Interrupt()
			// The dashboard shows the questions of its snapshot to the person.
			if qs := r2.Snapshot().Questions; len(qs) != 0 {
				t.Errorf("after the resume the %s question waits for the person again: %+v", name, qs[0])
			}
			x, err := e2.Export(context.Background(), run.ID())
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range x.Questions {
				if q.ID == qid && (q.HumanSkipped != skip || (!skip && q.Responses["human"] != "Friday it is")) {
					t.Errorf("stored question: skipped %v, responses %v", q.HumanSkipped, q.Responses)
				}
			}
		})
	}
}

// A question to the person that was still open when the run stopped is
// announced again when the run is resumed: a --control client of the
// resumed process has seen no question.opened for it, and without one it
// cannot learn the question's id, so the question could only time out.
func TestResumeAnnouncesTheOpenQuestionAgain(t *testing.T) {
	hs, dir, e1, run := askingRun(t, "decided")
	st := e1.Store()
	recWaitFor(t, "the question to the person", func() bool {
		qs, err := st.Questions(context.Background(), run.ID())
		return err == nil && len(qs) == 1 && qs[0].Status == QuestionOpen
	})
	// The person answered the same question in another run meanwhile: the
	// resumed question offers that answer, as a new one would.
	if err := st.Do(context.Background(), func(tx *store.Tx) error {
		return tx.RememberAnswer(coordination.NormalizeQuestion("Ship on Friday?"), "not before Monday")
	}); err != nil {
		t.Fatal(err)
	}
	run.Interrupt()
	<-run.Done()
	e1.Close()

	e2 := recEngine(t, dir, hs.URL+"/v1", nil)
	pr, pw := io.Pipe()
	t.Cleanup(func() { pw.Close() })
	sub := e2.Bus().Subscribe(256)
	var announced atomic.Int32
	go func() {
		defer sub.Close()
		for ev := range sub.C {
			if ev.Type == event.QuestionOpened && ev.Question != nil && ev.Question.AllowHuman {
				if ev.Question.Remembered != "not before Monday" {
					t.Errorf("the resumed question offers %q as the remembered answer", ev.Question.Remembered)
				}
				announced.Add(1)
				io.WriteString(pw, `{"op":"answer","question_id":"`+ev.Question.ID+`","text":"yes, Friday"}`+"\n")
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out bytes.Buffer
	code, err := e2.Headless(ctx, HeadlessOptions{JSON: true, Out: &out, Control: pr},
		func(ctx context.Context) (*Run, error) { return e2.Resume(ctx, run.ID()) })
	if n := announced.Load(); n != 1 {
		t.Fatalf("the resumed run announced the open question %d times, want once (exit %d: %v)", n, code, err)
	}
	if err != nil || code != ExitOK {
		t.Fatalf("resumed run: exit %d: %v", code, err)
	}
	x, err := e2.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if q := x.Questions[0]; q.Status != QuestionAnswered || q.Responses["human"] != "yes, Friday" {
		t.Errorf("question after the resume: %s, responses %v", q.Status, q.Responses)
	}
}
