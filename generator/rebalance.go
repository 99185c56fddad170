package generator

import (
	"fmt"

	"github.com/ckegen/ckegen/machine"
)

// Rule 9: rebalance control planes (docs/design.md 12.5), Krake's rescheduling with
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
	w, wScore, wRank := s.leastDeservingCP(pi)
	if w == nil {
		return false, nil
	}
	c, cRank, rackCount, note := s.cpReplacing(w)
	if c == nil {
		return false, nil
	}
	cScore := s.scored(selectionScore(c, rackCount, s.groupName(true, nil)), pi, c)
	because := rebalanceReason(pi, cRank, wRank, cScore.Value()-wScore.Value(), stickiness)
	if because == "" {
		return false, nil
	}

	wx := w.machine
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
	group := ""
	if pi.numGroups() > 0 {
		group = pi.groupName(cRank)
	}
	s.pickNote = note
	s.recordPick(ActionRebalanceAddCP, s.add(c, true), &cScore, pi, group, "rebalance: replaces "+w.address()+": ")
	return true, nil
}

// leastDeservingCP is W: among the HEALTHY control planes that are not
// rebooting, the one in the latest group (after every group when the
// placement does not admit it), then with the lowest stay score: its
// selection score with rack counts that exclude itself. nil when there is
// none.
func (s *state) leastDeservingCP(pi *placement) (w *member, wScore Score, wRank int) {
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
	return w, wScore, wRank
}

// cpReplacing is C: the candidate a pick would take with W gone from
// its rack, its rank and the control planes in its rack then; with spread:
// quorum (docs/design.md 20), only one whose domain stays within the
// limit, or none: a move is never worth breaking it. note says which
// candidate the spread passed over.
func (s *state) cpReplacing(w *member) (c *machineInfo, cRank, rackCount int, note string) {
	s.without(w, func() {
		if !s.spreadQuorum() {
			c, cRank = s.bestCPCandidate()
		} else {
			plain, _ := s.bestCPCandidate()
			s.spread.filter = true
			c, cRank = s.bestCPCandidate()
			if plain != nil && c != nil && plain != c {
				note = s.passedOver(plain)
			}
			s.endPick()
		}
		if c != nil {
			rackCount = s.cpsInRack[c.rackSlot]
		}
	})
	return c, cRank, rackCount, note
}

// rebalanceReason says why C, of rank cRank, takes the place of W, of rank
// wRank, with a score gain over it; "" when it does not.
func rebalanceReason(pi *placement, cRank, wRank int, gain, stickiness float64) string {
	switch {
	case cRank < wRank && wRank >= max(pi.numGroups(), 1):
		return "the control plane placement does not admit it"
	case cRank < wRank:
		return fmt.Sprintf("group %s comes before its group %s", pi.groupName(cRank), pi.groupName(wRank))
	case cRank == wRank && gain > stickiness:
		return "gain " + string(appendRounded(nil, gain)) + " > stickiness " + string(appendRounded(nil, stickiness))
	}
	return ""
}

// bestCPCandidate is the unused machine a control plane pick would take
// now (docs/design.md 12.4: the first group with a candidate, the best of it), and
// its rank; nil when there is none. It is the cpPool's first pick, found
// in one pass: rule 9 needs one candidate per tick, not a picker.
func (s *state) bestCPCandidate() (*machineInfo, int) {
	pi := s.cpPlacement()
	var best *machineInfo
	bestScore, bestRank := 0.0, 0
	for _, x := range s.machines {
		if !s.isCPCandidate(x) || !pi.admits(s, x) || !s.quorumOK(x) {
			continue
		}
		r := pi.rank(s, x)
		if best != nil && r > bestRank {
			continue
		}
		sc := float64(rackPoints(s.cpsInRack[x.rackSlot])+x.lifetimePoints) + pi.points(s, x)
		if best == nil || r < bestRank || betterSelection(x, sc, best, bestScore) {
			best, bestScore, bestRank = x, sc, r
		}
	}
	return best, bestRank
}
