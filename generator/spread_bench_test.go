package generator

import (
	"fmt"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// spreadPolicies are the spreads of docs/design.md 20 on the benchmark's
// template: over racks (500 domains at 20,000 machines) and over a label
// with three values (dcgen's product).
var spreadPolicies = []struct{ name, doc string }{
	{"none", ""},
	{"racks", "placements: {control-plane: {spread: quorum}, compute: {spread: {maxSkew: 1}}, storage: {spread: {maxSkew: 2}}}\n"},
	{"label", "failureDomain: {label: product}\nplacements: {control-plane: {spread: quorum}, compute: {spread: {maxSkew: 1}}, storage: {spread: {maxSkew: 2}}}\n"},
}

// BenchmarkSpread is Generate and Update at 20,000 machines in both models
// without a policy and with spread: quorum and maxSkew, over racks and
// over a label.
func BenchmarkSpread(b *testing.B) {
	const n = 20000
	for _, model := range models {
		for _, sp := range spreadPolicies {
			world := func(b *testing.B) Input {
				in := benchWorldIn(b, n, model == constraints.RateModel)
				if sp.doc != "" {
					pol, err := policy.Load([]byte(sp.doc), in.Template)
					if err != nil {
						b.Fatal(err)
					}
					in.Policy = pol
				}
				return in
			}
			b.Run(fmt.Sprintf("generate/model=%s/spread=%s", model, sp.name), func(b *testing.B) {
				in := world(b)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Generate(in); err != nil {
						b.Fatal(err)
					}
				}
			})
			for _, sc := range []string{"nothing-to-do", "replace-cp"} {
				b.Run(fmt.Sprintf("%s/model=%s/spread=%s", sc, model, sp.name), func(b *testing.B) {
					in := world(b)
					res, err := Generate(in)
					if err != nil {
						b.Fatal(err)
					}
					in.Current = res.Cluster
					if sc == "replace-cp" {
						in.Machines = append([]*machine.Machine(nil), in.Machines...)
						setState(&in, in.Current.Nodes[0].Address, machine.StateUnreachable)
					}
					b.ReportAllocs()
					for b.Loop() {
						_, _ = Update(in)
					}
				})
			}
		}
	}
}
