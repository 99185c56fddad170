package generator

import (
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// TestCanAddControlPlane: an unused HEALTHY machine of the control
// plane's role can become one; without it, a worker of that role can be
// promoted while the workers exceed minimum-workers, not at it; a machine
// that is not HEALTHY, or of another role, cannot.
func TestCanAddControlPlane(t *testing.T) {
	tmpl := mustTemplate(`name: t
nodes:
- {user: u, control_plane: true, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: storage}}
service_subnet: 10.68.0.0/16
`)
	base := []*machine.Machine{
		mkMachine("c1", 0, 1).role("compute").obj(),
		mkMachine("s1", 1, 1).role("storage").obj(),
		mkMachine("s2", 2, 1).role("storage").obj(),
	}
	c2 := mkMachine("c2", 3, 1).role("compute").obj()
	c2Retiring := mkMachine("c2", 3, 1).role("compute").state(machine.StateRetiring).obj()
	generate := func(ms []*machine.Machine, min int) Input {
		in := input(tmpl, constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: min}, ms, nil)
		res, err := Generate(in)
		if err != nil {
			t.Fatal(err)
		}
		in.Current = res.Cluster
		return in
	}
	three := generate(base, 2)                  // c1 the control plane, s1 and s2 workers
	four := generate(append(base[:3:3], c2), 3) // c1 or c2 the control plane, the other compute a worker
	for _, tc := range []struct {
		name     string
		in       Input
		machines []*machine.Machine
		min      int
		want     bool
	}{
		{"no other compute machine", three, base, 2, false},
		{"an unused compute machine", three, append(base[:3:3], c2), 2, true},
		{"an unused RETIRING compute machine", three, append(base[:3:3], c2Retiring), 2, false},
		{"a compute worker above minimum-workers", four, four.Machines, 2, true},
		{"a compute worker at minimum-workers", four, four.Machines, 3, false},
	} {
		in := tc.in
		in.Machines, in.Constraints.MinimumWorkers = tc.machines, tc.min
		got, err := CanAddControlPlane(in)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
