package tui

import (
	"strconv"
	"strings"

	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// plansPane shows the task plan of the session selected in the tree.
type plansPane struct {
	w, h int
	list
	session string
}

func (p *plansPane) SetSize(w, h int) { p.w, p.h = w, h }

func (p *plansPane) bodyRows() int { return max(p.h-3, 0) } // border and summary

// show switches to a session's plan, starting at its top.
func (p *plansPane) show(id string) {
	if id != p.session {
		p.session = id
		p.list = list{}
	}
}

func (p *plansPane) sync(st *runState) {
	p.clamp(len(st.plans[p.session].Tasks), p.bodyRows())
}

// taskView is a plan task with what the dashboard derives from the plan.
type taskView struct {
	event.PlanTask
	ready   bool
	waiting []string // dependencies not completed yet
}

// planView derives readiness: a task is ready when it is pending and every
// dependency is completed (the runtime may say so itself with Ready).
func planView(tasks []event.PlanTask) []taskView {
	status := make(map[string]string, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	out := make([]taskView, len(tasks))
	for i, t := range tasks {
		v := taskView{PlanTask: t}
		for _, d := range t.DependsOn {
			if status[d] != "completed" {
				v.waiting = append(v.waiting, d)
			}
		}
		if len(t.WaitingOn) > 0 {
			v.waiting = t.WaitingOn
		}
		v.ready = t.Ready || (t.Status == "pending" && len(v.waiting) == 0)
		out[i] = v
	}
	return out
}

func planSummary(g *glyphs, tasks []taskView) string {
	var done, prog, ready, blocked int
	for _, t := range tasks {
		switch {
		case t.Status == "completed":
			done++
		case t.Status == "in_progress":
			prog++
		case t.Status == "blocked":
			blocked++
		case t.ready:
			ready++
		}
	}
	return g.join(strconv.Itoa(done)+"/"+strconv.Itoa(len(tasks))+" done", strconv.Itoa(prog)+" in progress",
		strconv.Itoa(ready)+" ready", strconv.Itoa(blocked)+" blocked")
}

func (p *plansPane) Render(c *renderCtx) []string {
	s := c.styles
	title := "Plans"
	var body []string
	plan, ok := c.st.plans[p.session]
	switch {
	case p.session == "":
		body = append(body, " "+s.dim.Render("select a session to see its plan"))
	case !ok:
		title += s.g.sep + c.st.sessionName(p.session)
		body = append(body, " "+s.dim.Render(c.st.sessionName(p.session)+" has no plan"))
	case len(plan.Tasks) == 0:
		title += s.g.sep + c.st.sessionName(p.session)
		body = append(body, " "+s.dim.Render("the plan is empty"))
	default:
		// With its id: two orchestrators' plans are told apart.
		title += s.g.sep + c.st.sessionName(p.session) + s.g.sep + p.session
		tasks := planView(plan.Tasks)
		summary := planSummary(s.g, tasks)
		if n := c.st.sessions[p.session]; n != nil && c.st.waitingHuman(n) {
			// Only its owner moves a plan, and it is held by a question:
			// its children may have finished meanwhile.
			// First: a narrow pane cuts the end of the line.
			if c.readOnly {
				summary = "on hold: its owner waits for the person" + s.g.sep + summary
			} else {
				summary = "on hold until you answer" + s.g.sep + summary
			}
		}
		body = append(body, " "+s.dim.Render(summary))
		idw := 2
		for _, t := range tasks {
			idw = max(idw, min(cellWidth(t.ID), 10))
		}
		end := min(p.offset+p.bodyRows(), len(tasks))
		for i := p.offset; i < end; i++ {
			sel := i == p.cursor && c.focused
			line := s.g.cursorMark(sel) + p.row(c, tasks[i], idw)
			if sel {
				line = s.selected.Render(s.g.fit(ansi.Strip(line), p.w-2))
			}
			body = append(body, line)
		}
	}
	return s.box(title, body, p.w, p.h, c.focused)
}

func (p *plansPane) row(c *renderCtx, t taskView, idw int) string {
	s := c.styles
	style := "pending"
	switch t.Status {
	case "completed", "in_progress", "blocked":
		style = t.Status
	}
	glyph := s.g.statusOf(style)
	var note string
	switch {
	case t.Status == "blocked":
		note = s.statusStyle("blocked").Render("blocked")
		if len(t.waiting) > 0 {
			note += s.dim.Render(s.g.sep + "waits on " + strings.Join(t.waiting, ", "))
		}
		if t.Note != "" {
			note += s.dim.Render(s.g.sep + oneLine(t.Note))
		}
	case t.ready && t.Status == "pending":
		note = s.statusStyle("ready").Render("ready")
	case t.Status == "pending" && len(t.waiting) > 0:
		note = s.dim.Render("after " + strings.Join(t.waiting, ", "))
	case t.Note != "":
		note = s.dim.Render(oneLine(t.Note))
	}
	line := s.statusStyle(style).Render(glyph) + " " + s.dim.Render(s.g.fit(t.ID, idw)) + " " + oneLine(t.Description)
	inner := p.w - 3 // border and cursor gutter
	if note == "" {
		return s.g.fit(line, inner)
	}
	nw := min(cellWidth(note), inner/2)
	return s.g.fit(line, inner-nw-2) + "  " + s.g.fit(note, nw)
}
