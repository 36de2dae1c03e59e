package coordination

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxOptions is the most options one ask_others question may offer.
const MaxOptions = 10

// MaxOptionLabel and MaxOptionID bound an option: its label is shown in a
// row of the dashboard and in every responder's prompt, and its id is typed
// by the person.
const (
	MaxOptionLabel = 200
	MaxOptionID    = 32
)

// Option is one structured answer offered by ask_others.
type Option struct {
	ID    string `json:"id"`
	Label string `json:"label"`
}

// ParseOptions parses ask_others' options argument: a JSON array of
// {id, label} objects or of plain strings (which get the ids "1", "2", ...
// by position; so does an object without an id). Absent (empty or null)
// means no options. Ids and labels must be unique ignoring case (answers
// match both ignoring case, so of two that differ only in case the second
// could not be chosen), and ids contain no spaces, commas or semicolons,
// since answers list them separated by those.
func ParseOptions(raw json.RawMessage) ([]Option, error) {
	if isNull(raw) {
		return nil, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New(`options must be a JSON array like [{"id": "a", "label": "Yes"}, {"id": "b", "label": "No"}] or ["Yes", "No"]`)
	}
	if len(items) > MaxOptions {
		return nil, fmt.Errorf("options has %d items; the limit is %d — offer fewer choices or ask an open question", len(items), MaxOptions)
	}
	opts := make([]Option, 0, len(items))
	for i, item := range items {
		o, err := parseOption(item, i)
		if err != nil {
			return nil, fmt.Errorf("options[%d]: %w", i, err)
		}
		if j := slices.IndexFunc(opts, func(p Option) bool { return strings.EqualFold(p.ID, o.ID) }); j >= 0 {
			return nil, fmt.Errorf("options[%d]: id %q is already used by options[%d]; ids must be unique", i, o.ID, j)
		}
		if j := slices.IndexFunc(opts, func(p Option) bool { return sameLabel(p.Label, o.Label) }); j >= 0 {
			return nil, fmt.Errorf("options[%d]: label %q clashes with options[%d]'s label %q; labels must differ in more than case and spacing, since answers match them ignoring both", i, o.Label, j, opts[j].Label)
		}
		opts = append(opts, o)
	}
	return opts, nil
}

func parseOption(raw json.RawMessage, i int) (Option, error) {
	raw = bytes.TrimSpace(raw)
	o := Option{ID: strconv.Itoa(i + 1)}
	switch {
	case len(raw) > 0 && raw[0] == '"':
		if err := json.Unmarshal(raw, &o.Label); err != nil {
			return Option{}, err
		}
	case len(raw) > 0 && raw[0] == '{':
		entries, err := decodeObject(raw)
		if err != nil {
			return Option{}, fmt.Errorf("the object %w", err)
		}
		for _, e := range entries {
			var s string
			switch e.Key {
			case "id":
				// A number id is a harmless slip: 1 and "1" mean the same.
				if len(e.Value) > 0 && (e.Value[0] == '-' || (e.Value[0] >= '0' && e.Value[0] <= '9')) {
					s = string(e.Value)
				} else if json.Unmarshal(e.Value, &s) != nil {
					return Option{}, fmt.Errorf("id must be a string, got %s", brief(e.Value))
				}
				o.ID = strings.TrimSpace(s)
			case "label":
				if json.Unmarshal(e.Value, &s) != nil {
					return Option{}, fmt.Errorf("label must be a string, got %s", brief(e.Value))
				}
				o.Label = s
			default:
				return Option{}, fmt.Errorf("unknown field %q; the fields are id and label", e.Key)
			}
		}
	default:
		return Option{}, fmt.Errorf(`expected a label (string) or an object like {"id": "a", "label": "Yes"}, got %s`, brief(raw))
	}
	o.Label = strings.TrimSpace(o.Label)
	if o.Label == "" {
		return Option{}, errors.New("label is empty; say what the choice is")
	}
	if n := utf8.RuneCountInString(o.Label); n > MaxOptionLabel {
		return Option{}, fmt.Errorf("label is %d characters; the limit is %d: keep the choice short and put details in the question", n, MaxOptionLabel)
	}
	if n := utf8.RuneCountInString(o.ID); n > MaxOptionID {
		return Option{}, fmt.Errorf("id is %d characters; the limit is %d: use a short id like \"a\"", n, MaxOptionID)
	}
	if o.ID == "" || strings.ContainsFunc(o.ID, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' }) {
		return Option{}, fmt.Errorf("id %q is not valid; use a short id without spaces, commas or semicolons, like \"a\"", o.ID)
	}
	return o, nil
}

// sameLabel reports whether two labels are one for an answer, which
// matches them ignoring case and runs of spaces.
func sameLabel(a, b string) bool {
	return strings.EqualFold(strings.Join(strings.Fields(a), " "), strings.Join(strings.Fields(b), " "))
}

// Answer is a parsed answer to an ask_others question.
type Answer struct {
	// Text is what the asker receives, is stored and exported, and is
	// remembered: the free text, or for a selection, one choice or several,
	// the same form "ids: labels" ("b: Next week", "a, c: Now; In a month").
	// One form whatever the question type, and the one shadow responders are
	// asked to start with, so that the asker reads every answer alike;
	// ParseAnswer reads it back, so a remembered selection can be sent again.
	Text string `json:"text"`
	// Selected holds the ids of the selected options, in option order.
	Selected []string `json:"selected,omitempty"`
}

// ParseAnswer interprets an answer typed by a person (or given by a shadow
// responder) to a question with options. An option is selected by its
// 1-based number, its id or its whole label (case-insensitive); several
// are selected with "1,3", "1 3" or "a; c", which is an error unless
// multi is set. A number with no option ("7" of 3) is an error too, as are
// the form Answer.Text gives a selection with ids and labels of different
// options ("b: Now" where Now is a's label) and a list of options with one
// that is none ("b, x"; see unknownInList). Any other text is a free-text
// answer, as is every answer to a question without options.
func ParseAnswer(text string, options []Option, multi bool) (Answer, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return Answer{}, errors.New("the answer is empty")
	}
	if len(options) == 0 {
		return Answer{Text: text}, nil
	}
	if picked, ok := parseSelectionText(text, options); ok {
		if len(picked) > 1 && !multi {
			return Answer{}, fmt.Errorf("this question takes one choice, but the answer picks %d (%s) — answer with a single option number or id", len(picked), strings.Join(optionIDs(options, picked), ", "))
		}
		return selectionAnswer(options, picked), nil
	}
	if findOption(text, options) < 0 {
		if err := mixedSelection(text, options); err != nil {
			return Answer{}, err
		}
	}
	splits := [][]string{
		{text},
		strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' }),
		strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' || unicode.IsSpace(r) }),
	}
	for _, parts := range splits {
		picked, ok := selectOptions(parts, options)
		if !ok {
			continue
		}
		if len(picked) > 1 && !multi {
			return Answer{}, fmt.Errorf("this question takes one choice, but the answer picks %d (%s) — answer with a single option number or id", len(picked), strings.Join(optionIDs(options, picked), ", "))
		}
		return selectionAnswer(options, picked), nil
	}
	// All-number answers are meant as choices; a number out of range is a
	// mistake worth reporting rather than a free-text answer.
	words := splits[2]
	allNumbers := true
	for _, w := range words {
		if _, err := strconv.Atoi(w); err != nil {
			allNumbers = false
			break
		}
	}
	if allNumbers {
		for _, w := range words {
			if n, _ := strconv.Atoi(w); n < 1 || n > len(options) {
				return Answer{}, fmt.Errorf("there is no option %d; choose 1-%d", n, len(options))
			}
		}
	}
	if unknown := unknownInList(text, options); len(unknown) > 0 {
		ids := make([]string, len(options))
		for i, o := range options {
			ids[i] = o.ID
		}
		return Answer{}, fmt.Errorf("there is no option %s; the ids are %s — correct the list, or write a sentence to answer in your own words", strings.Join(unknown, " or "), strings.Join(ids, ", "))
	}
	return Answer{Text: text}, nil
}

// unknownInList returns the parts of an answer that is a list of options
// with a mistyped one ("b, x"), quoted; nil for any other answer. Every
// question with options also takes free text, which may hold commas, so
// the answer counts as such a list only when, split at its commas and
// semicolons, at least one part is an option and every other part is one
// word no longer than the longest id: what a mistyped id looks like.
// "a, but only if it is cheap" and "Redis, or else Postgres" stay free text.
func unknownInList(text string, options []Option) []string {
	parts := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ';' })
	if len(parts) < 2 {
		return nil
	}
	longest := 0
	for _, o := range options {
		longest = max(longest, utf8.RuneCountInString(o.ID))
	}
	known := false
	var unknown []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if findOption(p, options) >= 0 {
			known = true
			continue
		}
		w := strings.TrimFunc(p, unicode.IsPunct)
		if w == "" || utf8.RuneCountInString(w) > longest || strings.ContainsFunc(w, unicode.IsSpace) {
			return nil
		}
		unknown = append(unknown, strconv.Quote(p))
	}
	if !known {
		return nil
	}
	return unknown
}

// selectOptions resolves every part to an option index; ok is false when
// any part is not an option. The indexes come back sorted, without repeats.
func selectOptions(parts []string, options []Option) ([]int, bool) {
	if len(parts) == 0 {
		return nil, false
	}
	var picked []int
	for _, p := range parts {
		i := findOption(strings.TrimSpace(p), options)
		if i < 0 {
			return nil, false
		}
		if !slices.Contains(picked, i) {
			picked = append(picked, i)
		}
	}
	slices.Sort(picked)
	return picked, true
}

// findOption matches an exact id first (so an id "2" beats position 2),
// then a position number, then an exact label (options stored before labels
// that differ only in case were refused may hold "Now" and "now"), then an
// id or label ignoring case (so a label "2025" still matches), and finally the same with punctuation such as
// "b)" or "2." trimmed.
func findOption(p string, options []Option) int {
	if p == "" {
		return -1
	}
	for i, o := range options {
		if o.ID == p {
			return i
		}
	}
	n, err := strconv.Atoi(p)
	if err == nil && n >= 1 && n <= len(options) {
		return n - 1
	}
	for i, o := range options {
		if o.Label == p {
			return i
		}
	}
	for i, o := range options {
		if strings.EqualFold(o.ID, p) || strings.EqualFold(o.Label, p) {
			return i
		}
	}
	if err == nil {
		// A number with no option: "-1" is not option 1 with a dash.
		return -1
	}
	if t := strings.TrimFunc(p, unicode.IsPunct); t != p {
		return findOption(t, options)
	}
	return -1
}

// parseSelectionText reads an answer in the form Answer.Text gives a
// selection, "a, c: Now; In a month": every id must be an option's and the
// labels after the colon must be those options' labels, in the same order.
func parseSelectionText(text string, options []Option) ([]int, bool) {
	idsPart, labelsPart, ok := strings.Cut(text, ": ")
	if !ok {
		return nil, false
	}
	var picked, order []int
	var labels []string
	for _, id := range strings.Split(idsPart, ",") {
		id = strings.TrimSpace(id)
		i := slices.IndexFunc(options, func(o Option) bool { return strings.EqualFold(o.ID, id) })
		if i < 0 {
			return nil, false
		}
		order = append(order, i)
		labels = append(labels, options[i].Label)
		if !slices.Contains(picked, i) {
			picked = append(picked, i)
		}
	}
	if !strings.EqualFold(strings.Join(strings.Fields(labelsPart), " "), strings.Join(strings.Fields(strings.Join(labels, "; ")), " ")) {
		return nil, false
	}
	slices.Sort(picked)
	return picked, len(order) > 0
}

// mixedSelection explains an answer in the form "ids: labels" whose ids
// and labels are all this question's but name different options, such as
// "b: Now" where Now is a's label. Neither half can be taken over the
// other, and read word by word it would pick both options, so the person
// is asked to say which. Nil when the answer is not such a mix.
func mixedSelection(text string, options []Option) error {
	idsPart, labelsPart, ok := strings.Cut(text, ": ")
	if !ok {
		return nil
	}
	var byID []int
	for _, id := range strings.Split(idsPart, ",") {
		id = strings.TrimSpace(id)
		i := slices.IndexFunc(options, func(o Option) bool { return strings.EqualFold(o.ID, id) })
		if i < 0 || len(byID) == MaxOptions {
			return nil
		}
		byID = append(byID, i)
	}
	byLabel, ok := readLabels(labelPieces(labelsPart), len(byID), options, map[[2]int]bool{})
	if !ok {
		return nil
	}
	var clashes []string
	for j, i := range byID {
		if k := byLabel[j]; k != i {
			clashes = append(clashes, fmt.Sprintf("%s is %q but %q is %s", options[i].ID, options[i].Label, options[k].Label, options[k].ID))
		}
	}
	if len(clashes) == 0 {
		return nil
	}
	what := "the id and the label name different options"
	if len(byID) > 1 {
		what = "the ids and the labels name different options"
	}
	return fmt.Errorf("%s: %s — answer with the ids alone or the labels alone", what, strings.Join(clashes, ", "))
}

// labelPieces splits labels joined by "; " into their semicolon-separated
// pieces, as an answer matches them: case and runs of spaces ignored.
func labelPieces(s string) []string {
	pieces := strings.Split(s, ";")
	for i, p := range pieces {
		pieces[i] = strings.ToLower(strings.Join(strings.Fields(p), " "))
	}
	return pieces
}

// readLabels reads pieces as exactly n option labels in a row and returns
// their options. A label may itself hold a semicolon, so more than one
// reading can start at a piece; failed (piece, labels left) pairs are kept
// so that no reading is tried twice.
func readLabels(pieces []string, n int, options []Option, failed map[[2]int]bool) ([]int, bool) {
	if n == 0 || len(pieces) == 0 {
		return nil, n == 0 && len(pieces) == 0
	}
	key := [2]int{len(pieces), n}
	if failed[key] {
		return nil, false
	}
	for i, o := range options {
		l := labelPieces(o.Label)
		if len(l) > len(pieces) || !slices.Equal(l, pieces[:len(l)]) {
			continue
		}
		if rest, ok := readLabels(pieces[len(l):], n-1, options, failed); ok {
			return append([]int{i}, rest...), true
		}
	}
	failed[key] = true
	return nil, false
}

// looksLikeSelection reports whether text has the form Answer.Text gives a
// selection ("ids: labels", as many labels as ids), whichever options it
// was made from.
func looksLikeSelection(text string) bool {
	idsPart, labelsPart, ok := strings.Cut(strings.TrimSpace(text), ": ")
	if !ok {
		return false
	}
	ids := strings.Split(idsPart, ",")
	for _, id := range ids {
		id = strings.TrimSpace(id)
		if id == "" || strings.ContainsFunc(id, func(r rune) bool { return unicode.IsSpace(r) || r == ';' }) {
			return false
		}
	}
	return len(strings.Split(labelsPart, ";")) == len(ids)
}

// FitRemembered decides whether a person's earlier answer to a question
// with the same text may be offered for this one, and returns it as it
// would be sent here. A selection is offered only when every chosen option
// is one of this question's (same id, same label) and a single-choice
// question gets one; a selection is not offered to a question without
// options, where its ids mean nothing. Free text is offered when this
// question would accept it.
func FitRemembered(text string, options []Option, multi bool) (string, bool) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", false
	}
	if len(options) == 0 {
		if looksLikeSelection(text) {
			return "", false
		}
		return text, true
	}
	ans, err := ParseAnswer(text, options, multi)
	if err != nil {
		return "", false
	}
	if len(ans.Selected) == 0 && looksLikeSelection(text) {
		return "", false
	}
	return ans.Text, true
}

func optionIDs(options []Option, picked []int) []string {
	ids := make([]string, len(picked))
	for j, i := range picked {
		ids[j] = options[i].ID
	}
	return ids
}

func selectionAnswer(options []Option, picked []int) Answer {
	ids := optionIDs(options, picked)
	labels := make([]string, len(picked))
	for j, i := range picked {
		labels[j] = options[i].Label
	}
	return Answer{Text: strings.Join(ids, ", ") + ": " + strings.Join(labels, "; "), Selected: ids}
}

// NormalizeQuestion reduces a question to the form used to recognise a
// repeat: lower case, runs of white space collapsed to one space, and
// leading and trailing punctuation and space removed.
func NormalizeQuestion(q string) string {
	q = strings.ToLower(q)
	q = strings.TrimFunc(q, func(r rune) bool { return unicode.IsPunct(r) || unicode.IsSpace(r) })
	return strings.Join(strings.Fields(q), " ")
}

// Remembered is a human answer kept by Memory.
type Remembered struct {
	Question string `json:"question"` // as first asked
	Answer   string `json:"answer"`
}

// Memory remembers the human's answers by normalized question, so that a
// repeated question can be offered the earlier answer. It is safe for
// concurrent use; the zero value is empty and ready.
type Memory struct {
	mu      sync.Mutex
	answers map[string]Remembered
}

// Remember records answer for question, replacing an earlier answer to
// the same normalized question. Empty questions or answers are ignored.
func (m *Memory) Remember(question, answer string) {
	key := NormalizeQuestion(question)
	if key == "" || strings.TrimSpace(answer) == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.answers == nil {
		m.answers = make(map[string]Remembered)
	}
	m.answers[key] = Remembered{Question: strings.TrimSpace(question), Answer: answer}
}

// Recall returns the remembered answer to question, if any.
func (m *Memory) Recall(question string) (Remembered, bool) {
	key := NormalizeQuestion(question)
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.answers[key]
	return r, ok && key != ""
}

// Len returns the number of remembered questions.
func (m *Memory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.answers)
}

// Queue is the first-in, first-out line of question ids waiting for the
// human, who sees one at a time (the head). It is safe for concurrent use;
// the zero value is empty and ready.
type Queue struct {
	mu  sync.Mutex
	ids []string
}

// Push appends id unless it is already queued, and reports whether it was
// added.
func (q *Queue) Push(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if slices.Contains(q.ids, id) {
		return false
	}
	q.ids = append(q.ids, id)
	return true
}

// Head returns the question shown now.
func (q *Queue) Head() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ids) == 0 {
		return "", false
	}
	return q.ids[0], true
}

// Pop removes and returns the head.
func (q *Queue) Pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ids) == 0 {
		return "", false
	}
	id := q.ids[0]
	q.ids = slices.Delete(q.ids, 0, 1)
	return id, true
}

// Remove takes id out of the queue wherever it is (answered, timed out or
// closed) and reports whether it was queued.
func (q *Queue) Remove(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.Index(q.ids, id)
	if i < 0 {
		return false
	}
	q.ids = slices.Delete(q.ids, i, i+1)
	return true
}

// Len returns the number of queued questions.
func (q *Queue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids)
}

// IDs returns a copy of the queued ids, head first.
func (q *Queue) IDs() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ids)
}

// Clear empties the queue (the human chose "skip all") and returns what
// was queued.
func (q *Queue) Clear() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids := q.ids
	q.ids = nil
	return ids
}
