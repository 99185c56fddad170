package generator

import (
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// benchWorld is a synthetic data center of n machines, 40 per rack, roles
// compute/storage/gpu at 6:3:1, with 3 control planes and minimum-workers
// n/2.
func benchWorld(b *testing.B, n int) Input {
	return benchWorldIn(b, n, false)
}

// benchWorldIn is benchWorld in the count model, or in the rate model
// (minimum-workers-rate 80: every HEALTHY machine is a node).
func benchWorldIn(b *testing.B, n int, rate bool) Input {
	b.Helper()
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack, o.BootPerRack = n/40, 40, 0
	raw := dcgen.Machines(o)
	ms, _ := machine.Sanitize(raw, nil)
	tmpl := mustTemplate(rolesTemplate)
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: n / 2}
	if rate {
		c = constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: new(80)}
	}
	return input(tmpl, c, ms, nil)
}

var sizes = []int{1000, 2000, 5000, 20000}

// models are the benchmarks' two models: the count model with n/2 workers
// and the rate model with every HEALTHY machine.
var models = []string{constraints.CountModel, constraints.RateModel}

// BenchmarkGenerate: a first cluster of 3 control planes and n/2 workers
// (count model) or every machine (rate model).
func BenchmarkGenerate(b *testing.B) {
	for _, model := range models {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("model=%s/machines=%d", model, n), func(b *testing.B) {
				in := benchWorldIn(b, n, model == constraints.RateModel)
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
}

// updateScenarioIn returns the input of one tick after an inventory event
// on a generated cluster, in the rate model when rate is set.
func updateScenarioIn(b *testing.B, n int, rate bool, event func(in *Input)) Input {
	in := benchWorldIn(b, n, rate)
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
// (replace), or nothing happened (nothing to do). The count model's
// benchmarks keep their names; see BenchmarkUpdateRate for the rate model.
func BenchmarkUpdate(b *testing.B) {
	scenarios := []updateBench{
		{"nothing-to-do", func(in *Input) {}, ErrNothingToDo},
		{"taint-worker", func(in *Input) { setState(in, in.Current.Nodes[10].Address, machine.StateUnreachable) }, nil},
		{"replace-cp", func(in *Input) { setState(in, in.Current.Nodes[0].Address, machine.StateUnreachable) }, nil},
	}
	benchUpdates(b, false, scenarios)
}

// updateBench is an event before one Update and the error it must give.
type updateBench struct {
	name  string
	event func(in *Input)
	want  error
}

// benchUpdates runs one Update after each event, at every size, in the
// count or the rate model.
func benchUpdates(b *testing.B, rate bool, scenarios []updateBench) {
	for _, sc := range scenarios {
		for _, n := range sizes {
			b.Run(fmt.Sprintf("%s/machines=%d", sc.name, n), func(b *testing.B) {
				in := updateScenarioIn(b, n, rate, sc.event)
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

// BenchmarkUpdateRate: the rate model's ticks on a cluster of every
// machine: nothing to do, a worker becomes UNREACHABLE (taint), a control
// plane becomes UNREACHABLE (a warning and its taint), a worker RETIRED
// past the wait leaves (rule 7), and an unused machine turns HEALTHY
// (rule 6).
func BenchmarkUpdateRate(b *testing.B) {
	scenarios := []updateBench{
		{"nothing-to-do", func(in *Input) {}, ErrNothingToDo},
		{"taint-worker", func(in *Input) { setState(in, in.Current.Nodes[10].Address, machine.StateUnreachable) }, nil},
		{"bad-cp", func(in *Input) { setState(in, in.Current.Nodes[0].Address, machine.StateUnreachable) }, nil},
		{"remove-retired", func(in *Input) {
			setState(in, in.Current.Nodes[10].Address, machine.StateRetired)
			for i, m := range in.Machines {
				if m.Address() == in.Current.Nodes[10].Address {
					c := *m
					c.Status.Duration = 1000
					in.Machines[i] = &c
				}
			}
		}, nil},
		{"add-worker", func(in *Input) {
			nodes := in.Current.Nodes
			in.Current = in.Current.ShallowCopy()
			in.Current.Nodes = nodes[:len(nodes)-1]
		}, nil},
	}
	benchUpdates(b, true, scenarios)
}
