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

// planSummary counts a plan's tasks by status in w cells, after hold, which
// says why the plan does not move (nil when it may). Where the line is
// short its items shorten and go whole (fitItems), never cut inside a
// count: the counts of none first, then the waiting (each row says it
// too), then the reason of the hold, then the ready and the in progress;
// the done and the blocked stay.
func planSummary(g *glyphs, tasks []taskView, hold item, w int) string {
	// Counted as the plan tools count (coordination.Plan.Summary): waiting
	// on dependencies apart from marked blocked.
	var done, prog, ready, waiting, blocked int
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
		case t.Status == "pending" && len(t.waiting) > 0:
			waiting++
		}
	}
	count := func(n int, what string, goes int) item {
		it := item{{0, strconv.Itoa(n) + " " + what}}
		if n == 0 {
			return it.goesAt(titleTerse)
		}
		return it.goesAt(goes)
	}
	return fitItems(w, g.sep,
		hold,
		whole(strconv.Itoa(done)+"/"+strconv.Itoa(len(tasks))+" done"),
		count(prog, "in progress", titleFewer+2),
		count(ready, "ready", titleFewer+1),
		count(waiting, "waiting", titleCompact),
		count(blocked, "blocked", titleFewer+3),
	)
}

func (p *plansPane) Render(c *renderCtx) []string {
	s := c.styles
	title := "Plans"
	var body []string
	plan, ok := c.st.plans[p.session]
	name := item{{0, c.st.sessionName(p.session)}, {titleFewer, c.st.sessionShort(p.session)}}
	switch {
	case p.session == "":
		body = append(body, " "+s.dim.Render("select a session to see its plan"))
	case !ok:
		title = fitItems(titleRoom(p.w), s.g.sep, whole(title), name)
		body = append(body, " "+s.dim.Render(c.st.sessionName(p.session)+" has no plan"))
	case len(plan.Tasks) == 0:
		title = fitItems(titleRoom(p.w), s.g.sep, whole(title), name)
		body = append(body, " "+s.dim.Render("the plan is empty"))
	default:
		// With its id: two orchestrators' plans are told apart.
		tasks := planView(plan.Tasks)
		items := []item{whole(title), name, item{{0, p.session}}.goesAt(titleFewer + 1)}
		if p.offset > 0 {
			items = append(items, arrowItem(s.g.up, p.offset, "above").goesAt(titleFewer+2))
		}
		if below := len(tasks) - p.offset - p.bodyRows(); below > 0 {
			items = append(items, arrowItem(s.g.down, below, "below").goesAt(titleFewer+2))
		}
		title = fitItems(titleRoom(p.w), s.g.sep, items...)
		var hold item
		if n := c.st.sessions[p.session]; n != nil && c.st.waitingHuman(n) {
			// Only its owner moves a plan, and it is held by a question:
			// its children may have finished meanwhile.
			if c.readOnly {
				hold = item{{0, "on hold: its owner waits for the person"}, {titleFewer, "on hold"}}
			} else {
				hold = item{{0, "on hold until you answer"}, {titleFewer, "on hold"}}
			}
		}
		summary := planSummary(s.g, tasks, hold, p.w-3)
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
