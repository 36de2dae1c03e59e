//go:build !windows

package tui

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"golang.org/x/sys/unix"
)

// followCont takes the terminal back after the process was stopped and
// continued from outside (kill -STOP, then -CONT or fg): the shell that
// reported the stop has put the terminal back in its own modes, so the
// dashboard, still drawing as if in raw mode, had its keys echoed and the
// shell's lines left across it.
//
// After a ctrl+z (ours set) the terminal is already the shell's: it is
// taken back once the job is in the foreground again, and the dashboard
// told. A job that bg continued runs on without a screen: fg sends no
// continue to a running job, so its turn to the foreground is watched
// for instead.
func followCont(ctx context.Context, p *tea.Program, tty *os.File, ours *atomic.Bool) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	defer signal.Stop(cont)
	var watch *time.Ticker
	var watching <-chan time.Time
	defer func() {
		if watch != nil {
			watch.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case <-cont:
			if !ours.Load() && ctx.Err() == nil {
				p.Send(continuedMsg{}) // a stop from outside
			}
		case <-watching:
		}
		// Not when it ends (a kill of a stopped job comes with a SIGCONT)
		// nor from the background (bg): setting the terminal's modes there
		// would stop the process again (SIGTTOU); fg sends another SIGCONT.
		if ctx.Err() != nil {
			continue
		}
		if !foreground(tty) {
			if ours.Load() && watch == nil {
				watch = time.NewTicker(fgWatch)
				watching = watch.C
			}
			continue
		}
		background := watch != nil
		if watch != nil {
			watch.Stop()
			watch, watching = nil, nil
		}
		if ours.Swap(false) {
			if err := p.RestoreTerminal(); err != nil {
				slog.Warn("tui: taking the terminal back after ctrl+z", "err", err)
			}
			p.Send(tea.ClearScreen()) // the alternate screen came back empty
			p.Send(resumedMsg{background: background})
			continue
		}
		if err := p.ReleaseTerminal(); err == nil {
			p.RestoreTerminal()
		}
	}
}

// fgWatch is how often a dashboard running in the background after a
// ctrl+z and bg looks whether fg has brought it back.
const fgWatch = 200 * time.Millisecond

// foreground reports whether this process's group is the terminal's
// foreground group.
func foreground(tty *os.File) bool {
	pgrp, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return err == nil && pgrp == unix.Getpgrp()
}

// stopProcess hands the terminal back and stops this process's group as
// the terminal's ctrl+z would.
func stopProcess(p *tea.Program) {
	if p.ReleaseTerminal() == nil {
		syscall.Kill(0, syscall.SIGTSTP)
	}
}

// quietEnd keeps a dashboard that ends with its terminal handed back
// (after ctrl+z, stopped or run on with bg, then `kill %1`) off the
// terminal the shell has: Bubble Tea's shutdown would draw its last frame
// down the shell's screen and set the terminal's modes under the line the
// shell is reading. Its descriptors point at /dev/null until the returned
// func puts them back, for what is printed after the dashboard.
func quietEnd(out *os.File, released bool) (restore func()) {
	if !released || foreground(out) {
		return func() {}
	}
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return func() {}
	}
	defer null.Close()
	var saved [][2]int // descriptor, its copy
	for _, f := range []*os.File{out, os.Stdin} {
		fd := int(f.Fd())
		if slices.ContainsFunc(saved, func(s [2]int) bool { return s[0] == fd }) {
			continue
		}
		keep, err := unix.Dup(fd)
		if err != nil {
			continue
		}
		if err := unix.Dup2(int(null.Fd()), fd); err != nil {
			unix.Close(keep)
			continue
		}
		saved = append(saved, [2]int{fd, keep})
	}
	return func() {
		for _, s := range saved {
			unix.Dup2(s[1], s[0])
			unix.Close(s[1])
		}
	}
}

// quietStop lets a dashboard that ends from the background (a stopped job
// killed by the shell's `kill %1`, which continues it to take the signal)
// restore its terminal and exit: the kernel would stop it again for
// setting the terminal's modes, and it would wait stopped, its run held
// under its lock, until fg. With SIGTTOU ignored the modes are set, and
// the terminal is as the dashboard found it.
func quietStop() { signal.Ignore(syscall.SIGTTOU) }
