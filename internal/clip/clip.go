// Package clip bounds the text that comes from the inventory or a server
// (serials, labels, error bodies) before it is echoed in a warning, a
// message, a status or a log: a hostile or broken answer must not make a
// status too large to store or a log line of megabytes.
package clip

import (
	"strconv"
	"unicode/utf8"
)

// MaxValue is how much of one echoed value is kept (docs/security.md).
const MaxValue = 1024

// Value returns s cut to MaxValue bytes, marked with how much was left
// out: "abc…(1234 bytes more)".
func Value(s string) string { return Text(s, MaxValue) }

// Text returns s cut to at most max bytes on a UTF-8 boundary, followed by
// "…(N bytes more)" when anything was cut.
func Text(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…(" + strconv.Itoa(len(s)-cut) + " bytes more)"
}
