package generator

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// world is a random data center, what Kubernetes and CKE's reboot queue
// say about its nodes, and the cluster built on it.
type world struct {
	tmpl     *template.Template
	c        constraints.Constraints
	machines []*machine.Machine
	cluster  *cluster.Cluster
	serial   int
	roles    []string
	// rebooting and nodeTaints are by address; retireWait is the
	// daemon's --retire-wait.
	rebooting  map[string]bool
	nodeTaints map[string][]cluster.Taint
	retireWait time.Duration
	// templates are the ones events switch between; builtWith is the one
	// the cluster was last written with (the daemon's cluster-revision).
	templates []*template.Template
	builtWith *template.Template
	// policy, when not "", is the placement policy (propertyPolicy with
	// its weight and stickiness); temps are the machines' values of its
	// metric, by serial (absent: no value).
	policy string
	temps  map[string]float64
}

// propertyPolicy places control planes outside rack 5 and below 50
// degrees, in two ordered groups (machines labelled tier 1, then racks
// 0-3: a machine of rack 4 without the label is in neither), scored by
// temperature; %v are the weight and the stickiness.
const propertyPolicy = `
placements:
  control-plane:
    constraints: ["cke.cybozu.com/rack != 5"]
    metricConstraints: ["temp < 50"]
    groups:
    - {name: tier1, constraints: ["sabakan.cke.cybozu.com/tier is 1"]}
    - {name: rest, constraints: ["cke.cybozu.com/rack in (0, 1, 2, 3)"]}
    metrics: [{name: temp, weight: %v}]
metrics:
  temp: {provider: lab, min: 0, max: 60}
providers:
  lab: {type: static, values: {}}
stickiness: %v
`

// cpAdmitted is propertyPolicy's verdict on a control plane, stated
// independently of the policy package: its first group, or "" when the
// placement does not admit the machine.
func (w *world) cpAdmitted(m *machine.Machine) (string, bool) {
	if w.policy == "" {
		return "", true
	}
	temp, ok := w.temps[m.Spec.Serial]
	if m.Spec.Rack == 5 || !ok || temp >= 50 {
		return "", false
	}
	for _, l := range m.Spec.Labels {
		if l.Name == "tier" && l.Value == "1" {
			return "tier1", true
		}
	}
	if m.Spec.Rack >= 0 && m.Spec.Rack <= 3 {
		return "rest", true
	}
	return "", false
}

// The property templates tolerate example.com/ok on control planes. Events
// switch between the templates of a kind: one that drops a role (rule 2),
// one with a misspelt role (rule 2's typo guard).
const tolerateOK = "control_plane_tolerations: [example.com/ok]\n"

var (
	propertySimpleTemplates = []string{
		simpleTemplate + tolerateOK,
		`name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: cs}}
service_subnet: 10.68.0.0/16
` + tolerateOK,
	}
	propertyRolesTemplates = []string{
		rolesTemplate + tolerateOK,
		`name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "2"}}
- {user: u, labels: {cke.cybozu.com/role: storage}}
service_subnet: 10.68.0.0/16
` + tolerateOK,
		strings.Replace(rolesTemplate, "role: gpu,", "role: gpuu,", 1) + tolerateOK,
	}
)

func drawWorld(t *rapid.T) *world {
	w := &world{rebooting: map[string]bool{}, nodeTaints: map[string][]cluster.Taint{}}
	docs := propertySimpleTemplates
	w.roles = []string{"cs", "ss"}
	if rapid.Bool().Draw(t, "roles") {
		docs = propertyRolesTemplates
		w.roles = []string{"compute", "storage", "gpu", "boot"}
	}
	for _, d := range docs {
		w.templates = append(w.templates, mustTemplate(d))
	}
	w.tmpl = w.templates[0]
	w.c = drawConstraints(t)
	if rapid.Bool().Draw(t, "policy") {
		w.policy = fmt.Sprintf(propertyPolicy,
			rapid.SampledFrom([]float64{-10, -3, 0, 4}).Draw(t, "weight"),
			rapid.SampledFrom([]float64{0, 0.5, 3, 10, 25}).Draw(t, "stickiness"))
		w.temps = map[string]float64{}
	}
	w.retireWait = time.Duration(rapid.SampledFrom([]int{0, 1, 300, 600}).Draw(t, "retireWait")) * time.Second
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	n := rapid.IntRange(0, 30).Draw(t, "machines")
	for i := 0; i < n; i++ {
		w.addMachine(t, rapid.IntRange(0, racks-1).Draw(t, "rack"))
	}
	// Kubernetes and the reboot queue may already know some machines.
	for i := 0; i < rapid.IntRange(0, 3).Draw(t, "initial marks"); i++ {
		w.mark(t)
	}
	return w
}

// drawConstraints draws either model (docs/models.md): the rate model with a rate
// that includes the bounds, or the count model.
func drawConstraints(t *rapid.T) constraints.Constraints {
	if rapid.Bool().Draw(t, "rate model") {
		rate := rapid.SampledFrom([]int{0, 1, 50, 80, 99, 100}).Draw(t, "rate")
		return constraints.Constraints{ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"), MinimumWorkersRate: &rate}
	}
	c := constraints.Constraints{
		ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"),
		MinimumWorkers:    rapid.IntRange(0, 8).Draw(t, "min"),
	}
	if rapid.Bool().Draw(t, "hasMax") {
		c.MaximumWorkers = c.MinimumWorkers + rapid.IntRange(0, 4).Draw(t, "extra")
		if c.MaximumWorkers == 0 {
			c.MaximumWorkers = 1
		}
	}
	return c
}

var allStates = []machine.State{
	machine.StateUninitialized, machine.StateHealthy, machine.StateUnhealthy, machine.StateUnreachable,
	machine.StateUpdating, machine.StateRetiring, machine.StateRetired,
}

// propertyTaints are the Kubernetes taints a node may carry: intolerable
// on a control plane, tolerated by docs/design.md 6.4, tolerated by the template.
var propertyTaints = [][]cluster.Taint{
	{{Key: "example.com/broken", Effect: "NoSchedule"}},
	{{Key: "node.kubernetes.io/unreachable", Effect: "NoExecute"}},
	{{Key: "example.com/ok", Effect: "NoSchedule"}, {Key: "cke.cybozu.com/master", Effect: "PreferNoSchedule"}},
}

func (w *world) addMachine(t *rapid.T, rack int) {
	w.serial++
	b := mkMachine(fmt.Sprintf("s%04d", w.serial), rack, w.serial).
		role(rapid.SampledFrom(w.roles).Draw(t, "role")).
		retireIn(rapid.IntRange(-1200, 1800).Draw(t, "days"))
	if rapid.IntRange(0, 5).Draw(t, "sick") == 0 {
		b.state(rapid.SampledFrom(allStates).Draw(t, "state"))
	}
	if w.policy != "" {
		if rapid.IntRange(0, 3).Draw(t, "tier1") == 0 {
			b.label("tier", "1")
		}
		if rapid.IntRange(0, 5).Draw(t, "has temp") > 0 {
			w.temps[b.m.Spec.Serial] = float64(rapid.IntRange(0, 60).Draw(t, "temp"))
		}
	}
	w.machines = append(w.machines, b.obj())
}

// mark toggles a Kubernetes taint or a reboot-queue entry on a machine's
// address, or on a node whose machine is gone.
func (w *world) mark(t *rapid.T) string {
	var addrs []string
	for _, m := range w.machines {
		addrs = append(addrs, m.Address())
	}
	if w.cluster != nil {
		for _, n := range w.cluster.Nodes {
			addrs = append(addrs, n.Address)
		}
	}
	if len(addrs) == 0 {
		return "no mark"
	}
	a := rapid.SampledFrom(addrs).Draw(t, "marked")
	if w.cluster != nil && len(w.cluster.Nodes) > 0 && rapid.Bool().Draw(t, "mark a node") {
		a = rapid.SampledFrom(w.cluster.Nodes).Draw(t, "marked node").Address
	}
	if rapid.Bool().Draw(t, "reboot") {
		w.rebooting = maps.Clone(w.rebooting)
		if w.rebooting[a] {
			delete(w.rebooting, a)
			return a + " rebooted"
		}
		w.rebooting[a] = true
		return a + " rebooting"
	}
	w.nodeTaints = maps.Clone(w.nodeTaints)
	if _, ok := w.nodeTaints[a]; ok {
		delete(w.nodeTaints, a)
		return a + " untainted"
	}
	w.nodeTaints[a] = rapid.SampledFrom(propertyTaints).Draw(t, "taints")
	return a + " tainted"
}

// event changes the inventory: a state change, a retirement timer, a machine
// leaving or joining sabakan, a Kubernetes taint or a reboot.
func (w *world) event(t *rapid.T) string {
	if len(w.machines) == 0 {
		w.addMachine(t, 0)
		return "add"
	}
	i := rapid.IntRange(0, len(w.machines)-1).Draw(t, "target")
	if w.cluster != nil && len(w.cluster.Nodes) > 0 && rapid.Bool().Draw(t, "at a node") {
		// Events at the cluster's nodes change more decisions.
		addr := rapid.SampledFrom(w.cluster.Nodes).Draw(t, "node").Address
		if j := slices.IndexFunc(w.machines, func(m *machine.Machine) bool { return m.Address() == addr }); j >= 0 {
			i = j
		}
	}
	m := *w.machines[i]
	switch rapid.IntRange(0, 8).Draw(t, "event") {
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
	case 5, 6:
		return w.mark(t)
	case 7:
		w.tmpl = rapid.SampledFrom(w.templates).Draw(t, "template")
		return "template " + w.tmpl.Cluster.Nodes[len(w.tmpl.Cluster.Nodes)-1].Labels["cke.cybozu.com/role"]
	case 8:
		w.c = drawConstraints(t)
		return fmt.Sprintf("constraints %+v", w.c)
	}
	w.machines = slices.Clone(w.machines)
	w.machines[i] = &m
	return fmt.Sprintf("%s -> %s", m.Spec.Serial, m.Status.State)
}

func (w *world) input() Input {
	in := input(w.tmpl, w.c, w.machines, w.cluster)
	in.Rebooting = w.rebooting
	in.NodeTaints = w.nodeTaints
	in.RetireWait = w.retireWait
	if w.policy != "" {
		pol, err := policy.Load([]byte(w.policy), w.tmpl)
		if err != nil {
			panic(err) // the property policy fits every property template
		}
		serials := make([]string, len(w.machines))
		for i, m := range w.machines {
			serials[i] = m.Spec.Serial
		}
		vals := pol.NewValues(serials)
		for i, sn := range serials {
			if v, ok := w.temps[sn]; ok {
				vals.Set(i, 0, v)
			}
		}
		in.Policy, in.Metrics = pol, vals
	}
	return in
}

// machineAt returns the machine of an address, or nil when it left
// sabakan.
func (w *world) machineAt(addr string) *machine.Machine {
	for _, m := range w.machines {
		if m.Address() == addr {
			return m
		}
	}
	return nil
}

func (w *world) intolerable(addr string) bool {
	return taints.Intolerable(w.nodeTaints[addr], w.tmpl.Cluster.ControlPlaneTolerations) != nil
}

// badCP is docs/design.md 6.2 rule 5's bad control plane, stated independently of
// the generator.
func (w *world) badCP(m *machine.Machine) bool {
	switch m.Status.State {
	case machine.StateHealthy, machine.StateUpdating, machine.StateUninitialized:
		return w.intolerable(m.Address())
	}
	return true
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
	OpRegenerate:          {ActionRegenerate},
	OpRebalanceCP:         {ActionRebalanceDemoteCP, ActionRebalanceRemoveCP, ActionRebalanceAddCP},
	OpSpreadCP:            {ActionSpreadDemoteCP, ActionSpreadRemoveCP, ActionSpreadAddCP, ActionPromoteWorker},
}

var fillActions = []string{ActionAddControlPlane, ActionPromoteWorker, ActionAddWorker, ActionRerender}

func nodesByAddress(c *cluster.Cluster) map[string]*cluster.Node {
	out := map[string]*cluster.Node{}
	for _, n := range c.Nodes {
		out[n.Address] = n
	}
	return out
}

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
	// Every node with a machine and a template is rendered with the state
	// taint of its machine (none while rebooting).
	for _, n := range next.Nodes {
		m := w.machineAt(n.Address)
		if m == nil || (!n.ControlPlane && w.tmpl.WorkerFor(m.Spec.Role) == nil) {
			continue
		}
		var want []cluster.Taint
		if st := taints.ForState(m.Status.State, w.rebooting[n.Address]); st != nil {
			want = []cluster.Taint{*st}
		}
		if !taints.StateTaintsEqual(n.Taints, want) {
			t.Fatalf("%s: node %s (%s, rebooting %v) has taints %v", res.Op, n.Address, m.Status.State, w.rebooting[n.Address], n.Taints)
		}
	}

	if w.c.RateModel() {
		// Every HEALTHY machine a worker template takes is a node after
		// every decision: fill adds what a rule did not.
		if a := w.unusedWorkerCandidate(next); a != "" {
			t.Fatalf("%s: rate model, and the HEALTHY machine %s is not a node", res.Op, a)
		}
		if res.Op == OpReplaceCP {
			t.Fatalf("rule 5 applied in the rate model")
		}
	}

	var before map[string]*cluster.Node
	if prev != nil {
		before = nodesByAddress(prev)
	}
	// A node added is a HEALTHY machine that is not rebooting; a control
	// plane added or promoted also has no intolerable taint and the
	// control plane's role.
	for _, n := range next.Nodes {
		old := before[n.Address]
		if old != nil && old.ControlPlane == n.ControlPlane {
			continue
		}
		if old != nil && !n.ControlPlane {
			continue // demoted: checked below
		}
		m := w.machineAt(n.Address)
		switch {
		case m == nil:
			t.Fatalf("%s: node %s added or promoted without a machine", res.Op, n.Address)
		case w.rebooting[n.Address]:
			t.Fatalf("%s: rebooting node %s added or promoted", res.Op, n.Address)
		case m.Status.State != machine.StateHealthy:
			t.Fatalf("%s: %s machine %s added or promoted", res.Op, m.Status.State, n.Address)
		case n.ControlPlane && w.intolerable(n.Address):
			t.Fatalf("%s: %s made a control plane with the taints %v", res.Op, n.Address, w.nodeTaints[n.Address])
		case n.ControlPlane && w.tmpl.ControlPlane.Role != "" && m.Spec.Role != w.tmpl.ControlPlane.Role:
			t.Fatalf("%s: %s of role %s made a control plane", res.Op, n.Address, m.Spec.Role)
		}
		if _, ok := w.cpAdmitted(m); n.ControlPlane && !ok {
			t.Fatalf("%s: %s (rack %d, labels %v, temp %v) made a control plane against the placement", res.Op, n.Address,
				m.Spec.Rack, m.Spec.Labels, w.temps[m.Spec.Serial])
		}
	}
	// A control plane added or promoted records the group it came from:
	// its first group (had an earlier group had a candidate, the pick
	// would have been made there).
	// A control plane that stays one (its taints changed, re-rendered)
	// keeps the group it was picked from and records none.
	for _, c := range res.Changes {
		n := nodesByAddress(next)[c.Address]
		if n == nil || !n.ControlPlane || (before[c.Address] != nil && before[c.Address].ControlPlane) {
			continue
		}
		m := w.machineAt(c.Address)
		if group, _ := w.cpAdmitted(m); c.Group != group || (group != "" && c.Placement != "control-plane") {
			t.Fatalf("%s: %s %s records placement %q group %q, want group %q", res.Op, c.Action, c.Address, c.Placement, c.Group, group)
		}
	}
	if prev == nil {
		if res.Op != OpNew {
			t.Fatalf("first decision op = %q", res.Op)
		}
		return
	}
	after := nodesByAddress(next)
	// Never more workers than maximum-workers because of this step.
	if w.c.MaximumWorkers > 0 && workers(next) > max(w.c.MaximumWorkers, workers(prev)) {
		t.Fatalf("%s: %d workers, over maximum %d (was %d)", res.Op, workers(next), w.c.MaximumWorkers, workers(prev))
	}
	// etcd quorum: of the previous control planes, none leaves a single
	// one, and at most one or fewer than half leave in one step.
	cpsBefore, cpsAfter := controlPlanes(prev), controlPlanes(next)
	lost := 0
	for a := range cpsBefore {
		if !cpsAfter[a] {
			lost++
		}
	}
	if lost > 0 && !(lost == 1 && len(cpsBefore) >= 2) && 2*lost >= len(cpsBefore) {
		t.Fatalf("%s: %d of %d control planes left in one step", res.Op, lost, len(cpsBefore))
	}
	// Nodes that leave or are demoted do so for their rule's reason, and
	// rebooting nodes stay as they were.
	for _, old := range prev.Nodes {
		n := after[old.Address]
		if n != nil && n.ControlPlane == old.ControlPlane {
			continue
		}
		if n != nil && n.ControlPlane {
			continue // promoted: checked above
		}
		m := w.machineAt(old.Address)
		why := "demoted"
		if n == nil {
			why = "removed"
		}
		if w.rebooting[old.Address] {
			t.Fatalf("%s: rebooting node %s %s", res.Op, old.Address, why)
		}
		ok := false
		switch res.Op {
		case OpRemoveNonExistent:
			ok = n == nil && m == nil
		case OpRemoveUnmatchedRole:
			ok = n == nil && !old.ControlPlane && m != nil && w.tmpl.WorkerFor(m.Spec.Role) == nil
		case OpDecreaseCP:
			ok = old.ControlPlane
		case OpReplaceCP:
			ok = old.ControlPlane && m != nil && w.badCP(m)
		case OpDecreaseWorker:
			ok = n == nil && !old.ControlPlane && m != nil && m.Status.State == machine.StateRetired &&
				m.Status.Duration > w.retireWait.Seconds()
			if ok && w.c.RateModel() {
				// The first such worker in the cluster's order, and only
				// while (workers - 1) / machines stays at the rate.
				first := slices.IndexFunc(prev.Nodes, func(p *cluster.Node) bool { return w.retiredPastWait(p) })
				ok = first >= 0 && prev.Nodes[first].Address == old.Address &&
					float64(workers(prev)-1)*100 >= float64(*w.c.MinimumWorkersRate)*float64(len(w.input().Machines))
			}
		case OpRebalanceCP:
			ok = old.ControlPlane && m != nil && m.Status.State == machine.StateHealthy && w.policy != ""
		}
		if !ok {
			st := "gone"
			if m != nil {
				st = string(m.Status.State)
			}
			t.Fatalf("%s: node %s (control plane %v, machine %s, taints %v) %s for no reason of this rule",
				res.Op, old.Address, old.ControlPlane, st, w.nodeTaints[old.Address], why)
		}
	}
	// Every node the step changes is told: a change names it (its rule's,
	// or a re-render's), and a re-render names a node that changed.
	told := map[string]bool{}
	for _, c := range res.Changes {
		told[c.Address] = true
		if o := before[c.Address]; c.Action == ActionRerender && (o == nil || nodeEqual(o, after[c.Address])) {
			t.Fatalf("%s: re-render of %s, which did not change", res.Op, c.Address)
		}
	}
	for _, n := range next.Nodes {
		if o := before[n.Address]; (o == nil || !nodeEqual(o, n)) && !told[n.Address] {
			t.Fatalf("%s: node %s changed and no change says so", res.Op, n.Address)
		}
	}
	// One rule per step.
	acts, ok := allowed[res.Op]
	if !ok {
		t.Fatalf("unknown op %q", res.Op)
	}
	if len(res.Changes) == 0 && res.Op != OpRegenerate {
		t.Fatalf("%s: no changes", res.Op)
	}
	for _, c := range res.Changes {
		if !slices.Contains(acts, c.Action) && !slices.Contains(fillActions, c.Action) {
			t.Fatalf("%s: action %s belongs to another rule", res.Op, c.Action)
		}
	}
}

// unusedWorkerCandidate returns a HEALTHY machine that is not rebooting,
// not a node of c and that a worker template takes, or "".
func (w *world) unusedWorkerCandidate(c *cluster.Cluster) string {
	in := nodesByAddress(c)
	for _, m := range w.machines {
		a := m.Address()
		if in[a] == nil && !w.rebooting[a] && m.Status.State == machine.StateHealthy && w.tmpl.WorkerFor(m.Spec.Role) != nil {
			return a
		}
	}
	return ""
}

// retiredPastWait reports whether n is a worker, not rebooting, whose
// machine stayed RETIRED longer than the retire wait.
func (w *world) retiredPastWait(n *cluster.Node) bool {
	m := w.machineAt(n.Address)
	return !n.ControlPlane && !w.rebooting[n.Address] && m != nil && m.Status.State == machine.StateRetired &&
		m.Status.Duration > w.retireWait.Seconds()
}

// typo reports whether a worker template's role matches no machine (rule
// 2's typo guard holds).
func (w *world) typo() bool {
	inventory := map[string]bool{}
	for _, m := range w.machines {
		inventory[m.Spec.Role] = true
	}
	for _, wt := range w.tmpl.Workers {
		if wt.Role != "" && !inventory[wt.Role] {
			return true
		}
	}
	return false
}

// checkRefusal asserts that a refused step had to be refused, from what
// docs/design.md says rather than from what the generator computed.
func checkRefusal(t *rapid.T, w *world, err error) {
	goneCPs, cps, workerCount, mustRemove := 0, 0, 0, false
	typo := w.typo()
	for _, n := range w.cluster.Nodes {
		if n.ControlPlane {
			cps++
		} else {
			workerCount++
		}
		if w.rebooting[n.Address] {
			continue
		}
		m := w.machineAt(n.Address)
		switch {
		case m == nil:
			mustRemove = true
			if n.ControlPlane {
				goneCPs++
			}
		case !n.ControlPlane && w.tmpl.WorkersHaveRoles() && !typo && w.tmpl.WorkerFor(m.Spec.Role) == nil:
			mustRemove = true
		}
	}
	switch {
	case errors.Is(err, ErrTooManyNonExistent):
		if goneCPs == 0 || 2*goneCPs < cps {
			t.Fatalf("refused with %v, but %d of %d control planes are gone", err, goneCPs, cps)
		}
	case errors.Is(err, ErrNotEnoughMachines):
		// Every write met the constraints; unless they were raised since,
		// only a removal that rules 1 and 2 make without a guard can leave
		// fill short: every other rule checks its replacement first.
		short := cps < w.c.ControlPlaneCount || workerCount < w.c.MinimumWorkers
		if !mustRemove && !short {
			t.Fatalf("refused with %v, but no node had to be removed and the constraints were met", err)
		}
	default:
		t.Fatalf("Update: %v", err)
	}
}

func marshal(t *rapid.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// checkSettled asserts that no rule of the ladder is left to apply when
// a tick has nothing to do, stated from docs/design.md 6.2 on the world rather than
// from what the generator computed.
func checkSettled(t *rapid.T, w *world) {
	c, typo := w.cluster, w.typo()
	inCluster := nodesByAddress(c)
	cps, frozenCPs, workerCount, healthy := 0, 0, 0, 0
	for _, n := range c.Nodes {
		m := w.machineAt(n.Address)
		rebooting := w.rebooting[n.Address]
		if n.ControlPlane {
			cps++
			if rebooting {
				frozenCPs++
			}
		} else {
			workerCount++
			if m != nil && m.Status.State == machine.StateHealthy {
				healthy++
			}
		}
		if rebooting {
			continue
		}
		switch {
		case m == nil:
			t.Fatalf("settled with node %s, whose machine is gone (rule 1)", n.Address)
		case !n.ControlPlane && w.tmpl.WorkersHaveRoles() && !typo && w.tmpl.WorkerFor(m.Spec.Role) == nil:
			t.Fatalf("settled with worker %s of role %s, which no template takes (rule 2)", n.Address, m.Spec.Role)
		}
	}
	if cps < w.c.ControlPlaneCount {
		t.Fatalf("settled with %d control planes, want %d (rule 3)", cps, w.c.ControlPlaneCount)
	}
	if cps > w.c.ControlPlaneCount && frozenCPs < cps {
		t.Fatalf("settled with %d control planes, want %d (rule 4)", cps, w.c.ControlPlaneCount)
	}
	cpCandidate, workerCandidate := "", ""
	for _, m := range w.machines {
		a := m.Address()
		if inCluster[a] != nil || w.rebooting[a] || m.Status.State != machine.StateHealthy {
			continue
		}
		if _, ok := w.cpAdmitted(m); ok && !w.intolerable(a) && (w.tmpl.ControlPlane.Role == "" || w.tmpl.ControlPlane.Role == m.Spec.Role) {
			cpCandidate = a
		}
		if w.tmpl.WorkerFor(m.Spec.Role) != nil {
			workerCandidate = a
		}
	}
	atMax := w.c.MaximumWorkers > 0 && workerCount >= w.c.MaximumWorkers
	for _, n := range c.Nodes {
		m := w.machineAt(n.Address)
		if m == nil || w.rebooting[n.Address] {
			continue
		}
		if w.c.RateModel() {
			continue
		}
		if n.ControlPlane && cps >= 2 && w.badCP(m) && cpCandidate != "" {
			t.Fatalf("settled with the bad control plane %s (%s, taints %v) and %s to replace it (rule 5)",
				n.Address, m.Status.State, w.nodeTaints[n.Address], cpCandidate)
		}
		if !n.ControlPlane && m.Status.State == machine.StateRetired && m.Status.Duration > w.retireWait.Seconds() &&
			(workerCount > w.c.MinimumWorkers || workerCandidate != "") {
			t.Fatalf("settled with worker %s RETIRED for %.0fs > %s (rule 7)", n.Address, m.Status.Duration, w.retireWait)
		}
	}
	if w.c.RateModel() {
		w.checkRateSettled(t, workerCandidate, workerCount)
	} else if healthy < w.c.MinimumWorkers && !atMax && workerCandidate != "" {
		t.Fatalf("settled with %d HEALTHY workers, want %d, and %s could be added (rule 6)", healthy, w.c.MinimumWorkers, workerCandidate)
	}
	w.checkGroupsSettled(t, cps, inCluster)
	for _, n := range c.Nodes {
		m := w.machineAt(n.Address)
		if m == nil || (!n.ControlPlane && w.tmpl.WorkerFor(m.Spec.Role) == nil) {
			continue
		}
		var want []cluster.Taint
		if st := taints.ForState(m.Status.State, w.rebooting[n.Address]); st != nil {
			want = []cluster.Taint{*st}
		}
		if !taints.StateTaintsEqual(n.Taints, want) {
			t.Fatalf("settled with node %s (%s) tainted %v (rule 8)", n.Address, m.Status.State, n.Taints)
		}
	}
}

// checkRateSettled: rules 6 and 7 of the rate model (docs/models.md) have
// nothing left to do.
func (w *world) checkRateSettled(t *rapid.T, workerCandidate string, workerCount int) {
	if workerCandidate != "" {
		t.Fatalf("settled in the rate model with %s unused (rule 6)", workerCandidate)
	}
	machines := len(w.input().Machines)
	for _, n := range w.cluster.Nodes {
		if w.retiredPastWait(n) && float64(workerCount-1)*100 >= float64(*w.c.MinimumWorkersRate)*float64(machines) {
			t.Fatalf("settled with worker %s RETIRED past the wait, and (%d - 1) / %d machines reaches minimum-workers-rate %d (rule 7)",
				n.Address, workerCount, machines, *w.c.MinimumWorkersRate)
		}
	}
}

// groupRank orders propertyPolicy's groups: tier1, rest, then not
// admitted.
func groupRank(group string, admitted bool) int {
	switch {
	case !admitted:
		return 2
	case group == "tier1":
		return 0
	}
	return 1
}

// checkGroupsSettled asserts rule 9's group clause on a settled cluster
// (docs/design.md 12.5), stated from the groups alone: with a stickiness and two
// control planes or more, no HEALTHY control plane that is not rebooting
// is in a later group than an unused candidate.
func (w *world) checkGroupsSettled(t *rapid.T, cps int, inCluster map[string]*cluster.Node) {
	if w.policy == "" || strings.HasSuffix(strings.TrimSpace(w.policy), "stickiness: 0") || cps < 2 {
		return
	}
	best, bestAddr := 3, ""
	for _, m := range w.machines {
		a := m.Address()
		if inCluster[a] != nil || w.rebooting[a] || m.Status.State != machine.StateHealthy || w.intolerable(a) ||
			(w.tmpl.ControlPlane.Role != "" && w.tmpl.ControlPlane.Role != m.Spec.Role) {
			continue
		}
		if g, ok := w.cpAdmitted(m); ok && groupRank(g, true) < best {
			best, bestAddr = groupRank(g, true), a
		}
	}
	for _, n := range w.cluster.Nodes {
		m := w.machineAt(n.Address)
		if !n.ControlPlane || m == nil || w.rebooting[n.Address] || m.Status.State != machine.StateHealthy {
			continue
		}
		if g, ok := w.cpAdmitted(m); groupRank(g, ok) > best {
			t.Fatalf("settled with control plane %s in group %q (admitted %v) while %s of an earlier group is unused (rule 9)", n.Address, g, ok, bestAddr)
		}
	}
}

// TestUpdateInvariants drives random data centers through random events
// (machine states, retirement timers, machines leaving and joining,
// Kubernetes taints, reboots, template changes), one tick per event as the
// daemon makes it, and checks after every step that quorum is kept, the
// constraints hold, nodes come and go only for their rule's reason,
// rebooting nodes stay frozen, one rule applied, the decision is
// deterministic, and every refusal was due. With no more events the
// cluster must settle in a bounded number of steps: "nothing to do" with no
// rule left to apply, or a refusal that is due.
func TestUpdateInvariants(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := drawWorld(t)
		res, err := Generate(w.input())
		if err != nil {
			if !errors.Is(err, ErrNotEnoughMachines) {
				t.Fatalf("Generate: %v", err)
			}
			return
		}
		checkResult(t, w, nil, res)
		w.cluster, w.builtWith = res.Cluster, w.tmpl

		steps := rapid.IntRange(1, 25).Draw(t, "steps")
		for i := 0; i < steps; i++ {
			t.Logf("event: %s", w.event(t))
			w.tick(t)
		}
		// No more events: the cluster must settle; rebalancing may take
		// a move per control plane and candidate.
		limit := 2*len(w.machines) + 10
		if w.policy != "" {
			limit *= 2
		}
		for i := 0; ; i++ {
			if i == limit {
				t.Fatalf("no settling after %d steps on an unchanged inventory", limit)
			}
			switch w.tick(t) {
			case nothing:
				checkSettled(t, w)
				return
			case refused:
				return
			}
		}
	})
}

type outcome int

const (
	changed outcome = iota
	nothing
	refused
)

// tick runs one tick as the daemon does: Update, or Regenerate when the
// template changed since the last write.
func (w *world) tick(t *rapid.T) outcome {
	prev := w.cluster
	templateChanged := w.tmpl != w.builtWith
	res, err := Tick(w.input(), templateChanged)
	again, err2 := Tick(w.input(), templateChanged)
	if (err == nil) != (err2 == nil) || (err == nil && marshal(t, res) != marshal(t, again)) {
		t.Fatal("Tick is not deterministic")
	}
	if res != nil && w.c.RateModel() {
		w.checkBadCPWarnings(t, res)
	}
	switch {
	case errors.Is(err, ErrNothingToDo):
		return nothing
	case err != nil:
		checkRefusal(t, w, err)
		return refused
	}
	t.Logf("%s: %d changes", res.Op, len(res.Changes))
	checkResult(t, w, prev, res)
	w.cluster, w.builtWith = res.Cluster, w.tmpl
	return changed
}

// checkBadCPWarnings: in the rate model, every control plane of the
// current cluster that is not well and not rebooting is named in a
// warning, since nothing replaces it.
func (w *world) checkBadCPWarnings(t *rapid.T, res *Result) {
	for _, n := range w.cluster.Nodes {
		m := w.machineAt(n.Address)
		if !n.ControlPlane || m == nil || w.rebooting[n.Address] || !w.badCP(m) {
			continue
		}
		if !slices.ContainsFunc(res.Warnings, func(s string) bool { return strings.Contains(s, "control plane "+n.Address+" ") }) {
			t.Fatalf("rate model: no warning names the bad control plane %s (%s): %q", n.Address, m.Status.State, res.Warnings)
		}
	}
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
