package reason

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestCodesDocumented: the daemon's document has a row for every reason
// code with the result it comes with, and no row for a code that is gone,
// in the order of Codes.
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
	row := regexp.MustCompile("(?m)^\\| `([A-Z_]+)` \\| ([a-z]+) \\|")
	rows := row.FindAllStringSubmatch(table, -1)
	if len(rows) != len(Codes) {
		t.Errorf("docs/daemon.md lists %d reason codes, Codes has %d", len(rows), len(Codes))
	}
	for i, c := range Codes {
		if i >= len(rows) {
			t.Errorf("docs/daemon.md has no row for %s (%s)", c.Code, c.Result)
			continue
		}
		if rows[i][1] != c.Code || rows[i][2] != c.Result {
			t.Errorf("docs/daemon.md row %d is %s (%s), want %s (%s), in the order of Codes", i+1, rows[i][1], rows[i][2], c.Code, c.Result)
		}
	}
}
