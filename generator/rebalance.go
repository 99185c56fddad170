package generator

import (
	"fmt"

	"github.com/ckegen/ckegen/machine"
)

// Rule 9: rebalance control planes (SPEC 12.5), Krake's rescheduling with
// stickiness. It runs only when every rule above had nothing to do, and
// moves at most one control plane: the one that deserves its place least
// (W) gives it to the best unused candidate (C) when C's group comes
// earlier than W's, or when C, in the same group, scores more than W by
// more than the stickiness.
//
// Each move raises, lexicographically, the number of control planes in
// each group in order, then the sum over racks of the rack points of
// their control planes plus the control planes' lifetime and metric
// points, by more than the stickiness: on an unchanged inventory the moves
// end.
func (s *state) rebalanceControlPlanes() (bool, error) {
	stickiness := s.input.Policy.Stickiness()
	// A single control plane is never moved: etcd would lose its only
	// member's data, as rule 5 never replaces it either.
	if stickiness <= 0 || s.cpCount < 2 {
		return false, nil
	}
	pi := s.cpPlacement()

	// W: among the HEALTHY control planes that are not rebooting, the one
	// in the latest group (after every group when the placement does not
	// admit it), then with the lowest stay score: its selection score
	// with rack counts that exclude itself.
	var w *member
	var wScore Score
	wRank := 0
	s.live(func(mb *member) {
		x := mb.machine
		if !mb.controlPlane || mb.rebooting || x == nil || x.state != machine.StateHealthy {
			return
		}
		r := pi.rank(s, x)
		if w != nil && r < wRank {
			return
		}
		sc := s.scored(selectionScore(x, s.cpsInRack[x.rackSlot]-1, s.groupName(true, nil)), pi, x)
		if w == nil || r > wRank || worseForRemoval(x, sc.Value(), w.machine, wScore.Value()) {
			w, wScore, wRank = mb, sc, r
		}
	})
	if w == nil {
		return false, nil
	}

	// C: the candidate a pick would take with W gone from its rack.
	wx := w.machine
	s.cpsInRack[wx.rackSlot]--
	p := s.cpPool()
	c, rackCount := p.peek()
	s.cpsInRack[wx.rackSlot]++
	if c == nil {
		return false, nil
	}
	cRank := pi.rank(s, c)
	cScore := s.scored(selectionScore(c, rackCount, s.groupName(true, nil)), pi, c)
	var because string
	switch gain := cScore.Value() - wScore.Value(); {
	case cRank < wRank && wRank >= max(pi.numGroups(), 1):
		because = "the control plane placement does not admit it"
	case cRank < wRank:
		because = fmt.Sprintf("group %s comes before its group %s", pi.groupName(cRank), pi.groupName(wRank))
	case cRank == wRank && gain > stickiness:
		because = "gain " + string(appendRounded(nil, gain)) + " > stickiness " + string(appendRounded(nil, stickiness))
	default:
		return false, nil
	}

	why := fmt.Sprintf("rebalance: lowest stay %s; %s (serial %s) would score %s: %s",
		wScore.String(), c.address, c.serial, appendRounded(nil, cScore.Value()), because)
	switch {
	case s.workerTemplate(wx) == nil:
		s.remove(w)
		s.record(ActionRebalanceRemoveCP, w, &wScore, fmt.Sprintf("%s; role %q matches no worker template", why, wx.role))
	case s.limits.workersAtMax(s.workerCount):
		s.remove(w)
		s.record(ActionRebalanceRemoveCP, w, &wScore, fmt.Sprintf("%s; workers at maximum-workers (%d)", why, s.limits.maximumWorkers))
	default:
		s.setControlPlane(w, false)
		s.record(ActionRebalanceDemoteCP, w, &wScore, why)
	}
	// The rack counts are now those C was scored with.
	s.recordPick(ActionRebalanceAddCP, s.add(c, true), &cScore, p.pi, p.group(), "rebalance: replaces "+w.address()+": ")
	return true, nil
}
