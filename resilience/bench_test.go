package resilience

import (
	"fmt"
	"github.com/ckegen/ckegen/world"
	"os"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/template"
)

// benchInput is racks racks of 40 dcgen machines with the bundled
// template: 3 control planes, and minimum-workers half the machines, or
// minimum-workers-rate 80.
func benchInput(b testing.TB, racks int, rate bool) generator.Input {
	b.Helper()
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		b.Fatal(err)
	}
	tmpl, err := template.Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	o := dcgen.Default(now)
	o.Racks, o.PerRack = racks, 40
	raw := dcgen.Machines(o)
	ms, _ := machine.Sanitize(raw, nil)
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: len(ms) / 2}
	if rate {
		r := 80
		c = constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: &r}
	}
	return generator.Input{Template: tmpl, Constraints: c, Machines: ms, Now: now, RetireWait: generator.DefaultRetireWait}
}

// dataCenter is a synthetic data center of racks racks of 40 machines
// and its first cluster in the count model (minimum-workers half the
// machines) or the rate model (80%).
func dataCenter(b testing.TB, racks int, rate bool) generator.Input {
	b.Helper()
	in := benchInput(b, racks, rate)
	res, err := generator.Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Cluster
	return in
}

// pendingDataCenter is dataCenter's count-model cluster with a plan
// pending: in the rate model (its one step adds every HEALTHY machine a
// worker template takes, about 8,900 workers at 20,000 machines), or in
// the count model with minimum-workers raised by 2 a rack (one step adds
// them).
func pendingDataCenter(b testing.TB, racks int, rate bool) generator.Input {
	b.Helper()
	in := dataCenter(b, racks, false)
	if rate {
		in.Constraints = benchInput(b, racks, true).Constraints
	} else {
		in.Constraints.MinimumWorkers += 2 * racks
	}
	return in
}

// refusedDataCenter is dataCenter's cluster with the machines of two of
// its three control planes gone from the inventory: its plan is refused
// (too many non-existent control planes).
func refusedDataCenter(b testing.TB, racks int, rate bool) generator.Input {
	b.Helper()
	in := dataCenter(b, racks, rate)
	gone := map[string]bool{}
	for _, n := range in.Current.Nodes {
		if n.ControlPlane && len(gone) < 2 {
			gone[n.Address] = true
		}
	}
	in.Machines = slices.DeleteFunc(slices.Clone(in.Machines), func(m *machine.Machine) bool { return gone[m.Address()] })
	return in
}

// BenchmarkReport is the whole report at 2,000 and 20,000 machines, in
// process, on a settled cluster, one with a plan pending, and one whose
// plan is refused, in both models: the input is made once, the report
// made from it.
func BenchmarkReport(b *testing.B) {
	inputs := []struct {
		name  string
		input func(testing.TB, int, bool) generator.Input
		basis string
	}{
		{"settled", dataCenter, BasisCurrent},
		{"pending", pendingDataCenter, BasisPendingPlanSettled},
		{"refused", refusedDataCenter, BasisCurrent},
	}
	for _, racks := range []int{50, 500} {
		for _, rate := range []bool{false, true} {
			model := map[bool]string{false: "count", true: "rate"}[rate]
			for _, c := range inputs {
				b.Run(fmt.Sprintf("machines=%d/%s/%s", racks*40, model, c.name), func(b *testing.B) {
					in := c.input(b, racks, rate)
					b.ReportAllocs()
					for b.Loop() {
						r, err := Of(world.World{In: in}, failuredomain.Rack())
						if err != nil || len(r.Domains) != racks || r.Basis != c.basis {
							b.Fatal(err, len(r.Domains), r.Basis)
						}
					}
				})
			}
		}
	}
}

// BenchmarkReportUnreachableLeftOut is the settled report when the
// query leaves UNREACHABLE machines out: every loss removes its nodes,
// which the shared look does not tell, so every domain is planned.
func BenchmarkReportUnreachableLeftOut(b *testing.B) {
	for _, racks := range []int{50, 500} {
		b.Run(fmt.Sprintf("machines=%d", racks*40), func(b *testing.B) {
			w := world.World{In: dataCenter(b, racks, false), Query: sabakan.StateFilter{NotHaving: []machine.State{machine.StateUnreachable}}}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := Of(w, failuredomain.Rack()); err != nil || len(r.Domains) != racks {
					b.Fatal(err)
				}
			}
		})
	}
}
