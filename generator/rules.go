package generator

import (
	"fmt"
	"strconv"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// generate picks the first cluster (SPEC 6.1).
func (s *state) generate() error {
	s.expect(s.c.cpCount + s.c.minWorkers)
	cp := s.cpPicker()
	for s.cps < s.c.cpCount {
		x, rc := cp.peek()
		if x == nil {
			return fmt.Errorf("%w: need %d control planes, found %d candidates (%s)",
				ErrNotEnoughMachines, s.c.cpCount, s.cps, s.cpCandidateText())
		}
		cp.take()
		sc := selectionScore(x, rc, s.groupName(true, nil))
		s.record(ActionGenerate, s.add(x, true), &sc, "control plane: highest "+sc.String())
	}
	ws := s.workerPickers()
	for s.workers < s.c.minWorkers {
		if !s.addWorker(ws, ActionGenerate, "") {
			return fmt.Errorf("%w: need %d workers, found %d candidates (HEALTHY machines matching a worker template, not used as control planes)",
				ErrNotEnoughMachines, s.c.minWorkers, s.workers)
		}
	}
	return nil
}

func (s *state) cpCandidateText() string {
	if r := s.tmpl.ControlPlane.Role; r != "" {
		return fmt.Sprintf("HEALTHY machines of role %q without intolerable taints", r)
	}
	return "HEALTHY machines without intolerable taints"
}

// workerReason explains a worker pick; the template's part is built once
// per template.
func (s *state) workerReason(t *template.NodeTemplate, sc *Score) string {
	b := make([]byte, 0, 192)
	b = append(b, "worker for template nodes["...)
	b = strconv.AppendInt(b, int64(t.Index), 10)
	b = append(b, "] ("...)
	if t.Role != "" {
		b = append(b, "role "...)
		b = append(b, t.Role...)
	} else {
		b = append(b, "any role"...)
	}
	b = append(b, ", weight "...)
	b = strconv.AppendFloat(b, t.Weight, 'g', -1, 64)
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(s.workersOf(t)-1), 10)
	b = append(b, " workers): highest "...)
	return string(sc.appendTo(b))
}

// regenerate re-renders the membership (SPEC 6.3). Nodes whose rendering
// changes are reported.
func (s *state) regenerate() error {
	for _, mb := range s.members {
		if mb.rebooting {
			continue
		}
		if mb.m == nil {
			return fmt.Errorf("%w: node %s is not in sabakan any more", ErrNothingToDo, mb.cur.Address)
		}
		if s.templateOf(mb) == nil {
			return fmt.Errorf("%w: node %s matches no worker template", ErrNothingToDo, mb.cur.Address)
		}
	}
	for _, mb := range s.members {
		if !nodeEqual(mb.cur, s.render(mb)) {
			s.record(ActionRegenerate, mb, nil, "re-rendered from the new template")
		}
	}
	return nil
}

// Rule 1: remove nodes whose machines are gone (SPEC 6.2.1).
func (s *state) removeNonExistentNodes() (bool, error) {
	var gone []*member
	goneCPs := 0
	s.live(func(mb *member) {
		if mb.m == nil && !mb.rebooting {
			gone = append(gone, mb)
			if mb.cp {
				goneCPs++
			}
		}
	})
	if len(gone) == 0 {
		return false, nil
	}
	if goneCPs > 0 && 2*goneCPs >= s.cps {
		return false, fmt.Errorf("%w: %d of %d control planes are not in sabakan; removing them would break etcd's quorum: fix the cluster by hand",
			ErrTooManyNonExistent, goneCPs, s.cps)
	}
	for _, mb := range gone {
		action := ActionRemoveNonExistentWorker
		if mb.cp {
			action = ActionRemoveNonExistentCP
		}
		s.remove(mb)
		s.record(action, mb, nil, "not among the machines sabakan returned")
	}
	return true, nil
}

// Rule 2: remove workers whose role no worker template takes (SPEC 6.2.2).
// Not while a worker template's role matches no machine at all: that
// template is most likely a misspelt role, and removing every worker of the
// role it replaced would be a large change made by mistake (the result
// warns about it instead).
func (s *state) removeUnmatchedRoleWorkers() (bool, error) {
	if !s.tmpl.WorkersHaveRoles() || s.unknownTemplateRole {
		return false, nil
	}
	var unmatched []*member
	s.live(func(mb *member) {
		if !mb.cp && !mb.rebooting && mb.m != nil && s.workerTemplate(mb.m) == nil {
			unmatched = append(unmatched, mb)
		}
	})
	if len(unmatched) == 0 {
		return false, nil
	}
	for _, mb := range unmatched {
		sc := s.removalScoreOf(mb)
		s.remove(mb)
		s.record(ActionRemoveUnmatchedWorker, mb, &sc, fmt.Sprintf("role %q matches no worker template", mb.m.role))
	}
	return true, nil
}

// Rule 3: fewer control planes than control-plane-count; fill adds them
// (SPEC 6.2.3).
func (s *state) increaseControlPlanes() (bool, error) {
	if s.cps >= s.c.cpCount {
		return false, nil
	}
	return true, nil
}

// Rule 4: more control planes than control-plane-count: demote (or remove)
// the one with the lowest removal score (SPEC 6.2.4).
func (s *state) decreaseControlPlanes() (bool, error) {
	if s.cps <= s.c.cpCount {
		return false, nil
	}
	mb, sc := s.lowestRemoval(func(mb *member) bool { return mb.cp })
	if mb == nil {
		return false, nil // every control plane is rebooting
	}
	switch {
	case s.workerTemplate(mb.m) == nil:
		s.remove(mb)
		s.record(ActionRemoveExcessiveCP, mb, &sc, fmt.Sprintf("%d control planes, want %d; role %q matches no worker template: lowest %s",
			s.cps+1, s.c.cpCount, mb.m.role, sc.String()))
	case s.c.workersAtMax(s.workers):
		s.remove(mb)
		s.record(ActionRemoveExcessiveCP, mb, &sc, fmt.Sprintf("%d control planes, want %d; workers at maximum-workers (%d): lowest %s",
			s.cps+1, s.c.cpCount, s.c.maxWorkers, sc.String()))
	default:
		s.setControlPlane(mb, false)
		s.record(ActionDemoteControlPlane, mb, &sc, fmt.Sprintf("%d control planes, want %d: lowest %s",
			s.cps+1, s.c.cpCount, sc.String()))
	}
	return true, nil
}

// isBadCP: a control plane that is neither HEALTHY, UPDATING nor
// UNINITIALIZED, or carries an intolerable Kubernetes taint.
func isBadCP(x *mach) bool {
	switch x.state {
	case machine.StateHealthy, machine.StateUpdating, machine.StateUninitialized:
		return x.tainted
	}
	return true
}

func badCPText(x *mach) string {
	if x.tainted {
		return "has an intolerable Kubernetes taint"
	}
	return "is " + string(x.state)
}

// Rule 5: replace the worst bad control plane (SPEC 6.2.5). The rule
// applies only when something can replace it in this tick, so that a bad
// control plane with nothing to replace it does not stop the rules below.
// The replacement is chosen after the bad control plane was demoted or
// removed: the rack counts of its score no longer include the bad one.
func (s *state) replaceControlPlane() (bool, error) {
	if s.cps < 2 {
		return false, nil
	}
	bad, sc := s.lowestRemoval(func(mb *member) bool { return mb.cp && isBadCP(mb.m) })
	if bad == nil {
		return false, nil
	}
	demotable := s.workerTemplate(bad.m) != nil
	// Whether a candidate or a promotable worker exists does not depend on
	// rack counts, so it can be known before anything changes; which one
	// is best is decided after.
	hasCandidate := s.anyCPCandidate()
	canPromote, _ := s.bestPromotableWorker()
	why := fmt.Sprintf("control plane %s: lowest %s", badCPText(bad.m), sc.String())

	if demotable && s.c.workersAtMax(s.workers) {
		// Swap: the bad control plane takes its place among the workers
		// and the best worker becomes a control plane; the worker count
		// does not change.
		if canPromote != nil {
			s.setControlPlane(bad, false)
			s.record(ActionDemoteControlPlane, bad, &sc, why)
			s.promoteWorker("replaces a bad control plane; workers at maximum-workers")
			return true, nil
		}
		if !hasCandidate {
			return false, nil
		}
		s.remove(bad)
		s.record(ActionRemoveBadCP, bad, &sc, why+"; workers at maximum-workers and none can be promoted")
		s.addBestControlPlane("replaces a bad control plane")
		return true, nil
	}

	// Demote (or remove) the bad one; a candidate, or else a promoted
	// worker, takes its place.
	workersAfter := s.workers
	if demotable {
		workersAfter++
	}
	if !hasCandidate && (canPromote == nil || workersAfter <= s.c.minWorkers) {
		return false, nil
	}
	if demotable {
		s.setControlPlane(bad, false)
		s.record(ActionDemoteControlPlane, bad, &sc, why)
	} else {
		s.remove(bad)
		s.record(ActionRemoveBadCP, bad, &sc, fmt.Sprintf("%s; role %q matches no worker template", why, bad.m.role))
	}
	if hasCandidate {
		s.addBestControlPlane("replaces a bad control plane")
	} else {
		s.promoteWorker("replaces a bad control plane; no unused candidate")
	}
	return true, nil
}

// Rule 6: fewer HEALTHY workers than minimum-workers: add workers while
// there is room and candidates (SPEC 6.2.6).
func (s *state) increaseWorkers() (bool, error) {
	if s.healthyWorkers >= s.c.minWorkers || s.c.workersAtMax(s.workers) {
		return false, nil
	}
	ws := s.workerPickers()
	added := false
	for s.healthyWorkers < s.c.minWorkers && !s.c.workersAtMax(s.workers) {
		if !s.addWorker(ws, ActionAddWorker, fmt.Sprintf("%d HEALTHY workers, want %d; ", s.healthyWorkers, s.c.minWorkers)) {
			break
		}
		added = true
	}
	if !added {
		return false, nil
	}
	return true, nil
}

// Rule 7: remove (or replace) the worst worker that stayed RETIRED longer
// than the retire wait (SPEC 6.2.7).
func (s *state) decreaseWorkers() (bool, error) {
	wait := s.retireWait.Seconds()
	mb, sc := s.lowestRemoval(func(mb *member) bool {
		return !mb.cp && mb.m.state == machine.StateRetired && mb.m.m.Status.Duration > wait
	})
	if mb == nil {
		return false, nil
	}
	reason := fmt.Sprintf("RETIRED for %.0fs (> %s): lowest %s", mb.m.m.Status.Duration, s.retireWait, sc.String())
	if s.workers <= s.c.minWorkers {
		if !s.anyWorkerCandidate() {
			return false, nil
		}
		reason += "; a new worker replaces it"
	}
	s.remove(mb)
	s.record(ActionRemoveRetiredWorker, mb, &sc, reason)
	return true, nil
}

// Rule 8: state taints that differ from the machine's state (SPEC 6.2.8).
func (s *state) taintNodes() (bool, error) {
	changed := false
	s.live(func(mb *member) {
		if mb.cur == nil || s.templateOf(mb) == nil {
			return // new, or written back as it was
		}
		want := taints.ForState(mb.m.state, mb.rebooting)
		var wantList []cluster.Taint
		if want != nil {
			wantList = []cluster.Taint{*want}
		}
		if taints.StateTaintsEqual(mb.cur.Taints, wantList) {
			return
		}
		reason := fmt.Sprintf("machine is %s: state taint removed", mb.m.state)
		if mb.rebooting {
			reason = "node is rebooting: state taint removed"
		}
		if want != nil {
			reason = fmt.Sprintf("machine is %s: taint %s=%s:%s", mb.m.state, want.Key, want.Value, want.Effect)
		}
		s.record(ActionChangeTaint, mb, nil, reason)
		changed = true
	})
	if !changed {
		return false, nil
	}
	return true, nil
}

// fill adds control planes up to control-plane-count (promoting workers when
// no machine is left and workers exceed minimum-workers), then workers up to
// minimum-workers. It fails when the constraints cannot be met.
func (s *state) fill() error {
	if s.cps < s.c.cpCount {
		p := s.cpPicker()
		for s.cps < s.c.cpCount {
			if x, rc := p.peek(); x != nil {
				p.take()
				s.addControlPlane(x, rc, fmt.Sprintf("%d control planes, want %d", s.cps, s.c.cpCount))
				continue
			}
			w, wsc := s.bestPromotableWorker()
			if w == nil || s.workers <= s.c.minWorkers {
				return fmt.Errorf("%w: need %d control planes, have %d, and no candidate (%s) nor a worker to promote (workers %d, minimum-workers %d)",
					ErrNotEnoughMachines, s.c.cpCount, s.cps, s.cpCandidateText(), s.workers, s.c.minWorkers)
			}
			s.setControlPlane(w, true)
			s.record(ActionPromoteWorker, w, &wsc, fmt.Sprintf("%d control planes, want %d; no unused candidate: highest %s",
				s.cps-1, s.c.cpCount, wsc.String()))
		}
	}
	if s.workers < s.c.minWorkers {
		ws := s.workerPickers()
		for s.workers < s.c.minWorkers {
			if !s.addWorker(ws, ActionAddWorker, fmt.Sprintf("%d workers, want %d; ", s.workers, s.c.minWorkers)) {
				return fmt.Errorf("%w: need %d workers, have %d, and no candidate (HEALTHY unused machine matching a worker template)",
					ErrNotEnoughMachines, s.c.minWorkers, s.workers)
			}
		}
	}
	return nil
}

// addWorker adds the next worker, SPEC 4's template by weight and then that
// template's best candidate, and records it with why before the score's
// explanation. It returns false when no template has a candidate.
func (s *state) addWorker(ws []*picker, action, why string) bool {
	t, p := s.chooseWorkerTemplate(ws)
	if t == nil {
		return false
	}
	x, rc := p.peek()
	p.take()
	sc := selectionScore(x, rc, s.groupName(false, t))
	mb := s.add(x, false)
	s.record(action, mb, &sc, why+s.workerReason(t, &sc))
	return true
}

// addBestControlPlane adds the best unused control-plane candidate, which
// must exist, scored on the counters as they are now.
func (s *state) addBestControlPlane(why string) {
	x, rc := s.cpPicker().peek()
	s.addControlPlane(x, rc, why)
}

// promoteWorker promotes the best promotable worker, which must exist,
// scored on the counters as they are now.
func (s *state) promoteWorker(why string) {
	w, wsc := s.bestPromotableWorker()
	s.setControlPlane(w, true)
	s.record(ActionPromoteWorker, w, &wsc, why+": highest "+wsc.String())
}

func (s *state) addControlPlane(x *mach, rc int, why string) {
	sc := selectionScore(x, rc, s.groupName(true, nil))
	s.record(ActionAddControlPlane, s.add(x, true), &sc, why+": highest "+sc.String())
}

func (s *state) cpPicker() *picker {
	return newPicker(s.machines, len(s.cpRack), s.isCPCandidate, s.cpRackCount)
}

// workerPickers builds one picker per worker template, in one pass over
// the machines.
func (s *state) workerPickers() []*picker {
	ps := make([]*picker, len(s.tmpl.Workers))
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		ps[i] = newPicker(s.machines, len(s.cpRack),
			func(x *mach) bool { return isWorkerCandidate(x, t) },
			func(x *mach) int { return s.workerRackCount(x, t) })
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

// bestPromotableWorker returns the worker that would make the best control
// plane: HEALTHY, untainted, of the control plane's role, not rebooting,
// with the highest control-plane selection score.
func (s *state) bestPromotableWorker() (*member, Score) {
	var best *member
	var bestScore Score
	s.live(func(mb *member) {
		x := mb.m
		if mb.cp || mb.rebooting || x == nil || x.state != machine.StateHealthy || x.tainted || !s.cpRoleMatches(x) {
			return
		}
		sc := selectionScore(x, s.cpRack[x.ri], s.groupName(true, nil))
		if best == nil || betterSelection(x, sc.Total, best.m, bestScore.Total) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}
