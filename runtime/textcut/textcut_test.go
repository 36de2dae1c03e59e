package textcut

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
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
		// What reads as one character is kept whole or left out whole.
		{"xxxx🇯🇵 tail", 6, "xxxx…"},
		{"xxxx🇯🇵 tail", 7, "xxxx🇯🇵…"},
		{"xx👩\u200d💻 tail", 5, "xx…"},
		{"xx👩\u200d💻 tail", 6, "xx👩\u200d💻…"},
		{"cafe\u0301 noir", 5, "caf…"},
		{"cafe\u0301 noir", 6, "cafe\u0301…"},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdef", 3, "abc"},
		{"AA\U0001F469\u200d\U0001F4BB", 3, "AA"},
		{"AA\U0001F469\u200d\U0001F4BB", 5, "AA\U0001F469\u200d\U0001F4BB"},
		{"be\u0301", 2, "b"},
	} {
		if got := Prefix(c.s, c.n); got != c.want {
			t.Errorf("Prefix(%q, %d) = %q; want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestClipCells(t *testing.T) {
	for _, c := range []struct {
		s    string
		w    int
		want string
	}{
		{"short", 10, "short"},
		{"漢字漢字漢字", 12, "漢字漢字漢字"},
		{"漢字漢字漢字", 11, "漢字漢字漢…"},
		{"漢字漢字漢字", 10, "漢字漢字…"},
		{"ab🇯🇵🇺🇸", 5, "ab🇯🇵…"},
		{"ab👩\u200d💻cd", 4, "ab…"},
	} {
		got := ClipCells(c.s, c.w)
		if got != c.want {
			t.Errorf("ClipCells(%q, %d) = %q; want %q", c.s, c.w, got, c.want)
		}
		if w := uniseg.StringWidth(got); w > c.w {
			t.Errorf("ClipCells(%q, %d) is %d columns wide", c.s, c.w, w)
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
		if kept := got[:len(got)-len("…")]; uniseg.GraphemeClusterCount(kept) > 0 && !strings.HasPrefix(s, kept) {
			t.Fatalf("Clip(%q, %d) = %q is not the start of it", s, n, got)
		}
		if w := ClipCells(s, n); uniseg.StringWidth(w) > max(n, 1) {
			t.Fatalf("ClipCells(%q, %d) = %q: %d columns", s, n, w, uniseg.StringWidth(w))
		}
	})
}
