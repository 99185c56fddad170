package generator

import (
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// benchWorld is a synthetic data center of n machines, 40 per rack, roles
// compute/storage/gpu at 6:3:1, with 3 control planes and minimum-workers
// n/2.
func benchWorld(b *testing.B, n int) Input {
	b.Helper()
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack, o.BootPerRack = n/40, 40, 0
	raw := dcgen.Machines(o)
	ms, _ := machine.Sanitize(raw, nil)
	tmpl := mustTemplate(rolesTemplate)
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: n / 2}
	return input(tmpl, c, ms, nil)
}

var sizes = []int{1000, 2000, 5000, 20000}

// BenchmarkGenerate: a first cluster of 3 control planes and n/2 workers.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			in := benchWorld(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Generate(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// updateScenario returns the input of one tick after an inventory event on
// a generated cluster.
func updateScenario(b *testing.B, n int, event func(in *Input)) Input {
	in := benchWorld(b, n)
	res, err := Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Cluster
	ms := make([]*machine.Machine, len(in.Machines))
	copy(ms, in.Machines)
	in.Machines = ms
	event(&in)
	return in
}

// setState changes the state of the machine at address addr.
func setState(in *Input, addr string, s machine.State) {
	for i, m := range in.Machines {
		if m.Address() == addr {
			c := *m
			c.Status.State = s
			in.Machines[i] = &c
			return
		}
	}
	panic("no machine " + addr)
}

// BenchmarkUpdate: one tick on a generated cluster after an event: a worker
// becomes UNREACHABLE (taint), a control plane becomes UNREACHABLE
// (replace), or nothing happened (nothing to do).
func BenchmarkUpdate(b *testing.B) {
	scenarios := []struct {
		name  string
		event func(in *Input)
		want  error
	}{
		{"nothing-to-do", func(in *Input) {}, ErrNothingToDo},
		{"taint-worker", func(in *Input) { setState(in, in.Current.Nodes[10].Address, machine.StateUnreachable) }, nil},
		{"replace-cp", func(in *Input) { setState(in, in.Current.Nodes[0].Address, machine.StateUnreachable) }, nil},
	}
	for _, sc := range scenarios {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/machines=%d", sc.name, n), func(b *testing.B) {
				in := updateScenario(b, n, sc.event)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := Update(in); err != sc.want {
						b.Fatalf("Update: %v, want %v", err, sc.want)
					}
				}
			})
		}
	}
}
