package tui

import (
	"sort"
	"strings"
)

// box draws body inside a w×h frame with the title in the top border and
// returns exactly h lines of exactly w cells. The focused pane gets a heavy
// border (in ASCII, one of "#" and "="), which shows focus even without
// colour.
func (s *styles) box(title string, body []string, w, h int, focused bool) []string {
	if w < 2 || h < 2 {
		return blank(w, h)
	}
	g := s.g.frame
	bst, tst := s.border, s.title
	if focused {
		g = s.g.frameFocused
		bst, tst = s.borderFoc, s.titleFoc
	}
	inner := w - 2
	out := make([]string, 0, h)

	title = s.g.trunc(title, titleRoom(w)) // panes fit theirs first (fitItems)
	top := bst.Render(g.tl+g.hz) + " " + tst.Render(title) + " "
	fill := inner - 1 - 2 - cellWidth(title)
	if title == "" {
		top = bst.Render(g.tl)
		fill = inner
	}
	top += bst.Render(strings.Repeat(g.hz, max(fill, 0)) + g.tr)
	out = append(out, top)

	vt := bst.Render(g.vt)
	for i := 0; i < h-2; i++ {
		line := ""
		if i < len(body) {
			line = body[i]
		}
		out = append(out, vt+s.g.fit(line, inner)+vt)
	}
	out = append(out, bst.Render(g.bl+strings.Repeat(g.hz, inner)+g.br))
	return out
}

// titleRoom is how many cells the title of a w cells wide box has.
func titleRoom(w int) int { return w - 5 }

// The levels at which the items of a pane's title give way (see fitItems):
// first words that a glyph or the filter's row says too ("↑ 1,181" for
// "↑ 1,181 older"), then counts shorten as the session table writes them
// ("↑ 1.2k"), then the least needed items go, one level each from
// titleFewer. The pane's name stays.
const (
	titleTerse = 1 + iota
	titleCompact
	titleFewer
)

// countItem is a count and what it counts, "1,181 running", which
// shortens to "1.2k running".
func countItem(n int, what string) item {
	sp := " "
	if what == "" {
		sp = ""
	}
	return item{{0, fmtCount(n) + sp + what}, {titleCompact, fmtTokens(n) + sp + what}}
}

// arrowItem is how many rows lie beyond the pane in the arrow's direction,
// "↑ 1,181 older", which shortens to "↑ 1,181", then to "↑ 1.2k".
func arrowItem(arrow string, n int, what string) item {
	return item{{0, arrow + " " + fmtCount(n) + " " + what}, {titleTerse, arrow + " " + fmtCount(n)}, {titleCompact, arrow + " " + fmtTokens(n)}}
}

// goesAt is the item, left out from level on.
func (it item) goesAt(level int) item { return append(it, form{level, ""}) }

func blank(w, h int) []string {
	if h <= 0 {
		return nil
	}
	out := make([]string, h)
	row := strings.Repeat(" ", max(w, 0))
	for i := range out {
		out[i] = row
	}
	return out
}

// placed is a block of lines to draw at a rectangle.
type placed struct {
	r     rect
	lines []string
}

// compose joins blocks that tile a w×h screen into one string. Blocks are
// side by side or stacked; any cell not covered stays blank. Every line of a
// block must already be exactly its rectangle's width (box and fit make them
// so), which spares measuring the whole screen again.
func compose(w, h int, blocks []placed) string {
	type seg struct {
		x    int
		w    int
		text string
	}
	rows := make([][]seg, h)
	for _, b := range blocks {
		if b.r.empty() {
			continue
		}
		for i := 0; i < b.r.h && b.r.y+i < h; i++ {
			line := ""
			if i < len(b.lines) {
				line = b.lines[i]
			}
			rows[b.r.y+i] = append(rows[b.r.y+i], seg{b.r.x, b.r.w, line})
		}
	}
	var sb strings.Builder
	sb.Grow(w * h * 2)
	for y, segs := range rows {
		if len(segs) > 1 {
			sort.Slice(segs, func(i, j int) bool { return segs[i].x < segs[j].x })
		}
		x := 0
		for _, s := range segs {
			if s.x > x {
				sb.WriteString(strings.Repeat(" ", s.x-x))
				x = s.x
			}
			if s.text == "" {
				sb.WriteString(strings.Repeat(" ", s.w))
			} else {
				sb.WriteString(s.text)
			}
			x += s.w
		}
		if x < w {
			sb.WriteString(strings.Repeat(" ", w-x))
		}
		if y < h-1 {
			sb.WriteByte('\n')
		}
	}
	return sb.String()
}
