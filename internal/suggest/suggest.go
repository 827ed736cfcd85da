// Package suggest finds, among a few candidates, the one a mistyped word
// was probably meant to be: the "did you mean" of command-line and
// configuration errors.
package suggest

import "strings"

// Distance is the Levenshtein distance between two short strings, in bytes.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// maxWord bounds the words compared: a hint is not worth quadratic time
// on a long hostile string.
const maxWord = 256

// Closest returns the candidate nearest to word, ignoring case, when it is
// near enough to be a typo (two edits, or a third of the word's length for
// longer words, apart), else "". Ties go to the earlier candidate.
func Closest(word string, candidates []string) string {
	if len(word) > maxWord {
		return ""
	}
	w := strings.ToLower(word)
	limit := max(2, len(w)/3)
	best, bestD := "", limit+1
	for _, c := range candidates {
		if len(c) > maxWord {
			continue
		}
		if d := Distance(w, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}
