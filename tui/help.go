package tui

import (
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
		{"Act", []key.Binding{k.Broadcast, k.Message, k.Answer, k.Skip, k.SkipAll, k.Cancel, k.Help, k.Quit, k.ForceQuit, k.Suspend}},
		{"In a dialog", k.dialogKeys()},
	}
}

// helpColumns are the `?` sheet's groups for what the dashboard shows: a
// run that nothing here can act on (read-only, or stopped), as its footer,
// lists no action keys, and no dialog keys.
func (m *model) helpColumns() []helpColumn {
	cols := m.keys.helpColumns()
	if !m.readOnly && m.st.run.Status != "interrupted" {
		return cols
	}
	out := make([]helpColumn, 0, len(cols))
	for _, c := range cols {
		switch c.title {
		case "In a dialog":
			continue
		case "Act":
			c.keys = m.keys.withoutActions(c.keys)
		}
		out = append(out, c)
	}
	return out
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
	for _, c := range m.helpColumns() {
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
					cell = s.g.fit(cell, b.w) + helpGap
				}
				line.WriteString(cell)
			}
			out = append(out, strings.TrimRight(line.String(), " "))
		}
		i = j
	}

	for _, note := range []string{
		label(m.keys.Filter) + " filters the focused pane: Sessions by label, role, id or task; Broadcasts by sender, recipient, category or text (from Plans and Delegations too).",
		"Sessions: TIME runs from the session's start to its last end (a session woken again counts the time between), TOKENS are the session's and everything under it.",
	} {
		out = append(out, "")
		for _, l := range wrap(note, width) {
			out = append(out, s.dim.Render(l))
		}
	}
	return out
}

// helpSheet is the `?` sheet in h rows, scrolled to where the person left
// it.
func (m *model) helpSheet(content []string, w, h int) []string {
	return m.scrollSheet("Keys", content, w, h, &m.helpScroll, label(m.keys.Help)+" or "+label(m.keys.Back)+" closes this")
}

// helpSheetHelp is the footer while the `?` sheet is open: how to move in
// it and close it.
func (k keyMap) helpSheetHelp() (full, short []key.Binding) {
	scroll := pair(k.Up, k.Down, "scroll")
	closeSheet := pair(k.Help, k.Back, "close")
	full = []key.Binding{scroll, pair(k.PageUp, k.PageDown, "page"), pair(k.Top, k.Bottom, "first/last"), closeSheet, k.Quit}
	return full, []key.Binding{scroll, closeSheet, k.Quit}
}
