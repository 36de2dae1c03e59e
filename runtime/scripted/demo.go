package scripted

import (
	"fmt"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Demo returns the default policy: a believable run for any goal a user
// types, which shows every feature of the swarm on the first run (a plan
// the runtime rejects and one it accepts, a parallel spawn with shared
// context, broadcasts and sibling messages, a writer chained after both
// researchers through $label references, a delegation to a
// sub-orchestrator with its own plan and explorer (which delegates again
// where the depth limit offers it delegate_task), an announcement, and an
// ask_others question to the human).
func Demo() Policy { return demo{} }

type demo struct{}

// maxTurns caps each session's own turns so that no conversation, however
// its tool results turn out, can loop. The root needs up to 14 when its
// four children report one at a time, each between two of its turns: four
// scripted steps, a waiting note after each report and before the first,
// three plan updates, the review's two and the final answer.
const maxTurns = 16

// waitingPrefix starts the text an orchestrator ends a turn with while its
// children work. It is not a final answer: the policy recognises its own
// waiting notes by this prefix.
const waitingPrefix = Prefix + " Waiting for "

// step is one scripted turn of tool calls with the short narration a model
// would write alongside them.
type step func() (narration string, calls []Call)

// Reply implements Policy.
func (demo) Reply(req *Request) Reply {
	id := identify(req)
	if id.shadowFor != "" {
		return shadowReply(req, id.shadowFor)
	}
	if id.role == "" {
		return plainReply(req)
	}
	s := readSession(req, id)
	if i, done := s.finished(); done {
		return s.acknowledge(i)
	}
	switch {
	case id.delegated:
		return subOrchestrator(s)
	case id.role == "orchestrator":
		return root(s)
	case id.role == "researcher":
		return researcher(s)
	case id.role == "executor" || id.label == "writer":
		return writer(s)
	default:
		return explorer(s)
	}
}

// atCap reports whether this turn must be the session's last.
func (s *session) atCap() bool { return s.turnNo() >= maxTurns }

// acknowledge answers a session that already gave its final answer and was
// woken again: by the human, a late result or a direct message.
func (s *session) acknowledge(final int) Reply {
	var notes []string
	for _, it := range s.items {
		if it.after <= final {
			continue
		}
		switch it.tag {
		case "human_message", "human_broadcast":
			notes = append(notes, "you said \""+textcut.OneLine(it.body, 160)+"\"")
		case "task_result":
			notes = append(notes, "the result of "+it.attr("task_id")+" ("+it.attr("status")+")")
		case "task_message":
			notes = append(notes, "the message from "+it.attr("from")+": \""+textcut.OneLine(it.body, 120)+"\"")
		}
	}
	lead := ackNothing
	if len(notes) > 0 {
		lead = ackNoted + strings.Join(notes, "; ") + ". It does not change my answer, which stands:"
	}
	// The reply is the session's answer from now on (a run's result is its
	// root's last answer), so it carries the answer again, not a pointer
	// to it.
	answer := answerBody(s.turns[final].content)
	if answer == "" {
		return Reply{Content: Prefix + lead}
	}
	return Reply{Content: Prefix + lead + "\n\n" + answer}
}

// The openings of an acknowledgement.
const (
	ackNothing = " Nothing new for me here; my answer stands:"
	ackNoted   = " Noted "
)

// answerBody is a final answer without the model's prefix and without the
// opening of an acknowledgement that restated it.
func answerBody(content string) string {
	body := strings.TrimPrefix(content, Prefix)
	if strings.HasPrefix(body, ackNothing) || strings.HasPrefix(body, ackNoted) {
		_, rest, found := strings.Cut(body, "\n\n")
		if !found {
			return ""
		}
		body = rest
	}
	return strings.TrimSpace(body)
}

// ---- root orchestrator ----

// rootState is what the root orchestrator has started and learnt so far.
type rootState struct {
	goal        string
	planOK      bool
	cyclicErr   string
	planErr     string
	researchers []child
	researchErr string
	writer      *child
	writerErr   string
	delegation  string // session id of the sub-orchestrator
	delegErr    string
	ask         map[string]any
	askErr      string
	// Plan task id -> session id of the child working on it.
	sessions map[string]string
	// Latest <task_result> per session id.
	results map[string]item
	// Plan task ids marked completed, and the draft and the review marked
	// in progress ("id/status").
	completed map[string]bool
}

// child is one session from a sessions_spawn result.
type child struct {
	taskID, label, agent, status string
}

func spawnedChildren(m made) ([]child, string) {
	if !m.done {
		return nil, "no result came back"
	}
	if e := resultError(m.result); e != "" {
		return nil, e
	}
	var out []child
	for _, o := range list(jsonObject(m.result), "sessions") {
		out = append(out, child{taskID: str(o, "task_id"), label: str(o, "label"), agent: str(o, "agent"), status: str(o, "status")})
	}
	if len(out) == 0 {
		return nil, "the spawn returned no sessions"
	}
	return out, ""
}

func labelIs(label string) func(map[string]any) bool {
	return func(args map[string]any) bool { return str(args, "label") == label }
}

func readRoot(s *session) *rootState {
	st := &rootState{
		goal:      textcut.OneLine(s.task, 120),
		sessions:  map[string]string{},
		results:   map[string]item{},
		completed: map[string]bool{},
	}
	if st.goal == "" {
		st.goal = "the goal"
	}
	plans := s.calls("create_task_plan")
	if len(plans) > 0 {
		st.cyclicErr = resultError(plans[0].result)
	}
	if len(plans) > 1 {
		st.planErr = resultError(plans[1].result)
		st.planOK = plans[1].done && st.planErr == ""
	}
	if c, ok := s.called("sessions_spawn", labelIs("research")); ok {
		st.researchers, st.researchErr = spawnedChildren(c)
		for i, ch := range st.researchers {
			switch {
			case ch.label == "research-1" || (i == 0 && ch.label != "research-2"):
				st.sessions["research"] = ch.taskID
			case ch.label == "research-2" || i == 1:
				st.sessions["channels"] = ch.taskID
			}
		}
	}
	if c, ok := s.called("sessions_spawn", labelIs("writer")); ok {
		kids, err := spawnedChildren(c)
		st.writerErr = err
		if len(kids) > 0 {
			st.writer = &kids[0]
			st.sessions["draft"] = kids[0].taskID
		}
	}
	if c, ok := s.called("delegate_task", nil); ok {
		if st.delegErr = resultError(c.result); st.delegErr == "" && c.done {
			st.delegation = str(jsonObject(c.result), "session_id")
			st.sessions["checklist"] = st.delegation
		}
	}
	if c, ok := s.called("ask_others", nil); ok && c.done {
		if st.askErr = resultError(c.result); st.askErr == "" {
			st.ask = jsonObject(c.result)
		}
	}
	st.results = s.results()
	for _, c := range s.calls("update_task_status") {
		a := jsonObject(c.args)
		if str(a, "status") == "completed" || str(a, "status") == "in_progress" && (str(a, "task_id") == "review" || str(a, "task_id") == "draft") {
			st.completed[str(a, "task_id")+"/"+str(a, "status")] = true
		}
	}
	return st
}

func updateStatus(task, status string) Call {
	return Call{Name: "update_task_status", Args: kv{"task_id", task, "status", status}}
}

func root(s *session) Reply {
	st := readRoot(s)
	if s.atCap() {
		return Reply{Content: rootFinal(s, st, true)}
	}
	goal := st.goal
	researchTask := "Research the audience and market for " + goal
	channelsTask := "Research channels and competitors for " + goal
	if r, ok := s.run(
		func() (string, []Call) {
			return "Let me plan this. A first attempt where the draft and the review wait on each other:",
				[]Call{{Name: "create_task_plan", Args: kv{"tasks", []kv{
					{"id", "draft", "description", "Draft the plan", "depends_on", []string{"review"}},
					{"id", "review", "description", "Review the draft", "depends_on", []string{"draft"}},
				}}}}
		},
		func() (string, []Call) {
			n := "Now a plan that can run, and a look at the workspace."
			if st.cyclicErr != "" {
				n = "The runtime rejected that plan (" + textcut.Clip(st.cyclicErr, 100) + "). " + n
			}
			return n, []Call{
				{Name: "create_task_plan", Args: kv{"tasks", []kv{
					{"id", "research", "description", researchTask},
					{"id", "channels", "description", "Research channels and competitors"},
					{"id", "checklist", "description", "Prepare the launch checklist"},
					{"id", "draft", "description", "Draft the plan from the research", "depends_on", []int{0, 1}},
					{"id", "review", "description", "Review and finalize", "depends_on", []string{"draft", "checklist"}},
				}}},
				{Name: "list_files", Args: kv{"path", "."}},
			}
		},
		func() (string, []Call) {
			calls := []Call{{Name: "sessions_spawn", Args: kv{
				"task", []string{researchTask, channelsTask},
				"label", "research",
				"agent", "researcher",
				"parallel", true,
				"sharedContext", kv{"projectGoal", goal, "audience", "developers", "constraints", []string{"budget", "timeline"}},
			}}}
			if st.planOK {
				calls = append(calls, updateStatus("research", "in_progress"), updateStatus("channels", "in_progress"))
			}
			deleg := kv{"description", "Prepare the launch checklist for " + goal}
			if st.planOK {
				deleg = append(deleg, "task_id", "checklist")
			}
			deleg = append(deleg, "custom_config", kv{"sharedContext", kv{"projectGoal", goal, "audience", "developers"}})
			calls = append(calls, Call{Name: "delegate_task", Args: deleg})
			return "Two researchers in parallel with a shared context, and the checklist delegated to a sub-orchestrator.", calls
		},
		func() (string, []Call) {
			calls := []Call{{Name: "ask_others", Args: kv{
				"question", "Which launch window should the team plan for?",
				"options", []kv{
					{"id", "a", "label", "Two weeks from now"},
					{"id", "b", "label", "Next month"},
					{"id", "c", "label", "Next quarter"},
				},
				"allow_human_response", true,
				"timeout", 90,
			}}}
			n := "Asking the team, and you, about the launch window."
			if len(st.researchers) > 0 {
				ctx := kv{}
				for _, r := range st.researchers {
					ref := r.label
					if ref == "" {
						ref = r.taskID
					}
					ctx = append(ctx, "$"+ref, "reference")
				}
				ctx = append(ctx, "tone", "concise")
				calls = append(calls, Call{Name: "sessions_spawn", Args: kv{
					"task", "Draft the plan from both research results",
					"label", "writer",
					"agent", "executor",
					"sharedContext", ctx,
				}})
				n += " A writer is queued behind both researchers: its $ references wait for their results."
			}
			return n, calls
		},
	); ok {
		return r
	}

	// All scripted steps are taken: follow the children as they report.
	var mark []Call
	marking := map[string]bool{}
	done := func(pt string) bool { return st.completed[pt+"/completed"] || marking[pt] }
	for _, pt := range []string{"research", "channels", "draft"} {
		sid := st.sessions[pt]
		if res, ok := st.results[sid]; ok && sid != "" && st.planOK &&
			res.attr("status") == "completed" && !done(pt) {
			mark = append(mark, updateStatus(pt, "completed"))
			marking[pt] = true
		}
	}
	// The writer starts once both researchers are done (its references
	// wait for their results), so the draft goes in progress then, not when
	// the writer is spawned.
	if _, drafted := st.results[st.sessions["draft"]]; st.planOK && st.sessions["draft"] != "" && !drafted &&
		!st.completed["draft/in_progress"] && done("research") && done("channels") {
		mark = append(mark, updateStatus("draft", "in_progress"))
	}
	if mark = s.filter(mark); len(mark) > 0 {
		return Reply{Content: "Results are coming in; updating the plan.", ToolCalls: mark}
	}
	if pending := st.pending(); len(pending) > 0 {
		return Reply{Content: waitingPrefix + "the team: " + strings.Join(pending, "; ") + "." + heard(s, s.lastTurnWithoutCalls())}
	}
	if st.planOK && st.allCompleted() && s.offered("update_task_status") {
		if !st.completed["review/in_progress"] {
			return Reply{Content: "Everything is in. Reviewing.", ToolCalls: []Call{updateStatus("review", "in_progress")}}
		}
		if !st.completed["review/completed"] {
			return Reply{Content: "Review done.", ToolCalls: []Call{updateStatus("review", "completed")}}
		}
	}
	return Reply{Content: rootFinal(s, st, false)}
}

// lastTurnWithoutCalls returns the index of the latest turn that ended
// without tool calls, or -1, so a waiting note mentions only new words.
func (s *session) lastTurnWithoutCalls() int {
	for i := len(s.turns) - 1; i >= 0; i-- {
		if len(s.turns[i].calls) == 0 {
			return i
		}
	}
	return -1
}

// heard mentions what the human said since the given turn, for notes that
// are not final answers.
func heard(s *session, since int) string {
	words := s.humanWords(since + 1)
	if len(words) == 0 {
		return ""
	}
	return " Noted your message: \"" + textcut.OneLine(words[len(words)-1], 160) + "\"."
}

// pending describes the children the root still waits for.
func (st *rootState) pending() []string {
	var out []string
	waiting := func(pt string) bool {
		sid := st.sessions[pt]
		_, ok := st.results[sid]
		return sid != "" && !ok
	}
	names := map[string]string{}
	for _, r := range st.researchers {
		if r.label != "" {
			names[r.taskID] = r.label
		}
	}
	name := func(pt, fallback string) string {
		if n := names[st.sessions[pt]]; n != "" {
			return n + " (" + st.sessions[pt] + ")"
		}
		return fallback + " (" + st.sessions[pt] + ")"
	}
	if waiting("research") {
		out = append(out, name("research", "a researcher")+" is researching the audience")
	}
	if waiting("channels") {
		out = append(out, name("channels", "a researcher")+" is researching channels")
	}
	if waiting("draft") {
		if waiting("research") || waiting("channels") {
			out = append(out, "the writer ("+st.sessions["draft"]+") drafts once both researchers are done")
		} else {
			out = append(out, "the writer ("+st.sessions["draft"]+") is drafting from their results")
		}
	}
	if waiting("checklist") {
		out = append(out, "a sub-orchestrator ("+st.sessions["checklist"]+") is preparing the checklist")
	}
	return out
}

// allCompleted reports whether every task the review depends on, directly
// or not, was done by a child that completed.
func (st *rootState) allCompleted() bool {
	for _, pt := range []string{"research", "channels", "draft", "checklist"} {
		sid := st.sessions[pt]
		if sid == "" || st.results[sid].attr("status") != "completed" {
			return false
		}
	}
	return true
}

func rootFinal(s *session, st *rootState, capped bool) string {
	var b strings.Builder
	b.WriteString(Prefix + " Plan for: " + st.goal + "\n")
	cite := func(title, pt, fallback string) {
		sid := st.sessions[pt]
		res, ok := st.results[sid]
		switch {
		case sid == "":
			if fallback != "" {
				fmt.Fprintf(&b, "- %s: %s\n", title, fallback)
			}
		case !ok:
			fmt.Fprintf(&b, "- %s: no result yet from %s.\n", title, sid)
		case res.attr("status") != "completed":
			fmt.Fprintf(&b, "- %s: %s ended %s: %s\n", title, sid, res.attr("status"), textcut.OneLine(unlabel(res.body), 160))
		default:
			fmt.Fprintf(&b, "- %s: %s\n", title, summaryLine(res.body))
		}
	}
	b.WriteString("\nWhat the team found\n")
	spawnFail := ""
	if st.researchErr != "" {
		spawnFail = "not researched: starting the researchers failed (" + textcut.Clip(st.researchErr, 120) + ")."
	}
	cite("Audience (research-1)", "research", spawnFail)
	cite("Channels (research-2)", "channels", spawnFail)
	writerFail := ""
	switch {
	case st.writerErr != "":
		writerFail = "no draft: starting the writer failed (" + textcut.Clip(st.writerErr, 120) + ")."
	case st.researchErr != "":
		writerFail = "no draft: the writer needs the research results."
	}
	cite("Draft (writer)", "draft", writerFail)
	checklistFail := ""
	if st.delegErr != "" {
		checklistFail = "no checklist: the delegation failed (" + textcut.Clip(st.delegErr, 120) + ")."
	}
	if res, ok := st.results[st.sessions["checklist"]]; ok && res.attr("status") == "completed" {
		b.WriteString("- Checklist (delegated to a sub-orchestrator):\n")
		items := numberedLines(res.body, 5)
		if len(items) == 0 {
			items = []string{summaryLine(res.body)}
		}
		for _, it := range items {
			b.WriteString("    " + it + "\n")
		}
	} else {
		cite("Checklist (delegated)", "checklist", checklistFail)
	}

	b.WriteString("\nLaunch window: " + launchWindow(st) + "\n")
	if words := s.humanWords(0); len(words) > 0 {
		b.WriteString("You told me: \"" + textcut.OneLine(strings.Join(words, " / "), 240) + "\" -- taken into account above.\n")
	}

	b.WriteString("\nNext steps\n")
	b.WriteString("1. Confirm the launch window and an owner for each checklist item.\n")
	if res, ok := st.results[st.sessions["draft"]]; ok && res.attr("status") == "completed" {
		b.WriteString("2. Turn the writer's draft into the announcement and the landing page.\n")
	} else {
		b.WriteString("2. Redo what failed above, then draft the announcement and the landing page.\n")
	}
	b.WriteString("3. Launch to developers first, then widen through the channels the research names.\n")
	switch {
	case st.planErr != "":
		b.WriteString("\n(The task plan could not be created: " + textcut.Clip(st.planErr, 120) + ")")
	case st.cyclicErr != "":
		b.WriteString("\n(The first plan was rejected because of a dependency cycle; the second one ran.)")
	}
	if capped {
		fmt.Fprintf(&b, "\n(Stopped after %d turns, the limit of this scripted demo.)", maxTurns)
	}
	return strings.TrimRight(b.String(), "\n")
}

// launchWindow reports the human's answer to the ask_others question.
func launchWindow(st *rootState) string {
	if st.ask == nil {
		if st.askErr != "" {
			return "none was given: the question failed (" + textcut.Clip(st.askErr, 120) + ")."
		}
		return "none was given: the question was not asked."
	}
	labels := map[string]string{"a": "Two weeks from now", "b": "Next month", "c": "Next quarter"}
	resp, _ := st.ask["responses"].(map[string]any)
	if h := strings.TrimSpace(str(resp, "human")); h != "" {
		if l, ok := labels[strings.ToLower(h)]; ok {
			h = l
		}
		return "\"" + textcut.OneLine(h, 120) + "\", as you chose."
	}
	out := "none was given by you"
	switch str(st.ask, "status") {
	case "timed_out":
		out += " (the question timed out)"
	case "partial":
		out += " (the question got only some answers in time)"
	}
	var agents []string
	for _, k := range sortedKeys(resp) {
		if v, ok := resp[k].(string); ok && k != "human" {
			// Without its own full stop: the list goes on after it.
			agents = append(agents, k+": "+strings.TrimRight(textcut.OneLine(unlabel(v), 100), ". "))
		}
	}
	if len(agents) > 0 {
		out += "; the agents suggested -- " + strings.Join(agents, "; ")
	}
	if strings.HasSuffix(out, "…") {
		return out
	}
	return out + "."
}
