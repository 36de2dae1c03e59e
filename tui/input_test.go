package tui

import (
	"context"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// The text inputs move and delete by what a reader sees as one character.
// A "|" in before and after marks the cursor.
func TestEditInputByCluster(t *testing.T) {
	for _, c := range []struct {
		name, before string
		keys         []string
		after        string
	}{
		{"left over a letter and its vowel sign", "हि|", []string{"left"}, "|हि"},
		{"left twice in Hindi", "हिन्दी|", []string{"left", "left"}, "हि|न्दी"},
		{"right over a letter and its vowel sign", "|हिन्दी", []string{"right"}, "हि|न्दी"},
		{"typing after left stays out of the cluster", "लिखो|", []string{"left", "left", "X"}, "X|लिखो"},
		{"backspace takes a vowel sign alone", "लिखो|", []string{"backspace"}, "लिख|"},
		{"backspace then the letter", "लिखो|", []string{"backspace", "backspace"}, "लि|"},
		{"backspace takes a whole emoji sequence", "hi 👩‍💻|", []string{"backspace"}, "hi |"},
		{"backspace takes a whole flag", "🇫🇷|!", []string{"backspace"}, "|!"},
		{"delete takes a whole cluster", "|हिन्दी", []string{"delete"}, "|न्दी"},
		{"delete takes a whole emoji sequence", "a|👩‍💻b", []string{"delete"}, "a|b"},
		{"plain text goes by code point", "abc|", []string{"left", "backspace", "right", "delete"}, "ac|"},
		{"at the ends nothing moves", "|é", []string{"left", "backspace"}, "|é"},
		{"decomposed e and its accent go together", "e\u0301|", []string{"left"}, "|e\u0301"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := textinput.New()
			in.Focus()
			value, pos := splitCursor(c.before)
			in.SetValue(value)
			in.SetCursor(pos)
			for _, k := range c.keys {
				editInput(&in, keyMsg(k))
			}
			got := string([]rune(in.Value())[:in.Position()]) + "|" + string([]rune(in.Value())[in.Position():])
			if got != c.after {
				t.Errorf("%q after %v = %q; want %q", c.before, c.keys, got, c.after)
			}
		})
	}
}

func splitCursor(s string) (string, int) {
	before, after, _ := strings.Cut(s, "|")
	return before + after, utf8.RuneCountInString(before)
}

// In the goal prompt and a dialog, as a person types.
func TestInputsKeepClustersWhole(t *testing.T) {
	m := New(Options{Theme: "dark", Start: func(context.Context, string) (event.Controller, error) { return nil, nil }})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() time.Time { return t0 }, false
	m, _ = update(m, windowSize(100, 30))
	m = typeText(t, m, "लिखो")
	m, _ = press(t, m, "left", "left")
	m = typeText(t, m, "X")
	if got := m.goal.input.Value(); got != "Xलिखो" {
		t.Errorf("the goal is %q; want X before the whole of लि", got)
	}

	m, _ = demoModel(t, 100, 30)
	m, _ = press(t, m, "b")
	m = typeText(t, m, "ship 🇫🇷")
	m, _ = press(t, m, "backspace")
	m = typeText(t, m, "now")
	if got := m.dialog.input.Value(); got != "ship now" {
		t.Errorf("the broadcast is %q; want the flag gone whole", got)
	}
}

// Whatever is typed and however the cursor is moved, the text stays valid
// and the cursor stops only between clusters.
func FuzzEditInput(f *testing.F) {
	f.Add("हिन्दी में लिखो", []byte{0, 0, 2, 1, 3, 4, 5})
	f.Add("hi 👩‍💻 🇫🇷 e\u0301", []byte{0, 0, 0, 2, 3, 1, 5, 4})
	f.Add("", []byte{2, 3, 0, 1})
	keys := []string{"left", "right", "backspace", "delete", "x", "\u093f"} // the last: a vowel sign typed alone
	f.Fuzz(func(t *testing.T, s string, ops []byte) {
		if !utf8.ValidString(s) || len(ops) > 64 {
			return
		}
		in := textinput.New()
		in.Focus()
		in.SetValue(s)
		for _, op := range ops {
			k := keys[int(op)%len(keys)]
			editInput(&in, keyMsg(k))
			v, pos := in.Value(), in.Position()
			if !utf8.ValidString(v) || pos < 0 || pos > utf8.RuneCountInString(v) {
				t.Fatalf("after %s: value %q, cursor %d", k, v, pos)
			}
			if (k == "left" || k == "right") && clusterStart(v, pos) != pos {
				t.Fatalf("after %s the cursor is inside a cluster: %q at %d", k, v, pos)
			}
		}
	})
}

// A paste into the goal prompt, which is one line and bounded, says what
// became of it: line breaks made spaces, a cut at the limit.
func TestGoalPasteSaysWhatBecameOfIt(t *testing.T) {
	m := New(Options{Theme: "dark", Start: func(context.Context, string) (event.Controller, error) { return nil, nil }})
	t.Cleanup(m.cancel)
	m.now, m.ticks = func() time.Time { return t0 }, false
	m, _ = update(m, windowSize(100, 30))
	// A refusal of the empty prompt goes with a paste, as with a key
	// typed; it stood in the note's place.
	m, _ = press(t, m, "enter")
	mustContain(t, m, "type a goal first")
	m, _ = update(m, tea.PasteMsg{Content: "Ship v2:\n- docs\n- release notes"})
	mustNotContain(t, m, "type a goal first")
	if got := m.goal.input.Value(); got != "Ship v2: - docs - release notes" {
		t.Errorf("the goal is %q", got)
	}
	mustContain(t, m, "Pasted: its line breaks became spaces.")
	m, _ = press(t, m, "esc")
	mustNotContain(t, m, "Pasted:")
	m, _ = update(m, tea.PasteMsg{Content: strings.Repeat("long goal ", 500)})
	if n := utf8.RuneCountInString(m.goal.input.Value()); n != m.goal.input.CharLimit {
		t.Errorf("the goal holds %d characters", n)
	}
	mustContain(t, m, "it was cut at 4,000 characters")

	// A character of several code points that would not fit whole is
	// left out whole.
	m, _ = press(t, m, "esc")
	m.goal.input.SetValue("")
	family := "\U0001F468\u200d\U0001F469\u200d\U0001F467"
	m, _ = update(m, tea.PasteMsg{Content: strings.Repeat("a", 3998) + family + "bbbb"})
	if got := m.goal.input.Value(); got != strings.Repeat("a", 3998) {
		t.Errorf("the goal ends in %q, want the family left out whole", got[max(0, len(got)-20):])
	}
	mustContain(t, m, "it was cut at 4,000 characters")

	// So is one typed: a terminal sends an emoji of several code points
	// as one key.
	m, _ = update(m, tea.KeyPressMsg{Code: '\U0001F468', Text: family})
	if got := m.goal.input.Value(); got != strings.Repeat("a", 3998) {
		t.Errorf("after typing the family the goal ends in %q, want it left out whole", got[max(0, len(got)-20):])
	}
	m, _ = update(m, tea.KeyPressMsg{Code: 'b', Text: "b"})
	if got := m.goal.input.Value(); got != strings.Repeat("a", 3998)+"b" {
		t.Errorf("a letter typed after it: the goal ends in %q", got[max(0, len(got)-20):])
	}
}
