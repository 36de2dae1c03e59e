package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// fit truncates s (which may hold styles) to w cells with an ellipsis and pads
// it with spaces to exactly w cells, so that panes tile without measuring again.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := cellWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = cellWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

// trunc shortens plain text to at most w cells without padding.
func trunc(s string, w int) string {
	if w <= 0 {
		return ""
	}
	if cellWidth(s) <= w {
		return s
	}
	return ansi.Truncate(s, w, "…")
}

// cellWidth is ansi.StringWidth with a fast path. Grapheme segmentation
// dominated the cost of a frame, yet nearly everything on this screen is
// ASCII, escape sequences, or box-drawing and symbol characters that are one
// cell wide on their own. Strings with anything else (wide or combining
// characters, emoji, variation selectors) go to ansi.StringWidth;
// TestCellWidthMatchesAnsi checks the fast path against it.
func cellWidth(s string) int {
	w := 0
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			n := escapeLen(s[i:])
			if n == 0 {
				return ansi.StringWidth(s)
			}
			i += n
			continue
		case c < 0x20 || c == 0x7f:
			return ansi.StringWidth(s)
		case c < 0x80:
			w++
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if !narrowRune(r) {
			return ansi.StringWidth(s)
		}
		w++
		i += size
	}
	return w
}

// escapeLen is the length of the well-formed CSI (ESC [ params final) or
// OSC (ESC ] text BEL or ST) sequence at the start of s, or 0 for anything
// else, which then goes to ansi.StringWidth.
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
// cursor, recolour or retitle the person's terminal. Newlines and tabs survive.
func clean(s string) string {
	if !needsClean(s) {
		return s
	}
	s = ansi.Strip(s)
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteRune(r)
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			// drop other C0/C1 controls
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsClean(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\n' || c == 0x7f || c == 0xc2 {
			return true
		}
	}
	return false
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
	case n < 100_000:
		return strconv.FormatFloat(float64(n)/1000, 'f', 1, 64) + "k"
	case n < 1_000_000:
		return strconv.Itoa(n/1000) + "k"
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
	wrapped := ansi.Wrap(s, w, "")
	return strings.Split(wrapped, "\n")
}

// padLeft right-aligns s in w cells; longer strings are left as they are.
func padLeft(s string, w int) string {
	sw := cellWidth(s)
	if sw >= w {
		return s
	}
	return strings.Repeat(" ", w-sw) + s
}
