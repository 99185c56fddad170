// Package machine models sabakan's inventory entries as searchMachines
// returns them, reads machines files, and sanitizes machine lists so that a
// bad entry never blocks the others.
package machine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/clip"
)

// State is a sabakan machine state.
type State string

// The seven machine states of sabakan.
const (
	StateUninitialized State = "UNINITIALIZED"
	StateHealthy       State = "HEALTHY"
	StateUnhealthy     State = "UNHEALTHY"
	StateUnreachable   State = "UNREACHABLE"
	StateUpdating      State = "UPDATING"
	StateRetiring      State = "RETIRING"
	StateRetired       State = "RETIRED"
)

// States lists every valid state in sabakan's order.
var States = []State{
	StateUninitialized, StateHealthy, StateUnhealthy, StateUnreachable,
	StateUpdating, StateRetiring, StateRetired,
}

// Valid reports whether s is one of the seven states.
func (s State) Valid() bool {
	return slices.Contains(States, s)
}

// Sound reports whether a node whose machine is in state s is sound: its
// machine is HEALTHY, UPDATING or UNINITIALIZED. A control plane in any
// other state is a bad one (docs/design.md 6.2.5), and a node in any
// other state counts as unhealthy against max-unhealthy (11.4). Every
// rule and view that asks which states a node may keep asks this.
func (s State) Sound() bool {
	return s == StateHealthy || s == StateUpdating || s == StateUninitialized
}

// ParseState parses a state name, case-insensitively (sabakan's REST API
// uses lower case, GraphQL upper case).
func ParseState(s string) (State, error) {
	st := State(strings.ToUpper(s))
	if !st.Valid() {
		return "", fmt.Errorf("unknown machine state %q (want one of %s)", s, stateList())
	}
	return st, nil
}

func stateList() string {
	names := make([]string, len(States))
	for i, s := range States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Label is a sabakan machine label.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// BMC is the machine's baseboard management controller.
type BMC struct {
	BMCType string `json:"bmcType"`
	IPv4    string `json:"ipv4,omitempty"`
}

// Spec is a machine's specification.
type Spec struct {
	Serial       string    `json:"serial"`
	Labels       []Label   `json:"labels"`
	Rack         int       `json:"rack"`
	IndexInRack  int       `json:"indexInRack"`
	Role         string    `json:"role"`
	IPv4         []string  `json:"ipv4"`
	RegisterDate time.Time `json:"registerDate"`
	RetireDate   time.Time `json:"retireDate"`
	BMC          BMC       `json:"bmc"`
}

// Status is a machine's lifecycle status.
type Status struct {
	State     State      `json:"state"`
	Timestamp *time.Time `json:"timestamp,omitempty"`
	// Duration is the number of seconds since the last state change.
	Duration float64 `json:"duration"`
}

// Machine is one inventory entry, in the GraphQL response shape.
type Machine struct {
	Spec   Spec   `json:"spec"`
	Status Status `json:"status"`
}

// Address is the machine's node address: its first IPv4 address, or "".
func (m *Machine) Address() string {
	if len(m.Spec.IPv4) == 0 {
		return ""
	}
	return m.Spec.IPv4[0]
}

// LifetimeDays is the number of whole days from now to the retire date,
// truncated toward zero (negative once the date has passed).
func (m *Machine) LifetimeDays(now time.Time) int {
	return int(m.Spec.RetireDate.Sub(now) / (24 * time.Hour))
}

// Validate checks what no machine may lack: a serial, unique in the list
// (sabakan's key: a list with a serial twice is a broken answer, not two
// machines), and one of the seven states.
//
// sabakan answers in serial order: serials that only increase are unique
// without a map; the map of those before is made where they stop.
func Validate(ms []Machine) error {
	var seen map[string]int
	for i := range ms {
		m := &ms[i]
		if m.Spec.Serial == "" {
			return &invalidError{i, "spec.serial", fmt.Sprintf("machines[%d]: spec.serial: must not be empty", i)}
		}
		if seen == nil && i > 0 && ms[i-1].Spec.Serial >= m.Spec.Serial {
			seen = make(map[string]int, len(ms))
			for j := range i {
				seen[ms[j].Spec.Serial] = j
			}
		}
		if seen != nil {
			if j, ok := seen[m.Spec.Serial]; ok {
				return &invalidError{i, "spec.serial", fmt.Sprintf("machines[%d]: spec.serial: %s is also machines[%d]'s: serials are unique in sabakan, so the list is broken", i, clip.Value(m.Spec.Serial), j)}
			}
			seen[m.Spec.Serial] = i
		}
		if !m.Status.State.Valid() {
			return &invalidError{i, "status.state", fmt.Sprintf("machines[%d] (serial %s): status.state: unknown state %q (want one of %s)",
				i, clip.Value(m.Spec.Serial), clip.Value(string(m.Status.State)), stateList())}
		}
	}
	return nil
}

// Roles returns the distinct non-empty roles of ms, sorted. Called on the
// machines as sabakan returned them (before Sanitize drops any), it is the
// inventory's roles that the generator's typo guard compares template roles
// with. The result is never nil, so that "no roles" differs from "not
// known".
func Roles(ms []Machine) []string {
	roles := []string{}
	seen := map[string]bool{}
	last := ""
	for i := range ms {
		r := ms[i].Spec.Role
		// Inventories come in serial order, where roles run in streaks.
		if r == "" || r == last {
			continue
		}
		last = r
		if !seen[r] {
			seen[r] = true
			roles = append(roles, r)
		}
	}
	slices.Sort(roles)
	return roles
}

// impossible names a value no real machine has: a negative rack or index
// in rack, or a date that is the zero time (year 1, what a missing date
// decodes to). Such a machine would be rendered into nonsense labels.
func impossible(m *Machine) string {
	switch {
	case m.Spec.Rack < 0:
		return fmt.Sprintf("spec.rack %d is negative", m.Spec.Rack)
	case m.Spec.IndexInRack < 0:
		return fmt.Sprintf("spec.indexInRack %d is negative", m.Spec.IndexInRack)
	case m.Spec.RegisterDate.IsZero():
		return "spec.registerDate is the zero time (year 1)"
	case m.Spec.RetireDate.IsZero():
		return "spec.retireDate is the zero time (year 1)"
	}
	return ""
}

// LabelValidator reports why a sabakan label cannot become a Kubernetes
// label, or nil. It is injected so that this package stays free of
// rendering rules. It must be a pure function of its arguments: Sanitize
// asks once per distinct label.
type LabelValidator func(name, value string) error

// Sanitize returns the machines that can be used, in serial order, and a
// warning for each machine or label that was dropped:
//   - no IPv4 address, or an unparsable one: the machine is ignored;
//   - a negative rack or index in rack, or a zero register or retire
//     date: the machine is ignored;
//   - a serial seen before: the later entry is ignored;
//   - two machines with the same first IPv4 address: the smaller serial is
//     kept;
//   - a label that validLabel rejects: the label is dropped.
//
// The input is not modified.
func Sanitize(ms []Machine, validLabel LabelValidator) ([]*Machine, []string) {
	var warnings []string
	sorted := make([]*Machine, 0, len(ms))
	for i := range ms {
		sorted = append(sorted, &ms[i])
	}
	// Stable: equal serials keep their input order, so "the later entry"
	// is well defined. sabakan answers in serial order already.
	bySerial := func(a, b *Machine) int { return strings.Compare(a.Spec.Serial, b.Spec.Serial) }
	if !slices.IsSortedFunc(sorted, bySerial) {
		slices.SortStableFunc(sorted, bySerial)
	}
	// An inventory has few distinct labels (product, datacenter...), and
	// checking one against Kubernetes' syntax costs microseconds: check
	// each once.
	labelErrs := map[Label]error{}

	out := make([]*Machine, 0, len(sorted))
	// Addresses as 4 bytes: parsing is strict (no leading zeros), so equal
	// bytes are equal strings.
	byAddr := make(map[[4]byte]string, len(sorted))
	for i, m := range sorted {
		// Serials, addresses and labels are the inventory's: echoed
		// bounded (clip.Value).
		serial := clip.Value(m.Spec.Serial)
		if i > 0 && sorted[i-1].Spec.Serial == m.Spec.Serial {
			warnings = append(warnings, fmt.Sprintf("machine %s: duplicate serial: later entry ignored", serial))
			continue
		}
		addr := m.Address()
		if addr == "" {
			warnings = append(warnings, fmt.Sprintf("machine %s: no IPv4 address: ignored", serial))
			continue
		}
		if field := impossible(m); field != "" {
			warnings = append(warnings, fmt.Sprintf("machine %s: %s: ignored", serial, field))
			continue
		}
		ip, err := netip.ParseAddr(addr)
		if err != nil || !ip.Is4() {
			warnings = append(warnings, fmt.Sprintf("machine %s: ipv4[0] %q is not an IPv4 address: ignored", serial, clip.Value(addr)))
			continue
		}
		key := ip.As4()
		if other, ok := byAddr[key]; ok {
			warnings = append(warnings, fmt.Sprintf("machine %s: address %s is also used by machine %s: ignored", serial, addr, clip.Value(other)))
			continue
		}
		byAddr[key] = m.Spec.Serial

		if validLabel != nil && len(m.Spec.Labels) > 0 {
			m, warnings = dropBadLabels(m, serial, validLabel, labelErrs, warnings)
		}
		out = append(out, m)
	}
	return out, warnings
}

// dropBadLabels returns m without the labels validLabel rejects (a copy
// when one is dropped: the input is not modified) and warnings with one
// for each. errs caches validLabel's answer per label.
func dropBadLabels(m *Machine, serial string, validLabel LabelValidator, errs map[Label]error, warnings []string) (*Machine, []string) {
	// kept is built only once a label is dropped.
	var kept []Label
	dropped := false
	for j, l := range m.Spec.Labels {
		err, seen := errs[l]
		if !seen {
			err = validLabel(l.Name, l.Value)
			errs[l] = err
		}
		switch {
		case err != nil:
			warnings = append(warnings, fmt.Sprintf("machine %s: label %q skipped: %s", serial, clip.Value(l.Name), clip.Value(err.Error())))
			if !dropped {
				kept = append(kept, m.Spec.Labels[:j]...)
			}
			dropped = true
		case dropped:
			kept = append(kept, l)
		}
	}
	if !dropped {
		return m, warnings
	}
	c := *m
	c.Spec.Labels = kept
	return &c, warnings
}

// StateAge is how long ago the machine's state changed.
func (m *Machine) StateAge() time.Duration {
	return time.Duration(m.Status.Duration * float64(time.Second))
}

// SerialsDigest identifies a set of machines by their serials, in any
// order.
func SerialsDigest(ms []*Machine) string {
	serials := make([]string, len(ms))
	for i, m := range ms {
		serials[i] = m.Spec.Serial
	}
	slices.Sort(serials)
	h := sha256.New()
	for _, s := range serials {
		h.Write([]byte(s))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// WithState is m as sabakan reports it just after its state became st: a
// copy, with no time in the new state (the time in its state kept when
// st is the state it has). m is left as it is.
func (m *Machine) WithState(st State) *Machine {
	c := *m
	if c.Status.State != st {
		c.Status.State, c.Status.Duration = st, 0
	}
	return &c
}
