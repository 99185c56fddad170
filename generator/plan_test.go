package generator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

var planNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// planTemplates are the templates random plans are drawn with: workers of
// any role; three roles; two of them, relabelled (a template change that
// drops a role and re-renders the rest); control planes of one role, a
// tainted worker template and a tolerated Kubernetes taint.
var planTemplates = []string{
	`name: any
nodes:
- {user: u, control_plane: true}
- {user: u}
service_subnet: 10.68.0.0/16
`,
	`name: roles
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "6"}}
- {user: u, labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "3"}}
- {user: u, labels: {cke.cybozu.com/role: gpu, cke.cybozu.com/weight: "1"}}
service_subnet: 10.68.0.0/16
`,
	`name: roles
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "2", example.com/pool: a}}
- {user: u, labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "1", example.com/pool: b}}
service_subnet: 10.68.0.0/16
`,
	`name: roles
nodes:
- {user: u, control_plane: true, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "6"}}
- {user: u, labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "3"}, taints: [{key: example.com/storage, effect: NoSchedule}]}
service_subnet: 10.68.0.0/16
control_plane_tolerations: [example.com/tolerated]
`,
}

var planRoles = []string{"compute", "storage", "gpu", "boot"}

func mustParseTemplate(t interface{ Fatal(...any) }, doc string) *template.Template {
	tmpl, err := template.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// planMachine is a HEALTHY machine of rack r with a retire date days away.
func planMachine(serial string, rack, index int, role string, days int) machine.Machine {
	return machine.Machine{
		Spec: machine.Spec{
			Serial: serial, Rack: rack, IndexInRack: index, Role: role,
			IPv4:         []string{fmt.Sprintf("10.0.%d.%d", rack, index)},
			RegisterDate: planNow.AddDate(-1, 0, 0),
			RetireDate:   planNow.AddDate(0, 0, days),
		},
		Status: machine.Status{State: machine.StateHealthy},
	}
}

func sanitized(t interface{ Fatal(...any) }, ms []machine.Machine) []*machine.Machine {
	out, warnings := machine.Sanitize(ms, nil)
	if len(warnings) > 0 {
		t.Fatal(warnings)
	}
	return out
}

// drawMachine adds machine number n to ms: mostly HEALTHY, sometimes in
// another state for a random time.
func drawMachine(t *rapid.T, ms []machine.Machine, n, racks int) []machine.Machine {
	rack := rapid.IntRange(0, racks-1).Draw(t, "rack")
	m := planMachine(fmt.Sprintf("m%03d", n), rack, n, rapid.SampledFrom(planRoles).Draw(t, "role"),
		rapid.IntRange(-1200, 1800).Draw(t, "days"))
	if rapid.IntRange(0, 6).Draw(t, "sick") == 0 {
		m.Status.State = rapid.SampledFrom(machine.States).Draw(t, "state")
		m.Status.Duration = float64(rapid.IntRange(0, 1000).Draw(t, "duration"))
	}
	return append(ms, m)
}

func drawConstraints(t *rapid.T, label string) constraints.Constraints {
	c := constraints.Constraints{
		ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, label+"cp"),
		MinimumWorkers:    rapid.IntRange(0, 6).Draw(t, label+"min"),
	}
	if rapid.Bool().Draw(t, label+"hasMax") {
		c.MaximumWorkers = max(1, c.MinimumWorkers+rapid.IntRange(0, 4).Draw(t, label+"extra"))
	}
	return c
}

// drawPlanInput draws a data center, a cluster built on it before some
// inventory events (or none), and the settings of the plan: constraints
// and template unchanged or changed, the retire wait, rebooting nodes,
// Kubernetes taints.
func drawPlanInput(t *rapid.T) (generator.Input, bool) {
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	var ms []machine.Machine
	serials := 0
	for range rapid.IntRange(12, 40).Draw(t, "machines") {
		serials++
		ms = drawMachine(t, ms, serials, racks)
	}
	before := rapid.IntRange(0, len(planTemplates)-1).Draw(t, "beforeTemplate")
	in := generator.Input{
		Template:    mustParseTemplate(t, planTemplates[before]),
		Constraints: drawConstraints(t, "before"),
		Machines:    sanitized(t, ms),
		Now:         planNow,
		RetireWait:  generator.DefaultRetireWait,
	}
	if rapid.Bool().Draw(t, "hasCurrent") {
		// The cluster as the daemon left it some ticks ago.
		p, err := generator.Run(in, nil, false, generator.DefaultMaxSteps, generator.Tick)
		if err != nil {
			t.Fatalf("plan of the cluster before: %v", err)
		}
		in.Current = p.Cluster
	}

	// Inventory events since then.
	for range rapid.IntRange(0, 12).Draw(t, "events") {
		if len(ms) == 0 || rapid.IntRange(0, 4).Draw(t, "add") == 0 {
			serials++
			ms = drawMachine(t, ms, serials, racks+1)
			continue
		}
		i := rapid.IntRange(0, len(ms)-1).Draw(t, "target")
		switch rapid.IntRange(0, 3).Draw(t, "event") {
		case 0:
			ms = slices.Delete(ms, i, i+1)
		case 1:
			ms[i].Status.State = machine.StateRetired
			ms[i].Status.Duration = float64(rapid.IntRange(0, 1000).Draw(t, "retiredFor"))
		default:
			ms[i].Status.State = rapid.SampledFrom(machine.States).Draw(t, "newState")
			ms[i].Status.Duration = 0
		}
	}
	in.Machines = sanitized(t, ms)

	// Settings changed since then.
	if rapid.Bool().Draw(t, "newConstraints") {
		in.Constraints = drawConstraints(t, "now")
	}
	in.RetireWait = time.Duration(rapid.SampledFrom([]int{0, 300, 900}).Draw(t, "retireWait")) * time.Second
	changed := rapid.Bool().Draw(t, "templateChanged")
	if changed {
		in.Template = mustParseTemplate(t, planTemplates[rapid.IntRange(0, len(planTemplates)-1).Draw(t, "template")])
	}
	if in.Current != nil {
		for _, n := range in.Current.Nodes {
			if rapid.IntRange(0, 9).Draw(t, "rebooting") == 0 {
				if in.Rebooting == nil {
					in.Rebooting = map[string]bool{}
				}
				in.Rebooting[n.Address] = true
			}
		}
	}
	for _, m := range in.Machines {
		if rapid.IntRange(0, 9).Draw(t, "k8sTaint") == 0 {
			if in.NodeTaints == nil {
				in.NodeTaints = map[string][]cluster.Taint{}
			}
			key := rapid.SampledFrom([]string{"example.com/broken", "example.com/tolerated"}).Draw(t, "taintKey")
			in.NodeTaints[m.Address()] = []cluster.Taint{{Key: key, Effect: "NoSchedule"}}
		}
	}
	return in, changed
}

// tick is one decision of the reference loop and the cluster it was made
// from.
type tick struct {
	prev *cluster.Cluster
	res  *generator.Result
}

// tickLoop is what the daemon does, written out: Tick after Tick, each
// cluster fed back, the template changed for the first tick only, at most
// limit ticks. It returns the ticks that changed something and the error
// that stopped the loop (nil when limit was reached).
func tickLoop(in generator.Input, changed bool, limit int) ([]tick, error) {
	var ticks []tick
	for i := 0; i < limit; i++ {
		res, err := generator.Tick(in, changed && i == 0)
		if err != nil {
			return ticks, err
		}
		ticks = append(ticks, tick{prev: in.Current, res: res})
		in.Current = res.Cluster
	}
	return ticks, nil
}

// TestPlanIsTicks: for random data centers and settings, the plan is what
// running Tick repeatedly gives (same operations, same changes, same final
// cluster), cut at max-steps; every step keeps the invariants; and the same
// input gives the same plan.
func TestPlanIsTicks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in, changed := drawPlanInput(t)
		maxSteps := rapid.IntRange(1, 12).Draw(t, "maxSteps")
		before := mustJSON(t, in.Current)

		p, err := generator.Run(in, nil, changed, maxSteps, generator.Tick)
		ticks, stop := tickLoop(in, changed, maxSteps+1)

		if err != nil {
			// Only input no tick can be computed from, at the first tick.
			if len(ticks) != 0 || stop == nil || stop.Error() != err.Error() {
				t.Fatalf("Run: %v; the first tick: %v", err, stop)
			}
			return
		}
		if got := mustJSON(t, in.Current); got != before {
			t.Fatal("Run changed its input's current cluster")
		}
		if p.Start != in.Current {
			t.Fatal("Plan.Start is not the input's current cluster")
		}

		// Result and number of steps.
		switch {
		case errors.Is(stop, generator.ErrNothingToDo):
			checkEnd(t, p, generator.PlanSettled, len(ticks), nil)
		case stop != nil:
			checkEnd(t, p, generator.PlanRefused, len(ticks), stop)
		default: // maxSteps+1 ticks changed something
			checkEnd(t, p, generator.PlanMaxSteps, maxSteps, nil)
		}
		if len(p.Steps) > maxSteps {
			t.Fatalf("%d steps, max-steps %d", len(p.Steps), maxSteps)
		}

		// Same operations, same changes, same clusters.
		for i, s := range p.Steps {
			res := ticks[i].res
			if s.Op != res.Op {
				t.Fatalf("step %d: op %q, Tick says %q", i+1, s.Op, res.Op)
			}
			if diff := cmp.Diff(res.Changes, s.Changes); diff != "" {
				t.Fatalf("step %d (%s): changes differ from Tick's (-tick +plan):\n%s", i+1, s.Op, diff)
			}
			checkStep(t, in.Constraints, ticks[i].prev, res)
		}
		want := in.Current
		if len(p.Steps) > 0 {
			want = ticks[len(p.Steps)-1].res.Cluster
		}
		if diff := cmp.Diff(mustJSON(t, want), mustJSON(t, p.Cluster)); diff != "" {
			t.Fatalf("final cluster differs from Tick's (-tick +plan):\n%s", diff)
		}

		// Deterministic.
		again, err := generator.Run(in, nil, changed, maxSteps, generator.Tick)
		if err != nil {
			t.Fatalf("Run again: %v", err)
		}
		if mustJSON(t, planView(p)) != mustJSON(t, planView(again)) {
			t.Fatal("Run is not deterministic")
		}
	})
}

// TestPlanSettles: on an unchanged inventory the ladder settles (or
// refuses) well within the default max-steps, for small data centers.
func TestPlanSettles(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in, changed := drawPlanInput(t)
		p, err := generator.Run(in, nil, changed, generator.DefaultMaxSteps, generator.Tick)
		if err != nil {
			return
		}
		if p.Result == generator.PlanMaxSteps {
			t.Fatalf("%d machines: no settling after %d steps; last: %s", len(in.Machines), len(p.Steps), p.Steps[len(p.Steps)-1].Op)
		}
		if len(p.Steps) > generator.DefaultMaxSteps {
			t.Fatalf("%d steps", len(p.Steps))
		}
	})
}

func checkEnd(t *rapid.T, p *generator.Plan, result string, steps int, err error) {
	t.Helper()
	if p.Result != result || len(p.Steps) != steps {
		t.Fatalf("plan: %s after %d steps (%v); Tick: %s after %d steps", p.Result, len(p.Steps), p.Err, result, steps)
	}
	if (err == nil) != (p.Err == nil) || (err != nil && err.Error() != p.Err.Error()) {
		t.Fatalf("plan error %v, Tick's %v", p.Err, err)
	}
}

// checkStep asserts what every step must keep: no address twice, the
// constraints met (control planes may exceed the count while rule 4 lowers
// it), maximum-workers not crossed by the step, and etcd's quorum: of the
// previous control planes, at most one leaves, or fewer than half, and
// never the only one.
func checkStep(t *rapid.T, c constraints.Constraints, prev *cluster.Cluster, res *generator.Result) {
	t.Helper()
	next := res.Cluster
	seen := map[string]bool{}
	cps, workers := map[string]bool{}, 0
	for _, n := range next.Nodes {
		if seen[n.Address] {
			t.Fatalf("%s: address %s listed twice", res.Op, n.Address)
		}
		seen[n.Address] = true
		if n.ControlPlane {
			cps[n.Address] = true
		} else {
			workers++
		}
	}
	if len(cps) < c.ControlPlaneCount || workers < c.MinimumWorkers {
		t.Fatalf("%s: %d control planes and %d workers, constraints %+v", res.Op, len(cps), workers, c)
	}
	if prev == nil {
		return
	}
	prevWorkers, lost, prevCPs := 0, 0, 0
	for _, n := range prev.Nodes {
		switch {
		case !n.ControlPlane:
			prevWorkers++
		case !cps[n.Address]:
			prevCPs++
			lost++
		default:
			prevCPs++
		}
	}
	if c.MaximumWorkers > 0 && workers > max(c.MaximumWorkers, prevWorkers) {
		t.Fatalf("%s: %d workers, maximum %d (was %d)", res.Op, workers, c.MaximumWorkers, prevWorkers)
	}
	if lost > 1 && 2*lost >= prevCPs || prevCPs == 1 && lost == 1 {
		t.Fatalf("%s: %d of %d control planes left in one step", res.Op, lost, prevCPs)
	}
}

// planView is a plan as comparable data.
func planView(p *generator.Plan) any {
	errText := ""
	if p.Err != nil {
		errText = p.Err.Error()
	}
	return struct {
		Result, Err string
		Steps       []generator.Step
		Cluster     *cluster.Cluster
	}{p.Result, errText, p.Steps, p.Cluster}
}

func mustJSON(t interface{ Fatal(...any) }, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// retiredWorld is a cluster of one control plane and k workers, all
// RETIRED for longer than the retire wait, with maximum-workers =
// minimum-workers = k and k spare machines: rule 7 replaces one retired
// worker per tick, so the plan settles after exactly k steps.
func retiredWorld(t *testing.T, k int) generator.Input {
	t.Helper()
	var ms []machine.Machine
	for i := 1; i <= 1+2*k; i++ {
		ms = append(ms, planMachine(fmt.Sprintf("m%03d", i), i%4, i, "compute", 1000))
	}
	in := generator.Input{
		Template:    mustParseTemplate(t, planTemplates[0]),
		Constraints: constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: k, MaximumWorkers: k},
		Machines:    sanitized(t, ms),
		Now:         planNow,
		RetireWait:  generator.DefaultRetireWait,
	}
	first, err := generator.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Current = first.Cluster
	for _, n := range first.Cluster.Nodes {
		if !n.ControlPlane {
			i := slices.IndexFunc(ms, func(m machine.Machine) bool { return m.Address() == n.Address })
			ms[i].Status = machine.Status{State: machine.StateRetired, Duration: 3600}
		}
	}
	in.Machines = sanitized(t, ms)
	return in
}

// TestPlanMaxSteps: a plan that needs exactly k steps settles with
// max-steps k, and stops with max-steps and k-1 steps below that; the
// cluster is the one after the last step kept.
func TestPlanMaxSteps(t *testing.T) {
	const k = 5
	in := retiredWorld(t, k)
	full, err := generator.Run(in, nil, false, k, generator.Tick)
	if err != nil {
		t.Fatal(err)
	}
	if full.Result != generator.PlanSettled || len(full.Steps) != k {
		t.Fatalf("max-steps %d: %s after %d steps, want settled after %d", k, full.Result, len(full.Steps), k)
	}
	for _, s := range full.Steps {
		if s.Op != generator.OpDecreaseWorker {
			t.Fatalf("step %s, want %s", s.Op, generator.OpDecreaseWorker)
		}
	}
	cut, err := generator.Run(in, nil, false, k-1, generator.Tick)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Result != generator.PlanMaxSteps || len(cut.Steps) != k-1 {
		t.Fatalf("max-steps %d: %s after %d steps, want max-steps after %d", k-1, cut.Result, len(cut.Steps), k-1)
	}
	if diff := cmp.Diff(full.Steps[:k-1], cut.Steps); diff != "" {
		t.Fatalf("the cut plan's steps differ:\n%s", diff)
	}
	// The cut plan's cluster still has one retired worker.
	retired := 0
	for _, n := range cut.Cluster.Nodes {
		for _, m := range in.Machines {
			if m.Address() == n.Address && m.Status.State == machine.StateRetired {
				retired++
			}
		}
	}
	if retired != 1 {
		t.Fatalf("after %d of %d steps: %d retired workers left, want 1", k-1, k, retired)
	}
}

// TestPlanTemplateChanged: a changed template is applied once (regenerate),
// and the plan then settles; unchanged, the same input has nothing to do.
func TestPlanTemplateChanged(t *testing.T) {
	var ms []machine.Machine
	for i := 1; i <= 6; i++ {
		ms = append(ms, planMachine(fmt.Sprintf("m%03d", i), i%3, i, []string{"compute", "storage"}[i%2], 1000))
	}
	in := generator.Input{
		Template:    mustParseTemplate(t, planTemplates[1]),
		Constraints: constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: 3},
		Machines:    sanitized(t, ms),
		Now:         planNow,
		RetireWait:  generator.DefaultRetireWait,
	}
	first, err := generator.Run(in, nil, false, 10, generator.Tick)
	if err != nil || first.Result != generator.PlanSettled || len(first.Steps) != 1 || first.Steps[0].Op != generator.OpNew {
		t.Fatalf("first plan: %+v, %v", first, err)
	}
	in.Current = first.Cluster
	in.Template = mustParseTemplate(t, planTemplates[2]) // relabels compute and storage

	p, err := generator.Run(in, nil, true, 10, generator.Tick)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != generator.PlanSettled || len(p.Steps) != 1 || p.Steps[0].Op != generator.OpRegenerate {
		t.Fatalf("template changed: %s after %v, want settled after one %s", p.Result, ops(p), generator.OpRegenerate)
	}
	if n := len(p.Steps[0].Changes); n != 3 {
		t.Fatalf("regenerate: %d changes, want the 3 workers", n)
	}
	for _, n := range p.Cluster.Nodes {
		if !n.ControlPlane && n.Labels["example.com/pool"] == "" {
			t.Fatalf("node %s not re-rendered: %v", n.Address, n.Labels)
		}
	}

	same, err := generator.Run(in, nil, false, 10, generator.Tick)
	if err != nil || same.Result != generator.PlanSettled || len(same.Steps) != 0 || same.Cluster != in.Current {
		t.Fatalf("template unchanged: %+v, %v; want settled, no step, the current cluster", same, err)
	}
}

func ops(p *generator.Plan) []string {
	var out []string
	for _, s := range p.Steps {
		out = append(out, s.Op)
	}
	return out
}

// TestPlanRefusedAndBadInput: a tick the daemon would refuse ends the plan
// with its error; input no tick can be computed from is an error.
func TestPlanRefusedAndBadInput(t *testing.T) {
	var ms []machine.Machine
	for i := 1; i <= 4; i++ {
		ms = append(ms, planMachine(fmt.Sprintf("m%03d", i), i, i, "compute", 1000))
	}
	good := generator.Input{
		Template:    mustParseTemplate(t, planTemplates[0]),
		Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 1},
		Machines:    sanitized(t, ms),
		Now:         planNow,
		RetireWait:  generator.DefaultRetireWait,
	}
	first, err := generator.Generate(good)
	if err != nil {
		t.Fatal(err)
	}

	tooMany := good
	tooMany.Constraints.MinimumWorkers = 2
	gone := good
	gone.Current = first.Cluster
	gone.Machines = gone.Machines[2:] // two of the three control planes
	for _, tc := range []struct {
		name string
		in   generator.Input
		want error
	}{
		{"not enough machines", tooMany, generator.ErrNotEnoughMachines},
		{"quorum", gone, generator.ErrTooManyNonExistent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := generator.Run(tc.in, nil, false, 10, generator.Tick)
			if err != nil {
				t.Fatalf("Run: %v, want a refused plan", err)
			}
			if p.Result != generator.PlanRefused || !errors.Is(p.Err, tc.want) || len(p.Steps) != 0 || p.Cluster != tc.in.Current {
				t.Fatalf("got %s, %v, %d steps; want refused with %v, no step, the current cluster", p.Result, p.Err, len(p.Steps), tc.want)
			}
		})
	}

	dup := good
	dup.Current = &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{{Address: "10.0.1.1"}, {Address: "10.0.1.1"}}}
	noTemplate := good
	noTemplate.Template = nil
	badConstraints := good
	badConstraints.Constraints.ControlPlaneCount = 0
	for _, tc := range []struct {
		name     string
		in       generator.Input
		maxSteps int
		want     string
	}{
		{"duplicate address", dup, 10, "address 10.0.1.1 is listed twice"},
		{"no template", noTemplate, 10, "no template"},
		{"constraints", badConstraints, 10, "control-plane-count: must be >= 1"},
		{"max steps", good, 0, "max steps: must be at least 1, got 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := generator.Run(tc.in, nil, false, tc.maxSteps, generator.Tick)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %+v, %v; want an error with %q", p, err, tc.want)
			}
		})
	}
}

// TestRunHeld: a tick function that holds ends the plan there, held,
// with the hold's code and words and the steps before it; Run with a
// first decision given starts from its cluster.
func TestRunHeld(t *testing.T) {
	const k = 5
	in := retiredWorld(t, k)
	full, err := generator.Run(in, nil, false, k, generator.Tick)
	if err != nil {
		t.Fatal(err)
	}
	ticks := 0
	holdAfter := func(n int) func(generator.Input, bool) (*generator.Result, error) {
		return func(in generator.Input, changed bool) (*generator.Result, error) {
			if ticks++; ticks > n {
				return &generator.Result{Warnings: []string{"w"}}, &generator.Held{Reason: "HOLD", Message: "held here"}
			}
			return generator.Tick(in, changed)
		}
	}
	p, err := generator.Run(in, nil, false, k, holdAfter(2))
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != generator.PlanHeld || p.Reason != "HOLD" || p.Message != "held here" || len(p.Steps) != 2 || p.Err != nil ||
		!slices.Equal(p.Warnings, []string{"w"}) {
		t.Fatalf("plan %s %s %q after %d steps (err %v, warnings %q), want held HOLD after 2", p.Result, p.Reason, p.Message, len(p.Steps), p.Err, p.Warnings)
	}
	if diff := cmp.Diff(full.Steps[:2], p.Steps); diff != "" {
		t.Fatalf("the held plan's steps differ from Run's:\n%s", diff)
	}
	first, err := generator.Tick(in, false)
	if err != nil {
		t.Fatal(err)
	}
	ticks = 0
	p, err = generator.Run(in, first, false, k, holdAfter(0))
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != generator.PlanHeld || len(p.Steps) != 1 || p.Cluster != first.Cluster || p.Start != in.Current {
		t.Fatalf("from a first step: %s after %d steps, want held after 1 from the step's cluster", p.Result, len(p.Steps))
	}
}
