package generator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// cpRacks lists the racks of a cluster's control planes, in the cluster's
// order, read from the machines.
func cpRacks(ms []*machine.Machine, c *cluster.Cluster) []int {
	var out []int
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			continue
		}
		for _, m := range ms {
			if m.Address() == n.Address {
				out = append(out, m.Spec.Rack)
			}
		}
	}
	return out
}

func countOf(xs []int, v int) int {
	n := 0
	for _, x := range xs {
		if x == v {
			n++
		}
	}
	return n
}

func reasons(cs []Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s %s: %s\n", c.Action, c.Address, c.Reason)
	}
	return b.String()
}

// tieredRack4 is four machines of rack 4 marked tier 1, the first group
// of the control plane's placement, and two of each of racks 5 to 7.
func tieredRack4() []*machine.Machine {
	var ms []*machine.Machine
	for i := 1; i <= 4; i++ {
		ms = append(ms, mkMachine(fmt.Sprintf("r4m%d", i), 4, i).label("tier", "1").obj())
	}
	for r := 5; r <= 7; r++ {
		for i := 1; i <= 2; i++ {
			ms = append(ms, mkMachine(fmt.Sprintf("r%dm%d", r, i), r, i).obj())
		}
	}
	return ms
}

const tieredPolicy = `
placements:
  control-plane:%s
    groups:
    - {name: tier1, constraints: ["sabakan.cke.cybozu.com/tier is 1"]}
    - {name: any}
stickiness: %d
`

// TestSpreadQuorumGenerate: the first group holds candidates in rack 4
// only. Without spread every control plane comes from it, all in rack 4;
// with spread: quorum a group that would put a second control plane in
// rack 4 is passed for the next one, and the reason says which machine
// was passed over and why.
func TestSpreadQuorumGenerate(t *testing.T) {
	ms := tieredRack4()
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 1}
	plain, err := Generate(policyInput(t, c, ms, nil, fmt.Sprintf(tieredPolicy, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	if got := cpRacks(ms, plain.Cluster); countOf(got, 4) != 3 {
		t.Fatalf("without spread: control planes in racks %v, want all three in rack 4 (the setup)", got)
	}
	res, err := Generate(policyInput(t, c, ms, nil, fmt.Sprintf(tieredPolicy, "\n    spread: quorum", 0)))
	if err != nil {
		t.Fatal(err)
	}
	got := cpRacks(ms, res.Cluster)
	if countOf(got, 4) != 1 || len(got) != 3 {
		t.Fatalf("with spread: quorum, control planes in racks %v, want one in rack 4", got)
	}
	why := reasons(res.Changes)
	if !strings.Contains(why, "group any, highest score 1003 = rack 5 with 0 control planes (+1000) + 1461 days to retire (+3); spread quorum passes over 10.0.4.2 (serial r4m2): rack 4 holds 2 of 3 control planes with it") {
		t.Errorf("reasons do not say what spread quorum decided:\n%s", why)
	}
	if len(res.Warnings) != 0 {
		t.Errorf("warnings %q, want none: the rule is met", res.Warnings)
	}
}

// TestSpreadQuorumRepair: the bundled data center's story on a small one.
// A cluster whose control planes all sit in rack 4 is repaired one control
// plane per tick, the new one added in the step the old one leaves; the
// plan settles with one control plane in rack 4, and rule 9 (the tier 1
// group first, stickiness 5) never moves one back.
func TestSpreadQuorumRepair(t *testing.T) {
	ms := tieredRack4() // r4m4 stays unused: rule 9 would take it first
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 0}
	start, err := Generate(policyInput(t, c, ms, nil, fmt.Sprintf(tieredPolicy, "", 0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, stickiness := range []int{0, 5} {
		in := policyInput(t, c, ms, start.Cluster, fmt.Sprintf(tieredPolicy, "\n    spread: quorum", stickiness))
		p, err := Run(in, nil, false, 10, Tick)
		if err != nil {
			t.Fatal(err)
		}
		if p.Result != PlanSettled || len(p.Steps) != 2 {
			t.Fatalf("stickiness %d: plan %s in %d steps, want settled in 2", stickiness, p.Result, len(p.Steps))
		}
		for i, st := range p.Steps {
			var acts []string
			for _, ch := range st.Changes {
				acts = append(acts, ch.Action)
			}
			if st.Op != OpSpreadCP || !slices.Equal(acts, []string{ActionSpreadDemoteCP, ActionSpreadAddCP}) {
				t.Errorf("step %d: %s %v, want %s: demote then add", i+1, st.Op, acts, OpSpreadCP)
			}
		}
		first := p.Steps[0].Changes
		want := "spread quorum: rack 4 holds 3 of 3 control planes, more than etcd's quorum survives losing: lowest removal score 1973 = HEALTHY (+1000) + rack 4 with 3 control planes incl. itself (+970) + 1461 days to retire (+3)"
		if first[0].Reason != want || !strings.HasPrefix(first[1].Reason, "spread quorum: replaces "+first[0].Address+": group any, highest score 1003 = rack 5") {
			t.Errorf("stickiness %d: reasons:\n%s", stickiness, reasons(first))
		}
		if got := cpRacks(ms, p.Cluster); countOf(got, 4) != 1 {
			t.Errorf("stickiness %d: settled with control planes in racks %v", stickiness, got)
		}
		if len(p.Warnings) != 0 {
			t.Errorf("stickiness %d: settled with warnings %q", stickiness, p.Warnings)
		}
	}

	// Over max-unhealthy the daemon runs Taints alone: no spread move.
	in := policyInput(t, c, ms, start.Cluster, fmt.Sprintf(tieredPolicy, "\n    spread: quorum", 0))
	if _, err := Taints(in); !errors.Is(err, ErrNothingToDo) {
		t.Errorf("Taints: %v, want nothing to do", err)
	}
}

// TestSpreadQuorumNoCandidate: the placement admits racks 4 and 11 only,
// and rack 11 has a single machine. The third control plane can only go
// to rack 4: it is picked as without the rule, the reason says so, and a
// warning says which rack holds too many and why nothing better exists;
// later ticks change nothing and keep saying it.
func TestSpreadQuorumNoCandidate(t *testing.T) {
	var ms []*machine.Machine
	for i := 1; i <= 3; i++ {
		ms = append(ms, mkMachine(fmt.Sprintf("r4m%d", i), 4, i).obj())
	}
	ms = append(ms, mkMachine("r11m1", 11, 1).obj(), mkMachine("r12m1", 12, 1).obj())
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 1}
	doc := `
placements:
  control-plane:
    constraints: ["cke.cybozu.com/rack in (4, 11)"]
    spread: quorum
`
	res, err := Generate(policyInput(t, c, ms, nil, doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := cpRacks(ms, res.Cluster); countOf(got, 4) != 2 || countOf(got, 11) != 1 {
		t.Fatalf("control planes in racks %v, want 4, 4, 11", got)
	}
	if why := reasons(res.Changes); !strings.Contains(why, "; spread quorum: no candidate keeps every rack within 1 of 3 control planes, so the pick is made as without it") {
		t.Errorf("reasons do not say the pick is made without the rule:\n%s", why)
	}
	want := `rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum; no control-plane candidate outside racks 4, 11, nor a worker to promote there, so spread quorum cannot move one (candidates: HEALTHY machines without intolerable taints that the placement admits)`
	if !slices.Contains(res.Warnings, want) {
		t.Errorf("warnings:\n%q\nwant\n%q", res.Warnings, want)
	}
	p, err := Run(policyInput(t, c, ms, res.Cluster, doc), nil, false, 5, Tick)
	if err != nil {
		t.Fatal(err)
	}
	if p.Result != PlanSettled || len(p.Steps) != 0 || !slices.Contains(p.Warnings, want) {
		t.Errorf("plan %s, %d steps, warnings %q: want settled at once with the warning", p.Result, len(p.Steps), p.Warnings)
	}
}

// TestSpreadQuorumReplace: rule 5 replaces a bad control plane with a
// machine outside the racks at the limit, although a cool machine of rack
// 1 (which holds a control plane) scores highest.
func TestSpreadQuorumReplace(t *testing.T) {
	var ms []*machine.Machine
	for r := 1; r <= 4; r++ {
		for i := 1; i <= 2; i++ {
			ms = append(ms, mkMachine(fmt.Sprintf("r%dm%d", r, i), r, i).obj())
		}
	}
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 0}
	doc := `
placements:
  control-plane:%s
    metrics: [{name: temp, weight: -30}]
metrics:
  temp: {provider: lab, min: 0, max: 60}
providers:
  lab: {type: static, values: {r2m2: {temp: 60}, r3m2: {temp: 60}, r4m1: {temp: 60}, r4m2: {temp: 60}}}
`
	hot := map[string]float64{"r2m2": 60, "r3m2": 60, "r4m1": 60, "r4m2": 60}
	gin := policyInput(t, c, ms, nil, fmt.Sprintf(doc, ""))
	gin.Metrics = valuesOf(t, gin, hot)
	start, err := Generate(gin)
	if err != nil {
		t.Fatal(err)
	}
	if got := cpRacks(ms, start.Cluster); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("setup: control planes in racks %v, want 1, 2, 3", got)
	}
	broken := withState(ms, "r2m1", machine.StateUnreachable)
	for _, tc := range []struct {
		spread  string
		inRack1 int
	}{{"", 2}, {"\n    spread: quorum", 1}} {
		in := policyInput(t, c, broken, start.Cluster, fmt.Sprintf(doc, tc.spread))
		in.Metrics = valuesOf(t, in, hot)
		res, err := Update(in)
		if err != nil {
			t.Fatal(err)
		}
		if res.Op != OpReplaceCP {
			t.Fatalf("op %s", res.Op)
		}
		if got := cpRacks(broken, res.Cluster); countOf(got, 1) != tc.inRack1 || len(got) != 3 {
			t.Errorf("spread %q: control planes in racks %v, want %d in rack 1", tc.spread, got, tc.inRack1)
		}
		if tc.spread != "" && !strings.Contains(reasons(res.Changes), "spread quorum passes over 10.0.1.2 (serial r1m2): rack 1 holds 2 of 3 control planes with it") {
			t.Errorf("reasons:\n%s", reasons(res.Changes))
		}
	}
}

// TestSpreadQuorumByLabel: with the power feed as the failure domain, the
// rack score alone would put the three control planes on feed a (its
// machines retire later); spread: quorum takes one of each feed.
func TestSpreadQuorumByLabel(t *testing.T) {
	var ms []*machine.Machine
	for r := 1; r <= 5; r++ {
		ms = append(ms, mkMachine(fmt.Sprintf("r%dm1", r), r, 1).label("power-feed", "a").retireIn(1500).obj())
		feed := "b"
		if r == 5 {
			feed = "c"
		}
		ms = append(ms, mkMachine(fmt.Sprintf("r%dm2", r), r, 2).label("power-feed", feed).retireIn(400).obj())
	}
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 1}
	for _, tc := range []struct {
		doc  string
		want []string
	}{
		{"failureDomain: {label: power-feed}\n", []string{"a", "a", "a"}},
		{"failureDomain: {label: power-feed}\nplacements: {control-plane: {spread: quorum}}\n", []string{"a", "b", "c"}},
	} {
		res, err := Generate(policyInput(t, c, ms, nil, tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		var feeds []string
		key := failuredomain.ByLabel("power-feed")
		for _, n := range res.Cluster.Nodes {
			for _, m := range ms {
				if n.ControlPlane && m.Address() == n.Address {
					feeds = append(feeds, key.Of(m))
				}
			}
		}
		slices.Sort(feeds)
		if !slices.Equal(feeds, tc.want) {
			t.Errorf("%s: control planes on feeds %v, want %v", tc.doc, feeds, tc.want)
		}
	}
}

// TestFailureDomainWithoutSpread: a policy that names a failure domain
// but spreads nothing decides as no policy does.
func TestFailureDomainWithoutSpread(t *testing.T) {
	ms := tieredRack4()
	c := constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 3}
	a, err := Generate(input(mustTemplate(simpleTemplate), c, ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(policyInput(t, c, ms, nil, "failureDomain: {label: tier}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if reasons(a.Changes) != reasons(b.Changes) {
		t.Errorf("a failure domain without spread changed the decision:\n%s\nvs\n%s", reasons(a.Changes), reasons(b.Changes))
	}
}

// feedWorkers is four racks of three machines: two on power feed a that
// retire late, one on feed b that retires early.
func feedWorkers() []*machine.Machine {
	var ms []*machine.Machine
	for r := 1; r <= 4; r++ {
		ms = append(ms,
			mkMachine(fmt.Sprintf("r%dm1", r), r, 1).label("power-feed", "a").retireIn(1500).obj(),
			mkMachine(fmt.Sprintf("r%dm2", r), r, 2).label("power-feed", "a").retireIn(1400).obj(),
			mkMachine(fmt.Sprintf("r%dm3", r), r, 3).label("power-feed", "b").retireIn(300).obj())
	}
	return ms
}

func workerFeeds(ms []*machine.Machine, c *cluster.Cluster) map[string]int {
	key := failuredomain.ByLabel("power-feed")
	out := map[string]int{}
	for _, n := range c.Nodes {
		for _, m := range ms {
			if !n.ControlPlane && m.Address() == n.Address {
				out[key.Of(m)]++
			}
		}
	}
	return out
}

// TestMaxSkew: Kubernetes' maxSkew over power feeds, per role. Without it
// the workers follow the rack score and the retire dates, all on feed a;
// with maxSkew 1 every other one comes from feed b, and the reason names
// the machine passed over. It never removes a worker: a skewed cluster
// has nothing to do.
func TestMaxSkew(t *testing.T) {
	ms := feedWorkers()
	c := constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: 4}
	plain, err := Generate(policyInput(t, c, ms, nil, "failureDomain: {label: power-feed}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := workerFeeds(ms, plain.Cluster); got["a"] != 4 {
		t.Fatalf("without maxSkew: workers by feed %v, want 4 on a (the setup)", got)
	}
	doc := "failureDomain: {label: power-feed}\nplacements: {\"\": {spread: {maxSkew: 1}}}\n"
	res, err := Generate(policyInput(t, c, ms, nil, doc))
	if err != nil {
		t.Fatal(err)
	}
	if got := workerFeeds(ms, res.Cluster); got["a"] != 2 || got["b"] != 2 {
		t.Errorf("with maxSkew 1: workers by feed %v, want 2 and 2\n%s", got, reasons(res.Changes))
	}
	if why := reasons(res.Changes); !strings.Contains(why, "spread maxSkew 1 passes over") || !strings.Contains(why, "power-feed a would then hold 2 workers, the fewest 0") {
		t.Errorf("reasons do not say what maxSkew decided:\n%s", why)
	}
	if _, err := Update(policyInput(t, c, ms, plain.Cluster, doc)); !errors.Is(err, ErrNothingToDo) {
		t.Errorf("Update of a skewed cluster: %v, want nothing to do", err)
	}

	// The rate model takes every machine; maxSkew orders them, and the
	// order of a cluster's new nodes is the order of the picks.
	rate := 80
	rc := constraints.Constraints{ControlPlaneCount: 1, MinimumWorkersRate: &rate}
	all, err := Generate(policyInput(t, rc, ms, nil, doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Cluster.Nodes) != len(ms) {
		t.Fatalf("rate model: %d nodes of %d machines", len(all.Cluster.Nodes), len(ms))
	}
	var order []string
	key := failuredomain.ByLabel("power-feed")
	for _, n := range all.Cluster.Nodes[1:6] {
		for _, m := range ms {
			if m.Address() == n.Address {
				order = append(order, key.Of(m))
			}
		}
	}
	if strings.Join(order, "") != "ababa" {
		t.Errorf("rate model: the first workers' feeds %v, want a, b, a, b, a", order)
	}
}

// valuesOf gives the input's machines the values of its policy's first
// metric, by serial.
func valuesOf(t *testing.T, in Input, bySerial map[string]float64) *policy.Values {
	t.Helper()
	serials := make([]string, len(in.Machines))
	for i, m := range in.Machines {
		serials[i] = m.Spec.Serial
	}
	vals := in.Policy.NewValues(serials)
	for i, sn := range serials {
		if v, ok := bySerial[sn]; ok {
			vals.Set(i, 0, v)
		}
	}
	return vals
}

// TestSpreadQuorumTooFew: with one control plane no domain can hold it
// without breaking the quorum: nothing moves, and the warning says why.
func TestSpreadQuorumTooFew(t *testing.T) {
	ms := tieredRack4()
	c := constraints.Constraints{ControlPlaneCount: 1, MinimumWorkers: 1}
	doc := "placements: {control-plane: {spread: quorum}}\n"
	res, err := Generate(policyInput(t, c, ms, nil, doc))
	if err != nil {
		t.Fatal(err)
	}
	want := "rack 4 holds 1 of 1 control plane: losing it breaks etcd's quorum; with fewer than 3 control planes, losing the rack of any of them does: spread quorum needs control-plane-count 3 or more"
	if !slices.Equal(res.Warnings, []string{want}) {
		t.Errorf("warnings %q, want %q", res.Warnings, want)
	}
	p, err := Run(policyInput(t, c, ms, res.Cluster, doc), nil, false, 5, Tick)
	if err != nil || p.Result != PlanSettled || len(p.Steps) != 0 || !slices.Equal(p.Warnings, []string{want}) {
		t.Errorf("plan %+v %v: want settled at once, with the warning", p, err)
	}
}
