package config

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

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
	data, err := os.ReadFile(path)
	if err != nil {
		// The cause is still matched by errors.Is(err, fs.ErrNotExist); the
		// path goes first like in every other configuration error.
		return nil, fmt.Errorf("%s: cannot read the configuration: %w", path, unwrapPath(err))
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
	cfg := Defaults()
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, syntaxError(name, err)
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
	return cfg, nil
}

// goccy writes positions as "[1:1]"; the rest of our messages say "line N".
var yamlPos = regexp.MustCompile(`(?:at )?\[(\d+):\d+\]`)

// syntaxError turns a goccy parse error into an *Error with the same one-line
// shape as the others (goccy's own text spans lines and quotes the source).
func syntaxError(name string, err error) error {
	var yerr yaml.Error
	if !errors.As(err, &yerr) {
		return &Error{File: name, Msg: "invalid YAML: " + err.Error()}
	}
	line := 0
	if tk := yerr.GetToken(); tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	msg := yamlPos.ReplaceAllString(yerr.GetMessage(), "on line $1")
	if strings.Contains(msg, "'\t'") {
		// goccy quotes the raw tab, which prints as blank space.
		msg = "a tab character; indent with spaces, YAML does not allow tabs"
	}
	return &Error{File: name, Line: line, Msg: "invalid YAML: " + msg}
}
