// Package resilience says what losing each failure domain would do to a
// cluster (docs/design.md 20): the control planes and workers it takes,
// whether etcd keeps its quorum, the workers left against the
// constraints, and the plan the daemon would make if every machine of the
// domain became UNREACHABLE.
//
// It is pure, as the generator is: a report is a function of a
// generator.Input, whether the input comes from files (ckegenctl's
// offline command) or from etcd and sabakan. A data center has hundreds
// of racks and most of them hold no control plane, so the plans are not
// all made from scratch: the domains whose loss only takes workers get
// their plan from one shared look at the input (see recoveryOf), and only
// the domains that hold control planes, or an input whose own plan is not
// settled, run the generator once per domain.
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
	"github.com/ckegen/ckegen/taints"
)

// Report is what losing each failure domain would do. Its JSON is the
// contract of `ckegenctl sabakan resilience -o json`.
type Report struct {
	// FailureDomain is what a domain is: "rack", or a label's name.
	FailureDomain string `json:"failureDomain"`
	// Generated: the cluster is the one Generate would make (there was no
	// current cluster).
	Generated bool `json:"generated,omitempty"`
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
	// Warnings are the words for each domain at risk.
	Warnings []string `json:"warnings,omitempty"`

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
	// QuorumLost: losing it breaks etcd's quorum.
	QuorumLost bool `json:"quorumLost"`
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
// (generator.PlanSettled, PlanRefused, PlanMaxSteps), with the refusal.
type Recovery struct {
	Steps  int    `json:"steps"`
	Result string `json:"result"`
	Error  string `json:"error,omitempty"`
}

// Key is the failure domain the report was made with.
func (r *Report) Key() failuredomain.Key { return r.key }

// Of makes the report of in (in.Current, or without one the cluster
// Generate would make from in) by failure domain key. Every plan looks
// ahead at most generator.DefaultMaxSteps steps. It fails only when the
// input cannot be planned at all (as generator.MakePlan), or when there is
// no current cluster and Generate fails.
func Of(in generator.Input, key failuredomain.Key) (*Report, error) {
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
	}
	x, err := newIndex(in, key)
	if err != nil {
		return nil, err
	}
	cen := failuredomain.ControlPlanes(key, in.Machines, in.Current)
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
		d.WorkersLeft = x.healthyWorkers - x.healthyIn[name]
		if rate := in.Constraints.MinimumWorkersRate; rate != nil {
			p := 0.0
			if len(in.Machines) > 0 {
				p = float64(d.WorkersLeft) * 100 / float64(len(in.Machines))
			}
			d.WorkersLeftPercent = &p
			d.BelowMinimum = p < float64(*rate)
		} else {
			d.BelowMinimum = d.WorkersLeft < in.Constraints.MinimumWorkers
		}
		d.Recovery = recoveries[i]
		r.Domains = append(r.Domains, *d)
	}
	return r, nil
}

// index is the input looked at once: each machine's domain, each domain's
// nodes, the plan of the input as it is, and where rule 6 could add a
// worker.
type index struct {
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
	// candidates counts rule 6's candidates by domain, and all of them.
	candidates      map[string]int
	candidatesTotal int
	// retaints: the domains with a worker whose state taint rule 8 would
	// change to unreachable.
	retaints map[string]bool
	// base is the plan of the input as it is; shared says whether a loss
	// that takes no control plane can be summed up from the index
	// (sharedRecovery) rather than planned: when the base plan is settled
	// at once.
	base   *generator.Plan
	shared bool
}

func newIndex(in generator.Input, key failuredomain.Key) (*index, error) {
	x := &index{in: in, key: key, domains: map[string]*Domain{}, healthyIn: map[string]int{},
		candidates: map[string]int{}, retaints: map[string]bool{}}
	domain := func(name string) *Domain {
		d, ok := x.domains[name]
		if !ok {
			d = &Domain{Domain: name, ControlPlanes: []string{}, Workers: map[string]int{}}
			x.domains[name] = d
			x.names = append(x.names, name)
		}
		return d
	}
	byAddr := make(map[string]int, len(in.Machines))
	x.machineDomain = make([]string, len(in.Machines))
	for i, m := range in.Machines {
		name := key.Of(m)
		x.machineDomain[i] = name
		domain(name).Machines++
		byAddr[m.Address()] = i
	}
	for _, n := range in.Current.Nodes {
		i, ok := byAddr[n.Address]
		var m *machine.Machine
		name := ""
		if ok {
			m, name = in.Machines[i], x.machineDomain[i]
		} else {
			name = key.OfNode(n)
		}
		d := domain(name)
		if n.ControlPlane {
			d.ControlPlanes = append(d.ControlPlanes, n.Address)
			continue
		}
		x.workers++
		role := n.Labels[labels.Role]
		if m != nil {
			role = m.Spec.Role
		}
		d.Workers[role]++
		if m == nil {
			continue
		}
		if m.Status.State == machine.StateHealthy {
			x.healthyWorkers++
			x.healthyIn[name]++
		}
		if !in.Rebooting[n.Address] && in.Template.WorkerFor(m.Spec.Role) != nil &&
			!taints.StateTaintsEqual(n.Taints, []cluster.Taint{*taints.ForState(machine.StateUnreachable, false)}) {
			x.retaints[name] = true
		}
	}
	slices.SortFunc(x.names, key.Compare)

	base, err := generator.MakePlan(in, false, generator.DefaultMaxSteps)
	if err != nil {
		return nil, err
	}
	x.base = base
	x.shared = base.Result == generator.PlanSettled && len(base.Steps) == 0
	if x.shared {
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
	if x.shared && len(x.domains[name].ControlPlanes) == 0 {
		return x.sharedRecovery(name)
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
//     HEALTHY untainted machine the placement admits would have been one),
//     and a promotion needed a worker count the settled cluster did not
//     have with rule 6 idle;
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
// So the plan is one step, or none, and settles. TestRecoveryIsThePlan
// compares it with the plans the generator makes.
func (x *index) sharedRecovery(name string) Recovery {
	c := x.in.Constraints
	rule6 := false
	if !c.RateModel() {
		left := x.healthyWorkers - x.healthyIn[name]
		atMax := c.MaximumWorkers > 0 && x.workers >= c.MaximumWorkers
		rule6 = left < c.MinimumWorkers && !atMax && x.candidatesTotal-x.candidates[name] > 0
	}
	steps := 0
	if rule6 || x.retaints[name] {
		steps = 1
	}
	return Recovery{Steps: steps, Result: generator.PlanSettled}
}

// plan runs the generator's plan on the input with the domain's machines
// UNREACHABLE. The machines keep their places in the list, so that the
// policy's metric values (by index) still find them.
func (x *index) plan(name string) Recovery {
	in := x.in
	in.Machines = slices.Clone(in.Machines)
	for i, m := range in.Machines {
		if x.machineDomain[i] == name && m.Status.State != machine.StateUnreachable {
			c := *m
			c.Status.State = machine.StateUnreachable
			in.Machines[i] = &c
		}
	}
	p, err := generator.MakePlan(in, false, generator.DefaultMaxSteps)
	if err != nil {
		// The input planned as it was; with fewer machines it still does.
		return Recovery{Result: generator.PlanRefused, Error: err.Error()}
	}
	rec := Recovery{Steps: len(p.Steps), Result: p.Result}
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
