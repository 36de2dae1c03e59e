package tui

import (
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

func suspendSeen(msgs []tea.Msg) bool {
	for _, m := range msgs {
		if _, ok := m.(suspendedMsg); ok {
			return true
		}
	}
	return false
}

// ctrl+z suspends from anywhere, an open dialog kept as it was, and the
// continue says that the run was paused.
func TestCtrlZSuspends(t *testing.T) {
	m, _ := demoModel(t, 120, 40)
	m.suspender.possible = func() bool { return true }
	stops := 0
	m.suspender.stop = func() { stops++ }
	m, _ = press(t, m, "down", "m")
	m = typeText(t, m, "hold on")
	m, seen := press(t, m, "ctrl+z")
	if !suspendSeen(seen) {
		t.Fatalf("ctrl+z did not suspend; messages %v", seen)
	}
	if stops != 1 {
		t.Errorf("ctrl+z stopped the process %d times, want once", stops)
	}
	if !m.suspender.ours.Load() {
		t.Error("the suspension is not marked as the dashboard's own, for the note when it is continued")
	}
	m, _ = update(m, resumedMsg{})
	if m.suspender.ours.Load() {
		t.Error("still marked as suspending after the continue")
	}
	mustContain(t, m, "back: the run was paused while swarmdeck was suspended", "> hold on")

	// bg, then fg: the run went on meanwhile.
	m, _ = press(t, m, "ctrl+z")
	m, _ = update(m, resumedMsg{background: true})
	mustContain(t, m, "back: the run went on while swarmdeck was in the background")
}

// The time the process stood stopped after a ctrl+z is not part of the
// run's elapsed time, nor of its sessions'; a stop of a second or two is
// not worth a pause.
func TestCtrlZLeavesTheStopOutOfTheClocks(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m.suspender.possible = func() bool { return true }
	m.suspender.stop = func() {}
	mustContain(t, m, "2m13s", "orchestrator Build a URL shortener               task_wait         2m13s")
	stop := awake.Stop{From: t0.Add(-61 * time.Second), To: t0.Add(-time.Second)}
	m.suspender.stops = func(time.Time) []awake.Stop {
		return []awake.Stop{{From: t0.Add(-90 * time.Second), To: t0.Add(-88 * time.Second)}, stop}
	}
	m, _ = press(t, m, "ctrl+z")
	m, _ = update(m, resumedMsg{})
	mustContain(t, m, "1m13s", "orchestrator Build a URL shortener               task_wait         1m13s")
	if p := m.st.run.Pauses; len(p) != 1 || p[0] != event.Pause(stop) {
		t.Errorf("pauses %v, want only %v", p, stop)
	}
}

// Without a shell with job control, a stop would never be continued:
// ctrl+z says so instead of handing the terminal back for good.
func TestCtrlZWithoutJobControl(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	m.suspender.possible = func() bool { return false }
	m, seen := press(t, m, "ctrl+z")
	if suspendSeen(seen) {
		t.Fatal("ctrl+z suspended with nothing to continue the process")
	}
	mustContain(t, m, "ctrl+z cannot suspend here")

	// At the goal prompt, which has no status line, the prompt says it,
	// and the status line of the run to come does not.
	m = New(Options{Theme: "dark", Provider: "scripted", Model: "demo", Scripted: true})
	t.Cleanup(m.cancel)
	m.ticks = false
	m, _ = update(m, windowSize(160, 48))
	m.suspender.possible = func() bool { return false }
	if m, seen = press(t, m, "ctrl+z"); suspendSeen(seen) || m.status.text != "" {
		t.Fatalf("ctrl+z at the goal prompt: suspended %v, status %q", suspendSeen(seen), m.status.text)
	}
	mustContain(t, m, "ctrl+z cannot suspend here: no shell with job control started", "esc quits")
}

// A stop from outside (kill -STOP, then -CONT) is left out of the clocks
// too, once, however many continues follow it.
func TestAStopFromOutsideLeavesTheClocks(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, "2m13s")
	stops := []awake.Stop{{From: t0.Add(-61 * time.Second), To: t0.Add(-time.Second)}}
	m.suspender.stops = func(since time.Time) []awake.Stop {
		var out []awake.Stop
		for _, s := range stops {
			if s.To.After(since) {
				out = append(out, s)
			}
		}
		return out
	}
	m, _ = update(m, continuedMsg{})
	mustContain(t, m, "1m13s", "back: the run was paused while swarmdeck was stopped")
	m, _ = update(m, continuedMsg{})
	if n := len(m.st.run.Pauses); n != 1 {
		t.Fatalf("%d pauses after two continues of one stop, want 1", n)
	}
	mustContain(t, m, "1m13s")
}

// A sleep of the machine comes with no signal: the ticks find it among the
// stops and leave it out of the clocks, once.
func TestTheTicksFindASleep(t *testing.T) {
	m, _ := demoModel(t, 160, 48)
	mustContain(t, m, "2m13s")
	m.ticks = true // the ticks look only in a real program
	sleep := awake.Stop{From: t0.Add(-61 * time.Second), To: t0.Add(-time.Second)}
	count := int64(0)
	m.suspender.seen, m.suspender.counted = func() int64 { return count }, 0
	m.suspender.stops = func(since time.Time) []awake.Stop {
		if sleep.To.After(since) {
			return []awake.Stop{sleep}
		}
		return nil
	}
	m, _ = update(m, tickMsg{})
	mustContain(t, m, "2m13s") // nothing seen yet
	count++
	m, _ = update(m, tickMsg{})
	mustContain(t, m, "1m13s")
	m, _ = update(m, tickMsg{})
	if n := len(m.st.run.Pauses); n != 1 {
		t.Fatalf("%d pauses after the ticks, want 1", n)
	}
}
