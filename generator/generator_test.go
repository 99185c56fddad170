package generator

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

func threeRacks() []*machine.Machine {
	var ms []*machine.Machine
	for r := 1; r <= 3; r++ {
		for i := 1; i <= 2; i++ {
			ms = append(ms, mkMachine("s"+string(rune('0'+r))+string(rune('0'+i)), r, i).obj())
		}
	}
	return ms
}

func TestRegenerateNothingToDoWhenMemberGone(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	ms := threeRacks()
	res, err := Generate(input(tmpl, constraints.CountDefaults(), ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	// The worker's machine leaves sabakan: Regenerate leaves it to rule 1.
	var rest []*machine.Machine
	for _, m := range ms {
		if m.Address() != res.Cluster.Nodes[1].Address {
			rest = append(rest, m)
		}
	}
	if _, err := Regenerate(input(tmpl, constraints.CountDefaults(), rest, res.Cluster)); !errors.Is(err, ErrNothingToDo) {
		t.Errorf("Regenerate with a gone member: %v, want ErrNothingToDo", err)
	}
	// With every machine present, Regenerate succeeds and re-renders
	// nothing (same template).
	r2, err := Regenerate(input(tmpl, constraints.CountDefaults(), ms, res.Cluster))
	if err != nil || r2.Op != OpRegenerate || len(r2.Changes) != 0 {
		t.Errorf("Regenerate = %+v, %v", r2, err)
	}
}

// TestRegenerateKeepsRebootingGoneMember: docs/design.md 6.3, a member whose machine
// is gone does not block Regenerate when it is rebooting; it is written back
// exactly as it was.
func TestRegenerateKeepsRebootingGoneMember(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	ms := threeRacks()
	res, err := Generate(input(tmpl, constraints.CountDefaults(), ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	gone := res.Cluster.Nodes[1]
	var rest []*machine.Machine
	for _, m := range ms {
		if m.Address() != gone.Address {
			rest = append(rest, m)
		}
	}
	in := input(tmpl, constraints.CountDefaults(), rest, res.Cluster)
	in.Rebooting = map[string]bool{gone.Address: true}
	r, err := Regenerate(in)
	if err != nil {
		t.Fatalf("Regenerate with a rebooting member whose machine is gone: %v, want a result", err)
	}
	var kept *cluster.Node
	for _, n := range r.Cluster.Nodes {
		if n.Address == gone.Address {
			kept = n
		}
	}
	if kept == nil || !reflect.DeepEqual(kept, gone) {
		t.Errorf("the rebooting member is %+v, want it written back as it was: %+v", kept, gone)
	}
}

// TestNodeWithoutIPv4IsGone: a current node whose address is not IPv4 (a
// hostname written by hand) matches no machine, so rule 1 removes it.
func TestNodeWithoutIPv4IsGone(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	ms := threeRacks()
	res, err := Generate(input(tmpl, constraints.CountDefaults(), ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	cur := *res.Cluster
	cur.Nodes = append(append([]*cluster.Node{}, res.Cluster.Nodes...), &cluster.Node{Address: "node-a", User: "u"})
	r, err := Update(input(tmpl, constraints.CountDefaults(), ms, &cur))
	if err != nil || r.Op != OpRemoveNonExistent || len(r.Changes) != 1 || r.Changes[0].Address != "node-a" ||
		r.Changes[0].Action != ActionRemoveNonExistentWorker || len(r.Cluster.Nodes) != len(res.Cluster.Nodes) {
		t.Errorf("Update = %+v, %v; want node-a removed as non-existent", r, err)
	}
}

func TestInputErrors(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	ms := threeRacks()
	dup := &cluster.Cluster{Nodes: []*cluster.Node{{Address: "10.0.1.1", User: "u"}, {Address: "10.0.1.1", User: "u"}}}
	dupName := &cluster.Cluster{Nodes: []*cluster.Node{{Address: "node-a", User: "u"}, {Address: "10.0.1.1", User: "u"}, {Address: "node-a", User: "u"}}}
	noAddr := &cluster.Cluster{Nodes: []*cluster.Node{{User: "u"}}}
	cases := []struct {
		name string
		run  func() error
		want string
	}{
		{"update without a cluster", func() error { _, err := Update(input(tmpl, constraints.CountDefaults(), ms, nil)); return err }, "no current cluster"},
		{"regenerate without a cluster", func() error { _, err := Regenerate(input(tmpl, constraints.CountDefaults(), ms, nil)); return err }, "no current cluster"},
		{"no template", func() error { _, err := Generate(input(nil, constraints.CountDefaults(), ms, nil)); return err }, "no template"},
		{"invalid constraints", func() error {
			_, err := Generate(input(tmpl, constraints.Constraints{ControlPlaneCount: 0}, ms, nil))
			return err
		}, "control-plane-count: must be >= 1"},
		{"negative retire wait", func() error {
			in := input(tmpl, constraints.CountDefaults(), ms, nil)
			in.RetireWait = -1
			_, err := Generate(in)
			return err
		}, "retire wait: must not be negative"},
		{"a node listed twice", func() error { _, err := Update(input(tmpl, constraints.CountDefaults(), ms, dup)); return err }, "is listed twice"},
		{"a non-IPv4 node address listed twice", func() error { _, err := Update(input(tmpl, constraints.CountDefaults(), ms, dupName)); return err }, "nodes[2]: address node-a is listed twice"},
		{"a node without address", func() error { _, err := Update(input(tmpl, constraints.CountDefaults(), ms, noAddr)); return err }, "nodes[0]: address: must not be empty"},
		{"unsanitized machines", func() error {
			bad := append([]*machine.Machine{}, ms...)
			c := *ms[0]
			c.Spec.IPv4 = nil
			bad[0] = &c
			_, err := Generate(input(tmpl, constraints.CountDefaults(), bad, nil))
			return err
		}, "no IPv4 address"},
		{"a machine address that is not IPv4", func() error {
			bad := append([]*machine.Machine{}, ms...)
			c := *ms[0]
			c.Spec.IPv4 = []string{"fd00::1"}
			bad[0] = &c
			_, err := Generate(input(tmpl, constraints.CountDefaults(), bad, nil))
			return err
		}, `ipv4[0]: "fd00::1" is not an IPv4 address`},
	}
	for _, c := range cases {
		if err := c.run(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestResultDoesNotModifyInput: the input cluster is never changed, and
// unchanged nodes may be shared with the result (both read-only).
func TestResultDoesNotModifyInput(t *testing.T) {
	tmpl := mustTemplate(simpleTemplate)
	ms := threeRacks()
	c := constraints.CountDefaults()
	c.MinimumWorkers = 2
	res, err := Generate(input(tmpl, c, ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	before := marshalCluster(t, res.Cluster)
	sick := *ms[0]
	sick.Status.State = machine.StateUnreachable
	ms2 := append([]*machine.Machine{&sick}, ms[1:]...)
	if _, err := Update(input(tmpl, c, ms2, res.Cluster)); err != nil {
		t.Fatal(err)
	}
	if after := marshalCluster(t, res.Cluster); after != before {
		t.Error("Update modified its input cluster")
	}
}

func marshalCluster(t *testing.T, c *cluster.Cluster) string {
	t.Helper()
	data, err := c.MarshalIndentJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestLadderOrder: Update tries docs/design.md 6.2's rules in docs/design.md's order. The
// golden cases ladder-N-before-M show each order that a decision can
// reveal; rules 3 and 4 never apply together (fewer, and more, control
// planes than wanted), so only this test sees theirs.
func TestLadderOrder(t *testing.T) {
	spec := []string{
		OpRemoveNonExistent, OpRemoveUnmatchedRole, OpIncreaseCP, OpDecreaseCP,
		OpReplaceCP, OpIncreaseWorker, OpDecreaseWorker, OpTaintNodes,
		OpRebalanceCP, // docs/design.md 12.5: after every rule of 6.2
		OpSpreadCP,    // docs/design.md 20: only when no other rule applies
	}
	var got []string
	for _, r := range ladder {
		got = append(got, r.op)
	}
	if !slices.Equal(got, spec) {
		t.Errorf("ladder = %q, want docs/design.md 6.2's order %q", got, spec)
	}
}

// TestChangeJSON: a change is {"action", "address", "serial", "score",
// "reason"} in JSON, the score as its total or null, and reads back.
func TestChangeJSON(t *testing.T) {
	sc := Score{Total: 993, Removal: true, Rack: 3, RackCount: 1, RackPoints: 990, LifetimeDays: 1826, LifetimePoints: 3}
	cs := []Change{
		{Action: ActionDemoteControlPlane, Address: "10.0.3.1", Serial: "c1", Score: &sc, Reason: "r"},
		{Action: ActionRemoveNonExistentWorker, Address: "10.0.9.9", Reason: "gone"},
	}
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"action":"demote-control-plane","address":"10.0.3.1","serial":"c1","score":993,"reason":"r"},` +
		`{"action":"remove-non-existent-worker","address":"10.0.9.9","serial":"","score":null,"reason":"gone"}]`
	if string(data) != want {
		t.Errorf("JSON = %s\nwant %s", data, want)
	}
	var back []Change
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != 2 || back[0].Score == nil || back[0].Score.Total != 993 || back[1].Score != nil || back[1].Reason != "gone" {
		t.Errorf("read back %+v", back)
	}
}

// TestPlanStepCarriesWarnings: a step's warnings are its decision's (here
// the typo guard's, given on Generate too), so a plan shows them where they
// arose.
func TestPlanStepCarriesWarnings(t *testing.T) {
	tmpl := mustTemplate(`name: t
nodes:
- {user: u, control_plane: true, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: compute}}
- {user: u, labels: {cke.cybozu.com/role: gpuu}}
service_subnet: 10.68.0.0/16
`)
	var ms []*machine.Machine
	for _, m := range threeRacks() {
		m.Spec.Role = "compute"
		ms = append(ms, m)
	}
	p, err := Run(input(tmpl, constraints.CountDefaults(), ms, nil), nil, false, 10, Tick)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) == 0 || p.Steps[0].Op != OpNew {
		t.Fatalf("plan steps %+v, want a first step %q", p.Steps, OpNew)
	}
	if w := strings.Join(p.Steps[0].Warnings, "\n"); !strings.Contains(w, `template role "gpuu" matches no machine`) {
		t.Errorf("first step's warnings %q, want the misspelt role", p.Steps[0].Warnings)
	}
}

// TestActionsListed: Actions lists every action a rule can make (the
// property test's allowed table), and nothing else.
func TestActionsListed(t *testing.T) {
	made := map[string]bool{ActionGenerate: true}
	for _, acts := range allowed {
		for _, a := range acts {
			made[a] = true
		}
	}
	for _, a := range fillActions {
		made[a] = true
	}
	listed := map[string]bool{}
	for _, a := range Actions() {
		listed[a] = true
	}
	if !maps.Equal(made, listed) {
		t.Errorf("Actions() = %v, rules make %v", slices.Sorted(maps.Keys(listed)), slices.Sorted(maps.Keys(made)))
	}
}

func TestRateOf(t *testing.T) {
	c := &cluster.Cluster{Nodes: []*cluster.Node{{Address: "10.0.0.1", ControlPlane: true}, {Address: "10.0.0.2"}, {Address: "10.0.0.3"}}}
	rate, err := constraints.Parse([]byte(`{"control-plane-count": 1, "minimum-workers-rate": 50}`))
	if err != nil {
		t.Fatal(err)
	}
	r := RateOf(c, 2, rate)
	if r == nil || r.Workers != 2 || r.Machines != 2 || r.Percent != 50 || !r.CanRemove() {
		t.Fatalf("RateOf = %+v, want 2 workers of 2 machines, 50%%, removal allowed", r)
	}
	if got, want := r.String(), "50.0% ((2 workers - 1) / 2 machines), minimum-workers-rate 50%"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if r := RateOf(c, 3, rate); r.CanRemove() {
		t.Errorf("(2 - 1) / 3 = 33%% < 50%%, yet CanRemove: %+v", r)
	}
	if RateOf(c, 2, constraints.CountDefaults()) != nil {
		t.Error("the count model has no worker rate")
	}
}

// Actions lists every change action (TestActionsListed checks the
// rules make no other).
func Actions() []string {
	return []string{
		ActionGenerate, ActionRegenerate, ActionAddControlPlane, ActionAddWorker, ActionPromoteWorker,
		ActionDemoteControlPlane, ActionRemoveNonExistentCP, ActionRemoveNonExistentWorker,
		ActionRemoveUnmatchedWorker, ActionRemoveExcessiveCP, ActionRemoveBadCP, ActionRemoveRetiredWorker,
		ActionChangeTaint, ActionRebalanceDemoteCP, ActionRebalanceRemoveCP, ActionRebalanceAddCP,
		ActionSpreadDemoteCP, ActionSpreadRemoveCP, ActionSpreadAddCP, ActionRerender,
	}
}
