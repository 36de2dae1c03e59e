package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// renderHeader is two lines: the goal, then the run's figures and marks.
func (m *model) renderHeader(w int) []string {
	s := &m.styles
	st := m.st
	goal := oneLine(st.run.Goal)
	if goal == "" {
		goal = "(no goal yet)"
	}
	line1 := s.accent.Render(" swarmdeck") + s.dim.Render(" · goal: ") + s.headerGoal.Render(goal)

	var left []string
	if st.run.ID != "" {
		left = append(left, s.dim.Render("run ")+st.run.ID)
	}
	status := st.run.Status
	if status == "" {
		status = "starting"
	}
	left = append(left, s.statusStyle(status).Render(status))
	left = append(left, fmtDuration(st.elapsed(m.now())))
	left = append(left, fmtCount(m.totalTokens())+" tokens")
	left = append(left, plural(len(st.sessions), "session", "sessions"))
	if p := providerModel(st.run.Provider, st.run.Model); p != "" {
		left = append(left, p)
	}
	line2 := " " + strings.Join(left, s.dim.Render(" · "))

	var marks []string
	if st.run.Scripted {
		marks = append(marks, s.markWarn.Render(" SCRIPTED MODEL "))
	}
	if m.readOnly {
		marks = append(marks, s.mark.Render(" READ-ONLY "))
	}
	if st.run.Resumed {
		marks = append(marks, s.mark.Render(" RESUMED "))
	}
	if m.streamClosed && st.runActive() {
		marks = append(marks, s.markWarn.Render(" DISCONNECTED "))
	}
	right := strings.Join(marks, " ")
	if right != "" {
		rw := ansi.StringWidth(right)
		line2 = fit(line2, max(w-rw-1, 0)) + " " + right
	}
	return []string{fit(line1, w), fit(line2, w)}
}

func providerModel(provider, model string) string {
	switch {
	case provider != "" && model != "":
		return provider + " / " + model
	case provider != "":
		return provider
	}
	return model
}

// totalTokens is the run's usage: the sum over sessions, or what the run
// itself reports when that is larger (sessions not loaded, or usage outside
// sessions).
func (m *model) totalTokens() int {
	return max(m.st.totalTokens, m.st.run.Usage.TotalTokens)
}

// renderBanner is the question banner: who asks what, and how many wait.
func (m *model) renderBanner(w int) string {
	st := m.st
	if len(st.questions) == 0 {
		return ""
	}
	q := st.questions[0]
	from := oneLine(q.From)
	if from == "" {
		from = st.sessionName(q.FromSession)
	}
	k := &m.keys
	right := " 1 of " + strconv.Itoa(len(st.questions)) + " · " + label(k.Answer) + " answer · " +
		label(k.Skip) + " skip · " + label(k.SkipAll) + " skip all "
	if m.readOnly { // answered where the run runs
		right = " 1 of " + strconv.Itoa(len(st.questions)) + " "
	}
	left := " ? " + from + " asks: " + oneLine(q.Question)
	line := fit(left, max(w-ansi.StringWidth(right), 0)) + right
	return m.styles.banner.Render(fit(line, w))
}

func (m *model) renderStatus() string {
	s := &m.styles
	if m.status.err {
		return s.errText.Render(" ✗ " + oneLine(m.status.text))
	}
	if m.status.note {
		return s.dim.Render(" · " + oneLine(m.status.text))
	}
	return s.okText.Render(" ✓ " + oneLine(m.status.text))
}

// renderFooter is the key help generated from the keymap. When the whole
// list does not fit, a shorter one that keeps help and quit is used, so the
// way to everything else stays on screen.
func (m *model) renderFooter() string {
	var full, short []key.Binding
	if m.dialog.kind != dialogNone {
		return " " + m.help.ShortHelpView(dialogHelp{&m.keys, m.dialog.kind}.ShortHelp())
	}
	if m.screen == screenSession {
		h := sessionHelp{&m.keys}
		full, short = h.ShortHelp(), h.compactHelp()
	} else {
		full, short = m.keys.ShortHelp(), m.keys.compactHelp()
	}
	if m.readOnly {
		full, short = m.keys.withoutActions(full), m.keys.withoutActions(short)
	}
	h := m.help
	h.SetWidth(0)
	if line := h.ShortHelpView(full); lipgloss.Width(line) <= m.width-1 {
		return " " + line
	}
	return " " + m.help.ShortHelpView(short)
}

func (m *model) renderTooSmall() string {
	msg := "Terminal too small: need at least " + strconv.Itoa(minWidth) + "x" + strconv.Itoa(minHeight) +
		" (now " + strconv.Itoa(m.width) + "x" + strconv.Itoa(m.height) + "). " + label(m.keys.ForceQuit) + " quits."
	lines := wrap(msg, max(m.width-2, 1))
	return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, strings.Join(lines, "\n"))
}
