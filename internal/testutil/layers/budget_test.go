package layers

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// tickBudget is how many lines of Go the tick's path may have: what a
// reader meets to follow one tick, the production files of tick and
// decision. What the tick uses but is not its own (the views, the
// records, the settings' rules) lives in packages of its own.
const tickBudget = 2100

// TestTickBudget: the production files of tick and decision stay within
// the budget.
func TestTickBudget(t *testing.T) {
	total := 0
	var sizes []string
	for _, pkg := range []string{"tick", "decision"} {
		out, err := exec.Command("go", "list", "-f", `{{.Dir}}{{range .GoFiles}} {{.}}{{end}}`, module+pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", pkg, err, out)
		}
		fields := strings.Fields(string(out))
		if len(fields) < 2 {
			t.Fatalf("go list %s: no file: %q", pkg, out)
		}
		for _, name := range fields[1:] {
			data, err := os.ReadFile(filepath.Join(fields[0], name))
			if err != nil {
				t.Fatal(err)
			}
			n := bytes.Count(data, []byte{'\n'})
			total += n
			sizes = append(sizes, pkg+"/"+name+" "+strconv.Itoa(n))
		}
	}
	t.Logf("tick and decision: %d lines (%s)", total, strings.Join(sizes, ", "))
	if total > tickBudget {
		t.Errorf("tick and decision have %d lines of Go, over the budget of %d (docs/design.md): move what is not the step's own to the package whose job it is, or make the step simpler", total, tickBudget)
	}
}
