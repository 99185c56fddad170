package generator

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// world is a random data center and the state of the cluster built on it.
type world struct {
	tmpl     *template.Template
	c        constraints.Constraints
	machines []*machine.Machine
	cluster  *cluster.Cluster
	serial   int
	roles    []string
}

func drawWorld(t *rapid.T) *world {
	w := &world{}
	if rapid.Bool().Draw(t, "roles") {
		w.tmpl = mustTemplate(rolesTemplate)
		w.roles = []string{"compute", "storage", "gpu", "boot"}
	} else {
		w.tmpl = mustTemplate(simpleTemplate)
		w.roles = []string{"cs", "ss"}
	}
	w.c = constraints.Constraints{
		ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"),
		MinimumWorkers:    rapid.IntRange(0, 8).Draw(t, "min"),
	}
	if rapid.Bool().Draw(t, "hasMax") {
		w.c.MaximumWorkers = w.c.MinimumWorkers + rapid.IntRange(0, 4).Draw(t, "extra")
		if w.c.MaximumWorkers == 0 {
			w.c.MaximumWorkers = 1
		}
	}
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	n := rapid.IntRange(0, 30).Draw(t, "machines")
	for i := 0; i < n; i++ {
		w.addMachine(t, rapid.IntRange(0, racks-1).Draw(t, "rack"))
	}
	return w
}

var allStates = []machine.State{
	machine.StateUninitialized, machine.StateHealthy, machine.StateUnhealthy, machine.StateUnreachable,
	machine.StateUpdating, machine.StateRetiring, machine.StateRetired,
}

func (w *world) addMachine(t *rapid.T, rack int) {
	w.serial++
	b := mkMachine(fmt.Sprintf("s%04d", w.serial), rack, w.serial).
		role(rapid.SampledFrom(w.roles).Draw(t, "role")).
		retireIn(rapid.IntRange(-1200, 1800).Draw(t, "days"))
	if rapid.IntRange(0, 5).Draw(t, "sick") == 0 {
		b.state(rapid.SampledFrom(allStates).Draw(t, "state"))
	}
	w.machines = append(w.machines, b.obj())
}

// event changes the inventory: a state change, a retirement timer, a machine
// leaving or joining sabakan.
func (w *world) event(t *rapid.T) string {
	if len(w.machines) == 0 {
		w.addMachine(t, 0)
		return "add"
	}
	i := rapid.IntRange(0, len(w.machines)-1).Draw(t, "target")
	m := *w.machines[i]
	switch rapid.IntRange(0, 4).Draw(t, "event") {
	case 0, 1:
		m.Status.State = rapid.SampledFrom(allStates).Draw(t, "newState")
		m.Status.Duration = 0
	case 2:
		m.Status.State = machine.StateRetired
		m.Status.Duration = float64(rapid.IntRange(0, 1000).Draw(t, "duration"))
	case 3:
		w.machines = slices.Delete(slices.Clone(w.machines), i, i+1)
		return "remove " + m.Spec.Serial
	case 4:
		w.addMachine(t, rapid.IntRange(0, 5).Draw(t, "rack"))
		return "add"
	}
	w.machines = slices.Clone(w.machines)
	w.machines[i] = &m
	return fmt.Sprintf("%s -> %s", m.Spec.Serial, m.Status.State)
}

func (w *world) input() Input {
	return input(w.tmpl, w.c, w.machines, w.cluster)
}

// allowed lists, for each operation, the change actions it may make: its
// own, plus fill's.
var allowed = map[string][]string{
	OpRemoveNonExistent:   {ActionRemoveNonExistentCP, ActionRemoveNonExistentWorker},
	OpRemoveUnmatchedRole: {ActionRemoveUnmatchedWorker},
	OpIncreaseCP:          {},
	OpDecreaseCP:          {ActionDemoteControlPlane, ActionRemoveExcessiveCP},
	OpReplaceCP:           {ActionDemoteControlPlane, ActionRemoveBadCP, ActionPromoteWorker, ActionAddControlPlane},
	OpIncreaseWorker:      {ActionAddWorker},
	OpDecreaseWorker:      {ActionRemoveRetiredWorker},
	OpTaintNodes:          {ActionChangeTaint},
}

var fillActions = []string{ActionAddControlPlane, ActionPromoteWorker, ActionAddWorker}

func controlPlanes(c *cluster.Cluster) map[string]bool {
	cps := map[string]bool{}
	for _, n := range c.Nodes {
		if n.ControlPlane {
			cps[n.Address] = true
		}
	}
	return cps
}

func workers(c *cluster.Cluster) int {
	n := 0
	for _, nd := range c.Nodes {
		if !nd.ControlPlane {
			n++
		}
	}
	return n
}

// checkResult asserts the Musts of a decision made from prev.
func checkResult(t *rapid.T, w *world, prev *cluster.Cluster, res *Result) {
	next := res.Cluster
	seen := map[string]bool{}
	for _, n := range next.Nodes {
		if seen[n.Address] {
			t.Fatalf("%s: address %s listed twice", res.Op, n.Address)
		}
		seen[n.Address] = true
	}
	// Constraints met (control planes may exceed the count while rule 4
	// lowers it one per step).
	if cps := len(controlPlanes(next)); cps < w.c.ControlPlaneCount {
		t.Fatalf("%s: %d control planes, want >= %d", res.Op, cps, w.c.ControlPlaneCount)
	}
	if n := workers(next); n < w.c.MinimumWorkers {
		t.Fatalf("%s: %d workers, want >= %d", res.Op, n, w.c.MinimumWorkers)
	}
	if prev == nil {
		if res.Op != OpNew {
			t.Fatalf("first decision op = %q", res.Op)
		}
		return
	}
	// Never more workers than maximum-workers because of this step.
	if w.c.MaximumWorkers > 0 && workers(next) > max(w.c.MaximumWorkers, workers(prev)) {
		t.Fatalf("%s: %d workers, over maximum %d (was %d)", res.Op, workers(next), w.c.MaximumWorkers, workers(prev))
	}
	// etcd quorum: of the previous control planes, fewer than half leave in
	// one step, or exactly one.
	before, after := controlPlanes(prev), controlPlanes(next)
	lost := 0
	for a := range before {
		if !after[a] {
			lost++
		}
	}
	if lost > 1 && 2*lost >= len(before) {
		t.Fatalf("%s: %d of %d control planes left in one step", res.Op, lost, len(before))
	}
	// One rule per step.
	acts, ok := allowed[res.Op]
	if !ok {
		t.Fatalf("unknown op %q", res.Op)
	}
	if len(res.Changes) == 0 {
		t.Fatalf("%s: no changes", res.Op)
	}
	for _, c := range res.Changes {
		if !slices.Contains(acts, c.Action) && !slices.Contains(fillActions, c.Action) {
			t.Fatalf("%s: action %s belongs to another rule", res.Op, c.Action)
		}
	}
}

func marshal(t *rapid.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestUpdateInvariants drives random data centers through random machine
// events, one Update per event, and checks after every step that quorum is
// kept, the constraints hold or the step was refused, one rule applied, the
// decision is deterministic, and that with no more events the cluster
// settles ("nothing to do") without flapping.
func TestUpdateInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		sanitized := w.machines
		res, err := Generate(w.input())
		if err != nil {
			if !errors.Is(err, ErrNotEnoughMachines) {
				t.Fatalf("Generate: %v", err)
			}
			return
		}
		checkResult(t, w, nil, res)
		w.cluster = res.Cluster
		_ = sanitized

		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			w.event(t)
			w.tick(t)
		}
		// No more events: the cluster must settle.
		limit := 2*len(w.machines) + 10
		for i := 0; ; i++ {
			if i == limit {
				t.Fatalf("no settling after %d steps on an unchanged inventory", limit)
			}
			if !w.tick(t) {
				break
			}
		}
	})
}

// tick runs one Update; it reports whether the cluster changed.
func (w *world) tick(t *rapid.T) bool {
	prev := w.cluster
	res, err := Update(w.input())
	again, err2 := Update(w.input())
	if (err == nil) != (err2 == nil) || (err == nil && marshal(t, res) != marshal(t, again)) {
		t.Fatal("Update is not deterministic")
	}
	switch {
	case errors.Is(err, ErrNothingToDo), errors.Is(err, ErrNotEnoughMachines), errors.Is(err, ErrTooManyNonExistent):
		return false
	case err != nil:
		t.Fatalf("Update: %v", err)
	}
	checkResult(t, w, prev, res)
	w.cluster = res.Cluster
	return true
}

// TestGenerateDeterministic: the same input gives byte-identical output,
// whatever the order of the machines.
func TestGenerateDeterministic(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		a, errA := Generate(w.input())
		shuffled := rapid.Permutation(w.machines).Draw(t, "order")
		in := w.input()
		in.Machines, _ = machine.Sanitize(deref(shuffled), nil)
		in2 := w.input()
		in2.Machines, _ = machine.Sanitize(deref(w.machines), nil)
		b, errB := Generate(in)
		c, errC := Generate(in2)
		if (errA == nil) != (errB == nil) || (errB == nil) != (errC == nil) {
			t.Fatalf("errors differ: %v / %v / %v", errA, errB, errC)
		}
		if errA == nil && (marshal(t, a) != marshal(t, b) || marshal(t, b) != marshal(t, c)) {
			t.Fatal("Generate depends on the order of the machines")
		}
	})
}

func deref(ms []*machine.Machine) []machine.Machine {
	out := make([]machine.Machine, len(ms))
	for i, m := range ms {
		out[i] = *m
	}
	return out
}
