package tui

import (
	"time"

	"charm.land/bubbles/v2/spinner"
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

// spinnerFrames animate running sessions. The frame index comes from the
// model's own tick, so one timer drives every spinner and the elapsed times.
var spinnerFrames = spinner.MiniDot.Frames

// spin is the glyph of something running: a spinner while the run goes
// on, and still once it has stopped (interrupted, or seen read-only after
// its process ended), where the sessions it left running do nothing.
func (c *renderCtx) spin() string {
	if st := c.st.run.Status; st != "" && st != "running" {
		return statusGlyph("running")
	}
	return spinnerFrames[c.frame%len(spinnerFrames)]
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
func cursorMark(selected bool) string {
	if selected {
		return "›"
	}
	return " "
}
