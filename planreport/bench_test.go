package planreport_test

import (
	"io"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/template"
)

// BenchmarkWrite: the plan of a new cluster on 20,000 machines (one step of
// 10,003 changes, a 10,003-node cluster), made into a document and written.
func BenchmarkWrite(b *testing.B) {
	o := dcgen.Default(goldenNow)
	o.Racks, o.PerRack, o.BootPerRack = 500, 40, 0
	ms, _ := machine.Sanitize(dcgen.Machines(o), nil)
	tmpl, err := template.Parse([]byte(defaultTemplate))
	if err != nil {
		b.Fatal(err)
	}
	in := generator.Input{
		Template: tmpl, Machines: ms, Now: goldenNow, RetireWait: generator.DefaultRetireWait,
		Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10000},
	}
	p, err := generator.Run(in, nil, false, generator.DefaultMaxSteps, generator.Tick)
	if err != nil || len(p.Steps) != 1 {
		b.Fatalf("plan: %v", err)
	}
	for _, format := range []string{"text", "json", "yaml"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := planreport.Write(io.Discard, planreport.New(p), format); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
