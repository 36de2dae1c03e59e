package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/tui/tuitest"
)

// The first of LC_ALL, LC_CTYPE and LANG that is set says whether the
// terminal takes UTF-8; none set counts as UTF-8.
func TestASCIILocale(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{"LANG": "C"}, true},
		{map[string]string{"LANG": "POSIX"}, true},
		{map[string]string{"LANG": "de_DE.ISO-8859-1"}, true},
		{map[string]string{"LANG": "en_US.UTF-8"}, false},
		{map[string]string{"LANG": "C.utf8"}, false},
		{map[string]string{"LC_CTYPE": "UTF-8", "LANG": "C"}, false}, // macOS sets LC_CTYPE alone
		{map[string]string{"LC_ALL": "C", "LC_CTYPE": "en_US.UTF-8", "LANG": "en_US.UTF-8"}, true},
		{map[string]string{"LC_ALL": "", "LC_CTYPE": "C", "LANG": "en_US.UTF-8"}, true}, // empty is unset
		{map[string]string{"LC_ALL": "en_GB.UTF-8", "LANG": "C"}, false},
		{map[string]string{"LANG": "sr_RS.UTF-8@latin"}, false},
		{map[string]string{}, false},
	} {
		if got := ASCIILocale(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("ASCIILocale(%v) = %v, want %v", tc.env, got, tc.want)
		}
	}
}

// asciiModel is newTestModel drawing in ASCII.
func asciiModel(t testing.TB, snap event.Snapshot, w, h int) (Model, *tuitest.Controller) {
	t.Helper()
	ctl := tuitest.NewController(snap)
	return startTestModel(t, ctl, Options{ASCII: true}, w, h), ctl
}

// nonASCII is the first character of s outside ASCII, or "".
func nonASCII(s string) string {
	for _, r := range s {
		if r >= 0x80 {
			return string(r)
		}
	}
	return ""
}

// In ASCII every screen of the dashboard, its frames, marks, arrows,
// spinners, separators and key names, is drawn without a byte a terminal
// that is not UTF-8 would show as garbage (the demo run's own text is
// ASCII), and still fills the terminal exactly.
func TestASCIIScreensHoldOnlyASCII(t *testing.T) {
	screens := []struct {
		name string
		w, h int
		keys []string
	}{
		{"dashboard", 160, 48, nil},
		{"stacked", 80, 24, nil},
		{"smallest", 60, 16, nil},
		{"collapsed and moved", 120, 40, []string{"space", "tab", "up", "up", "tab", "down"}},
		{"transcript", 160, 48, []string{"down", "down", "enter", "up", "up", "up", "space"}},
		{"broadcast sheet", 100, 30, []string{"tab", "up", "up", "up", "up", "enter"}},
		{"broadcast sheet scrolled", 60, 16, []string{"tab", "up", "up", "up", "up", "enter", "down"}},
		{"help", 60, 16, []string{"?", "down"}},
		{"answer", 100, 30, []string{"a", "ctrl+s", "a"}},
		{"broadcast dialog", 100, 30, []string{"down", "down", "b", "tab"}},
		{"message dialog", 100, 30, []string{"down", "m"}},
		{"cancel", 100, 30, []string{"down", "down", "x"}},
		{"session filter", 120, 40, []string{"/", "x", "-", "enter"}},
		{"broadcast filter", 120, 40, []string{"tab", "/", "b", "l", "o", "c", "k"}},
	}
	for _, sc := range screens {
		t.Run(sc.name, func(t *testing.T) {
			m, ctl := asciiModel(t, tuitest.Demo(t0), sc.w, sc.h)
			ctl.SetTranscript("s-res1", tuitest.DemoTranscript())
			m, _ = press(t, m, sc.keys...)
			if sc.name == "transcript" {
				m = apply(m, deltaEvent("s-res1", "Confirmed: SQLite in WAL mo", false))
			}
			out := plainView(m)
			checkFrame(t, out, sc.w, sc.h)
			if r := nonASCII(out); r != "" {
				t.Fatalf("the screen holds %q:\n%s", r, out)
			}
			// The window title too.
			if r := nonASCII(m.View().WindowTitle); r != "" {
				t.Fatalf("the window title holds %q: %q", r, m.View().WindowTitle)
			}
		})
	}

	// Spinner frames, a retrying session and the status line's marks.
	m, _ := asciiModel(t, tuitest.Demo(t0), 120, 40)
	retry := ev(event.SessionStatus, "s-exp2")
	info := tuitest.Demo(t0).Sessions[5]
	info.Retrying = "attempt 2 of 5 in 3s: 503 Service Unavailable"
	retry.Session = &info
	m = apply(m, retry)
	mustContain(t, m, "! attempt 2 of 5")
	for range 5 {
		m, _ = update(m, tickMsg{})
		if r := nonASCII(plainView(m)); r != "" {
			t.Fatalf("frame %d holds %q:\n%s", m.frame, r, plainView(m))
		}
	}
	for _, isErr := range []bool{false, true} {
		m.setStatus("a status line", isErr)
		m.setNote("a note")
		if r := nonASCII(plainView(m)); r != "" {
			t.Fatalf("the status line holds %q:\n%s", r, plainView(m))
		}
	}

	// The goal prompt, before a run starts.
	g := New(Options{Theme: "dark", ASCII: true, Provider: "scripted", Model: "demo", Scripted: true})
	t.Cleanup(g.cancel)
	g.ticks = false
	g, _ = update(g, windowSize(100, 30))
	g = typeText(t, g, "Write a design note")
	if r := nonASCII(plainView(g)); r != "" {
		t.Fatalf("the goal prompt holds %q:\n%s", r, plainView(g))
	}
}

// What the agents wrote is shown as written, in ASCII as in UTF-8: only
// the dashboard's own glyphs change.
func TestASCIIKeepsTheAgentsText(t *testing.T) {
	snap := tuitest.Demo(t0)
	snap.Sessions[2].Title = "Compare engines → pick one…"
	snap.Broadcasts[6].Message = "Handler waits — “storage” first"
	m, _ := asciiModel(t, snap, 160, 48)
	mustContain(t, m, "Compare engines → pick one…", "Handler waits — “storage” first")
	mustNotContain(t, m, "┃", "│", "›", "·")
}

// TestGoldenASCII is the dashboard drawn in ASCII, at the size of the
// 120x40 screen golden file.
func TestGoldenASCII(t *testing.T) {
	m, _ := asciiModel(t, tuitest.Demo(t0), 120, 40)
	out := plainView(m)
	checkFrame(t, out, 120, 40)
	if strings.ContainsFunc(out, func(r rune) bool { return r >= 0x80 }) {
		t.Fatalf("the ASCII screen is not ASCII:\n%s", out)
	}
	golden.RequireEqual(t, out)
}

// No mark means two things. In ASCII a row that read ">- v orchestrator"
// said unfolded with the separator's "-", and done with the "v" of newer.
// Marks of one meaning in UTF-8 (a cursor and a transcript's bar, a
// cancelled session and a blocked task) may share one. The frame's
// corners and sides are told by where they are.
//
// The same holds in UTF-8, where an unknown status was marked with the
// separator's "·".
func TestMarksMeanOneThing(t *testing.T) {
	for _, g := range []*glyphs{&asciiGlyphs, &unicodeGlyphs} {
		t.Run(fmt.Sprint("ascii=", g.ascii), func(t *testing.T) { checkMarksMeanOneThing(t, g) })
	}
}

func checkMarksMeanOneThing(t *testing.T, g *glyphs) {
	meaning := map[string]string{}
	mark := func(glyph, what string) {
		glyph = strings.TrimSpace(glyph)
		if glyph == "" {
			return
		}
		if was, ok := meaning[glyph]; ok && was != what {
			t.Errorf("%q means both %s and %s", glyph, was, what)
		}
		meaning[glyph] = what
	}
	mark(g.sep, "separator")
	mark(g.bullet, "separator")
	mark(g.cursor, "selected")
	mark(g.bar, "selected")
	mark(g.folded, "folded")
	mark(g.unfolded, "unfolded")
	mark(g.up, "older")
	mark(g.down, "newer")
	mark(g.ok, "done")
	mark(g.failed, "failed")
	mark(g.toolRunning, "running")
	mark(g.retry, "retried")
	mark(g.none, "none")
	for _, f := range g.spinner {
		mark(f, "running")
	}
	same := map[string]string{"completed": "done", "in_progress": "running", "blocked": "cancelled"}
	for status, glyph := range g.status {
		what := status
		if s, ok := same[status]; ok {
			what = s
		}
		mark(glyph, what)
	}
	mark(g.statusOf("unknown"), "an unknown status")
	mark("?", "asks") // a session that asks, and help's key
}
