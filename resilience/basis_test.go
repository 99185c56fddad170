package resilience

import (
	"encoding/json"
	"fmt"
	"github.com/ckegen/ckegen/world"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/template"
)

// rate is the bundled data center in the rate model
// (examples/constraints-rate.json): its plan is pending (one step adds
// every HEALTHY machine a worker template takes), and the control planes
// stay where they are, two of three in rack 4.
func rate(t *testing.T) generator.Input {
	t.Helper()
	in := bundled(t, "")
	r := 80
	in.Constraints = constraints.Constraints{ControlPlaneCount: 3, MinimumWorkersRate: &r}
	return in
}

// TestNoQuorumNeverSettled: in both models, losing rack 4 (two of the
// three control planes) reads no-quorum, with the steps the planner
// would make and how its plan ends, never settled; losing rack 11 (one
// control plane) or rack 0 (none) still reads the planner's end. The text
// says that CKE can apply none of the steps.
func TestNoQuorumNeverSettled(t *testing.T) {
	for _, tc := range []struct {
		model string
		in    generator.Input
		words string
	}{
		{"count", bundled(t, ""), "no quorum: CKE can apply none of the 3 steps the planner would make until enough of its control planes return"},
		{"rate", rate(t), "no quorum: CKE cannot apply the 1 step the planner would make until enough of its control planes return"},
	} {
		r, err := Of(world.World{In: tc.in}, failuredomain.Rack())
		if err != nil {
			t.Fatal(err)
		}
		four, _ := r.Lookup("4")
		want := expected(tc.in, failuredomain.Rack(), "4")
		if four.Recovery.Result != NoQuorum || four.Recovery.Planned != generator.PlanSettled || four.Recovery != want || four.Recovery.Steps == 0 {
			t.Errorf("%s model: rack 4 %+v, want no-quorum after the planner's %+v", tc.model, four.Recovery, reference(tc.in, failuredomain.Rack(), "4"))
		}
		for _, kept := range []string{"11", "0"} {
			d, _ := r.Lookup(kept)
			if d.QuorumLost || d.Recovery.Result != generator.PlanSettled {
				t.Errorf("%s model: rack %s, whose loss keeps the quorum: %+v", tc.model, kept, d.Recovery)
			}
		}
		if text := string(r.Text()); !strings.Contains(text, "  "+tc.words+"\n") || strings.Contains(rowOf(text, "rack 4 "), "settled") {
			t.Errorf("%s model: rack 4's row does not say %q:\n%s", tc.model, tc.words, text)
		}
	}
}

// rowOf is the table's row that begins with prefix.
func rowOf(text, prefix string) string {
	for l := range strings.SplitSeq(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

// TestPendingPlanBasis: with spread: quorum, the bundled cluster has a
// plan of one step pending (a control plane moves out of rack 4); the
// report is made on the cluster it settles on and says so, first: rack 4
// keeps the quorum there, loses it now.
func TestPendingPlanBasis(t *testing.T) {
	in := bundled(t, "../examples/policy-spread.yml")
	r, err := Of(world.World{In: in}, failuredomain.Rack())
	if err != nil {
		t.Fatal(err)
	}
	if r.Basis != BasisPendingPlanSettled || r.PendingSteps != 1 || r.PendingRefused != nil || len(r.AtRisk) != 0 {
		t.Fatalf("basis %q, %d pending steps, refused %v, at risk %v", r.Basis, r.PendingSteps, r.PendingRefused, r.AtRisk)
	}
	four, _ := r.Lookup("4")
	five, _ := r.Lookup("5")
	if four.QuorumLost || !four.QuorumLostNow || !slices.Equal(four.ControlPlanes, []string{"10.0.4.12"}) {
		t.Errorf("rack 4 on the settled cluster: %+v", four)
	}
	if five.QuorumLost || five.QuorumLostNow || !slices.Equal(five.ControlPlanes, []string{"10.0.5.7"}) {
		t.Errorf("rack 5 on the settled cluster: %+v", five)
	}
	for _, d := range r.Domains {
		if want := expected(in, failuredomain.Rack(), d.Domain); d.Recovery != want {
			t.Errorf("rack %s: recovery %+v, the generator's plan on the settled cluster %+v", d.Domain, d.Recovery, want)
		}
	}
	text := string(r.Text())
	lines := strings.Split(text, "\n")
	if lines[0] != "the cluster has a pending plan of 1 step: each domain's loss is planned on the cluster it settles on" ||
		lines[1] != "failure domain: rack; 3 control planes, quorum 2; count model, minimum-workers 20" ||
		!strings.Contains(text, "\nat risk now, until the pending plan is applied: rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum\n") ||
		!strings.Contains(rowOf(text, "rack 4 "), "  kept (LOST now)  ") {
		t.Errorf("text:\n%s", text)
	}
	js, _ := json.Marshal(r)
	for _, key := range []string{`"basis":"pending-plan-settled","pendingSteps":1,`, `"domain":"4",`, `"quorumLost":false,"quorumLostNow":true,`} {
		if !strings.Contains(string(js), key) {
			t.Errorf("JSON lacks %s:\n%s", key, js)
		}
	}
}

// TestRefusedPendingPlan: a plan that is refused leaves the report on the
// cluster as it is, with the refusal's reason code and message, first in
// the text: rule 1's (the machines of rack 4's two control planes gone
// from sabakan), which every loss's plan shares, and a count of workers
// no inventory meets.
func TestRefusedPendingPlan(t *testing.T) {
	gone := bundled(t, "")
	gone.Machines = slices.DeleteFunc(slices.Clone(gone.Machines), func(m *machine.Machine) bool {
		return m.Spec.Serial == "S000092" || m.Spec.Serial == "S000094"
	})
	short := bundled(t, "")
	short.Constraints.MinimumWorkers, short.Constraints.MaximumWorkers = 300, 0
	for _, tc := range []struct {
		in     generator.Input
		reason string
	}{{gone, reason.TooManyNonExistent}, {short, reason.NotEnoughMachines}} {
		p, err := (&world.World{In: tc.in}).Plan(nil, generator.DefaultMaxSteps)
		if err != nil || p.Result != generator.PlanRefused {
			t.Fatalf("setup: the plan is %v, %v", p, err)
		}
		r, err := Of(world.World{In: tc.in}, failuredomain.Rack())
		if err != nil {
			t.Fatal(err)
		}
		if r.Basis != BasisCurrent || r.PendingRefused == nil || *r.PendingRefused != (Refusal{Reason: tc.reason, Message: p.Err.Error()}) || r.PendingSteps != len(p.Steps) {
			t.Fatalf("basis %q, refused %+v, %d steps; the plan: %v after %d steps", r.Basis, r.PendingRefused, r.PendingSteps, p.Err, len(p.Steps))
		}
		four, _ := r.Lookup("4")
		if !four.QuorumLost || !four.QuorumLostNow || four.Recovery.Result != NoQuorum {
			t.Errorf("rack 4 on the current cluster: %+v", four)
		}
		for _, d := range r.Domains {
			if want := expected(tc.in, failuredomain.Rack(), d.Domain); d.Recovery != want {
				t.Errorf("%s: rack %s: recovery %+v, the generator's plan %+v", tc.reason, d.Domain, d.Recovery, want)
			}
		}
		text := string(r.Text())
		first, _, _ := strings.Cut(text, "\n")
		if tc.reason == reason.TooManyNonExistent && !strings.HasSuffix(rowOf(text, "rack 0 "), "  0 steps, refused as the cluster's plan is") {
			t.Errorf("rack 0's row does not say its plan is refused as the cluster's:\n%s", text)
		}
		if want := "the cluster's plan is refused at its first step (" + tc.reason + ": " + p.Err.Error() +
			"): each domain's loss is planned on the cluster as it is now"; first != want {
			t.Errorf("first line %q, want %q", first, want)
		}
		js, _ := json.Marshal(r)
		if want := `"basis":"current","pendingRefused":{"reason":"` + tc.reason + `","message":`; !strings.Contains(string(js), want) {
			t.Errorf("JSON lacks %s:\n%s", want, js)
		}
	}
}

// TestLossBesideBadControlPlane: a control plane is bad (tainted in
// Kubernetes, of a role no worker template takes) and nothing can
// replace it, with the workers at minimum-workers. Losing the power feed
// b, which holds one HEALTHY worker and no control plane, makes rule 6
// add a worker beside the lost one, which stays a node; the workers are
// then enough for rule 5 to promote one: two steps, as the planner makes
// them, not the one a summary without planning would say.
func TestLossBesideBadControlPlane(t *testing.T) {
	w := &dc{c: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 3}, key: failuredomain.ByLabel("feed")}
	var err error
	if w.tmpl, err = template.Parse([]byte(worldTemplate)); err != nil {
		t.Fatal(err)
	}
	roles := []string{"cs", "cs", "cs", "boot", "boot", "cs", "cs", "cs"}
	for i, role := range roles {
		m := mach(fmt.Sprintf("s%03d", i+1), 0, i+1, role, machine.StateHealthy, 300)
		feed := "a"
		if i == 5 {
			feed = "b"
		}
		m.Spec.Labels = []machine.Label{{Name: "feed", Value: feed}}
		w.ms = append(w.ms, m)
	}
	in := w.input(nil)
	in.Current = &cluster.Cluster{Name: "t", ServiceSubnet: "10.68.0.0/16"}
	for i, cp := range []bool{true, true, false, true, false, false, false} {
		if i == 4 {
			continue // a boot server that is no node
		}
		in.Current.Nodes = append(in.Current.Nodes, &cluster.Node{Address: w.ms[i].Address(), User: "u", ControlPlane: cp})
	}
	// Every machine but s007 is tainted in Kubernetes: no control-plane
	// candidate; the nodes of s001, s002, s003 and s006 reboot.
	in.NodeTaints, in.Rebooting = map[string][]cluster.Taint{}, map[string]bool{}
	for i, m := range w.ms {
		if i != 6 {
			in.NodeTaints[m.Address()] = []cluster.Taint{{Key: "example.com/broken", Effect: "NoSchedule"}}
		}
		if i == 0 || i == 1 || i == 2 || i == 5 {
			in.Rebooting[m.Address()] = true
		}
	}
	if p, err := (&world.World{In: in}).Plan(nil, generator.DefaultMaxSteps); err != nil || len(p.Steps) != 0 {
		t.Fatalf("setup: the plan is %+v, %v; want settled at once", p, err)
	}
	r, err := Of(world.World{In: in}, w.key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := r.Lookup("b")
	if want := reference(in, w.key, "b"); b.Recovery != want || want.Steps != 2 {
		t.Errorf("feed b: recovery %+v, the generator's plan %+v (want 2 steps)", b.Recovery, want)
	}
}

// TestUnsettledPendingPlan: a pending plan that does not settle within
// the steps the report follows it (rack 4 retiring takes 3; the report
// follows 2 here) leaves the report on the cluster as it is, says so
// first, and plans no domain's loss.
func TestUnsettledPendingPlan(t *testing.T) {
	in := bundled(t, "")
	in.Machines = slices.Clone(in.Machines)
	for i, m := range in.Machines {
		if m.Spec.Rack == 4 {
			c := *m
			c.Status = machine.Status{State: machine.StateRetiring}
			in.Machines[i] = &c
		}
	}
	if p, err := (&world.World{In: in}).Plan(nil, generator.DefaultMaxSteps); err != nil || p.Result != generator.PlanSettled || len(p.Steps) != 3 {
		t.Fatalf("setup: the plan is %+v, %v; want settled after 3 steps", p, err)
	}
	r, err := of(world.World{In: in}, failuredomain.Rack(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if r.Basis != BasisCurrent || !r.PendingMaxSteps || r.PendingSteps != 2 || r.PendingRefused != nil {
		t.Fatalf("basis %q, max-steps %v, %d steps, refused %v", r.Basis, r.PendingMaxSteps, r.PendingSteps, r.PendingRefused)
	}
	for _, d := range r.Domains {
		want := Recovery{Result: NotPlanned}
		if d.Domain == "4" {
			want = Recovery{Result: NoQuorum, Planned: NotPlanned}
		}
		if d.Recovery != want {
			t.Errorf("rack %s: recovery %+v, want %+v", d.Domain, d.Recovery, want)
		}
	}
	text := string(r.Text())
	if first, _, _ := strings.Cut(text, "\n"); first != "the cluster has a pending plan that does not settle within 2 steps: the report is on the cluster as it is now, and no domain's loss is planned" ||
		!strings.HasSuffix(rowOf(text, "rack 0 "), "  not planned: the cluster's own plan does not settle") {
		t.Errorf("text:\n%s", text)
	}
	if js, _ := json.Marshal(r); !strings.Contains(string(js), `"basis":"current","pendingSteps":2,"pendingMaxSteps":true,`) {
		t.Errorf("JSON:\n%s", js)
	}
}

// TestLossBesideStuckSpread: with spread: quorum, rack 1 holds two of the
// three control planes and nothing can move one (no candidate elsewhere;
// the workers at minimum-workers, none to promote). Losing rack 0, which
// holds one HEALTHY worker, makes rule 6 add a worker beside the lost one;
// the workers are then enough for rule 10 to promote one out of rack 1:
// two steps, as the planner makes them.
func TestLossBesideStuckSpread(t *testing.T) {
	w := &dc{c: constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 3}, pol: "placements: {control-plane: {spread: quorum}}\n"}
	var err error
	if w.tmpl, err = template.Parse([]byte(worldTemplate)); err != nil {
		t.Fatal(err)
	}
	for i, rack := range []int{1, 1, 2, 0, 3, 3, 1} {
		role := "cs"
		if i < 2 {
			role = "boot" // rack 1's control planes cannot be demoted to workers
		}
		w.ms = append(w.ms, mach(fmt.Sprintf("s%03d", i+1), rack, i+1, role, machine.StateHealthy, 300))
	}
	in := w.input(nil)
	in.Current = &cluster.Cluster{Name: "t", ServiceSubnet: "10.68.0.0/16"}
	for i, cp := range []bool{true, true, true, false, false, false} {
		in.Current.Nodes = append(in.Current.Nodes, &cluster.Node{Address: w.ms[i].Address(), User: "u", ControlPlane: cp})
	}
	// s007, in rack 1, is tainted in Kubernetes: a worker candidate, no
	// control-plane one.
	in.NodeTaints = map[string][]cluster.Taint{w.ms[6].Address(): {{Key: "example.com/broken", Effect: "NoSchedule"}}}
	if p, err := (&world.World{In: in}).Plan(nil, generator.DefaultMaxSteps); err != nil || len(p.Steps) != 0 {
		t.Fatalf("setup: the plan is %+v, %v; want settled at once", p, err)
	}
	r, err := Of(world.World{In: in}, failuredomain.Rack())
	if err != nil {
		t.Fatal(err)
	}
	zero, _ := r.Lookup("0")
	if want := reference(in, failuredomain.Rack(), "0"); zero.Recovery != want || want.Steps != 2 {
		t.Errorf("rack 0: recovery %+v, the generator's plan %+v (want 2 steps)", zero.Recovery, want)
	}
}

// limit is max-unhealthy as a count.
type limit int

func (l limit) Limit(int) int  { return int(l) }
func (l limit) String() string { return strconv.Itoa(int(l)) }

// TestRefusedPendingPlanOverTheBreaker: rule 1 refuses the cluster's own
// plan (rack 4's two control planes gone), and max-unhealthy allows the
// two unhealthy nodes that makes but no more: a loss that takes a
// HEALTHY node is over the limit, and the leader taints, then holds,
// rather than refuse. Each recovery is the world's plan of that loss,
// not the shared refusal.
func TestRefusedPendingPlanOverTheBreaker(t *testing.T) {
	gone := bundled(t, "")
	gone.Machines = slices.DeleteFunc(slices.Clone(gone.Machines), func(m *machine.Machine) bool {
		return m.Spec.Serial == "S000092" || m.Spec.Serial == "S000094"
	})
	w := world.World{In: gone, MaxUnhealthy: limit(len(generator.Unhealthy(gone)))}
	r, err := Of(w, failuredomain.Rack())
	if err != nil {
		t.Fatal(err)
	}
	if r.PendingRefused == nil || r.PendingRefused.Reason != reason.TooManyNonExistent {
		t.Fatalf("the cluster's plan: refused %+v, held %+v", r.PendingRefused, r.PendingHeld)
	}
	held := 0
	for _, d := range r.Domains {
		lost, _ := w.Set(func(_ int, m *machine.Machine) bool {
			return failuredomain.Rack().Of(m) == d.Domain && m.Status.State != machine.StateUnreachable
		}, machine.StateUnreachable)
		p, err := lost.Plan(nil, generator.DefaultMaxSteps)
		if err != nil {
			t.Fatal(err)
		}
		want := recoveryOfPlan(p)
		if d.QuorumLost {
			want = noQuorum(want)
		}
		if d.Recovery != want {
			t.Errorf("rack %s: recovery %+v, the world's plan %+v", d.Domain, d.Recovery, want)
		}
		if p.Result == generator.PlanHeld {
			held++
		}
	}
	if held == 0 {
		t.Error("no loss is held by the breaker: the test tests nothing")
	}
}
