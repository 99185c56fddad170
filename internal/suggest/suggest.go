// Package suggest finds the name a user most likely meant when they wrote
// one that is not known, for "did you mean" hints.
package suggest

import (
	"strings"
	"unicode/utf8"

	"github.com/agnivade/levenshtein"
)

// Closest returns the known name nearest to name when it is near enough to
// be a typo of it: the same letters up to case and separators
// (criEndpoint, cri-endpoint for cri_endpoint), or an edit distance of at
// most a third of name's length (at least 1). Ties go to the earlier name in
// known, so the answer is the same on every run.
func Closest(name string, known []string) (string, bool) {
	n := fold(name)
	for _, k := range known {
		if fold(k) == n {
			return k, true
		}
	}
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

// fold lowercases s and drops the separators people mix up.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '_', '-', '.', ' ':
			return -1
		}
		return r
	}, strings.ToLower(s))
}
