package scripted

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// Policy decides the scripted model's reply to one chat completion request.
// Policies are pure functions of the conversation: everything they need
// (which tools were called, what came back, what was injected) is in the
// messages, so a resumed run continues where it stopped. The server calls
// Reply concurrently, one goroutine per request.
type Policy interface {
	Reply(req *Request) Reply
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc func(req *Request) Reply

// Reply implements Policy.
func (f PolicyFunc) Reply(req *Request) Reply { return f(req) }

// Request is the part of a chat completion request a policy sees.
type Request struct {
	Messages []Message
	Tools    []string // names of the tools offered
	Model    string
}

// Message is one decoded chat message.
type Message struct {
	Role       string
	Content    string // text parts of a multi-part content are concatenated
	ToolCalls  []ToolCall
	ToolCallID string
	Name       string
}

// ToolCall is one call of an assistant message, as the client sent it back.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string // JSON text
}

// Reply is what the scripted model answers: text, tool calls or both, or a
// fault instead of an answer.
type Reply struct {
	Content   string
	ToolCalls []Call
	Fault     *Fault
}

// Call is one tool call to make. Args is a json.RawMessage (sent verbatim) or
// any value encoding/json can marshal into an object; nil means {}.
type Call struct {
	Name string
	Args any
}

// Fault makes the server misbehave the way real servers do, so the client's
// retry and truncation handling can be tested end to end.
type Fault struct {
	Status       int           // answer with this HTTP status instead of a reply
	Body         string        // body for Status; default an OpenAI-style error
	RetryAfter   string        // Retry-After header for Status
	RetryAfterMs int           // retry-after-ms header for Status
	Truncate     bool          // end the stream before the finish chunk (no finish_reason, usage or [DONE])
	Stall        time.Duration // pause this long after the first chunk
}

// Prefix starts every text the built-in policies write, so nobody mistakes
// the scripted model's words for a real model's.
const Prefix = "[scripted model]"

// ModelID is the only model the server lists and the one it reports.
const ModelID = "swarmdeck-scripted"

// Recognised first lines of system prompts (see the prompts package).
const (
	rolePrefix     = "You are the "
	roleSuffix     = " agent of a swarmdeck swarm."
	shadowPrefix   = "You are answering a question on behalf of "
	shadowSuffix   = ", another agent of a swarmdeck swarm."
	delegatedLine  = "You are a sub-orchestrator working on a delegated task."
	taskIDPrefix   = "Your task id: "
	labelPrefix    = "Your label: "
	sharedCtxBlock = "[Shared Context]:"
)

// identity is who a request's session is, read from its system prompt.
type identity struct {
	role      string // "" when the prompt names no role
	shadowFor string // set for shadow-responder requests
	delegated bool
	taskID    string
	label     string
}

func identify(req *Request) identity {
	var id identity
	if len(req.Messages) == 0 || req.Messages[0].Role != "system" {
		return id
	}
	sys := req.Messages[0].Content
	first, rest, _ := strings.Cut(strings.TrimLeft(sys, " \t\r\n\ufeff"), "\n")
	first = strings.TrimSpace(first)
	if r, ok := strings.CutPrefix(first, rolePrefix); ok {
		if r, ok := strings.CutSuffix(r, roleSuffix); ok {
			id.role = r
		}
	} else if a, ok := strings.CutPrefix(first, shadowPrefix); ok {
		if a, ok := strings.CutSuffix(a, shadowSuffix); ok {
			id.shadowFor = a
		}
		return id
	}
	if id.role == "" {
		return id
	}
	id.delegated = strings.Contains(rest, delegatedLine)
	id.taskID = lineValue(rest, taskIDPrefix)
	id.label = lineValue(rest, labelPrefix)
	return id
}

// lineValue returns the rest of the first line starting with prefix.
func lineValue(s, prefix string) string {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], prefix)
		if j < 0 {
			return ""
		}
		j += i
		if j == 0 || s[j-1] == '\n' {
			v := s[j+len(prefix):]
			if k := strings.IndexByte(v, '\n'); k >= 0 {
				v = v[:k]
			}
			return strings.TrimSpace(v)
		}
		i = j + len(prefix)
	}
	return ""
}

// sharedValue reads one key of the "[Shared Context]:" block of a system
// prompt, whose lines are `- key: <JSON value>`. Strings come back decoded,
// other values as JSON text.
func sharedValue(sys, key string) string {
	i := strings.Index(sys, sharedCtxBlock)
	if i < 0 {
		return ""
	}
	v := lineValue(sys[i:], "- "+key+": ")
	if strings.HasPrefix(v, `"`) {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
	}
	return v
}

// firstUser returns the index of the first user message, or -1.
func firstUser(msgs []Message) int {
	for i, m := range msgs {
		if m.Role == "user" {
			return i
		}
	}
	return -1
}

// assistantTurns counts the session's own turns so far.
func assistantTurns(msgs []Message) int {
	n := 0
	for i := range msgs {
		if msgs[i].Role == "assistant" {
			n++
		}
	}
	return n
}

// lastUserText returns the plain text of the latest user message.
func lastUserText(msgs []Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Content
		}
	}
	return ""
}

// plainReply answers a request with no recognisable role.
func plainReply(req *Request) Reply {
	said := textcut.OneLine(plainOf(lastUserText(req.Messages)), 80)
	if said == "" {
		return Reply{Content: Prefix + " Hello from swarmdeck's scripted model: it runs offline and answers from a script."}
	}
	return Reply{Content: Prefix + " This is swarmdeck's offline scripted model, so this is a canned reply to: \"" + said + "\"."}
}

// shadowReply answers a question on behalf of another agent in one or two
// sentences, picking one of the listed options if there are any.
func shadowReply(req *Request, agent string) Reply {
	var opts []option
	for i := len(req.Messages) - 1; i >= 0 && len(opts) == 0; i-- {
		if m := req.Messages[i]; m.Role == "user" || m.Role == "system" {
			opts = parseOptions(m.Content)
		}
	}
	if len(opts) > 0 {
		o := opts[int(hashString(agent)%uint32(len(opts)))]
		return Reply{Content: Prefix + " I'd pick " + o.id + " (" + o.label + "): it fits " + agent +
			"'s current work and leaves time to finish it properly."}
	}
	return Reply{Content: Prefix + " " + agent + " has no objection and nothing blocking; go ahead as proposed."}
}

type option struct{ id, label string }

// parseOptions reads the choices listed after an "Options" line, one per
// line as "a: Next week", "- a: Next week" or "a) Next week".
func parseOptions(s string) []option {
	i := strings.Index(s, "ptions")
	if i < 0 {
		return nil
	}
	rest := s[i:]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[j+1:]
	} else {
		return nil
	}
	var opts []option
	for line := range strings.Lines(rest) {
		line = strings.TrimSpace(line)
		line = strings.TrimLeft(line, "-* ")
		if line == "" {
			if len(opts) > 0 {
				break
			}
			continue
		}
		k := strings.IndexAny(line, ":)")
		if k <= 0 || k > 12 || strings.ContainsAny(line[:k], " \t") {
			break
		}
		opts = append(opts, option{id: line[:k], label: strings.TrimSpace(line[k+1:])})
	}
	return opts
}

// hashString is FNV-1a: a cheap, stable way to vary canned text by name.
func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// unlabel removes the scripted-model prefix from a text quoted in another.
func unlabel(s string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(s), Prefix))
}
