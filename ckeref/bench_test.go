package ckeref

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// CKE v1.35.4's generator beside ckegen's, on the same synthetic data
// center (internal/testutil/dcgen: 40 machines per rack, roles compute/storage/gpu at
// 6:3:1, 3% not HEALTHY) and the same template (control planes of role
// compute; one worker template per role, no weights), 3 control planes:
//
//   - Generate: a first cluster. In the rate model every HEALTHY machine a
//     worker template takes is a worker; the count model (ckegen only, for
//     its scaling) adds minimum-workers = machines/2.
//   - Update: one tick on the converged cluster after an event: a worker
//     turns UNREACHABLE (taint nodes), or a new HEALTHY machine appears
//     (increase worker).
//
// CKE's Generate is quadratic (its template choice collects and filters
// every machine for each worker it adds): ~50 s at 20,000 machines. Run
// its 20,000 case alone with -benchtime=1x (make bench-ckeref runs
// everything once).

var benchSizes = []int{1000, 2000, 5000, 20000}

const benchTemplate = `{"name":"bench","service_subnet":"10.68.0.0/16","nodes":[
{"user":"cke","control_plane":true,"labels":{"cke.cybozu.com/role":"compute"}},
{"user":"cke","labels":{"cke.cybozu.com/role":"compute"}},
{"user":"cke","labels":{"cke.cybozu.com/role":"storage"}},
{"user":"cke","labels":{"cke.cybozu.com/role":"gpu"}}]}`

var benchNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchWorld is one size's inputs, for both generators.
type benchWorld struct {
	raw  []machine.Machine
	in   generator.Input // ckegen, rate model
	inC  generator.Input // ckegen, count model
	tmpl *cke.Cluster
	cstr *cke.Constraints
	ms   []ckesabakan.Machine
}

func newBenchWorld(b *testing.B, n int) *benchWorld {
	b.Helper()
	silenceCKE()
	o := dcgen.Default(benchNow)
	o.Racks, o.PerRack, o.BootPerRack = n/40, 40, 0
	w := &benchWorld{raw: dcgen.Machines(o)}
	tmpl, err := template.Parse([]byte(benchTemplate))
	if err != nil {
		b.Fatal(err)
	}
	if err := template.FillDefaults(tmpl.Cluster); err != nil {
		b.Fatal(err)
	}
	rate, err := constraints.Parse([]byte(`{"control-plane-count":3,"minimum-workers-rate":80}`))
	if err != nil {
		b.Fatal(err)
	}
	count, err := constraints.Parse(fmt.Appendf(nil, `{"control-plane-count":3,"minimum-workers":%d}`, n/2))
	if err != nil {
		b.Fatal(err)
	}
	ms, _ := machine.Sanitize(w.raw, nil)
	w.in = generator.Input{Template: tmpl, Constraints: rate, Machines: ms, Now: benchNow, RetireWait: generator.DefaultRetireWait}
	w.inC = w.in
	w.inC.Constraints = count
	w.tmpl = toCKECluster(tmpl.Cluster)
	w.cstr = &cke.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: 80}
	w.ms = w.ckeMachines(ms)
	return w
}

func (w *benchWorld) ckeMachines(ms []*machine.Machine) []ckesabakan.Machine {
	data, err := json.Marshal(ms)
	if err != nil {
		panic(err)
	}
	return toCKEMachines(data)
}

func BenchmarkCkegenGenerate(b *testing.B) {
	for _, model := range []string{"rate", "count"} {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("model=%s/machines=%d", model, n), func(b *testing.B) {
				w := newBenchWorld(b, n)
				in := w.in
				if model == "count" {
					in = w.inC
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := generator.Generate(in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkCKEGenerate(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("machines=%d", n), func(b *testing.B) {
			w := newBenchWorld(b, n)
			b.ReportAllocs()
			for b.Loop() {
				g := ckesabakan.NewGenerator(w.tmpl, w.cstr, w.ms, nil, benchNow)
				if _, err := g.Generate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// updateEvent is one inventory change on the converged cluster, and the
// operation both generators must answer it with.
type updateEvent struct {
	name, op string
	apply    func(ms []*machine.Machine, c *cluster.Cluster) []*machine.Machine
}

var updateEvents = []updateEvent{
	{"taint-worker", generator.OpTaintNodes, func(ms []*machine.Machine, c *cluster.Cluster) []*machine.Machine {
		// The middle node (a worker) turns UNREACHABLE.
		return setState(ms, c.Nodes[len(c.Nodes)/2].Address, machine.StateUnreachable)
	}},
	{"new-machine", generator.OpIncreaseWorker, func(ms []*machine.Machine, c *cluster.Cluster) []*machine.Machine {
		m := *ms[0]
		m.Spec.Serial, m.Spec.IPv4, m.Spec.IndexInRack = "ZNEW", []string{"10.255.255.1"}, 41
		m.Status.State = machine.StateHealthy
		return append(ms[:len(ms):len(ms)], &m)
	}},
}

func setState(ms []*machine.Machine, addr string, s machine.State) []*machine.Machine {
	out := make([]*machine.Machine, len(ms))
	copy(out, ms)
	for i, m := range out {
		if m.Address() == addr {
			c := *m
			c.Status.State = s
			out[i] = &c
			return out
		}
	}
	panic("no machine " + addr)
}

// updateInput is the tick after ev on the cluster in generates (the
// converged cluster of its model).
func updateInput(b *testing.B, in generator.Input, ev updateEvent) generator.Input {
	b.Helper()
	res, err := generator.Generate(in)
	if err != nil {
		b.Fatal(err)
	}
	in.Current = res.Cluster
	in.Machines = ev.apply(in.Machines, res.Cluster)
	return in
}

func BenchmarkCkegenUpdate(b *testing.B) {
	for _, ev := range updateEvents {
		for _, model := range []string{"rate", "count"} {
			for _, n := range benchSizes {
				b.Run(fmt.Sprintf("%s/model=%s/machines=%d", ev.name, model, n), func(b *testing.B) {
					w := newBenchWorld(b, n)
					in := w.in
					if model == "count" {
						in = w.inC
					}
					in = updateInput(b, in, ev)
					b.ReportAllocs()
					for b.Loop() {
						res, err := generator.Update(in)
						if model == "count" {
							// Its own rules: a new machine is nothing to
							// do, an UNREACHABLE worker is replaced.
							if err != nil && err != generator.ErrNothingToDo {
								b.Fatalf("Update: %v", err)
							}
							continue
						}
						if err != nil || res.Op != ev.op {
							b.Fatalf("Update: %v, op %q, want %q", err, res.Op, ev.op)
						}
					}
				})
			}
		}
	}
}

func BenchmarkCKEUpdate(b *testing.B) {
	for _, ev := range updateEvents {
		for _, n := range benchSizes {
			b.Run(fmt.Sprintf("%s/machines=%d", ev.name, n), func(b *testing.B) {
				w := newBenchWorld(b, n)
				// The same converged cluster and event as ckegen's.
				in := updateInput(b, w.in, ev)
				cur := toCKECluster(in.Current)
				ms := w.ckeMachines(in.Machines)
				b.ReportAllocs()
				for b.Loop() {
					g := ckesabakan.NewGenerator(w.tmpl, w.cstr, ms, nil, benchNow)
					c, err := g.Update(cur)
					if err != nil || c == nil {
						b.Fatalf("Update: %v (nil cluster: nothing to do)", err)
					}
				}
			})
		}
	}
}
