package suggest

import (
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxTypo is how many edits away a name may be from a flag or a command
// for it to be suggested: an edit being a character added, removed,
// replaced, or two neighbours swapped (endpiont is two edits from
// endpoints).
const MaxTypo = 2

// Near returns the known names nearest to name (ignoring case), when they
// are at most MaxTypo edits from it, in the order of known: set-urll gets
// set-url, not get-url, which is two edits away. A name is never suggested
// for one as long as itself or shorter (x for y): it must keep at least
// one of name's characters. This is the rule of every binary's "did you
// mean" for a flag or a command.
func Near(name string, known []string) []string {
	lower := strings.ToLower(name)
	return nearest(known, func(k string) int {
		if d := Distance(lower, strings.ToLower(k)); d < utf8.RuneCountInString(name) {
			return d
		}
		return MaxTypo + 1
	})
}

// nearest are the names of known whose distance, by dist, is the least
// and at most MaxTypo, in the order of known, each once.
func nearest(known []string, dist func(string) int) []string {
	var out []string
	best := MaxTypo + 1
	for _, k := range known {
		switch d := dist(k); {
		case d < best:
			best, out = d, []string{k}
		case d == best && d <= MaxTypo && !slices.Contains(out, k):
			out = append(out, k)
		}
	}
	return out
}

// Distance is the number of edits from a to b: characters added, removed
// or replaced, and two neighbouring characters swapped (the optimal string
// alignment distance). It counts characters, not bytes, and is case
// sensitive.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	// Three rows of the table: two back, one back, this one.
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

// Or writes names as "a", "a or b", "a, b or c", each with prefix before
// it ("--").
func Or(prefix string, names []string) string {
	var b strings.Builder
	for i, n := range names {
		switch {
		case i == 0:
		case i == len(names)-1:
			b.WriteString(" or ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(prefix)
		b.WriteString(n)
	}
	return b.String()
}
