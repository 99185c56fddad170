package generator_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// retiredGeneration is a synthetic data center of n machines (40 per rack,
// roles compute/storage/gpu at 6:3:1, 3% in a state other than HEALTHY)
// whose cluster has 3 control planes and minimum-workers = maximum-workers
// = n/2, and where k of those workers have been RETIRED for an hour (the
// query variables include RETIRED machines): rule 7 replaces one of them
// per tick, so the plan is k real ticks of "decrease worker", each removing
// a worker and adding one, and settles at tick k+1.
func retiredGeneration(b *testing.B, n, k int) generator.Input {
	b.Helper()
	o := dcgen.Default(planNow)
	o.Racks, o.PerRack, o.BootPerRack = n/40, 40, 0
	raw := dcgen.Machines(o)
	in := generator.Input{
		Template:    mustParseTemplate(b, planTemplates[1]),
		Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: n / 2, MaximumWorkers: n / 2},
		Machines:    sanitized(b, raw),
		Now:         planNow,
		RetireWait:  generator.DefaultRetireWait,
	}
	first, err := generator.Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = first.Cluster
	at := map[string]int{}
	for i := range raw {
		at[raw[i].Address()] = i
	}
	// Every (n/2/k)-th worker, so that they are spread over the racks.
	workers := first.Cluster.Nodes[3:]
	for i := 0; i < k; i++ {
		m := &raw[at[workers[i*len(workers)/k].Address]]
		m.Status = machine.Status{State: machine.StateRetired, Duration: 3600}
	}
	in.Machines = sanitized(b, raw)
	return in
}

// BenchmarkPlan: a 100-step plan (100 retired workers replaced one per
// tick, then settled: 101 ticks), and the first of its ticks alone, so that
// the two can be compared on the same machine and load. B/op is everything
// the plan allocates; retained-MB is what the finished plan keeps (its steps
// and the final cluster's new nodes), measured after a garbage collection.
func BenchmarkPlan(b *testing.B) {
	const steps = 100
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("one-tick/machines=%d", n), func(b *testing.B) {
			in := retiredGeneration(b, n, steps)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if res, err := generator.Tick(in, false); err != nil || res.Op != generator.OpDecreaseWorker {
					b.Fatalf("Tick: %v", err)
				}
			}
		})
		b.Run(fmt.Sprintf("retired-workers=%d/machines=%d", steps, n), func(b *testing.B) {
			in := retiredGeneration(b, n, steps)
			var p *generator.Plan
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				var err error
				p, err = generator.Run(in, nil, false, generator.DefaultMaxSteps, generator.Tick)
				if err != nil {
					b.Fatal(err)
				}
				if p.Result != generator.PlanSettled || len(p.Steps) != steps {
					b.Fatalf("%s after %d steps, want settled after %d", p.Result, len(p.Steps), steps)
				}
			}
			b.StopTimer()
			var with, without runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&with)
			runtime.KeepAlive(p)
			p = nil
			runtime.GC()
			runtime.ReadMemStats(&without)
			b.ReportMetric(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc))/1e6, "retained-MB")
		})
	}
}
