package tui

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/lipgloss/v2"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// renderHeader is two lines: the goal, then the run's figures and marks.
func (m *model) renderHeader(w int) []string {
	s := &m.styles
	g := s.g
	st := m.st
	goal := oneLine(st.run.Goal)
	if goal == "" {
		goal = "(no goal yet)"
	}
	line1 := s.accent.Render(" swarmdeck") + s.dim.Render(g.sep+"goal: ") + s.headerGoal.Render(goal)

	var first []item // the run and its status, which every line keeps
	if st.run.ID != "" {
		first = append(first, whole(s.dim.Render("run ")+st.run.ID))
	}
	status := st.run.Status
	if status == "" {
		status = "starting"
	}
	first = append(first, whole(s.statusStyle(status).Render(status)))
	tokens := m.totalTokens()
	n := len(st.sessions)
	sessionsShort := plural(n, "session", "sessions")
	if n >= 1000 {
		sessionsShort = fmtTokens(n) + " sessions"
	}
	// Too narrow for all, whole items give way, never cut inside. First
	// the provider and model, which the config says too; then the figures
	// shorten as the session table writes them (8.7M); then the session
	// count goes, which the Sessions pane's title gives, then the tokens
	// (after their word shortens as a transcript writes it), then the time.
	// A run from another day says which: its times (the feed's, a
	// transcript's) are of the clock alone. The date goes last of all.
	if at := st.run.StartedAt.In(m.loc); !st.run.StartedAt.IsZero() && !sameDay(at, m.now().In(m.loc)) {
		first = append(first, item{{0, "started " + at.Format("2006-01-02 15:04")}, {3, at.Format("2006-01-02")}, {8, ""}})
	}
	items := append(first,
		item{{0, fmtDuration(st.elapsed(m.now()))}, {7, ""}},
		item{{0, fmtCount(tokens) + " tokens"}, {2, fmtTokens(tokens) + " tokens"}, {5, fmtTokens(tokens) + " tok"}, {6, ""}},
		item{{0, plural(n, "session", "sessions")}, {3, sessionsShort}, {4, ""}},
		item{{0, providerModel(st.run.Provider, st.run.Model)}, {1, ""}},
	)

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
	room := w
	if right != "" {
		room = max(w-cellWidth(right)-1, 0)
	}
	line2 := " " + fitItems(room-1, s.dim.Render(g.sep), items...)
	if right != "" {
		line2 = g.fit(line2, room) + " " + right
	}
	return []string{g.fit(line1, w), g.fit(line2, w)}
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd
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

// minBannerQuestion is how much of the question the banner keeps before it
// shows its key hints: the question is what the banner is for, and the
// footer lists the keys too.
const minBannerQuestion = 20

// renderBanner is the question banner: who asks what, and how many wait.
// When the line is short, the key hints give way first (answer's last), then
// the asker's name, so that some of the question always shows.
func (m *model) renderBanner(w int) string {
	st := m.st
	if len(st.questions) == 0 && len(st.humanAbsent) > 0 {
		return m.renderAbsentBanner(w)
	}
	if len(st.questions) == 0 {
		return ""
	}
	q := st.questions[0]
	k := &m.keys
	g := m.styles.g
	count := " 1 of " + strconv.Itoa(len(st.questions))
	rights := []string{
		count + g.sep + label(k.Answer) + " answer" + g.sep + label(k.Skip) + " skip" + g.sep + label(k.SkipAll) + " skip all ",
		count + g.sep + label(k.Answer) + " answer ",
		count + " ",
	}
	if m.readOnly { // answered where the run runs
		rights = rights[2:]
	}
	return m.styles.banner.Render(m.bannerLine(w, q, " asks: ", rights))
}

// renderAbsentBanner shows a question asked of the person that nobody can
// answer where the run runs (headless, without --control): quieter than one
// that waits for the person, and saying that it does not.
func (m *model) renderAbsentBanner(w int) string {
	st := m.st
	g := m.styles.g
	rights := []string{
		" no person to answer" + g.sep + "1 of " + strconv.Itoa(len(st.humanAbsent)) + " ",
		" no person to answer ",
	}
	return m.styles.dim.Render(m.bannerLine(w, st.humanAbsent[0], " asks the agents: ", rights))
}

// bannerLine is a banner's text, w cells wide: who asks what on the left,
// and the first of rights that leaves room for some of the question.
func (m *model) bannerLine(w int, q event.QuestionInfo, verb string, rights []string) string {
	from := oneLine(q.From)
	if from == "" {
		from = m.st.sessionRef(q.FromSession)
	}
	g := m.styles.g
	asks := " ? " + verb
	right := rights[len(rights)-1]
	for _, r := range rights {
		if w-cellWidth(r)-cellWidth(asks)-cellWidth(from) >= minBannerQuestion {
			right = r
			break
		}
	}
	room := max(w-cellWidth(right), 0)
	if over := cellWidth(asks) + cellWidth(from) + minBannerQuestion - room; over > 0 {
		from = g.trunc(from, max(cellWidth(from)-over, 1))
	}
	left := " ? " + from + verb + oneLine(q.Question)
	line := g.fit(left, room) + right
	return g.fit(line, w)
}

// maxStatusRows bounds an error's status line: why a run stopped, with the
// advice that goes with it, is worth a few rows; the panes keep the rest.
const maxStatusRows = 3

// statusLines is the status line as it is drawn w cells wide: one row, or
// an error wrapped over up to maxStatusRows (cut after that). None when
// there is nothing to say.
func (m *model) statusLines(w int) []string {
	status := m.shownStatus()
	if status.text == "" || w <= 0 {
		return nil
	}
	s := &m.styles
	text := oneLine(status.text)
	switch {
	case status.err:
		return m.wrapStatus(" "+s.g.failed+" ", s.errText, text, maxStatusRows, w)
	case status.note:
		return m.wrapStatus(s.g.sep, s.dim, text, maxNoteRows, w)
	}
	return m.wrapStatus(" "+s.g.ok+" ", s.okText, text, maxNoteRows, w)
}

// maxNoteRows bounds a note's or a success's status line: they go by, and
// what they say at the end ("which take effect at the next start") should
// not be cut at 80 columns.
const maxNoteRows = 2

// wrapStatus lays text out after lead in w cells, over at most rows rows
// (the last cut with "…"), the rows after the first indented under it.
func (m *model) wrapStatus(lead string, style paint, text string, rows, w int) []string {
	g := m.styles.g
	indent := strings.Repeat(" ", cellWidth(lead))
	room := max(w-cellWidth(lead), 1)
	lines := strings.Split(wrapText(text, room), "\n")
	if len(lines) > rows {
		// The last row runs on into the next, so that it ends in "…".
		lines[rows-1] = g.trunc(lines[rows-1]+" "+lines[rows], room)
		lines = lines[:rows]
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if i == 0 {
			out[i] = g.fit(style.Render(lead+l), w)
		} else {
			out[i] = g.fit(style.Render(indent+l), w)
		}
	}
	return out
}

// renderFooter is the key help generated from the keymap. When the whole
// list does not fit, a shorter one that keeps its last two keys (help and
// quit, or a dialog's close) is used, dropping the keys before them one by
// one while it is still too wide, so the way to everything else stays on
// screen.
func (m *model) renderFooter() string {
	var full, short []key.Binding
	keys := m.shownKeys()
	switch {
	case m.dialog.kind != dialogNone:
		q, _, _ := m.st.question(m.dialog.questionID)
		dh := dialogHelp{&keys, m.dialog.kind, q.Remembered != ""}
		full, short = dh.ShortHelp(), dh.compactHelp()
	case m.detail.open:
		full, short = keys.broadcastSheetHelp(m.st.sessions[m.detail.b.FromSession] != nil)
	case m.sessions.filtering:
		// Keys go to the filter's input: only these two are not typed.
		full = keys.filterHelp("session")
		short = full
	case m.broadcasts.filtering:
		full = keys.filterHelp("broadcast")
		short = full
	case m.showHelp:
		full, short = keys.helpSheetHelp()
	case m.screen == screenSession:
		h := sessionHelp{&keys}
		full, short = h.ShortHelp(), h.compactHelp()
		if drop := m.noRelatives(keys); len(drop) > 0 {
			full, short = without(full, drop...), without(short, drop...)
		}
	default:
		full, short = keys.ShortHelp(), keys.compactHelp(len(m.st.questions) > 0)
	}
	if m.dialog.kind == dialogNone && (m.readOnly || m.st.run.Status == "interrupted") {
		full, short = keys.withoutActions(full), keys.withoutActions(short)
	} else if drop := m.refusedAfterRun(keys); m.dialog.kind == dialogNone && len(drop) > 0 {
		full, short = without(full, drop...), without(short, drop...)
	}
	h := m.help
	h.SetWidth(0)
	if line := h.ShortHelpView(full); lipgloss.Width(line) <= m.width-1 {
		return " " + line
	}
	// Too wide for all: the keys the compact footer does not keep go one
	// at a time, the least needed first, while the rest fits (at 120
	// columns most of the footer does).
	keep := map[string]bool{}
	for _, b := range short {
		keep[b.Help().Desc] = true
	}
	trimmed := slices.Clone(full)
	if len(short) > 0 && short[0].Help().Desc == keys.Answer.Help().Desc {
		// A question waits: its key leads, as in the compact footer.
		trimmed = slices.DeleteFunc(trimmed, func(x key.Binding) bool { return x.Help().Desc == short[0].Help().Desc })
		trimmed = append([]key.Binding{short[0]}, trimmed...)
	}
	for _, b := range keys.footerDropOrder() {
		if keep[b.Help().Desc] {
			continue
		}
		trimmed = slices.DeleteFunc(trimmed, func(x key.Binding) bool { return x.Help().Desc == b.Help().Desc })
		if line := h.ShortHelpView(trimmed); lipgloss.Width(line) <= m.width-1 {
			return " " + line
		}
	}
	for len(short) > 2 {
		if line := h.ShortHelpView(short); lipgloss.Width(line) <= m.width-1 {
			return " " + line
		}
		n := len(short)
		short = append(short[:n-3:n-3], short[n-2:]...)
	}
	return " " + m.help.ShortHelpView(short)
}

// refusedAfterRun are the keys that can only be refused now, so the
// footer does not offer them: while the run runs, answer and skip with no
// question waiting; once it has ended, more of them: a broadcast would reach
// nobody; with no question left there is nothing to answer or skip; with
// every session ended there is nothing to cancel; and a cancelled run takes
// no message. A message still wakes a session of a run that has completed
// or failed.
func (m *model) refusedAfterRun(keys keyMap) []key.Binding {
	if m.st.runActive() {
		// While it runs, answer and skip wait for a question (the help
		// sheet still lists them).
		if len(m.st.questions) == 0 {
			return []key.Binding{keys.Answer, keys.Skip}
		}
		return nil
	}
	drop := []key.Binding{keys.Broadcast}
	if len(m.st.questions) == 0 {
		drop = append(drop, keys.Answer, keys.Skip, keys.SkipAll)
	}
	if !slices.ContainsFunc(m.st.roots, (*sessionNode).anyActive) {
		drop = append(drop, keys.Cancel)
	}
	if m.st.run.Status == "cancelled" {
		drop = append(drop, keys.Message)
	}
	return drop
}

func (m *model) renderTooSmall() string {
	msg := "Terminal too small: need at least " + strconv.Itoa(minWidth) + "x" + strconv.Itoa(minHeight) +
		" (now " + strconv.Itoa(m.width) + "x" + strconv.Itoa(m.height) + "). " + label(m.keys.ForceQuit) + " quits."
	lines := wrap(msg, max(m.width-2, 1))
	return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, strings.Join(lines, "\n"))
}

// noRelatives are the keys to a session's relatives that the open
// transcript's session has none for: a root has no parent, a session
// without children no first child, one alone no siblings. They would
// answer only "no children".
func (m *model) noRelatives(keys keyMap) []key.Binding {
	n := m.st.sessions[m.transcript.sessionID]
	if n == nil {
		return nil
	}
	var drop []key.Binding
	if n.parent == nil {
		drop = append(drop, keys.Parent)
	}
	sib := m.st.siblings(n)
	if i := slices.Index(sib, n); i <= 0 {
		drop = append(drop, keys.PrevSibling)
	}
	if i := slices.Index(sib, n); i < 0 || i == len(sib)-1 {
		drop = append(drop, keys.NextSibling)
	}
	if len(n.children) == 0 {
		drop = append(drop, keys.FirstChild)
	}
	return drop
}
