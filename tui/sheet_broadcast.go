package tui

import (
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// broadcastSheet is one broadcast read in full: enter on the feed opens it,
// since a feed row is cut to the pane's width. It holds a copy, so that the
// broadcast stays readable when the bounded feed drops it meanwhile.
type broadcastSheet struct {
	open   bool
	b      event.BroadcastInfo
	scroll sheetScroll
	// follow is whether the feed followed the newest broadcast when the
	// sheet opened. The feed stops following while it is open, so that the
	// row marked in the pane stays the one the sheet shows; closing it
	// resumes following.
	follow bool
}

// openBroadcastSheet shows b in full.
func (m *model) openBroadcastSheet(b event.BroadcastInfo) {
	m.detail = broadcastSheet{open: true, b: b, follow: m.broadcasts.follow}
	m.broadcasts.follow = false
	m.showHelp = false
}

func (m *model) closeBroadcastSheet() {
	if m.detail.follow {
		m.broadcasts.toBottom()
	}
	m.detail = broadcastSheet{}
}

// broadcastSheetKey handles keys while the sheet is open: the moving keys
// scroll it, enter goes on to the sender's transcript, back closes it and
// quit quits, as from the `?` sheet. It is about one broadcast, so the keys
// of the panes behind it do nothing until it closes.
func (m *model) broadcastSheetKey(k tea.KeyPressMsg) tea.Cmd {
	keys := &m.keys
	switch {
	case key.Matches(k, keys.Back):
		m.closeBroadcastSheet()
	case key.Matches(k, keys.Quit):
		return m.askQuit()
	case key.Matches(k, keys.Open):
		id := m.detail.b.FromSession
		switch {
		case id == "":
			m.setNote("a person sent this: there is no transcript to open")
			return nil
		case m.st.sessions[id] == nil:
			m.setNote("no transcript to open: " + id + " is not in this run's tree")
			return nil
		}
		m.comeBackHere()
		m.closeBroadcastSheet()
		return m.openSession(id)
	default:
		m.detail.scroll.key(k, keys)
	}
	return nil
}

// broadcastSender is who sent b, as the feed names it.
func (m *model) broadcastSender(b *event.BroadcastInfo) string {
	if from := oneLine(b.From); from != "" {
		return from
	}
	if b.FromSession != "" {
		return m.st.sessionRef(b.FromSession)
	}
	return "human"
}

// sessionRef names a session with its id, which the tree does not show.
func (m *model) sessionRef(id string) string {
	if m.st.sessions[id] == nil {
		return id
	}
	return m.st.sessionName(id) + m.styles.g.sep + id
}

// broadcastTarget says whom b was for, in words: the target as the runtime
// reads it for each kind (an agent's "all" is its siblings and children; a
// person's broadcast to a session is to its subtree).
func (m *model) broadcastTarget(b *event.BroadcastInfo) string {
	from := m.broadcastSender(b)
	switch b.Target {
	case "", "all":
		if b.Kind == event.KindBroadcast {
			return "all: the siblings and children of " + from
		}
		return "all sessions"
	case "siblings":
		return "siblings of " + from
	case "children":
		return "children of " + from
	}
	if b.Kind == event.KindHuman && b.Category != "" {
		return "subtree of " + m.sessionRef(b.Target)
	}
	return m.sessionRef(b.Target)
}

// broadcastKind is the category of b and what kind of message it is.
func broadcastKind(g *glyphs, b *event.BroadcastInfo) string {
	cat := b.Category
	if cat == "" {
		cat = "none"
	}
	var kind string
	switch b.Kind {
	case event.KindBroadcast:
		kind = "broadcast"
	case event.KindAnnounce:
		kind = "announcement"
	case event.KindMessage:
		kind = "direct message"
	case event.KindHuman:
		kind = "human broadcast"
		if b.Category == "" {
			kind = "human message"
		}
	default:
		kind = oneLine(b.Kind)
	}
	if b.NoReply && (b.Kind == event.KindMessage || (b.Kind == event.KindHuman && b.Category == "")) {
		kind += ", no-reply"
	}
	return cat + g.sep + kind
}

// broadcastContent is the body of the sheet for lines of width cells: the
// fields, the whole message as written (its own line breaks kept), then who
// received it by name. The message comes before the names, which can be
// hundreds in a large run. Lines break between words, so that no name is
// split at the hyphen of its label.
func (m *model) broadcastContent(width int) []string {
	s := &m.styles
	b := &m.detail.b
	const labelW = len("category: ")
	var out []string
	field := func(name, value string) {
		for i, l := range wrapWords(oneLine(value), max(width-labelW, 1)) {
			head := strings.Repeat(" ", labelW)
			if i == 0 {
				head = s.dim.Render(s.g.fit(name+":", labelW))
			}
			out = append(out, head+l)
		}
	}

	when := "unknown"
	if !b.Timestamp.IsZero() {
		when = b.Timestamp.In(m.loc).Format("2006-01-02 15:04:05") + s.g.sep + fmtDuration(m.now().Sub(b.Timestamp)) + " ago"
	}
	field("time", when)
	from := m.broadcastSender(b)
	if b.FromSession != "" && !strings.Contains(from, b.FromSession) {
		// An unlabelled session's name holds its id already.
		from += s.g.sep + b.FromSession
	}
	field("from", from)
	field("to", m.broadcastTarget(b))
	field("category", broadcastKind(s.g, b))
	field("reached", plural(len(b.Recipients), "session", "sessions"))

	out = append(out, "")
	out = append(out, wrapWords(clean(b.Message), width)...)

	if len(b.Recipients) > 0 {
		names := make([]string, len(b.Recipients))
		for i, id := range b.Recipients {
			names[i] = oneLine(m.st.sessionRef(id))
		}
		out = append(out, "")
		for _, l := range wrapWords("received by "+strings.Join(names, ", "), width) {
			out = append(out, s.dim.Render(l))
		}
	}
	return out
}

// broadcastSheetLines is the sheet in h rows.
func (m *model) broadcastSheetLines(content []string, w, h int) []string {
	title := "Broadcast"
	if b := &m.detail.b; b.Kind == event.KindMessage || (b.Kind == event.KindHuman && b.Category == "") {
		title = "Message"
	}
	return m.scrollSheet(title, content, w, h, &m.detail.scroll, label(m.keys.Back)+" closes this")
}

// broadcastSheetHelp is the footer while the sheet is open.
func (k keyMap) broadcastSheetHelp(sender bool) (full, short []key.Binding) {
	scroll := pair(k.Up, k.Down, "scroll")
	closeSheet := key.NewBinding(key.WithKeys(k.Back.Keys()...), key.WithHelp(label(k.Back), "close"))
	full = []key.Binding{scroll, pair(k.PageUp, k.PageDown, "page"), pair(k.Top, k.Bottom, "first/last")}
	short = []key.Binding{scroll}
	if sender {
		open := key.NewBinding(key.WithKeys(k.Open.Keys()...), key.WithHelp(label(k.Open), "open sender"))
		full, short = append(full, open), append(short, open)
	}
	full = append(full, closeSheet, k.Quit)
	short = append(short, closeSheet, k.Quit)
	return full, short
}
