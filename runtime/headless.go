package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// HeadlessOptions configure a run without the dashboard.
type HeadlessOptions struct {
	JSON   bool      // one event per line on Out
	Deltas bool      // include message.delta events (with JSON)
	Out    io.Writer // stdout
	// OutTerminal says that Out is a terminal: without JSON, the answer
	// is then written with its control characters escaped, as Log is, so
	// that a model's text cannot clear the screen or set the title.
	OutTerminal bool
	// Log receives progress for people when not JSON, and why a run did
	// not complete in either mode (stderr). Without JSON, the run's final
	// answer goes to Out, so that a script can capture it alone.
	Log     io.Writer
	Control io.Reader // --control -: commands, one per line; nil: none
	// Notices are lines for people from outside the run (a reload of the
	// configuration file), printed on Log in either mode.
	Notices <-chan string
	// ASCII writes the progress's own marks (✓, →, …) in ASCII, for a
	// locale whose character set is not UTF-8.
	ASCII bool
}

// Exit statuses of a headless run.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Headless runs start (which starts or resumes a run) and follows it to the
// end, printing events. It returns the process exit status.
func (e *Engine) Headless(ctx context.Context, opts HeadlessOptions, start func(context.Context) (*Run, error)) (int, error) {
	sub := e.bus.Subscribe(4096)
	defer sub.Close()
	e.AttachHuman(opts.Control != nil)
	run, err := start(ctx)
	if err != nil {
		if storeFailure(err) {
			// The database could not take the run (a full disk): not a
			// mistake in how swarmdeck was called.
			return ExitFailed, err
		}
		return ExitUsage, err
	}
	run.SetHumanAttached(opts.Control != nil)
	if opts.Control != nil {
		go run.ServeControl(ctx, opts.Control)
	}
	if opts.Log != nil {
		opts.Log = terminalSafe{opts.Log}
	}
	if opts.OutTerminal && !opts.JSON && opts.Out != nil {
		opts.Out = terminalSafe{opts.Out}
	}
	enc := json.NewEncoder(opts.Out)
	enc.SetEscapeHTML(false)
	printer := &progress{w: opts.Log, out: opts.Out}
	if opts.ASCII && opts.Log != nil {
		printer.w = asciiMarks{opts.Log}
	}
	show := func(ev event.Event) error {
		if opts.JSON {
			if ev.Type != event.MessageDelta || opts.Deltas {
				return enc.Encode(ev)
			}
		} else if opts.Log != nil || opts.Out != nil {
			return printer.print(ev)
		}
		return nil
	}
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return ExitFailed, fmt.Errorf("event stream closed")
			}
			if ev.RunID != run.ID() {
				continue
			}
			if err := show(ev); err != nil {
				var aw *answerWriteError
				if errors.As(err, &aw) {
					// The run is over; only its answer did not get out.
					<-run.Done()
					return ExitFailed, fmt.Errorf("run %s completed, but its answer could not be written to the output (%v): `swarmdeck export %s` has it", run.ID(), aw.err, run.ID())
				}
				// Whoever read the output has gone (a closed pipe): stop
				// the run resumable rather than run on unseen.
				run.InterruptFor("its output could not be written: " + err.Error())
				return ExitFailed, &InterruptedError{RunID: run.ID(), Reason: "its output could not be written: " + err.Error()}
			}
			if ev.Type == event.RunFinished {
				<-run.Done()
				if err := e.store.CheckFile(); err != nil {
					// Whatever the run came to, it is not stored.
					return ExitFailed, err
				}
				if ev.Run != nil && ev.Run.Status == RunCompleted {
					return ExitOK, nil
				}
				if ev.Run != nil && ev.Run.Status == RunInterrupted {
					return ExitFailed, &InterruptedError{RunID: run.ID(), Reason: ev.Run.Error}
				}
				if opts.JSON && opts.Log != nil && ev.Run != nil {
					fmt.Fprintf(opts.Log, "run %s %s: %s\n", ev.Run.ID, ev.Run.Status, orNone(ev.Run.Error))
				}
				return ExitFailed, nil
			}
		case line := <-opts.Notices:
			if opts.Log != nil {
				fmt.Fprintln(opts.Log, line)
			}
		case <-ctx.Done():
			run.InterruptFor(context.Cause(ctx).Error())
			// The events up to the run's end, run.finished included, are
			// still shown: a consumer of --json learns how it ended.
			drainTo(sub, run.ID(), show)
			return ExitFailed, &InterruptedError{RunID: run.ID()}
		}
	}
}

// drainTo shows the run's events still queued on sub, up to its
// run.finished, waiting a little for the ones just committed.
func drainTo(sub *event.Subscription, runID string, show func(event.Event) error) {
	timeout := time.NewTimer(2 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-sub.C:
			if !ok {
				return
			}
			if ev.RunID != runID {
				continue
			}
			if show(ev) != nil || ev.Type == event.RunFinished {
				return
			}
		case <-timeout.C:
			return
		}
	}
}

// InterruptedError is what Headless returns when the run stops before its
// end, resumable: its context ended (a signal), or the run stopped itself
// because the model server failed (Reason says so). The command line adds
// the exact command, with the flags that find the same database.
type InterruptedError struct {
	RunID  string
	Reason string // why the run stopped itself; "" when it was stopped from outside
}

func (e *InterruptedError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("run %s stopped: %s", e.RunID, e.Reason)
	}
	return fmt.Sprintf("interrupted: run %s is stored and can be resumed", e.RunID)
}

func orNone(reason string) string {
	if reason == "" {
		return "no reason recorded"
	}
	return reason
}

// progress prints a readable line for the events a person cares about on
// w, and the run's final answer on out.
type progress struct {
	w, out io.Writer
	ended  map[string]bool // sessions whose end has been printed
}

// storeFailure reports whether err came from SQLite (a full disk, an I/O
// error) rather than from what was asked.
func storeFailure(err error) bool {
	_, ok := store.SQLiteCode(err)
	return ok
}

// answerWriteError is a run's final answer that could not be written to
// the output.
type answerWriteError struct{ err error }

func (e *answerWriteError) Error() string { return "writing the answer: " + e.err.Error() }

// print shows ev on the progress log; at the run's end it writes the answer
// to the output, and reports if that failed: a script capturing the answer
// must not take an empty one for it.
func (p *progress) print(ev event.Event) error {
	if ev.Type == event.RunFinished && ev.Run != nil && ev.Run.Status == RunCompleted && ev.Run.Result != "" && p.out != nil {
		if _, err := fmt.Fprintf(p.out, "%s\n", ev.Run.Result); err != nil {
			p.printLog(ev)
			return &answerWriteError{err}
		}
	}
	p.printLog(ev)
	return nil
}

func (p *progress) printLog(ev event.Event) {
	if p.w == nil {
		return
	}
	switch ev.Type {
	case event.RunStarted:
		r := ev.Run
		note := ""
		if r.Scripted {
			note = " (the built-in scripted model, offline)"
		}
		verb := "started"
		if r.Resumed {
			verb = "resumed"
		}
		fmt.Fprintf(p.w, "run %s %s: %s\n  provider %s, model %s%s\n", r.ID, verb, OneLine(r.Goal, goalShown), r.Provider, r.Model, note)
	case event.SessionCreated:
		s := ev.Session
		if s.ParentID != "" {
			fmt.Fprintf(p.w, "  + %s %s spawned by %s: %s\n", s.ID, name(s), s.ParentID, s.Title)
		}
	case event.SessionStatus:
		s := ev.Session
		switch s.Status {
		case "completed", "failed", "cancelled":
			// An ended session can be told of again (a note, its usage):
			// its end is printed once, unless a message woke it since.
			if p.ended[s.ID] {
				return
			}
			if p.ended == nil {
				p.ended = map[string]bool{}
			}
			p.ended[s.ID] = true
		default:
			delete(p.ended, s.ID)
		}
		switch s.Status {
		case "completed":
			fmt.Fprintf(p.w, "  ✓ %s %s completed (%d tokens)\n", s.ID, name(s), s.Usage.TotalTokens)
		case "failed", "cancelled":
			fmt.Fprintf(p.w, "  ✗ %s %s %s: %s\n", s.ID, name(s), s.Status, s.Reason)
		default:
			if s.Retrying != "" {
				fmt.Fprintf(p.w, "  ↻ %s %s: model call failed, %s\n", s.ID, name(s), s.Retrying)
			}
		}
	case event.ToolStarted:
		fmt.Fprintf(p.w, "    %s → %s\n", ev.SessionID, ev.Tool.Name)
	case event.BroadcastSent:
		b := ev.Broadcast
		fmt.Fprintf(p.w, "  ✉ %s %s → %s: %s\n", b.Kind, b.From, b.Target, OneLine(b.Message, 100))
	case event.QuestionOpened:
		q := ev.Question
		switch {
		case q.HumanAbsent:
			fmt.Fprintf(p.w, "  ? %s asks the agents (%s; no person to answer): %s\n", q.From, q.ID, q.Question)
		case q.AllowHuman:
			fmt.Fprintf(p.w, "  ? %s asks (%s): %s\n", q.From, q.ID, q.Question)
		}
	case event.QuestionClosed:
		q := ev.Question
		what, sep := "closed, "+strings.ReplaceAll(q.Status, "_", " "), ": "
		if q.Status == QuestionClosed {
			what, sep = "closed: the session that asked it ended", "; "
		}
		var got []string
		switch n := len(q.Responses); n {
		case 0:
		case 1:
			got = append(got, "1 answer")
		default:
			got = append(got, fmt.Sprintf("%d answers", n))
		}
		if len(q.TimedOut) > 0 {
			got = append(got, "no answer from "+strings.Join(q.TimedOut, ", "))
		}
		if len(got) > 0 {
			what += sep + strings.Join(got, "; ")
		}
		fmt.Fprintf(p.w, "  ? %s %s\n", q.ID, what)
	case event.DelegationUpdated:
		d := ev.Delegation
		fmt.Fprintf(p.w, "  ⇢ delegation %s %s\n", d.ID, d.Status)
	case event.Error:
		fmt.Fprintf(p.w, "  ! %s\n", ev.Error)
	case event.RunFinished:
		r := ev.Run
		fmt.Fprintf(p.w, "run %s %s (%d tokens)\n", r.ID, r.Status, r.Usage.TotalTokens)
		if r.Error != "" && r.Status != RunInterrupted { // Headless returns that one, for the way back
			fmt.Fprintf(p.w, "error: %s\n", r.Error)
		}
	}
}

func name(s *event.SessionInfo) string {
	if s.Label != "" {
		return s.Agent + " (" + s.Label + ")"
	}
	return s.Agent
}

// asciiMarks writes the marks of the progress lines in ASCII: in a
// locale that is not UTF-8 they came out as a few unreadable characters.
type asciiMarks struct{ w io.Writer }

var markReplacer = strings.NewReplacer("✓", "ok", "✗", "x", "↻", "~", "→", "->", "✉", "*", "⇢", "=>", "…", "...")

func (a asciiMarks) Write(p []byte) (int, error) {
	if _, err := io.WriteString(a.w, markReplacer.Replace(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// goalShown is how much of a goal the line that starts a run shows: the
// whole goal is stored, and a goal read from a file may be pages long.
const goalShown = 300

// terminalSafe passes text to a terminal with its control characters shown
// as escapes (\x1b, \u009b), line feeds and tabs excepted: what is printed
// holds text from the goal, from models and from files, and none of it may
// move the cursor, clear the screen or set the title or the clipboard.
type terminalSafe struct{ w io.Writer }

func (t terminalSafe) Write(p []byte) (int, error) {
	if _, err := t.w.Write(TerminalText(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// TerminalText is text with its control characters (C0 but line feed and
// tab, DEL, C1, the bidi controls, and bytes that are not UTF-8) written as
// Go escapes.
func TerminalText[T string | []byte](text T) T {
	b := []byte(text)
	clean := true
	for i := 0; i < len(b); i++ {
		if c := b[i]; c < 0x20 && c != '\n' && c != '\t' || c == 0x7f || c >= 0x80 {
			clean = false
			break
		}
	}
	if clean {
		return text
	}
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, "\\x%02x", b[0])
		case r < 0x20 && r != '\n' && r != '\t' || r == 0x7f:
			out = fmt.Appendf(out, "\\x%02x", r)
		case r >= 0x80 && r < 0xa0, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			// C1 controls, and the bidi embeddings, overrides and isolates,
			// which can show the rest of a line reversed.
			out = fmt.Appendf(out, "\\u%04x", r)
		default:
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return T(out)
}
