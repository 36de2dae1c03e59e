package textcut

import (
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven ch…"},
		{"one, two, three", 5, "one…"},
		{"one two", 4, "one…"},
		{"héllo wörld", 6, "héllo…"},
		{"日本語のテキスト", 4, "日本語…"},
		{"abc", 0, "…"},
		{"", 3, ""},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("  first line\n\tsecond   line \r\n", 100); got != "first line second line" {
		t.Errorf("OneLine kept the breaks: %q", got)
	}
	if got := OneLine("a\nb\nc\nd", 4); got != "a b…" {
		t.Errorf("OneLine clipped to %q", got)
	}
}

func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld", "a, b; c: d", "\xff\xfe broken"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n = n % 1000
		got := Clip(s, n)
		if got == s {
			return
		}
		if k := utf8.RuneCountInString(got); k > max(n, 1) {
			t.Fatalf("Clip(%q, %d) = %q: %d characters", s, n, got, k)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Clip(%q, %d) = %q cut inside a character", s, n, got)
		}
	})
}
