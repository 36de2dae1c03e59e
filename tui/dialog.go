package tui

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/textinput"
	"github.com/charmbracelet/x/ansi"
)

// dialogKind is the dialog open at the bottom of the screen. Dialogs are
// sheets docked above the footer: the panes shrink but stay visible and keep
// updating while the person types.
type dialogKind int

const (
	dialogNone dialogKind = iota
	dialogBroadcast
	dialogMessage
	dialogAnswer
	dialogConfirm
)

type confirmKind int

const (
	confirmQuit confirmKind = iota + 1
	confirmCancel
	confirmSkipAll
)

// categories of a human broadcast, in the order ctrl+t cycles them.
var categories = []string{"discovery", "warning", "context", "blocker"}

type dialog struct {
	kind    dialogKind
	input   textinput.Model
	sending bool   // the call is in flight; keys other than back are ignored
	err     string // why the last send failed, shown in the dialog
	// dropUntil: the send failed just now, and until then keys typed on
	// without a pause are dropped (dropped counts them): they were meant
	// for what the person expected next, a new dialog, not for this text.
	dropUntil time.Time
	dropped   int

	target   string // session the dialog is about (subtree, message, cancel)
	subtree  bool   // broadcast to target's subtree instead of all
	category int
	noReply  bool

	questionID string
	restored   bool // the input holds a draft kept from before
	// joined: text of several lines was pasted, and went in as one line
	// (the input has one), which the sheet says until it closes.
	joined  bool
	confirm confirmKind
	// back is the dialog a confirmation was asked from (skip all, from the
	// answer dialog): "no" returns to it with what was typed.
	back *dialog
}

// openDialog opens a dialog with a fresh, focused text input.
func (m *model) openDialog(d dialog) {
	in := textinput.New()
	in.SetStyles(m.styles.input)
	in.Prompt = "> "
	// No limit here: a cut would drop the end of a pasted text without a
	// word. The runtime refuses a text over its limit and says how long it
	// is, which the dialog shows with the text kept for editing.
	in.CharLimit = 0
	in.SetWidth(dialogInputWidth(m.width))
	in.Focus()
	if dr, ok := m.drafts[draftKey(&d)]; ok {
		in.SetValue(dr.text)
		in.CursorEnd()
		d.restored = true
		// What was chosen comes back with the text: one enter must not
		// send it to everyone, or wake a session, against that choice.
		d.category, d.noReply = dr.category, dr.noReply
		if dr.subtree && dr.target != "" {
			d.subtree, d.target = true, dr.target
		}
	}
	d.input = in
	m.dialog = d
	m.showHelp = false
	if m.status.err || m.status.note {
		// A refusal or a note was about what came before the dialog; an
		// outcome (a skip that went through) still stands.
		m.status = statusLine{}
	}
}

// dialogInputWidth is the width of a dialog's text input on a screen w
// cells wide: the sheet's border and margins, the prompt and the cursor.
func dialogInputWidth(w int) int { return max(w-8, 10) }

// inputView is a text input as drawn. The input measures what the person
// types by its own tables (uniseg, go-runewidth, by grapheme cluster) and
// keeps the text as typed; on screen its emoji sequences are shown as
// plainEmoji shows them, in the cells the input has as the frame measures
// them (see graphemes), without an ellipsis in place of its padding. When
// the text in sight is wider so measured and the cursor is at the end (the
// person is typing), the start of it gives way, so what was just typed
// stays on screen.
func inputView(in *textinput.Model) string {
	v := in.View()
	if _, narrow := narrowWidth(v); narrow {
		return v
	}
	v = plainEmoji(v)
	prompt := cellWidth(in.Prompt)
	room := prompt + in.Width() + 1 // +1: the cursor after the text
	if value := in.Value(); in.Position() == utf8.RuneCountInString(value) {
		// The text ends where its padding starts, with the spaces typed
		// last (in sight with the emoji before them); the cursor takes one
		// cell more.
		typed := len(value) - len(strings.TrimRight(value, " "))
		if over := cellWidth(strings.TrimRight(ansi.Strip(v), " ")) + typed + 1 - room; over > 0 {
			head, tail := truncate(v, prompt, ""), truncateLeft(v, prompt+over, "")
			if cellWidth(tail) > cellWidth(v)-prompt-over {
				// A wide character astride the cut is kept whole: it
				// goes whole instead.
				tail = truncateLeft(v, prompt+over+1, "")
			}
			v = head + tail
		}
	}
	return truncate(v, room, "")
}

// resizeInput gives a text input a new width and keeps the cursor where it
// was. The input only recomputes which part of its text is in sight when
// the cursor leaves it, so the text is set again from an empty one: the
// part in sight is worked out anew for the new width.
func resizeInput(in *textinput.Model, w int) {
	if in.Width() == w {
		return
	}
	v, pos := in.Value(), in.Position()
	in.SetWidth(w)
	in.SetValue("")
	in.SetValue(v)
	in.SetCursor(pos)
}

// draftKey names the dialog a draft belongs to: the broadcast, the
// message to one session, the answer to one question; "" for a dialog
// without text.
func draftKey(d *dialog) string {
	switch d.kind {
	case dialogBroadcast:
		return "broadcast"
	case dialogMessage:
		return "message " + d.target
	case dialogAnswer:
		return "answer " + d.questionID
	}
	return ""
}

// draft is what a dialog closed with esc held: its text and its choices.
type draft struct {
	text     string
	target   string // the broadcast's subtree
	subtree  bool
	category int
	noReply  bool
}

// keepDraft keeps what the open dialog holds, for the next time the same
// dialog opens: esc on a long answer must not lose it.
func (m *model) keepDraft() {
	d := &m.dialog
	k := draftKey(d)
	if k == "" {
		return
	}
	if v := d.input.Value(); strings.TrimSpace(v) != "" {
		if m.drafts == nil {
			m.drafts = map[string]draft{}
		}
		m.drafts[k] = draft{text: v, target: d.target, subtree: d.subtree, category: d.category, noReply: d.noReply}
	} else {
		delete(m.drafts, k)
	}
}

func (m *model) closeDialog() {
	m.dialog = dialog{}
	if m.status.ofDialog {
		// Its error was about what the dialog held; it is gone with it.
		m.status = statusLine{}
	}
}

// sheetLines renders the open dialog as a framed sheet of the full width;
// nil when there is none. (The `?` sheet scrolls, so layout draws it once it
// knows its height: see helpSheet.)
func (m *model) sheetLines(w int) []string {
	if w < minWidth {
		return nil
	}
	s := &m.styles
	k := &m.keys
	d := &m.dialog
	// The text of the sheet keeps a column of space from either border.
	inner := w - 4
	var title string
	var body []string
	radio := func(on bool, text string) string {
		if on {
			return s.accent.Render(s.g.chosen + " " + text)
		}
		return s.dim.Render(s.g.notChosen + " " + text)
	}
	// The keys of a dialog are in the footer; the sheet only says what is
	// happening.
	notes := func() []string {
		var out []string
		if d.restored {
			out = append(out, s.dim.Render("what you typed before"+s.g.sep+"ctrl+u clears it"))
		}
		if d.joined {
			out = append(out, s.dim.Render("pasted: its line breaks became spaces"))
		}
		if d.err != "" {
			out = append(out, s.errText.Render(s.g.failed+" "+oneLine(d.err)))
		}
		if d.dropped > 0 {
			what := "a key typed right after it was dropped"
			if d.dropped > 1 {
				what = fmtCount(d.dropped) + " keys typed right after it were dropped"
			}
			out = append(out, s.dim.Render(what+s.g.sep+"the text above is as it was sent"))
		}
		if d.sending {
			out = append(out, s.dim.Render("sending"+s.g.ellipsis))
		}
		return out
	}

	switch d.kind {
	case dialogBroadcast:
		title = "Broadcast"
		sub := "subtree of " + m.st.sessionName(d.target) + s.g.sep + d.target
		if d.target == "" {
			sub = "subtree (select a session first)"
		}
		body = append(body,
			"to:       "+radio(!d.subtree, "all sessions")+"   "+radio(d.subtree, sub)+s.dim.Render("   ("+label(k.ToggleTarget)+")"),
		)
		cats := make([]string, len(categories))
		for i, c := range categories {
			cats[i] = radio(i == d.category, c)
		}
		body = append(body, "category: "+strings.Join(cats, "  ")+s.dim.Render("   ("+label(k.CycleCategory)+")"))
		body = append(body, inputView(&d.input))
		body = append(body, notes()...)
	case dialogMessage:
		// The id goes first where the title is short: cut, it would read
		// as another session's.
		title = fitItems(titleRoom(w), s.g.sep, whole("Message "+m.st.sessionName(d.target)), item{{0, d.target}, {1, ""}})
		mode := radio(!d.noReply, "wake the session") + "   " + radio(d.noReply, "no-reply: deliver passively at its next turn")
		body = append(body, "delivery: "+mode+s.dim.Render("   ("+label(k.ToggleNoReply)+")"))
		body = append(body, inputView(&d.input))
		body = append(body, notes()...)
	case dialogAnswer:
		q, i, ok := m.st.question(d.questionID)
		if !ok {
			return nil
		}
		from := oneLine(q.From)
		if from == "" {
			from = m.st.sessionRef(q.FromSession)
		}
		title = "Question " + strconv.Itoa(i+1) + " of " + strconv.Itoa(len(m.st.questions)) + s.g.sep + "from " + from
		qlines := wrap(clean(q.Question), inner)
		if len(qlines) > 6 {
			qlines = append(qlines[:5], s.g.ellipsis)
		}
		var opts []string
		how := ""
		if len(q.Options) > 0 {
			var items []string
			for j, o := range q.Options {
				opt := strconv.Itoa(j+1) + ". " + oneLine(o.Label)
				if o.ID != "" && o.ID != o.Label {
					opt += s.dim.Render(" [" + oneLine(o.ID) + "]")
				}
				items = append(items, opt)
			}
			opts = packColumns(items, inner, "   ")
			how = "type a number or an id, or free text"
			if q.MultiSelect {
				how = "type one or more numbers or ids (1,3), or free text"
			}
		}
		remembered := ""
		if q.Remembered != "" {
			// On one line: a long answer given before must not push the
			// question and its options out of the sheet (the key puts it
			// in whole).
			head, tail := "you answered this before: ", "  ("+label(k.UseRemembered)+" to use it)"
			open, end := s.g.quoteOpen, s.g.quoteClose
			room := max(inner-cellWidth(head+open+end+tail), 10)
			remembered = s.dim.Render(head) + open + s.g.trunc(oneLine(q.Remembered), room) + end + s.dim.Render(tail)
		}
		end := append([]string{inputView(&d.input)}, notes()...)
		qlines, opts, how, remembered = m.fitAnswer(inner, qlines, opts, how, remembered, rowsOf(end, inner))
		for _, l := range qlines {
			body = append(body, s.bold.Render(l))
		}
		body = append(body, opts...)
		if how != "" {
			body = append(body, s.dim.Render(how))
		}
		if remembered != "" {
			body = append(body, remembered)
		}
		body = append(body, end...)
	case dialogConfirm:
		title, body = m.confirmText()
	default:
		return nil
	}
	// Long lines (a question, the quit notice) wrap inside the sheet.
	var lines []string
	for _, l := range body {
		for _, wl := range strings.Split(wrapText(l, inner), "\n") {
			lines = append(lines, " "+wl)
		}
	}
	return s.box(title, lines, w, len(lines)+2, true)
}

// rowsOf is how many rows lines take in a sheet whose text is inner wide.
func rowsOf(lines []string, inner int) int {
	n := 0
	for _, l := range lines {
		n += strings.Count(wrapText(l, inner), "\n") + 1
	}
	return n
}

// fitAnswer shortens the answer sheet's parts to the rows the terminal
// leaves it, besides the fixed rows its input and notes take: the answer
// already given goes first, then the question keeps one row, then the
// options their first rows with a count of the rest. What is left always
// starts with the question, so the person knows what the options answer.
func (m *model) fitAnswer(inner int, q, opts []string, how, remembered string, fixed int) ([]string, []string, string, string) {
	room := computeLayout(m.width, m.height, m.chrome(1<<20)).sheet.h - 2 - fixed
	s := &m.styles
	used := func() int {
		n := len(q) + rowsOf(opts, inner)
		if how != "" {
			n += rowsOf([]string{how}, inner)
		}
		if remembered != "" {
			n += rowsOf([]string{remembered}, inner)
		}
		return n
	}
	if used() <= room {
		return q, opts, how, remembered
	}
	remembered = ""
	shrinkQuestion := func(most int) {
		if over := used() - room; over > 0 && len(q) > most {
			keep := max(len(q)-over, most)
			q = append(q[:keep-1:keep-1], s.g.trunc(strings.TrimSuffix(q[keep-1], s.g.ellipsis)+" "+s.g.ellipsis, inner))
		}
	}
	// Rows of options go from the end, counted on the line of how to
	// answer (which they may make a row longer).
	all, rest := opts, how
	shrinkOptions := func(least int) {
		for keep := len(opts) - 1; keep >= least && used() > room; keep-- {
			opts = all[:keep:keep]
			how = plural(len(all)-keep, "row of options", "rows of options") + " not shown (a taller terminal shows them)" + s.g.sep + rest
			if keep == 0 {
				// Short, to take one row: with no option in sight, how to
				// pick one is no help.
				how = "options not shown (" + plural(len(all), "row", "rows") + "): needs a taller terminal"
			}
		}
	}
	// The question matters most, then at least one row of options.
	shrinkQuestion(3)
	shrinkOptions(1)
	shrinkQuestion(1)
	shrinkOptions(0)
	return q, opts, how, remembered
}

// confirmText is the question of a y/n confirmation.
func (m *model) confirmText() (string, []string) {
	s := &m.styles
	d := &m.dialog
	yes, no := label(m.keys.Yes), label(m.keys.No)
	switch d.confirm {
	case confirmQuit:
		id := m.st.run.ID
		return "Quit?", []string{
			"The run " + id + " is still running. Quitting stops its agents where they are; the run stays stored, and this continues it:",
			// On a line of its own, so that wrapping the sentence does not
			// break the command at one of its hyphens.
			s.bold.Render(m.resumeCommand()),
			s.dim.Render(yes + " quit" + s.g.sep + no + " stay"),
		}
	case confirmCancel:
		n := m.st.sessions[d.target]
		what := m.st.sessionName(d.target) + s.g.sep + d.target
		desc := 0
		if n != nil {
			desc = n.descendants
		}
		text := "Cancel " + what
		if desc > 0 {
			text += " and its " + plural(desc, "descendant session", "descendant sessions")
		}
		text += "?"
		if n != nil && n.parent == nil {
			// The root is the run: cancelling it ends the run for good.
			text += " It is the root session: the whole run ends, cancelled."
		}
		return "Cancel session?", []string{text, s.dim.Render(yes + " cancel" + s.g.sep + no + " keep running")}
	case confirmSkipAll:
		ask := "Stop agents asking you anything for the rest of this run? They go on without your answers."
		if n := len(m.st.questions); n > 0 {
			ask = "Skip " + plural(n, "open question", "open questions") + " and stop asking you for the rest of this run?"
		}
		return "Skip all questions?", []string{
			ask,
			s.dim.Render(yes + " skip all" + s.g.sep + no + " keep answering"),
		}
	}
	return "", nil
}

// packColumns lays short items out in as many rows as needed to fit width.
func packColumns(items []string, width int, sep string) []string {
	var rows []string
	cur := ""
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case cellWidth(cur)+len(sep)+cellWidth(it) <= width:
			cur += sep + it
		default:
			rows = append(rows, cur)
			cur = it
		}
	}
	if cur != "" {
		rows = append(rows, cur)
	}
	return rows
}
