package integrator

import (
	"context"
	"slices"
	"testing"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// queuedPairs are the address and operation of each entry of CKE's repair
// queue, in the queue's order.
func queuedPairs(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	for _, e := range repairEntries(t, f.cke) {
		out = append(out, e.Address+" "+e.Operation)
	}
	return out
}

// TestAutoRepairQueuesOnce is the one deliberate difference from CKE's
// own auto-repair (docs/inside-cke.md): while no API server answers, CKE's
// cluster status carries no repair queue, and CKE v1.35.4's integrator,
// called at every loop of its server, registers every non-healthy machine
// again each time; ckegen's registers each once, the entries CKE's
// registers at its first call, and then only machines not queued yet.
// While an API server answers, the status's queue and the stored one are
// the same entries, counted once against maximum-repair-queue-entries.
func TestAutoRepairQueuesOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5, MaximumRepairQueueEntries: ptr(3)})
	must(t, f.ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
	}
	set := func(addr string, s machine.State) {
		t.Helper()
		_, err := f.site.Store.SetState(serialOf(t, f, addr), s)
		must(t, err)
	}
	set(all[1], machine.StateUnhealthy)
	set(all[4], machine.StateUnreachable)
	// CKE's status without an API server: node statuses, no Kubernetes,
	// no repair queue.
	status := clusterStatus(all, nil)
	status.Kubernetes = cke.KubernetesClusterStatus{}
	must(t, f.st.SetDisabled(ctx, true)) // the repairers alone

	queue := cke.Storage{Client: f.cke}
	clear := func() {
		t.Helper()
		for _, e := range repairEntries(t, f.cke) {
			must(t, queue.DeleteRepairsEntry(ctx, f.leader, e.Index))
		}
	}
	ckes := ckesabakan.NewIntegrator(f.cke)
	must(t, ckes.Do(ctx, f.leader, status))
	first := queuedPairs(t, f)
	must(t, ckes.Do(ctx, f.leader, status))
	if want := []string{all[1] + " unhealthy", all[4] + " unreachable"}; !slices.Equal(sorted(first), sorted(want)) ||
		!slices.Equal(queuedPairs(t, f), append(slices.Clone(first), first...)) {
		t.Fatalf("CKE's integrator registered %v, then %v; want %v, then the same again: the test's inputs are not what it means", first, queuedPairs(t, f), want)
	}
	clear()

	must(t, f.ig.Do(ctx, f.leader, status))
	if got := queuedPairs(t, f); !slices.Equal(got, first) {
		t.Errorf("ckegen's first call registered %v, want CKE's %v", got, first)
	}
	must(t, f.ig.Do(ctx, f.leader, status))
	if got := queuedPairs(t, f); !slices.Equal(got, first) {
		t.Errorf("ckegen's second call: the queue is %v, want %v: an entry already queued was registered again", got, first)
	}
	// A machine not queued yet is queued, alone.
	set(all[6], machine.StateUnhealthy)
	must(t, f.ig.Do(ctx, f.leader, status))
	third := append(slices.Clone(first), all[6]+" unhealthy")
	if got := queuedPairs(t, f); !slices.Equal(got, third) {
		t.Errorf("a third machine: the queue is %v, want %v", got, third)
	}

	// An API server answers: the status's queue is the stored one. Its
	// entry counts once: 1 + 2 new machines is within the limit, 3;
	// counted twice, 2 + 2 would refuse both.
	clear()
	set(all[4], machine.StateHealthy)
	set(all[6], machine.StateHealthy)
	must(t, f.ig.Do(ctx, f.leader, status))
	stored := repairEntries(t, f.cke)
	if len(stored) != 1 {
		t.Fatalf("the queue is %v, want %s alone", queuedPairs(t, f), all[1])
	}
	withAPI := clusterStatus(all, nil)
	withAPI.RepairQueue.Entries = stored
	set(all[5], machine.StateUnhealthy)
	set(all[7], machine.StateUnhealthy)
	must(t, f.ig.Do(ctx, f.leader, withAPI))
	if got, want := queuedPairs(t, f), []string{all[1] + " unhealthy", all[5] + " unhealthy", all[7] + " unhealthy"}; !slices.Equal(got, want) {
		t.Errorf("with an API server: the queue is %v, want %v", got, want)
	}
}

// TestQueued: the status's entries, then the stored ones it did not see,
// each index once; an entry of the status deleted since stays.
func TestQueued(t *testing.T) {
	e := func(i int64, addr string) *cke.RepairQueueEntry {
		return &cke.RepairQueueEntry{Index: i, Address: addr}
	}
	pairs := func(es []*cke.RepairQueueEntry) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.Address)
		}
		return out
	}
	for _, c := range []struct {
		seen, stored []*cke.RepairQueueEntry
		want         []string
	}{
		{nil, nil, nil},
		{nil, []*cke.RepairQueueEntry{e(0, "a"), e(1, "b")}, []string{"a", "b"}},
		{[]*cke.RepairQueueEntry{e(0, "a")}, nil, []string{"a"}},
		{[]*cke.RepairQueueEntry{e(0, "a"), e(1, "b")}, []*cke.RepairQueueEntry{e(1, "b"), e(2, "c")}, []string{"a", "b", "c"}},
		{[]*cke.RepairQueueEntry{e(3, "a")}, []*cke.RepairQueueEntry{e(3, "a")}, []string{"a"}},
	} {
		if got := pairs(queued(c.seen, c.stored)); !slices.Equal(got, c.want) {
			t.Errorf("queued(%v, %v) = %v, want %v", pairs(c.seen), pairs(c.stored), got, c.want)
		}
	}
}
