package tick

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/world"
)

// TestPlanDigest: a plan that changes the cluster is identified by the
// cluster it leaves; one that leaves it as it is, by the cluster's
// revision alone, and never like one that changes it.
func TestPlanDigest(t *testing.T) {
	a := &cluster.Cluster{Name: "a", Nodes: []*cluster.Node{{Address: "10.0.0.1", ControlPlane: true}}}
	b := &cluster.Cluster{Name: "a", Nodes: []*cluster.Node{{Address: "10.0.0.2", ControlPlane: true}}}
	stored := func(c *cluster.Cluster, rev int64) planreport.Stored {
		return planreport.Stored{Document: planreport.Document{Result: generator.PlanSettled, Cluster: c}, ClusterRevision: rev}
	}
	digest := func(p planreport.Stored, unchanged bool) string {
		t.Helper()
		d, err := p.Digest(unchanged)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if digest(stored(a, 5), false) == digest(stored(b, 5), false) {
		t.Error("two plans that leave different clusters have one digest")
	}
	if digest(stored(a, 5), true) != digest(stored(b, 5), true) {
		t.Error("a plan that leaves the cluster as it is is not identified by the cluster's revision alone")
	}
	if digest(stored(a, 5), true) == digest(stored(a, 6), true) {
		t.Error("the cluster's revision is not part of the digest")
	}
	if digest(stored(a, 5), true) == digest(stored(nil, 5), false) {
		t.Error("a plan that keeps the cluster has the digest of one that builds none")
	}
}

// TestSettledPlanStoredOnce: in schedule, a settled plan is stored once
// and not again while nothing changes. The first tick writes the cluster
// and computes the plan from it (Run); the next ones have nothing to
// do and take the settled plan from their own decision: both must store
// the same plan.
func TestSettledPlanStoredOnce(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	first := f.planRev(t)
	if first == 0 {
		t.Fatal("no plan stored")
	}
	for range 3 {
		must(t, d.runOnce(ctx, leader))
	}
	if got := f.planRev(t); got != first {
		t.Errorf("nothing changed, yet the plan was stored again (revision %d, then %d)", first, got)
	}
}

// TestHeldPlanStoredOnce: over max-unhealthy the tick writes the state
// taints, and the plan from the tainted cluster is the breaker's hold:
// no step, held with TOO_MANY_UNHEALTHY, stored once and not again while
// nothing changes. (A plan with steps is identified by the cluster it
// leads to: TestPlanDigest.)
func TestHeldPlanStoredOnce(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	must(t, f.st.SetMaxUnhealthy(ctx, intake.MaxUnhealthy{Value: 1}))
	for _, w := range workers(f.cluster(t))[:2] {
		_, err := f.store.SetState(serial(w), machine.StateUnreachable)
		must(t, err)
	}
	_ = d.runOnce(ctx, leader) // TOO_MANY_UNHEALTHY: the state taints are written
	rev := f.planRev(t)
	for range 2 {
		_ = d.runOnce(ctx, leader) // nothing more to write
	}
	if got := f.planRev(t); got != rev {
		t.Fatalf("nothing changed, yet the plan was stored again (revision %d, then %d)", rev, got)
	}
	plan, err := planreport.ReadStored(ctx, f.st.Storage)
	must(t, err)
	if plan.Result != generator.PlanHeld || plan.Reason != reason.TooManyUnhealthy || len(plan.Steps) != 0 || !strings.HasSuffix(plan.Message, world.BreakerHolds) {
		t.Fatalf("stored plan %s %s %q with %d steps, want held %s with none", plan.Result, plan.Reason, plan.Message, len(plan.Steps), reason.TooManyUnhealthy)
	}
}

// TestSettledPlanKeepsWarnings: the plan a steady tick takes from its own
// decision carries that decision's warnings, as Run's would (here
// the typo guard's).
func TestSettledPlanKeepsWarnings(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	typo := `{"name":"t","nodes":[{"user":"u","control_plane":true},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"compute"}},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"gpuu"}}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`
	must(t, f.st.SetTemplate(ctx, []byte(typo)))
	for range 3 {
		must(t, d.runOnce(ctx, leader))
	}
	plan, err := planreport.ReadStored(ctx, f.st.Storage)
	must(t, err)
	want := `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`
	if plan.Result != generator.PlanSettled || len(plan.Steps) != 0 || !slices.Contains(plan.Warnings, want) {
		t.Errorf("steady plan: %s, %d steps, warnings %q; want settled with %q", plan.Result, len(plan.Steps), plan.Warnings, want)
	}
}
