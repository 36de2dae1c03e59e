//go:build !windows

package tui

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	tea "charm.land/bubbletea/v2"
)

// followCont takes the terminal back after the process was stopped and
// continued from outside (kill -STOP, then -CONT or fg): the shell that
// reported the stop has put the terminal back in its own modes, so the
// dashboard, still drawing as if in raw mode, had its keys echoed and the
// shell's lines left across it. A resume from ctrl+z is Bubble Tea's own
// and is left to it (suspended).
func followCont(ctx context.Context, p *tea.Program, suspended *atomic.Bool) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	for {
		select {
		case <-ctx.Done():
			return
		case <-cont:
		}
		if suspended.Load() {
			continue
		}
		if err := p.ReleaseTerminal(); err == nil {
			p.RestoreTerminal()
		}
	}
}
