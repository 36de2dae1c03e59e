package config

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/swarmdeck/swarmdeck/runtime/internal/yamlnode"
)

// The decoder walks goccy's AST itself instead of calling yaml.Unmarshal so
// that every error can name the key path and line, suggest the key that was
// meant, and say how to write the value; and so that it records where each
// key sits, which validation needs to point at the right line.
//
// Decoding is driven by the target's Go type: a mapping fills a struct (by its
// yaml tags) or a map, a sequence fills a slice. Because the types nest only a
// few levels, following an alias cannot recurse without bound; merge keys can
// (a mapping may merge itself), so they count their depth. Anchors, aliases
// and merge keys (<<) are supported because people use them to share settings
// between roster entries.

// Work bounds: aliases and merge keys let a small file describe a huge tree
// ("billion laughs"); a real configuration never comes near these.
const (
	maxDecodeSteps = 100_000
	maxAliasDepth  = 100
)

type decoder struct {
	file    string
	lines   map[string]int      // key path -> line that sets it
	anchors map[string]ast.Node // anchor name -> the node it names
	steps   int                 // work done, bounded by maxDecodeSteps
	depth   int                 // merge keys being expanded right now
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: map[string]int{}, anchors: map[string]ast.Node{}}
}

var durationType = reflect.TypeFor[Duration]()

func valueOf(cfg *Config) reflect.Value { return reflect.ValueOf(cfg).Elem() }

func (d *decoder) errf(n ast.Node, path, format string, args ...any) *Error {
	return &Error{File: d.file, Line: lineOf(n), Key: path, Msg: fmt.Sprintf(format, args...)}
}

// lineOf is the 1-based line of n, or 0 when goccy gave it no position.
func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0
	}
	return tk.Position.Line
}

// resolve looks through the nodes that only decorate a value: tags, anchors
// (recorded for later aliases), aliases and "? key" markers. The anchor is
// recorded before its value is walked, so an anchor that refers to itself
// loops until maxAliasDepth stops it with an error rather than forever.
func (d *decoder) resolve(n ast.Node, path string) (ast.Node, error) {
	for hops := 0; ; hops++ {
		if hops > maxAliasDepth {
			return nil, d.errf(n, path, "aliases nest too deeply (does an anchor refer to itself?)")
		}
		switch x := n.(type) {
		case *ast.TagNode:
			n = x.Value
		case *ast.MappingKeyNode:
			n = x.Value
		case *ast.AnchorNode:
			if name := nodeText(x.Name); name != "" {
				d.anchors[name] = x.Value
			}
			n = x.Value
		case *ast.AliasNode:
			name := nodeText(x.Value)
			target, ok := d.anchors[name]
			if !ok {
				return nil, d.errf(x, path, "alias *%s has no anchor &%s before it", plainName(name), plainName(name))
			}
			n = target
		default:
			return n, nil
		}
	}
}

func nodeText(n ast.Node) string {
	if n == nil {
		return ""
	}
	if tk := n.GetToken(); tk != nil {
		return tk.Value
	}
	return ""
}

func (d *decoder) decode(n ast.Node, v reflect.Value, path string) error {
	d.steps++
	if d.steps > maxDecodeSteps {
		return d.errf(n, path, "the file expands to too much data through aliases")
	}
	n, err := d.resolve(n, path)
	if err != nil {
		return err
	}
	if n == nil {
		return nil
	}
	if _, ok := n.(*ast.NullNode); ok {
		// "key:" with nothing after it, or "key: ~": keep the default.
		return nil
	}
	if v.Type() == durationType {
		return d.decodeDuration(n, v, path)
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Map:
		return d.decodeMap(n, v, path)
	case reflect.Slice:
		return d.decodeSlice(n, v, path)
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			return d.errf(n, path, "expected text, not %s", describe(n))
		}
		v.SetString(s)
		return nil
	case reflect.Int:
		i, err := wholeNumber(n)
		if err != nil {
			return d.errf(n, path, "%s", err)
		}
		v.SetInt(i)
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return d.errf(n, path, "%s is not true or false", quoteScalar(n))
		}
		v.SetBool(b.Value)
		return nil
	}
	// Only reachable if a field of a type this decoder does not know is
	// added to Config; the defaults test catches that before a user can.
	return d.errf(n, path, "cannot decode into %s (a swarmdeck bug; please report it)", v.Type())
}

// entry is one key: value pair of a mapping after merge keys are expanded.
type entry struct {
	key   string
	keyAt ast.Node
	value ast.Node
}

// entries lists the pairs of a mapping node. Merge keys (<<: *base or
// <<: [*a, *b]) contribute the pairs the mapping does not set itself, the
// earlier of several merged mappings winning, as YAML specifies.
func (d *decoder) entries(n ast.Node, path string) ([]entry, error) {
	d.steps++
	if d.steps > maxDecodeSteps {
		return nil, d.errf(n, path, "the file expands to too much data through aliases")
	}
	n, err := d.resolve(n, path)
	if err != nil {
		return nil, err
	}
	pairs := yamlnode.Pairs(n)
	if _, isMap := n.(*ast.MappingNode); pairs == nil && !isMap {
		if path == "" {
			return nil, d.errf(n, "", "the file must be a mapping of settings (key: value lines), not %s", describe(n))
		}
		return nil, d.errf(n, path, "expected key: value settings here, not %s", describe(n))
	}

	var out []entry
	seen := map[string]bool{}
	var merges []ast.Node
	for _, p := range pairs {
		if p == nil || p.Key == nil {
			continue
		}
		if p.Key.IsMergeKey() {
			merges = append(merges, p.Value)
			continue
		}
		key, err := d.keyName(p.Key, path)
		if err != nil {
			return nil, err
		}
		seen[key] = true
		out = append(out, entry{key: key, keyAt: p.Key, value: p.Value})
	}
	for _, m := range merges {
		sources := []ast.Node{m}
		r, err := d.resolve(m, path)
		if err != nil {
			return nil, err
		}
		if seq, ok := r.(*ast.SequenceNode); ok {
			sources = seq.Values
		}
		for _, src := range sources {
			d.depth++
			more, err := func() ([]entry, error) {
				defer func() { d.depth-- }()
				if d.depth > maxAliasDepth {
					return nil, d.errf(src, path, "merge keys nest too deeply (does an anchor merge itself?)")
				}
				return d.entries(src, path)
			}()
			if err != nil {
				return nil, err
			}
			for _, e := range more {
				if !seen[e.key] {
					seen[e.key] = true
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// keyName returns a mapping key as text. Keys are names; a list or mapping
// used as a key is an error rather than silently stringified.
func (d *decoder) keyName(k ast.Node, path string) (string, error) {
	n, err := d.resolve(k, path)
	if err != nil {
		return "", err
	}
	if _, ok := n.(*ast.NullNode); ok {
		return "", d.errf(k, path, "a key is empty; write a name before the colon")
	}
	s, ok := scalarText(n)
	if !ok {
		return "", d.errf(k, path, "keys must be plain names, not %s", describe(n))
	}
	return s, nil
}

func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string) error {
	es, err := d.entries(n, path)
	if err != nil {
		return err
	}
	fields := yamlFields(v.Type())
	for _, e := range es {
		kp := joinKey(path, e.key)
		i, ok := fields.index[e.key]
		if !ok {
			return d.errf(e.keyAt, kp, "unknown key%s", keyHint(path, e.key, fields.names))
		}
		d.lines[kp] = lineOf(e.keyAt)
		if err := d.decode(e.value, v.Field(i), kp); err != nil {
			return err
		}
	}
	return nil
}

// decodeMap merges the mapping into the map entry by entry. An entry that
// already exists and is a pointer (a provider) is decoded over in place, so
// "openai: {model: gpt-4o}" changes the model and keeps the base URL. Other
// values (a list of keys, a header) are replaced.
func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path string) error {
	es, err := d.entries(n, path)
	if err != nil {
		return err
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	elem := v.Type().Elem()
	for _, e := range es {
		kp := joinKey(path, e.key)
		d.lines[kp] = lineOf(e.keyAt)
		key := reflect.ValueOf(e.key)
		val := reflect.New(elem).Elem()
		if old := v.MapIndex(key); old.IsValid() && elem.Kind() == reflect.Pointer && !old.IsNil() {
			val = old
		} else if elem.Kind() == reflect.Pointer {
			// Created even when the value is empty ("mine:"), so validation
			// can say what the new entry is missing.
			val.Set(reflect.New(elem.Elem()))
		}
		if err := d.decode(e.value, val, kp); err != nil {
			return err
		}
		v.SetMapIndex(key, val)
	}
	return nil
}

func (d *decoder) decodeSlice(n ast.Node, v reflect.Value, path string) error {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		// "tools: context" reads naturally as a one-item list.
		if s, isText := scalarText(n); isText && v.Type().Elem().Kind() == reflect.String {
			out := reflect.MakeSlice(v.Type(), 1, 1)
			out.Index(0).SetString(s)
			d.lines[path+"[0]"] = lineOf(n)
			v.Set(out)
			return nil
		}
		return d.errf(n, path, "expected a list (lines starting with \"- \", or [a, b]), not %s", describe(n))
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		ip := fmt.Sprintf("%s[%d]", path, i)
		d.lines[ip] = lineOf(item)
		if err := d.decode(item, out.Index(i), ip); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

func (d *decoder) decodeDuration(n ast.Node, v reflect.Value, path string) error {
	s, ok := scalarText(n)
	if !ok {
		return d.errf(n, path, "expected a duration like 30s or 2m, not %s", describe(n))
	}
	dur, err := parseDuration(s)
	if err != nil {
		return d.errf(n, path, "%s", err)
	}
	v.SetInt(int64(dur))
	return nil
}

// scalarText is the text of a scalar node: the decoded value of a string,
// the source text of a number or boolean (so "model: 1.10" stays "1.10").
func scalarText(n ast.Node) (string, bool) {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value, true
	case *ast.LiteralNode:
		if x.Value == nil {
			return "", true
		}
		return x.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return nodeText(n), true
	}
	return "", false
}

var (
	digits      = regexp.MustCompile(`^[-+]?[0-9]+$`)
	leadingZero = regexp.MustCompile(`^[-+]?0[0-9]+$`)
)

// wholeNumber reads an int setting; the error text follows "key: ".
func wholeNumber(n ast.Node) (int64, error) {
	switch x := n.(type) {
	case *ast.IntegerNode:
		if tk := x.GetToken(); tk != nil && leadingZero.MatchString(tk.Value) {
			// YAML 1.1 reads 010 as octal (8), YAML 1.2 as 10: either
			// reading surprises someone.
			return 0, fmt.Errorf("%s starts with a 0, which some YAML reads as an octal number; write it without the 0 (or as 0o%s for octal)", tk.Value, strings.TrimLeft(strings.TrimLeft(tk.Value, "+-"), "0"))
		}
		switch i := x.Value.(type) {
		case int64:
			if int64(int(i)) == i {
				return i, nil
			}
		case uint64:
			if i <= math.MaxInt {
				return int64(i), nil
			}
		}
		return 0, fmt.Errorf("%s is too large", nodeText(n))
	case *ast.StringNode:
		if digits.MatchString(x.Value) {
			if tk := x.GetToken(); tk != nil && (tk.Type == token.DoubleQuoteType || tk.Type == token.SingleQuoteType) {
				return 0, fmt.Errorf("%q is text; write the number without quotes", x.Value)
			}
			// goccy hands numbers too big for 64 bits over as strings.
			return 0, fmt.Errorf("%s is too large", x.Value)
		}
	}
	return 0, fmt.Errorf("%s is not a whole number", quoteScalar(n))
}

// quoteScalar shows a value in a message: text quoted, numbers as written,
// containers by kind.
func quoteScalar(n ast.Node) string {
	s, ok := scalarText(n)
	if !ok {
		return describe(n)
	}
	switch n.(type) {
	case *ast.StringNode, *ast.LiteralNode:
		return strconv.Quote(s)
	}
	return s
}

// describe names what a node is, for "expected X, not <describe>".
func describe(n ast.Node) string {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return "key: value settings"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		s, _ := scalarText(n)
		return "the text " + strconv.Quote(s)
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + nodeText(n)
	case *ast.BoolNode:
		return nodeText(n)
	}
	return "a " + strings.ToLower(n.Type().String())
}

// joinKey extends a key path with a key shown by plainName.
func joinKey(path, key string) string {
	key = plainName(key)
	if path == "" {
		return key
	}
	return path + "." + key
}

// plainName shows a name from the file as is, or quoted when it is empty or
// holds spaces or control characters, so that it stays readable and the
// error stays on one line.
func plainName(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsGraphic(r) || unicode.IsSpace(r) }) {
		return strconv.Quote(s)
	}
	return s
}

type fieldSet struct {
	index map[string]int // yaml name -> field index
	names []string       // yaml names in declaration order, for suggestions
}

// yamlFields maps the yaml tag names of a struct type to field indexes.
func yamlFields(t reflect.Type) fieldSet {
	fs := fieldSet{index: map[string]int{}}
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		fs.index[name] = i
		fs.names = append(fs.names, name)
	}
	return fs
}

// keyHint is the parenthesised help after "unknown key".
func keyHint(path, key string, valid []string) string {
	if path == "" {
		// People arriving from MassGen (seed 002) write its section name.
		if key == "orchestrator" {
			return " (the coordination switches live under coordination:; roles go in agents:)"
		}
	}
	if s := Suggest(key, valid); s != "" {
		return " (did you mean " + s + "?)"
	}
	return " (valid keys: " + strings.Join(valid, ", ") + ")"
}
