package tui

import (
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// renderCtx is what every pane needs to draw one frame: the run's state, the
// theme and the clock. It is built once per View.
type renderCtx struct {
	st      *runState
	styles  *styles
	keys    *keyMap
	now     time.Time
	loc     *time.Location
	frame   int // spinner frame
	focused bool
	// readOnly: a stored run shown by view, where nobody can answer.
	readOnly bool
}

// spin is the glyph of something running: a spinner while the run goes
// on, and still once it has stopped (interrupted, or seen read-only after
// its process ended), where the sessions it left running do nothing. The
// frame index comes from the model's own tick, so one timer drives every
// spinner and the elapsed times.
func (c *renderCtx) spin() string {
	g := c.styles.g
	if st := c.st.run.Status; st != "" && st != "running" {
		return g.statusOf("running")
	}
	return g.spinner[c.frame%len(g.spinner)]
}

// list is the cursor and scroll position shared by the list panes.
type list struct {
	cursor, offset int
}

// clamp keeps the cursor inside n rows and visible in a window of h rows.
func (l *list) clamp(n, h int) {
	if n <= 0 {
		l.cursor, l.offset = 0, 0
		return
	}
	l.cursor = min(max(l.cursor, 0), n-1)
	h = max(h, 1)
	if l.cursor < l.offset {
		l.offset = l.cursor
	}
	if l.cursor >= l.offset+h {
		l.offset = l.cursor - h + 1
	}
	l.offset = min(max(l.offset, 0), max(n-h, 0))
}

func (l *list) move(d int) { l.cursor += d }

// cursorMark is the one-cell gutter of list rows. The selected row is marked
// with a glyph as well as highlighted, so selection shows without colour.
func (g *glyphs) cursorMark(selected bool) string {
	if selected {
		return g.cursor
	}
	return " "
}

// paneFilter narrows a list pane to the rows that hold a text. The pane
// keeps the row of its filter at its top while it is typed into or set.
type paneFilter struct {
	filter    string
	filtering bool // the filter's input has the keyboard
	input     textinput.Model
}

func newPaneFilter(placeholder string) paneFilter {
	in := textinput.New()
	in.Prompt = "/ "
	in.Placeholder = placeholder
	in.CharLimit = 200
	return paneFilter{input: in}
}

func (f *paneFilter) filterRow() bool { return f.filtering || f.filter != "" }

func (f *paneFilter) setFilter(s string) { f.filter = strings.TrimSpace(s) }

// editFilter gives the filter's input the keyboard, holding the filter
// set before.
func (f *paneFilter) editFilter() tea.Cmd {
	f.filtering = true
	f.input.SetValue(f.filter)
	f.input.CursorEnd()
	return f.input.Focus()
}

// endEdit takes the keyboard back from the input, keeping the filter or
// clearing it.
func (f *paneFilter) endEdit(keep bool) {
	f.filtering = false
	f.input.Blur()
	if !keep {
		f.clearFilter()
	}
}

func (f *paneFilter) clearFilter() {
	f.setFilter("")
	f.input.SetValue("")
}

// filterLine is the row of the filter: its input while it is typed into,
// what it holds and how to change it otherwise.
func (f *paneFilter) filterLine(c *renderCtx) string {
	if f.filtering {
		return inputView(&f.input)
	}
	return c.styles.dim.Render("filter: " + f.filter + "  (" + label(c.keys.Filter) + " edit" + c.styles.g.sep + label(c.keys.Back) + " clear)")
}

// filterTitle is what a pane's title adds under a filter: how many rows
// match what, among the newest rows read when only those were (newest is
// 0 when all were). The filter's text goes first, as its row shows it,
// then the rows read.
func (f *paneFilter) filterTitle(g *glyphs, matches, newest int) item {
	n := plural(matches, "match", "matches")
	short := fmtTokens(matches) + " matches"
	if matches == 1 {
		short = n
	}
	in, inShort := "", ""
	if newest > 0 {
		in, inShort = " in the "+fmtCount(newest)+" newest", " in the "+fmtTokens(newest)+" newest"
	}
	return item{
		{0, n + " for " + g.quoteOpen + g.trunc(f.filter, 20) + g.quoteClose + in},
		{titleTerse, n + in},
		{titleCompact, short + inShort},
		{titleFewer, short},
	}
}
