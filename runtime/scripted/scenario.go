package scripted

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/swarmdeck/swarmdeck/runtime/internal/yamlnode"
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

	roleLines map[string]int // where roles: names each role
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
		var se *ScenarioError
		if errors.As(err, &se) && se.Line > 0 {
			return nil, fmt.Errorf("scenario %s:%d: %s", path, se.Line, se.Msg)
		}
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	return sc, nil
}

// ScenarioError is a mistake in a scenario, at a line of it when known.
type ScenarioError struct {
	Line int // from 1; 0 when not known
	Msg  string
}

func (e *ScenarioError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d: %s", e.Line, e.Msg)
	}
	return e.Msg
}

// scenarioPathError is a mistake found in a decoded value, at its key path
// (roles.orchestrator[0].tool_calls[1]); ParseScenario finds its line.
type scenarioPathError struct {
	path []any // string keys and int indexes
	msg  string
}

func (e *scenarioPathError) Error() string { return pathText(e.path) + ": " + e.msg }

func pathText(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
}

func at(path []any, more ...any) []any {
	return append(append([]any(nil), path...), more...)
}

// goTypeWord says a Go type a value was decoded from or into as a person
// would.
func goTypeWord(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.HasPrefix(t, "scripted."):
		return "a mapping"
	case t == "string":
		return "text"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), strings.HasPrefix(t, "float"):
		return "a number"
	}
	return t
}

var yamlKindError = regexp.MustCompile(`^(\w+) was used where (\w+) is expected`)

func yamlKindWord(k string) string {
	switch k {
	case "sequence":
		return "a list"
	case "mapping":
		return "a mapping"
	}
	return k
}

var goDecodeError = regexp.MustCompile(`cannot unmarshal (.+?) into Go (?:struct field \S+|value) of type (.+)$`)

// decodeError turns a decoding error into one line at the line it names,
// without the source excerpt or Go's type names.
func decodeError(err error) error {
	var yerr yaml.Error
	if !errors.As(err, &yerr) {
		return &ScenarioError{Msg: strings.Join(strings.Fields(err.Error()), " ")}
	}
	line := 0
	if tk := yerr.GetToken(); tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	msg := yerr.GetMessage()
	if m := yamlKindError.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s where %s is expected", yamlKindWord(m[1]), yamlKindWord(m[2]))
	}
	if m := goDecodeError.FindStringSubmatch(msg); m != nil {
		msg = fmt.Sprintf("%s where %s is expected", goTypeWord(m[1]), goTypeWord(m[2]))
	}
	return &ScenarioError{Line: line, Msg: strings.Join(strings.Fields(msg), " ")}
}

// ParseScenario reads a scenario from YAML or JSON text. Its errors are
// *ScenarioError, with the line of the mistake when it has one.
func ParseScenario(data []byte) (Policy, error) {
	var f scenarioFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField(), yaml.UseOrderedMap()); err != nil {
		return nil, decodeError(err)
	}
	file, _ := parser.ParseBytes(data, 0)
	sc, err := compileScenario(&f)
	if err != nil {
		var pe *scenarioPathError
		if errors.As(err, &pe) {
			return nil, &ScenarioError{Line: yamlnode.LineAt(file, pe.path), Msg: pe.Error()}
		}
		return nil, &ScenarioError{Msg: err.Error()}
	}
	sc.roleLines = map[string]int{}
	for role := range sc.roles {
		sc.roleLines[role] = yamlnode.LineAt(file, []any{"roles", role})
	}
	return sc, nil
}

// CheckScenarioRoles refuses a scenario loaded from path whose roles:
// names a role that no agent has (known, besides sub-orchestrator): its
// steps would never be played, and the run would get the scenario's "no
// reply" answer instead, with nothing said at the start.
func CheckScenarioRoles(p Policy, path string, known []string) error {
	sc, ok := p.(*scenario)
	if !ok {
		return nil
	}
	var unknown []string
	for role := range sc.roles {
		if role != "sub-orchestrator" && !slices.Contains(known, role) {
			unknown = append(unknown, role)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	slices.Sort(unknown)
	role := unknown[0]
	where := "scenario " + path
	if line := sc.roleLines[role]; line > 0 {
		where += ":" + strconv.Itoa(line)
	}
	return fmt.Errorf("%s: roles.%s: no agent has the role %q; script one of %s, or sub-orchestrator (or give the steps under labels: by a session's label)",
		where, role, role, strings.Join(known, ", "))
}

func compileScenario(f *scenarioFile) (*scenario, error) {
	sc := &scenario{roles: map[string][]scenarioReply{}, labels: map[string][]scenarioReply{}, firings: map[string]int{}}
	convert := func(where []any, steps []scenarioStep) ([]scenarioReply, error) {
		out := make([]scenarioReply, len(steps))
		for i := range steps {
			r, err := steps[i].compile(at(where, i))
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	for role, steps := range f.Roles {
		r, err := convert([]any{"roles", role}, steps)
		if err != nil {
			return nil, err
		}
		sc.roles[role] = r
	}
	for label, steps := range f.Labels {
		r, err := convert([]any{"labels", label}, steps)
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
		r, err := one.in.compile([]any{one.where})
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

// orderedJSON encodes a value decoded with yaml.UseOrderedMap, each
// mapping's keys in the order the file gives them: a model's arguments
// come in its own order, and a shared context is shown in that order.
func orderedJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	var enc func(v any) error
	enc = func(v any) error {
		switch x := v.(type) {
		case yaml.MapSlice:
			b.WriteByte('{')
			for i, it := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				k, err := json.Marshal(fmt.Sprint(it.Key))
				if err != nil {
					return err
				}
				b.Write(k)
				b.WriteByte(':')
				if err := enc(it.Value); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		case []any:
			b.WriteByte('[')
			for i, e := range x {
				if i > 0 {
					b.WriteByte(',')
				}
				if err := enc(e); err != nil {
					return err
				}
			}
			b.WriteByte(']')
		default:
			j, err := json.Marshal(x)
			if err != nil {
				return err
			}
			b.Write(j)
		}
		return nil
	}
	if err := enc(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (st *scenarioStep) compile(where []any) (scenarioReply, error) {
	out := scenarioReply{reply: Reply{Content: st.Content}}
	for i, c := range st.ToolCalls {
		if c.Name == "" {
			return out, &scenarioPathError{at(where, "tool_calls", i), "name is required"}
		}
		args := json.RawMessage(`{}`)
		if c.Args != nil {
			b, err := orderedJSON(c.Args)
			if err != nil {
				return out, &scenarioPathError{at(where, "tool_calls", i, "args"), err.Error()}
			}
			if len(b) == 0 || b[0] != '{' {
				return out, &scenarioPathError{at(where, "tool_calls", i, "args"), fmt.Sprintf("must be an object, got %s", b)}
			}
			args = b
		}
		out.reply.ToolCalls = append(out.reply.ToolCalls, Call{Name: c.Name, Args: args})
	}
	if st.Fault != nil {
		f := st.Fault
		fault := &Fault{Status: f.Status, Body: f.Body, RetryAfterMs: f.RetryAfterMs, Truncate: f.Truncate}
		if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
			return out, &scenarioPathError{at(where, "fault", "status"), fmt.Sprintf("%d is not an error status (400-599)", f.Status)}
		}
		switch v := f.RetryAfter.(type) {
		case nil:
		case string:
			fault.RetryAfter = v
		case int, int64, uint64:
			fault.RetryAfter = fmt.Sprint(v)
		default:
			return out, &scenarioPathError{at(where, "fault", "retry_after"), fmt.Sprintf("give whole seconds (1) or an HTTP date (a string), not %v", v)}
		}
		if f.RetryAfterMs < 0 {
			return out, &scenarioPathError{at(where, "fault", "retry_after_ms"), fmt.Sprintf("%d is negative", f.RetryAfterMs)}
		}
		if f.Stall != "" {
			d, err := time.ParseDuration(f.Stall)
			if err != nil {
				return out, &scenarioPathError{at(where, "fault", "stall"), err.Error() + " (write it like 5s or 250ms)"}
			}
			if d < 0 {
				return out, &scenarioPathError{at(where, "fault", "stall"), f.Stall + " is negative"}
			}
			fault.Stall = d
		}
		if f.Times < -1 {
			return out, &scenarioPathError{at(where, "fault", "times"), fmt.Sprintf("%d: give how many times (1 or more), or -1 for always", f.Times)}
		}
		if fault.Status == 0 && !fault.Truncate && fault.Stall == 0 {
			return out, &scenarioPathError{at(where, "fault"), "set status, truncate or stall"}
		}
		out.reply.Fault = fault
		out.times = f.Times
		if out.times == 0 {
			out.times = 1
		}
	}
	if st.Content == "" && len(st.ToolCalls) == 0 && st.Fault == nil {
		return out, &scenarioPathError{where, "a step needs content, tool_calls or a fault"}
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
