// Package words shapes the words of ckegen's messages.
package words

import "strconv"

// Count is n things: "1 step", "2 steps".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
