package coordination

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The tag names are part of swarmdeck's public interface (DESIGN.md §3).
const (
	TagSiblingBroadcast     = "sibling_broadcast"
	TagSiblingTasks         = "sibling_tasks"
	TagNewSibling           = "new_sibling"
	TagTaskResult           = "task_result"
	TagTaskMessage          = "task_message"
	TagHumanMessage         = "human_message"
	TagHumanBroadcast       = "human_broadcast"
	TagAnnouncement         = "announcement"
	TagAnsweredOnYourBehalf = "answered_on_your_behalf"
	TagRunResumed           = "run_resumed"
	TagQuestion             = "question"
	// The snapshot of a session's history a shadow responder answers from.
	TagInstructions = "instructions"
	TagMessage      = "message"
)

// attr is one attribute of a formatted tag; a slice of them keeps the
// attribute order fixed, which a map would not.
type attr struct{ name, value string }

// element renders <name a="v" ...>\nbody\n</name>. body must already be
// escaped; attribute values are escaped here.
func element(name string, attrs []attr, body string) string {
	var b strings.Builder
	b.Grow(len(name)*2 + len(body) + 16 + 32*len(attrs))
	b.WriteByte('<')
	b.WriteString(name)
	for _, a := range attrs {
		b.WriteByte(' ')
		b.WriteString(a.name)
		b.WriteString(`="`)
		b.WriteString(EscapeAttr(a.value))
		b.WriteByte('"')
	}
	b.WriteString(">\n")
	b.WriteString(body)
	b.WriteString("\n</")
	b.WriteString(name)
	b.WriteByte('>')
	return b.String()
}

// formatTimestamp is the one timestamp form used in tags: RFC 3339, UTC,
// whole seconds ("2026-01-26T19:30:00Z").
func formatTimestamp(ts time.Time) string {
	return ts.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// FormatBroadcast renders a broadcast as a recipient's history shows it:
//
//	<sibling_broadcast from="researcher (r-1)" task_id="s-3f9a" category="discovery" timestamp="2026-01-26T19:30:00Z">
//	{message}
//	</sibling_broadcast>
//
// from, taskID and category are attribute-escaped and the message is
// body-escaped, so ParseBroadcasts returns exactly these values.
func FormatBroadcast(from, taskID, category string, ts time.Time, message string) string {
	return element(TagSiblingBroadcast, []attr{
		{"from", from},
		{"task_id", taskID},
		{"category", category},
		{"timestamp", formatTimestamp(ts)},
	}, EscapeBody(message))
}

// Broadcast is one <sibling_broadcast> found by ParseBroadcasts.
type Broadcast struct {
	From      string    `json:"from"`
	TaskID    string    `json:"task_id"`
	Category  string    `json:"category"`
	Timestamp time.Time `json:"timestamp"` // zero when absent or not RFC 3339
	Message   string    `json:"message"`
}

// ParseBroadcasts finds every <sibling_broadcast> in text, in order. It is
// tolerant: a tag with broken attribute syntax, without a closing tag, or
// with another opening tag inside its body is skipped, and a missing
// attribute is left empty. Exactly one newline after the opening tag and
// one before the closing tag are removed (FormatBroadcast adds them), and
// nothing else is trimmed, so ParseBroadcasts(FormatBroadcast(..., m))
// yields m unchanged. The runtime reads broadcasts from the store; this is
// for tests, fuzzing and tools that only have a transcript.
func ParseBroadcasts(text string) []Broadcast {
	var out []Broadcast
	for _, el := range scanElements(text, TagSiblingBroadcast) {
		b := Broadcast{
			From:     el.get("from"),
			TaskID:   el.get("task_id"),
			Category: el.get("category"),
			Message:  el.body,
		}
		if ts, err := time.Parse(time.RFC3339, el.get("timestamp")); err == nil {
			b.Timestamp = ts
		}
		out = append(out, b)
	}
	return out
}

// parsedElement is one tag found by scanElements, attributes and body
// already unescaped.
type parsedElement struct {
	attrs []attr
	body  string
}

func (e parsedElement) get(name string) string {
	for _, a := range e.attrs {
		if a.name == name {
			return a.value
		}
	}
	return ""
}

// scanElements finds <name ...>body</name> elements in text. A candidate
// that does not parse is skipped and scanning resumes right after its "<name",
// so a malformed tag can never hide a well-formed one that follows it.
func scanElements(text, name string) []parsedElement {
	open := "<" + name
	closing := "</" + name + ">"
	var out []parsedElement
	for i := 0; i < len(text); {
		j := strings.Index(text[i:], open)
		if j < 0 {
			break
		}
		afterName := i + j + len(open)
		i = afterName
		attrs, bodyStart, ok := parseAttrs(text, afterName)
		if !ok {
			continue
		}
		k := strings.Index(text[bodyStart:], closing)
		if k < 0 {
			continue
		}
		raw := text[bodyStart : bodyStart+k]
		if strings.Contains(raw, open) {
			// Escaped bodies never contain "<"; a nested opening tag means
			// this one was never closed, so let the scan reach the inner one.
			continue
		}
		raw = strings.TrimPrefix(raw, "\n")
		raw = strings.TrimSuffix(raw, "\n")
		out = append(out, parsedElement{attrs: attrs, body: Unescape(raw)})
		i = bodyStart + k + len(closing)
	}
	return out
}

// parseAttrs parses ` a="v" b="w">` starting at pos (just after the tag
// name) and returns the attributes and the index after '>'.
func parseAttrs(s string, pos int) ([]attr, int, bool) {
	if pos >= len(s) || (s[pos] != '>' && !isSpace(s[pos])) {
		return nil, 0, false // "<sibling_broadcasts" is a different tag
	}
	var attrs []attr
	for {
		for pos < len(s) && isSpace(s[pos]) {
			pos++
		}
		if pos >= len(s) {
			return nil, 0, false
		}
		if s[pos] == '>' {
			return attrs, pos + 1, true
		}
		start := pos
		for pos < len(s) && isNameByte(s[pos]) {
			pos++
		}
		if pos == start || pos+1 >= len(s) || s[pos] != '=' || s[pos+1] != '"' {
			return nil, 0, false
		}
		name := s[start:pos]
		pos += 2
		end := strings.IndexAny(s[pos:], `"<`)
		if end < 0 || s[pos+end] != '"' {
			return nil, 0, false
		}
		for _, a := range attrs {
			if a.name == name {
				return nil, 0, false
			}
		}
		attrs = append(attrs, attr{name, Unescape(s[pos : pos+end])})
		pos += end + 1
	}
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isNameByte(c byte) bool {
	return c == '_' || c == '-' || c == ':' || c == '.' ||
		('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// SiblingRow is one row of the <sibling_tasks> table.
type SiblingRow struct {
	TaskID string
	Agent  string // e.g. "researcher (research-1)"
	Title  string
}

// maxCellRunes bounds one table cell so a sibling with a huge title cannot
// blow up every other sibling's context.
const maxCellRunes = 200

// FormatSiblingTasks renders the passive table a new child receives:
//
//	<sibling_tasks>
//	You have sibling tasks working in parallel. You can communicate with them using:
//	- `task_broadcast`: Share discoveries with all siblings
//	- `task_send_message`: Send direct message to a specific sibling
//
//	| Task ID | Agent | Title |
//	|---------|-------|-------|
//	| s-3f9a | researcher (research-1) | Research the market |
//	</sibling_tasks>
//
// With maxRows >= 0 and more rows than that, the first maxRows are shown
// and a line "… and N more siblings (use task_siblings to list them all)"
// follows the table, so the output stays bounded however many siblings
// exist; with maxRows 0 only a line saying how many there are is left of
// the table. A maxRows below 0 shows every row. With no rows the tag says
// "You have no sibling tasks yet." instead of the table. Cells are made single-line, '|' becomes '\|', & < > are escaped,
// and a cell is cut at 200 characters.
func FormatSiblingTasks(rows []SiblingRow, maxRows int) string {
	return NewSiblingTable(rows).Without(-1, maxRows)
}

// SiblingTable is the <sibling_tasks> table of a family with each row
// rendered once. A parent spawning n children in one batch gives each the
// table of the others: rendering rows once keeps that at n rows rendered,
// not n², on the store's writer where the spawn runs.
type SiblingTable struct {
	rows  []SiblingRow
	lines []string // rendered on first use: a bounded table shows few rows
}

// NewSiblingTable returns the table of rows.
func NewSiblingTable(rows []SiblingRow) *SiblingTable {
	return &SiblingTable{rows: rows, lines: make([]string, len(rows))}
}

func (t *SiblingTable) line(i int) string {
	if t.lines[i] == "" {
		r := t.rows[i]
		t.lines[i] = "| " + tableCell(r.TaskID) + " | " + tableCell(r.Agent) + " | " + tableCell(r.Title) + " |"
	}
	return t.lines[i]
}

// Reach says which tools the recipient of a sibling table or announcement
// has to reach its siblings: task_broadcast (Broadcast), and
// task_send_message and task_siblings (Tasks). The text names only those:
// a session told of a tool it lacks calls it, and fails.
type Reach struct{ Broadcast, Tasks bool }

// FullReach is a recipient with every tool, the format as specified.
var FullReach = Reach{Broadcast: true, Tasks: true}

// intro is the table's first lines for r.
func (r Reach) intro() string {
	switch {
	case r.Broadcast && r.Tasks:
		return "You have sibling tasks working in parallel. You can communicate with them using:\n" +
			"- `task_broadcast`: Share discoveries with all siblings\n" +
			"- `task_send_message`: Send direct message to a specific sibling\n"
	case r.Broadcast:
		return "You have sibling tasks working in parallel. You can communicate with them using:\n" +
			"- `task_broadcast`: Share discoveries with all siblings\n"
	case r.Tasks:
		return "You have sibling tasks working in parallel. You can communicate with them using:\n" +
			"- `task_send_message`: Send direct message to a specific sibling\n"
	}
	return "You have sibling tasks working in parallel.\n"
}

// Without is FormatSiblingTasks of the table's rows less the row at skip
// (none when skip is outside them), bounded by maxRows the same way. It is
// not safe for concurrent use.
func (t *SiblingTable) Without(skip, maxRows int) string {
	return t.WithoutFor(skip, maxRows, FullReach)
}

// WithoutFor is Without for a recipient with the tools of r.
func (t *SiblingTable) WithoutFor(skip, maxRows int, r Reach) string {
	total := len(t.lines)
	if skip >= 0 && skip < total {
		total--
	} else {
		skip = -1
	}
	if total == 0 {
		return element(TagSiblingTasks, nil, "You have no sibling tasks yet.")
	}
	shown := total
	if maxRows >= 0 && total > maxRows {
		shown = maxRows
	}
	var b strings.Builder
	b.WriteString(r.intro())
	b.WriteString("\n")
	if shown == 0 {
		b.WriteString(siblings(total) + ", not listed here" + r.listAll())
		return element(TagSiblingTasks, nil, b.String())
	}
	b.WriteString("| Task ID | Agent | Title |\n")
	b.WriteString("|---------|-------|-------|")
	for i, n := 0, 0; n < shown; i++ {
		if i == skip {
			continue
		}
		b.WriteByte('\n')
		b.WriteString(t.line(i))
		n++
	}
	if n := total - shown; n > 0 {
		b.WriteString("\n… and " + strings.Replace(siblings(n), " ", " more ", 1) + r.listAll())
	}
	return element(TagSiblingTasks, nil, b.String())
}

// listAll points to task_siblings for the siblings a table leaves out.
func (r Reach) listAll() string {
	if !r.Tasks {
		return ""
	}
	return " (use task_siblings to list them all)"
}

// siblings is "1 sibling", "2 siblings".
func siblings(n int) string {
	if n == 1 {
		return "1 sibling"
	}
	return strconv.Itoa(n) + " siblings"
}

// tableCell makes s safe as one markdown table cell inside a tag.
func tableCell(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	n := 0
	space := false // collapse runs of whitespace and control characters
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size // an invalid byte decodes to U+FFFD, which is what we print
		if isControl(r) || r == ' ' {
			space = true
			continue
		}
		if n >= maxCellRunes {
			b.WriteString("…")
			return b.String()
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
			n++
		}
		space = false
		switch r {
		case '|':
			b.WriteString(`\|`)
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
		n++
	}
	return b.String()
}

// FormatNewSibling renders the passive announcement existing siblings get
// when a new child joins the family:
//
//	<new_sibling task_id="s-9c1d" agent="executor (writer)" title="Write the summary">
//	A new sibling task has been created. You can communicate with it using `task_broadcast` or `task_send_message`.
//	</new_sibling>
func FormatNewSibling(taskID, agent, title string) string {
	return FormatNewSiblingFor(taskID, agent, title, FullReach)
}

// FormatNewSiblingFor is FormatNewSibling for a recipient with the tools
// of r.
func FormatNewSiblingFor(taskID, agent, title string, r Reach) string {
	body := "A new sibling task has been created."
	switch {
	case r.Broadcast && r.Tasks:
		body += " You can communicate with it using `task_broadcast` or `task_send_message`."
	case r.Broadcast:
		body += " You can communicate with it using `task_broadcast`."
	case r.Tasks:
		body += " You can communicate with it using `task_send_message`."
	}
	return element(TagNewSibling, []attr{
		{"task_id", taskID},
		{"agent", agent},
		{"title", title},
	}, body)
}

// FormatTaskResult renders a child's outcome as delivered to its parent:
//
//	<task_result task_id="s-3f9a" agent="researcher" status="completed">
//	{body}
//	</task_result>
//
// status comes from the runtime, never from the model's words.
func FormatTaskResult(taskID, agent, status, body string) string {
	return element(TagTaskResult, []attr{
		{"task_id", taskID},
		{"agent", agent},
		{"status", status},
	}, EscapeBody(body))
}

// FormatTaskMessage renders a direct message sent with task_send_message:
//
//	<task_message from="researcher (r-1)" task_id="s-3f9a">
//	{body}
//	</task_message>
//
// taskID is the sender's id, so the recipient can answer it.
func FormatTaskMessage(from, taskID, body string) string {
	return element(TagTaskMessage, []attr{
		{"from", from},
		{"task_id", taskID},
	}, EscapeBody(body))
}

// FormatHumanMessage renders a message typed by the person at the keyboard:
//
//	<human_message>
//	{body}
//	</human_message>
func FormatHumanMessage(body string) string {
	return element(TagHumanMessage, nil, EscapeBody(body))
}

// FormatHumanBroadcast renders a broadcast injected by the person:
//
//	<human_broadcast category="context">
//	{body}
//	</human_broadcast>
func FormatHumanBroadcast(category, body string) string {
	return element(TagHumanBroadcast, []attr{{"category", category}}, EscapeBody(body))
}

// HumanText is what the person typed, recovered by ParseHuman from a
// message the runtime made of it.
type HumanText struct {
	Text      string
	Broadcast bool   // made by FormatHumanBroadcast, else by FormatHumanMessage
	Category  string // of a broadcast
}

// ParseHuman recovers what the person typed from the text of
// FormatHumanMessage or FormatHumanBroadcast, so that it can be shown as
// typed while the model keeps reading the escaped form. ok is false for any
// other text: content must be exactly what the format would make of the
// recovered text, so a message that only resembles one is never rewritten.
func ParseHuman(content string) (h HumanText, ok bool) {
	for _, tag := range []string{TagHumanMessage, TagHumanBroadcast} {
		el, ok := soleElement(content, tag)
		if !ok {
			continue
		}
		h = HumanText{Text: el.body}
		want := FormatHumanMessage(h.Text)
		if tag == TagHumanBroadcast {
			h.Broadcast, h.Category = true, el.get("category")
			want = FormatHumanBroadcast(h.Category, h.Text)
		}
		if want != content {
			return HumanText{}, false
		}
		return h, true
	}
	return HumanText{}, false
}

// soleElement parses content as one element named tag, when it starts as
// one. The caller still checks that the format would write content exactly
// as it is: scanning is tolerant, the check is what makes it strict.
func soleElement(content, tag string) (parsedElement, bool) {
	if !strings.HasPrefix(content, "<"+tag) {
		return parsedElement{}, false
	}
	els := scanElements(content, tag)
	if len(els) != 1 {
		return parsedElement{}, false
	}
	return els[0], true
}

// Delivered is what an agent's message or result said, recovered by
// ParseDelivered from the tag the runtime wrapped it in.
type Delivered struct {
	Tag      string // TagTaskResult, TagTaskMessage, TagSiblingBroadcast, TagAnnouncement, TagNewSibling, TagSiblingTasks, TagAnsweredOnYourBehalf or TagRunResumed
	From     string // the sender's display name (the asker's, for an answer given on the session's behalf); empty for a task result or a new sibling
	TaskID   string // the sender's (or the new sibling's) task id
	Agent    string // a task result's or a new sibling's agent
	Status   string // a task result's status
	Category string // a broadcast's category
	Title    string // a new sibling's title
	Question string // the id of the question answered on the session's behalf
	Failure  string // why the run failed, in a run_resumed note
	Body     string // unescaped
}

// ParseDelivered recovers the parts of a <task_result>, <task_message>,
// <sibling_broadcast>, <announcement>, <new_sibling>, <sibling_tasks>,
// <answered_on_your_behalf> or <run_resumed> as FormatTaskResult,
// FormatTaskMessage, FormatBroadcast, FormatAnnouncement, FormatNewSibling,
// FormatSiblingTasks, FormatShadowNote or FormatRunResumed wrote it, so
// that a person can read the body as its author wrote it while the model
// keeps reading the escaped form. As with
// ParseHuman, ok is false unless content is exactly what the format makes
// of the parts.
func ParseDelivered(content string) (d Delivered, ok bool) {
	for _, tag := range []string{TagTaskResult, TagTaskMessage, TagSiblingBroadcast, TagAnnouncement, TagNewSibling, TagSiblingTasks, TagAnsweredOnYourBehalf, TagRunResumed} {
		el, ok := soleElement(content, tag)
		if !ok {
			continue
		}
		d = Delivered{Tag: tag, From: el.get("from"), TaskID: el.get("task_id"), Body: el.body}
		var want string
		switch tag {
		case TagTaskResult:
			d.Agent, d.Status = el.get("agent"), el.get("status")
			want = FormatTaskResult(d.TaskID, d.Agent, d.Status, d.Body)
		case TagTaskMessage:
			want = FormatTaskMessage(d.From, d.TaskID, d.Body)
		case TagNewSibling:
			d.Agent, d.Title = el.get("agent"), el.get("title")
			want = FormatNewSibling(d.TaskID, d.Agent, d.Title)
		case TagSiblingTasks:
			// A table of cells escaped one by one escapes as a whole.
			want = element(TagSiblingTasks, nil, EscapeBody(d.Body))
		case TagAnsweredOnYourBehalf:
			d.From, d.Question = el.get("asked_by"), el.get("question_id")
			question, answer, _ := strings.Cut(strings.TrimPrefix(d.Body, shadowNoteIntro+"Question: "), "\n"+shadowNoteAnswer)
			want = shadowNote(d.Question, d.From, question, answer)
		case TagRunResumed:
			d.Failure = el.get("failure")
			want = element(TagRunResumed, []attr{{"failure", d.Failure}}, EscapeBody(d.Body))
		default:
			ts, err := time.Parse(time.RFC3339, el.get("timestamp"))
			if err != nil {
				return Delivered{}, false
			}
			if tag == TagAnnouncement {
				want = FormatAnnouncement(d.From, d.TaskID, d.Body, ts)
			} else {
				d.Category = el.get("category")
				want = FormatBroadcast(d.From, d.TaskID, d.Category, ts, d.Body)
			}
		}
		if want != content {
			return Delivered{}, false
		}
		return d, true
	}
	return Delivered{}, false
}

// FormatAnnouncement renders an announce() FYI seen at the next turn:
//
//	<announcement from="executor (e-1)" task_id="s-77aa" timestamp="2026-01-26T19:30:00Z">
//	{body}
//	</announcement>
func FormatAnnouncement(from, taskID, body string, ts time.Time) string {
	return element(TagAnnouncement, []attr{
		{"from", from},
		{"task_id", taskID},
		{"timestamp", formatTimestamp(ts)},
	}, EscapeBody(body))
}

const (
	shadowNoteIntro = "Another agent asked a question while you were working. " +
		"It was answered on your behalf from your conversation so far; no reply is needed.\n"
	shadowNoteAnswer = "Answer given on your behalf: "
)

// FormatRunResumed renders the passive note a session gets when its failed
// run is resumed and children it was told had failed come back (sessions),
// or calls of its own that the failure cut short (calls, each a tool's
// name and its call id):
//
//	<run_resumed failure="LLM server refused the request: insufficient_quota ...">
//	The run failed and was resumed once the cause was fixed. These sessions are running again and each will report when it finishes: researcher (r-1) s-3f9a, coder s-77c1. A task_result above that says one of them failed or was cancelled no longer stands.
//	These calls of yours were cut short by the failure and did not run to their end: sessions_spawn (call_7), ask_others (call_8). Make again those whose work is still needed.
//	</run_resumed>
//
// The first line goes when no session came back, the second when no call
// was cut short.
func FormatRunResumed(failure string, sessions, calls []string) string {
	var lines []string
	if len(sessions) > 0 {
		lines = append(lines, runResumedIntro+strings.Join(sessions, ", ")+". "+runResumedEnd)
	}
	if len(calls) > 0 {
		if len(sessions) == 0 {
			lines = append(lines, runResumedFailed)
		}
		lines = append(lines, runResumedCalls+strings.Join(calls, ", ")+". "+runResumedCallsEnd)
	}
	return element(TagRunResumed, []attr{{"failure", failure}}, EscapeBody(strings.Join(lines, "\n")))
}

const (
	runResumedIntro    = "The run failed and was resumed once the cause was fixed. These sessions are running again and each will report when it finishes: "
	runResumedEnd      = "A task_result above that says one of them failed or was cancelled no longer stands."
	runResumedFailed   = "The run failed and was resumed once the cause was fixed."
	runResumedCalls    = "These calls of yours were cut short by the failure and did not run to their end: "
	runResumedCallsEnd = "Make again those whose work is still needed."
)

// FormatShadowNote renders the passive note a session gets after a shadow
// responder answered an ask_others question on its behalf, so its later
// turns stay consistent with what others were told:
//
//	<answered_on_your_behalf question_id="q-12" asked_by="planner (p-1)">
//	Another agent asked a question while you were working. It was answered on your behalf from your conversation so far; no reply is needed.
//	Question: {question}
//	Answer given on your behalf: {answer}
//	</answered_on_your_behalf>
//
// The question is put on one line, so that no line of it reads as the
// note's own answer line.
func FormatShadowNote(questionID, asker, question, answer string) string {
	return shadowNote(questionID, asker, oneLine(question), answer)
}

// shadowNote is FormatShadowNote with the question as given: notes stored
// before questions were put on one line parse as written.
func shadowNote(questionID, asker, question, answer string) string {
	body := shadowNoteIntro + "Question: " + EscapeBody(question) + "\n" + shadowNoteAnswer + EscapeBody(answer)
	return element(TagAnsweredOnYourBehalf, []attr{
		{"question_id", questionID},
		{"asked_by", asker},
	}, body)
}

// FormatHistoryMessage renders one message of the history snapshot a
// shadow responder answers from. Its text (a file a tool read, another
// agent's words) is escaped, so that it cannot end the element and pose
// as another message, the session's instructions or the question.
//
//	<message role="tool">
//	launch notes
//	</message>
func FormatHistoryMessage(role, text string) string {
	return element(TagMessage, []attr{{"role", role}}, EscapeBody(text))
}

// FormatInstructions renders a session's system prompt in the snapshot of
// its history; it holds its parent's words (the shared context), so it is
// escaped as the messages are.
func FormatInstructions(text string) string {
	return element(TagInstructions, nil, EscapeBody(text))
}

// FormatShadowQuestion renders a question as a shadow responder reads it,
// after the snapshot of the history it answers from. The question and its
// options are the asker's text: escaped in an element, they cannot pass
// for the snapshot, the instructions or another message.
//
//	<question from="planner (p-1)">
//	Which database?
//	Options:
//	- a: SQLite
//	- b: Postgres
//	</question>
func FormatShadowQuestion(asker, question string, options []string) string {
	body := EscapeBody(question)
	if len(options) > 0 {
		body += "\nOptions:"
		for _, o := range options {
			body += "\n- " + EscapeBody(oneLine(o))
		}
	}
	return element(TagQuestion, []attr{{"from", asker}}, body)
}

// oneLine joins the lines of s with spaces.
func oneLine(s string) string { return lineBreaks.Replace(s) }

var lineBreaks = strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ")
