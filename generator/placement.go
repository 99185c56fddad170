package generator

import (
	"strconv"

	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

// The placement policy (docs/design.md 12) in a decision: which machines a
// template's placement admits, in which of its ordered groups, and their
// metric points. Each machine is evaluated at most once per placement and
// decision, and only when a rule asks: a tick that changes nothing
// evaluates nothing.

// placement is one template's placement, evaluated on this decision's
// machines.
type placement struct {
	pl *policy.Placement
	// node is the label source constraints read, reused for every machine
	// so that an evaluation allocates nothing.
	node  labels.Node
	evals []evaluation // by machineInfo.idx, allocated on first use
}

// evaluation is what a placement says of one machine.
type evaluation struct {
	done   bool
	admit  bool
	groups policy.GroupSet
	points float64
}

// newPlacements compiles the policy's placements for the template: index 0
// is the control plane's, 1+i worker template i's; nil where the policy
// says nothing. It returns nil without a policy.
func newPlacements(p *policy.Policy, t *template.Template) []*placement {
	if p == nil {
		return nil
	}
	out := make([]*placement, 1+len(t.Workers))
	add := func(i int, nt *template.NodeTemplate, cp bool) {
		if pl := p.Placement(policy.Key(nt)); pl != nil {
			out[i] = &placement{pl: pl, node: labels.Node{
				Template:     labels.Template{Labels: nt.Node.Labels, Annotations: nt.Node.Annotations},
				ControlPlane: cp,
			}}
		}
	}
	add(0, &t.ControlPlane, true)
	for i := range t.Workers {
		add(1+i, &t.Workers[i], false)
	}
	return out
}

// eval returns the placement's evaluation of x, computing it on first use.
func (pi *placement) eval(s *state, x *machineInfo) *evaluation {
	if pi.evals == nil {
		pi.evals = make([]evaluation, len(s.machines))
	}
	e := &pi.evals[x.idx]
	if !e.done {
		row := s.input.Metrics.LookupAt(x.idx, x.serial)
		pi.node.Machine = x.raw
		pi.node.RackText, pi.node.ZoneText = s.rackTexts(x)
		e.groups, e.admit = pi.pl.Admit(&pi.node, row)
		e.points = pi.pl.Points(row)
		e.done = true
	}
	return e
}

// rackTexts returns x's rack as text and its zone, formatted once per
// rack and decision.
func (s *state) rackTexts(x *machineInfo) (string, string) {
	if s.rackText == nil {
		s.rackText = make([][2]string, len(s.cpsInRack))
	}
	t := &s.rackText[x.rackSlot]
	if t[0] == "" {
		t[0] = strconv.Itoa(x.rack)
		t[1] = "rack" + t[0]
	}
	return t[0], t[1]
}

// admits reports whether x may be added to the placement's template; a
// nil placement admits every machine.
func (pi *placement) admits(s *state, x *machineInfo) bool {
	return pi == nil || pi.eval(s, x).admit
}

// points is x's metric score in the placement, 0 for a nil placement.
func (pi *placement) points(s *state, x *machineInfo) float64 {
	if pi == nil {
		return 0
	}
	return pi.eval(s, x).points
}

// rank orders machines by the placement's groups (docs/design.md 12.4-12.5): the
// index of the first group of x, 0 when the placement has no groups, and
// after every group when the placement does not admit x.
func (pi *placement) rank(s *state, x *machineInfo) int {
	if pi == nil {
		return 0
	}
	e := pi.eval(s, x)
	n := pi.numGroups()
	switch {
	case !e.admit:
		return max(n, 1)
	case n == 0:
		return 0
	}
	return e.groups.First()
}

// numGroups is the number of the placement's groups, 0 for nil.
func (pi *placement) numGroups() int {
	if pi == nil {
		return 0
	}
	return pi.pl.NumGroups()
}

// groupName names group g of the placement; "" without groups.
func (pi *placement) groupName(g int) string {
	if pi == nil {
		return ""
	}
	return pi.pl.GroupName(g)
}

// key is the placement's key when it has groups, for Change.Placement.
func (pi *placement) keyIfGrouped() string {
	if pi == nil || pi.pl.NumGroups() == 0 {
		return ""
	}
	return pi.pl.Key()
}

// cpPlacement is the control plane's placement, nil when none.
func (s *state) cpPlacement() *placement {
	if s.placements == nil {
		return nil
	}
	return s.placements[0]
}

// workerPlacement is worker template t's placement, nil when none.
func (s *state) workerPlacement(t *template.NodeTemplate) *placement {
	if s.placements == nil || t == nil {
		return nil
	}
	for i := range s.tmpl.Workers {
		if &s.tmpl.Workers[i] == t {
			return s.placements[1+i]
		}
	}
	return nil
}

// placementOf is the placement of the template a member is rendered from.
func (s *state) placementOf(mb *member) *placement {
	if mb.controlPlane {
		return s.cpPlacement()
	}
	if mb.machine == nil {
		return nil
	}
	return s.workerPlacement(s.workerTemplate(mb.machine))
}

// scored adds the placement's metric points and their terms to sc.
func (s *state) scored(sc Score, pi *placement, x *machineInfo) Score {
	if pi == nil || x == nil {
		return sc
	}
	e := pi.eval(s, x)
	sc.MetricPoints = e.points
	sc.Terms = pi.pl.Terms(s.input.Metrics.Lookup(x.serial))
	return sc
}

// pool hands out the candidates of one template as docs/design.md 12.4 orders them:
// each pick from the first of the placement's groups that has a
// candidate, the best of that group by selection score. Without groups it
// is one picker. With a worker template's spread maxSkew (docs/design.md
// 20), each group prefers the domains that stay within the skew.
type pool struct {
	pi     *placement
	groups []groupPicker // in the placement's order; one without groups
	last   int           // the group of the last peek
	// skew: the template's maxSkew, nil without it.
	skew *skew
}

// newPool builds the pool of the candidates accepted by base (docs/design.md 5) and
// the placement pi (nil: all of them).
func (s *state) newPool(pi *placement, base func(x *machineInfo) bool, rackCount func(x *machineInfo) int) *pool {
	return s.newSkewedPool(pi, nil, base, rackCount)
}

// newSkewedPool is newPool for worker template t, whose placement may have
// a spread maxSkew (t nil: a control plane's pool, which has none).
func (s *state) newSkewedPool(pi *placement, t *template.NodeTemplate, base func(x *machineInfo) bool, rackCount func(x *machineInfo) int) *pool {
	racks := len(s.cpsInRack)
	if pi == nil {
		return &pool{groups: []groupPicker{newPicker(s.machines, racks, base, rackCount, nil)}}
	}
	bonus := func(x *machineInfo) float64 { return pi.eval(s, x).points }
	p := &pool{pi: pi}
	if t != nil && s.spread != nil && pi.pl.MaxSkew() > 0 {
		p.skew = s.newSkew(t, pi, base)
	}
	group := func(eligible func(x *machineInfo) bool) groupPicker {
		if p.skew != nil {
			return s.newSkewPicker(p.skew, eligible, rackCount, bonus)
		}
		return newPicker(s.machines, racks, eligible, rackCount, bonus)
	}
	n := pi.pl.NumGroups()
	if n == 0 {
		p.groups = []groupPicker{group(func(x *machineInfo) bool { return base(x) && pi.eval(s, x).admit })}
		return p
	}
	p.groups = make([]groupPicker, n)
	for g := range n {
		p.groups[g] = group(func(x *machineInfo) bool {
			if !base(x) {
				return false
			}
			e := pi.eval(s, x)
			return e.admit && e.groups.Has(g)
		})
	}
	return p
}

// peek returns the best candidate of the first group that has one, and
// its rack count; nil when no group has a candidate.
func (p *pool) peek() (*machineInfo, int) {
	for g, pk := range p.groups {
		if x, rc := pk.peek(); x != nil {
			p.last = g
			return x, rc
		}
	}
	return nil, 0
}

// take removes the candidate of the last peek.
func (p *pool) take() { p.groups[p.last].take() }

// group names the group of the last peek, "" without groups.
func (p *pool) group() string {
	if p.pi == nil {
		return ""
	}
	return p.pi.groupName(p.last)
}

// skewNote explains the last peek, x, of worker template t's pool when
// its maxSkew changed it; "" otherwise.
func (p *pool) skewNote(s *state, t *template.NodeTemplate, x *machineInfo) string {
	if p.skew == nil {
		return ""
	}
	return p.groups[p.last].(*skewPicker).note(s, t, x)
}
