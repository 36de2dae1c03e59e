package runtime

import (
	"context"
	"fmt"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// A person's message wakes the orchestrator of a run that has completed:
// the run says it is running again (run.started, which the dashboard's
// header follows) and finishes again with its new answer. A broadcast,
// which wakes nobody, is refused on a run that has ended.
func TestMessageReopensAFinishedRun(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		if strings.Contains(c.req.Messages[len(c.req.Messages)-1].Content, "one more thing") {
			return say("second answer")
		}
		return say("first answer")
	})
	e := testEngine(t, nil, p, nil)
	sub := e.Bus().Subscribe(1024)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Start(ctx, "answer twice")
	if err != nil {
		t.Fatal(err)
	}
	next := func(want event.Type) *event.Event {
		t.Helper()
		for {
			select {
			case ev := <-sub.C:
				if ev.RunID == r.ID() && (ev.Type == event.RunStarted || ev.Type == event.RunFinished) {
					if got := ev.Run.Status; ev.Type != want || (want == event.RunFinished && got != RunCompleted) || (want == event.RunStarted && got != RunRunning) {
						t.Fatalf("got %s (%s), want %s", ev.Type, got, want)
					}
					return &ev
				}
			case <-ctx.Done():
				t.Fatalf("no %s", want)
			}
		}
	}
	next(event.RunStarted)
	if fin := next(event.RunFinished); fin.Run.Result != "first answer" {
		t.Fatalf("first result %q", fin.Run.Result)
	}
	if err := r.Broadcast(ctx, "anyone?", "all", ""); err == nil || !strings.Contains(err.Error(), "a broadcast would reach nobody") {
		t.Errorf("a broadcast to a completed run: %v", err)
	}
	if err := r.SendMessage(ctx, r.root.id, "one more thing", false); err != nil {
		t.Fatal(err)
	}
	next(event.RunStarted)
	if fin := next(event.RunFinished); fin.Run.Result != "second answer" {
		t.Errorf("second result %q", fin.Run.Result)
	}
}

// A run records where its model server is, without credentials, so that a
// resume finds it again.
func TestRunRecordsItsServer(t *testing.T) {
	for raw, want := range map[string]string{
		"http://127.0.0.1:11434/v1":                                   "http://127.0.0.1:11434/v1",
		"https://user:secret@llm.example/v1#frag":                     "https://xxxxx:xxxxx@llm.example/v1",
		"https://sk-token@llm.example/v1":                             "https://xxxxx@llm.example/v1",
		"https://llm.example/v1?api-version=2024-06-01&key=sk-secret": "https://llm.example/v1?api-version=xxxxx&key=xxxxx",
		"not a url": "",
	} {
		if got := RedactedBaseURL(raw); got != want {
			t.Errorf("RedactedBaseURL(%q) = %q, want %q", raw, got, want)
		}
	}
	hs := recServer(t, scripted.PolicyFunc(func(*scripted.Request) scripted.Reply { return scripted.Reply{Content: "done"} }))
	e := recEngine(t, t.TempDir(), hs.URL+"/v1", nil)
	run, err := e.Start(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	<-run.Done()
	rec, err := e.Store().Run(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if rec.BaseURL != hs.URL+"/v1" {
		t.Errorf("stored base URL %q, want %q", rec.BaseURL, hs.URL+"/v1")
	}
	x, err := e.Export(context.Background(), run.ID())
	if err != nil || x.Run.BaseURL != hs.URL+"/v1" {
		t.Errorf("exported base URL %q (%v)", x.Run.BaseURL, err)
	}
}

// interruptedAtFirstCall starts a run on a model whose first `held` calls
// stay out until the test ends, and interrupts it while its first call is
// out. It returns the model, the run's directory, the stopped run and the
// count of calls the model has had.
func interruptedAtFirstCall(t *testing.T, held int32) (*httptest.Server, string, *Run, *atomic.Int32) {
	t.Helper()
	release := make(chan struct{})
	calls := new(atomic.Int32)
	hs := recServer(t, scripted.PolicyFunc(func(*scripted.Request) scripted.Reply {
		if calls.Add(1) <= held {
			<-release
		}
		return scripted.Reply{Content: "done"}
	}))
	t.Cleanup(func() { close(release) }) // before the server's cleanup, which waits for its handlers
	dir := t.TempDir()
	e1 := recEngine(t, dir, hs.URL+"/v1", nil)
	run, err := e1.Start(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	recWaitFor(t, "the first model call", func() bool { return calls.Load() == 1 })
	run.Interrupt()
	e1.Close()
	return hs, dir, run, calls
}

// A resumed run records how long it stood stopped, from the end its
// interrupt stored to the resume, so that its elapsed time leaves that out.
func TestResumeRecordsTheStoppedTime(t *testing.T) {
	hs, dir, run, _ := interruptedAtFirstCall(t, 1)
	e2 := recEngine(t, dir, hs.URL+"/v1", nil)
	stopped, err := e2.Store().Run(context.Background(), run.ID())
	if err != nil || stopped.Status != RunInterrupted || stopped.EndedAt.IsZero() || len(stopped.Pauses) != 0 {
		t.Fatalf("interrupted run: %+v (%v)", stopped, err)
	}
	time.Sleep(20 * time.Millisecond)
	before := time.Now()
	r2, err := e2.Resume(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	<-r2.Done()
	x, err := e2.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if x.Run.Status != RunCompleted || len(x.Run.Pauses) != 1 {
		t.Fatalf("resumed run is %s with pauses %+v, want completed with one", x.Run.Status, x.Run.Pauses)
	}
	p := x.Run.Pauses[0]
	if !p.From.Equal(stopped.EndedAt) || p.To.Before(before) || p.To.Sub(p.From) < 20*time.Millisecond {
		t.Errorf("pause %s to %s; the run stopped at %s and was resumed after %s", p.From, p.To, stopped.EndedAt, before)
	}
}

// A run interrupted, resumed, and then killed records its second pause from
// the last thing the resumed process stored, not from the end the first
// interrupt stored: that end is over once the run runs again, and a pause
// from it would count the stretch the resumed process ran (and the first
// pause once more) as time stood stopped.
func TestResumeAfterAKillDoesNotReuseAnEarlierEnd(t *testing.T) {
	// The first call is cut short by the interrupt, the second by the kill.
	hs, dir, run, calls := interruptedAtFirstCall(t, 2)

	e2 := recEngine(t, dir, hs.URL+"/v1", nil)
	if _, err := e2.Resume(context.Background(), run.ID()); err != nil {
		t.Fatal(err)
	}
	recWaitFor(t, "the resumed model call", func() bool { return calls.Load() == 2 })
	resumed, err := e2.Store().Run(context.Background(), run.ID())
	if err != nil || len(resumed.Pauses) != 1 {
		t.Fatalf("resumed run: %+v (%v)", resumed, err)
	}
	if !resumed.EndedAt.IsZero() {
		t.Errorf("the running run is stored as ended at %s", resumed.EndedAt)
	}
	time.Sleep(30 * time.Millisecond)
	crashed := crashCopy(t, dir) // a kill -9 of the resumed process

	e3 := recEngine(t, crashed, hs.URL+"/v1", nil)
	_, code, _ := recRun(t, e3, true, func(ctx context.Context) (*Run, error) { return e3.Resume(ctx, run.ID()) })
	x, err := e3.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if code != ExitOK || len(x.Run.Pauses) != 2 {
		t.Fatalf("run after the second resume: exit %d, pauses %+v", code, x.Run.Pauses)
	}
	first, second := x.Run.Pauses[0], x.Run.Pauses[1]
	if second.From.Before(first.To) {
		t.Errorf("the second pause (%s to %s) begins before the first one ended (%s to %s)",
			second.From.Format(time.StampMicro), second.To.Format(time.StampMicro), first.From.Format(time.StampMicro), first.To.Format(time.StampMicro))
	}
}

// A run the person cancelled stays ended: a message to a session that had
// completed before the cancel is refused, waking or not, and no model call
// follows.
func TestMessageRefusedInACancelledRun(t *testing.T) {
	held, release := newGate(), newGate()
	defer release.open() // before the engine's cleanup, which waits for the held call
	var calls atomic.Int32
	p := policyFor(func(c *convo) scripted.Reply {
		calls.Add(1)
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && c.saw("Worker done."):
			held.open()
			release.wait()
			return say("too late")
		case c.isRoot():
			return say("Waiting for the worker.")
		default:
			return say("Worker done.")
		}
	})
	e := testEngine(t, nil, p, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Start(ctx, "work and be cancelled")
	if err != nil {
		t.Fatal(err)
	}
	held.wait()
	if err := r.Cancel(ctx, r.root.id); err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil || r.Status() != RunCancelled {
		t.Fatalf("run %s (%v); want cancelled", r.Status(), err)
	}
	var worker *Session
	for _, s := range r.allSessions() {
		if s.label == "worker" {
			worker = s
		}
	}
	if worker == nil || worker.status() != StatusCompleted {
		t.Fatalf("worker %+v; want it completed before the cancel", worker)
	}
	before := calls.Load()
	for _, noReply := range []bool{false, true} {
		err := r.SendMessage(ctx, worker.id, "hello after cancel", noReply)
		if err == nil || !strings.Contains(err.Error(), "was cancelled: it takes no more messages") {
			t.Errorf("message (no_reply %v) to a completed session of a cancelled run: %v", noReply, err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := calls.Load(); n != before || r.Status() != RunCancelled {
		t.Errorf("after the refused messages: %d more model calls, run %s", n-before, r.Status())
	}
}

// A finished child woken by a person completes again and wakes its parent,
// which had completed too: the run reopens once and finishes once, when
// the parent has answered again, not in the instant between the child's
// end and its report reaching the parent.
func TestWokenChildDoesNotFinishTheRunEarly(t *testing.T) {
	p := policyFor(func(c *convo) scripted.Reply {
		switch {
		case c.isRoot() && c.turns == 0:
			return do(call("sessions_spawn", obj{"task": "Read the README", "label": "worker", "agent": "researcher"}))
		case c.isRoot() && c.saw("Worker again."):
			return say("Final two.")
		case c.isRoot() && c.saw("Worker done."):
			return say("Final one.")
		case c.isRoot():
			return say("Waiting for the worker.")
		case c.saw("more please"):
			return say("Worker again.")
		default:
			return say("Worker done.")
		}
	})
	e := testEngine(t, nil, p, nil)
	sub := e.Bus().Subscribe(4096)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Start(ctx, "work twice")
	if err != nil {
		t.Fatal(err)
	}
	// runEvents reads run.started and run.finished until a run.finished.
	runEvents := func() []string {
		t.Helper()
		var out []string
		for {
			select {
			case ev := <-sub.C:
				if ev.RunID != r.ID() || (ev.Type != event.RunStarted && ev.Type != event.RunFinished) {
					continue
				}
				entry := string(ev.Type) + " " + ev.Run.Status
				if ev.Type == event.RunFinished {
					return append(out, entry+" "+ev.Run.Result)
				}
				out = append(out, entry)
			case <-ctx.Done():
				t.Fatalf("the run did not finish; saw %q", out)
			}
		}
	}
	if got := runEvents(); len(got) != 2 || got[1] != "run.finished completed Final one." {
		t.Fatalf("first run: %q", got)
	}
	var worker *Session
	for _, s := range r.allSessions() {
		if s.label == "worker" {
			worker = s
		}
	}
	if err := r.SendMessage(ctx, worker.id, "more please", false); err != nil {
		t.Fatal(err)
	}
	want := []string{"run.started running", "run.finished completed Final two."}
	if got := runEvents(); !slices.Equal(got, want) {
		t.Errorf("after waking the worker: %q; want %q", got, want)
	}
}

// A failed run refuses a broadcast by pointing to the resume that would
// let one reach its sessions, not to a message, which wakes no failed
// session.
func TestBroadcastToAFailedRunPointsToResume(t *testing.T) {
	e := testEngine(t, nil, nil, func(c *config.Config) { c.Limits.TokenBudgetPerRun = 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := e.Start(ctx, "spend it all")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	err = r.Broadcast(ctx, "anyone?", "all", "")
	if err == nil || !strings.Contains(err.Error(), "has failed: a broadcast would reach nobody (resume the run first: `swarmdeck resume "+r.ID()+"`)") {
		t.Fatalf("a broadcast to a failed run: %v", err)
	}
}

// A message that wakes a session just as it completes starts it again
// only once its goroutine has unwound: never two goroutines for one
// session, which the race detector would see sharing its fields, and never
// a wake lost. Messages come back to back while the model answers at once,
// so some arrive while the session's goroutine is still cleaning up after
// completing.
func TestWakeAsASessionCompletes(t *testing.T) {
	const rounds = 200
	p := policyFor(func(c *convo) scripted.Reply {
		return say("re: " + c.req.Messages[len(c.req.Messages)-1].Content)
	})
	e := testEngine(t, nil, p, func(c *config.Config) { c.Limits.MaxTurnsPerSession = 0 })
	sub := e.Bus().Subscribe(8192)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := e.Start(ctx, "answer again and again")
	if err != nil {
		t.Fatal(err)
	}
	last := fmt.Sprintf("round %d", rounds-1)
	for i := 0; i < rounds; i++ {
		if err := r.SendMessage(ctx, r.root.id, fmt.Sprintf("round %d", i), false); err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
	}
	for {
		select {
		case ev := <-sub.C:
			if ev.RunID != r.ID() || ev.Type != event.RunFinished {
				continue
			}
			if ev.Run.Status != RunCompleted {
				t.Fatalf("the run ended %s: %s", ev.Run.Status, ev.Run.Error)
			}
			if strings.Contains(ev.Run.Result, last) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no answer to the last message (%q)", last)
		}
	}
}

// A bench run left running by a dead process is not told to be resumed,
// which resume refuses.
func TestOrphanedReasonOfABenchRun(t *testing.T) {
	if got := OrphanedReason("r-1", "a goal", true); got != OrphanedRunReason {
		t.Errorf("a run: %q", got)
	}
	got := OrphanedReason("r-2", scripted.BenchGoal(50, 10, 2, 1), true)
	if strings.Contains(got, "resume it") || !strings.Contains(got, "a bench run, which is not resumed") || !strings.Contains(got, "swarmdeck delete r-2") {
		t.Errorf("a bench run: %q", got)
	}
}
