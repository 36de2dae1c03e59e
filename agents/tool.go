// Package agents owns what the agents of a swarm are and what they can do:
// the roster of roles, the tools with their JSON schemas, descriptions and
// handlers, tool groups and per-role permissions.
//
// Handlers decode and check arguments, then act through Host, which the
// runtime implements for each session. They never see the store or the
// network directly.
package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/swarmdeck/swarmdeck/runtime/llm"
)

// Tool groups (config `tools:` per role).
const (
	GroupSpawn      = "spawn"
	GroupTasks      = "tasks"
	GroupBroadcasts = "broadcasts"
	GroupPlanning   = "planning"
	GroupDelegation = "delegation"
	GroupQuestions  = "questions"
	GroupContext    = "context"
	GroupWorkspace  = "workspace"
)

// Handler runs one call. It returns a value encoded as the JSON tool result,
// or an error that the model receives as {"error": "<tool name>: ..."}; the
// runtime adds the name, so a message need not begin with it.
type Handler func(ctx context.Context, c *Call, args json.RawMessage) (any, error)

// Tool is one function a model may call.
type Tool struct {
	Name        string
	Group       string
	Description string
	Schema      *Schema
	// Write marks tools that change the workspace: only roles allowed to
	// write get them.
	Write bool
	// Blocking marks tools that may wait a long time (for children, the
	// human): the runtime releases the session's concurrency slot meanwhile.
	Blocking bool
	// Pure marks tools that only read: running one again after a crash is
	// harmless, so the runtime may store the call and its result together
	// after the fact instead of recording the call first.
	Pure bool
	// ResultIsEffect marks tools whose answer is exactly the recorded
	// result of their one side effect: the runtime stores the answer in the
	// same commit as the effect.
	ResultIsEffect bool
	Handler        Handler

	params json.RawMessage
}

// Spec is the tool as offered to a model.
func (t *Tool) Spec() llm.Tool {
	return llm.Tool{Name: t.Name, Description: t.Description, Parameters: t.params}
}

// Call is one tool call in flight.
type Call struct {
	ID   string
	Name string
	Host Host
	// MaxOutput is how many characters of the result's JSON the runtime
	// keeps in the history (0: no bound); a tool that can return less,
	// and say where the rest starts, does better than the runtime's cut.
	MaxOutput int
}

// Error is a tool error the model can act on.
type Error struct{ Msg string }

func (e *Error) Error() string { return e.Msg }

// Errorf builds a tool error.
func Errorf(format string, args ...any) error { return &Error{fmt.Sprintf(format, args...)} }

// IsToolError reports whether err is meant for the model (bad arguments, a
// refused action) rather than a failure of swarmdeck itself.
func IsToolError(err error) bool {
	var te *Error
	var ae *ArgError
	return errors.As(err, &te) || errors.As(err, &ae)
}

// Registry holds every tool by name.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*Tool
	order []string
}

// NewRegistry returns a registry holding all of swarmdeck's tools.
func NewRegistry() *Registry {
	r := &Registry{tools: map[string]*Tool{}}
	for _, t := range allTools() {
		r.MustAdd(t)
	}
	return r
}

// MustAdd registers a tool; schema errors are programming errors.
func (r *Registry) MustAdd(t *Tool) {
	if err := r.Add(t); err != nil {
		panic(err)
	}
}

// Add registers a copy of a tool (the definitions are shared by every
// registry).
func (r *Registry) Add(def *Tool) error {
	t := *def
	if t.Schema == nil {
		return fmt.Errorf("tool %s: no schema", t.Name)
	}
	params, err := json.Marshal(t.Schema)
	if err != nil {
		return fmt.Errorf("tool %s: %w", t.Name, err)
	}
	t.params = params
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.tools[t.Name]; dup {
		return fmt.Errorf("tool %s registered twice", t.Name)
	}
	r.tools[t.Name] = &t
	r.order = append(r.order, t.Name)
	return nil
}

// Get finds a tool by name.
func (r *Registry) Get(name string) (*Tool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// Names lists the registered tools in registration order.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]string(nil), r.order...)
}

// ForGroups returns the tools of the given groups, in registration order,
// leaving out write tools unless canWrite.
func (r *Registry) ForGroups(groups map[string]bool, canWrite bool) []*Tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	var out []*Tool
	for _, name := range r.order {
		t := r.tools[name]
		if !groups[t.Group] || (t.Write && !canWrite) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// Run checks the arguments of a call and runs its handler.
func (t *Tool) Run(ctx context.Context, c *Call, rawArgs string) (any, error) {
	args, err := t.Schema.Normalize([]byte(rawArgs))
	if err != nil {
		return nil, err
	}
	return t.Handler(ctx, c, args)
}

// decode unmarshals normalized arguments into a struct.
func decode(args json.RawMessage, v any) error {
	if err := json.Unmarshal(args, v); err != nil {
		return &ArgError{fmt.Sprintf("arguments do not fit this tool: %v", err)}
	}
	return nil
}

// UnknownTool words the error for a call to a tool the session lacks.
func UnknownTool(name string, available []*Tool) error {
	names := make([]string, 0, len(available))
	for _, t := range available {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return Errorf("there is no tool named %q available to you; your tools are: %v", name, names)
}

// MustSchema parses a schema written as JSON text and panics on a mistake:
// schemas are part of the program, not input.
func MustSchema(text string) *Schema { return mustSchema(text) }
