package tui

import (
	"strconv"
	"strings"

	"charm.land/bubbles/v2/key"
)

// helpColumn is one group of the `?` sheet under its heading.
type helpColumn struct {
	title string
	keys  []key.Binding
}

// helpColumns are the groups of the `?` sheet: every action once.
func (k keyMap) helpColumns() []helpColumn {
	return []helpColumn{
		{"Move", []key.Binding{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.FocusNext, k.FocusPrev}},
		{"Panes", []key.Binding{k.Open, k.Back, k.Collapse, k.Filter, k.Parent, k.PrevSibling, k.NextSibling, k.FirstChild}},
		{"Act", []key.Binding{k.Broadcast, k.Message, k.Answer, k.Skip, k.SkipAll, k.Cancel, k.Help, k.Quit, k.ForceQuit}},
		{"In a dialog", k.dialogKeys()},
	}
}

// dialogKeys are the keys that work inside dialogs. Each dialog reads its
// own, so one key may do a different thing in each (tab toggles the target
// of a broadcast and the no-reply of a message): such a key is one row that
// names what it does in each.
func (k keyMap) dialogKeys() []key.Binding {
	items := []struct {
		b    key.Binding
		desc string // shorter than the footer's: it shares a row
	}{
		{k.Send, "send"},
		{k.ToggleTarget, "target"},
		{k.ToggleNoReply, "no-reply"},
		{k.UseRemembered, "remembered answer"},
		{k.CycleCategory, "category"},
		{k.DialogSkip, "skip question"},
		{k.DialogSkipAll, "skip all questions"},
		{k.Back, "close"},
		{k.Yes, "yes"},
		{k.No, "no"},
	}
	var out []key.Binding
	row := map[string]int{} // key label -> its row in out
	for _, it := range items {
		l := label(it.b)
		if i, ok := row[l]; ok {
			b := out[i]
			b.SetHelp(l, b.Help().Desc+" / "+it.desc)
			out[i] = b
			continue
		}
		row[l] = len(out)
		out = append(out, key.NewBinding(key.WithKeys(it.b.Keys()...), key.WithHelp(l, it.desc)))
	}
	return out
}

const (
	// helpGap separates columns of the `?` sheet laid side by side.
	helpGap = "    "
	// helpDescWidth is where a description wraps, so that a key doing
	// something in each dialog does not widen its column past the others
	// and push it under them.
	helpDescWidth = 20
)

// helpContent is the body of the `?` sheet for lines of width cells: the
// key columns side by side while they fit, the rest under them (a cut
// column would hide keys), then a note on the Sessions figures.
func (m *model) helpContent(width int) []string {
	s := &m.styles
	type block struct {
		lines []string
		w     int
	}
	var blocks []block
	for _, c := range m.keys.helpColumns() {
		kw := 0
		for _, b := range c.keys {
			kw = max(kw, cellWidth(b.Help().Key))
		}
		bl := block{lines: []string{s.bold.Render(c.title)}, w: cellWidth(c.title)}
		for _, b := range c.keys {
			h := b.Help()
			key := h.Key + strings.Repeat(" ", kw-cellWidth(h.Key))
			for _, d := range wrap(h.Desc, helpDescWidth) {
				bl.lines = append(bl.lines, m.styles.help.FullKey.Render(key)+"  "+m.styles.help.FullDesc.Render(d))
				bl.w = max(bl.w, kw+2+cellWidth(d))
				key = strings.Repeat(" ", kw)
			}
		}
		blocks = append(blocks, bl)
	}

	var out []string
	for i := 0; i < len(blocks); {
		j, used := i+1, blocks[i].w
		for j < len(blocks) && used+len(helpGap)+blocks[j].w <= width {
			used += len(helpGap) + blocks[j].w
			j++
		}
		if i > 0 {
			out = append(out, "")
		}
		rows := 0
		for _, b := range blocks[i:j] {
			rows = max(rows, len(b.lines))
		}
		for r := range rows {
			var line strings.Builder
			for n, b := range blocks[i:j] {
				cell := ""
				if r < len(b.lines) {
					cell = b.lines[r]
				}
				if n < j-i-1 {
					cell = fit(cell, b.w) + helpGap
				}
				line.WriteString(cell)
			}
			out = append(out, strings.TrimRight(line.String(), " "))
		}
		i = j
	}

	out = append(out, "")
	for _, l := range wrap("Sessions: TIME is the session's own, TOKENS the session's and everything under it.", width) {
		out = append(out, s.dim.Render(l))
	}
	return out
}

// helpScroll is the position of the `?` sheet, which scrolls when the
// window is too short for all of it.
type helpScroll struct {
	top   int // first line of the content shown
	rows  int // lines of content shown, as last laid out
	total int // lines of content, as last laid out
}

func (h *helpScroll) clamp() {
	h.top = max(min(h.top, h.total-h.rows), 0)
}

// scroll moves by d lines; the next layout keeps it in range.
func (h *helpScroll) scroll(d int) {
	h.top += d
	h.clamp()
}

// page is how far page up/down moves: a screenful less a line of context.
func (h *helpScroll) page() int { return max(h.rows-1, 1) }

// helpSheet frames the lines of content that fit in h rows, from the
// scroll position, above a line that says where the person is and how to
// close the sheet, which stays in sight however far it scrolls.
func (m *model) helpSheet(content []string, w, h int) []string {
	s := &m.styles
	hs := &m.helpScroll
	hs.rows = max(h-3, 1) // the borders and the closing line
	hs.total = len(content)
	hs.clamp()
	end := min(hs.top+hs.rows, hs.total)

	last := label(m.keys.Help) + " or " + label(m.keys.Back) + " closes this"
	if hs.total > hs.rows {
		more := "↑↓ more"
		switch {
		case hs.top == 0:
			more = "↓ more"
		case end == hs.total:
			more = "↑ more"
		}
		last = strconv.Itoa(hs.top+1) + "-" + strconv.Itoa(end) + " of " + strconv.Itoa(hs.total) + " · " + more + " · " + last
	}
	lines := make([]string, 0, end-hs.top+1)
	for _, l := range content[hs.top:end] {
		lines = append(lines, " "+l)
	}
	lines = append(lines, " "+s.dim.Render(last))
	return s.box("Keys", lines, w, len(lines)+2, true)
}

// helpSheetHelp is the footer while the `?` sheet is open: how to move in
// it and close it.
func (k keyMap) helpSheetHelp() (full, short []key.Binding) {
	pair := func(a, b key.Binding, desc string) key.Binding {
		keys := append(append([]string(nil), a.Keys()...), b.Keys()...)
		return key.NewBinding(key.WithKeys(keys...), key.WithHelp(label(a)+" "+label(b), desc))
	}
	scroll := pair(k.Up, k.Down, "scroll")
	closeSheet := pair(k.Help, k.Back, "close")
	full = []key.Binding{scroll, pair(k.PageUp, k.PageDown, "page"), pair(k.Top, k.Bottom, "first/last"), closeSheet, k.Quit}
	return full, []key.Binding{scroll, closeSheet, k.Quit}
}
