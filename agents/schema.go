package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Schema is the subset of JSON Schema that tool parameters use: enough to
// describe every tool to a model and to check its arguments with messages a
// model can act on.
type Schema struct {
	Type        any                `json:"type,omitempty"` // a string, or a list of strings
	Description string             `json:"description,omitempty"`
	Properties  map[string]*Schema `json:"properties,omitempty"`
	Required    []string           `json:"required,omitempty"`
	Items       *Schema            `json:"items,omitempty"`
	Enum        []any              `json:"enum,omitempty"`
	MaxLength   *int               `json:"maxLength,omitempty"`
	MinLength   *int               `json:"minLength,omitempty"`
	MaxItems    *int               `json:"maxItems,omitempty"`
	Minimum     *float64           `json:"minimum,omitempty"`
	Maximum     *float64           `json:"maximum,omitempty"`
	AnyOf       []*Schema          `json:"anyOf,omitempty"`
	Default     any                `json:"default,omitempty"`
	// AdditionalProperties false rejects unknown keys; object schemas
	// without properties (free-form objects) leave it unset.
	AdditionalProperties *bool `json:"additionalProperties,omitempty"`
}

// ParseSchema reads a schema written as JSON text.
func ParseSchema(text string) (*Schema, error) {
	var s Schema
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Schema) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		out := make([]string, 0, len(t))
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

// ArgError is a problem with a tool call's arguments, worded for the model.
type ArgError struct{ Msg string }

// maxExactInt is the largest whole number a float64 holds exactly (2^53-1),
// and so the largest an integer argument may be: past it, 9007199254740993
// reads as 9007199254740992, and 2^63 does not fit an int64 at all.
const maxExactInt = 1<<53 - 1

func (e *ArgError) Error() string { return e.Msg }

// MaxArgBytes bounds the argument text a tool accepts.
const MaxArgBytes = 1 << 20

// Normalize checks raw arguments against s and returns them as canonical
// JSON. It is lenient where models commonly slip and the intent is plain:
// "" means {}, a number or boolean sent as a string is converted, a number
// or boolean where a string is expected is taken as its text (task ids such
// as 3 are often sent so), and a single value where an array is expected
// is wrapped. Other wrong types are errors.
func (s *Schema) Normalize(raw []byte) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if len(raw) > MaxArgBytes {
		return nil, &ArgError{fmt.Sprintf("arguments are %d bytes; the limit is %d (1 MiB): send less in one call (a long file can be written in parts: write_file for its start, then edit_file to add the rest after its last lines)", len(raw), MaxArgBytes)}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, &ArgError{fmt.Sprintf("arguments are not valid JSON (%s): send one JSON object, e.g. %s", jsonErr(err, raw), s.example())}
	}
	if dec.More() {
		return nil, &ArgError{"arguments hold more than one JSON value: send exactly one JSON object"}
	}
	// Some models double-encode: the arguments are a JSON string holding the object.
	if str, ok := v.(string); ok {
		var inner any
		d2 := json.NewDecoder(strings.NewReader(str))
		d2.UseNumber()
		if d2.Decode(&inner) == nil {
			v = inner
			raw = []byte(str)
		}
	}
	v, err := s.check("", v, true)
	if err != nil {
		return nil, err
	}
	v = keepFreeForm(s, raw, v)
	out, err := json.Marshal(v)
	if err != nil {
		return nil, &ArgError{err.Error()}
	}
	return out, nil
}

// keepFreeForm puts back the original JSON text of every free-form object
// (an object schema that declares no properties, such as sharedContext):
// re-encoding the decoded map would sort its keys, and a shared context
// keeps its keys in the order the model gave them. doc is v's JSON text.
func keepFreeForm(s *Schema, doc []byte, v any) any {
	obj, ok := v.(map[string]any)
	if !ok || s == nil || len(s.AnyOf) > 0 {
		return v
	}
	if s.Properties == nil {
		return json.RawMessage(bytes.TrimSpace(doc))
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(doc, &fields) != nil {
		return v
	}
	for k, val := range obj {
		if p, ok := s.Properties[k]; ok && fields[k] != nil {
			obj[k] = keepFreeForm(p, fields[k], val)
		}
	}
	return obj
}

func jsonErr(err error, raw []byte) string {
	if se, ok := err.(*json.SyntaxError); ok {
		return fmt.Sprintf("%s at byte %d", se.Error(), se.Offset)
	}
	if err.Error() == "EOF" || strings.Contains(err.Error(), "unexpected EOF") {
		return "the text ends before the JSON is complete"
	}
	return err.Error()
}

func (s *Schema) example() string {
	if len(s.Required) == 0 {
		return "{}"
	}
	parts := make([]string, 0, len(s.Required))
	for _, name := range s.Required {
		p := s.Properties[name]
		val := `"..."`
		if p != nil {
			if ts := p.types(); len(ts) > 0 {
				switch ts[0] {
				case "array":
					val = `["..."]`
				case "object":
					val = `{}`
				case "integer", "number":
					val = `1`
				case "boolean":
					val = `true`
				}
			}
		}
		parts = append(parts, strconv.Quote(name)+": "+val)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func where(path string) string {
	if path == "" {
		return "arguments"
	}
	return "argument " + strconv.Quote(path)
}

func kindOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return "a number"
		}
		return "an integer"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// check validates v. lenient allows the forgiving conversions; anyOf tries
// every alternative strictly before any leniently, so that a value is not
// "repaired" into one form when it fails another for a real reason.
func (s *Schema) check(path string, v any, lenient bool) (any, error) {
	if len(s.AnyOf) > 0 {
		var msgs []string
		for _, alt := range s.AnyOf {
			out, err := alt.check(path, v, false)
			if err == nil {
				return out, nil
			}
			msgs = append(msgs, err.Error())
		}
		if lenient {
			for _, alt := range s.AnyOf {
				if out, err := alt.check(path, v, true); err == nil && !wrapsScalar(alt, v) {
					return out, nil
				}
			}
		}
		return nil, &ArgError{fmt.Sprintf("%s does not match any accepted form: %s", where(path), strings.Join(msgs, "; or "))}
	}
	ts := s.types()
	if len(ts) == 0 {
		return v, nil
	}
	var firstErr error
	for _, t := range ts {
		out, err := s.checkType(path, t, v, lenient)
		if err == nil {
			return out, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if len(ts) > 1 {
		return nil, &ArgError{fmt.Sprintf("%s must be %s, got %s", where(path), strings.Join(ts, " or "), kindOf(v))}
	}
	return nil, firstErr
}

func (s *Schema) checkType(path, t string, v any, lenient bool) (any, error) {
	switch t {
	case "object":
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &ArgError{fmt.Sprintf("%s must be a JSON object, got %s", where(path), kindOf(v))}
		}
		return s.checkObject(path, obj, lenient)
	case "array":
		arr, ok := v.([]any)
		if !ok {
			if v == nil || !lenient {
				return nil, &ArgError{fmt.Sprintf("%s must be an array, got %s", where(path), kindOf(v))}
			}
			// A lone value where a list is expected: take it as a list of one.
			arr = []any{v}
		}
		if s.MaxItems != nil && len(arr) > *s.MaxItems {
			return nil, &ArgError{fmt.Sprintf("%s has %d items; the limit is %d", where(path), len(arr), *s.MaxItems)}
		}
		if s.Items != nil {
			for i, item := range arr {
				out, err := s.Items.check(fmt.Sprintf("%s[%d]", path, i), item, lenient)
				if err != nil {
					return nil, err
				}
				arr[i] = out
			}
		}
		return arr, nil
	case "string":
		str, ok := v.(string)
		if !ok && !lenient {
			return nil, &ArgError{fmt.Sprintf("%s must be a string, got %s", where(path), kindOf(v))}
		}
		if !ok {
			switch x := v.(type) {
			case json.Number:
				str = string(x)
			case bool:
				str = strconv.FormatBool(x)
			default:
				return nil, &ArgError{fmt.Sprintf("%s must be a string, got %s", where(path), kindOf(v))}
			}
		}
		n := utf8.RuneCountInString(str)
		if s.MaxLength != nil && n > *s.MaxLength {
			return nil, &ArgError{fmt.Sprintf("%s is %d characters; the limit is %d — shorten it", where(path), n, *s.MaxLength)}
		}
		if s.MinLength != nil && n < *s.MinLength {
			if n == 0 {
				return nil, &ArgError{fmt.Sprintf("%s must not be empty", where(path))}
			}
			return nil, &ArgError{fmt.Sprintf("%s must be at least %d characters", where(path), *s.MinLength)}
		}
		if len(s.Enum) > 0 && !inEnum(s.Enum, str) {
			return nil, &ArgError{fmt.Sprintf("%s is %q; it must be one of %s", where(path), str, enumList(s.Enum))}
		}
		return str, nil
	case "integer", "number":
		var num json.Number
		switch x := v.(type) {
		case json.Number:
			num = x
		case string:
			if !lenient {
				return nil, &ArgError{fmt.Sprintf("%s must be %s, got a string", where(path), article(t))}
			}
			num = json.Number(strings.TrimSpace(x))
		default:
			return nil, &ArgError{fmt.Sprintf("%s must be %s, got %s", where(path), article(t), kindOf(v))}
		}
		f, err := num.Float64()
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			what := article(t)
			if s.Description != "" {
				// The description carries the unit ("Seconds to wait"),
				// which "30s" shows the model did not take in.
				what += " (" + strings.TrimSuffix(s.Description, ".") + ")"
			}
			return nil, &ArgError{fmt.Sprintf("%s must be %s, got %q", where(path), what, string(num))}
		}
		// Past float64's range (1e400) f is infinite: the bounds, where the
		// schema has them, say what is allowed.
		if s.Minimum != nil && f < *s.Minimum {
			return nil, &ArgError{fmt.Sprintf("%s must be at least %v, got %s", where(path), *s.Minimum, string(num))}
		}
		if s.Maximum != nil && f > *s.Maximum {
			return nil, &ArgError{fmt.Sprintf("%s must be at most %v, got %s", where(path), *s.Maximum, string(num))}
		}
		switch {
		case t == "integer" && math.Abs(f) > maxExactInt:
			return nil, &ArgError{fmt.Sprintf("%s is out of range, got %s; it must be between %d and %d", where(path), string(num), -maxExactInt, maxExactInt)}
		case math.IsInf(f, 0):
			return nil, &ArgError{fmt.Sprintf("%s is out of range, got %s", where(path), string(num))}
		}
		if t == "integer" && f != math.Trunc(f) {
			return nil, &ArgError{fmt.Sprintf("%s must be a whole number, got %s", where(path), string(num))}
		}
		if t == "integer" {
			return json.Number(strconv.FormatInt(int64(f), 10)), nil
		}
		return num, nil
	case "boolean":
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			if !lenient {
				break
			}
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true", "yes", "1":
				return true, nil
			case "false", "no", "0", "":
				return false, nil
			}
		case json.Number:
			if lenient && (x == "0" || x == "1") {
				return x == "1", nil
			}
		}
		return nil, &ArgError{fmt.Sprintf("%s must be true or false, got %s", where(path), kindOf(v))}
	case "null":
		if v == nil {
			return nil, nil
		}
		return nil, &ArgError{fmt.Sprintf("%s must be null", where(path))}
	}
	return v, nil
}

func article(t string) string {
	if t == "integer" {
		return "an integer"
	}
	return "a number"
}

func (s *Schema) checkObject(path string, obj map[string]any, lenient bool) (any, error) {
	for _, name := range s.Required {
		if v, ok := obj[name]; !ok || v == nil {
			return nil, &ArgError{fmt.Sprintf("missing required %s: send %s", where(join(path, name)), s.example())}
		}
	}
	if s.AdditionalProperties != nil && !*s.AdditionalProperties {
		for k := range obj {
			if _, ok := s.Properties[k]; !ok {
				if len(s.Properties) == 0 && path == "" {
					return nil, &ArgError{fmt.Sprintf("unknown %s; this tool takes no arguments: call it with {}", where(join(path, k)))}
				}
				return nil, &ArgError{fmt.Sprintf("unknown %s; valid arguments are: %s", where(join(path, k)), s.propertyList())}
			}
		}
	}
	for k, v := range obj {
		p, ok := s.Properties[k]
		if !ok {
			continue
		}
		if v == nil {
			// An explicit null for an optional argument means "not given".
			delete(obj, k)
			continue
		}
		out, err := p.check(join(path, k), v, lenient)
		if err != nil {
			return nil, err
		}
		obj[k] = out
	}
	return obj, nil
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (s *Schema) propertyList() string {
	names := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func inEnum(enum []any, s string) bool {
	for _, e := range enum {
		if e == s {
			return true
		}
	}
	return false
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = fmt.Sprintf("%q", e)
	}
	return strings.Join(parts, ", ")
}

// wrapsScalar reports whether accepting v under alt would only work by
// wrapping a lone value into a list.
func wrapsScalar(alt *Schema, v any) bool {
	_, isList := v.([]any)
	for _, t := range alt.types() {
		if t == "array" && !isList {
			return true
		}
	}
	return false
}
