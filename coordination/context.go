package coordination

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on the sharedContext argument of one spawn. They keep a child's
// system prompt bounded; large data belongs in a "$label": "reference".
const (
	MaxContextKeys  = 64
	MaxContextBytes = 64 << 10 // keys plus compact JSON values
)

// Entry is one key of a shared context. Value is compact JSON.
type Entry struct {
	Key   string
	Value json.RawMessage
}

// Context is a shared context: JSON values under keys that keep their
// insertion order, so the rendered block is stable from one turn (and one
// resume) to the next. A Context is immutable: With and Merge return new
// contexts and never touch the receiver's storage, which is what makes a
// child's context read-only with respect to its parent's. The zero value is
// an empty context.
type Context struct {
	entries []Entry // every Value is valid compact JSON
}

// Len returns the number of keys.
func (c Context) Len() int { return len(c.entries) }

// Keys returns the keys in order.
func (c Context) Keys() []string {
	keys := make([]string, len(c.entries))
	for i, e := range c.entries {
		keys[i] = e.Key
	}
	return keys
}

// Get returns a copy of the value under key.
func (c Context) Get(key string) (json.RawMessage, bool) {
	if i := c.index(key); i >= 0 {
		return bytes.Clone(c.entries[i].Value), true
	}
	return nil, false
}

// Entries returns a copy of the entries in order.
func (c Context) Entries() []Entry {
	out := make([]Entry, len(c.entries))
	for i, e := range c.entries {
		out[i] = Entry{Key: e.Key, Value: bytes.Clone(e.Value)}
	}
	return out
}

func (c Context) index(key string) int {
	for i, e := range c.entries {
		if e.Key == key {
			return i
		}
	}
	return -1
}

// With returns a copy of c where key has value: in place if key exists,
// appended otherwise. value must be valid JSON.
func (c Context) With(key string, value json.RawMessage) (Context, error) {
	v, err := compactValue(value)
	if err != nil {
		return c, fmt.Errorf("shared context key %q: %w", key, err)
	}
	return c.with(key, v), nil
}

// WithString is With for a string value, which cannot fail.
func (c Context) WithString(key, s string) Context {
	return c.with(key, jsonString(s))
}

func (c Context) with(key string, v json.RawMessage) Context {
	out := make([]Entry, len(c.entries), len(c.entries)+1)
	copy(out, c.entries)
	if i := c.index(key); i >= 0 {
		out[i].Value = v
	} else {
		out = append(out, Entry{Key: key, Value: v})
	}
	return Context{entries: out}
}

// MarshalJSON encodes the context as one JSON object with keys in order.
func (c Context) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range c.entries {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(jsonString(e.Key))
		b.WriteByte(':')
		b.Write(e.Value)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes a JSON object, keeping the order of its keys.
// null gives an empty context; a repeated key is an error.
func (c *Context) UnmarshalJSON(data []byte) error {
	if isNull(data) {
		*c = Context{}
		return nil
	}
	entries, err := decodeObject(data)
	if err != nil {
		return fmt.Errorf("shared context %w", err)
	}
	*c = Context{entries: entries}
	return nil
}

func isNull(data []byte) bool {
	t := bytes.TrimSpace(data)
	return len(t) == 0 || string(t) == "null"
}

// decodeObject reads a JSON object token by token so that key order
// survives (a map would lose it). Errors read well after "sharedContext ".
func decodeObject(data []byte) ([]Entry, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("is not valid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf(`must be a JSON object like {"key": "value"}, got %s`, describeToken(tok))
	}
	var entries []Entry
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("is not valid JSON: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("is not valid JSON: object key %v is not a string", tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("is not valid JSON: key %q: %w", key, err)
		}
		if seen[key] {
			return nil, fmt.Errorf("has the key %q twice; give each key once", key)
		}
		seen[key] = true
		v, err := compactValue(raw)
		if err != nil {
			return nil, fmt.Errorf("is not valid JSON: key %q: %w", key, err)
		}
		entries = append(entries, Entry{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("is not valid JSON: unexpected data after the object")
	}
	return entries, nil
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return "a stray " + strconv.QuoteRune(rune(t))
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// compactValue validates and compacts one JSON value. Raw U+2028 and U+2029
// (legal inside JSON strings) are escaped, so a rendered value can never
// look like more than one line, and the \u003c \u003e \u0026 escapes that
// encoding/json writes by default are undone, so a context rendered after
// a trip through the store reads exactly as before.
func compactValue(raw []byte) (json.RawMessage, error) {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, err
	}
	if b.Len() == 0 {
		return nil, errors.New("empty value")
	}
	out := unescapeHTMLEscapes(b.Bytes())
	if bytes.Contains(out, []byte("\u2028")) || bytes.Contains(out, []byte("\u2029")) {
		out = bytes.ReplaceAll(out, []byte("\u2028"), []byte(`\u2028`))
		out = bytes.ReplaceAll(out, []byte("\u2029"), []byte(`\u2029`))
	}
	return out, nil
}

// unescapeHTMLEscapes rewrites \u003c, \u003e and \u0026 in valid JSON
// to < > &. In valid JSON a backslash only occurs inside a string and
// always starts a complete escape, so walking escape by escape is exact
// (an escaped backslash followed by "u003c" is left alone).
func unescapeHTMLEscapes(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		if b[i+1] != 'u' {
			out = append(out, b[i], b[i+1])
			i++
			continue
		}
		switch strings.ToLower(string(b[i+2 : i+6])) {
		case "003c":
			out = append(out, '<')
		case "003e":
			out = append(out, '>')
		case "0026":
			out = append(out, '&')
		default:
			out = append(out, b[i:i+6]...)
		}
		i += 5
	}
	return out
}

// jsonString encodes s as a JSON string without HTML escaping: the text is
// read by models and people, for whom "\u003c" is noise.
func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // encoding a string cannot fail
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Reference is a "$name": "reference" key of a spawn's sharedContext: the
// result of the earlier sub-agent labelled (or with task id) Name is to be
// included under the key Name.
type Reference struct {
	Key  string // as written, e.g. "$research"
	Name string // e.g. "research"
}

// ParseSpawnContext parses the sharedContext argument of sessions_spawn or
// task_create. Absent (empty or null) means no context. Otherwise it must
// be a JSON object of at most MaxContextKeys keys and MaxContextBytes bytes.
// "$name": "reference" keys are returned as references, in order, and are
// not part of the returned Context.
func ParseSpawnContext(raw json.RawMessage) (Context, []Reference, error) {
	if isNull(raw) {
		return Context{}, nil, nil
	}
	entries, err := decodeObject(raw)
	if err != nil {
		return Context{}, nil, fmt.Errorf("sharedContext %w", err)
	}
	if len(entries) > MaxContextKeys {
		return Context{}, nil, fmt.Errorf("sharedContext has %d keys; the limit is %d — group related values under one key", len(entries), MaxContextKeys)
	}
	var (
		plain []Entry
		refs  []Reference
		size  int
	)
	for _, e := range entries {
		if e.Key == "" {
			return Context{}, nil, errors.New(`sharedContext has an empty key ""; give every value a name`)
		}
		name, isRef := strings.CutPrefix(e.Key, "$")
		if !isRef {
			plain = append(plain, e)
			size += len(e.Key) + len(e.Value)
			continue
		}
		if name == "" {
			return Context{}, nil, errors.New(`sharedContext key "$": a reference needs a label or task id after the $, e.g. "$research": "reference"`)
		}
		var s string
		if json.Unmarshal(e.Value, &s) != nil || s != "reference" {
			return Context{}, nil, fmt.Errorf(`sharedContext key %q: a $ key must have the value "reference" (to pass a value, drop the $)`, e.Key)
		}
		refs = append(refs, Reference{Key: e.Key, Name: name})
	}
	if size > MaxContextBytes {
		return Context{}, nil, fmt.Errorf("sharedContext is %d bytes; the limit is %d (64 KiB) — shorten the values, or include a large result with \"$label\": \"reference\"", size, MaxContextBytes)
	}
	for _, r := range refs {
		for _, e := range plain {
			if e.Key == r.Name {
				return Context{}, nil, fmt.Errorf("sharedContext has both %q and %q, and the reference would replace the value — keep only one", r.Name, r.Key)
			}
		}
	}
	return Context{entries: plain}, refs, nil
}

// Merge returns a child's effective context: the parent's keys in order,
// each with the child's value if the child sets it, then the child's new
// keys in order. Neither input is modified.
func Merge(parent, child Context) Context {
	out := make([]Entry, 0, len(parent.entries)+len(child.entries))
	out = append(out, parent.entries...)
	for _, e := range child.entries {
		replaced := false
		for i := range out[:len(parent.entries)] {
			if out[i].Key == e.Key {
				out[i].Value = e.Value
				replaced = true
				break
			}
		}
		if !replaced {
			out = append(out, e)
		}
	}
	return Context{entries: out}
}

// Render returns the block injected into a child's system prompt, or ""
// for an empty context:
//
//	[Shared Context]:
//	- projectGoal: "Build a modern web app"
//	- constraints: ["budget","timeline"]
//
// Values are compact JSON and so never span lines. Keys are printed as they
// are, except that a key that could pass for something else (one with a
// control character or line separator, invalid UTF-8, a leading quote, or
// the empty key) is printed Go-quoted, so no key can forge a line.
func Render(ctx Context) string {
	if len(ctx.entries) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("[Shared Context]:")
	for _, e := range ctx.entries {
		b.WriteString("\n- ")
		b.WriteString(renderKey(e.Key))
		b.WriteString(": ")
		b.Write(e.Value)
	}
	return b.String()
}

func renderKey(k string) string {
	if k == "" || k[0] == '"' || !utf8.ValidString(k) {
		return strconv.Quote(k)
	}
	for _, r := range k {
		if isControl(r) {
			return strconv.Quote(k)
		}
	}
	return k
}

// RefTarget is what the runtime knows about the sub-agent a reference
// names. Status is a session status (pending, running, waiting, completed,
// failed, cancelled).
type RefTarget struct {
	SessionID string
	Label     string
	Status    string
	Result    string
}

// Resolution is the outcome of ResolveReferences.
type Resolution struct {
	// Available maps a reference name to the result of its finished target.
	Available map[string]string
	// Pending lists the session ids of unfinished targets, in reference
	// order without repeats: the new session must be chained after them and
	// its references resolved again once they finish.
	Pending []string

	refs []Reference // reference order, for Apply
}

// Ready reports whether every reference has a result.
func (r Resolution) Ready() bool { return len(r.Pending) == 0 }

// Apply returns ctx with each available result added under its name (the
// key without "$") as a JSON string, in reference order, replacing a value
// already there.
func (r Resolution) Apply(ctx Context) Context {
	for _, ref := range r.refs {
		if res, ok := r.Available[ref.Name]; ok {
			ctx = ctx.WithString(ref.Name, res)
		}
	}
	return ctx
}

// ResolveReferences looks each reference up (lookup finds an earlier
// sub-agent of the same family by label or task id) and sorts them into
// available results and unfinished targets. An unknown name, or a target
// that failed or was cancelled, is an error naming it.
func ResolveReferences(refs []Reference, lookup func(name string) (RefTarget, bool)) (Resolution, error) {
	res := Resolution{Available: make(map[string]string), refs: append([]Reference(nil), refs...)}
	for _, ref := range refs {
		var (
			t     RefTarget
			found bool
		)
		if lookup != nil {
			t, found = lookup(ref.Name)
		}
		if !found {
			return Resolution{}, fmt.Errorf("sharedContext references %q but no earlier sub-agent in this family has label or task id %q", ref.Key, ref.Name)
		}
		switch t.Status {
		case "completed":
			res.Available[ref.Name] = t.Result
		case "failed", "cancelled":
			return Resolution{}, fmt.Errorf("sharedContext references %q, but sub-agent %s ended with status %s and has no result to include — remove the reference or spawn that work again", ref.Key, describeTarget(t), t.Status)
		default:
			if !slices.Contains(res.Pending, t.SessionID) {
				res.Pending = append(res.Pending, t.SessionID)
			}
		}
	}
	return res, nil
}

func describeTarget(t RefTarget) string {
	switch {
	case t.Label != "" && t.SessionID != "":
		return fmt.Sprintf("%q (%s)", t.Label, t.SessionID)
	case t.Label != "":
		return strconv.Quote(t.Label)
	}
	return t.SessionID
}
