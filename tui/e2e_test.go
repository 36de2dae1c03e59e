package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// TestEndToEnd runs the real program (renderer, input, event listener on a
// real subscription) against the fake controller.
//
// The renderer writes only the cells that change, so the screen is checked
// for text that appears whole (a new row or line), not for a figure that
// changes in place.
func TestEndToEnd(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Questions = nil
	ctl := tuitest.NewController(snap)
	m := New(Options{Controller: ctl, Theme: "dark"})
	m.now = func() time.Time { return t0 }
	m.loc = time.UTC
	tm := teatest.NewTestModel(t, m,
		teatest.WithInitialTermSize(120, 40),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)),
	)
	waitFor := func(texts ...string) {
		t.Helper()
		tuitest.WaitForText(t, tm, 5*time.Second, texts...)
	}

	waitFor("19:28:20 planner (plan)")

	// Events published by the runtime reach the screen.
	b := ev(event.BroadcastSent, "s-exp2")
	b.Broadcast = &event.BroadcastInfo{ID: "b-e2e", Kind: event.KindBroadcast, From: "explorer (x-2)", FromSession: "s-exp2",
		Category: "discovery", Target: "all", Message: "e2e ping", Timestamp: t0}
	ctl.Publish(b)
	waitFor("explorer (x-2) → all [discovery]", "e2e ping")

	q := ev(event.QuestionOpened, "s-exe1")
	q.Question = &event.QuestionInfo{ID: "q-e2e", FromSession: "s-exe1", From: "executor (e-1)", Question: "Run the tests?", AllowHuman: true, Status: "open"}
	ctl.Publish(q)
	waitFor("executor (e-1) asks: Run the tests?")

	// Keys turn into controller calls.
	tm.Send(keyMsg("b"))
	tm.Type("hello swarm")
	tm.Send(keyMsg("ctrl+t"))
	tm.Send(keyMsg("enter"))
	select {
	case <-ctl.Called():
	case <-time.After(5 * time.Second):
		t.Fatal("the broadcast never reached the controller")
	}
	if calls := ctl.Calls(); len(calls) != 1 || calls[0] != (tuitest.Call{Op: "broadcast", Text: "hello swarm", Target: "all", Category: "warning"}) {
		t.Fatalf("controller got %+v", calls)
	}
	waitFor("broadcast sent to all sessions · warning")

	// Answering goes through the dialog and the controller too.
	tm.Send(keyMsg("a"))
	waitFor("Question 1 of 1 · from executor (e-1)")
	tm.Type("yes")
	tm.Send(keyMsg("enter"))
	select {
	case <-ctl.Called():
	case <-time.After(5 * time.Second):
		t.Fatal("the answer never reached the controller")
	}
	if calls := ctl.Calls(); len(calls) != 2 || calls[1] != (tuitest.Call{Op: "answer", QuestionID: "q-e2e", Text: "yes"}) {
		t.Fatalf("controller got %+v", calls)
	}
	waitFor("answer sent")

	// Quitting a running run asks first.
	tm.Send(keyMsg("q"))
	waitFor("swarmdeck resume r-7c1e")
	tm.Send(keyMsg("y"))
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))
	if fm, ok := tm.FinalModel(t).(Model); !ok || fm.crashed != nil {
		t.Fatalf("final model %T, crashed: %v", tm.FinalModel(t), fm.crashed)
	}
}
