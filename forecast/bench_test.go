package forecast

import (
	"github.com/ckegen/ckegen/world"
	"os"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// benchNow is the time of the benchmarks' data center (its machines
// retire over the 5 years after it).
var benchNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchInput is racks racks of 40 dcgen machines with the bundled
// template, 3 control planes and minimum-workers half the machines (or
// minimum-workers-rate 80), and the cluster Generate makes from them.
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
	o := dcgen.Default(benchNow)
	o.Racks, o.PerRack = racks, 40
	ms, _ := machine.Sanitize(dcgen.Machines(o), nil)
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: len(ms) / 2}
	if rate {
		r := 80
		c = constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: &r}
	}
	in := generator.Input{Template: tmpl, Constraints: c, Machines: ms, Now: benchNow, RetireWait: generator.DefaultRetireWait}
	res, err := generator.Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Cluster
	return in
}

// BenchmarkForecast times a forecast of 20,000 machines over 5 years by
// month (61 events of about 330 machines each), in both models:
//
//	go test -run '^$' -bench Forecast -benchmem ./forecast/
func BenchmarkForecast(b *testing.B) {
	for _, rate := range []bool{false, true} {
		name := "count"
		if rate {
			name = "rate"
		}
		in := benchInput(b, 500, rate)
		b.Run("machines=20000/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				f, err := Of(world.World{In: in, Query: defaultQuery()}, Options{Until: benchNow.AddDate(5, 0, 0), RetireLead: DefaultRetireLead})
				if err != nil {
					b.Fatal(err)
				}
				if len(f.Events) < 55 {
					b.Fatalf("%d events", len(f.Events))
				}
			}
		})
	}
}

// BenchmarkForecastBuy times the same forecast buying what keeps the
// count model's minimum-workers (10,000) until its end:
//
//	go test -run '^$' -bench ForecastBuy -benchmem ./forecast/
func BenchmarkForecastBuy(b *testing.B) {
	in := benchInput(b, 500, false)
	b.ReportAllocs()
	for b.Loop() {
		f, err := Of(world.World{In: in, Query: defaultQuery()}, Options{Until: benchNow.AddDate(5, 0, 0), RetireLead: DefaultRetireLead, Buy: &Buy{LeadTime: DefaultLeadTime}})
		if err != nil {
			b.Fatal(err)
		}
		if len(f.Purchases) == 0 || f.Runway.Reason != None {
			b.Fatalf("%d purchases, runway %s", len(f.Purchases), f.Runway.Message)
		}
	}
}
