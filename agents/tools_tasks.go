package agents

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

func mustSchema(text string) *Schema {
	s, err := ParseSchema(text)
	if err != nil {
		panic("bad tool schema: " + err.Error() + "\n" + text)
	}
	return s
}

// maxTimeout bounds a timeout argument: a session's own timeout ends a
// wait long before.
const maxTimeout = 24 * time.Hour

// seconds converts a timeout argument. 0 stays 0, the tool's default; a
// positive one is at least a millisecond, so that a tiny timeout means
// hardly waiting rather than the default, and at most maxTimeout, which
// a number of seconds too large for a Duration would otherwise wrap past.
func seconds(f float64) time.Duration {
	switch {
	case f <= 0:
		return 0
	case f >= maxTimeout.Seconds():
		return maxTimeout
	}
	return max(time.Duration(f*float64(time.Second)), time.Millisecond)
}

// stringList accepts a string or a list of strings.
type stringList []string

func (l *stringList) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		if one != "" {
			*l = []string{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*l = many
	return nil
}

// MaxSpawnTasks is the most tasks one sessions_spawn call takes: a parent
// with more children spawns them in several calls.
const MaxSpawnTasks = 200

// MaxTaskText is the most characters of a task given to a child or a
// delegate (sessions_spawn's task, task_create's prompt, delegate_task's
// description). It becomes the first message of the child's history and
// is sent with each of its calls; long material belongs in the shared
// context (64 KiB) or a workspace file.
const MaxTaskText = 16000

// taskTextSchema is the schema of a task's text: a string of at most
// MaxTaskText characters.
var taskTextSchema = `{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(MaxTaskText) + `}`

var sessionsSpawn = &Tool{
	Name:  "sessions_spawn",
	Group: GroupSpawn,
	Description: "Start one or more sub-agents (child sessions). `task` is one task or an array of tasks; an array with " +
		"`parallel: true` starts all at once with the same shared context, an array without it runs as a chain (each after the previous). " +
		"`label` names the child (array members get label-1, label-2, …) so later spawns can refer to it. " +
		"`sharedContext` is an object the child sees read-only in its system prompt (merged over your own context); a key " +
		"like \"$research\": \"reference\" includes the result of the earlier sub-agent labelled research (and waits for it). " +
		"`chainAfter` / `dependsOn` name earlier siblings (labels or task ids) to wait for. Results arrive later as <task_result> " +
		"messages, or at once with `wait: true`.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task":{"anyOf":[` + taskTextSchema + `,{"type":"array","items":` + taskTextSchema + `,"maxItems":` + strconv.Itoa(MaxSpawnTasks) + `}],"description":"The task, or an array of tasks; put long material in sharedContext"},
	    "label":{"type":"string","maxLength":64,"description":"Short name for the child, unique among your children"},
	    "title":{"type":"string","maxLength":200,"description":"Optional short title shown in the dashboard"},
	    "agent":{"type":"string","description":"Role from the roster (default: researcher)"},
	    "parallel":{"type":"boolean","description":"Start every task of an array at once (default false: a chain)"},
	    "sharedContext":{"type":"object","description":"Read-only context for the child; \"$label\": \"reference\" includes an earlier result"},
	    "chainAfter":{"type":["string","array"],"items":{"type":"string"},"description":"Label or task id of a sibling to wait for"},
	    "dependsOn":{"type":"array","items":{"type":"string"},"description":"Labels or task ids of siblings to wait for (fan-in)"},
	    "wait":{"type":"boolean","description":"Block until the children finish and return their outputs"},
	    "timeout":{"type":"number","minimum":0,"description":"With wait: seconds to wait at most (0 or none: 300)"}
	  },"required":["task"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Task          stringList      `json:"task"`
			Label         string          `json:"label"`
			Title         string          `json:"title"`
			Agent         string          `json:"agent"`
			Parallel      bool            `json:"parallel"`
			SharedContext json.RawMessage `json:"sharedContext"`
			ChainAfter    stringList      `json:"chainAfter"`
			DependsOn     []string        `json:"dependsOn"`
			Wait          bool            `json:"wait"`
			Timeout       float64         `json:"timeout"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if len(a.Task) == 0 {
			return nil, Errorf("task must name at least one task")
		}
		req := SpawnRequest{Tasks: a.Task, Label: strings.TrimSpace(a.Label), Agent: strings.TrimSpace(a.Agent), Parallel: a.Parallel,
			SharedContext: a.SharedContext, ChainAfter: append(a.ChainAfter, a.DependsOn...), Wait: a.Wait, Timeout: seconds(a.Timeout)}
		if a.Title != "" {
			req.Titles = []string{a.Title}
		}
		return c.Host.Spawn(ctx, c, req)
	},
}

var taskCreate = &Tool{
	Name:  "task_create",
	Group: GroupSpawn,
	Description: "Create one child task for an agent of the roster. Returns its task_id at once (async, the default); " +
		"with async: false it waits and returns the output.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "agent":{"type":"string","description":"Role from the roster"},
	    "title":{"type":"string","minLength":1,"maxLength":200,"description":"Short title"},
	    "prompt":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(MaxTaskText) + `,"description":"What the task must do; put long material in sharedContext"},
	    "async":{"type":"boolean","description":"Return at once (default true)"},
	    "label":{"type":"string","maxLength":64},
	    "sharedContext":{"type":"object","description":"Read-only context for the child"}
	  },"required":["agent","title","prompt"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		a := struct {
			Agent         string          `json:"agent"`
			Title         string          `json:"title"`
			Prompt        string          `json:"prompt"`
			Async         *bool           `json:"async"`
			Label         string          `json:"label"`
			SharedContext json.RawMessage `json:"sharedContext"`
		}{}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		wait := a.Async != nil && !*a.Async
		res, err := c.Host.Spawn(ctx, c, SpawnRequest{Tasks: []string{a.Prompt}, Titles: []string{a.Title}, Label: a.Label,
			Agent: a.Agent, SharedContext: a.SharedContext, Wait: wait})
		if err != nil {
			return nil, err
		}
		out := res.Sessions[0]
		if !wait {
			return map[string]string{"task_id": out.TaskID, "status": out.Status}, nil
		}
		return out, nil
	},
}

var taskOutput = &Tool{
	Name:  "task_output",
	Group: GroupTasks,
	Description: "Get the status and output of a child or sibling task (sibling ids come from <sibling_tasks>). " +
		"With wait: true, block until it finishes (at most timeout seconds).",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task_id":{"type":"string","minLength":1},
	    "wait":{"type":"boolean"},
	    "timeout":{"type":"number","minimum":0,"description":"Seconds to wait at most (0 or none: 300)"}
	  },"required":["task_id"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID  string  `json:"task_id"`
			Wait    bool    `json:"wait"`
			Timeout float64 `json:"timeout"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.TaskOutput(ctx, c, strings.TrimSpace(a.TaskID), a.Wait, seconds(a.Timeout))
	},
}

var taskSendMessage = &Tool{
	ResultIsEffect: true,
	Name:           "task_send_message",
	Group:          GroupTasks,
	Description: "Send a message to a child or sibling task. By default it wakes the recipient (even one that has finished) " +
		"to act on it; with noReply: true it is delivered passively, read at its next turn without starting one.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task_id":{"type":"string","minLength":1,"description":"The child or sibling task id"},
	    "message":{"type":"string","minLength":1,"maxLength":8000},
	    "noReply":{"type":"boolean","description":"Deliver passively without triggering a response"}
	  },"required":["task_id","message"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID  string `json:"task_id"`
			Message string `json:"message"`
			NoReply bool   `json:"noReply"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.SendMessage(ctx, c, strings.TrimSpace(a.TaskID), a.Message, a.NoReply)
	},
}

var taskCancel = &Tool{
	Name: "task_cancel",
	// With spawning: a session that cannot spawn has no children to cancel.
	Group:       GroupSpawn,
	Description: "Cancel a child task and all of its descendants, including their calls in flight.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"task_id":{"type":"string","minLength":1}},"required":["task_id"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskID string `json:"task_id"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.CancelTask(ctx, c, strings.TrimSpace(a.TaskID))
	},
}

var taskWait = &Tool{
	Name:  "task_wait",
	Group: GroupSpawn,
	Description: "Wait until all listed child tasks (default: all your children) have finished, then return each outcome. " +
		"A fan-in barrier. timeout is in seconds; unfinished tasks are listed in timed_out. A task woken by a message after it finished " +
		"gives its latest output, and what it reported before in earlier_results.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "task_ids":{"type":"array","items":{"type":"string"}},
	    "timeout":{"type":"number","minimum":0,"description":"Seconds to wait at most (0 or none: 300)"}
	  }}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			TaskIDs stringList `json:"task_ids"`
			Timeout float64    `json:"timeout"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		res, err := c.Host.WaitTasks(ctx, c, a.TaskIDs, seconds(a.Timeout))
		if err == nil {
			fitOutcomes(res, c.MaxOutput)
		}
		return res, err
	},
}

// fitOutcomes cuts the texts of a task_wait result, all to one length, the
// longest that lets the result fit in limit characters (less a margin for
// the runtime's own marks), so that every task's id and status reach the
// caller. Cut by the runtime's rule for any long result instead, the last
// tasks' outcomes would go whole, and these outcomes reach the caller
// nowhere else: a task's result is delivered once. When even the ids do not
// fit, the runtime's rule leaves the last ones out, counted.
func fitOutcomes(r *WaitResult, limit int) {
	const margin = 100
	if r == nil || limit <= 0 {
		return
	}
	size := func(w *WaitResult) int {
		b, _ := json.Marshal(w)
		return utf8.RuneCount(b)
	}
	if size(r) <= limit-margin {
		return
	}
	longest := 0
	for _, o := range r.Results {
		for _, t := range append([]string{o.Output, o.Error, o.Reason}, o.Earlier...) {
			longest = max(longest, utf8.RuneCountInString(t))
		}
	}
	cut := func(n int) *WaitResult {
		w := &WaitResult{TimedOut: r.TimedOut, Results: make([]TaskOutcome, len(r.Results))}
		for i, o := range r.Results {
			o.Output, o.Error, o.Reason = cutText(o.Output, n), cutText(o.Error, n), cutText(o.Reason, n)
			if o.Earlier != nil {
				earlier := make([]string, len(o.Earlier))
				for j, t := range o.Earlier {
					earlier[j] = cutText(t, n)
				}
				o.Earlier = earlier
			}
			w.Results[i] = o
		}
		w.Note = fmt.Sprintf("outputs cut to %d characters to fit max_tool_output; task_output gives one whole", n)
		if n == 0 {
			w.Note = "outputs left out to fit max_tool_output; task_output gives one whole"
		}
		return w
	}
	// The longest length that fits, by bisection.
	lo, hi := 0, longest
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if size(cut(mid)) <= limit-margin {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	*r = *cut(lo)
}

// cutText is s cut to n characters, between characters as a reader sees
// them, and marked, or s when it is no longer; nothing at all for n 0.
func cutText(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n == 0 {
		return ""
	}
	return textcut.Prefix(s, n) + "…"
}

// siblingsPage is task_siblings' default page size: a large family listed
// at once would be cut by the runtime's tool output limit mid-JSON.
const siblingsPage = 50

var taskSiblings = &Tool{
	Pure:  true,
	Name:  "task_siblings",
	Group: GroupTasks,
	Description: "List your sibling tasks (id, agent, title, status), for when <sibling_tasks> showed only the first ones. " +
		"Large families come in pages: call again with offset: next_offset until next_offset is absent.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,"properties":{
	    "offset":{"type":"integer","minimum":0,"description":"Skip this many siblings (default 0)"},
	    "limit":{"type":"integer","minimum":1,"maximum":100,"description":"At most this many (default 50)"}
	  }}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Offset int `json:"offset"`
			Limit  int `json:"limit"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if a.Limit == 0 {
			a.Limit = siblingsPage
		}
		sibs := c.Host.Siblings(ctx)
		total := len(sibs)
		page := sibs[min(a.Offset, total):min(a.Offset+a.Limit, total)]
		if page == nil {
			page = []TaskRef{}
		}
		res := map[string]any{"siblings": page, "total": total, "offset": a.Offset}
		if end := a.Offset + len(page); end < total {
			res["next_offset"] = end
		}
		return res, nil
	},
}
