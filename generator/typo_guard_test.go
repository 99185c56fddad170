package generator

import (
	"errors"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

const typoTemplate = `name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: gpuu}}
service_subnet: 10.68.0.0/16
`

// TestTypoGuard: rule 2 does not remove the gpu worker while the template
// role gpuu matches no role of the inventory, taken from InventoryRoles
// when set and from the machines otherwise; the warning comes with
// ErrNothingToDo too.
func TestTypoGuard(t *testing.T) {
	ms := []*machine.Machine{
		mkMachine("c1", 1, 1).role("compute").obj(),
		mkMachine("c2", 2, 1).role("compute").obj(),
		mkMachine("g1", 3, 1).role("gpu").obj(),
	}
	cur := &cluster.Cluster{Nodes: []*cluster.Node{
		{Address: ms[0].Address(), User: "u", ControlPlane: true},
		{Address: ms[1].Address(), User: "u"},
		{Address: ms[2].Address(), User: "u"},
	}}
	c := constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: 1}
	tmpl := mustTemplate(typoTemplate)
	const warning = `template role "gpuu" matches no machine; inventory roles: compute, gpu`

	// Roles from the machines: gpuu matches none, rule 2 is held back.
	// The nodes carry no labels, so rule 8 has nothing to do either.
	in := input(tmpl, c, ms, cur)
	res, err := Update(in)
	if !errors.Is(err, ErrNothingToDo) || res == nil || !slices.Equal(res.Warnings, []string{warning}) {
		t.Fatalf("Update = %+v, %v; want nothing to do with the warning %q", res, err, warning)
	}
	res, err = Regenerate(in)
	if !errors.Is(err, ErrNothingToDo) || res == nil || !slices.Equal(res.Warnings, []string{warning}) {
		t.Fatalf("Regenerate = %+v, %v; want nothing to do (the gpu worker matches no template) with the warning", res, err)
	}

	// The inventory as sabakan returned it had a gpuu machine (dropped by
	// Sanitize): no typo, rule 2 removes the gpu worker.
	in.InventoryRoles = []string{"compute", "gpu", "gpuu"}
	res, err = Update(in)
	if err != nil || res.Op != OpRemoveUnmatchedRole || len(res.Warnings) != 0 {
		t.Fatalf("Update with gpuu in the inventory = %+v, %v; want rule 2 without warnings", res, err)
	}

	// An empty inventory list is not "unknown": every role is missing.
	in.InventoryRoles = []string{}
	res, err = Update(in)
	if !errors.Is(err, ErrNothingToDo) || res == nil ||
		!slices.Equal(res.Warnings, []string{`template role "compute" matches no machine; inventory roles: none`, `template role "gpuu" matches no machine; inventory roles: none`}) {
		t.Fatalf("Update with no inventory roles = %+v, %v", res, err)
	}
}
