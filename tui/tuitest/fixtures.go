package tuitest

import (
	"fmt"
	"time"

	"github.com/swarmdeck/swarmdeck/coordination"
	"github.com/swarmdeck/swarmdeck/runtime/event"
)

// Demo is a deterministic run in full swing at time now: a session tree
// three levels deep in every status, a broadcast of every kind, a plan with
// done, in-progress, ready, waiting and blocked tasks, delegations, and two
// questions waiting for the human.
func Demo(now time.Time) event.Snapshot {
	at := func(ago time.Duration) time.Time { return now.Add(-ago) }
	usage := func(n int) event.Usage {
		return event.Usage{PromptTokens: n * 3 / 4, CompletionTokens: n - n*3/4, TotalTokens: n}
	}
	sess := []event.SessionInfo{
		{ID: "s-root", Agent: "orchestrator", Title: "Build a URL shortener", Status: "running", Depth: 0,
			Usage: usage(4210), LastTool: "task_wait", Turns: 6, CreatedAt: at(133 * time.Second)},
		{ID: "s-plan", ParentID: "s-root", Agent: "planner", Label: "plan", Title: "Draft the task plan", Status: "completed",
			Depth: 1, Kind: "task", Usage: usage(1830), Turns: 3, LastTool: "create_task_plan", CreatedAt: at(125 * time.Second), EndedAt: at(100 * time.Second)},
		{ID: "s-res1", ParentID: "s-root", Agent: "researcher", Label: "r-1", Title: "Compare storage engines", Status: "running",
			Depth: 1, Kind: "task", Usage: usage(2950), Turns: 4, LastTool: "search_files", CreatedAt: at(98 * time.Second)},
		{ID: "s-exp1", ParentID: "s-res1", Agent: "explorer", Label: "x-1", Title: "Scan the existing code", Status: "completed",
			Depth: 2, Kind: "task", Usage: usage(880), Turns: 2, LastTool: "list_files", CreatedAt: at(90 * time.Second), EndedAt: at(61 * time.Second)},
		{ID: "s-res2", ParentID: "s-root", Agent: "researcher", Label: "r-2", Title: "Survey analytics options", Status: "waiting",
			Depth: 1, Kind: "task", Usage: usage(2200), Turns: 3, LastTool: "task_wait", CreatedAt: at(97 * time.Second)},
		{ID: "s-exp2", ParentID: "s-res2", Agent: "explorer", Label: "x-2", Title: "Benchmark hash functions", Status: "running",
			Depth: 2, Kind: "task", Usage: usage(640), Turns: 2, LastTool: "read_file", CreatedAt: at(70 * time.Second)},
		{ID: "s-exp3", ParentID: "s-res2", Agent: "explorer", Label: "x-3", Title: "Check rate-limit libraries", Status: "failed",
			Depth: 2, Kind: "task", Usage: usage(410), Turns: 2, Error: "per-call timeout after 60s", LastTool: "search_files",
			CreatedAt: at(69 * time.Second), EndedAt: at(8 * time.Second)},
		{ID: "s-dlg1", ParentID: "s-root", Agent: "orchestrator", Label: "d-1", Title: "Implement the redirect service", Status: "running",
			Depth: 1, Kind: "delegation", Usage: usage(3100), Turns: 3, LastTool: "sessions_spawn", CreatedAt: at(60 * time.Second)},
		{ID: "s-exe1", ParentID: "s-dlg1", Agent: "executor", Label: "e-1", Title: "Write the redirect handler", Status: "running",
			Depth: 2, Kind: "task", Usage: usage(1290), Turns: 2, LastTool: "write_file", CreatedAt: at(45 * time.Second)},
		{ID: "s-rev1", ParentID: "s-dlg1", Agent: "reviewer", Label: "v-1", Title: "Review the handler", Status: "pending",
			Depth: 2, Kind: "task", Reason: "chained after e-1", CreatedAt: at(45 * time.Second)},
		{ID: "s-cxl", ParentID: "s-root", Agent: "executor", Label: "e-9", Title: "Migrate the legacy links", Status: "cancelled",
			Depth: 1, Kind: "task", Usage: usage(120), Turns: 1, CreatedAt: at(50 * time.Second), EndedAt: at(40 * time.Second)},
	}
	bc := func(id, kind, from, fromSession, category, target, msg string, ago time.Duration) event.BroadcastInfo {
		return event.BroadcastInfo{ID: id, Kind: kind, From: from, FromSession: fromSession, Category: category,
			Target: target, Message: msg, Timestamp: at(ago)}
	}
	broadcasts := []event.BroadcastInfo{
		bc("b-1", event.KindBroadcast, "planner (plan)", "s-plan", "context", "siblings", "Plan is up: 6 tasks, storage and analytics research run in parallel.", 100*time.Second),
		bc("b-2", event.KindAnnounce, "explorer (x-1)", "s-exp1", "", "all", "The repo already has a base62 encoder in pkg/ids.", 62*time.Second),
		bc("b-3", event.KindBroadcast, "researcher (r-1)", "s-res1", "discovery", "all", "SQLite in WAL mode handles 5k writes/s on this box; Postgres is not needed for v1.", 40*time.Second),
		bc("b-4", event.KindMessage, "orchestrator", "s-root", "", "s-res2", "Wrap up the analytics survey in the next turn, please.", 30*time.Second),
		bc("b-5", event.KindBroadcast, "explorer (x-3)", "s-exp3", "warning", "siblings", "golang.org/x/time/rate is enough; skip the external limiter.", 20*time.Second),
		bc("b-6", event.KindHuman, "human", "", "blocker", "all", "Do not store raw IP addresses anywhere.", 15*time.Second),
		bc("b-7", event.KindBroadcast, "executor (e-1)", "s-exe1", "blocker", "siblings", "Handler needs the storage decision before it can persist links.", 5*time.Second),
	}
	broadcasts[3].NoReply = true
	// Who each one reached, as the runtime delivered it: an agent's "all"
	// is its siblings and children, an announcement and the person's "all"
	// every session not cancelled.
	for i, to := range [][]string{
		{"s-res1", "s-res2"},
		{"s-root", "s-plan", "s-res1", "s-res2", "s-exp2", "s-exp3"},
		{"s-plan", "s-res2", "s-dlg1", "s-exp1"},
		{"s-res2"},
		{"s-exp2"},
		{"s-root", "s-plan", "s-res1", "s-exp1", "s-res2", "s-exp2", "s-exp3", "s-dlg1", "s-exe1", "s-rev1"},
		{"s-rev1"},
	} {
		broadcasts[i].Recipients = to
	}
	plans := []event.PlanInfo{{SessionID: "s-root", Tasks: []event.PlanTask{
		{ID: "1", Description: "Draft the plan", Status: "completed"},
		{ID: "2", Description: "Research storage engines", Status: "completed", DependsOn: []string{"1"}},
		{ID: "3", Description: "Research analytics options", Status: "in_progress", DependsOn: []string{"1"}},
		{ID: "4", Description: "Implement the redirect service", Status: "pending", DependsOn: []string{"2"}},
		{ID: "5", Description: "Integrate analytics", Status: "pending", DependsOn: []string{"3", "4"}},
		{ID: "6", Description: "Ship v1", Status: "blocked", DependsOn: []string{"5"}, Note: "retention needs a human decision"},
	}}, {SessionID: "s-dlg1", Tasks: []event.PlanTask{
		{ID: "a", Description: "Write the redirect handler", Status: "in_progress"},
		{ID: "b", Description: "Review the handler", Status: "pending", DependsOn: []string{"a"}},
	}}}
	delegations := []event.DelegationInfo{
		{ID: "dl-1", ParentSession: "s-root", SessionID: "s-dlg1", PlanTaskID: "4", Description: "Implement the redirect service",
			Status: "running", Depth: 1, CreatedAt: at(61 * time.Second), StartedAt: at(60 * time.Second)},
		{ID: "dl-2", ParentSession: "s-root", PlanTaskID: "5", Description: "Integrate analytics",
			Status: "failed", Depth: 1, Error: "max_concurrent_delegations (1) reached", CreatedAt: at(59 * time.Second), EndedAt: at(59 * time.Second)},
		{ID: "dl-3", ParentSession: "s-plan", PlanTaskID: "2", Description: "Research storage engines",
			Status: "completed", Depth: 1, CreatedAt: at(118 * time.Second), StartedAt: at(118 * time.Second), EndedAt: at(99 * time.Second)},
	}
	questions := []event.QuestionInfo{
		{ID: "q-1", FromSession: "s-res1", From: "researcher (r-1)", Question: "Which storage engine should the shortener use?",
			Options:    []event.Option{{ID: "pg", Label: "PostgreSQL"}, {ID: "sqlite", Label: "SQLite"}, {ID: "redis", Label: "Redis"}},
			AllowHuman: true, Status: "open", Deadline: at(-90 * time.Second)},
		{ID: "q-2", FromSession: "s-res2", From: "researcher (r-2)", Question: "How long should click analytics be kept?",
			AllowHuman: true, Status: "open", Remembered: "90 days", Deadline: at(-120 * time.Second)},
	}
	return event.Snapshot{
		Run: event.RunInfo{ID: "r-7c1e", Goal: "Design and build a URL shortener with click analytics", Status: "running",
			Provider: "scripted", Model: "swarmdeck-demo", Scripted: true, Workspace: "/tmp/ws", StartedAt: at(133 * time.Second)},
		Sessions:    sess,
		Broadcasts:  broadcasts,
		Plans:       plans,
		Delegations: delegations,
		Questions:   questions,
		LastSeq:     100,
	}
}

// DemoTranscript is the stored history of the Demo session s-res1: a system
// prompt, the task, a tool call and its result, an injected broadcast and a
// reply.
func DemoTranscript() []event.MessageInfo {
	return []event.MessageInfo{
		{ID: 1, Index: 0, Role: "system", Source: "system",
			Content: "You are researcher (r-1), a sub-agent of the orchestrator.\n[Shared Context]:\n- projectGoal: \"URL shortener\"\nAnswer with facts."},
		{ID: 2, Index: 1, Role: "user", Source: "agent", Content: "Compare storage engines for the link table: write rate, ops cost, fit for v1."},
		{ID: 3, Index: 2, Role: "assistant", Source: "agent", Content: "I will look for existing storage code first.",
			ToolCalls: []event.ToolCall{{ID: "call-1", Name: "search_files", Arguments: `{"pattern":"sql","path":"."}`}},
			Usage:     &event.Usage{TotalTokens: 812}},
		{ID: 4, Index: 3, Role: "tool", Source: "system", ToolCallID: "call-1", Content: "pkg/ids/base62.go\npkg/store/doc.go\n2 matches"},
		{ID: 5, Index: 4, Role: "user", Source: "system", Synthetic: true, NoReply: true,
			Content: coordination.FormatBroadcast("explorer (x-1)", "s-exp1", "discovery", time.Date(2026, 1, 26, 19, 30, 0, 0, time.UTC),
				"The repo already has a base62 encoder in pkg/ids & a <Store> interface.")},
		{ID: 6, Index: 5, Role: "assistant", Source: "agent", Content: "SQLite in WAL mode is enough for v1; I will ask the human to confirm.",
			Usage: &event.Usage{TotalTokens: 655}},
	}
}

// Large is a run with nSessions sessions in a tree four levels deep (one
// root, then fan-outs of about 9, 10 and 10) and nBroadcasts broadcasts,
// for load tests. The broadcasts are returned separately, to be published
// as events.
func Large(now time.Time, nSessions, nBroadcasts int) (event.Snapshot, []event.Event) {
	snap := event.Snapshot{Run: event.RunInfo{ID: "r-large", Goal: "load test", Status: "running",
		Provider: "scripted", Model: "demo", Scripted: true, StartedAt: now.Add(-time.Hour)}}
	statuses := []string{"running", "completed", "waiting", "pending", "running", "failed"}
	add := func(id, parent string, depth int) {
		i := len(snap.Sessions)
		snap.Sessions = append(snap.Sessions, event.SessionInfo{
			ID: id, ParentID: parent, Agent: []string{"orchestrator", "researcher", "explorer", "executor"}[depth],
			Label: fmt.Sprintf("%c-%d", "oree"[depth], i), Title: fmt.Sprintf("task number %d of the load test", i),
			Status: statuses[i%len(statuses)], Depth: depth, Usage: event.Usage{TotalTokens: 100 + i},
			LastTool: "read_file", CreatedAt: now.Add(-time.Duration(i) * time.Second),
		})
	}
	add("s-0", "", 0)
	var level1, level2 []string
	for i := 0; len(snap.Sessions) < nSessions && i < 9; i++ {
		id := fmt.Sprintf("s-1-%d", i)
		add(id, "s-0", 1)
		level1 = append(level1, id)
	}
	for _, p := range level1 {
		for i := 0; len(snap.Sessions) < nSessions && i < 10; i++ {
			id := fmt.Sprintf("%s-%d", p, i)
			add(id, p, 2)
			level2 = append(level2, id)
		}
	}
	for i := 0; len(snap.Sessions) < nSessions; i++ {
		p := level2[i%len(level2)]
		add(fmt.Sprintf("%s-%d", p, i), p, 3)
	}
	kinds := []string{event.KindBroadcast, event.KindAnnounce, event.KindMessage, event.KindHuman}
	cats := []string{"discovery", "warning", "context", "blocker"}
	events := make([]event.Event, nBroadcasts)
	for i := range events {
		s := snap.Sessions[i%len(snap.Sessions)]
		events[i] = event.Event{Seq: int64(i + 1), Type: event.BroadcastSent, RunID: "r-large", SessionID: s.ID, Time: now,
			Broadcast: &event.BroadcastInfo{ID: fmt.Sprintf("b-%d", i), Kind: kinds[i%len(kinds)], From: s.Agent + " (" + s.Label + ")",
				FromSession: s.ID, Category: cats[i%len(cats)], Target: "all", Timestamp: now.Add(-time.Duration(nBroadcasts-i) * time.Millisecond),
				Message: fmt.Sprintf("broadcast %d: found something worth sharing about shard %d", i, i%97)}}
	}
	return snap, events
}
