package tui

import (
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"golang.org/x/text/unicode/norm"
)

// broadcastsPane is the live feed, newest at the bottom. It follows new items
// while the selection is on the newest one, and stays put (keeping more
// history in memory) while the person reads back.
type broadcastsPane struct {
	w, h int

	follow bool
	sel    int // index into the current view (all items, or the matches)
	selAbs int // absolute feed position of the selection
	offset int

	paneFilter
	// name shows a session id as the feed does ("researcher (r-2)"), so
	// that the filter finds a message by its recipient too.
	name func(sessionID string) string

	// matches are the absolute positions of items matching filter, ascending,
	// computed for feed positions [matchedFrom, matchedTo).
	matches                []int
	matchedFrom, matchedTo int
	matchedFilter          string
}

func newBroadcastsPane() broadcastsPane {
	return broadcastsPane{follow: true, paneFilter: newPaneFilter("sender, category or text")}
}

func (p *broadcastsPane) SetSize(w, h int) {
	p.w, p.h = w, h
	p.input.SetWidth(max(w-6, 1))
}

func (p *broadcastsPane) bodyRows() int {
	rows := p.h - 2
	if p.filterRow() {
		rows--
	}
	return max(rows, 0)
}

// oneLineWidth is the inner width from which a broadcast fits on one row
// with enough of its text to read; narrower panes give each broadcast two
// rows, who/when above and the text below, rather than cut the text to a
// few words.
const oneLineWidth = 110

// linesPer is how many rows one broadcast takes.
func (p *broadcastsPane) linesPer() int {
	if p.w-2 >= oneLineWidth {
		return 1
	}
	return 2
}

// visibleItems is how many broadcasts fit.
func (p *broadcastsPane) visibleItems() int { return max(p.bodyRows()/p.linesPer(), 1) }

// viewLen and viewAbs map view indices to feed positions.
func (p *broadcastsPane) viewLen(f *feed) int {
	if p.filter == "" {
		return len(f.items)
	}
	return len(p.matches)
}

func (p *broadcastsPane) viewAbs(f *feed, i int) int {
	if p.filter == "" {
		return f.base + i
	}
	return p.matches[i]
}

// sync updates the matches incrementally, keeps the selection on the same
// item and tells the feed how much to keep.
func (p *broadcastsPane) sync(f *feed, name func(sessionID string) string) {
	p.name = name
	if p.follow && p.filter == "" {
		// Under a filter the last match may be one read back from the
		// store: following it keeps what was read.
		f.limit = feedKeep
		if len(f.items) > feedKeep {
			f.trimFront(len(f.items) - feedKeep)
		}
	} else {
		f.limit = feedKeep + feedHistoryMax
	}
	p.syncMatches(f)

	n := p.viewLen(f)
	switch {
	case n == 0:
		p.sel = 0
	case p.follow:
		p.sel = n - 1
	case p.filter == "":
		p.sel = min(max(p.selAbs-f.base, 0), n-1)
	default:
		p.sel = min(sort.SearchInts(p.matches, p.selAbs), n-1)
	}
	if n > 0 {
		p.selAbs = p.viewAbs(f, p.sel)
	}
	rows := p.visibleItems()
	if p.follow {
		p.offset = max(n-rows, 0)
	}
	l := list{cursor: p.sel, offset: p.offset}
	l.clamp(n, rows)
	p.offset = l.offset
}

func (p *broadcastsPane) syncMatches(f *feed) {
	if p.filter == "" {
		p.matches, p.matchedFilter = nil, ""
		return
	}
	if p.filter != p.matchedFilter {
		p.matches = p.matches[:0]
		p.matchedFrom, p.matchedTo = f.base, f.base
		p.matchedFilter = p.filter
	}
	needle := foldText(p.filter)
	// Older items were dropped: drop their matches.
	if f.base > p.matchedFrom {
		k := sort.SearchInts(p.matches, f.base)
		p.matches = append(p.matches[:0], p.matches[k:]...)
		p.matchedFrom = f.base
		p.matchedTo = max(p.matchedTo, f.base)
	}
	// Older items were loaded: match them and put them in front.
	if f.base < p.matchedFrom {
		var older []int
		for abs := f.base; abs < p.matchedFrom; abs++ {
			if p.match(f.at(abs), needle) {
				older = append(older, abs)
			}
		}
		p.matches = append(older, p.matches...)
		p.matchedFrom = f.base
	}
	for abs := p.matchedTo; abs < f.end(); abs++ {
		if p.match(f.at(abs), needle) {
			p.matches = append(p.matches, abs)
		}
	}
	p.matchedTo = f.end()
}

// match is the filter: a case-insensitive substring of the sender, the
// recipient (its id or its name as shown), the category or kind, or the
// text.
func (p *broadcastsPane) match(b *event.BroadcastInfo, needle string) bool {
	if b == nil {
		return false
	}
	if containsFold(b.From, needle) || containsFold(b.FromSession, needle) || containsFold(b.Category, needle) ||
		containsFold(b.Kind, needle) || containsFold(b.Message, needle) || containsFold(b.Target, needle) {
		return true
	}
	if p.name != nil && containsFold(p.name(b.Target), needle) {
		return true
	}
	// A session's id finds what it received too (ids only: names of
	// hundreds of recipients per row would slow every key typed).
	for _, r := range b.Recipients {
		if containsFold(r, needle) {
			return true
		}
	}
	return false
}

// containsFold reports whether s holds lowerNeedle, made by foldText.
func containsFold(s, lowerNeedle string) bool {
	if lowerNeedle == "" {
		return true
	}
	if needsClean(s) {
		// Matched as shown: an escape sequence the screen leaves out
		// neither hides a match nor makes one.
		s = expandTabs(stripControls(s))
	}
	if len(s) < len(lowerNeedle) && isASCII(s) {
		return false
	}
	return strings.Contains(foldText(s), lowerNeedle)
}

// foldText is s as a filter compares it: in lower case, and with its
// accents in one form (NFC), so that é typed as e and a combining accent
// matches é written as one character, and the other way round.
func foldText(s string) string {
	s = strings.ToLower(s)
	if !isASCII(s) {
		s = norm.NFC.String(s)
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// move moves the selection; reaching the newest item resumes following.
func (p *broadcastsPane) move(f *feed, d int) {
	n := p.viewLen(f)
	if n == 0 {
		return
	}
	p.sel = min(max(p.sel+d, 0), n-1)
	p.selAbs = p.viewAbs(f, p.sel)
	p.follow = p.sel == n-1
}

func (p *broadcastsPane) toBottom() { p.follow = true }

// atTop reports the selection on the oldest item in memory, where scrolling
// further up reads older items from the store.
func (p *broadcastsPane) atTop() bool { return p.sel == 0 }

func (p *broadcastsPane) selected(f *feed) *event.BroadcastInfo {
	if p.viewLen(f) == 0 {
		return nil
	}
	return f.at(p.selAbs)
}

func (p *broadcastsPane) rowAt(y int) (int, bool) {
	top := 1
	if p.filterRow() {
		top++
	}
	i := y - top
	if i < 0 || i >= p.bodyRows() {
		return 0, false
	}
	return p.offset + i/p.linesPer(), true
}

func (p *broadcastsPane) selectRow(f *feed, i int) {
	if i >= p.viewLen(f) {
		return
	}
	p.move(f, i-p.sel)
}

// title is the pane's name and what it holds, fitted to its border: where
// that is short its items shorten and go whole (fitItems), the least needed
// last in the list first.
func (p *broadcastsPane) title(g *glyphs, f *feed, total int) string {
	items := []item{whole("Broadcasts"), countItem(total, "").goesAt(titleFewer + 1)}
	if p.filter != "" {
		// Older items are read from the store as the person scrolls
		// back: the matches are of those read so far.
		newest := 0
		if loaded := len(f.items); loaded < total {
			newest = loaded
		}
		items = append(items, p.filterTitle(g, len(p.matches), newest))
	}
	switch {
	case f.loadingOlder && f.toFirst && f.counted:
		// Home reads every older page: say how far it has to go, which
		// is no further than the feed has room for.
		items = append(items, g.loadingOlder(f.toRead()))
	case f.loadingOlder:
		items = append(items, whole("loading older"+g.ellipsis))
	case p.filter == "" && p.offset+f.older() > 0:
		items = append(items, arrowItem(g.up, p.offset+f.older(), "older").goesAt(titleFewer+3))
	case p.offset > 0:
		// Under a filter, matches among those read: the rest of the store
		// is not matched until read ("in the N newest" above says so).
		items = append(items, arrowItem(g.up, p.offset, "older").goesAt(titleFewer+3))
	}
	if !p.follow {
		// Newer items out of sight, below the window.
		if newer := p.viewLen(f) - p.offset - p.visibleItems(); newer > 0 {
			items = append(items, arrowItem(g.down, newer, "newer").goesAt(titleFewer+2))
		}
	}
	return fitItems(titleRoom(p.w), g.sep, items...)
}

func (p *broadcastsPane) Render(c *renderCtx) []string {
	f := &c.st.feed
	s := c.styles
	inner := p.w - 2
	var body []string
	if p.filterRow() {
		body = append(body, p.filterLine(c))
	}
	n := p.viewLen(f)
	if n == 0 {
		if p.filter != "" {
			body = append(body, " "+s.dim.Render("no broadcast matches"))
		} else {
			body = append(body, " "+s.dim.Render("no broadcasts yet"))
		}
	}
	end := min(p.offset+p.visibleItems(), n)
	// The rows on screen write their times alike, as the narrowest of
	// them needs: a column of times that mixes 15:04:05, 15:04 and none
	// reads as different things.
	when := 0
	for i := p.offset; i < end; i++ {
		if b := f.at(p.viewAbs(f, i)); b != nil {
			items, _ := p.headItems(c, b)
			when = max(when, fitLevel(p.headWidth(inner-1), " ", items...))
		}
	}
	for i := p.offset; i < end; i++ {
		b := f.at(p.viewAbs(f, i))
		if b == nil {
			continue
		}
		sel := i == p.sel && c.focused
		lines := p.row(c, b, inner-1, when)
		for j, line := range lines {
			mark := s.g.cursorMark(sel && j == 0)
			if j > 0 {
				mark = " "
			}
			line = mark + line
			if sel {
				line = s.selected.Render(s.g.fit(ansi.Strip(line), inner))
			}
			body = append(body, line)
		}
	}
	return s.box(p.title(s.g, f, f.total), body, p.w, p.h, c.focused)
}

// oneLineText is how much of its text a one-row broadcast keeps: its
// who/when part gives way first.
const oneLineText = 50

// row renders one broadcast as linesPer rows of width w, its time as
// written at level when of headItems (see head).
func (p *broadcastsPane) row(c *renderCtx, b *event.BroadcastInfo, w, when int) []string {
	g := c.styles.g
	head := p.head(c, b, p.headWidth(w), when)
	if p.linesPer() == 1 {
		return []string{g.fit(head+" "+oneLine(b.Message), w)}
	}
	return []string{g.fit(head, w), g.fit("  "+oneLine(b.Message), w)}
}

// headWidth is the cells of a row of width w that its head may take.
func (p *broadcastsPane) headWidth(w int) int {
	if p.linesPer() == 1 {
		return w - oneLineText - 1
	}
	return w
}

// head is when a broadcast was sent, by whom, to whom and its kind, in w
// cells where it fits. Where it does not, the least needed gives way
// first: the recipient's role, then the sender's (a session with a label
// is named by its label alone, "research-2"), then the seconds of the
// time, then the time. Then the names are cut in their middle, the longer
// first, keeping their ends: those tell research-1 from research-2. The kind in brackets, which says a blocker from a
// discovery, stays whole. The time is written at level when at least,
// which the rows shown together share.
func (p *broadcastsPane) head(c *renderCtx, b *event.BroadcastInfo, w, when int) string {
	s := c.styles
	g := s.g
	items, fromStyle := p.headItems(c, b)
	items[0] = items[0].from(when)
	_, tagStyle := broadcastTag(g, b)
	tag := items[4].at(0)
	level := fitLevel(w, " ", items...)
	at, from, target := items[0].at(level), items[1].at(level), items[3].at(level)
	if at != "" {
		at += " "
	}
	// Then cut, the longer name first, down to a few cells each.
	const least = 7
	if over := cellWidth(joinItems(level, " ", items...)) - w; over > 0 {
		fw, tw := cellWidth(from), cellWidth(target)
		longest := max(fw, tw)
		for longest > least && max(fw-longest, 0)+max(tw-longest, 0) < over {
			longest--
		}
		// Only as much as the row needs: the recipient to that width,
		// the sender by what is left.
		target = g.cutMiddle(target, longest)
		if rest := over - (tw - cellWidth(target)); rest > 0 {
			from = g.cutMiddle(from, max(fw-rest, least))
		}
	}
	return s.dim.Render(at) + fromStyle.Render(from) + s.dim.Render(" "+g.to+" "+target) + " " + s.categoryStyle(tagStyle).Render(tag)
}

// headItems are the parts of a broadcast's head, each with the shorter
// forms it gives way to (see head): its time, sender, arrow, recipient and
// kind; and the sender's style.
func (p *broadcastsPane) headItems(c *renderCtx, b *event.BroadcastInfo) ([]item, paint) {
	s := c.styles
	g := s.g
	var ts item
	if !b.Timestamp.IsZero() {
		at := b.Timestamp.In(c.loc)
		ts = item{{0, at.Format("15:04:05")}, {3, at.Format("15:04")}, {4, ""}}
	}
	tag, _ := broadcastTag(g, b)
	tag = "[" + tag + "]"
	from := oneLine(b.From)
	if from == "" {
		from = c.st.sessionRef(b.FromSession)
	}
	fromShort := from
	if n := c.st.sessions[b.FromSession]; n != nil && n.info.Label != "" && b.Kind != event.KindHuman {
		fromShort = oneLine(n.info.Label)
	}
	fromStyle := s.bold
	if b.Kind == event.KindHuman {
		fromStyle = s.human
	}
	target := oneLine(b.Target)
	targetShort := target
	if n := c.st.sessions[b.Target]; n != nil {
		target = oneLine(c.st.sessionRef(b.Target))
		targetShort = target
		if n.info.Label != "" {
			targetShort = oneLine(n.info.Label)
		}
		// A person's broadcast to a subtree (it has a category) is not a
		// message to that one session.
		if b.Kind == event.KindHuman && b.Category != "" {
			target, targetShort = "subtree of "+target, "subtree of "+targetShort
		}
	}

	items := []item{ts, {{0, from}, {2, fromShort}}, {{0, g.to}}, {{0, target}, {1, targetShort}}, whole(tag)}
	return items, fromStyle
}

// broadcastTag is the bracketed kind or category of a feed row and the style
// that colours it.
func broadcastTag(g *glyphs, b *event.BroadcastInfo) (tag, style string) {
	switch b.Kind {
	case event.KindAnnounce:
		return "announce", "announce"
	case event.KindMessage:
		if b.NoReply {
			return "message, no-reply", "message"
		}
		return "message", "message"
	case event.KindHuman:
		if b.Category != "" {
			return "human" + g.sep + b.Category, "human"
		}
		if b.NoReply {
			return "human, no-reply", "human"
		}
		return "human", "human"
	}
	if b.Category != "" {
		return b.Category, b.Category
	}
	return "broadcast", "message"
}
