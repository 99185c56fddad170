// Package server is a sabakan-compatible server for tests, the demo and the
// end-to-end tests: the GraphQL queries and REST endpoints ckegen and an
// operator use, with sabakan's matching rules and lifecycle, in memory.
package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckegen/ckegen/machine"
)

// Errors of the store, mapped to HTTP statuses by the REST handlers.
var (
	ErrNotFound   = errors.New("not found")
	ErrConflict   = errors.New("conflict")
	ErrBadRequest = errors.New("bad request")
)

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
}

// Store holds the inventory. It is safe for concurrent use.
type Store struct {
	mu       sync.RWMutex
	now      func() time.Time
	machines map[string]*entry
}

// NewStore returns an empty store reading time from now (time.Now when
// nil).
func NewStore(now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{now: now, machines: map[string]*entry{}}
}

// Load adds machines in the machines file format. Each keeps its state, and
// its duration is counted from status.timestamp, or else from now minus
// status.duration.
func (s *Store) Load(ms []machine.Machine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for i := range ms {
		m := ms[i]
		if m.Spec.Serial == "" {
			return fmt.Errorf("%w: machines[%d]: empty serial", ErrBadRequest, i)
		}
		if _, ok := s.machines[m.Spec.Serial]; ok {
			return fmt.Errorf("%w: machine %s is already registered", ErrConflict, m.Spec.Serial)
		}
		changed := now.Add(-time.Duration(m.Status.Duration * float64(time.Second)))
		if m.Status.Timestamp != nil {
			changed = *m.Status.Timestamp
		}
		m.Status.Timestamp = nil
		m.Status.Duration = 0
		if m.Status.State == "" {
			m.Status.State = machine.StateUninitialized
		}
		s.machines[m.Spec.Serial] = &entry{m: m, changed: changed}
	}
	return nil
}

// view returns a copy of e with its status timestamp and duration filled.
func (s *Store) view(e *entry, now time.Time) machine.Machine {
	m := e.m
	m.Spec.Labels = slices.Clone(e.m.Spec.Labels)
	m.Spec.IPv4 = slices.Clone(e.m.Spec.IPv4)
	ts := e.changed.UTC()
	m.Status.Timestamp = &ts
	m.Status.Duration = now.Sub(e.changed).Seconds()
	return m
}

// Get returns one machine.
func (s *Store) Get(serial string) (machine.Machine, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.machines[serial]
	if !ok {
		return machine.Machine{}, fmt.Errorf("%w: machine %s", ErrNotFound, serial)
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
// none of notHaving's, sorted by serial (byte order).
func (s *Store) Search(having, notHaving *Query) []machine.Machine {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	out := []machine.Machine{}
	for _, e := range s.machines {
		if having != nil && !matchHaving(&e.m, having, now) {
			continue
		}
		if notHaving != nil && matchNotHaving(&e.m, notHaving, now) {
			continue
		}
		out = append(out, s.view(e, now))
	}
	slices.SortFunc(out, func(a, b machine.Machine) int { return strings.Compare(a.Spec.Serial, b.Spec.Serial) })
	return out
}

func lifetimeDays(m *machine.Machine, now time.Time) int {
	return m.LifetimeDays(now)
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
	if q.MinDaysBeforeRetire != nil && lifetimeDays(m, now) < *q.MinDaysBeforeRetire {
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
		(q.MinDaysBeforeRetire != nil && lifetimeDays(m, now) >= *q.MinDaysBeforeRetire)
}

// SetState moves a machine through the lifecycle. The same state again
// changes nothing (the duration keeps counting).
func (s *Store) SetState(serial string, to machine.State) (machine.Machine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return machine.Machine{}, fmt.Errorf("%w: machine %s", ErrNotFound, serial)
	}
	if !to.Valid() {
		return machine.Machine{}, fmt.Errorf("%w: unknown state %q", ErrBadRequest, to)
	}
	from := e.m.Status.State
	if !CanTransition(from, to) {
		return machine.Machine{}, fmt.Errorf("%w: transition from %s to %s is forbidden", ErrBadRequest, from, to)
	}
	now := s.now()
	if from != to {
		e.m.Status.State = to
		e.changed = now
	}
	return s.view(e, now), nil
}

// Registration is a machine as POST /api/v1/machines takes it.
type Registration struct {
	Serial string            `json:"serial"`
	Labels map[string]string `json:"labels"`
	Rack   int               `json:"rack"`
	Role   string            `json:"role"`
	BMC    struct {
		Type string `json:"type"`
	} `json:"bmc"`
	RetireDate *time.Time `json:"retire-date,omitempty"`
}

// DefaultLifetime is the retire date of a registered machine without one,
// counted from registration.
const DefaultLifetime = 5 * 365 * 24 * time.Hour

// Register adds machines all at once or none: the server assigns each its
// index in the rack, its IPv4 address 10.<rack/256>.<rack%256>.<index> and its
// register date; new machines are UNINITIALIZED.
func (s *Store) Register(rs []Registration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := map[string]bool{}
	for i, r := range rs {
		switch {
		case r.Serial == "":
			return fmt.Errorf("%w: [%d].serial: must not be empty", ErrBadRequest, i)
		case r.Role == "":
			return fmt.Errorf("%w: [%d].role: must not be empty", ErrBadRequest, i)
		case r.BMC.Type == "":
			return fmt.Errorf("%w: [%d].bmc.type: must not be empty", ErrBadRequest, i)
		case r.Rack < 0 || r.Rack > 65535:
			return fmt.Errorf("%w: [%d].rack: must be 0-65535", ErrBadRequest, i)
		}
		if _, ok := s.machines[r.Serial]; ok || seen[r.Serial] {
			return fmt.Errorf("%w: machine %s is already registered", ErrConflict, r.Serial)
		}
		seen[r.Serial] = true
	}
	now := s.now().UTC()
	for _, r := range rs {
		idx := s.nextIndex(r.Rack)
		if idx > 254 {
			return fmt.Errorf("%w: rack %d is full", ErrBadRequest, r.Rack)
		}
		m := machine.Machine{Spec: machine.Spec{
			Serial:       r.Serial,
			Rack:         r.Rack,
			IndexInRack:  idx,
			Role:         r.Role,
			IPv4:         []string{fmt.Sprintf("10.%d.%d.%d", r.Rack/256, r.Rack%256, idx)},
			RegisterDate: now,
			RetireDate:   now.Add(DefaultLifetime),
			BMC:          machine.BMC{BMCType: r.BMC.Type},
		}, Status: machine.Status{State: machine.StateUninitialized}}
		if r.RetireDate != nil {
			m.Spec.RetireDate = r.RetireDate.UTC()
		}
		names := make([]string, 0, len(r.Labels))
		for k := range r.Labels {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: k, Value: r.Labels[k]})
		}
		s.machines[r.Serial] = &entry{m: m, changed: now}
	}
	return nil
}

// nextIndex is the smallest unused index in the rack, from 1.
func (s *Store) nextIndex(rack int) int {
	used := map[int]bool{}
	for _, e := range s.machines {
		if e.m.Spec.Rack == rack {
			used[e.m.Spec.IndexInRack] = true
		}
	}
	i := 1
	for used[i] {
		i++
	}
	return i
}

// SetRetireDate changes a machine's retire date.
func (s *Store) SetRetireDate(serial string, t time.Time) error {
	return s.update(serial, func(m *machine.Machine) error {
		m.Spec.RetireDate = t.UTC()
		return nil
	})
}

// SetLabel adds or changes a machine's label.
func (s *Store) SetLabel(serial, name, value string) error {
	if name == "" {
		return fmt.Errorf("%w: empty label name", ErrBadRequest)
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

// Delete removes a RETIRED machine.
func (s *Store) Delete(serial string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return fmt.Errorf("%w: machine %s", ErrNotFound, serial)
	}
	if e.m.Status.State != machine.StateRetired {
		return fmt.Errorf("%w: machine %s is %s; only RETIRED machines can be deleted", ErrBadRequest, serial, e.m.Status.State)
	}
	delete(s.machines, serial)
	return nil
}

func (s *Store) update(serial string, f func(m *machine.Machine) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.machines[serial]
	if !ok {
		return fmt.Errorf("%w: machine %s", ErrNotFound, serial)
	}
	c := e.m
	c.Spec.Labels = slices.Clone(e.m.Spec.Labels)
	if err := f(&c); err != nil {
		return err
	}
	e.m = c
	return nil
}
