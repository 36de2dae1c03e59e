package tui

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
)

// ansiWidth is ansi's width of s, measured the way the frame is now.
func ansiWidth(s string) int {
	if graphemes.Load() {
		return ansi.StringWidth(s)
	}
	return ansi.StringWidthWc(s)
}

// measuring runs f with the frame measured by code point, then by grapheme
// cluster (see graphemes), and leaves it by code point.
func measuring(t *testing.T, f func(t *testing.T)) {
	t.Cleanup(func() { graphemes.Store(false) })
	for _, g := range []bool{false, true} {
		graphemes.Store(g)
		t.Run(map[bool]string{false: "code points", true: "graphemes"}[g], f)
	}
}

func TestCellWidthMatchesAnsi(t *testing.T) {
	measuring(t, func(t *testing.T) {
		ranges := [][2]rune{{0x20, 0x7e}, {0xa0, 0x36f}, {0x2000, 0x206f}, {0x2190, 0x22ff}, {0x2500, 0x25ff}, {0x2700, 0x27bf}, {0x2800, 0x28ff}}
		for _, rg := range ranges {
			for r := rg[0]; r <= rg[1]; r++ {
				s := "a" + string(r) + "b"
				if got, want := cellWidth(s), ansiWidth(s); got != want {
					t.Errorf("U+%04X: cellWidth %d, ansi %d", r, got, want)
				}
			}
		}
		for _, s := range []string{
			"", "plain", "\x1b[1;38;2;1;2;3mbold\x1b[m", "╭─ Sessions · 11 ─╮", "e\u0301", "▶\ufe0f", "👍🏽 ok", "日本語",
			"\x1b]8;;http://x\x07link\x1b]8;;\x07", "tab\there", "\x1b", "⠋ ● ○ ◐ ⊘ ✓ ✗ › … “q”", "हिन्दी", "\u1112\u1161\u11ab",
		} {
			if got, want := cellWidth(s), ansiWidth(s); got != want {
				t.Errorf("%q: cellWidth %d, ansi %d", s, got, want)
			}
		}
	})
}

func FuzzCellWidth(f *testing.F) {
	for _, s := range []string{"abc", "\x1b[31mred\x1b[m", "╭─╮", "日本", "e\u0301", "\x1b]0;t\x07", "हिन्दी"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		defer graphemes.Store(false)
		for _, g := range []bool{false, true} {
			graphemes.Store(g)
			if got, want := cellWidth(s), ansiWidth(s); got != want {
				t.Fatalf("%q: cellWidth %d, ansi %d (graphemes %v)", s, got, want, g)
			}
		}
	})
}

func TestPaintMatchesLipgloss(t *testing.T) {
	for _, dark := range []bool{true, false} {
		s := newStyles(dark, false, false)
		raw := []lipgloss.Style{
			lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("#b69cff")),
			lipgloss.NewStyle().Faint(true).Italic(true),
			lipgloss.NewStyle().Reverse(true),
			lipgloss.NewStyle().Background(lipgloss.Color("#3b2f66")),
		}
		for _, st := range raw {
			for _, text := range []string{"x", "two words", "╭─ title ─╮", "› ▾ ⠋ orchestrator"} {
				if got, want := newPaint(st).Render(text), st.Render(text); got != want {
					t.Fatalf("paint %q, lipgloss %q", got, want)
				}
			}
		}
		if s.dim.Render("") != "" {
			t.Fatal("painting nothing should give nothing")
		}
	}
}

func TestMonoStylesHaveNoColour(t *testing.T) {
	s := newStyles(true, true, false)
	all := []paint{s.dim, s.bold, s.accent, s.border, s.borderFoc, s.title, s.titleFoc, s.selected, s.headerGoal,
		s.mark, s.markWarn, s.banner, s.errText, s.okText, s.injected, s.human}
	for _, m := range []map[string]paint{s.role, s.status, s.category} {
		for _, p := range m {
			all = append(all, p)
		}
	}
	for _, p := range all {
		if out := p.Render("x"); hasColour(out) {
			t.Fatalf("mono style emits colour: %q", out)
		}
	}
	// Selection must still show without colour.
	if !strings.Contains(s.selected.Render("x"), "7") {
		t.Fatal("mono selection is not reverse video")
	}
}

// hasColour reports an SGR sequence that sets a foreground or background
// colour (30–38, 40–48, 90–97, 100–107).
func hasColour(s string) bool {
	for {
		i := strings.Index(s, "\x1b[")
		if i < 0 {
			return false
		}
		s = s[i+2:]
		j := strings.IndexByte(s, 'm')
		if j < 0 {
			return false
		}
		for _, p := range strings.Split(s[:j], ";") {
			n, err := strconv.Atoi(p)
			if err == nil && (n >= 30 && n <= 38 || n >= 40 && n <= 48 || n >= 90 && n <= 97 || n >= 100 && n <= 107) {
				return true
			}
		}
		s = s[j:]
	}
}

func TestClean(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                     "plain",
		"a\x1b[2Jb":                 "ab",
		"a\x1b]0;title\x07b":        "ab",
		"bell\x07 tab\tend":         "bell tab    end",
		"keep\nlines":               "keep\nlines",
		"c1\u009bcontrol":           "c1control",
		"\x1b[31mred\x1b[0m and ok": "red and ok",
		// bytes that are not UTF-8 neither vanish nor take the rest along
		"raw\x9f c1 kept the rest": "raw\ufffd c1 kept the rest",
		"raw\x9b[2J csi":           "raw\ufffd[2J csi",
		"cut \xe2\x80 short":       "cut \ufffd short",
		// bidi overrides and isolates go; other punctuation stays
		"a \u202eevil\u202c b":      "a evil b",
		"\u2067isolate\u2069 … “x”": "isolate … “x”",
		// a carriage return starts a line, unless a line feed follows it
		"old\rmac\r\nand dos\r": "old\nmac\nand dos\n",
	} {
		if got := clean(in); got != want {
			t.Errorf("clean(%q) = %q, want %q", in, got, want)
		}
	}
}

// Emoji sequences that terminals draw at another width than the frame
// measures are shown as characters whose width every measure agrees on;
// other text, joiners of scripts that need them included, is kept.
func TestPlainEmoji(t *testing.T) {
	tests := []struct{ in, want string }{
		{"👩\u200d💻 codes", "👩💻 codes"},
		{"👨\u200d👩\u200d👧\u200d👦", "👨👩👧👦"},
		{"🧑🏽\u200d🚀", "🧑🚀"},
		{"🏳\ufe0f\u200d🌈", "🏳🌈"},
		{"🏃\u200d♂\ufe0f", "🏃♂"},
		{"made in 🇫🇷 and 🇯🇵", "made in [FR] and [JP]"},
		{"lone 🇫", "lone [F]"},
		{"👍🏽 ☝🏿", "👍 ☝"},
		{"❤\ufe0f ✔\ufe0f ⚠\ufe0f ™\ufe0f ↔\ufe0f ▶\ufe0f", "❤ ✔ ⚠ ™ ↔ ▶"},
		{"😀\ufe0e", "😀"},
		{"1\ufe0f\u20e3 #\ufe0f\u20e3", "[1] [#]"},
		{"🏴\U000e0067\U000e0062\U000e0073\U000e0063\U000e0074\U000e007f", "🏴"},
		// a style cut the sequence apart (the input's cursor on the joiner)
		{"👩\x1b[7m\u200d\x1b[m💻", "👩\x1b[7m\x1b[m💻"},
		{"\x1b[1m🇫🇷\x1b[m", "\x1b[1m[FR]\x1b[m"},
		// kept as they are
		{"plain ascii", "plain ascii"},
		{"╭─ box · “quotes” … ─╮", "╭─ box · “quotes” … ─╮"},
		{"👩 💻 😀 日本語 e\u0301", "👩 💻 😀 日本語 e\u0301"},
		{"क्\u200dष", "क्\u200dष"}, // a half form of Devanagari
		{"a\u200db", "a\u200db"},
	}
	for _, tt := range tests {
		got := plainEmoji(tt.in)
		if got != tt.want {
			t.Errorf("plainEmoji(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// What is rewritten is as wide by grapheme cluster, as the frame
		// measures, as by code point, as the renderer and tmux do.
		if g, wc := ansi.StringWidth(got), ansi.StringWidthWc(got); g != wc && tt.in != tt.want {
			t.Errorf("plainEmoji(%q) = %q is %d cells by grapheme, %d by code point", tt.in, got, g, wc)
		}
		if again := plainEmoji(got); again != got {
			t.Errorf("plainEmoji(%q) = %q, not a fixed point", got, again)
		}
	}
	if got := clean("a 👩\u200d💻\x1b[2J b"); got != "a 👩💻 b" {
		t.Errorf("clean does not show the sequence plainly: %q", got)
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 45 * time.Second: "45s", 133 * time.Second: "2m13s", 3720 * time.Second: "1h02m", -time.Second: "0s"} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %s, want %s", d, got, want)
		}
	}
	for n, want := range map[int]string{980: "980", 12345: "12.3k", 96775: "96.8k", 99949: "99.9k", 99950: "100k",
		123456: "123k", 156754: "157k", 999499: "999k", 999500: "1.0M", 1234567: "1.2M"} {
		if got := fmtTokens(n); got != want {
			t.Errorf("fmtTokens(%d) = %s, want %s", n, got, want)
		}
	}
	for n, want := range map[int]string{0: "0", 999: "999", 1000: "1,000", 17630: "17,630", 1234567: "1,234,567"} {
		if got := fmtCount(n); got != want {
			t.Errorf("fmtCount(%d) = %s, want %s", n, got, want)
		}
	}
	if got := unicodeGlyphs.fit("abcdef", 4); got != "abc…" {
		t.Errorf("fit truncates to %q", got)
	}
	if got := unicodeGlyphs.fit("ab", 4); got != "ab  " {
		t.Errorf("fit pads to %q", got)
	}
}

// plainEmoji leaves no flag, skin tone, variation selector, tag or keycap
// to print, and text as clean gives it is shown the same when given again.
func FuzzPlainEmoji(f *testing.F) {
	for _, s := range []string{"👩\u200d💻", "🇫🇷🇯", "1\ufe0f\u20e3", "👍🏽", "\x1b[7m\u200d\x1b[m💻", "क्\u200dष", "\xf0\x9f\x87", "\x1b\u200d0\u200d000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := plainEmoji(s)
		for _, r := range ansi.Strip(got) {
			if regionalIndicator(r) || emojiMark(r) {
				t.Fatalf("plainEmoji(%q) = %q kept %U", s, got, r)
			}
		}
		// (A stray ESC may take the character after it as its own once a
		// joiner between them is gone: only text without escapes is checked.)
		if c := clean(s); plainEmoji(c) != c {
			t.Fatalf("clean(%q) = %q, shown again as %q", s, c, plainEmoji(c))
		}
	})
}

// clean must leave nothing that a terminal would interpret.
func FuzzClean(f *testing.F) {
	for _, s := range []string{"ok", "a\x1b[2Jb", "\x1b]0;t\x07", "\u009b31m", "x\ty\nz", "raw\x9f rest"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := clean(s)
		if !utf8.ValidString(out) {
			t.Fatalf("clean(%q) = %q, not UTF-8", s, out)
		}
		for _, r := range out {
			if r != '\n' && (r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0) {
				t.Fatalf("clean(%q) kept control %U", s, r)
			}
		}
	})
}

// FuzzArgLines: whatever a model sends as a tool call's arguments, opening
// the call shows no control character and no line wider than the pane.
func FuzzArgLines(f *testing.F) {
	for _, s := range []string{`{"path":"a.md","content":"# T\n\n\"q\" <b> \u001b[2J"}`, `{}`, `{"a":[1,{"b":null}],"c":true}`,
		`{"x":"1"`, `[1,2]`, `"text"`, `{"k":"v"} {"k":"w"}`, `{"\u0007":"\u009b31m"}`,
		`{"deep":[[[[[[[[[[[[[[[[["x"]]]]]]]]]]]]]]]]],"o":{"p":{"q":{"r":{"s":{"t":"a long text that wraps"}}}}}}`, "{\"a\":\"\t\"}"} {
		f.Add(s, 40)
	}
	st := newStyles(true, false, false)
	controls := func(l string) rune {
		for _, r := range l {
			if r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 {
				return r
			}
		}
		return -1
	}
	f.Fuzz(func(t *testing.T, raw string, w int) {
		w = 10 + int(uint(w)%120)
		for _, l := range argLines(&st, raw, w) {
			l = ansi.Strip(l)
			if cw := cellWidth(l); cw > w {
				t.Fatalf("argLines(%q, %d): line %q is %d cells wide", raw, w, l, cw)
			}
			if r := controls(l); r >= 0 {
				t.Fatalf("argLines(%q, %d): line %q keeps control %U", raw, w, l, r)
			}
		}
		// The collapsed call's one line: no control, no line break.
		if l := argSummary(&unicodeGlyphs, raw); controls(l) >= 0 {
			t.Fatalf("argSummary(%q) = %q keeps control %U", raw, l, controls(l))
		}
	})
}

// A collapsed tool call reads as the opened one does: each argument as
// "name: value", texts without their JSON escapes, on one line.
func TestArgSummary(t *testing.T) {
	for raw, want := range map[string]string{
		`{"pattern":"sql","path":"."}`:                        "pattern: sql · path: .",
		`{"path":"a.md","content":"# Title\n\n\"q\" & more"}`: `path: a.md · content: # Title "q" & more`,
		`{"tasks":[{"id":"a"},"b"],"n":1.50,"ok":false}`:      `tasks: [{"id":"a"},"b"] · n: 1.50 · ok: false`,
		`{"empty":"","nil":null}`:                             `empty: "" · nil: null`,
		`{}`:                                                  "no arguments",
		`{"x":"1"`:                                            `{"x":"1"`,
		"[1,\n2]":                                             "[1, 2]",
		`{"\u001b[2J":"\u009b31mred"}`:                        ": 31mred", // escape sequences dropped
	} {
		if got := argSummary(&unicodeGlyphs, raw); got != want {
			t.Errorf("argSummary(%s) = %q, want %q", raw, got, want)
		}
	}
}

// wrap keeps every line within its width, where ansi.Wrap alone leaves the
// spaces that start a line in front of a word broken at the limit.
func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"two words here", 9, []string{"two words", "here"}},
		{"00000000000", 10, []string{"0000000000", "0"}},
		{" 00000000000", 10, []string{"0000000000", "0"}},
		{"x\n   00000000000", 10, []string{"x", "", "0000000000", "0"}},
		{"  indented  words", 10, []string{"  indented", "words"}},
		{"", 10, []string{""}},
	} {
		got := wrap(tc.in, tc.w)
		if !slices.Equal(got, tc.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.in, tc.w, got, tc.want)
		}
	}
}

// wrapProse keeps the lines that wrap of a list item, or of an indented
// line, under the item's text; other text wraps as wrap does.
func TestWrapProse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want []string
	}{
		{"- one two three four", 10, []string{"- one two", "  three", "  four"}},
		{"intro\n  * alpha beta gamma\n  * ok", 12, []string{"intro", "  * alpha", "    beta", "    gamma", "  * ok"}},
		{"12. twelve items here", 12, []string{"12. twelve", "    items", "    here"}},
		{"3) a b c d e f", 8, []string{"3) a b c", "   d e f"}},
		{"• bullet text wraps", 10, []string{"• bullet", "  text", "  wraps"}},
		{"    code line that is long", 14, []string{"    code line", "    that is", "    long"}},
		{"plain text that wraps", 9, []string{"plain", "text that", "wraps"}},
		{"-5 is no marker here", 8, []string{"-5 is no", "marker", "here"}},
		{"- ", 10, []string{"- "}},
		// indentation wider than half a line is not kept
		{"          - deep item text", 16, []string{"          - deep", "item text"}},
		{"- 0123456789012", 8, []string{"- 012345", "  678901", "  2"}},
	} {
		checkWrap(t, "wrapProse", wrapProse, tc.in, tc.w, tc.want)
	}
}

// wrapWords breaks lines at spaces only: never after the hyphen of a name
// or an id, as ansi.Wrap does, and a word longer than a line at its width.
func TestWrapWords(t *testing.T) {
	for _, tc := range []struct {
		in   string
		w    int
		want []string
	}{
		{"short", 10, []string{"short"}},
		{"two words here", 9, []string{"two words", "here"}},
		{"by researcher (research-2), explorer", 24, []string{"by researcher", "(research-2), explorer"}},
		{"from s-3f9a", 7, []string{"from", "s-3f9a"}},
		{"a 0123456789012 b", 5, []string{"a", "01234", "56789", "012 b"}},
		{"keeps\n\n  its  own   lines ", 12, []string{"keeps", "", "  its  own", "lines"}},
		{"          indented too far", 8, []string{"indented", "too far"}},
		{"日本語のテキスト", 6, []string{"日本語", "のテキ", "スト"}},
		{"", 10, []string{""}},
	} {
		checkWrap(t, "wrapWords", wrapWords, tc.in, tc.w, tc.want)
	}
}

// checkWrap checks that wrapper, named name, wraps in to want, and every
// line within w cells.
func checkWrap(t *testing.T, name string, wrapper func(string, int) []string, in string, w int, want []string) {
	t.Helper()
	got := wrapper(in, w)
	if !slices.Equal(got, want) {
		t.Errorf("%s(%q, %d) = %q, want %q", name, in, w, got, want)
	}
	for _, l := range got {
		if cellWidth(l) > w {
			t.Errorf("%s(%q, %d): %q is wider than %d", name, in, w, l, w)
		}
	}
}

// Filters match text as the screen shows it: escape sequences it leaves
// out neither hide a match nor make one.
func TestContainsFoldMatchesTheShownText(t *testing.T) {
	for _, tc := range []struct {
		s, needle string
		want      bool
	}{
		{"ansi \x1b[31mRED\x1b[0m done", "ansi red", true},
		{"ansi \x1b]0;PWN\x07 done", "pwn", false},
		{"tab\there", "tab here", true}, // as shown: to the next tab stop
		{"Plain Text", "plain t", true},
		{"bidi \u202eevil", "bidi evil", true},
		{"short", "longer than it", false},
	} {
		if got := containsFold(tc.s, tc.needle); got != tc.want {
			t.Errorf("containsFold(%q, %q) = %v, want %v", tc.s, tc.needle, got, tc.want)
		}
	}
}

// Tabs go to the next tab stop, so that tab-aligned columns stay aligned,
// wide characters counted as they are drawn; a soft hyphen, which
// terminals draw a cell wide where the renderer counts none, goes.
func TestCleanTabStopsAndSoftHyphens(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"\tcol1\tcol2\nx\ty\tz", "    col1    col2\nx   y   z"},
		{"abcd\te", "abcd    e"},
		{"中\tx", "中  x"},
		{"é\tx", "é   x"},
		{"soft\u00adhyphen", "softhyphen"},
		{"a\u00ad\tb", "a   b"},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A tab after an emoji shown as other characters (a flag as its letters)
// goes to the tab stop of the characters shown.
func TestCleanTabStopsAfterEmojiShownOtherwise(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"🇫🇷\tI\tJ", "[FR]    I   J"},
		{"1️⃣\tK\tL", "[1] K   L"},
	} {
		if got := clean(tc.in); got != tc.want {
			t.Errorf("clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
