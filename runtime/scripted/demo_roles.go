package scripted

import (
	"fmt"
	"strings"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// The demo's sub-agents: researchers, the writer, the sub-orchestrator and
// every other role (explorer, reviewer, planner, ...).

// ---- researcher ----

func researcher(s *session) Reply {
	if s.atCap() {
		return Reply{Content: researcherFinal(s)}
	}
	goal := s.goal()
	sibs := s.siblings()
	if r, ok := s.run(
		func() (string, []Call) {
			return "Reading the shared context, the workspace and what the others have broadcast.", []Call{
				{Name: "get_shared_context", Args: kv{}},
				{Name: "list_files", Args: kv{"path", "."}},
				{Name: "task_broadcasts_read", Args: kv{}},
			}
		},
		func() (string, []Call) {
			calls := []Call{{Name: "task_broadcast", Args: kv{
				"message", discovery(s.task, goal), "category", "discovery", "target", "siblings",
			}}}
			n := "Sharing a first finding with my siblings."
			if len(sibs) > 0 {
				sb := sibs[0]
				me := s.label
				if me == "" {
					me = "your sibling"
				}
				calls = append(calls,
					Call{Name: "task_send_message", Args: kv{
						"task_id", sb.taskID,
						"message", "Hi from " + me + ": I'm on \"" + textcut.OneLine(s.task, 80) + "\" and just broadcast my first finding. Tell me if yours contradicts it.",
						"noReply", true,
					}},
					Call{Name: "task_output", Args: kv{"task_id", sb.taskID}},
				)
				n = "Sharing a first finding, and checking in with " + nameOf(sb) + "."
			}
			return n, calls
		},
		func() (string, []Call) {
			return "Checking the broadcasts that reached me and searching the workspace.", []Call{
				{Name: "task_broadcasts_read", Args: kv{"source", "self"}},
				{Name: "search_files", Args: kv{"query", searchWord(goal)}},
			}
		},
	); ok {
		return r
	}
	return Reply{Content: researcherFinal(s)}
}

func nameOf(sb sibling) string {
	if sb.label != "" {
		return sb.label + " (" + sb.taskID + ")"
	}
	return sb.taskID
}

// discovery is the researcher's finding: concrete-sounding, varied by what
// the task is about, and labelled as scripted by the answer around it.
func discovery(task, goal string) string {
	g := "For \"" + textcut.OneLine(goal, 60) + "\", "
	t := strings.ToLower(task)
	switch {
	case strings.Contains(t, "channel") || strings.Contains(t, "competitor"):
		return g + "comparable projects launch on Hacker News, Reddit and developer newsletters first; none of the three closest competitors targets small teams, which looks like the opening."
	case strings.Contains(t, "audience") || strings.Contains(t, "market"):
		return g + "most early interest comes from developers who already automate their work; two of the three comparable launches led with a free tier and a five-minute quickstart."
	default:
		return g + "the notes point to one first step: a small, well-documented release that early users can try in minutes."
	}
}

func researcherFinal(s *session) string {
	var b strings.Builder
	b.WriteString(Prefix + " Findings on: " + textcut.OneLine(s.task, 100) + "\n")
	b.WriteString("- " + discovery(s.task, s.goal()) + "\n")
	if w := workspaceLine(s); w != "" {
		b.WriteString("- " + w + "\n")
	}
	for _, line := range heardFromOthers(s) {
		b.WriteString("- " + line + "\n")
	}
	if c, ok := s.called("task_output", nil); ok && c.done {
		o := jsonObject(c.result)
		who := str(o, "label")
		if who == "" {
			who = str(jsonObject(c.args), "task_id")
		}
		switch {
		case c.failed():
			b.WriteString("- Checking on " + who + " failed: " + textcut.Clip(resultError(c.result), 120) + "\n")
		case str(o, "output") != "":
			b.WriteString("- " + who + " already reported: " + summaryLine(str(o, "output")) + "\n")
		default:
			b.WriteString("- " + who + " was still " + orDefault(str(o, "status"), "running") + " when I checked on it.\n")
		}
	}
	if a := sharedValue(s.sys, "audience"); a != "" {
		b.WriteString("- Written for the audience in the shared context: " + a + ".\n")
	}
	writeHumanAndNotes(&b, s)
	if s.atCap() {
		fmt.Fprintf(&b, "(Stopped after %d turns, the limit of this scripted demo.)\n", maxTurns)
	}
	return strings.TrimRight(b.String(), "\n")
}

// heardFromOthers lists sibling broadcasts and direct messages that reached
// the session, from its history and from task_broadcasts_read results.
func heardFromOthers(s *session) []string {
	var out []string
	seen := map[string]bool{}
	add := func(from, msg string) {
		msg = textcut.OneLine(msg, 160)
		if msg == "" || seen[msg] {
			return
		}
		seen[msg] = true
		out = append(out, from+" broadcast: \""+msg+"\"")
	}
	for _, it := range s.itemsOf("sibling_broadcast") {
		add(it.attr("from"), it.body)
	}
	for _, c := range s.calls("task_broadcasts_read") {
		for _, bc := range list(jsonObject(c.result), "broadcasts") {
			mine := str(bc, "source") == "self" ||
				(s.taskID != "" && str(bc, "task_id") == s.taskID) ||
				(s.label != "" && strings.Contains(str(bc, "from"), "("+s.label+")"))
			if !mine {
				add(str(bc, "from"), str(bc, "message"))
			}
		}
	}
	if len(out) == 0 {
		out = append(out, "No sibling broadcasts reached me.")
	}
	for _, it := range s.itemsOf("task_message") {
		out = append(out, it.attr("from")+" wrote to me: \""+textcut.OneLine(it.body, 160)+"\"")
	}
	return out
}

// writeHumanAndNotes adds what the human said and the passive notes
// (announcements, questions answered on the session's behalf).
func writeHumanAndNotes(b *strings.Builder, s *session) {
	if words := s.humanWords(0); len(words) > 0 {
		b.WriteString("- You told me: \"" + textcut.OneLine(strings.Join(words, " / "), 240) + "\".\n")
	}
	for _, it := range s.itemsOf("announcement") {
		b.WriteString("- Announcement seen: \"" + textcut.OneLine(it.body, 140) + "\".\n")
		break
	}
	for _, it := range s.itemsOf("answered_on_your_behalf") {
		// The note's first line is the runtime's; the question follows.
		q := it.body
		if _, rest, ok := strings.Cut(q, "Question: "); ok {
			q, _, _ = strings.Cut(rest, "\n")
		}
		b.WriteString("- " + it.attr("asked_by") + " asked, and was answered on my behalf: \"" + textcut.OneLine(q, 140) + "\".\n")
		break
	}
}

// workspaceLine summarises list_files and search_files results.
func workspaceLine(s *session) string {
	var parts []string
	if c, ok := s.called("list_files", nil); ok && c.done {
		if c.failed() {
			parts = append(parts, "listing the workspace failed ("+textcut.Clip(resultError(c.result), 80)+")")
		} else {
			var names []string
			entries := list(jsonObject(c.result), "entries")
			for _, e := range entries {
				if len(names) < 4 {
					names = append(names, str(e, "name"))
				}
			}
			p := "the workspace has " + plural(len(entries), "entry", "entries")
			switch {
			case len(names) == 0:
			case len(names) < len(entries):
				p += " (" + strings.Join(names, ", ") + ", ...)"
			default:
				p += " (" + strings.Join(names, ", ") + ")"
			}
			parts = append(parts, p)
		}
	}
	if c, ok := s.called("search_files", nil); ok && c.done {
		q := str(jsonObject(c.args), "query")
		if c.failed() {
			parts = append(parts, "searching for \""+q+"\" failed ("+textcut.Clip(resultError(c.result), 80)+")")
		} else {
			matches := list(jsonObject(c.result), "matches")
			p := fmt.Sprintf("a search for \"%s\" found %s", q, plural(len(matches), "match", "matches"))
			if len(matches) > 0 {
				m := matches[0]
				p += fmt.Sprintf(", first in %s:%v", str(m, "path"), m["line"])
			}
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	out := strings.Join(parts, "; ") + "."
	return strings.ToUpper(out[:1]) + out[1:]
}

// ---- writer ----

func writer(s *session) Reply {
	if !s.atCap() {
		if r, ok := s.run(func() (string, []Call) {
			return "Reading the research results shared with me.", []Call{
				{Name: "get_shared_context", Args: kv{}},
				{Name: "task_broadcasts_read", Args: kv{}},
			}
		}); ok {
			return r
		}
	}
	ctx := map[string]any{}
	if c, ok := s.called("get_shared_context", nil); ok {
		ctx, _ = jsonObject(c.result)["shared_context"].(map[string]any)
	}
	var b strings.Builder
	// The writer's context holds the research results but not always the
	// goal (the root passes only references), so the title names it only
	// when known.
	if g := sharedValue(s.sys, "projectGoal"); g != "" {
		b.WriteString(Prefix + " Draft plan for \"" + textcut.OneLine(g, 100) + "\"")
	} else {
		b.WriteString(Prefix + " Draft plan from the research")
	}
	if tone := str(ctx, "tone"); tone != "" {
		b.WriteString(" (tone: " + tone + ")")
	}
	b.WriteString("\n- Proposal: start with developers and a five-minute quickstart, then widen through the channels the research names.\n")
	quoted := 0
	for _, k := range sortedKeys(ctx) {
		v, ok := ctx[k].(string)
		if !ok || k == "projectGoal" || k == "tone" || k == "audience" || len(v) < 40 {
			continue
		}
		b.WriteString("- From " + k + ": " + summaryLine(v) + "\n")
		quoted++
	}
	if quoted == 0 {
		b.WriteString("- No research results were shared with me, so this draft rests on the goal alone.\n")
	}
	b.WriteString("- Timeline: two weeks of preparation, the launch, then a week of follow-up on feedback.\n")
	writeHumanAndNotes(&b, s)
	return Reply{Content: strings.TrimRight(b.String(), "\n")}
}

// ---- sub-orchestrator ----

func subOrchestrator(s *session) Reply {
	goal := textcut.OneLine(s.goal(), 100)
	spawn, spawned := s.called("sessions_spawn", labelIs("assets"))
	var explorer []child
	spawnErr := ""
	if spawned {
		explorer, spawnErr = spawnedChildren(spawn)
	}
	if !s.atCap() {
		if r, ok := s.run(
			func() (string, []Call) {
				return "Planning the checklist and sending an explorer after the launch assets.", []Call{
					{Name: "create_task_plan", Args: kv{"tasks", []string{"Draft checklist items", "Check launch dependencies"}}},
					{Name: "sessions_spawn", Args: kv{
						"task", "Scan the workspace for launch assets",
						"label", "assets",
						"agent", "explorer",
						"sharedContext", kv{"audience", "early adopters", "focus", "launch assets"},
					}},
				}
			},
			func() (string, []Call) {
				say := "Telling everyone what I'm doing, and looking at the others' plans."
				if s.offered("delegate_task") {
					// Only where the depth limit offers it: told it
					// cannot, a model does not try.
					say = "Trying to delegate further, telling everyone what I'm doing, and looking at the others' plans."
				}
				return say, []Call{
					{Name: "delegate_task", Args: kv{"description", "Nested delegation"}},
					{Name: "announce", Args: kv{"message", "Checklist work started; an explorer is scanning launch assets"}},
					{Name: "view_agent_tasks", Args: kv{}},
				}
			},
		); ok {
			return r
		}
	}
	var result *item
	for _, it := range s.itemsOf("task_result") {
		if (len(explorer) > 0 && it.attr("task_id") == explorer[0].taskID) ||
			(len(explorer) == 0 && it.attr("agent") == "explorer") {
			result = &it
		}
	}
	if result != nil {
		if latest, ok := s.results()[result.attr("task_id")]; !ok {
			result = nil // running again since, after a resume
		} else {
			result = &latest
		}
	}
	if len(explorer) > 0 && result == nil && !s.atCap() {
		return Reply{Content: waitingPrefix + "the explorer (" + explorer[0].taskID + ") to finish scanning the launch assets." + heard(s, s.lastTurnWithoutCalls())}
	}
	if !s.atCap() {
		var ids []string
		if c, ok := s.called("create_task_plan", nil); ok && !c.failed() {
			for _, t := range list(jsonObject(c.result), "tasks") {
				ids = append(ids, fmt.Sprint(t["id"]))
			}
		}
		done := map[string]bool{}
		for _, c := range s.calls("update_task_status") {
			done[fmt.Sprint(jsonObject(c.args)["task_id"])] = true
		}
		var mark []Call
		for _, id := range ids {
			if !done[id] {
				mark = append(mark, updateStatus(id, "completed"))
			}
		}
		if mark = s.filter(mark); len(mark) > 0 {
			return Reply{Content: "The explorer is back; closing my plan.", ToolCalls: mark}
		}
	}

	var b strings.Builder
	b.WriteString(Prefix + " Launch checklist for \"" + goal + "\":\n")
	b.WriteString("1. Confirm the launch window with the team and the human.\n")
	switch {
	case result != nil && result.attr("status") == "completed":
		b.WriteString("2. Prepare the launch assets the explorer found: " + summaryLine(result.body) + "\n")
	case result != nil:
		b.WriteString("2. Prepare the launch assets (the explorer ended " + result.attr("status") + ": " + textcut.OneLine(unlabel(result.body), 120) + ").\n")
	case spawnErr != "":
		b.WriteString("2. Collect the launch assets by hand: starting the explorer failed (" + textcut.Clip(spawnErr, 120) + ").\n")
	default:
		b.WriteString("2. Collect the launch assets (no explorer report).\n")
	}
	b.WriteString("3. Write the announcement and a five-minute quickstart for early adopters.\n")
	b.WriteString("4. Check launch dependencies: hosting, docs, a support channel.\n")
	if c, ok := s.called("delegate_task", nil); ok && c.failed() {
		b.WriteString("Note: the nested delegation was refused (" + textcut.Clip(resultError(c.result), 120) + "), so I kept the work here.\n")
	}
	writeHumanAndNotes(&b, s)
	if s.atCap() {
		fmt.Fprintf(&b, "(Stopped after %d turns, the limit of this scripted demo.)\n", maxTurns)
	}
	return Reply{Content: strings.TrimRight(b.String(), "\n")}
}

// ---- explorer, reviewer, planner and any other role ----

func explorer(s *session) Reply {
	goal := s.goal()
	if !s.atCap() {
		if r, ok := s.run(func() (string, []Call) {
			return "Looking at the shared context and the workspace.", []Call{
				{Name: "get_shared_context", Args: kv{}},
				{Name: "list_files", Args: kv{"path", "."}},
				{Name: "search_files", Args: kv{"query", searchWord(goal)}},
			}
		}); ok {
			return r
		}
	}
	var b strings.Builder
	b.WriteString(Prefix + " " + strings.ToUpper(s.role[:1]) + s.role[1:] + " report on: " + textcut.OneLine(s.task, 100) + "\n")
	if w := workspaceLine(s); w != "" {
		b.WriteString("- " + w + "\n")
	} else {
		b.WriteString("- Nothing in the workspace needed attention.\n")
	}
	if c, ok := s.called("get_shared_context", nil); ok && c.done && !c.failed() {
		ctx, _ := jsonObject(c.result)["shared_context"].(map[string]any)
		var parts []string
		for _, k := range sortedKeys(ctx) {
			parts = append(parts, k+"="+textcut.OneLine(fmt.Sprint(ctx[k]), 60))
		}
		if len(parts) > 0 {
			b.WriteString("- Shared context I worked from: " + strings.Join(parts, ", ") + ".\n")
		}
	}
	writeHumanAndNotes(&b, s)
	return Reply{Content: strings.TrimRight(b.String(), "\n")}
}
