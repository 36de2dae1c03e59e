package store

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"
)

// Export is the JSON shape of `swarmdeck export` (DESIGN.md section 7).
type Export struct {
	Run         ExportRun          `json:"run"`
	Sessions    []ExportSession    `json:"sessions"`
	Broadcasts  []ExportBroadcast  `json:"broadcasts"`
	Plans       []ExportPlan       `json:"plans"`
	Delegations []ExportDelegation `json:"delegations"`
	Questions   []ExportQuestion   `json:"questions"`
}

type ExportRun struct {
	ID        string    `json:"id"`
	Goal      string    `json:"goal"`
	Status    string    `json:"status"`
	Provider  string    `json:"provider"`
	BaseURL   string    `json:"base_url"` // the model server's, without credentials; "" for the scripted model
	Model     string    `json:"model"`
	Scripted  bool      `json:"scripted"`
	Workspace string    `json:"workspace"`
	Result    string    `json:"result"`
	Error     string    `json:"error"`
	Usage     Usage     `json:"usage"`
	CreatedAt time.Time `json:"created_at"`
	EndedAt   string    `json:"ended_at"`
	Pauses    []Pause   `json:"pauses"` // stretches it stood stopped before a resume
}

type ExportSession struct {
	ID            string          `json:"id"`
	ParentID      string          `json:"parent_id"`
	Agent         string          `json:"agent"`
	Label         string          `json:"label"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	Depth         int             `json:"depth"`
	SharedContext json.RawMessage `json:"shared_context"`
	Result        string          `json:"result"`
	Error         string          `json:"error"`
	Usage         Usage           `json:"usage"`
	Turns         int             `json:"turns"`
	CreatedAt     time.Time       `json:"created_at"`
	EndedAt       string          `json:"ended_at"` // "" while it has not ended
	Messages      []ExportMessage `json:"messages"`
}

type ExportMessage struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	Synthetic  bool       `json:"synthetic"`
	NoReply    bool       `json:"no_reply"`
	Source     string     `json:"source"`
	ToolCalls  []ToolCall `json:"tool_calls"`
	ToolCallID string     `json:"tool_call_id"`
	CreatedAt  time.Time  `json:"created_at"`
}

type ExportBroadcast struct {
	ID          string      `json:"id"`
	Kind        string      `json:"kind"`
	FromSession string      `json:"from_session"`
	From        string      `json:"from"`
	Category    string      `json:"category"`
	Target      string      `json:"target"`
	Message     string      `json:"message"`
	Timestamp   time.Time   `json:"timestamp"`
	Recipients  []string    `json:"recipients"`
	Skipped     []Recipient `json:"skipped"`
}

type ExportPlan struct {
	SessionID string           `json:"session_id"`
	Tasks     []ExportPlanTask `json:"tasks"`
}

type ExportPlanTask struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	DependsOn   []string `json:"depends_on"`
	Note        string   `json:"note,omitempty"`
}

type ExportDelegation struct {
	ID            string `json:"id"`
	ParentSession string `json:"parent_session"`
	SessionID     string `json:"session_id"`
	PlanTaskID    string `json:"plan_task_id"`
	Description   string `json:"description"`
	Status        string `json:"status"`
	Depth         int    `json:"depth"`
	Result        string `json:"result"`
	Error         string `json:"error"`
}

type ExportQuestion struct {
	ID             string            `json:"id"`
	FromSession    string            `json:"from_session"`
	Kind           string            `json:"kind"`
	Question       string            `json:"question"`
	Options        json.RawMessage   `json:"options"`
	AllowHuman     bool              `json:"allow_human"`
	Responses      map[string]string `json:"responses"`
	HumanResponded bool              `json:"human_responded"`
	HumanSkipped   bool              `json:"human_skipped"`
	TimedOut       []string          `json:"timed_out"`
	Status         string            `json:"status"`
}

// Export reads a whole run.
func (s *Store) Export(ctx context.Context, runID string) (*Export, error) {
	var x *Export
	err := s.Snapshot(ctx, func(ctx context.Context) error {
		var err error
		x, err = s.export(ctx, runID)
		return err
	})
	return x, err
}

func (s *Store) export(ctx context.Context, runID string) (*Export, error) {
	r, err := s.readExport(ctx, runID)
	if err != nil {
		return nil, err
	}
	x := &Export{Run: r.run, Sessions: make([]ExportSession, 0, len(r.sessions))}
	for _, se := range r.sessions {
		x.Sessions = append(x.Sessions, r.session(se))
	}
	if err := r.rest(ctx, s, x); err != nil {
		return nil, err
	}
	return x, nil
}

// WriteExport writes the export of run runID to w as `swarmdeck export`
// prints it: the JSON of Export, indented by two spaces, without HTML
// escapes. It writes a session at a time and lets go of its messages once
// written, where encoding the whole Export held the run's text several
// times over (1.3 GB for the 147 MB export of a 1,000-session run). fix,
// if not nil, may change the run's part first.
func (s *Store) WriteExport(ctx context.Context, runID string, w io.Writer, fix func(*ExportRun)) error {
	// One read transaction: a run deleted, or written on, by another
	// process meanwhile is exported as it was when the export began, not
	// partly.
	return s.Snapshot(ctx, func(ctx context.Context) error { return s.writeExport(ctx, runID, w, fix) })
}

func (s *Store) writeExport(ctx context.Context, runID string, w io.Writer, fix func(*ExportRun)) error {
	r, err := s.readExport(ctx, runID)
	if err != nil {
		return err
	}
	if fix != nil {
		fix(&r.run)
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	jw := &indentWriter{w: bw}
	bw.WriteString("{\n  \"run\": ")
	jw.value("  ", r.run)
	bw.WriteString(",\n  \"sessions\": ")
	jw.array("  ", len(r.sessions), func(i int) any {
		se := r.sessions[i]
		es := r.session(se)
		delete(r.msgs, se.ID) // written: its text can go
		return es
	})
	// The rest is small next to the messages: read and written whole.
	var x Export
	if err := r.rest(ctx, s, &x); err != nil {
		return err
	}
	for _, part := range []struct {
		key string
		n   int
		at  func(int) any
	}{
		{"broadcasts", len(x.Broadcasts), func(i int) any { return x.Broadcasts[i] }},
		{"plans", len(x.Plans), func(i int) any { return x.Plans[i] }},
		{"delegations", len(x.Delegations), func(i int) any { return x.Delegations[i] }},
		{"questions", len(x.Questions), func(i int) any { return x.Questions[i] }},
	} {
		bw.WriteString(",\n  \"" + part.key + "\": ")
		jw.array("  ", part.n, part.at)
	}
	bw.WriteString("\n}\n")
	err = jw.err
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return &WriteError{err}
	}
	return nil
}

// WriteError is a failure of WriteExport to write, not to read: the
// output's (a full disk, a closed pipe), not the database's.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing the export: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// indentWriter writes JSON values as an Encoder with SetIndent("", "  ")
// and SetEscapeHTML(false) writes them inside a larger value: each value
// indented for where it goes. The first error sticks.
type indentWriter struct {
	w        *bufio.Writer
	compact  bytes.Buffer
	indented bytes.Buffer
	enc      *json.Encoder
	err      error
}

// value writes v, whose first line follows what is written already and
// whose other lines start with prefix.
func (j *indentWriter) value(prefix string, v any) {
	if j.err != nil {
		return
	}
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.compact)
		j.enc.SetEscapeHTML(false)
	}
	j.compact.Reset()
	j.indented.Reset()
	if j.err = j.enc.Encode(v); j.err != nil {
		return
	}
	if j.err = json.Indent(&j.indented, bytes.TrimSuffix(j.compact.Bytes(), []byte("\n")), prefix, "  "); j.err != nil {
		return
	}
	_, j.err = j.w.Write(j.indented.Bytes())
}

// array writes a list of n values, at(i) giving each, as value writes one.
func (j *indentWriter) array(prefix string, n int, at func(int) any) {
	if n == 0 {
		j.w.WriteString("[]")
		return
	}
	j.w.WriteString("[\n")
	inner := prefix + "  "
	for i := range n {
		j.w.WriteString(inner)
		j.value(inner, at(i))
		if i < n-1 {
			j.w.WriteByte(',')
		}
		j.w.WriteByte('\n')
	}
	j.w.WriteString(prefix + "]")
}

// exportRead is what an export reads first: the run, its sessions and
// their messages.
type exportRead struct {
	runID    string
	run      ExportRun
	sessions []Session
	msgs     map[string][]Message
}

func (s *Store) readExport(ctx context.Context, runID string) (*exportRead, error) {
	run, err := s.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	r := &exportRead{runID: run.ID, run: ExportRun{ID: run.ID, Goal: run.Goal, Status: run.Status, Provider: run.Provider, Model: run.Model,
		BaseURL: run.BaseURL, Scripted: run.Scripted, Workspace: run.Workspace, Result: run.Result, Error: run.Error, Usage: run.Usage, CreatedAt: run.CreatedAt, EndedAt: Time(run.EndedAt),
		Pauses: append([]Pause{}, run.Pauses...)}}
	if r.sessions, err = s.Sessions(ctx, r.runID); err != nil {
		return nil, err
	}
	if r.msgs, err = s.AllMessages(ctx, r.runID); err != nil {
		return nil, err
	}
	// The run's row, like a session's, is written now and then: a run
	// still going, or killed, has spent at least what its sessions have.
	if sum := SessionsUsage(r.sessions); sum.TotalTokens > r.run.Usage.TotalTokens {
		r.run.Usage = sum
	}
	return r, nil
}

// session is the export of one session, with its messages.
func (r *exportRead) session(se Session) ExportSession {
	es := ExportSession{ID: se.ID, ParentID: se.ParentID, Agent: se.Agent, Label: se.Label, Title: se.Title, Kind: se.Kind,
		Status: se.Status, Depth: se.Depth, SharedContext: se.SharedContext, Result: se.Result, Error: se.Error, Usage: se.Usage,
		Turns: se.Turns, CreatedAt: se.CreatedAt, EndedAt: Time(se.EndedAt), Messages: []ExportMessage{}}
	if len(es.SharedContext) == 0 {
		es.SharedContext = json.RawMessage("{}")
	}
	for _, m := range r.msgs[se.ID] {
		calls := m.ToolCalls
		if calls == nil {
			calls = []ToolCall{}
		}
		es.Messages = append(es.Messages, ExportMessage{Role: m.Role, Content: m.Content, Synthetic: m.Synthetic, NoReply: m.NoReply,
			Source: m.Source, ToolCalls: calls, ToolCallID: m.ToolCallID, CreatedAt: m.CreatedAt})
	}
	return es
}

// rest reads the parts after the sessions into x.
func (r *exportRead) rest(ctx context.Context, s *Store, x *Export) error {
	runID := r.runID
	bcs, err := s.Broadcasts(ctx, runID, 0, 0)
	if err != nil {
		return err
	}
	x.Broadcasts = make([]ExportBroadcast, 0, len(bcs))
	for _, b := range bcs {
		eb := ExportBroadcast{ID: b.ID, Kind: b.Kind, FromSession: b.FromSession, From: b.FromLabel, Category: b.Category, Target: b.Target,
			Message: b.Message, Timestamp: b.CreatedAt, Recipients: []string{}, Skipped: []Recipient{}}
		for _, r := range b.Recipients {
			if r.Status == "delivered" {
				eb.Recipients = append(eb.Recipients, r.SessionID)
			} else {
				eb.Skipped = append(eb.Skipped, r)
			}
		}
		if b.Skipped > len(eb.Skipped) && b.FromSession != "" {
			// The sender of a broadcast to its siblings counts itself as
			// skipped (the tool's result and the event say so), and is
			// not stored among the recipients: the list says who.
			eb.Skipped = append(eb.Skipped, Recipient{SessionID: b.FromSession, Status: "skipped", Reason: "sender"})
		}
		x.Broadcasts = append(x.Broadcasts, eb)
	}
	plans, err := s.Plans(ctx, runID)
	if err != nil {
		return err
	}
	x.Plans = []ExportPlan{}
	for _, se := range r.sessions {
		tasks, ok := plans[se.ID]
		if !ok {
			continue
		}
		p := ExportPlan{SessionID: se.ID, Tasks: []ExportPlanTask{}}
		for _, t := range tasks {
			deps := t.DependsOn
			if deps == nil {
				deps = []string{}
			}
			p.Tasks = append(p.Tasks, ExportPlanTask{ID: t.ID, Description: t.Description, Status: t.Status, DependsOn: deps, Note: t.Note})
		}
		x.Plans = append(x.Plans, p)
	}
	dels, err := s.Delegations(ctx, runID)
	if err != nil {
		return err
	}
	x.Delegations = []ExportDelegation{}
	for _, d := range dels {
		x.Delegations = append(x.Delegations, ExportDelegation{ID: d.ID, ParentSession: d.ParentSession, SessionID: d.SessionID,
			PlanTaskID: d.PlanTaskID, Description: d.Description, Status: d.Status, Depth: d.Depth, Result: d.Result, Error: d.Error})
	}
	qs, err := s.Questions(ctx, runID)
	if err != nil {
		return err
	}
	x.Questions = []ExportQuestion{}
	for _, q := range qs {
		eq := ExportQuestion{ID: q.ID, FromSession: q.FromSession, Kind: q.Kind, Question: q.Question, Options: q.Options,
			AllowHuman: q.AllowHuman, Responses: map[string]string{}, HumanResponded: q.HumanResponded, HumanSkipped: q.HumanSkipped, TimedOut: q.TimedOut, Status: q.Status}
		if eq.TimedOut == nil {
			eq.TimedOut = []string{}
		}
		for _, r := range q.Responses {
			eq.Responses[r.Name] = r.Content
		}
		x.Questions = append(x.Questions, eq)
	}
	return nil
}
