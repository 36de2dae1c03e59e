package runtime

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
)

// Whether a person can answer a run's questions is recorded with the run
// and follows the process that runs it: a headless run without --control
// has nobody, nor has one whose control input ended. `swarmdeck view` of
// the run, from another process, shows its questions accordingly.

// askedHeadless is a headless run of askWhileBusy's swarm whose question
// ("Ship on Friday?", timeout 600 s) stays open until hold is opened: the
// shadow answers wait for it.
type askedHeadless struct {
	e     *Engine
	db    string
	runID string
	hold  *gate
	sub   *event.Subscription
	seen  []event.Event // events of the run taken from sub so far
	code  chan int
}

func startAskedHeadless(t *testing.T, control io.Reader) *askedHeadless {
	t.Helper()
	hold := newGate()
	p, r2Started, r2Release := askWhileBusy(obj{"question": "Ship on Friday?", "timeout": 600}, func(c *convo) scripted.Reply {
		hold.wait()
		return say("shadow for " + c.shadow + ": yes")
	})
	t.Cleanup(func() { hold.open(); r2Started.open(); r2Release.open() })
	db := filepath.Join(t.TempDir(), "swarmdeck.db")
	e := limEngineWith(t, db, nil, p)
	a := &askedHeadless{e: e, db: db, hold: hold, sub: e.Bus().Subscribe(4096), code: make(chan int, 1)}
	t.Cleanup(a.sub.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	go func() {
		code, err := e.Headless(ctx, HeadlessOptions{JSON: true, Out: io.Discard, Control: control},
			func(ctx context.Context) (*Run, error) { return e.Start(ctx, "decide the launch day") })
		if err != nil {
			t.Errorf("headless: %v", err)
		}
		a.code <- code
	}()
	return a
}

// next returns the next event of the run that match accepts, keeping the
// others in seen.
func (a *askedHeadless) next(t *testing.T, what string, match func(event.Event) bool) event.Event {
	t.Helper()
	return a.since(t, len(a.seen), what, match)
}

// since is next for an event that may be among those seen from mark on.
func (a *askedHeadless) since(t *testing.T, mark int, what string, match func(event.Event) bool) event.Event {
	t.Helper()
	for _, ev := range a.seen[mark:] {
		if match(ev) {
			return ev
		}
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev := <-a.sub.C:
			if a.runID == "" {
				a.runID = ev.RunID
			}
			a.seen = append(a.seen, ev)
			if match(ev) {
				return ev
			}
		case <-timeout:
			t.Fatalf("never came: %s", what)
		}
	}
}

func (a *askedHeadless) question(t *testing.T, what string) *event.QuestionInfo {
	t.Helper()
	return a.next(t, what, func(ev event.Event) bool { return ev.Type == event.QuestionOpened }).Question
}

// stored says whether the stored run records nobody to answer.
func (a *askedHeadless) stored(t *testing.T) bool {
	t.Helper()
	rec, err := a.e.Store().Run(context.Background(), a.runID)
	if err != nil {
		t.Fatal(err)
	}
	return rec.HumanAbsent
}

// viewed is the question as `swarmdeck view` in another process shows it.
func (a *askedHeadless) viewed(t *testing.T) event.QuestionInfo {
	t.Helper()
	other := limEngineAt(t, a.db, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := other.View(ctx, a.runID)
	if err != nil {
		t.Fatal(err)
	}
	qs := v.Snapshot().Questions
	if len(qs) != 1 {
		t.Fatalf("the view shows %d questions, want the open one", len(qs))
	}
	return qs[0]
}

// finish lets the shadow answers come and the run complete.
func (a *askedHeadless) finish(t *testing.T) {
	t.Helper()
	a.hold.open()
	a.next(t, "the run's end", func(ev event.Event) bool { return ev.Type == event.RunFinished })
	if code := <-a.code; code != ExitOK {
		t.Fatalf("the run ended with exit %d", code)
	}
}

func TestHeadlessQuestionIsShownAsNobodysToAnswer(t *testing.T) {
	a := startAskedHeadless(t, nil)
	q := a.question(t, "the question")
	if !q.AllowHuman || !q.HumanAbsent {
		t.Errorf("question.opened: allow_human %v, human_absent %v; want it asked of the person, who is absent", q.AllowHuman, q.HumanAbsent)
	}
	if !a.stored(t) {
		t.Errorf("the stored run does not record that nobody can answer")
	}
	if v := a.viewed(t); v.ID != q.ID || !v.HumanAbsent {
		t.Errorf("the view shows %+v: want %s, with nobody to answer", v, q.ID)
	}
	a.finish(t)
	for _, ev := range a.seen {
		if ev.Session != nil && ev.Session.WaitingHuman {
			t.Errorf("event %d (%s) shows %s waiting for the person", ev.Seq, ev.Type, ev.Session.ID)
		}
	}
}

// A person answering through --control is recorded as such; when the
// control input ends, the run records that nobody can answer any more, and
// tells a view that follows it, which shows the open question as asked of
// the agents alone from then on.
func TestControlInputEndingIsRecorded(t *testing.T) {
	pr, pw := io.Pipe()
	a := startAskedHeadless(t, pr)
	q := a.question(t, "the question")
	if !q.AllowHuman || q.HumanAbsent {
		t.Fatalf("question.opened with a person attached: allow_human %v, human_absent %v", q.AllowHuman, q.HumanAbsent)
	}
	asker := a.next(t, "the asker waiting for the person", func(ev event.Event) bool {
		return ev.Session != nil && ev.Session.ID == q.FromSession && ev.Session.WaitingHuman
	})
	if a.stored(t) {
		t.Errorf("the stored run records nobody to answer while --control is open")
	}
	if v := a.viewed(t); v.HumanAbsent {
		t.Errorf("the view shows the question with nobody to answer while --control is open")
	}

	// A view that follows the run from another process.
	other := limEngineAt(t, a.db, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	v, err := other.View(ctx, a.runID)
	if err != nil {
		t.Fatal(err)
	}
	followed := v.Subscribe(64)
	defer followed.Close()

	mark := len(a.seen)
	pw.Close() // the person's input ends
	again := a.question(t, "the question told again")
	if again.ID != q.ID || !again.HumanAbsent {
		t.Errorf("after the input ended: question.opened %+v, want %s with nobody to answer", again, q.ID)
	}
	a.since(t, mark, "the asker no longer waiting for the person", func(ev event.Event) bool {
		return ev.Session != nil && ev.Session.ID == asker.SessionID && !ev.Session.WaitingHuman
	})
	if !a.stored(t) {
		t.Errorf("the stored run does not record that nobody can answer after the input ended")
	}
	if v := a.viewed(t); !v.HumanAbsent {
		t.Errorf("a view opened after the input ended shows the question waiting for the person")
	}
	timeout := time.After(30 * time.Second)
	for told := false; !told; {
		select {
		case ev := <-followed.C:
			told = ev.Type == event.QuestionOpened && ev.Question.ID == q.ID && ev.Question.HumanAbsent
		case <-timeout:
			t.Fatal("the view that follows the run was not told that nobody can answer")
		}
	}
	a.finish(t)
}

// A resumed run records whether its new process has a person to answer:
// one that ran headless without --control and is resumed in the dashboard
// asks the person its open question, and one resumed headless without
// --control again has nobody, whatever the process before had.
func TestResumeRecordsWhetherAPersonCanAnswer(t *testing.T) {
	hold := newGate()
	p, r2Started, r2Release := askWhileBusy(obj{"question": "Ship on Friday?", "timeout": 600}, func(c *convo) scripted.Reply {
		hold.wait()
		return say("shadow for " + c.shadow + ": yes")
	})
	hs := recServer(t, p)
	t.Cleanup(func() { hold.open(); r2Started.open(); r2Release.open() })
	dir := t.TempDir()
	e1 := recEngine(t, dir, hs.URL+"/v1", nil)
	run, err := e1.Start(context.Background(), "decide the launch day") // nobody attached
	if err != nil {
		t.Fatal(err)
	}
	defer run.Interrupt()
	recWaitFor(t, "the question open", func() bool {
		qs, err := e1.Store().Questions(context.Background(), run.ID())
		return err == nil && len(qs) == 1 && qs[0].Status == QuestionOpen
	})
	absentDir := crashCopy(t, dir) // a kill -9 with the question open

	// In the dashboard: the person is asked.
	e2 := recEngine(t, absentDir, hs.URL+"/v1", nil)
	e2.AttachHuman(true)
	r2, err := e2.Resume(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Interrupt()
	r2.SetHumanAttached(true)
	if rec, err := e2.Store().Run(context.Background(), run.ID()); err != nil || rec.HumanAbsent {
		t.Errorf("resumed in the dashboard, the run records nobody to answer (%v)", err)
	}
	qs := r2.Snapshot().Questions
	if len(qs) != 1 || qs[0].HumanAbsent {
		t.Fatalf("resumed in the dashboard, the open questions are %+v: want the one, for the person", qs)
	}
	attachedDir := crashCopy(t, absentDir)

	// Headless without --control again: nobody, and a view says so.
	e3 := recEngine(t, attachedDir, hs.URL+"/v1", nil)
	sub := e3.Bus().Subscribe(256)
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	code := make(chan int, 1)
	go func() {
		c, err := e3.Headless(ctx, HeadlessOptions{JSON: true, Out: io.Discard},
			func(ctx context.Context) (*Run, error) { return e3.Resume(ctx, run.ID()) })
		if err != nil {
			t.Errorf("headless resume: %v", err)
		}
		code <- c
	}()
	for told := false; !told; {
		select {
		case ev := <-sub.C:
			if ev.Type == event.QuestionOpened {
				if !ev.Question.HumanAbsent {
					t.Errorf("resumed headless without --control, the question is told as waiting for the person")
				}
				told = true
			}
		case <-ctx.Done():
			t.Fatal("the resumed run did not tell its open question again")
		}
	}
	if rec, err := e3.Store().Run(context.Background(), run.ID()); err != nil || !rec.HumanAbsent {
		t.Errorf("resumed headless without --control, the run does not record nobody to answer (%v)", err)
	}
	other := recEngine(t, attachedDir, hs.URL+"/v1", nil)
	v, err := other.View(ctx, run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if qs := v.Snapshot().Questions; len(qs) != 1 || !qs[0].HumanAbsent {
		t.Errorf("the view of the resumed run shows %+v: want the question with nobody to answer", qs)
	}
	hold.open()
	if c := <-code; c != ExitOK {
		t.Errorf("the resumed run ended with exit %d", c)
	}
}
