package tui

import (
	"image/color"
	"strings"

	"charm.land/bubbles/v2/help"
	"charm.land/bubbles/v2/textinput"
	"charm.land/lipgloss/v2"
)

// styles is the dashboard's theme. It is rebuilt when the terminal reports
// its background colour; in mono mode (NO_COLOR) it uses no colour at all and
// shows selection and emphasis with reverse video and bold instead.
type styles struct {
	mono bool
	// g are the glyphs the theme draws with: UTF-8, or ASCII where the
	// terminal's locale is not UTF-8.
	g *glyphs

	dim, bold, accent paint
	border, borderFoc paint
	title, titleFoc   paint
	selected          paint
	headerGoal        paint
	mark, markWarn    paint
	banner            paint
	errText, okText   paint
	injected          paint
	role              map[string]paint
	status            map[string]paint
	category          map[string]paint
	human             paint

	help  help.Styles
	input textinput.Styles
}

// paint is a lipgloss style reduced to the escape sequences it puts around
// one line of text. Rows are styled piece by piece many times per frame, and
// a full Style.Render (which also measures, wraps and pads) dominated the
// cost of a frame; for inline colour and attributes the result is the same
// (TestPaintMatchesLipgloss checks it).
type paint struct{ pre, post string }

func newPaint(st lipgloss.Style) paint {
	out := st.Render("X")
	i := strings.IndexByte(out, 'X')
	return paint{pre: out[:i], post: out[i+1:]}
}

// Render styles a single line of text.
func (p paint) Render(s string) string {
	if s == "" || p.pre == "" && p.post == "" {
		return s
	}
	return p.pre + s + p.post
}

func newStyles(isDark, mono, ascii bool) styles {
	ld := lipgloss.LightDark(isDark)
	c := func(light, dark string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(dark)) }
	fgStyle := func(light, dark string) lipgloss.Style {
		if mono {
			return lipgloss.NewStyle()
		}
		return lipgloss.NewStyle().Foreground(c(light, dark))
	}
	fg := func(light, dark string) paint { return newPaint(fgStyle(light, dark)) }
	bfg := func(light, dark string) paint { return newPaint(fgStyle(light, dark).Bold(true)) }
	p := newPaint

	s := styles{mono: mono, g: glyphSet(ascii)}
	s.dim = p(lipgloss.NewStyle().Faint(true))
	s.bold = p(lipgloss.NewStyle().Bold(true))
	s.accent = bfg("#5a3fc0", "#b69cff")
	s.border = fg("#a8a8a8", "#4e4e4e")
	s.borderFoc = fg("#5a3fc0", "#b69cff")
	s.title = bfg("#3a3a3a", "#c6c6c6")
	s.titleFoc = bfg("#5a3fc0", "#d7c7ff")
	s.headerGoal = bfg("#262626", "#ffffff")
	s.errText = bfg("#c0392b", "#ff6b6b")
	s.okText = fg("#1e8449", "#7ee787")
	s.injected = p(lipgloss.NewStyle().Faint(true).Italic(true))
	s.human = bfg("#1e8449", "#7ee787")
	if mono {
		s.selected = p(lipgloss.NewStyle().Reverse(true))
		s.mark = p(lipgloss.NewStyle().Reverse(true).Bold(true))
		s.markWarn = p(lipgloss.NewStyle().Reverse(true).Bold(true))
		s.banner = p(lipgloss.NewStyle().Reverse(true).Bold(true))
	} else {
		s.selected = p(lipgloss.NewStyle().Background(c("#e4dcff", "#3b2f66")))
		s.mark = p(lipgloss.NewStyle().Bold(true).Foreground(c("#ffffff", "#1c1c1c")).Background(c("#5a3fc0", "#b69cff")))
		s.markWarn = p(lipgloss.NewStyle().Bold(true).Foreground(c("#ffffff", "#1c1c1c")).Background(c("#b9770e", "#f5c542")))
		s.banner = p(lipgloss.NewStyle().Bold(true).Foreground(c("#1c1c1c", "#1c1c1c")).Background(c("#f5c542", "#f5c542")))
	}

	s.status = map[string]paint{
		"pending":     fg("#6c6c6c", "#9e9e9e"),
		"running":     bfg("#1f6feb", "#58a6ff"),
		"waiting":     fg("#b9770e", "#f5c542"),
		"completed":   fg("#1e8449", "#7ee787"),
		"failed":      bfg("#c0392b", "#ff6b6b"),
		"cancelled":   fg("#6c6c6c", "#8b8b8b"),
		"deleted":     fg("#6c6c6c", "#8b8b8b"),
		"in_progress": bfg("#1f6feb", "#58a6ff"),
		"blocked":     fg("#c0392b", "#ff6b6b"),
		"ready":       bfg("#1e8449", "#7ee787"),
	}
	s.category = map[string]paint{
		"discovery": fg("#0e7c86", "#56d4dd"),
		"warning":   fg("#b9770e", "#f5c542"),
		"context":   fg("#1f6feb", "#79b8ff"),
		"blocker":   bfg("#c0392b", "#ff6b6b"),
		"announce":  fg("#8e44ad", "#d2a8ff"),
		"message":   fg("#6c6c6c", "#b0b0b0"),
		"human":     bfg("#1e8449", "#7ee787"),
	}
	s.role = map[string]paint{
		"system":    bfg("#6c6c6c", "#9e9e9e"),
		"user":      bfg("#1e8449", "#7ee787"),
		"assistant": bfg("#5a3fc0", "#b69cff"),
		"tool":      bfg("#b9770e", "#f5c542"),
	}

	s.help = help.DefaultStyles(isDark)
	s.input = textinput.DefaultStyles(isDark)
	if !isDark {
		// bubbles' light greys (a description at #b2b2b2, a separator at
		// #dadada) and its prompt and cursor in the terminal's white all
		// but vanish on a white background.
		key, desc, sep := lipgloss.Color("#4e4e4e"), lipgloss.Color("#6c6c6c"), lipgloss.Color("#a8a8a8")
		s.help.ShortKey, s.help.FullKey = s.help.ShortKey.Foreground(key), s.help.FullKey.Foreground(key)
		s.help.ShortDesc, s.help.FullDesc = s.help.ShortDesc.Foreground(desc), s.help.FullDesc.Foreground(desc)
		s.help.ShortSeparator, s.help.FullSeparator = s.help.ShortSeparator.Foreground(sep), s.help.FullSeparator.Foreground(sep)
		s.help.Ellipsis = s.help.Ellipsis.Foreground(sep)
		prompt := lipgloss.Color("#5a3fc0")
		s.input.Focused.Prompt = s.input.Focused.Prompt.Foreground(prompt)
		s.input.Blurred.Prompt = s.input.Blurred.Prompt.Foreground(prompt)
		s.input.Cursor.Color = lipgloss.Color("#262626")
	}
	// A steady cursor: blinking would re-render the whole dashboard twice a
	// second for nothing and make screen captures non-deterministic.
	s.input.Cursor.Blink = false
	if mono {
		s.help = help.Styles{
			ShortKey: lipgloss.NewStyle().Bold(true), FullKey: lipgloss.NewStyle().Bold(true),
			ShortDesc: lipgloss.NewStyle(), FullDesc: lipgloss.NewStyle(),
			ShortSeparator: lipgloss.NewStyle(), FullSeparator: lipgloss.NewStyle(), Ellipsis: lipgloss.NewStyle(),
		}
		plain := textinput.StyleState{Text: lipgloss.NewStyle(), Placeholder: lipgloss.NewStyle().Faint(true),
			Suggestion: lipgloss.NewStyle().Faint(true), Prompt: lipgloss.NewStyle().Bold(true)}
		s.input.Focused, s.input.Blurred = plain, plain
		s.input.Cursor.Color = nil
	}
	return s
}

func (s *styles) statusStyle(status string) paint { return s.status[status] }

func (s *styles) categoryStyle(name string) paint { return s.category[name] }
