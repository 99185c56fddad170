package planreport

import (
	"slices"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// The generator's results as storage's records keep them: storage knows
// its own record types, not the generator's (docs/design.md, Layers).

// StoredChanges returns the first storage.MaxChanges of cs as the status and
// the history keep them, each score as its value (ScoreValue).
func StoredChanges(cs []generator.Change) []storage.Change {
	cs = cs[:min(len(cs), storage.MaxChanges)]
	out := make([]storage.Change, len(cs))
	for i, c := range cs {
		out[i] = storage.Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Score: ScoreValue(c.Score),
			Reason: c.Reason, Placement: c.Placement, Group: c.Group}
	}
	return out
}

// Rate is r as the status keeps it; nil for nil.
func Rate(r *generator.WorkerRate) *storage.WorkerRate {
	if r == nil {
		return nil
	}
	return &storage.WorkerRate{Workers: r.Workers, Machines: r.Machines, Percent: r.Percent, Minimum: r.Minimum}
}

// Groups is gs as the status keeps them.
func Groups(gs []generator.GroupNodes) []storage.GroupNodes {
	if gs == nil {
		return nil
	}
	out := make([]storage.GroupNodes, len(gs))
	for i, g := range gs {
		out[i] = storage.GroupNodes{Group: g.Group, Nodes: g.Nodes}
	}
	return out
}

// Domains is the census of the control planes by failure domain as the
// status keeps it: each domain, and those whose loss breaks etcd's
// quorum, with what the status warns of them.
func Domains(cen *failuredomain.Census) *storage.FailureDomains {
	fd := &storage.FailureDomains{FailureDomain: cen.Key.Name(), ControlPlanes: cen.ControlPlanes, Quorum: cen.Quorum(),
		Domains: make([]storage.DomainControlPlanes, 0, len(cen.Domains)), AtRisk: []string{}}
	for _, dom := range cen.Domains {
		lost := failuredomain.BreaksQuorum(dom.Held(), cen.ControlPlanes)
		fd.Domains = append(fd.Domains, storage.DomainControlPlanes{Domain: dom.Name, ControlPlanes: dom.Addresses, QuorumLost: lost})
		if lost {
			fd.AtRisk = append(fd.AtRisk, dom.Name)
			fd.Warnings = append(fd.Warnings, cen.Words(dom))
		}
	}
	return fd
}

// Pending is a plan pending, summed up as the status keeps it.
func Pending(p *generator.Plan) *storage.PlanSummary {
	s := &storage.PlanSummary{Result: p.Result, Steps: len(p.Steps), Reason: p.Reason}
	if p.Result == generator.PlanRefused || p.Result == generator.PlanHeld {
		s.Error = p.Message
	}
	if len(p.Steps) > 0 {
		next := p.Steps[0]
		s.NextOp, s.NextChanges, s.NextChangeCount = next.Op, StoredChanges(next.Changes), len(next.Changes)
		if w := next.Wait; w != nil {
			s.NextWait, s.NextUntil = w.Reason, w.Until.UTC()
		}
	}
	return s
}

// Placements is the status of each counted placement: its observed
// group is the group of the last change of this tick that added a machine
// for it, else the one the memory keeps while the placement still has a
// group of that name.
func Placements(observed map[string]string, counts []generator.PlacementNodes, changes []generator.Change) []storage.PlacementStatus {
	if len(counts) == 0 {
		return nil
	}
	out := make([]storage.PlacementStatus, len(counts))
	for i, c := range counts {
		ps := storage.PlacementStatus{Placement: c.Placement, Groups: Groups(c.Groups)}
		for j := len(changes) - 1; j >= 0; j-- {
			if ch := changes[j]; ch.Placement == c.Placement && ch.Group != "" {
				ps.ObservedGroup = ch.Group
				break
			}
		}
		if g := observed[c.Placement]; ps.ObservedGroup == "" && g != "" && slices.ContainsFunc(c.Groups, func(n generator.GroupNodes) bool {
			return n.Group == g
		}) {
			ps.ObservedGroup = g
		}
		out[i] = ps
	}
	return out
}

// Inventory is the figures the status keeps of the machines sabakan
// returned, by state, and of cluster c (nil: none) among them: its
// workers by role, and the machines it does not use.
func Inventory(ms []*machine.Machine, c *cluster.Cluster) *storage.InventoryFigures {
	f := &storage.InventoryFigures{Machines: map[string]int{}}
	for _, m := range ms {
		f.Machines[string(m.Status.State)]++
	}
	if c == nil {
		return f
	}
	inCluster := make(map[string]bool, len(c.Nodes))
	f.Workers = map[string]int{}
	for _, n := range c.Nodes {
		inCluster[n.Address] = true
		if !n.ControlPlane {
			f.Workers[n.Labels[labels.Role]]++
		}
	}
	for _, m := range ms {
		if !inCluster[m.Address()] {
			f.Unused++
		}
	}
	return f
}
