package runtime

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// Run statuses.
const (
	RunRunning     = "running"
	RunCompleted   = "completed"
	RunFailed      = "failed"
	RunCancelled   = "cancelled"
	RunInterrupted = "interrupted"
	// RunDeleted is never stored: it is what a view says of the run it
	// shows once another process has deleted it.
	RunDeleted = "deleted"
)

// Run is one goal given to the swarm, in progress in this process.
type Run struct {
	e    *Engine
	id   string
	goal string
	ws   *agents.Workspace

	ctx    context.Context
	cancel context.CancelCauseFunc

	mu          sync.Mutex
	rec         store.Run
	sessions    map[string]*Session
	order       []*Session
	root        *Session
	active      int
	dependents  map[string][]*Session
	effects     map[string][]byte
	delegations map[string]*delegation
	finished    bool
	budgetHit   bool
	held        int                     // tokens of the budget held by model calls under way (see reserveTokens)
	budgetFreed chan struct{}           // closed and replaced when a hold is given back; nil until wanted
	feed        []event.BroadcastInfo   // the most recent feed items, for snapshots
	feedTotal   int                     // every feed item of the run, stored before or since
	waitsOn     map[*Session][]*Session // who waits (task_output, task_wait) for whom
	resumed     bool                    // continued by Resume; snapshots say so as run.started did

	llmSem  chan struct{}
	slotSem chan struct{}

	questions *questionBoard
	prompts   promptTails
	human     atomic.Bool // a person can answer questions (dashboard or --control)
	stopping  atomic.Bool
	stoppedBy string        // why InterruptFor stopped the run; set by the one stopper, before recordStopped
	ctxWatch  contextWatch  // prompts larger than the model's context window
	lock      *runlock.Lock // held while this process runs the run (nil without one)
	wg        sync.WaitGroup
	loops     int           // session goroutines running, under mu (wg cannot be waited on while sessions may start)
	quiet     chan struct{} // closed when loops falls to 0 or the run reopens; under mu, nil until wanted
	done      chan struct{}
	doneOnce  sync.Once
	startedAt time.Time
	// awakeFrom is when this process began running the run, or last added
	// its stops to the run's pauses (under mu).
	awakeFrom time.Time
}

// ID is the run's id.
func (r *Run) ID() string { return r.id }

// Done is closed when the run has finished (or was interrupted).
func (r *Run) Done() <-chan struct{} { return r.done }

// Status is the run's status.
func (r *Run) Status() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Status
}

// Result is the root's final answer and the run's error, if any.
func (r *Run) Result() (string, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Result, r.rec.Error
}

// SetHumanAttached tells the run whether a person can answer its questions:
// the dashboard and --control attach one; a headless run without --control
// has none, nor has one whose control input ended. The run records it,
// where `swarmdeck view` reads it, and its open questions follow: they stop
// waiting for a person who is not there, or are asked of one who is.
func (r *Run) SetHumanAttached(on bool) {
	r.human.Store(on)
	r.mu.Lock()
	same := r.rec.HumanAbsent == !on
	r.mu.Unlock()
	if same {
		return
	}
	// A store already closed has ended the run, and its process with it.
	if err := r.e.store.Do(context.Background(), r.followHumanTx); err != nil && !errors.Is(err, store.ErrClosed) {
		r.e.log.Warn("could not record whether a person can answer questions", "run", r.id, "err", err)
	}
}

// followHumanTx brings the run's record and its open questions in line with
// whether a person can answer now. It runs in the writer, as a question is
// asked, so that each question is either asked after it, seeing the new
// value, or before it, and changed here; and it reads the value when it
// runs, so that of two quick changes the last one stands.
func (r *Run) followHumanTx(tx *store.Tx) error {
	on := r.human.Load()
	r.mu.Lock()
	changed := r.rec.HumanAbsent == on
	r.rec.HumanAbsent = !on
	rec := r.rec
	r.mu.Unlock()
	if !changed {
		return nil
	}
	if err := tx.UpdateRun(&rec); err != nil {
		return err
	}
	qs, askers := r.questions.followHuman(on)
	for _, s := range askers {
		s.mu.Lock()
		info := s.infoLocked()
		s.mu.Unlock()
		if _, err := tx.Emit(event.Event{Type: event.SessionStatus, RunID: r.id, SessionID: s.id, Session: info}); err != nil {
			return err
		}
	}
	// Each question as it now stands, as a resume asks again the ones it
	// finds: whoever shows them learns whether a person is asked.
	for i := range qs {
		if _, err := tx.Emit(event.Event{Type: event.QuestionOpened, RunID: r.id, SessionID: qs[i].FromSession, Question: &qs[i]}); err != nil {
			return err
		}
	}
	return nil
}

// followHuman updates the open questions to whether a person can answer
// them. Without one, those waiting for the person stop waiting, as for a
// skip; with one, those that stopped for the lack of one are asked of the
// person. It returns the questions it changed and their askers, whose
// waiting for a person changed with them.
func (b *questionBoard) followHuman(on bool) ([]event.QuestionInfo, []*Session) {
	b.mu.Lock()
	var changed []*question
	if on {
		for _, q := range b.unsettledLocked() {
			if q.humanState == "absent" {
				q.humanState = ""
				b.queue = append(b.queue, q.rec.ID)
				changed = append(changed, q)
			}
		}
	} else {
		for _, id := range b.queue {
			if q := b.open[id]; q != nil && q.humanWait && q.humanState == "" {
				q.humanState = "absent"
				changed = append(changed, q)
			}
		}
		b.queue = nil
	}
	infos := make([]event.QuestionInfo, 0, len(changed))
	var askers []*Session
	for _, q := range changed {
		q.notify()
		infos = append(infos, *b.info(q))
		if !slices.Contains(askers, q.asker) {
			askers = append(askers, q.asker)
		}
	}
	b.mu.Unlock()
	for _, q := range changed {
		q.asker.mu.Lock()
		if on {
			q.asker.waitingHuman++
		} else {
			q.asker.waitingHuman--
		}
		q.asker.mu.Unlock()
	}
	return infos, askers
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	rand.Read(b)
	return hex.EncodeToString(b)[:n]
}

// shortID draws an id of prefix and 4 random hex digits (6 once a run has
// more than 20,000 of the kind, so draws keep finding free ones) that taken
// does not report as used. Ids are short for people to type, so they do
// collide, and a repeated one would replace the earlier thing in the store.
func shortID(prefix string, used int, taken func(string) bool) string {
	n := 4
	if used > 20000 {
		n = 6
	}
	for {
		if id := prefix + randomHex(n); !taken(id) {
			return id
		}
	}
}

// newRun prepares the in-memory run.
func (e *Engine) newRun(id, goal string, rec store.Run) (*Run, error) {
	cfg := e.Config()
	wsDir := cfg.Workspace
	if rec.Workspace != "" {
		wsDir = rec.Workspace
	}
	ws, err := agents.OpenWorkspace(wsDir)
	if err != nil {
		return nil, err
	}
	e.protectOwnFiles(ws, cfg)
	ctx, cancel := context.WithCancelCause(context.Background())
	lim := cfg.Limits
	r := &Run{e: e, id: id, goal: goal, ws: ws, ctx: ctx, cancel: cancel, rec: rec,
		sessions: map[string]*Session{}, dependents: map[string][]*Session{}, effects: map[string][]byte{},
		delegations: map[string]*delegation{},
		llmSem:      make(chan struct{}, max(1, lim.MaxConcurrentLLMCalls)), slotSem: make(chan struct{}, max(1, lim.MaxConcurrentSessions)),
		done: make(chan struct{}), startedAt: e.now()}
	r.awakeFrom = r.startedAt
	r.questions = newQuestionBoard(r)
	r.human.Store(e.human.Load())
	return r, nil
}

// protectOwnFiles keeps the agents' write tools off swarmdeck's own files
// where they lie in the workspace: an agent that rewrote the configuration
// file would raise its own limits at the next reload, and one that wrote
// the database or the log would break the run. The database's files are
// not even read (see agents.Workspace.Seal).
func (e *Engine) protectOwnFiles(ws *agents.Workspace, cfg *config.Config) {
	ws.Protect(cfg.Path, "configuration file")
	// So are the files the next start would read as its configuration,
	// present or not: an agent that created ./config.yaml in a workspace
	// that is the current directory would choose the next run's server
	// (and be sent its API key) and its limits.
	ws.Protect(config.FileName, "configuration file")
	ws.Protect(config.UserConfigPath(), "configuration file")
	ws.Protect(cfg.PromptsDir, "prompt templates")
	ws.Protect(cfg.LogPath(), "log")
	if e.dbPath != "" {
		for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
			ws.Seal(e.dbPath+suffix, "database")
		}
		ws.Protect(runlock.Dir(e.dbPath), "run locks")
	}
	for _, pr := range cfg.Providers {
		if pr != nil {
			ws.Protect(pr.Scenario, "scripted model's scenario")
		}
	}
}

// CheckWorkspace reports why a new run could not use the workspace cfg
// names, as Start would. Checked before anything is written, a start
// refused for it leaves no database behind.
func CheckWorkspace(cfg *config.Config) error {
	ws, err := agents.OpenWorkspace(cfg.Workspace)
	if err != nil {
		return workspaceError(cfg, err)
	}
	return ws.Close()
}

// workspaceError names the line that sets the workspace when the
// configuration file does (a flag's is named by the error itself).
func workspaceError(cfg *config.Config, err error) error {
	var pe *fs.PathError
	if where, ok := cfg.Where("workspace"); ok && errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", where, pe)
	}
	return err
}

// Start begins a new run on goal.
func (e *Engine) Start(ctx context.Context, goal string) (*Run, error) {
	if goal == "" {
		return nil, errors.New("the goal is empty: say what the swarm should do")
	}
	role, ok := e.roster.Load().Get("orchestrator")
	if !ok {
		return nil, errors.New("the roster has no orchestrator role")
	}
	wsAbs, _ := filepath.Abs(e.Config().Workspace)
	// The orchestrator calls the model as soon as the run is stored: its
	// connection is opened meanwhile.
	e.preconnect(1)
	var (
		r    *Run
		root *Session
	)
	for {
		id := newRunID()
		rec := store.Run{ID: id, Goal: goal, Status: RunRunning, Provider: e.ProviderLabel(), BaseURL: e.BaseURL(), Model: e.Model(),
			Scripted: e.isScripted(), Workspace: wsAbs, HumanAbsent: !e.human.Load(), CreatedAt: e.now()}
		var err error
		if r, err = e.newRun(id, goal, rec); err != nil {
			return nil, workspaceError(e.Config(), err)
		}
		root = r.newSession(nil, role, "root", "", OneLine(goal, 80), goal, 0)
		root.rec.Status = StatusRunning
		// A new id is nobody else's: the lock only guards the run from a
		// resume in another process, and is taken while the run is stored.
		locked := make(chan *runlock.Lock, 1)
		go func() {
			lock, err := e.lockRun(id)
			if err != nil {
				e.log.Warn("a new run's lock is held", "run", id, "err", err)
			}
			locked <- lock
		}()
		// The id is checked on the writer's own connection, inside the
		// operation that takes it. The run is committed before its
		// orchestrator calls the model: whoever sees a request of the run
		// finds the run stored.
		err = e.store.Do(ctx, func(tx *store.Tx) error {
			if taken, err := tx.RunExists(id); err != nil {
				return err
			} else if taken {
				return errRunIDTaken
			}
			if err := tx.InsertRun(&rec); err != nil {
				return err
			}
			if _, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: id, SessionID: root.id, Run: r.runInfo()}); err != nil {
				return err
			}
			return r.createSessionTx(tx, root)
		})
		lock := <-locked
		if errors.Is(err, errRunIDTaken) {
			lock.Release()
			r.cancel(err)
			continue
		}
		if err != nil {
			lock.Release()
			return nil, err
		}
		r.lock = lock
		break
	}
	e.register(r)
	root.start()
	e.log.Info("run started", "run", r.id, "provider", r.rec.Provider, "model", r.rec.Model)
	return r, nil
}

// errRunIDTaken is why Start draws another run id.
var errRunIDTaken = errors.New("run id taken")

// newRunID draws a run id; a test replaces it to force a collision.
var newRunID = func() string { return "r-" + randomHex(6) }

func (r *Run) runInfo() *event.RunInfo {
	return runInfoOf(&r.rec)
}

// addStopsLocked adds to the run's pauses the stretches this process stood
// stopped (ctrl+z, SIGSTOP) while it ran the run, as a resume adds the time
// the run stood stopped between two processes: neither is part of its
// elapsed time. Stops shorter than event.MinPause are left out.
func (r *Run) addStopsLocked() {
	for _, st := range awake.Stops(r.awakeFrom) {
		if st.To.Sub(st.From) < event.MinPause {
			continue
		}
		r.rec.Pauses = append(r.rec.Pauses, store.Pause{From: st.From.UTC(), To: st.To.UTC()})
	}
	r.awakeFrom = r.e.now()
}

// storeStops stores the stops the process has just come back from as the
// run's pauses, at once: a view of the run under way and an export leave
// them out of its elapsed time as the dashboard here does. The run's end
// stores any it missed. It runs in the writer, so that the record it
// writes is the latest.
func (r *Run) storeStops() {
	err := r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		r.mu.Lock()
		n := len(r.rec.Pauses)
		if !r.finished {
			r.addStopsLocked()
		}
		rec := r.rec
		r.mu.Unlock()
		if len(rec.Pauses) == n {
			return nil
		}
		return tx.UpdateRun(&rec)
	})
	if err != nil && !errors.Is(err, store.ErrClosed) {
		r.e.log.Warn("could not store the time the process stood stopped", "run", r.id, "err", err)
	}
}

// runInfoOf is what the events and snapshots say of a stored run.
func runInfoOf(rec *store.Run) *event.RunInfo {
	info := &event.RunInfo{ID: rec.ID, Goal: rec.Goal, Status: rec.Status, Provider: rec.Provider, Model: rec.Model,
		Scripted: rec.Scripted, Workspace: rec.Workspace, Result: rec.Result, Error: rec.Error, Usage: event.Usage(rec.Usage),
		StartedAt: rec.CreatedAt, NotResumed: NotResumed(rec)}
	if rec.Status != RunRunning {
		info.EndedAt = rec.EndedAt
	}
	for _, p := range rec.Pauses {
		info.Pauses = append(info.Pauses, event.Pause(p))
	}
	return info
}

// newSession builds a session in memory (not yet stored or registered).
func (r *Run) newSession(parent *Session, role *agents.Role, kind, label, title, task string, depth int) *Session {
	s := &Session{r: r, role: role, parent: parent, agent: role.Name, label: label, title: title, task: task, kind: kind,
		depth: depth, wake: make(chan struct{}, 1), childCh: make(chan struct{}), effectN: map[string]int{}, answered: map[string]bool{}}
	r.mu.Lock()
	s.id = r.newSessionIDLocked()
	r.mu.Unlock()
	parentID := ""
	if parent != nil {
		parentID = parent.id
	}
	s.rec = store.Session{RunID: r.id, ID: s.id, ParentID: parentID, Agent: role.Name, Label: label, Title: title, Task: task,
		Kind: kind, Status: StatusPending, Depth: depth, CreatedAt: r.e.now()}
	s.ctx, s.cancel = context.WithCancelCause(r.ctx)
	return s
}

func (r *Run) newSessionIDLocked() string {
	id := shortID("s-", len(r.sessions), func(id string) bool { _, taken := r.sessions[id]; return taken })
	r.sessions[id] = nil // reserve
	return id
}

// createSessionTx stores a new session, registers it and emits
// session.created. Runs inside a store operation.
func (r *Run) createSessionTx(tx *store.Tx, s *Session) error {
	s.mu.Lock()
	if s.sharedCtx.Len() > 0 {
		s.rec.SharedContext, _ = s.sharedCtx.MarshalJSON()
	}
	s.rec.WaitOn = s.waitOn
	s.rec.Refs = refNames(s.refs)
	s.rec.SpawnCall, s.rec.DelegationID = s.spawnCall, s.delegationID
	rec := s.rec
	info := s.infoLockedCtx(true)
	s.mu.Unlock()
	if err := tx.UpsertSession(&rec); err != nil {
		return err
	}
	if _, err := tx.Emit(event.Event{Type: event.SessionCreated, RunID: r.id, SessionID: s.id, Session: info}); err != nil {
		return err
	}
	r.register(s)
	return r.statusChanged(tx, s, "", rec.Status)
}

func refNames(refs []coordination.Reference) []string {
	out := make([]string, 0, len(refs))
	for _, ref := range refs {
		out = append(out, ref.Name)
	}
	return out
}

func (r *Run) register(s *Session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sessions[s.id] = s
	r.order = append(r.order, s)
	if s.parent == nil {
		r.root = s
	} else {
		s.parent.children = append(s.parent.children, s)
	}
	for _, pred := range s.waitOn {
		r.dependents[pred] = append(r.dependents[pred], s)
	}
}

// rootID is the id of the run's root session, the orchestrator, which the
// run's own events name as theirs; "" before it is registered.
func (r *Run) rootID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.root == nil {
		return ""
	}
	return r.root.id
}

// session finds a session of this run.
func (r *Run) session(id string) *Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sessions[id]
}

// allSessions copies the session list.
func (r *Run) allSessions() []*Session {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Session(nil), r.order...)
}

// statusChanged keeps the run's accounting when a session changes status:
// it starts or fails what was chained after a finished session, and ends the
// run when the root has ended and nothing is active. It runs inside the store
// operation that made the change (never queue another operation from here:
// the writer would wait on itself).
func (r *Run) statusChanged(tx *store.Tx, s *Session, prev, next string) error {
	wasActive := prev != "" && !terminal(prev)
	isActive := !terminal(next)
	r.mu.Lock()
	switch {
	case wasActive && !isActive:
		r.active--
	case !wasActive && isActive:
		r.active++
	}
	r.mu.Unlock()
	if s.parent != nil {
		s.parent.notifyChildChange()
	}
	if !terminal(next) || terminal(prev) {
		return nil
	}
	r.mu.Lock()
	deps := append([]*Session(nil), r.dependents[s.id]...)
	r.mu.Unlock()
	for _, d := range deps {
		if err := r.checkChainTx(tx, d); err != nil {
			return err
		}
	}
	if s.delegationID != "" {
		if err := r.delegationEndedTx(tx, s); err != nil {
			return err
		}
	}
	// Whether the run is over is asked once the operation has done all it
	// does: a session that ends reports to its parent after this, and the
	// report may wake a parent that had ended (a finished session woken by
	// a person, completing again). Asked now, the run would finish and
	// reopen in one breath, and whoever waits for its end would go.
	tx.AtEnd(r.maybeFinishTx)
	return nil
}

// maybeFinishTx ends the run when the root has ended and no session is active.
func (r *Run) maybeFinishTx(tx *store.Tx) error {
	r.mu.Lock()
	root := r.root
	if r.finished || root == nil || r.active > 0 {
		r.mu.Unlock()
		return nil
	}
	r.mu.Unlock()
	root.mu.Lock()
	status, result, errText := root.rec.Status, root.rec.Result, root.rec.Error
	root.mu.Unlock()
	if !terminal(status) {
		return nil
	}
	r.mu.Lock()
	r.finished = true
	r.rec.Status = map[string]string{StatusCompleted: RunCompleted, StatusFailed: RunFailed, StatusCancelled: RunCancelled}[status]
	if status != StatusCompleted {
		// The root's last words before it failed or was cancelled (a
		// reply while it waited for its children, say) are no answer:
		// a script reads the run's result as the answer. They stay in the
		// root's own result.
		result = ""
	}
	r.rec.Result, r.rec.Error = result, errText
	if r.rec.Error == "" && status != StatusCompleted {
		root.mu.Lock()
		r.rec.Error = root.rec.Reason
		root.mu.Unlock()
	}
	r.rec.EndedAt = r.e.now()
	r.addStopsLocked()
	rec := r.rec
	info := r.runInfo()
	r.mu.Unlock()
	if err := tx.UpdateRun(&rec); err != nil {
		return err
	}
	if _, err := tx.Emit(event.Event{Type: event.RunFinished, RunID: r.id, SessionID: root.id, Run: info}); err != nil {
		return err
	}
	r.e.log.Info("run ended", "run", r.id, "status", rec.Status, "tokens", rec.Usage.TotalTokens, "error", rec.Error)
	// Close Done only once this operation is committed (the barrier below
	// runs after the current batch) and the sessions' goroutines have
	// returned: a session cancelled as the run ended may still be recording
	// how it stopped (the question it was waiting on, closed), and whoever
	// waits on Done closes the engine next, which would stop it halfway.
	go func() {
		r.e.store.Do(context.Background(), func(*store.Tx) error { return nil })
		r.awaitUnwound(10 * time.Second)
		r.questions.closeAll("the run finished")
		r.doneOnce.Do(func() { close(r.done) })
	}()
	return nil
}

// loopStarted and loopEnded count the session goroutines running.
func (r *Run) loopStarted() {
	r.mu.Lock()
	r.loops++
	r.mu.Unlock()
}

func (r *Run) loopEnded() {
	r.mu.Lock()
	if r.loops--; r.loops == 0 {
		r.wakeQuietLocked()
	}
	r.mu.Unlock()
}

func (r *Run) wakeQuietLocked() {
	if r.quiet != nil {
		close(r.quiet)
		r.quiet = nil
	}
}

// awaitUnwound waits, limit at most, until no session goroutine of a
// finished run is running. It stops waiting if the run is reopened
// meanwhile (a person woke a session): the run is not over then.
func (r *Run) awaitUnwound(limit time.Duration) {
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		if r.loops == 0 || !r.finished {
			r.mu.Unlock()
			return
		}
		if r.quiet == nil {
			r.quiet = make(chan struct{})
		}
		quiet, loops := r.quiet, r.loops
		r.mu.Unlock()
		select {
		case <-quiet:
		case <-timeout.C:
			r.e.log.Warn("sessions still running after the run finished", "run", r.id, "sessions", loops)
			return
		}
	}
}

// reopen marks a finished run as running again (a person woke a session).
func (r *Run) reopenTx(tx *store.Tx) error {
	r.mu.Lock()
	if !r.finished {
		r.mu.Unlock()
		return nil
	}
	r.finished = false
	r.wakeQuietLocked()
	r.rec.Status = RunRunning
	r.rec.EndedAt = time.Time{}
	r.awakeFrom = r.e.now() // it stood ended, not stopped, until now
	rec := r.rec
	info := r.runInfo()
	r.mu.Unlock()
	if err := tx.UpdateRun(&rec); err != nil {
		return err
	}
	// Whoever follows the run (the dashboard's header) sees it running
	// again; it finishes again with another run.finished.
	_, err := tx.Emit(event.Event{Type: event.RunStarted, RunID: r.id, SessionID: r.rootID(), Run: info})
	return err
}

// addUsage counts tokens and enforces the run's token budget.
func (r *Run) addUsageLocked(u store.Usage) (budgetExceeded bool) {
	r.rec.Usage.PromptTokens += u.PromptTokens
	r.rec.Usage.CompletionTokens += u.CompletionTokens
	r.rec.Usage.TotalTokens += u.TotalTokens
	budget := r.e.Config().Limits.TokenBudgetPerRun
	return budget > 0 && r.rec.Usage.TotalTokens >= budget
}

// Wait blocks until the run finishes or ctx ends.
func (r *Run) Wait(ctx context.Context) error {
	select {
	case <-r.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Interrupt stops every session without changing what is stored about it:
// the run stays resumable. It returns once the session goroutines are gone.
func (r *Run) Interrupt() { r.InterruptFor("") }

// InterruptFor is Interrupt, with what stopped the run from outside (a
// signal, the dashboard closed) for the log's "run ended" line: the run
// itself stores no reason, as nothing went wrong in it.
func (r *Run) InterruptFor(cause string) {
	if !r.stopping.CompareAndSwap(false, true) {
		<-r.done
		return
	}
	r.halt(errInterrupted)
	r.stoppedBy = cause
	r.recordStopped("")
	r.release("the run was interrupted")
}

var errInterrupted = errors.New("the run was interrupted")

// suspend stops the run, resumable, when the model server failed one of
// its sessions in a way that another attempt later could fix (unreachable,
// overloaded, rate limited): every session stays where it was, as in an
// interrupt, and the run ends "interrupted" with the reason and the way
// back in run.finished. Failing the session would have lost its work to an
// outage, and its parent would have gone on to an answer made of failures.
// It must not run on a session's goroutine: it waits for them all.
func (r *Run) suspend(cause string) {
	if !r.stopping.CompareAndSwap(false, true) {
		return
	}
	r.halt(errInterrupted)
	// A server's own message often ends a sentence ("Model unloaded.").
	r.recordStopped("the model server failed: " + strings.TrimRight(cause, ". ") + ". " + event.StoredForResume)
	r.release("the run stopped: the model server failed")
}

// recordStopped stores a run whose sessions have been halted as
// interrupted, with why ("" when it was stopped from outside), and says so
// with run.finished to whoever follows the events (--json, the dashboard),
// as for a run that ends by itself. A run that ended meanwhile keeps its
// end.
func (r *Run) recordStopped(why string) {
	r.mu.Lock()
	if r.finished {
		r.mu.Unlock()
		return
	}
	r.finished = true
	r.rec.Status = RunInterrupted
	r.rec.Error = why
	r.rec.EndedAt = r.e.now()
	r.addStopsLocked()
	rec := r.rec
	info := r.runInfo()
	sessions := slices.Clone(r.order)
	r.mu.Unlock()
	err := r.e.store.Do(context.Background(), func(tx *store.Tx) error {
		// What a session added to its history since its last write (a new
		// session's prompt and task until its first answer) goes with its
		// next write, and a stopped session makes none: it is stored now,
		// so the stopped run shows it, as a resume would rebuild it.
		for _, s := range sessions {
			if err := s.flushTx(tx); err != nil {
				return err
			}
		}
		if err := tx.UpdateRun(&rec); err != nil {
			return err
		}
		_, err := tx.Emit(event.Event{Type: event.RunFinished, RunID: r.id, SessionID: r.rootID(), Run: info})
		return err
	})
	if err != nil {
		r.e.log.Error("could not record a stopped run", "run", r.id, "err", err)
		leftRunning.Store(r.id, true)
		return
	}
	if why == "" {
		cause := r.stoppedBy
		if cause == "" {
			cause = "stopped from outside"
		}
		r.e.log.Info("run ended", "run", r.id, "status", rec.Status, "tokens", rec.Usage.TotalTokens, "cause", cause)
		return
	}
	r.e.log.Info("run ended", "run", r.id, "status", rec.Status, "tokens", rec.Usage.TotalTokens, "error", rec.Error)
}

// halt cancels every session with cause and waits for their goroutines to
// end, 10 seconds at most.
func (r *Run) halt(cause error) {
	r.cancel(cause)
	waited := make(chan struct{})
	go func() { r.wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(10 * time.Second):
		r.e.log.Warn("sessions still running after the run was stopped", "run", r.id, "cause", cause)
	}
}

// release lets go of what a stopped run holds (its open questions, its
// place in the engine, its lock and workspace) and closes Done.
func (r *Run) release(why string) {
	r.questions.closeAll(why)
	r.e.unregister(r)
	r.ws.Close()
	r.doneOnce.Do(func() { close(r.done) })
}

// storeFailed ends the run after the store has failed. Nothing can be
// recorded any more, so the sessions stop where they are, as in a crash:
// what was committed stays, and the run can be resumed once the cause is
// fixed. The run's end and its reason reach the dashboard and a headless
// run's output directly, as events that are not in the log.
func (r *Run) storeFailed(err error) {
	r.mu.Lock()
	finished := r.finished
	r.mu.Unlock()
	if finished || !r.stopping.CompareAndSwap(false, true) {
		return
	}
	reason := fmt.Sprintf("the database failed, so the run stopped where it was (what was stored before stays; resume the run once the cause is fixed): %v", err)
	switch code, _ := store.SQLiteCode(err); {
	case errors.Is(err, store.ErrFileGone):
		reason = fmt.Sprintf("the run stopped: %v", err)
	case code == 11 || code == 26: // SQLITE_CORRUPT, SQLITE_NOTADB
		reason = fmt.Sprintf("the database file is damaged, so the run stopped where it was (%v): sqlite3 %s \"PRAGMA integrity_check\" says where; a resume continues the run once the file is repaired", err, r.e.store.Path())
	}
	r.halt(errors.New(reason))
	r.mu.Lock()
	r.finished = true
	// Interrupted, as the store still has it (as running, no process
	// running it) and as every reader will say: it was not written.
	r.rec.Status = RunInterrupted
	r.rec.Error = reason
	now := r.e.now()
	r.rec.EndedAt = now
	r.addStopsLocked()
	info := r.runInfo()
	r.mu.Unlock()
	root := r.rootID()
	r.e.bus.Publish(event.Event{Type: event.Error, Time: now, RunID: r.id, SessionID: root, Error: reason},
		event.Event{Type: event.RunFinished, Time: now, RunID: r.id, SessionID: root, Run: info})
	if !errors.Is(err, store.ErrFileGone) {
		leftRunning.Store(r.id, true)
	}
	r.release("the run stopped: the database failed")
}

// failRun stops a run that cannot go on (the store failed, the budget is
// spent): every active session is cancelled with the reason.
func (r *Run) failRun(reason string) {
	r.mu.Lock()
	root := r.root
	r.mu.Unlock()
	if root == nil {
		return
	}
	r.cancelTree(root, reason, StatusFailed, nil)
}

// overBudget reports whether the run has spent its token budget.
func (r *Run) overBudget() bool {
	budget := r.e.Config().Limits.TokenBudgetPerRun
	if budget <= 0 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rec.Usage.TotalTokens >= budget
}

// rootTurns is how many model calls the orchestrator has made.
func (r *Run) rootTurns() int {
	r.mu.Lock()
	root := r.root
	r.mu.Unlock()
	if root == nil {
		return 0
	}
	root.mu.Lock()
	defer root.mu.Unlock()
	return root.rec.Turns
}

// budgetExhausted stops the run cleanly, once, saying why.
func (r *Run) budgetExhausted() {
	r.mu.Lock()
	if r.budgetHit {
		r.mu.Unlock()
		return
	}
	r.budgetHit = true
	used := r.rec.Usage.TotalTokens
	r.mu.Unlock()
	budget := r.e.Config().Limits.TokenBudgetPerRun
	r.failRun(fmt.Sprintf("token budget exhausted: the run used %d tokens and token_budget_per_run is %d (model calls already under way finish and add theirs)", used, budget))
}
