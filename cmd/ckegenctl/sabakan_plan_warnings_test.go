package main

import (
	"os"
	"strings"
	"testing"
)

// TestPlanListsAWarningOnce: a warning the generator gives at every tick
// (a template role that matches no machine) is listed once in the plan,
// online and offline, although each of the plan's ticks, and the one that
// ends it, gives it.
func TestPlanListsAWarningOnce(t *testing.T) {
	s := newRack4Site(t)
	data, err := os.ReadFile("../../examples/template.yml")
	must(t, err)
	typo := writeFileIn(t, s.dir, "typo.yml", strings.Replace(string(data), "cke.cybozu.com/role: gpu", "cke.cybozu.com/role: gpux", 1))
	four := writeFileIn(t, s.dir, "four.json", `{"control-plane-count": 4, "minimum-workers": 20}`)
	warning := `warning: template role "gpux" matches no machine`
	for _, args := range [][]string{
		{"sabakan", "plan", "--template", typo, "--constraints", four},
		{"sabakan", "generate", "--plan", "--template", typo, "--constraints", four, "--machines", "../../examples/machines.json",
			"--current", "../../examples/cluster-rack4.yml", "--now", "2026-11-28T00:00:00Z"},
	} {
		out, errOut, code := s.run(args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		if n := strings.Count(out+errOut, warning); n != 1 || !strings.Contains(out, "step 1: increase control plane") {
			t.Errorf("%v: the warning %d times, want once:\n%s\nstderr:\n%s", args, n, out, errOut)
		}
	}
}
