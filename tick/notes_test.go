package tick

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/storage"
)

// TestBundledTemplateRateModelQuiet: the bundled template
// (examples/template.yml, whose three worker templates carry a
// cke.cybozu.com/weight) in the rate model, on a cluster whose rack 4
// holds 2 of its 3 control planes. A tick that has nothing to do warns of
// nothing: ckegen_tick_warnings, read from the metrics collector, is 0.
// The weights are the status's notes, one per worker template, never
// warnings; rack 4 is the status's domains row and the gauge behind
// CkegenQuorumAtRisk, never a warning.
func TestBundledTemplateRateModelQuiet(t *testing.T) {
	ctx := context.Background()
	data, err := os.ReadFile("../examples/template.yml")
	must(t, err)
	js, err := yaml.YAMLToJSON(data)
	must(t, err)
	rate := 80
	s := sitetest.Start(t, sitetest.Options{
		Now:        testNow,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 6, 6, 0 },
		Template:   string(js), StoreURL: true,
		Constraints: &constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: &rate},
	})
	f := &fixture{site: s, etcd: s.Etcd, st: sitetest.StoreOf(s.Storage), store: s.Store, url: s.URL}
	leader := f.lead(t)
	d := f.step("d", nil)
	// The control planes held to racks 4 and 5 by a placement policy for
	// the first tick: rack 4 takes two of them. The policy then goes:
	// the bundled template and the rate model alone.
	putPolicy(t, f, `{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in (rack4, rack5)"]}}}`)
	must(t, d.runOnce(ctx, leader))
	if got := cpsByRack(f.cluster(t)); got["4"] != 2 || got["5"] != 1 {
		t.Fatalf("control planes by rack %v, want 2 in rack 4 and 1 in rack 5: the test's inputs are not what it means", got)
	}
	_, err = f.st.Client.Delete(ctx, f.st.Key(storage.KeySabakanPolicy))
	must(t, err)
	before := f.cluster(t)
	r := d.run(ctx, leader)
	must(t, r.Err)

	st := f.status(t)
	if st.Model != constraints.RateModel || r.Decision.Step != nil || len(f.cluster(t).Nodes) != len(before.Nodes) {
		t.Fatalf("status %+v: want the rate model, the cluster as it was", st)
	}
	if len(st.Warnings) != 0 || r.Warnings != 0 {
		t.Errorf("the tick warned %d times: %q; want none", r.Warnings, st.Warnings)
	}
	if got := series(scrape(t, d), "ckegen_tick_warnings"); !slices.Equal(got, []string{"ckegen_tick_warnings 0"}) {
		t.Errorf("ckegen_tick_warnings: %q, want 0", got)
	}
	if got := series(scrape(t, d), "ckegen_failure_domains_at_risk"); !slices.Equal(got, []string{"ckegen_failure_domains_at_risk 1"}) {
		t.Errorf("ckegen_failure_domains_at_risk: %q, want 1", got)
	}
	if fd := st.Domains; fd == nil || !slices.Equal(fd.Warnings, []string{"rack 4" + quorumWords}) {
		t.Errorf("the domains row: %+v, want rack 4%s", st.Domains, quorumWords)
	}
	var notes []string
	for _, i := range []string{"1", "2", "3"} {
		notes = append(notes, "template nodes["+i+"]: label cke.cybozu.com/weight has no meaning in the rate model (minimum-workers-rate): every HEALTHY machine a worker template accepts is a worker")
	}
	if !slices.Equal(st.SettingsNotes, notes) {
		t.Errorf("the status's notes:\n%s\nwant\n%s", strings.Join(st.SettingsNotes, "\n"), strings.Join(notes, "\n"))
	}

	// The count model: the weights choose, no note.
	must(t, f.st.SetConstraints(ctx, *sitetest.Counts(3, 5)))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); len(st.SettingsNotes) != 0 {
		t.Errorf("count model: notes %q, want none", st.SettingsNotes)
	}
}
