package generator

import (
	"errors"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// TestBreaker: Unhealthy counts gone machines and states other than
// HEALTHY, UPDATING and UNINITIALIZED, not rebooting nodes; Taints changes
// state taints only, where Update would change membership.
func TestBreaker(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	var ms []*machine.Machine
	for r := 1; r <= 3; r++ {
		for i := 1; i <= 4; i++ {
			ms = append(ms, mkMachine("s"+string(rune('0'+r))+string(rune('0'+i)), r, i).obj())
		}
	}
	c := constraints.CountDefaults()
	c.ControlPlaneCount, c.MinimumWorkers = 3, 5
	gen, err := Generate(input(tmpl, c, ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	cur := gen.Cluster
	in := input(tmpl, c, ms, cur)
	if got := Unhealthy(in); len(got) != 0 {
		t.Fatalf("Unhealthy of a healthy cluster = %v", got)
	}
	if _, err := Taints(in); !errors.Is(err, ErrNothingToDo) {
		t.Errorf("Taints of a healthy cluster: %v, want ErrNothingToDo", err)
	}

	byAddr := map[string]*machine.Machine{}
	for _, m := range ms {
		byAddr[m.Address()] = m
	}
	setState := func(addr string, s machine.State) {
		m := *byAddr[addr]
		m.Status.State = s
		for i := range ms {
			if ms[i].Address() == addr {
				ms[i] = &m
			}
		}
	}
	n := cur.Nodes
	setState(n[0].Address, machine.StateUnreachable) // a control plane
	setState(n[3].Address, machine.StateRetiring)
	setState(n[4].Address, machine.StateUpdating)      // counts as healthy
	setState(n[5].Address, machine.StateUninitialized) // counts as healthy
	setState(n[6].Address, machine.StateUnhealthy)     // rebooting: not counted
	gone := n[7].Address
	var rest []*machine.Machine
	for _, m := range ms {
		if m.Address() != gone {
			rest = append(rest, m)
		}
	}
	in = input(tmpl, c, rest, cur)
	in.Rebooting = map[string]bool{n[6].Address: true}
	want := []string{n[0].Address, n[3].Address, gone}
	if got := Unhealthy(in); !slices.Equal(got, want) {
		t.Errorf("Unhealthy = %v, want %v", got, want)
	}

	if up, err := Update(in); err != nil || up.Op != OpRemoveNonExistent {
		t.Fatalf("Update = %v, %v; want the gone node removed (so that Taints is tested where Update changes membership)", up, err)
	}
	res, err := Taints(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Op != OpTaintNodes || len(res.Changes) != 2 || res.Changes[0].Address != n[0].Address || res.Changes[1].Address != n[3].Address {
		t.Errorf("Taints = %s %+v; want the unreachable control plane and the retiring worker tainted", res.Op, res.Changes)
	}
	if len(res.Cluster.Nodes) != len(cur.Nodes) {
		t.Fatalf("Taints changed membership: %d nodes, had %d", len(res.Cluster.Nodes), len(cur.Nodes))
	}
	for i, node := range res.Cluster.Nodes {
		old := cur.Nodes[i]
		if node.Address != old.Address || node.ControlPlane != old.ControlPlane {
			t.Errorf("node %d: %s cp=%v, was %s cp=%v", i, node.Address, node.ControlPlane, old.Address, old.ControlPlane)
		}
		tainted := len(node.Taints) > 0
		if wantTaint := i == 0 || i == 3; tainted != wantTaint {
			t.Errorf("node %d (%s): taints %v", i, node.Address, node.Taints)
		}
	}
	if _, err := Taints(input(tmpl, c, ms, nil)); err == nil {
		t.Error("Taints without a cluster succeeded")
	}
}
