package tui

import (
	tea "charm.land/bubbletea/v2"
)

var actionVerb = map[actionKind]string{
	actBroadcast: "broadcast",
	actMessage:   "message",
	actAnswer:    "answer",
	actSkip:      "skip",
	actSkipAll:   "skip all",
	actCancel:    "cancel",
}

// dialogFor is the dialog that waits for an action's result.
var dialogFor = map[actionKind]dialogKind{
	actBroadcast: dialogBroadcast,
	actMessage:   dialogMessage,
	actAnswer:    dialogAnswer,
	actSkip:      dialogAnswer,
}

// handleResult applies the results of controller calls.
func (m *model) handleResult(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case actionDoneMsg:
		d := &m.dialog
		waiting := d.sending && d.kind == dialogFor[msg.kind]
		if msg.err != nil {
			dropped := ""
			if waiting {
				// Keep the dialog and what was typed, so the person can retry.
				d.sending, d.err = false, msg.err.Error()
				dropped = m.dropHeld()
				// Keys still coming in the same burst are not for this
				// text either (see dialogKey).
				d.dropUntil, d.dropped = m.now().Add(typingPause), 0
			}
			m.setStatus(actionVerb[msg.kind]+" failed: "+msg.err.Error()+dropped, true)
			m.status.ofDialog = waiting
			return nil
		}
		if waiting {
			delete(m.drafts, draftKey(d))
			m.closeDialog()
		}
		switch msg.kind {
		case actAnswer, actSkip:
			// The runtime will also say so with an event; dropping it now
			// moves the banner on at once.
			m.st.closeQuestion(msg.questionID)
		case actSkipAll:
			for len(m.st.questions) > 0 {
				m.st.closeQuestion(m.st.questions[0].ID)
			}
		}
		m.setStatus(msg.detail, false)

	case transcriptMsg:
		t := &m.transcript
		if msg.sessionID != t.sessionID || msg.gen != t.gen {
			return nil // the person moved on to another session
		}
		if msg.older {
			t.prepend(msg.msgs, msg.err)
			if t.toFirstPage(&m.styles) {
				return m.loadOlderTranscript()
			}
		} else {
			t.loaded(msg.msgs, msg.err)
		}

	case olderBroadcastsMsg:
		f := &m.st.feed
		f.loadingOlder = false
		if msg.err != nil {
			f.toFirst = false
			m.setStatus(msg.err.Error(), true)
			return nil
		}
		if len(f.items) == 0 || f.items[0].ID != msg.before {
			// The feed moved meanwhile: the person can scroll again, and
			// home reads on from where the feed is now.
			if f.toFirst {
				return m.loadOlderFeed()
			}
			return nil
		}
		items := msg.items
		if room := f.room(); len(items) > room {
			// Only the newest of the page fit in what the dashboard keeps.
			items = items[len(items)-room:]
			f.olderDone = true
			m.setNote("showing the newest " + fmtCount(len(f.items)+len(items)) + " broadcasts; older ones stay in the store")
		}
		if len(items) == 0 {
			f.olderDone = true
		} else {
			m.broadcasts.follow = false
			f.limit = feedKeep + feedHistoryMax
			f.prepend(items)
		}
		if f.toFirst {
			m.broadcasts.move(f, -1<<30)
			return m.loadOlderFeed()
		}

	case panicMsg:
		m.connecting = false // a snapshot that never came
		m.setStatus(msg.err.Error()+m.dropHeld(), true)
	}
	return nil
}
