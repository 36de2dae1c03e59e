package tui

import (
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

// sheetScroll is the position of a read-only sheet (the `?` sheet, a
// broadcast's detail), which scrolls when the window is too short for all
// of it.
type sheetScroll struct {
	top   int // first line of the content shown
	rows  int // lines of content shown, as last laid out
	total int // lines of content, as last laid out
}

func (h *sheetScroll) clamp() {
	h.top = max(min(h.top, h.total-h.rows), 0)
}

// scroll moves by d lines; the next layout keeps it in range.
func (h *sheetScroll) scroll(d int) {
	h.top += d
	h.clamp()
}

// page is how far page up/down moves: a screenful less a line of context.
func (h *sheetScroll) page() int { return max(h.rows-1, 1) }

// key applies one of the moving keys; it reports false for any other key.
func (h *sheetScroll) key(k tea.KeyPressMsg, keys *keyMap) bool {
	switch {
	case key.Matches(k, keys.Up):
		h.scroll(-1)
	case key.Matches(k, keys.Down):
		h.scroll(1)
	case key.Matches(k, keys.PageUp):
		h.scroll(-h.page())
	case key.Matches(k, keys.PageDown):
		h.scroll(h.page())
	case key.Matches(k, keys.Top):
		h.top = 0
	case key.Matches(k, keys.Bottom):
		h.scroll(h.total)
	default:
		return false
	}
	return true
}

// scrollSheet frames the lines of content that fit in h rows, from the
// scroll position sc, above a line that says where the person is and how to
// close the sheet, which stays in sight however far it scrolls.
func (m *model) scrollSheet(title string, content []string, w, h int, sc *sheetScroll, closing string) []string {
	s := &m.styles
	sc.rows = max(h-3, 1) // the borders and the closing line
	sc.total = len(content)
	sc.clamp()
	end := min(sc.top+sc.rows, sc.total)

	last := closing
	if sc.total > sc.rows {
		more := s.g.upDown + " more"
		switch {
		case sc.top == 0:
			more = s.g.down + " more"
		case end == sc.total:
			more = s.g.up + " more"
		}
		last = s.g.join(strconv.Itoa(sc.top+1)+"-"+strconv.Itoa(end)+" of "+strconv.Itoa(sc.total), more, last)
	}
	lines := make([]string, 0, end-sc.top+1)
	for _, l := range content[sc.top:end] {
		lines = append(lines, " "+l)
	}
	lines = append(lines, " "+s.dim.Render(last))
	return s.box(title, lines, w, len(lines)+2, true)
}
