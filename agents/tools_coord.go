package agents

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/swarmdeck/swarmdeck/coordination"
)

var taskBroadcast = &Tool{
	ResultIsEffect: true,
	Name:           "task_broadcast",
	Group:          GroupBroadcasts,
	Description: "Share a discovery with your siblings and/or children. Delivered passively into their history (it never " +
		"interrupts them and they must not reply by broadcasting). Be concise and specific: file paths, names, patterns. " +
		"category: discovery (found something), warning (avoid this), context (background), blocker (you are stuck; awareness, " +
		"not a help request). target: siblings, children or all.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "message":{"type":"string","minLength":1,"maxLength":2000,"description":"What to share, at most 2000 characters"},
	    "category":{"type":"string","enum":["discovery","warning","context","blocker"],"description":"Default discovery"},
	    "target":{"type":"string","enum":["all","children","siblings"],"description":"Default all"}
	  },"required":["message"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Message  string `json:"message"`
			Category string `json:"category"`
			Target   string `json:"target"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if a.Category == "" {
			a.Category = "discovery"
		}
		if a.Target == "" {
			a.Target = "all"
		}
		return c.Host.Broadcast(ctx, c, strings.TrimSpace(a.Message), a.Category, a.Target)
	},
}

var taskBroadcastsRead = &Tool{
	Pure:  true,
	Name:  "task_broadcasts_read",
	Group: GroupBroadcasts,
	Description: "Read broadcasts, newest first, without triggering anyone: source self (received by you) or children " +
		"(sent to or by your child tasks). Filter by category.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "category":{"type":"string","enum":["discovery","warning","context","blocker","all"]},
	    "limit":{"type":"integer","minimum":1,"maximum":100},
	    "source":{"type":"string","enum":["self","children"]}
	  }}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Category string `json:"category"`
			Limit    int    `json:"limit"`
			Source   string `json:"source"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		if a.Category == "" {
			a.Category = "all"
		}
		if a.Limit == 0 {
			a.Limit = 10
		}
		if a.Source == "" {
			a.Source = "self"
		}
		return c.Host.ReadBroadcasts(ctx, a.Category, a.Limit, a.Source)
	},
}

var getSharedContext = &Tool{
	Pure:        true,
	Name:        "get_shared_context",
	Group:       GroupContext,
	Description: "Return the shared context your parent gave you (read-only), including results included by $ references.",
	Schema:      mustSchema(`{"type":"object","additionalProperties":false,"properties":{}}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		sc := c.Host.SharedContext()
		if len(sc) == 0 {
			sc = json.RawMessage("{}")
		}
		return map[string]json.RawMessage{"shared_context": sc}, nil
	},
}

var delegateTask = &Tool{
	Name:  "delegate_task",
	Group: GroupDelegation,
	Description: "Delegate a self-contained piece of work to a sub-orchestrator that plans and spawns on its own. " +
		"Link it to a task of your plan with task_id (marked in_progress now, completed when the delegation completes). " +
		"wait: false (default) runs it in parallel while you continue; wait: true blocks until it is done.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "description":{"type":"string","minLength":1,"maxLength":` + strconv.Itoa(MaxTaskText) + `,"description":"Clear description of the work; put long material in custom_config.sharedContext"},
	    "task_id":{"type":"string","description":"Id of the task of your plan this delegation carries out"},
	    "wait":{"type":"boolean"},
	    "custom_config":{"type":"object","description":"Overrides: sharedContext (object), agent (role), label"}
	  },"required":["description"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Description  string          `json:"description"`
			TaskID       string          `json:"task_id"`
			Wait         bool            `json:"wait"`
			CustomConfig json.RawMessage `json:"custom_config"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.Delegate(ctx, c, DelegateRequest{Description: a.Description, PlanTaskID: strings.TrimSpace(a.TaskID),
			Wait: a.Wait, CustomConfig: a.CustomConfig})
	},
}

var checkDelegationStatus = &Tool{
	Pure:        true,
	Name:        "check_delegation_status",
	Group:       GroupDelegation,
	Description: "Check the status of a delegation (pending, running, completed, failed, cancelled).",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"delegation_id":{"type":"string","minLength":1}},"required":["delegation_id"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			ID string `json:"delegation_id"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.DelegationStatus(ctx, strings.TrimSpace(a.ID))
	},
}

var getDelegationResult = &Tool{
	Pure:        true,
	Name:        "get_delegation_result",
	Group:       GroupDelegation,
	Description: "Get the result of a finished delegation. An error while it is still pending or running.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"delegation_id":{"type":"string","minLength":1}},"required":["delegation_id"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			ID string `json:"delegation_id"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		st, err := c.Host.DelegationStatus(ctx, strings.TrimSpace(a.ID))
		if err != nil {
			return nil, err
		}
		if !st.Completed {
			return nil, Errorf("delegation %s is still %s: no result yet; check again later with check_delegation_status, or continue with other work", st.DelegationID, st.Status)
		}
		return st, nil
	},
}

var askOthers = &Tool{
	Name:  "ask_others",
	Group: GroupQuestions,
	Description: "Ask the other agents (and, unless allow_human_response is false, the human) a question and wait for the answers. " +
		"Others answer without being interrupted. Offer structured options ([{id, label}]) when there are clear choices. " +
		"Returns what arrived within timeout seconds; timed_out lists who did not answer. The person's chosen options come back as \"id: label\" (\"a, c: Now; Later\" for several). Use sparingly: prefer view_agent_tasks or announce.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "question":{"type":"string","minLength":1,"maxLength":2000},
	    "allow_human_response":{"type":"boolean"},
	    "specific_agents":{"type":"array","items":{"type":"string"},"description":"Task ids, labels or roles of the agents to ask (default all); the person is asked too unless allow_human_response is false"},
	    "timeout":{"type":"number","minimum":1,"maximum":3600,"description":"Seconds to wait"},
	    "options":{"type":"array","maxItems":10,"items":{"anyOf":[{"type":"string","maxLength":200},{"type":"object","properties":{"id":{"type":"string","maxLength":32},"label":{"type":"string","maxLength":200}},"required":["label"]}]}},
	    "multi_select":{"type":"boolean"}
	  },"required":["question"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Question   string          `json:"question"`
			AllowHuman *bool           `json:"allow_human_response"`
			Specific   stringList      `json:"specific_agents"`
			Timeout    float64         `json:"timeout"`
			Options    json.RawMessage `json:"options"`
			Multi      bool            `json:"multi_select"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		req := AskRequest{Kind: "ask_others", Question: a.Question, AllowHuman: a.AllowHuman == nil || *a.AllowHuman,
			SpecificAgents: a.Specific, Timeout: seconds(a.Timeout), MultiSelect: a.Multi, RequiresResponse: true}
		if len(a.Options) > 0 && string(a.Options) != "null" {
			opts, err := coordination.ParseOptions(a.Options)
			if err != nil {
				return nil, &Error{err.Error()}
			}
			req.Options = opts
		}
		return c.Host.Ask(ctx, c, req)
	},
}

var broadcastMessage = &Tool{
	Name:  "broadcast_message",
	Group: GroupQuestions,
	Description: "Send a message to every other agent of the run. With requires_response they answer and " +
		"you get their responses (like ask_others without the human); with false it is an announcement.",
	Blocking: true,
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{
	    "message":{"type":"string","minLength":1,"maxLength":2000},
	    "requires_response":{"type":"boolean"}
	  },"required":["message"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Message  string `json:"message"`
			Requires *bool  `json:"requires_response"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		requires := c.Host.Self().BroadcastResponseRequired
		if a.Requires != nil {
			requires = *a.Requires
		}
		if !requires {
			return c.Host.Announce(ctx, c, a.Message)
		}
		return c.Host.Ask(ctx, c, AskRequest{Kind: "broadcast_message", Question: a.Message, RequiresResponse: true})
	},
}

var announce = &Tool{
	ResultIsEffect: true,
	Name:           "announce",
	Group:          GroupQuestions,
	Description: "Send an FYI to every other agent of the run, without waiting: they see it at their next turn. " +
		"For milestones (\"OAuth implementation finished\"), not for progress chatter.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"message":{"type":"string","minLength":1,"maxLength":2000}},"required":["message"]}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			Message string `json:"message"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.Announce(ctx, c, a.Message)
	},
}

var viewAgentTasks = &Tool{
	Pure:  true,
	Name:  "view_agent_tasks",
	Group: GroupQuestions,
	Description: "See the task plans of the other sessions (read-only), or of one session by task id. The least disruptive way " +
		"to coordinate: check what others are doing before asking.",
	Schema: mustSchema(`{"type":"object","additionalProperties":false,
	  "properties":{"agent_id":{"type":"string","description":"A task id; default all"}}}`),
	Handler: func(ctx context.Context, c *Call, args json.RawMessage) (any, error) {
		var a struct {
			AgentID string `json:"agent_id"`
		}
		if err := decode(args, &a); err != nil {
			return nil, err
		}
		return c.Host.ViewPlans(ctx, strings.TrimSpace(a.AgentID))
	},
}
