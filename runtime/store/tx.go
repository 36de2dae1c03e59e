package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Tx is the writer's view of the database inside one operation.
type Tx struct {
	s      *Store
	ctx    context.Context
	events []event.Event
	broken error
}

func (tx *Tx) stmt(query string) (*sql.Stmt, error) {
	if st, ok := tx.s.stmts[query]; ok {
		return st, nil
	}
	st, err := tx.s.conn.PrepareContext(tx.ctx, query)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	tx.s.stmts[query] = st
	return st, nil
}

func (tx *Tx) exec(query string, args ...any) (sql.Result, error) {
	st, err := tx.stmt(query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(tx.ctx, args...)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func jsonText(v any) string {
	if v == nil {
		return "[]"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "null"
	}
	return string(b)
}

func rawOr(raw json.RawMessage, def string) string {
	if len(raw) == 0 {
		return def
	}
	return string(raw)
}

// Emit appends an event to the log; it is published after the commit. The
// sequence number and time are filled in here.
func (tx *Tx) Emit(e event.Event) (event.Event, error) {
	s := tx.s
	s.seqMu.Lock()
	seq, ok := s.seqs[e.RunID]
	s.seqMu.Unlock()
	if !ok {
		var max sql.NullInt64
		st, err := tx.stmt(`SELECT MAX(seq) FROM events WHERE run_id = ?`)
		if err != nil {
			return e, err
		}
		if err := st.QueryRowContext(tx.ctx, e.RunID).Scan(&max); err != nil {
			return e, err
		}
		seq = max.Int64
	}
	seq++
	e.Seq = seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	data, err := json.Marshal(compact(e))
	if err != nil {
		return e, err
	}
	if _, err := tx.exec(`INSERT INTO events (run_id, seq, session_id, type, time, data) VALUES (?, ?, ?, ?, ?, ?)`,
		e.RunID, e.Seq, e.SessionID, string(e.Type), Time(e.Time), string(data)); err != nil {
		return e, err
	}
	s.seqMu.Lock()
	s.seqs[e.RunID] = seq
	s.seqMu.Unlock()
	tx.events = append(tx.events, e)
	return e, nil
}

// compact drops what the log would otherwise store twice: message bodies
// live in the messages table, referenced by id.
func compact(e event.Event) event.Event {
	if e.Message != nil {
		m := *e.Message
		m.Content = ""
		m.ToolCalls = nil
		e.Message = &m
	}
	return e
}

// InsertRun creates a run.
func (tx *Tx) InsertRun(r *Run) error {
	_, err := tx.exec(`INSERT INTO runs (id, goal, status, provider, model, scripted, workspace, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, r.Goal, r.Status, r.Provider, r.Model, b2i(r.Scripted), r.Workspace, Time(r.CreatedAt), Time(r.CreatedAt))
	return err
}

// UpdateRun writes the mutable fields of a run.
func (tx *Tx) UpdateRun(r *Run) error {
	_, err := tx.exec(`UPDATE runs SET status = ?, provider = ?, model = ?, scripted = ?, result = ?, error = ?,
		prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, human_skip_all = ?, updated_at = ?, ended_at = ? WHERE id = ?`,
		r.Status, r.Provider, r.Model, b2i(r.Scripted), r.Result, r.Error, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens,
		b2i(r.HumanSkipAll), Time(time.Now()), Time(r.EndedAt), r.ID)
	return err
}

// UpsertSession writes a session whole.
func (tx *Tx) UpsertSession(x *Session) error {
	ctx := rawOr(x.SharedContext, "{}")
	now := time.Now()
	if x.CreatedAt.IsZero() {
		x.CreatedAt = now
	}
	_, err := tx.exec(`INSERT INTO sessions (run_id, id, parent_id, agent, label, title, task, kind, status, reason, depth,
		shared_context, wait_on, refs, result, error, prompt_tokens, completion_tokens, total_tokens, turns, completions,
		spawn_call, delegation_id, last_tool, created_at, updated_at, ended_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, id) DO UPDATE SET status = excluded.status, reason = excluded.reason,
		shared_context = excluded.shared_context, wait_on = excluded.wait_on, refs = excluded.refs,
		result = excluded.result, error = excluded.error, prompt_tokens = excluded.prompt_tokens,
		completion_tokens = excluded.completion_tokens, total_tokens = excluded.total_tokens, turns = excluded.turns,
		completions = excluded.completions, delegation_id = excluded.delegation_id, last_tool = excluded.last_tool,
		updated_at = excluded.updated_at, ended_at = excluded.ended_at`,
		x.RunID, x.ID, x.ParentID, x.Agent, x.Label, x.Title, x.Task, x.Kind, x.Status, x.Reason, x.Depth,
		ctx, jsonText(nonNil(x.WaitOn)), jsonText(nonNil(x.Refs)), x.Result, x.Error, x.Usage.PromptTokens, x.Usage.CompletionTokens,
		x.Usage.TotalTokens, x.Turns, x.Completions, x.SpawnCall, x.DelegationID, x.LastTool,
		Time(x.CreatedAt), Time(now), Time(x.EndedAt))
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// InsertMessage appends a message and sets its ID.
func (tx *Tx) InsertMessage(m *Message) error {
	calls := ""
	if len(m.ToolCalls) > 0 {
		b, err := json.Marshal(m.ToolCalls)
		if err != nil {
			return err
		}
		calls = string(b)
	}
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	res, err := tx.exec(`INSERT INTO messages (run_id, session_id, idx, role, content, tool_calls, tool_call_id, synthetic, no_reply, source,
		prompt_tokens, completion_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		m.RunID, m.SessionID, m.Index, m.Role, m.Content, calls, m.ToolCallID, b2i(m.Synthetic), b2i(m.NoReply), m.Source,
		m.Usage.PromptTokens, m.Usage.CompletionTokens, Time(m.CreatedAt))
	if err != nil {
		return fmt.Errorf("append message %d of %s: %w", m.Index, m.SessionID, err)
	}
	m.ID, _ = res.LastInsertId()
	return nil
}

// InsertInbox queues an item. It returns false when an item with the same
// key exists already (the delivery happened before a crash).
func (tx *Tx) InsertInbox(it *InboxItem) (bool, error) {
	if it.CreatedAt.IsZero() {
		it.CreatedAt = time.Now()
	}
	res, err := tx.exec(`INSERT OR IGNORE INTO inbox (run_id, session_id, key, kind, waking, content, source, from_session, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		it.RunID, it.SessionID, it.Key, it.Kind, b2i(it.Waking), it.Content, it.Source, it.FromSession, Time(it.CreatedAt))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	if n == 0 {
		return false, nil
	}
	it.ID, _ = res.LastInsertId()
	return true, nil
}

// MarkDelivered records that inbox items entered their session's history
// (consumedBy names the tool call that took them instead, if any).
func (tx *Tx) MarkDelivered(runID string, ids []int64, consumedBy string) error {
	now := Time(time.Now())
	for _, id := range ids {
		if _, err := tx.exec(`UPDATE inbox SET delivered_at = ?, consumed_by = ? WHERE id = ? AND run_id = ?`, now, consumedBy, id, runID); err != nil {
			return err
		}
	}
	return nil
}

// InsertEffect records the result of a side effect of a tool call.
func (tx *Tx) InsertEffect(runID, sessionID, callID string, n int, kind string, result []byte) error {
	_, err := tx.exec(`INSERT INTO call_effects (run_id, session_id, call_id, n, kind, result) VALUES (?, ?, ?, ?, ?, ?)`,
		runID, sessionID, callID, n, kind, string(result))
	return err
}

// InsertBroadcast stores a broadcast with its recipients.
func (tx *Tx) InsertBroadcast(b *Broadcast) error {
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now()
	}
	if _, err := tx.exec(`INSERT INTO broadcasts (run_id, id, seq, kind, from_session, from_label, category, target, message, no_reply, skipped, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.RunID, b.ID, b.Seq, b.Kind, b.FromSession, b.FromLabel, b.Category, b.Target, b.Message, b2i(b.NoReply), b.Skipped, Time(b.CreatedAt)); err != nil {
		return err
	}
	for _, r := range b.Recipients {
		if _, err := tx.exec(`INSERT OR REPLACE INTO broadcast_recipients (run_id, broadcast_id, session_id, status, reason) VALUES (?, ?, ?, ?, ?)`,
			b.RunID, b.ID, r.SessionID, r.Status, r.Reason); err != nil {
			return err
		}
	}
	return nil
}

// ReplacePlan stores a session's whole plan.
func (tx *Tx) ReplacePlan(runID, sessionID string, tasks []PlanTask) error {
	if _, err := tx.exec(`DELETE FROM plan_tasks WHERE run_id = ? AND session_id = ?`, runID, sessionID); err != nil {
		return err
	}
	for i, t := range tasks {
		if _, err := tx.exec(`INSERT INTO plan_tasks (run_id, session_id, id, pos, description, status, depends_on, note, created_at, completed_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			runID, sessionID, t.ID, i, t.Description, t.Status, jsonText(nonNil(t.DependsOn)), t.Note, Time(t.CreatedAt), Time(t.CompletedAt)); err != nil {
			return err
		}
	}
	return nil
}

// UpsertDelegation writes a delegation whole.
func (tx *Tx) UpsertDelegation(d *Delegation) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now()
	}
	_, err := tx.exec(`INSERT INTO delegations (run_id, id, parent_session, session_id, plan_task_id, description, status, depth, custom_config,
		result, error, created_at, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status, result = excluded.result,
		error = excluded.error, started_at = excluded.started_at, ended_at = excluded.ended_at`,
		d.RunID, d.ID, d.ParentSession, d.SessionID, d.PlanTaskID, d.Description, d.Status, d.Depth, rawOr(d.CustomConfig, "{}"),
		d.Result, d.Error, Time(d.CreatedAt), Time(d.StartedAt), Time(d.EndedAt))
	return err
}

// UpsertQuestion writes a question and its responses.
func (tx *Tx) UpsertQuestion(q *Question) error {
	if q.CreatedAt.IsZero() {
		q.CreatedAt = time.Now()
	}
	_, err := tx.exec(`INSERT INTO questions (run_id, id, from_session, kind, question, allow_human, options, multi_select, recipients,
		status, human_responded, timed_out, created_at, deadline, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (run_id, id) DO UPDATE SET status = excluded.status, human_responded = excluded.human_responded,
		timed_out = excluded.timed_out, closed_at = excluded.closed_at, recipients = excluded.recipients`,
		q.RunID, q.ID, q.FromSession, q.Kind, q.Question, b2i(q.AllowHuman), rawOr(q.Options, "[]"), b2i(q.MultiSelect),
		jsonText(nonNil(q.Recipients)), q.Status, b2i(q.HumanResponded), jsonText(nonNil(q.TimedOut)), Time(q.CreatedAt), Time(q.Deadline), Time(q.ClosedAt))
	if err != nil {
		return err
	}
	for _, r := range q.Responses {
		if err := tx.InsertResponse(q.RunID, q.ID, r); err != nil {
			return err
		}
	}
	return nil
}

// InsertResponse records one answer to a question.
func (tx *Tx) InsertResponse(runID, questionID string, r Response) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	_, err := tx.exec(`INSERT OR REPLACE INTO question_responses (run_id, question_id, responder, name, content, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		runID, questionID, r.Responder, r.Name, r.Content, Time(r.CreatedAt))
	return err
}

// RememberAnswer keeps a human answer for repeated questions.
func (tx *Tx) RememberAnswer(key, answer string) error {
	_, err := tx.exec(`INSERT OR REPLACE INTO human_answers (question_key, answer, updated_at) VALUES (?, ?, ?)`, key, answer, Time(time.Now()))
	return err
}

// LastSeq is the sequence number of the last event emitted for a run.
func (tx *Tx) LastSeq(runID string) (int64, error) {
	s := tx.s
	s.seqMu.Lock()
	seq, ok := s.seqs[runID]
	s.seqMu.Unlock()
	if ok {
		return seq, nil
	}
	var max sql.NullInt64
	st, err := tx.stmt(`SELECT MAX(seq) FROM events WHERE run_id = ?`)
	if err != nil {
		return 0, err
	}
	err = st.QueryRowContext(tx.ctx, runID).Scan(&max)
	return max.Int64, err
}
