package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"

	"github.com/swarmdeck/swarmdeck/runtime/fileerr"
)

// maxFileBytes bounds the size of a configuration file.
const maxFileBytes = 1 << 20

// Error is one problem in a configuration file, located so that a person can
// go straight to it: "config.yaml:31: limits.call_timeout: "fast" is not a
// duration (write it like 30s or 2m)".
type Error struct {
	File string // the name given to Parse, or the path given to Load
	Line int    // 1-based; 0 when the setting comes from the defaults, not the file
	Key  string // key path such as limits.call_timeout or agents[2].tools; "" for YAML syntax
	Msg  string // what is wrong and how to fix it
}

func (e *Error) Error() string {
	s := e.File
	if e.Line > 0 {
		s += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		s += ": " + e.Key
	}
	// One line whatever the file held: a newline in a message would break
	// "file:line: ..." parsing by editors and scripts.
	return s + ": " + oneLine.Replace(e.Msg)
}

var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ")

// Load reads and parses the configuration file at path. The returned Config
// has Path set to path.
func Load(path string) (*Config, error) {
	if fi, err := os.Stat(path); err == nil && waitsToRead(fi) {
		// Replaced by a pipe while watched, say: reading would hang.
		return nil, &Error{File: path, Msg: "is " + fileerr.Kind(fi.Mode()) + ", not a config file"}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		// The cause is still matched by errors.Is(err, fs.ErrNotExist); the
		// path goes first like in every other configuration error.
		return nil, fmt.Errorf("%s: cannot read the configuration: %w", path, fileerr.Reason(err))
	}
	cfg, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	cfg.Path = path
	return cfg, nil
}

// Parse decodes data, named name in error messages, over Defaults() and
// validates the result. Keys the file leaves out, or gives no value, keep
// their defaults; a map (providers, ui.keys, headers) merges entry by entry,
// and an entry naming an existing provider changes only the keys it sets;
// a list (agents, tools) replaces the default list whole.
//
// Every error is an *Error: unknown keys, values of the wrong kind and
// failed validation all name the file, the line and the key path.
func Parse(name string, data []byte) (*Config, error) {
	if len(data) > maxFileBytes {
		// Parsed, a file of many megabytes takes a second and hundreds of
		// megabytes of memory, again at each reload; no configuration is
		// that long.
		return nil, &Error{File: name, Msg: fmt.Sprintf("the file is %d bytes; a configuration is at most %d (1 MiB): is it the right file?", len(data), maxFileBytes)}
	}
	// A byte order mark, which some editors put at the start of a UTF-8
	// file, is allowed there by YAML; left in, it would be part of the
	// first key.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	if !utf8.Valid(data) {
		// YAML is Unicode; goccy would read the bytes as U+FFFD, and a
		// model name or path would silently be another.
		for i, line := range bytes.Split(data, []byte("\n")) {
			if !utf8.Valid(line) {
				return nil, &Error{File: name, Line: i + 1, Msg: "not UTF-8 text (saved in another encoding?): save the file as UTF-8"}
			}
		}
	}
	cfg := Defaults()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(name, data, err)
	}
	d := newDecoder(name)
	var seen bool
	for _, doc := range file.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if seen {
			return nil, &Error{File: name, Line: lineOf(doc.Body), Msg: "a second YAML document (after ---); keep the whole configuration in one"}
		}
		seen = true
		if err := d.decode(doc.Body, valueOf(cfg), ""); err != nil {
			return nil, err
		}
	}
	cfg.normalize()
	if err := cfg.validate(name, d.lines); err != nil {
		return nil, err
	}
	if len(d.lines) > 0 {
		cfg.lines = d.lines
	}
	return cfg, nil
}

// Where says where the configuration file set key, as "config.yaml:12:
// workspace", for an error about its value found only once it is used (a
// directory that cannot be opened, say), so that it reads like the errors
// of Load. ok is false when the value is not the file's: a default, or a
// flag's (see Apply).
func (c *Config) Where(key string) (where string, ok bool) {
	line, ok := c.lines[key]
	if !ok || c.Path == "" || line == 0 {
		return "", false
	}
	return c.Path + ":" + strconv.Itoa(line) + ": " + key, true
}

// forget drops where the file set key, whose value a flag has replaced.
// The map is copied: Configs may share it.
func (c *Config) forget(key string) {
	if _, ok := c.lines[key]; ok {
		c.lines = maps.Clone(c.lines)
		delete(c.lines, key)
	}
}

// goccy writes positions as "[1:1]"; the rest of our messages say "line N".
var yamlPos = regexp.MustCompile(`(?:at )?\[(\d+):\d+\]`)

// syntaxError turns a goccy parse error into an *Error with the same one-line
// shape as the others (goccy's own text spans lines and quotes the source).
func syntaxError(name string, src []byte, err error) error {
	var yerr yaml.Error
	if !errors.As(err, &yerr) {
		return &Error{File: name, Msg: "invalid YAML: " + err.Error()}
	}
	line, col := 0, 0
	if tk := yerr.GetToken(); tk != nil && tk.Position != nil {
		line, col = tk.Position.Line, tk.Position.Column
	}
	msg := yamlPos.ReplaceAllString(yerr.GetMessage(), "on line $1")
	if tk := yerr.GetToken(); tk != nil && strings.HasPrefix(msg, "mapping value is not allowed") &&
		tk.Next != nil && tk.Next.Value == ":" && tk.Next.Position != nil && tk.Next.Position.Line > line {
		// A key indented deeper than the one above it reads as more of that
		// key's value ("5 max_depth"), so goccy points at the value's first
		// line; the mistake is the key's.
		line = tk.Next.Position.Line
		msg = deeperKey(src, line)
	} else if msg == "mapping value is not allowed in this context" {
		msg += `; a value holding ": " must be in quotes`
	} else if strings.HasPrefix(msg, "value is not allowed in this context") {
		// With a comment after the key above, goccy says only this (and
		// that "map key-value is pre-defined").
		if above, ok := keyAbove(src, line); ok && indentOf(src, line) > indentOf(src, above) {
			msg = deeperKey(src, line)
		} else {
			msg = "this key's indent lines up with no key above it; indent it as far as the keys it belongs with"
		}
	}
	if strings.Contains(msg, "'\t'") {
		// goccy quotes the raw tab, which prints as blank space.
		msg = "a tab character; indent with spaces, YAML does not allow tabs"
	}
	if strings.Contains(msg, "']' must be specified") || strings.Contains(msg, "'}' must be specified") {
		// The parser notices a list or map left open only where something
		// else begins, often the next line; the mistake is where it opened.
		if open, ok := unclosedFlow(src, line, col); ok && open.line != line {
			kind := "list"
			if open.c == '{' {
				kind = "map"
			}
			return &Error{File: name, Line: open.line, Msg: fmt.Sprintf("invalid YAML: the %s opened here with %q is not closed (the parser expected ',' or %q before line %d)",
				kind, open.c, closing(open.c), line)}
		}
	}
	return &Error{File: name, Line: line, Msg: "invalid YAML: " + msg}
}

// deeperKey says that the key on line is indented deeper than the key
// above it, which YAML reads as more of that key's value; and, when that
// key is itself indented less than the one before it, that it may be the
// one out of place.
func deeperKey(src []byte, line int) string {
	above, ok := keyAbove(src, line)
	if !ok {
		return "this key is indented deeper than the key above it, so YAML reads it as more of that key's value; indent it as far as the keys it belongs with"
	}
	msg := fmt.Sprintf("this key is indented deeper than the one on line %d, so YAML reads it as more of that key's value; indent it as far as the keys it belongs with", above)
	if before, ok := keyAbove(src, above); ok && indentOf(src, above) < indentOf(src, before) {
		msg += fmt.Sprintf(", or, if line %d is the one out of place, indent that one", above)
	}
	return msg
}

// keyAbove is the number of the nearest line above line (from 1) that
// holds something other than blanks and a comment.
func keyAbove(src []byte, line int) (int, bool) {
	lines := bytes.Split(src, []byte("\n"))
	for n := min(line-1, len(lines)); n >= 1; n-- {
		t := bytes.TrimSpace(lines[n-1])
		if len(t) > 0 && t[0] != '#' {
			return n, true
		}
	}
	return 0, false
}

// indentOf is how many spaces begin line (from 1) of src.
func indentOf(src []byte, line int) int {
	lines := bytes.Split(src, []byte("\n"))
	if line < 1 || line > len(lines) {
		return 0
	}
	l := lines[line-1]
	return len(l) - len(bytes.TrimLeft(l, " "))
}

type flowOpen struct {
	c    byte
	line int
}

func closing(c byte) byte {
	if c == '{' {
		return '}'
	}
	return ']'
}

// unclosedFlow finds the innermost flow list or map ([ or {) still open
// just before line:col of src (both from 1). It knows quotes and comments,
// and takes a bracket for an opening only where a value can begin (after
// "key:", "- ", at the start of a line, or inside another flow), since a
// plain scalar such as "a [b" may hold one; block scalars are not followed.
func unclosedFlow(src []byte, line, col int) (flowOpen, bool) {
	var stack []flowOpen
	ln, c := 1, 0
	valueStart := true // a node can begin here
	for i := 0; i < len(src); i++ {
		ch := src[i]
		c++
		if ln > line || (ln == line && c >= col) {
			break
		}
		switch {
		case ch == '\n':
			ln, c = ln+1, 0
			valueStart = true
		case ch == '#' && (i == 0 || src[i-1] == ' ' || src[i-1] == '\t' || src[i-1] == '\n'):
			for i+1 < len(src) && src[i+1] != '\n' {
				i++
			}
		case ch == '"' || ch == '\'':
			if !valueStart && len(stack) == 0 {
				continue // inside a plain scalar, as in don't
			}
			for i+1 < len(src) {
				i++
				c++
				if src[i] == '\n' {
					ln, c = ln+1, 0
				}
				if ch == '"' && src[i] == '\\' {
					i++
					c++
					continue
				}
				if src[i] == ch {
					if ch == '\'' && i+1 < len(src) && src[i+1] == '\'' {
						i++ // '' is a quote inside single quotes
						c++
						continue
					}
					break
				}
			}
			valueStart = false
		case (ch == '[' || ch == '{') && (valueStart || len(stack) > 0):
			stack = append(stack, flowOpen{ch, ln})
			valueStart = true
		case (ch == ']' || ch == '}') && len(stack) > 0:
			stack = stack[:len(stack)-1]
			valueStart = false
		case ch == ',' && len(stack) > 0:
			valueStart = true
		case ch == ':' || ch == '-' || ch == '?':
			next := byte(' ')
			if i+1 < len(src) {
				next = src[i+1]
			}
			valueStart = next == ' ' || next == '\t' || next == '\n' || next == '\r' || (len(stack) > 0 && ch == ':')
		case ch == ' ' || ch == '\t' || ch == '\r':
		default:
			valueStart = false
		}
	}
	if len(stack) == 0 {
		return flowOpen{}, false
	}
	return stack[len(stack)-1], true
}
