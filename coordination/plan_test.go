package coordination

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock returns a clock that advances one minute per call.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(time.Minute)
		return t
	}
}

func mustPlan(t *testing.T, tasksJSON string) *Plan {
	t.Helper()
	specs, err := ParseTaskSpecs(json.RawMessage(tasksJSON))
	if err != nil {
		t.Fatalf("ParseTaskSpecs: %v", err)
	}
	p, err := NewPlan(specs, 0, WithClock(fakeClock()))
	if err != nil {
		t.Fatalf("NewPlan: %v", err)
	}
	return p
}

// shape renders a plan as "id:status[deps]" for compact comparisons.
func shape(tasks []Task) string {
	var parts []string
	for _, t := range tasks {
		parts = append(parts, fmt.Sprintf("%s:%s%v", t.ID, t.Status, t.DependsOn))
	}
	return strings.Join(parts, " ")
}

func ids(tasks []Task) string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.ID)
	}
	return strings.Join(out, ",")
}

func TestParseTaskSpecs(t *testing.T) {
	tests := []struct {
		name, in string
		want     []TaskSpec
		wantErr  string
	}{
		{name: "strings", in: `["Research", "Design"]`, want: []TaskSpec{{Description: "Research"}, {Description: "Design"}}},
		{name: "objects with index and id deps", in: `[{"id":"r","description":"Research"},{"description":"Design","depends_on":[0,"r"]}]`,
			want: []TaskSpec{{ID: "r", Description: "Research"}, {Description: "Design", DependsOn: []DepRef{DepIndex(0), DepID("r")}}}},
		{name: "mixed", in: `["A", {"description":"B","depends_on":[0]}]`, want: []TaskSpec{{Description: "A"}, {Description: "B", DependsOn: []DepRef{DepIndex(0)}}}},
		{name: "whole float index", in: `["A", {"description":"B","depends_on":[0.0, 1e0]}]`, want: []TaskSpec{{Description: "A"}, {Description: "B", DependsOn: []DepRef{DepIndex(0), DepIndex(1)}}}},
		{name: "lone dependency", in: `["A", {"description":"B","depends_on":"A1"}]`, want: []TaskSpec{{Description: "A"}, {Description: "B", DependsOn: []DepRef{DepID("A1")}}}},
		{name: "null fields", in: `[{"id":null,"description":"A","depends_on":null}]`, want: []TaskSpec{{Description: "A"}}},
		{name: "empty list", in: `[]`, want: []TaskSpec{}},
		{name: "bool dep", in: `["a","b",{"description":"c","depends_on":[true]}]`,
			wantErr: "tasks[2]: depends_on[0] must be a task index (number) or task id (string), got true"},
		{name: "object dep", in: `[{"description":"c","depends_on":[{"id":1}]}]`, wantErr: `tasks[0]: depends_on[0] must be a task index (number) or task id (string), got {"id":1}`},
		{name: "fraction", in: `[{"description":"c","depends_on":[1.5]}]`, wantErr: "tasks[0]: depends_on[0] must be a whole-number task index, got 1.5"},
		{name: "huge", in: `[{"description":"c","depends_on":[1e300]}]`, wantErr: "whole-number task index"},
		{name: "depends_on object", in: `[{"description":"c","depends_on":{"a":1}}]`, wantErr: "depends_on must be a list"},
		{name: "not an array", in: `{"tasks":[]}`, wantErr: "tasks must be a JSON array of descriptions or {\"description\": ...} objects, got an object"},
		{name: "null", in: `null`, wantErr: "tasks is required"},
		{name: "broken", in: `["a",`, wantErr: "tasks is not valid JSON"},
		{name: "number item", in: `["a", 42]`, wantErr: "tasks[1]: expected a description (string) or an object"},
		{name: "missing description", in: `[{"id":"x"}]`, wantErr: "tasks[0]: description is required"},
		{name: "description not string", in: `[{"description":["x"]}]`, wantErr: `tasks[0]: description must be a string, got ["x"]`},
		{name: "id not string", in: `[{"id":3,"description":"x"}]`, wantErr: "tasks[0]: id must be a string"},
		{name: "unknown field", in: `[{"description":"x","dependsOn":[0]}]`, wantErr: `tasks[0]: unknown field "dependsOn"; the fields are id, description, depends_on`},
		{name: "duplicate field", in: `[{"description":"x","description":"y"}]`, wantErr: `tasks[0]: the object has the key "description" twice`},
		{name: "long value is cut", in: `["a",{"description":"x","depends_on":[{"k":"` + strings.Repeat("v", 100) + `"}]}]`, wantErr: "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTaskSpecs(json.RawMessage(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestDepRefJSON(t *testing.T) {
	for _, in := range []string{`3`, `"research"`} {
		var d DepRef
		if err := json.Unmarshal([]byte(in), &d); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(d)
		if string(b) != in {
			t.Errorf("%s -> %s", in, b)
		}
	}
	var s TaskSpec
	if err := json.Unmarshal([]byte(`{"description":"x","depends_on":[0]}`), &s); err != nil || s.Description != "x" || len(s.DependsOn) != 1 {
		t.Errorf("TaskSpec.UnmarshalJSON: %+v %v", s, err)
	}
	if err := json.Unmarshal([]byte(`"just text"`), &s); err != nil || s.Description != "just text" || s.DependsOn != nil {
		t.Errorf("TaskSpec from string: %+v %v", s, err)
	}
}

func TestNewPlanGraphs(t *testing.T) {
	chain := func(n int) string {
		items := []string{`"step 0"`}
		for i := 1; i < n; i++ {
			items = append(items, fmt.Sprintf(`{"description":"step %d","depends_on":[%d]}`, i, i-1))
		}
		return "[" + strings.Join(items, ",") + "]"
	}
	tests := []struct {
		name, in, want string
	}{
		{"independent", `["a","b","c"]`, "t1:pending[] t2:pending[] t3:pending[]"},
		{"index deps become ids", `["a",{"description":"b","depends_on":[0]},{"description":"c","depends_on":[1,0]}]`,
			"t1:pending[] t2:pending[t1] t3:pending[t2 t1]"},
		{"id deps", `[{"id":"research","description":"R"},{"id":"design","description":"D","depends_on":["research"]}]`,
			"research:pending[] design:pending[research]"},
		{"auto ids skip taken ones", `[{"id":"t2","description":"x"},"y","z"]`, "t2:pending[] t1:pending[] t3:pending[]"},
		{"duplicate deps collapse", `["a",{"description":"b","depends_on":[0,"t1",0]}]`, "t1:pending[] t2:pending[t1]"},
		{"diamond", `["top",{"description":"left","depends_on":[0]},{"description":"right","depends_on":[0]},{"description":"bottom","depends_on":[1,2]}]`,
			"t1:pending[] t2:pending[t1] t3:pending[t1] t4:pending[t2 t3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := shape(mustPlan(t, tt.in).Tasks()); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}

	t.Run("chain of 100", func(t *testing.T) {
		p := mustPlan(t, chain(100))
		tasks := p.Tasks()
		if len(tasks) != 100 || tasks[99].DependsOn[0] != "t99" {
			t.Fatalf("bad chain: %d tasks, last %+v", len(tasks), tasks[len(tasks)-1])
		}
		for i := range 100 {
			ready := p.Ready()
			if len(ready) != 1 || ready[0].ID != fmt.Sprintf("t%d", i+1) {
				t.Fatalf("step %d: ready = %s", i, ids(ready))
			}
			_, newly, err := p.SetStatus(ready[0].ID, TaskCompleted, "")
			if err != nil {
				t.Fatal(err)
			}
			if i < 99 && (len(newly) != 1 || newly[0].ID != fmt.Sprintf("t%d", i+2)) {
				t.Fatalf("step %d: newly ready = %s", i, ids(newly))
			}
		}
		if got := p.Summary(); got != "100/100 done" {
			t.Errorf("Summary = %q", got)
		}
	})

	t.Run("chain of 101 exceeds the default limit", func(t *testing.T) {
		specs, _ := ParseTaskSpecs(json.RawMessage(chain(101)))
		if _, err := NewPlan(specs, 0); err == nil || !strings.Contains(err.Error(), "the plan has 101 tasks; the limit is 100") {
			t.Errorf("error = %v", err)
		}
	})
}

func TestNewPlanRejects(t *testing.T) {
	tests := []struct {
		name, in string
		max      int
		wantErr  string
	}{
		{"empty", `[]`, 0, "the plan has no tasks"},
		{"too many", `["a","b","c"]`, 2, "the plan has 3 tasks; the limit is 2"},
		{"empty description", `["a","  "]`, 0, "tasks[1] has an empty description"},
		{"bad id", `[{"id":"my task","description":"x"}]`, 0, `tasks[0] ("x"): id "my task" is not valid; use 1-64 letters, digits, '_', '-' or '.'`},
		{"long id", `[{"id":"` + strings.Repeat("a", 65) + `","description":"x"}]`, 0, "is not valid"},
		{"duplicate id", `[{"id":"a","description":"x"},{"id":"a","description":"y"}]`, 0, `tasks[1] ("y"): id "a" is already used by tasks[0]`},
		{"self by index", `["a",{"description":"b","depends_on":[1]}]`, 0, `tasks[1] "t2" ("b") depends on itself`},
		{"self by id", `[{"id":"x","description":"X","depends_on":["x"]}]`, 0, `tasks[0] "x" ("X") depends on itself`},
		{"index out of range", `["a",{"description":"b","depends_on":[7]}]`, 0, `tasks[1] "t2" ("b") depends on tasks[7], which does not exist: the plan has 2 tasks (indexes 0-1)`},
		{"negative index", `["a",{"description":"b","depends_on":[-1]}]`, 0, "depends on tasks[-1], which does not exist"},
		{"unknown id", `["a",{"description":"b","depends_on":["nope"]}]`, 0, `tasks[1] "t2" ("b") depends on "nope", but no task has that id`},
		{"quoted index hint", `["a",{"description":"b","depends_on":["0"]}]`, 0, "write the number 0 without quotes"},
		{"forward by index", `["a",{"id":"design","description":"Design the UI","depends_on":[3]},"c",{"id":"deploy","description":"Deploy"}]`, 0,
			`tasks[1] "design" ("Design the UI") depends on tasks[3] "deploy" ("Deploy"), which comes later: a task may only depend on earlier tasks`},
		{"forward by id", `[{"id":"a","description":"A","depends_on":["b"]},{"id":"b","description":"B"}]`, 0, "which comes later"},
		{"two-cycle", `[{"id":"a","description":"A","depends_on":["b"]},{"id":"b","description":"B","depends_on":["a"]}]`, 0,
			`tasks[0] "a" and tasks[1] "b" form a cycle: a -> b -> a`},
		{"three-cycle by index", `[{"description":"x","depends_on":[2]},{"description":"y","depends_on":[0]},{"description":"z","depends_on":[1]}]`, 0,
			`tasks[0] "t1", tasks[1] "t2" and tasks[2] "t3" form a cycle: t1 -> t3 -> t2 -> t1`},
		{"cycle found after a valid prefix", `["ok",{"id":"p","description":"P","depends_on":[0,"q"]},{"id":"q","description":"Q","depends_on":["p"]}]`, 0,
			`tasks[1] "p" and tasks[2] "q" form a cycle: p -> q -> p`},
		{"long description is cut", `[{"description":"` + strings.Repeat("d", 100) + `","depends_on":[0]}]`, 0, strings.Repeat("d", 60) + `…"`},
		{"description over the limit", `["a","` + strings.Repeat("é", MaxDescription+1) + `"]`, 0,
			"tasks[1]'s description is 2001 characters; the limit is 2000: say what the task is in short, and put the details in a workspace file or the shared context"},
		{"object's description over the limit", `[{"id":"x","description":"` + strings.Repeat("d", 900000) + `"}]`, 0, "tasks[0]'s description is 900000 characters; the limit is 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			specs, err := ParseTaskSpecs(json.RawMessage(tt.in))
			if err != nil {
				t.Fatalf("ParseTaskSpecs: %v", err)
			}
			p, err := NewPlan(specs, tt.max)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if p != nil {
				t.Error("a plan was returned with the error")
			}
		})
	}
}

func TestNewlyReady(t *testing.T) {
	// top -> left, right -> bottom: bottom becomes ready only when the last
	// of its two dependencies completes.
	p := mustPlan(t, `[{"id":"top","description":"T"},{"id":"left","description":"L","depends_on":["top"]},{"id":"right","description":"R","depends_on":["top"]},{"id":"bottom","description":"B","depends_on":["left","right"]},{"id":"side","description":"S"}]`)
	steps := []struct {
		id, status, newly, ready, blocked string
	}{
		{"", "", "", "top,side", "left,right,bottom"},
		{"top", TaskInProgress, "", "side", "left,right,bottom"},
		{"top", TaskCompleted, "left,right", "left,right,side", "bottom"},
		{"top", TaskCompleted, "", "left,right,side", "bottom"}, // completing twice reports nothing new
		{"left", TaskCompleted, "", "right,side", "bottom"},
		{"right", TaskInProgress, "", "side", "bottom"},
		{"right", TaskCompleted, "bottom", "bottom,side", ""},
		{"side", TaskBlocked, "", "bottom", "side"},
		{"left", TaskPending, "", "left", "bottom,side"}, // reopening left blocks bottom again
	}
	for i, s := range steps {
		if s.id != "" {
			_, newly, err := p.SetStatus(s.id, s.status, "")
			if err != nil {
				t.Fatalf("step %d: %v", i, err)
			}
			if got := ids(newly); got != s.newly {
				t.Errorf("step %d (%s -> %s): newly ready = %q, want %q", i, s.id, s.status, got, s.newly)
			}
		}
		if got := ids(p.Ready()); got != s.ready {
			t.Errorf("step %d: Ready = %q, want %q", i, got, s.ready)
		}
		var blocked []string
		for _, b := range p.Blocked() {
			blocked = append(blocked, b.ID)
		}
		if got := strings.Join(blocked, ","); got != s.blocked {
			t.Errorf("step %d: Blocked = %q, want %q", i, got, s.blocked)
		}
	}
}

func TestBlockedWaitingOn(t *testing.T) {
	p := mustPlan(t, `["a","b",{"description":"c","depends_on":[0,1]}]`)
	p.SetStatus("t1", TaskCompleted, "")
	p.SetStatus("t2", TaskBlocked, "waiting for an API key")
	got := p.Blocked()
	if len(got) != 2 {
		t.Fatalf("Blocked = %+v", got)
	}
	if got[0].ID != "t2" || len(got[0].WaitingOn) != 0 || got[0].Note != "waiting for an API key" {
		t.Errorf("explicitly blocked: %+v", got[0])
	}
	if got[1].ID != "t3" || strings.Join(got[1].WaitingOn, ",") != "t2" {
		t.Errorf("waiting task: %+v", got[1])
	}
	b, _ := json.Marshal(got[1])
	if !strings.Contains(string(b), `"waiting_on":["t2"]`) || !strings.Contains(string(b), `"id":"t3"`) {
		t.Errorf("JSON = %s", b)
	}
	if s := p.Summary(); s != "1/3 done, 1 waiting, 1 blocked" {
		t.Errorf("Summary = %q", s)
	}
}

func TestSetStatus(t *testing.T) {
	clock := fakeClock()
	specs, _ := ParseTaskSpecs(json.RawMessage(`["a","b"]`))
	p, _ := NewPlan(specs, 0, WithClock(clock))
	task, _, err := p.SetStatus("t1", TaskCompleted, "delegation d-1")
	if err != nil {
		t.Fatal(err)
	}
	if task.CompletedAt.IsZero() || !task.CompletedAt.After(task.CreatedAt) || task.Note != "delegation d-1" {
		t.Errorf("completed task: %+v", task)
	}
	task, _, _ = p.SetStatus("t1", TaskInProgress, "")
	if !task.CompletedAt.IsZero() || task.Note != "" {
		t.Errorf("reopened task: %+v (a new status without a note clears the old one)", task)
	}
	// A note explains its status: it stays while the status does, and a
	// new status without a note of its own does not inherit it.
	for i, step := range []struct{ status, note, want string }{
		{TaskBlocked, "waiting for the person", "waiting for the person"},
		{TaskBlocked, "", "waiting for the person"},
		{TaskBlocked, "waiting for a key", "waiting for a key"},
		{TaskCompleted, "", ""},
		{TaskCompleted, "shipped", "shipped"},
		{TaskPending, "", ""},
	} {
		if task, _, _ := p.SetStatus("t2", step.status, step.note); task.Note != step.want {
			t.Errorf("step %d: %s with note %q leaves note %q, want %q", i, step.status, step.note, task.Note, step.want)
		}
	}
	if _, _, err := p.SetStatus("t1", "done", ""); err == nil || !strings.Contains(err.Error(), `status "done" is not valid; use one of pending, in_progress, completed, blocked`) {
		t.Errorf("bad status: %v", err)
	}
	if _, _, err := p.SetStatus("t9", TaskCompleted, ""); err == nil || !strings.Contains(err.Error(), `task "t9" is not in the plan; its task ids are t1, t2`) {
		t.Errorf("unknown id: %v", err)
	}
}

func TestAdd(t *testing.T) {
	p := mustPlan(t, `[{"id":"a","description":"A"},{"id":"b","description":"B"},{"id":"c","description":"C","depends_on":["a"]}]`)
	task, err := p.Add("after a", "a", []string{"a", "a"})
	if err != nil {
		t.Fatal(err)
	}
	if task.ID != "t1" || task.Status != TaskPending || strings.Join(task.DependsOn, ",") != "a" {
		t.Errorf("added %+v", task)
	}
	if got := ids(p.Tasks()); got != "a,t1,b,c" {
		t.Errorf("order after insert = %s", got)
	}
	if task, _ := p.Add("at the end", "", []string{"c", "t1"}); task.ID != "t2" {
		t.Errorf("appended %+v", task)
	}
	if got := ids(p.Tasks()); got != "a,t1,b,c,t2" {
		t.Errorf("order after append = %s", got)
	}
	errs := []struct {
		desc, after string
		deps        []string
		want        string
	}{
		{"", "", nil, "description is empty"},
		{"x", "zzz", nil, `after_task_id "zzz" is not in the plan; its task ids are a, t1, b, c, t2`},
		{"x", "", []string{"nope"}, `depends_on "nope" is not in the plan`},
		{"x", "a", []string{"c"}, `depends_on "c" comes after the place the new task goes (after "a"); a task may only depend on earlier tasks — add it after "c" or later`},
		{"x", "a", []string{"a", "b"}, `depends_on "b" comes after`},
		// t1 sits right where the new task goes, so it would end up after it.
		{"x", "a", []string{"t1"}, `depends_on "t1" comes after the place the new task goes (after "a")`},
	}
	for _, e := range errs {
		if _, err := p.Add(e.desc, e.after, e.deps); err == nil || !strings.Contains(err.Error(), e.want) {
			t.Errorf("Add(%q, %q, %v) error = %v, want %q", e.desc, e.after, e.deps, err, e.want)
		}
	}
	if got := ids(p.Tasks()); got != "a,t1,b,c,t2" {
		t.Errorf("failed adds changed the plan: %s", got)
	}
	// Depending on the task right before the insertion point is allowed.
	if _, err := p.Add("after c", "c", []string{"c"}); err != nil {
		t.Errorf("dependency just before the insertion point: %v", err)
	}
}

func TestAddRespectsMaxTasks(t *testing.T) {
	specs, _ := ParseTaskSpecs(json.RawMessage(`["a","b"]`))
	p, err := NewPlan(specs, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add("c", "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add("d", "", nil); err == nil || !strings.Contains(err.Error(), "the plan already has 3 tasks, which is the limit") {
		t.Errorf("error = %v", err)
	}
	if err := p.Delete("t3"); err != nil {
		t.Fatal(err)
	}
	task, err := p.Add("d", "", nil)
	if err != nil {
		t.Fatalf("after delete: %v", err)
	}
	if task.ID != "t4" {
		t.Errorf("a deleted task's id was reused: %s", task.ID)
	}
}

func TestDeleteAndEdit(t *testing.T) {
	p := mustPlan(t, `[{"id":"x","description":"X"},{"id":"y","description":"Y","depends_on":["x"]},{"id":"z","description":"Z","depends_on":["x"]},{"id":"w","description":"W","depends_on":["y"]}]`)
	if err := p.Delete("x"); err == nil || err.Error() != `task "x" cannot be deleted: tasks "y", "z" depend on it — delete those tasks first` {
		t.Errorf("delete with dependents: %v", err)
	}
	if err := p.Delete("y"); err == nil || !strings.Contains(err.Error(), `task "y" cannot be deleted: task "w" depends on it`) {
		t.Errorf("delete with one dependent: %v", err)
	}
	if err := p.Delete("nope"); err == nil || !strings.Contains(err.Error(), `task "nope" is not in the plan`) {
		t.Errorf("delete unknown: %v", err)
	}
	for _, id := range []string{"w", "y", "z", "x"} {
		if err := p.Delete(id); err != nil {
			t.Fatalf("delete %s: %v", id, err)
		}
	}
	if p.Len() != 0 || p.Summary() != "no tasks" {
		t.Errorf("plan not empty: %s", shape(p.Tasks()))
	}
	if _, err := p.Edit("x", "again"); err == nil || !strings.Contains(err.Error(), "the plan has no tasks") {
		t.Errorf("edit in empty plan: %v", err)
	}

	q := mustPlan(t, `["old"]`)
	task, err := q.Edit("t1", "  new words  ")
	if err != nil || task.Description != "new words" {
		t.Errorf("edit: %+v %v", task, err)
	}
	if _, err := q.Edit("t1", " "); err == nil {
		t.Error("empty description accepted")
	}
	// The limit holds for an edit and an added task as for a new plan; a
	// description at the limit is taken.
	long := strings.Repeat("d", MaxDescription)
	if _, err := q.Edit("t1", long+"d"); err == nil || !strings.Contains(err.Error(), "description is 2001 characters; the limit is 2000") {
		t.Errorf("edit over the limit: %v", err)
	}
	if _, err := q.Add(long+"d", "", nil); err == nil || !strings.Contains(err.Error(), "description is 2001 characters; the limit is 2000") {
		t.Errorf("add over the limit: %v", err)
	}
	if task, _ := q.Get("t1"); task.Description != "new words" || q.Len() != 1 {
		t.Errorf("refused over the limit, the plan changed: %s", shape(q.Tasks()))
	}
	if _, err := q.Edit("t1", long); err != nil {
		t.Errorf("edit at the limit: %v", err)
	}
}

func TestPlanReturnsCopies(t *testing.T) {
	p := mustPlan(t, `["a",{"description":"b","depends_on":[0]}]`)
	tasks := p.Tasks()
	tasks[1].DependsOn[0] = "hacked"
	tasks[0].Status = TaskCompleted
	got, _ := p.Get("t2")
	got.DependsOn[0] = "hacked"
	blocked := p.Blocked()
	blocked[0].DependsOn[0] = "hacked"
	blocked[0].WaitingOn[0] = "hacked"
	if s := shape(p.Tasks()); s != "t1:pending[] t2:pending[t1]" {
		t.Errorf("plan changed through a returned value: %s", s)
	}
	if _, ok := p.Get("nope"); ok {
		t.Error("Get(nope) found a task")
	}
	b, _ := json.Marshal(p.Tasks()[0])
	if !strings.Contains(string(b), `"depends_on":[]`) || strings.Contains(string(b), "completed_at") {
		t.Errorf("task JSON = %s", b)
	}
}

func TestSummary(t *testing.T) {
	p := mustPlan(t, `["a","b","c",{"description":"d","depends_on":[2]},"e"]`)
	p.SetStatus("t1", TaskCompleted, "")
	p.SetStatus("t2", TaskCompleted, "")
	p.SetStatus("t5", TaskCompleted, "")
	p.SetStatus("t3", TaskInProgress, "")
	if got := p.Summary(); got != "3/5 done, 1 in progress, 1 waiting" {
		t.Errorf("Summary = %q", got)
	}
	p.SetStatus("t3", TaskPending, "")
	if got := p.Summary(); got != "3/5 done, 1 ready, 1 waiting" {
		t.Errorf("Summary = %q", got)
	}
}

func TestRestore(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stored := []Task{
		{ID: "t1", Description: "a", Status: TaskCompleted, CreatedAt: created, CompletedAt: created},
		{ID: "t7", Description: "b", Status: TaskPending, DependsOn: []string{"t1", "t1", "gone", "t9"}},
		{ID: "t1", Description: "duplicate"},
		{ID: "", Description: "no id"},
		{ID: "t9", Description: "c", Status: "weird", DependsOn: []string{"t9", "t7"}},
	}
	p := Restore(stored, 0, WithClock(fakeClock()))
	if got := shape(p.Tasks()); got != "t1:completed[] t7:pending[t1] t9:pending[t7]" {
		t.Errorf("restored = %s", got)
	}
	if stored[1].DependsOn[2] != "gone" {
		t.Error("Restore modified its input")
	}
	if got := ids(p.Ready()); got != "t7" {
		t.Errorf("Ready = %s", got)
	}
	task, _ := p.Add("next", "", nil)
	if task.ID != "t10" {
		t.Errorf("next automatic id after restore = %s, want t10", task.ID)
	}
	if p.MaxTasks() != DefaultMaxTasks {
		t.Errorf("MaxTasks = %d", p.MaxTasks())
	}
	// A plan round-trips through its JSON form.
	b, _ := json.Marshal(p.Tasks())
	var back []Task
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if got := shape(Restore(back, 0).Tasks()); got != shape(p.Tasks()) {
		t.Errorf("JSON round trip = %s", got)
	}
}

func TestPlanConcurrentUse(t *testing.T) {
	specs := make([]TaskSpec, 50)
	for i := range specs {
		specs[i] = TaskSpec{Description: fmt.Sprintf("task %d", i)}
		if i > 0 {
			specs[i].DependsOn = []DepRef{DepIndex(i - 1)}
		}
	}
	p, err := NewPlan(specs, 200)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				id := fmt.Sprintf("t%d", i+1)
				switch (w + i) % 5 {
				case 0:
					p.SetStatus(id, TaskCompleted, "")
				case 1:
					p.Ready()
					p.Blocked()
				case 2:
					p.Add("more", id, []string{id})
				case 3:
					p.Summary()
					p.Tasks()
				case 4:
					p.Edit(id, "edited")
				}
			}
		}()
	}
	wg.Wait()
	assertPlanInvariants(t, p.Tasks())
}

// assertPlanInvariants checks what every plan must satisfy: unique valid
// ids, and every dependency on an existing, earlier task.
func assertPlanInvariants(t testing.TB, tasks []Task) {
	t.Helper()
	pos := map[string]int{}
	for i, task := range tasks {
		if !validTaskID(task.ID) {
			t.Fatalf("task %d has an invalid id %q", i, task.ID)
		}
		if _, dup := pos[task.ID]; dup {
			t.Fatalf("id %q appears twice", task.ID)
		}
		if !ValidTaskStatus(task.Status) {
			t.Fatalf("task %q has status %q", task.ID, task.Status)
		}
		for _, d := range task.DependsOn {
			j, ok := pos[d]
			if !ok {
				t.Fatalf("task %q (index %d) depends on %q, which is not earlier in the plan", task.ID, i, d)
			}
			if j >= i {
				t.Fatalf("task %q depends on a later task %q", task.ID, d)
			}
		}
		pos[task.ID] = i
	}
}

// A description quoted in an error is cut between characters as a reader
// sees them: not inside an emoji, not between a letter and its accent.
func TestShortDescKeepsCharactersWhole(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{strings.Repeat("a", 58) + "\U0001F469\u200d\U0001F4BB tail", strings.Repeat("a", 58) + "…"},
		{strings.Repeat("b", 59) + "e\u0301 tail", strings.Repeat("b", 59) + "…"},
		{strings.Repeat("c", 57) + "e\u0301 tail", strings.Repeat("c", 57) + "e\u0301 …"},
		{"short", "short"},
	} {
		if got := shortDesc(c.in); got != strconv.Quote(c.want) {
			t.Errorf("shortDesc(%q) = %s, want %q", c.in, got, c.want)
		}
	}
}

// A limit changed while the plan exists is the one Add keeps to, and its
// refusal says the limit where the plan is already past it.
func TestPlanLimitChangedAfterItsMaking(t *testing.T) {
	p, err := NewPlan([]TaskSpec{{Description: "a"}, {Description: "b"}, {Description: "c"}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Add("d", "", nil); err == nil || !strings.Contains(err.Error(), "already has 3 tasks, which is the limit") {
		t.Fatalf("add at the limit: %v", err)
	}
	p.SetMaxTasks(10)
	if _, err := p.Add("d", "", nil); err != nil {
		t.Fatalf("add with the limit raised: %v", err)
	}
	p.SetMaxTasks(2)
	if _, err := p.Add("e", "", nil); err == nil || !strings.Contains(err.Error(), "already has 4 tasks, and the limit is 2") {
		t.Fatalf("add with the limit lowered below the plan: %v", err)
	}
	if p.Len() != 4 || p.MaxTasks() != 2 {
		t.Errorf("the plan has %d tasks and the limit %d", p.Len(), p.MaxTasks())
	}
	p.SetMaxTasks(0)
	if p.MaxTasks() != DefaultMaxTasks {
		t.Errorf("limit 0 gives %d, want the default %d", p.MaxTasks(), DefaultMaxTasks)
	}
}
