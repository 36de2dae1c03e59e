// Package runtime runs swarms: each session of a run is a goroutine that
// talks to an LLM through an OpenAI-compatible server, executes the tools its
// role allows, spawns children and receives their results. Every change is
// written to the store before it is published as an event.
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/swarmdeck/swarmdeck/agents"
	"github.com/swarmdeck/swarmdeck/prompts"
	"github.com/swarmdeck/swarmdeck/runtime/awake"
	"github.com/swarmdeck/swarmdeck/runtime/config"
	"github.com/swarmdeck/swarmdeck/runtime/event"
	"github.com/swarmdeck/swarmdeck/runtime/internal/runlock"
	"github.com/swarmdeck/swarmdeck/runtime/llm"
	"github.com/swarmdeck/swarmdeck/runtime/scripted"
	"github.com/swarmdeck/swarmdeck/runtime/store"
	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Options configure an Engine.
type Options struct {
	Config   *config.Config
	Resolved config.Resolved
	Logger   *slog.Logger
	// DBPath overrides the config's database path.
	DBPath string
	// Policy replaces the scripted model's demo policy (bench, tests).
	Policy scripted.Policy
	// Dialect of the in-process scripted model (tests): openai, ollama, llamacpp.
	Dialect string
	// Model replaces the LLM client; only benchmarks of the runtime's own
	// cost use it (everything else goes through HTTP).
	Model Model
	// View builds an engine that only shows stored runs (View): a
	// database it may not write, the file or its directory, is read as it
	// is instead of refused.
	View bool
	// Upgrading is told before a database written by an older swarmdeck
	// is brought up to date (see store.OpenOptions).
	Upgrading func(path string, from, to int)
	// StoreBusy is told when the database's writer starts waiting for a
	// database that another process keeps locked, and when it stops (see
	// store.OpenOptions.Busy). With it nil, such a database fails the
	// store, and with it the runs.
	StoreBusy func(waiting bool, why string)
	// StoreGiveUp ends such a wait when closed (a first ctrl+c).
	StoreGiveUp <-chan struct{}
}

// Model is what sessions call for completions.
type Model interface {
	Stream(ctx context.Context, req llm.Request, onDelta func(llm.Delta)) (*llm.Response, error)
}

// Engine is swarmdeck's process-wide runtime: the store, the event bus, the
// LLM client, the prompts, the tools and the runs in progress.
type Engine struct {
	cfg      atomic.Pointer[config.Config]
	resolved config.Resolved
	log      *slog.Logger
	store    *store.Store
	bus      *event.Bus
	llm      Model
	scripted *scripted.Server
	baseURL  string
	prompts  *prompts.Library
	tools    *agents.Registry
	roster   atomic.Pointer[agents.Roster]

	mu   sync.Mutex
	runs map[string]*Run
	// stopWatch ends the watch for stops of the process, which live runs
	// store as pauses (nil for a view).
	stopWatch func()

	human atomic.Bool // new and resumed runs start with a person attached

	toolSets sync.Map // "groups|write" -> *llm.ToolSet, encoded once

	dbPath string // the database file, kept from the agents' write tools
}

// toolSet returns the encoded tool definitions for a set of groups, less
// the tools withheld by name: every call of a session sends the same
// tools, so they are encoded once.
func (e *Engine) toolSet(groups map[string]bool, canWrite bool, withheld ...string) *llm.ToolSet {
	names := make([]string, 0, len(groups))
	for g, on := range groups {
		if on {
			names = append(names, g)
		}
	}
	sort.Strings(names)
	key := strings.Join(names, ",")
	if canWrite {
		key += "|write"
	}
	if len(withheld) > 0 {
		key += "|-" + strings.Join(withheld, ",")
	}
	if ts, ok := e.toolSets.Load(key); ok {
		return ts.(*llm.ToolSet)
	}
	tools := e.tools.ForGroups(groups, canWrite)
	specs := make([]llm.Tool, 0, len(tools))
	for _, t := range tools {
		if !slices.Contains(withheld, t.Name) {
			specs = append(specs, t.Spec())
		}
	}
	ts, _ := e.toolSets.LoadOrStore(key, llm.NewToolSet(specs))
	return ts.(*llm.ToolSet)
}

// AttachHuman says whether a person can answer questions in the runs this
// engine starts or resumes from now on (the dashboard, or --control).
func (e *Engine) AttachHuman(on bool) { e.human.Store(on) }

// New builds an engine: it opens the store, starts the scripted model when
// that is the provider, and prepares the LLM client.
func New(opts Options) (*Engine, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Defaults()
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{resolved: opts.Resolved, log: log, bus: &event.Bus{}, tools: agents.NewRegistry(), runs: map[string]*Run{}}
	e.cfg.Store(cfg)
	if err := e.setRoster(cfg); err != nil {
		return nil, err
	}
	lib, err := prompts.New(cfg.PromptsDir, log)
	if err != nil {
		return nil, promptsDirError(cfg, err)
	}
	if err := checkRolePrompts(cfg, lib.RoleNames()); err != nil {
		return nil, err
	}
	e.prompts = lib
	// A scenario that cannot be read is refused before anything is stored.
	p := opts.Resolved.Provider
	policy := opts.Policy
	if (p.Type == "scripted" || p.Type == "") && policy == nil && p.Scenario != "" {
		policy, err = scripted.LoadScenario(p.Scenario)
		if err == nil {
			err = scripted.CheckScenarioRoles(policy, p.Scenario, e.roster.Load().Names())
		}
		if err != nil {
			if where, ok := cfg.Where("providers." + opts.Resolved.Name + ".scenario"); ok {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			return nil, fmt.Errorf("the scripted provider's %w (check scenario in the configuration)", err)
		}
	}
	dbPath := opts.DBPath
	dbError := func(err error) error { return &databaseError{err} }
	if dbPath == "" {
		dbPath = cfg.DBPath()
		if where, ok := cfg.Where("db"); ok {
			dbError = func(err error) error { return &databaseError{fmt.Errorf("%s: %w", where, err)} }
		}
	}
	var st *store.Store
	if err = checkWritable(dbPath); err != nil && opts.View {
		st, err = openToView(dbPath, err)
	} else if err == nil {
		st, err = store.OpenWith(dbPath, func(evs []event.Event) { e.bus.Publish(evs...) }, store.OpenOptions{Upgrading: opts.Upgrading, Busy: opts.StoreBusy, GiveUp: opts.StoreGiveUp})
	}
	if err != nil {
		return nil, dbError(err)
	}
	e.store = st
	e.dbPath = dbPath
	go e.watchStore()

	switch p.Type {
	case "scripted", "":
		e.scripted = scripted.New(scripted.Config{Latency: p.Latency.D(), StreamSpeed: p.StreamSpeed, Policy: policy, Dialect: opts.Dialect, Logger: log})
		if e.baseURL, err = e.scripted.Start(""); err != nil {
			st.Close()
			return nil, fmt.Errorf("start the scripted model: %w", err)
		}
	default:
		e.baseURL = p.BaseURL
	}
	lim := cfg.Limits
	noKey := ""
	if p.APIKeyEnv != "" {
		noKey = "no API key was sent: " + p.APIKeyEnv + " is not set in the environment"
	}
	chosen := ""
	if cfg.Provider == config.ProviderAuto && e.scripted == nil && p.APIKeyEnv != "" {
		// A newcomer with a key in the environment, and no network or an
		// old key, learns why the run went there and the way to the demo.
		chosen = "provider auto chose " + opts.Resolved.Name + " because " + p.APIKeyEnv + " is set; --provider scripted runs on the built-in model, offline"
	}
	e.llm = llm.New(llm.Config{BaseURL: e.baseURL, APIKey: opts.Resolved.APIKey, Headers: p.Headers, NoKeyHint: noKey, ChosenHint: chosen,
		ModelHint:   "pick one with --model or in the configuration file",
		CallTimeout: lim.CallTimeout.D(), IdleTimeout: lim.StreamIdleTimeout.D(), MaxRetries: lim.MaxRetries, Logger: log})
	if opts.Model != nil {
		e.llm = opts.Model
	}
	if !opts.View {
		e.stopWatch = awake.OnStop(func() {
			for _, r := range e.liveRuns() {
				r.storeStops()
			}
		})
	}
	return e, nil
}

// promptsDirError says at which line of the configuration file prompts_dir
// is set when the directory, or a file in it, cannot be read; the prompts
// package, which reads it, does not know lines.
func promptsDirError(cfg *config.Config, err error) error {
	var pe *fs.PathError
	if where, ok := cfg.Where("prompts_dir"); ok && errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", where, pe)
	}
	return err
}

// checkRolePrompts refuses a role whose prompt names no template: the
// session would quietly get another prompt than the one meant. (A live
// reload only warns, since a new prompts_dir may bring the template.)
func checkRolePrompts(cfg *config.Config, templates []string) error {
	for i, a := range cfg.Agents {
		if a.Prompt == "" || slices.Contains(templates, a.Prompt) {
			continue
		}
		if a.Prompt == a.Role {
			// The role's own name, which has no template: its sessions
			// render the fallback template (agent.md), as prompts does.
			continue
		}
		where, ok := cfg.Where(fmt.Sprintf("agents[%d].prompt", i))
		switch {
		case ok:
		case cfg.Path != "":
			where = cfg.Path + ": agents"
		default:
			where = "agents"
		}
		dir := "the built-in templates"
		if cfg.PromptsDir != "" {
			dir += " or " + cfg.PromptsDir
		}
		return fmt.Errorf("%s: role %q names prompt %q, which is not a template in %s: use one of %s, or leave prompt out to use the role's own",
			where, a.Role, a.Prompt, dir, strings.Join(templates, ", "))
	}
	return nil
}

func (e *Engine) setRoster(cfg *config.Config) error {
	roles := make([]agents.Role, 0, len(cfg.Agents))
	for _, a := range cfg.Agents {
		groups := map[string]bool{}
		for _, g := range a.Tools {
			groups[g] = true
		}
		roles = append(roles, agents.Role{Name: a.Role, Description: a.Description, Prompt: a.Prompt, Groups: groups,
			Model: a.Model, CanSpawn: a.CanSpawn, CanWrite: a.CanWrite})
	}
	roster, err := agents.NewRoster(roles)
	if err != nil {
		return fmt.Errorf("agents: %w", err)
	}
	e.roster.Store(roster)
	return nil
}

// Config is the configuration in effect.
func (e *Engine) Config() *config.Config { return e.cfg.Load() }

// Reload applies a changed configuration: limits, latencies, the prompts
// directory and the roster take effect for new sessions and calls.
func (e *Engine) Reload(cfg *config.Config) error {
	// Checked before anything changes: a reload refused leaves every
	// running setting as it was, the prompts directory among them.
	old := e.cfg.Load()
	moved := cfg.PromptsDir != old.PromptsDir
	// The files of the new settings are swarmdeck's own from now on, kept
	// from the agents before the prompts are read from there: a
	// prompts_dir moved into the workspace would otherwise let an agent
	// write the next sessions' system prompts.
	// A reload refused takes that back.
	var unprotect []func()
	for _, r := range e.liveRuns() {
		unprotect = append(unprotect, r.ws.ProtectedNow())
		e.protectOwnFiles(r.ws, cfg)
	}
	refused := func(err error) error {
		for _, undo := range unprotect {
			undo()
		}
		return err
	}
	if moved {
		if err := e.prompts.SetDir(cfg.PromptsDir); err != nil {
			return refused(promptsDirError(cfg, err))
		}
	}
	err := checkRolePrompts(cfg, e.prompts.RoleNames())
	if err == nil {
		err = e.setRoster(cfg)
	}
	if err != nil {
		if moved {
			e.prompts.SetDir(old.PromptsDir)
		}
		return refused(err)
	}
	e.cfg.Store(cfg)
	for _, r := range e.liveRuns() {
		e.protectOwnFiles(r.ws, cfg) // a run registered meanwhile
	}
	e.toolSets.Clear()
	if cfg.Coordination.MaxConcurrentDelegations != old.Coordination.MaxConcurrentDelegations {
		// Places may have freed: queued delegations start on a raised limit
		// now, not when a running one ends.
		for _, r := range e.liveRuns() {
			e.store.Do(context.Background(), r.startQueuedDelegationsTx)
		}
	}
	if sl, ok := e.llm.(interface{ SetLimits(llm.Limits) }); ok {
		lim := cfg.Limits
		sl.SetLimits(llm.Limits{CallTimeout: lim.CallTimeout.D(), IdleTimeout: lim.StreamIdleTimeout.D(), MaxRetries: lim.MaxRetries})
	}
	if e.scripted != nil {
		if p, ok := cfg.Providers[e.resolved.Name]; ok && p.Type == "scripted" {
			e.scripted.SetLatency(p.Latency.D())
			e.scripted.SetStreamSpeed(p.StreamSpeed)
		}
	}
	return nil
}

// Prompts is the prompt library (for hot reload).
func (e *Engine) Prompts() *prompts.Library { return e.prompts }

// Store is the engine's database.
func (e *Engine) Store() *store.Store { return e.store }

// Bus carries the engine's events.
func (e *Engine) Bus() *event.Bus { return e.bus }

// Scripted is the in-process scripted model, or nil.
func (e *Engine) Scripted() *scripted.Server { return e.scripted }

// ProviderLabel describes the provider for people ("scripted", "openai at
// http://localhost:11434/v1").
func (e *Engine) ProviderLabel() string {
	if e.scripted != nil {
		return "scripted"
	}
	return ProviderLabel(e.resolved)
}

// ProviderLabel is how a run records the provider res resolves to: the
// provider's name and the host it is served from, or "scripted". Resume
// compares it with the run's to continue on the provider the run began on.
func ProviderLabel(res config.Resolved) string {
	p := res.Provider
	if p.Type == config.TypeScripted || p.Type == "" {
		return "scripted"
	}
	host := p.BaseURL
	if u, err := url.Parse(p.BaseURL); err == nil && u.Host != "" {
		host = u.Host
	}
	return res.Name + " (" + host + ")"
}

// BaseURL is the model server's base URL as the run records it: without
// credentials, query or fragment; "" for the scripted model.
func (e *Engine) BaseURL() string {
	if e.scripted != nil {
		return ""
	}
	return RedactedBaseURL(e.resolved.Provider.BaseURL)
}

// RedactedBaseURL is a base URL without its fragment, and with its user,
// password and the values of its query hidden ("https://xxxxx:xxxxx@host",
// "?api-version=xxxxx"): any of them could carry a secret. Their places
// stay, so that a resume knows that the URL must be given again.
func RedactedBaseURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	u.Fragment, u.RawFragment = "", ""
	if u.User != nil {
		// Kept as a mark, so that a resume knows to ask for them.
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(HiddenValue, HiddenValue)
		} else {
			u.User = url.User(HiddenValue)
		}
	}
	if u.RawQuery != "" {
		parts := strings.Split(u.RawQuery, "&")
		for i, p := range parts {
			name, _, _ := strings.Cut(p, "=")
			parts[i] = name + "=" + HiddenValue
		}
		u.RawQuery = strings.Join(parts, "&")
	}
	return u.String()
}

// HiddenValue stands for each value of a base URL's query, and for its
// user and password, in what a run stores.
const HiddenValue = "xxxxx"

// HiddenInURL says which parts of a base URL a run stored hidden (see
// RedactedBaseURL): "user", "password" and "query", in that order; none
// when it stored the URL whole.
func HiddenInURL(stored string) []string {
	u, err := url.Parse(stored)
	if err != nil {
		return nil
	}
	var hidden []string
	if u.User != nil {
		hidden = append(hidden, "user")
		if _, ok := u.User.Password(); ok {
			hidden = append(hidden, "password")
		}
	}
	if strings.Contains(u.RawQuery, "="+HiddenValue) {
		hidden = append(hidden, "query")
	}
	return hidden
}

// Model is the model requested.
func (e *Engine) Model() string { return e.resolved.Model }

// Close stops every run (leaving it resumable) and closes the store.
func (e *Engine) Close() error {
	if e.stopWatch != nil {
		e.stopWatch()
	}
	for _, r := range e.liveRuns() {
		r.Interrupt()
	}
	if c, ok := e.llm.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
	var errs []error
	if e.scripted != nil {
		errs = append(errs, e.scripted.Close())
	}
	errs = append(errs, e.store.Close())
	return errors.Join(errs...)
}

// Export returns a stored run as the export JSON structure.
func (e *Engine) Export(ctx context.Context, runID string) (*store.Export, error) {
	if runID == "" {
		r, err := e.store.LatestRun(ctx)
		if err != nil {
			return nil, err
		}
		runID = r.ID
	}
	return e.store.Export(ctx, runID)
}

// Runs lists stored runs.
func (e *Engine) Runs(ctx context.Context) ([]store.Run, error) { return e.store.Runs(ctx, 0) }

// watchStore stops the runs in progress when the store fails: nothing
// they do can be recorded any more (see Run.storeFailed).
func (e *Engine) watchStore() {
	select {
	case <-e.store.Failed():
	case <-e.store.Closed():
		return
	}
	err := e.store.Err()
	e.log.Error("the database failed; stopping the runs in progress", "err", err)
	for _, r := range e.liveRuns() {
		go r.storeFailed(err)
	}
}

// liveRuns are the runs this engine holds.
func (e *Engine) liveRuns() []*Run {
	e.mu.Lock()
	defer e.mu.Unlock()
	runs := make([]*Run, 0, len(e.runs))
	for _, r := range e.runs {
		runs = append(runs, r)
	}
	return runs
}

func (e *Engine) register(r *Run) {
	e.mu.Lock()
	e.runs[r.id] = r
	e.mu.Unlock()
	running.Store(r, true)
	// A reload since the run's workspace was opened protected only the
	// runs registered then (see Reload).
	e.protectOwnFiles(r.ws, e.Config())
}

func (e *Engine) unregister(r *Run) {
	e.mu.Lock()
	delete(e.runs, r.id)
	e.mu.Unlock()
	running.Delete(r)
	r.lock.Release()
}

// running are the runs this process runs, stored, in every engine: for
// StopAtOnce. leftRunning are those it stopped without storing their end
// (the store failed, or another process held the database): stored as
// running, and resumable as if this process had died.
var (
	running     sync.Map // *Run → true
	leftRunning sync.Map // run id → true
)

// StopAtOnce is for a process about to exit without stopping its runs (a
// second ctrl+c while the first one's stop waits): it removes the runs'
// lock files, which the exit would leave behind, one for a run not yet
// stored among them, and returns the ids of the stored runs it was
// running or left stored as running, in order. Those resume as after a
// crash.
func StopAtOnce() []string {
	runlock.Abandon()
	var ids []string
	running.Range(func(r, _ any) bool {
		ids = append(ids, r.(*Run).id)
		return true
	})
	leftRunning.Range(func(id, _ any) bool {
		ids = append(ids, id.(string))
		return true
	})
	slices.Sort(ids)
	return slices.Compact(ids)
}

// OrphanedRunReason is why a run stored as running that no process runs
// is shown interrupted.
const OrphanedRunReason = "no swarmdeck process is running it (it was killed, crashed, or stopped when its database failed): resume it to continue"

// OrphanedReason is OrphanedRunReason for run id, whose goal and model
// tell a bench run, which is not resumed.
func OrphanedReason(id, goal string, scripted bool) string {
	if why := NotResumed(&store.Run{ID: id, Goal: goal, Scripted: scripted}); why != "" {
		return "no swarmdeck process is running it (it was killed, crashed, or stopped when its database failed); it is " + why
	}
	return OrphanedRunReason
}

// DeletedRunReason is why a view shows its run as deleted.
const DeletedRunReason = "another swarmdeck process deleted it from the database (delete or prune): what is shown is all that is left of it"

// RunIsLive reports whether a process, this one or another, is running the
// run now; known is false where that cannot be told. A run stored as
// running that no process runs was stopped by a crash or a kill -9 and is
// waiting for `resume`.
func RunIsLive(dbPath, runID string) (live, known bool) {
	return runlock.Held(runlock.Dir(dbPath), runID)
}

// HeldElsewhere is the *RunHeldError of a run that another process is
// running now, for a command to say before it does anything else (a
// resume, before it looks for a terminal); nil when none is, or when that
// cannot be told.
func HeldElsewhere(dbPath, runID string) error {
	l, err := runlock.Acquire(runlock.Dir(dbPath), runID)
	if runlock.IsHeld(err) {
		return err
	}
	l.Release()
	return nil
}

// Orphaned reports whether a run of the database at dbPath is stored as
// running while no process runs it: every reader shows it interrupted,
// for OrphanedRunReason, until it is resumed.
func Orphaned(dbPath, runID, status string) bool {
	if status != RunRunning {
		return false
	}
	live, known := RunIsLive(dbPath, runID)
	return known && !live
}

// lockRun takes the run's lock (see runlock), which keeps another process
// from resuming it while this one runs it. Only a lock held elsewhere is an
// error: a lock that cannot be made at all (a read-only directory beside a
// writable database, a system without flock) must not stop a run.
func (e *Engine) lockRun(id string) (*runlock.Lock, error) {
	l, err := runlock.Acquire(runlock.Dir(e.store.Path()), id)
	if runlock.IsHeld(err) {
		return nil, err
	}
	if err != nil {
		e.log.Warn("running without a run lock", "run", id, "err", err)
	}
	return l, nil
}

// preconnect has the model's client open connections for n calls about to
// be made, where it can (see llm.Client.Preconnect).
func (e *Engine) preconnect(n int) {
	if c, ok := e.llm.(interface{ Preconnect(int) }); ok {
		c.Preconnect(n)
	}
}

func (e *Engine) now() time.Time { return time.Now().UTC() }

// scriptedName reports whether the provider is the scripted model.
func (e *Engine) isScripted() bool { return e.scripted != nil }

// OneLine is s with its runs of white space made one space, clipped to n
// characters, the last of them an ellipsis when it is cut: a goal or a
// message in a one-line listing.
func OneLine(s string, n int) string { return textcut.OneLine(s, n) }

// OneLineCells is OneLine by the terminal columns s takes (日 takes two),
// for a column of a table.
func OneLineCells(s string, w int) string { return textcut.OneLineCells(s, w) }

// ErrDatabase marks the errors of New that come from the database it was
// given: one it cannot make, open or write, or that is not a swarmdeck
// database. Each names the file.
var ErrDatabase = errors.New("the database cannot be used")

type databaseError struct{ err error }

func (e *databaseError) Error() string        { return e.err.Error() }
func (e *databaseError) Unwrap() error        { return e.err }
func (e *databaseError) Is(target error) bool { return target == ErrDatabase }

// openToView opens read-only a database that checkWritable refused with
// notWritable, for an engine that only shows runs. One that is not a
// database, or cannot be read either, keeps the reason it was refused.
func openToView(path string, notWritable error) (*store.Store, error) {
	st, err := store.OpenReadOnly(path)
	switch {
	case err == nil:
		return st, nil
	case errors.Is(err, store.ErrOldSchema):
		return nil, fmt.Errorf("%s was written by an older swarmdeck and must be upgraded before this one can show it, which needs write access to it and its directory: `swarmdeck runs` by a user who may write it upgrades it", path)
	}
	return nil, notWritable
}

// checkWritable refuses a database file the engine could open but never
// write: SQLite opens a read-only file without complaint and fails only at
// the first write, with a message that names neither the file nor the fix.
// Opening it for writing changes nothing. The same holds for the directory
// it is in, where SQLite makes the database and its write-ahead log: a
// file is made there and removed again to find out.
func checkWritable(path string) error {
	if err := store.CheckFile(path); err != nil {
		return err // a pipe's opening would wait for a reader
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	switch {
	case err == nil:
		f.Close()
	case errors.Is(err, fs.ErrNotExist):
		// created by the store
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("the database %s is read-only: swarmdeck stores every run there; make it writable or give another --db", path)
	default:
		return fmt.Errorf("open the database %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	probe, err := os.CreateTemp(dir, ".swarmdeck-probe-*")
	switch {
	case err == nil:
		probe.Close()
		return os.Remove(probe.Name())
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EROFS):
		return fmt.Errorf("the directory %s of the database %s is read-only: swarmdeck writes the database and its -wal and -shm files there; make it writable or give another --db", dir, path)
	default:
		return nil // a directory still to be made, by the store, which reports why it cannot
	}
}
