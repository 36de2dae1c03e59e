package tui

import (
	"strconv"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// delegationsPane lists every delegation of the run, oldest first.
type delegationsPane struct {
	w, h int
	list
}

func (p *delegationsPane) SetSize(w, h int) { p.w, p.h = w, h }

func (p *delegationsPane) bodyRows() int { return max(p.h-2, 0) }

func (p *delegationsPane) sync(st *runState) { p.clamp(len(st.delegationOrder), p.bodyRows()) }

func (p *delegationsPane) selected(st *runState) *event.DelegationInfo {
	if p.cursor < 0 || p.cursor >= len(st.delegationOrder) {
		return nil
	}
	return st.delegations[st.delegationOrder[p.cursor]]
}

func (p *delegationsPane) rowAt(y int) (int, bool) {
	i := y - 1
	if i < 0 || i >= p.bodyRows() {
		return 0, false
	}
	return p.offset + i, true
}

func (p *delegationsPane) Render(c *renderCtx) []string {
	s := c.styles
	st := c.st
	items := []item{whole("Delegations"), countItem(len(st.delegationOrder), "").goesAt(titleFewer)}
	active := 0
	for _, d := range st.delegations {
		if d.Status == "running" || d.Status == "pending" {
			active++
		}
	}
	switch {
	case active > 0 && !st.runActive():
		items = append(items, countItem(active, "stopped"))
	case active > 0:
		items = append(items, countItem(active, "active"))
	}
	// Rows out of sight are counted, as the other panes count theirs: a
	// short pane must not look like the whole list.
	if p.offset > 0 {
		items = append(items, arrowItem(s.g.up, p.offset, "above").goesAt(titleFewer+2))
	}
	if below := len(st.delegationOrder) - p.offset - p.bodyRows(); below > 0 {
		items = append(items, arrowItem(s.g.down, below, "below").goesAt(titleFewer+2))
	}
	title := fitItems(titleRoom(p.w), s.g.sep, items...)
	var body []string
	if len(st.delegationOrder) == 0 {
		body = append(body, " "+s.dim.Render("no delegations yet"))
	}
	// The plan task column is as wide as the longest task id, up to the
	// plans pane's cap: ids such as "checklist" are read whole there too.
	taskW := 1
	for _, id := range st.delegationOrder {
		taskW = max(taskW, min(cellWidth(oneLine(st.delegations[id].PlanTaskID)), 10))
	}
	end := min(p.offset+p.bodyRows(), len(st.delegationOrder))
	for i := p.offset; i < end; i++ {
		sel := i == p.cursor && c.focused
		line := s.g.cursorMark(sel) + p.row(c, st.delegations[st.delegationOrder[i]], taskW)
		if sel {
			line = s.selected.Render(s.g.fit(ansi.Strip(line), p.w-2))
		}
		body = append(body, line)
	}
	return s.box(title, body, p.w, p.h, c.focused)
}

func (p *delegationsPane) row(c *renderCtx, d *event.DelegationInfo, taskW int) string {
	s := c.styles
	status := d.Status
	stopped := !c.st.runActive() && (status == "pending" || status == "running")
	if stopped {
		status = "stopped"
	}
	glyph := s.g.statusOf(status)
	if status == "running" {
		glyph = c.spin()
	}
	start := d.StartedAt
	if start.IsZero() {
		start = d.CreatedAt
	}
	var el time.Duration
	if !start.IsZero() {
		end := c.now
		switch {
		case !d.EndedAt.IsZero():
			end = d.EndedAt
		case stopped && !c.st.runEnded.IsZero():
			end = c.st.runEnded
		}
		el = max(end.Sub(start)-c.st.run.Paused(start, end), 0)
	}
	// Narrow panes drop the status word (the glyph says it) and the session.
	wide := p.w-3 >= 70
	line := s.statusStyle(status).Render(glyph) + " "
	if wide {
		line = s.statusStyle(status).Render(glyph+" "+s.g.fit(status, 9)) + " "
	}
	task := s.g.none
	if d.PlanTaskID != "" {
		task = oneLine(d.PlanTaskID)
	}
	line += s.bold.Render(s.g.fit(d.ID, 8)) + " " +
		s.dim.Render("d"+strconv.Itoa(d.Depth)) + " " +
		padLeft(fmtDuration(el), 6) + " " +
		s.dim.Render("task ") + s.g.fit(task, taskW) + " "
	if wide {
		sid := d.SessionID
		if sid == "" {
			sid = s.g.none
		}
		line += s.dim.Render(s.g.fit(sid, 8)) + " "
	}
	desc := oneLine(d.Description)
	if d.Status == "failed" && d.Error != "" {
		desc = s.errText.Render(oneLine(d.Error))
	}
	return s.g.fit(line+desc, p.w-3)
}
