// Package textcut shortens text for the one-line places it is shown or
// quoted in: titles, listings, error messages, the scripted model's
// replies.
package textcut

import (
	"strings"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// Flatten makes every run of white space in s, line breaks included, one
// space, and trims both ends.
func Flatten(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// Clip cuts s to at most n characters (code points), the last of them an
// ellipsis where it was cut, never inside what a reader sees as one
// character: an emoji made of several, a flag, a letter and its accents.
// White space and the punctuation that would dangle before the ellipsis
// (",;:") are dropped from the cut end. n below 1 is taken as 1.
func Clip(s string, n int) string {
	n = max(n, 1)
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return cut(s, runes, n-1)
}

// ClipCells is Clip by the columns of a terminal that s takes, a wide
// character (日) two of them, rather than by its characters.
func ClipCells(s string, w int) string {
	w = max(w, 1)
	if uniseg.StringWidth(s) <= w {
		return s
	}
	return cut(s, func(_ string, width int) int { return width }, w-1)
}

// cut is the start of s, in whole grapheme clusters whose sizes add up
// to at most room, followed by an ellipsis.
func cut(s string, size func(cluster string, width int) int, room int) string {
	return strings.TrimRight(s[:fit(s, size, room)], " \t\n,;:") + "…"
}

// fit is the length in bytes of the start of s, in whole grapheme
// clusters, whose sizes add up to at most room.
func fit(s string, size func(cluster string, width int) int, room int) int {
	end, used, state := 0, 0, -1
	for rest := s; rest != ""; {
		var cluster string
		var width int
		cluster, rest, width, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if used += size(cluster, width); used > room {
			break
		}
		end += len(cluster)
	}
	return end
}

// runes is the size of a cluster in code points.
func runes(cluster string, _ int) int { return utf8.RuneCountInString(cluster) }

// Prefix is the longest start of s in whole grapheme clusters that holds
// at most n code points: s cut without an ellipsis, for a caller that
// says in its own words what was left out.
func Prefix(s string, n int) string {
	if len(s) <= n || utf8.RuneCountInString(s) <= n {
		return s
	}
	return s[:fit(s, runes, n)]
}

// OneLine is s flattened and clipped to n characters.
func OneLine(s string, n int) string {
	return Clip(Flatten(s), n)
}

// OneLineCells is s flattened and clipped to w terminal columns.
func OneLineCells(s string, w int) string {
	return ClipCells(Flatten(s), w)
}
