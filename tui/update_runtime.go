package tui

import (
	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"strings"
)

// handleRuntime applies what comes from the runtime: the connection (with
// its snapshot), batches of events, and a run started from the goal prompt.
func (m *model) handleRuntime(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case startedMsg:
		m.goal.starting = false
		if msg.err != nil {
			m.goal.err = "could not start the run: " + msg.err.Error() + m.dropHeld()
			return nil
		}
		m.ctl = msg.ctl
		m.screen = screenDashboard
		m.goal.input.Blur()
		m.connecting = true
		return connectCmd(msg.ctl)

	case connectedMsg:
		m.connecting = false
		m.ctl, m.sub, m.readOnly = msg.ctl, msg.sub, msg.readOnly
		m.streamClosed = false
		m.st.applySnapshot(msg.snap)
		// A stored run that has already stopped says why as if it had just
		// stopped: a view opened later needs the reason and the way back
		// as much as one that was open then.
		m.runEnd = statusLine{}
		if !m.st.runActive() {
			m.runEnd = m.runEndLine(m.st.run)
		}
		// The tree starts anew; its filter, as the feed's, stays.
		filter := m.sessions.paneFilter
		m.sessions = newSessionsPane()
		m.sessions.paneFilter = filter
		m.broadcasts.follow = true
		m.delegations.list = list{}
		if len(m.st.roots) > 0 {
			m.sessions.selected = m.st.roots[0].info.ID
		}
		return listen(m.ctx, msg.sub, m.window)

	case eventsMsg:
		for _, ev := range msg.events {
			m.applyEvent(ev)
		}
		if msg.closed {
			m.streamClosed = true
			if m.st.runActive() && !m.readOnly {
				m.setStatus("the run stopped sending events; what is shown may be out of date", true)
			}
			return nil
		}
		if m.sub == nil {
			return nil
		}
		return listen(m.ctx, m.sub, m.window)
	}
	return nil
}

// applyEvent applies one event to the state and to the open transcript.
func (m *model) applyEvent(ev event.Event) {
	if !m.st.apply(ev) {
		return
	}
	switch ev.Type {
	case event.MessageAppended:
		if m.screen == screenSession && ev.SessionID == m.transcript.sessionID && ev.Message != nil {
			m.transcript.appended(*ev.Message)
		}
	case event.Error:
		m.setStatus("runtime: "+oneLine(ev.Error), true)
	case event.RunStarted:
		// Reopened (a person woke a session of a run that had ended): what
		// the status line said about its end is not so any more.
		m.runEnd = statusLine{}
		if m.status.text == m.runCompletedText() {
			m.status = statusLine{}
		}
	case event.RunFinished:
		// A run that did not complete says why, where the person looks, and
		// keeps saying it once other lines have come and gone.
		if ev.Run == nil {
			break
		}
		m.runEnd = m.runEndLine(*ev.Run)
		m.status = statusLine{}
		if ev.Run.Status == "completed" && !m.readOnly {
			m.setStatus(m.runCompletedText(), false)
		}
	}
}

// runCompletedText is what the status line says when the run completes
// here, with the key that opens a transcript as it is bound.
func (m *model) runCompletedText() string {
	return "run completed: the answer is the orchestrator's last message (" + label(m.keys.Open) + " on it)"
}

// runEndLine is what a run that ended without completing says on the status
// line: why, and for an interrupted or failed run the command that
// continues it. None for a completed run, or a cancelled one that gave no
// reason.
func (m *model) runEndLine(r event.RunInfo) statusLine {
	if r.Status == "interrupted" {
		// Its way back is said first, so the reason's own note of it goes:
		// the status line has three rows for both.
		r.Error = strings.TrimSuffix(strings.TrimSuffix(r.Error, event.StoredForResume), " ")
	}
	switch {
	case r.Status == "interrupted" && !m.readOnly:
		// The way back first: a long reason is cut, the command is not.
		text := "run interrupted; quit (" + label(m.keys.Quit) + "), then " + m.resumeCommand() + " continues it"
		if r.Error != "" {
			text += ". Why: " + oneLine(r.Error)
		}
		return statusLine{text: text, err: true}
	case r.Status == "interrupted":
		// A read-only view: the run is continued from another terminal, and
		// this view may stay open.
		text := "run interrupted; " + m.resumeCommand() + " continues it"
		if r.NotResumed != "" {
			text = "run interrupted; it is " + r.NotResumed
		}
		if r.Error != "" {
			text += ". Why: " + oneLine(r.Error)
		}
		return statusLine{text: text, err: true}
	case r.Status == "failed":
		// A failed run continues too, once what made it fail is fixed.
		text := "run failed; once the cause is fixed, "
		if !m.readOnly {
			text += "quit (" + label(m.keys.Quit) + "), then "
		}
		text += m.resumeCommand() + " continues it"
		if r.NotResumed != "" {
			text = "run failed; it is " + r.NotResumed
		}
		if r.Error != "" {
			text += ". Why: " + oneLine(r.Error)
		}
		return statusLine{text: text, err: true}
	case r.Status != "completed" && r.Error != "":
		return statusLine{text: "run " + r.Status + ": " + oneLine(r.Error), err: true}
	}
	return statusLine{}
}
