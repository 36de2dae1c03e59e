package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// ErrNotFound is returned for an unknown run.
var ErrNotFound = errors.New("not found")

// ErrAmbiguous is a run id prefix that more than one run has (or none
// given at all).
var ErrAmbiguous = errors.New("ambiguous")

// ambiguousError is an ErrAmbiguous that says it in its own words.
type ambiguousError string

func (e ambiguousError) Error() string        { return string(e) }
func (e ambiguousError) Is(target error) bool { return target == ErrAmbiguous }

// querier is what the reads of this file run on: the read pool, or the one
// read transaction of a Snapshot.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type snapshotKey struct{}

type snapshot struct {
	s  *Store
	tx *sql.Tx
}

// Snapshot calls read with a context in which every read of the store sees
// the database as it was at the first of them: they share one read
// transaction. Reads of a run that another process is writing made one by
// one could each see a later state than the last; what was written between
// them would be in none, or in some and not others. read must not write.
func (s *Store) Snapshot(ctx context.Context, read func(ctx context.Context) error) error {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	return read(context.WithValue(ctx, snapshotKey{}, snapshot{s, tx}))
}

// reader is the read transaction of the Snapshot that ctx is in, or else
// the read pool.
func (s *Store) reader(ctx context.Context) querier {
	if snap, ok := ctx.Value(snapshotKey{}).(snapshot); ok && snap.s == s {
		return snap.tx
	}
	return s.read
}

const runCols = `id, goal, status, provider, model, scripted, workspace, result, error, prompt_tokens, completion_tokens, total_tokens,
	human_skip_all, created_at, updated_at, ended_at, base_url, pauses, human_absent`

func scanRun(sc interface{ Scan(...any) error }) (*Run, error) {
	var r Run
	var scripted, skip, absent int
	var created, updated, ended, pauses string
	if err := sc.Scan(&r.ID, &r.Goal, &r.Status, &r.Provider, &r.Model, &scripted, &r.Workspace, &r.Result, &r.Error,
		&r.Usage.PromptTokens, &r.Usage.CompletionTokens, &r.Usage.TotalTokens, &skip, &created, &updated, &ended, &r.BaseURL, &pauses, &absent); err != nil {
		return nil, err
	}
	if pauses != "" {
		if err := json.Unmarshal([]byte(pauses), &r.Pauses); err != nil {
			return nil, fmt.Errorf("run %s: its pauses are unreadable: %w", r.ID, err)
		}
	}
	r.Scripted, r.HumanSkipAll, r.HumanAbsent = scripted != 0, skip != 0, absent != 0
	r.CreatedAt, r.UpdatedAt, r.EndedAt = ParseTime(created), ParseTime(updated), ParseTime(ended)
	return &r, nil
}

// Runs lists stored runs, newest first.
func (s *Store) Runs(ctx context.Context, limit int) ([]Run, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+runCols+` FROM runs ORDER BY created_at DESC, id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, rows.Err()
}

// EachRun calls fn with the stored runs whose ids start with prefix, newest
// first, until fn returns false. The run is fn's only until it returns.
func (s *Store) EachRun(ctx context.Context, prefix string, fn func(*Run) bool) error {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE substr(id, 1, ?) = ? ORDER BY created_at DESC, id DESC`,
		len(prefix), prefix)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return err
		}
		if !fn(r) {
			return nil
		}
	}
	return rows.Err()
}

// LastWrite is when the last thing was stored of a run: its row, a
// session's or a message. For a run whose process was killed, that is as
// close as the store gets to when it stopped.
func (s *Store) LastWrite(ctx context.Context, runID string) (time.Time, error) {
	var last time.Time
	later := func(v string) {
		if t := ParseTime(v); t.After(last) {
			last = t
		}
	}
	var v string
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT updated_at FROM runs WHERE id = ?`, runID).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return time.Time{}, err
	}
	later(v)
	err = s.reader(ctx).QueryRowContext(ctx, `SELECT created_at FROM messages WHERE run_id = ? ORDER BY id DESC LIMIT 1`, runID).Scan(&v)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, err
	}
	if err == nil {
		later(v)
	}
	// Times are stored without trailing zeros, so their text does not sort.
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT updated_at FROM sessions WHERE run_id = ?`, runID)
	if err != nil {
		return time.Time{}, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&v); err != nil {
			return time.Time{}, err
		}
		later(v)
	}
	return last, rows.Err()
}

// Run loads one run. An id prefix is accepted when it is unambiguous.
func (s *Store) Run(ctx context.Context, id string) (*Run, error) {
	if strings.TrimSpace(id) == "" {
		return nil, ambiguousError("an empty run id names no run: give one (`swarmdeck runs` lists them)")
	}
	r, err := scanRun(s.reader(ctx).QueryRowContext(ctx, `SELECT `+runCols+` FROM runs WHERE id = ?`, id))
	if err == nil {
		return r, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+runCols+` FROM runs WHERE id LIKE ? ESCAPE '\' ORDER BY id LIMIT ?`,
		likePrefix(id), maxCandidates+1)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found []*Run
	for rows.Next() {
		r, err := scanRun(rows)
		if err != nil {
			return nil, err
		}
		found = append(found, r)
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, fmt.Errorf("run %q: %w (list runs with `swarmdeck runs`)", id, ErrNotFound)
	}
	// More than one: name them, so that the person can pick.
	var ids []string
	for _, r := range found[:min(len(found), maxCandidates)] {
		ids = append(ids, r.ID)
	}
	more := ""
	if len(found) > maxCandidates {
		var n int
		if err := s.reader(ctx).QueryRowContext(ctx, `SELECT count(*) FROM runs WHERE id LIKE ? ESCAPE '\'`, likePrefix(id)).Scan(&n); err != nil {
			return nil, err
		}
		more = fmt.Sprintf(" and %d more", n-maxCandidates)
	}
	return nil, fmt.Errorf("run %q is %w: more than one run's id starts so (%s%s); give more of it", id, ErrAmbiguous, strings.Join(ids, ", "), more)
}

// maxCandidates is how many runs an ambiguous id prefix names.
const maxCandidates = 5

// LatestRun loads the newest run.
func (s *Store) LatestRun(ctx context.Context) (*Run, error) {
	r, err := scanRun(s.reader(ctx).QueryRowContext(ctx, `SELECT `+runCols+` FROM runs ORDER BY created_at DESC, id DESC LIMIT 1`))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFoundf("no runs stored in %s yet: start one with `swarmdeck \"your goal\"`", s.path)
	}
	return r, err
}

// notFound is an ErrNotFound that says what was not found in its own words.
type notFound string

func (e notFound) Error() string        { return string(e) }
func (e notFound) Is(target error) bool { return target == ErrNotFound }

func notFoundf(format string, args ...any) error { return notFound(fmt.Sprintf(format, args...)) }

func likePrefix(p string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(p) + "%"
}

// Sessions loads every session of a run, parents before children.
func (s *Store) Sessions(ctx context.Context, runID string) ([]Session, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT run_id, id, parent_id, agent, label, title, task, kind, status, reason, depth,
		shared_context, wait_on, refs, result, error, prompt_tokens, completion_tokens, total_tokens, turns, completions,
		spawn_call, delegation_id, last_tool, created_at, updated_at, ended_at
		FROM sessions WHERE run_id = ? ORDER BY depth, created_at, id`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		var x Session
		var sc, waitOn, refs, created, updated, ended string
		if err := rows.Scan(&x.RunID, &x.ID, &x.ParentID, &x.Agent, &x.Label, &x.Title, &x.Task, &x.Kind, &x.Status, &x.Reason, &x.Depth,
			&sc, &waitOn, &refs, &x.Result, &x.Error, &x.Usage.PromptTokens, &x.Usage.CompletionTokens, &x.Usage.TotalTokens,
			&x.Turns, &x.Completions, &x.SpawnCall, &x.DelegationID, &x.LastTool, &created, &updated, &ended); err != nil {
			return nil, err
		}
		x.SharedContext = json.RawMessage(sc)
		json.Unmarshal([]byte(waitOn), &x.WaitOn)
		json.Unmarshal([]byte(refs), &x.Refs)
		x.CreatedAt, x.UpdatedAt, x.EndedAt = ParseTime(created), ParseTime(updated), ParseTime(ended)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, s.addStoredTotals(ctx, runID, out)
}

// addStoredTotals sets each session's usage, turns and last tool (and
// whether its call failed) from its stored messages and shadow answers. A session's row is written when its
// status changes, not on every turn, so after a kill -9 the row of a
// session that was working lags behind its messages; the messages are
// what a resume continues from. The row's usage stays where it is the
// larger: it counts the tokens of failed calls, which no message holds.
func (s *Store) addStoredTotals(ctx context.Context, runID string, sessions []Session) error {
	type totals struct {
		usage  Usage
		turns  int
		tool   string
		callID string // the call of tool
		failed bool
	}
	by := map[string]*totals{}
	get := func(id string) *totals {
		t := by[id]
		if t == nil {
			t = &totals{}
			by[id] = t
		}
		return t
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT session_id, COUNT(*), COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM messages WHERE run_id = ? AND role = 'assistant' GROUP BY session_id`, runID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var n, p, c int
		if err := rows.Scan(&id, &n, &p, &c); err != nil {
			rows.Close()
			return err
		}
		t := get(id)
		t.turns, t.usage.PromptTokens, t.usage.CompletionTokens = n, p, c
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = s.reader(ctx).QueryContext(ctx, `SELECT responder, COALESCE(SUM(prompt_tokens), 0), COALESCE(SUM(completion_tokens), 0)
		FROM question_responses WHERE run_id = ? GROUP BY responder`, runID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id string
		var p, c int
		if err := rows.Scan(&id, &p, &c); err != nil {
			rows.Close()
			return err
		}
		get(id).usage.Add(Usage{PromptTokens: p, CompletionTokens: c})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// The last tool a session called: its last assistant message that
	// called any.
	rows, err = s.reader(ctx).QueryContext(ctx, `SELECT session_id, idx, tool_calls FROM messages
		WHERE run_id = ? AND role = 'assistant' AND tool_calls <> ''`, runID)
	if err != nil {
		return err
	}
	lastIdx := map[string]int{}
	for rows.Next() {
		var id, calls string
		var idx int
		if err := rows.Scan(&id, &idx, &calls); err != nil {
			rows.Close()
			return err
		}
		if prev, ok := lastIdx[id]; ok && prev > idx {
			continue
		}
		lastIdx[id] = idx
		var tc []ToolCall
		if json.Unmarshal([]byte(calls), &tc) == nil && len(tc) > 0 {
			t := get(id)
			t.tool, t.callID = tc[len(tc)-1].Name, tc[len(tc)-1].ID
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	// Whether that call failed: a failed call's result is {"error":...},
	// and nothing else begins so.
	rows, err = s.reader(ctx).QueryContext(ctx, `SELECT session_id, tool_call_id FROM messages
		WHERE run_id = ? AND role = 'tool' AND substr(content, 1, 9) = '{"error":'`, runID)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id, call string
		if err := rows.Scan(&id, &call); err != nil {
			rows.Close()
			return err
		}
		if t := by[id]; t != nil && t.callID != "" && t.callID == call {
			t.failed = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range sessions {
		x := &sessions[i]
		t := by[x.ID]
		if t == nil {
			continue
		}
		t.usage.TotalTokens = t.usage.PromptTokens + t.usage.CompletionTokens
		// The row holds more where calls that failed reported tokens,
		// which no message carries (see the runtime's spentOnFailure).
		if t.usage.TotalTokens >= x.Usage.TotalTokens {
			x.Usage = t.usage
		}
		x.Turns = t.turns
		if t.tool != "" {
			x.LastTool, x.LastToolFailed = t.tool, t.failed
		}
	}
	return nil
}

// A message's text is its own part followed by the shared one it refers
// to, if any (see Message.Shared).
const msgCols = `m.id, m.run_id, m.session_id, m.idx, m.role, m.content || COALESCE(c.content, ''), m.tool_calls, m.tool_call_id, m.synthetic, m.no_reply,
	m.source, m.prompt_tokens, m.completion_tokens, m.created_at`

const msgFrom = ` FROM messages m LEFT JOIN shared_contents c ON m.content_ref <> 0 AND c.id = m.content_ref `

func scanMessages(rows *sql.Rows) ([]Message, error) {
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var calls, created string
		var synth, noReply int
		if err := rows.Scan(&m.ID, &m.RunID, &m.SessionID, &m.Index, &m.Role, &m.Content, &calls, &m.ToolCallID, &synth, &noReply,
			&m.Source, &m.Usage.PromptTokens, &m.Usage.CompletionTokens, &created); err != nil {
			return nil, err
		}
		m.Synthetic, m.NoReply = synth != 0, noReply != 0
		m.Usage.TotalTokens = m.Usage.PromptTokens + m.Usage.CompletionTokens
		if calls != "" {
			if err := json.Unmarshal([]byte(calls), &m.ToolCalls); err != nil {
				return nil, fmt.Errorf("message %d: tool calls: %w", m.ID, err)
			}
		}
		m.CreatedAt = ParseTime(created)
		out = append(out, m)
	}
	return out, rows.Err()
}

// Messages loads part of a session's history: from index from, at most
// limit messages (limit <= 0: all).
func (s *Store) Messages(ctx context.Context, runID, sessionID string, from, limit int) ([]Message, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+msgCols+msgFrom+`WHERE m.run_id = ? AND m.session_id = ? AND m.idx >= ? ORDER BY m.idx LIMIT ?`,
		runID, sessionID, from, limit)
	if err != nil {
		return nil, err
	}
	return scanMessages(rows)
}

// MessagesByID loads the messages of a run with the given row ids, in id
// order; an id that is not one of the run's is left out. The ids a batch
// of logged events refers to are close together, so they are read as one
// range of row ids.
func (s *Store) MessagesByID(ctx context.Context, runID string, ids []int64) ([]Message, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	lo, hi := slices.Min(ids), slices.Max(ids)
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+msgCols+msgFrom+`WHERE m.id BETWEEN ? AND ? AND m.run_id = ? ORDER BY m.id`, lo, hi, runID)
	if err != nil {
		return nil, err
	}
	msgs, err := scanMessages(rows)
	if err != nil {
		return nil, err
	}
	want := make(map[int64]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	out := msgs[:0]
	for _, m := range msgs {
		if want[m.ID] {
			out = append(out, m)
		}
	}
	return out, nil
}

// AllMessages loads every message of a run, grouped by session, in order.
func (s *Store) AllMessages(ctx context.Context, runID string) (map[string][]Message, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+msgCols+msgFrom+`WHERE m.run_id = ? ORDER BY m.session_id, m.idx`, runID)
	if err != nil {
		return nil, err
	}
	all, err := scanMessages(rows)
	if err != nil {
		return nil, err
	}
	out := map[string][]Message{}
	for _, m := range all {
		out[m.SessionID] = append(out[m.SessionID], m)
	}
	return out, nil
}

// PendingInbox loads the items not yet delivered, oldest first: neither
// carried by a message nor consumed by a tool call.
func (s *Store) PendingInbox(ctx context.Context, runID string) ([]InboxItem, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT i.id, i.run_id, i.session_id, i.key, i.kind, i.waking, COALESCE(c.content, i.content), i.source,
		i.from_session, i.created_at
		FROM inbox i LEFT JOIN shared_contents c ON i.content_ref <> 0 AND c.id = i.content_ref
		WHERE i.run_id = ? AND i.delivered_at = ''
		AND i.id NOT IN (SELECT inbox_id FROM messages WHERE run_id = ? AND inbox_id <> 0)
		ORDER BY i.id`, runID, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []InboxItem
	for rows.Next() {
		var it InboxItem
		var waking int
		var created string
		if err := rows.Scan(&it.ID, &it.RunID, &it.SessionID, &it.Key, &it.Kind, &waking, &it.Content, &it.Source, &it.FromSession, &created); err != nil {
			return nil, err
		}
		it.Waking = waking != 0
		it.CreatedAt = ParseTime(created)
		out = append(out, it)
	}
	return out, rows.Err()
}

// Report is a child's <task_result> item and what became of it.
type Report struct {
	ID          int64
	SessionID   string // the parent it is addressed to
	Key         string
	FromSession string // the child
	// Index is the index of the message that carries it in the parent's
	// history, or -1 while no message does.
	Index int
	// ConsumedBy is the tool call that returned it instead of a message
	// (task_wait), or "".
	ConsumedBy string
}

// Reports loads every <task_result> item of a run by its key, delivered or
// not: a resume of a failed run reads from them which failures their
// parents have already answered.
func (s *Store) Reports(ctx context.Context, runID string) (map[string]Report, error) {
	q := s.reader(ctx)
	carried := map[int64]int{}
	rows, err := q.QueryContext(ctx, `SELECT inbox_id, idx FROM messages WHERE run_id = ? AND inbox_id <> 0`, runID)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int64
		var idx int
		if err := rows.Scan(&id, &idx); err != nil {
			rows.Close()
			return nil, err
		}
		carried[id] = idx
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = q.QueryContext(ctx, `SELECT id, session_id, key, from_session, consumed_by FROM inbox WHERE run_id = ? AND kind = 'task_result'`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]Report{}
	for rows.Next() {
		var r Report
		if err := rows.Scan(&r.ID, &r.SessionID, &r.Key, &r.FromSession, &r.ConsumedBy); err != nil {
			return nil, err
		}
		r.Index = -1
		if idx, ok := carried[r.ID]; ok {
			r.Index = idx
		}
		out[r.Key] = r
	}
	return out, rows.Err()
}

// Effect is a recorded side effect of a tool call.
type Effect struct {
	SessionID string
	CallID    string
	N         int
	Kind      string
	Result    []byte
}

// Effects loads every recorded tool-call effect of a run.
func (s *Store) Effects(ctx context.Context, runID string) ([]Effect, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT session_id, call_id, n, kind, result FROM call_effects WHERE run_id = ? ORDER BY session_id, call_id, n`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Effect
	for rows.Next() {
		var e Effect
		var res string
		if err := rows.Scan(&e.SessionID, &e.CallID, &e.N, &e.Kind, &res); err != nil {
			return nil, err
		}
		e.Result = []byte(res)
		out = append(out, e)
	}
	return out, rows.Err()
}

const broadcastCols = `run_id, id, seq, kind, from_session, from_label, category, target, message, no_reply, skipped, delivered, skipped_list, created_at`

func scanBroadcast(sc interface{ Scan(...any) error }) (Broadcast, error) {
	var b Broadcast
	var noReply int
	var delivered, skipped, created string
	if err := sc.Scan(&b.RunID, &b.ID, &b.Seq, &b.Kind, &b.FromSession, &b.FromLabel, &b.Category, &b.Target, &b.Message, &noReply, &b.Skipped,
		&delivered, &skipped, &created); err != nil {
		return b, err
	}
	b.NoReply = noReply != 0
	b.CreatedAt = ParseTime(created)
	for _, id := range strings.Split(strings.Trim(delivered, ","), ",") {
		if id != "" {
			b.Recipients = append(b.Recipients, Recipient{SessionID: id, Status: "delivered"})
		}
	}
	var sk []Recipient
	json.Unmarshal([]byte(skipped), &sk)
	b.Recipients = append(b.Recipients, sk...)
	return b, nil
}

// Broadcasts loads broadcasts of a run with their recipients, oldest first:
// at most limit of those with seq below beforeSeq (beforeSeq <= 0: the newest).
func (s *Store) Broadcasts(ctx context.Context, runID string, beforeSeq int64, limit int) ([]Broadcast, error) {
	if limit <= 0 {
		limit = 1 << 30
	}
	if beforeSeq <= 0 {
		beforeSeq = 1 << 62
	}
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT `+broadcastCols+` FROM broadcasts WHERE run_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`, runID, beforeSeq, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Broadcast
	for rows.Next() {
		b, err := scanBroadcast(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// Oldest first.
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}

// Plans loads every plan of a run by session id, tasks in order.
func (s *Store) Plans(ctx context.Context, runID string) (map[string][]PlanTask, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT session_id, id, pos, description, status, depends_on, note, created_at, completed_at
		FROM plan_tasks WHERE run_id = ? ORDER BY session_id, pos`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]PlanTask{}
	for rows.Next() {
		var sid, deps, created, completed string
		var t PlanTask
		if err := rows.Scan(&sid, &t.ID, &t.Position, &t.Description, &t.Status, &deps, &t.Note, &created, &completed); err != nil {
			return nil, err
		}
		json.Unmarshal([]byte(deps), &t.DependsOn)
		t.CreatedAt, t.CompletedAt = ParseTime(created), ParseTime(completed)
		out[sid] = append(out[sid], t)
	}
	return out, rows.Err()
}

// Delegations loads every delegation of a run, oldest first.
func (s *Store) Delegations(ctx context.Context, runID string) ([]Delegation, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT run_id, id, parent_session, session_id, plan_task_id, description, status, depth, custom_config,
		result, error, created_at, started_at, ended_at FROM delegations WHERE run_id = ? ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Delegation
	for rows.Next() {
		var d Delegation
		var cc, created, started, ended string
		if err := rows.Scan(&d.RunID, &d.ID, &d.ParentSession, &d.SessionID, &d.PlanTaskID, &d.Description, &d.Status, &d.Depth, &cc,
			&d.Result, &d.Error, &created, &started, &ended); err != nil {
			return nil, err
		}
		d.CustomConfig = json.RawMessage(cc)
		d.CreatedAt, d.StartedAt, d.EndedAt = ParseTime(created), ParseTime(started), ParseTime(ended)
		out = append(out, d)
	}
	return out, rows.Err()
}

// Questions loads every question of a run with its responses, oldest first.
func (s *Store) Questions(ctx context.Context, runID string) ([]Question, error) {
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT run_id, id, from_session, kind, question, allow_human, options, multi_select, recipients,
		status, human_responded, human_skipped, timed_out, created_at, deadline, closed_at FROM questions WHERE run_id = ? ORDER BY created_at, id`, runID)
	if err != nil {
		return nil, err
	}
	var out []Question
	for rows.Next() {
		var q Question
		var allow, multi, human, skipped int
		var opts, recips, timedOut, created, deadline, closed string
		if err := rows.Scan(&q.RunID, &q.ID, &q.FromSession, &q.Kind, &q.Question, &allow, &opts, &multi, &recips,
			&q.Status, &human, &skipped, &timedOut, &created, &deadline, &closed); err != nil {
			rows.Close()
			return nil, err
		}
		q.AllowHuman, q.MultiSelect, q.HumanResponded, q.HumanSkipped = allow != 0, multi != 0, human != 0, skipped != 0
		q.Options = json.RawMessage(opts)
		json.Unmarshal([]byte(recips), &q.Recipients)
		json.Unmarshal([]byte(timedOut), &q.TimedOut)
		q.CreatedAt, q.Deadline, q.ClosedAt = ParseTime(created), ParseTime(deadline), ParseTime(closed)
		out = append(out, q)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	idx := map[string]int{}
	for i, q := range out {
		idx[q.ID] = i
	}
	rrows, err := s.reader(ctx).QueryContext(ctx, `SELECT question_id, responder, name, content, created_at, prompt_tokens, completion_tokens FROM question_responses WHERE run_id = ? ORDER BY created_at`, runID)
	if err != nil {
		return nil, err
	}
	defer rrows.Close()
	for rrows.Next() {
		var qid, created string
		var r Response
		if err := rrows.Scan(&qid, &r.Responder, &r.Name, &r.Content, &created, &r.Usage.PromptTokens, &r.Usage.CompletionTokens); err != nil {
			return nil, err
		}
		r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
		r.CreatedAt = ParseTime(created)
		if i, ok := idx[qid]; ok {
			out[i].Responses = append(out[i].Responses, r)
		}
	}
	return out, rrows.Err()
}

// RememberedAnswer returns an earlier human answer to the same question.
func (s *Store) RememberedAnswer(ctx context.Context, key string) (string, bool) {
	var a string
	if err := s.reader(ctx).QueryRowContext(ctx, `SELECT answer FROM human_answers WHERE question_key = ?`, key).Scan(&a); err != nil {
		return "", false
	}
	return a, true
}

// MessageCount counts stored messages of a run.
func (s *Store) MessageCount(ctx context.Context, runID string) (int, error) {
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM messages WHERE run_id = ?`, runID).Scan(&n)
	return n, err
}

// BroadcastCount counts the feed items stored for a run.
func (s *Store) BroadcastCount(ctx context.Context, runID string) (int, error) {
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM broadcasts WHERE run_id = ?`, runID).Scan(&n)
	return n, err
}

// RunCount counts the stored runs.
func (s *Store) RunCount(ctx context.Context) (int, error) {
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT COUNT(*) FROM runs`).Scan(&n)
	return n, err
}

// EventCount counts logged events of a run.
func (s *Store) EventCount(ctx context.Context, runID string) (int, error) {
	var n int
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT COALESCE(SUM(last_seq - seq + 1), 0) FROM events WHERE run_id = ?`, runID).Scan(&n)
	return n, err
}

// ReadBroadcasts returns the sibling and human broadcasts delivered to any of
// the given sessions (and, with sentToo, sent by them), newest first, at most
// limit, with the total count. category "all" or "" matches every category.
func (s *Store) ReadBroadcasts(ctx context.Context, runID string, sessions []string, sentToo bool, category string, limit int) ([]Broadcast, int, error) {
	if len(sessions) == 0 {
		return nil, 0, nil
	}
	args := []any{runID}
	var conds []string
	for _, id := range sessions {
		conds = append(conds, `instr(delivered, ?) > 0`)
		args = append(args, ","+id+",")
		if sentToo {
			conds = append(conds, `from_session = ?`)
			args = append(args, id)
		}
	}
	q := `SELECT ` + broadcastCols + ` FROM broadcasts WHERE run_id = ? AND (kind = 'broadcast' OR (kind = 'human' AND category <> ''))
		AND (` + strings.Join(conds, " OR ") + `)`
	if category != "" && category != "all" {
		q += ` AND category = ?`
		args = append(args, category)
	}
	q += ` ORDER BY seq DESC`
	rows, err := s.reader(ctx).QueryContext(ctx, q, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var out []Broadcast
	total := 0
	for rows.Next() {
		total++
		if limit > 0 && len(out) >= limit {
			continue
		}
		b, err := scanBroadcast(rows)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, b)
	}
	return out, total, rows.Err()
}

// BroadcastSeq finds the sequence number of a broadcast by id.
func (s *Store) BroadcastSeq(ctx context.Context, runID, id string) (int64, error) {
	var seq int64
	err := s.reader(ctx).QueryRowContext(ctx, `SELECT seq FROM broadcasts WHERE run_id = ? AND id = ?`, runID, id).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("no broadcast %q in run %s", id, runID)
	}
	return seq, err
}

// RunExists reports whether a run with exactly this id is stored.
func (s *Store) RunExists(ctx context.Context, id string) (bool, error) {
	var one int
	err := s.reader(ctx).QueryRowContext(ctx, runExistsQuery, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

const runExistsQuery = `SELECT 1 FROM runs WHERE id = ?`

// LastSeq is the sequence number of the last event logged for a run, as
// stored: Tx.LastSeq, for a reader, which has no writer to ask.
func (s *Store) LastSeq(ctx context.Context, runID string) (int64, error) {
	var seq sql.NullInt64
	err := s.reader(ctx).QueryRowContext(ctx, lastSeqSQL, runID).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq.Int64, err
}

// EventsAfter reads a run's logged events with a sequence above after, in
// order. Message events come as the log keeps them: the message's address,
// without its content (read it with Messages).
func (s *Store) EventsAfter(ctx context.Context, runID string, after int64) ([]event.Event, error) {
	// Events are logged in groups of consecutive sequences; the first group
	// read is the one holding after+1. A group read whole already is left
	// out before its data is: a view polls a quiet run four times a
	// second, and its last group can be megabytes.
	rows, err := s.reader(ctx).QueryContext(ctx, `SELECT data FROM events WHERE run_id = ?1 AND seq >= COALESCE(
		(SELECT MAX(seq) FROM events WHERE run_id = ?1 AND seq <= ?2 + 1), 0) AND last_seq > ?2 ORDER BY seq`, runID, after)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []event.Event
	for rows.Next() {
		var data string
		if err := rows.Scan(&data); err != nil {
			return nil, err
		}
		var group []event.Event
		if err := json.Unmarshal([]byte(data), &group); err != nil {
			return nil, fmt.Errorf("event log of run %s: %w", runID, err)
		}
		for _, e := range group {
			if e.Seq > after {
				out = append(out, e)
			}
		}
	}
	return out, rows.Err()
}
