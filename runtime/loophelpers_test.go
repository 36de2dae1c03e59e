package runtime

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
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
