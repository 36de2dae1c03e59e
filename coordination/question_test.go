package coordination

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

func TestParseOptions(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Option
		wantErr  string
	}{
		{name: "absent", in: ``},
		{name: "null", in: `null`},
		{name: "objects", in: `[{"id":"a","label":"Now"},{"id":"b","label":"Next week"}]`, want: []Option{{"a", "Now"}, {"b", "Next week"}}},
		{name: "strings get numbers", in: `["Yes","No"]`, want: []Option{{"1", "Yes"}, {"2", "No"}}},
		{name: "missing id gets its number", in: `[{"id":"x","label":"X"},{"label":"Y"}]`, want: []Option{{"x", "X"}, {"2", "Y"}}},
		{name: "number id", in: `[{"id":1,"label":"X"}]`, want: []Option{{"1", "X"}}},
		{name: "labels trimmed", in: `["  Yes  "]`, want: []Option{{"1", "Yes"}}},
		{name: "ten is fine", in: `["1","2","3","4","5","6","7","8","9","10"]`},
		{name: "eleven", in: `["1","2","3","4","5","6","7","8","9","10","11"]`, wantErr: "options has 11 items; the limit is 10"},
		{name: "duplicate ids", in: `[{"id":"a","label":"X"},{"id":"A","label":"Y"}]`, wantErr: `options[1]: id "A" is already used by options[0]`},
		{name: "string clashes with explicit id", in: `[{"id":"2","label":"X"},"Y"]`, wantErr: `options[1]: id "2" is already used by options[0]`},
		{name: "labels differing only in case", in: `[{"id":"a","label":"Now"},{"id":"b","label":"now"}]`, wantErr: `options[1]: label "now" clashes with options[0]'s label "Now"; labels must differ in more than case`},
		{name: "labels differing only in spacing", in: `["Next week","Later","next  week"]`, wantErr: `options[2]: label "next  week" clashes with options[0]'s label "Next week"`},
		{name: "same label twice", in: `["Yes","Yes"]`, wantErr: `options[1]: label "Yes" clashes with options[0]'s label "Yes"`},
		{name: "labels that differ", in: `["Now","Not now"]`, want: []Option{{"1", "Now"}, {"2", "Not now"}}},
		{name: "empty label", in: `[{"id":"a","label":""}]`, wantErr: "options[0]: label is empty"},
		{name: "id with comma", in: `[{"id":"a,b","label":"X"}]`, wantErr: `options[0]: id "a,b" is not valid`},
		{name: "id with space", in: `[{"id":"a b","label":"X"}]`, wantErr: "is not valid"},
		{name: "unknown field", in: `[{"id":"a","text":"X"}]`, wantErr: `options[0]: unknown field "text"`},
		{name: "not an array", in: `{"a":"b"}`, wantErr: "options must be a JSON array"},
		{name: "bad item", in: `[true]`, wantErr: "options[0]: expected a label (string) or an object"},
		{name: "bad label type", in: `[{"label":3}]`, wantErr: "options[0]: label must be a string, got 3"},
		{name: "label at the limit", in: `["` + strings.Repeat("é", MaxOptionLabel) + `"]`, want: []Option{{"1", strings.Repeat("é", MaxOptionLabel)}}},
		{name: "label over the limit", in: `["` + strings.Repeat("x", MaxOptionLabel+1) + `"]`, wantErr: "options[0]: label is 201 characters; the limit is 200"},
		{name: "id over the limit", in: `[{"id":"` + strings.Repeat("i", MaxOptionID+1) + `","label":"X"}]`, wantErr: "options[0]: id is 33 characters; the limit is 32"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseOptions(json.RawMessage(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != nil && fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseAnswer(t *testing.T) {
	when := []Option{{"a", "Now"}, {"b", "Next week"}, {"c", "In a month"}}
	numbered := []Option{{"1", "2024"}, {"2", "2025"}}
	stores := []Option{{"pg", "PostgreSQL"}, {"sqlite", "SQLite"}, {"redis", "Redis"}}
	tests := []struct {
		name     string
		text     string
		opts     []Option
		multi    bool
		wantText string
		wantSel  string
		wantErr  string
	}{
		{name: "no options: free text", text: "  use Postgres  ", wantText: "use Postgres"},
		{name: "no options: digits are text", text: "2", wantText: "2"},
		{name: "by number", text: "2", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "by id", text: "b", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "by id any case", text: "B", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "by label", text: "next week", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "exact label before case", text: "now", opts: []Option{{"a", "Now"}, {"b", "now"}}, wantText: "b: now", wantSel: "b"},
		{name: "label in another case", text: "NOW", opts: []Option{{"a", "Now"}, {"b", "now"}}, wantText: "a: Now", wantSel: "a"},
		{name: "with punctuation", text: "b)", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "number with dot", text: "3.", opts: when, wantText: "c: In a month", wantSel: "c"},
		{name: "multi by numbers with comma", text: "1,3", opts: when, multi: true, wantText: "a, c: Now; In a month", wantSel: "a,c"},
		{name: "multi by numbers with space", text: "3 1", opts: when, multi: true, wantText: "a, c: Now; In a month", wantSel: "a,c"},
		{name: "multi by ids", text: "c, a", opts: when, multi: true, wantText: "a, c: Now; In a month", wantSel: "a,c"},
		{name: "multi by labels", text: "Next week; In a month", opts: when, multi: true, wantText: "b, c: Next week; In a month", wantSel: "b,c"},
		{name: "multi mixed", text: "1, next week", opts: when, multi: true, wantText: "a, b: Now; Next week", wantSel: "a,b"},
		{name: "multi one pick", text: "2", opts: when, multi: true, wantText: "b: Next week", wantSel: "b"},
		{name: "repeat collapses", text: "2, b", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "several when single", text: "1,3", opts: when, wantErr: "this question takes one choice, but the answer picks 2 (a, c)"},
		{name: "out of range", text: "7", opts: when, wantErr: "there is no option 7; choose 1-3"},
		{name: "negative", text: "-1", opts: when, wantErr: "there is no option -1; choose 1-3"},
		{name: "zero", text: "0", opts: when, wantErr: "there is no option 0; choose 1-3"},
		{name: "negative in a list", text: "2, -3", opts: when, multi: true, wantErr: "there is no option -3"},
		{name: "out of range in a list", text: "1, 9", opts: when, multi: true, wantErr: "there is no option 9"},
		{name: "mistyped id in a list", text: "b, x", opts: when, multi: true, wantErr: `there is no option "x"; the ids are a, b, c — correct the list, or write a sentence`},
		{name: "mistyped id in a list, single choice", text: "b, x", opts: when, wantErr: `there is no option "x"; the ids are a, b, c`},
		{name: "mistyped ids with semicolons", text: "x; a; y)", opts: when, multi: true, wantErr: `there is no option "x" or "y)"`},
		{name: "number and mistyped id", text: "2, z", opts: when, multi: true, wantErr: `there is no option "z"`},
		{name: "label and mistyped id", text: "Next week, d", opts: when, multi: true, wantErr: `there is no option "d"`},
		{name: "mistyped long id", text: "pg, redsi", opts: stores, multi: true, wantErr: `there is no option "redsi"; the ids are pg, sqlite, redis`},
		{name: "list with a word longer than any id", text: "a, but", opts: when, wantText: "a, but"},
		{name: "list with a phrase", text: "a, but only if it is cheap", opts: when, multi: true, wantText: "a, but only if it is cheap"},
		{name: "list with a phrase, long ids", text: "Redis, or else Postgres", opts: stores, wantText: "Redis, or else Postgres"},
		{name: "list of no option", text: "x, y", opts: when, multi: true, wantText: "x, y"},
		{name: "words without commas", text: "b or c", opts: when, multi: true, wantText: "b or c"},
		{name: "free text despite options", text: "not before Friday", opts: when, wantText: "not before Friday"},
		{name: "free text with a number", text: "2 weeks", opts: when, wantText: "2 weeks"},
		{name: "label that is a number", text: "2025", opts: numbered, wantText: "2: 2025", wantSel: "2"},
		{name: "id beats position", text: "1", opts: []Option{{"2", "X"}, {"1", "Y"}}, wantText: "1: Y", wantSel: "1"},
		{name: "empty", text: "   ", opts: when, wantErr: "the answer is empty"},
		{name: "own form of one choice", text: "b: Next week", opts: when, wantText: "b: Next week", wantSel: "b"},
		{name: "own form of several", text: "a, c: Now; In a month", opts: when, multi: true, wantText: "a, c: Now; In a month", wantSel: "a,c"},
		{name: "own form, any case", text: "A, C: now; in a month", opts: when, multi: true, wantText: "a, c: Now; In a month", wantSel: "a,c"},
		{name: "own form of several when single", text: "a, c: Now; In a month", opts: when, wantErr: "this question takes one choice"},
		{name: "own form, labels not these", text: "b: Next year", opts: when, wantText: "b: Next year"},
		{name: "id of one option, label of another", text: "b: Now", opts: when, wantErr: `the id and the label name different options: b is "Next week" but "Now" is a — answer with the ids alone or the labels alone`},
		{name: "id and label mixed, multiple choice", text: "b: Now", opts: when, multi: true, wantErr: `the id and the label name different options: b is "Next week" but "Now" is a`},
		{name: "ids and labels mixed in a list", text: "a, b: Now; In a month", opts: when, multi: true, wantErr: `the ids and the labels name different options: b is "Next week" but "In a month" is c — answer with`},
		{name: "ids and labels in another order", text: "a, b: Next week; Now", opts: when, multi: true, wantErr: `a is "Now" but "Next week" is b, b is "Next week" but "Now" is a`},
		{name: "number id, another's label", text: "2: Yes", opts: []Option{{"1", "Yes"}, {"2", "No"}}, wantErr: `2 is "No" but "Yes" is 1`},
		{name: "mixed, labels with semicolons", text: "y: A; B", opts: []Option{{"x", "A; B"}, {"y", "C"}}, wantErr: `y is "C" but "A; B" is x`},
		{name: "a whole label that looks mixed", text: "b: Now", opts: []Option{{"a", "Now"}, {"b", "Later"}, {"c", "b: Now"}}, wantText: "c: b: Now", wantSel: "c"},
		{name: "label with a semicolon", text: "x, y: A; B; C", opts: []Option{{"x", "A; B"}, {"y", "C"}}, multi: true, wantText: "x, y: A; B; C", wantSel: "x,y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseAnswer(tt.text, tt.opts, tt.multi)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != tt.wantText || strings.Join(got.Selected, ",") != tt.wantSel {
				t.Errorf("got %+v, want text %q selected %q", got, tt.wantText, tt.wantSel)
			}
		})
	}
}

func TestFitRemembered(t *testing.T) {
	sources := []Option{{"hn", "Hacker News"}, {"rd", "Reddit"}, {"nl", "Newsletters"}}
	two := []Option{{"hn", "Hacker News"}, {"rd", "Reddit"}}
	tests := []struct {
		name       string
		remembered string
		opts       []Option
		multi      bool
		want       string // "" when not offered
	}{
		{name: "several where one option is missing", remembered: "hn, nl: Hacker News; Newsletters", opts: two, want: ""},
		{name: "several to a single choice", remembered: "hn, rd: Hacker News; Reddit", opts: two, want: ""},
		{name: "several to the same multiple choice", remembered: "hn, nl: Hacker News; Newsletters", opts: sources, multi: true, want: "hn, nl: Hacker News; Newsletters"},
		{name: "several, all still offered", remembered: "hn, rd: Hacker News; Reddit", opts: sources, multi: true, want: "hn, rd: Hacker News; Reddit"},
		{name: "one to a single choice that has it", remembered: "rd: Reddit", opts: two, want: "rd: Reddit"},
		{name: "one whose option is gone", remembered: "nl: Newsletters", opts: two, want: ""},
		{name: "same id, another label", remembered: "1: Yes", opts: []Option{{"1", "No"}, {"2", "Yes"}}, want: ""},
		{name: "a selection to a question without options", remembered: "rd: Reddit", want: ""},
		{name: "free text to a question without options", remembered: "use Postgres", want: "use Postgres"},
		{name: "free text to a question with options", remembered: "whichever is cheaper", opts: two, want: "whichever is cheaper"},
		{name: "a bare label, as answers once were", remembered: "Reddit", opts: two, want: "rd: Reddit"},
		{name: "an id and a label that are two options here", remembered: "hn: Reddit", opts: sources, multi: true, want: ""},
		{name: "a list with an option that is none here", remembered: "hn, xx", opts: two, multi: true, want: ""},
		{name: "empty", remembered: "  ", opts: two, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := FitRemembered(tt.remembered, tt.opts, tt.multi)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("FitRemembered(%q) = %q, %v; want %q", tt.remembered, got, ok, tt.want)
			}
		})
	}
}

func TestNormalizeQuestion(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Which DB should we use?", "which db should we use"},
		{"  which   DB\nshould we\tuse ??? ", "which db should we use"},
		{"¿Qué base de datos?", "qué base de datos"},
		{"Is v1.2 ok?", "is v1.2 ok"},
		{"???", ""},
	}
	for _, tt := range tests {
		if got := NormalizeQuestion(tt.in); got != tt.want {
			t.Errorf("NormalizeQuestion(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestMemory(t *testing.T) {
	var m Memory
	if _, ok := m.Recall("anything"); ok {
		t.Error("empty memory recalled something")
	}
	m.Remember("Which DB should we use?", "Postgres")
	m.Remember("???", "ignored")
	m.Remember("Deadline?", "  ")
	if m.Len() != 1 {
		t.Errorf("Len = %d, want 1", m.Len())
	}
	r, ok := m.Recall("  which db SHOULD we use ")
	if !ok || r.Answer != "Postgres" || r.Question != "Which DB should we use?" {
		t.Errorf("Recall = %+v, %v", r, ok)
	}
	m.Remember("which db should we use!", "SQLite")
	if r, _ := m.Recall("Which DB should we use?"); r.Answer != "SQLite" {
		t.Errorf("a newer answer did not replace the old one: %+v", r)
	}
	if _, ok := m.Recall("???"); ok {
		t.Error("an empty question matched")
	}
}

func TestQueue(t *testing.T) {
	var q Queue
	if _, ok := q.Head(); ok {
		t.Error("empty queue has a head")
	}
	if _, ok := q.Pop(); ok {
		t.Error("empty queue popped")
	}
	for _, id := range []string{"q1", "q2", "q3", "q2"} {
		q.Push(id)
	}
	if q.Len() != 3 || strings.Join(q.IDs(), ",") != "q1,q2,q3" {
		t.Fatalf("queue = %v", q.IDs())
	}
	if h, _ := q.Head(); h != "q1" {
		t.Errorf("Head = %s", h)
	}
	if !q.Remove("q2") || q.Remove("q2") {
		t.Error("Remove q2")
	}
	if id, _ := q.Pop(); id != "q1" {
		t.Errorf("Pop = %s", id)
	}
	if h, _ := q.Head(); h != "q3" {
		t.Errorf("Head = %s", h)
	}
	q.Push("q4")
	if got := q.Clear(); strings.Join(got, ",") != "q3,q4" || q.Len() != 0 {
		t.Errorf("Clear = %v, Len %d", got, q.Len())
	}
	ids := q.IDs()
	q.Push("q5")
	if len(ids) != 0 {
		t.Error("IDs aliases the queue")
	}
}

func TestCounter(t *testing.T) {
	c := NewCounter(2)
	steps := []struct {
		key  string
		ok   bool
		used int
	}{
		{"s-1", true, 1}, {"s-1", true, 2}, {"s-1", false, 2}, {"s-2", true, 1}, {"s-1", false, 2},
	}
	for i, s := range steps {
		ok, used := c.Allow(s.key)
		if ok != s.ok || used != s.used {
			t.Errorf("step %d: Allow(%s) = %v, %d; want %v, %d", i, s.key, ok, used, s.ok, s.used)
		}
	}
	c.SetUsed("s-3", 2)
	if ok, _ := c.Allow("s-3"); ok {
		t.Error("restored count was not applied")
	}
	c.SetUsed("s-3", 0)
	if ok, used := c.Allow("s-3"); !ok || used != 1 {
		t.Error("reset count was not applied")
	}

	var unlimited Counter
	for range 1000 {
		if ok, _ := unlimited.Allow("k"); !ok {
			t.Fatal("zero Counter refused")
		}
	}
	if unlimited.Used("k") != 1000 {
		t.Errorf("Used = %d", unlimited.Used("k"))
	}
}

func TestCounterConcurrent(t *testing.T) {
	c := NewCounter(10)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ok, _ := c.Allow("s"); ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if allowed != 10 {
		t.Errorf("%d allowed, want exactly 10", allowed)
	}
}
