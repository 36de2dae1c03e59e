package tui

import (
	tea "charm.land/bubbletea/v2"
)

// wheelStep is how many rows one wheel notch scrolls.
const wheelStep = 3

// handleClick focuses the pane under the pointer and selects the row
// clicked. In the session view, clicking a session opens it. While a dialog
// or a broadcast's sheet is open, which the keyboard is on, clicks do
// nothing.
func (m *model) handleClick(ms tea.Mouse) tea.Cmd {
	if ms.Button != tea.MouseLeft || m.screen == screenGoal || m.dialog.kind != dialogNone || m.detail.open {
		return nil
	}
	l, _ := m.layout()
	switch {
	case l.transcript.contains(ms.X, ms.Y):
		if i, ok := m.transcript.msgAt(ms.Y - l.transcript.y - 1); ok {
			m.transcript.selectAt(&m.styles, i)
		}
	case l.sessions.contains(ms.X, ms.Y):
		i, ok := m.sessions.rowAt(ms.Y - l.sessions.y)
		if m.screen == screenSession {
			if ok && m.sessions.selectRow(i) {
				return m.openSession(m.sessions.current())
			}
			return nil
		}
		m.focus = focusSessions
		if ok {
			m.sessions.selectRow(i)
		}
	case l.broadcasts.contains(ms.X, ms.Y):
		if m.screen == screenDashboard {
			m.focus = focusBroadcasts
		}
		if i, ok := m.broadcasts.rowAt(ms.Y - l.broadcasts.y); ok {
			m.broadcasts.selectRow(&m.st.feed, i)
		}
	case l.plans.contains(ms.X, ms.Y):
		m.focus = focusPlans
		// Plan rows start under the border and the summary line.
		if row := ms.Y - l.plans.y - 2; row >= 0 {
			m.plans.cursor = m.plans.offset + row
		}
	case l.delegations.contains(ms.X, ms.Y):
		m.focus = focusDelegations
		if i, ok := m.delegations.rowAt(ms.Y - l.delegations.y); ok {
			m.delegations.cursor = i
		}
	}
	return nil
}

// handleWheel scrolls the pane (or the read-only sheet) under the pointer,
// whatever has focus; while a broadcast's sheet is open, only the sheet.
// While a dialog is open it does nothing, as clicks do: the rows it would
// move are what the dialog acts on, or show which session that is.
func (m *model) handleWheel(ms tea.Mouse) tea.Cmd {
	if m.screen == screenGoal || m.dialog.kind != dialogNone {
		return nil
	}
	d := 0
	switch ms.Button {
	case tea.MouseWheelUp:
		d = -wheelStep
	case tea.MouseWheelDown:
		d = wheelStep
	default:
		return nil
	}
	l, _ := m.layout()
	switch {
	case m.detail.open:
		// The feed behind stays on the broadcast the sheet shows.
		if l.sheet.contains(ms.X, ms.Y) {
			m.detail.scroll.scroll(d)
		}
	case m.showHelp && l.sheet.contains(ms.X, ms.Y):
		m.helpScroll.scroll(d)
	case l.transcript.contains(ms.X, ms.Y):
		// A notch moves the view by wheelStep rows, whatever the
		// messages' heights: every row passes through it.
		t := &m.transcript
		t.toFirst = false
		want := t.wheelScroll(&m.styles, d)
		t.sync(&m.styles)
		if want {
			return m.loadOlderTranscript()
		}
	case l.sessions.contains(ms.X, ms.Y):
		m.sessions.move(d)
	case l.broadcasts.contains(ms.X, ms.Y):
		return m.scrollFeed(d)
	case l.plans.contains(ms.X, ms.Y):
		m.plans.move(d)
	case l.delegations.contains(ms.X, ms.Y):
		m.delegations.move(d)
	}
	return nil
}
