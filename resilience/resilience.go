// Package resilience says what losing each failure domain would do to a
// cluster (docs/design.md 20): the control planes and workers it takes,
// whether etcd keeps its quorum, the workers left against the
// constraints, and the plan the daemon would make if every machine of the
// domain became UNREACHABLE.
//
// It is pure, as the generator is: a report is a function of a
// world.World, whether it comes from files (ckegenctl's offline command)
// or from etcd and sabakan, and every plan in it is the world's
// (world.World.Plan: the leader's ticks, holds included), a loss an edit
// of the world as sabakan would answer the query (world.World.Set).
// The input's own plan is made
// once; when it is not settled at once, the report is made on the cluster
// it settles on (basis.go). A data center has hundreds of racks and most
// of them hold no control plane, so the plans are not all made from
// scratch: the domains whose loss only takes workers get their plan from
// one shared look at that settled cluster (see recoveryOf), and only the
// domains that hold control planes, or every domain when the input's plan
// does not settle, run the generator once per domain.
package resilience

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/world"
)

// Report is what losing each failure domain would do. Its JSON is the
// contract of `ckegenctl sabakan resilience -o json`.
type Report struct {
	// FailureDomain is what a domain is: "rack", or a label's name.
	FailureDomain string `json:"failureDomain"`
	// Generated: the cluster is the one Generate would make (there was no
	// current cluster).
	Generated bool `json:"generated,omitempty"`
	// Basis is the cluster the report is made on: BasisCurrent (the
	// input's cluster, or Generate's, whose plan is settled, refused,
	// held or does not settle) or BasisPendingPlanSettled (the cluster
	// the input's pending plan settles on). PendingSteps are that plan's
	// steps (before the refusal, the hold, or the maximum);
	// PendingRefused says why it is refused, PendingHeld what holds it
	// (the breaker), PendingMaxSteps that it does not settle within
	// PendingMaxSteps steps.
	Basis           string   `json:"basis"`
	PendingSteps    int      `json:"pendingSteps,omitempty"`
	PendingRefused  *Refusal `json:"pendingRefused,omitempty"`
	PendingHeld     *Refusal `json:"pendingHeld,omitempty"`
	PendingMaxSteps bool     `json:"pendingMaxSteps,omitempty"`
	// ControlPlanes is the cluster's number of control planes, Quorum the
	// number of etcd members that keep its quorum.
	ControlPlanes int `json:"controlPlanes"`
	Quorum        int `json:"quorum"`
	// Model is the model of the workers (count or rate), with its figure:
	// MinimumWorkers in the count model, MinimumWorkersRate in the rate
	// model; Machines counts the inventory (the rate's denominator).
	Model              string `json:"model"`
	MinimumWorkers     int    `json:"minimumWorkers,omitempty"`
	MinimumWorkersRate *int   `json:"minimumWorkersRate,omitempty"`
	Machines           int    `json:"machines"`
	// Domains are every domain of the inventory (and of the cluster's
	// nodes), in the key's order.
	Domains []Domain `json:"domains"`
	// AtRisk names the domains whose loss breaks etcd's quorum.
	AtRisk []string `json:"atRisk"`
	// Warnings are the words for each domain at risk. WarningsNow, on a
	// report made on the cluster a pending plan settles on, are those of
	// the cluster as it is now.
	Warnings    []string `json:"warnings,omitempty"`
	WarningsNow []string `json:"warningsNow,omitempty"`

	key failuredomain.Key
}

// Domain is one failure domain and what losing it would do.
type Domain struct {
	Domain string `json:"domain"`
	// Machines is how many machines of the inventory it holds.
	Machines int `json:"machines"`
	// ControlPlanes are the addresses of its control planes, in the
	// cluster's order.
	ControlPlanes []string `json:"controlPlanes"`
	// Workers counts its workers by the machine's role.
	Workers map[string]int `json:"workers"`
	// QuorumLost: losing it breaks etcd's quorum. QuorumLostNow: losing
	// it would break the quorum of the cluster as it is now (the same as
	// QuorumLost unless the report is on the cluster a pending plan
	// settles on, which may take time to reach).
	QuorumLost    bool `json:"quorumLost"`
	QuorumLostNow bool `json:"quorumLostNow"`
	// WorkersLeft is the number of HEALTHY workers outside it.
	WorkersLeft int `json:"workersLeft"`
	// WorkersLeftPercent is, in the rate model, WorkersLeft against the
	// machines of the inventory.
	WorkersLeftPercent *float64 `json:"workersLeftPercent,omitempty"`
	// BelowMinimum: the workers left are fewer than minimum-workers (count
	// model), or their share of the machines is below
	// minimum-workers-rate (rate model).
	BelowMinimum bool `json:"belowMinimum"`
	// Recovery is the plan the daemon would make with every machine of
	// the domain UNREACHABLE.
	Recovery Recovery `json:"recovery"`
}

// Recovery sums up a plan: its steps and how it ends
// (generator.PlanSettled, PlanRefused, PlanHeld, PlanMaxSteps, or
// NotPlanned), with the refusal or the hold.
// When the loss breaks etcd's quorum, Result is NoQuorum whatever the
// planner's end, which Planned then says: CKE applies nothing while etcd
// has no quorum.
type Recovery struct {
	Steps   int    `json:"steps"`
	Result  string `json:"result"`
	Planned string `json:"planned,omitempty"`
	// Reason and Message are a refused or held plan's reason code and
	// words, as the daemon's status says them; Error is a refused plan's
	// error (its Message).
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

// NoQuorum is the Result of a domain whose loss breaks etcd's quorum:
// none of the plan's steps can be applied until enough of the control
// planes return.
const NoQuorum = "no-quorum"

// NotPlanned is the Result of a domain's loss that is not planned because
// the input's own plan does not settle within PendingMaxSteps steps: each
// loss's plan would redo that work first, up to
// generator.DefaultMaxSteps ticks a domain.
const NotPlanned = "not-planned"

// Key is the failure domain the report was made with.
func (r *Report) Key() failuredomain.Key { return r.key }

// Of makes the report of w (its cluster, or without one the cluster
// Generate would make from its input) by failure domain key. The input's own plan
// is made first: when it settles after some steps, the report is on the
// cluster it settles on (Basis); when it is refused or does not settle,
// on the cluster as it is. The input's plan looks ahead at most
// PendingMaxSteps steps, a domain's loss's at most
// generator.DefaultMaxSteps. It fails only when the input cannot be
// planned at all (as world.World.Plan), or when there is no current
// cluster and Generate fails.
func Of(w world.World, key failuredomain.Key) (*Report, error) {
	return of(w, key, PendingMaxSteps)
}

// of is Of with the input's own plan looking ahead at most pendingMax
// steps.
func of(w world.World, key failuredomain.Key, pendingMax int) (*Report, error) {
	in := w.In
	r := &Report{FailureDomain: key.Name(), key: key, Model: in.Constraints.Model(), Machines: len(in.Machines)}
	if in.Constraints.RateModel() {
		r.MinimumWorkersRate = in.Constraints.MinimumWorkersRate
	} else {
		r.MinimumWorkers = in.Constraints.MinimumWorkers
	}
	if in.Current == nil {
		res, err := generator.Generate(in)
		if err != nil {
			return nil, fmt.Errorf("no current cluster, and Generate fails: %w", err)
		}
		in.Current, r.Generated = res.Cluster, true
		w.In, w.TemplateChanged = in, false
	}
	pending, err := w.Plan(nil, pendingMax)
	if err != nil {
		return nil, err
	}
	now := failuredomain.ControlPlanes(key, in.Machines, in.Current)
	settled := r.setBasis(pending)
	if settled {
		in.Current = pending.Cluster
		w.In, w.TemplateChanged = in, false
	}
	x, err := newIndex(w, key, settled, now)
	if err != nil {
		return nil, err
	}
	// The loss may take the cluster over max-unhealthy, whose hold the
	// leader climbs before rule 1; or take machines out of the answer.
	x.fixed = everyLoss(pending, w.MaxUnhealthy != nil || world.Leaves(w.Query, machine.StateUnreachable))
	cen := now
	if r.Basis == BasisPendingPlanSettled {
		cen = failuredomain.ControlPlanes(key, in.Machines, in.Current)
		r.WarningsNow = now.Warnings()
	}
	x.spreadAtRisk = in.Policy.Placement(policy.Key(&in.Template.ControlPlane)).SpreadQuorum() && len(cen.AtRisk()) > 0
	r.ControlPlanes, r.Quorum = cen.ControlPlanes, cen.Quorum()
	r.Warnings = cen.Warnings()
	r.AtRisk = []string{}
	for _, d := range cen.AtRisk() {
		r.AtRisk = append(r.AtRisk, d.Name)
	}
	recoveries := x.recoveries()
	for i, name := range x.names {
		d := x.domains[name]
		d.QuorumLost = failuredomain.BreaksQuorum(len(d.ControlPlanes), cen.ControlPlanes)
		d.QuorumLostNow = failuredomain.BreaksQuorum(now.Held(name), now.ControlPlanes)
		r.workersLeft(x, d)
		d.Recovery = recoveries[i]
		if d.QuorumLost {
			d.Recovery = noQuorum(d.Recovery)
		}
		r.Domains = append(r.Domains, *d)
	}
	return r, nil
}

// workersLeft sets the HEALTHY workers left outside d and whether they
// fall below the constraints.
func (r *Report) workersLeft(x *index, d *Domain) {
	d.WorkersLeft = x.healthyWorkers - x.healthyIn[d.Domain]
	c := x.in.Constraints
	if rate := c.MinimumWorkersRate; rate != nil {
		p := 0.0
		if len(x.in.Machines) > 0 {
			p = float64(d.WorkersLeft) * 100 / float64(len(x.in.Machines))
		}
		d.WorkersLeftPercent = &p
		d.BelowMinimum = p < float64(*rate)
		return
	}
	d.BelowMinimum = d.WorkersLeft < c.MinimumWorkers
}

// noQuorum is the recovery of a domain whose loss breaks etcd's quorum:
// the planner's steps and end, none of which CKE can apply.
func noQuorum(rec Recovery) Recovery {
	rec.Planned, rec.Result = rec.Result, NoQuorum
	return rec
}

// index is the world looked at once: each machine's domain, each
// domain's nodes, and where rule 6 could add a worker.
type index struct {
	w   world.World
	in  generator.Input
	key failuredomain.Key
	// names are the domains in the key's order; domains the report's
	// entries by name; machineDomain each machine's, by index.
	names         []string
	domains       map[string]*Domain
	machineDomain []string
	// healthyWorkers counts the cluster's workers whose machine is
	// HEALTHY; healthyIn those of each domain.
	healthyWorkers int
	healthyIn      map[string]int
	// workers counts the cluster's workers (maximum-workers' count).
	workers int
	// unhealthy counts the cluster's unhealthy nodes (the breaker's
	// count), soundIn the nodes of each domain a loss makes unhealthy
	// (their machine in the answer and sound, not rebooting).
	unhealthy int
	soundIn   map[string]int
	// candidates counts rule 6's candidates by domain, and all of them.
	candidates      map[string]int
	candidatesTotal int
	// retaints: the domains with a worker whose state taint rule 8 would
	// change to unreachable.
	retaints map[string]bool
	// badControlPlane: a control plane rule 5 may want to replace (its
	// machine gone or not HEALTHY, UPDATING or UNINITIALIZED, or its node
	// tainted in Kubernetes), had it something to replace it with.
	badControlPlane bool
	// spreadAtRisk: the policy spreads the control planes with spread:
	// quorum, and a domain holds too many of them, which rule 10 would
	// move had it a worker to promote.
	spreadAtRisk bool
	// shared says whether a loss that takes no control plane can be
	// summed up from the index (sharedRecovery) rather than planned: when
	// the input's plan is settled at once.
	shared bool
	// fixed, when not nil, is every domain's recovery (everyLoss).
	fixed *Recovery
}

// newIndex looks at in once. settled: in's plan is settled at once. now
// is the census of the cluster as it is now, whose domains are the
// report's too (a domain may hold a control plane now and nothing once
// a pending plan has settled).
func newIndex(w world.World, key failuredomain.Key, settled bool, now failuredomain.Census) (*index, error) {
	in := w.In
	x := &index{w: w, in: in, key: key, domains: map[string]*Domain{}, healthyIn: map[string]int{},
		candidates: map[string]int{}, retaints: map[string]bool{}, soundIn: map[string]int{}}
	byAddr := make(map[string]int, len(in.Machines))
	x.machineDomain = make([]string, len(in.Machines))
	for i, m := range in.Machines {
		name := key.Of(m)
		x.machineDomain[i] = name
		x.domain(name).Machines++
		byAddr[m.Address()] = i
	}
	for _, n := range in.Current.Nodes {
		x.addNode(n, byAddr)
	}
	for _, d := range now.Domains {
		x.domain(d.Name)
	}
	slices.SortFunc(x.names, key.Compare)

	// A loss that takes machines out of the query's answer removes
	// nodes, which the summary does not tell.
	x.shared = settled && !world.Leaves(w.Query, machine.StateUnreachable)
	if w.MaxUnhealthy != nil {
		bad, _, _ := w.Breaker(in)
		x.unhealthy = len(bad)
	}
	// Rule 6's candidates count in the count model only (sharedRecovery).
	if x.shared && !in.Constraints.RateModel() {
		cands, err := generator.WorkerCandidates(in)
		if err != nil {
			return nil, err
		}
		for i, ok := range cands {
			if ok {
				x.candidates[x.machineDomain[i]]++
				x.candidatesTotal++
			}
		}
	}
	return x, nil
}

// domain is the report's entry of a domain, added when new.
func (x *index) domain(name string) *Domain {
	d, ok := x.domains[name]
	if !ok {
		d = &Domain{Domain: name, ControlPlanes: []string{}, Workers: map[string]int{}}
		x.domains[name] = d
		x.names = append(x.names, name)
	}
	return d
}

// addNode counts a node of the cluster in its domain (its machine's, by
// byAddr, or the one its labels name).
func (x *index) addNode(n *cluster.Node, byAddr map[string]int) {
	i, ok := byAddr[n.Address]
	var m *machine.Machine
	name := ""
	if ok {
		m, name = x.in.Machines[i], x.machineDomain[i]
	} else {
		name = x.key.OfNode(n)
	}
	d := x.domain(name)
	if m != nil && m.Status.State.Sound() && !x.in.Rebooting[n.Address] {
		x.soundIn[name]++
	}
	if n.ControlPlane {
		d.ControlPlanes = append(d.ControlPlanes, n.Address)
		x.badControlPlane = x.badControlPlane || m == nil || len(x.in.NodeTaints[n.Address]) > 0 ||
			!m.Status.State.Sound()
		return
	}
	x.workers++
	role := n.Labels[labels.Role]
	if m != nil {
		role = m.Spec.Role
	}
	d.Workers[role]++
	if m == nil {
		return
	}
	if m.Status.State == machine.StateHealthy {
		x.healthyWorkers++
		x.healthyIn[name]++
	}
	if !x.in.Rebooting[n.Address] && x.in.Template.WorkerFor(m.Spec.Role) != nil &&
		!taints.StateTaintsEqual(n.Taints, []cluster.Taint{*taints.ForState(machine.StateUnreachable, false)}) {
		x.retaints[name] = true
	}
}

// recoveries are the domains' recoveries, in the order of x.names. The
// domains are planned side by side, one per processor: each plan reads
// the index and clones what it changes, and its result has its own
// place, so the report is the same in any order.
func (x *index) recoveries() []Recovery {
	recs := make([]Recovery, len(x.names))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range x.names {
		g.Go(func() error {
			recs[i] = x.recoveryOf(name)
			return nil
		})
	}
	_ = g.Wait() // the plans return no error: a refusal is a Recovery
	return recs
}

// recoveryOf is the plan the daemon would make with every machine of the
// domain UNREACHABLE.
func (x *index) recoveryOf(name string) Recovery {
	if x.fixed != nil {
		return *x.fixed
	}
	if x.shared && len(x.domains[name].ControlPlanes) == 0 {
		if rec, ok := x.sharedRecovery(name); ok {
			return rec
		}
	}
	return x.plan(name)
}

// sharedRecovery sums up, without planning, the loss of a domain that
// holds no control plane, from an input whose own plan is settled at once
// (index.shared). The domain's machines turn UNREACHABLE: the control
// planes stay what they were and the candidates can only be fewer. With
// docs/design.md 6.2's rules:
//   - rules 1 to 4 do not apply, as they did not before: no node's
//     machine left, no role changed, the control planes are as many;
//   - rule 5 had no replacement for a bad control plane: no candidate, and
//     no promotable worker or too few workers; the loss adds no candidate,
//     and the workers rule 6 may add are no candidates for it either (a
//     HEALTHY untainted machine the placement admits would have been one);
//     but the worker rule 6 adds comes beside the domain's lost workers,
//     which stay nodes, so after it the workers may be enough for a
//     promotion: with a bad control plane and rule 6, the loss is planned
//     (ok false), and so with rule 10 (spread: quorum) and a domain
//     holding too many control planes, for the same reason;
//   - rule 6 (count model) applies when the HEALTHY workers left fall
//     below minimum-workers, workers are under maximum-workers and a
//     candidate is left outside the domain; the rate model's rule 6 has no
//     new machine to take;
//   - rule 7 found no RETIRED worker to remove, or was held by the worker
//     count with no candidate at all, so that rule 6 cannot add one either;
//   - otherwise rule 8 applies when a worker of the domain that is not
//     rebooting is tainted otherwise than unreachable;
//   - one write re-renders every node, so rule 6's also taints the
//     domain's workers, and rule 8 has nothing left after it; rules 9 and
//     10 see the same control planes and fewer candidates than the settled
//     plan did, and do not apply either.
//
// So the plan is one step, or none, and settles, unless the loss takes
// the cluster over max-unhealthy: the breaker's hold is planned (ok
// false). TestRecoveryIsThePlan compares it with the world's plans.
func (x *index) sharedRecovery(name string) (Recovery, bool) {
	if lim := x.w.MaxUnhealthy; lim != nil && x.unhealthy+x.soundIn[name] > lim.Limit(len(x.in.Current.Nodes)) {
		return Recovery{}, false
	}
	c := x.in.Constraints
	rule6 := false
	if !c.RateModel() {
		left := x.healthyWorkers - x.healthyIn[name]
		atMax := c.MaximumWorkers > 0 && x.workers >= c.MaximumWorkers
		rule6 = left < c.MinimumWorkers && !atMax && x.candidatesTotal-x.candidates[name] > 0
	}
	if rule6 && (x.badControlPlane || x.spreadAtRisk) {
		return Recovery{}, false
	}
	steps := 0
	if rule6 || x.retaints[name] {
		steps = 1
	}
	return Recovery{Steps: steps, Result: generator.PlanSettled}, true
}

// plan is the world's plan once every machine of the domain is
// UNREACHABLE, as the query then answers (world.World.Set).
func (x *index) plan(name string) Recovery {
	lost, _ := x.w.Set(func(i int, m *machine.Machine) bool {
		return x.machineDomain[i] == name && m.Status.State != machine.StateUnreachable
	}, machine.StateUnreachable)
	p, err := lost.Plan(nil, generator.DefaultMaxSteps)
	if err != nil {
		// The input planned as it was; with fewer machines it still does.
		return Recovery{Result: generator.PlanRefused, Reason: generator.Refusal(err), Message: err.Error(), Error: err.Error()}
	}
	return recoveryOfPlan(p)
}

// recoveryOfPlan sums up a plan.
func recoveryOfPlan(p *generator.Plan) Recovery {
	rec := Recovery{Steps: len(p.Steps), Result: p.Result, Reason: p.Reason, Message: p.Message}
	if p.Err != nil {
		rec.Error = p.Err.Error()
	}
	return rec
}

// ErrNoDomain is returned by Lookup for a domain the report does not
// have.
var ErrNoDomain = errors.New("no such failure domain")

// Lookup returns the report's entry of a domain.
func (r *Report) Lookup(name string) (*Domain, error) {
	for i := range r.Domains {
		if r.Domains[i].Domain == name {
			return &r.Domains[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %q", ErrNoDomain, name)
}
