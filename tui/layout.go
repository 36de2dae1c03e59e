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
	// Stacked, in order of importance; every pane keeps its border and at
	// least one row.
	shares := []int{35, 30, 20, 15}
	areas := []*rect{&l.sessions, &l.broadcasts, &l.plans, &l.delegations}
	used := 0
	for i, a := range areas {
		rows := body * shares[i] / 100
		if i == len(areas)-1 {
			rows = body - used
		}
		rows = max(rows, 3)
		if left := body - used - rows; left > 0 && left < 3 {
			rows += left // too few for another pane's border and a row
		}
		if used+rows > body {
			rows = body - used
		}
		if rows < 3 {
			break // no room for a pane with its border and a row
		}
		*a = rect{0, bodyTop + used, w, rows}
		used += rows
	}
	return l
}
