package tui

import (
	"sync/atomic"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// suspender is how ctrl+z hands the terminal back to the shell. The whole
// process stops, the run with it, until the shell's fg continues it.
//
// Bubble Tea's own suspend takes the terminal back as soon as the process
// is continued, which a shell's `kill %1` of the stopped job also does,
// from the background: the kernel stopped the process again for it, and
// the run stayed "running" until an fg. So the dashboard stops itself and
// leaves the continue to followCont, which takes the terminal back only
// in the foreground.
type suspender struct {
	// possible reports whether a stop could be undone from the terminal.
	possible func() bool
	// stop hands the terminal back and stops the process (nil in tests).
	stop func()
	// ours is set from a ctrl+z until the terminal is taken back, for the
	// note that the run was paused.
	ours *atomic.Bool
	// took is when the run's clocks last took in the stops of the process,
	// and stops tells the stretches it stood stopped since a time
	// (awake.Stops).
	took  time.Time
	stops func(since time.Time) []awake.Stop
	// seen counts the stops seen so far (awake.Seen), and counted is its
	// count when the ticks last looked.
	seen    func() int64
	counted int64
}

func newSuspender() suspender {
	return suspender{possible: jobControl, ours: new(atomic.Bool), stops: awake.Stops, seen: awake.Seen, counted: awake.Seen()}
}

// suspend stops the process with the terminal restored, or says why it
// cannot.
func (m *model) suspend() tea.Cmd {
	if !m.suspender.possible() {
		const why = " cannot suspend here: no shell with job control started swarmdeck to continue it"
		if m.screen == screenGoal {
			// No status line there: the prompt's note says it.
			m.goal.note = label(m.keys.Suspend) + why + "; " + label(m.keys.Back) + " quits"
			return nil
		}
		m.setStatus(label(m.keys.Suspend)+why+"; "+label(m.keys.Quit)+" quits (the run stays stored)", true)
		return nil
	}
	m.suspender.ours.Store(true)
	stop := m.suspender.stop
	return func() tea.Msg {
		if stop != nil {
			stop()
		}
		return suspendedMsg{}
	}
}

// suspendedMsg follows the stop of a ctrl+z.
type suspendedMsg struct{}

// resumedMsg is the terminal taken back after a ctrl+z; background: the
// job ran in the background (bg) meanwhile.
type resumedMsg struct{ background bool }

// continuedMsg follows a stop of the process that was not a ctrl+z here
// (kill -STOP, or a ctrl+z at the shell for a job of several processes),
// once it is continued.
type continuedMsg struct{}

// resumed follows the terminal taken back after a ctrl+z.
func (m *model) resumed(msg resumedMsg) {
	m.suspender.ours.Store(false)
	if !m.takeStops() {
		return
	}
	if msg.background {
		m.setNote("back: the run went on while swarmdeck was in the background")
	} else {
		m.setNote("back: the run was paused while swarmdeck was suspended")
	}
}

// continued follows a stop from outside: the clocks leave it out, as they
// do a ctrl+z's.
func (m *model) continued() {
	if m.takeStops() {
		m.setNote("back: the run was paused while swarmdeck was stopped")
	}
}

// takeStops adds to the run's pauses the stops of the process since they
// were last taken in, and reports whether the run is one this process
// runs. The clocks leave the stops out at once; the runtime stores them
// too, and the run's end brings the pauses it stored, which replace these.
func (m *model) takeStops() bool {
	if m.ctl == nil || m.readOnly || m.st.run.Status != "running" {
		return false
	}
	since := m.suspender.took
	if since.Before(m.st.run.StartedAt) {
		since = m.st.run.StartedAt
	}
	m.suspender.took = time.Now()
	for _, st := range m.suspender.stops(since) {
		if st.To.Sub(st.From) >= event.MinPause { // as the runtime stores them
			m.st.run.Pauses = append(m.st.run.Pauses, event.Pause{From: st.From, To: st.To})
		}
	}
	return true
}
