package generator

import (
	"encoding/binary"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
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
	// ri and oi index the machine's rack and role in the state's dense
	// counters.
	ri, oi int
	state  machine.State
	// retire is the retire date as a compact, comparable value.
	retire instant
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
	machines    []*mach   // serial order
	members     []*member // current nodes in order, then new ones
	retireWait  time.Duration
	tolerations []string

	// Counters of the next cluster, indexed by the dense rack (ri) and
	// role (oi) numbers of the machines.
	cps, workers, healthyWorkers int
	cpRack                       []int
	workerRackAll                []int
	workerRackByRole             [][]int // [oi][ri]
	workersByRole                []int   // [oi]
	roleIndex                    map[string]int

	changes  []Change
	warnings []string
	scores   []Score // slab behind the changes' scores
	// workerGroups names each worker template's group in scores.
	workerGroups []string
	// unknownTemplateRole: a worker template's role matches no machine of
	// the inventory, which stops rule 2.
	unknownTemplateRole bool
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
		retireWait:  in.RetireWait,
		tolerations: in.Template.Cluster.ControlPlaneTolerations,
		roleIndex:   map[string]int{},
	}
	if s.retireWait < 0 {
		return nil, fmt.Errorf("retire wait: must not be negative, got %s", s.retireWait)
	}

	// Current nodes first, indexed by address, so that each machine finds
	// its node in one lookup (cheaper than indexing every machine). The
	// join is on the IPv4 address as a number: hashing and comparing a
	// uint32 reads neither string, which matters with ten thousand nodes.
	// A node address that is not IPv4 matches no machine (sanitized
	// machines have IPv4 addresses) and is only checked for duplicates.
	var nodeAt map[uint32]*member
	var otherNodes map[string]bool
	if current != nil {
		s.members = make([]*member, 0, len(current.Nodes)+s.c.cpCount+s.c.minWorkers)
		slab := make([]member, len(current.Nodes))
		nodeAt = make(map[uint32]*member, len(current.Nodes))
		for i, n := range current.Nodes {
			if n == nil || n.Address == "" {
				return nil, fmt.Errorf("current cluster: nodes[%d]: address: must not be empty", i)
			}
			mb := &slab[i]
			*mb = member{cur: n, cp: n.ControlPlane, rebooting: in.Rebooting[n.Address]}
			dup := false
			if a, ok := ipv4Key(n.Address); ok {
				before := len(nodeAt)
				nodeAt[a] = mb
				dup = len(nodeAt) == before
			} else {
				if otherNodes == nil {
					otherNodes = map[string]bool{}
				}
				dup = otherNodes[n.Address]
				otherNodes[n.Address] = true
			}
			if dup {
				return nil, fmt.Errorf("current cluster: nodes[%d]: address %s is listed twice", i, n.Address)
			}
			s.members = append(s.members, mb)
		}
	} else {
		s.members = make([]*member, 0, s.c.cpCount+s.c.minWorkers)
	}

	ms := make([]mach, len(in.Machines))
	s.machines = make([]*mach, len(in.Machines))
	rackIndex := map[int]int{}
	lastRack, lastRI, lastRole, lastOI := 0, -1, "", -1
	for i, m := range in.Machines {
		x := &ms[i]
		x.m = m
		x.addr = m.Address()
		x.serial = m.Spec.Serial
		key, ok := ipv4Key(x.addr)
		if !ok {
			if x.addr == "" {
				return nil, fmt.Errorf("machine %s: no IPv4 address (machines must be sanitized)", x.serial)
			}
			return nil, fmt.Errorf("machine %s: ipv4[0]: %q is not an IPv4 address (machines must be sanitized)", x.serial, x.addr)
		}
		x.role = m.Spec.Role
		x.rack = m.Spec.Rack
		// Inventories come in serial order, which mostly follows racks:
		// remember the last rack and role instead of hashing each time.
		if lastRI < 0 || x.rack != lastRack {
			ri, ok := rackIndex[x.rack]
			if !ok {
				ri = len(rackIndex)
				rackIndex[x.rack] = ri
			}
			lastRack, lastRI = x.rack, ri
		}
		x.ri = lastRI
		if lastOI < 0 || x.role != lastRole {
			oi, ok := s.roleIndex[x.role]
			if !ok {
				oi = len(s.roleIndex)
				s.roleIndex[x.role] = oi
			}
			lastRole, lastOI = x.role, oi
		}
		x.oi = lastOI
		x.state = m.Status.State
		x.retire = instantOf(m.Spec.RetireDate)
		x.days = m.LifetimeDays(in.Now)
		x.lp = lifetimePoints(x.days)
		if len(in.Rebooting) > 0 {
			x.rebooting = in.Rebooting[x.addr]
		}
		if len(in.NodeTaints) > 0 {
			if ts, ok := in.NodeTaints[x.addr]; ok && taints.Intolerable(ts, s.tolerations) != nil {
				x.tainted = true
			}
		}
		if mb, ok := nodeAt[key]; ok {
			if mb.m != nil {
				return nil, fmt.Errorf("machine %s: address %s is also machine %s's (machines must be sanitized)", x.serial, x.addr, mb.m.serial)
			}
			mb.m = x
			x.member = mb
		}
		s.machines[i] = x
	}
	s.workerGroups = make([]string, len(s.tmpl.Workers))
	for i := range s.tmpl.Workers {
		s.workerGroups[i] = workerGroupName(&s.tmpl.Workers[i])
	}
	s.cpRack = make([]int, len(rackIndex))
	s.workerRackAll = make([]int, len(rackIndex))
	s.workersByRole = make([]int, len(s.roleIndex))
	s.workerRackByRole = make([][]int, len(s.roleIndex))
	for i := range s.workerRackByRole {
		s.workerRackByRole[i] = make([]int, len(rackIndex))
	}
	for _, mb := range s.members {
		s.count(mb, +1)
	}
	s.checkTemplateRoles()
	return s, nil
}

// checkTemplateRoles finds the worker templates whose role matches no
// machine of the inventory (SPEC 6.2 rule 2's typo guard) and warns about
// each.
func (s *state) checkTemplateRoles() {
	roles := s.in.InventoryRoles
	if roles == nil {
		roles = make([]string, 0, len(s.roleIndex))
		for r := range s.roleIndex {
			if r != "" {
				roles = append(roles, r)
			}
		}
	}
	for i := range s.tmpl.Workers {
		r := s.tmpl.Workers[i].Role
		if r == "" || slices.Contains(roles, r) {
			continue
		}
		s.unknownTemplateRole = true
		list := "none"
		if len(roles) > 0 {
			sorted := slices.Sorted(slices.Values(roles))
			list = strings.Join(sorted, ", ")
		}
		s.warnings = append(s.warnings, fmt.Sprintf("template role %q matches no machine; inventory roles: %s", r, list))
	}
}

// ipv4Key is an IPv4 address as a number; ok is false for anything else.
// Parsing is strict (no leading zeros), so two strings have the same key
// only if they are equal.
func ipv4Key(addr string) (uint32, bool) {
	a, err := netip.ParseAddr(addr)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	return binary.BigEndian.Uint32(b[:]), true
}

// count adds (d = +1) or subtracts (d = -1) a member to the counters.
func (s *state) count(mb *member, d int) {
	x := mb.m
	if mb.cp {
		s.cps += d
		if x != nil {
			s.cpRack[x.ri] += d
		}
		return
	}
	s.workers += d
	if x == nil {
		return
	}
	if x.state == machine.StateHealthy {
		s.healthyWorkers += d
	}
	s.workerRackAll[x.ri] += d
	s.workerRackByRole[x.oi][x.ri] += d
	s.workersByRole[x.oi] += d
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
	return s.cpRack[x.ri]
}

// workerRackCount is the number of workers in x's rack that count against
// template t: those of t's role, or all workers when t has no role.
func (s *state) workerRackCount(x *mach, t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workerRackAll[x.ri]
	}
	// A candidate of t has t's role.
	return s.workerRackByRole[x.oi][x.ri]
}

// workersOf is the number of workers counting toward t's weight.
func (s *state) workersOf(t *template.NodeTemplate) int {
	if t.Role == "" {
		return s.workers
	}
	oi, ok := s.roleIndex[t.Role]
	if !ok {
		return 0
	}
	return s.workersByRole[oi]
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

// removalScoreOf is the removal score of a member (its machine exists).
func (s *state) removalScoreOf(mb *member) Score {
	x := mb.m
	if mb.cp {
		return removalScore(x, s.cpRack[x.ri], s.groupName(true, nil))
	}
	t := s.workerTemplate(x)
	if t == nil {
		return removalScore(x, s.workerRackByRole[x.oi][x.ri], "workers of role "+x.role)
	}
	return removalScore(x, s.workerRackCount(x, t), s.groupName(false, t))
}

// lowestRemoval returns the member among those accepted by ok with the lowest
// removal score, and that score.
func (s *state) lowestRemoval(ok func(mb *member) bool) (*member, Score) {
	var best *member
	var bestScore Score
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

// render returns the node for a member, re-rendered from the template and
// current machine data. A current node that already is what rendering would
// produce is returned as is (results share such nodes with Input.Current;
// both are read-only). A member without a machine or a template (only
// rebooting nodes, or nodes a later rule removes) is written back as it was.
func (s *state) render(mb *member) *cluster.Node {
	t := s.templateOf(mb)
	if t == nil {
		return mb.cur
	}
	x := mb.m
	lt := labels.Template{Labels: t.Node.Labels, Annotations: t.Node.Annotations}
	rebooting := mb.rebooting || x.rebooting
	if c := mb.cur; c != nil && c.Address == x.addr && c.Hostname == "" && c.User == t.Node.User &&
		c.ControlPlane == mb.cp && taintsMatch(c.Taints, t.Node.Taints, x.state, rebooting) &&
		labels.Equal(c.Labels, c.Annotations, x.m, lt, mb.cp) {
		return c
	}
	ls, as := labels.Render(x.m, lt, mb.cp)
	return &cluster.Node{
		Address:      x.addr,
		User:         t.Node.User,
		ControlPlane: mb.cp,
		Labels:       ls,
		Annotations:  as,
		Taints:       taints.Render(t.Node.Taints, x.state, rebooting),
	}
}

// taintsMatch reports whether have equals taints.Render(template, s,
// rebooting), without building it.
func taintsMatch(have, template []cluster.Taint, s machine.State, rebooting bool) bool {
	st := taints.ForState(s, rebooting)
	n := len(template)
	if st != nil {
		n++
	}
	if len(have) != n || !slices.Equal(have[:len(template)], template) {
		return false
	}
	return st == nil || have[n-1] == *st
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
	return &Result{Cluster: c, Op: op, Changes: s.changes, Warnings: s.warnings}
}

// nothingToDo is the result that goes with ErrNothingToDo.
func (s *state) nothingToDo() *Result {
	return &Result{Warnings: s.warnings}
}

// nodeEqual compares two nodes, treating nil and empty maps and lists alike.
func nodeEqual(a, b *cluster.Node) bool {
	return a.Address == b.Address && a.Hostname == b.Hostname && a.User == b.User &&
		a.ControlPlane == b.ControlPlane &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.Equal(a.Taints, b.Taints)
}
