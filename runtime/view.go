package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// errReadOnly refuses actions on a stored run opened for viewing.
var errReadOnly = errors.New("read-only: `swarmdeck view` shows a run without running it (steer it from the process that runs it, or continue a stopped run with `swarmdeck resume`)")

// followEvery is how often a viewed run's log is read for what another
// process has added to it.
const followEvery = 250 * time.Millisecond

// storedRun is a run read back from the store for `swarmdeck view`.
type storedRun struct {
	e    *Engine
	id   string
	snap event.Snapshot
	// follow starts on the first Subscribe, with the context of View:
	// published before anyone listens, what follow reads after the
	// snapshot would be lost, a run's end among it.
	ctx       context.Context
	following sync.Once
}

var _ event.Controller = (*storedRun)(nil)

// View opens a stored run read-only: runID, or the latest run when it is
// "".
func (e *Engine) View(ctx context.Context, runID string) (event.Controller, error) {
	v := &storedRun{e: e}
	// Read in one transaction: a run that another process writes is shown
	// as it was at one moment, and followed from that moment's last event.
	// Read one by one, what was written between two reads was in the
	// snapshot for some parts and in no part at all for others.
	if err := e.store.Snapshot(ctx, func(ctx context.Context) error { return v.load(ctx, runID) }); err != nil {
		return nil, err
	}
	v.ctx = ctx
	return v, nil
}

// load reads the run's snapshot.
func (v *storedRun) load(ctx context.Context, runID string) error {
	st := v.e.store
	var rec *store.Run
	var err error
	if runID == "" {
		rec, err = st.LatestRun(ctx)
	} else {
		rec, err = st.Run(ctx, runID)
	}
	if err != nil {
		return err
	}
	v.id = rec.ID
	snap := &v.snap
	snap.Run = *runInfoOf(rec)
	if Orphaned(st.Path(), rec.ID, rec.Status) {
		// Stored as running, but no process runs it: it stopped where a
		// crash left it, and is shown as such until it is resumed.
		snap.Run.Status = RunInterrupted
		snap.Run.Error = OrphanedReason(rec.ID, rec.Goal, rec.Scripted)
		snap.Run.EndedAt = stoppedAt(ctx, st, rec.ID)
	}
	sessions, err := st.Sessions(ctx, rec.ID)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		var sc json.RawMessage
		if len(s.SharedContext) > 2 {
			sc = s.SharedContext
		}
		snap.Sessions = append(snap.Sessions, event.SessionInfo{ID: s.ID, ParentID: s.ParentID, Agent: s.Agent, Label: s.Label,
			Title: s.Title, Status: s.Status, Depth: s.Depth, Kind: s.Kind, SharedContext: sc, Reason: s.Reason, Result: s.Result,
			Error: s.Error, Usage: event.Usage(s.Usage), Turns: s.Turns, LastTool: s.LastTool, LastToolFailed: s.LastToolFailed,
			CreatedAt: s.CreatedAt, EndedAt: s.EndedAt})
	}
	bcs, total, err := recentFeed(ctx, st, rec.ID)
	if err != nil {
		return err
	}
	for _, b := range bcs {
		snap.Broadcasts = append(snap.Broadcasts, feedInfo(&b))
	}
	snap.BroadcastTotal = total
	plans, err := st.Plans(ctx, rec.ID)
	if err != nil {
		return err
	}
	for _, s := range sessions {
		tasks, ok := plans[s.ID]
		if !ok {
			continue
		}
		pi := event.PlanInfo{SessionID: s.ID, Tasks: []event.PlanTask{}}
		for _, t := range tasks {
			pi.Tasks = append(pi.Tasks, event.PlanTask{ID: t.ID, Description: t.Description, Status: t.Status, DependsOn: t.DependsOn, Note: t.Note})
		}
		snap.Plans = append(snap.Plans, pi)
	}
	dels, err := st.Delegations(ctx, rec.ID)
	if err != nil {
		return err
	}
	for i := range dels {
		snap.Delegations = append(snap.Delegations, *delegationInfo(&dels[i]))
	}
	// Read, not asked of the writer: a database the user may only read
	// has none.
	if snap.LastSeq, err = st.LastSeq(ctx, rec.ID); err != nil {
		return err
	}
	if snap.Run.Status == RunRunning && !rec.HumanSkipAll {
		// The questions asked of the person where the run runs: those
		// opened before the snapshot are in no event the viewer will see.
		questions, err := st.Questions(ctx, rec.ID)
		if err != nil {
			return err
		}
		askers := map[string]*store.Session{}
		for i := range sessions {
			askers[sessions[i].ID] = &sessions[i]
		}
	next:
		for _, q := range questions {
			if q.Status != QuestionOpen || !q.AllowHuman || q.HumanResponded || q.HumanSkipped {
				continue
			}
			for _, resp := range q.Responses {
				if resp.Responder == "human" { // answered; the question waits for the others
					continue next
				}
			}
			// Where nobody can answer (a headless run without --control),
			// it waits for the agents alone, and is shown so.
			qi := event.QuestionInfo{ID: q.ID, FromSession: q.FromSession, Question: q.Question, MultiSelect: q.MultiSelect,
				AllowHuman: true, Status: q.Status, Deadline: q.Deadline, HumanAbsent: rec.HumanAbsent}
			if a := askers[q.FromSession]; a != nil {
				name := a.Label
				if name == "" {
					name = a.ID
				}
				qi.From = a.Agent + " (" + name + ")"
			}
			json.Unmarshal(q.Options, &qi.Options)
			snap.Questions = append(snap.Questions, qi)
		}
	}
	return nil
}

// follow publishes what is logged for the run after the snapshot, so that
// the dashboard follows a run that another process is running. Message
// events get their content back from the messages table (the log keeps
// only their address). It stops with ctx or the store.
func (v *storedRun) follow(ctx context.Context, after int64) {
	t := time.NewTicker(followEvery)
	defer t.Stop()
	st := v.e.store
	run := v.snap.Run // as last seen
	var quietSince, pausesRead time.Time
	for {
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		case <-st.Closed():
			return
		}
		if run.Status == RunRunning && time.Since(pausesRead) >= orphanCheckEvery {
			// A stop of the process running it is stored as a pause as
			// soon as it goes on, with no event: read, it is shown.
			pausesRead = time.Now()
			if rec, err := st.Run(ctx, v.id); err == nil && len(rec.Pauses) != len(run.Pauses) {
				info := run
				info.Pauses = runInfoOf(rec).Pauses
				run = info
				v.e.bus.Publish(event.Event{Type: event.RunStarted, Time: v.e.now(), RunID: v.id, SessionID: v.rootID(), Run: &info})
			}
		}
		evs, err := st.EventsAfter(ctx, v.id, after)
		if err != nil {
			if ctx.Err() == nil {
				v.e.log.Warn("view: could not read the run's new events", "run", v.id, "err", err)
			}
			continue
		}
		if len(evs) == 0 {
			// A run whose process died writes nothing more, and says
			// nothing of it: after a quiet while, ask whether a process
			// still runs it, and show it stopped if none does. A run that
			// is not running may be deleted by another process (delete,
			// prune): it is then shown as gone, not as one to resume.
			if run.Status == RunDeleted {
				return
			}
			if quietSince.IsZero() {
				quietSince = time.Now()
				continue
			}
			if time.Since(quietSince) < orphanCheckEvery {
				continue
			}
			quietSince = time.Now()
			switch {
			case run.Status == RunRunning && Orphaned(st.Path(), v.id, RunRunning):
				run.Status, run.Error = RunInterrupted, OrphanedReason(v.id, run.Goal, run.Scripted)
				run.EndedAt = stoppedAt(ctx, st, v.id)
			case run.Status != RunRunning && deleted(ctx, st, v.id):
				run.Status, run.Error = RunDeleted, DeletedRunReason
			default:
				continue
			}
			info := run
			v.e.bus.Publish(event.Event{Type: event.RunFinished, Time: v.e.now(), RunID: v.id, SessionID: v.rootID(), Run: &info})
			continue
		}
		quietSince = time.Time{}
		if err := fillMessages(ctx, st, v.id, evs); err != nil {
			v.e.log.Warn("view: could not read the run's new messages", "run", v.id, "err", err)
			continue
		}
		for _, e := range evs {
			if (e.Type == event.RunStarted || e.Type == event.RunFinished) && e.Run != nil {
				e.Run.NotResumed = v.snap.Run.NotResumed // not in the log
				run = *e.Run
			}
		}
		v.e.bus.Publish(evs...)
		after = evs[len(evs)-1].Seq
	}
}

// orphanCheckEvery is how long a followed run may stay quiet before the
// view asks whether a process still runs it (one stored as running) or
// whether it is still stored at all (one that is not).
const orphanCheckEvery = 2 * time.Second

// deleted reports whether the store holds no run runID any more. An error
// other than that says nothing, and the run is taken to be there.
func deleted(ctx context.Context, st *store.Store, runID string) bool {
	_, err := st.LastWrite(ctx, runID)
	return errors.Is(err, store.ErrNotFound)
}

// rootID is the viewed run's root session.
func (v *storedRun) rootID() string {
	for _, s := range v.snap.Sessions {
		if s.ParentID == "" {
			return s.ID
		}
	}
	return ""
}

// stoppedAt is when a run whose process died stopped, as far as the store
// tells: the last thing it stored (zero if that cannot be read). The
// dashboard's clocks stop there, as a resume counts it.
func stoppedAt(ctx context.Context, st *store.Store, runID string) time.Time {
	at, err := st.LastWrite(ctx, runID)
	if err != nil {
		return time.Time{}
	}
	return at
}

// fillMessages puts back the content of the messages that logged events
// refer to, read by their row ids: reading each session's from the run's
// messages took every message of the run once per session, and a view
// following a run of a thousand agents spent more CPU than the run.
// Events logged without an id (none are now) are read by their session's
// indexes.
func fillMessages(ctx context.Context, st *store.Store, runID string, evs []event.Event) error {
	var ids []int64
	span := map[string][2]int{} // session: first and last index of those without an id
	for _, e := range evs {
		switch {
		case e.Message == nil:
		case e.Message.ID != 0:
			ids = append(ids, e.Message.ID)
		default:
			i := e.Message.Index
			if r, ok := span[e.SessionID]; ok {
				span[e.SessionID] = [2]int{min(r[0], i), max(r[1], i)}
			} else {
				span[e.SessionID] = [2]int{i, i}
			}
		}
	}
	byID := map[int64]*store.Message{}
	msgs, err := st.MessagesByID(ctx, runID, ids)
	if err != nil {
		return err
	}
	for i := range msgs {
		byID[msgs[i].ID] = &msgs[i]
	}
	byIndex := map[string]map[int]*store.Message{}
	for sid, r := range span {
		msgs, err := st.Messages(ctx, runID, sid, r[0], r[1]-r[0]+1)
		if err != nil {
			return err
		}
		byIndex[sid] = make(map[int]*store.Message, len(msgs))
		for i := range msgs {
			byIndex[sid][msgs[i].Index] = &msgs[i]
		}
	}
	for i := range evs {
		e := &evs[i]
		if e.Message == nil {
			continue
		}
		m, ok := byID[e.Message.ID]
		if e.Message.ID == 0 {
			m, ok = byIndex[e.SessionID][e.Message.Index]
		}
		if ok && m.SessionID == e.SessionID && m.Index == e.Message.Index {
			e.Message = messageInfo(m)
		}
	}
	return nil
}

func (v *storedRun) Snapshot() event.Snapshot { return v.snap }

// Subscribe subscribes to what is logged for the run after the snapshot,
// and starts following the log for it on the first call. A database read
// as a file that does not change (read-only to this user, and open in no
// process) shows no later writes, and reading it while a process writes it
// is unsafe: the run is shown as stored.
func (v *storedRun) Subscribe(lossy int) *event.Subscription {
	sub := v.e.bus.Subscribe(lossy)
	if !v.e.store.Immutable() {
		v.following.Do(func() { go v.follow(v.ctx, v.snap.LastSeq) })
	}
	return sub
}

func (v *storedRun) ReadOnly() bool                                          { return true }
func (v *storedRun) Broadcast(context.Context, string, string, string) error { return errReadOnly }
func (v *storedRun) SendMessage(context.Context, string, string, bool) error { return errReadOnly }
func (v *storedRun) Answer(context.Context, string, string) error            { return errReadOnly }
func (v *storedRun) Skip(context.Context, string) error                      { return errReadOnly }
func (v *storedRun) SkipAll(context.Context) error                           { return errReadOnly }
func (v *storedRun) Cancel(context.Context, string) error                    { return errReadOnly }

func (v *storedRun) Transcript(ctx context.Context, sessionID string, from, limit int) ([]event.MessageInfo, error) {
	return transcriptFrom(ctx, v.e.store, v.id, sessionID, from, limit)
}

func (v *storedRun) Broadcasts(ctx context.Context, before string, limit int) ([]event.BroadcastInfo, error) {
	return feedFrom(ctx, v.e.store, v.id, before, limit)
}

// recentFeed reads a run's most recent feed items (feedKeep at most) and
// how many it has in all, counted only when there are more than were read.
func recentFeed(ctx context.Context, st *store.Store, runID string) ([]store.Broadcast, int, error) {
	bcs, err := st.Broadcasts(ctx, runID, 0, feedKeep)
	if err != nil || len(bcs) < feedKeep {
		return bcs, len(bcs), err
	}
	total, err := st.BroadcastCount(ctx, runID)
	return bcs, total, err
}
