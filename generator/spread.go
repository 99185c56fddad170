package generator

import (
	"slices"
	"strconv"

	"github.com/ckegen/ckegen/failuredomain"
)

// Failure domains in a decision (docs/design.md 20): with a policy that
// spreads, every machine has a domain slot, and the control planes are
// counted by domain. The control plane's spread: quorum keeps each pick
// out of the domains that already hold as many control planes as etcd's
// quorum survives losing, whenever another candidate avoids them, and
// rule 10 moves one control plane per tick out of a domain that holds too
// many. Without a policy that spreads, nothing here runs.

// spreading is the failure domains of one decision.
type spreading struct {
	key failuredomain.Key
	// quorum: the control plane's placement has spread: quorum.
	quorum bool
	// names are the domains' names, by slot; for the rack, racks holds
	// each slot's rack and a name is made when asked (name), which a tick
	// with nothing to say never does.
	names []string
	racks []int
	// cps counts the control planes of the next cluster by domain slot;
	// for the rack it is the state's cpsInRack itself.
	cps []int
	// filter: control-plane picks take only machines whose domain stays
	// within the limit (quorumOK), set by quorumPass for one pick.
	filter bool
	// leaving is the control plane that the rule at work takes out in the
	// same step, not yet demoted or removed: the filter counts it out.
	leaving *member
	// warned: the decision's warnings already say which domains hold too
	// many (warnSpread runs at most once per decision).
	warned bool
}

// newSpreading gives every machine its domain slot, when the policy
// spreads; nil otherwise. It runs before the members are counted.
func (s *state) newSpreading(racks int) *spreading {
	pol := s.input.Policy
	if !pol.Spreads() {
		return nil
	}
	sp := &spreading{key: pol.FailureDomain()}
	if pi := s.cpPlacement(); pi != nil {
		sp.quorum = pi.pl.SpreadQuorum()
	}
	if sp.key.IsRack() {
		sp.racks = make([]int, racks)
		for _, x := range s.machines {
			x.domainSlot = x.rackSlot
			sp.racks[x.rackSlot] = x.rack
		}
		sp.cps = s.cpsInRack
		return sp
	}
	slots := map[string]int{}
	for _, x := range s.machines {
		name := sp.key.Of(x.raw)
		slot, ok := slots[name]
		if !ok {
			slot = len(sp.names)
			slots[name] = slot
			sp.names = append(sp.names, name)
		}
		x.domainSlot = slot
	}
	sp.cps = make([]int, len(sp.names))
	return sp
}

// name is the name of the domain of slot.
func (sp *spreading) name(slot int) string {
	if sp.racks != nil {
		return strconv.Itoa(sp.racks[slot])
	}
	return sp.names[slot]
}

// domains is the number of domains.
func (sp *spreading) domains() int { return len(sp.cps) }

// spreadQuorum reports whether the control plane spreads with quorum.
func (s *state) spreadQuorum() bool {
	return s.spread != nil && s.spread.quorum
}

// pickLimit is the most control planes a domain may hold once the
// cluster has control-plane-count of them.
func (s *state) pickLimit() int {
	return failuredomain.Limit(s.limits.controlPlaneCount)
}

// domainCPs is the number of control planes of x's domain, without the
// control plane that is leaving.
func (s *state) domainCPs(x *machineInfo) int {
	sp := s.spread
	n := sp.cps[x.domainSlot]
	if l := sp.leaving; l != nil && l.controlPlane && !l.removed && l.machine != nil && l.machine.domainSlot == x.domainSlot {
		n--
	}
	return n
}

// quorumOK reports whether x may become a control plane under the
// filter: its domain would stay within the limit. Always true without
// the filter, which is every decision without spread: quorum.
func (s *state) quorumOK(x *machineInfo) bool {
	sp := s.spread
	return sp == nil || !sp.filter || s.domainCPs(x) < s.pickLimit()
}

// quorumPass decides how the next control-plane pick keeps to spread:
// quorum. choose returns the machine the pick would take (nil: none),
// reading the candidates through quorumOK. With a machine that keeps
// within the limit the filter stays on for the pick; with none, the pick
// is made as without the rule. Either way, when the rule changed the pick,
// the note for its reason says so.
func (s *state) quorumPass(choose func() *machineInfo) {
	sp := s.spread
	if sp == nil || !sp.quorum {
		return
	}
	sp.filter = false
	plain := choose()
	sp.filter = true
	pick := choose()
	s.pickNote = ""
	switch {
	case plain == nil:
		sp.filter = false
	case pick == nil:
		sp.filter = false
		s.pickNote = "spread quorum: no candidate keeps every " + sp.key.Name() + " within " +
			strconv.Itoa(s.pickLimit()) + " of " + strconv.Itoa(s.limits.controlPlaneCount) +
			" control planes, so the pick is made as without it"
	case pick != plain:
		s.pickNote = s.passedOver(plain)
	}
}

// passedOver is the note of a control-plane pick that spread: quorum
// changed: the machine the pick would have taken, and what its domain
// would then hold.
func (s *state) passedOver(plain *machineInfo) string {
	sp := s.spread
	return "spread quorum passes over " + plain.address + " (serial " + plain.serial + "): " +
		failuredomain.HoldsText(sp.key, sp.name(plain.domainSlot), s.domainCPs(plain)+1, s.limits.controlPlaneCount) +
		" with it"
}

// endPick turns the filter off and forgets the leaving control plane.
func (s *state) endPick() {
	if sp := s.spread; sp != nil {
		sp.filter, sp.leaving = false, nil
	}
	s.pickNote = ""
}

// setLeaving names the control plane a rule takes out in this step.
func (s *state) setLeaving(mb *member) {
	if sp := s.spread; sp != nil {
		sp.leaving = mb
	}
}

// without runs f with mb counted out of the next cluster, as if it had
// left already, then counts it back.
func (s *state) without(mb *member, f func()) {
	s.count(mb, -1)
	f()
	s.count(mb, +1)
}

// overLimit is the slot of the domain most over the limit for the
// cluster's control planes (ties: the key's order), -1 when none is.
func (s *state) overLimit() int {
	sp := s.spread
	limit := failuredomain.Limit(s.cpCount)
	over := -1
	for slot, n := range sp.cps {
		if n <= limit {
			continue
		}
		if over < 0 || n > sp.cps[over] || n == sp.cps[over] && sp.key.Compare(sp.name(slot), sp.name(over)) < 0 {
			over = slot
		}
	}
	return over
}

// spreadMove finds rule 10's move out of the domain over: the control
// plane that leaves (W, its lowest removal score, not rebooting), whether
// it stays as a worker, and the machine that takes its place (C), as fill
// would take it with W counted out and the filter on; c is nil when no
// machine keeps every domain within the limit. note is the pick's spread
// term when the filter changed it. The filter is left on.
func (s *state) spreadMove(over int, pools *cpPools) (w *member, wScore Score, demote bool, c *machineInfo, note string) {
	w, wScore = s.lowestRemoval(func(mb *member) bool {
		return mb.controlPlane && mb.machine.domainSlot == over
	})
	if w == nil {
		return nil, Score{}, false, nil, ""
	}
	demote = s.workerTemplate(w.machine) != nil && !s.limits.workersAtMax(s.workerCount)
	workersAfter := s.workerCount
	if demote {
		workersAfter++
	}
	choose := func() *machineInfo {
		if spare, _, _ := s.bestSpareWorker(); spare != nil {
			return spare.machine
		}
		if x, _ := pools.get(s).peek(); x != nil {
			return x
		}
		if pw, _, _ := s.bestPromotableWorker(); pw != nil && workersAfter > s.limits.minimumWorkers {
			return pw.machine
		}
		return nil
	}
	s.without(w, func() {
		s.spread.filter = false
		plain := choose()
		s.spread.filter = true
		c = choose()
		if plain != nil && c != nil && plain != c {
			note = s.passedOver(plain)
		}
	})
	return w, wScore, demote, c, note
}

// Rule 10: a control plane leaves a domain that holds more control planes
// than etcd's quorum survives losing, for a machine of a domain within
// the limit, in one step (docs/design.md 20), as rule 9 moves one. Only
// with spread: quorum, when no rule above applied and the cluster has
// control-plane-count control planes. When no machine can take its place,
// nothing moves and a warning says why.
func (s *state) spreadControlPlanes() (bool, error) {
	if !s.spreadQuorum() || s.cpCount != s.limits.controlPlaneCount || s.cpCount < 1 {
		return false, nil
	}
	over := s.overLimit()
	if over < 0 {
		return false, nil
	}
	if s.cpCount < 3 {
		// Every domain with a control plane is over the limit, 0: no
		// move can help.
		s.warnSpread()
		return false, nil
	}
	defer s.endPick()
	var pools cpPools
	w, wScore, demote, c, note := s.spreadMove(over, &pools)
	if c == nil {
		s.spread.filter = false
		s.warnSpread()
		return false, nil
	}
	sp := s.spread
	why := "spread quorum: " + failuredomain.HoldsText(sp.key, sp.name(over), sp.cps[over], s.cpCount) +
		", more than etcd's quorum survives losing: lowest " + wScore.String()
	wx := w.machine
	switch {
	case demote:
		s.setControlPlane(w, false)
		s.record(ActionSpreadDemoteCP, w, &wScore, why)
	case s.workerTemplate(wx) == nil:
		s.remove(w)
		s.record(ActionSpreadRemoveCP, w, &wScore, why+"; role "+strconv.Quote(wx.role)+" matches no worker template")
	default:
		s.remove(w)
		s.record(ActionSpreadRemoveCP, w, &wScore, why+"; workers at maximum-workers ("+strconv.Itoa(s.limits.maximumWorkers)+")")
	}
	// The counters are now those C was found with; the filter is on.
	replaces := "spread quorum: replaces " + w.address() + ": "
	s.pickNote = note
	if cm := c.member; cm != nil {
		_, sc, group := s.bestPromotable(func(mb *member) bool { return mb == cm })
		s.setControlPlane(cm, true)
		if cm.machine.spare {
			replaces += "spare node, "
		}
		s.recordPick(ActionPromoteWorker, cm, &sc, s.cpPlacement(), group, replaces)
		return true, nil
	}
	p := pools.get(s)
	x, rackCount := p.peek()
	p.take()
	s.addControlPlane(ActionSpreadAddCP, x, rackCount, p, replaces)
	return true, nil
}

// warnSpread adds, once per decision, a warning for each domain that
// holds more control planes than etcd's quorum survives losing, saying
// why it stays so: too few control planes for any spread, a move that the
// next tick makes, or no machine outside the full domains to take the
// place.
func (s *state) warnSpread() {
	sp := s.spread
	if !s.spreadQuorum() || sp.warned || s.cpCount == 0 {
		return
	}
	limit := failuredomain.Limit(s.cpCount)
	var over []int
	for slot, n := range sp.cps {
		if n > limit {
			over = append(over, slot)
		}
	}
	if len(over) == 0 {
		return
	}
	sp.warned = true
	slices.SortFunc(over, func(a, b int) int { return sp.key.Compare(sp.name(a), sp.name(b)) })
	var full []string
	for slot, n := range sp.cps {
		if n >= limit {
			full = append(full, sp.name(slot))
		}
	}
	slices.SortFunc(full, sp.key.Compare)
	filter, leaving := sp.filter, sp.leaving
	defer func() { sp.filter, sp.leaving = filter, leaving }()
	for _, slot := range over {
		text := failuredomain.HoldsText(sp.key, sp.name(slot), sp.cps[slot], s.cpCount) + ": losing it breaks etcd's quorum; "
		switch {
		case s.cpCount < 3:
			text += "with fewer than 3 control planes, losing the " + sp.key.Name() +
				" of any of them does: spread quorum needs control-plane-count 3 or more"
		case s.cpCount != s.limits.controlPlaneCount:
			text += "spread quorum moves control planes once the cluster has control-plane-count of them"
		default:
			var pools cpPools
			sp.leaving = nil
			if _, _, _, c, _ := s.spreadMove(slot, &pools); c != nil {
				text += "spread quorum moves one control plane per tick"
			} else {
				text += "no control-plane candidate outside " + sp.key.DescribeAll(full) +
					", nor a worker to promote there, so spread quorum cannot move one (candidates: " + s.cpCandidateText() + ")"
			}
		}
		s.warnings = append(s.warnings, text)
	}
}

// cpPools are the control-plane candidates of a decision's picks: every
// candidate, and those whose domain stays within the limit (built when
// spread: quorum's filter first asks). A pick takes from one; the other
// drops the machine when it next looks, since it is no longer unused.
type cpPools struct {
	plain, quorum *pool
}

// get is the pool the next pick takes from.
func (c *cpPools) get(s *state) *pool {
	if sp := s.spread; sp != nil && sp.filter {
		if c.quorum == nil {
			c.quorum = s.newPool(s.cpPlacement(), func(x *machineInfo) bool { return s.isCPCandidate(x) && s.quorumOK(x) }, s.cpRackCount)
		}
		return c.quorum
	}
	if c.plain == nil {
		c.plain = s.newPool(s.cpPlacement(), s.isCPCandidate, s.cpRackCount)
	}
	return c.plain
}
