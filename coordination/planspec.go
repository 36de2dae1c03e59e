package coordination

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DepRef is one entry of a plan item's depends_on: either the 0-based index
// of an earlier item of the same create_task_plan call, or a task id.
type DepRef struct {
	Index   int    // meaningful when IsIndex
	ID      string // meaningful when !IsIndex
	IsIndex bool
}

// DepIndex refers to the task at 0-based position i of the plan being created.
func DepIndex(i int) DepRef { return DepRef{Index: i, IsIndex: true} }

// DepID refers to a task by id.
func DepID(id string) DepRef { return DepRef{ID: id} }

// String returns the reference as a model wrote it: 2 or "research".
func (d DepRef) String() string {
	if d.IsIndex {
		return strconv.Itoa(d.Index)
	}
	return strconv.Quote(d.ID)
}

// MarshalJSON encodes an index as a number and an id as a string.
func (d DepRef) MarshalJSON() ([]byte, error) {
	if d.IsIndex {
		return []byte(strconv.Itoa(d.Index)), nil
	}
	return jsonString(d.ID), nil
}

// UnmarshalJSON accepts a whole number (an index) or a string (an id).
func (d *DepRef) UnmarshalJSON(b []byte) error {
	ref, err := parseDepRef(b)
	if err != nil {
		return err
	}
	*d = ref
	return nil
}

func parseDepRef(raw []byte) (DepRef, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return DepRef{}, err
		}
		return DepID(s), nil
	}
	if len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9')) {
		s := string(raw)
		if n, err := strconv.ParseInt(s, 10, 32); err == nil {
			return DepIndex(int(n)), nil
		}
		// 2.0 or 1e1 are whole numbers a model may well produce.
		if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
			return DepIndex(int(f)), nil
		}
		return DepRef{}, fmt.Errorf("must be a whole-number task index, got %s", brief(raw))
	}
	return DepRef{}, fmt.Errorf("must be a task index (number) or task id (string), got %s", brief(raw))
}

// TaskSpec is one item of create_task_plan's tasks argument before ids are
// assigned and dependencies checked (that is NewPlan's job).
type TaskSpec struct {
	ID          string // optional; NewPlan assigns "t1", "t2", ... when empty
	Description string
	DependsOn   []DepRef
}

// UnmarshalJSON accepts a plain string (the description) or an object
// {id?, description, depends_on?}.
func (s *TaskSpec) UnmarshalJSON(b []byte) error {
	spec, err := parseTaskSpec(b)
	if err != nil {
		return err
	}
	*s = spec
	return nil
}

// ParseTaskSpecs parses create_task_plan's tasks argument: a JSON array
// whose items are strings or {id?, description, depends_on?: [number|string]}
// objects. Errors name the item, e.g. `tasks[2]: depends_on[0] must be a task
// index (number) or task id (string), got true`.
func ParseTaskSpecs(raw json.RawMessage) ([]TaskSpec, error) {
	if isNull(raw) {
		return nil, errors.New(`tasks is required: give a list like ["Research X", {"description": "Write Y", "depends_on": [0]}]`)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			return nil, fmt.Errorf(`tasks must be a JSON array of descriptions or {"description": ...} objects, got %s`, withArticle(typeErr.Value))
		}
		return nil, fmt.Errorf("tasks is not valid JSON: %w", err)
	}
	specs := make([]TaskSpec, 0, len(items))
	for i, item := range items {
		spec, err := parseTaskSpec(item)
		if err != nil {
			return nil, fmt.Errorf("tasks[%d]: %w", i, err)
		}
		specs = append(specs, spec)
	}
	return specs, nil
}

func parseTaskSpec(raw []byte) (TaskSpec, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return TaskSpec{}, err
		}
		return TaskSpec{Description: s}, nil
	}
	if len(raw) == 0 || raw[0] != '{' {
		return TaskSpec{}, fmt.Errorf(`expected a description (string) or an object like {"description": "...", "depends_on": [0]}, got %s`, brief(raw))
	}
	entries, err := decodeObject(raw)
	if err != nil {
		return TaskSpec{}, fmt.Errorf("the object %w", err)
	}
	var (
		spec    TaskSpec
		hasDesc bool
	)
	for _, e := range entries {
		switch e.Key {
		case "id":
			if string(e.Value) == "null" {
				continue
			}
			if e.Value[0] != '"' {
				return TaskSpec{}, fmt.Errorf(`id must be a string like "research", got %s`, brief(e.Value))
			}
			_ = json.Unmarshal(e.Value, &spec.ID) // validated by decodeObject
		case "description":
			if e.Value[0] != '"' {
				return TaskSpec{}, fmt.Errorf("description must be a string, got %s", brief(e.Value))
			}
			_ = json.Unmarshal(e.Value, &spec.Description)
			hasDesc = true
		case "depends_on":
			deps, err := parseDependsOn(e.Value)
			if err != nil {
				return TaskSpec{}, err
			}
			spec.DependsOn = deps
		default:
			return TaskSpec{}, fmt.Errorf("unknown field %q; the fields are id, description, depends_on", e.Key)
		}
	}
	if !hasDesc {
		return TaskSpec{}, errors.New(`description is required, e.g. {"description": "Write the report"}`)
	}
	return spec, nil
}

func parseDependsOn(raw json.RawMessage) ([]DepRef, error) {
	switch raw[0] {
	case 'n': // null
		return nil, nil
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		// A lone reference instead of a list is a common slip; accept it.
		ref, err := parseDepRef(raw)
		if err != nil {
			return nil, fmt.Errorf("depends_on %w", err)
		}
		return []DepRef{ref}, nil
	case '[':
	default:
		return nil, fmt.Errorf("depends_on must be a list of task indexes or ids, got %s", brief(raw))
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("depends_on: %w", err)
	}
	var deps []DepRef
	for j, item := range items {
		ref, err := parseDepRef(item)
		if err != nil {
			return nil, fmt.Errorf("depends_on[%d] %w", j, err)
		}
		deps = append(deps, ref)
	}
	return deps, nil
}

// brief shows a JSON value in an error, cut short if long.
func brief(raw []byte) string {
	const limit = 40
	s := string(bytes.TrimSpace(raw))
	if s == "" {
		return "nothing"
	}
	if len(s) > limit {
		cut := limit
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// validTaskID reports whether id is 1-64 letters, digits, '_', '-' or '.'.
func validTaskID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c == '_' || c == '-' || c == '.' ||
			('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

// looksLikeIndex reports whether an unknown id is probably a quoted index.
func looksLikeIndex(id string) bool {
	_, err := strconv.Atoi(strings.TrimSpace(id))
	return err == nil
}

// withArticle turns encoding/json's type names into words for an error.
func withArticle(jsonType string) string {
	switch jsonType {
	case "object", "array":
		return "an " + jsonType
	case "bool":
		return "a boolean"
	case "":
		return "something else"
	}
	return "a " + jsonType
}
