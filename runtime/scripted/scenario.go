package scripted

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
)

// A scenario file scripts the scripted model by role and turn, in YAML or
// JSON (YAML being a superset of JSON, one parser reads both):
//
//	roles:
//	  orchestrator:
//	    - tool_calls:
//	        - name: sessions_spawn
//	          args: {task: "Look around", agent: explorer}
//	    - content: done
//	  explorer:
//	    - fault: {status: 503, retry_after: "1"}   # once, then the step's reply
//	      content: looked around
//	  sub-orchestrator:  # optional: sessions started by delegate_task
//	    - content: checklist ready
//	labels:            # optional, by the session's label; wins over roles
//	  writer: [{content: "a draft"}]
//	shadow: {content: "I'd pick a."}   # optional, for shadow responders
//	default: {content: ok}             # any turn not scripted above
//
// Turn n of a session (counted from its assistant messages, so a resumed
// session continues) gets step n of its list. A fault is served the first
// `times` times (default 1, -1 for always) a session reaches its step; after
// that the step's content and tool calls are the reply, so a retrying client
// gets through. Fault fields: status, body, retry_after, retry_after_ms,
// truncate (end the stream before the finish chunk), stall (a duration to
// pause after the first chunk).

type scenarioFile struct {
	Roles   map[string][]scenarioStep `yaml:"roles"`
	Labels  map[string][]scenarioStep `yaml:"labels"`
	Shadow  *scenarioStep             `yaml:"shadow"`
	Default *scenarioStep             `yaml:"default"`
}

type scenarioStep struct {
	Content   string         `yaml:"content"`
	ToolCalls []scenarioCall `yaml:"tool_calls"`
	Fault     *scenarioFault `yaml:"fault"`
}

type scenarioCall struct {
	Name string `yaml:"name"`
	Args any    `yaml:"args"`
}

type scenarioFault struct {
	Status       int    `yaml:"status"`
	Body         string `yaml:"body"`
	RetryAfter   any    `yaml:"retry_after"` // "1" or 1
	RetryAfterMs int    `yaml:"retry_after_ms"`
	Truncate     bool   `yaml:"truncate"`
	Stall        string `yaml:"stall"`
	Times        int    `yaml:"times"`
}

// step is a validated scenario step.
type scenarioReply struct {
	reply Reply
	times int // how often the fault fires; -1 always
}

type scenario struct {
	roles   map[string][]scenarioReply
	labels  map[string][]scenarioReply
	shadow  *scenarioReply
	def     *scenarioReply
	mu      sync.Mutex
	firings map[string]int // fault key -> times served
}

// LoadScenario reads a scenario file (YAML or JSON) into a policy. Errors
// name the file and, for syntax errors, the line and column.
func LoadScenario(path string) (Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	sc, err := ParseScenario(data)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return sc, nil
}

// ParseScenario reads a scenario from YAML or JSON text.
func ParseScenario(data []byte) (Policy, error) {
	var f scenarioFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, errors.New(yaml.FormatError(err, false, true))
	}
	sc := &scenario{roles: map[string][]scenarioReply{}, labels: map[string][]scenarioReply{}, firings: map[string]int{}}
	convert := func(where string, steps []scenarioStep) ([]scenarioReply, error) {
		out := make([]scenarioReply, len(steps))
		for i := range steps {
			r, err := steps[i].compile(fmt.Sprintf("%s[%d]", where, i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	for role, steps := range f.Roles {
		r, err := convert("roles."+role, steps)
		if err != nil {
			return nil, err
		}
		sc.roles[role] = r
	}
	for label, steps := range f.Labels {
		r, err := convert("labels."+label, steps)
		if err != nil {
			return nil, err
		}
		sc.labels[label] = r
	}
	for _, one := range []struct {
		where string
		in    *scenarioStep
		out   **scenarioReply
	}{{"shadow", f.Shadow, &sc.shadow}, {"default", f.Default, &sc.def}} {
		if one.in == nil {
			continue
		}
		r, err := one.in.compile(one.where)
		if err != nil {
			return nil, err
		}
		*one.out = &r
	}
	if len(sc.roles) == 0 && len(sc.labels) == 0 && sc.def == nil && sc.shadow == nil {
		return nil, errors.New("no replies: add roles, labels or default")
	}
	return sc, nil
}

func (st *scenarioStep) compile(where string) (scenarioReply, error) {
	out := scenarioReply{reply: Reply{Content: st.Content}}
	for i, c := range st.ToolCalls {
		if c.Name == "" {
			return out, fmt.Errorf("%s.tool_calls[%d]: name is required", where, i)
		}
		args := json.RawMessage(`{}`)
		if c.Args != nil {
			b, err := json.Marshal(c.Args)
			if err != nil {
				return out, fmt.Errorf("%s.tool_calls[%d].args: %w", where, i, err)
			}
			if len(b) == 0 || b[0] != '{' {
				return out, fmt.Errorf("%s.tool_calls[%d].args: must be an object, got %s", where, i, b)
			}
			args = b
		}
		out.reply.ToolCalls = append(out.reply.ToolCalls, Call{Name: c.Name, Args: args})
	}
	if st.Fault != nil {
		f := st.Fault
		fault := &Fault{Status: f.Status, Body: f.Body, RetryAfterMs: f.RetryAfterMs, Truncate: f.Truncate}
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return out, fmt.Errorf("%s.fault.status: %d is not an error status (400-599)", where, f.Status)
		}
		switch v := f.RetryAfter.(type) {
		case nil:
		case string:
			fault.RetryAfter = v
		default:
			fault.RetryAfter = fmt.Sprint(v)
		}
		if f.Stall != "" {
			d, err := time.ParseDuration(f.Stall)
			if err != nil {
				return out, fmt.Errorf("%s.fault.stall: %w (write it like 5s or 250ms)", where, err)
			}
			fault.Stall = d
		}
		if fault.Status == 0 && !fault.Truncate && fault.Stall == 0 {
			return out, fmt.Errorf("%s.fault: set status, truncate or stall", where)
		}
		out.reply.Fault = fault
		out.times = f.Times
		if out.times == 0 {
			out.times = 1
		}
	}
	if st.Content == "" && len(st.ToolCalls) == 0 && st.Fault == nil {
		return out, fmt.Errorf("%s: a step needs content, tool_calls or a fault", where)
	}
	return out, nil
}

// Reply implements Policy.
func (sc *scenario) Reply(req *Request) Reply {
	id := identify(req)
	turn := assistantTurns(req.Messages)
	var step *scenarioReply
	key := ""
	switch {
	case id.shadowFor != "":
		step = sc.shadow
		if step == nil {
			step = sc.def
		}
		key = "shadow/" + id.shadowFor + "/" + strconv.FormatUint(uint64(hashString(lastUserText(req.Messages))), 16)
	default:
		steps, ok := sc.labels[id.label]
		if !ok || id.label == "" {
			steps, ok = sc.roles["sub-orchestrator"]
			if !ok || !id.delegated {
				steps = sc.roles[id.role]
			}
		}
		if turn < len(steps) {
			step = &steps[turn]
		} else {
			step = sc.def
		}
		key = sessionKey(id, req) + "/" + strconv.Itoa(turn)
	}
	if step == nil {
		who := id.role
		if who == "" {
			who = "a session without a role"
		}
		return Reply{Content: fmt.Sprintf("%s The scenario has no reply for %s at turn %d and no default.", Prefix, who, turn+1)}
	}
	rep := step.reply
	if rep.Fault != nil {
		sc.mu.Lock()
		n := sc.firings[key]
		fire := step.times < 0 || n < step.times
		if fire {
			sc.firings[key] = n + 1
		}
		sc.mu.Unlock()
		if !fire {
			rep.Fault = nil
		}
	}
	return rep
}

// sessionKey tells sessions apart for counting faults: by task id when the
// prompt has one, else by the prompt and the first user message.
func sessionKey(id identity, req *Request) string {
	if id.taskID != "" {
		return id.role + "/" + id.taskID
	}
	h := uint32(0)
	for _, m := range req.Messages {
		if m.Role == "system" || m.Role == "user" {
			h = h*31 + hashString(m.Content)
			if m.Role == "user" {
				break
			}
		}
	}
	return id.role + "/" + strings.ToLower(id.label) + "/" + strconv.FormatUint(uint64(h), 16)
}
