package tui

import (
	"strings"

	"charm.land/bubbles/v2/spinner"
)

// glyphs are the characters the dashboard draws with besides words: its
// frames, marks, arrows and separators. A terminal whose locale is not
// UTF-8 shows every byte of a UTF-8 character as a character of its own:
// garbage, wider than the frame measured it, which pushes the borders out
// of place. There the dashboard draws with ASCII glyphs of the same
// meaning (Options.ASCII). Text the agents or the person wrote is shown as
// it was written either way.
type glyphs struct {
	ascii bool

	ellipsis string // the end of cut text
	sep      string // between the parts of a line
	bullet   string // between the keys of the footer

	frame, frameFocused frameGlyphs

	cursor             string // the gutter of the selected row
	folded, unfolded   string // a subtree or a message, closed and open
	to                 string // sender to recipient
	up, down, upDown   string // more above, below, both
	ok, failed         string // done, failed: the status line, marks
	toolRunning, retry string // a tool at work; a model call tried again
	quoteOpen          string
	quoteClose         string
	none               string // no value in a column
	chosen, notChosen  string // a choice in a dialog
	bar                string // the selected message of a transcript
	spinner            []string

	status map[string]string // a session's or plan task's status
	keys   map[string]string // key names written as glyphs in help
}

// frameGlyphs are a box's corners and sides.
type frameGlyphs struct{ tl, tr, bl, br, hz, vt string }

var (
	unicodeGlyphs = glyphs{
		ellipsis: "…",
		sep:      " · ",
		bullet:   " • ",

		frame:        frameGlyphs{"╭", "╮", "╰", "╯", "─", "│"},
		frameFocused: frameGlyphs{"┏", "┓", "┗", "┛", "━", "┃"},

		cursor: "›", folded: "▸", unfolded: "▾",
		to: "→", up: "↑", down: "↓", upDown: "↑↓",
		ok: "✓", failed: "✗", toolRunning: "▶", retry: "↻",
		quoteOpen: "“", quoteClose: "”", none: "—",
		chosen: "●", notChosen: "○", bar: "▌",
		spinner: spinner.MiniDot.Frames,

		status: map[string]string{
			"pending": "○", "running": "●", "waiting": "◔", "completed": "✓", "failed": "✗",
			"cancelled": "⊘", "stopped": "◌", "in_progress": "◐", "blocked": "⊘",
		},
		keys: map[string]string{"up": "↑", "down": "↓", "left": "←", "right": "→"},
	}

	// asciiGlyphs keep one cell where the glyph they stand for has one,
	// so that columns line up as they do in UTF-8; only the ellipsis and
	// the arrow take more. A key is written by its name. Each mark means
	// one thing, as a row shows several side by side: the tree's "+" and
	// "-" (folded, unfolded) are neither done nor the separator, which is
	// "|" as between the footer's keys, and "v" is only the arrow, so done
	// is "*"; running is "@", which a tool at work shares, the spinner
	// blinks "." and ":", and no value in a column is "_".
	asciiGlyphs = glyphs{
		ascii:    true,
		ellipsis: "...",
		sep:      " | ",
		bullet:   " | ",

		frame:        frameGlyphs{"+", "+", "+", "+", "-", "|"},
		frameFocused: frameGlyphs{"#", "#", "#", "#", "=", "|"},

		cursor: ">", folded: "+", unfolded: "-",
		to: "->", up: "^", down: "v", upDown: "^v",
		ok: "*", failed: "x", toolRunning: "@", retry: "!",
		quoteOpen: `"`, quoteClose: `"`, none: "_",
		chosen: "(*)", notChosen: "( )", bar: ">",
		spinner: []string{".", ":"},

		status: map[string]string{
			"pending": "o", "running": "@", "waiting": "~", "completed": "*", "failed": "x",
			"cancelled": "/", "stopped": "=", "in_progress": "@", "blocked": "/",
		},
		keys: map[string]string{},
	}
)

func glyphSet(ascii bool) *glyphs {
	if ascii {
		return &asciiGlyphs
	}
	return &unicodeGlyphs
}

// statusOf is the glyph of a session's or plan task's status.
func (g *glyphs) statusOf(status string) string {
	if s, ok := g.status[status]; ok {
		return s
	}
	return " " // no mark, rather than one that means something else ("·" separates)
}

// key is how help writes a key: arrows as glyphs in UTF-8, every key by
// its Bubble Tea name in ASCII.
func (g *glyphs) key(name string) string {
	if s, ok := g.keys[name]; ok {
		return s
	}
	return name
}

// join joins the parts of a line with the separator.
func (g *glyphs) join(parts ...string) string { return strings.Join(parts, g.sep) }

// fit is fit with this set's ellipsis.
func (g *glyphs) fit(s string, w int) string { return fitTail(s, w, g.tail(w)) }

// trunc is trunc with this set's ellipsis.
func (g *glyphs) trunc(s string, w int) string { return truncTail(s, w, g.tail(w)) }

// cutMiddle shortens plain text to at most w cells by cutting its middle,
// keeping more of its end than of its start: the end of a name, the
// number of "research-2", is what tells it from its siblings.
func (g *glyphs) cutMiddle(s string, w int) string {
	s, sw := shownWidth(s)
	if sw <= w {
		return s
	}
	mark := g.tail(w)
	keep := w - cellWidth(mark)
	if keep < 2 {
		return g.trunc(s, w)
	}
	head := keep / 3
	return truncate(s, head, "") + mark + truncateLeft(s, sw-(keep-head), "")
}

// tail is the ellipsis for text cut to w cells: in ASCII "...", or a
// single "." where three dots would take most of what is left.
func (g *glyphs) tail(w int) string {
	if g.ascii && w < 6 {
		return "."
	}
	return g.ellipsis
}
