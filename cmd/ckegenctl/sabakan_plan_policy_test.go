package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/planreport"
)

// cpRacks lists the racks of the control planes of a plan's cluster.
func cpRacks(d *planreport.Document) []string {
	var racks []string
	for _, n := range d.Cluster.Nodes {
		if n.ControlPlane {
			racks = append(racks, n.Labels["cke.cybozu.com/rack"])
		}
	}
	slices.Sort(racks)
	return racks
}

// TestPlanWithPolicy: `sabakan plan` follows the stored placement policy
// as the daemon does, and --policy replaces it; a bad policy or metrics
// that cannot be fetched fail the plan.
func TestPlanWithPolicy(t *testing.T) {
	f := newPlanFixture(t)
	if _, errOut, code := f.run("sabakan", "set-template", f.file("t.yml", planTemplate)); code != 0 {
		t.Fatal(errOut)
	}
	if err := sitetest.StoreOf(f.st).SetURL(t.Context(), f.sabakan.URL+"/graphql"); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := f.run("constraints", "set", "control-plane-count", "3"); code != 0 {
		t.Fatal(errOut)
	}

	// Without a policy, one control plane per rack.
	d, _ := f.plan()
	if got := cpRacks(d); !slices.Equal(got, []string{"0", "1", "2"}) {
		t.Fatalf("without a policy: control planes in racks %v", got)
	}
	// What if control planes stayed out of rack 2.
	notRack2 := f.file("p.yml", "placements:\n  control-plane:\n    constraints: [cke.cybozu.com/rack != 2]\n")
	d, _ = f.plan("--policy", notRack2)
	if got := cpRacks(d); slices.Contains(got, "2") || len(got) != 3 {
		t.Fatalf("with --policy: control planes in racks %v", got)
	}
	withFlag, _, _ := f.run("sabakan", "plan", "--policy", notRack2)
	// Stored, the same policy gives the same plan without the flag.
	if _, errOut, code := f.run("sabakan", "set-policy", notRack2); code != 0 {
		t.Fatal(errOut)
	}
	if stored, _, _ := f.run("sabakan", "plan"); stored != withFlag {
		t.Errorf("plan with the stored policy:\n%s\nwant, as with --policy:\n%s", stored, withFlag)
	}

	for _, c := range []struct{ name, policy, want string }{
		{"bad constraint", "placements: {control-plane: {constraints: [cke.cybozu.com/rack <> 2]}}\n",
			"placements.control-plane.constraints[0]"},
		{"unknown template", "placements: {gpu: {constraints: [a = b]}}\n", "placements.gpu"},
		{"metrics down", `placements: {control-plane: {metrics: [{name: t, weight: 1}]}}
metrics: {t: {provider: p, query: up, min: 0, max: 1}}
providers: {p: {type: prometheus, url: "http://127.0.0.1:1", timeout: 1s}}
`, "metrics unavailable"},
	} {
		out, errOut, code := f.run("sabakan", "plan", "--policy", f.file("bad.yml", c.policy))
		if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want an error with %q", c.name, code, out, errOut, c.want)
		}
	}
	if out, errOut, code := f.run("sabakan", "plan", "--stored", "--policy", notRack2); code != 1 || out != "" || !strings.Contains(errOut, "--policy") {
		t.Errorf("--stored with --policy: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
