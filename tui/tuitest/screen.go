package tuitest

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// WaitForText waits up to timeout until every text has been drawn by tm,
// styling stripped. Each call consumes the output it reads, so texts drawn
// in the same frame go in one call. It suits text that appears whole (a new
// row or line), not a figure that changes in place.
func WaitForText(t testing.TB, tm *teatest.TestModel, timeout time.Duration, texts ...string) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func(b []byte) bool {
		screen := []byte(ansi.Strip(string(b)))
		for _, text := range texts {
			if !bytes.Contains(screen, []byte(text)) {
				return false
			}
		}
		return true
	}, teatest.WithDuration(timeout), teatest.WithCheckInterval(20*time.Millisecond))
}

// Watched wraps a model and keeps the text of the last frame it rendered,
// so that a test can wait for what the model shows rather than for what the
// renderer wrote (which, redrawing only changed cells, need not contain a
// new line as one run of text).
type Watched struct {
	tea.Model
	last atomic.Pointer[string]
}

// Watch wraps m.
func Watch(m tea.Model) *Watched { return &Watched{Model: m} }

// Update forwards to the wrapped model.
func (w *Watched) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	m, cmd := w.Model.Update(msg)
	w.Model = m
	return w, cmd
}

// View renders the wrapped model and remembers the frame's text.
func (w *Watched) View() tea.View {
	v := w.Model.View()
	text := ansi.Strip(v.Content)
	w.last.Store(&text)
	return v
}

// WaitForView waits up to timeout until the last rendered frame contains
// every text, styling stripped, and returns that frame.
func (w *Watched) WaitForView(t testing.TB, timeout time.Duration, texts ...string) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var frame string
		if p := w.last.Load(); p != nil {
			frame = *p
		}
		missing := ""
		for _, text := range texts {
			if !strings.Contains(frame, text) {
				missing = text
				break
			}
		}
		if missing == "" {
			return frame
		}
		if time.Now().After(deadline) {
			t.Fatalf("the dashboard did not show %q within %v; last frame:\n%s", missing, timeout, frame)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
