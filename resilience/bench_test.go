package resilience

import (
	"os"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
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
