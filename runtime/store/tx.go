package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Tx is the writer's view of the database inside one operation.
type Tx struct {
	s      *Store
	ctx    context.Context
	events []event.Event
	// Rows queued by the batch's operations, inserted together when the
	// batch commits (see flushRows).
	msgs  []*Message
	inbox []*InboxItem
	queue [nQueued][]any // rows of the queued tables, their values in column order
	// Savepoints of the Nested steps in progress, innermost last: opened
	// (true) only once a step runs a statement right away, since queued
	// rows are undone without one.
	savepoints []bool
	writes     int // statements that changed the database (and queued messages)
	broken     error
	atEnd      []func(*Tx) error // the current operation's, see AtEnd
}

// AtEnd has fn run in the same transaction once the current operation's
// function has returned without an error: a check that must see all the
// operation changed, not the state halfway through it. Functions run in
// the order they were given, and may give more.
func (tx *Tx) AtEnd(fn func(*Tx) error) { tx.atEnd = append(tx.atEnd, fn) }

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
	if err := tx.openSavepoints(); err != nil {
		return nil, err
	}
	st, err := tx.stmt(query)
	if err != nil {
		return nil, err
	}
	res, err := st.ExecContext(tx.ctx, args...)
	if err == nil {
		tx.writes++
	}
	return res, err
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

// Emit adds an event to the log; the events of a commit are stored
// together and published after it. The sequence number and time are filled
// in here.
func (tx *Tx) Emit(e event.Event) (event.Event, error) {
	seq, err := tx.LastSeq(e.RunID)
	if err != nil {
		return e, err
	}
	seq++
	e.Seq = seq
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	s := tx.s
	s.seqMu.Lock()
	s.setSeqLocked(e.RunID, seq)
	s.seqMu.Unlock()
	tx.events = append(tx.events, e)
	return e, nil
}

// maxEventBuf bounds the event buffer the writer keeps between commits.
const maxEventBuf = 1 << 20

var insertEventSQL = hot(`INSERT INTO events (run_id, seq, last_seq, data) VALUES (?, ?, ?, ?)`)

// writeEvents stores the events of a commit, one row per run of
// consecutive sequence numbers, each encoded as the log keeps it (see
// appendEvent).
func (tx *Tx) writeEvents(events []event.Event) error {
	for start := 0; start < len(events); {
		end := start + 1
		for end < len(events) && events[end].RunID == events[start].RunID && events[end].Seq == events[end-1].Seq+1 {
			end++
		}
		group := events[start:end]
		// The writer's buffer is reused from commit to commit: the driver
		// copies a bound string before the statement runs.
		buf := append(tx.s.eventBuf[:0], '[')
		for i := range group {
			if i > 0 {
				buf = append(buf, ',')
			}
			b, err := appendEvent(buf, &group[i])
			if err != nil {
				return err
			}
			buf = b
		}
		buf = append(buf, ']')
		tx.s.eventBuf = buf
		if cap(buf) > maxEventBuf {
			tx.s.eventBuf = nil
		}
		if _, err := tx.exec(insertEventSQL,
			group[0].RunID, group[0].Seq, group[len(group)-1].Seq, unsafe.String(unsafe.SliceData(buf), len(buf))); err != nil {
			return err
		}
		start = end
	}
	return nil
}

var runExistsSQL = hot(runExistsQuery)

// RunExists reports whether a run with exactly this id is stored, as seen
// by the writer.
func (tx *Tx) RunExists(id string) (bool, error) {
	st, err := tx.stmt(runExistsSQL)
	if err != nil {
		return false, err
	}
	var one int
	err = st.QueryRowContext(tx.ctx, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

var insertRunSQL = hot(`INSERT INTO runs (id, goal, status, provider, model, scripted, workspace, created_at, updated_at, base_url, human_absent)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// InsertRun creates a run.
func (tx *Tx) InsertRun(r *Run) error {
	if _, err := tx.exec(insertRunSQL,
		r.ID, r.Goal, r.Status, r.Provider, r.Model, b2i(r.Scripted), r.Workspace, Time(r.CreatedAt), Time(r.CreatedAt), r.BaseURL, b2i(r.HumanAbsent)); err != nil {
		return err
	}
	// A new run has logged nothing: its first event is 1 without a look
	// into the events table (see LastSeq).
	s := tx.s
	s.seqMu.Lock()
	if _, ok := s.seqs[r.ID]; !ok {
		s.setSeqLocked(r.ID, 0)
	}
	s.seqMu.Unlock()
	return nil
}

var updateRunSQL = hot(`UPDATE runs SET status = ?, provider = ?, model = ?, scripted = ?, workspace = ?, result = ?, error = ?,
	prompt_tokens = ?, completion_tokens = ?, total_tokens = ?, human_skip_all = ?, updated_at = ?, ended_at = ?, base_url = ?, pauses = ?, human_absent = ? WHERE id = ?`)

// UpdateRun writes the mutable fields of a run.
func (tx *Tx) UpdateRun(r *Run) error {
	pauses := ""
	if len(r.Pauses) > 0 {
		b, err := json.Marshal(r.Pauses)
		if err != nil {
			return err
		}
		pauses = string(b)
	}
	_, err := tx.exec(updateRunSQL,
		r.Status, r.Provider, r.Model, b2i(r.Scripted), r.Workspace, r.Result, r.Error, r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.TotalTokens,
		b2i(r.HumanSkipAll), Time(time.Now()), Time(r.EndedAt), r.BaseURL, pauses, b2i(r.HumanAbsent), r.ID)
	return err
}

// upsertSessionsSQL writes n sessions whole.
func upsertSessionsSQL(n int) string {
	return `INSERT INTO sessions (run_id, id, parent_id, agent, label, title, task, kind, status, reason, depth,
	shared_context, wait_on, refs, result, error, prompt_tokens, completion_tokens, total_tokens, turns, completions,
	spawn_call, delegation_id, last_tool, created_at, updated_at, ended_at)
	VALUES ` + rows(n, sessionColumns) + `
	ON CONFLICT (run_id, id) DO UPDATE SET status = excluded.status, reason = excluded.reason,
	shared_context = excluded.shared_context, wait_on = excluded.wait_on, refs = excluded.refs,
	result = excluded.result, error = excluded.error, prompt_tokens = excluded.prompt_tokens,
	completion_tokens = excluded.completion_tokens, total_tokens = excluded.total_tokens, turns = excluded.turns,
	completions = excluded.completions, delegation_id = excluded.delegation_id, last_tool = excluded.last_tool,
	updated_at = excluded.updated_at, ended_at = excluded.ended_at`
}

// UpsertSession writes a session whole. The row is queued and written at
// the commit, once for all the changes the batch made to the session.
func (tx *Tx) UpsertSession(x *Session) error {
	ctx := rawOr(x.SharedContext, "{}")
	now := time.Now()
	if x.CreatedAt.IsZero() {
		x.CreatedAt = now
	}
	tx.enqueue(qSessions,
		x.RunID, x.ID, x.ParentID, x.Agent, x.Label, x.Title, x.Task, x.Kind, x.Status, x.Reason, x.Depth,
		ctx, jsonText(nonNil(x.WaitOn)), jsonText(nonNil(x.Refs)), x.Result, x.Error, x.Usage.PromptTokens, x.Usage.CompletionTokens,
		x.Usage.TotalTokens, x.Turns, x.Completions, x.SpawnCall, x.DelegationID, x.LastTool,
		Time(x.CreatedAt), Time(now), Time(x.EndedAt))
	return nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

var maxMessageIDSQL = hot(`SELECT MAX(id) FROM messages`)

// nextID gives out the next id of a table whose ids the store assigns: one
// more than *counter, which starts, the first time, from the largest id
// stored (read with query) or floor if that is larger. s.seqMu guards the
// counters.
func (tx *Tx) nextID(counter *int64, query string, floor int64) (int64, error) {
	s := tx.s
	s.seqMu.Lock()
	if *counter == 0 {
		s.seqMu.Unlock()
		var last sql.NullInt64
		st, err := tx.stmt(query)
		if err != nil {
			return 0, err
		}
		if err := st.QueryRowContext(tx.ctx).Scan(&last); err != nil {
			return 0, err
		}
		s.seqMu.Lock()
		if *counter == 0 {
			*counter = max(last.Int64, floor)
		}
	}
	*counter++
	id := *counter
	s.seqMu.Unlock()
	return id, nil
}

// InsertMessage appends a message and sets its ID. The row is written with
// the operation's other messages in one statement when the operation ends
// (a broadcast to a hundred siblings is then one insert, not a hundred).
func (tx *Tx) InsertMessage(m *Message) error {
	id, err := tx.nextID(&tx.s.msgID, maxMessageIDSQL, 0)
	if err != nil {
		return err
	}
	m.ID = id
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}
	tx.msgs = append(tx.msgs, m)
	tx.writes++
	return nil
}

// maxRowsPerInsert bounds the rows of one multi-row insert; a power of two
// (see chunk).
const maxRowsPerInsert = 64

// chunk is how many of n queued rows the next statement takes: the largest
// power of two up to n, and at most most (a power of two too). Forty-six
// rows are then inserted 32, 8, 4 and 2 at a time, by four of the seven
// statements that serve every batch and are prepared ahead (see warmList),
// rather than by one statement for exactly forty-six rows, prepared the
// first time a batch of that size comes.
func chunk(n, most int) int {
	return min(1<<(bits.Len(uint(n))-1), most)
}

const messageColumns = 16

// flushMessages inserts the queued messages.
func (tx *Tx) flushMessages() error {
	for len(tx.msgs) > 0 {
		n := chunk(len(tx.msgs), maxRowsPerInsert)
		if err := tx.insertMessages(tx.msgs[:n]); err != nil {
			return err
		}
		tx.msgs = tx.msgs[n:]
	}
	tx.msgs = tx.msgs[:0:cap(tx.msgs)]
	return nil
}

// insertMessagesSQL inserts n messages.
func insertMessagesSQL(n int) string {
	return `INSERT INTO messages (id, run_id, session_id, idx, role, content, content_ref, tool_calls, tool_call_id, synthetic, no_reply, source,
	prompt_tokens, completion_tokens, created_at, inbox_id) VALUES ` + rows(n, messageColumns)
}

// rows is the VALUES list of n rows of cols parameters.
func rows(n, cols int) string {
	row := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return row + strings.Repeat(","+row, n-1)
}

func (tx *Tx) insertMessages(msgs []*Message) error {
	n := len(msgs)
	st, err := tx.s.batchStmt(messagesKey(n), func() string { return insertMessagesSQL(n) })
	if err != nil {
		return err
	}
	args := make([]any, 0, n*messageColumns)
	for _, m := range msgs {
		content, ref := splitShared(m.Content, m.Shared)
		calls := ""
		if len(m.ToolCalls) > 0 {
			b, err := json.Marshal(m.ToolCalls)
			if err != nil {
				return err
			}
			calls = string(b)
		}
		args = append(args, m.ID, m.RunID, m.SessionID, m.Index, m.Role, content, ref, calls, m.ToolCallID, b2i(m.Synthetic), b2i(m.NoReply),
			m.Source, m.Usage.PromptTokens, m.Usage.CompletionTokens, Time(m.CreatedAt), m.InboxID)
	}
	if err := tx.s.execBatch(tx.ctx, st, args); err != nil {
		return fmt.Errorf("append messages: %w", err)
	}
	return nil
}

// splitShared is what a message row stores of content and the shared text
// it refers to: the part before the shared text, or all of content (and no
// reference) when the shared text is not how content ends.
func splitShared(content string, sh *SharedContent) (string, int64) {
	switch {
	case sh == nil:
		return content, 0
	case content == "":
		return "", sh.ID
	case strings.HasSuffix(content, sh.Text):
		return content[:len(content)-len(sh.Text)], sh.ID
	}
	return content, 0
}

var maxSharedIDSQL = hot(`SELECT MAX(id) FROM shared_contents`)

// ShareContent stores a text once for the messages that will carry it. The
// row is queued and inserted at the commit.
func (tx *Tx) ShareContent(text string) (*SharedContent, error) {
	id, err := tx.nextID(&tx.s.sharedID, maxSharedIDSQL, 0)
	if err != nil {
		return nil, err
	}
	tx.enqueue(qShared, id, text)
	return &SharedContent{ID: id, Text: text}, nil
}

// AppendInbox queues an item that cannot be a duplicate: it is inserted
// with the operation's other items in one statement when the operation
// ends. Use InsertInbox for a key that may exist already. An item without a
// key gets one that sorts in id order, so that the key index grows at its
// end instead of taking every insert to a page of its own.
func (tx *Tx) AppendInbox(it *InboxItem) error {
	if err := tx.nextInboxID(it); err != nil {
		return err
	}
	if it.Key == "" {
		it.Key = generatedKey(it.ID)
	}
	tx.inbox = append(tx.inbox, it)
	tx.writes++
	return nil
}

// generatedKey is the key of an inbox item that has none of its own:
// "~" and the id in 16 hex digits. Keys given by callers never start with
// "~".
func generatedKey(id int64) string {
	const digits = "0123456789abcdef"
	var b [17]byte
	b[0] = '~'
	for i := 16; i > 0; i-- {
		b[i] = digits[id&0xf]
		id >>= 4
	}
	return string(b[:])
}

var maxInboxIDSQL = hot(`SELECT MAX(id) FROM inbox`)

// nextInboxID gives an item its id. Ids are given out here, not by SQLite,
// because queued items are inserted later, together.
func (tx *Tx) nextInboxID(it *InboxItem) error {
	id, err := tx.nextID(&tx.s.inboxID, maxInboxIDSQL, 1)
	if err != nil {
		return err
	}
	it.ID = id
	if it.CreatedAt.IsZero() {
		it.CreatedAt = time.Now()
	}
	return nil
}

const inboxColumns = 13

// flushInbox inserts the queued inbox items.
func (tx *Tx) flushInbox() error {
	for len(tx.inbox) > 0 {
		n := chunk(len(tx.inbox), maxRowsPerInsert)
		if err := tx.insertInbox(tx.inbox[:n]); err != nil {
			return err
		}
		tx.inbox = tx.inbox[n:]
	}
	tx.inbox = tx.inbox[:0:cap(tx.inbox)]
	return nil
}

// insertInboxSQL inserts n inbox items.
func insertInboxSQL(n int) string {
	return `INSERT INTO inbox (id, run_id, session_id, key, kind, waking, content, content_ref, source, from_session, created_at,
	delivered_at, consumed_by) VALUES ` + rows(n, inboxColumns)
}

func (tx *Tx) insertInbox(items []*InboxItem) error {
	n := len(items)
	st, err := tx.s.batchStmt(inboxKey(n), func() string { return insertInboxSQL(n) })
	if err != nil {
		return err
	}
	args := make([]any, 0, n*inboxColumns)
	for _, it := range items {
		content, ref := it.Content, int64(0)
		if it.Shared != nil {
			content, ref = "", it.Shared.ID
		}
		delivered := ""
		if !it.DeliveredAt.IsZero() {
			delivered = Time(it.DeliveredAt)
		}
		args = append(args, it.ID, it.RunID, it.SessionID, it.Key, it.Kind, b2i(it.Waking), content, ref, it.Source, it.FromSession, Time(it.CreatedAt),
			delivered, it.ConsumedBy)
	}
	if err := tx.s.execBatch(tx.ctx, st, args); err != nil {
		return fmt.Errorf("queue inbox items: %w", err)
	}
	return nil
}

// flushRows inserts the rows the batch's operations queued. It runs once,
// when the batch commits: a batch of broadcasts becomes a few multi-row
// inserts instead of a few per operation.
func (tx *Tx) flushRows() error {
	if err := tx.flushMessages(); err != nil {
		return err
	}
	if err := tx.flushInbox(); err != nil {
		return err
	}
	for t := range tx.queue {
		if err := tx.flushQueued(t); err != nil {
			return err
		}
	}
	return nil
}

// rowMark is how many rows were queued at some point of the batch.
type rowMark struct {
	msgs, inbox int
	queue       [nQueued]int
}

func (tx *Tx) rowMark() rowMark {
	m := rowMark{msgs: len(tx.msgs), inbox: len(tx.inbox)}
	for t, q := range tx.queue {
		m.queue[t] = len(q)
	}
	return m
}

// dropRowsTo forgets the rows queued since m: an operation or a nested
// step that failed.
func (tx *Tx) dropRowsTo(m rowMark) {
	clear(tx.msgs[m.msgs:])
	clear(tx.inbox[m.inbox:])
	tx.msgs = tx.msgs[:m.msgs]
	tx.inbox = tx.inbox[:m.inbox]
	for t := range tx.queue {
		clear(tx.queue[t][m.queue[t]:])
		tx.queue[t] = tx.queue[t][:m.queue[t]]
	}
}

var insertInboxOnceSQL = hot(`INSERT OR IGNORE INTO inbox (id, run_id, session_id, key, kind, waking, content, content_ref, source, from_session, created_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)

// InsertInbox queues an item. It returns false when an item with the same
// key exists already (the delivery happened before a crash).
func (tx *Tx) InsertInbox(it *InboxItem) (bool, error) {
	for _, q := range tx.inbox {
		if q.RunID == it.RunID && q.Key == it.Key {
			return false, nil
		}
	}
	if err := tx.nextInboxID(it); err != nil {
		return false, err
	}
	content, ref := it.Content, int64(0)
	if it.Shared != nil {
		content, ref = "", it.Shared.ID
	}
	res, err := tx.exec(insertInboxOnceSQL,
		it.ID, it.RunID, it.SessionID, it.Key, it.Kind, b2i(it.Waking), content, ref, it.Source, it.FromSession, Time(it.CreatedAt))
	if err != nil {
		return false, err
	}
	n, _ := res.RowsAffected()
	return n > 0, nil
}

// maxConsumedPerUpdate bounds the items one update marks; a power of two.
const maxConsumedPerUpdate = 128

// markConsumedSQL marks n inbox items consumed.
func markConsumedSQL(n int) string {
	return `UPDATE inbox SET delivered_at = ?, consumed_by = ? WHERE id IN (?` + strings.Repeat(",?", n-1) + `)`
}

// MarkConsumed records that inbox items were taken by the tool call callID
// instead of entering their session's history. (An item that enters the
// history is delivered by its message: see Message.InboxID.)
func (tx *Tx) MarkConsumed(ids []int64, callID string) error {
	at := time.Now()
	now := Time(at)
	if len(tx.inbox) > 0 {
		// Items of this batch are not in the table yet.
		queued := make(map[int64]*InboxItem, len(tx.inbox))
		for _, it := range tx.inbox {
			queued[it.ID] = it
		}
		rest := ids[:0:0]
		for _, id := range ids {
			if it, ok := queued[id]; ok {
				it.DeliveredAt, it.ConsumedBy = at, callID
				continue
			}
			rest = append(rest, id)
		}
		ids = rest
	}
	for len(ids) > 0 {
		n := chunk(len(ids), maxConsumedPerUpdate)
		args := make([]any, 0, n+2)
		args = append(args, now, callID)
		for _, id := range ids[:n] {
			args = append(args, id)
		}
		if _, err := tx.exec(markConsumedSQL(n), args...); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// InsertEffect records the result of a side effect of a tool call (queued,
// like every row of a queued table).
func (tx *Tx) InsertEffect(runID, sessionID, callID string, n int, kind string, result []byte) error {
	tx.enqueue(qEffects, runID, sessionID, callID, n, kind, string(result))
	return nil
}

// InsertBroadcast stores a broadcast with its recipients (queued).
func (tx *Tx) InsertBroadcast(b *Broadcast) error {
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now()
	}
	delivered := make([]byte, 0, 8*len(b.Recipients)+1)
	delivered = append(delivered, ',')
	var skipped []Recipient
	for _, r := range b.Recipients {
		if r.Status == "delivered" {
			delivered = append(delivered, r.SessionID...)
			delivered = append(delivered, ',')
		} else {
			skipped = append(skipped, r)
		}
	}
	sk := "[]"
	if len(skipped) > 0 {
		sk = jsonText(skipped)
	}
	tx.enqueue(qBroadcasts,
		b.RunID, b.ID, b.Seq, b.Kind, b.FromSession, b.FromLabel, b.Category, b.Target, b.Message, b2i(b.NoReply), b.Skipped,
		string(delivered), sk, Time(b.CreatedAt))
	return nil
}

var (
	deletePlanSQL     = hot(`DELETE FROM plan_tasks WHERE run_id = ? AND session_id = ?`)
	insertPlanTaskSQL = hot(`INSERT INTO plan_tasks (run_id, session_id, id, pos, description, status, depends_on, note, created_at, completed_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
)

// ReplacePlan stores a session's whole plan.
func (tx *Tx) ReplacePlan(runID, sessionID string, tasks []PlanTask) error {
	if _, err := tx.exec(deletePlanSQL, runID, sessionID); err != nil {
		return err
	}
	for i, t := range tasks {
		if _, err := tx.exec(insertPlanTaskSQL,
			runID, sessionID, t.ID, i, t.Description, t.Status, jsonText(nonNil(t.DependsOn)), t.Note, Time(t.CreatedAt), Time(t.CompletedAt)); err != nil {
			return err
		}
	}
	return nil
}

var upsertDelegationSQL = hot(`INSERT INTO delegations (run_id, id, parent_session, session_id, plan_task_id, description, status, depth, custom_config,
	result, error, created_at, started_at, ended_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (run_id, id) DO UPDATE SET session_id = excluded.session_id, status = excluded.status, result = excluded.result,
	error = excluded.error, started_at = excluded.started_at, ended_at = excluded.ended_at`)

// UpsertDelegation writes a delegation whole.
func (tx *Tx) UpsertDelegation(d *Delegation) error {
	if d.CreatedAt.IsZero() {
		d.CreatedAt = time.Now()
	}
	_, err := tx.exec(upsertDelegationSQL,
		d.RunID, d.ID, d.ParentSession, d.SessionID, d.PlanTaskID, d.Description, d.Status, d.Depth, rawOr(d.CustomConfig, "{}"),
		d.Result, d.Error, Time(d.CreatedAt), Time(d.StartedAt), Time(d.EndedAt))
	return err
}

var upsertQuestionSQL = hot(`INSERT INTO questions (run_id, id, from_session, kind, question, allow_human, options, multi_select, recipients,
	status, human_responded, human_skipped, timed_out, created_at, deadline, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (run_id, id) DO UPDATE SET status = excluded.status, human_responded = excluded.human_responded,
	human_skipped = excluded.human_skipped,
	timed_out = excluded.timed_out, closed_at = excluded.closed_at, recipients = excluded.recipients`)

const humanSkippedSQL = `UPDATE questions SET human_skipped = 1 WHERE run_id = ? AND id = ?`

// SkipHuman records that the person skipped a question.
func (tx *Tx) SkipHuman(runID, questionID string) error {
	_, err := tx.exec(humanSkippedSQL, runID, questionID)
	return err
}

// UpsertQuestion writes a question and its responses.
func (tx *Tx) UpsertQuestion(q *Question) error {
	if q.CreatedAt.IsZero() {
		q.CreatedAt = time.Now()
	}
	_, err := tx.exec(upsertQuestionSQL,
		q.RunID, q.ID, q.FromSession, q.Kind, q.Question, b2i(q.AllowHuman), rawOr(q.Options, "[]"), b2i(q.MultiSelect),
		jsonText(nonNil(q.Recipients)), q.Status, b2i(q.HumanResponded), b2i(q.HumanSkipped), jsonText(nonNil(q.TimedOut)), Time(q.CreatedAt), Time(q.Deadline), Time(q.ClosedAt))
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

var insertResponseSQL = hot(`INSERT OR REPLACE INTO question_responses (run_id, question_id, responder, name, content, created_at, prompt_tokens, completion_tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`)

// InsertResponse records one answer to a question.
func (tx *Tx) InsertResponse(runID, questionID string, r Response) error {
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now()
	}
	_, err := tx.exec(insertResponseSQL,
		runID, questionID, r.Responder, r.Name, r.Content, Time(r.CreatedAt), r.Usage.PromptTokens, r.Usage.CompletionTokens)
	return err
}

var rememberAnswerSQL = hot(`INSERT OR REPLACE INTO human_answers (question_key, answer, updated_at) VALUES (?, ?, ?)`)

// RememberAnswer keeps a human answer for repeated questions.
func (tx *Tx) RememberAnswer(key, answer string) error {
	_, err := tx.exec(rememberAnswerSQL, key, answer, Time(time.Now()))
	return err
}

// lastSeqSQL reads a run's last logged event: the rows of a run do not
// overlap, so the one with the highest seq holds it.
var lastSeqSQL = hot(`SELECT last_seq FROM events WHERE run_id = ? ORDER BY seq DESC LIMIT 1`)

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
	st, err := tx.stmt(lastSeqSQL)
	if err != nil {
		return 0, err
	}
	if err := st.QueryRowContext(tx.ctx, runID).Scan(&max); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, err
	}
	s.seqMu.Lock()
	if cur, ok := s.seqs[runID]; ok {
		max.Int64 = cur // another operation got there first
	} else {
		s.seqs[runID] = max.Int64
	}
	s.seqMu.Unlock()
	return max.Int64, nil
}

var (
	savepointSQL  = hot("SAVEPOINT nested")
	releaseSQL    = hot("RELEASE nested")
	rollbackToSQL = hot("ROLLBACK TO nested")
)

// Nested runs fn inside a savepoint of its own: if fn fails, its writes and
// events are undone while the rest of the operation stands. The operation
// then goes on (and may still commit); Nested returns fn's error. Most steps
// only queue rows, which are undone by forgetting them, so the savepoint is
// opened only when the step first runs a statement (see openSavepoints).
func (tx *Tx) Nested(fn func() error) error {
	mark := tx.s.snapshotSeqs()
	rows := tx.rowMark()
	nEvents := len(tx.events)
	tx.savepoints = append(tx.savepoints, false)
	err := fn()
	opened := tx.savepoints[len(tx.savepoints)-1]
	tx.savepoints = tx.savepoints[:len(tx.savepoints)-1]
	if err != nil {
		tx.dropRowsTo(rows)
		if opened {
			if _, rerr := tx.s.control(rollbackToSQL); rerr != nil {
				tx.broken = rerr
			}
			tx.s.control(releaseSQL)
		}
		tx.s.restoreSeqs(mark)
		tx.events = tx.events[:nEvents]
		return err
	}
	if opened {
		if _, err := tx.s.control(releaseSQL); err != nil {
			tx.broken = err
			return err
		}
	}
	return nil
}

// openSavepoints opens the savepoints of the Nested steps in progress that
// have none yet, outermost first, before a statement that changes the
// database right away.
func (tx *Tx) openSavepoints() error {
	for i, open := range tx.savepoints {
		if open {
			continue
		}
		if _, err := tx.s.control(savepointSQL); err != nil {
			tx.broken = err
			return err
		}
		tx.savepoints[i] = true
	}
	return nil
}

// The queued tables: their rows are queued by the operations of a batch
// and inserted at its commit, a few multi-row statements for them all,
// where one statement a row used to take a sixth of the writer's time.
const (
	qSessions = iota
	qEffects
	qBroadcasts
	qShared
	nQueued
)

const sessionColumns = 27

// queuedTable describes a queued table.
type queuedTable struct {
	name string
	cols int
	// keyCols, when not 0, is how many leading columns (strings) make a
	// row's key: a later row with the same key replaces an earlier one, and
	// only the last is written.
	keyCols int
	most    int // rows per statement at most, a power of two (see chunk)
	query   func(n int) string
}

var queuedTables = [nQueued]queuedTable{
	qSessions: {name: "sessions", cols: sessionColumns, keyCols: 2, most: 32, query: upsertSessionsSQL},
	qEffects: {name: "call_effects", cols: 6, most: maxRowsPerInsert, query: func(n int) string {
		return `INSERT INTO call_effects (run_id, session_id, call_id, n, kind, result) VALUES ` + rows(n, 6)
	}},
	qBroadcasts: {name: "broadcasts", cols: 14, most: maxRowsPerInsert, query: func(n int) string {
		return `INSERT INTO broadcasts (run_id, id, seq, kind, from_session, from_label, category, target, message, no_reply, skipped,
	delivered, skipped_list, created_at) VALUES ` + rows(n, 14)
	}},
	qShared: {name: "shared_contents", cols: 2, most: maxRowsPerInsert, query: func(n int) string {
		return `INSERT INTO shared_contents (id, content) VALUES ` + rows(n, 2)
	}},
}

// stmtKey is the key of the statement inserting n rows into t.
func (t *queuedTable) stmtKey(n int) string { return t.name + "/" + strconv.Itoa(n) }

// enqueue queues a row of table t, its values in column order.
func (tx *Tx) enqueue(t int, values ...any) {
	if len(values) != queuedTables[t].cols {
		panic(fmt.Sprintf("store: %d values for a row of %s, which has %d columns", len(values), queuedTables[t].name, queuedTables[t].cols))
	}
	tx.queue[t] = append(tx.queue[t], values...)
	tx.writes++
}

// flushQueued inserts the queued rows of table t.
func (tx *Tx) flushQueued(t int) error {
	tab := &queuedTables[t]
	vals := tx.queue[t]
	if tab.keyCols > 0 {
		vals = lastOfEachKey(vals, tab.cols, tab.keyCols)
	}
	for left := len(vals) / tab.cols; left > 0; {
		n := chunk(left, tab.most)
		st, err := tx.s.batchStmt(tab.stmtKey(n), func() string { return tab.query(n) })
		if err != nil {
			return err
		}
		if err := tx.s.execBatch(tx.ctx, st, vals[:n*tab.cols]); err != nil {
			return fmt.Errorf("write %s: %w", tab.name, err)
		}
		vals = vals[n*tab.cols:]
		left -= n
	}
	clear(tx.queue[t])
	tx.queue[t] = tx.queue[t][:0]
	return nil
}

// lastOfEachKey keeps, of the rows in vals (cols values each), the last
// row of each key (its first keyCols values), in the order of those rows.
func lastOfEachKey(vals []any, cols, keyCols int) []any {
	n := len(vals) / cols
	if n < 2 {
		return vals
	}
	keys := make([]string, n)
	last := make(map[string]int, n)
	for i := range n {
		var b strings.Builder
		for _, v := range vals[i*cols : i*cols+keyCols] {
			b.WriteString(v.(string))
			b.WriteByte(0)
		}
		keys[i] = b.String()
		last[keys[i]] = i
	}
	if len(last) == n {
		return vals
	}
	out := make([]any, 0, len(last)*cols)
	for i, k := range keys {
		if last[k] == i {
			out = append(out, vals[i*cols:(i+1)*cols]...)
		}
	}
	return out
}
