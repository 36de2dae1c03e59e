package scripted

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// This file decodes chat completion requests. A request carries the whole
// conversation plus every tool's JSON schema on every turn, and the schemas
// are usually the bulk of it; the policies only need tool names. So instead
// of encoding/json (which validates the whole body and then decodes it) a
// small pull reader walks the body once, keeps the fields a policy reads and
// skips the rest, jumping through strings with strings.IndexByte. Strings
// without escapes are substrings of the body and cost no allocation.

// wireRequest is a decoded request plus the transport options the server
// needs but a policy does not.
type wireRequest struct {
	Request
	Stream       bool
	IncludeUsage bool
}

// maxNesting bounds the nesting of skipped values, as encoding/json bounds
// its own, so a hostile body cannot make the reader's stack grow unbounded.
const maxNesting = 512

type jsonReader struct {
	s   string
	i   int
	err error
	// borrowed: s aliases a buffer that is reused after decoding, so every
	// string kept must be copied out of it.
	borrowed bool
	fresh    bool // the last string read was built, not sliced from s
	// tools, when set, recognises "tools" arrays seen before.
	tools *toolsCache
}

// toolsCache remembers the "tools" arrays a server has read and the names
// in them. A swarm sends the same few arrays (one per set of tool groups)
// with every request; comparing bytes is far cheaper than walking the
// schemas again. A JSON array ends where its brackets balance, so a body
// that starts with a remembered array holds exactly that array there.
type toolsCache struct {
	mu      sync.RWMutex
	entries []toolsEntry
}

type toolsEntry struct {
	raw   string
	names []string
}

// maxToolsEntries bounds the cache; a server talking to something other
// than swarmdeck may send a different array every time.
const maxToolsEntries = 16

func (c *toolsCache) match(rest string) (toolsEntry, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, e := range c.entries {
		if strings.HasPrefix(rest, e.raw) {
			return e, true
		}
	}
	return toolsEntry{}, false
}

func (c *toolsCache) add(raw string, names []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxToolsEntries {
		return
	}
	for _, e := range c.entries {
		if e.raw == raw {
			return
		}
	}
	c.entries = append(c.entries, toolsEntry{raw: strings.Clone(raw), names: names})
}

// decodeRequest reads an OpenAI chat completion request. Errors are phrased
// for the client: they say what is wrong and where.
func decodeRequest(body string) (*wireRequest, error) {
	return decodeBody(body, false, nil)
}

// decodeBody is decodeRequest over a body that may be borrowed (see
// jsonReader.borrowed), with an optional cache of tools arrays.
func decodeBody(body string, borrowed bool, tools *toolsCache) (*wireRequest, error) {
	r := &jsonReader{s: body, borrowed: borrowed, tools: tools}
	if r.peek() == 0 {
		return nil, errors.New("request body is empty: send a JSON chat completion request")
	}
	req := &wireRequest{}
	sawMessages := false
	r.object(func(key string) {
		switch key {
		case "model":
			req.Model = r.keep(r.nullableString())
		case "stream":
			req.Stream = r.boolean()
		case "stream_options":
			if r.null() {
				return
			}
			r.object(func(key string) {
				if key == "include_usage" {
					req.IncludeUsage = r.boolean()
					return
				}
				r.skip()
			})
		case "messages":
			sawMessages = true
			if r.null() {
				return
			}
			r.array(func(int) {
				req.Messages = append(req.Messages, r.message(len(req.Messages)))
			})
		case "tools":
			if r.null() {
				return
			}
			r.peek()
			if r.tools != nil {
				if e, ok := r.tools.match(r.s[r.i:]); ok {
					r.i += len(e.raw)
					req.Tools = append(req.Tools[:0:0], e.names...)
					return
				}
			}
			start := r.i
			r.array(func(int) {
				if name := r.toolName(); name != "" {
					req.Tools = append(req.Tools, name)
				}
			})
			if r.tools != nil && r.err == nil {
				r.tools.add(r.s[start:r.i], append([]string(nil), req.Tools...))
			}
		default:
			r.skip()
		}
	})
	if r.err == nil && r.peek() != 0 {
		r.fail("unexpected data after the request object")
	}
	if r.err != nil {
		return nil, r.err
	}
	if !sawMessages || len(req.Messages) == 0 {
		return nil, errors.New("messages is required: send at least one message")
	}
	return req, nil
}

func (r *jsonReader) message(n int) Message {
	var m Message
	r.object(func(key string) {
		switch key {
		case "role":
			m.Role = r.role()
		case "content":
			m.Content = r.keep(r.content(n))
		case "tool_call_id":
			m.ToolCallID = r.keep(r.nullableString())
		case "name":
			m.Name = r.keep(r.nullableString())
		case "tool_calls":
			if r.null() {
				return
			}
			r.array(func(int) { m.ToolCalls = append(m.ToolCalls, r.toolCall()) })
		default:
			r.skip()
		}
	})
	switch {
	case r.err != nil:
	case m.Role == "":
		r.err = fmt.Errorf("messages[%d].role is required (system, user, assistant or tool)", n)
	case !knownRole(m.Role):
		r.err = fmt.Errorf("messages[%d].role %q is not one of system, developer, user, assistant, tool or function", n, m.Role)
	}
	return m
}

// content accepts the three shapes servers see in the wild: a string, null
// (assistant messages that only call tools) and an array of parts, whose
// text parts are concatenated.
func (r *jsonReader) content(n int) string {
	switch r.peek() {
	case '"':
		return r.str()
	case 'n':
		r.null()
		r.fresh = true
		return ""
	case '[':
		var b strings.Builder
		r.array(func(int) {
			r.object(func(key string) {
				if key == "text" {
					b.WriteString(r.str())
					return
				}
				r.skip()
			})
		})
		r.fresh = true
		return b.String()
	}
	r.fail(fmt.Sprintf("messages[%d].content must be a string, null or an array of parts", n))
	return ""
}

func (r *jsonReader) toolCall() ToolCall {
	var c ToolCall
	r.object(func(key string) {
		switch key {
		case "id":
			c.ID = r.keep(r.nullableString())
		case "function":
			r.object(func(key string) {
				switch key {
				case "name":
					c.Name = r.keep(r.str())
				case "arguments":
					// Some servers and clients send an object instead of a
					// JSON-encoded string; keep its text as is.
					if r.peek() == '{' {
						start := r.i
						r.skip()
						r.fresh = false
						c.Arguments = r.keep(r.s[start:r.i])
						return
					}
					c.Arguments = r.keep(r.nullableString())
				default:
					r.skip()
				}
			})
		default:
			r.skip()
		}
	})
	return c
}

// toolName reads one entry of "tools" and returns function.name, skipping
// the description and parameter schema.
func (r *jsonReader) toolName() string {
	name := ""
	r.object(func(key string) {
		if key != "function" {
			r.skip()
			return
		}
		r.object(func(key string) {
			if key == "name" {
				name = r.keep(r.str())
				return
			}
			r.skip()
		})
	})
	return name
}

// role reads a message role, returning the common ones as constants so a
// long conversation does not copy "assistant" out of the body per message.
func (r *jsonReader) role() string {
	switch s := r.str(); s {
	case "system":
		return "system"
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	default:
		return r.keep(s)
	}
}

// knownRole reports the roles a chat request may give a message: OpenAI's
// four, "developer" (its newer name for system) and "function" (its older
// one for tool).
func knownRole(role string) bool {
	switch role {
	case "system", "user", "assistant", "tool", "developer", "function":
		return true
	}
	return false
}

// keep returns the string just read in a form that outlives the body: a
// copy when the body is borrowed and the string was sliced from it.
func (r *jsonReader) keep(s string) string {
	if !r.borrowed || r.fresh || s == "" {
		return s
	}
	return strings.Clone(s)
}

func (r *jsonReader) fail(msg string) {
	if r.err == nil {
		r.err = fmt.Errorf("invalid JSON at byte %d: %s", r.i, msg)
	}
}

// peek skips white space and returns the next byte, or 0 at the end.
func (r *jsonReader) peek() byte {
	for r.i < len(r.s) {
		switch c := r.s[r.i]; c {
		case ' ', '\t', '\n', '\r':
			r.i++
		default:
			return c
		}
	}
	return 0
}

// object calls f with each key; f must consume the value.
func (r *jsonReader) object(f func(key string)) {
	if r.err != nil {
		return
	}
	if r.peek() != '{' {
		r.fail("expected an object")
		return
	}
	r.i++
	if r.peek() == '}' {
		r.i++
		return
	}
	for r.err == nil {
		key := r.key()
		if r.err != nil {
			return
		}
		if r.peek() != ':' {
			r.fail("expected ':' after an object key")
			return
		}
		r.i++
		f(key)
		if r.err != nil {
			return
		}
		switch r.peek() {
		case ',':
			r.i++
		case '}':
			r.i++
			return
		default:
			r.fail("expected ',' or '}' in an object")
			return
		}
	}
}

// array calls f for each element; f must consume it.
func (r *jsonReader) array(f func(i int)) {
	if r.err != nil {
		return
	}
	if r.peek() != '[' {
		r.fail("expected an array")
		return
	}
	r.i++
	if r.peek() == ']' {
		r.i++
		return
	}
	for n := 0; r.err == nil; n++ {
		f(n)
		if r.err != nil {
			return
		}
		switch r.peek() {
		case ',':
			r.i++
		case ']':
			r.i++
			return
		default:
			r.fail("expected ',' or ']' in an array")
			return
		}
	}
}

func (r *jsonReader) literal(word string) bool {
	if strings.HasPrefix(r.s[r.i:], word) {
		r.i += len(word)
		return true
	}
	r.fail("invalid literal")
	return false
}

// null consumes a null if one comes next.
func (r *jsonReader) null() bool {
	if r.peek() == 'n' {
		return r.literal("null")
	}
	return false
}

func (r *jsonReader) boolean() bool {
	switch r.peek() {
	case 't':
		return r.literal("true")
	case 'f':
		r.literal("false")
		return false
	case 'n':
		r.literal("null")
		return false
	}
	r.fail("expected true or false")
	return false
}

func (r *jsonReader) nullableString() string {
	if r.null() {
		r.fresh = true
		return ""
	}
	return r.str()
}

// str reads a string and returns it unescaped.
func (r *jsonReader) str() string {
	if r.err != nil {
		return ""
	}
	if r.peek() != '"' {
		r.fail("expected a string")
		return ""
	}
	start := r.i + 1
	end, escaped := scanString(r.s, start)
	if end < 0 {
		r.fail("unterminated string")
		return ""
	}
	r.i = end + 1
	raw := r.s[start:end]
	if !escaped && utf8.ValidString(raw) {
		r.fresh = false
		return raw
	}
	r.fresh = true
	out, ok := unescape(raw)
	if !ok {
		r.i = start
		r.fail("invalid escape in a string")
	}
	return out
}

// scanString returns the index of the quote closing the string whose
// content starts at i, and whether the string contains escapes.
func scanString(s string, i int) (end int, escaped bool) {
	// Most strings of a request (keys, schema words) end within a few
	// bytes, where a plain loop beats the call overhead of IndexByte.
	for n := min(len(s), i+16); i < n; i++ {
		switch s[i] {
		case '"':
			return i, false
		case '\\':
			return scanLong(s, i)
		}
	}
	return scanLong(s, i)
}

// scanLong is scanString for long strings: the next quote is found once and
// reused until an escaped quote passes it, so a long string with many
// escapes is scanned in linear time.
func scanLong(s string, i int) (end int, escaped bool) {
	q := -1 // index of the first quote at or after i
	for {
		if q < i {
			k := strings.IndexByte(s[i:], '"')
			if k < 0 {
				return -1, escaped
			}
			q = i + k
		}
		b := strings.IndexByte(s[i:q], '\\')
		if b < 0 {
			return q, escaped
		}
		escaped = true
		i += b + 2 // the backslash and the escaped byte, which may be a quote
		if i > len(s) {
			return -1, escaped
		}
	}
}

// unescape decodes the body of a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func unescape(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		// Copy the run up to the next escape in one go.
		run := s[i:]
		if k := strings.IndexByte(run, '\\'); k >= 0 {
			run = run[:k]
		}
		if utf8.ValidString(run) {
			b.WriteString(run)
		} else {
			for _, r := range run { // ranging yields U+FFFD per invalid byte
				b.WriteRune(r)
			}
		}
		i += len(run)
		if i >= len(s) {
			break
		}
		if i+1 >= len(s) {
			return b.String(), false
		}
		switch e := s[i+1]; e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := hex4(s, i+2)
			if !ok {
				return b.String(), false
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(s, i+2); ok && i+1 < len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						b.WriteRune(dec)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
			continue
		default:
			return b.String(), false
		}
		i += 2
	}
	return b.String(), true
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(s[i : i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skip consumes one value of any type without keeping it. It walks the
// value iteratively, checking its structure (brackets match, keys are
// strings followed by colons) but extracting nothing: skipped tool schemas
// are most of every request.
func (r *jsonReader) skip() {
	if r.err != nil {
		return
	}
	var inline [32]byte
	closers := inline[:0] // the closing bracket of each open container
	const (
		value = iota
		key
		after
	)
	state := value
	for {
		switch state {
		case value:
			switch c := r.peek(); {
			case c == '"':
				if !r.skipString() {
					return
				}
				state = after
			case c == '{' || c == '[':
				if len(closers) == maxNesting {
					r.fail("values nested too deeply")
					return
				}
				r.i++
				closer := byte('}')
				if c == '[' {
					closer = ']'
				}
				if r.peek() == closer {
					r.i++
					state = after
					continue
				}
				closers = append(closers, closer)
				if closer == '}' {
					state = key
				}
			case c == 't':
				if !r.literal("true") {
					return
				}
				state = after
			case c == 'f':
				if !r.literal("false") {
					return
				}
				state = after
			case c == 'n':
				if !r.literal("null") {
					return
				}
				state = after
			case c == '-' || ('0' <= c && c <= '9'):
				start := r.i
				for r.i < len(r.s) && isNumberByte(r.s[r.i]) {
					r.i++
				}
				if r.i == start+1 && c == '-' {
					r.fail("invalid number")
					return
				}
				state = after
			case c == 0:
				r.fail("unexpected end of input")
				return
			default:
				r.fail(fmt.Sprintf("unexpected character %q", c))
				return
			}
		case key:
			if r.peek() != '"' {
				r.fail("expected a string as object key")
				return
			}
			if !r.skipString() {
				return
			}
			if r.peek() != ':' {
				r.fail("expected ':' after an object key")
				return
			}
			r.i++
			state = value
		case after:
			if len(closers) == 0 {
				return
			}
			top := closers[len(closers)-1]
			switch r.peek() {
			case ',':
				r.i++
				state = value
				if top == '}' {
					state = key
				}
			case top:
				r.i++
				closers = closers[:len(closers)-1]
			default:
				r.fail("expected ',' or '" + string(top) + "'")
				return
			}
		}
	}
}

// skipString consumes a string at r.i (a quote) without keeping it.
func (r *jsonReader) skipString() bool {
	end, _ := scanString(r.s, r.i+1)
	if end < 0 {
		r.fail("unterminated string")
		return false
	}
	r.i = end + 1
	return true
}

// key reads an object key. Keys are only compared with known names, so
// the common unescaped case is a slice of the body, unchecked.
func (r *jsonReader) key() string {
	if r.err != nil {
		return ""
	}
	if r.peek() != '"' {
		r.fail("expected a string as object key")
		return ""
	}
	end, escaped := scanString(r.s, r.i+1)
	if end < 0 {
		r.fail("unterminated string")
		return ""
	}
	k := r.s[r.i+1 : end]
	if escaped {
		return r.str()
	}
	r.i = end + 1
	return k
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
