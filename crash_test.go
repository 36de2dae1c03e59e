package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/store"
)

// The crash test kills a real `swarmdeck run --headless` process with
// SIGKILL again and again, resumes it each time, and checks after every
// kill what DESIGN.md section 6 promises: nothing stored is lost or
// changed, child results are neither lost nor delivered twice, and no tool
// with side effects acts twice for one call. The workload is a scenario
// that writes and edits files, spawns (in parallel and chained), delegates,
// broadcasts, messages, announces and asks, so that kills land in every
// kind of step.

// crashKills is how many kills the test lands before it lets the run finish.
const crashKills = 24

// crashEdits is how many edit_file turns each executor takes.
const crashEdits = 25

func TestCrashKillResumeKeepsRunIntact(t *testing.T) {
	switch goruntime.GOOS {
	case "windows", "plan9", "js", "wasip1":
		t.Skipf("the crash test needs SIGKILL, which %s does not have", goruntime.GOOS)
	}
	if testing.Short() {
		t.Skip("the crash test builds the binary and kills it many times; skipped with -short")
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("SWARMDECK_CRASH_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("SWARMDECK_CRASH_SEED=%q: %v", s, err)
		}
		seed = n
	}
	t.Logf("seed %d (repeat this schedule with SWARMDECK_CRASH_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x5eed))

	dir := t.TempDir()
	began := time.Now()
	bin := buildSwarmdeck(t)
	t.Logf("binary built in %v", time.Since(began).Round(time.Millisecond))
	defer func() { t.Logf("the runs and checks took %v", time.Since(began).Round(time.Millisecond)) }()

	// An uninterrupted run of the same workload: it must pass the same
	// checks, and its length spreads the kills over the whole run.
	ref := newCrashWorkload(t, filepath.Join(dir, "reference"))
	c := startCrashChild(t, bin, ref.args(""), nil)
	<-c.exited
	if code := c.cmd.ProcessState.ExitCode(); code != 0 || c.hung.Load() {
		c.logTail(t)
		t.Fatalf("the uninterrupted run exited with %d", code)
	}
	refSnap := readCrashSnapshot(t, ref.db)
	for _, p := range append(refSnap.check(nil, ref, true), ref.checkFiles(refSnap, true)...) {
		t.Errorf("uninterrupted run: %s", p)
	}
	if t.Failed() {
		t.FailNow()
	}
	total := len(refSnap.msgs)

	w := newCrashWorkload(t, filepath.Join(dir, "crashed"))
	var (
		prev    *crashSnapshot
		runID   string
		points  []killPoint
		final   *crashChild
		resumes int
	)
	for cycle := 1; ; cycle++ {
		if cycle > 4*crashKills {
			t.Fatalf("%d kills in %d cycles: the run makes no progress between kills", len(points), cycle)
		}
		if runID != "" {
			resumes++
		}
		if len(points) >= crashKills {
			final = startCrashChild(t, bin, w.args(runID), nil)
			<-final.exited
			break
		}
		stored := 0
		if prev != nil {
			stored = len(prev.msgs)
		}
		// Aim the kills evenly at the first 90% of the run, so that the last
		// resume still has work to do.
		span := total * 9 / 10
		plan := planKill(rng, stored, span*len(points)/crashKills, span/crashKills)
		c := startCrashChild(t, bin, w.args(runID), plan)
		<-c.exited
		if !c.wasKilled() {
			// The run got to its end before the kill: that is the final step.
			final = c
			break
		}
		snap := readCrashSnapshot(t, w.db)
		kp := killPoint{plan: plan.String(c.killedBy()), where: snap.classify(), messages: len(snap.msgs)}
		if !c.sawStarted() && snap.runID != "" {
			kp.where = "start: before the process announced the run; " + kp.where
		}
		points = append(points, kp)
		t.Logf("kill %2d: %-40s -> %s (%d messages stored)", len(points), kp.plan, kp.where, kp.messages)
		for _, p := range append(snap.check(prev, w, false), w.checkFiles(snap, false)...) {
			t.Errorf("after kill %d (%s): %s", len(points), kp.plan, p)
		}
		if t.Failed() {
			c.logTail(t)
			t.FailNow()
		}
		prev = snap
		if runID == "" {
			runID = snap.runID
		}
		if snap.runStatus == "completed" {
			t.Logf("kill %d landed after the run's end was stored; no resume is needed", len(points))
			break
		}
	}
	if len(points) < 20 {
		t.Fatalf("only %d kills landed before the run ended, want at least 20", len(points))
	}
	if final != nil {
		if final.hung.Load() {
			final.logTail(t)
			t.Fatalf("the final resume did not finish: it hangs")
		}
		if code := final.cmd.ProcessState.ExitCode(); code != 0 {
			final.logTail(t)
			t.Fatalf("the final resume exited with %d, want 0", code)
		}
		if !final.sawFinished {
			t.Errorf("the final resume printed no run.finished event")
		}
	}
	snap := readCrashSnapshot(t, w.db)
	for _, p := range snap.check(prev, w, true) {
		t.Errorf("at the end: %s", p)
	}
	for _, p := range w.checkFiles(snap, true) {
		t.Errorf("at the end: %s", p)
	}
	checkCrashExport(t, bin, w, snap, resumes)
	logKillDistribution(t, points, len(snap.msgs))
}

// The binary under test is built once per test run, shared by the tests
// of this package that run it, and removed by TestMain.
var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// buildSwarmdeck builds the binary under test.
func buildSwarmdeck(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		if buildDir, buildErr = os.MkdirTemp("", "swarmdeck-bin-"); buildErr != nil {
			return
		}
		buildOut, buildErr = exec.Command("go", "build", "-o", filepath.Join(buildDir, "swarmdeck"), "github.com/swarmdeck/swarmdeck").CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "swarmdeck")
}

// crashWorkload is the scenario, configuration and workspace of the run.
type crashWorkload struct {
	dir, ws, db, config string
}

func newCrashWorkload(t *testing.T, dir string) *crashWorkload {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w := &crashWorkload{dir: dir, ws: filepath.Join(dir, "ws"), db: filepath.Join(dir, "swarmdeck.db"), config: filepath.Join(dir, "config.yaml")}
	if err := os.MkdirAll(w.ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.ws, "README.md"), []byte("# Crash test workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	scen, err := json.MarshalIndent(crashScenario(), "", " ")
	if err != nil {
		t.Fatal(err)
	}
	scenPath := filepath.Join(dir, "scenario.json")
	if err := os.WriteFile(scenPath, scen, 0o644); err != nil {
		t.Fatal(err)
	}
	// Latency and streaming speed make each turn take a few tens of
	// milliseconds, so the run lasts long enough for kills to land in every
	// phase of it.
	cfg := fmt.Sprintf(`provider: scripted
providers:
  scripted:
    latency: 20ms
    stream_speed: 400
    scenario: %q
workspace: %q
log_file: %q
coordination:
  broadcast_timeout: 10m
`, scenPath, w.ws, filepath.Join(dir, "swarmdeck.log"))
	if err := os.WriteFile(w.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// args starts the run, or resumes it once it has an id.
func (w *crashWorkload) args(runID string) []string {
	if runID == "" {
		return []string{"run", "--headless", "--json", "--db", w.db, "--config", w.config, "crash-test goal"}
	}
	return []string{"resume", "--headless", "--json", "--db", w.db, "--config", w.config, runID}
}

type scenCall struct {
	Name string         `json:"name"`
	Args map[string]any `json:"args,omitempty"`
}

type scenStep struct {
	Content   string     `json:"content,omitempty"`
	ToolCalls []scenCall `json:"tool_calls,omitempty"`
}

func call(name string, kv ...any) scenCall {
	args := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		args[kv[i].(string)] = kv[i+1]
	}
	return scenCall{Name: name, Args: args}
}

func calls(cs ...scenCall) scenStep { return scenStep{ToolCalls: cs} }

// crashScenario scripts the run. Every side-effect call carries a text no
// other call uses, so the checks can tie each stored record to its call.
func crashScenario() map[string]any {
	executor := func(label, file string, last scenCall) []scenStep {
		steps := []scenStep{calls(call("write_file", "path", file, "content", "# "+file+"\nEND\n"))}
		for i := 1; i <= crashEdits; i++ {
			steps = append(steps, calls(call("edit_file", "path", file, "old_string", "END",
				"new_string", fmt.Sprintf("%s line %d\nEND", label, i))))
		}
		return append(steps, calls(last), scenStep{Content: label + " finished " + file})
	}
	return map[string]any{
		"roles": map[string][]scenStep{
			"orchestrator": {
				calls(call("create_task_plan", "tasks", []string{"Write the files", "Research", "Checklist"}),
					call("sessions_spawn", "task", []string{"Write notes.md", "Write todo.md"}, "label", "exec", "agent", "executor",
						"parallel", true, "sharedContext", map[string]any{"project": "crash test"})),
				calls(call("sessions_spawn", "task", "Research the workspace", "label", "res", "agent", "researcher"),
					call("sessions_spawn", "task", "Summarise the research", "label", "summary", "agent", "researcher",
						"sharedContext", map[string]any{"$res": "reference"}),
					call("task_broadcast", "message", "root: the files are notes.md and todo.md", "category", "context", "target", "children")),
				calls(call("task_send_message", "task_id", "exec-1", "message", "root: please keep notes.md short"),
					call("delegate_task", "description", "Make a launch checklist", "task_id", "t3")),
				calls(call("ask_others", "question", "Any blockers?", "timeout", 600)),
				{Content: "Waiting for the children."},
			},
			"sub-orchestrator": {
				calls(call("read_file", "path", "README.md")),
				calls(call("announce", "message", "sub-orchestrator: checklist underway")),
				{Content: "checklist done"},
			},
			"researcher": {
				calls(call("list_files")),
				calls(call("task_broadcast", "message", "researcher: found the files", "target", "siblings")),
				{Content: "research done"},
			},
		},
		"labels": map[string][]scenStep{
			"exec-1": executor("exec-1", "notes.md", call("task_broadcast", "message", "exec-1: notes written", "category", "discovery", "target", "siblings")),
			"exec-2": executor("exec-2", "todo.md", call("task_send_message", "task_id", "exec-1", "message", "exec-2: todo.md is done", "noReply", true)),
		},
		"shadow":  scenStep{Content: "No blockers here."},
		"default": scenStep{Content: "Done."},
	}
}

// checkFiles checks the edited files: each holds its edits in order, each
// at most once, at least those whose results are stored and at most those
// the model asked for; at the end, all of them.
func (w *crashWorkload) checkFiles(s *crashSnapshot, final bool) []string {
	var problems []string
	for _, f := range []struct{ label, file string }{{"exec-1", "notes.md"}, {"exec-2", "todo.md"}} {
		sess := s.byLabel(f.label)
		if sess == nil {
			continue
		}
		issued, done := s.countCalls(sess.id, "edit_file", nil)
		wrote, _ := s.countCalls(sess.id, "write_file", nil)
		data, err := os.ReadFile(filepath.Join(w.ws, f.file))
		if errors.Is(err, os.ErrNotExist) {
			if _, ok := s.callDone(sess.id, "write_file"); ok {
				problems = append(problems, fmt.Sprintf("%s: write_file has a stored result but the file is missing", f.file))
			}
			continue
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if wrote == 0 {
			problems = append(problems, fmt.Sprintf("%s exists before write_file was called", f.file))
		}
		lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
		if len(lines) < 2 || lines[0] != "# "+f.file || lines[len(lines)-1] != "END" {
			problems = append(problems, fmt.Sprintf("%s (%d bytes) is not the written file plus edits:\n%s", f.file, len(data), data))
			continue
		}
		edits := lines[1 : len(lines)-1]
		for i, l := range edits {
			if want := fmt.Sprintf("%s line %d", f.label, i+1); l != want {
				problems = append(problems, fmt.Sprintf("%s: line %d is %q, want %q (an edit applied twice or out of order):\n%s", f.file, i+2, l, want, data))
				break
			}
		}
		if len(edits) < done || len(edits) > issued {
			problems = append(problems, fmt.Sprintf("%s holds %d edits; %d edit_file calls were stored, %d with results", f.file, len(edits), issued, done))
		}
		if final && len(edits) != crashEdits {
			problems = append(problems, fmt.Sprintf("%s ends with %d edits, want %d", f.file, len(edits), crashEdits))
		}
	}
	return problems
}

// ---- the process under test ----

type crashChild struct {
	cmd         *exec.Cmd
	stderr      bytes.Buffer
	exited      chan struct{}
	killed      atomic.Bool
	hung        atomic.Bool
	mu          sync.Mutex
	tail        []string
	sawFinished bool
	started     bool
	by          string
}

// wasKilled reports whether the plan's SIGKILL ended the process (not the
// end of the run just before it, nor the hang guard). Call it after exited.
func (c *crashChild) wasKilled() bool {
	return c.killed.Load() && !c.hung.Load() && c.cmd.ProcessState.ExitCode() == -1
}

func (c *crashChild) sawStarted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.started
}

// crashEvent is the part of a --json event the kill triggers look at.
type crashEvent struct {
	Type string `json:"type"`
	Tool *struct {
		Name string `json:"name"`
	} `json:"tool"`
}

// startCrashChild starts the binary and, with a plan, kills it as the
// plan says.
func startCrashChild(t *testing.T, bin string, args []string, plan *killPlan) *crashChild {
	t.Helper()
	c := &crashChild{exited: make(chan struct{})}
	c.cmd = exec.Command(bin, args...)
	c.cmd.Env = isolatedEnv(t)
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A guard only: no step of this run should take anywhere near this.
	guard := time.AfterFunc(45*time.Second, func() {
		c.hung.Store(true)
		c.cmd.Process.Kill()
	})
	var timer *time.Timer
	armed, skipped, seen := false, 0, 0
	arm := func() {
		armed = true
		timer = time.AfterFunc(plan.delay, func() { c.kill("time") })
	}
	if plan != nil && plan.skip == 0 {
		arm()
	}
	go func() {
		defer close(c.exited)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var ev crashEvent
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			c.mu.Lock()
			c.tail = append(c.tail, string(line[:min(len(line), 300)]))
			if len(c.tail) > 20 {
				c.tail = c.tail[1:]
			}
			switch ev.Type {
			case "run.started":
				c.started = true
			case "run.finished":
				c.sawFinished = true
			}
			c.mu.Unlock()
			switch {
			case plan == nil || c.killed.Load():
			case !armed:
				if ev.Type == "message.appended" {
					if skipped++; skipped >= plan.skip {
						arm()
					}
				}
			case plan.is != nil && plan.is(ev):
				if seen++; seen >= plan.n {
					time.Sleep(plan.pause)
					c.kill("event")
				}
			}
		}
		c.cmd.Wait()
		guard.Stop()
		if timer != nil {
			timer.Stop()
		}
	}()
	return c
}

// isolatedEnv keeps a child swarmdeck away from the user's configuration,
// data and keys.
func isolatedEnv(t *testing.T) []string {
	dir := t.TempDir()
	return append(os.Environ(), "OPENAI_API_KEY=", "XDG_CONFIG_HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_STATE_HOME="+dir)
}

// kill sends SIGKILL (os.Kill is SIGKILL on Unix): no handler runs, no
// buffer is flushed, nothing is closed. by says what decided the kill.
func (c *crashChild) kill(by string) {
	c.mu.Lock()
	if c.by == "" {
		c.by = by
	}
	c.mu.Unlock()
	c.killed.Store(true)
	c.cmd.Process.Signal(os.Kill)
}

func (c *crashChild) killedBy() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by
}

func (c *crashChild) logTail(t *testing.T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Logf("last events of the process:\n%s\nstderr:\n%s", strings.Join(c.tail, "\n"), c.stderr.String())
}

// killPlan says when to kill. The process first lets skip messages be
// stored, which spreads the kills over the whole run; then it is killed at
// the n-th event the plan watches (after an optional pause, so that the
// kill lands inside the step the event announced, not always at its start),
// or after delay if that event does not come first.
type killPlan struct {
	skip  int
	delay time.Duration
	what  string
	n     int
	pause time.Duration
	is    func(crashEvent) bool
}

func (p *killPlan) String(by string) string {
	at := ""
	if p.skip > 0 {
		at = fmt.Sprintf("%d messages on, ", p.skip)
	}
	if p.is == nil || by == "time" {
		return fmt.Sprintf("%safter %v", at, p.delay)
	}
	return fmt.Sprintf("%sevent %d of %s +%v", at, p.n, p.what, p.pause)
}

// planKill draws the next kill, aimed between target and target+spread
// stored messages (stored are stored already). One in five is by time
// alone, from the start, and most of those land while the process starts
// or resumes.
func planKill(rng *rand.Rand, stored, target, spread int) *killPlan {
	delay := time.Duration(rng.IntN(100)) * time.Millisecond
	if rng.IntN(5) == 0 {
		return &killPlan{delay: delay / 2}
	}
	kinds := []struct {
		what string
		max  int
		is   func(crashEvent) bool
	}{
		{"write tool", 2, func(e crashEvent) bool {
			return e.Type == "tool.started" && e.Tool != nil && (e.Tool.Name == "edit_file" || e.Tool.Name == "write_file")
		}},
		{"tool.started", 3, func(e crashEvent) bool { return e.Type == "tool.started" }},
		{"tool.finished", 3, func(e crashEvent) bool { return e.Type == "tool.finished" }},
		{"message.appended", 3, func(e crashEvent) bool { return e.Type == "message.appended" }},
		{"session.status", 3, func(e crashEvent) bool { return e.Type == "session.status" }},
		{"broadcast.sent", 1, func(e crashEvent) bool { return e.Type == "broadcast.sent" }},
		{"question/delegation/spawn", 1, func(e crashEvent) bool {
			return strings.HasPrefix(e.Type, "question.") || e.Type == "delegation.updated" || e.Type == "session.created"
		}},
	}
	k := kinds[rng.IntN(len(kinds))]
	p := &killPlan{skip: max(0, target+rng.IntN(spread+1)-stored), delay: 20*time.Millisecond + delay, what: k.what, n: 1 + rng.IntN(k.max), is: k.is}
	if rng.IntN(2) == 0 {
		p.pause = time.Duration(rng.IntN(3000)) * time.Microsecond
	}
	return p
}

type killPoint struct {
	plan     string
	where    string
	messages int
}

// logKillDistribution reports where the kills landed: in which kind of
// step, and how far through the run (by messages stored).
func logKillDistribution(t *testing.T, points []killPoint, total int) {
	byWhere := map[string]int{}
	var deciles [10]int
	for _, p := range points {
		kind, _, _ := strings.Cut(p.where, ":")
		byWhere[kind]++
		if total > 0 {
			deciles[min(9, p.messages*10/total)]++
		}
	}
	var kinds []string
	for k, n := range byWhere {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(kinds)
	var dec []string
	for i, n := range deciles {
		dec = append(dec, fmt.Sprintf("%d-%d%%: %d", i*10, i*10+10, n))
	}
	t.Logf("%d kills; by step: %s", len(points), strings.Join(kinds, ", "))
	t.Logf("by progress (messages stored / %d at the end): %s", total, strings.Join(dec, ", "))
}

// ---- reading the database between kills ----

type msgKey struct {
	session string
	idx     int
}

type crashMsg struct {
	role, content, toolCalls, toolCallID string
}

type crashCall struct {
	id, name  string
	args      map[string]any
	result    string
	hasResult bool
}

type crashSession struct {
	id, parent, agent, label, task, kind, status, errText, spawnCall string
	completions                                                      int
	history                                                          []crashMsg
	calls                                                            []*crashCall
}

type crashRecord struct {
	id, kind, from, target, text string
}

// crashInbox is an item still waiting in a session's inbox.
type crashInbox struct {
	session, kind, content, from string
}

type crashSnapshot struct {
	runID, runStatus string
	sessions         map[string]*crashSession
	order            []string
	msgs             map[msgKey]crashMsg
	feed             []crashRecord // broadcasts, messages, announcements
	recipients       map[string][]string
	delegations      []crashRecord // from: parent, text: description
	questions        []crashRecord // from: asker, text: question
	inbox            []crashInbox  // pending items only
}

// readCrashSnapshot reads the stored run as the killed process left it,
// through the store's read methods (the schema is the store's business).
func readCrashSnapshot(t *testing.T, path string) *crashSnapshot {
	t.Helper()
	s := &crashSnapshot{sessions: map[string]*crashSession{}, msgs: map[msgKey]crashMsg{}, recipients: map[string][]string{}}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return s
	}
	st, err := store.Open(path, nil)
	if err != nil {
		t.Fatalf("open the killed process's database: %v", err)
	}
	defer st.Close()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("read %s: %v", path, err)
		}
	}
	runs, err := st.Runs(ctx, 0)
	must(err)
	switch len(runs) {
	case 0:
		return s
	case 1:
	default:
		t.Fatalf("the database holds %d runs: a kill made the test start a second one", len(runs))
	}
	s.runID, s.runStatus = runs[0].ID, runs[0].Status
	sessions, err := st.Sessions(ctx, s.runID)
	must(err)
	for _, x := range sessions {
		s.sessions[x.ID] = &crashSession{id: x.ID, parent: x.ParentID, agent: x.Agent, label: x.Label, task: x.Task, kind: x.Kind,
			status: x.Status, errText: x.Error, spawnCall: x.SpawnCall, completions: x.Completions}
		s.order = append(s.order, x.ID)
	}
	msgs, err := st.AllMessages(ctx, s.runID)
	must(err)
	for sid, list := range msgs {
		x := s.sessions[sid]
		if x == nil {
			t.Fatalf("messages of an unknown session %s", sid)
		}
		for _, m := range list {
			if m.Index != len(x.history) {
				t.Fatalf("session %s: message index %d follows %d messages (a gap or a repeat)", sid, m.Index, len(x.history))
			}
			cm := crashMsg{role: m.Role, content: m.Content, toolCallID: m.ToolCallID}
			if len(m.ToolCalls) > 0 {
				b, _ := json.Marshal(m.ToolCalls)
				cm.toolCalls = string(b)
			}
			s.msgs[msgKey{sid, m.Index}] = cm
			x.history = append(x.history, cm)
		}
	}
	bcs, err := st.Broadcasts(ctx, s.runID, 0, 0)
	must(err)
	for _, b := range bcs {
		s.feed = append(s.feed, crashRecord{id: b.ID, kind: b.Kind, from: b.FromSession, target: b.Target, text: b.Message})
		for _, r := range b.Recipients {
			if r.Status == "delivered" {
				s.recipients[b.ID] = append(s.recipients[b.ID], r.SessionID)
			}
		}
	}
	dels, err := st.Delegations(ctx, s.runID)
	must(err)
	for _, d := range dels {
		s.delegations = append(s.delegations, crashRecord{id: d.ID, from: d.ParentSession, target: d.SessionID, text: d.Description})
	}
	qs, err := st.Questions(ctx, s.runID)
	must(err)
	for _, q := range qs {
		s.questions = append(s.questions, crashRecord{id: q.ID, from: q.FromSession, text: q.Question})
	}
	inbox, err := st.PendingInbox(ctx, s.runID)
	must(err)
	for _, it := range inbox {
		s.inbox = append(s.inbox, crashInbox{session: it.SessionID, kind: it.Kind, content: it.Content, from: it.FromSession})
	}
	for _, id := range s.order {
		x := s.sessions[id]
		byID := map[string]*crashCall{}
		for _, m := range x.history {
			if m.role == "assistant" && m.toolCalls != "" {
				var tcs []store.ToolCall
				if err := json.Unmarshal([]byte(m.toolCalls), &tcs); err != nil {
					t.Fatalf("session %s: stored tool calls: %v", id, err)
				}
				for _, tc := range tcs {
					c := &crashCall{id: tc.ID, name: tc.Name}
					json.Unmarshal([]byte(tc.Arguments), &c.args)
					x.calls = append(x.calls, c)
					byID[tc.ID] = c
				}
			}
			if m.role == "tool" {
				if c := byID[m.toolCallID]; c != nil {
					c.result, c.hasResult = m.content, true
				}
			}
		}
	}
	return s
}

func (s *crashSnapshot) byLabel(label string) *crashSession {
	for _, id := range s.order {
		if s.sessions[id].label == label {
			return s.sessions[id]
		}
	}
	return nil
}

func (s *crashSnapshot) callDone(session, name string) (*crashCall, bool) {
	for _, c := range s.sessions[session].calls {
		if c.name == name && c.hasResult {
			return c, true
		}
	}
	return nil, false
}

// countCalls counts the session's stored calls of a tool whose arguments
// match (nil: all), and of those the ones with a successful stored result.
func (s *crashSnapshot) countCalls(session, name string, match func(map[string]any) bool) (issued, succeeded int) {
	for _, c := range s.sessions[session].calls {
		if c.name != name || (match != nil && !match(c.args)) {
			continue
		}
		issued++
		if c.hasResult && !strings.HasPrefix(c.result, `{"error"`) {
			succeeded++
		}
	}
	return issued, succeeded
}

func argIs(key, value string) func(map[string]any) bool {
	return func(a map[string]any) bool { v, _ := a[key].(string); return v == value }
}

// delivered counts the copies of an injected item in a session: in its
// history, or still waiting in its inbox.
func (s *crashSnapshot) delivered(session string, is func(string) bool) int {
	n := 0
	for _, m := range s.sessions[session].history {
		if m.role == "user" && is(m.content) {
			n++
		}
	}
	for _, it := range s.inbox {
		if it.session == session && is(it.content) {
			n++
		}
	}
	return n
}

// classify says where the kill landed, from what the process left stored.
func (s *crashSnapshot) classify() string {
	if s.runID == "" {
		return "early: before the run was stored"
	}
	if s.runStatus == "completed" {
		return "end: after the run's end was stored"
	}
	var tools, turns []string
	for _, id := range s.order {
		x := s.sessions[id]
		if x.status == "completed" || x.status == "failed" || x.status == "cancelled" || len(x.history) == 0 {
			continue
		}
		for _, c := range x.calls {
			if !c.hasResult {
				tools = append(tools, id+" "+c.name)
			}
		}
		if last := x.history[len(x.history)-1]; x.status == "running" && last.role != "assistant" {
			turns = append(turns, id)
		}
	}
	switch {
	case len(tools) > 0:
		return "tools: " + strings.Join(tools, ", ") + " cut short"
	case len(turns) > 0:
		return "model call: " + strings.Join(turns, ", ") + " awaiting an answer"
	}
	return "between turns"
}

// check compares the snapshot with the one taken after the previous kill
// and checks the invariants of durable delivery and once-only effects.
// With final, every call must have run and every count be exact.
func (s *crashSnapshot) check(prev *crashSnapshot, w *crashWorkload, final bool) []string {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }

	// Nothing stored before a kill is lost or changed.
	if prev != nil {
		for k, m := range prev.msgs {
			now, ok := s.msgs[k]
			switch {
			case !ok:
				add("message %d of %s (%s) is gone", k.idx, k.session, m.role)
			case now != m:
				add("message %d of %s changed:\nbefore %+v\nafter  %+v", k.idx, k.session, m, now)
			}
		}
		for id, x := range prev.sessions {
			if s.sessions[id] == nil {
				add("session %s (%s) is gone", id, x.label)
			}
		}
	}

	// The results of an answer's tool calls follow it directly: a chat
	// API refuses a history with anything between the two.
	for _, id := range s.order {
		x := s.sessions[id]
		for i, m := range x.history {
			if m.role != "assistant" || m.toolCalls == "" {
				continue
			}
			var tcs []struct{ ID string }
			json.Unmarshal([]byte(m.toolCalls), &tcs)
			open := map[string]bool{}
			for _, tc := range tcs {
				open[tc.ID] = true
			}
			for j := i + 1; j < len(x.history) && len(open) > 0; j++ {
				if next := x.history[j]; next.role != "tool" || !open[next.toolCallID] {
					add("session %s (%s): message %d (%s %.60q) comes between the tool calls of message %d and their results", id, x.label, j, next.role, next.content, i)
					break
				}
				delete(open, x.history[j].toolCallID)
			}
		}
	}

	// Each spawn or delegation call created its sessions once.
	bySpawn := map[string][]*crashSession{}
	for _, id := range s.order {
		if x := s.sessions[id]; x.spawnCall != "" {
			bySpawn[x.spawnCall] = append(bySpawn[x.spawnCall], x)
		}
	}
	for key, kids := range bySpawn {
		parentID, callID, _ := strings.Cut(key, "/")
		parent := s.sessions[parentID]
		var c *crashCall
		if parent != nil {
			for _, pc := range parent.calls {
				if pc.id == callID {
					c = pc
				}
			}
		}
		if c == nil {
			add("sessions %v were created by call %s, which is not stored", ids(kids), key)
			continue
		}
		want := 1
		if tasks, ok := c.args["task"].([]any); ok && c.name == "sessions_spawn" {
			want = len(tasks)
		}
		if len(kids) != want {
			add("call %s (%s) created %d sessions %v, want %d", key, c.name, len(kids), ids(kids), want)
		}
		seen := map[string]bool{}
		for _, k := range kids {
			if seen[k.label+"\x00"+k.task] {
				add("call %s created two sessions labelled %q for the task %q", key, k.label, k.task)
			}
			seen[k.label+"\x00"+k.task] = true
		}
	}

	// One feed record per successful broadcast, message or announcement
	// call, and one delegation and question per call.
	toolOf := map[string]string{"broadcast": "task_broadcast", "message": "task_send_message", "announce": "announce"}
	type recKey struct{ kind, from, text string }
	counts := map[recKey]int{}
	for _, b := range s.feed {
		counts[recKey{b.kind, b.from, b.text}]++
	}
	for _, d := range s.delegations {
		counts[recKey{"delegation", d.from, d.text}]++
	}
	for _, q := range s.questions {
		counts[recKey{"question", q.from, q.text}]++
	}
	toolOf["delegation"], toolOf["question"] = "delegate_task", "ask_others"
	argOf := map[string]string{"broadcast": "message", "message": "message", "announce": "message", "delegation": "description", "question": "question"}
	for _, id := range s.order {
		for _, c := range s.sessions[id].calls {
			for kind, tool := range toolOf {
				if c.name == tool {
					// A call without a record is checked too.
					text, _ := c.args[argOf[kind]].(string)
					if _, ok := counts[recKey{kind, id, text}]; !ok {
						counts[recKey{kind, id, text}] = 0
					}
				}
			}
		}
	}
	for k, n := range counts {
		tool := toolOf[k.kind]
		if tool == "" {
			add("unexpected feed record of kind %s from %s", k.kind, k.from)
			continue
		}
		if s.sessions[k.from] == nil {
			add("%s record from unknown session %s", k.kind, k.from)
			continue
		}
		issued, succeeded := s.countCalls(k.from, tool, argIs(argOf[k.kind], k.text))
		if n > issued || n < succeeded || (final && (n != issued || n != succeeded)) {
			add("%s from %s %q: %d stored records for %d %s calls (%d with a successful result)", k.kind, k.from, k.text, n, issued, tool, succeeded)
		}
	}

	// Every delivered broadcast, message and announcement is in its
	// recipient's history or inbox exactly once.
	for _, b := range s.feed {
		tag := map[string]string{"broadcast": "<sibling_broadcast ", "message": "<task_message ", "announce": "<announcement "}[b.kind]
		from := `task_id="` + b.from + `"`
		rcpts := s.recipients[b.id]
		for _, r := range rcpts {
			if s.sessions[r] == nil {
				add("%s %s delivered to unknown session %s", b.kind, b.id, r)
				continue
			}
			got := s.delivered(r, func(c string) bool {
				return strings.HasPrefix(c, tag) && strings.Contains(c, from) && strings.Contains(c, b.text)
			})
			if got != 1 {
				add("%s %s from %s %q reached %s %d times, want once", b.kind, b.id, b.from, b.text, r, got)
			}
		}
	}

	// Child results: one <task_result> per completion, none lost.
	for _, id := range s.order {
		kid := s.sessions[id]
		if kid.parent == "" || s.sessions[kid.parent] == nil {
			continue
		}
		count := func(status string) int {
			head := fmt.Sprintf(`<task_result task_id="%s" agent="%s" status="%s">`, kid.id, kid.agent, status)
			return s.delivered(kid.parent, func(c string) bool { return strings.HasPrefix(c, head) })
		}
		if got := count("completed"); got != kid.completions {
			add("child %s (%s) completed %d times but its parent %s got %d completed results", kid.id, kid.label, kid.completions, kid.parent, got)
		}
		failed, cancelled := count("failed"), count("cancelled")
		if failed+cancelled > 1 || (failed > 0 && kid.status != "failed") {
			add("child %s (%s, %s) delivered %d failed and %d cancelled results", kid.id, kid.label, kid.status, failed, cancelled)
		}
		// Sibling tables are injected once into each new child.
		if got := s.delivered(kid.id, func(c string) bool { return strings.HasPrefix(c, "<sibling_tasks>") }); got != 1 {
			add("child %s (%s) got %d <sibling_tasks> tables, want 1", kid.id, kid.label, got)
		}
	}

	// Shadow answers are noted once per recipient and question.
	for _, q := range s.questions {
		for _, id := range s.order {
			if got := s.delivered(id, func(c string) bool {
				return strings.HasPrefix(c, `<answered_on_your_behalf question_id="`+q.id+`"`)
			}); got > 1 {
				add("session %s got %d notes of its answer to %s", id, got, q.id)
			}
		}
	}

	if final {
		if s.runStatus != "completed" {
			add("the run is %s, want completed", s.runStatus)
		}
		for _, id := range s.order {
			x := s.sessions[id]
			if x.status != "completed" {
				add("session %s (%s %s) is %s: %s", id, x.agent, x.label, x.status, x.errText)
			}
			for _, c := range x.calls {
				if !c.hasResult {
					add("session %s: call %s (%s) has no result", id, c.id, c.name)
				}
			}
		}
		if len(s.order) != 6 {
			add("the run has %d sessions, want 6 (root, exec-1, exec-2, res, summary, the delegation)", len(s.order))
		}
	}
	return problems
}

func ids(ss []*crashSession) []string {
	var out []string
	for _, x := range ss {
		out = append(out, x.id)
	}
	return out
}

// checkCrashExport reads the finished run through `swarmdeck export`: a
// completed run whose sessions all completed and whose messages are the
// ones the checks saw stored.
func checkCrashExport(t *testing.T, bin string, w *crashWorkload, snap *crashSnapshot, resumes int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, "export", "--db", w.db, "--config", w.config, snap.runID).Output()
	if err != nil {
		t.Fatalf("swarmdeck export: %v", err)
	}
	var x struct {
		Run struct {
			Status, Result, Error string
			CreatedAt             time.Time `json:"created_at"`
			EndedAt               string    `json:"ended_at"`
			Pauses                []struct{ From, To time.Time }
		} `json:"run"`
		Sessions []struct {
			ID, Label, Status, Error string
			Messages                 []struct{ Role, Content string } `json:"messages"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(out, &x); err != nil {
		t.Fatalf("export JSON: %v", err)
	}
	if x.Run.Status != "completed" || x.Run.Error != "" {
		t.Errorf("exported run is %s (error %q), want completed", x.Run.Status, x.Run.Error)
	}
	// Each resume that got as far as storing itself records how long the
	// run stood still, from the last thing the killed process stored.
	if n := len(x.Run.Pauses); n > resumes || (resumes > 0 && n == 0) {
		t.Errorf("export has %d pauses after %d resumes", n, resumes)
	}
	last := x.Run.CreatedAt
	for i, p := range x.Run.Pauses {
		if p.From.Before(last) || p.To.Before(p.From) {
			t.Errorf("pause %d runs from %s to %s, after %s", i, p.From, p.To, last)
		}
		last = p.To
	}
	if ended, err := time.Parse(time.RFC3339Nano, x.Run.EndedAt); err != nil || ended.Before(last) {
		t.Errorf("the run ended at %q, before its last pause ended (%s)", x.Run.EndedAt, last)
	}
	total := 0
	for _, se := range x.Sessions {
		if se.Status != "completed" {
			t.Errorf("exported session %s (%s) is %s: %s", se.ID, se.Label, se.Status, se.Error)
		}
		for i, m := range se.Messages {
			if stored, ok := snap.msgs[msgKey{se.ID, i}]; !ok || stored.content != m.Content || stored.role != m.Role {
				t.Errorf("exported message %d of %s differs from the stored one", i, se.ID)
			}
		}
		total += len(se.Messages)
	}
	if total != len(snap.msgs) {
		t.Errorf("export has %d messages, the database %d", total, len(snap.msgs))
	}
	if len(x.Sessions) != len(snap.order) {
		t.Errorf("export has %d sessions, the database %d", len(x.Sessions), len(snap.order))
	}
}
