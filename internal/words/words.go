// Package words shapes the words of ckegen's messages.
package words

import (
	"fmt"
	"strconv"
)

// Count is n things: "1 step", "2 steps".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Bytes is n bytes, and in MiB too when that says more.
func Bytes(n int) string {
	if n < 64<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d bytes (%.3g MiB)", n, float64(n)/(1<<20))
}
