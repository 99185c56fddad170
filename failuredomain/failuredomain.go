// Package failuredomain says what a data center loses at once (docs/design.md
// 20): sabakan's rack by default, or the value of a machine label (a power
// feed, a switch) when a placement policy names one; and where a cluster's
// control planes are by domain, so that a domain whose loss takes etcd's
// quorum with it is known and said in words.
//
// It is a model: no I/O, and the per-tick count (ControlPlanes) reads each
// machine once without allocating per machine.
package failuredomain

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
)

// Key says what a failure domain is. The zero Key is sabakan's rack; a Key
// with a Label groups machines by the value of that sabakan label (the name
// as the machine carries it, such as power-feed, not the node label
// sabakan.cke.cybozu.com/power-feed).
type Key struct {
	Label string
}

// Rack is the default key: sabakan's rack.
func Rack() Key { return Key{} }

// ByLabel is the key of a sabakan label.
func ByLabel(name string) Key { return Key{Label: name} }

// IsRack reports whether the key is sabakan's rack.
func (k Key) IsRack() bool { return k.Label == "" }

// Name is what the key is called in reports: "rack", or the label's name.
func (k Key) Name() string {
	if k.IsRack() {
		return "rack"
	}
	return k.Label
}

// Of is the domain of a machine: its rack as a decimal number, or the
// value of the key's label. A machine without the label is a domain of its
// own, named after its serial and what it lacks ("S000123 (no power-feed
// label)"): losing it loses only it. Label values that reach a node are
// Kubernetes label values (machine.Sanitize drops the others), which hold
// no space, so such a name never equals a value.
func (k Key) Of(m *machine.Machine) string {
	if k.IsRack() {
		return strconv.Itoa(m.Spec.Rack)
	}
	if v, ok := k.value(m); ok {
		return v
	}
	return k.own(m.Spec.Serial)
}

// value is m's value of the key's label, and whether it has one.
func (k Key) value(m *machine.Machine) (string, bool) {
	for _, l := range m.Spec.Labels {
		if l.Name == k.Label {
			return l.Value, true
		}
	}
	return "", false
}

// NewIn returns the domain of a machine new to a rack, from the
// machines already there: the rack, or, with a label as the key, the
// value every machine of the rack has. In a rack whose machines differ in
// it or lack it (or that has none), nothing says which value the new
// machine will have: "", and the machine is a domain of its own (Of), the
// best case. It reads machines once, on its first call.
func (k Key) NewIn(machines []*machine.Machine) func(rack int) string {
	if k.IsRack() {
		return strconv.Itoa
	}
	var values map[int]string // "": mixed or missing
	return func(rack int) string {
		if values == nil {
			values = map[int]string{}
			for _, o := range machines {
				v, _ := k.value(o)
				if was, seen := values[o.Spec.Rack]; seen && was != v {
					v = ""
				}
				values[o.Spec.Rack] = v
			}
		}
		return values[rack]
	}
}

// Racked places machines that do not exist yet (made-up ones:
// machine.Machine.MadeUp) in their racks' domains (NewIn): with a label
// as the key, a made-up machine without it is returned as a copy with the
// value of its rack, if the rack has one; any other machine as it is.
func (k Key) Racked(machines []*machine.Machine) func(m *machine.Machine) *machine.Machine {
	if k.IsRack() {
		return func(m *machine.Machine) *machine.Machine { return m }
	}
	newIn := k.NewIn(machines)
	return func(m *machine.Machine) *machine.Machine {
		if _, has := k.value(m); has || !m.MadeUp() {
			return m
		}
		v := newIn(m.Spec.Rack)
		if v == "" {
			return m
		}
		c := *m
		c.Spec.Labels = append(slices.Clip(m.Spec.Labels), machine.Label{Name: k.Label, Value: v})
		return &c
	}
}

// own names the domain of a machine (or a node, by address) without the
// key's label.
func (k Key) own(name string) string {
	return name + " (no " + k.Label + " label)"
}

// OfNode is the domain of a node whose machine is not in the inventory,
// from the labels it was last rendered with: cke.cybozu.com/rack, or the
// sabakan label copied to the node; a node without it is a domain of its
// own, by address.
func (k Key) OfNode(n *cluster.Node) string {
	if k.IsRack() {
		if v, ok := n.Labels[labels.Rack]; ok && v != "" {
			return v
		}
		return n.Address + " (no rack)"
	}
	if v, ok := n.Labels[labels.SabakanPrefix+k.Label]; ok {
		return v
	}
	return k.own(n.Address)
}

// isOwn reports whether domain names a machine or node without the key's
// label (or a node without a rack).
func (k Key) isOwn(domain string) bool {
	if k.IsRack() {
		return strings.HasSuffix(domain, " (no rack)")
	}
	return strings.HasSuffix(domain, " (no "+k.Label+" label)")
}

// Describe names a domain for people: "rack 4", "power-feed b", or
// "machine S000123 (no power-feed label)".
func (k Key) Describe(domain string) string {
	switch {
	case k.isOwn(domain) && k.IsRack():
		return "node " + domain
	case k.isOwn(domain):
		return "machine " + domain
	}
	return k.Name() + " " + domain
}

// DescribeAll names several domains, in the order given: "racks 4, 11",
// "power-feed a, b", "rack 4".
func (k Key) DescribeAll(domains []string) string {
	if len(domains) == 1 {
		return k.Describe(domains[0])
	}
	var b strings.Builder
	if k.IsRack() {
		b.WriteString("racks ")
	} else {
		b.WriteString(k.Label + " ")
	}
	for i, d := range domains {
		if i > 0 {
			b.WriteString(", ")
		}
		if k.isOwn(d) {
			d = k.Describe(d)
		}
		b.WriteString(d)
	}
	return b.String()
}

// Compare orders domains as reports list them: racks by number, label
// values as text, and the domains of machines without the label last.
func (k Key) Compare(a, b string) int {
	if oa, ob := k.isOwn(a), k.isOwn(b); oa != ob {
		if oa {
			return 1
		}
		return -1
	}
	if k.IsRack() && len(a) != len(b) && isDigits(a) && isDigits(b) {
		// Decimal numbers without leading zeros: the shorter is smaller.
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Limit is the most control planes one domain may hold, of n, for etcd to
// keep its quorum (floor(n/2)+1 members) when the domain is lost:
// floor((n-1)/2). With fewer than 3 control planes it is 0: losing the
// domain of any of them loses the quorum.
func Limit(n int) int {
	if n < 1 {
		return 0
	}
	return (n - 1) / 2
}

// Quorum is the number of etcd members, of n, that keep its quorum:
// floor(n/2)+1.
func Quorum(n int) int { return n/2 + 1 }

// BreaksQuorum reports whether losing a domain that holds held of n
// control planes breaks etcd's quorum.
func BreaksQuorum(held, n int) bool { return held > Limit(n) }
