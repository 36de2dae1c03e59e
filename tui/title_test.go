package tui

import (
	"strings"
	"testing"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// paneRow is row i of the pane whose title begins with name (row 0 is its
// top border), from its left border to its right one, or "" when no pane
// has that title.
func paneRow(screen, name string, i int) string {
	lines := strings.Split(screen, "\n")
	for y, l := range lines {
		runes := []rune(l)
		for x := 0; x+2 < len(runes); x++ {
			if !strings.ContainsRune("╭┏+#", runes[x]) || !strings.HasPrefix(string(runes[x+2:]), " "+name) {
				continue
			}
			if y+i >= len(lines) {
				return ""
			}
			row := []rune(lines[y+i])
			end := x + 1
			for end < len(row) && !strings.ContainsRune("╮┓│┃|#+", row[end]) {
				end++
			}
			return string(row[x:min(end+1, len(row))])
		}
	}
	return ""
}

// Pane titles shorten and leave out whole items where the border is short,
// and never cut inside one: "↓ 1…" for 12 newer broadcasts reads as
// another number.
func TestPaneTitlesKeepItemsWhole(t *testing.T) {
	m := feedModel(t, 2200)
	m = applyQuestion(m, event.QuestionOpened, "s-root", event.QuestionInfo{ID: "q-9", FromSession: "s-root", From: "orchestrator",
		Question: "Which launch window?", AllowHuman: true, Status: "open"})
	m, _ = press(t, m, "tab", "pgup", "pgup")

	want := map[int]map[string]string{
		160: {"Broadcasts": "Broadcasts · 2,200 · ↑ 2,1", "Plans": "Plans · orchestrator · s-root"},
		100: {"Broadcasts": "Broadcasts · 2,200 · ↑ 2,1", "Sessions": "Sessions · 11 · 5 running · 3 ask you"},
	}
	for w := 160; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 40))
		screen := plainView(m)
		for _, name := range []string{"Sessions", "Broadcasts", "Plans", "Delegations"} {
			title := paneRow(screen, name, 0)
			if title == "" {
				t.Fatalf("at %d columns no pane is titled %s:\n%s", w, name, screen)
			}
			if strings.Contains(title, "…") {
				t.Fatalf("at %d columns the title of %s cuts an item: %s", w, name, title)
			}
			if s, ok := want[w][name]; ok && !strings.Contains(title, s) {
				t.Fatalf("at %d columns the title reads\n%s\nwant it to hold %q", w, title, s)
			}
		}
		if b := paneRow(screen, "Broadcasts", 0); !strings.Contains(b, "↓ 1") {
			t.Fatalf("at %d columns the Broadcasts title lost its newer broadcasts: %s", w, b)
		}
		summary := paneRow(screen, "Plans", 1)
		if strings.Contains(summary, "…") || !strings.Contains(summary, "2/6 done") || !strings.Contains(summary, "on hold") {
			t.Fatalf("at %d columns the plan's summary reads %s", w, summary)
		}
	}
}

// A filter's text leaves the title first, as the filter's row shows it;
// the count of matches stays whole.
func TestBroadcastsTitleUnderAFilter(t *testing.T) {
	m := feedModel(t, 2200)
	m, _ = press(t, m, "tab", "/")
	m = typeText(t, m, "note 11")
	m, _ = press(t, m, "enter")
	for w := 160; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 40))
		title := paneRow(plainView(m), "Broadcasts", 0)
		if strings.Contains(title, "…") || !strings.Contains(title, " matches") {
			t.Fatalf("at %d columns the title reads %s", w, title)
		}
	}
}

// A transcript's title names its session by its label, then leaves out
// its id, rather than cut inside a name or a word.
func TestTranscriptTitleKeepsItemsWhole(t *testing.T) {
	m, ctl := demoModel(t, 160, 48)
	ctl.SetTranscript("s-res1", numberedMessages(1200))
	m, _ = press(t, m, "down", "down", "enter")
	for w := 160; w >= minWidth; w-- {
		m, _ = update(m, windowSize(w, 40))
		title := paneRow(plainView(m), "Transcript", 0)
		if strings.Contains(title, "…") || !strings.Contains(title, "r-1") || !strings.Contains(title, "↑") {
			t.Fatalf("at %d columns the title reads %s", w, title)
		}
	}
}
