package coordination

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Plan task statuses (update_task_status's status argument).
const (
	TaskPending    = "pending"
	TaskInProgress = "in_progress"
	TaskCompleted  = "completed"
	TaskBlocked    = "blocked"
)

// DefaultMaxTasks is the plan size limit used when none is configured.
const DefaultMaxTasks = 100

// ValidTaskStatus reports whether s is a plan task status.
func ValidTaskStatus(s string) bool {
	switch s {
	case TaskPending, TaskInProgress, TaskCompleted, TaskBlocked:
		return true
	}
	return false
}

// Task is one task of a session's plan. DependsOn holds ids of tasks that
// come earlier in the plan.
type Task struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	DependsOn   []string  `json:"depends_on"`
	Note        string    `json:"note,omitempty"`
	CreatedAt   time.Time `json:"created_at,omitzero"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

func (t Task) clone() Task {
	t.DependsOn = append([]string{}, t.DependsOn...) // non-nil: encodes as []
	return t
}

// BlockedTask is a task that cannot be worked on yet, with the ids of the
// dependencies it is still waiting on.
type BlockedTask struct {
	Task
	WaitingOn []string `json:"waiting_on"`
}

// PlanOption configures a Plan.
type PlanOption func(*Plan)

// WithClock sets the clock used for CreatedAt and CompletedAt, so tests
// are deterministic.
func WithClock(now func() time.Time) PlanOption {
	return func(p *Plan) {
		if now != nil {
			p.now = now
		}
	}
}

// Plan is one session's task plan: an ordered list of tasks in which every
// dependency points to an earlier task, so the graph is acyclic by
// construction. It is safe for concurrent use and hands out copies only.
type Plan struct {
	mu       sync.Mutex
	tasks    []Task
	maxTasks int
	now      func() time.Time
	seq      int // the last n used for an automatic id "t<n>"
}

func newPlan(maxTasks int, opts []PlanOption) *Plan {
	if maxTasks <= 0 {
		maxTasks = DefaultMaxTasks
	}
	p := &Plan{maxTasks: maxTasks, now: time.Now}
	for _, o := range opts {
		o(p)
	}
	return p
}

// NewPlan validates the items of create_task_plan and builds the plan.
// Missing ids become "t1", "t2", ... (skipping ids already taken); custom
// ids must be unique and 1-64 letters, digits, '_', '-' or '.'. Every
// dependency, by index or id, must name an earlier task; cycles (reported
// with their path), self-references, forward references, unknown ids,
// out-of-range indexes and more than maxTasks tasks (maxTasks <= 0 means
// DefaultMaxTasks) are rejected with an error naming the task by index, id
// and description. Index dependencies are stored as ids.
func NewPlan(specs []TaskSpec, maxTasks int, opts ...PlanOption) (*Plan, error) {
	p := newPlan(maxTasks, opts)
	n := len(specs)
	if n == 0 {
		return nil, errors.New("the plan has no tasks; give at least one")
	}
	if n > p.maxTasks {
		return nil, fmt.Errorf("the plan has %d tasks; the limit is %d — merge small steps, or add tasks later as earlier ones finish", n, p.maxTasks)
	}

	descs := make([]string, n)
	for i, s := range specs {
		descs[i] = strings.TrimSpace(s.Description)
		if descs[i] == "" {
			return nil, fmt.Errorf("tasks[%d] has an empty description; say what the task is", i)
		}
		if err := checkDescLength(descs[i]); err != nil {
			return nil, fmt.Errorf("tasks[%d]'s %w", i, err)
		}
	}

	ids := make([]string, n)
	byID := make(map[string]int, n)
	for i, s := range specs {
		if s.ID == "" {
			continue
		}
		if !validTaskID(s.ID) {
			return nil, fmt.Errorf("tasks[%d] (%s): id %q is not valid; use 1-64 letters, digits, '_', '-' or '.'", i, shortDesc(descs[i]), s.ID)
		}
		if j, dup := byID[s.ID]; dup {
			return nil, fmt.Errorf("tasks[%d] (%s): id %q is already used by tasks[%d]; ids must be unique", i, shortDesc(descs[i]), s.ID, j)
		}
		ids[i] = s.ID
		byID[s.ID] = i
	}
	for i := range ids {
		if ids[i] == "" {
			ids[i] = p.nextID(func(id string) bool { _, taken := byID[id]; return taken })
			byID[ids[i]] = i
		}
	}
	label := func(i int) string {
		return fmt.Sprintf("tasks[%d] %q (%s)", i, ids[i], shortDesc(descs[i]))
	}

	deps := make([][]int, n)
	for i, s := range specs {
		for _, d := range s.DependsOn {
			k := d.Index
			if d.IsIndex {
				if k < 0 || k >= n {
					return nil, fmt.Errorf("%s depends on tasks[%d], which does not exist: the plan has %d tasks (indexes 0-%d)", label(i), k, n, n-1)
				}
			} else {
				var ok bool
				if k, ok = byID[d.ID]; !ok {
					hint := ""
					if looksLikeIndex(d.ID) {
						hint = fmt.Sprintf(" (to refer to a task by position, write the number %s without quotes)", strings.TrimSpace(d.ID))
					}
					return nil, fmt.Errorf("%s depends on %q, but no task has that id%s", label(i), d.ID, hint)
				}
			}
			if k == i {
				return nil, fmt.Errorf("%s depends on itself; remove it from its own depends_on", label(i))
			}
			if !slices.Contains(deps[i], k) {
				deps[i] = append(deps[i], k)
			}
		}
	}

	if cycle := findCycle(deps); cycle != nil {
		return nil, cycleError(cycle, ids)
	}
	for i := range deps {
		for _, k := range deps[i] {
			if k > i {
				return nil, fmt.Errorf("%s depends on %s, which comes later: a task may only depend on earlier tasks — put tasks[%d] before tasks[%d] or drop the dependency", label(i), label(k), k, i)
			}
		}
	}

	now := p.now()
	p.tasks = make([]Task, n)
	for i := range specs {
		t := Task{ID: ids[i], Description: descs[i], Status: TaskPending, DependsOn: []string{}, CreatedAt: now}
		for _, k := range deps[i] {
			t.DependsOn = append(t.DependsOn, ids[k])
		}
		p.tasks[i] = t
	}
	return p, nil
}

// findCycle returns the indexes of one dependency cycle (each depends on
// the next, the last on the first), starting at its smallest index, or nil.
func findCycle(deps [][]int) []int {
	const (
		unvisited = iota
		onPath
		done
	)
	state := make([]int, len(deps))
	var path []int
	var found []int
	var visit func(i int) bool
	visit = func(i int) bool {
		state[i] = onPath
		path = append(path, i)
		for _, k := range deps[i] {
			switch state[k] {
			case onPath:
				start := slices.Index(path, k)
				found = slices.Clone(path[start:])
				return true
			case unvisited:
				if visit(k) {
					return true
				}
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		return false
	}
	for i := range deps {
		if state[i] == unvisited && visit(i) {
			break
		}
	}
	if found == nil {
		return nil
	}
	m := slices.Index(found, slices.Min(found))
	return append(found[m:], found[:m]...)
}

func cycleError(cycle []int, ids []string) error {
	arrows := make([]string, 0, len(cycle)+1)
	for _, i := range cycle {
		arrows = append(arrows, ids[i])
	}
	// The members are listed by position, the path in dependency order.
	members := slices.Sorted(slices.Values(cycle))
	names := make([]string, len(members))
	for j, i := range members {
		names[j] = fmt.Sprintf("tasks[%d] %q", i, ids[i])
	}
	arrows = append(arrows, ids[cycle[0]])
	who := names[0]
	if len(names) > 1 {
		who = strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
	}
	return fmt.Errorf("%s form a cycle: %s (a -> b: a depends on b) — remove one of these dependencies", who, strings.Join(arrows, " -> "))
}

// MaxDescription is the most characters a task's description may have. A
// plan is shown whole in every plan tool's result and event, so one long
// description would be repeated at every change; details belong in a file
// or the shared context.
const MaxDescription = 2000

// cleanDescription is a task's description as Add and Edit take it, trimmed,
// or why it is refused.
func cleanDescription(d string) (string, error) {
	d = strings.TrimSpace(d)
	if d == "" {
		return "", errors.New("description is empty; say what the task is")
	}
	return d, checkDescLength(d)
}

// checkDescLength refuses a description over MaxDescription.
func checkDescLength(d string) error {
	if n := utf8.RuneCountInString(d); n > MaxDescription {
		return fmt.Errorf("description is %d characters; the limit is %d: say what the task is in short, and put the details in a workspace file or the shared context", n, MaxDescription)
	}
	return nil
}

// shortDesc quotes a description for an error, cut to 60 characters.
func shortDesc(d string) string {
	const limit = 60
	if utf8.RuneCountInString(d) > limit {
		// Cut between characters as a reader sees them, not inside an
		// emoji or between a letter and its accent.
		d = textcut.Prefix(d, limit) + "…"
	}
	return strconv.Quote(d)
}

// nextID returns the next free automatic id.
func (p *Plan) nextID(taken func(string) bool) string {
	for {
		p.seq++
		id := "t" + strconv.Itoa(p.seq)
		if !taken(id) {
			return id
		}
	}
}

// Restore rebuilds a plan from stored tasks (maxTasks <= 0 means
// DefaultMaxTasks). Stored plans were valid when written, so Restore does
// not fail; it repairs what it must to keep the plan's invariants: tasks
// with an empty or repeated id are dropped, an unknown status becomes
// pending, and dependencies that are not on an earlier task are dropped.
func Restore(tasks []Task, maxTasks int, opts ...PlanOption) *Plan {
	p := newPlan(maxTasks, opts)
	pos := make(map[string]int, len(tasks))
	for _, t := range tasks {
		if t.ID == "" {
			continue
		}
		if _, dup := pos[t.ID]; dup {
			continue
		}
		t = t.clone()
		if !ValidTaskStatus(t.Status) {
			t.Status = TaskPending
		}
		kept := t.DependsOn[:0]
		for _, d := range t.DependsOn {
			if _, earlier := pos[d]; earlier && !slices.Contains(kept, d) {
				kept = append(kept, d)
			}
		}
		t.DependsOn = kept
		pos[t.ID] = len(p.tasks)
		p.tasks = append(p.tasks, t)
		if n, ok := autoIDNumber(t.ID); ok && n > p.seq {
			p.seq = n
		}
	}
	return p
}

// autoIDNumber returns n for an id of the form "t<n>".
func autoIDNumber(id string) (int, bool) {
	rest, ok := strings.CutPrefix(id, "t")
	if !ok || rest == "" || rest[0] == '0' {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n > 0
}

// MaxTasks returns the plan's size limit.
func (p *Plan) MaxTasks() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.maxTasks
}

// SetMaxTasks changes the plan's size limit (n <= 0 means DefaultMaxTasks),
// for a limit changed while the plan exists: tasks already in it stay, and
// Add refuses new ones past it.
func (p *Plan) SetMaxTasks(n int) {
	if n <= 0 {
		n = DefaultMaxTasks
	}
	p.mu.Lock()
	p.maxTasks = n
	p.mu.Unlock()
}

// Len returns the number of tasks.
func (p *Plan) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.tasks)
}

// Tasks returns a copy of the tasks in plan order.
func (p *Plan) Tasks() []Task {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Task, len(p.tasks))
	for i, t := range p.tasks {
		out[i] = t.clone()
	}
	return out
}

// Get returns a copy of the task with id.
func (p *Plan) Get(id string) (Task, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if i := p.pos(id); i >= 0 {
		return p.tasks[i].clone(), true
	}
	return Task{}, false
}

func (p *Plan) pos(id string) int {
	for i, t := range p.tasks {
		if t.ID == id {
			return i
		}
	}
	return -1
}

// unknownTask is the error for an id that is not in the plan; listing the
// ids lets a model correct itself in one step.
func (p *Plan) unknownTask(what, id string) error {
	const show = 20
	ids := make([]string, 0, min(len(p.tasks), show))
	for i, t := range p.tasks {
		if i == show {
			ids = append(ids, "…")
			break
		}
		ids = append(ids, t.ID)
	}
	if len(ids) == 0 {
		return fmt.Errorf("%s %q is not in the plan: the plan has no tasks", what, id)
	}
	return fmt.Errorf("%s %q is not in the plan; its task ids are %s", what, id, strings.Join(ids, ", "))
}

// Add inserts a new pending task right after afterID, or at the end when
// afterID is empty. Its dependencies must be existing tasks that come
// before the insertion point, which keeps the plan acyclic.
func (p *Plan) Add(description, afterID string, dependsOn []string) (Task, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	description, err := cleanDescription(description)
	if err != nil {
		return Task{}, err
	}
	if len(p.tasks) >= p.maxTasks {
		if len(p.tasks) == p.maxTasks {
			return Task{}, fmt.Errorf("the plan already has %d tasks, which is the limit — delete tasks that are no longer needed first", len(p.tasks))
		}
		return Task{}, fmt.Errorf("the plan already has %d tasks, and the limit is %d — delete tasks that are no longer needed first", len(p.tasks), p.maxTasks)
	}
	at := len(p.tasks)
	if afterID != "" {
		i := p.pos(afterID)
		if i < 0 {
			return Task{}, p.unknownTask("after_task_id", afterID)
		}
		at = i + 1
	}
	deps := []string{}
	for _, d := range dependsOn {
		i := p.pos(d)
		if i < 0 {
			return Task{}, p.unknownTask("depends_on", d)
		}
		if i >= at {
			return Task{}, fmt.Errorf("depends_on %q comes after the place the new task goes (after %q); a task may only depend on earlier tasks — add it after %q or later", d, p.tasks[at-1].ID, d)
		}
		if !slices.Contains(deps, d) {
			deps = append(deps, d)
		}
	}
	t := Task{
		ID:          p.nextID(func(id string) bool { return p.pos(id) >= 0 }),
		Description: description,
		Status:      TaskPending,
		DependsOn:   deps,
		CreatedAt:   p.now(),
	}
	p.tasks = slices.Insert(p.tasks, at, t)
	return t.clone(), nil
}

// SetStatus changes a task's status. A non-empty note replaces the task's
// note; an empty one clears it when the status changes and keeps it when
// the status stays. Completing a task stamps CompletedAt and
// returns the tasks that became ready because of it: pending tasks that
// depend on it and now have every dependency completed. Leaving completed
// clears CompletedAt.
func (p *Plan) SetStatus(id, status, note string) (Task, []Task, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ValidTaskStatus(status) {
		return Task{}, nil, fmt.Errorf("status %q is not valid; use one of pending, in_progress, completed, blocked", status)
	}
	i := p.pos(id)
	if i < 0 {
		return Task{}, nil, p.unknownTask("task", id)
	}
	t := &p.tasks[i]
	was := t.Status
	t.Status = status
	// A note explains a status: a new status without one clears the old,
	// which would read as the new status's reason ("waiting for the
	// person" on a completed task). The same status again keeps it.
	if note != "" || status != was {
		t.Note = note
	}
	var ready []Task
	switch {
	case status == TaskCompleted && was != TaskCompleted:
		t.CompletedAt = p.now()
		for _, o := range p.tasks {
			if o.Status == TaskPending && slices.Contains(o.DependsOn, id) && len(p.waitingOn(o)) == 0 {
				ready = append(ready, o.clone())
			}
		}
	case status != TaskCompleted:
		t.CompletedAt = time.Time{}
	}
	return t.clone(), ready, nil
}

// waitingOn returns the ids of t's dependencies that are not completed.
func (p *Plan) waitingOn(t Task) []string {
	waiting := []string{}
	for _, d := range t.DependsOn {
		if i := p.pos(d); i >= 0 && p.tasks[i].Status != TaskCompleted {
			waiting = append(waiting, d)
		}
	}
	return waiting
}

// Edit replaces a task's description.
func (p *Plan) Edit(id, description string) (Task, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	description, err := cleanDescription(description)
	if err != nil {
		return Task{}, err
	}
	i := p.pos(id)
	if i < 0 {
		return Task{}, p.unknownTask("task", id)
	}
	p.tasks[i].Description = description
	return p.tasks[i].clone(), nil
}

// Delete removes a task. It is refused while other tasks depend on it, so
// no dependency ever dangles.
func (p *Plan) Delete(id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.pos(id)
	if i < 0 {
		return p.unknownTask("task", id)
	}
	var dependents []string
	for _, t := range p.tasks {
		if slices.Contains(t.DependsOn, id) {
			dependents = append(dependents, strconv.Quote(t.ID))
		}
	}
	switch len(dependents) {
	case 0:
		p.tasks = slices.Delete(p.tasks, i, i+1)
		return nil
	case 1:
		return fmt.Errorf("task %q cannot be deleted: task %s depends on it — delete that task first", id, dependents[0])
	}
	return fmt.Errorf("task %q cannot be deleted: tasks %s depend on it — delete those tasks first", id, strings.Join(dependents, ", "))
}

// Ready returns the pending tasks whose dependencies are all completed, in
// plan order: the work that can start now (or be delegated in parallel).
func (p *Plan) Ready() []Task {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Task
	for _, t := range p.tasks {
		if t.Status == TaskPending && len(p.waitingOn(t)) == 0 {
			out = append(out, t.clone())
		}
	}
	return out
}

// Blocked returns, in plan order, the pending tasks still waiting on
// unfinished dependencies and the tasks explicitly marked blocked (whose
// WaitingOn may be empty: the note says why), each with WaitingOn.
func (p *Plan) Blocked() []BlockedTask {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blocked()
}

func (p *Plan) blocked() []BlockedTask {
	var out []BlockedTask
	for _, t := range p.tasks {
		if t.Status != TaskPending && t.Status != TaskBlocked {
			continue
		}
		waiting := p.waitingOn(t)
		if t.Status == TaskBlocked || len(waiting) > 0 {
			out = append(out, BlockedTask{Task: t.clone(), WaitingOn: waiting})
		}
	}
	return out
}

// Summary returns a one-line progress report such as
// "3/5 done, 1 in progress, 1 waiting, 1 blocked": waiting tasks are
// pending on dependencies not completed yet, blocked ones are marked so;
// Blocked returns both. The dashboard's plan line counts the same way.
func (p *Plan) Summary() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tasks) == 0 {
		return "no tasks"
	}
	var done, inProgress, ready, waiting, blocked int
	for _, t := range p.tasks {
		switch t.Status {
		case TaskCompleted:
			done++
		case TaskInProgress:
			inProgress++
		case TaskBlocked:
			blocked++
		case TaskPending:
			if len(p.waitingOn(t)) == 0 {
				ready++
			} else {
				waiting++
			}
		}
	}
	parts := []string{fmt.Sprintf("%d/%d done", done, len(p.tasks))}
	for _, c := range []struct {
		n    int
		what string
	}{{inProgress, "in progress"}, {ready, "ready"}, {waiting, "waiting"}, {blocked, "blocked"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c.n, c.what))
		}
	}
	return strings.Join(parts, ", ")
}
