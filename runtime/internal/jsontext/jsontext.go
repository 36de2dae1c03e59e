// Package jsontext writes JSON strings by hand, for the two places that
// build JSON on the hot path without encoding/json: the LLM client's
// request bodies and the scripted model's response frames.
package jsontext

import "unicode/utf8"

// jsonSafe marks the ASCII bytes that go into a JSON string as they are.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Bit tricks for testing eight bytes at once (see hasSpecial).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// hasSpecial reports whether any of the eight bytes of x needs a look: a
// control character, '"', '\\' or a byte of a multi-byte sequence. Each
// term is the usual "has a zero byte" or "has a byte below n" test; they
// may flag a clean word's neighbour but never miss one.
func hasSpecial(x uint64) bool {
	ctl := (x - ones*0x20) &^ x // a byte below 0x20
	q := x ^ ones*'"'
	quote := (q - ones) &^ q // a byte equal to '"'
	s := x ^ ones*'\\'
	slash := (s - ones) &^ s // a byte equal to '\\'
	return (ctl|quote|slash|x)&highs != 0
}

const hexDigits = "0123456789abcdef"

// AppendString appends s to b as a JSON string. Valid UTF-8 passes through;
// each invalid byte becomes U+FFFD, as encoding/json does. '<', '>' and '&'
// are left alone (encoding/json escapes them for HTML, and nothing written
// here is embedded in HTML); U+2028 and U+2029 are escaped as encoding/json
// does, for readers that embed JSON in JavaScript. Plain ASCII is skipped
// eight bytes at a time.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0 // s[start:i] is pending, to be copied as is
	i := 0
	for i < len(s) {
		// Most text is plain ASCII: skip it eight bytes at a time.
		for i+8 <= len(s) {
			_ = s[i+7]
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if hasSpecial(x) {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
