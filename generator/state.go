package generator

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/taints"
	"github.com/ckegen/ckegen/template"
)

// A decision works on a state: the machines of the inventory, the members
// of the next cluster (current nodes first, then new ones), and counters of
// that cluster kept up to date as members are added, removed, promoted and
// demoted. The rules (rules.go) read and change it; render.go turns it into
// a cluster.

// machineInfo is a machine of the inventory with what the decision needs
// precomputed.
type machineInfo struct {
	raw *machine.Machine
	// idx is the machine's index in state.machines.
	idx     int
	address string
	serial  string
	role    string
	rack    int
	// rackSlot and roleSlot are the machine's rack and role as small
	// dense numbers, which index the state's counters.
	rackSlot, roleSlot int
	state              machine.State
	// retireAt is the retire date as a compact, comparable value.
	retireAt       instant
	lifetimeDays   int
	lifetimePoints int
	// intolerableTaint: its Kubernetes node carries a taint a control
	// plane may not have (docs/design.md 6.4).
	intolerableTaint bool
	// spare: its Kubernetes node carries the template's spare node taint
	// (docs/design.md 13): as a worker it is the first to become a control plane.
	spare bool
	// domainSlot is the machine's failure domain as a small dense number
	// (docs/design.md 20), set when the policy spreads.
	domainSlot int
	// member is the machine's entry in the next cluster, nil if unused.
	member *member
	// excluded: the machine may not be added by this decision, because it
	// is in CKE's reboot queue or this decision took it out of the cluster.
	excluded bool
}

// member is a node of the next cluster.
type member struct {
	current      *cluster.Node // the current node; nil for a new one
	machine      *machineInfo  // nil when the machine is gone from sabakan
	controlPlane bool
	// removed: the node is not in the next cluster.
	removed bool
	// rebooting nodes (in CKE's reboot queue) are frozen: never removed,
	// demoted or promoted, and never tainted. Only current nodes can be:
	// a rebooting machine is never added.
	rebooting bool
}

func (mb *member) address() string {
	if mb.machine != nil {
		return mb.machine.address
	}
	return mb.current.Address
}

func (mb *member) serial() string {
	if mb.machine != nil {
		return mb.machine.serial
	}
	return mb.current.Annotations[labels.AnnotationSerial]
}

type state struct {
	input       *Input
	tmpl        *template.Template
	limits      limits
	machines    []*machineInfo // serial order
	members     []*member      // current nodes in order, then new ones
	retireWait  time.Duration
	tolerations []string
	// placements are the policy's, by template (see newPlacements); nil
	// without a policy.
	placements []*placement
	// rackText holds each rack's number and zone as label values, by
	// rackSlot, for the placements' label constraints.
	rackText [][2]string

	// Counters of the next cluster. Slices are indexed by the machines'
	// rackSlot and roleSlot.
	cpCount, workerCount, healthyWorkerCount int
	cpsInRack                                []int
	workersInRack                            []int
	roleWorkersInRack                        [][]int // [roleSlot][rackSlot]
	workersOfRole                            []int   // [roleSlot]
	roleSlots                                map[string]int

	changes  []Change
	warnings []string
	scores   []Score // slab behind the changes' scores
	// reasonBuf is where recordPickFor builds a reason.
	reasonBuf []byte
	// workerGroups names each worker template's group in scores.
	workerGroups []string
	// unknownTemplateRole: a worker template's role matches no machine of
	// the inventory, which stops rule 2.
	unknownTemplateRole bool
	// spread is the failure domains when the policy spreads (spread.go),
	// nil otherwise.
	spread *spreading
	// pickNote explains the spread term of the next pick; recordPickFor
	// appends it to the reason and clears it.
	pickNote string
}

// limits holds the constraints the generator uses. In the rate model
// (docs/models.md) minimumWorkers and maximumWorkers are zero and rate is set.
type limits struct {
	controlPlaneCount, minimumWorkers, maximumWorkers int
	// rate: the rate model, in which every HEALTHY machine a worker
	// template accepts is a worker and minimumWorkersRate only limits the
	// removal of RETIRED workers.
	rate               bool
	minimumWorkersRate int
}

// workersAtMax reports whether n workers reach maximum-workers.
func (l limits) workersAtMax(n int) bool {
	return l.maximumWorkers > 0 && n >= l.maximumWorkers
}

func newState(in *Input, current *cluster.Cluster) (*state, error) {
	if in.Template == nil {
		return nil, fmt.Errorf("no template")
	}
	if err := in.Constraints.Validate(); err != nil {
		return nil, err
	}
	if in.RetireWait < 0 {
		return nil, fmt.Errorf("retire wait: must not be negative, got %s", in.RetireWait)
	}
	s := &state{
		input: in,
		tmpl:  in.Template,
		limits: limits{
			controlPlaneCount: in.Constraints.ControlPlaneCount,
			minimumWorkers:    in.Constraints.MinimumWorkers,
			maximumWorkers:    in.Constraints.MaximumWorkers,
			rate:              in.Constraints.RateModel(),
		},
		retireWait:  in.RetireWait,
		tolerations: Tolerations(in.Template),
		roleSlots:   map[string]int{},
		placements:  newPlacements(in.Policy, in.Template),
	}
	if s.limits.rate {
		s.limits.minimumWorkersRate = *in.Constraints.MinimumWorkersRate
	}
	nodeAt, err := s.addCurrentNodes(current)
	if err != nil {
		return nil, err
	}
	racks, err := s.addMachines(nodeAt)
	if err != nil {
		return nil, err
	}
	s.workerGroups = make([]string, len(s.tmpl.Workers))
	for i := range s.tmpl.Workers {
		s.workerGroups[i] = workerGroupName(&s.tmpl.Workers[i])
	}
	s.cpsInRack = make([]int, racks)
	s.workersInRack = make([]int, racks)
	s.workersOfRole = make([]int, len(s.roleSlots))
	s.roleWorkersInRack = make([][]int, len(s.roleSlots))
	for i := range s.roleWorkersInRack {
		s.roleWorkersInRack[i] = make([]int, racks)
	}
	s.spread = s.newSpreading(racks)
	for _, mb := range s.members {
		s.count(mb, +1)
	}
	s.checkTemplateRoles()
	if s.limits.rate {
		s.checkRateModel()
	}
	return s, nil
}

// addCurrentNodes makes a member of each node of the current cluster and
// returns them by IPv4 address, for addMachines to join. The join is on
// the address as a number: hashing and comparing a uint32 reads neither
// string, which matters with ten thousand nodes. A node address that is
// not IPv4 matches no machine (sanitized machines have IPv4 addresses) and
// is only checked for duplicates.
func (s *state) addCurrentNodes(current *cluster.Cluster) (map[uint32]*member, error) {
	if current == nil {
		s.members = make([]*member, 0, s.limits.controlPlaneCount+s.limits.minimumWorkers)
		return nil, nil
	}
	s.members = make([]*member, 0, len(current.Nodes)+s.limits.controlPlaneCount+s.limits.minimumWorkers)
	slab := make([]member, len(current.Nodes))
	nodeAt := make(map[uint32]*member, len(current.Nodes))
	var otherNodes map[string]bool
	for i, n := range current.Nodes {
		if n == nil || n.Address == "" {
			return nil, fmt.Errorf("current cluster: nodes[%d]: address: must not be empty", i)
		}
		mb := &slab[i]
		*mb = member{current: n, controlPlane: n.ControlPlane, rebooting: s.input.Rebooting[n.Address]}
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
	return nodeAt, nil
}

// addMachines precomputes each machine of the input, joins it with its
// node, and returns the number of racks.
func (s *state) addMachines(nodeAt map[uint32]*member) (int, error) {
	in := s.input
	infos := make([]machineInfo, len(in.Machines))
	s.machines = make([]*machineInfo, len(in.Machines))
	rackSlots := map[int]int{}
	// Inventories come in serial order, which mostly follows racks and
	// runs of roles: remember the last rack and role instead of hashing
	// each time.
	lastRack, lastRackSlot, lastRole, lastRoleSlot := 0, -1, "", -1
	for i, m := range in.Machines {
		x := &infos[i]
		x.raw = m
		x.idx = i
		x.address = m.Address()
		x.serial = m.Spec.Serial
		key, ok := ipv4Key(x.address)
		if !ok {
			if x.address == "" {
				return 0, fmt.Errorf("machine %s: no IPv4 address (machines must be sanitized)", x.serial)
			}
			return 0, fmt.Errorf("machine %s: ipv4[0]: %q is not an IPv4 address (machines must be sanitized)", x.serial, x.address)
		}
		x.role = m.Spec.Role
		x.rack = m.Spec.Rack
		if lastRackSlot < 0 || x.rack != lastRack {
			slot, ok := rackSlots[x.rack]
			if !ok {
				slot = len(rackSlots)
				rackSlots[x.rack] = slot
			}
			lastRack, lastRackSlot = x.rack, slot
		}
		x.rackSlot = lastRackSlot
		if lastRoleSlot < 0 || x.role != lastRole {
			slot, ok := s.roleSlots[x.role]
			if !ok {
				slot = len(s.roleSlots)
				s.roleSlots[x.role] = slot
			}
			lastRole, lastRoleSlot = x.role, slot
		}
		x.roleSlot = lastRoleSlot
		x.state = m.Status.State
		x.retireAt = instantOf(m.Spec.RetireDate)
		x.lifetimeDays = m.LifetimeDays(in.Now)
		x.lifetimePoints = lifetimePoints(x.lifetimeDays)
		if len(in.Rebooting) > 0 {
			x.excluded = in.Rebooting[x.address]
		}
		if len(in.NodeTaints) > 0 {
			if ts, ok := in.NodeTaints[x.address]; ok {
				x.intolerableTaint = taints.Intolerable(ts, s.tolerations) != nil
				x.spare = hasKey(ts, s.tmpl.SpareNodeTaintKey)
			}
		}
		if mb, ok := nodeAt[key]; ok {
			if mb.machine != nil {
				return 0, fmt.Errorf("machine %s: address %s is also machine %s's (machines must be sanitized)", x.serial, x.address, mb.machine.serial)
			}
			mb.machine = x
			x.member = mb
		}
		s.machines[i] = x
	}
	return len(rackSlots), nil
}

// checkTemplateRoles finds the worker templates whose role matches no
// machine of the inventory (docs/design.md 6.2 rule 2's typo guard) and warns about
// each.
func (s *state) checkTemplateRoles() {
	for i := range s.tmpl.Workers {
		r := s.tmpl.Workers[i].Role
		if r == "" || s.inventoryHasRole(r) {
			continue
		}
		s.unknownTemplateRole = true
		list := "none"
		if roles := s.inventoryRoles(); len(roles) > 0 {
			list = strings.Join(roles, ", ")
		}
		s.warnings = append(s.warnings, fmt.Sprintf("template role %q matches no machine; inventory roles: %s", r, list))
	}
}

// TemplateNotes are the notes of template t's settings under constraints
// c: what the template says that the model ignores. In the rate model
// (docs/models.md) a cke.cybozu.com/weight on a worker template chooses
// nothing. A note is not a tick's warning: it stands as long as the
// settings do, so set-template says it once, and the status and the page
// list it apart from the warnings. nil when there is none.
func TemplateNotes(t *template.Template, c constraints.Constraints) []string {
	if t == nil || !c.RateModel() {
		return nil
	}
	var out []string
	for i := range t.Workers {
		w := &t.Workers[i]
		if _, ok := w.Node.Labels[labels.Weight]; ok {
			out = append(out, fmt.Sprintf("template nodes[%d]: label %s has no meaning in the rate model (minimum-workers-rate): every HEALTHY machine a worker template accepts is a worker",
				w.Index, labels.Weight))
		}
	}
	return out
}

// checkRateModel warns about what the rate model (docs/models.md) ignores
// and this tick finds: a control plane that is not well, which the rate
// model keeps (CKE v1.35 has no rule 5). A weight on a worker template
// is a note of the settings (TemplateNotes), not a warning.
func (s *state) checkRateModel() {
	for _, mb := range s.members {
		if mb.controlPlane && !mb.rebooting && mb.machine != nil && isBadCP(mb.machine) {
			s.warnings = append(s.warnings, fmt.Sprintf("control plane %s (serial %s) %s: the rate model (minimum-workers-rate) does not replace it; it leaves the cluster when sabakan no longer returns it",
				mb.machine.address, mb.machine.serial, badCPText(mb.machine)))
		}
	}
}

// inventoryHasRole reports whether a machine of the inventory has role r:
// Input.InventoryRoles, or the roles of Input.Machines when it is nil.
func (s *state) inventoryHasRole(r string) bool {
	if s.input.InventoryRoles != nil {
		return slices.Contains(s.input.InventoryRoles, r)
	}
	_, ok := s.roleSlots[r]
	return ok
}

// inventoryRoles lists the inventory's non-empty roles, sorted.
func (s *state) inventoryRoles() []string {
	var roles []string
	if s.input.InventoryRoles != nil {
		roles = slices.Clone(s.input.InventoryRoles)
	} else {
		for r := range s.roleSlots {
			roles = append(roles, r)
		}
	}
	roles = slices.DeleteFunc(roles, func(r string) bool { return r == "" })
	slices.Sort(roles)
	return slices.Compact(roles)
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

// live calls f for each member that is still in the next cluster.
func (s *state) live(f func(mb *member)) {
	for _, mb := range s.members {
		if !mb.removed {
			f(mb)
		}
	}
}

// Tolerations are the taint keys a control plane tolerates besides docs/design.md
// 6.4's built-in ones: the template's control_plane_tolerations and its
// spare node taint key (docs/design.md 13); none without a template.
func Tolerations(t *template.Template) []string {
	switch {
	case t == nil:
		return nil
	case t.SpareNodeTaintKey == "":
		return t.Cluster.ControlPlaneTolerations
	}
	return append(slices.Clip(t.Cluster.ControlPlaneTolerations), t.SpareNodeTaintKey)
}

// hasKey reports whether a taint of ts has the key; never for "".
func hasKey(ts []cluster.Taint, key string) bool {
	if key == "" {
		return false
	}
	for _, t := range ts {
		if t.Key == key {
			return true
		}
	}
	return false
}
