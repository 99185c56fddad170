package generator

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// mach is a machine with what the decision needs precomputed.
type mach struct {
	m      *machine.Machine
	addr   string
	serial string
	role   string
	rack   int
	state  machine.State
	retire time.Time
	days   int
	lp     int
	// tainted: the Kubernetes node carries a taint a control plane may
	// not have.
	tainted   bool
	rebooting bool
	// member is the machine's entry in the next cluster, nil if unused.
	member *member
	// removed: taken out of the cluster by this decision, so it may not be
	// added back by the same decision.
	removed bool
}

// member is a node of the next cluster.
type member struct {
	cur     *cluster.Node // the current node; nil for a new one
	m       *mach         // nil when the machine is gone from sabakan
	cp      bool
	removed bool
	// rebooting nodes are frozen: never removed, demoted or promoted, and
	// never tainted.
	rebooting bool
}

func (mb *member) address() string {
	if mb.m != nil {
		return mb.m.addr
	}
	return mb.cur.Address
}

func (mb *member) serial() string {
	if mb.m != nil {
		return mb.m.serial
	}
	return mb.cur.Annotations[labels.AnnotationSerial]
}

type state struct {
	in          *Input
	tmpl        *template.Template
	c           constraintsView
	machines    []*mach // serial order
	byAddr      map[string]*mach
	members     []*member // current nodes in order, then new ones
	retireWait  time.Duration
	tolerations []string

	cps, workers, healthyWorkers int
	cpRack                       map[int]int
	workerRackAll                map[int]int
	workerRackByRole             map[string]map[int]int
	workersByRole                map[string]int

	changes []Change
}

// constraintsView holds the three constraints the generator uses.
type constraintsView struct {
	cpCount, minWorkers, maxWorkers int
}

func (c constraintsView) workersAtMax(n int) bool {
	return c.maxWorkers > 0 && n >= c.maxWorkers
}

func newState(in *Input, current *cluster.Cluster) (*state, error) {
	if in.Template == nil {
		return nil, fmt.Errorf("no template")
	}
	if err := in.Constraints.Validate(); err != nil {
		return nil, err
	}
	s := &state{
		in:   in,
		tmpl: in.Template,
		c: constraintsView{
			cpCount:    in.Constraints.ControlPlaneCount,
			minWorkers: in.Constraints.MinimumWorkers,
			maxWorkers: in.Constraints.MaximumWorkers,
		},
		retireWait:       in.RetireWait,
		tolerations:      in.Template.Cluster.ControlPlaneTolerations,
		cpRack:           map[int]int{},
		workerRackAll:    map[int]int{},
		workerRackByRole: map[string]map[int]int{},
		workersByRole:    map[string]int{},
	}
	if s.retireWait < 0 {
		return nil, fmt.Errorf("retire wait: must not be negative, got %s", s.retireWait)
	}

	ms := make([]mach, len(in.Machines))
	s.machines = make([]*mach, len(in.Machines))
	s.byAddr = make(map[string]*mach, len(in.Machines))
	for i, m := range in.Machines {
		x := &ms[i]
		x.m = m
		x.addr = m.Address()
		x.serial = m.Spec.Serial
		x.role = m.Spec.Role
		x.rack = m.Spec.Rack
		x.state = m.Status.State
		x.retire = m.Spec.RetireDate
		x.days = m.LifetimeDays(in.Now)
		x.lp = lifetimePoints(x.days)
		x.rebooting = in.Rebooting[x.addr]
		if x.addr == "" {
			return nil, fmt.Errorf("machine %s: no IPv4 address (machines must be sanitized)", x.serial)
		}
		if _, dup := s.byAddr[x.addr]; dup {
			return nil, fmt.Errorf("machine %s: address %s used twice (machines must be sanitized)", x.serial, x.addr)
		}
		s.byAddr[x.addr] = x
		s.machines[i] = x
	}
	for name, ts := range in.NodeTaints {
		if x, ok := s.byAddr[name]; ok && taints.Intolerable(ts, s.tolerations) != nil {
			x.tainted = true
		}
	}

	if current != nil {
		s.members = make([]*member, 0, len(current.Nodes)+s.c.cpCount+s.c.minWorkers)
		for i, n := range current.Nodes {
			if n == nil || n.Address == "" {
				return nil, fmt.Errorf("current cluster: nodes[%d]: address: must not be empty", i)
			}
			mb := &member{cur: n, cp: n.ControlPlane, rebooting: in.Rebooting[n.Address]}
			if x, ok := s.byAddr[n.Address]; ok {
				if x.member != nil {
					return nil, fmt.Errorf("current cluster: nodes[%d]: address %s is listed twice", i, n.Address)
				}
				mb.m = x
				x.member = mb
			}
			s.members = append(s.members, mb)
			s.count(mb, +1)
		}
	} else {
		s.members = make([]*member, 0, s.c.cpCount+s.c.minWorkers)
	}
	return s, nil
}

// count adds (d = +1) or subtracts (d = -1) a member to the counters.
func (s *state) count(mb *member, d int) {
	if mb.cp {
		s.cps += d
		if mb.m != nil {
			s.cpRack[mb.m.rack] += d
		}
		return
	}
	s.workers += d
	if mb.m == nil {
		return
	}
	if mb.m.state == machine.StateHealthy {
		s.healthyWorkers += d
	}
	s.workerRackAll[mb.m.rack] += d
	byRack := s.workerRackByRole[mb.m.role]
	if byRack == nil {
		byRack = map[int]int{}
		s.workerRackByRole[mb.m.role] = byRack
	}
	byRack[mb.m.rack] += d
	s.workersByRole[mb.m.role] += d
}

func (s *state) add(x *mach, cp bool) *member {
	mb := &member{m: x, cp: cp}
	x.member = mb
	s.members = append(s.members, mb)
	s.count(mb, +1)
	return mb
}

func (s *state) remove(mb *member) {
	s.count(mb, -1)
	mb.removed = true
	if mb.m != nil {
		mb.m.member = nil
		mb.m.removed = true
	}
}

func (s *state) setControlPlane(mb *member, cp bool) {
	s.count(mb, -1)
	mb.cp = cp
	s.count(mb, +1)
}

// live calls f for each member that is still in the next cluster.
func (s *state) live(f func(mb *member)) {
	for _, mb := range s.members {
		if !mb.removed {
			f(mb)
		}
	}
}

// workerTemplate returns the template a worker made of x uses, or nil.
func (s *state) workerTemplate(x *mach) *template.NodeTemplate {
	return s.tmpl.WorkerFor(x.role)
}

// cpRoleMatches reports whether x may be a control plane by role.
func (s *state) cpRoleMatches(x *mach) bool {
	return s.tmpl.ControlPlane.Role == "" || s.tmpl.ControlPlane.Role == x.role
}

// unused reports whether x is neither in the cluster nor removed by this
// decision, and may be added (not rebooting).
func (x *mach) unused() bool {
	return x.member == nil && !x.removed && !x.rebooting
}

// isCPCandidate: SPEC 5 for control planes.
func (s *state) isCPCandidate(x *mach) bool {
	return x.unused() && x.state == machine.StateHealthy && !x.tainted && s.cpRoleMatches(x)
}

// isWorkerCandidate: SPEC 5 for the worker template t.
func isWorkerCandidate(x *mach, t *template.NodeTemplate) bool {
	return x.unused() && x.state == machine.StateHealthy && (t.Role == "" || t.Role == x.role)
}

// cpRackCount is the number of control planes in x's rack.
func (s *state) cpRackCount(x *mach) int {
	return s.cpRack[x.rack]
}

// workerRackCount is the number of workers in x's rack that count against
// template t: those of t's role, or all workers when t has no role.
func (s *state) workerRackCount(x *mach, t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workerRackAll[x.rack]
	}
	return s.workerRackByRole[t.Role][x.rack]
}

// workersOf is the number of workers counting toward t's weight.
func (s *state) workersOf(t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workers
	}
	return s.workersByRole[t.Role]
}

func groupName(cp bool, t *template.NodeTemplate) string {
	if cp {
		return "control planes"
	}
	if t == nil || t.Role == "" {
		return "workers"
	}
	return "workers of role " + t.Role
}

// removalScoreOf is the removal score of a member (its machine exists).
func (s *state) removalScoreOf(mb *member) *Score {
	x := mb.m
	if mb.cp {
		return removalScore(x, s.cpRack[x.rack], groupName(true, nil))
	}
	t := s.workerTemplate(x)
	if t == nil {
		return removalScore(x, s.workerRackByRole[x.role][x.rack], "workers of role "+x.role)
	}
	return removalScore(x, s.workerRackCount(x, t), groupName(false, t))
}

// lowestRemoval returns the member among those accepted by ok with the lowest
// removal score, and that score.
func (s *state) lowestRemoval(ok func(mb *member) bool) (*member, *Score) {
	var best *member
	var bestScore *Score
	s.live(func(mb *member) {
		if mb.m == nil || mb.rebooting || !ok(mb) {
			return
		}
		sc := s.removalScoreOf(mb)
		if best == nil || worseForRemoval(mb.m, sc.Total, best.m, bestScore.Total) {
			best, bestScore = mb, sc
		}
	})
	return best, bestScore
}

func (s *state) record(action string, mb *member, sc *Score, reason string) {
	s.changes = append(s.changes, Change{
		Action:  action,
		Address: mb.address(),
		Serial:  mb.serial(),
		Score:   sc,
		Reason:  reason,
	})
}

// render returns the node for a member, re-rendered from the template and
// current machine data. A member without a machine or a template (only
// rebooting nodes, or nodes a later rule removes) is written back as it was.
func (s *state) render(mb *member) *cluster.Node {
	t := s.templateOf(mb)
	if t == nil {
		return mb.cur.Clone()
	}
	x := mb.m
	ls, as := labels.Render(x.m, labels.Template{Labels: t.Node.Labels, Annotations: t.Node.Annotations}, mb.cp)
	return &cluster.Node{
		Address:      x.addr,
		User:         t.Node.User,
		ControlPlane: mb.cp,
		Labels:       ls,
		Annotations:  as,
		Taints:       taints.Render(t.Node.Taints, x.state, mb.rebooting || x.rebooting),
	}
}

// templateOf is the template node a member is rendered from, or nil when it
// must be written back as it was.
func (s *state) templateOf(mb *member) *template.NodeTemplate {
	if mb.m == nil {
		return nil
	}
	if mb.cp {
		return &s.tmpl.ControlPlane
	}
	return s.workerTemplate(mb.m)
}

func (s *state) result(op string) *Result {
	c := s.tmpl.Cluster.ShallowCopy()
	c.Nodes = make([]*cluster.Node, 0, len(s.members))
	s.live(func(mb *member) {
		c.Nodes = append(c.Nodes, s.render(mb))
	})
	return &Result{Cluster: c, Op: op, Changes: s.changes}
}

// nodeEqual compares two nodes, treating nil and empty maps and lists alike.
func nodeEqual(a, b *cluster.Node) bool {
	return a.Address == b.Address && a.Hostname == b.Hostname && a.User == b.User &&
		a.ControlPlane == b.ControlPlane &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Taints, b.Taints)
}
