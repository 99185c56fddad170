package daemon

import (
	"context"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/planreport"
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
		d, err := planDigest(p, unchanged)
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
// and computes the plan from it (MakePlan); the next ones have nothing to
// do and take the settled plan from their own decision: both must store
// the same plan.
func TestSettledPlanStoredOnce(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.daemon("d", nil)
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
