package tui

import "charm.land/bubbles/v2/textinput"

// goalPrompt asks for the run's goal when the dashboard starts without one.
type goalPrompt struct {
	input    textinput.Model
	starting bool
	err      string
	note     string // what became of a paste: line breaks made spaces, a cut
}

func newGoalPrompt() goalPrompt {
	in := textinput.New()
	in.Prompt = "> "
	in.Placeholder = "e.g. Write a design note for a URL shortener"
	in.CharLimit = 4000
	return goalPrompt{input: in}
}

func (m *model) renderGoal() string {
	s := &m.styles
	k := &m.keys
	w := min(80, m.width-4)
	m.goal.input.SetWidth(max(w-6, 10))
	body := []string{
		s.bold.Render("What should the swarm work on?"),
		"",
		inputView(&m.goal.input),
		"",
	}
	switch {
	case m.opts.Scripted:
		body = append(body, s.g.fit(s.markWarn.Render(" SCRIPTED MODEL ")+s.dim.Render(" the built-in demo model, offline"), w-2), "")
	case m.opts.Provider != "" || m.opts.Model != "":
		body = append(body, s.g.fit(s.dim.Render("model: "+providerModel(m.opts.Provider, m.opts.Model)), w-2), "")
	}
	switch {
	case m.goal.starting:
		body = append(body, s.dim.Render("starting the run"+s.g.ellipsis))
	case m.goal.err != "":
		for _, l := range wrap(oneLine(m.goal.err), w-2) {
			body = append(body, s.errText.Render(l))
		}
	case m.goal.note != "":
		for _, l := range wrap(m.goal.note, w-2) {
			body = append(body, s.dim.Render(l))
		}
	}
	back := " quit"
	if m.goal.input.Value() != "" {
		back = " clear"
	}
	body = append(body, s.dim.Render(label(k.Send)+" start"+s.g.sep+label(k.Back)+back))
	box := s.box("swarmdeck", body, w, len(body)+2, true)
	return center(s.g, m.width, m.height, box)
}

// center places a block of lines of one width in the middle of a w×h
// screen, measured as the frame is (see graphemes): lipgloss.Place counts
// grapheme clusters whatever the renderer does.
func center(g *glyphs, w, h int, block []string) string {
	bw := 0
	for _, l := range block {
		bw = max(bw, cellWidth(l))
	}
	bw = min(bw, w)
	for i, l := range block {
		block[i] = g.fit(l, bw) // compose takes lines exactly as wide as their block
	}
	r := rect{x: (w - bw) / 2, y: max(h-len(block), 0) / 2, w: bw, h: len(block)}
	return compose(w, h, []placed{{r, block}})
}
