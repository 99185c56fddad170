// Package suggest finds the name a user most likely meant when they wrote
// one that is not known, for "did you mean" hints.
package suggest

import (
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// Closest returns the known name nearest to name (by edit distance, ignoring
// case) when it is near enough to be a typo of it: at most a third of
// name's length away, and at least 1. Ties go to the earlier name in known,
// so the answer is the same on every run.
func Closest(name string, known []string) (string, bool) {
	best, bestDist := "", -1
	lower := strings.ToLower(name)
	for _, k := range known {
		d := levenshtein.ComputeDistance(lower, strings.ToLower(k))
		if bestDist < 0 || d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist < 0 || bestDist > max(1, utf8.RuneCountInString(name)/3) {
		return "", false
	}
	return best, true
}
