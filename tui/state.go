package tui

import (
	"slices"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Bounds on what the dashboard keeps in memory. The store has everything;
// the dashboard keeps a window and reads older items on demand.
const (
	feedKeep        = 2000 // broadcasts kept while following the live feed
	feedHistoryMax  = 8000 // extra older broadcasts loaded while scrolling back
	feedPage        = 200  // broadcasts read per "load older"
	transcriptKeep  = 500  // messages kept while following a transcript
	transcriptExtra = 1500 // extra older messages loaded while scrolling back
	transcriptPage  = 200  // messages read per "load older"
)

// sessionNode is one session in the tree, with the figures rolled up from
// its subtree kept current incrementally (O(depth) per change) so that a
// render never walks the whole tree.
type sessionNode struct {
	info     event.SessionInfo
	parent   *sessionNode
	children []*sessionNode
	depth    int // depth in the tree as the dashboard knows it (0 = root)

	subtreeTokens int // own tokens plus every descendant's
	descendants   int
	lastTool      string
	toolRunning   bool
	toolsOpen     int // tools started and not yet finished (a turn's calls may run together)
	toolFailed    bool
	nextIndex     int // one past the highest message index seen
	// retrySince is when the session said its model call is tried again
	// (the time of the status that said so), to count the wait down.
	retrySince time.Time
	// activeSince is when the dashboard last saw the session do something
	// (created, a status, a message, a tool starting or ending). A session
	// running with no tool running is waiting for its model, since about
	// then. Zero when the session came from a snapshot after its first
	// reply.
	activeSince time.Time
	// reply is what the session's model has streamed of the reply it is
	// writing, kept whether or not its transcript is open: one opened in
	// the middle shows the reply from its start.
	reply liveReply
}

// liveReply is a reply as it streams: its text (the tail of a long one)
// and the tool it is calling. Streamed tokens are lossy and never stored.
type liveReply struct {
	text []byte
	tool string
	// cut: deltas sent before it belong to a reply already appended (the
	// bus delivers must-deliver events first, so a delta can arrive after
	// its reply).
	cut time.Time
}

// Only the tail of a long reply is ever on screen: past liveReplyMax bytes
// it keeps its last liveReplyKeep.
const (
	liveReplyMax  = 32 << 10
	liveReplyKeep = 16 << 10
)

// add applies a delta sent at t (zero: unknown, taken as current).
func (r *liveReply) add(d event.DeltaInfo, t time.Time) {
	if !t.IsZero() && t.Before(r.cut) {
		return
	}
	if d.Reset {
		r.clear()
	}
	r.text = append(r.text, d.Content...)
	if len(r.text) > liveReplyMax {
		r.text = append(r.text[:0], r.text[len(r.text)-liveReplyKeep:]...)
	}
	if d.ToolName != "" {
		r.tool = d.ToolName
	}
}

// clear forgets the reply (appended, or the session stopped), and its
// memory: a run has many sessions, few of them streaming.
func (r *liveReply) clear() {
	r.text, r.tool = nil, ""
}

func (r *liveReply) empty() bool { return len(r.text) == 0 && r.tool == "" }

// anyActive reports whether the session or one below it has not ended:
// cancelling its subtree would stop something.
func (n *sessionNode) anyActive() bool {
	switch n.info.Status {
	case "completed", "failed", "cancelled":
	default:
		return true
	}
	for _, c := range n.children {
		if c.anyActive() {
			return true
		}
	}
	return false
}

// runState is everything the dashboard knows about the run, applied from
// the snapshot and then from events. It has no Bubble Tea in it.
type runState struct {
	run      event.RunInfo
	runEnded time.Time
	lastSeq  int64

	sessions    map[string]*sessionNode
	roots       []*sessionNode
	orphans     map[string][]*sessionNode // by missing parent id
	treeVersion int                       // bumped when the tree's shape, or a name or title in it, changes
	totalTokens int
	toolWidth   int // the widest last tool of a session so far, which the Sessions pane sizes its column to
	running     int
	unfinished  int // pending, running or waiting: shown stopped once the run has

	feed feed

	plans           map[string]event.PlanInfo
	delegations     map[string]*event.DelegationInfo
	delegationOrder []string

	questions []event.QuestionInfo // open questions for the human, oldest first
	asking    map[string]int       // open questions per asking session
	held      []event.QuestionInfo // open questions of a run that has stopped, shown again if it goes on
	// humanAbsent are the open questions asked of the person that nobody
	// can answer where the run runs (a headless run without --control):
	// shown, but as waiting for the agents alone.
	humanAbsent []event.QuestionInfo
}

func newRunState() *runState {
	return &runState{
		sessions:    map[string]*sessionNode{},
		orphans:     map[string][]*sessionNode{},
		plans:       map[string]event.PlanInfo{},
		delegations: map[string]*event.DelegationInfo{},
		asking:      map[string]int{},
	}
}

// applySnapshot replaces the state with a snapshot.
func (s *runState) applySnapshot(snap event.Snapshot) {
	*s = *newRunState()
	s.run = snap.Run
	s.lastSeq = snap.LastSeq
	for _, si := range snap.Sessions {
		s.upsertSession(si)
	}
	s.runEnded = snap.Run.EndedAt
	if !s.runActive() && s.runEnded.IsZero() {
		// A run stored before runs said when they ended: its last session
		// does.
		for _, n := range s.sessions {
			if n.info.EndedAt.After(s.runEnded) {
				s.runEnded = n.info.EndedAt
			}
		}
	}
	s.feed.items = append([]event.BroadcastInfo(nil), snap.Broadcasts...)
	s.feed.total = max(snap.BroadcastTotal, len(snap.Broadcasts))
	s.feed.counted = snap.BroadcastTotal > 0
	s.feed.trimFront(len(s.feed.items) - feedKeep)
	for _, p := range snap.Plans {
		s.plans[p.SessionID] = p
	}
	for i := range snap.Delegations {
		s.upsertDelegation(snap.Delegations[i])
	}
	for _, q := range snap.Questions {
		s.openQuestion(q)
	}
}

func (s *runState) runActive() bool {
	return s.run.Status == "running" || s.run.Status == "pending" || s.run.Status == ""
}

// apply applies one event. It reports false for an event already covered by
// the snapshot.
func (s *runState) apply(ev event.Event) bool {
	if ev.Seq != 0 {
		if ev.Seq <= s.lastSeq {
			return false
		}
		s.lastSeq = ev.Seq
	}
	switch ev.Type {
	case event.RunStarted, event.RunFinished:
		if ev.Run != nil {
			started := s.run.StartedAt
			s.run = *ev.Run
			if s.run.StartedAt.IsZero() {
				s.run.StartedAt = started
			}
		}
		if ev.Type == event.RunFinished {
			s.runEnded = ev.Time
			if ev.Run != nil && !ev.Run.EndedAt.IsZero() {
				s.runEnded = ev.Run.EndedAt
			}
		}
		switch {
		case !s.runActive() && len(s.questions)+len(s.humanAbsent) > 0:
			// A stopped run's questions cannot be answered until it is
			// resumed: they leave the banner, and come back with the run.
			s.held = append(append(s.held, s.questions...), s.humanAbsent...)
			s.questions, s.asking, s.humanAbsent = nil, map[string]int{}, nil
		case s.runActive() && len(s.held) > 0:
			held := s.held
			s.held = nil
			for _, q := range held {
				s.openQuestion(q)
			}
		}
	case event.SessionCreated, event.SessionStatus:
		if ev.Session != nil {
			was := ""
			if n := s.sessions[ev.Session.ID]; n != nil {
				was = n.info.Retrying
			}
			s.upsertSession(*ev.Session)
			if n := s.sessions[ev.Session.ID]; n != nil {
				if n.info.Retrying != was {
					n.retrySince = ev.Time
				}
				n.activeSince = ev.Time
				if n.info.Status != "running" {
					n.reply.clear() // a session that stops running is not streaming any more
				}
			}
		}
	case event.MessageAppended:
		if n := s.sessions[ev.SessionID]; n != nil && ev.Message != nil {
			n.nextIndex = max(n.nextIndex, ev.Message.Index+1)
			n.activeSince = ev.Time
			if ev.Message.Role == "assistant" {
				n.reply.clear()
				n.reply.cut = ev.Time
			}
		}
	case event.MessageDelta:
		if n := s.sessions[ev.SessionID]; n != nil && ev.Delta != nil {
			n.reply.add(*ev.Delta, ev.Time)
		}
	case event.ToolStarted, event.ToolFinished:
		if n := s.sessions[ev.SessionID]; n != nil && ev.Tool != nil {
			s.setLastTool(n, ev.Tool.Name)
			n.toolRunning = ev.Type == event.ToolStarted
			if n.toolRunning {
				n.toolsOpen++
			} else {
				n.toolsOpen = max(n.toolsOpen-1, 0)
			}
			n.toolFailed = ev.Type == event.ToolFinished && ev.Tool.IsError
			n.activeSince = ev.Time
		}
	case event.BroadcastSent:
		if ev.Broadcast != nil {
			s.feed.append(*ev.Broadcast)
		}
	case event.PlanUpdated:
		if ev.Plan != nil {
			sid := ev.Plan.SessionID
			if sid == "" {
				sid = ev.SessionID
			}
			p := *ev.Plan
			p.SessionID = sid
			s.plans[sid] = p
		}
	case event.DelegationUpdated:
		if ev.Delegation != nil {
			s.upsertDelegation(*ev.Delegation)
		}
	case event.QuestionOpened:
		if ev.Question != nil {
			s.openQuestion(*ev.Question)
		}
	case event.QuestionAnswered, event.QuestionClosed:
		if ev.Question != nil && ev.Question.Status != "open" {
			s.closeQuestion(ev.Question.ID)
		}
	}
	return true
}

// upsertSession creates or updates a session and keeps the roll-ups right.
func (s *runState) upsertSession(si event.SessionInfo) {
	n := s.sessions[si.ID]
	if n == nil {
		n = &sessionNode{info: si, subtreeTokens: si.Usage.TotalTokens, toolFailed: si.LastToolFailed && si.LastTool != ""}
		s.setLastTool(n, si.LastTool)
		if si.Turns == 0 {
			// Known from a snapshot before its first reply, it has been at
			// its first call since about its creation.
			n.activeSince = si.CreatedAt
		}
		s.sessions[si.ID] = n
		s.totalTokens += si.Usage.TotalTokens
		if si.Status == "running" {
			s.running++
		}
		if unfinished(si.Status) {
			s.unfinished++
		}
		s.attach(n)
		// Children that arrived before this session move under it.
		if kids, ok := s.orphans[si.ID]; ok {
			delete(s.orphans, si.ID)
			for _, k := range kids {
				s.removeRoot(k)
				s.link(n, k)
			}
		}
		s.treeVersion++
		return
	}
	if d := si.Usage.TotalTokens - n.info.Usage.TotalTokens; d != 0 {
		for a := n; a != nil; a = a.parent {
			a.subtreeTokens += d
		}
		s.totalTokens += d
	}
	if (n.info.Status == "running") != (si.Status == "running") {
		if si.Status == "running" {
			s.running++
		} else {
			s.running--
		}
	}
	if was, is := unfinished(n.info.Status), unfinished(si.Status); was != is {
		if is {
			s.unfinished++
		} else {
			s.unfinished--
		}
	}
	if si.LastTool != "" {
		s.setLastTool(n, si.LastTool)
	}
	if si.ParentID == "" {
		si.ParentID = n.info.ParentID
	}
	if si.CreatedAt.IsZero() {
		si.CreatedAt = n.info.CreatedAt
	}
	if si.Agent != n.info.Agent || si.Label != n.info.Label || si.Title != n.info.Title {
		s.treeVersion++ // a filtered tree may show the session now, or no more
	}
	n.info = si
}

func (s *runState) setLastTool(n *sessionNode, name string) {
	n.lastTool = name
	s.toolWidth = max(s.toolWidth, cellWidth(oneLine(name)))
}

// attach puts a new node under its parent, or among the roots (remembering
// the missing parent) when the parent is not known yet.
func (s *runState) attach(n *sessionNode) {
	pid := n.info.ParentID
	if pid == "" {
		s.roots = append(s.roots, n)
		return
	}
	if p := s.sessions[pid]; p != nil {
		s.link(p, n)
		return
	}
	s.orphans[pid] = append(s.orphans[pid], n)
	s.roots = append(s.roots, n)
}

func (s *runState) link(p, n *sessionNode) {
	n.parent = p
	p.children = append(p.children, n)
	setDepth(n, p.depth+1)
	for a := p; a != nil; a = a.parent {
		a.subtreeTokens += n.subtreeTokens
		a.descendants += n.descendants + 1
	}
}

func setDepth(n *sessionNode, d int) {
	n.depth = d
	for _, c := range n.children {
		setDepth(c, d+1)
	}
}

func (s *runState) removeRoot(n *sessionNode) {
	for i, r := range s.roots {
		if r == n {
			s.roots = append(s.roots[:i], s.roots[i+1:]...)
			return
		}
	}
}

// siblings returns the list n belongs to: its parent's children or the roots.
func (s *runState) siblings(n *sessionNode) []*sessionNode {
	if n.parent != nil {
		return n.parent.children
	}
	return s.roots
}

func (s *runState) upsertDelegation(d event.DelegationInfo) {
	if old, ok := s.delegations[d.ID]; ok {
		*old = d
		return
	}
	s.delegations[d.ID] = &d
	s.delegationOrder = append(s.delegationOrder, d.ID)
}

// openQuestion shows a question asked of the person: waiting for them, or,
// when nobody can answer it where the run runs, for the agents alone. The
// same question told again (a resume, a person who left) takes the place
// of the one shown.
func (s *runState) openQuestion(q event.QuestionInfo) {
	if (q.Status != "" && q.Status != "open") || !q.AllowHuman {
		return
	}
	list := &s.questions
	if q.HumanAbsent {
		list = &s.humanAbsent
	}
	for i := range *list {
		if (*list)[i].ID == q.ID {
			(*list)[i] = q
			return
		}
	}
	s.closeQuestion(q.ID)
	*list = append(*list, q)
	if !q.HumanAbsent {
		s.asking[q.FromSession]++
	}
}

func (s *runState) closeQuestion(id string) {
	s.held = slices.DeleteFunc(s.held, func(q event.QuestionInfo) bool { return q.ID == id })
	s.humanAbsent = slices.DeleteFunc(s.humanAbsent, func(q event.QuestionInfo) bool { return q.ID == id })
	for i := range s.questions {
		if s.questions[i].ID == id {
			s.asking[s.questions[i].FromSession]--
			if s.asking[s.questions[i].FromSession] <= 0 {
				delete(s.asking, s.questions[i].FromSession)
			}
			s.questions = append(s.questions[:i], s.questions[i+1:]...)
			return
		}
	}
}

func (s *runState) question(id string) (event.QuestionInfo, int, bool) {
	for i, q := range s.questions {
		if q.ID == id {
			return q, i, true
		}
	}
	return event.QuestionInfo{}, -1, false
}

// waitingHuman reports a session that waits for the person.
func (s *runState) waitingHuman(n *sessionNode) bool {
	// A session that has ended, or whose run has stopped, waits for nobody;
	// its last status may have been sent before its question was closed.
	switch n.info.Status {
	case "completed", "failed", "cancelled":
		return false
	}
	if !s.runActive() {
		return false
	}
	return n.info.WaitingHuman || s.asking[n.info.ID] > 0
}

// sessionName is how a session is named in one line: "researcher (r-1)".
func (s *runState) sessionName(id string) string {
	n := s.sessions[id]
	if n == nil {
		return id
	}
	name := n.info.Agent
	if n.info.Label != "" {
		name += " (" + n.info.Label + ")"
	}
	return name
}

// sessionShort is a session's shorter name where a line is short: its
// label alone, "r-1", which tells it from its siblings as the agent does
// not; the agent when it has no label.
func (s *runState) sessionShort(id string) string {
	if n := s.sessions[id]; n != nil && n.info.Label != "" {
		return n.info.Label
	}
	return s.sessionName(id)
}

// sessionRef names a session where nothing else tells which it is: its
// agent and label, or its agent and id when it has no label (two unlabelled
// researchers are otherwise one name), as the runtime names senders.
func (s *runState) sessionRef(id string) string {
	n := s.sessions[id]
	if n == nil || n.info.Label != "" {
		return s.sessionName(id)
	}
	return n.info.Agent + " (" + id + ")"
}

// elapsed is how long the run has been going (or went).
func (s *runState) elapsed(now time.Time) time.Duration {
	if s.run.StartedAt.IsZero() {
		return 0
	}
	end := now
	if !s.runActive() && !s.runEnded.IsZero() {
		end = s.runEnded
	}
	return end.Sub(s.run.StartedAt) - s.run.Paused(s.run.StartedAt, end)
}

// sessionElapsed is how long a session has been going (or went). One the
// run left unfinished when it stopped stops counting with the run.
func (s *runState) sessionElapsed(info event.SessionInfo, now time.Time) time.Duration {
	if info.CreatedAt.IsZero() {
		return 0
	}
	end := now
	switch {
	case !info.EndedAt.IsZero():
		end = info.EndedAt
	case !s.runActive() && !s.runEnded.IsZero():
		end = s.runEnded
	}
	return max(end.Sub(info.CreatedAt)-s.run.Paused(info.CreatedAt, end), 0)
}

// shownStatus is a session's status as the dashboard shows it: a session
// still pending, running or waiting in a run that has stopped (interrupted,
// or its process gone) is "stopped" until the run is resumed.
func (s *runState) shownStatus(info *event.SessionInfo) string {
	if unfinished(info.Status) && !s.runActive() {
		return "stopped"
	}
	return info.Status
}

// awaitingModel reports whether session id is waiting for its model's reply
// as far as the dashboard can tell (running, no tool running, not retrying
// a failed call, not waiting for the person, in a run that goes on), and
// since when: zero when the dashboard cannot tell.
func (s *runState) awaitingModel(id string) (since time.Time, ok bool) {
	n := s.sessions[id]
	if n == nil || n.info.Status != "running" || n.toolsOpen > 0 || n.info.Retrying != "" || n.info.WaitingHuman || !s.runActive() {
		return time.Time{}, false
	}
	return n.activeSince, true
}

// finishedIn counts the sessions a broadcast to target reaches ("" or
// "all": every session; otherwise a session and its subtree) that have
// completed or failed. A broadcast is passive: such a session reads it only
// if something wakes it, a message from the person among others.
func (s *runState) finishedIn(target string) int {
	finished := func(n *sessionNode) bool { return n.info.Status == "completed" || n.info.Status == "failed" }
	count := 0
	if target == "" || target == "all" {
		// Every session the dashboard knows, those still waiting for
		// their parent to appear among them.
		for _, n := range s.sessions {
			if finished(n) {
				count++
			}
		}
		return count
	}
	var walk func(n *sessionNode)
	walk = func(n *sessionNode) {
		if finished(n) {
			count++
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	if n := s.sessions[target]; n != nil {
		walk(n)
	}
	return count
}

// unfinished reports whether a session with status has yet to end: it goes
// on while its run does, and when the run resumes.
func unfinished(status string) bool {
	return status == "pending" || status == "running" || status == "waiting"
}

// feed is the bounded window of the broadcast feed, oldest first. Items are
// addressed by absolute position (base + index) so that dropping old items or
// loading older ones never moves what a pane points at.
type feed struct {
	items []event.BroadcastInfo
	base  int // absolute position of items[0]
	// limit is how many items to keep: feedKeep while the person follows the
	// live feed, more while they read back through history.
	limit int
	// total counts every broadcast the dashboard has seen, including those
	// dropped from memory since; with counted, every broadcast of the run,
	// those older than the snapshot too.
	total   int
	counted bool
	// lowest is the lowest absolute position ever held: items read back
	// from the store above it were seen (and counted) live, then dropped.
	lowest int

	olderDone    bool // the store has nothing older than items[0]
	loadingOlder bool
	// toFirst: home was pressed with older broadcasts in the store; they
	// are read page after page until the first is shown.
	toFirst bool
}

// older is how many broadcasts are older than the first in memory, as far
// as the dashboard knows: counted, all of the run's; otherwise those it
// saw and dropped (the store may hold more, which only a load finds).
func (f *feed) older() int {
	if f.counted {
		return max(f.total-len(f.items), 0)
	}
	return max(f.base-f.lowest, 0)
}

// room is how many more broadcasts the feed keeps while the person reads
// back: older ones beyond it stay in the store.
func (f *feed) room() int { return max(feedKeep+feedHistoryMax-len(f.items), 0) }

// toRead is how many older broadcasts home reads before it stops: those it
// knows of, as far as the feed has room.
func (f *feed) toRead() int { return min(f.older(), f.room()) }

func (f *feed) end() int { return f.base + len(f.items) }

func (f *feed) at(abs int) *event.BroadcastInfo {
	i := abs - f.base
	if i < 0 || i >= len(f.items) {
		return nil
	}
	return &f.items[i]
}

func (f *feed) append(b event.BroadcastInfo) {
	f.items = append(f.items, b)
	f.total++
	// Trim in chunks so that appending stays O(1) amortised.
	limit := f.limit
	if limit == 0 {
		limit = feedKeep
	}
	if len(f.items) > limit+limit/4 {
		f.trimFront(len(f.items) - limit)
	}
}

// trimFront drops the n oldest items.
func (f *feed) trimFront(n int) {
	if n <= 0 {
		return
	}
	n = min(n, len(f.items))
	f.items = append(f.items[:0:0], f.items[n:]...)
	f.base += n
	f.olderDone = false
}

// prepend adds older items read from the store.
func (f *feed) prepend(older []event.BroadcastInfo) {
	if len(older) == 0 {
		return
	}
	items := make([]event.BroadcastInfo, 0, len(older)+len(f.items))
	items = append(items, older...)
	f.items = append(items, f.items...)
	f.base -= len(older)
	if !f.counted && f.base < f.lowest {
		// Only those older than anything held before are new to the
		// count: the rest were counted as they arrived.
		f.total += f.lowest - f.base
	}
	f.lowest = min(f.lowest, f.base)
}
