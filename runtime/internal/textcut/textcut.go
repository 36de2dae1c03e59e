// Package textcut shortens text for the one-line places it is shown or
// quoted in: titles, listings, error messages, the scripted model's
// replies.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Flatten makes every run of white space in s, line breaks included, one
// space, and trims both ends.
func Flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Clip cuts s to at most n characters, the last of them an ellipsis where
// it was cut, never inside a character. White space and the punctuation
// that would dangle before the ellipsis (",;:") are dropped from the cut
// end. n below 1 is taken as 1.
func Clip(s string, n int) string {
	n = max(n, 1)
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	k := 0
	for i := range s {
		if k == n-1 {
			return strings.TrimRight(s[:i], " \t\n,;:") + "…"
		}
		k++
	}
	return s
}

// OneLine is s flattened and clipped to n characters.
func OneLine(s string, n int) string {
	return Clip(Flatten(s), n)
}
