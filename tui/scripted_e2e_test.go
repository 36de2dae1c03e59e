package tui_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/exp/teatest/v2"

	"github.com/swarmdeck/swarmdeck/runtime"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/tui"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// TestDashboardOnScriptedModel drives the real dashboard against a real run
// of the scripted model: the panes show up, the demo's question is answered
// with a key press and the answer reaches the asking agent, a human
// broadcast reaches the store, and quitting works.
func TestDashboardOnScriptedModel(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Workspace = dir
	cfg.LogFile = filepath.Join(dir, "log")
	cfg.Providers["scripted"].Latency = config.Duration(30 * time.Millisecond)
	cfg.Providers["scripted"].StreamSpeed = 0
	res, err := cfg.Resolve(func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	eng, err := runtime.New(runtime.Options{Config: cfg, Resolved: res, DBPath: filepath.Join(dir, "db")})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	run, err := eng.Start(context.Background(), "Design a landing page for a CLI tool")
	if err != nil {
		t.Fatal(err)
	}
	run.SetHumanAttached(true)

	dash := tuitest.Watch(tui.New(tui.Options{Controller: run, Theme: "dark"}))
	tm := teatest.NewTestModel(t, dash,
		teatest.WithInitialTermSize(160, 48),
		teatest.WithProgramOptions(tea.WithColorProfile(colorprofile.Ascii)),
	)
	waitFor := func(texts ...string) {
		t.Helper()
		tuitest.WaitForText(t, tm, 20*time.Second, texts...)
	}
	waitFor("Sessions", "Broadcasts", "Plans", "Delegations", "SCRIPTED MODEL")
	waitFor("asks: Which launch window should the team plan for?")

	// The broadcast goes out while the orchestrator waits for the answer,
	// so the run is surely still going (a broadcast to a run that has ended
	// is refused: nobody would read it).
	tm.Send(tea.KeyPressMsg{Code: 'b', Text: "b"})
	tm.Type("keep it on one page")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	dash.WaitForView(t, 20*time.Second, "human → all [human · ", "keep it on one page")
	if !humanBroadcast(t, eng, run.ID()) {
		t.Fatal("the feed shows the human broadcast but the store does not have it")
	}

	tm.Send(tea.KeyPressMsg{Code: 'a', Text: "a"})
	waitFor("Question 1 of 1")
	tm.Type("2")
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
	waitFor("answer sent")

	select {
	case <-run.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not finish")
	}
	dash.WaitForView(t, 20*time.Second, "completed · ")
	tm.Send(tea.KeyPressMsg{Code: 'q', Text: "q"})
	tm.WaitFinished(t, teatest.WithFinalTimeout(5*time.Second))

	x, err := eng.Export(context.Background(), run.ID())
	if err != nil {
		t.Fatal(err)
	}
	if x.Run.Status != "completed" {
		t.Fatalf("run %s: %s", x.Run.Status, x.Run.Error)
	}
	if len(x.Questions) == 0 || x.Questions[0].Responses["human"] != "b: Next month" || !x.Questions[0].HumanResponded {
		t.Errorf("the human's answer was not recorded: %+v", x.Questions)
	}
	if !humanBroadcast(t, eng, run.ID()) {
		t.Errorf("the human broadcast is not in the store: %+v", x.Broadcasts)
	}
	root := x.Sessions[0]
	got := false
	for _, m := range root.Messages {
		if m.Role == "tool" && bytes.Contains([]byte(m.Content), []byte(`"human":"b: Next month"`)) {
			got = true
		}
	}
	if !got {
		t.Errorf("the answer never reached the asking agent's ask_others result")
	}
}

// humanBroadcast reports whether the store holds the human broadcast the
// test sends, with its recipients.
func humanBroadcast(t *testing.T, eng *runtime.Engine, runID string) bool {
	t.Helper()
	x, err := eng.Export(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range x.Broadcasts {
		if b.Kind == "human" && b.Message == "keep it on one page" && len(b.Recipients) > 0 {
			return true
		}
	}
	return false
}
