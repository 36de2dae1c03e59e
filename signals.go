package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"
)

// stopSignals end a command's context: Ctrl-C, kill's default, a closed
// terminal (SIGHUP), which stops a run as Ctrl-C does (stored
// "interrupted" and resumable, not left "running" by a dead process), and
// Ctrl-\ (SIGQUIT), whose default in a Go program is a goroutine dump,
// exit status 2 (which says "bad usage" here) and a terminal left in the
// dashboard's modes.
var stopSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// stillStopping is how long after a first signal the command is told to
// be slow: stopping a run takes milliseconds, unless a wait inside SQLite
// (up to store.BusyTimeout for a database another process holds) or a
// slow disk holds it.
const stillStopping = time.Second

// watchSignals returns a context that the first stop signal ends, with a
// signalCause. A command may take a while to act on it, and SQLite's wait
// for a lock does not look at the context: if it has not returned a
// second later, stderr says so, and a Ctrl-C then exits at once. Nothing
// is lost that way: every write is a transaction that a killed process
// leaves whole or undone, and a run left "running" by it is resumed like
// one whose process died. atOnce tidies up for such an exit, and says what
// it left.
//
// Only SIGINT, a person at the terminal, hurries the stop. Another
// SIGTERM is what a shell sends again to a stopped job it already killed
// when it exits, and a hangup comes with the continue of such a job; the
// stop those asked for is under way.
func watchSignals(stderr io.Writer, atOnce func() string) (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, stopSignals...)
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
			if first == os.Interrupt && stopUnderWay.Load() {
				// The person has already asked to stop, from the
				// dashboard, and been told this key stops at once.
				fmt.Fprintln(stderr, atOnce())
				os.Exit(1)
			}
			cancel(signalCause(first.String() + " signal received"))
		case <-done:
			return
		}
		slow := time.NewTimer(stillStopping)
		defer slow.Stop()
		if first == syscall.SIGHUP {
			slow.Stop() // no terminal to say it on
		}
		for {
			select {
			case <-slow.C:
				how := "press Ctrl-C"
				switch {
				case inBackground(stderr):
					// A Ctrl-C typed at the shell goes to its foreground job.
					how = fmt.Sprintf("kill -INT %d", os.Getpid())
				case first == os.Interrupt:
					how += " again"
				}
				fmt.Fprintf(stderr, "swarmdeck: still stopping (%s); %s to stop at once\n", first, how)
			case sig := <-sigs:
				if sig != os.Interrupt {
					continue
				}
				fmt.Fprintln(stderr, atOnce())
				os.Exit(1)
				return
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		if ctx.Err() == nil {
			signal.Stop(sigs)
		}
		// Otherwise the signals stay caught, with nobody reading them, until
		// the process exits: the command was stopped by one, and is about to
		// exit. Their defaults back, another Ctrl-\ in that instant (or a
		// shell's second SIGHUP) would dump every goroutine and exit 2, or
		// kill it with 129.
		close(done)
		cancel(nil)
	}
}

// stopUnderWay is set once the person has stopped the command by other
// means than a signal (quitting the dashboard) and been told that Ctrl-C
// stops at once: the first Ctrl-C then does, as a second one would.
var stopUnderWay atomic.Bool

// signalCause says which signal ended a context ("interrupt signal
// received"). It is context.Canceled to errors.Is, as the cause that
// signal.NotifyContext gives is: what the signal ends stops as if
// cancelled, and says why.
type signalCause string

func (s signalCause) Error() string { return string(s) }

func (s signalCause) Is(target error) bool { return target == context.Canceled }
