package scripted

import (
	"encoding/json"
	"strings"
)

// session is the demo policy's reading of one conversation: who it is,
// what it was asked, what it did and what arrived since.
type session struct {
	identity
	req   *Request
	sys   string
	task  string // plain text of the first user message
	turns []turn // the session's assistant messages, in order
	items []item // injected items and plain user text after the task
}

// turn is one assistant message with its calls and their results.
type turn struct {
	content string
	calls   []made
}

type made struct {
	name   string
	args   string
	result string
	done   bool // a result arrived
}

func (m made) failed() bool { return resultError(m.result) != "" }

func readSession(req *Request, id identity) *session {
	s := &session{identity: id, req: req}
	msgs := req.Messages
	if len(msgs) > 0 && msgs[0].Role == "system" {
		s.sys = msgs[0].Content
	}
	fu := firstUser(msgs)
	byID := map[string]*made{}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case "assistant":
			t := turn{content: m.Content}
			for _, c := range m.ToolCalls {
				t.calls = append(t.calls, made{name: c.Name, args: c.Arguments})
			}
			s.turns = append(s.turns, t)
			last := &s.turns[len(s.turns)-1]
			for k, c := range m.ToolCalls {
				if c.ID != "" {
					byID[c.ID] = &last.calls[k]
				}
			}
		case "tool":
			if c := byID[m.ToolCallID]; c != nil && !c.done {
				c.result, c.done = m.Content, true
			} else if c := s.firstPending(); c != nil {
				// Some clients drop or rewrite ids; fall back to order.
				c.result, c.done = m.Content, true
			}
		case "user":
			if i == fu {
				for _, it := range parseItems(m.Content, len(s.turns), nil) {
					if it.tag == "" && s.task == "" {
						s.task = it.body
						continue
					}
					s.items = append(s.items, it)
				}
				continue
			}
			s.items = parseItems(m.Content, len(s.turns), s.items)
		}
	}
	return s
}

func (s *session) firstPending() *made {
	for i := range s.turns {
		for k := range s.turns[i].calls {
			if !s.turns[i].calls[k].done {
				return &s.turns[i].calls[k]
			}
		}
	}
	return nil
}

// turn is the number of the turn being answered, from 1.
func (s *session) turnNo() int { return len(s.turns) + 1 }

// offered reports whether the request offers a tool. A request listing no
// tools at all is taken to offer every tool: tests and hand-written requests
// often leave the list out.
func (s *session) offered(name string) bool {
	if len(s.req.Tools) == 0 {
		return true
	}
	for _, t := range s.req.Tools {
		if t == name {
			return true
		}
	}
	return false
}

func (s *session) filter(calls []Call) []Call {
	out := calls[:0]
	for _, c := range calls {
		if s.offered(c.Name) {
			out = append(out, c)
		}
	}
	return out
}

// toolTurns counts the assistant messages that called tools.
func (s *session) toolTurns() int {
	n := 0
	for _, t := range s.turns {
		if len(t.calls) > 0 {
			n++
		}
	}
	return n
}

// run replays a session's scripted steps against its history and returns
// the first step not yet taken, or false when all were. Each step builds its
// calls from what earlier steps returned; a step left with no calls (its
// tools are not offered, or what it needs failed) is skipped and leaves no
// trace, so the count of the session's tool-calling turns says how many
// steps were taken.
func (s *session) run(steps ...step) (Reply, bool) {
	taken := s.toolTurns()
	for _, st := range steps {
		narration, calls := st()
		if calls = s.filter(calls); len(calls) == 0 {
			continue
		}
		if taken > 0 {
			taken--
			continue
		}
		return Reply{Content: narration, ToolCalls: calls}, true
	}
	return Reply{}, false
}

// calls returns every call of a tool made so far, oldest first.
func (s *session) calls(name string) []made {
	var out []made
	for _, t := range s.turns {
		for _, c := range t.calls {
			if c.name == name {
				out = append(out, c)
			}
		}
	}
	return out
}

// called returns the first call of name whose arguments satisfy match.
func (s *session) called(name string, match func(args map[string]any) bool) (made, bool) {
	for _, c := range s.calls(name) {
		if match == nil || match(jsonObject(c.args)) {
			return c, true
		}
	}
	return made{}, false
}

// finished reports whether the session already gave a final answer: a
// reply without tool calls that was not a "waiting" note.
func (s *session) finished() (int, bool) {
	for i := len(s.turns) - 1; i >= 0; i-- {
		t := s.turns[i]
		if len(t.calls) == 0 && !strings.HasPrefix(t.content, waitingPrefix) {
			return i, true
		}
	}
	return 0, false
}

// itemsOf returns the injected items with a tag.
func (s *session) itemsOf(tag string) []item {
	var out []item
	for _, it := range s.items {
		if it.tag == tag {
			out = append(out, it)
		}
	}
	return out
}

// results returns the latest <task_result> of each child, by session id. A
// <run_resumed> note takes back the results before it of the children it
// names: they are running again, and will report anew.
func (s *session) results() map[string]item {
	out := map[string]item{}
	for _, it := range s.items {
		switch it.tag {
		case "task_result":
			out[it.attr("task_id")] = it
		case "run_resumed":
			for id := range out {
				if strings.Contains(it.body, id) {
					delete(out, id)
				}
			}
		}
	}
	return out
}

// humanWords returns what the human wrote to this session, arriving after
// the given number of assistant turns.
func (s *session) humanWords(after int) []string {
	var out []string
	for _, it := range s.items {
		if it.after >= after && (it.tag == "human_message" || it.tag == "human_broadcast") && it.body != "" {
			out = append(out, it.body)
		}
	}
	return out
}

// siblings lists the session's siblings from <sibling_tasks> tables and
// <new_sibling> announcements, itself excluded.
func (s *session) siblings() []sibling {
	var out []sibling
	seen := map[string]bool{s.taskID: true}
	add := func(sb sibling) {
		if sb.taskID == "" || seen[sb.taskID] || (s.label != "" && sb.label == s.label) {
			return
		}
		seen[sb.taskID] = true
		out = append(out, sb)
	}
	for _, it := range s.items {
		switch it.tag {
		case "sibling_tasks":
			for _, sb := range siblingRows(it.body) {
				add(sb)
			}
		case "new_sibling":
			agent, label := splitAgent(it.attr("agent"))
			add(sibling{taskID: it.attr("task_id"), agent: agent, label: label, title: it.attr("title")})
		}
	}
	return out
}

// goal is the run's goal as this session knows it: the shared context's
// projectGoal if there is one, else its own task.
func (s *session) goal() string {
	if g := sharedValue(s.sys, "projectGoal"); g != "" {
		return g
	}
	return s.task
}

// jsonObject decodes a JSON object, or returns nil.
func jsonObject(s string) map[string]any {
	var m map[string]any
	if s == "" || json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}

// resultError returns the "error" of a tool result, or "".
func resultError(res string) string {
	if !strings.Contains(res, `"error"`) {
		return ""
	}
	if e, ok := jsonObject(res)["error"].(string); ok {
		return e
	}
	return ""
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func list(m map[string]any, key string) []map[string]any {
	raw, _ := m[key].([]any)
	out := make([]map[string]any, 0, len(raw))
	for _, v := range raw {
		if o, ok := v.(map[string]any); ok {
			out = append(out, o)
		}
	}
	return out
}
