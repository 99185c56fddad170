package resilience

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/ckegen/ckegen/world"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/template"
)

var now = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)

// bundled is the bundled data center with examples/cluster-rack4.yml, and
// policyFile when not "".
func bundled(t *testing.T, policyFile string) generator.Input {
	t.Helper()
	f := intake.Files{
		Template:    intake.File("--template", "../examples/template.yml"),
		Machines:    intake.File("--machines", "../examples/machines.json"),
		Constraints: intake.File("--constraints", "../examples/constraints.json"),
		Current:     intake.File("--current", "../examples/cluster-rack4.yml"),
	}
	if policyFile != "" {
		f.Policy = intake.File("--policy", policyFile)
	}
	s, inv, _, err := intake.FromFiles(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	return s.Input(inv, now, generator.DefaultRetireWait)
}

// TestBundledRack4: the bundled data center with two of its three control
// planes in rack 4 plans settled, yet rack 4's loss breaks etcd's quorum:
// the report says so, with the addresses, and the plan losing rack 4
// would make.
func TestBundledRack4(t *testing.T) {
	in := bundled(t, "")
	if p, err := generator.Run(in, nil, false, 10, generator.Tick); err != nil || p.Result != generator.PlanSettled || len(p.Steps) != 0 {
		t.Fatalf("setup: the plan is %v %v, want settled at once", p, err)
	}
	r, err := Of(world.World{In: in}, failuredomain.Rack())
	if err != nil {
		t.Fatal(err)
	}
	if r.FailureDomain != "rack" || r.ControlPlanes != 3 || r.Quorum != 2 || !slices.Equal(r.AtRisk, []string{"4"}) || r.Generated {
		t.Fatalf("report %+v", r)
	}
	if !slices.Equal(r.Warnings, []string{"rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum"}) {
		t.Errorf("warnings %q", r.Warnings)
	}
	four, err := r.Lookup("4")
	if err != nil {
		t.Fatal(err)
	}
	if !four.QuorumLost || !slices.Equal(four.ControlPlanes, []string{"10.0.4.12", "10.0.4.14"}) || four.Machines != 20 {
		t.Errorf("rack 4: %+v", four)
	}
	eleven, _ := r.Lookup("11")
	if eleven.QuorumLost || !slices.Equal(eleven.ControlPlanes, []string{"10.0.11.19"}) {
		t.Errorf("rack 11: %+v", eleven)
	}
	if len(r.Domains) != 12 || r.Domains[0].Domain != "0" || r.Domains[11].Domain != "11" {
		t.Errorf("domains not every rack in order: %v", names(r))
	}
	for _, d := range r.Domains {
		if want := expected(in, failuredomain.Rack(), d.Domain); d.Recovery != want {
			t.Errorf("rack %s: recovery %+v, the generator's plan %+v", d.Domain, d.Recovery, want)
		}
	}
	if four.Recovery.Result != NoQuorum || four.Recovery.Planned != generator.PlanSettled || four.Recovery.Steps != 3 {
		t.Errorf("rack 4's loss breaks quorum, yet its recovery is %+v", four.Recovery)
	}
	if r.Basis != BasisCurrent || r.PendingSteps != 0 || r.PendingRefused != nil || !four.QuorumLostNow || eleven.QuorumLostNow {
		t.Errorf("a settled input: basis %q, %d pending steps, refused %v; rack 4 quorum lost now %v, rack 11 %v",
			r.Basis, r.PendingSteps, r.PendingRefused, four.QuorumLostNow, eleven.QuorumLostNow)
	}
	text := string(r.Text())
	for _, want := range []string{
		"failure domain: rack; 3 control planes, quorum 2; count model, minimum-workers 20\n",
		"at risk: rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum\n",
		"  LOST  ",
		"  no quorum: CKE can apply none of the 3 steps the planner would make until enough of its control planes return\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(text, "failure domain: ") || strings.Contains(text, "pending") || strings.Contains(text, " now)") {
		t.Errorf("the text of a settled input speaks of a pending plan:\n%s", text)
	}
	lines := strings.Split(text, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "DOMAIN") })
	if i < 0 || !strings.HasPrefix(lines[i+1], "rack 4 ") || !strings.Contains(lines[i+1], "10.0.4.12, 10.0.4.14") || !strings.Contains(lines[i+1], "LOST") {
		t.Errorf("the table does not begin with rack 4, at risk:\n%s", text)
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(js), `"quorumLostNow":`); n != len(r.Domains) {
		t.Errorf("quorumLostNow in %d of %d domains:\n%s", n, len(r.Domains), js)
	}
	for _, key := range []string{`"failureDomain":"rack"`, `"basis":"current","controlPlanes":3`, `"quorum":2`, `"atRisk":["4"]`,
		`{"domain":"4","machines":20,"controlPlanes":["10.0.4.12","10.0.4.14"],"workers":{`, `"quorumLost":true,"quorumLostNow":true,"workersLeft":`,
		`"belowMinimum":`, `"recovery":{"steps":3,"result":"no-quorum","planned":"settled"}`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("JSON lacks %s:\n%s", key, js)
		}
	}
}

// TestNoCurrentCluster: without a cluster, the report is of the one
// Generate would make, and says so.
func TestNoCurrentCluster(t *testing.T) {
	in := bundled(t, "")
	in.Current = nil
	r, err := Of(world.World{In: in}, failuredomain.Rack())
	if err != nil {
		t.Fatal(err)
	}
	if !r.Generated || r.ControlPlanes != 3 || len(r.AtRisk) != 0 {
		t.Errorf("report of a generated cluster: %+v", r)
	}
	if !strings.Contains(string(r.Text()), "cluster: the one Generate would make") {
		t.Errorf("text does not say the cluster is generated:\n%s", r.Text())
	}
}

func names(r *Report) []string {
	var out []string
	for _, d := range r.Domains {
		out = append(out, d.Domain)
	}
	return out
}

// expected is the recovery the report is to give a domain, made
// independently of the report: on the cluster the input's plan settles
// on (the input's cluster when the plan is refused or does not settle),
// the domain's loss as the generator plans it, and no-quorum when the
// domain holds more than floor((N-1)/2) of that cluster's N control
// planes.
func expected(in generator.Input, key failuredomain.Key, domain string) Recovery {
	p, err := (&world.World{In: in}).Plan(nil, PendingMaxSteps)
	if err == nil && p.Result == generator.PlanSettled {
		in.Current = p.Cluster
	}
	rc := reference(in, key, domain)
	if err == nil && p.Result == generator.PlanMaxSteps {
		rc = Recovery{Result: NotPlanned}
	}
	if held, n := controlPlanesIn(in, key, domain); held > (n-1)/2 {
		rc = Recovery{Steps: rc.Steps, Result: NoQuorum, Planned: rc.Result, Reason: rc.Reason, Message: rc.Message, Error: rc.Error}
	}
	return rc
}

// nodeDomain is the domain of a node: its machine's, or its labels'.
func nodeDomain(in generator.Input, key failuredomain.Key, n *cluster.Node) string {
	for _, m := range in.Machines {
		if m.Address() == n.Address {
			return key.Of(m)
		}
	}
	return key.OfNode(n)
}

// reference is the recovery of a domain as the generator plans it, made
// independently of the report's index: every machine of the domain
// UNREACHABLE, the plan made.
func reference(in generator.Input, key failuredomain.Key, domain string) Recovery {
	ms := make([]*machine.Machine, len(in.Machines))
	for i, m := range in.Machines {
		ms[i] = m
		if key.Of(m) == domain {
			c := *m
			c.Status.State = machine.StateUnreachable
			ms[i] = &c
		}
	}
	in.Machines = ms
	p, err := (&world.World{In: in}).Plan(nil, generator.DefaultMaxSteps)
	if err != nil {
		return Recovery{Result: generator.PlanRefused, Reason: refusalCode(err), Message: err.Error(), Error: err.Error()}
	}
	rc := Recovery{Steps: len(p.Steps), Result: p.Result}
	if p.Err != nil {
		rc.Reason, rc.Message, rc.Error = refusalCode(p.Err), p.Err.Error(), p.Err.Error()
	}
	return rc
}

// refusalCode is the reason code the daemon's status records for a
// refused tick, as docs/alerts.md lists them: the test's own reading,
// against which the report's is checked.
func refusalCode(err error) string {
	switch {
	case errors.Is(err, generator.ErrTooManyNonExistent):
		return reason.TooManyNonExistent
	case errors.Is(err, generator.ErrNotEnoughMachines):
		return reason.NotEnoughMachines
	}
	return reason.GenerationError
}

// dc is a random data center for the report: two worker roles, any
// states, rebooting nodes, Kubernetes taints, either model, maybe a
// policy that spreads, and a cluster that is sometimes settled and
// sometimes not.
type dc struct {
	tmpl *template.Template
	c    constraints.Constraints
	ms   []*machine.Machine
	key  failuredomain.Key
	pol  string
}

const worldTemplate = `name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: cs}}
- {user: u, labels: {cke.cybozu.com/role: ss}}
service_subnet: 10.68.0.0/16
`

var states = []machine.State{machine.StateUninitialized, machine.StateHealthy, machine.StateUnhealthy,
	machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring, machine.StateRetired}

func mach(serial string, rack, idx int, role string, st machine.State, days int) *machine.Machine {
	return &machine.Machine{
		Spec: machine.Spec{
			Serial: serial, Rack: rack, IndexInRack: idx, Role: role,
			IPv4:         []string{fmt.Sprintf("10.0.%d.%d", rack, idx)},
			RegisterDate: now.AddDate(-1, 0, 0), RetireDate: now.AddDate(0, 0, days),
		},
		Status: machine.Status{State: st, Duration: 1000},
	}
}

func drawWorld(t *rapid.T) *dc {
	tmpl, err := template.Parse([]byte(worldTemplate))
	if err != nil {
		t.Fatal(err)
	}
	w := &dc{tmpl: tmpl}
	if rapid.Bool().Draw(t, "rate") {
		rate := rapid.SampledFrom([]int{0, 50, 90}).Draw(t, "minimum-workers-rate")
		w.c = constraints.Constraints{ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"), MinimumWorkersRate: &rate}
	} else {
		w.c = constraints.Constraints{ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"), MinimumWorkers: rapid.IntRange(0, 8).Draw(t, "min")}
		if rapid.Bool().Draw(t, "max") {
			w.c.MaximumWorkers = w.c.MinimumWorkers + rapid.IntRange(0, 3).Draw(t, "extra")
			w.c.MaximumWorkers = max(w.c.MaximumWorkers, 1)
		}
	}
	if rapid.Bool().Draw(t, "by label") {
		w.key = failuredomain.ByLabel("feed")
	}
	switch rapid.IntRange(0, 3).Draw(t, "policy") {
	case 1:
		w.pol = "placements: {control-plane: {spread: quorum}}\nstickiness: 3\n"
	case 2:
		w.pol = "placements: {cs: {spread: {maxSkew: 1}}, control-plane: {constraints: [\"cke.cybozu.com/rack != 2\"]}}\n"
	}
	if w.pol != "" && !w.key.IsRack() {
		w.pol = "failureDomain: {label: feed}\n" + w.pol
	}
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	n := rapid.IntRange(1, 30).Draw(t, "machines")
	for i := 1; i <= n; i++ {
		st := machine.StateHealthy
		if rapid.IntRange(0, 5).Draw(t, "sick") == 0 {
			st = rapid.SampledFrom(states).Draw(t, "state")
		}
		m := mach(fmt.Sprintf("s%03d", i), rapid.IntRange(0, racks-1).Draw(t, "rack"), i,
			rapid.SampledFrom([]string{"cs", "ss", "boot"}).Draw(t, "role"), st, rapid.IntRange(-300, 1500).Draw(t, "days"))
		if f := rapid.SampledFrom([]string{"a", "b", ""}).Draw(t, "feed"); f != "" {
			m.Spec.Labels = []machine.Label{{Name: "feed", Value: f}}
		}
		w.ms = append(w.ms, m)
	}
	return w
}

func (w *dc) input(t *rapid.T) generator.Input {
	in := generator.Input{Template: w.tmpl, Constraints: w.c, Machines: w.ms, Now: now, RetireWait: generator.DefaultRetireWait}
	if w.pol != "" {
		p, err := policy.Load([]byte(w.pol), w.tmpl)
		if err != nil {
			t.Fatal(err)
		}
		in.Policy = p
	}
	return in
}

// drawInput is an input on w: its first cluster after some machines
// changed, settled or not, with some machines gone from sabakan, nodes
// rebooting and Kubernetes taints; false when w has no first cluster.
func (w *dc) drawInput(t *rapid.T) (generator.Input, bool) {
	in := w.input(t)
	first, err := generator.Generate(in)
	if err != nil {
		return in, false
	}
	cur := first.Cluster
	// Some machines change; the cluster follows, to its end or not.
	for range rapid.IntRange(0, 4).Draw(t, "events") {
		i := rapid.IntRange(0, len(w.ms)-1).Draw(t, "target")
		m := *w.ms[i]
		m.Status.State = rapid.SampledFrom(states).Draw(t, "new state")
		m.Status.Duration = float64(rapid.SampledFrom([]int{0, 1000}).Draw(t, "duration"))
		w.ms = slices.Clone(w.ms)
		w.ms[i] = &m
	}
	in = w.input(t)
	in.Current = cur
	if rapid.Bool().Draw(t, "settle") {
		if p, err := generator.Run(in, nil, false, 50, generator.Tick); err == nil {
			in.Current = p.Cluster
		}
	}
	// Some machines may leave sabakan: their nodes are non-existent,
	// and too many control planes among them refuse the plan.
	if rapid.IntRange(0, 3).Draw(t, "leave") == 0 {
		in.Machines = slices.DeleteFunc(slices.Clone(in.Machines), func(*machine.Machine) bool {
			return rapid.IntRange(0, 2).Draw(t, "gone") == 0
		})
	}
	in.Rebooting = map[string]bool{}
	in.NodeTaints = map[string][]cluster.Taint{}
	for _, n := range in.Current.Nodes {
		if rapid.IntRange(0, 9).Draw(t, "reboot") == 0 {
			in.Rebooting[n.Address] = true
		}
	}
	// Kubernetes may know a machine that is not a node yet: a
	// tainted one is a worker candidate but no control-plane one.
	for _, m := range in.Machines {
		if rapid.IntRange(0, 6).Draw(t, "taint") == 0 {
			in.NodeTaints[m.Address()] = []cluster.Taint{{Key: "example.com/broken", Effect: "NoSchedule"}}
		}
	}
	return in, true
}

// TestRecoveryIsThePlan: on random data centers and clusters, every
// domain's recovery in the report is exactly the plan the generator makes
// with the domain's machines UNREACHABLE (the shared summary of a loss
// that takes no control plane included), and the other figures agree with
// a count made from the cluster and the machines.
func TestRecoveryIsThePlan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		in, ok := w.drawInput(t)
		if !ok {
			return
		}
		r, err := Of(world.World{In: in}, w.key)
		if err != nil {
			if _, perr := generator.Run(in, nil, false, 1, generator.Tick); perr == nil {
				t.Fatalf("Of: %v, though the input plans", err)
			}
			return
		}
		now := in
		basis := checkBasis(t, in, r)
		in.Current = basis.Current
		for _, d := range r.Domains {
			if want := expected(now, w.key, d.Domain); d.Recovery != want {
				t.Fatalf("domain %s: recovery %+v, the generator's plan %+v", d.Domain, d.Recovery, want)
			}
			held, n := controlPlanesIn(in, w.key, d.Domain)
			if d.QuorumLost != (held > (n-1)/2) || len(d.ControlPlanes) != held {
				t.Fatalf("domain %s: %d control planes, quorum lost %v; the cluster has %d of %d", d.Domain, len(d.ControlPlanes), d.QuorumLost, held, n)
			}
			if heldNow, nNow := controlPlanesIn(now, w.key, d.Domain); d.QuorumLostNow != (heldNow > (nNow-1)/2) {
				t.Fatalf("domain %s: quorum lost now %v; the cluster now has %d of %d", d.Domain, d.QuorumLostNow, heldNow, nNow)
			}
			left := 0
			for _, n := range in.Current.Nodes {
				for _, m := range in.Machines {
					if !n.ControlPlane && m.Address() == n.Address && m.Status.State == machine.StateHealthy && w.key.Of(m) != d.Domain {
						left++
					}
				}
			}
			if d.WorkersLeft != left {
				t.Fatalf("domain %s: %d workers left, want %d", d.Domain, d.WorkersLeft, left)
			}
		}
	})
}

// checkBasis checks the report's basis against the input's own plan,
// and returns the input with the cluster the report is to be made on.
func checkBasis(t *rapid.T, in generator.Input, r *Report) generator.Input {
	p, err := (&world.World{In: in}).Plan(nil, PendingMaxSteps)
	if err != nil {
		t.Fatal(err)
	}
	want := BasisCurrent
	if p.Result == generator.PlanSettled && len(p.Steps) > 0 {
		want, in.Current = BasisPendingPlanSettled, p.Cluster
	}
	refused := p.Result == generator.PlanRefused
	if r.Basis != want || r.PendingSteps != len(p.Steps) || (r.PendingRefused != nil) != refused ||
		r.PendingMaxSteps != (p.Result == generator.PlanMaxSteps) {
		t.Fatalf("basis %q, %d pending steps, refused %+v, max-steps %v; the plan: %s after %d steps",
			r.Basis, r.PendingSteps, r.PendingRefused, r.PendingMaxSteps, p.Result, len(p.Steps))
	}
	if refused && r.PendingRefused.Message != p.Err.Error() {
		t.Fatalf("pending refused %+v, the plan's error %v", r.PendingRefused, p.Err)
	}
	return in
}

// controlPlanesIn counts the control planes of in.Current, and those in
// domain.
func controlPlanesIn(in generator.Input, key failuredomain.Key, domain string) (held, n int) {
	for _, node := range in.Current.Nodes {
		if node.ControlPlane {
			n++
			if nodeDomain(in, key, node) == domain {
				held++
			}
		}
	}
	return held, n
}
