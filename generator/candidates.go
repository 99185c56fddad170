package generator

import (
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// Who may be added, promoted or removed (SPEC 5, 6.2), and the best of
// them by the scores of SPEC 3.

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

// isCPCandidate: SPEC 5 for control planes.
func (s *state) isCPCandidate(x *machineInfo) bool {
	return x.unused() && x.state == machine.StateHealthy && !x.intolerableTaint && s.cpRoleMatches(x)
}

// isWorkerCandidate: SPEC 5 for the worker template t.
func isWorkerCandidate(x *machineInfo, t *template.NodeTemplate) bool {
	return x.unused() && x.state == machine.StateHealthy && (t.Role == "" || t.Role == x.role)
}

func (s *state) anyCPCandidate() bool {
	for _, x := range s.machines {
		if s.isCPCandidate(x) {
			return true
		}
	}
	return false
}

func (s *state) anyWorkerCandidate() bool {
	for _, x := range s.machines {
		if x.unused() && x.state == machine.StateHealthy && s.workerTemplate(x) != nil {
			return true
		}
	}
	return false
}

func (s *state) cpPicker() *picker {
	return newPicker(s.machines, len(s.cpsInRack), s.isCPCandidate, s.cpRackCount)
}

// workerPickers builds one picker per worker template, in one pass over
// the machines.
func (s *state) workerPickers() []*picker {
	ps := make([]*picker, len(s.tmpl.Workers))
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		ps[i] = newPicker(s.machines, len(s.cpsInRack),
			func(x *machineInfo) bool { return isWorkerCandidate(x, t) },
			func(x *machineInfo) int { return s.workerRackCount(x, t) })
	}
	return ps
}

// chooseWorkerTemplate picks the worker template for the next worker (SPEC
// 4): the lowest workers/weight among templates with a candidate, the first
// listed on ties.
func (s *state) chooseWorkerTemplate(ps []*picker) (*template.NodeTemplate, *picker) {
	var best *template.NodeTemplate
	var bestP *picker
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		if x, _ := ps[i].peek(); x == nil {
			continue
		}
		// a/wa < b/wb, without dividing.
		if best == nil || float64(s.workersOf(t))*best.Weight < float64(s.workersOf(best))*t.Weight {
			best, bestP = t, ps[i]
		}
	}
	return best, bestP
}

// promotable reports whether a member is a worker that may become a
// control plane: HEALTHY, untainted, of the control plane's role, not
// rebooting.
func (s *state) promotable(mb *member) bool {
	x := mb.machine
	return !mb.controlPlane && !mb.rebooting && x != nil && x.state == machine.StateHealthy && !x.intolerableTaint && s.cpRoleMatches(x)
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
// plane: HEALTHY, untainted, of the control plane's role, not rebooting,
// with the highest control-plane selection score.
func (s *state) bestPromotableWorker() (*member, Score) {
	var best *member
	var bestScore Score
	s.live(func(mb *member) {
		if !s.promotable(mb) {
			return
		}
		x := mb.machine
		sc := selectionScore(x, s.cpsInRack[x.rackSlot], s.groupName(true, nil))
		if best == nil || betterSelection(x, sc.Total, best.machine, bestScore.Total) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}

// bestSpareWorker returns the best promotable worker whose Node carries the
// spare node taint (SPEC 13), nil when there is none.
func (s *state) bestSpareWorker() (*member, Score) {
	var best *member
	var bestScore Score
	if s.tmpl.SpareNodeTaintKey == "" || len(s.input.NodeTaints) == 0 {
		return nil, bestScore
	}
	s.live(func(mb *member) {
		if !s.promotable(mb) || !mb.machine.spare {
			return
		}
		x := mb.machine
		sc := selectionScore(x, s.cpsInRack[x.rackSlot], s.groupName(true, nil))
		if best == nil || betterSelection(x, sc.Total, best.machine, bestScore.Total) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}

// promoteSpare promotes the best spare worker, if any, and records it with
// why; it reports whether it did.
func (s *state) promoteSpare(why string) bool {
	w, sc := s.bestSpareWorker()
	if w == nil {
		return false
	}
	s.setControlPlane(w, true)
	s.record(ActionPromoteWorker, w, &sc, why+": spare node, highest "+sc.String())
	return true
}

// removalScoreOf is the removal score of a member (its machine exists).
func (s *state) removalScoreOf(mb *member) Score {
	x := mb.machine
	if mb.controlPlane {
		return removalScore(x, s.cpsInRack[x.rackSlot], s.groupName(true, nil))
	}
	t := s.workerTemplate(x)
	if t == nil {
		return removalScore(x, s.roleWorkersInRack[x.roleSlot][x.rackSlot], "workers of role "+x.role)
	}
	return removalScore(x, s.workerRackCount(x, t), s.groupName(false, t))
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
		if best == nil || worseForRemoval(mb.machine, sc.Total, best.machine, bestScore.Total) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}
