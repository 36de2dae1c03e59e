package tui

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// fitTail truncates s (which may hold styles) to w cells ending in tail (an
// ellipsis: see glyphs.fit) and pads it with spaces to exactly w cells, so
// that panes tile without measuring again. Emoji sequences that text
// cleaned before layout would not hold (a label, an id, a title) are shown
// as plainEmoji shows them, so no line outgrows w.
func fitTail(s string, w int, tail string) string {
	if w <= 0 {
		return ""
	}
	s, sw := shownWidth(s)
	if sw > w {
		s = truncate(s, w, tail)
		sw = cellWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// truncTail shortens plain text to at most w cells, ending in tail where
// it is cut, without padding.
func truncTail(s string, w int, tail string) string {
	if w <= 0 {
		return ""
	}
	s, sw := shownWidth(s)
	if sw <= w {
		return s
	}
	return truncate(s, w, tail)
}

// shownWidth is s as plainEmoji shows it, and its width. Text of narrow
// characters alone, nearly all of a frame, holds no emoji sequence and is
// measured once without being searched for one.
func shownWidth(s string) (string, int) {
	if w, ok := narrowWidth(s); ok {
		return s, w
	}
	s = plainEmoji(s)
	return s, cellWidth(s)
}

// cellWidth is the width of s as the renderer places it (ansi.StringWidthWc,
// or ansi.StringWidth once it counts grapheme clusters; see graphemes), with
// a fast path. Measuring dominated the cost of a frame, yet nearly
// everything on this screen is ASCII, escape sequences, or box-drawing and
// symbol characters that are one cell wide on their own, however counted.
// Strings with anything else (wide or combining characters, emoji,
// variation selectors) go to ansi; TestCellWidthMatchesAnsi checks the fast
// path against it.
func cellWidth(s string) int {
	if w, ok := narrowWidth(s); ok {
		return w
	}
	if graphemes.Load() {
		return ansi.StringWidth(s)
	}
	return ansi.StringWidthWc(s)
}

// graphemes tells how the renderer places text, and so how the frame is
// measured: by code point (wcwidth) as it starts, like tmux and most
// terminals, or by grapheme cluster once the terminal has said it knows
// mode 2027. The two disagree on scripts with spacing vowel signs
// (Devanagari, Tamil) and on decomposed Hangul: "हिन्दी" is 5 cells by code
// point and 2 by cluster. Measured the other way than drawn, a line holding
// such text pushed its pane's right border out of place. Emoji sequences
// are shown so that both agree (plainEmoji). There is one terminal per
// process, so this is the process's.
var graphemes atomic.Bool

// truncate, truncateLeft, wrapText and hardwrap are their ansi namesakes,
// measuring as the renderer does (see graphemes).
func truncate(s string, w int, tail string) string {
	if graphemes.Load() {
		return ansi.Truncate(s, w, tail)
	}
	return ansi.TruncateWc(s, w, tail)
}

func truncateLeft(s string, n int, prefix string) string {
	if graphemes.Load() {
		return ansi.TruncateLeft(s, n, prefix)
	}
	return ansi.TruncateLeftWc(s, n, prefix)
}

func wrapText(s string, w int) string {
	if graphemes.Load() {
		return ansi.Wrap(s, w, "")
	}
	return ansi.WrapWc(s, w, "")
}

func hardwrap(s string, w int) string {
	if graphemes.Load() {
		return ansi.Hardwrap(s, w, true)
	}
	return ansi.HardwrapWc(s, w, true)
}

// narrowWidth is cellWidth's fast path: the width of s when it holds only
// escape sequences and characters one cell wide on their own; ok is false
// when it holds anything else.
func narrowWidth(s string) (w int, ok bool) {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			n := escapeLen(s[i:])
			if n == 0 {
				return 0, false
			}
			i += n
			continue
		case c < 0x20 || c == 0x7f:
			return 0, false
		case c < 0x80:
			w++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !narrowRune(r) {
			return 0, false
		}
		w++
		i += size
	}
	return w, true
}

// escapeLen is the length of the well-formed CSI (ESC [ params final) or
// OSC (ESC ] text BEL or ST) sequence at the start of s, or 0 for anything
// else, which then goes to ansi.
func escapeLen(s string) int {
	if len(s) < 2 {
		return 0
	}
	switch s[1] {
	case '[':
		// Parameter bytes, then intermediate bytes, then the final byte.
		intermediate := false
		for j := 2; j < len(s); j++ {
			switch c := s[j]; {
			case c >= 0x40 && c <= 0x7e:
				return j + 1
			case c >= 0x30 && c <= 0x3f && !intermediate:
			case c >= 0x20 && c <= 0x2f:
				intermediate = true
			default:
				return 0
			}
		}
	case ']':
		for j := 2; j < len(s); j++ {
			switch c := s[j]; {
			case c == 0x07:
				return j + 1
			case c == 0x1b:
				if j+1 < len(s) && s[j+1] == '\\' {
					return j + 2
				}
				return 0
			case c < 0x20 || c >= 0x7f: // only plain ASCII text on the fast path
				return 0
			}
		}
	}
	return 0
}

// narrowRune reports the one-cell characters of the fast path.
func narrowRune(r rune) bool {
	switch {
	case r >= 0xa1 && r <= 0x2ff && r != 0xad: // Latin-1 and Latin extended, no soft hyphen
		return true
	case r >= 0x2010 && r <= 0x2027: // dashes, quotes, bullet, ellipsis
		return true
	case r >= 0x2030 && r <= 0x205e: // per mille, primes, guillemets
		return true
	case r >= 0x2190 && r <= 0x21ff: // arrows
		return true
	case r >= 0x2200 && r <= 0x22ff: // mathematical operators
		return true
	case r >= 0x2500 && r <= 0x25fc: // box drawing, blocks, geometric shapes (not the emoji-wide 25FD/25FE)
		return true
	case r >= 0x2713 && r <= 0x2718: // check and cross marks
		return true
	case r >= 0x2800 && r <= 0x28ff: // braille (spinner frames)
		return true
	}
	return false
}

// clean makes text written by a model or a person safe to print: escape
// sequences and control characters are removed so that no agent can move the
// cursor, recolour or retitle the person's terminal, and emoji sequences are
// shown as plainEmoji shows them, so that the text is laid out at the width
// the terminal draws it. Newlines and tabs survive.
func clean(s string) string {
	if !needsClean(s) {
		return plainEmoji(s)
	}
	return expandTabs(plainEmoji(stripControls(s)))
}

// tabStop is the width of the columns a tab moves the text to.
const tabStop = 4

// stripControls is clean without its emoji step and its tabs: the text as
// shown, in the characters it was written with.
func stripControls(s string) string {
	// A byte that is not UTF-8 is shown as U+FFFD before the escape
	// sequences go: read raw, 0x9b or 0x9f starts a control string that
	// would swallow the rest of the line.
	s = ansi.Strip(strings.ToValidUTF8(s, "\ufffd"))
	var b strings.Builder
	b.Grow(len(s))
	for i, r := range s {
		switch {
		case r == '\n', r == '\t':
			b.WriteRune(r)
		case r == '\r':
			// A line end of its own (old Mac text, a progress line's
			// rewrites) starts a line; before '\n' it goes.
			if !strings.HasPrefix(s[i+1:], "\n") {
				b.WriteByte('\n')
			}
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || isBidiControl(r):
			// drop other C0/C1 controls, and the bidi ones, which would
			// show the rest of a line reversed
		case r == 0xad:
			// A soft hyphen shows only where a line breaks. Terminals
			// draw it a cell wide, the renderer counts it as none: the
			// rest of its line was drawn a cell off, and a letter lost.
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// expandTabs turns each tab into the spaces to the next tab stop, counted
// in the cells the text is drawn in, so that tab-aligned columns stay
// aligned. It takes text without escape sequences.
func expandTabs(s string) string {
	if !strings.ContainsRune(s, '\t') {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	col := 0 // cells since the line's start
	for _, r := range s {
		switch {
		case r == '\n':
			col = 0
		case r == '\t':
			n := tabStop - col%tabStop
			b.WriteString("    "[:n])
			col += n
			continue
		case r < 0x80 || narrowRune(r):
			col++
		default:
			col += cellWidth(string(r))
		}
		b.WriteRune(r)
	}
	return b.String()
}

// isBidiControl reports the embeddings, overrides and isolates of the
// Unicode bidi algorithm: in a terminal that applies it, U+202E shows what
// follows it on the line reversed, so that a name can pass for another.
func isBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

func needsClean(s string) bool {
	ascii := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' || c == 0x7f || c == 0xc2 {
			return true
		}
		if c == 0xe2 && i+2 < len(s) {
			if r, _ := utf8.DecodeRuneInString(s[i:]); isBidiControl(r) {
				return true
			}
		}
		if c >= 0x80 {
			ascii = false
		}
	}
	return !ascii && !utf8.ValidString(s)
}

// plainEmoji shows, in text that may hold styles, each emoji sequence whose
// width terminals disagree on as characters whose width they agree on.
// Counted by grapheme cluster (ansi.StringWidth, the renderer with mode
// 2027) a ZWJ sequence, a flag or a keycap is 2 cells, while terminals
// that count code points, tmux among them, draw the technologist "👩‍💻" in
// 4, a flag in 1 or 4 and "❤️" in 1, whatever the renderer counted; a line
// holding one then pushed its pane's right border out of the terminal.
// So, for display only:
//
//   - a ZWJ sequence shows its emoji side by side: "👩‍💻" is "👩💻";
//   - skin-tone modifiers, variation selectors and tag characters go:
//     "👍🏽" is "👍", "❤️" is "❤", a subdivision flag is its black flag;
//   - a flag shows its region's letters and a keycap its key: "🇫🇷" is "[FR]",
//     "1️⃣" is "[1]".
//
// Everything else, zero-width joiners in scripts that use them included, is
// left as it is.
func plainEmoji(s string) string {
	if !hasEmojiSequence(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for len(s) > 0 {
		// Split as ansi.StringWidth does: escape sequences and controls
		// apart, and the text between them in grapheme clusters.
		var n int
		switch c := s[0]; {
		case c >= 0x80 && c < 0xc0:
			// A byte of broken UTF-8 is no C1 control here: it must not
			// swallow what follows as a control string would.
			n = 1
			b.WriteByte(c)
		case c >= 0x20 && c != 0x7f:
			cluster, _ := ansi.FirstGraphemeCluster(s, ansi.GraphemeWidth)
			if cluster == "" {
				cluster = s[:1]
			}
			n = len(cluster)
			b.WriteString(plainCluster(cluster))
		default:
			_, _, n, _ = ansi.DecodeSequence(s, 0, nil)
			n = max(n, 1)
			b.WriteString(s[:n])
		}
		s = s[n:]
	}
	return b.String()
}

// hasEmojiSequence reports a character plainEmoji may rewrite. Only four
// lead bytes can start one, so text without them costs a byte scan; the
// box drawing of every frame line (E2 94, E2 95) is passed over undecoded.
func hasEmojiSequence(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 0xe2:
			if i+1 == len(s) || s[i+1] != 0x80 && s[i+1] != 0x83 { // U+200x, U+20Ex
				continue
			}
		case 0xef, 0xf0, 0xf3:
		default:
			continue
		}
		if r, _ := utf8.DecodeRuneInString(s[i:]); emojiMark(r) || regionalIndicator(r) || r == zwj {
			return true
		}
	}
	return false
}

const (
	zwj    = '\u200d' // zero-width joiner
	keycap = '\u20e3' // combining enclosing keycap
)

// emojiMark reports the characters, other than the joiner, that change how
// an emoji before them is drawn, which plainEmoji drops: skin-tone
// modifiers, the text and emoji variation selectors, tag characters and the
// keycap.
func emojiMark(r rune) bool {
	return r >= 0x1f3fb && r <= 0x1f3ff || r == 0xfe0e || r == 0xfe0f || r >= 0xe0020 && r <= 0xe007f || r == keycap
}

func regionalIndicator(r rune) bool { return r >= 0x1f1e6 && r <= 0x1f1ff }

// plainCluster is plainEmoji for one grapheme cluster.
func plainCluster(c string) string {
	if len(c) == 1 {
		return c
	}
	var flag, keycapped, joined, symbol, marked bool
	for _, r := range c {
		switch {
		case regionalIndicator(r):
			flag = true
		case r == keycap:
			keycapped = true
		case r == zwj:
			joined = true
		case emojiMark(r):
			marked = true
		case unicode.Is(unicode.So, r):
			symbol = true
		}
	}
	// A joiner between letters (Devanagari, Malayalam) shapes the script,
	// whose clusters are no emoji: those stay as they are. One that starts
	// a cluster was cut from its emoji by a style (the input's cursor).
	if !flag && !keycapped && !marked && !(joined && (symbol || strings.HasPrefix(c, string(zwj)))) {
		return c
	}
	var b strings.Builder
	for _, r := range c {
		switch {
		case regionalIndicator(r):
			b.WriteRune('A' + r - 0x1f1e6)
		case r == zwj || emojiMark(r):
		default:
			b.WriteRune(r)
		}
	}
	if (flag || keycapped) && b.Len() > 0 {
		return "[" + b.String() + "]"
	}
	return b.String()
}

// oneLine flattens text to a single line for list rows and previews.
func oneLine(s string) string {
	s = clean(s)
	if !strings.ContainsAny(s, "\n\r") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// fmtDuration is a compact, fixed-format elapsed time: 45s, 2m13s, 1h02m.
func fmtDuration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d / time.Second)
	switch {
	case s < 60:
		return strconv.Itoa(s) + "s"
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	}
}

// fmtTokens is a compact token count: 980, 12.3k, 123k, 1.2M.
func fmtTokens(n int) string {
	switch {
	case n < 1000:
		return strconv.Itoa(n)
	case n < 99_950: // rounds to 99.9k at most
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	case n < 999_500: // rounded, as above: 156,754 is 157k
		return strconv.Itoa((n+500)/1000) + "k"
	default:
		return strconv.FormatFloat(float64(n)/1_000_000, 'f', 1, 64) + "M"
	}
}

// fmtCount groups thousands: 12,345.
func fmtCount(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmtCount(n) + " " + many
}

// wrap breaks plain text into lines of at most w cells, hard-breaking words
// longer than a line, and keeps the text's own newlines.
func wrap(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return []string{""}
	}
	lines := strings.Split(wrapText(s, w), "\n")
	out := lines[:0:0]
	for _, l := range lines {
		if over := cellWidth(l) - w; over > 0 && len(l)-len(strings.TrimLeft(l, " ")) >= over {
			// ansi.Wrap leaves the spaces that start a line in front of a
			// word it breaks at w cells: the line is as many cells too wide.
			l = l[over:]
		}
		if cellWidth(l) <= w {
			out = append(out, l)
			continue
		}
		out = append(out, strings.Split(hardwrap(l, w), "\n")...)
	}
	return out
}

// wrapProse is wrap for a message's text: the lines that wrap of an item
// that starts with a list marker ("- ", "* ", "1. ", "2) ") or with
// spaces stay under the item's text, so that a list still reads as one.
// Indentation wider than half a line is not kept.
func wrapProse(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	s = strings.TrimRight(s, "\n")
	lines := strings.Split(s, "\n")
	hanging := false
	for _, l := range lines {
		if n, _ := hangingIndent(l); n > 0 && cellWidth(l) > w {
			hanging = true
			break
		}
	}
	if !hanging {
		return wrap(s, w)
	}
	var out []string
	for _, l := range lines {
		n, cells := hangingIndent(l)
		if n == 0 || cells > w/2 || cellWidth(l) <= w {
			out = append(out, wrap(l, w)...)
			continue
		}
		rows := wrap(l[n:], w-cells)
		out = append(out, l[:n]+rows[0])
		pad := strings.Repeat(" ", cells)
		for _, r := range rows[1:] {
			out = append(out, pad+r)
		}
	}
	return out
}

// hangingIndent is the length in bytes, and the width, of what starts a
// line before its text: its spaces, then a list marker and the spaces
// after it. 0 when the line starts with its text.
func hangingIndent(l string) (n, cells int) {
	n = len(l) - len(strings.TrimLeft(l, " "))
	rest := l[n:]
	marker := 0
	switch {
	case strings.HasPrefix(rest, "- "), strings.HasPrefix(rest, "* "), strings.HasPrefix(rest, "+ "):
		marker = 1
	case strings.HasPrefix(rest, "• "):
		marker = len("•")
	default:
		digits := 0
		for digits < len(rest) && digits < 3 && rest[digits] >= '0' && rest[digits] <= '9' {
			digits++
		}
		if digits > 0 && strings.HasPrefix(rest[digits:], ". ") || digits > 0 && strings.HasPrefix(rest[digits:], ") ") {
			marker = digits + 1
		}
	}
	cells = n
	if marker > 0 {
		after := rest[marker:]
		spaces := len(after) - len(strings.TrimLeft(after, " "))
		n += marker + spaces
		cells += cellWidth(rest[:marker]) + spaces
	}
	if n == len(l) {
		return 0, 0 // nothing but spaces and a marker: no text to hang
	}
	return n, cells
}

// wrapWords is wrap for text that names things: it breaks lines at spaces
// only, where ansi.Wrap also breaks after a hyphen and so splits a label
// such as "research-2" or an id such as "s-3f9a" over two lines. A word
// longer than a line is still broken at w cells. The text's own newlines
// are kept, and so is the indentation a line starts with; the spaces where
// a line is broken go.
func wrapWords(s string, w int) []string {
	if w <= 0 {
		return nil
	}
	s = strings.TrimRight(s, "\n")
	var out []string
	for _, para := range strings.Split(s, "\n") {
		var line strings.Builder
		lw := 0
		flush := func() {
			out = append(out, line.String())
			line.Reset()
			lw = 0
		}
		rest := strings.TrimRight(para, " ")
		first := true
		for rest != "" || first {
			// The spaces before the next word, and the word.
			word := strings.TrimLeft(rest, " ")
			spaces := len(rest) - len(word)
			if i := strings.IndexByte(word, ' '); i >= 0 {
				word = word[:i]
			}
			rest = rest[spaces+len(word):]
			if !first && lw+spaces+cellWidth(word) > w {
				flush()
				spaces = 0
			}
			if first && spaces+cellWidth(word) > w {
				spaces = 0 // an indentation as wide as the line goes
			}
			first = false
			line.WriteString(strings.Repeat(" ", spaces))
			lw += spaces
			if ww := cellWidth(word); ww > w {
				// Longer than a line (which is empty here): broken at w
				// cells, its last piece starts the line.
				parts := strings.Split(hardwrap(word, w), "\n")
				out = append(out, parts[:len(parts)-1]...)
				word = parts[len(parts)-1]
			}
			line.WriteString(word)
			lw += cellWidth(word)
		}
		flush()
	}
	return out
}

// padLeft right-aligns s in w cells; longer strings are left as they are.
func padLeft(s string, w int) string {
	sw := cellWidth(s)
	if sw >= w {
		return s
	}
	return strings.Repeat(" ", w-sw) + s
}

// item is a part of a line that gives way whole where the line is short,
// never cut inside: a count cut to "1,0…" reads as another number. Its
// forms are fullest first, each used from its level on; an empty form
// leaves the item out.
type item []form

type form struct {
	level int
	text  string
}

// whole is an item that never gives way, such as a pane's name.
func whole(s string) item { return item{{0, s}} }

// at is how the item is written at a level.
func (it item) at(level int) string {
	s := ""
	for _, f := range it {
		if f.level > level {
			break
		}
		s = f.text
	}
	return s
}

// from is the item as it is written from level on: its form at level,
// then the shorter ones it gives way to beyond.
func (it item) from(level int) item {
	out := item{{0, it.at(level)}}
	for _, f := range it {
		if f.level > level {
			out = append(out, f)
		}
	}
	return out
}

// fitItems joins items with sep in at most w cells where it can: the items
// as they are written at level 0, or else at the lowest level whose line
// fits. Where none fits it returns the shortest line, for the caller to
// cut.
func fitItems(w int, sep string, items ...item) string {
	return joinItems(fitLevel(w, sep, items...), sep, items...)
}

// fitLevel is the level at which fitItems writes items: the lowest whose
// line fits in w cells, or the highest any form names.
func fitLevel(w int, sep string, items ...item) int {
	top := 0
	for _, it := range items {
		for _, f := range it {
			top = max(top, f.level)
		}
	}
	for level := 0; level < top; level++ {
		if cellWidth(joinItems(level, sep, items...)) <= w {
			return level
		}
	}
	return top
}

func joinItems(level int, sep string, items ...item) string {
	parts := make([]string, 0, len(items))
	for _, it := range items {
		if s := it.at(level); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, sep)
}

// loadingOlder is a title's item while home reads older pages: how many
// items it still has to read, n, shortened as the title narrows.
func (g *glyphs) loadingOlder(n int) item {
	return item{
		{0, "loading older" + g.ellipsis + " " + fmtCount(n) + " to go"},
		{titleCompact, "loading older" + g.ellipsis + " " + fmtTokens(n) + " to go"},
		{titleFewer, "loading" + g.ellipsis + " " + fmtTokens(n) + " to go"},
	}
}
