package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/swarmdeck/swarmdeck/coordination"
)

// PlanTaskView is a plan task as tools return it.
type PlanTaskView struct {
	ID          string   `json:"id"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	DependsOn   []string `json:"depends_on"`
	WaitingOn   []string `json:"waiting_on,omitempty"`
	Note        string   `json:"note,omitempty"`
}

// ViewTask converts a plan task.
func ViewTask(t coordination.Task) PlanTaskView {
	deps := t.DependsOn
	if deps == nil {
		deps = []string{}
	}
	return PlanTaskView{ID: t.ID, Description: t.Description, Status: t.Status, DependsOn: deps, Note: t.Note}
}

// ViewTasks converts a list of plan tasks.
func ViewTasks(ts []coordination.Task) []PlanTaskView {
	out := make([]PlanTaskView, 0, len(ts))
	for _, t := range ts {
		out = append(out, ViewTask(t))
	}
	return out
}

func readyIDs(p *coordination.Plan) []string {
	ids := []string{}
	for _, t := range p.Ready() {
		ids = append(ids, t.ID)
	}
	return ids
}

var errNoPlan = Errorf("you have no task plan yet: create one with create_task_plan")

var createTaskPlan = &Tool{
	ResultIsEffect: true,
	Name:           "create_task_plan",
	Group:          GroupPlanning,
	Description: "Create (or replace) your task plan. Each item is a description string or {id, description, depends_on}; " +
		"depends_on lists earlier tasks by 0-based index or by id. Cycles, self-references and references to later or unknown " +
		"tasks are rejected. Returns the tasks with their ids and which are ready.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"tasks":{"type":"array","items":{"anyOf":[{"type":"string","minLength":1},{"type":"object"}]},
	    "description":"Task descriptions or {id, description, depends_on: [index or id]}"}},
	  "required":["tasks"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Tasks json.RawMessage `json:"tasks"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		specs, err := coordination.ParseTaskSpecs(a.Tasks)
		if err != nil {
			return nil, &Error{err.Error()}
		}
		if len(specs) == 0 {
			return nil, Errorf("tasks is empty: give at least one task")
		}
		return c.Host.PlanOp(ctx, c, func(old *coordination.Plan) (*coordination.Plan, any, error) {
			p, err := coordination.NewPlan(specs, c.Host.Self().MaxTasksPerPlan)
			if err != nil {
				return nil, nil, &Error{err.Error()}
			}
			res := map[string]any{"tasks": ViewTasks(p.Tasks()), "ready": readyIDs(p)}
			if old != nil {
				if prev := old.Tasks(); len(prev) > 0 {
					done := 0
					for _, t := range prev {
						if t.Status == coordination.TaskCompleted {
							done++
						}
					}
					res["note"] = fmt.Sprintf("this replaced your previous plan of %d tasks (%d of them completed)", len(prev), done)
				}
			}
			return p, res, nil
		})
	},
}

var addTask = &Tool{
	ResultIsEffect: true,
	Name:           "add_task",
	Group:          GroupPlanning,
	Description:    "Add a task to your plan, after after_task_id or at the end, depending on existing tasks by id.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "description":{"type":"string","minLength":1},
	    "after_task_id":{"type":"string"},
	    "depends_on":{"type":"array","items":{"type":"string"}}
	  },"required":["description"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Description string     `json:"description"`
			After       string     `json:"after_task_id"`
			DependsOn   stringList `json:"depends_on"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.PlanOp(ctx, c, func(p *coordination.Plan) (*coordination.Plan, any, error) {
			if p == nil {
				// The first task starts an empty plan (NewPlan refuses a
				// plan without tasks).
				p = coordination.Restore(nil, c.Host.Self().MaxTasksPerPlan)
			}
			// The limit in force now, which may have changed since the
			// plan was made.
			p.SetMaxTasks(c.Host.Self().MaxTasksPerPlan)
			t, err := p.Add(a.Description, strings.TrimSpace(a.After), a.DependsOn)
			if err != nil {
				return nil, nil, &Error{err.Error()}
			}
			return p, map[string]any{"task": ViewTask(t), "ready": readyIDs(p)}, nil
		})
	},
}

var updateTaskStatus = &Tool{
	ResultIsEffect: true,
	Name:           "update_task_status",
	Group:          GroupPlanning,
	Description: "Set a plan task's status: pending, in_progress, completed or blocked. Completing a task returns " +
		"newly_ready_tasks, the tasks that were waiting only on it.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task_id":{"type":"string","minLength":1},
	    "status":{"type":"string","enum":["pending","in_progress","completed","blocked"]},
	    "note":{"type":"string","maxLength":500,"description":"Optional: why it is blocked, what was done (a new status without a note clears the old note)"}
	  },"required":["task_id","status"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID string `json:"task_id"`
			Status string `json:"status"`
			Note   string `json:"note"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.PlanOp(ctx, c, func(p *coordination.Plan) (*coordination.Plan, any, error) {
			if p == nil {
				return nil, nil, errNoPlan
			}
			t, ready, err := p.SetStatus(strings.TrimSpace(a.TaskID), a.Status, a.Note)
			if err != nil {
				return nil, nil, &Error{err.Error()}
			}
			res := map[string]any{"task": ViewTask(t)}
			if a.Status == "completed" {
				res["newly_ready_tasks"] = ViewTasks(ready)
				var open []string
				for _, d := range t.DependsOn {
					if dt, ok := p.Get(d); ok && dt.Status != coordination.TaskCompleted {
						open = append(open, d)
					}
				}
				if len(open) > 0 {
					res["note"] = "marked completed, but it depends on tasks not completed yet: " + strings.Join(open, ", ")
				}
			}
			return p, res, nil
		})
	},
}

var editTask = &Tool{
	ResultIsEffect: true,
	Name:           "edit_task",
	Group:          GroupPlanning,
	Description:    "Change the description of a plan task.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"task_id":{"type":"string","minLength":1},"description":{"type":"string","minLength":1}},
	  "required":["task_id","description"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID      string `json:"task_id"`
			Description string `json:"description"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.PlanOp(ctx, c, func(p *coordination.Plan) (*coordination.Plan, any, error) {
			if p == nil {
				return nil, nil, errNoPlan
			}
			t, err := p.Edit(strings.TrimSpace(a.TaskID), a.Description)
			if err != nil {
				return nil, nil, &Error{err.Error()}
			}
			return p, map[string]any{"task": ViewTask(t)}, nil
		})
	},
}

var deleteTask = &Tool{
	ResultIsEffect: true,
	Name:           "delete_task",
	Group:          GroupPlanning,
	Description:    "Remove a task from your plan. Refused while other tasks depend on it.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"task_id":{"type":"string","minLength":1}},"required":["task_id"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID string `json:"task_id"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.PlanOp(ctx, c, func(p *coordination.Plan) (*coordination.Plan, any, error) {
			if p == nil {
				return nil, nil, errNoPlan
			}
			if err := p.Delete(strings.TrimSpace(a.TaskID)); err != nil {
				return nil, nil, &Error{err.Error()}
			}
			return p, map[string]any{"deleted": a.TaskID, "remaining": len(p.Tasks())}, nil
		})
	},
}

// readPlan runs a read-only view of the plan (not recorded as an effect).
func readPlan(ctx context.Context, c *Call, view func(p *coordination.Plan) any) (any, error) {
	return c.Host.PlanOp(ctx, nil, func(p *coordination.Plan) (*coordination.Plan, any, error) {
		if p == nil {
			return nil, nil, errNoPlan
		}
		return p, view(p), nil
	})
}

var getTaskPlan = &Tool{
	Pure:        true,
	Name:        "get_task_plan",
	Group:       GroupPlanning,
	Description: "Return your whole task plan with statuses and dependencies.",
	Schema:      mustSchema(`{"type":"object","additionalProperties":false,"properties":{}}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		return readPlan(ctx, c, func(p *coordination.Plan) any {
			return map[string]any{"tasks": ViewTasks(p.Tasks()), "ready": readyIDs(p), "summary": p.Summary()}
		})
	},
}

var getReadyTasks = &Tool{
	Pure:        true,
	Name:        "get_ready_tasks",
	Group:       GroupPlanning,
	Description: "Return the pending tasks whose dependencies are all completed: what can start now (or be delegated in parallel).",
	Schema:      mustSchema(`{"type":"object","additionalProperties":false,"properties":{}}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		return readPlan(ctx, c, func(p *coordination.Plan) any {
			return map[string]any{"ready_tasks": ViewTasks(p.Ready())}
		})
	},
}

var getBlockedTasks = &Tool{
	Pure:        true,
	Name:        "get_blocked_tasks",
	Group:       GroupPlanning,
	Description: "Return the pending tasks still waiting on unfinished dependencies, each with waiting_on.",
	Schema:      mustSchema(`{"type":"object","additionalProperties":false,"properties":{}}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		return readPlan(ctx, c, func(p *coordination.Plan) any {
			out := []PlanTaskView{}
			for _, b := range p.Blocked() {
				v := ViewTask(b.Task)
				v.WaitingOn = b.WaitingOn
				out = append(out, v)
			}
			return map[string]any{"blocked_tasks": out}
		})
	},
}
