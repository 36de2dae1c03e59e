package tui

import (
	"sync/atomic"

	tea "charm.land/bubbletea/v2"
)

// suspender is how ctrl+z hands the terminal back to the shell. The whole
// process stops, the run with it, until the shell's fg continues it.
type suspender struct {
	// possible reports whether a stop could be undone from the terminal.
	possible func() bool
	// ours is set while a stop the dashboard asked for is under way:
	// Bubble Tea takes the terminal back itself then, and followCont,
	// which does it after a stop from outside, leaves it alone.
	ours *atomic.Bool
}

func newSuspender() suspender {
	return suspender{possible: jobControl, ours: new(atomic.Bool)}
}

// suspend stops the process with the terminal restored, or says why it
// cannot.
func (m *model) suspend() tea.Cmd {
	if !m.suspender.possible() {
		m.setStatus(label(m.keys.Suspend)+" cannot suspend here: no shell with job control started swarmdeck to continue it; "+
			label(m.keys.Quit)+" quits (the run stays stored)", true)
		return nil
	}
	m.suspender.ours.Store(true)
	return tea.Suspend
}

// resumed follows the continue after a ctrl+z.
func (m *model) resumed() {
	m.suspender.ours.Store(false)
	if m.ctl != nil && !m.readOnly && m.st.run.Status == "running" {
		m.setNote("back: the run was paused while swarmdeck was suspended")
	}
}
