package generator

import (
	"fmt"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
)

// Generate (docs/design.md 6.1), Regenerate (6.3), the rules of the Update ladder
// (6.2) and fill.

// generate picks the first cluster (docs/design.md 6.1).
func (s *state) generate() error {
	if s.limits.rate {
		s.expect(len(s.machines))
	} else {
		s.expect(s.limits.controlPlaneCount + s.limits.minimumWorkers)
	}
	var cps cpPools
	for s.cpCount < s.limits.controlPlaneCount {
		s.quorumPass(func() *machineInfo { x, _ := cps.get(s).peek(); return x })
		cp := cps.get(s)
		x, rackCount := cp.peek()
		if x == nil {
			return fmt.Errorf("%w: need %d control planes, found %d candidates (%s)",
				ErrNotEnoughMachines, s.limits.controlPlaneCount, s.cpCount, s.cpCandidateText())
		}
		cp.take()
		s.addControlPlane(ActionGenerate, x, rackCount, cp, "control plane: ")
	}
	s.endPick()
	ws := s.workerPools()
	if s.limits.rate {
		for s.addWorker(ws, ActionGenerate, rateWhy) {
		}
		s.warnSpread()
		return nil
	}
	for s.workerCount < s.limits.minimumWorkers {
		if !s.addWorker(ws, ActionGenerate, "") {
			return &WorkersShort{Short: s.limits.minimumWorkers - s.workerCount, err: fmt.Errorf("%w: need %d workers, found %d candidates (%s)",
				ErrNotEnoughMachines, s.limits.minimumWorkers, s.workerCount,
				s.workerCandidateText("HEALTHY machines matching a worker template, not used as control planes"))}
		}
	}
	s.warnSpread()
	return nil
}

// regenerate re-renders the membership (docs/design.md 6.3). Nodes whose rendering
// changes are reported.
func (s *state) regenerate() error {
	for _, mb := range s.members {
		if mb.rebooting {
			continue
		}
		if mb.machine == nil {
			return fmt.Errorf("%w: node %s is not in sabakan any more", ErrNothingToDo, mb.current.Address)
		}
		if s.templateOf(mb) == nil {
			return fmt.Errorf("%w: node %s matches no worker template", ErrNothingToDo, mb.current.Address)
		}
	}
	for _, mb := range s.members {
		if !nodeEqual(mb.current, s.render(mb)) {
			s.record(ActionRegenerate, mb, nil, "re-rendered from the new template")
		}
	}
	return nil
}

// TooManyNonExistentWayOut is what to do when rule 1 refuses with gone of
// cps control planes out of sabakan's answer, in the model in force (rate:
// minimum-workers-rate): the way back into the answer while the machines
// still run, and where the runbook is when they do not. In the count
// model rule 5 replaces a control plane that is back and RETIRING; the
// rate model has no rule 5, so a control plane is replaced only by the
// write that removes it once it leaves the answer, and enough of them are
// brought back that the others may leave (fewer than half).
func TooManyNonExistentWayOut(rate bool, gone, cps int) string {
	const runbook = "if they do not, etcd has lost those members and must be recovered with CKE's own tools first: " +
		"ckegen's runbook TOO_MANY_NONEXISTENT_CONTROL_PLANES (ckegen's docs/alerts.md) gives the steps"
	if !rate {
		return "if their machines still run, bring them back into sabakan's answer " +
			"(a RETIRED machine: set it UNINITIALIZED, then RETIRING) and ckegen replaces them one per tick; " + runbook
	}
	const why = "the rate model (minimum-workers-rate) replaces a control plane only once it leaves sabakan's answer, not while it is RETIRING; "
	back := gone - (cps-1)/2 // the fewest to bring back so that the others may leave
	if back >= gone {
		return fmt.Sprintf("if their machines still run, bring them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED), "+
			"and raise control-plane-count above 2 before retiring one: with %s none may leave at once, and ",
			words.Count(cps, "control plane", "control planes")) + why + runbook
	}
	others := "the others adds their replacements"
	if gone-back == 1 {
		others = "the other adds its replacement"
	}
	them, it := "it", "it adds its"
	if back > 1 {
		them, it = "them one at a time", "each adds its"
	}
	return fmt.Sprintf("if their machines still run, bring %d of them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED): "+
		"the write that removes %s; after that write, retire %s (RETIRING, then RETIRED): "+
		"the write that removes %s replacement, as ", back, others, them, it) + why + runbook
}

// Rule 1: remove nodes whose machines are gone (docs/design.md 6.2.1).
func (s *state) removeNonExistentNodes() (bool, error) {
	var gone []*member
	goneCPs := 0
	s.live(func(mb *member) {
		if mb.machine == nil && !mb.rebooting {
			gone = append(gone, mb)
			if mb.controlPlane {
				goneCPs++
			}
		}
	})
	if len(gone) == 0 {
		return false, nil
	}
	if goneCPs > 0 && 2*goneCPs >= s.cpCount {
		return false, fmt.Errorf("%w: %d of %d control planes are not in sabakan; removing them would break etcd's quorum: %s",
			ErrTooManyNonExistent, goneCPs, s.cpCount, TooManyNonExistentWayOut(s.limits.rate, goneCPs, s.cpCount))
	}
	for _, mb := range gone {
		action := ActionRemoveNonExistentWorker
		if mb.controlPlane {
			action = ActionRemoveNonExistentCP
		}
		s.remove(mb)
		s.record(action, mb, nil, "not among the machines sabakan returned")
	}
	return true, nil
}

// Rule 2: remove workers whose role no worker template takes (docs/design.md 6.2.2).
// Not while a worker template's role matches no machine at all: that
// template is most likely a misspelt role, and removing every worker of the
// role it replaced would be a large change made by mistake (the result
// warns about it instead).
func (s *state) removeUnmatchedRoleWorkers() (bool, error) {
	if !s.tmpl.WorkersHaveRoles() || s.unknownTemplateRole {
		return false, nil
	}
	isUnmatched := func(mb *member) bool {
		return !mb.controlPlane && !mb.rebooting && mb.machine != nil && s.workerTemplate(mb.machine) == nil
	}
	found := false
	s.live(func(mb *member) { found = found || isUnmatched(mb) })
	if !found {
		return false, nil
	}
	// Control planes first: when the cluster is short of them, the workers
	// about to leave may be the only machines of the control plane's role,
	// and once removed, this tick's fill could not bring them back.
	if err := s.fillControlPlanes(); err != nil {
		return false, err
	}
	var unmatched []*member
	s.live(func(mb *member) {
		if isUnmatched(mb) {
			unmatched = append(unmatched, mb)
		}
	})
	for _, mb := range unmatched {
		sc := s.removalScoreOf(mb)
		s.remove(mb)
		s.record(ActionRemoveUnmatchedWorker, mb, &sc, fmt.Sprintf("role %q matches no worker template", mb.machine.role))
	}
	return true, nil
}

// Rule 3: fewer control planes than control-plane-count; fill adds them
// (docs/design.md 6.2.3).
func (s *state) increaseControlPlanes() (bool, error) {
	return s.cpCount < s.limits.controlPlaneCount, nil
}

// Rule 4: more control planes than control-plane-count: demote (or remove)
// the one with the lowest removal score (docs/design.md 6.2.4).
func (s *state) decreaseControlPlanes() (bool, error) {
	if s.cpCount <= s.limits.controlPlaneCount {
		return false, nil
	}
	mb, sc := s.lowestRemoval(func(mb *member) bool { return mb.controlPlane })
	if mb == nil {
		return false, nil // every control plane is rebooting
	}
	switch {
	case s.workerTemplate(mb.machine) == nil:
		s.remove(mb)
		s.record(ActionRemoveExcessiveCP, mb, &sc, fmt.Sprintf("%d control planes, want %d; role %q matches no worker template: lowest %s",
			s.cpCount+1, s.limits.controlPlaneCount, mb.machine.role, sc.String()))
	case s.limits.workersAtMax(s.workerCount):
		s.remove(mb)
		s.record(ActionRemoveExcessiveCP, mb, &sc, fmt.Sprintf("%d control planes, want %d; workers at maximum-workers (%d): lowest %s",
			s.cpCount+1, s.limits.controlPlaneCount, s.limits.maximumWorkers, sc.String()))
	default:
		s.setControlPlane(mb, false)
		s.record(ActionDemoteControlPlane, mb, &sc, fmt.Sprintf("%d control planes, want %d: lowest %s",
			s.cpCount+1, s.limits.controlPlaneCount, sc.String()))
	}
	return true, nil
}

// isBadCP: a control plane that is neither HEALTHY, UPDATING nor
// UNINITIALIZED, or carries an intolerable Kubernetes taint.
func isBadCP(x *machineInfo) bool {
	return !x.state.Sound() || x.intolerableTaint
}

func badCPText(x *machineInfo) string {
	if x.intolerableTaint {
		return "has an intolerable Kubernetes taint"
	}
	return "is " + string(x.state)
}

// Rule 5: replace the worst bad control plane (docs/design.md 6.2.5). The rule
// applies only when something can replace it in this tick, so that a bad
// control plane with nothing to replace it does not stop the rules below.
// The replacement is chosen after the bad control plane was demoted or
// removed: the rack counts of its score no longer include the bad one.
func (s *state) replaceControlPlane() (bool, error) {
	if s.limits.rate || s.cpCount < 2 {
		return false, nil
	}
	bad, sc := s.lowestRemoval(func(mb *member) bool { return mb.controlPlane && isBadCP(mb.machine) })
	if bad == nil {
		return false, nil
	}
	demotable := s.workerTemplate(bad.machine) != nil
	// spread: quorum (docs/design.md 20): the replacement keeps every
	// domain within the limit when one can, counted with the bad one gone.
	defer s.endPick()
	if s.spreadQuorum() {
		s.without(bad, func() { s.quorumPass(func() *machineInfo { return s.replacementFor(demotable) }) })
		s.setLeaving(bad)
	}
	// Whether a candidate or a promotable worker exists does not depend on
	// rack counts, so it can be known before anything changes; which one
	// is best is decided after.
	hasCandidate := s.anyCPCandidate()
	why := fmt.Sprintf("control plane %s: lowest %s", badCPText(bad.machine), sc.String())

	// A spare worker replaces it first (docs/design.md 13), whatever the worker
	// limits: the bad one, demoted, takes its place among the workers (or
	// leaves, and the worker rules below fill the gap).
	if spare, _, _ := s.bestSpareWorker(); spare != nil {
		s.takeOutBadCP(bad, &sc, why, demotable)
		s.promoteSpare("replaces a bad control plane")
		return true, nil
	}

	if demotable && s.limits.workersAtMax(s.workerCount) {
		return s.replaceAtMaxWorkers(bad, &sc, why, hasCandidate), nil
	}

	// Demote (or remove) the bad one; a candidate, or else a promoted
	// worker, takes its place.
	workersAfter := s.workerCount
	if demotable {
		workersAfter++
	}
	if !hasCandidate && (workersAfter <= s.limits.minimumWorkers || !s.anyPromotableWorker()) {
		return false, nil
	}
	s.takeOutBadCP(bad, &sc, why, demotable)
	if hasCandidate {
		s.addBestControlPlane("replaces a bad control plane")
	} else {
		s.promoteWorker("replaces a bad control plane; no unused candidate")
	}
	return true, nil
}

// replaceAtMaxWorkers is rule 5 with the workers at maximum-workers and a
// bad control plane that can be demoted: a swap, the bad one taking its
// place among the workers and the best worker becoming a control plane
// (the worker count does not change); else, with a candidate, the bad one
// removed and the candidate added. false when neither can be done.
func (s *state) replaceAtMaxWorkers(bad *member, sc *Score, why string, hasCandidate bool) bool {
	if s.anyPromotableWorker() {
		s.setControlPlane(bad, false)
		s.record(ActionDemoteControlPlane, bad, sc, why)
		s.promoteWorker("replaces a bad control plane; workers at maximum-workers")
		return true
	}
	if !hasCandidate {
		return false
	}
	s.remove(bad)
	s.record(ActionRemoveBadCP, bad, sc, why+"; workers at maximum-workers and none can be promoted")
	s.addBestControlPlane("replaces a bad control plane")
	return true
}

// replacementFor is the machine rule 5 would make a control plane in
// place of a bad one (counted out already), in the rule's order: a spare
// worker; at maximum-workers, a promoted worker, else a candidate; else a
// candidate, else a promoted worker while workers stay above
// minimum-workers. nil when nothing can replace it.
func (s *state) replacementFor(demotable bool) *machineInfo {
	if w, _, _ := s.bestSpareWorker(); w != nil {
		return w.machine
	}
	if demotable && s.limits.workersAtMax(s.workerCount) {
		if w, _, _ := s.bestPromotableWorker(); w != nil {
			return w.machine
		}
		x, _ := s.cpPool().peek()
		return x
	}
	if x, _ := s.cpPool().peek(); x != nil {
		return x
	}
	workersAfter := s.workerCount
	if demotable {
		workersAfter++
	}
	if w, _, _ := s.bestPromotableWorker(); w != nil && workersAfter > s.limits.minimumWorkers {
		return w.machine
	}
	return nil
}

// takeOutBadCP demotes the bad control plane when a worker template takes
// its role, else removes it, and records why.
func (s *state) takeOutBadCP(bad *member, sc *Score, why string, demotable bool) {
	if demotable {
		s.setControlPlane(bad, false)
		s.record(ActionDemoteControlPlane, bad, sc, why)
		return
	}
	s.remove(bad)
	s.record(ActionRemoveBadCP, bad, sc, fmt.Sprintf("%s; role %q matches no worker template", why, bad.machine.role))
}

// rateWhy starts the reason of a worker added by the rate model.
const rateWhy = "every HEALTHY machine a worker template accepts is a worker; "

// Rule 6: fewer HEALTHY workers than minimum-workers: add workers while
// there is room and candidates (rule 6). In the rate model: every
// unused HEALTHY machine a worker template accepts, all in one step
// (docs/models.md).
func (s *state) increaseWorkers() (bool, error) {
	if s.limits.rate {
		if !s.anyWorkerCandidate() {
			return false, nil
		}
		ws := s.workerPools()
		for s.addWorker(ws, ActionAddWorker, rateWhy) {
		}
		return true, nil
	}
	if s.healthyWorkerCount >= s.limits.minimumWorkers || s.limits.workersAtMax(s.workerCount) {
		return false, nil
	}
	ws := s.workerPools()
	added := false
	for s.healthyWorkerCount < s.limits.minimumWorkers && !s.limits.workersAtMax(s.workerCount) {
		if !s.addWorker(ws, ActionAddWorker, fmt.Sprintf("%d HEALTHY workers, want %d; ", s.healthyWorkerCount, s.limits.minimumWorkers)) {
			break
		}
		added = true
	}
	return added, nil
}

// Rule 7: remove (or replace) the worst worker that stayed RETIRED longer
// than the retire wait (docs/design.md 6.2.7).
func (s *state) decreaseWorkers() (bool, error) {
	if s.limits.rate {
		return s.decreaseWorkersByRate()
	}
	wait := s.retireWait.Seconds()
	mb, sc := s.lowestRemoval(func(mb *member) bool {
		return !mb.controlPlane && mb.machine.state == machine.StateRetired && mb.machine.raw.Status.Duration > wait
	})
	if mb == nil {
		return false, nil
	}
	reason := fmt.Sprintf("RETIRED for %.0fs (> %s): lowest %s", mb.machine.raw.Status.Duration, s.retireWait, sc.String())
	if s.workerCount <= s.limits.minimumWorkers {
		if !s.anyWorkerCandidate() {
			return false, nil
		}
		reason += "; a new worker replaces it"
	}
	s.remove(mb)
	s.record(ActionRemoveRetiredWorker, mb, &sc, reason)
	return true, nil
}

// retiredPastWait reports whether mb is a worker that stayed RETIRED
// longer than the retire wait (strictly).
func (s *state) retiredPastWait(mb *member) bool {
	return !mb.controlPlane && !mb.rebooting && mb.machine != nil && mb.machine.state == machine.StateRetired &&
		mb.machine.raw.Status.Duration > s.retireWait.Seconds()
}

// Rule 7 in the rate model (docs/models.md): the first worker, in the cluster's
// order, that stayed RETIRED past the retire wait leaves when the workers
// left are still at least minimum-workers-rate percent of the machines;
// otherwise it stays, with a warning.
func (s *state) decreaseWorkersByRate() (bool, error) {
	var mb *member
	for _, m := range s.members {
		if !m.removed && s.retiredPastWait(m) {
			mb = m
			break
		}
	}
	if mb == nil {
		return false, nil
	}
	machines := len(s.machines)
	rate := constraints.Rate(s.workerCount, machines)
	figure := fmt.Sprintf("(%d workers - 1) / %d machines = %.1f%%", s.workerCount, machines, rate)
	if rate < float64(s.limits.minimumWorkersRate) {
		s.warnings = append(s.warnings, fmt.Sprintf("RETIRED worker %s (serial %s) stays: %s < minimum-workers-rate %d%%",
			mb.machine.address, mb.machine.serial, figure, s.limits.minimumWorkersRate))
		return false, nil
	}
	sc := s.removalScoreOf(mb)
	s.remove(mb)
	s.record(ActionRemoveRetiredWorker, mb, &sc, fmt.Sprintf("RETIRED for %.0fs (> %s), the first in the cluster's order; %s >= minimum-workers-rate %d%%",
		mb.machine.raw.Status.Duration, s.retireWait, figure, s.limits.minimumWorkersRate))
	return true, nil
}

// Rule 8: state taints that differ from the machine's state (docs/design.md 6.2.8).
func (s *state) taintNodes() (bool, error) {
	changed := false
	s.live(func(mb *member) {
		if mb.current == nil || s.templateOf(mb) == nil {
			return // new, or written back as it was
		}
		want := taints.ForState(mb.machine.state, mb.rebooting)
		var wantList []cluster.Taint
		if want != nil {
			wantList = []cluster.Taint{*want}
		}
		if taints.StateTaintsEqual(mb.current.Taints, wantList) {
			return
		}
		reason := fmt.Sprintf("machine is %s: state taint removed", mb.machine.state)
		if mb.rebooting {
			reason = "node is rebooting: state taint removed"
		}
		if want != nil {
			reason = fmt.Sprintf("machine is %s: taint %s=%s:%s", mb.machine.state, want.Key, want.Value, want.Effect)
		}
		s.record(ActionChangeTaint, mb, nil, reason)
		changed = true
	})
	return changed, nil
}

// fill adds control planes up to control-plane-count (promoting workers when
// no machine is left and workers exceed minimum-workers), then workers up to
// minimum-workers. It fails when the constraints cannot be met.
func (s *state) fill() error {
	if err := s.fillControlPlanes(); err != nil {
		return err
	}
	if err := s.fillWorkers(); err != nil {
		return err
	}
	s.warnSpread()
	return nil
}

// fillControlPlanes is fill's first half: control planes up to
// control-plane-count.
func (s *state) fillControlPlanes() error {
	if s.cpCount < s.limits.controlPlaneCount {
		var cps cpPools
		defer s.endPick()
		for s.cpCount < s.limits.controlPlaneCount {
			s.quorumPass(func() *machineInfo { return s.fillChoice(&cps) })
			if s.promoteSpare(fmt.Sprintf("%d control planes, want %d", s.cpCount, s.limits.controlPlaneCount)) {
				continue
			}
			p := cps.get(s)
			if x, rackCount := p.peek(); x != nil {
				p.take()
				s.addControlPlane(ActionAddControlPlane, x, rackCount, p, fmt.Sprintf("%d control planes, want %d: ", s.cpCount, s.limits.controlPlaneCount))
				continue
			}
			w, workerScore, group := s.bestPromotableWorker()
			if w == nil || s.workerCount <= s.limits.minimumWorkers {
				return fmt.Errorf("%w: need %d control planes, have %d, and no candidate (%s) nor a worker to promote (workers %d, minimum-workers %d)",
					ErrNotEnoughMachines, s.limits.controlPlaneCount, s.cpCount, s.cpCandidateText(), s.workerCount, s.limits.minimumWorkers)
			}
			s.setControlPlane(w, true)
			s.recordPick(ActionPromoteWorker, w, &workerScore, s.cpPlacement(), group, fmt.Sprintf("%d control planes, want %d; no unused candidate: ",
				s.cpCount-1, s.limits.controlPlaneCount))
		}
	}
	return nil
}

// fillChoice is the machine fill would make the next control plane: a
// spare worker, an unused candidate, or a promoted worker while workers
// exceed minimum-workers; nil when there is none.
func (s *state) fillChoice(cps *cpPools) *machineInfo {
	if w, _, _ := s.bestSpareWorker(); w != nil {
		return w.machine
	}
	if x, _ := cps.get(s).peek(); x != nil {
		return x
	}
	if w, _, _ := s.bestPromotableWorker(); w != nil && s.workerCount > s.limits.minimumWorkers {
		return w.machine
	}
	return nil
}

// fillWorkers is fill's second half: workers up to minimum-workers, or in
// the rate model every HEALTHY machine a worker template accepts.
func (s *state) fillWorkers() error {
	if s.limits.rate {
		if s.anyWorkerCandidate() {
			ws := s.workerPools()
			for s.addWorker(ws, ActionAddWorker, rateWhy) {
			}
		}
		return nil
	}
	if s.workerCount < s.limits.minimumWorkers {
		ws := s.workerPools()
		for s.workerCount < s.limits.minimumWorkers {
			if !s.addWorker(ws, ActionAddWorker, fmt.Sprintf("%d workers, want %d; ", s.workerCount, s.limits.minimumWorkers)) {
				return &WorkersShort{Short: s.limits.minimumWorkers - s.workerCount, err: fmt.Errorf("%w: need %d workers, have %d, and no candidate (%s)",
					ErrNotEnoughMachines, s.limits.minimumWorkers, s.workerCount,
					s.workerCandidateText("HEALTHY unused machine matching a worker template"))}
			}
		}
	}
	return nil
}

// addWorker adds the next worker, docs/design.md 4's template by weight and then that
// template's best candidate, and records it with why before the score's
// explanation. It returns false when no template has a candidate.
func (s *state) addWorker(ws []*pool, action, why string) bool {
	t, p := s.chooseWorkerTemplate(ws)
	if t == nil {
		return false
	}
	x, rackCount := p.peek()
	s.pickNote = p.skewNote(s, t, x)
	p.take()
	sc := s.scored(selectionScore(x, rackCount, s.groupName(false, t)), p.pi, x)
	mb := s.add(x, false)
	s.recordPickFor(action, mb, &sc, p.pi, p.group(), why, t)
	return true
}

// addBestControlPlane adds the best unused control-plane candidate, which
// must exist, scored on the counters as they are now.
func (s *state) addBestControlPlane(why string) {
	p := s.cpPool()
	x, rackCount := p.peek()
	s.addControlPlane(ActionAddControlPlane, x, rackCount, p, why+": ")
}

// promoteWorker promotes the best promotable worker, which must exist,
// scored on the counters as they are now.
func (s *state) promoteWorker(why string) {
	w, workerScore, group := s.bestPromotableWorker()
	s.setControlPlane(w, true)
	s.recordPick(ActionPromoteWorker, w, &workerScore, s.cpPlacement(), group, why+": ")
}

// addControlPlane adds x, the last peek of p, as a control plane.
func (s *state) addControlPlane(action string, x *machineInfo, rackCount int, p *pool, why string) {
	sc := s.scored(selectionScore(x, rackCount, s.groupName(true, nil)), p.pi, x)
	s.recordPick(action, s.add(x, true), &sc, p.pi, p.group(), why)
}
