package jsontext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// hasSpecial may flag a clean word but must never miss a byte that needs
// escaping or a look: checked against a byte-by-byte test for every byte
// value in every position.
func TestHasSpecialNeverMisses(t *testing.T) {
	special := func(c byte) bool { return c < 0x20 || c == '"' || c == '\\' || c >= 0x80 }
	for pos := range 8 {
		for c := range 256 {
			word := []byte("abcdefgh")
			word[pos] = byte(c)
			var x uint64
			for i, b := range word {
				x |= uint64(b) << (8 * i)
			}
			if special(byte(c)) && !hasSpecial(x) {
				t.Fatalf("byte %#x at %d: missed", c, pos)
			}
			if !special(byte(c)) && hasSpecial(x) {
				t.Fatalf("byte %#x at %d in a clean word: flagged", c, pos)
			}
		}
	}
}

func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `"q" \ / `, "\b\f\n\r\t\x00\x1f\x7f", "café €", "😀 emoji", "<html> & co",
		"bad \xff byte", "\xed\xa0\x80 surrogate", "\xc3", "trunc\xe2\x82", "\u2028\u2029",
		"\ufffd real replacement", strings.Repeat("a", 7) + "\"" + strings.Repeat("b", 9),
		strings.Repeat("long ascii text ", 40) + "\n", "12345678\x0112345678", "abcdefgh\\ijklmnop", "abcdefgh\"ijklmnop",
	} {
		got := AppendString(nil, s)
		want, _ := json.Marshal(s)
		if !json.Valid(got) {
			t.Errorf("AppendString(%q) = %s, not valid JSON", s, got)
			continue
		}
		var g, w string
		_ = json.Unmarshal(got, &g)
		_ = json.Unmarshal(want, &w)
		if g != w {
			t.Errorf("AppendString(%q) = %s, decodes to %q; encoding/json's to %q", s, got, g, w)
		}
		if utf8.ValidString(s) && g != s {
			t.Errorf("AppendString(%q) decodes to %q", s, g)
		}
	}
	// The exact bytes of the escapes servers see.
	if got := string(AppendString(nil, "a\"\\\n\x01\u2028\xff<")); got != `"a\"\\\n\u0001\u2028\ufffd<"` {
		t.Errorf("escapes = %s", got)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\x1f", "é😀", "\xff\xfe", "\u2028", "0123456789abcdef\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString([]byte("prefix"), s)
		if !bytes.HasPrefix(got, []byte("prefix")) {
			t.Fatalf("prefix lost: %q", got)
		}
		got = got[len("prefix"):]
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var g, w string
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, got, err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		if g != w {
			t.Errorf("AppendString(%q) = %s, decodes to %q; encoding/json's to %q", s, got, g, w)
		}
	})
}
