package config

import "strings"

// Suggest returns the candidate the user most likely meant by word, or "".
// It catches the three mistakes seen in hand-written config and flags: a different
// spelling style (maxTurnsPerSession), a typo (spwan), and a shortened name
// (max_turn for max_turns_per_session).
func Suggest(word string, candidates []string) string {
	w := squash(word)
	if w == "" {
		return ""
	}
	for _, c := range candidates {
		if squash(c) == w {
			return c
		}
	}

	// Typos: the closest candidate within a distance that grows with length,
	// so "qit" finds quit but "ui" does not find up.
	limit := 0
	switch {
	case len(w) >= 6:
		limit = 2
	case len(w) >= 3:
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(w, squash(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return best
	}

	// Shortened names: only when exactly one candidate fits, so "max" does
	// not arbitrarily pick one of a dozen limits.
	if len(w) < 4 {
		return ""
	}
	var hits []string
	for _, c := range candidates {
		if strings.Contains(squash(c), w) {
			hits = append(hits, c)
		}
	}
	if len(hits) == 1 {
		return hits[0]
	}
	return ""
}

// squash folds case and separators: MaxTurns, max-turns and max_turns meet.
func squash(s string) string {
	return strings.NewReplacer("_", "", "-", "", " ", "").Replace(strings.ToLower(s))
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of neighbours each cost 1, so the
// common "spwan" for "spawn" is one edit away.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rolling rows: the swap rule looks two rows back.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
