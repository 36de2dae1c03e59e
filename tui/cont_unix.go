//go:build !windows

package tui

import (
	"context"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"
)

// followCont takes the terminal back after the process was stopped and
// continued from outside (kill -STOP, then -CONT or fg): the shell that
// reported the stop has put the terminal back in its own modes, so the
// dashboard, still drawing as if in raw mode, had its keys echoed and the
// shell's lines left across it.
//
// After a ctrl+z the dashboard asked for (ours set), Bubble Tea takes the
// terminal back itself.
func followCont(ctx context.Context, p *tea.Program, tty *os.File, ours *atomic.Bool) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	for {
		select {
		case <-ctx.Done():
			return
		case <-cont:
		}
		// Not when it ends (a kill of a stopped job comes with a SIGCONT)
		// nor from the background (bg): setting the terminal's modes there
		// would stop the process again (SIGTTOU); fg sends another SIGCONT.
		if ours.Swap(false) || ctx.Err() != nil || !foreground(tty) {
			continue
		}
		if err := p.ReleaseTerminal(); err == nil {
			p.RestoreTerminal()
		}
	}
}

// foreground reports whether this process's group is the terminal's
// foreground group.
func foreground(tty *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// quietStop lets a dashboard that ends from the background (a stopped job
// killed by the shell's `kill %1`, which continues it to take the signal)
// restore its terminal and exit: the kernel would stop it again for
// setting the terminal's modes, and it would wait stopped, its run held
// under its lock, until fg. With SIGTTOU ignored the modes are set, and
// the terminal is as the dashboard found it.
func quietStop() { signal.Ignore(syscall.SIGTTOU) }
