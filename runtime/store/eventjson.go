package store

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/jsontext"
)

// The event log is written by hand rather than by encoding/json. A run
// logs about ten events per model call, and reflection over event.Event
// cost a few microseconds each, on the writer, which every session waits
// for. Worse, the first json.Marshal of an Event in a process builds the
// encoders of every payload type, 0.2 to 0.3 ms inside the commit that
// stores a new run, which its orchestrator waits for before its first
// call. The frequent payloads (runs, sessions, messages, tools,
// broadcasts) are appended field by field; the rest (plans, delegations,
// questions, deltas) go through encoding/json, each building only its own
// encoder. The result decodes to the event encoding/json would write, but
// for message events, which keep only the message's address:
// eventjson_test.go checks that on a table and under fuzzing.

// appendEvent appends e as the log keeps it.
func appendEvent(b []byte, e *event.Event) ([]byte, error) {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, e.Seq, 10)
	b, err := appendTime(b, `,"time":`, e.Time)
	if err != nil {
		return b, err
	}
	b = append(b, `,"type":`...)
	b = jsontext.AppendString(b, string(e.Type))
	b = append(b, `,"run_id":`...)
	b = jsontext.AppendString(b, e.RunID)
	b = append(b, `,"session_id":`...)
	b = jsontext.AppendString(b, e.SessionID)
	if e.Run != nil {
		b = append(b, `,"run":`...)
		if b, err = appendRunInfo(b, e.Run); err != nil {
			return b, err
		}
	}
	if e.Session != nil {
		b = append(b, `,"session":`...)
		if b, err = appendSessionInfo(b, e.Session); err != nil {
			return b, err
		}
	}
	if e.Message != nil {
		b = append(b, `,"message":`...)
		b = appendMessageInfo(b, e.Message)
	}
	if e.Delta != nil {
		if b, err = appendMarshaled(b, `,"delta":`, e.Delta); err != nil {
			return b, err
		}
	}
	if e.Tool != nil {
		b = append(b, `,"tool":`...)
		b = appendToolInfo(b, e.Tool)
	}
	if e.Broadcast != nil {
		b = append(b, `,"broadcast":`...)
		if b, err = appendBroadcastInfo(b, e.Broadcast); err != nil {
			return b, err
		}
	}
	if e.Plan != nil {
		if b, err = appendMarshaled(b, `,"plan":`, e.Plan); err != nil {
			return b, err
		}
	}
	if e.Delegation != nil {
		if b, err = appendMarshaled(b, `,"delegation":`, e.Delegation); err != nil {
			return b, err
		}
	}
	if e.Question != nil {
		if b, err = appendMarshaled(b, `,"question":`, e.Question); err != nil {
			return b, err
		}
	}
	if e.Error != "" {
		b = append(b, `,"error":`...)
		b = jsontext.AppendString(b, e.Error)
	}
	return append(b, '}'), nil
}

// appendMarshaled appends key and v encoded by encoding/json.
func appendMarshaled(b []byte, key string, v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return b, err
	}
	b = append(b, key...)
	return append(b, raw...), nil
}

// appendTime appends key and t as time.Time's MarshalJSON writes it, with
// its error for a year it cannot write.
func appendTime(b []byte, key string, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		_, err := t.MarshalJSON()
		return b, err
	}
	b = append(b, key...)
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendEndedAt appends "ended_at" for what has ended; what is still going
// has no such key (omitzero).
func appendEndedAt(b []byte, t time.Time) ([]byte, error) {
	if t.IsZero() {
		return b, nil
	}
	return appendTime(b, `,"ended_at":`, t)
}

func appendUsage(b []byte, u event.Usage) []byte {
	b = append(b, `{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(u.PromptTokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(u.CompletionTokens), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(u.TotalTokens), 10)
	return append(b, '}')
}

// appendField appends ,"key":"value", or nothing when value is empty and
// the field is omitempty.
func appendField(b []byte, key, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(b, key...)
	return jsontext.AppendString(b, value)
}

func appendRunInfo(b []byte, r *event.RunInfo) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, r.ID)
	b = appendField(b, `,"goal":`, r.Goal, false)
	b = appendField(b, `,"status":`, r.Status, false)
	b = appendField(b, `,"provider":`, r.Provider, false)
	b = appendField(b, `,"model":`, r.Model, false)
	if r.Scripted {
		b = append(b, `,"scripted":true`...)
	}
	if r.Resumed {
		b = append(b, `,"resumed":true`...)
	}
	b = appendField(b, `,"workspace":`, r.Workspace, true)
	b = appendField(b, `,"result":`, r.Result, true)
	b = appendField(b, `,"error":`, r.Error, true)
	b = append(b, `,"usage":`...)
	b = appendUsage(b, r.Usage)
	b, err := appendTime(b, `,"started_at":`, r.StartedAt)
	if err != nil {
		return b, err
	}
	if b, err = appendEndedAt(b, r.EndedAt); err != nil {
		return b, err
	}
	if len(r.Pauses) > 0 {
		b = append(b, `,"pauses":[`...)
		for i, p := range r.Pauses {
			if i > 0 {
				b = append(b, ',')
			}
			if b, err = appendTime(b, `{"from":`, p.From); err != nil {
				return b, err
			}
			if b, err = appendTime(b, `,"to":`, p.To); err != nil {
				return b, err
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

func appendSessionInfo(b []byte, s *event.SessionInfo) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, s.ID)
	b = appendField(b, `,"parent_id":`, s.ParentID, true)
	b = appendField(b, `,"agent":`, s.Agent, false)
	b = appendField(b, `,"label":`, s.Label, true)
	b = appendField(b, `,"title":`, s.Title, true)
	b = appendField(b, `,"status":`, s.Status, false)
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(s.Depth), 10)
	b = appendField(b, `,"kind":`, s.Kind, true)
	if len(s.SharedContext) > 0 {
		// As encoding/json does with a RawMessage: checked and compacted.
		var buf bytes.Buffer
		if err := json.Compact(&buf, s.SharedContext); err != nil {
			return b, err
		}
		b = append(b, `,"shared_context":`...)
		b = append(b, buf.Bytes()...)
	}
	b = appendField(b, `,"reason":`, s.Reason, true)
	b = appendField(b, `,"result":`, s.Result, true)
	b = appendField(b, `,"error":`, s.Error, true)
	b = append(b, `,"usage":`...)
	b = appendUsage(b, s.Usage)
	b = append(b, `,"turns":`...)
	b = strconv.AppendInt(b, int64(s.Turns), 10)
	if s.WaitingHuman {
		b = append(b, `,"waiting_human":true`...)
	}
	b = appendField(b, `,"retrying":`, s.Retrying, true)
	b = appendField(b, `,"last_tool":`, s.LastTool, true)
	if s.LastToolFailed {
		b = append(b, `,"last_tool_failed":true`...)
	}
	b, err := appendTime(b, `,"created_at":`, s.CreatedAt)
	if err != nil {
		return b, err
	}
	if b, err = appendEndedAt(b, s.EndedAt); err != nil {
		return b, err
	}
	return append(b, '}'), nil
}

// appendMessageInfo appends a message as the log keeps it: its address.
// Its content, tool calls and usage are in the messages table, where
// readers of the log find them (see EventsAfter).
func appendMessageInfo(b []byte, m *event.MessageInfo) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, m.ID, 10)
	b = append(b, `,"index":`...)
	b = strconv.AppendInt(b, int64(m.Index), 10)
	b = appendField(b, `,"role":`, m.Role, false)
	b = appendField(b, `,"source":`, m.Source, false)
	b = append(b, `,"synthetic":`...)
	b = strconv.AppendBool(b, m.Synthetic)
	b = append(b, `,"no_reply":`...)
	b = strconv.AppendBool(b, m.NoReply)
	return append(b, '}')
}

func appendToolInfo(b []byte, t *event.ToolInfo) []byte {
	b = append(b, `{"call_id":`...)
	b = jsontext.AppendString(b, t.CallID)
	b = appendField(b, `,"name":`, t.Name, false)
	b = appendField(b, `,"arguments":`, t.Arguments, true)
	b = appendField(b, `,"result":`, t.Result, true)
	if t.IsError {
		b = append(b, `,"is_error":true`...)
	}
	if t.DurationMS != 0 {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendInt(b, t.DurationMS, 10)
	}
	return append(b, '}')
}

func appendBroadcastInfo(b []byte, m *event.BroadcastInfo) ([]byte, error) {
	b = append(b, `{"id":`...)
	b = jsontext.AppendString(b, m.ID)
	b = appendField(b, `,"kind":`, m.Kind, false)
	b = appendField(b, `,"from_session":`, m.FromSession, true)
	b = appendField(b, `,"from":`, m.From, false)
	b = appendField(b, `,"category":`, m.Category, true)
	b = appendField(b, `,"target":`, m.Target, false)
	b = appendField(b, `,"message":`, m.Message, false)
	b = append(b, `,"recipients":`...)
	if m.Recipients == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range m.Recipients {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsontext.AppendString(b, r)
		}
		b = append(b, ']')
	}
	if m.Skipped != 0 {
		b = append(b, `,"skipped":`...)
		b = strconv.AppendInt(b, int64(m.Skipped), 10)
	}
	if m.NoReply {
		b = append(b, `,"no_reply":true`...)
	}
	b, err := appendTime(b, `,"timestamp":`, m.Timestamp)
	if err != nil {
		return b, err
	}
	return append(b, '}'), nil
}
