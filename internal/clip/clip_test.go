package clip

import (
	"strings"
	"testing"
)

func TestText(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"", 4, ""},
		{"abcd", 4, "abcd"},
		{"abcde", 4, "abcd…(1 bytes more)"},
		// Never half a rune: "é" is two bytes.
		{"abcé", 4, "abc…(2 bytes more)"},
		{"ééé", 3, "é…(4 bytes more)"},
	}
	for _, c := range cases {
		if got := Text(c.in, c.max); got != c.want {
			t.Errorf("Text(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestValue(t *testing.T) {
	big := strings.Repeat("x", 50<<20)
	got := Value(big)
	if !strings.HasPrefix(got, strings.Repeat("x", MaxValue)+"…(") || len(got) > MaxValue+32 {
		t.Errorf("a 50 MiB value echoed as %d bytes: %.40q…", len(got), got[len(got)-30:])
	}
	if !strings.HasSuffix(got, "(52427776 bytes more)") {
		t.Errorf("suffix %q", got[MaxValue:])
	}
}
