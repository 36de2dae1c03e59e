package coordination

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// EscapeAttr escapes s for use inside a double-quoted attribute value:
// & < > " ' become named entities and every control character (C0, DEL,
// C1, and the Unicode line and paragraph separators) becomes a numeric
// entity, so an attribute is always a single line that cannot end early.
// Bytes that are not valid UTF-8 are kept as they are: they cannot close a
// quote or a tag, and keeping them makes Unescape an exact inverse.
func EscapeAttr(s string) string {
	if !needsAttrEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i])
		case r == '&':
			b.WriteString("&amp;")
		case r == '<':
			b.WriteString("&lt;")
		case r == '>':
			b.WriteString("&gt;")
		case r == '"':
			b.WriteString("&quot;")
		case r == '\'':
			b.WriteString("&apos;")
		case isControl(r):
			b.WriteString("&#")
			b.WriteString(strconv.Itoa(int(r)))
			b.WriteByte(';')
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func needsAttrEscape(s string) bool {
	for _, r := range s {
		switch {
		case r == '&', r == '<', r == '>', r == '"', r == '\'', isControl(r):
			return true
		}
	}
	return false
}

// EscapeBody escapes the text between an opening and a closing tag: only
// & < and > change, so line breaks and quotes stay readable for the model
// while no "<" can start a tag.
func EscapeBody(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// Unescape reverses EscapeAttr and EscapeBody in a single left-to-right
// pass (so "&amp;lt;" becomes "&lt;", not "<"). It understands the five
// named entities and decimal or hexadecimal numeric entities; anything else
// that starts with & is left untouched.
func Unescape(s string) string {
	amp := strings.IndexByte(s, '&')
	if amp < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:amp])
	for i := amp; i < len(s); {
		if s[i] != '&' {
			next := strings.IndexByte(s[i:], '&')
			if next < 0 {
				b.WriteString(s[i:])
				break
			}
			b.WriteString(s[i : i+next])
			i += next
			continue
		}
		if r, n, ok := decodeEntity(s[i:]); ok {
			b.WriteRune(r)
			i += n
			continue
		}
		b.WriteByte('&')
		i++
	}
	return b.String()
}

// maxEntityLen bounds the search for ';' so a stray '&' in a long text
// costs constant time ("&#x10FFFF;" is the longest entity we produce).
const maxEntityLen = 12

// decodeEntity decodes the entity at the start of s (which begins with
// '&') and reports its rune and byte length.
func decodeEntity(s string) (rune, int, bool) {
	end := strings.IndexByte(s[:min(len(s), maxEntityLen)], ';')
	if end < 0 {
		return 0, 0, false
	}
	name := s[1:end]
	switch name {
	case "amp":
		return '&', end + 1, true
	case "lt":
		return '<', end + 1, true
	case "gt":
		return '>', end + 1, true
	case "quot":
		return '"', end + 1, true
	case "apos":
		return '\'', end + 1, true
	}
	if len(name) < 2 || name[0] != '#' {
		return 0, 0, false
	}
	digits, base := name[1:], 10
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if digits == "" || digits[0] == '+' || digits[0] == '-' {
		return 0, 0, false
	}
	n, err := strconv.ParseUint(digits, base, 32)
	if err != nil || n > utf8.MaxRune || (n >= 0xD800 && n <= 0xDFFF) {
		return 0, 0, false
	}
	return rune(n), end + 1, true
}

// isControl reports the characters that could break a line or hide text:
// C0 controls, DEL, C1 controls and the Unicode line/paragraph separators.
func isControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x2028 || r == 0x2029
}

// injectedTags are the tags the runtime writes into a session's history,
// whose contents a model takes as coming from the system, the person or
// another agent.
var injectedTags = []string{
	TagSiblingBroadcast, TagSiblingTasks, TagNewSibling, TagTaskResult, TagTaskMessage,
	TagHumanMessage, TagHumanBroadcast, TagAnnouncement, TagAnsweredOnYourBehalf,
	TagRunResumed, "reminder",
}

// DefuseTags escapes the "<" of every opening or closing tag in s that
// is one the runtime injects, written as the runtime writes it: "<" or
// "</", the name, then ">", a blank or "/". All other text stays as it is.
// It is for text that an agent writes for another to read as a plain
// message, a child's task above all: code and markup in it stay readable
// (a < b, List<Question>), while nothing in it can pass for a broadcast, a
// result or a person's message. UndoDefuse gives the text back as written.
func DefuseTags(s string) string {
	var b strings.Builder
	done := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '<' || !startsInjectedTag(s[i+1:]) {
			continue
		}
		if done == 0 {
			b.Grow(len(s) + 8)
		}
		b.WriteString(s[done:i])
		b.WriteString("&lt;")
		done = i + 1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// UndoDefuse gives back the text DefuseTags was given, for a person to
// read as its author wrote it. A text that held "&lt;human_message>" as
// written reads as "<human_message>" here.
func UndoDefuse(s string) string {
	const lt = "&lt;"
	if !strings.Contains(s, lt) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for {
		i := strings.Index(s, lt)
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		if startsInjectedTag(s[i+len(lt):]) {
			b.WriteByte('<')
		} else {
			b.WriteString(lt)
		}
		s = s[i+len(lt):]
	}
	b.WriteString(s)
	return b.String()
}

// startsInjectedTag reports whether s, the text after a "<", goes on as
// an injected tag: an optional "/", the name, then its end.
func startsInjectedTag(s string) bool {
	s = strings.TrimPrefix(s, "/")
	for _, tag := range injectedTags {
		rest, ok := strings.CutPrefix(s, tag)
		if !ok {
			continue
		}
		if rest == "" {
			return true
		}
		switch rest[0] {
		case '>', ' ', '\t', '\r', '\n', '/':
			return true
		}
	}
	return false
}
