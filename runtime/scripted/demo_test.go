package scripted

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// convo builds a conversation the way the runtime would: it asks the policy
// for a turn, appends the assistant message with call ids, then appends the
// tool results and injected messages the test chooses.
type convo struct {
	t      testing.TB
	policy Policy
	msgs   []Message
	tools  []string
	ids    int
	last   Reply
}

func newConvo(t testing.TB, sys, task string) *convo {
	return &convo{t: t, policy: Demo(), msgs: []Message{{Role: "system", Content: sys}, {Role: "user", Content: task}}}
}

func sysPrompt(role, taskID, label string, extra ...string) string {
	lines := []string{"You are the " + role + " agent of a swarmdeck swarm.", "Some guidance about the role."}
	if taskID != "" {
		lines = append(lines, "Your task id: "+taskID)
	}
	if label != "" {
		lines = append(lines, "Your label: "+label)
	}
	return strings.Join(append(lines, extra...), "\n")
}

// turn asks for the next reply and records it.
func (c *convo) turn() Reply {
	c.t.Helper()
	req := &Request{Messages: append([]Message(nil), c.msgs...), Tools: c.tools, Model: ModelID}
	rep := c.policy.Reply(req)
	if again := c.policy.Reply(&Request{Messages: append([]Message(nil), c.msgs...), Tools: c.tools}); !reflect.DeepEqual(
		argsOf(again), argsOf(rep)) || again.Content != rep.Content {
		c.t.Fatalf("policy is not a pure function of the conversation:\n%+v\n%+v", rep, again)
	}
	m := Message{Role: "assistant", Content: rep.Content}
	for _, call := range rep.ToolCalls {
		c.ids++
		m.ToolCalls = append(m.ToolCalls, ToolCall{ID: fmt.Sprintf("call_%d", c.ids), Name: call.Name, Arguments: encodeArgs(call.Args, nil)})
	}
	c.msgs = append(c.msgs, m)
	c.last = rep
	return rep
}

// answer appends tool results for the last turn's calls, by tool name.
func (c *convo) answer(results map[string]string) {
	c.t.Helper()
	last := c.msgs[len(c.msgs)-1]
	for _, tc := range last.ToolCalls {
		res, ok := results[tc.Name]
		if !ok {
			res = `{"status":"ok"}`
		}
		c.msgs = append(c.msgs, Message{Role: "tool", ToolCallID: tc.ID, Name: tc.Name, Content: res})
	}
}

func (c *convo) inject(content string) {
	c.msgs = append(c.msgs, Message{Role: "user", Content: content})
}

type argMap = map[string]any

func argsOf(rep Reply) []string {
	var out []string
	for _, c := range rep.ToolCalls {
		out = append(out, c.Name+encodeArgs(c.Args, nil))
	}
	return out
}

func names(rep Reply) []string {
	var out []string
	for _, c := range rep.ToolCalls {
		out = append(out, c.Name)
	}
	return out
}

func args(t testing.TB, rep Reply, name string) argMap {
	t.Helper()
	for _, c := range rep.ToolCalls {
		if c.Name == name {
			var m argMap
			if err := json.Unmarshal([]byte(encodeArgs(c.Args, nil)), &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s call in %v", name, names(rep))
	return nil
}

func wantCalls(t testing.TB, rep Reply, want ...string) {
	t.Helper()
	if !reflect.DeepEqual(names(rep), want) {
		t.Fatalf("calls = %v, want %v", names(rep), want)
	}
}

func wantFinal(t *testing.T, rep Reply) {
	t.Helper()
	if len(rep.ToolCalls) != 0 || !strings.HasPrefix(rep.Content, Prefix) || strings.HasPrefix(rep.Content, waitingPrefix) {
		t.Fatalf("want a final answer, got %q %v", rep.Content, names(rep))
	}
}

func wantWaiting(t *testing.T, rep Reply) {
	t.Helper()
	if len(rep.ToolCalls) != 0 || !strings.HasPrefix(rep.Content, waitingPrefix) {
		t.Fatalf("want a waiting note, got %q %v", rep.Content, names(rep))
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const (
	goal       = "Launch a podcast about Go tooling"
	spawnedRes = `{"status":"started","sessions":[{"task_id":"s-r1","label":"research-1","agent":"researcher","status":"running"},{"task_id":"s-r2","label":"research-2","agent":"researcher","status":"running"}]}`
	delegRes   = `{"delegation_id":"d-1","session_id":"s-sub","status":"running"}`
	writerRes  = `{"status":"started","sessions":[{"task_id":"s-w","label":"writer","agent":"executor","status":"pending"}]}`
	askRes     = `{"status":"answered","responses":{"human":"b","research-1":"[scripted model] I'd pick a (Two weeks from now)."},"human_responded":true,"timed_out":[]}`
	planRes    = `{"tasks":[{"id":"research","description":"x","status":"pending","depends_on":[]}],"ready":["research"]}`
	listRes    = `{"path":".","entries":[{"name":"README.md","type":"file","size":120},{"name":"docs","type":"dir","size":0}]}`
)

func taskResult(id, agent, status, body string) string {
	return fmt.Sprintf(`<task_result task_id="%s" agent="%s" status="%s">%s</task_result>`, id, agent, status, body)
}

// rootThroughStep4 plays the root's four scripted steps and checks them.
func rootThroughStep4(t testing.TB, c *convo) {
	t.Helper()
	rep := c.turn()
	wantCalls(t, rep, "create_task_plan")
	tasks := args(t, rep, "create_task_plan")["tasks"].([]any)
	if len(tasks) != 2 || js(tasks[0].(argMap)["depends_on"]) != `["review"]` || js(tasks[1].(argMap)["depends_on"]) != `["draft"]` {
		t.Fatalf("want a cyclic plan, got %s", js(tasks))
	}
	c.answer(map[string]string{"create_task_plan": `{"error":"dependency cycle: draft -> review -> draft"}`})

	rep = c.turn()
	wantCalls(t, rep, "create_task_plan", "list_files")
	plan := args(t, rep, "create_task_plan")["tasks"].([]any)
	var ids []string
	for _, p := range plan {
		ids = append(ids, p.(argMap)["id"].(string))
	}
	if strings.Join(ids, ",") != "research,channels,checklist,draft,review" ||
		js(plan[3].(argMap)["depends_on"]) != `[0,1]` || js(plan[4].(argMap)["depends_on"]) != `["draft","checklist"]` ||
		!strings.Contains(plan[0].(argMap)["description"].(string), goal) {
		t.Fatalf("plan = %s", js(plan))
	}
	if js(args(t, rep, "list_files")) != `{"path":"."}` {
		t.Fatal("list_files args")
	}
	if !strings.Contains(rep.Content, "rejected") {
		t.Fatalf("narration should mention the rejection: %q", rep.Content)
	}
	c.answer(map[string]string{"create_task_plan": planRes, "list_files": listRes})

	rep = c.turn()
	wantCalls(t, rep, "sessions_spawn", "update_task_status", "update_task_status", "delegate_task")
	sp := args(t, rep, "sessions_spawn")
	if js(sp["task"]) != js([]string{"Research the audience and market for " + goal, "Research channels and competitors for " + goal}) ||
		sp["label"] != "research" || sp["agent"] != "researcher" || sp["parallel"] != true ||
		js(sp["sharedContext"]) != js(argMap{"projectGoal": goal, "audience": "developers", "constraints": []string{"budget", "timeline"}}) {
		t.Fatalf("spawn = %s", js(sp))
	}
	if js(rep.ToolCalls[1].Args) != `{"task_id":"research","status":"in_progress"}` ||
		js(rep.ToolCalls[2].Args) != `{"task_id":"channels","status":"in_progress"}` {
		t.Fatalf("updates = %s %s", js(rep.ToolCalls[1].Args), js(rep.ToolCalls[2].Args))
	}
	dg := args(t, rep, "delegate_task")
	if dg["description"] != "Prepare the launch checklist for "+goal || dg["task_id"] != "checklist" ||
		js(dg["custom_config"]) != js(argMap{"sharedContext": argMap{"projectGoal": goal, "audience": "developers"}}) {
		t.Fatalf("delegate = %s", js(dg))
	}
	c.answer(map[string]string{"sessions_spawn": spawnedRes, "delegate_task": delegRes, "update_task_status": `{"task":{"id":"x"},"newly_ready_tasks":[]}`})

	rep = c.turn()
	wantCalls(t, rep, "ask_others", "sessions_spawn")
	ask := args(t, rep, "ask_others")
	if ask["question"] != "Which launch window should the team plan for?" || ask["allow_human_response"] != true ||
		ask["timeout"] != 90.0 || len(ask["options"].([]any)) != 3 {
		t.Fatalf("ask = %s", js(ask))
	}
	w := args(t, rep, "sessions_spawn")
	if w["label"] != "writer" || w["agent"] != "executor" ||
		js(w["sharedContext"]) != `{"$research-1":"reference","$research-2":"reference","tone":"concise"}` {
		t.Fatalf("writer spawn = %s", js(w))
	}
}

func TestDemoRootFullRun(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	rootThroughStep4(t, c)
	c.answer(map[string]string{"ask_others": askRes, "sessions_spawn": writerRes})

	wantWaiting(t, c.turn())
	// Results arrive one by one: the worst case for the turn count.
	c.inject(taskResult("s-r1", "researcher", "completed", Prefix+" Findings on: x\n- Developers love short episodes.\n- Other"))
	rep := c.turn()
	wantCalls(t, rep, "update_task_status")
	if js(rep.ToolCalls[0].Args) != `{"task_id":"research","status":"completed"}` {
		t.Fatal(js(rep.ToolCalls[0].Args))
	}
	c.answer(nil)
	c.inject(taskResult("s-r2", "researcher", "completed", Prefix+" Findings\n- Hacker News first."))
	rep = c.turn()
	// Both researchers are done, so the writer has started.
	if len(rep.ToolCalls) != 2 || js(rep.ToolCalls[0].Args) != `{"task_id":"channels","status":"completed"}` ||
		js(rep.ToolCalls[1].Args) != `{"task_id":"draft","status":"in_progress"}` {
		t.Fatal(js(rep.ToolCalls))
	}
	c.answer(nil)
	c.inject(taskResult("s-sub", "orchestrator", "completed", Prefix+" Launch checklist:\n1. Book guests.\n2. Record a pilot."))
	rep = c.turn()
	wantWaiting(t, rep)
	if !strings.Contains(rep.Content, "writer") {
		t.Fatalf("waiting note should name the writer: %q", rep.Content)
	}
	c.inject(taskResult("s-w", "executor", "completed", Prefix+" Draft plan\n- Proposal: weekly 20-minute episodes."))
	rep = c.turn()
	if js(rep.ToolCalls[0].Args) != `{"task_id":"draft","status":"completed"}` {
		t.Fatal(js(rep.ToolCalls[0].Args))
	}
	c.answer(nil)
	rep = c.turn()
	if js(rep.ToolCalls[0].Args) != `{"task_id":"review","status":"in_progress"}` {
		t.Fatal(js(rep.ToolCalls[0].Args))
	}
	c.answer(nil)
	rep = c.turn()
	if js(rep.ToolCalls[0].Args) != `{"task_id":"review","status":"completed"}` {
		t.Fatal(js(rep.ToolCalls[0].Args))
	}
	c.answer(nil)
	rep = c.turn()
	wantFinal(t, rep)
	for _, want := range []string{goal, "Developers love short episodes.", "Hacker News first.", "Proposal: weekly 20-minute episodes.",
		"1. Book guests.", "2. Record a pilot.", "Next month", "\n"} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("final answer lacks %q:\n%s", want, rep.Content)
		}
	}
	if n := assistantTurns(c.msgs); n > maxTurns {
		t.Fatalf("root took %d turns", n)
	}
	// Woken again after the final answer: a short acknowledgement.
	// It restates the answer, which stays the run's result.
	final := rep.Content
	c.inject("<human_message>Thanks, ship it</human_message>")
	rep = c.turn()
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "Thanks, ship it") || !strings.Contains(rep.Content, answerBody(final)) {
		t.Fatalf("ack = %q", rep.Content)
	}
	// Woken twice: the answer once, not the first acknowledgement in it.
	c.inject("<human_message>One more thing</human_message>")
	rep = c.turn()
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "One more thing") || strings.Contains(rep.Content, "Thanks, ship it") ||
		strings.Count(rep.Content, "Proposal: weekly 20-minute episodes.") != 1 {
		t.Fatalf("second ack = %q", rep.Content)
	}
}

// The most turns the root takes: each child reports between two of its
// turns, and it writes a waiting note after every plan update. It still
// finishes its plan and answers before the cap.
func TestDemoRootReportsOneAtATime(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	rootThroughStep4(t, c)
	c.answer(map[string]string{"ask_others": askRes, "sessions_spawn": writerRes})
	wantWaiting(t, c.turn())
	for _, r := range []string{
		taskResult("s-r1", "researcher", "completed", Prefix+" Findings\n- a"),
		taskResult("s-r2", "researcher", "completed", Prefix+" Findings\n- b"),
		taskResult("s-sub", "orchestrator", "completed", Prefix+" Launch checklist:\n1. c"),
	} {
		c.inject(r)
		if rep := c.turn(); len(rep.ToolCalls) > 0 {
			c.answer(nil)
			wantWaiting(t, c.turn())
		}
	}
	c.inject(taskResult("s-w", "executor", "completed", Prefix+" Draft\n- d"))
	var updates []string
	rep := c.turn()
	for ; len(rep.ToolCalls) > 0; rep = c.turn() {
		for _, call := range rep.ToolCalls {
			updates = append(updates, js(call.Args))
		}
		c.answer(nil)
	}
	wantFinal(t, rep)
	want := []string{`{"task_id":"draft","status":"completed"}`, `{"task_id":"review","status":"in_progress"}`, `{"task_id":"review","status":"completed"}`}
	if !slices.Equal(updates, want) || strings.Contains(rep.Content, "Stopped after") {
		t.Fatalf("after the writer's report: updates %v, final:\n%s", updates, rep.Content)
	}
	if n := assistantTurns(c.msgs); n != 14 {
		t.Fatalf("root took %d turns, want 14", n)
	}
}

// A failed run resumed: the researchers' failures, then a <run_resumed>
// note saying they are running again. The root waits for their new
// results instead of writing its answer from the failures. (The writer
// could not start: the first of them had failed already.)
func TestDemoRootWaitsForChildrenBackAfterAResume(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	rootThroughStep4(t, c)
	c.answer(map[string]string{"ask_others": askRes,
		"sessions_spawn": `{"error":"sessions_spawn: sharedContext references \"$research-1\", but sub-agent \"research-1\" (s-r1) ended with status failed"}`})
	wantWaiting(t, c.turn())
	c.inject(strings.Join([]string{
		taskResult("s-r1", "researcher", "failed", "429 quota"),
		taskResult("s-r2", "researcher", "failed", "429 quota"),
		`<run_resumed failure="429 quota">` + "\nThe run failed and was resumed once the cause was fixed. These sessions are running again and each will report when it finishes: researcher (research-1) s-r1, researcher (research-2) s-r2. A task_result above that says one of them failed or was cancelled no longer stands.\n</run_resumed>",
		taskResult("s-sub", "orchestrator", "completed", Prefix+" Launch checklist:\n1. c"),
	}, "\n\n"))
	for rep := c.turn(); len(rep.ToolCalls) > 0 || !strings.HasPrefix(rep.Content, waitingPrefix); rep = c.turn() {
		for _, call := range rep.ToolCalls {
			if strings.Contains(js(call.Args), `"research"`) || strings.Contains(js(call.Args), `"channels"`) {
				t.Fatalf("the root acted on failures that no longer stand: %s", js(call.Args))
			}
		}
		if len(rep.ToolCalls) == 0 {
			t.Fatalf("the root answered before its researchers reported again:\n%s", rep.Content)
		}
		c.answer(nil)
	}
	c.inject(taskResult("s-r1", "researcher", "completed", Prefix+" Findings\n- Developers love short episodes."))
	c.inject(taskResult("s-r2", "researcher", "completed", Prefix+" Findings\n- Hacker News first."))
	rep := c.turn()
	for ; len(rep.ToolCalls) > 0 || strings.HasPrefix(rep.Content, waitingPrefix); rep = c.turn() {
		c.answer(nil)
	}
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "Developers love short episodes.") || strings.Contains(rep.Content, "429 quota") {
		t.Fatalf("final:\n%s", rep.Content)
	}
}

func TestDemoRootResultsBeforeWaiting(t *testing.T) {
	// With no latency the children may finish before the root's fifth
	// turn; the results arrive merged into one message.
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	rootThroughStep4(t, c)
	c.answer(map[string]string{"ask_others": `{"status":"timed_out","responses":{},"human_responded":false,"timed_out":["human"]}`, "sessions_spawn": writerRes})
	c.inject(strings.Join([]string{
		taskResult("s-r1", "researcher", "completed", "- a"),
		taskResult("s-r2", "researcher", "completed", "- b"),
		"<human_message>Keep the budget small</human_message>",
		taskResult("s-sub", "orchestrator", "completed", "1. c"),
		taskResult("s-w", "executor", "completed", "- d"),
	}, "\n\n"))
	rep := c.turn()
	wantCalls(t, rep, "update_task_status", "update_task_status", "update_task_status")
	c.answer(nil)
	c.turn()
	c.answer(nil)
	c.turn()
	c.answer(nil)
	rep = c.turn()
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "none was given by you (the question timed out)") || !strings.Contains(rep.Content, "Keep the budget small") {
		t.Fatalf("final:\n%s", rep.Content)
	}
	if n := assistantTurns(c.msgs); n != 8 {
		t.Fatalf("%d turns", n)
	}
}

func TestDemoRootHumanMessageDoesNotDerail(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	c.turn()
	c.answer(map[string]string{"create_task_plan": `{"error":"cycle"}`})
	c.inject("<human_message>Focus on European listeners</human_message>")
	rep := c.turn()
	wantCalls(t, rep, "create_task_plan", "list_files") // the flow goes on
	c.answer(map[string]string{"create_task_plan": planRes, "list_files": listRes})
	wantCalls(t, c.turn(), "sessions_spawn", "update_task_status", "update_task_status", "delegate_task")
	c.answer(map[string]string{"sessions_spawn": spawnedRes, "delegate_task": delegRes})
	c.turn()
	c.answer(map[string]string{"ask_others": askRes, "sessions_spawn": writerRes})
	wantWaiting(t, c.turn())
	c.inject("<human_message>Also keep it short</human_message>")
	rep = c.turn()
	wantWaiting(t, rep)
	if !strings.Contains(rep.Content, "Also keep it short") {
		t.Fatalf("waiting note should acknowledge the human: %q", rep.Content)
	}
	final := runUntilFinal(t, c, &fakeRuntime{children: []string{"s-r1", "s-r2", "s-sub", "s-w"}}, 0)
	if !strings.Contains(final, "Focus on European listeners") || !strings.Contains(final, "Also keep it short") {
		t.Fatalf("final answer should mention the human's words:\n%s", final)
	}
}

func TestDemoRootAdaptsToErrors(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	c.turn()
	c.answer(map[string]string{"create_task_plan": `{"error":"cycle"}`})
	c.turn()
	c.answer(map[string]string{"create_task_plan": `{"error":"plans are disabled"}`})
	rep := c.turn()
	// No plan: no status updates, and the delegation is not linked to a task.
	wantCalls(t, rep, "sessions_spawn", "delegate_task")
	if _, ok := args(t, rep, "delegate_task")["task_id"]; ok {
		t.Fatal("delegation linked to a plan that does not exist")
	}
	c.answer(map[string]string{"sessions_spawn": `{"error":"max sessions per run reached (3)"}`, "delegate_task": `{"error":"delegation disabled"}`})
	rep = c.turn()
	wantCalls(t, rep, "ask_others") // no writer without researchers
	c.answer(map[string]string{"ask_others": askRes})
	rep = c.turn()
	wantFinal(t, rep)
	for _, want := range []string{"starting the researchers failed (max sessions per run reached (3))", "delegation failed (delegation disabled)", "plan could not be created"} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("final lacks %q:\n%s", want, rep.Content)
		}
	}
}

func TestDemoOnlyCallsOfferedTools(t *testing.T) {
	c := newConvo(t, sysPrompt("orchestrator", "s-root", ""), goal)
	c.tools = []string{"sessions_spawn", "list_files", "task_output"}
	rep := c.turn()
	wantCalls(t, rep, "list_files")
	c.answer(map[string]string{"list_files": listRes})
	rep = c.turn()
	wantCalls(t, rep, "sessions_spawn")
	c.answer(map[string]string{"sessions_spawn": spawnedRes})
	rep = c.turn()
	wantCalls(t, rep, "sessions_spawn") // the writer; no ask_others offered
	c.answer(map[string]string{"sessions_spawn": writerRes})
	wantWaiting(t, c.turn())
	c.inject(taskResult("s-r1", "researcher", "completed", "- a") + "\n\n" + taskResult("s-r2", "researcher", "completed", "- b"))
	wantWaiting(t, c.turn()) // no update_task_status offered
	c.inject(taskResult("s-w", "executor", "completed", "- d"))
	wantFinal(t, c.turn())
}

const researcherSys = "You are the researcher agent of a swarmdeck swarm.\nYour task id: s-r1\nYour label: research-1\n\n" +
	"[Shared Context]:\n- projectGoal: \"" + goal + "\"\n- audience: \"developers\"\n- constraints: [\"budget\",\"timeline\"]"

const siblingTable = "<sibling_tasks>\n| Task ID | Agent | Title |\n|---|---|---|\n| s-r1 | researcher (research-1) | Research the audience |\n| s-r2 | researcher (research-2) | Research channels |\n</sibling_tasks>"

func TestDemoResearcher(t *testing.T) {
	c := newConvo(t, researcherSys, "Research the audience and market for "+goal+"\n\n"+siblingTable)
	rep := c.turn()
	wantCalls(t, rep, "get_shared_context", "list_files", "task_broadcasts_read")
	if js(rep.ToolCalls[1].Args) != `{"path":"."}` || js(rep.ToolCalls[2].Args) != `{}` {
		t.Fatal(argsOf(rep))
	}
	c.answer(map[string]string{"get_shared_context": `{"shared_context":{"projectGoal":"` + goal + `"}}`, "list_files": listRes,
		"task_broadcasts_read": `{"broadcasts":[],"total":0}`})

	rep = c.turn()
	wantCalls(t, rep, "task_broadcast", "task_send_message", "task_output")
	bc := args(t, rep, "task_broadcast")
	if bc["category"] != "discovery" || bc["target"] != "siblings" || !strings.Contains(bc["message"].(string), goal) {
		t.Fatalf("broadcast = %s", js(bc))
	}
	msg := args(t, rep, "task_send_message")
	if msg["task_id"] != "s-r2" || msg["noReply"] != true || msg["message"] == "" {
		t.Fatalf("message = %s", js(msg))
	}
	if args(t, rep, "task_output")["task_id"] != "s-r2" {
		t.Fatal("task_output")
	}
	c.answer(map[string]string{"task_broadcast": `{"status":"success","delivered_to":1,"skipped":0,"target":"siblings"}`,
		"task_send_message": `{"status":"delivered","task_id":"s-r2","no_reply":true}`,
		"task_output":       `{"task_id":"s-r2","label":"research-2","agent":"researcher","status":"running","output":""}`})
	c.inject(`<sibling_broadcast from="researcher (research-2)" task_id="s-r2" category="discovery" timestamp="2026-01-26T19:30:00Z">Newsletters convert best &amp; cheapest</sibling_broadcast>`)

	rep = c.turn()
	wantCalls(t, rep, "task_broadcasts_read", "search_files")
	if js(rep.ToolCalls[0].Args) != `{"source":"self"}` || args(t, rep, "search_files")["query"] != "podcast" {
		t.Fatal(argsOf(rep))
	}
	c.answer(map[string]string{"search_files": `{"matches":[{"path":"README.md","line":3,"text":"podcast"}]}`,
		"task_broadcasts_read": `{"broadcasts":[],"total":0}`})
	rep = c.turn()
	wantFinal(t, rep)
	for _, want := range []string{"Newsletters convert best & cheapest", "research-2", "2 entries", "1 match,", "README.md:3"} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("final lacks %q:\n%s", want, rep.Content)
		}
	}
}

func TestDemoResearcherWithoutSiblings(t *testing.T) {
	c := newConvo(t, researcherSys, "Research channels and competitors for "+goal)
	c.turn()
	c.answer(nil)
	rep := c.turn()
	wantCalls(t, rep, "task_broadcast")
	if !strings.Contains(args(t, rep, "task_broadcast")["message"].(string), "Hacker News") {
		t.Fatal("the channels researcher should find channels")
	}
}

func TestDemoResearcherMentionsHuman(t *testing.T) {
	c := newConvo(t, researcherSys, "Research the audience and market for "+goal)
	c.turn()
	c.answer(nil)
	c.inject("<human_message>Look at students too</human_message>")
	wantCalls(t, c.turn(), "task_broadcast") // not derailed
	c.answer(nil)
	c.turn()
	c.answer(nil)
	rep := c.turn()
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "Look at students too") {
		t.Fatalf("final:\n%s", rep.Content)
	}
	// A direct message after the end wakes it: it acknowledges, no tools.
	c.inject(`<task_message from="orchestrator (s-root)" task_id="s-root">Any update?</task_message>`)
	rep = c.turn()
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "Any update?") {
		t.Fatalf("ack = %q", rep.Content)
	}
}

func TestDemoWriter(t *testing.T) {
	c := newConvo(t, sysPrompt("executor", "s-w", "writer", "[Shared Context]:", `- projectGoal: "`+goal+`"`), "Draft the plan from both research results")
	rep := c.turn()
	wantCalls(t, rep, "get_shared_context", "task_broadcasts_read")
	c.answer(map[string]string{"get_shared_context": js(argMap{"shared_context": argMap{
		"projectGoal": goal, "tone": "concise",
		"research-1": Prefix + " Findings on: audience\n- Most listeners are backend developers commuting.",
		"research-2": Prefix + " Findings on: channels\n- Reddit's r/golang is the biggest channel.",
	}})})
	rep = c.turn()
	wantFinal(t, rep)
	for _, want := range []string{"Most listeners are backend developers commuting.", "Reddit's r/golang is the biggest channel.", "tone: concise", goal} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("draft lacks %q:\n%s", want, rep.Content)
		}
	}
}

func subSys() string {
	return sysPrompt("orchestrator", "s-sub", "", "You are a sub-orchestrator working on a delegated task.",
		"[Shared Context]:", `- projectGoal: "`+goal+`"`, `- audience: "developers"`)
}

func TestDemoSubOrchestrator(t *testing.T) {
	c := newConvo(t, subSys(), "Prepare the launch checklist for "+goal)
	rep := c.turn()
	wantCalls(t, rep, "create_task_plan", "sessions_spawn")
	if js(args(t, rep, "create_task_plan")) != `{"tasks":["Draft checklist items","Check launch dependencies"]}` {
		t.Fatal(argsOf(rep))
	}
	sp := args(t, rep, "sessions_spawn")
	if sp["agent"] != "explorer" || sp["label"] != "assets" || js(sp["sharedContext"]) != `{"audience":"early adopters","focus":"launch assets"}` {
		t.Fatalf("spawn = %s", js(sp))
	}
	c.answer(map[string]string{
		"create_task_plan": `{"tasks":[{"id":"t1","description":"Draft checklist items","status":"pending","depends_on":[]},{"id":"t2","description":"Check launch dependencies","status":"pending","depends_on":[]}],"ready":["t1","t2"]}`,
		"sessions_spawn":   `{"status":"started","sessions":[{"task_id":"s-x","label":"assets","agent":"explorer","status":"running"}]}`,
	})
	rep = c.turn()
	wantCalls(t, rep, "delegate_task", "announce", "view_agent_tasks")
	if js(args(t, rep, "delegate_task")) != `{"description":"Nested delegation"}` ||
		args(t, rep, "announce")["message"] != "Checklist work started; an explorer is scanning launch assets" {
		t.Fatal(argsOf(rep))
	}
	c.answer(map[string]string{"delegate_task": `{"error":"delegation depth limit reached (max 1)"}`})
	wantWaiting(t, c.turn())
	c.inject(taskResult("s-x", "explorer", "completed", Prefix+" Explorer report\n- The workspace has 2 entries (README.md, docs)."))
	rep = c.turn()
	wantCalls(t, rep, "update_task_status", "update_task_status")
	if js(rep.ToolCalls[0].Args) != `{"task_id":"t1","status":"completed"}` || js(rep.ToolCalls[1].Args) != `{"task_id":"t2","status":"completed"}` {
		t.Fatal(argsOf(rep))
	}
	c.answer(nil)
	rep = c.turn()
	wantFinal(t, rep)
	for _, want := range []string{"1.", "2.", "README.md, docs", "nested delegation was refused (delegation depth limit"} {
		if !strings.Contains(rep.Content, want) {
			t.Errorf("checklist lacks %q:\n%s", want, rep.Content)
		}
	}
}

func TestDemoSubOrchestratorSpawnFails(t *testing.T) {
	c := newConvo(t, subSys(), "Prepare the launch checklist")
	c.turn()
	c.answer(map[string]string{"create_task_plan": `{"error":"planning disabled"}`, "sessions_spawn": `{"error":"max spawn depth reached"}`})
	c.turn()
	c.answer(nil)
	rep := c.turn() // nothing to wait for, no plan to close
	wantFinal(t, rep)
	if !strings.Contains(rep.Content, "starting the explorer failed (max spawn depth reached)") {
		t.Fatalf("final:\n%s", rep.Content)
	}
}

func TestDemoExplorer(t *testing.T) {
	six := `{"path":".","entries":[{"name":"a"},{"name":"b"},{"name":"c"},{"name":"d"},{"name":"e"},{"name":"f"}]}`
	for _, tc := range []struct{ listing, want string }{
		{listRes, "2 entries (README.md, docs);"},
		{six, "6 entries (a, b, c, d, ...)"}, // only the first names, and it says so
	} {
		sys := sysPrompt("explorer", "s-x", "assets", "[Shared Context]:", `- projectGoal: "`+goal+`"`, `- audience: "early adopters"`)
		c := newConvo(t, sys, "Scan the workspace for launch assets")
		rep := c.turn()
		wantCalls(t, rep, "get_shared_context", "list_files", "search_files")
		c.answer(map[string]string{"get_shared_context": `{"shared_context":{"projectGoal":"` + goal + `","audience":"early adopters","focus":"launch assets"}}`,
			"list_files": tc.listing, "search_files": `{"matches":[]}`})
		rep = c.turn()
		wantFinal(t, rep)
		for _, want := range []string{"audience=early adopters", "focus=launch assets", "projectGoal=" + goal, tc.want} {
			if !strings.Contains(rep.Content, want) {
				t.Errorf("report lacks %q:\n%s", want, rep.Content)
			}
		}
	}
}

func TestDemoShadowResponder(t *testing.T) {
	req := &Request{Messages: []Message{
		{Role: "system", Content: "You are answering a question on behalf of researcher (research-1), another agent of a swarmdeck swarm.\nHere is their history."},
		{Role: "user", Content: "orchestrator (s-root) asks: Which launch window should the team plan for?\nOptions:\n- a: Two weeks from now\n- b: Next month\n- c: Next quarter\nAnswer in one or two sentences."},
	}}
	rep := Demo().Reply(req)
	if len(rep.ToolCalls) != 0 || !strings.HasPrefix(rep.Content, Prefix) {
		t.Fatalf("rep = %+v", rep)
	}
	picked := 0
	for _, o := range []string{"a (Two weeks from now)", "b (Next month)", "c (Next quarter)"} {
		if strings.Contains(rep.Content, o) {
			picked++
		}
	}
	if picked != 1 || strings.Count(rep.Content, ".") > 3 {
		t.Fatalf("want one option in a sentence or two: %q", rep.Content)
	}
	req.Messages[1].Content = "Is the API stable?"
	if rep := Demo().Reply(req); len(rep.ToolCalls) != 0 || !strings.Contains(rep.Content, "researcher (research-1)") {
		t.Fatalf("rep = %+v", rep)
	}
}

func TestDemoNoRole(t *testing.T) {
	rep := Demo().Reply(&Request{Messages: []Message{{Role: "system", Content: "You are helpful."}, {Role: "user", Content: "What is 2+2?"}}})
	if len(rep.ToolCalls) != 0 || !strings.HasPrefix(rep.Content, Prefix) || !strings.Contains(rep.Content, "What is 2+2?") {
		t.Fatalf("rep = %+v", rep)
	}
}

// fakeRuntime answers any call with a plausible result, or an error with
// probability failRate, and reports the children it started.
type fakeRuntime struct {
	rng      *rand.Rand
	failRate float64
	next     int
	children []string
}

func (f *fakeRuntime) result(call ToolCall) string {
	if f.rng != nil && f.rng.Float64() < f.failRate {
		return `{"error":"simulated failure of ` + call.Name + `"}`
	}
	f.next++
	id := fmt.Sprintf("s-%d", f.next)
	switch call.Name {
	case "sessions_spawn":
		var a struct {
			Task  any
			Label string
		}
		_ = json.Unmarshal([]byte(call.Arguments), &a)
		n := 1
		if l, ok := a.Task.([]any); ok {
			n = len(l)
		}
		var sessions []string
		for i := range n {
			sid := fmt.Sprintf("%s-%d", id, i)
			f.children = append(f.children, sid)
			label := a.Label
			if n > 1 {
				label = fmt.Sprintf("%s-%d", a.Label, i+1)
			}
			sessions = append(sessions, fmt.Sprintf(`{"task_id":"%s","label":"%s","agent":"x","status":"running"}`, sid, label))
		}
		return `{"status":"started","sessions":[` + strings.Join(sessions, ",") + `]}`
	case "delegate_task":
		f.children = append(f.children, id)
		return `{"delegation_id":"d-1","session_id":"` + id + `","status":"running"}`
	case "create_task_plan":
		return `{"tasks":[{"id":"t1","description":"a","status":"pending","depends_on":[]}],"ready":["t1"]}`
	}
	return `{"status":"ok"}`
}

// runUntilFinal drives a conversation to its final answer: it answers tool
// calls and, when the session waits, delivers one child's result at a time.
func runUntilFinal(t *testing.T, c *convo, f *fakeRuntime, failEvery int) string {
	t.Helper()
	for range 40 {
		rep := c.turn()
		if len(rep.ToolCalls) > 0 {
			last := c.msgs[len(c.msgs)-1]
			for _, tc := range last.ToolCalls {
				c.msgs = append(c.msgs, Message{Role: "tool", ToolCallID: tc.ID, Content: f.result(tc)})
			}
			continue
		}
		if !strings.HasPrefix(rep.Content, waitingPrefix) {
			return rep.Content
		}
		if len(f.children) == 0 {
			t.Fatalf("session waits but nothing is running:\n%q", rep.Content)
		}
		status := "completed"
		if failEvery > 0 && len(f.children)%failEvery == 0 {
			status = "failed"
		}
		c.inject(taskResult(f.children[0], "x", status, Prefix+" result\n- finding of "+f.children[0]+"\n1. item"))
		f.children = f.children[1:]
	}
	t.Fatal("no final answer after 40 turns")
	return ""
}

func TestDemoEveryConversationTerminates(t *testing.T) {
	roles := map[string]func() (string, string){
		"root":       func() (string, string) { return sysPrompt("orchestrator", "s-1", ""), goal },
		"sub":        func() (string, string) { return subSys(), "Prepare the checklist" },
		"researcher": func() (string, string) { return researcherSys, "Research the audience\n\n" + siblingTable },
		"writer":     func() (string, string) { return sysPrompt("executor", "s-w", "writer"), "Draft" },
		"explorer":   func() (string, string) { return sysPrompt("explorer", "s-x", "assets"), "Scan" },
		"reviewer":   func() (string, string) { return sysPrompt("reviewer", "s-v", ""), "Review" },
	}
	for name, mk := range roles {
		for seed := range 40 {
			t.Run(fmt.Sprintf("%s/%d", name, seed), func(t *testing.T) {
				sys, task := mk()
				c := newConvo(t, sys, task)
				f := &fakeRuntime{rng: rand.New(rand.NewPCG(uint64(seed), 7)), failRate: float64(seed%5) / 4}
				final := runUntilFinal(t, c, f, seed%3)
				if !strings.HasPrefix(final, Prefix) {
					t.Fatalf("final = %q", final)
				}
				if n := assistantTurns(c.msgs); n > maxTurns {
					t.Fatalf("%s took %d turns", name, n)
				}
			})
		}
	}
}

// The agents' suggestions read as one sentence: each without its own full
// stop, and none after a cut one.
func TestLaunchWindowListsTheAgentsSuggestions(t *testing.T) {
	long := "Next quarter, which " + strings.Repeat("leaves time to finish the docs and ", 5) + "more."
	st := &rootState{ask: map[string]any{"status": "timed_out", "responses": map[string]any{
		"research-1": "Next month.", "research-2": long}}}
	got := launchWindow(st)
	if strings.Contains(got, ".;") || strings.Contains(got, "….") || !strings.Contains(got, "research-1: Next month; research-2: Next quarter") ||
		!strings.HasSuffix(got, "…") {
		t.Errorf("launchWindow = %q", got)
	}
}

// The demo's own words are ASCII, so that a dashboard drawing in ASCII
// (a terminal whose locale is not UTF-8) shows them without garbage;
// only what a person or a tool wrote, quoted in them, may be otherwise.
func TestDemoWordsAreASCII(t *testing.T) {
	for _, file := range []string{"demo.go", "demo_roles.go"} {
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(src), "\n") {
			code, _, _ := strings.Cut(line, "//")
			for _, r := range code {
				if r >= 0x80 && r != '…' { // the mark textcut ends a cut with
					t.Errorf("%s:%d: %q in %s", file, i+1, r, strings.TrimSpace(line))
					break
				}
			}
		}
	}
}
