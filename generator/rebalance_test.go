package generator

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

// rebalanceWorld is four racks of three machines (serials r<rack>m<i>),
// with a cluster of three control planes and three workers generated
// without a policy: control planes r1m1, r2m1, r3m1; rack 4 holds only
// workers and unused machines.
func rebalanceWorld(t *testing.T, c constraints.Constraints) ([]*machine.Machine, *cluster.Cluster) {
	t.Helper()
	var ms []*machine.Machine
	for r := 1; r <= 4; r++ {
		for i := 1; i <= 3; i++ {
			b := mkMachine(fmt.Sprintf("r%dm%d", r, i), r, i)
			if r == 4 {
				b.retireIn(400) // fewer lifetime points: no control plane at first
			}
			ms = append(ms, b.obj())
		}
	}
	res, err := Generate(input(mustTemplate(simpleTemplate), c, ms, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range res.Cluster.Nodes {
		if n.ControlPlane && n.Labels["cke.cybozu.com/rack"] == "4" {
			t.Fatalf("setup: control plane %s in rack 4", n.Address)
		}
	}
	return ms, res.Cluster
}

func withLabel(ms []*machine.Machine, serial, name, value string) []*machine.Machine {
	out := make([]*machine.Machine, len(ms))
	for i, m := range ms {
		out[i] = m
		if m.Spec.Serial == serial {
			c := *m
			c.Spec.Labels = append(append([]machine.Label(nil), m.Spec.Labels...), machine.Label{Name: name, Value: value})
			out[i] = &c
		}
	}
	return out
}

func withState(ms []*machine.Machine, serial string, s machine.State) []*machine.Machine {
	out := make([]*machine.Machine, len(ms))
	for i, m := range ms {
		out[i] = m
		if m.Spec.Serial == serial {
			c := *m
			c.Status.State = s
			out[i] = &c
		}
	}
	return out
}

func policyInput(t *testing.T, c constraints.Constraints, ms []*machine.Machine, cur *cluster.Cluster, doc string) Input {
	t.Helper()
	in := input(mustTemplate(simpleTemplate), c, ms, cur)
	pol, err := policy.Load([]byte(doc), in.Template)
	if err != nil {
		t.Fatal(err)
	}
	in.Policy = pol
	return in
}

const tierGroups = `
placements:
  control-plane:
    groups:
    - {name: tier1, constraints: [sabakan.cke.cybozu.com/tier is 1]}
    - {name: rest}
stickiness: %v
`

func cps(c *cluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.ControlPlane {
			out = append(out, n.Annotations["cke.cybozu.com/serial"])
		}
	}
	return out
}

// TestRebalance: what rule 9 moves, and what it leaves alone.
func TestRebalance(t *testing.T) {
	c := constraints.CountDefaults()
	c.ControlPlaneCount, c.MinimumWorkers = 3, 3

	t.Run("an earlier group wins whatever the stickiness", func(t *testing.T) {
		ms, cur := rebalanceWorld(t, c)
		// r4m2 joins the first group; it scores less than any control
		// plane (fewer lifetime points) and the stickiness is huge.
		ms = withLabel(ms, "r4m2", "tier", "1")
		res, err := Update(policyInput(t, c, ms, cur, fmt.Sprintf(tierGroups, 1000)))
		if err != nil {
			t.Fatal(err)
		}
		if res.Op != OpRebalanceCP || len(res.Changes) != 2 {
			t.Fatalf("op %q, changes %+v", res.Op, res.Changes)
		}
		add := res.Changes[1]
		if add.Action != ActionRebalanceAddCP || add.Serial != "r4m2" || add.Group != "tier1" || add.Placement != "control-plane" {
			t.Errorf("add = %+v", add)
		}
		if d := res.Changes[0]; d.Action != ActionRebalanceDemoteCP {
			t.Errorf("first change = %+v, want a demotion", d)
		}
		// The move settles: the next tick has nothing to do.
		if _, err := Update(policyInput(t, c, ms, res.Cluster, fmt.Sprintf(tierGroups, 1000))); !errors.Is(err, ErrNothingToDo) {
			t.Errorf("after the move: %v, want nothing to do", err)
		}
	})

	t.Run("a control plane the placement no longer admits moves", func(t *testing.T) {
		ms, cur := rebalanceWorld(t, c)
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 2]}}\nstickiness: 1000\n"
		res, err := Update(policyInput(t, c, ms, cur, doc))
		if err != nil {
			t.Fatal(err)
		}
		if res.Op != OpRebalanceCP || res.Changes[0].Serial != "r2m1" || res.Changes[1].Serial[:2] != "r4" {
			t.Fatalf("op %q, changes %+v", res.Op, res.Changes)
		}
	})

	t.Run("stickiness 0 never moves", func(t *testing.T) {
		ms, cur := rebalanceWorld(t, c)
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 2]}}\n"
		if res, err := Update(policyInput(t, c, ms, cur, doc)); !errors.Is(err, ErrNothingToDo) {
			t.Fatalf("Update = %+v, %v; want nothing to do", res, err)
		}
	})

	t.Run("only HEALTHY control planes move", func(t *testing.T) {
		ms, cur := rebalanceWorld(t, c)
		ms = withState(ms, "r2m1", machine.StateUpdating)
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 2]}}\nstickiness: 1\n"
		if res, err := Update(policyInput(t, c, ms, cur, doc)); !errors.Is(err, ErrNothingToDo) {
			t.Fatalf("Update = %+v, %v; want nothing to do", res, err)
		}
	})

	t.Run("a single control plane never moves", func(t *testing.T) {
		one := c
		one.ControlPlaneCount = 1
		ms, cur := rebalanceWorld(t, one)
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 1]}}\nstickiness: 1\n"
		if got := cps(cur); len(got) != 1 || got[0] != "r1m1" {
			t.Fatalf("setup: control planes %v", got)
		}
		if res, err := Update(policyInput(t, one, ms, cur, doc)); !errors.Is(err, ErrNothingToDo) {
			t.Fatalf("Update = %+v, %v; want nothing to do", res, err)
		}
	})

	t.Run("removed, not demoted, at maximum-workers", func(t *testing.T) {
		atMax := c
		atMax.MaximumWorkers = 3
		ms, cur := rebalanceWorld(t, atMax)
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 2]}}\nstickiness: 1\n"
		res, err := Update(policyInput(t, atMax, ms, cur, doc))
		if err != nil {
			t.Fatal(err)
		}
		if res.Changes[0].Action != ActionRebalanceRemoveCP || res.Changes[0].Serial != "r2m1" {
			t.Fatalf("changes %+v", res.Changes)
		}
	})

	t.Run("one move per tick, after every other rule", func(t *testing.T) {
		ms, cur := rebalanceWorld(t, c)
		// A worker retired long ago (rules 6 and 7 apply) and a control
		// plane the placement refuses: the worker rule first, alone.
		var worker string
		for _, n := range cur.Nodes {
			if !n.ControlPlane {
				worker = n.Annotations["cke.cybozu.com/serial"]
				break
			}
		}
		ms = withState(ms, worker, machine.StateRetired)
		for i, m := range ms {
			if m.Spec.Serial == worker {
				cp := *m
				cp.Status.Duration = 1e6
				ms[i] = &cp
			}
		}
		doc := "placements: {control-plane: {constraints: [cke.cybozu.com/rack != 2]}}\nstickiness: 1\n"
		res, err := Update(policyInput(t, c, ms, cur, doc))
		if err != nil {
			t.Fatal(err)
		}
		if res.Op != OpIncreaseWorker {
			t.Fatalf("op %q, want %q first", res.Op, OpIncreaseWorker)
		}
		for _, ch := range res.Changes {
			if ch.Action == ActionRebalanceDemoteCP || ch.Action == ActionRebalanceAddCP {
				t.Fatalf("a rebalance in the same tick: %+v", res.Changes)
			}
		}
	})
}

// TestPromotionFollowsGroups: with no unused candidate, fill promotes the
// best worker of the first group that has one, even when a worker of a
// later group scores higher, and records the group.
func TestPromotionFollowsGroups(t *testing.T) {
	c := constraints.CountDefaults()
	c.ControlPlaneCount, c.MinimumWorkers = 3, 9 // every machine is used
	ms, cur := rebalanceWorld(t, c)
	// The first worker of racks 1-3 joins the first group. Rack 4's
	// workers, listed after it, score higher as control planes (rack 4
	// has none), so neither the scores nor the order of the nodes can
	// choose it: only its group.
	tier1, later := "", false
	for _, n := range cur.Nodes {
		switch rack := n.Labels["cke.cybozu.com/rack"]; {
		case n.ControlPlane:
		case tier1 == "" && rack != "4":
			tier1 = n.Annotations["cke.cybozu.com/serial"]
		case tier1 != "" && rack == "4":
			later = true
		}
	}
	if !later {
		t.Fatalf("setup: no rack 4 worker after %s in %v", tier1, cur.Nodes)
	}
	ms = withLabel(ms, tier1, "tier", "1")
	c.ControlPlaneCount, c.MinimumWorkers = 4, 8
	res, err := Update(policyInput(t, c, ms, cur, fmt.Sprintf(tierGroups, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 1 {
		t.Fatalf("changes %+v", res.Changes)
	}
	if p := res.Changes[0]; p.Action != ActionPromoteWorker || p.Serial != tier1 || p.Group != "tier1" {
		t.Errorf("promotion = %+v, want %s from group tier1", p, tier1)
	}
}

// TestRebalanceMovesTheLatestGroupFirst: W is the control plane in the
// latest group, even when one of an earlier group has a lower stay score.
// r1m1 (group tier1) runs hot and has the lowest stay score; r2m1 and
// r3m1 are in group rest. When r4m2 joins tier1, r2m1 gives it its place
// (the first of rest by the removal order), whatever the stickiness.
func TestRebalanceMovesTheLatestGroupFirst(t *testing.T) {
	c := constraints.CountDefaults()
	c.ControlPlaneCount, c.MinimumWorkers = 3, 3
	ms, cur := rebalanceWorld(t, c)
	ms = withLabel(withLabel(ms, "r1m1", "tier", "1"), "r4m2", "tier", "1")
	// The nodes in reverse order: r1m1 comes after r2m1 and r3m1, so
	// that the order of the nodes cannot hide how W is chosen.
	rev := *cur
	rev.Nodes = slices.Clone(cur.Nodes)
	slices.Reverse(rev.Nodes)
	cur = &rev
	doc := `
placements:
  control-plane:
    groups:
    - {name: tier1, constraints: [sabakan.cke.cybozu.com/tier is 1]}
    - {name: rest}
    metrics: [{name: temp, weight: -10}]
metrics:
  temp: {provider: lab, min: 0, max: 60}
providers:
  lab: {type: static, values: {}}
stickiness: 1000
`
	in := policyInput(t, c, ms, cur, doc)
	serials := make([]string, len(ms))
	for i, m := range ms {
		serials[i] = m.Spec.Serial
	}
	in.Metrics = in.Policy.NewValues(serials)
	in.Metrics.Set(slices.Index(serials, "r1m1"), 0, 60)
	res, err := Update(in)
	if err != nil {
		t.Fatal(err)
	}
	if res.Op != OpRebalanceCP || res.Changes[0].Serial != "r2m1" || res.Changes[1].Serial != "r4m2" {
		t.Fatalf("op %q, changes %+v; want r2m1 demoted for r4m2", res.Op, res.Changes)
	}
}
