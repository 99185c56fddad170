package generator

import (
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// Who may be added, promoted or removed (docs/design.md 5, 6.2), and the best of
// them by the scores of docs/design.md 3.

// workerTemplate returns the template a worker made of x uses, or nil.
func (s *state) workerTemplate(x *machineInfo) *template.NodeTemplate {
	return s.tmpl.WorkerFor(x.role)
}

// cpRoleMatches reports whether x may be a control plane by role.
func (s *state) cpRoleMatches(x *machineInfo) bool {
	return s.tmpl.ControlPlane.Role == "" || s.tmpl.ControlPlane.Role == x.role
}

// unused reports whether x is not in the cluster and may be added.
func (x *machineInfo) unused() bool {
	return x.member == nil && !x.excluded
}

// isCPCandidate: docs/design.md 5 for control planes, without the placement.
func (s *state) isCPCandidate(x *machineInfo) bool {
	return x.unused() && x.state == machine.StateHealthy && !x.intolerableTaint && s.cpRoleMatches(x)
}

// isWorkerCandidate: docs/design.md 5 for the worker template t, without the
// placement.
func isWorkerCandidate(x *machineInfo, t *template.NodeTemplate) bool {
	return x.unused() && x.state == machine.StateHealthy && (t.Role == "" || t.Role == x.role)
}

// anyCPCandidate reports whether an unused machine may be added as a
// control plane, placement included.
func (s *state) anyCPCandidate() bool {
	pi := s.cpPlacement()
	for _, x := range s.machines {
		if s.isCPCandidate(x) && pi.admits(s, x) && s.quorumOK(x) {
			return true
		}
	}
	return false
}

// anyWorkerCandidate reports whether an unused machine may be added as a
// worker of its template, placement included.
func (s *state) anyWorkerCandidate() bool {
	for _, x := range s.machines {
		if !x.unused() || x.state != machine.StateHealthy {
			continue
		}
		if t := s.workerTemplate(x); t != nil && s.workerPlacement(t).admits(s, x) {
			return true
		}
	}
	return false
}

// cpPool is the control-plane candidates of one pick; under spread
// quorum's filter, those whose domain stays within the limit.
func (s *state) cpPool() *pool {
	var c cpPools
	return c.get(s)
}

// workerPools builds one pool per worker template.
func (s *state) workerPools() []*pool {
	ps := make([]*pool, len(s.tmpl.Workers))
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		ps[i] = s.newSkewedPool(s.workerPlacement(t), t,
			func(x *machineInfo) bool { return isWorkerCandidate(x, t) },
			func(x *machineInfo) int { return s.workerRackCount(x, t) })
	}
	return ps
}

// chooseWorkerTemplate picks the worker template for the next worker (docs/design.md
// 4): the lowest workers/weight among templates with a candidate, the first
// listed on ties.
func (s *state) chooseWorkerTemplate(ps []*pool) (*template.NodeTemplate, *pool) {
	var best *template.NodeTemplate
	var bestP *pool
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		if x, _ := ps[i].peek(); x == nil {
			continue
		}
		// a/wa < b/wb, without dividing; the rate model has no weights.
		if best == nil || s.limits.rate && s.workersOf(t) < s.workersOf(best) ||
			!s.limits.rate && float64(s.workersOf(t))*best.Weight < float64(s.workersOf(best))*t.Weight {
			best, bestP = t, ps[i]
		}
	}
	return best, bestP
}

// promotable reports whether a member is a worker that may become a
// control plane: HEALTHY, untainted, of the control plane's role, not
// rebooting, admitted by the control plane's placement.
func (s *state) promotable(mb *member) bool {
	x := mb.machine
	return !mb.controlPlane && !mb.rebooting && x != nil && x.state == machine.StateHealthy && !x.intolerableTaint && s.cpRoleMatches(x) &&
		s.cpPlacement().admits(s, x) && s.quorumOK(x)
}

func (s *state) anyPromotableWorker() bool {
	for _, mb := range s.members {
		if !mb.removed && s.promotable(mb) {
			return true
		}
	}
	return false
}

// bestPromotableWorker returns the worker that would make the best control
// plane: promotable, from the first group of the control plane's placement
// that has one, with the highest control-plane selection score; and the
// name of that group.
func (s *state) bestPromotableWorker() (*member, Score, string) {
	return s.bestPromotable(func(*member) bool { return true })
}

// bestSpareWorker returns the best promotable worker whose Node carries the
// spare node taint (docs/design.md 13), nil when there is none.
func (s *state) bestSpareWorker() (*member, Score, string) {
	if s.tmpl.SpareNodeTaintKey == "" || len(s.input.NodeTaints) == 0 {
		return nil, Score{}, ""
	}
	return s.bestPromotable(func(mb *member) bool { return mb.machine.spare })
}

// bestPromotable is the best promotable worker accepted by ok, as
// bestPromotableWorker chooses.
func (s *state) bestPromotable(ok func(*member) bool) (*member, Score, string) {
	pi := s.cpPlacement()
	var best *member
	var bestScore Score
	bestRank := 0
	s.live(func(mb *member) {
		if !s.promotable(mb) || !ok(mb) {
			return
		}
		x := mb.machine
		r := pi.rank(s, x)
		if best != nil && r > bestRank {
			return
		}
		sc := s.scored(selectionScore(x, s.cpsInRack[x.rackSlot], s.groupName(true, nil)), pi, x)
		if best == nil || r < bestRank || betterSelection(x, sc.Value(), best.machine, bestScore.Value()) {
			best, bestScore, bestRank = mb, sc, r
		}
	})
	if best == nil || pi == nil || pi.pl.NumGroups() == 0 {
		return best, bestScore, ""
	}
	return best, bestScore, pi.groupName(bestRank)
}

// promoteSpare promotes the best spare worker, if any, and records it with
// why; it reports whether it did.
func (s *state) promoteSpare(why string) bool {
	w, sc, group := s.bestSpareWorker()
	if w == nil {
		return false
	}
	s.setControlPlane(w, true)
	s.recordPick(ActionPromoteWorker, w, &sc, s.cpPlacement(), group, why+": spare node, ")
	return true
}

// removalScoreOf is the removal score of a member (its machine exists),
// with the metric points of its template's placement.
func (s *state) removalScoreOf(mb *member) Score {
	x := mb.machine
	if mb.controlPlane {
		return s.scored(removalScore(x, s.cpsInRack[x.rackSlot], s.groupName(true, nil)), s.cpPlacement(), x)
	}
	t := s.workerTemplate(x)
	if t == nil {
		return removalScore(x, s.roleWorkersInRack[x.roleSlot][x.rackSlot], "workers of role "+x.role)
	}
	return s.scored(removalScore(x, s.workerRackCount(x, t), s.groupName(false, t)), s.workerPlacement(t), x)
}

// lowestRemoval returns the member among those accepted by ok with the lowest
// removal score, and that score.
func (s *state) lowestRemoval(ok func(mb *member) bool) (*member, Score) {
	var best *member
	var bestScore Score
	s.live(func(mb *member) {
		if mb.machine == nil || mb.rebooting || !ok(mb) {
			return
		}
		sc := s.removalScoreOf(mb)
		if best == nil || worseForRemoval(mb.machine, sc.Value(), best.machine, bestScore.Value()) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}

// WorkerCandidates reports, for each machine of in.Machines (by index),
// whether a worker could be added on it to in.Current now (docs/design.md
// 5): HEALTHY, not in the cluster, not rebooting, of a worker template's
// role and admitted by that template's placement. What-if views (the
// resilience report) read it to know where rule 6 would still find a
// worker once some machines are lost.
func WorkerCandidates(in Input) ([]bool, error) { return candidates(in, false) }

// Candidates reports, for each machine of in.Machines (by index),
// whether the generator could add a node on it to in.Current now: a
// worker (WorkerCandidates), or a control plane (docs/design.md 5, with
// the control planes' placement and etcd's quorum by failure domain).
// The rack map draws these as candidates.
func Candidates(in Input) ([]bool, error) { return candidates(in, true) }

func candidates(in Input, cps bool) ([]bool, error) {
	s, err := newState(&in, in.Current)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(s.machines))
	var cp *placement
	if cps {
		cp = s.cpPlacement()
	}
	for i, x := range s.machines {
		if !x.unused() || x.state != machine.StateHealthy {
			continue
		}
		if t := s.workerTemplate(x); t != nil && s.workerPlacement(t).admits(s, x) {
			out[i] = true
		} else if cps {
			out[i] = s.isCPCandidate(x) && cp.admits(s, x) && s.quorumOK(x)
		}
	}
	return out, nil
}
