package tui

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// transcriptPane is the session view: one session's messages, its live
// streaming tokens, and collapsible tool calls, results and system prompt.
// It keeps a bounded window of messages and reads older ones on demand.
type transcriptPane struct {
	w, h int

	sessionID string
	gen       int       // bumped on every open so that a late load for another session is dropped
	st        *runState // the dashboard's, for the reply the session is streaming

	msgs     []event.MessageInfo // ascending by Index
	expanded map[int]bool        // by message Index
	selIdx   int                 // message Index of the selection
	follow   bool                // selection on the newest message
	top      int                 // position in msgs of the first message shown (when not following)
	skip     int                 // lines of the top message scrolled out above the pane (when not following)

	loading, loadingOlder bool
	// toFirst: home was pressed with older messages still in the store;
	// they are read page after page until the first is shown.
	toFirst bool
	err     string

	toolNames map[string]string // tool call id -> tool name
	// cache holds rendered lines by message Index; it is filled during View
	// (memoisation only) and emptied when a message or the width changes.
	cache map[int][]string
	// drawn says what each row of the body showed in the last frame drawn,
	// for a click to find the message under it.
	drawn []drawnRow
}

// drawnRow is what a row of the transcript's body showed: line line of the
// message of Index index (blank: the empty line after it), or no message
// at all (index -1: a note, the live reply).
type drawnRow struct {
	index, line int
	blank       bool
}

func newTranscriptPane() transcriptPane {
	return transcriptPane{expanded: map[int]bool{}, toolNames: map[string]string{}, cache: map[int][]string{}}
}

func (p *transcriptPane) SetSize(w, h int) {
	if w != p.w {
		clear(p.cache)
	}
	p.w, p.h = w, h
}

// open starts showing a session; the messages arrive with a load.
func (p *transcriptPane) open(id string) {
	w, h, gen, st := p.w, p.h, p.gen+1, p.st
	*p = newTranscriptPane()
	p.w, p.h, p.gen, p.st = w, h, gen, st
	p.sessionID = id
	p.loading = true
	p.follow = true
}

func (p *transcriptPane) pos(index int) int {
	return sort.Search(len(p.msgs), func(i int) bool { return p.msgs[i].Index >= index })
}

// merge adds messages, replacing any with the same Index, keeping order.
func (p *transcriptPane) merge(ms []event.MessageInfo) {
	var named map[string]bool // tool call ids whose names are learned here
	for _, m := range ms {
		for _, tc := range m.ToolCalls {
			if p.toolNames[tc.ID] != tc.Name {
				p.toolNames[tc.ID] = tc.Name
				if named == nil {
					named = map[string]bool{}
				}
				named[tc.ID] = true
			}
		}
		n := len(p.msgs)
		switch {
		case n == 0 || m.Index > p.msgs[n-1].Index:
			p.msgs = append(p.msgs, m)
		default:
			i := p.pos(m.Index)
			if i < n && p.msgs[i].Index == m.Index {
				p.msgs[i] = m
			} else {
				p.msgs = append(p.msgs, event.MessageInfo{})
				copy(p.msgs[i+1:], p.msgs[i:])
				p.msgs[i] = m
			}
		}
		delete(p.cache, m.Index)
	}
	if named != nil {
		// Results read before their call (a page of older messages ends
		// with the calls of results already shown) were drawn with the
		// call's id: draw them again with its name.
		for _, m := range p.msgs {
			if m.Role == "tool" && named[m.ToolCallID] {
				delete(p.cache, m.Index)
			}
		}
	}
	p.trim()
}

// trim keeps the window bounded: transcriptKeep messages while following,
// more while the person reads back.
func (p *transcriptPane) trim() {
	limit := transcriptKeep
	if !p.follow {
		limit += transcriptExtra
	}
	if len(p.msgs) <= limit+limit/4 {
		return
	}
	drop := len(p.msgs) - limit
	for _, m := range p.msgs[:drop] {
		delete(p.cache, m.Index)
		delete(p.expanded, m.Index)
	}
	p.msgs = append(p.msgs[:0:0], p.msgs[drop:]...)
	if p.top < drop {
		p.skip = 0
	}
	p.top = max(p.top-drop, 0)
}

// loaded applies the first load of the transcript.
func (p *transcriptPane) loaded(ms []event.MessageInfo, err error) {
	p.loading = false
	if err != nil {
		p.err = err.Error()
		return
	}
	p.merge(ms)
}

// prepend applies a load of older messages.
func (p *transcriptPane) prepend(ms []event.MessageInfo, err error) {
	p.loadingOlder = false
	if err != nil {
		p.err = err.Error()
		return
	}
	before := len(p.msgs)
	p.merge(ms)
	p.top += len(p.msgs) - before
}

// toFirstPage shows the oldest message in memory after a page of older
// ones arrived for home, and reports whether more are to be read.
func (p *transcriptPane) toFirstPage(s *styles) bool {
	if !p.toFirst || p.err != "" {
		p.toFirst = false
		return false
	}
	p.toFirst = p.toTop(s)
	return p.toFirst
}

// toRead is how many older messages home reads before it stops: those
// before the oldest in memory, a page at a time while the pane keeps fewer
// than it can (see loadOlderTranscript).
func (p *transcriptPane) toRead() int {
	n, held := 0, len(p.msgs)
	for first := p.firstIndex(); first > 0 && held < transcriptKeep+transcriptExtra; {
		page := min(transcriptPage, first)
		n, held, first = n+page, held+page, first-page
	}
	return n
}

// firstIndex is the history index of the oldest message in memory.
func (p *transcriptPane) firstIndex() int {
	if len(p.msgs) == 0 {
		return 0
	}
	return p.msgs[0].Index
}

// appended applies a live message.append event.
func (p *transcriptPane) appended(m event.MessageInfo) {
	p.merge([]event.MessageInfo{m})
}

// reply is what the session shown is streaming (see sessionNode.reply);
// nil when nothing.
func (p *transcriptPane) reply() *liveReply {
	if p.st == nil {
		return nil
	}
	if n := p.st.sessions[p.sessionID]; n != nil && !n.reply.empty() {
		return &n.reply
	}
	return nil
}

func (p *transcriptPane) sel() int {
	if len(p.msgs) == 0 {
		return 0
	}
	if p.follow {
		return len(p.msgs) - 1
	}
	return min(p.pos(p.selIdx), len(p.msgs)-1)
}

// move moves the selection by d messages. It reports true when the person
// pushes past the oldest message in memory and older ones exist.
//
// The newest message is followed (new ones keep the view at the bottom)
// once it is in sight whole: one taller than the pane is shown from its
// first line, to be read down with scroll, and followed when the person
// moves on past its end.
func (p *transcriptPane) move(s *styles, d int) (wantOlder bool) {
	if len(p.msgs) == 0 {
		return false
	}
	from := p.sel()
	if from+d < 0 && p.firstIndex() > 0 {
		wantOlder = true
	}
	i := min(max(from+d, 0), len(p.msgs)-1)
	p.selIdx = p.msgs[i].Index
	last := len(p.msgs) - 1
	p.follow = i == last && (from == last || len(p.block(s, &p.msgs[last])) <= p.followRows(s))
	return wantOlder
}

func (p *transcriptPane) toTop(s *styles) bool {
	want := p.move(s, -len(p.msgs)-1)
	p.top, p.skip = 0, 0
	return want
}

// scroll moves the view by d lines (negative: up) inside the selected
// message, as far as it runs out of sight in that direction, and reports
// whether it did: a message taller than the pane (a long answer, an
// expanded system prompt or tool result) is read line by line, and the
// moving keys go on to the next message only once its end is in sight.
func (p *transcriptPane) scroll(s *styles, d int) bool {
	if len(p.msgs) == 0 || d == 0 {
		return false
	}
	if p.follow {
		// Followed, the newest message hangs from the bottom of the pane,
		// its first lines out of sight if it is taller than the pane. Up
		// shows them: the same view, now hanging from the message's top.
		last := len(p.msgs) - 1
		h, avail := len(p.block(s, &p.msgs[last])), p.followRows(s)
		if d > 0 || h <= avail {
			return false
		}
		p.follow = false
		p.selIdx = p.msgs[last].Index
		p.top, p.skip = last, h-avail
	}
	sel := p.sel()
	if d < 0 {
		if p.top != sel || p.skip == 0 {
			return false
		}
		p.skip = max(p.skip+d, 0)
		return true
	}
	// Rows from the top of the pane to the selected message's last line
	// (the blank line after it is not part of it).
	end := -p.skip - 1
	for i := p.top; i <= sel; i++ {
		end += len(p.block(s, &p.msgs[i]))
	}
	over := end - p.bodyRows()
	if over <= 0 {
		return false
	}
	for n := min(d, over); n > 0; {
		h := len(p.block(s, &p.msgs[p.top]))
		if p.skip+n < h {
			p.skip += n
			break
		}
		n -= h - p.skip
		p.top, p.skip = p.top+1, 0
	}
	return true
}

// msgAt is the position in msgs of the message the last frame showed on
// body row row (0 is the first row under the border), and false for a row
// that showed none: a blank line between messages, the live reply, a note.
func (p *transcriptPane) msgAt(row int) (int, bool) {
	if row < 0 || row >= len(p.drawn) || p.drawn[row].index < 0 || p.drawn[row].blank {
		return 0, false
	}
	i := p.pos(p.drawn[row].index)
	return i, i < len(p.msgs) && p.msgs[i].Index == p.drawn[row].index
}

// selectAt selects the message at position i in msgs, as a click on it
// does: the view stays as the last frame showed it, unless the message
// runs out of it. The newest message, wholly in sight, is followed, as
// move has it.
func (p *transcriptPane) selectAt(s *styles, i int) {
	for _, r := range p.drawn {
		if r.index >= 0 {
			if top := p.pos(r.index); top < len(p.msgs) && p.msgs[top].Index == r.index {
				p.top, p.skip = top, r.line
			}
			break
		}
	}
	p.selIdx = p.msgs[i].Index
	last := len(p.msgs) - 1
	p.follow = i == last && len(p.block(s, &p.msgs[last])) <= p.followRows(s)
	p.sync(s)
}

// wheelScroll moves the view by d rows (negative: up), as a mouse wheel
// does: every row passes through the view, whatever the heights of the
// messages. The selection goes to the message at the top of the view;
// once the newest message's end is in sight, it is followed again. It
// reports true when the view reached the oldest message in memory and
// older ones exist.
func (p *transcriptPane) wheelScroll(s *styles, d int) (wantOlder bool) {
	if len(p.msgs) == 0 || d == 0 {
		return false
	}
	if p.follow && d > 0 {
		return false // at the end already
	}
	top, skip := p.viewTop(s)
	skip += d
	for skip < 0 {
		if top == 0 {
			skip, wantOlder = 0, p.firstIndex() > 0
			break
		}
		top--
		skip += len(p.block(s, &p.msgs[top]))
	}
	for top < len(p.msgs)-1 && skip >= len(p.block(s, &p.msgs[top])) {
		skip -= len(p.block(s, &p.msgs[top]))
		top++
	}
	// The rows from the view's top to the end: the end in sight, the
	// newest message is followed.
	rest := -skip
	for i := top; i < len(p.msgs) && rest <= p.followRows(s); i++ {
		rest += len(p.block(s, &p.msgs[i]))
	}
	if rest <= p.followRows(s) {
		p.follow = true
		return wantOlder
	}
	p.follow = false
	p.top, p.skip = top, skip
	p.selIdx = p.msgs[top].Index
	return wantOlder
}

// viewTop is where the view starts: the message at its top and how many
// of its lines are out of sight above it. Followed, the view hangs from the
// newest message's end.
func (p *transcriptPane) viewTop(s *styles) (top, skip int) {
	if !p.follow {
		return p.top, p.skip
	}
	avail, h := p.followRows(s), 0
	for i := len(p.msgs) - 1; i >= 0; i-- {
		h += len(p.block(s, &p.msgs[i]))
		if h >= avail {
			return i, h - avail
		}
	}
	return 0, 0
}

// page moves a page down (d > 0) or up. Messages differ in height, so a
// page is not a count of them: the first message not wholly in sight starts
// the page below, and the page above ends with the message over the first
// line in sight, so that paging shows every message on the way. The
// selection goes to the page's first message. A message taller than the
// pane is read a page at a time first. Paging up from the oldest message
// in memory reports true when older ones exist.
func (p *transcriptPane) page(s *styles, d int) (wantOlder bool) {
	if len(p.msgs) == 0 {
		return false
	}
	rows := p.bodyRows()
	if p.scroll(s, d*page(rows)) {
		return false
	}
	top, skip := p.viewTop(s)
	height := func(i int) int { return len(p.block(s, &p.msgs[i])) }
	if d > 0 {
		if p.follow {
			return false
		}
		// The blank line closing a message may fall below the pane.
		next, h := top, -skip
		for ; next < len(p.msgs); next++ {
			h += height(next)
			if h-1 > rows {
				break
			}
		}
		next = max(next, p.sel()+1)
		if next >= len(p.msgs) {
			p.move(s, len(p.msgs))
			return false
		}
		p.move(s, next-p.sel())
		if !p.follow {
			p.top, p.skip = next, 0
		}
		return false
	}
	end := top - 1
	if skip > 0 {
		end = top // its first lines are out of sight
	}
	if end < 0 {
		want := p.move(s, -len(p.msgs))
		p.top, p.skip = 0, 0
		return want
	}
	start, h := end, height(end)
	for start > 0 && h+height(start-1)-1 <= rows {
		start--
		h += height(start)
	}
	p.move(s, start-p.sel())
	p.follow = false
	p.top, p.skip = start, 0
	if h-1 > rows {
		// One message taller than the pane, read up from its end (or from
		// where the view was in it) a page at a time.
		p.skip = h - 1 - rows
		if start == top {
			p.skip = max(skip-page(rows), 0)
		}
	}
	return false
}

// followRows is how many rows the messages get while the newest is
// followed: the live reply under it takes the rest.
func (p *transcriptPane) followRows(s *styles) int {
	rows := p.bodyRows()
	return max(rows-len(p.streamLines(s, max(rows/2, 2))), 0)
}

func (p *transcriptPane) toBottom() { p.follow = true }

func (p *transcriptPane) toggle() {
	if len(p.msgs) == 0 {
		return
	}
	sel := p.sel()
	idx := p.msgs[sel].Index
	p.expanded[idx] = !p.expanded[idx]
	delete(p.cache, idx)
	if !p.follow && p.top == sel {
		// Read partway down, it is shown from its header again: closed,
		// the lines scrolled past may be all it has.
		p.skip = 0
	}
}

// contentWidth is the text width of a message: inside the border, the
// selection gutter and the indent under the message header.
func (p *transcriptPane) contentWidth() int { return max(p.w-2-2-2, 10) }

func (p *transcriptPane) bodyRows() int { return max(p.h-2, 0) }

// block renders one message to lines (cached until it changes or the width does).
func (p *transcriptPane) block(s *styles, m *event.MessageInfo) []string {
	if lines, ok := p.cache[m.Index]; ok {
		return lines
	}
	lines := p.renderMessage(s, m)
	p.cache[m.Index] = lines
	return lines
}

func (p *transcriptPane) renderMessage(s *styles, m *event.MessageInfo) []string {
	w := p.contentWidth()
	exp := p.expanded[m.Index]
	role := m.Role
	if role == "" {
		role = "message"
	}
	head := s.dim.Render("#"+strconv.Itoa(m.Index)+" ") + roleStyle(s, role).Render(role)
	content := m.Content
	if m.Source == "human" {
		// The model reads what the person sent escaped and wrapped in a
		// tag; the person sees it as they typed it.
		switch h, ok := coordination.ParseHuman(m.Content); {
		case !ok:
			head += s.dim.Render(s.g.sep) + s.human.Render("human")
		case h.Broadcast:
			head += s.dim.Render(s.g.sep) + s.human.Render("human broadcast") + s.dim.Render(s.g.sep+oneLine(h.Category))
			content = h.Text
		default:
			head += s.dim.Render(s.g.sep) + s.human.Render("human message")
			content = h.Text
		}
	} else if m.Role == "user" && m.Index == 1 {
		// A child's task, its parent's text, which the model reads with
		// what looks like the runtime's tags defused.
		content = coordination.UndoDefuse(content)
	} else if d, ok := coordination.ParseDelivered(m.Content); ok && m.Role == "user" && m.Index > 1 {
		// Likewise what an agent wrote reaches another escaped, in a tag
		// whose attributes say who sent it: the header says it instead.
		// Only the runtime writes such a message: the task (after the
		// system prompt) and a model's own answers are text an agent
		// wrote, shown as written even when it looks like a delivery.
		head += s.dim.Render(s.g.sep) + deliveredHead(s, d)
		content = d.Body
	}
	if m.Synthetic {
		head += s.dim.Render(s.g.sep) + s.injected.Render("injected")
	}
	if m.NoReply {
		head += s.dim.Render(s.g.sep) + s.injected.Render("no-reply")
	}
	if m.Role == "tool" {
		name := p.toolNames[m.ToolCallID]
		if name == "" {
			name = m.ToolCallID
		}
		head += s.dim.Render(s.g.sep+"result of ") + name
	}
	if m.Usage != nil && m.Usage.TotalTokens > 0 {
		head += s.dim.Render(s.g.sep + fmtTokens(m.Usage.TotalTokens) + " tok")
	}
	lines := []string{head}
	content = clean(content)

	collapsible := m.Role == "system" || m.Index == 0 || m.Role == "tool"
	switch {
	case collapsible && !exp:
		what := "system prompt"
		if m.Role == "tool" {
			what = "result"
		}
		n := strings.Count(content, "\n") + 1
		preview := s.g.folded + " " + s.g.join(what, plural(n, "line", "lines"), plural(len(content), "char", "chars"))
		if m.Role == "tool" {
			preview += s.g.sep + argSummary(s.g, content)
		}
		lines = append(lines, "  "+s.dim.Render(s.g.trunc(preview, w)))
	case content != "":
		if collapsible {
			lines = append(lines, "  "+s.dim.Render(s.g.unfolded+" expanded"))
		}
		body := wrapProse(content, w)
		if m.Role == "tool" {
			// A result in JSON (read_file's, a spawn's) reads as a call's
			// arguments do: member by member, a text as the text it holds,
			// not one line of escapes.
			body = argLines(s, content, w)
		}
		for _, l := range body {
			lines = append(lines, "  "+l)
		}
	}
	for _, tc := range m.ToolCalls {
		if !exp {
			lines = append(lines, "  "+s.role["tool"].Render(s.g.folded+" "+tc.Name)+" "+s.dim.Render(s.g.trunc(argSummary(s.g, tc.Arguments), max(w-cellWidth(tc.Name)-2-cellWidth(s.g.folded), 1))))
			continue
		}
		lines = append(lines, "  "+s.role["tool"].Render(s.g.unfolded+" "+tc.Name)+s.dim.Render(" "+tc.ID))
		for _, l := range argLines(s, tc.Arguments, w-2) {
			lines = append(lines, "    "+l)
		}
	}
	return append(lines, "") // a blank line between messages
}

// deliveredHead names what kind of delivery a message is and where it
// came from, for the header of a message ParseDelivered recovered.
func deliveredHead(s *styles, d coordination.Delivered) string {
	from := oneLine(d.From)
	if id := oneLine(d.TaskID); id != "" && !strings.Contains(from, id) {
		// An unlabelled sender is named with its id already.
		from += " " + id
	}
	switch d.Tag {
	case coordination.TagTaskResult:
		return s.injected.Render("task result") + s.dim.Render(s.g.sep+oneLine(d.Agent)+" "+oneLine(d.TaskID)+s.g.sep+oneLine(d.Status))
	case coordination.TagTaskMessage:
		return s.injected.Render("message") + s.dim.Render(" from "+from)
	case coordination.TagSiblingBroadcast:
		return s.injected.Render("broadcast") + s.dim.Render(" from "+from+s.g.sep+oneLine(d.Category))
	case coordination.TagAnsweredOnYourBehalf:
		return s.injected.Render("answered on its behalf") + s.dim.Render(s.g.sep+oneLine(d.Question)+" asked by "+oneLine(d.From))
	case coordination.TagSiblingTasks:
		return s.injected.Render("sibling tasks")
	case coordination.TagRunResumed:
		return s.injected.Render("run resumed") + s.dim.Render(s.g.sep+"failed: "+oneLine(d.Failure))
	case coordination.TagNewSibling:
		return s.injected.Render("new sibling") + s.dim.Render(s.g.sep+oneLine(d.Agent)+" "+oneLine(d.TaskID)+s.g.sep+oneLine(d.Title))
	default:
		return s.injected.Render("announcement") + s.dim.Render(" from "+from)
	}
}

func roleStyle(s *styles, role string) paint {
	if st, ok := s.role[role]; ok {
		return st
	}
	return s.bold
}

// argLines shows a tool call's arguments to a person, in w cells: one
// argument after another in the order the model sent them, a text as the
// text it holds rather than as a JSON string with its escapes (a long or
// multi-line one indented under its name), an object member by member
// under its name, a list inline as JSON when it fits and otherwise item by
// item. Arguments that are not one JSON object are shown as they came.
func argLines(s *styles, raw string, w int) []string {
	if !json.Valid([]byte(raw)) || strings.TrimLeft(raw, " \t\r\n")[0] != '{' {
		return wrap(prettyJSON(clean(raw)), w)
	}
	lines := fieldLines(s, json.RawMessage(raw), w)
	if len(lines) == 0 {
		return []string{s.dim.Render(s.g.trunc("no arguments", w))}
	}
	return lines
}

// argSummary is a collapsed tool call's arguments on one line, read as
// the opened call shows them: "name: value" for each argument, a text as
// it reads, separated by " · ". Arguments that are not one JSON object
// are shown as they came.
func argSummary(g *glyphs, raw string) string {
	if !json.Valid([]byte(raw)) || strings.TrimLeft(raw, " \t\r\n")[0] != '{' {
		return oneLine(raw)
	}
	var parts []string
	eachMember(json.RawMessage(raw), func(name string, v json.RawMessage) {
		text, _ := valueText(v, 0)
		parts = append(parts, oneLine(name)+": "+oneLine(text))
	})
	if len(parts) == 0 {
		return "no arguments"
	}
	return g.join(parts...)
}

// eachMember calls f with each member of a valid JSON object, in order,
// the name cleaned for the screen.
func eachMember(obj json.RawMessage, f func(name string, v json.RawMessage)) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	dec.Token() // {
	for dec.More() {
		t, _ := dec.Token()
		var v json.RawMessage
		dec.Decode(&v)
		f(clean(t.(string)), v)
	}
}

// fieldLines shows the members of a valid JSON object, one after another.
func fieldLines(s *styles, obj json.RawMessage, w int) []string {
	var lines []string
	eachMember(obj, func(key string, v json.RawMessage) {
		name := oneLine(key) + ":"
		text, inline := valueText(v, w-cellWidth(name)-1)
		if inline && (v[0] != '{' || text == "{}") {
			lines = append(lines, s.dim.Render(name)+" "+text)
			return
		}
		for _, l := range wrap(name, w) {
			lines = append(lines, s.dim.Render(l))
		}
		for _, l := range valueLines(s, v, w-2) {
			lines = append(lines, "  "+l)
		}
	})
	return lines
}

// valueText is a valid JSON value on one line of at most w cells, if it
// fits there: a text as it reads, anything else as compact JSON.
func valueText(v json.RawMessage, w int) (string, bool) {
	var text string
	if v[0] == '"' {
		json.Unmarshal(v, &text)
		text = clean(text)
		if text == "" {
			text = `""` // not an argument left out
		}
	} else {
		var b bytes.Buffer
		json.Compact(&b, v)
		text = clean(b.String())
	}
	return text, w > 0 && !strings.Contains(text, "\n") && cellWidth(text) <= w
}

// valueLines shows a valid JSON value that did not fit on its name's line,
// in w cells: a text wrapped, an object member by member, a list item by
// item, each item after a dash.
func valueLines(s *styles, v json.RawMessage, w int) []string {
	if w < 12 {
		// Nested this deep, indenting further would leave no room.
		text, _ := valueText(v, w)
		return wrap(text, max(w, 1))
	}
	switch v[0] {
	case '{':
		if lines := fieldLines(s, v, w); len(lines) > 0 {
			return lines
		}
		return []string{"{}"}
	case '[':
		if text, ok := valueText(v, w); ok {
			return []string{text}
		}
		var items []json.RawMessage
		json.Unmarshal(v, &items)
		var lines []string
		for _, item := range items {
			for i, l := range valueLines(s, item, w-2) {
				if i == 0 {
					lines = append(lines, s.dim.Render("-")+" "+l)
				} else {
					lines = append(lines, "  "+l)
				}
			}
		}
		return lines
	default:
		text, _ := valueText(v, w)
		return wrap(text, w)
	}
}

func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") == nil {
		return buf.String()
	}
	return s
}

// streamLines is the live reply being streamed, at most max lines of its tail.
func (p *transcriptPane) streamLines(s *styles, maxRows int) []string {
	r := p.reply()
	if r == nil {
		return nil
	}
	head := "  " + s.role["assistant"].Render("assistant") + " " + s.dim.Render("streaming"+s.g.ellipsis)
	if r.tool != "" {
		head += s.dim.Render(" calling ") + r.tool
	}
	lines := []string{head}
	if len(r.text) > 0 {
		// At the width and indent the message will have once it is
		// stored, so that its lines do not move when it is.
		body := wrapProse(clean(string(r.text)), p.contentWidth())
		keep := max(maxRows-1, 1)
		if len(body) > keep {
			body = body[len(body)-keep:]
		}
		for _, l := range body {
			lines = append(lines, "    "+l)
		}
	}
	return lines
}

// waitLines stand where the reply will stream while the session waits for
// its model and nothing has arrived: a local model may take minutes to read
// a long prompt before its first token, and an empty pane would look stuck.
// A call that failed and is tried again says why, whole: the sessions pane
// has room for its start only.
func (p *transcriptPane) waitLines(c *renderCtx) []string {
	if p.reply() != nil {
		return nil
	}
	s := c.styles
	head := "  " + s.role["assistant"].Render("assistant") + " "
	if n := c.st.sessions[p.sessionID]; n != nil && n.info.Status == "running" && n.info.Retrying != "" && c.st.runActive() {
		text := wrap(s.g.retry+" model call failed, "+retryText(oneLine(n.info.Retrying), n.retrySince, c.now), max(p.contentWidth()-12, 20))
		lines := []string{head + s.markWarn.Render(text[0])}
		for _, l := range text[1:min(len(text), 4)] {
			lines = append(lines, "    "+s.markWarn.Render(l))
		}
		return lines
	}
	since, ok := c.st.awaitingModel(p.sessionID)
	if !ok {
		return nil
	}
	line := head + s.dim.Render(c.spin()+" waiting for the model")
	if !since.IsZero() {
		line += s.dim.Render(s.g.sep + fmtDuration(c.now.Sub(since)))
	}
	return []string{line}
}

// sync keeps the selection visible.
func (p *transcriptPane) sync(s *styles) {
	p.trim()
	if len(p.msgs) == 0 {
		p.top = 0
		return
	}
	if !p.follow {
		sel := p.sel()
		p.selIdx = p.msgs[sel].Index
		avail := p.bodyRows()
		if sel < p.top {
			p.top, p.skip = sel, 0
		}
		// Move the top down until the selected message fits, or starts
		// the pane if it is taller.
		for p.top < sel {
			h := -p.skip
			for i := p.top; i <= sel; i++ {
				h += len(p.block(s, &p.msgs[i]))
				if h > avail {
					break
				}
			}
			if h <= avail {
				break
			}
			p.top, p.skip = p.top+1, 0
		}
		p.top = min(p.top, len(p.msgs)-1)
		// A message re-wrapped to a new width may have fewer lines.
		p.skip = min(p.skip, max(len(p.block(s, &p.msgs[p.top]))-1, 0))
	}
}

// title names the session and says what is outside the pane: newer
// messages below a view scrolled up (newer of them, or -1 for the rest of
// the last one in sight), a reply streaming below (streamBelow) and older
// messages above, in memory (olderAbove) or in the store. Where the border
// is short its items shorten and go whole (fitItems): the session is named
// by its label, then its id, the stream and its status go.
func (p *transcriptPane) title(g *glyphs, st *runState, newer int, streamBelow, olderAbove bool) string {
	items := []item{
		whole("Transcript"),
		{{0, st.sessionName(p.sessionID)}, {titleFewer, st.sessionShort(p.sessionID)}},
		item{{0, p.sessionID}}.goesAt(titleFewer + 1),
	}
	if n := st.sessions[p.sessionID]; n != nil {
		items = append(items, item{{0, st.shownStatus(&n.info)}}.goesAt(titleFewer+3))
	}
	switch {
	case newer > 0:
		items = append(items, arrowItem(g.down, newer, "newer"))
	case newer < 0:
		items = append(items, item{{0, g.down + " more"}, {titleTerse, g.down}})
	}
	if streamBelow {
		items = append(items, item{{0, g.down + " streaming"}}.goesAt(titleFewer+2))
	}
	switch {
	case p.loading:
		items = append(items, whole("loading"+g.ellipsis))
	case p.loadingOlder && p.toFirst:
		// Home reads every older page: say how far it has to go, which
		// is no further than the pane keeps.
		items = append(items, g.loadingOlder(p.toRead()))
	case p.loadingOlder:
		items = append(items, whole("loading older"+g.ellipsis))
	case olderAbove || p.firstIndex() > 0:
		items = append(items, item{{0, g.up + " older"}, {titleTerse, g.up}})
	}
	return fitItems(titleRoom(p.w), g.sep, items...)
}

func (p *transcriptPane) Render(c *renderCtx) []string {
	s := c.styles
	rows := p.bodyRows()
	wait := p.waitLines(c)
	var body []string
	switch {
	case p.err != "":
		body = append(body, s.errText.Render("could not read the transcript: "+oneLine(p.err)))
	case len(p.msgs) == 0 && p.loading:
		body = append(body, s.dim.Render("loading"+s.g.ellipsis))
	case len(p.msgs) == 0 && c.st.run.Status == "deleted":
		body = append(body, s.dim.Render("the messages were deleted with the run"))
	case len(p.msgs) == 0 && p.reply() == nil && wait == nil:
		body = append(body, s.dim.Render("no messages yet"))
	}
	sel := p.sel()
	p.drawn = p.drawn[:0]
	for range body {
		p.drawn = append(p.drawn, drawnRow{index: -1})
	}
	var owners []drawnRow // of shown, row by row
	own := func(i int, lines []string, from int) {
		for j := from; j < len(lines); j++ {
			owners = append(owners, drawnRow{index: p.msgs[i].Index, line: j, blank: lines[j] == ""})
		}
	}

	gutter := func(i int, lines []string) []string {
		out := make([]string, len(lines))
		mark := "  "
		if i == sel && c.focused {
			mark = s.accent.Render(s.g.bar + " ")
		}
		for j, l := range lines {
			if l == "" {
				out[j] = l // the blank separator is not part of the message
				continue
			}
			out[j] = mark + l
		}
		return out
	}
	var shown, stream []string
	streamBelow, olderAbove, newer := false, false, 0
	if p.follow {
		// The live reply goes under the newest message, and the messages
		// above it give way.
		stream = p.streamLines(s, max(rows/2, 2))
		if stream == nil {
			stream = wait
		}
		avail := max(rows-len(body)-len(stream), 0)
		// Bottom-aligned: walk back from the newest message.
		var blocks [][]string
		h, first := 0, len(p.msgs)
		for i := len(p.msgs) - 1; i >= 0 && h < avail; i-- {
			b := gutter(i, p.block(s, &p.msgs[i]))
			blocks = append(blocks, b)
			h += len(b)
			first = i
		}
		for i := len(blocks) - 1; i >= 0; i-- {
			shown = append(shown, blocks[i]...)
			own(first+len(blocks)-1-i, blocks[i], 0)
		}
		olderAbove = first > 0 || len(shown) > avail
		if len(shown) > avail {
			shown = shown[len(shown)-avail:]
			owners = owners[len(owners)-avail:]
		}
		if free := avail - len(shown); free > 0 && len(stream) > 0 && p.reply() != nil {
			// Too few messages to fill the rows the reply left them:
			// the reply takes those too, rather than leave them blank.
			stream = p.streamLines(s, len(stream)+free)
		}
	} else {
		// Scrolled up, the view hangs from its top message and stays put
		// while the reply streams. The reply comes after the newest message, so it shows
		// only in rows left free below it; otherwise the title says so.
		olderAbove = p.top > 0 || p.skip > 0
		avail := max(rows-len(body), 0)
		end := p.top
		for ; end < len(p.msgs) && len(shown) < avail; end++ {
			b := gutter(end, p.block(s, &p.msgs[end]))
			from := 0
			if end == p.top {
				from = min(p.skip, len(b))
			}
			shown = append(shown, b[from:]...)
			own(end, b, from)
		}
		newer = len(p.msgs) - end
		if len(shown) > avail {
			shown = shown[:avail]
			owners = owners[:avail]
			if newer == 0 {
				newer = -1 // the last message in sight goes on below
			}
		}
		if free := avail - len(shown); end == len(p.msgs) && free > 0 {
			stream = p.streamLines(s, free)
			if stream == nil {
				stream = wait
			}
			stream = stream[:min(len(stream), free)]
		}
		streamBelow = len(stream) == 0 && p.reply() != nil
	}
	body = append(body, shown...)
	body = append(body, stream...)
	p.drawn = append(p.drawn, owners...)
	for i, l := range body {
		body[i] = truncate(l, p.w-2, s.g.tail(p.w-2))
	}
	return s.box(p.title(s.g, c.st, newer, streamBelow, olderAbove), body, p.w, p.h, c.focused)
}
