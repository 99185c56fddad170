package generator

import (
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// benchPolicy is the benchmark policy: three placements, five
// label constraints (one in a group), two metrics (a constraint and two
// scores), ordered groups on the control planes and a stickiness, so
// that every tick that changes nothing also looks for a rebalance.
const benchPolicy = `
placements:
  control-plane:
    constraints: ["cke.cybozu.com/rack not in (0, 1)", "sabakan.cke.cybozu.com/product != R600"]
    metricConstraints: ["inlet_temperature < 40"]
    groups:
    - {name: cool-racks, constraints: ["topology.kubernetes.io/zone in (rack2, rack3, rack4, rack5, rack6, rack7)"]}
    - {name: any}
    metrics: [{name: inlet_temperature, weight: -5}, {name: power, weight: -2}]
  compute:
    constraints: ["sabakan.cke.cybozu.com/product in (R600, R610)"]
    metrics: [{name: power, weight: -3}]
  storage:
    constraints: ["cke.cybozu.com/role is storage"]
metrics:
  inlet_temperature: {provider: lab, min: 15, max: 45}
  power: {provider: lab, min: 100, max: 600}
providers:
  lab: {type: static, values: {}}
stickiness: 5
`

// withBenchPolicy adds benchPolicy to in, with values for nine machines
// in ten: temperatures 15-44, power 100-599.
func withBenchPolicy(b *testing.B, in Input) Input {
	pol, err := policy.Load([]byte(benchPolicy), in.Template)
	if err != nil {
		b.Fatal(err)
	}
	serials := make([]string, len(in.Machines))
	for i, m := range in.Machines {
		serials[i] = m.Spec.Serial
	}
	vals := pol.NewValues(serials)
	temp, power := pol.MetricIndex("inlet_temperature"), pol.MetricIndex("power")
	for i := range serials {
		if i%10 == 9 {
			continue
		}
		vals.Set(i, temp, float64(15+i*7%30))
		vals.Set(i, power, float64(100+i*13%500))
	}
	in.Policy, in.Metrics = pol, vals
	return in
}

// BenchmarkPolicy compares Generate and Update ticks at 20,000 machines
// without and with benchPolicy (issue: at most 1.5x).
func BenchmarkPolicy(b *testing.B) {
	const n = 20000
	variants := []struct {
		name string
		add  func(b *testing.B, in Input) Input
	}{
		{"none", func(_ *testing.B, in Input) Input { return in }},
		{"3-placements", withBenchPolicy},
	}
	for _, v := range variants {
		b.Run(fmt.Sprintf("generate/policy=%s", v.name), func(b *testing.B) {
			in := v.add(b, benchWorld(b, n))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Generate(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	scenarios := []struct {
		name  string
		event func(in *Input)
	}{
		{"nothing-to-do", func(in *Input) {}},
		{"taint-worker", func(in *Input) { setState(in, in.Current.Nodes[10].Address, machine.StateUnreachable) }},
		{"replace-cp", func(in *Input) { setState(in, in.Current.Nodes[0].Address, machine.StateUnreachable) }},
	}
	for _, sc := range scenarios {
		for _, v := range variants {
			b.Run(fmt.Sprintf("%s/policy=%s", sc.name, v.name), func(b *testing.B) {
				// The cluster is generated with the policy, so that the
				// tick with nothing to do has nothing to rebalance.
				in := v.add(b, benchWorld(b, n))
				res, err := Generate(in)
				if err != nil {
					b.Fatal(err)
				}
				in.Current = res.Cluster
				in.Machines = append([]*machine.Machine(nil), in.Machines...)
				sc.event(&in)
				first, err := Update(in)
				if sc.name == "nothing-to-do" && err != ErrNothingToDo {
					b.Fatalf("nothing-to-do: %v %+v", err, first)
				}
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					_, _ = Update(in)
				}
			})
		}
	}
}
