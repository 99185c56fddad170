package world

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/template"
)

var (
	now        = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	registered = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	retires    = time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
)

// site is 4 racks of 4 compute machines and a storage machine in rack 3,
// with the bundled template, 3 control planes and 10 workers, and its
// generated cluster.
func site(t *testing.T) World {
	t.Helper()
	var ms []machine.Machine
	for rack := range 4 {
		for i := range 4 {
			ms = append(ms, machine.Machine{Spec: machine.Spec{Serial: fmt.Sprintf("c%d%d", rack, i), Rack: rack, IndexInRack: i, Role: "compute",
				IPv4: []string{fmt.Sprintf("10.0.%d.%d", rack, i)}, RegisterDate: registered, RetireDate: retires}, Status: machine.Status{State: machine.StateHealthy, Duration: 3600}})
		}
	}
	ms = append(ms, machine.Machine{Spec: machine.Spec{Serial: "s30", Rack: 3, IndexInRack: 9, Role: "storage", IPv4: []string{"10.0.3.9"}, RegisterDate: registered, RetireDate: retires},
		Status: machine.Status{State: machine.StateHealthy, Duration: 3600}})
	sane, dropped := machine.Sanitize(ms, nil)
	if len(dropped) > 0 {
		t.Fatal(dropped)
	}
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	in := generator.Input{Template: tmpl, Constraints: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10}, Machines: sane,
		Now: now, RetireWait: generator.DefaultRetireWait, InventoryRoles: []string{"compute", "storage"}}
	res, err := generator.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Current = res.Cluster
	return World{In: in}
}

// limit is max-unhealthy as a count.
type limit int

func (l limit) Limit(int) int  { return int(l) }
func (l limit) String() string { return fmt.Sprint(int(l)) }

// TestSetThroughTheQuery: Set gives the machines it names the new state
// (a copy each, no time in it), in their places; with a query that
// leaves the state out, they leave the answer, and a role none of whose
// machines is left leaves the inventory's roles (a role that had no
// machine to begin with, sanitized away, stays). The world it was made
// from is left as it is.
func TestSetThroughTheQuery(t *testing.T) {
	w := site(t)
	rack3 := func(_ int, m *machine.Machine) bool { return m.Spec.Rack == 3 }
	kept, n := w.Set(rack3, machine.StateUnreachable)
	if n != 5 || len(kept.In.Machines) != 17 {
		t.Fatalf("no query: %d named, %d machines", n, len(kept.In.Machines))
	}
	for i, m := range kept.In.Machines {
		if want := w.In.Machines[i]; m.Spec.Serial != want.Spec.Serial ||
			(m.Spec.Rack == 3) != (m.Status.State == machine.StateUnreachable && m.Status.Duration == 0 && m != want) {
			t.Errorf("machine %d: %s %s %.0fs", i, m.Spec.Serial, m.Status.State, m.Status.Duration)
		}
	}
	w.Query = sabakan.StateFilter{NotHaving: []machine.State{machine.StateUnreachable}}
	w.In.InventoryRoles = []string{"compute", "storage", "boot"} // boot: no machine kept (sanitized away)
	left, _ := w.Set(rack3, machine.StateUnreachable)
	if len(left.In.Machines) != 12 || !slices.Equal(left.In.InventoryRoles, []string{"compute", "boot"}) {
		t.Errorf("UNREACHABLE left out: %d machines, roles %v", len(left.In.Machines), left.In.InventoryRoles)
	}
	if len(w.In.Machines) != 17 || w.In.Machines[16].Status.State != machine.StateHealthy || len(w.In.InventoryRoles) != 3 {
		t.Error("Set changed the world it was made from")
	}
}

// TestPlanHoldsOverMaxUnhealthy: a rack's loss over max-unhealthy plans
// the state taints, then holds with the breaker's code and words and
// adds no worker; within the limit, or without one, the plan goes on
// and replaces the lost workers.
func TestPlanHoldsOverMaxUnhealthy(t *testing.T) {
	w := site(t)
	lost, _ := w.Set(func(_ int, m *machine.Machine) bool { return m.Spec.Rack == 0 }, machine.StateUnreachable)
	bad := generator.Unhealthy(lost.In)
	for _, tc := range []struct {
		lim  Limit
		held bool
	}{{nil, false}, {limit(len(bad)), false}, {limit(len(bad) - 1), true}} {
		lost.MaxUnhealthy = tc.lim
		p, err := lost.Plan(nil, generator.DefaultMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, s := range p.Steps {
			ops = append(ops, s.Op)
		}
		if !tc.held {
			if p.Result != generator.PlanSettled || !slices.Contains(ops, generator.OpIncreaseWorker) {
				t.Errorf("max-unhealthy %v: %s %v, want settled after adding workers", tc.lim, p.Result, ops)
			}
			continue
		}
		if p.Result != generator.PlanHeld || p.Reason != reason.TooManyUnhealthy || !slices.Equal(ops, []string{generator.OpTaintNodes}) ||
			!strings.HasPrefix(p.Message, fmt.Sprintf("%d of %d nodes are unhealthy (", len(bad), len(lost.In.Current.Nodes))) ||
			!strings.HasSuffix(p.Message, ": "+BreakerHolds) {
			t.Errorf("max-unhealthy %v: %s %v %s: %s", tc.lim, p.Result, ops, p.Reason, p.Message)
		}
	}
}

// TestPlanWaitsOutTheRetireWait: a worker RETIRED for 60 s of the retire
// wait's 300 s is tainted and replaced at once (it is no HEALTHY worker),
// and removed by the step after the wait, which says until when it waited;
// the clock of the world moved on with it. Without the wait the plan
// would settle before the removal.
func TestPlanWaitsOutTheRetireWait(t *testing.T) {
	w := site(t)
	var worker string
	for _, n := range w.In.Current.Nodes {
		if !n.ControlPlane {
			worker = n.Address
			break
		}
	}
	retired, _ := w.Set(func(_ int, m *machine.Machine) bool { return m.Address() == worker }, machine.StateRetired)
	for _, m := range retired.In.Machines {
		if m.Address() == worker {
			m.Status.Duration = 60 // a copy of Set's own
		}
	}
	p, err := retired.Plan(nil, generator.DefaultMaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != generator.PlanSettled || len(p.Steps) != 2 || p.Steps[0].Wait != nil || p.Steps[0].Op != generator.OpIncreaseWorker {
		t.Fatalf("%s, %d steps: %+v", p.Result, len(p.Steps), p.Steps)
	}
	second := p.Steps[1]
	if second.Wait == nil || !second.Wait.Until.Equal(now.Add(241*time.Second)) || second.Wait.Reason != "the retire wait (5m0s)" ||
		!slices.ContainsFunc(second.Changes, func(c generator.Change) bool {
			return c.Action == generator.ActionRemoveRetiredWorker && c.Address == worker
		}) {
		t.Errorf("the step after the wait: %+v", second)
	}
	if generator.RetireWaitLeft(generator.Input{Current: p.Cluster, Machines: retired.In.Machines, RetireWait: retired.In.RetireWait}) != 0 {
		t.Error("a worker still waits once the plan settled")
	}
}

// TestPlanAtTheLeadersPace: each tick of a plan comes an Interval after
// the one before. A worker RETIRED for 250 s of the retire wait's 300 s
// is replaced at once and removed by the next tick, a minute later, with
// no wait (the leader sees it RETIRED for 310 s then); at no pace the
// plan waits 51 s for it. The world's own machines keep their time.
func TestPlanAtTheLeadersPace(t *testing.T) {
	w := site(t)
	var worker string
	for _, n := range w.In.Current.Nodes {
		if !n.ControlPlane {
			worker = n.Address
			break
		}
	}
	retired, _ := w.Set(func(_ int, m *machine.Machine) bool { return m.Address() == worker }, machine.StateRetired)
	var gone *machine.Machine
	for _, m := range retired.In.Machines {
		if m.Address() == worker {
			m.Status.Duration, gone = 250, m // a copy of Set's own
		}
	}
	for _, tc := range []struct {
		interval time.Duration
		wait     bool
	}{{time.Minute, false}, {0, true}} {
		retired.Interval = tc.interval
		p, err := retired.Plan(nil, generator.DefaultMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		if p.Result != generator.PlanSettled || len(p.Steps) != 2 || p.Steps[0].Op != generator.OpIncreaseWorker ||
			!slices.ContainsFunc(p.Steps[1].Changes, func(c generator.Change) bool {
				return c.Action == generator.ActionRemoveRetiredWorker && c.Address == worker
			}) {
			t.Fatalf("interval %s: %s, %d steps: %+v", tc.interval, p.Result, len(p.Steps), p.Steps)
		}
		if wait := p.Steps[1].Wait; (wait != nil) != tc.wait || (wait != nil && !wait.Until.Equal(now.Add(51*time.Second))) {
			t.Errorf("interval %s: the removal's wait %+v", tc.interval, wait)
		}
	}
	if gone.Status.Duration != 250 || !retired.In.Now.Equal(now) {
		t.Errorf("the plan moved the world's own clock: %s, RETIRED for %.0fs", retired.In.Now, gone.Status.Duration)
	}
}

// TestAdd: machines added join the answer in serial order among the
// others, their role the inventory's roles; a query that leaves their
// state out keeps them out. The world it was made from is left as it is.
func TestAdd(t *testing.T) {
	w := site(t)
	mk := func(serial, role string, st machine.State) *machine.Machine {
		return &machine.Machine{Spec: machine.Spec{Serial: serial, Rack: 9, Role: role, IPv4: []string{"240.0.0.1"}}, Status: machine.Status{State: st}}
	}
	added, n := w.Add([]*machine.Machine{mk("c15", "gpu", machine.StateHealthy), mk("a0", "compute", machine.StateHealthy), mk("zz", "compute", machine.StateRetired)})
	var serials []string
	for _, m := range added.In.Machines {
		serials = append(serials, m.Spec.Serial)
	}
	if n != 3 || !slices.IsSorted(serials) || len(serials) != 20 || !slices.Equal(added.In.InventoryRoles, []string{"compute", "gpu", "storage"}) {
		t.Errorf("added %d: %v, roles %v", n, serials, added.In.InventoryRoles)
	}
	w.Query = sabakan.StateFilter{NotHaving: []machine.State{machine.StateRetired}}
	if left, n := w.Add([]*machine.Machine{mk("zz", "compute", machine.StateRetired)}); n != 0 || len(left.In.Machines) != 17 {
		t.Errorf("a RETIRED machine the query leaves out: %d added", n)
	}
	if len(w.In.Machines) != 17 || len(w.In.InventoryRoles) != 2 {
		t.Error("Add changed the world it was made from")
	}
}

// TestAddInItsRacksDomain: with a label as the failure domain, a made-up
// machine is in the domain every machine of its rack shares (rack 0's
// and 1's "a"); in a rack of mixed values (2), of machines without the
// label (3) or of none (9) it is a domain of its own; one with the label
// keeps its value; a real machine is added as it is. The machines given
// are left as they are; with the rack as the domain nothing is copied.
func TestAddInItsRacksDomain(t *testing.T) {
	w := site(t)
	for i, m := range w.In.Machines {
		feed := map[int]string{0: "a", 1: "a", 2: "b"}[m.Spec.Rack]
		if m.Spec.Serial == "c20" {
			feed = "a"
		}
		if feed != "" {
			c := *m
			c.Spec.Labels = []machine.Label{{Name: "rack-row", Value: "x"}, {Name: "power-feed", Value: feed}}
			w.In.Machines[i] = &c
		}
	}
	made := func(rack, k int, labels ...machine.Label) *machine.Machine {
		return &machine.Machine{Spec: machine.Spec{Serial: machine.MadeUpSerial("20270301", "compute", rack, k), Rack: rack, Role: "compute",
			IPv4: []string{machine.MadeUpAddress(k).String()}, Labels: labels}, Status: machine.Status{State: machine.StateHealthy}}
	}
	ms := []*machine.Machine{made(0, 1), made(1, 2, machine.Label{Name: "power-feed", Value: "z"}), made(2, 3), made(3, 4), made(9, 5),
		{Spec: machine.Spec{Serial: "real", Rack: 0, Role: "compute", IPv4: []string{"10.0.0.99"}}, Status: machine.Status{State: machine.StateHealthy}}}

	byRack, _ := w.Add(ms)
	if i := slices.IndexFunc(byRack.In.Machines, func(m *machine.Machine) bool { return m.Spec.Serial == ms[0].Spec.Serial }); i < 0 || byRack.In.Machines[i] != ms[0] {
		t.Errorf("with the rack as the domain, %s was copied (or not added)", ms[0].Spec.Serial)
	}
	pol, err := policy.Load([]byte("failureDomain: {label: power-feed}\n"), w.In.Template)
	if err != nil {
		t.Fatal(err)
	}
	w.In.Policy = pol
	added, n := w.Add(ms)
	key := failuredomain.ByLabel("power-feed")
	got := map[string]string{}
	for _, m := range added.In.Machines {
		got[m.Spec.Serial] = key.Of(m)
	}
	want := map[string]string{ms[0].Spec.Serial: "a", ms[1].Spec.Serial: "z", ms[2].Spec.Serial: ms[2].Spec.Serial + " (no power-feed label)",
		ms[3].Spec.Serial: ms[3].Spec.Serial + " (no power-feed label)", ms[4].Spec.Serial: ms[4].Spec.Serial + " (no power-feed label)",
		"real": "real (no power-feed label)"}
	for serial, d := range want {
		if got[serial] != d {
			t.Errorf("%s: in domain %q, want %q", serial, got[serial], d)
		}
	}
	if n != len(ms) || len(ms[0].Spec.Labels) != 0 {
		t.Errorf("added %d of %d; the machine given now has labels %v", n, len(ms), ms[0].Spec.Labels)
	}
}

// TestRenderMemo: a memo of rendered nodes shared by plans (as the
// forecast shares one across its events) changes no plan: a plan of a
// rack's loss is the same with and without it, and a plan with another
// template (a label more) on the same nodes re-renders every node as a
// plan without the memo does.
func TestRenderMemo(t *testing.T) {
	w := site(t)
	memo := &generator.RenderMemo{}
	w.In.RenderMemo = memo
	if p, err := w.Plan(nil, generator.DefaultMaxSteps); err != nil || len(p.Steps) != 0 {
		t.Fatalf("the site's plan: %v, %+v", err, p)
	}
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	other, err := template.Parse([]byte(strings.ReplaceAll(string(data), "  labels:\n", "  labels:\n    memo.test/added: \"1\"\n")))
	if err != nil {
		t.Fatal(err)
	}
	changed := w
	changed.In.Template, changed.TemplateChanged = other, true
	lost, _ := w.Set(func(_ int, m *machine.Machine) bool { return m.Spec.Rack == 0 }, machine.StateRetiring)
	// The loss first: its plan renders the site's nodes by the first
	// template, which the memo then knows.
	for _, tc := range []struct {
		name string
		x    World
	}{{"loss", lost}, {"template", changed}} {
		name, x := tc.name, tc.x
		with, err := x.Plan(nil, generator.DefaultMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		x.In.RenderMemo = nil
		without, err := generator.Run(x.In, nil, x.TemplateChanged, generator.DefaultMaxSteps, x.Tick)
		if err != nil {
			t.Fatal(err)
		}
		if len(with.Steps) == 0 || !reflect.DeepEqual(with.Steps, without.Steps) || !reflect.DeepEqual(with.Cluster, without.Cluster) {
			t.Errorf("%s: with the memo %d steps, without %d", name, len(with.Steps), len(without.Steps))
		}
	}
}
