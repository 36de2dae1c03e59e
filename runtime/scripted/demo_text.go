package scripted

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/swarmdeck/swarmdeck/runtime/textcut"
)

// summaryLine picks the line of a result worth quoting: its first bullet,
// else its first line, without the scripted-model prefix.
func summaryLine(s string) string {
	s = unlabel(s)
	first := ""
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if first == "" {
			first = line
		}
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			return textcut.Clip(rest, 240)
		}
	}
	return textcut.Clip(first, 240)
}

// numberedLines returns up to n lines that start with "1.", "2." and so on.
func numberedLines(s string, n int) []string {
	var out []string
	for line := range strings.Lines(s) {
		line = strings.TrimSpace(line)
		i := 0
		for i < len(line) && line[i] >= '0' && line[i] <= '9' {
			i++
		}
		if i > 0 && i < len(line) && line[i] == '.' {
			out = append(out, textcut.Clip(line, 160))
			if len(out) == n {
				break
			}
		}
	}
	return out
}

// searchWord picks a word from the goal to search the workspace for: its
// longest word of four letters or more, else README.
func searchWord(goal string) string {
	best := ""
	for _, w := range strings.FieldsFunc(goal, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if len([]rune(w)) >= 4 && len(w) > len(best) {
			best = w
		}
	}
	if best == "" {
		return "README"
	}
	return strings.ToLower(best)
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprint(n) + " " + many
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
