package tui

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

const readOnlyText = "read-only: view only shows a run; steer it where it runs (its dashboard, or a headless run's --control), or resume it once it is stopped"

// handleKey routes a key press. The order is fixed: ctrl+c, ctrl+z, the
// goal prompt, an open dialog, a broadcast's sheet, the filter input, then
// global keys, then the focused pane.
// runtime/config/keys.go lists which actions each of these places reads, to
// refuse a key bound to two of them; change both together.
func (m *model) handleKey(k tea.KeyPressMsg) tea.Cmd {
	keys := &m.keys
	if key.Matches(k, keys.ForceQuit) {
		return m.quit()
	}
	if key.Matches(k, keys.Suspend) {
		return m.suspend()
	}
	if k.Code == tea.KeyEscape && k.Mod == tea.ModAlt && !keys.uses(k.String()) {
		// Two esc within a few milliseconds (a quick double tap, a held
		// key) reach the program as one alt+esc, which did nothing.
		esc := tea.KeyPressMsg{Code: tea.KeyEscape}
		first := m.handleKey(esc)
		return tea.Batch(first, m.handleKey(esc))
	}
	if m.width < minWidth || m.height < minHeight {
		// Nothing is visible to act on, not even a quit confirmation; the
		// message says ctrl+c quits.
		return nil
	}
	switch {
	case m.screen == screenGoal:
		return m.goalKey(k)
	case m.dialog.kind != dialogNone:
		return m.dialogKey(k)
	case m.detail.open:
		return m.broadcastSheetKey(k)
	case m.editedFilter() != nil:
		return m.filterKey(k)
	}
	if m.dropTyping(k) {
		return nil
	}
	if m.status.note {
		// A note answers the key before this one ("no next sibling"): the
		// next key acts anew, and may say something of its own.
		m.status = statusLine{}
	}

	switch {
	case key.Matches(k, keys.Quit):
		return m.askQuit()
	case key.Matches(k, keys.Help):
		m.showHelp = !m.showHelp
		m.helpScroll.top = 0
		return nil
	case key.Matches(k, keys.Broadcast, keys.Message, keys.Answer, keys.Skip, keys.SkipAll, keys.Cancel):
		cmd := m.startAction(k)
		if m.dialog.kind == dialogNone && key.Matches(k, keys.Broadcast, keys.Message, keys.Answer) {
			m.typedAfterRefusal = m.now().Add(typingPause)
		}
		return cmd
	case m.showHelp && key.Matches(k, keys.Back):
		m.showHelp = false
		return nil
	case m.showHelp && m.helpScroll.key(k, keys):
		// The open sheet takes the moving keys: it is what the person
		// reads.
		return nil
	}
	if m.screen == screenSession {
		return m.sessionKey(k)
	}
	return m.dashboardKey(k)
}

// busy reports that the dashboard cannot take keys yet: a dialog's send is
// in flight, or a run is being started from the goal prompt, or its
// snapshot is on its way. Keys typed then (quickly, a paste, a macro) are
// held, not dropped nor misread: the next message typed after a send, or
// the broadcast typed while the goal starts.
func (m *model) busy() bool {
	return m.dialog.sending || m.goal.starting || m.connecting
}

// maxHeld bounds the keys held while busy: a paste is one.
const maxHeld = 4096

// hold keeps msg, a key or a paste, to act once the dashboard is no longer
// busy, and reports whether it did. ctrl+c and ctrl+z act at once, and so
// does an esc with nothing held before it: it is how a slow send's dialog
// is left, and the goal prompt's start.
func (m *model) hold(msg tea.Msg) bool {
	if !m.busy() {
		return false
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		if key.Matches(k, m.keys.ForceQuit, m.keys.Suspend) || len(m.held) == 0 && key.Matches(k, m.keys.Back) {
			return false
		}
	}
	if len(m.held) == maxHeld {
		m.setStatus("keys typed while busy were dropped past "+fmtCount(maxHeld), true)
		return true
	}
	m.held = append(m.held, msg)
	return true
}

// replayHeld acts on the held keys in order, until one makes the dashboard
// busy again (an enter that sends): the rest wait for that.
func (m *model) replayHeld() tea.Cmd {
	var cmds []tea.Cmd
	for len(m.held) > 0 && !m.busy() {
		msg := m.held[0]
		m.held[0] = nil
		m.held = m.held[1:]
		switch msg := msg.(type) {
		case tea.KeyPressMsg:
			cmds = append(cmds, m.handleKey(msg))
		case tea.PasteMsg:
			cmds = append(cmds, m.handlePaste(msg))
		}
	}
	if len(m.held) == 0 {
		m.held = nil
	}
	return tea.Batch(cmds...)
}

// dropHeld drops the held keys when what they followed failed: typed on,
// they would land in the text kept for a retry, or act on a screen the
// person did not expect. It says how many, for the status line.
func (m *model) dropHeld() string {
	n := len(m.held)
	m.held = nil
	switch n {
	case 0:
		return ""
	case 1:
		return " (a key typed meanwhile was dropped)"
	}
	return " (" + fmtCount(n) + " keys typed meanwhile were dropped)"
}

func (m *model) goalKey(k tea.KeyPressMsg) tea.Cmd {
	g := &m.goal
	switch {
	case key.Matches(k, m.keys.Back) && g.input.Value() != "" && !g.starting:
		// A typed goal is cleared first, not lost with the program.
		g.input.SetValue("")
		g.err, g.note = "", ""
		return nil
	case key.Matches(k, m.keys.Back):
		return m.quit()
	case g.starting:
		return nil
	case key.Matches(k, m.keys.Send):
		goal := strings.TrimSpace(g.input.Value())
		if goal == "" {
			g.err = "type a goal first"
			return nil
		}
		g.err, g.starting = "", true
		return startCmd(m.ctx, m.opts.Start, goal)
	}
	cmd := editInput(&g.input, k)
	if g.input.Value() != "" {
		g.err = "" // answered by typing
	}
	return cmd
}

// typingPause is how long a refused text action holds off typing keys,
// counted again from each key it drops: longer than between two keys of
// someone typing, shorter than reading the refusal.
const typingPause = time.Second

// readingPause is how long an answer dialog that closed under the person
// holds off typing keys before the first of them: one opened with nothing
// typed yet may be read for a few seconds before the answer is typed.
const readingPause = 4 * time.Second

// dropTyping drops k if it is typing (a character, space, backspace or
// enter) that follows a refused b, m or a without a pause, and holds off
// the next one. A key that is not typing acts, and holds it off too: it is
// part of the same burst, a tab meant for the dialog that did not open
// among them, and the text after it would act as keys (its q quits). Only
// esc, the person dismissing what the refusal says, ends the hold at once.
func (m *model) dropTyping(k tea.KeyPressMsg) bool {
	if m.typedAfterRefusal.IsZero() {
		return false
	}
	now := m.now()
	if !now.Before(m.typedAfterRefusal) {
		m.typedAfterRefusal = time.Time{}
		return false
	}
	typing := k.Mod&^tea.ModShift == 0 && (k.Text != "" || k.Code == tea.KeySpace || k.Code == tea.KeyBackspace || k.Code == tea.KeyEnter)
	if key.Matches(k, m.keys.Back) {
		m.typedAfterRefusal = time.Time{}
		return false
	}
	if !typing {
		// After an answer dialog closed, the first key may come seconds
		// later: that wait is not cut short.
		if until := now.Add(typingPause); until.After(m.typedAfterRefusal) {
			m.typedAfterRefusal = until
		}
		return false
	}
	m.typedAfterRefusal = now.Add(typingPause)
	return true
}

// askQuit quits at once unless the run is still running here, in which case
// it asks first: quitting does not lose the run, but the person should know
// how to get back to it.
func (m *model) askQuit() tea.Cmd {
	if m.readOnly || m.st.run.Status != "running" {
		return m.quit()
	}
	m.openDialog(dialog{kind: dialogConfirm, confirm: confirmQuit})
	return nil
}

// noSelection says why an action on the selected session has none to act
// on.
func (m *model) noSelection(action string) string {
	if m.sessions.filter != "" {
		return "the filter shows no session to " + action + ": " + label(m.keys.Back) + " in Sessions clears it"
	}
	return "select a session to " + action + " first"
}

// startAction opens the dialog of an action key, or refuses it.
func (m *model) startAction(k tea.KeyPressMsg) tea.Cmd {
	keys := &m.keys
	if (key.Matches(k, keys.Answer) || key.Matches(k, keys.Skip) || key.Matches(k, keys.SkipAll)) && len(m.st.questions) == 0 && len(m.st.humanAbsent) > 0 {
		// Before read-only: the question cannot be answered (or skipped)
		// from here nor from anywhere else, and the person should not go
		// looking.
		q := m.st.humanAbsent[0]
		m.setStatus("nobody can answer "+q.ID+": it is asked of the agents only, as no person is attached where the run runs "+
			"(a headless run without --control, or one whose control input ended)", true)
		return nil
	}
	if m.readOnly {
		switch st := m.st.run.Status; st {
		case "completed", "failed", "cancelled":
			// resume refuses a run that has ended; a failed one it takes.
			text := "read-only: view only shows a run, and this one has " + st
			switch {
			case st == "failed" && m.st.run.NotResumed != "":
				text += "; it is " + m.st.run.NotResumed
			case st == "failed":
				text += "; " + m.resumeCommand() + " continues it once the cause is fixed"
			}
			m.setStatus(text, true)
		case "deleted":
			m.setStatus("read-only: this run is deleted from the database, and nothing steers or resumes it", true)
		default:
			m.setStatus(readOnlyText, true)
		}
		return nil
	}
	if m.ctl == nil {
		m.setStatus("not connected to a run yet", true)
		return nil
	}
	if m.st.run.Status == "interrupted" {
		m.setStatus("the run has stopped: nothing here reaches it now; "+m.resumeCommand()+" continues it", true)
		return nil
	}
	sel := m.selectedSession()
	if key.Matches(k, keys.Message) || key.Matches(k, keys.Cancel) {
		var why string
		if sel, why = m.actionTarget(); why != "" {
			m.setStatus(why+": "+m.toSessions()+" moves on to the Sessions pane", true)
			return nil
		}
	}
	switch {
	case key.Matches(k, keys.Broadcast):
		if st := m.st.run.Status; st != "" && st != "running" {
			m.setStatus(m.broadcastRefusal(st), true)
			return nil
		}
		m.openDialog(dialog{kind: dialogBroadcast, target: sel})
		m.dialog.input.Placeholder = "what every agent should know"
	case key.Matches(k, keys.Message):
		if sel == "" {
			m.setStatus(m.noSelection("message"), true)
			return nil
		}
		if m.st.run.Status == "cancelled" {
			m.setStatus("the run was cancelled: it takes no more messages (start a new run instead)", true)
			return nil
		}
		if n := m.st.sessions[sel]; n != nil && n.info.Status == "cancelled" {
			// Refused before anything is typed, as the runtime would refuse it.
			m.setStatus(m.st.sessionRef(sel)+" was cancelled: it cannot receive messages", true)
			return nil
		}
		m.openDialog(dialog{kind: dialogMessage, target: sel})
		m.dialog.input.Placeholder = "message for " + m.st.sessionRef(sel)
	case key.Matches(k, keys.Answer):
		if len(m.st.questions) == 0 {
			m.setNote("no question is waiting for you")
			return nil
		}
		q := m.st.questions[0]
		m.openDialog(dialog{kind: dialogAnswer, questionID: q.ID})
		m.dialog.input.Placeholder = "your answer"
	case key.Matches(k, keys.Skip):
		if len(m.st.questions) == 0 {
			m.setNote("no question is waiting for you")
			return nil
		}
		return m.skipCmd(m.st.questions[0].ID)
	case key.Matches(k, keys.SkipAll):
		if st := m.st.run.Status; st != "" && st != "running" && len(m.st.questions) == 0 {
			m.setNote("the run has " + st + ": no question can come any more")
			return nil
		}
		// With no question open it still stops the run asking (the README's
		// "skip every question of the run"), after the same confirmation.
		m.openDialog(dialog{kind: dialogConfirm, confirm: confirmSkipAll})
	case key.Matches(k, keys.Cancel):
		if sel == "" {
			m.setStatus(m.noSelection("cancel"), true)
			return nil
		}
		if n := m.st.sessions[sel]; n != nil && !n.anyActive() {
			m.setNote(m.st.sessionRef(sel) + " " + endedAs(n.info.Status) + " already: nothing to cancel")
			return nil
		}
		m.openDialog(dialog{kind: dialogConfirm, confirm: confirmCancel, target: sel})
	}
	return nil
}

// actionTarget is the session a message or a cancel is for: the one the
// focused pane points at (the selected broadcast's sender, the selected
// delegation's session), else the Sessions pane's selection. Where the
// focused pane points at no session, why says so: the Sessions pane's
// selection is out of sight from there, and x on it may end the run.
func (m *model) actionTarget() (id, why string) {
	if m.screen != screenDashboard {
		return m.selectedSession(), ""
	}
	switch m.focus {
	case focusBroadcasts:
		b := m.broadcasts.selected(&m.st.feed)
		switch {
		case b == nil:
			return "", "no broadcast is selected in Broadcasts"
		case b.FromSession == "" || m.st.sessions[b.FromSession] == nil:
			return "", "the selected broadcast is not from a session"
		}
		return b.FromSession, ""
	case focusDelegations:
		d := m.delegations.selected(m.st)
		switch {
		case d == nil:
			return "", "no delegation is selected in Delegations"
		case d.SessionID == "" || m.st.sessions[d.SessionID] == nil:
			return "", "the selected delegation has no session yet"
		}
		return d.SessionID, ""
	}
	return m.selectedSession(), ""
}

func (m *model) skipCmd(qid string) tea.Cmd {
	ctl := m.ctl
	from := ""
	if q, _, ok := m.st.question(qid); ok {
		from = oneLine(q.From)
		if from == "" {
			from = m.st.sessionRef(q.FromSession)
		}
	}
	return actionCmd(m.ctx, actSkip, "skipped the question from "+from, qid, func(ctx context.Context) error {
		return ctl.Skip(ctx, qid)
	})
}

// dialogKey handles keys while a dialog is open. Printable keys go to the
// dialog's text input; its commands are control keys.
func (m *model) dialogKey(k tea.KeyPressMsg) tea.Cmd {
	d := &m.dialog
	keys := &m.keys
	if d.kind == dialogConfirm {
		switch {
		case key.Matches(k, keys.Yes):
			return m.confirmed()
		case key.Matches(k, keys.No) && d.back != nil:
			m.dialog = *d.back
		case key.Matches(k, keys.No):
			m.closeDialog()
		}
		return nil
	}
	if m.status.ofDialog {
		// The status line repeats the dialog's error; whatever the person
		// does next, it is no longer the news.
		m.status = statusLine{}
	}
	if key.Matches(k, keys.Back) {
		m.keepDraft()
		m.closeDialog()
		return nil
	}
	if d.sending {
		return nil
	}
	if !d.dropUntil.IsZero() {
		if now := m.now(); now.Before(d.dropUntil) {
			d.dropUntil = now.Add(typingPause)
			d.dropped++
			return nil
		}
		d.dropUntil = time.Time{}
	}
	ctl := m.ctl
	switch d.kind {
	case dialogBroadcast:
		switch {
		case key.Matches(k, keys.ToggleTarget):
			d.subtree = !d.subtree && d.target != ""
			return nil
		case key.Matches(k, keys.CycleCategory):
			d.category = (d.category + 1) % len(categories)
			return nil
		case key.Matches(k, keys.Send):
			text := strings.TrimSpace(d.input.Value())
			if text == "" {
				d.err = "type the broadcast first"
				return nil
			}
			target, to := "all", "all sessions"
			if d.subtree {
				target, to = d.target, "the subtree of "+m.st.sessionRef(d.target)
			}
			cat := categories[d.category]
			g := m.styles.g
			detail := "broadcast sent to " + to + g.sep + cat
			// A broadcast is passive: a session that has ended reads it only
			// if something wakes it, which the person should know now.
			switch n := m.st.finishedIn(target); n {
			case 0:
			case 1:
				detail += g.sep + "1 finished won't read it (" + label(keys.Message) + " wakes it)"
			default:
				detail += g.sep + fmt.Sprintf("%d finished won't read it (%s wakes one)", n, label(keys.Message))
			}
			d.sending, d.err = true, ""
			return actionCmd(m.ctx, actBroadcast, detail, "", func(ctx context.Context) error {
				return ctl.Broadcast(ctx, text, target, cat)
			})
		}
	case dialogMessage:
		switch {
		case key.Matches(k, keys.ToggleNoReply):
			d.noReply = !d.noReply
			return nil
		case key.Matches(k, keys.Send):
			text := strings.TrimSpace(d.input.Value())
			if text == "" {
				d.err = "type the message first"
				return nil
			}
			id, noReply := d.target, d.noReply
			detail := "message sent to " + m.st.sessionRef(id)
			if noReply {
				detail += " (no-reply)"
			}
			if n := m.st.sessions[id]; n != nil && n.info.Status == "failed" {
				// A failed session is not woken: it reads the message
				// when a resume brings it back.
				if m.st.run.Status == "running" {
					// A run that goes on to complete is not resumed.
					detail += "; it has failed, and reads it only if the run stops and is resumed, not if the run completes"
				} else {
					detail += "; it has failed, and reads it once the run is resumed (" + m.resumeCommand() + ")"
				}
			}
			d.sending, d.err = true, ""
			return actionCmd(m.ctx, actMessage, detail, "", func(ctx context.Context) error {
				return ctl.SendMessage(ctx, id, text, noReply)
			})
		}
	case dialogAnswer:
		q, _, _ := m.st.question(d.questionID)
		switch {
		case key.Matches(k, keys.UseRemembered) && q.Remembered != "":
			d.input.SetValue(q.Remembered)
			d.input.CursorEnd()
			d.err = "" // it was about the text replaced
			return nil
		case key.Matches(k, keys.DialogSkip):
			d.sending, d.err = true, ""
			return m.skipCmd(d.questionID)
		case key.Matches(k, keys.DialogSkipAll):
			answering := *d
			m.openDialog(dialog{kind: dialogConfirm, confirm: confirmSkipAll, back: &answering})
			return nil
		case key.Matches(k, keys.Send):
			text := strings.TrimSpace(d.input.Value())
			if text == "" {
				d.err = "type an answer, or " + label(keys.DialogSkip) + " to skip"
				return nil
			}
			qid := d.questionID
			d.sending, d.err = true, ""
			return actionCmd(m.ctx, actAnswer, "answer sent", qid, func(ctx context.Context) error {
				return ctl.Answer(ctx, qid, text)
			})
		}
	}
	before := d.input.Value()
	cmd := editInput(&d.input, k)
	d.err = ""
	d.restored = d.restored && d.input.Value() == before
	d.joined = d.joined && d.input.Value() != "" // about a paste that is gone
	return cmd
}

// confirmed carries out a y/n confirmation.
func (m *model) confirmed() tea.Cmd {
	d := m.dialog
	m.closeDialog()
	ctl := m.ctl
	switch d.confirm {
	case confirmQuit:
		return m.quit()
	case confirmCancel:
		id := d.target
		m.setNote("cancelling " + m.st.sessionRef(id) + m.styles.g.ellipsis)
		return actionCmd(m.ctx, actCancel, "cancelled "+m.st.sessionRef(id)+" and its subtree", "", func(ctx context.Context) error {
			return ctl.Cancel(ctx, id)
		})
	case confirmSkipAll:
		return actionCmd(m.ctx, actSkipAll, "skipped all questions; agents will not ask you again in this run", "", func(ctx context.Context) error {
			return ctl.SkipAll(ctx)
		})
	}
	return nil
}

// editedFilter is the filter being typed into, if any.
func (m *model) editedFilter() *paneFilter {
	switch {
	case m.sessions.filtering:
		return &m.sessions.paneFilter
	case m.broadcasts.filtering:
		return &m.broadcasts.paneFilter
	}
	return nil
}

// filteredPane is the pane the filter key filters: the focused one where it
// has a filter (Sessions, Broadcasts), the feed from the other panes.
func (m *model) filteredPane() focus {
	if m.focus == focusSessions {
		return focusSessions
	}
	return focusBroadcasts
}

// shownKeys is the keymap as the footer shows it: the filter key says what
// it filters from the focused pane.
func (m *model) shownKeys() keyMap {
	if m.filteredPane() == focusSessions {
		return m.keys.filtering("sessions")
	}
	return m.keys.filtering("broadcasts")
}

// filterKey edits a pane's filter; the pane narrows as the person types.
func (m *model) filterKey(k tea.KeyPressMsg) tea.Cmd {
	f := m.editedFilter()
	switch {
	case key.Matches(k, m.keys.Back):
		f.endEdit(false)
		return nil
	case key.Matches(k, m.keys.Send):
		f.endEdit(true)
		return nil
	}
	cmd := editInput(&f.input, k)
	f.setFilter(f.input.Value())
	return cmd
}

func (m *model) handlePaste(msg tea.PasteMsg) tea.Cmd {
	var cmd tea.Cmd
	switch {
	case m.screen == screenGoal:
		before := utf8.RuneCountInString(m.goal.input.Value())
		pasted := utf8.RuneCountInString(msg.Content)
		room := m.goal.input.CharLimit - before
		if pasted > room {
			// Cut here, before a character that would not fit whole: the
			// prompt would cut inside it (a family emoji made a man).
			msg.Content = wholeClusters(msg.Content, room)
		}
		m.goal.input, cmd = m.goal.input.Update(msg)
		if m.goal.input.Value() != "" {
			m.goal.err = "" // answered by the paste, as by typing
		}
		// The prompt is one line, and bounded: say what it did to a paste.
		var said []string
		if strings.ContainsAny(msg.Content, "\n\r") {
			said = append(said, "its line breaks became spaces")
		}
		if pasted > room {
			said = append(said, "it was cut at "+fmtCount(m.goal.input.CharLimit)+" characters")
		}
		if len(said) > 0 {
			m.goal.note = "Pasted: " + strings.Join(said, ", and ") + `. A goal of several lines, or a longer one, goes on the command line: swarmdeck "$(cat goal.md)".`
		}
	case m.dialog.kind != dialogNone && m.dialog.kind != dialogConfirm && !m.dialog.sending:
		msg.Content = strings.ReplaceAll(msg.Content, "\r\n", "\n") // one break, one space
		before := m.dialog.input.Value()
		m.dialog.input, cmd = m.dialog.input.Update(msg)
		m.dialog.err = "" // as typing does
		m.dialog.restored = m.dialog.restored && m.dialog.input.Value() == before
		if strings.ContainsAny(strings.TrimSpace(msg.Content), "\n\r") {
			m.dialog.joined = true
		}
	case m.editedFilter() != nil:
		f := m.editedFilter()
		f.input, cmd = f.input.Update(msg)
		f.setFilter(f.input.Value())
	}
	return cmd
}

// shownPane is the next pane in the direction step that this frame
// draws: a short terminal leaves out the least important panes, and focus
// there would be out of sight, acted on by keys the person cannot follow.
func (m *model) shownPane(step int) focus {
	l, _ := m.layout()
	f := m.focus
	for range focusCount {
		f = (f + focus(step) + focusCount) % focusCount
		if !l.pane(f).empty() {
			return f
		}
	}
	return m.focus
}

// toSessions names the key that moves the focus to the Sessions pane in
// one press, where one does: from Broadcasts, tab goes on to Plans.
func (m *model) toSessions() string {
	if m.shownPane(1) != focusSessions && m.shownPane(-1) == focusSessions {
		return label(m.keys.FocusPrev)
	}
	return label(m.keys.FocusNext)
}

// page is how far page up/down moves in a pane of h rows.
func page(h int) int { return max(h-1, 1) }

func (m *model) dashboardKey(k tea.KeyPressMsg) tea.Cmd {
	keys := &m.keys
	switch {
	case key.Matches(k, keys.FocusNext):
		m.focus = m.shownPane(1)
		return nil
	case key.Matches(k, keys.FocusPrev):
		m.focus = m.shownPane(-1)
		return nil
	case key.Matches(k, keys.Filter):
		m.focus = m.filteredPane()
		if m.focus == focusSessions {
			return m.sessions.editFilter()
		}
		return m.broadcasts.editFilter()
	case key.Matches(k, keys.Parent, keys.PrevSibling, keys.NextSibling, keys.FirstChild):
		if id, ok := m.relative(m.sessions.current(), k); ok {
			m.sessions.selectID(m.st, id)
			m.focus = focusSessions
		}
		return nil
	case key.Matches(k, keys.Back):
		switch {
		case m.focus == focusBroadcasts && m.broadcasts.filter != "":
			m.broadcasts.clearFilter()
		case m.focus == focusSessions && m.sessions.filter != "":
			m.sessions.clearFilter()
		default:
			m.status = statusLine{}
		}
		return nil
	}

	d := 0
	switch {
	case key.Matches(k, keys.Up):
		d = -1
	case key.Matches(k, keys.Down):
		d = 1
	case key.Matches(k, keys.PageUp):
		d = -page(m.paneItems())
	case key.Matches(k, keys.PageDown):
		d = page(m.paneItems())
	case key.Matches(k, keys.Top):
		d = -1 << 30
	case key.Matches(k, keys.Bottom):
		d = 1 << 30
	}
	if d != 0 {
		return m.scrollFocused(d)
	}

	switch m.focus {
	case focusSessions:
		switch {
		case key.Matches(k, keys.Open):
			m.back = backTo{}
			return m.openSession(m.sessions.current())
		case key.Matches(k, keys.Collapse) && m.sessions.filter != "":
			m.setNote("the filter shows every match unfolded: " + label(keys.Back) + " clears it")
		case key.Matches(k, keys.Collapse):
			m.sessions.toggleFold(m.st)
		}
	case focusBroadcasts:
		// A feed row is cut to the pane: enter reads the broadcast in full.
		if key.Matches(k, keys.Open) {
			if b := m.broadcasts.selected(&m.st.feed); b != nil {
				m.openBroadcastSheet(*b)
			}
		}
	case focusPlans:
		if key.Matches(k, keys.Open) {
			return m.openPlanTask()
		}
	case focusDelegations:
		if key.Matches(k, keys.Open) {
			if d := m.delegations.selected(m.st); d != nil {
				return m.openDelegation(d)
			}
		}
	}
	if m.focus != focusSessions && key.Matches(k, keys.Collapse) {
		// The footer offers it wherever the focus is: say where it works.
		m.setNote(label(keys.Collapse) + " folds a subtree of the Sessions pane (" + label(keys.FocusNext) + " moves there)")
	}
	return nil
}

// openPlanTask opens the session that works on the plan task selected in
// the Plans pane: the one its delegation started. Any other task is worked
// on by the plan's own session, or by sub-agents it spawned without naming
// the task, so there is nothing of its own to open; the note says so.
func (m *model) openPlanTask() tea.Cmd {
	p := &m.plans
	tasks := m.st.plans[p.session].Tasks
	if p.cursor < 0 || p.cursor >= len(tasks) {
		return nil
	}
	task := tasks[p.cursor]
	var last *event.DelegationInfo
	for _, id := range m.st.delegationOrder {
		if d := m.st.delegations[id]; d.ParentSession == p.session && d.PlanTaskID == task.ID {
			last = d
		}
	}
	if last == nil {
		m.setNote("task " + oneLine(task.ID) + " is not delegated: it has no session of its own to open (" +
			m.st.sessionName(p.session) + "'s plan)")
		return nil
	}
	return m.openDelegation(last)
}

// openDelegation opens the session a delegation started, or says why there
// is none.
func (m *model) openDelegation(d *event.DelegationInfo) tea.Cmd {
	if d.SessionID != "" && m.st.sessions[d.SessionID] != nil {
		m.comeBackHere()
		return m.openSession(d.SessionID)
	}
	why := "has no session to open"
	switch d.Status {
	case "pending", "running":
		why = "has not started its session yet"
	case "failed", "cancelled":
		why = d.Status + " before it started a session"
	}
	m.setNote("delegation " + d.ID + " " + why)
	return nil
}

// paneItems is how many items the focused pane's list shows at once: a
// page moves by items, and a broadcast may take two rows.
func (m *model) paneItems() int {
	switch m.focus {
	case focusBroadcasts:
		return m.broadcasts.visibleItems()
	case focusPlans:
		return m.plans.bodyRows()
	case focusDelegations:
		return m.delegations.bodyRows()
	}
	return m.sessions.bodyRows()
}

// scrollFocused moves the focused pane's selection by d rows. Moving above
// the oldest broadcast in memory reads older ones from the store.
func (m *model) scrollFocused(d int) tea.Cmd {
	switch m.focus {
	case focusSessions:
		m.sessions.move(d)
	case focusBroadcasts:
		return m.scrollFeed(d)
	case focusPlans:
		m.plans.move(d)
	case focusDelegations:
		m.delegations.move(d)
	}
	return nil
}

func (m *model) scrollFeed(d int) tea.Cmd {
	p := &m.broadcasts
	f := &m.st.feed
	// Any move takes over from home's reading back.
	f.toFirst = false
	switch {
	case d >= 1<<30:
		p.toBottom()
		return nil
	case d <= -1<<30:
		// Home: the run's first broadcast, however many pages back.
		p.move(f, d)
		f.toFirst = true
		return m.loadOlderFeed()
	}
	wasTop := p.atTop()
	p.move(f, d)
	if d < 0 && wasTop && p.atTop() {
		return m.loadOlderFeed()
	}
	return nil
}

// loadOlderFeed reads the page of broadcasts before the oldest in memory,
// unless the store has none or one is being read already.
func (m *model) loadOlderFeed() tea.Cmd {
	f := &m.st.feed
	if f.olderDone || m.ctl == nil || len(f.items) == 0 || (f.counted && f.older() == 0) {
		f.toFirst = false
		return nil
	}
	if f.loadingOlder {
		return nil // home reads on when it arrives
	}
	f.loadingOlder = true
	return loadOlderBroadcastsCmd(m.ctx, m.ctl, f.items[0].ID)
}

// relative finds the parent, previous or next sibling, or first child of a
// session, for the key pressed.
func (m *model) relative(id string, k tea.KeyPressMsg) (string, bool) {
	n := m.st.sessions[id]
	if n == nil {
		return "", false
	}
	keys := &m.keys
	var to *sessionNode
	what := ""
	switch {
	case key.Matches(k, keys.Parent):
		to, what = n.parent, "no parent: this is a root session"
	case key.Matches(k, keys.FirstChild):
		what = "no children"
		if len(n.children) > 0 {
			to = n.children[0]
		}
	case key.Matches(k, keys.PrevSibling), key.Matches(k, keys.NextSibling):
		sib := m.st.siblings(n)
		step := 1
		what = "no next sibling"
		if key.Matches(k, keys.PrevSibling) {
			step, what = -1, "no previous sibling"
		}
		for i, s := range sib {
			if s == n && i+step >= 0 && i+step < len(sib) {
				to = sib[i+step]
			}
		}
	}
	if to == nil {
		m.setNote(what)
		return "", false
	}
	return to.info.ID, true
}

// comeBackHere has esc from the transcript about to open return to the
// focused pane: from Plans with the tree's selection as it is now, so
// that the pane shows the same plan; from a broadcast's sheet to that
// sheet.
func (m *model) comeBackHere() {
	m.back = backTo{set: true, focus: m.focus}
	if m.focus == focusPlans {
		m.back.selected = m.sessions.current()
		m.back.plans = m.plans.list
	}
	if m.detail.open {
		b := m.detail.b
		m.back.sheet = &b
	}
}

// openSession opens the session view on a session and reads its transcript.
func (m *model) openSession(id string) tea.Cmd {
	n := m.st.sessions[id]
	if n == nil || m.ctl == nil {
		return nil
	}
	m.screen = screenSession
	m.showHelp = false
	m.sessions.selectID(m.st, id)
	m.transcript.open(id)
	return loadTranscriptCmd(m.ctx, m.ctl, id, m.transcript.gen, n.nextIndex)
}

func (m *model) sessionKey(k tea.KeyPressMsg) tea.Cmd {
	keys := &m.keys
	t := &m.transcript
	switch {
	case key.Matches(k, keys.Back):
		m.screen = screenDashboard
		m.focus = focusSessions
		m.sessions.selectID(m.st, t.sessionID)
		if b := m.back; b.set {
			m.back = backTo{}
			m.focus = b.focus
			if b.selected != "" {
				m.sessions.selectID(m.st, b.selected)
				// The same plan, at the task that was opened.
				m.plans.show(m.sessions.current())
				if m.plans.session == b.selected {
					m.plans.list = b.plans
				}
			}
			if b.sheet != nil {
				m.openBroadcastSheet(*b.sheet)
			}
		}
		return nil
	case key.Matches(k, keys.Parent, keys.PrevSibling, keys.NextSibling, keys.FirstChild):
		if id, ok := m.relative(t.sessionID, k); ok {
			return m.openSession(id)
		}
		return nil
	case key.Matches(k, keys.Open, keys.Collapse):
		t.toggle()
		return nil
	case key.Matches(k, keys.Bottom):
		t.toFirst = false
		t.toBottom()
		return nil
	}
	// Any other move takes over from home's reading back.
	t.toFirst = false
	// Up and down read a message taller than the pane line by line, and
	// move between messages otherwise; page up and down move by what the
	// pane shows.
	s := &m.styles
	want := false
	switch {
	case key.Matches(k, keys.Up):
		want = !t.scroll(s, -1) && t.move(s, -1)
	case key.Matches(k, keys.Down):
		want = !t.scroll(s, 1) && t.move(s, 1)
	case key.Matches(k, keys.PageUp):
		want = t.page(s, -1)
	case key.Matches(k, keys.PageDown):
		want = t.page(s, 1)
	case key.Matches(k, keys.Top):
		want = t.toTop(s)
		t.toFirst = want
	}
	if want {
		return m.loadOlderTranscript()
	}
	return nil
}

func (m *model) loadOlderTranscript() tea.Cmd {
	t := &m.transcript
	if t.loading || t.loadingOlder || t.firstIndex() == 0 || m.ctl == nil {
		return nil
	}
	if len(t.msgs) >= transcriptKeep+transcriptExtra {
		// Loading more would only push out what was just loaded.
		t.toFirst = false
		m.setNote("showing the newest " + fmtCount(len(t.msgs)) + " messages; older ones stay in the store")
		return nil
	}
	t.loadingOlder = true
	return loadOlderTranscriptCmd(m.ctx, m.ctl, t.sessionID, t.gen, t.firstIndex())
}

// broadcastRefusal says why a run that has ended takes no broadcast, and
// what reaches it instead, if anything.
func (m *model) broadcastRefusal(status string) string {
	const nobody = ": a broadcast would reach nobody"
	switch status {
	case "completed":
		return "the run has completed" + nobody + " (a message, m, wakes one session)"
	case "cancelled":
		return "the run was cancelled" + nobody + " (start a new run instead)"
	case "failed":
		return "the run has failed" + nobody + " (" + m.resumeCommand() + " continues it)"
	}
	return "the run is " + status + nobody
}

// endedAs says how a session or run ended, as a verb: "has completed",
// "has failed", "was cancelled".
func endedAs(status string) string {
	if status == "cancelled" {
		return "was cancelled"
	}
	return "has " + status
}
