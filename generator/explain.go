package generator

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/ckegen/ckegen/template"
)

// The explanation of a decision: each change with the score that made it.

// record appends a change; sc (nil when no score was involved) is copied.
func (s *state) record(action string, mb *member, sc *Score, reason string) {
	var kept *Score
	if sc != nil {
		kept = s.keepScore(sc)
	}
	s.changes = append(s.changes, Change{
		Action:  action,
		Address: mb.address(),
		Serial:  mb.serial(),
		Score:   kept,
		Reason:  reason,
	})
}

// recordPick records a change that adds a machine to a template (or
// promotes one): why, the group of the template's placement it was picked
// from (docs/design.md 12.4; "" without groups), and the score that chose it. The
// reason reads "<why>group NAME, highest <score>".
func (s *state) recordPick(action string, mb *member, sc *Score, pi *placement, group, why string) {
	s.recordPickFor(action, mb, sc, pi, group, why, nil)
}

// recordPickFor is recordPick with, when t is not nil, the start of a
// worker pick's reason for template t (appendWorkerWhy) after why. The
// reason is built in a buffer the state keeps: a first cluster records
// one for each of thousands of picks, and allocates only the reasons.
func (s *state) recordPickFor(action string, mb *member, sc *Score, pi *placement, group, why string, t *template.NodeTemplate) {
	b := append(s.reasonBuf[:0], why...)
	if t != nil {
		b = s.appendWorkerWhy(b, t)
	}
	if group != "" {
		b = append(b, "group "...)
		b = append(b, group...)
		b = append(b, ", "...)
	}
	b = append(b, "highest "...)
	b = sc.appendTo(b)
	if s.pickNote != "" {
		b = append(b, "; "...)
		b = append(b, s.pickNote...)
		s.pickNote = ""
	}
	s.reasonBuf = b
	s.record(action, mb, sc, string(b))
	if group != "" {
		c := &s.changes[len(s.changes)-1]
		c.Placement, c.Group = pi.keyIfGrouped(), group
	}
}

// keepScore copies a score into the state's slab: a decision that explains
// ten thousand picks allocates a few chunks instead of a score each.
func (s *state) keepScore(sc *Score) *Score {
	if len(s.scores) == cap(s.scores) {
		s.scores = make([]Score, 0, min(max(2*cap(s.scores), 8), 1024))
	}
	s.scores = append(s.scores, *sc)
	return &s.scores[len(s.scores)-1]
}

// expect sizes the change list and the score slab for n more changes.
func (s *state) expect(n int) {
	s.changes = slices.Grow(s.changes, n)
	if cap(s.scores)-len(s.scores) < n {
		s.scores = make([]Score, 0, n)
	}
}

// groupName names the nodes a score counts in a rack: control planes, or
// the workers of template t. The names are built once per state, not once
// per score.
func (s *state) groupName(cp bool, t *template.NodeTemplate) string {
	if cp {
		return "control planes"
	}
	for i := range s.tmpl.Workers {
		if &s.tmpl.Workers[i] == t {
			return s.workerGroups[i]
		}
	}
	return workerGroupName(t)
}

func workerGroupName(t *template.NodeTemplate) string {
	if t == nil || t.Role == "" {
		return "workers"
	}
	return "workers of role " + t.Role
}

// appendWorkerWhy appends the start of a worker pick's reason, before
// its group and score.
func (s *state) appendWorkerWhy(b []byte, t *template.NodeTemplate) []byte {
	b = append(b, "worker for template nodes["...)
	b = strconv.AppendInt(b, int64(t.Index), 10)
	b = append(b, "] ("...)
	if t.Role != "" {
		b = append(b, "role "...)
		b = append(b, t.Role...)
	} else {
		b = append(b, "any role"...)
	}
	if !s.limits.rate {
		b = append(b, ", weight "...)
		b = strconv.AppendFloat(b, t.Weight, 'g', -1, 64)
	}
	b = append(b, ", "...)
	b = strconv.AppendInt(b, int64(s.workersOf(t)-1), 10)
	return append(b, " workers): "...)
}

func (s *state) cpCandidateText() string {
	text := "HEALTHY machines without intolerable taints"
	if r := s.tmpl.ControlPlane.Role; r != "" {
		text = fmt.Sprintf("HEALTHY machines of role %q without intolerable taints", r)
	}
	if pi := s.cpPlacement(); pi != nil {
		text += " that the placement admits" + s.refusals(pi, s.isCPCandidate)
	}
	return text
}

// workerCandidateText describes the worker candidates for an error: text,
// then what the worker templates' placements refused.
func (s *state) workerCandidateText(text string) string {
	for i := range s.tmpl.Workers {
		t := &s.tmpl.Workers[i]
		if pi := s.workerPlacement(t); pi != nil {
			text += s.refusals(pi, func(x *machineInfo) bool { return isWorkerCandidate(x, t) })
		}
	}
	return text
}

// refusals says how many machines accepted by base the placement refuses,
// and why it refuses the first of them (docs/design.md 12: an operator who sees
// "not enough machines" must see which constraint is in the way).
func (s *state) refusals(pi *placement, base func(x *machineInfo) bool) string {
	n := 0
	var first *machineInfo
	for _, x := range s.machines {
		if base(x) && !pi.admits(s, x) {
			if first == nil {
				first = x
			}
			n++
		}
	}
	if n == 0 {
		return ""
	}
	pi.node.Machine = first.raw
	pi.node.RackText, pi.node.ZoneText = s.rackTexts(first)
	why := pi.pl.Rejection(&pi.node, s.input.Metrics.Lookup(first.serial))
	return fmt.Sprintf("; placement %q refuses %d, such as %s: %s", pi.pl.Key(), n, first.serial, why)
}
