package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
)

// TestGeneratePlan: `generate --plan` is the same steps as running
// `generate --current` again and again on its own output, and ends on the
// same cluster.
func TestGeneratePlan(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	o := dcgen.Default(now)
	o.Racks, o.PerRack, o.UnhealthyPct = 4, 6, 0
	o.Roles, o.Weights = []string{"compute", "storage"}, []int{2, 1}
	ms := dcgen.Machines(o)
	file := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, data)
		return p
	}
	machines, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	mfile := file("m.json", machines)
	tmpl := file("t.yml", []byte(planTemplate))
	cons := file("c.json", []byte(`{"control-plane-count": 3, "minimum-workers": 6}`))
	gen := func(args ...string) (string, string, int) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := run(append([]string{"sabakan", "generate", "--template", tmpl, "--now", now.Format(time.RFC3339)}, args...), strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), code
	}
	cur, errOut, code := gen("--machines", mfile, "--constraints", cons)
	if code != 0 {
		t.Fatal(errOut)
	}
	current := file("cur.yml", []byte(cur))

	// Five control planes, and a worker's machine turns UNREACHABLE.
	c, err := cluster.Parse([]byte(cur))
	if err != nil {
		t.Fatal(err)
	}
	for i := range ms {
		if ms[i].Address() == c.Nodes[4].Address {
			ms[i].Status.State = machine.StateUnreachable
		}
	}
	machines, _ = json.Marshal(ms)
	mfile = file("m2.json", machines)
	cons = file("c5.json", []byte(`{"control-plane-count": 5, "minimum-workers": 6}`))

	out, errOut, code := gen("--machines", mfile, "--constraints", cons, "--current", current, "--plan", "-o", "json")
	if code != 0 || errOut != "" {
		t.Fatalf("--plan: exit %d, stderr %s", code, errOut)
	}
	var d planreport.Document
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	var planOps []string
	for _, s := range d.Steps {
		planOps = append(planOps, s.Op)
	}
	var stepOps []string
	for range 20 {
		out, errOut, code := gen("--machines", mfile, "--constraints", cons, "--current", current, "--explain", "json")
		var e explanation
		if code != 0 || json.Unmarshal([]byte(errOut), &e) != nil {
			t.Fatalf("one step: exit %d, stderr %s", code, errOut)
		}
		if e.Op == opNothingToDo {
			break
		}
		stepOps = append(stepOps, e.Op)
		current = file("cur.yml", []byte(out))
	}
	if len(planOps) < 2 || !slices.Equal(planOps, stepOps) || d.Result != "settled" {
		t.Errorf("plan %s %v, one step at a time %v", d.Result, planOps, stepOps)
	}
	final, err := cluster.Parse([]byte(readTestFile(t, current)))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(final, d.Cluster); diff != "" {
		t.Errorf("the plan's cluster differs from the steps' (-steps +plan):\n%s", diff)
	}

	// Text by default, YAML on request, --max-steps.
	text, _, code := gen("--machines", mfile, "--constraints", cons, "--current", file("cur0.yml", []byte(cur)), "--plan")
	if code != 0 || !strings.HasPrefix(text, "step 1: ") || !strings.Contains(text, "\nplan: settled after ") {
		t.Errorf("--plan text: exit %d\n%s", code, text)
	}
	yml, _, code := gen("--machines", mfile, "--constraints", cons, "--current", file("cur0.yml", []byte(cur)), "--plan", "-o", "yaml", "--max-steps", "1")
	if code != 0 || !strings.HasPrefix(yml, "cluster:") || !strings.Contains(yml, "\nresult: max-steps\n") {
		t.Errorf("--plan -o yaml --max-steps 1: exit %d\n%s", code, yml)
	}

	// Bad input: exit 1, flags that do not go together exit 2; nothing
	// on stdout.
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"--machines", mfile, "--plan", "--explain", "text"}, "--explain: a plan explains every step already", 2},
		{[]string{"--machines", mfile, "--plan", "-o", "xml"}, `--output: must be one of [text json yaml], got "xml"`, 2},
		{[]string{"--machines", mfile, "--plan", "--max-steps", "0"}, "--max-steps: must be at least 1, got 0", 2},
		{[]string{"--machines", mfile, "--max-steps", "3"}, "--max-steps needs --plan", 2},
		{[]string{"--machines", mfile, "--plan", "--template-changed"}, "--template-changed needs --current", 2},
		{[]string{"--machines", file("bad.json", []byte(`[{"spec":{"serial":""}}]`)), "--plan"}, "spec.serial: must not be empty", 1},
	} {
		out, errOut, code := gen(c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, c.code, c.want)
		}
	}
}

func readTestFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
