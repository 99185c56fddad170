// Package fakesabakan is a sabakan-compatible server for tests, the demo
// and the end-to-end tests, a double of sabakan: sabakan's GraphQL API and
// its REST endpoints for machines, states, labels, retire dates and the
// IPAM configuration, with sabakan's matching rules, lifecycle, validation
// and status codes, in memory.
package fakesabakan

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/ckegen/ckegen/machine"
)

// Kinds of store errors, for errors.Is. The REST handlers answer them with
// sabakan's statuses: 404, 409, 400, and 500 for what sabakan's model
// refuses (a forbidden transition, deleting a machine that is not RETIRED,
// a full rack, a serial twice in one request, changing the IPAM
// configuration once machines exist).
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflicted")
	ErrBadRequest = errors.New("invalid request")
	ErrRefused    = errors.New("refused")
)

// storeError is an error of one kind with its own message.
type storeError struct {
	kind error
	msg  string
}

func (e *storeError) Error() string { return e.msg }
func (e *storeError) Unwrap() error { return e.kind }

func fail(kind error, format string, args ...any) error {
	return &storeError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// transitions is sabakan's lifecycle: the states each state may move to.
var transitions = map[machine.State][]machine.State{
	machine.StateUninitialized: {machine.StateHealthy, machine.StateRetiring},
	machine.StateHealthy:       {machine.StateUnhealthy, machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring},
	machine.StateUnhealthy:     {machine.StateHealthy, machine.StateUnreachable, machine.StateUpdating, machine.StateRetiring},
	machine.StateUnreachable:   {machine.StateHealthy, machine.StateUnhealthy, machine.StateUpdating, machine.StateRetiring},
	machine.StateUpdating:      {machine.StateUninitialized},
	machine.StateRetiring:      {machine.StateRetired},
	machine.StateRetired:       {machine.StateUninitialized},
}

// CanTransition reports whether sabakan allows from -> to. Setting the same
// state again is allowed and changes nothing.
func CanTransition(from, to machine.State) bool {
	return from == to || slices.Contains(transitions[from], to)
}

// entry is a stored machine; Status.Duration is computed when read.
type entry struct {
	m       machine.Machine
	changed time.Time
	// stamp is changed in UTC, the status timestamp as GraphQL shows it.
	// It is replaced, never changed, so that views share it.
	stamp *time.Time
	// info is what the IPAM configuration gave the machine at
	// registration; zero for machines loaded from a file or registered
	// without one.
	info MachineInfo
}

// rackUse is which indices of a rack are taken, and by how many boot
// servers.
type rackUse struct {
	indices map[int]int
	boots   int
}

// Store holds the inventory. It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	now      func() time.Time
	machines map[string]*entry
	// bySerial is every entry of machines, sorted by serial (byte order),
	// in which searches find their machines in their answer's order.
	bySerial []*entry
	racks    map[int]*rackUse
	ipam     *IPAMConfig
}

// NewStore returns an empty store reading time from now (time.Now when
// nil).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, machines: map[string]*entry{}, racks: map[int]*rackUse{}}
}

// newEntry is a stored machine whose state changed at changed.
func newEntry(m machine.Machine, changed time.Time) *entry {
	e := &entry{m: m}
	e.setChanged(changed)
	return e
}

// setChanged records a state change at t.
func (e *entry) setChanged(t time.Time) {
	u := t.UTC()
	e.changed, e.stamp = t, &u
}

// add stores entries (their serials new) and keeps bySerial sorted. The
// caller holds s.mu.
func (s *Store) add(es ...*entry) {
	for _, e := range es {
		s.machines[e.m.Spec.Serial] = e
		s.take(&e.m)
	}
	s.bySerial = append(s.bySerial, es...)
	slices.SortFunc(s.bySerial, func(a, b *entry) int { return strings.Compare(a.m.Spec.Serial, b.m.Spec.Serial) })
}

func (s *Store) rack(r int) *rackUse {
	u := s.racks[r]
	if u == nil {
		u = &rackUse{indices: map[int]int{}}
		s.racks[r] = u
	}
	return u
}

func (s *Store) take(m *machine.Machine) {
	u := s.rack(m.Spec.Rack)
	u.indices[m.Spec.IndexInRack]++
	if m.Spec.Role == "boot" {
		u.boots++
	}
}

func (s *Store) release(m *machine.Machine) {
	u := s.rack(m.Spec.Rack)
	if u.indices[m.Spec.IndexInRack]--; u.indices[m.Spec.IndexInRack] <= 0 {
		delete(u.indices, m.Spec.IndexInRack)
	}
	if m.Spec.Role == "boot" {
		u.boots--
	}
}

// Load adds machines in the machines file format, as they are: their index,
// addresses and dates are not assigned. Each keeps its state, and its
// duration is counted from status.timestamp, or else from now minus
// status.duration.
func (s *Store) Load(ms []machine.Machine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var added []*entry
	defer func() { s.add(added...) }() // those before an error stay
	seen := make(map[string]bool, len(ms))
	for i := range ms {
		m := ms[i]
		if m.Spec.Serial == "" {
			return fail(ErrBadRequest, "machines[%d]: empty serial", i)
		}
		if _, ok := s.machines[m.Spec.Serial]; ok || seen[m.Spec.Serial] {
			return fail(ErrConflict, "machine %s is already registered", m.Spec.Serial)
		}
		seen[m.Spec.Serial] = true
		changed := now.Add(-m.StateAge())
		if m.Status.Timestamp != nil {
			changed = *m.Status.Timestamp
		}
		m.Status.Timestamp = nil
		m.Status.Duration = 0
		if m.Status.State == "" {
			m.Status.State = machine.StateUninitialized
		}
		added = append(added, newEntry(m, changed))
	}
	return nil
}

// view returns a copy of e with its status timestamp and duration filled.
// The copy shares e's label and address slices and its timestamp: the
// store never changes them in place (update changes a copy of the labels,
// addresses do not change once assigned, a state change makes a new
// timestamp), and callers only read them.
func (s *Store) view(e *entry, now time.Time) machine.Machine {
	m := e.m
	m.Status.Timestamp = e.stamp
	m.Status.Duration = now.Sub(e.changed).Seconds()
	return m
}

// Get returns one machine; its labels and addresses are the store's own
// (see view).
func (s *Store) Get(serial string) (machine.Machine, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.machines[serial]
	if !ok {
		return machine.Machine{}, fail(ErrNotFound, "machine %s", serial)
	}
	return s.view(e, s.now()), nil
}

// Query is a searchMachines condition set; nil fields are no condition.
type Query struct {
	Labels              []machine.Label
	Racks               []int
	Roles               []string
	States              []machine.State
	MinDaysBeforeRetire *int
}

// Search returns the machines that match every condition of having and
// none of notHaving's, sorted by serial (byte order). Their labels,
// addresses and timestamps are the store's own: read them, do not change
// them.
func (s *Store) Search(having, notHaving *Query) []machine.Machine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	es := s.matching(having, notHaving, now)
	out := make([]machine.Machine, len(es))
	for i, e := range es {
		out[i] = s.view(e, now)
	}
	return out
}

// matching returns the entries that match every condition of having and
// none of notHaving's at now, sorted by serial (byte order). The caller
// holds s.mu.
func (s *Store) matching(having, notHaving *Query, now time.Time) []*entry {
	out := make([]*entry, 0, len(s.bySerial))
	for _, e := range s.bySerial {
		if having != nil && !matchHaving(&e.m, having, now) {
			continue
		}
		if notHaving != nil && matchNotHaving(&e.m, notHaving, now) {
			continue
		}
		out = append(out, e)
	}
	return out
}

func hasLabel(m *machine.Machine, l machine.Label) bool {
	for _, ml := range m.Spec.Labels {
		if ml.Name == l.Name && ml.Value == l.Value {
			return true
		}
	}
	return false
}

// matchHaving: every listed label present; rack, role and state in their
// lists; at least minDaysBeforeRetire days left.
func matchHaving(m *machine.Machine, q *Query, now time.Time) bool {
	for _, l := range q.Labels {
		if !hasLabel(m, l) {
			return false
		}
	}
	if len(q.Racks) > 0 && !slices.Contains(q.Racks, m.Spec.Rack) {
		return false
	}
	if len(q.Roles) > 0 && !slices.Contains(q.Roles, m.Spec.Role) {
		return false
	}
	if len(q.States) > 0 && !slices.Contains(q.States, m.Status.State) {
		return false
	}
	if q.MinDaysBeforeRetire != nil && m.LifetimeDays(now) < *q.MinDaysBeforeRetire {
		return false
	}
	return true
}

// matchNotHaving reports whether a machine is excluded: any listed label
// present, or its rack, role or state listed, or fewer than
// minDaysBeforeRetire days left. Each condition excludes on its own, so the
// default {roles: [boot], states: [RETIRED]} skips boot servers and retired
// machines alike.
func matchNotHaving(m *machine.Machine, q *Query, now time.Time) bool {
	for _, l := range q.Labels {
		if hasLabel(m, l) {
			return true
		}
	}
	return slices.Contains(q.Racks, m.Spec.Rack) ||
		slices.Contains(q.Roles, m.Spec.Role) ||
		slices.Contains(q.States, m.Status.State) ||
		(q.MinDaysBeforeRetire != nil && m.LifetimeDays(now) >= *q.MinDaysBeforeRetire)
}

// lower is a state as sabakan's REST API writes it.
func lower(st machine.State) string { return strings.ToLower(string(st)) }

// SetState moves a machine through the lifecycle. The same state again
// changes nothing (the duration keeps counting). A transition the
// lifecycle forbids is refused with sabakan's message.
func (s *Store) SetState(serial string, to machine.State) (machine.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return machine.Machine{}, fail(ErrNotFound, "machine %s", serial)
	}
	if !to.Valid() {
		return machine.Machine{}, fail(ErrBadRequest, "invalid state: %s", to)
	}
	from := e.m.Status.State
	if !CanTransition(from, to) {
		return machine.Machine{}, fail(ErrRefused, "transition from [ %s ] to [ %s ] is forbidden", lower(from), lower(to))
	}
	now := s.now()
	if from != to {
		e.m.Status.State = to
		e.setChanged(now)
	}
	return s.view(e, now), nil
}

// SetIPAM sets the IPAM configuration. As in sabakan, it cannot change once
// a machine is registered.
func (s *Store) SetIPAM(c IPAMConfig) error {
	if err := c.Validate(); err != nil {
		return fail(ErrBadRequest, "%v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.machines) > 0 {
		return fail(ErrRefused, "the IPAM configuration cannot be changed: %d machines are registered", len(s.machines))
	}
	s.ipam = &c
	return nil
}

// IPAM returns the IPAM configuration, if one is set.
func (s *Store) IPAM() (IPAMConfig, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ipam == nil {
		return IPAMConfig{}, false
	}
	return *s.ipam, true
}

// MachineSpec is a machine's spec in sabakan's REST API: what GET
// /api/v1/machines returns, and what POST /api/v1/machines takes and
// `sabactl machines create` sends. On a POST the fields sabakan assigns
// itself (index-in-rack, ipv4, ipv6, register-date, bmc.ipv4, bmc.ipv6)
// are accepted and ignored.
type MachineSpec struct {
	Serial       string            `json:"serial"`
	Labels       map[string]string `json:"labels"`
	Rack         int               `json:"rack"`
	IndexInRack  int               `json:"index-in-rack"`
	Role         string            `json:"role"`
	IPv4         []string          `json:"ipv4"`
	IPv6         []string          `json:"ipv6"`
	RegisterDate time.Time         `json:"register-date"`
	RetireDate   time.Time         `json:"retire-date"`
	BMC          BMCSpec           `json:"bmc"`
}

// BMCSpec is a machine's BMC in sabakan's REST API.
type BMCSpec struct {
	IPv4 string `json:"ipv4"`
	IPv6 string `json:"ipv6"`
	Type string `json:"type"`
}

// validName reports why s is not a valid label name or role (sabakan
// checks both as Kubernetes label values that are not empty), or "".
func validName(s string) string {
	if s == "" {
		return "must not be empty"
	}
	return validValue(s)
}

// validValue reports why s is not a valid label value (a Kubernetes label
// value, as sabakan checks it), or "".
func validValue(s string) string {
	return strings.Join(content.IsLabelValue(s), "; ")
}

// validBMCType reports whether t is made of letters, digits, '-', '_', '/'
// and '.'.
func validBMCType(t string) bool {
	for _, c := range t {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-_/.", c)) {
			return false
		}
	}
	return true
}

// check is sabakan's validation of one registration (HTTP 400).
func (r *MachineSpec) check() error {
	if r.Serial == "" {
		return errors.New("serial is empty")
	}
	if why := validName(r.Role); why != "" {
		return fmt.Errorf("invalid role %q: %s", r.Role, why)
	}
	names := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if why := validName(k); why != "" {
			return fmt.Errorf("labels: invalid label name %q: %s", k, why)
		}
		if why := validValue(r.Labels[k]); why != "" {
			return fmt.Errorf("labels: invalid label value %q of %s: %s", r.Labels[k], k, why)
		}
	}
	if r.BMC.Type == "" {
		return errors.New("bmc.type: BMC type is empty")
	}
	if !validBMCType(r.BMC.Type) {
		return fmt.Errorf("bmc.type: %q: BMC type contains invalid character (want letters, digits, '-', '_', '/', '.')", r.BMC.Type)
	}
	if r.Rack < 0 || r.Rack > math.MaxInt32 {
		return fmt.Errorf("rack: %d: must be 0 to %d", r.Rack, math.MaxInt32)
	}
	return nil
}

// maxLegacyIndex is the last index of a rack without an IPAM configuration
// (addresses 10.<rack/256>.<rack%256>.<index>).
const maxLegacyIndex = 254

// Register adds machines all at once or none, as sabakan does: each is
// validated (ErrBadRequest), gets its index in the rack (a second boot
// server in a rack is ErrConflict, a full rack ErrRefused), its addresses
// and its register date (now, UTC); a retire date left out or zero is the
// register date; a serial twice in the request is ErrRefused, one already
// registered ErrConflict. New machines are UNINITIALIZED.
//
// With an IPAM configuration, the index and addresses follow it (see
// IPAMConfig.assign): a boot server gets node-index-offset, the others the
// smallest free index after it, up to max-nodes-in-rack. Without one, each
// machine gets the smallest free index from 1 and the address
// 10.<rack/256>.<rack%256>.<index>, and a rack holds one boot server.
func (s *Store) Register(rs []MachineSpec) error {
	for i := range rs {
		if err := rs[i].check(); err != nil {
			return fail(ErrBadRequest, "machines[%d]%s: %v", i, serialNote(rs[i].Serial), err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now().UTC()
	batch := &batchUse{taken: map[[2]int]bool{}, boots: map[int]bool{}}
	entries := make([]*entry, len(rs))
	for i := range rs {
		e, err := s.registered(i, &rs[i], now, batch)
		if err != nil {
			return err
		}
		entries[i] = e
	}
	seen := make(map[string]bool, len(rs))
	for i := range rs {
		if seen[rs[i].Serial] {
			return fail(ErrRefused, "machines[%d]: serial %s appears more than once in the request", i, rs[i].Serial)
		}
		seen[rs[i].Serial] = true
	}
	for i := range rs {
		if _, ok := s.machines[rs[i].Serial]; ok {
			return fail(ErrConflict, "machines[%d]: machine %s is already registered", i, rs[i].Serial)
		}
	}
	s.add(entries...)
	return nil
}

// registered is the entry of machines[i], r, registered at now: its index
// in the rack (batch: those the request took already), its addresses, and
// its labels in name order.
func (s *Store) registered(i int, r *MachineSpec, now time.Time, batch *batchUse) (*entry, error) {
	idx, err := s.assignIndex(r.Rack, r.Role == "boot", batch)
	if err != nil {
		return nil, fail(kindOf(err), "machines[%d] (serial %s): %v", i, r.Serial, err)
	}
	m := machine.Machine{Spec: machine.Spec{
		Serial:       r.Serial,
		Rack:         r.Rack,
		IndexInRack:  idx,
		Role:         r.Role,
		RegisterDate: now,
		RetireDate:   now,
		BMC:          machine.BMC{BMCType: r.BMC.Type},
	}, Status: machine.Status{State: machine.StateUninitialized}}
	if !r.RetireDate.IsZero() {
		m.Spec.RetireDate = r.RetireDate
	}
	e := newEntry(machine.Machine{}, now)
	if s.ipam != nil {
		a, err := s.ipam.assign(r.Rack, idx)
		if err != nil {
			return nil, fail(ErrRefused, "machines[%d] (serial %s): %v", i, r.Serial, err)
		}
		m.Spec.IPv4, m.Spec.BMC.IPv4, e.info = a.node, a.bmc, a.info
	} else {
		if r.Rack > 65535 {
			return nil, fail(ErrRefused, "machines[%d] (serial %s): rack %d: without an IPAM configuration racks are 0 to 65535 (set one with PUT /api/v1/config/ipam)", i, r.Serial, r.Rack)
		}
		m.Spec.IPv4 = []string{fmt.Sprintf("10.%d.%d.%d", r.Rack/256, r.Rack%256, idx)}
	}
	names := make([]string, 0, len(r.Labels))
	for k := range r.Labels {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: k, Value: r.Labels[k]})
	}
	e.m = m
	return e, nil
}

func serialNote(serial string) string {
	if serial == "" {
		return ""
	}
	return " (serial " + serial + ")"
}

func kindOf(err error) error {
	for _, k := range []error{ErrNotFound, ErrConflict, ErrBadRequest, ErrRefused} {
		if errors.Is(err, k) {
			return k
		}
	}
	return ErrRefused
}

// batchUse is what a registration request has taken so far.
type batchUse struct {
	taken map[[2]int]bool
	boots map[int]bool
}

// assignIndex picks a machine's index in its rack (see Register).
func (s *Store) assignIndex(rack int, boot bool, b *batchUse) (int, error) {
	u := s.racks[rack]
	used := func(i int) bool { return b.taken[[2]int{rack, i}] || u != nil && u.indices[i] > 0 }
	pick := func(i int) (int, error) {
		b.taken[[2]int{rack, i}] = true
		if boot {
			b.boots[rack] = true
		}
		return i, nil
	}
	if s.ipam != nil {
		off := int(s.ipam.NodeIndexOffset)
		if boot {
			if used(off) {
				return 0, fail(ErrConflict, "rack %d already has a boot server (index %d, node-index-offset, is taken)", rack, off)
			}
			return pick(off)
		}
		for i := off + 1; i <= off+int(s.ipam.MaxNodesInRack); i++ {
			if !used(i) {
				return pick(i)
			}
		}
		return 0, fail(ErrRefused, "no node index is available for new machine: rack %d already holds max-nodes-in-rack (%d) machines", rack, s.ipam.MaxNodesInRack)
	}
	if boot && (b.boots[rack] || u != nil && u.boots > 0) {
		return 0, fail(ErrConflict, "rack %d already has a boot server", rack)
	}
	for i := 1; i <= maxLegacyIndex; i++ {
		if !used(i) {
			return pick(i)
		}
	}
	return 0, fail(ErrRefused, "no node index is available for new machine: rack %d is full (%d machines)", rack, maxLegacyIndex)
}

// SetRetireDate changes a machine's retire date; the time keeps the offset
// it was given in.
func (s *Store) SetRetireDate(serial string, t time.Time) error {
	return s.update(serial, func(m *machine.Machine) error {
		m.Spec.RetireDate = t
		return nil
	})
}

// SetLabel adds or changes a machine's label. The name and the value must be
// valid as sabakan checks them (ErrBadRequest).
func (s *Store) SetLabel(serial, name, value string) error {
	if why := validName(name); why != "" {
		return fail(ErrBadRequest, "invalid label name %q: %s", name, why)
	}
	if why := validValue(value); why != "" {
		return fail(ErrBadRequest, "invalid label value %q: %s", value, why)
	}
	return s.update(serial, func(m *machine.Machine) error {
		for i := range m.Spec.Labels {
			if m.Spec.Labels[i].Name == name {
				m.Spec.Labels[i].Value = value
				return nil
			}
		}
		m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: name, Value: value})
		return nil
	})
}

// DeleteLabel removes a machine's label; a machine or a label that does not
// exist is ErrNotFound.
func (s *Store) DeleteLabel(serial, name string) error {
	if why := validName(name); why != "" {
		return fail(ErrBadRequest, "invalid label name %q: %s", name, why)
	}
	return s.update(serial, func(m *machine.Machine) error {
		i := slices.IndexFunc(m.Spec.Labels, func(l machine.Label) bool { return l.Name == name })
		if i < 0 {
			return fail(ErrNotFound, "machine %s has no label %s", serial, name)
		}
		m.Spec.Labels = slices.Delete(m.Spec.Labels, i, i+1)
		return nil
	})
}

// Delete removes a RETIRED machine; any other is refused (ErrRefused), as
// sabakan does. Its index in the rack is free again.
func (s *Store) Delete(serial string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return fail(ErrNotFound, "machine %s", serial)
	}
	if e.m.Status.State != machine.StateRetired {
		return fail(ErrRefused, "non-retired machine cannot be deleted: machine %s is %s", serial, lower(e.m.Status.State))
	}
	delete(s.machines, serial)
	s.bySerial = slices.DeleteFunc(s.bySerial, func(x *entry) bool { return x == e })
	s.release(&e.m)
	return nil
}

func (s *Store) update(serial string, f func(m *machine.Machine) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return fail(ErrNotFound, "machine %s", serial)
	}
	c := e.m
	c.Spec.Labels = slices.Clone(e.m.Spec.Labels)
	if err := f(&c); err != nil {
		return err
	}
	e.m = c
	return nil
}
