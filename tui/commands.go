package tui

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Every call on the Controller happens here, inside a tea.Cmd, and comes
// back to Update as a message that says what it was about.

// actionTimeout bounds a controller call so a stuck runtime shows an error
// instead of a dialog that never closes.
const actionTimeout = 15 * time.Second

// connectedMsg is the result of subscribing to a controller.
type connectedMsg struct {
	ctl      event.Controller
	sub      *event.Subscription
	snap     event.Snapshot
	readOnly bool
}

// startedMsg is the result of Options.Start for a goal typed at the prompt.
type startedMsg struct {
	ctl event.Controller
	err error
}

// actionKind names a controller action, for the status line.
type actionKind int

const (
	actBroadcast actionKind = iota
	actMessage
	actAnswer
	actSkip
	actSkipAll
	actCancel
)

// actionDoneMsg is the result of one action on the run.
type actionDoneMsg struct {
	kind       actionKind
	detail     string // what to tell the person on success
	questionID string
	err        error
}

// transcriptMsg carries messages read from the store for the session view.
type transcriptMsg struct {
	sessionID string
	gen       int
	older     bool
	msgs      []event.MessageInfo
	err       error
}

// olderBroadcastsMsg carries older feed items read from the store.
type olderBroadcastsMsg struct {
	before string
	items  []event.BroadcastInfo
	err    error
}

// panicMsg reports a panic caught in a command.
type panicMsg struct{ err error }

// guard turns a panic inside a command into a message, so that a bug in one
// call shows as an error instead of tearing down the person's terminal with
// a stack trace. The stack goes to the log.
func guard(cmd tea.Cmd) tea.Cmd {
	return func() (msg tea.Msg) {
		defer func() {
			if r := recover(); r != nil {
				slog.Error("tui: panic in command", "panic", r, "stack", string(debug.Stack()))
				msg = panicMsg{err: fmt.Errorf("internal error: %v", r)}
			}
		}()
		return cmd()
	}
}

func connectCmd(ctl event.Controller) tea.Cmd {
	return guard(func() tea.Msg {
		// Subscribe before the snapshot: events after Snapshot.LastSeq are
		// then guaranteed to be on the subscription.
		sub := ctl.Subscribe(lossyBuffer)
		return connectedMsg{ctl: ctl, sub: sub, snap: ctl.Snapshot(), readOnly: ctl.ReadOnly()}
	})
}

func startCmd(ctx context.Context, start func(context.Context, string) (event.Controller, error), goal string) tea.Cmd {
	return guard(func() tea.Msg {
		if start == nil {
			return startedMsg{err: fmt.Errorf("this dashboard cannot start runs (no Start function was given)")}
		}
		ctl, err := start(ctx, goal)
		if err == nil && ctl == nil {
			err = fmt.Errorf("the runtime started no run")
		}
		return startedMsg{ctl: ctl, err: err}
	})
}

func actionCmd(ctx context.Context, kind actionKind, detail, questionID string, call func(context.Context) error) tea.Cmd {
	return guard(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		return actionDoneMsg{kind: kind, detail: detail, questionID: questionID, err: call(ctx)}
	})
}

// loadTranscriptCmd reads the newest transcriptKeep messages of a session.
// The store reads forward from an index, so it starts at a hint (the highest
// index seen in events, if any) and pages on, keeping only the tail.
func loadTranscriptCmd(ctx context.Context, ctl event.Controller, sessionID string, gen, hint int) tea.Cmd {
	return guard(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		from := max(hint-transcriptKeep, 0)
		var tail []event.MessageInfo
		for {
			page, err := ctl.Transcript(ctx, sessionID, from, transcriptKeep)
			if err != nil {
				return transcriptMsg{sessionID: sessionID, gen: gen, err: fmt.Errorf("reading the transcript of %s: %w", sessionID, err)}
			}
			tail = append(tail, page...)
			if len(tail) > transcriptKeep {
				tail = append(tail[:0:0], tail[len(tail)-transcriptKeep:]...)
			}
			if len(page) < transcriptKeep {
				break
			}
			from = page[len(page)-1].Index + 1
		}
		return transcriptMsg{sessionID: sessionID, gen: gen, msgs: tail}
	})
}

// loadOlderTranscriptCmd reads the page of messages before history index first.
func loadOlderTranscriptCmd(ctx context.Context, ctl event.Controller, sessionID string, gen, first int) tea.Cmd {
	return guard(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		from := max(first-transcriptPage, 0)
		msgs, err := ctl.Transcript(ctx, sessionID, from, first-from)
		if err != nil {
			err = fmt.Errorf("reading older messages of %s: %w", sessionID, err)
		}
		return transcriptMsg{sessionID: sessionID, gen: gen, older: true, msgs: msgs, err: err}
	})
}

func loadOlderBroadcastsCmd(ctx context.Context, ctl event.Controller, before string) tea.Cmd {
	return guard(func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, actionTimeout)
		defer cancel()
		items, err := ctl.Broadcasts(ctx, before, feedPage)
		if err != nil {
			err = fmt.Errorf("reading older broadcasts: %w", err)
		}
		return olderBroadcastsMsg{before: before, items: items, err: err}
	})
}

// tickMsg drives the spinners and elapsed times.
type tickMsg struct{}

// noticeMsg is a Notice that has arrived.
type noticeMsg Notice

// waitNotice waits for the next notice; the model asks again after each.
func waitNotice(ctx context.Context, ch <-chan Notice) tea.Cmd {
	return func() tea.Msg {
		select {
		case n, ok := <-ch:
			if !ok {
				return nil
			}
			return noticeMsg(n)
		case <-ctx.Done():
			return nil
		}
	}
}

func tickCmd(d time.Duration) tea.Cmd {
	return tea.Tick(d, func(time.Time) tea.Msg { return tickMsg{} })
}
