package failuredomain

import (
	"slices"
	"strconv"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/machine"
)

// Census is where a cluster's control planes are, by failure domain: what
// a tick's check, the status and the resilience report read.
type Census struct {
	Key Key
	// ControlPlanes is the number of the cluster's control planes (N).
	ControlPlanes int
	// Domains are the domains that hold at least one control plane, in the
	// key's order (Key.Compare).
	Domains []Domain
}

// Domain is one failure domain and the control planes it holds.
type Domain struct {
	Name string
	// Addresses are its control planes' addresses, in the cluster's order.
	Addresses []string
}

// Held is the number of control planes the domain holds.
func (d Domain) Held() int { return len(d.Addresses) }

// ControlPlanes counts the control planes of c by failure domain. A control
// plane's domain is its machine's (by its first IPv4 address, as nodes and
// machines are joined); for a node whose machine is not among machines, it
// is read from the labels the node was rendered with. A nil cluster has
// none.
//
// It is the check a tick makes: one pass over the machines, each compared
// with the few control-plane addresses, and nothing allocated per machine.
func ControlPlanes(key Key, machines []*machine.Machine, c *cluster.Cluster) Census {
	cen := Census{Key: key}
	if c == nil {
		return cen
	}
	var cps []*cluster.Node
	for _, n := range c.Nodes {
		if n != nil && n.ControlPlane {
			cps = append(cps, n)
		}
	}
	cen.ControlPlanes = len(cps)
	if len(cps) == 0 {
		return cen
	}
	find := indexOf(cps)
	domains := make([]string, len(cps))
	found := make([]bool, len(cps))
	left := len(cps)
	for _, m := range machines {
		if len(m.Spec.IPv4) == 0 {
			continue
		}
		i := find(m.Spec.IPv4[0])
		if i < 0 || found[i] {
			continue
		}
		domains[i], found[i] = key.Of(m), true
		if left--; left == 0 {
			break
		}
	}
	for i, n := range cps {
		if !found[i] {
			domains[i] = key.OfNode(n)
		}
	}
	for i, n := range cps {
		j := slices.IndexFunc(cen.Domains, func(d Domain) bool { return d.Name == domains[i] })
		if j < 0 {
			cen.Domains = append(cen.Domains, Domain{Name: domains[i]})
			j = len(cen.Domains) - 1
		}
		cen.Domains[j].Addresses = append(cen.Domains[j].Addresses, n.Address)
	}
	slices.SortFunc(cen.Domains, func(a, b Domain) int { return key.Compare(a.Name, b.Name) })
	return cen
}

// indexOf returns the function that finds an address among the control
// planes': a few string comparisons for the usual handful (cheaper than
// hashing every machine's address), a map beyond.
func indexOf(cps []*cluster.Node) func(addr string) int {
	if len(cps) <= 8 {
		return func(addr string) int {
			for i, n := range cps {
				if n.Address == addr {
					return i
				}
			}
			return -1
		}
	}
	at := make(map[string]int, len(cps))
	for i, n := range cps {
		at[n.Address] = i
	}
	return func(addr string) int {
		if i, ok := at[addr]; ok {
			return i
		}
		return -1
	}
}

// Limit is the most control planes a domain may hold for the cluster's
// etcd to survive its loss (failuredomain.Limit of N).
func (c Census) Limit() int { return Limit(c.ControlPlanes) }

// Quorum is the number of etcd members that keep the quorum.
func (c Census) Quorum() int { return Quorum(c.ControlPlanes) }

// Held is the number of control planes domain holds (0 when none).
func (c Census) Held(domain string) int {
	for _, d := range c.Domains {
		if d.Name == domain {
			return d.Held()
		}
	}
	return 0
}

// AtRisk are the domains whose loss breaks etcd's quorum, in the key's
// order; nil when there are none.
func (c Census) AtRisk() []Domain {
	var out []Domain
	for _, d := range c.Domains {
		if BreaksQuorum(d.Held(), c.ControlPlanes) {
			out = append(out, d)
		}
	}
	return out
}

// Words says what losing a domain at risk does, as the status and the
// warnings say it: "rack 4 holds 2 of 3 control planes: losing it breaks
// etcd's quorum".
func (c Census) Words(d Domain) string {
	return HoldsText(c.Key, d.Name, d.Held(), c.ControlPlanes) + ": losing it breaks etcd's quorum"
}

// Warnings are Words for every domain at risk, in the key's order.
func (c Census) Warnings() []string {
	var out []string
	for _, d := range c.AtRisk() {
		out = append(out, c.Words(d))
	}
	return out
}

// HoldsText is "rack 4 holds 2 of 3 control planes".
func HoldsText(key Key, domain string, held, n int) string {
	b := make([]byte, 0, 64)
	b = append(b, key.Describe(domain)...)
	b = append(b, " holds "...)
	b = strconv.AppendInt(b, int64(held), 10)
	b = append(b, " of "...)
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		b = append(b, " control plane"...)
	} else {
		b = append(b, " control planes"...)
	}
	return string(b)
}
