package tui

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/colorprofile"
	"github.com/charmbracelet/x/term"
)

// frameRate is how many times a second the renderer looks for a new frame
// to draw. Runtime events already reach Update at most about 30 times a
// second (coalesceWindow), and a key's echo within 33 ms reads as at once;
// Bubble Tea's default of 60 wakes an idle dashboard twice as often for
// nothing (1.2% of a core against 0.6% in a dashboard left open).
const frameRate = 30

// ErrTerminalGone ends the dashboard whose terminal went away without a
// SIGHUP to say so (one ignored by whoever started swarmdeck, as nohup
// does): the caller stops the run as for a quit. It is a cancellation.
var ErrTerminalGone = fmt.Errorf("the dashboard's terminal is gone: %w", context.Canceled)

// watchTerminal ends ctx with ErrTerminalGone once out, a terminal when it
// starts, no longer answers: a process whose terminal closed without a
// SIGHUP reaching it would otherwise run on unseen, its run held under its
// lock with questions that nobody can answer. It looks once a second.
func watchTerminal(ctx context.Context, out *os.File, lost context.CancelCauseFunc) {
	if _, _, err := term.GetSize(out.Fd()); err != nil {
		return // not a terminal: nothing to watch
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, _, err := term.GetSize(out.Fd()); err != nil {
			lost(ErrTerminalGone)
			return
		}
	}
}

// ErrNoTerminal is why the dashboard cannot start: there is no terminal to
// draw on and read keys from.
var ErrNoTerminal = errors.New("the dashboard needs a terminal, and there is none here: for scripts and CI use `swarmdeck run --headless GOAL` (or `resume --headless RUN_ID`)")

// CheckTerminal reports ErrNoTerminal when Run could not open the terminal,
// so that a caller can say so before it starts or resumes a run the
// dashboard would never show. Like Run it reads keys from stdin when that
// is a terminal, and from the process's controlling terminal otherwise.
func CheckTerminal() error {
	tty := term.IsTerminal(os.Stdin.Fd())
	if !tty {
		if in, out, err := tea.OpenTTY(); err == nil {
			tty = true
			in.Close()
			if out != in {
				out.Close()
			}
		}
	}
	return terminalProblem(tty, os.Getenv("TERM"))
}

// terminalProblem is CheckTerminal's verdict on whether there is a
// terminal, and on the TERM it names.
func terminalProblem(tty bool, termName string) error {
	switch {
	case !tty:
		return ErrNoTerminal
	case termName == "dumb":
		return ErrDumbTerminal
	}
	return nil
}

// ErrDumbTerminal is why the dashboard does not start on a terminal that
// says it cannot move its cursor (an editor's shell buffer): it would be
// drawn in raw escape codes.
var ErrDumbTerminal = errors.New("the dashboard needs a terminal that can move its cursor, and TERM=dumb says this one cannot: " +
	"use `swarmdeck run --headless GOAL`, or set TERM (for example TERM=xterm-256color) if the terminal can")

// ASCIILocale reports whether the locale names a character set other than
// UTF-8, where the dashboard draws in ASCII (Options.ASCII), and so does a
// headless run's progress. The first of
// LC_ALL, LC_CTYPE and LANG that is set and not empty decides, as it does
// for the C library: LANG=C, LANG=POSIX or a Latin-1 locale mean ASCII,
// "en_US.UTF-8", "C.utf8" or macOS's bare "UTF-8" do not.
//
// None of them set counts as UTF-8, although the C library would take it
// for the C locale. That is what a process started without a login
// environment sees (a container run from a terminal, a service, some ssh
// setups), and the terminal it draws on is then nearly always a UTF-8
// one; someone whose terminal is not says so by setting the locale.
func ASCIILocale(getenv func(string) string) bool {
	for _, name := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := getenv(name); v != "" {
			v = strings.ToLower(v)
			return !strings.Contains(v, "utf-8") && !strings.Contains(v, "utf8")
		}
	}
	return false
}

// screenFile is where the dashboard draws: stdout when it is a terminal,
// and the process's controlling terminal when stdout goes elsewhere
// (`swarmdeck > run.txt`), as the keys are read from it when stdin does.
// Drawn into a file, the frames were unreadable there and the terminal
// showed nothing. close releases what screenFile opened.
func screenFile() (out *os.File, close func()) {
	if term.IsTerminal(os.Stdout.Fd()) {
		return os.Stdout, func() {}
	}
	in, tty, err := tea.OpenTTY()
	if err != nil {
		return os.Stdout, func() {}
	}
	return tty, func() {
		tty.Close()
		if in != tty {
			in.Close()
		}
	}
}

// Run runs the dashboard on the terminal until the person quits. The
// terminal is restored on quit, on ctrl+c and on a panic. It returns ctx's
// error when ctx ends first, and an error when the dashboard itself failed.
func Run(ctx context.Context, opts Options) error {
	// The model's context ends when the person quits (stopping the event
	// listener and any call in flight); only ctx itself kills the program.
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// Read once, here: the locale is the terminal's, and it does not
	// change while the dashboard runs.
	if ASCIILocale(os.Getenv) {
		opts.ASCII = true
	}
	m := newModel(mctx, cancel, opts)
	// The caller's ctx ends on SIGINT, SIGTERM and SIGHUP, which stop the
	// run as resumable: Bubble Tea's own handler would race it for the
	// same signal, and, its message no longer read once ctx had ended the
	// program, hold the program's shutdown for good.
	pctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	out, closeOut := screenFile()
	defer closeOut()
	go watchTerminal(pctx, out, lost)
	// The program ends with the run's context, once whatever restores the
	// terminal may do so from the background (see quietStop).
	tctx, tcancel := context.WithCancelCause(context.Background())
	defer tcancel(nil)
	unmute := make(chan func(), 1)
	go func() {
		<-pctx.Done()
		quietStop()
		unmute <- quietEnd(out, m.suspender.ours.Load())
		tcancel(context.Cause(pctx))
	}()
	defer func() {
		select {
		case restore := <-unmute:
			restore()
		default:
		}
	}()
	popts := []tea.ProgramOption{tea.WithContext(tctx), tea.WithoutSignalHandler(), tea.WithOutput(out), tea.WithFPS(frameRate)}
	// NO_COLOR (https://no-color.org): any non-empty value. The theme then
	// uses reverse video and bold instead of colour, and the renderer is
	// told to emit no colour codes at all, including from library parts.
	if os.Getenv("NO_COLOR") != "" {
		m.noColor = true
		m.applyTheme()
		popts = append(popts, tea.WithColorProfile(colorprofile.Ascii))
	}

	prog := tea.NewProgram(m, popts...)
	m.suspender.stop = func() { stopProcess(prog) }
	go followCont(pctx, prog, out, m.suspender.ours)
	final, err := prog.Run()
	if fm, ok := final.(Model); ok {
		if fm.sub != nil {
			fm.sub.Close() // the listener may not have seen the context end yet
		}
		if fm.crashed != nil {
			return fm.crashed
		}
	}
	switch {
	case err == nil, errors.Is(err, tea.ErrInterrupted):
		return nil
	case tctx.Err() != nil && errors.Is(err, tea.ErrProgramKilled):
		return context.Cause(pctx)
	case errors.Is(err, syscall.EIO):
		// The keys' side of a terminal that closed.
		return ErrTerminalGone
	case errors.Is(err, tea.ErrProgramPanic):
		return fmt.Errorf("the dashboard hit an internal error and closed; the run stays stored: %w", err)
	}
	return fmt.Errorf("dashboard: %w", err)
}
