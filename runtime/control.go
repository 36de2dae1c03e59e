package runtime

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// MaxControlLine bounds one line of the --control channel.
const MaxControlLine = 64 << 10

// Command is one line of the --control channel: the same actions as the
// dashboard's keys.
type Command struct {
	Op         string `json:"op"`
	QuestionID string `json:"question_id"`
	Text       string `json:"text"`
	Target     string `json:"target"`
	Category   string `json:"category"`
	SessionID  string `json:"session_id"`
	NoReply    bool   `json:"no_reply"`
}

// jsonProblem words a decoding error of a control line for the person who
// wrote it: encoding/json names Go's types ("Go value of type
// runtime.Command").
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return err.Error()
	}
	value := te.Value // "bool", "array", "number", "string", "object"
	if value == "bool" {
		value = "boolean"
	}
	if te.Field == "" {
		return "it is a JSON " + value + ", and a command is an object"
	}
	return fmt.Sprintf("%q is a JSON %s, and it takes a %s", te.Field, value, jsonKind(te.Type.Kind()))
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.Slice, reflect.Array:
		return "list"
	case reflect.Map, reflect.Struct:
		return "object"
	}
	return "number"
}

// ParseCommand reads one control line, with errors that say how to fix it.
func ParseCommand(line []byte) (Command, error) {
	var c Command
	// A byte order mark, which some Windows tools put before the first
	// line of what they write, is no part of the command.
	line = bytes.TrimSpace(bytes.TrimPrefix(bytes.TrimSpace(line), []byte("\uFEFF")))
	if len(line) > MaxControlLine {
		return c, fmt.Errorf("control line is %d bytes; the limit is %d", len(line), MaxControlLine)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf("control line is not a JSON command (%s); e.g. {\"op\":\"answer\",\"question_id\":\"q-1a2b\",\"text\":\"yes\"}", jsonProblem(err))
	}
	if dec.More() {
		return c, errors.New("control line holds more than one JSON value: send one command per line")
	}
	need := func(field, value string) error {
		if strings.TrimSpace(value) == "" {
			return fmt.Errorf("op %q needs %q", c.Op, field)
		}
		return nil
	}
	switch c.Op {
	case "answer":
		if err := need("question_id", c.QuestionID); err != nil {
			return c, err
		}
		return c, need("text", c.Text)
	case "skip":
		return c, need("question_id", c.QuestionID)
	case "skip_all":
		return c, nil
	case "broadcast":
		return c, need("text", c.Text)
	case "message":
		if err := need("session_id", c.SessionID); err != nil {
			return c, err
		}
		return c, need("text", c.Text)
	case "cancel":
		return c, need("session_id", c.SessionID)
	case "":
		return c, errors.New(`control line has no "op": use answer, skip, skip_all, broadcast, message or cancel`)
	default:
		return c, fmt.Errorf("unknown op %q: use answer, skip, skip_all, broadcast, message or cancel", c.Op)
	}
}

// Apply performs a command on a controller.
func (c Command) Apply(ctx context.Context, ctl event.Controller) error {
	switch c.Op {
	case "answer":
		return ctl.Answer(ctx, c.QuestionID, c.Text)
	case "skip":
		return ctl.Skip(ctx, c.QuestionID)
	case "skip_all":
		return ctl.SkipAll(ctx)
	case "broadcast":
		return ctl.Broadcast(ctx, c.Text, c.Target, c.Category)
	case "message":
		return ctl.SendMessage(ctx, c.SessionID, c.Text, c.NoReply)
	case "cancel":
		return ctl.Cancel(ctx, c.SessionID)
	}
	return fmt.Errorf("unknown op %q", c.Op)
}

// ServeControl reads commands from in until it ends or ctx is done. A bad
// line or a failed action becomes an error event; nothing else happens.
// Once in has ended nobody can answer a question any more, so the run goes
// on as one without --control: open questions stop waiting for a person.
func (r *Run) ServeControl(ctx context.Context, in io.Reader) {
	defer func() {
		if ctx.Err() == nil {
			r.SetHumanAttached(false)
		}
	}()
	br := bufio.NewReaderSize(in, 64<<10)
	for ctx.Err() == nil {
		line, tooLong, err := readLine(br)
		if len(bytes.TrimSpace(line)) > 0 || tooLong {
			var (
				cerr error
				cmd  Command
			)
			if tooLong {
				cerr = fmt.Errorf("control line longer than %d bytes: ignored", MaxControlLine)
			} else if cmd, cerr = ParseCommand(line); cerr == nil {
				cerr = cmd.Apply(ctx, r)
			}
			if cerr != nil {
				r.reportError(r.controlSession(cmd), "control: "+cerr.Error())
			}
		}
		if err != nil {
			return
		}
	}
}

// readLine reads one line, discarding the rest of a line over the limit.
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, isPrefix, err := br.ReadLine()
		if len(line)+len(chunk) > MaxControlLine {
			tooLong = true
		} else {
			line = append(line, chunk...)
		}
		if err != nil || !isPrefix {
			return line, tooLong, err
		}
	}
}

// controlSession is the session an error of command c concerns, for its
// error event: the session c names (a message, a cancel, a broadcast to a
// subtree), or the asker of the open question c answers or skips; for a bad
// line, c holds what could be read of it. Otherwise the error concerns the
// run (a line that is no command, a session the run does not have, a
// question that is not open, a broadcast to all), and names the root
// session as the run's own events do. The root exists from the run's start, before any control
// line is read, so an error event never goes without a session.
func (r *Run) controlSession(c Command) string {
	for _, id := range []string{c.SessionID, c.Target} {
		if id == "" {
			continue
		}
		if s := r.session(id); s != nil {
			return s.id
		}
	}
	if c.QuestionID != "" {
		b := r.questions
		b.mu.Lock()
		q := b.open[c.QuestionID]
		b.mu.Unlock()
		if q != nil && q.asker != nil {
			return q.asker.id
		}
	}
	return r.rootID()
}

// reportError logs an error event for the run about session sessionID.
func (r *Run) reportError(sessionID, msg string) {
	r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Emit(event.Event{Type: event.Error, RunID: r.id, SessionID: sessionID, Error: msg})
		return err
	})
}
