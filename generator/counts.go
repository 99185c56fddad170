package generator

import (
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// Membership changes and the counters of the next cluster they keep up to
// date: rack counts for scores (docs/design.md 3), workers per role for weights
// (docs/design.md 4).

// count adds (delta = +1) or subtracts (delta = -1) a member to the
// counters.
func (s *state) count(mb *member, delta int) {
	x := mb.machine
	if mb.controlPlane {
		s.cpCount += delta
		if x != nil {
			s.cpsInRack[x.rackSlot] += delta
			if sp := s.spread; sp != nil && !sp.key.IsRack() {
				sp.cps[x.domainSlot] += delta
			}
		}
		return
	}
	s.workerCount += delta
	if x == nil {
		return
	}
	if x.state == machine.StateHealthy {
		s.healthyWorkerCount += delta
	}
	s.workersInRack[x.rackSlot] += delta
	s.roleWorkersInRack[x.roleSlot][x.rackSlot] += delta
	s.workersOfRole[x.roleSlot] += delta
}

// add makes x a member of the next cluster.
func (s *state) add(x *machineInfo, cp bool) *member {
	mb := &member{machine: x, controlPlane: cp}
	x.member = mb
	s.members = append(s.members, mb)
	s.count(mb, +1)
	return mb
}

// remove takes a member out of the next cluster; its machine may not come
// back in the same decision.
func (s *state) remove(mb *member) {
	s.count(mb, -1)
	mb.removed = true
	if mb.machine != nil {
		mb.machine.member = nil
		mb.machine.excluded = true
	}
}

// setControlPlane promotes (cp) or demotes a member.
func (s *state) setControlPlane(mb *member, cp bool) {
	s.count(mb, -1)
	mb.controlPlane = cp
	s.count(mb, +1)
}

// cpRackCount is the number of control planes in x's rack.
func (s *state) cpRackCount(x *machineInfo) int {
	return s.cpsInRack[x.rackSlot]
}

// workerRackCount is the number of workers in x's rack that count against
// template t: those of t's role, or all workers when t has no role.
func (s *state) workerRackCount(x *machineInfo, t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workersInRack[x.rackSlot]
	}
	// A candidate of t has t's role.
	return s.roleWorkersInRack[x.roleSlot][x.rackSlot]
}

// workersOf is the number of workers counting toward t's weight.
func (s *state) workersOf(t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workerCount
	}
	slot, ok := s.roleSlots[t.Role]
	if !ok {
		return 0
	}
	return s.workersOfRole[slot]
}
