package tui

import (
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// sessionsPane shows the session tree. It keeps the flattened visible rows
// between frames and rebuilds them only when the tree's shape, a fold or
// the filter changes, so a status change costs nothing here and a frame
// renders only the rows on screen.
//
// Under a filter the tree shows the sessions that match, unfolded, under
// the sessions they descend from (drawn dim), so that every match keeps
// its place in the tree.
type sessionsPane struct {
	w, h int
	list
	paneFilter

	selected  string // selected session id; survives rows moving
	collapsed map[string]bool

	rows        []*sessionNode
	rowIndex    map[string]int
	context     map[string]bool // under a filter: rows shown only for a match below them
	matches     int             // under a filter: the rows that match it
	built       int             // tree version the rows were built from; -1 forces a rebuild
	builtFilter string          // the filter the rows were built for
	rebuilds    int             // how many times the rows were rebuilt, for tests
}

func newSessionsPane() sessionsPane {
	return sessionsPane{collapsed: map[string]bool{}, rowIndex: map[string]int{}, context: map[string]bool{}, built: -1,
		paneFilter: newPaneFilter("label, role, id or task")}
}

func (p *sessionsPane) SetSize(w, h int) {
	p.w, p.h = w, h
	p.input.SetWidth(max(w-6, 1))
}

// bodyRows is how many session rows fit (inside the border, under the
// filter and the column header).
func (p *sessionsPane) bodyRows() int {
	rows := p.h - 2
	if p.showColumns() {
		rows--
	}
	if p.filterRow() {
		rows--
	}
	return max(rows, 0)
}

func (p *sessionsPane) showColumns() bool { return p.h-2 >= 6 }

// sync brings the rows up to date with the tree and keeps the selection on
// the same session. A filter that hides it, or that was just typed and
// does not match it, selects its first match.
func (p *sessionsPane) sync(st *runState) {
	typed := p.builtFilter != p.filter
	if p.built != st.treeVersion || typed {
		p.rebuild(st)
	}
	i, shown := p.rowIndex[p.selected]
	switch {
	case len(p.rows) == 0:
	case p.filter != "" && (!shown || typed && p.context[p.selected]):
		p.cursor = 0
		for p.cursor < len(p.rows)-1 && p.context[p.rows[p.cursor].info.ID] {
			p.cursor++
		}
		p.selected = p.rows[p.cursor].info.ID
	case shown:
		p.cursor = i
	default:
		// Hidden in a folded subtree (a filter cleared, say): the nearest
		// ancestor shown is where it is, folded.
		if a, ok := p.shownAncestor(st, p.selected); ok {
			p.cursor = p.rowIndex[a]
		} else {
			p.cursor = min(max(p.cursor, 0), len(p.rows)-1)
		}
		p.selected = p.rows[p.cursor].info.ID
	}
	p.clamp(len(p.rows), p.bodyRows())
}

// shownAncestor is the nearest ancestor of session id that has a row.
func (p *sessionsPane) shownAncestor(st *runState, id string) (string, bool) {
	for n := st.sessions[id]; n != nil && n.info.ParentID != ""; {
		if _, ok := p.rowIndex[n.info.ParentID]; ok {
			return n.info.ParentID, true
		}
		n = st.sessions[n.info.ParentID]
	}
	return "", false
}

// current is the selected session as the pane shows it: none while a
// filter hides every row, so that nothing acts on a session out of sight
// (the selection is back once the filter is cleared).
func (p *sessionsPane) current() string {
	if p.filter != "" && len(p.rows) == 0 {
		return ""
	}
	return p.selected
}

func (p *sessionsPane) rebuild(st *runState) {
	p.rows = p.rows[:0]
	clear(p.rowIndex)
	clear(p.context)
	p.matches = 0
	add := func(n *sessionNode) {
		p.rowIndex[n.info.ID] = len(p.rows)
		p.rows = append(p.rows, n)
	}
	var walk func(ns []*sessionNode)
	walk = func(ns []*sessionNode) {
		for _, n := range ns {
			add(n)
			if !p.collapsed[n.info.ID] {
				walk(n.children)
			}
		}
	}
	// filtered adds the sessions of ns that match the filter or have a
	// match below them, and reports whether it added any.
	needle := foldText(p.filter)
	var filtered func(ns []*sessionNode) bool
	filtered = func(ns []*sessionNode) bool {
		added := false
		for _, n := range ns {
			at := len(p.rows)
			add(n)
			hit := sessionMatches(st, n, needle)
			if below := filtered(n.children); !hit && !below {
				// Nothing here: take the row back.
				delete(p.rowIndex, n.info.ID)
				p.rows = p.rows[:at]
				continue
			}
			if hit {
				p.matches++
			} else {
				p.context[n.info.ID] = true
			}
			added = true
		}
		return added
	}
	if p.filter == "" {
		walk(st.roots)
	} else {
		filtered(st.roots)
	}
	p.built, p.builtFilter = st.treeVersion, p.filter
	p.rebuilds++
}

// sessionMatches is the Sessions filter: a case-insensitive substring of
// the session's label, role, id, task (its title), or its name as the tree
// shows it ("researcher (r-1)").
func sessionMatches(st *runState, n *sessionNode, needle string) bool {
	i := &n.info
	return containsFold(i.Label, needle) || containsFold(i.Agent, needle) || containsFold(i.ID, needle) ||
		containsFold(i.Title, needle) || containsFold(st.sessionName(i.ID), needle)
}

// move moves the selection by d rows.
func (p *sessionsPane) move(d int) {
	if len(p.rows) == 0 {
		return
	}
	p.cursor = min(max(p.cursor+d, 0), len(p.rows)-1)
	p.selected = p.rows[p.cursor].info.ID
}

// selectRow selects the row at index i of the visible rows.
func (p *sessionsPane) selectRow(i int) bool {
	if i < 0 || i >= len(p.rows) {
		return false
	}
	p.cursor = i
	p.selected = p.rows[i].info.ID
	return true
}

// selectID selects a session, unfolding its ancestors so that it is visible.
// A filter that hides it is cleared: the person went to that session.
func (p *sessionsPane) selectID(st *runState, id string) bool {
	n := st.sessions[id]
	if n == nil {
		return false
	}
	for a := n.parent; a != nil; a = a.parent {
		if p.collapsed[a.info.ID] {
			delete(p.collapsed, a.info.ID)
			p.built = -1
		}
	}
	if p.filter != "" {
		p.sync(st)
		if _, shown := p.rowIndex[id]; !shown {
			p.endEdit(false)
		}
	}
	p.selected = id
	p.sync(st)
	return true
}

// toggleFold folds or unfolds the selected session's subtree.
func (p *sessionsPane) toggleFold(st *runState) {
	n := st.sessions[p.selected]
	if n == nil || len(n.children) == 0 {
		return
	}
	if p.collapsed[n.info.ID] {
		delete(p.collapsed, n.info.ID)
	} else {
		p.collapsed[n.info.ID] = true
	}
	p.built = -1
	p.sync(st)
}

// rowAt maps a screen row inside the pane to a visible row index.
func (p *sessionsPane) rowAt(y int) (int, bool) {
	top := 1
	if p.showColumns() {
		top++
	}
	if p.filterRow() {
		top++
	}
	i := y - top
	if i < 0 || i >= p.bodyRows() {
		return 0, false
	}
	i += p.offset
	return i, i < len(p.rows)
}

// title is the pane's name and its counts, fitted to its border: where that
// is short its items shorten and go whole (fitItems). Who asks the person
// stays longest.
func (p *sessionsPane) title(g *glyphs, st *runState, readOnly bool) string {
	items := []item{whole("Sessions"), countItem(len(st.sessions), "").goesAt(titleFewer + 1)}
	switch {
	case !st.runActive() && st.unfinished > 0:
		// Every session that had yet to end shows stopped, not only those
		// that were running.
		items = append(items, countItem(st.unfinished, "stopped").goesAt(titleFewer))
	case st.runActive() && st.running > 0:
		items = append(items, countItem(st.running, "running").goesAt(titleFewer))
	}
	if p.filter != "" {
		items = append(items, p.filterTitle(g, p.matches, 0))
	}
	// Rows out of sight are counted, as the Broadcasts pane counts its
	// older and newer ones: a short pane must not look like the whole
	// tree.
	if p.offset > 0 {
		items = append(items, arrowItem(g.up, p.offset, "above").goesAt(titleFewer+2))
	}
	if below := len(p.rows) - p.offset - p.bodyRows(); below > 0 {
		items = append(items, arrowItem(g.down, below, "below").goesAt(titleFewer+2))
	}
	if n := len(st.asking); n > 0 && readOnly {
		// Whoever views a stored run cannot answer: the person running it can.
		items = append(items, whole(plural(n, "asks the person", "ask the person")))
	} else if n > 0 {
		items = append(items, whole(plural(n, "asks you", "ask you")))
	}
	return fitItems(titleRoom(p.w), g.sep, items...)
}

// Render draws the pane in its w×h rectangle.
func (p *sessionsPane) Render(c *renderCtx) []string {
	inner := p.w - 2
	var body []string
	cols := sessionColumns(inner, c.st.toolWidth)
	if p.filterRow() {
		body = append(body, p.filterLine(c))
	}
	if p.showColumns() {
		body = append(body, c.styles.dim.Render(cols.header(c.styles.g)))
	}
	switch {
	case len(p.rows) == 0 && p.filter != "":
		body = append(body, " "+c.styles.dim.Render("no session matches"))
	case len(p.rows) == 0:
		body = append(body, " "+c.styles.dim.Render("no sessions yet"))
	}
	end := min(p.offset+p.bodyRows(), len(p.rows))
	for i := p.offset; i < end; i++ {
		body = append(body, p.row(c, cols, p.rows[i], i == p.cursor))
	}
	return c.styles.box(p.title(c.styles.g, c.st, c.readOnly), body, p.w, p.h, c.focused)
}

// sessionCols is the width of each column of a session row; narrow panes
// drop the last-tool column first.
type sessionCols struct {
	total, tool, elapsed, tokens int
}

// sessionColumns sizes the columns of a pane inner cells wide whose
// sessions' tool names are at most toolWidth wide. The last-tool column is
// as wide as those names need (with the mark of a running or failed one),
// up to 16 cells, and a fifth of the pane below 80: what a session does,
// its title, needs the room more than the end of a tool name.
func sessionColumns(inner, toolWidth int) sessionCols {
	c := sessionCols{total: inner, elapsed: 6, tokens: 6}
	most := 0
	switch {
	case inner >= 60:
		most = min(16, (inner+4)/5)
	case inner >= 44:
		most = 11
	}
	if most > 0 {
		c.tool = min(most, max(toolWidth+2, len("LAST TOOL")))
	}
	return c
}

func (c sessionCols) header(g *glyphs) string {
	left := "   SESSION"
	right := ""
	if c.tool > 0 {
		right += g.fit("LAST TOOL", c.tool) + " "
	}
	right += padLeft("TIME", c.elapsed) + " " + padLeft("TOKENS", c.tokens)
	return g.fit(left, c.total-len(right)-1) + " " + right
}

func (p *sessionsPane) row(c *renderCtx, cols sessionCols, n *sessionNode, selected bool) string {
	st, s := c.st, c.styles
	info := n.info

	// Fold mark and status glyph.
	fold := "  "
	switch {
	case p.filter != "":
		// Folds do not apply under a filter: a row with rows under it
		// shows them.
		if i := p.rowIndex[info.ID] + 1; i < len(p.rows) && p.rows[i].parent == n {
			fold = s.g.unfolded + " "
		}
	case len(n.children) > 0:
		if p.collapsed[info.ID] {
			fold = s.g.folded + " "
		} else {
			fold = s.g.unfolded + " "
		}
	}
	status := st.shownStatus(&info)
	glyph := s.g.statusOf(status)
	if status == "running" {
		glyph = c.spin()
	}
	glyph = s.statusStyle(status).Render(glyph)
	ask := ""
	if st.waitingHuman(n) {
		ask = s.markWarn.Render("?") + " "
	}

	name := info.Agent
	if info.Label != "" {
		name += " (" + info.Label + ")"
	}
	desc := info.Title
	if desc == "" && info.Status == "pending" && info.Reason != "" {
		desc = info.Reason
	}
	if info.Status == "failed" && info.Error != "" {
		desc = info.Error
	}
	retrying := status == "running" && info.Retrying != ""
	if retrying {
		desc = s.g.retry + " " + retryText(info.Retrying, n.retrySince, c.now)
	}
	extra := ""
	if p.collapsed[info.ID] && n.descendants > 0 && p.filter == "" {
		extra = fmt.Sprintf(" +%d", n.descendants)
	}

	var right strings.Builder
	if cols.tool > 0 {
		tool := oneLine(n.lastTool)
		switch {
		case n.toolRunning && tool != "":
			tool = s.g.toolRunning + " " + tool
		case n.toolFailed && tool != "":
			tool = s.g.failed + " " + tool
		}
		right.WriteString(s.g.fit(tool, cols.tool) + " ")
	}
	right.WriteString(padLeft(fmtDuration(st.sessionElapsed(info, c.now)), cols.elapsed))
	right.WriteString(" ")
	tokens := fmtTokens(n.subtreeTokens)
	right.WriteString(padLeft(tokens, cols.tokens))

	rw := cols.elapsed + 1 + cols.tokens
	if cols.tool > 0 {
		rw += cols.tool + 1
	}
	indent := strings.Repeat("  ", min(n.depth, 12))
	head := s.g.cursorMark(selected) + indent + fold + glyph + " " + ask
	// Where "researcher (research-1)" leaves its title too little room, or
	// does not fit at all, the label alone names the session: it tells
	// siblings of one role apart, where the role would be cut to the same
	// stub, and what the session does shows beside it.
	room := cols.total - rw - 1 - cellWidth(head) - len(extra)
	if title := min(cellWidth(oneLine(desc)), minSessionTitle); info.Label != "" && desc != "" && cellWidth(oneLine(name))+1+title > room ||
		info.Label != "" && cellWidth(oneLine(name)) > room {
		name = info.Label
	}
	// The hidden-descendants count goes right after the name so that a
	// narrow pane truncates the title, not the count.
	left := head + s.bold.Render(oneLine(name)) + s.dim.Render(extra)
	switch {
	case desc != "" && info.Status == "failed":
		left += " " + s.errText.Render(oneLine(desc))
	case retrying:
		left += " " + s.markWarn.Render(oneLine(desc))
	case desc != "":
		left += " " + s.dim.Render(oneLine(desc))
	}
	line := s.g.fit(left, cols.total-rw-1) + " " + right.String()
	switch {
	case selected:
		// One solid highlight bar: the row's own styles would end it early.
		return s.selected.Render(s.g.fit(ansi.Strip(line), cols.total))
	case p.context[info.ID]:
		// Shown for a match below it, not a match itself.
		return s.dim.Render(ansi.Strip(line))
	}
	return line
}

// minSessionTitle is how much of a session's title a row keeps before its
// name gives way to its label.
const minSessionTitle = 16

// retryWait finds the wait in the runtime's retry notice: "attempt 2 of 5
// in 1.5s: why".
var retryWait = regexp.MustCompile(`^(attempt \d+ of \d+) in (\S+?): `)

// retryText is a retry notice with its wait counted down from when it was
// given (since). The notice says how long the wait was when it began;
// shown as it is, "in 30s" would stand still for the whole wait. A notice
// in another form, or of unknown age, is shown as it is.
func retryText(notice string, since, now time.Time) string {
	loc := retryWait.FindStringSubmatchIndex(notice)
	if since.IsZero() || loc == nil {
		return notice
	}
	wait, err := time.ParseDuration(notice[loc[4]:loc[5]])
	if err != nil {
		return notice
	}
	// As the runtime writes it: tenths near the end, seconds before.
	left := wait - now.Sub(since)
	unit := 100 * time.Millisecond
	if left >= 10*time.Second {
		unit = time.Second
	}
	when := "now" // the wait is over: the attempt is under way
	if left = left.Round(unit); left > 0 {
		when = "in " + left.String()
	}
	return notice[loc[2]:loc[3]] + " " + when + ": " + notice[loc[1]:]
}
