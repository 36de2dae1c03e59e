package tui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

func suspendSeen(msgs []tea.Msg) bool {
	for _, m := range msgs {
		if _, ok := m.(tea.SuspendMsg); ok {
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
	m, _ = press(t, m, "down", "m")
	m = typeText(t, m, "hold on")
	m, seen := press(t, m, "ctrl+z")
	if !suspendSeen(seen) {
		t.Fatalf("ctrl+z did not suspend; messages %v", seen)
	}
	if !m.suspender.ours.Load() {
		t.Error("the suspension is not marked as the dashboard's own, for followCont to leave alone")
	}
	m, _ = update(m, tea.ResumeMsg{})
	if m.suspender.ours.Load() {
		t.Error("still marked as suspending after the continue")
	}
	mustContain(t, m, "back: the run was paused while swarmdeck was suspended", "> hold on")
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
}
