package runtime

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/llm"
)

// clipJSON keeps as much of the longest string as fits the limit, counted
// as the model reads it: characters that JSON writes longer (a quote, a
// line break) are counted so, and <, > and & are not escaped at all.
func TestClipJSONKeepsWhatFits(t *testing.T) {
	const lim = 16000
	for _, tc := range []struct {
		name, unit string
		minKept    int // runes of the long string kept, at least
	}{
		{"plain", "plain text words ", lim - 200},
		{"markup", "<div>&nbsp;</div> ", lim - 200},
		{"quotes", `say "hi" `, lim*9/13 - 200}, // 9 runes written as 13
		{"lines", "a\nb\n", lim/2 - 200},
		{"control", "x\x01", lim*2/7 - 200}, // \u0001 is 6 characters
		{"wide", "漢字 ", lim - 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			long := strings.Repeat(tc.unit, 40000/len(tc.unit)+1)
			in, _ := plainJSON(map[string]any{"status": "answered", "responses": map[string]string{"human": long, "r-1": "short"}})
			out, ok := clipJSON(string(in), lim)
			if !ok {
				t.Fatal("not clipped")
			}
			if n := utf8.RuneCountInString(out); n > lim {
				t.Errorf("%d characters, over the limit %d", n, lim)
			}
			var got struct {
				Truncated bool              `json:"truncated"`
				Responses map[string]string `json:"responses"`
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("clipped result is no JSON: %v", err)
			}
			kept, cut := strings.CutSuffix(got.Responses["human"], "…[cut]")
			if !got.Truncated || !cut || got.Responses["r-1"] != "short" || !strings.HasPrefix(long, kept) {
				t.Fatalf("clipped to %.200q", out)
			}
			if n := utf8.RuneCountInString(kept); n < tc.minKept {
				t.Errorf("kept %d characters of the answer; want at least %d", n, tc.minKept)
			}
			if strings.Contains(out, `\u003c`) {
				t.Error("< written as \\u003c")
			}
		})
	}
}

// Many strings of middling length are shortened together, and lists and
// maps then lose their last items, so that what is small and comes last
// (a status, a flag) is never lost to a cut through the text.
func TestClipJSONKeepsItsShape(t *testing.T) {
	const lim = 16000
	desc := strings.Repeat("review the module, write tests, ", 5) // 160 runes
	var tasks, children []any
	for i := range 100 {
		tasks = append(tasks, map[string]any{"id": fmt.Sprintf("t%d", i+1), "description": desc, "status": "pending"})
	}
	for i := range 300 {
		children = append(children, map[string]any{"task_id": fmt.Sprintf("w-%d", i+1), "status": "completed", "output": strings.Repeat("o", 217)})
	}
	var manyTasks []any
	for i := range 1000 {
		manyTasks = append(manyTasks, map[string]any{"id": fmt.Sprintf("t%d", i+1), "status": "pending"})
	}
	answers, short := map[string]any{}, map[string]any{}
	for i := range 150 {
		answers[fmt.Sprintf("w-%03d", i)] = strings.Repeat("a", 110)
	}
	for i := range 1000 {
		short[fmt.Sprintf("w-%04d", i)] = "yes, agreed"
	}
	for _, tc := range []struct {
		name  string
		in    map[string]any
		check func(t *testing.T, got map[string]any)
	}{
		{"a plan's descriptions", map[string]any{"plan_id": "p-1", "tasks": tasks, "ready": []any{"t1"}}, func(t *testing.T, got map[string]any) {
			list := got["tasks"].([]any)
			if len(list) != 100 || got["tasks_omitted"] != nil {
				t.Fatalf("kept %d of 100 tasks; every one fits once the descriptions are shortened", len(list))
			}
			last := list[99].(map[string]any)
			if last["id"] != "t100" || last["status"] != "pending" || !strings.HasSuffix(last["description"].(string), cutMark) {
				t.Errorf("last task %v", last)
			}
		}},
		{"many children", map[string]any{"status": "completed", "results": children, "timed_out": false}, func(t *testing.T, got map[string]any) {
			kept := len(got["results"].([]any))
			if got["status"] != "completed" || got["timed_out"] != false || kept == 0 || kept == 100 {
				t.Fatalf("status %v, timed_out %v, %d results kept", got["status"], got["timed_out"], kept)
			}
			if n, _ := got["results_omitted"].(float64); int(n)+kept != 300 {
				t.Errorf("results_omitted %v with %d kept, want them to add up to 300", got["results_omitted"], kept)
			}
			first := got["results"].([]any)[0].(map[string]any)
			if out := first["output"].(string); utf8.RuneCountInString(out) != keepRunes+utf8.RuneCountInString(cutMark) {
				t.Errorf("output cut to %d characters before results were dropped, want %d", utf8.RuneCountInString(out), keepRunes)
			}
		}},
		{"many answers", map[string]any{"status": "answered", "responses": answers, "human_responded": false, "timed_out": true}, func(t *testing.T, got map[string]any) {
			responses := got["responses"].(map[string]any)
			if got["status"] != "answered" || got["human_responded"] != false || got["timed_out"] != true {
				t.Fatalf("the small fields were lost: %v", got)
			}
			if len(responses) != 150 || got["responses_omitted"] != nil {
				t.Fatalf("kept %d of 150 answers; all fit once shortened a little", len(responses))
			}
			if a := responses["w-149"].(string); utf8.RuneCountInString(a) < 90 {
				t.Errorf("an answer was cut to %d characters; about 95 fit", utf8.RuneCountInString(a))
			}
		}},
		{"a list inside a list", map[string]any{"status": "ok", "shared_context": map[string]any{"rows": []any{shortList(3000)}, "note": "kept"}}, func(t *testing.T, got map[string]any) {
			sc := got["shared_context"].(map[string]any)
			rows, _ := sc["rows"].([]any)
			if len(rows) != 1 || sc["note"] != "kept" {
				t.Fatalf("the object around the list lost its keys: %v", sc)
			}
			inner := rows[0].([]any)
			n, _ := sc["rows_omitted"].(float64)
			if len(inner) == 0 || len(inner)+int(n) != 3000 {
				t.Errorf("%d items kept of the inner list, rows_omitted %v", len(inner), sc["rows_omitted"])
			}
		}},
		{"two lists as long", map[string]any{"ready": shortList(1000), "tasks": manyTasks}, func(t *testing.T, got map[string]any) {
			if got["tasks_omitted"] == nil {
				t.Fatal("no task left out")
			}
			if r, _ := got["ready"].([]any); len(r) != 1000 || got["ready_omitted"] != nil {
				t.Errorf("the list of short ids lost %v items; the longer written list of as many should have", got["ready_omitted"])
			}
		}},
		{"many short answers", map[string]any{"status": "answered", "responses": short, "human_responded": true}, func(t *testing.T, got map[string]any) {
			responses := got["responses"].(map[string]any)
			n, _ := got["responses_omitted"].(float64)
			if got["status"] != "answered" || got["human_responded"] != true || len(responses)+int(n) != 1000 || n == 0 {
				t.Fatalf("status %v, %d answers kept, responses_omitted %v", got["status"], len(responses), got["responses_omitted"])
			}
			if _, ok := responses["w-0000"]; !ok {
				t.Error("the first answer was left out: the last ones go first")
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := plainJSON(tc.in)
			if len(in) <= lim {
				t.Fatalf("input is %d bytes, not over the limit", len(in))
			}
			out, ok := clipJSON(string(in), lim)
			if !ok {
				t.Fatal("not clipped as JSON")
			}
			if n := utf8.RuneCountInString(out); n > lim || n < lim-400 {
				t.Errorf("%d characters for a limit of %d", n, lim)
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			if got["truncated"] != true {
				t.Error("not marked truncated")
			}
			tc.check(t, got)
		})
	}
}

// An object in a list is a record: it is kept with all its keys or left
// out whole, never counted as items of the list it is in when one of its
// keys goes (a search's one match lost its text, and the result said a
// second match had been left out).
func TestClipJSONKeepsRecordsWhole(t *testing.T) {
	in := `{"files_searched":1,"matches":[{"line":1,"path":"sub/deep/long_1.md","text":"` + strings.Repeat("needle ", 170) + `"}],"query":"needle"}`
	for _, lim := range []int{100, 120, 150, 200, 400} {
		out, ok := clipJSON(in, lim)
		if !ok {
			continue // a note instead: nothing to miscount
		}
		var got struct {
			Matches        []map[string]any `json:"matches"`
			MatchesOmitted int              `json:"matches_omitted"`
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("limit %d: %v: %s", lim, err, out)
		}
		if len(got.Matches)+got.MatchesOmitted != 1 {
			t.Errorf("limit %d: %d matches shown and %d left out, of 1: %s", lim, len(got.Matches), got.MatchesOmitted, out)
		}
		for _, m := range got.Matches {
			if len(m) != 3 {
				t.Errorf("limit %d: a match kept %d of its 3 keys: %s", lim, len(m), out)
			}
		}
	}
}

// shortList is n short strings.
func shortList(n int) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = fmt.Sprintf("t%d", i+1)
	}
	return out
}

// Whatever the object, a clipped result is JSON within the limit.
func FuzzClipJSON(f *testing.F) {
	f.Add(`{"a":["xxxxxxxxxx","yy"],"b":{"c":"zzzz","d":[1,2,3]}}`, 30)
	f.Add(`{"s":"\"\"\"\"\"\"\"\"\"\"","m":{"k1":"v","k2":"w"},"n":1e3}`, 25)
	f.Add(`{"l":[[["a","b"]],{"x":"yyyyyyyyyyyyyyyyyyyyy"}],"x_omitted":3}`, 40)
	f.Add(`{"":1e700,"s":"long enough to be cut somewhere along the way"}`, 30)
	f.Fuzz(func(t *testing.T, in string, lim int) {
		lim = 20 + abs(lim)%2000
		out, ok := clipJSON(in, lim)
		if !ok {
			return
		}
		if n := utf8.RuneCountInString(out); n > lim {
			t.Fatalf("%d characters for a limit of %d: %s", n, lim, out)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.UseNumber() // 1e700 is JSON, and no float64
		var got map[string]any
		if err := dec.Decode(&got); err != nil || got["truncated"] != true {
			t.Fatalf("clipped to %s (%v)", out, err)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func TestRetryWaitIsNeverShownAsZero(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                        "0s",
		10 * time.Millisecond:    "10ms",
		99400 * time.Microsecond: "99ms",
		250 * time.Millisecond:   "300ms",
		1540 * time.Millisecond:  "1.5s",
		2 * time.Minute:          "2m0s",
	} {
		if got := retryWait(d); got != want {
			t.Errorf("retryWait(%s) = %s, want %s", d, got, want)
		}
	}
}

// mergedNaively is the merge as it was first written, one message at a
// time: the reference mergeUserRuns must agree with.
func mergedNaively(hist []llm.Message) []llm.Message {
	var msgs []llm.Message
	for _, m := range hist {
		if n := len(msgs); n > 0 && m.Role == llm.RoleUser && msgs[n-1].Role == llm.RoleUser && len(msgs[n-1].ToolCalls) == 0 {
			msgs[n-1].Content += "\n\n" + m.Content
			continue
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// Runs of user messages merge into one, joined by blank lines, and the
// rest is kept as it is; a run of thousands (broadcasts from hundreds of
// siblings) is joined at once, not copied again for each message.
func TestMergeUserRuns(t *testing.T) {
	roles := []string{llm.RoleSystem, llm.RoleUser, llm.RoleAssistant, llm.RoleTool}
	rng := rand.New(rand.NewPCG(7, 7))
	for range 500 {
		var hist []llm.Message
		for i := range rng.IntN(12) {
			hist = append(hist, llm.Message{Role: roles[rng.IntN(len(roles))], Content: fmt.Sprintf("m%d", i)})
		}
		got, want := mergeUserRuns(hist), mergedNaively(hist)
		if len(got) != len(want) {
			t.Fatalf("merged %v into %v, want %v", hist, got, want)
		}
		for i := range got {
			if got[i].Role != want[i].Role || got[i].Content != want[i].Content {
				t.Fatalf("merged %v into %v, want %v", hist, got, want)
			}
		}
	}

	hist := []llm.Message{{Role: llm.RoleSystem, Content: "prompt"}}
	for i := range 2000 {
		hist = append(hist, llm.Message{Role: llm.RoleUser, Content: fmt.Sprintf("<sibling_broadcast>finding %d</sibling_broadcast>", i)})
	}
	if allocs := testing.AllocsPerRun(5, func() { mergeUserRuns(hist) }); allocs > 10 {
		t.Errorf("merging a run of 2,000 took %v allocations; want a handful", allocs)
	}
}
