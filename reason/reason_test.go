package reason

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCodesDocumented: the daemon's document has a row for every reason
// code with every result it comes with, and no row for a code that is
// gone, in the order of Codes.
func TestCodesDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/daemon.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(doc), "<!-- reasons: begin -->")
	table, _, ok2 := strings.Cut(table, "<!-- reasons: end -->")
	if !ok || !ok2 {
		t.Fatal("docs/daemon.md has no reasons table between its markers")
	}
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([^|]+) \\|")
	rows := row.FindAllStringSubmatch(table, -1)
	if len(rows) != len(Codes) {
		t.Errorf("docs/daemon.md lists %d reason codes, Codes has %d", len(rows), len(Codes))
	}
	for i, c := range Codes {
		if i >= len(rows) {
			t.Errorf("docs/daemon.md has no row for %s (%s)", c.Code, c.Results())
			continue
		}
		if rows[i][1] != c.Code || rows[i][2] != c.Results() {
			t.Errorf("docs/daemon.md row %d is %s (%s), want %s (%s), in the order of Codes", i+1, rows[i][1], rows[i][2], c.Code, c.Results())
		}
	}
}

// TestResults: a code comes with its own result, and may be recorded
// under its others; a code that is not one comes with none.
func TestResults(t *testing.T) {
	for _, c := range []struct {
		code, result string
		resultOf     bool
		allows       bool
	}{
		{NoTemplate, Waiting, true, true},
		{NoTemplate, Failing, false, false},
		{TooManyUnhealthy, Failing, true, true},
		{TooManyUnhealthy, Planning, false, true},
		{TooManyUnhealthy, Held, false, false},
		{QuietTime, Planning, true, true},
		{QuietTime, Failing, false, false},
		{"NO_SUCH_CODE", Failing, false, false},
	} {
		if got := ResultOf(c.code) == c.result; got != c.resultOf {
			t.Errorf("ResultOf(%s) = %q; is %s: %v, want %v", c.code, ResultOf(c.code), c.result, got, c.resultOf)
		}
		if got := Allows(c.code, c.result); got != c.allows {
			t.Errorf("Allows(%s, %s) = %v, want %v", c.code, c.result, got, c.allows)
		}
	}
	if got, want := ResultOf("NO_SUCH_CODE"), ""; got != want {
		t.Errorf("ResultOf of an unknown code = %q, want %q", got, want)
	}
	// Every code is distinct and comes with a result, and an Also says
	// when.
	seen := map[string]bool{}
	for _, c := range Codes {
		if seen[c.Code] || c.Result == "" {
			t.Errorf("%s: listed twice, or without a result", c.Code)
		}
		seen[c.Code] = true
		for _, a := range c.Also {
			if a.Result == "" || a.Result == c.Result || a.When == "" {
				t.Errorf("%s: also %+v: another result, and when", c.Code, a)
			}
		}
	}
}

// Allows reports whether a tick may record code under result: its own
// result or one of its Also.
func Allows(code, result string) bool {
	c := find(code)
	if c == nil {
		return false
	}
	if c.Result == result {
		return true
	}
	for _, a := range c.Also {
		if a.Result == result {
			return true
		}
	}
	return false
}

// Results says the results of c as the documents do: "failing", or
// "failing, or planning when quiet time or the trigger held the tick".
func (c Code) Results() string {
	s := c.Result
	for _, a := range c.Also {
		s += ", or " + a.Result + " when " + a.When
	}
	return s
}
