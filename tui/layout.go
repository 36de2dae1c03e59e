package tui

// Minimum terminal size; below it the dashboard says so instead of drawing
// panes too small to read.
const (
	minWidth  = 60
	minHeight = 16
	// wideWidth is where panes go side by side.
	wideWidth = 100
	// minBody is the fewest rows left for panes when a sheet is open.
	minBody = 8
)

// rect is an area of the screen in cells.
type rect struct{ x, y, w, h int }

func (r rect) empty() bool { return r.w <= 0 || r.h <= 0 }

func (r rect) contains(x, y int) bool {
	return !r.empty() && x >= r.x && x < r.x+r.w && y >= r.y && y < r.y+r.h
}

type layoutKind int

const (
	layoutTooSmall layoutKind = iota
	layoutWide
	layoutStacked
)

// chrome is what, besides the panes, needs rows this frame.
type chrome struct {
	banner      bool // a question waits for the person
	sheetRows   int  // an open dialog or the full help, docked at the bottom
	dialog      bool // the sheet is a dialog, which the person is typing into
	scrolls     bool // the sheet scrolls in what it gets (the key help)
	statusRows  int  // the status line (result of an action, an error), wrapped
	footerRows  int  // the key help
	sessionView bool // a transcript is open
}

// screenLayout names every area of one frame. Areas not shown are empty.
type screenLayout struct {
	kind   layoutKind
	width  int
	height int

	header, banner                           rect
	sessions, broadcasts, plans, delegations rect
	transcript                               rect
	sheet, status, footer                    rect
}

// pane is the area of the pane that focus f names; empty when the frame
// has no room for it.
func (l screenLayout) pane(f focus) rect {
	switch f {
	case focusBroadcasts:
		return l.broadcasts
	case focusPlans:
		return l.plans
	case focusDelegations:
		return l.delegations
	}
	return l.sessions
}

const headerRows = 2

// computeLayout is a pure function from the terminal size and the chrome of
// this frame to the rectangles every part renders into. Panes tile the body
// exactly, so composing the frame needs no measuring.
func computeLayout(w, h int, c chrome) screenLayout {
	l := screenLayout{width: w, height: h}
	if w < minWidth || h < minHeight {
		l.kind = layoutTooSmall
		return l
	}
	footer := max(c.footerRows, 1)
	banner := 0
	if c.banner {
		banner = 1
	}
	status := c.statusRows
	fixed := headerRows + banner + status
	// The panes keep at least minBody rows. A dialog or the key help comes
	// first: the panes behind it give way down to one row of the tree
	// (stacked) or of each column (side by side), so that a dialog's input
	// line shows even at the smallest size, and the help shows enough to
	// scroll through.
	panes := minBody
	if c.dialog || c.scrolls {
		panes = 3
		if w >= wideWidth {
			panes = 6
		}
	}
	if h-fixed-footer-c.sheetRows < panes && footer > 1 {
		footer = 1
	}
	sheet := max(0, min(c.sheetRows, h-fixed-footer-panes))
	body := h - fixed - footer - sheet

	y := 0
	l.header = rect{0, y, w, headerRows}
	y += headerRows
	if banner > 0 {
		l.banner = rect{0, y, w, 1}
		y++
	}
	bodyTop := y
	y += body
	if sheet > 0 {
		l.sheet = rect{0, y, w, sheet}
		y += sheet
	}
	if status > 0 {
		l.status = rect{0, y, w, status}
		y += status
	}
	l.footer = rect{0, y, w, footer}

	if w >= wideWidth {
		l.kind = layoutWide
		if c.sessionView {
			// Transcript on the left; the tree and the feed stay visible on
			// the right so the person never loses sight of the swarm.
			left := w * 62 / 100
			top := body * 55 / 100
			l.transcript = rect{0, bodyTop, left, body}
			l.sessions = rect{left, bodyTop, w - left, top}
			l.broadcasts = rect{left, bodyTop + top, w - left, body - top}
			return l
		}
		// Session-centred panes on the left (tree above the selected
		// session's plan), traffic on the right (feed above delegations).
		// The tree gets a little more: its rows carry the most columns.
		left := w * 54 / 100
		top := body * 60 / 100
		l.sessions = rect{0, bodyTop, left, top}
		l.plans = rect{0, bodyTop + top, left, body - top}
		l.broadcasts = rect{left, bodyTop, w - left, top}
		l.delegations = rect{left, bodyTop + top, w - left, body - top}
		return l
	}

	l.kind = layoutStacked
	if c.sessionView {
		l.transcript = rect{0, bodyTop, w, body}
		return l
	}
	heights := stackedHeights(body)
	areas := []*rect{&l.sessions, &l.broadcasts, &l.plans, &l.delegations}
	y = bodyTop
	for i, rows := range heights {
		*areas[i] = rect{0, y, w, rows}
		y += rows
	}
	return l
}

// The stacked panes, in order of importance: their shares of the body, and
// the fewest rows each is given when the body has room for all four. The
// least is a border and enough to use: a few sessions of the tree, one whole
// broadcast (its header and a line of text), a plan's summary and two tasks,
// two delegations.
var (
	stackedShares  = [...]int{35, 30, 20, 15}
	stackedMinRows = [...]int{5, 4, 5, 4}
)

// stackedTightRows is the fewest rows of a stacked pane on a short screen:
// its border and two rows. Below that a pane says too little to be worth
// its border, so the least important panes give way instead.
const stackedTightRows = 4

// stackedHeights splits body rows among the stacked panes, most important
// first. Each gets its share of the body, then a pane under its minimum
// takes rows from the tallest one above its own. The heights add up to body
// exactly; panes left without room are not in the list.
func stackedHeights(body int) []int {
	mins := stackedMinRows[:]
	if sum(mins) > body {
		mins = []int{stackedTightRows, stackedTightRows, stackedTightRows, stackedTightRows}
	}
	n := len(mins)
	for n > 1 && sum(mins[:n]) > body {
		n--
	}
	mins = mins[:n]
	total := sum(stackedShares[:n])
	rows := make([]int, n)
	used := 0
	for i := range rows {
		rows[i] = body * stackedShares[i] / total
		used += rows[i]
	}
	rows[n-1] += body - used // what rounding left
	if sum(mins) > body {
		return rows // one pane, however short
	}
	for i := range rows {
		for rows[i] < mins[i] {
			// The giver is the tallest pane with a row above its minimum
			// (the less important one of equals); one exists, since the
			// minimums fit in the body.
			giver, most := -1, 0
			for j := range rows {
				if spare := rows[j] - mins[j]; spare > 0 && rows[j] >= most {
					giver, most = j, rows[j]
				}
			}
			rows[giver]--
			rows[i]++
		}
	}
	return rows
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
