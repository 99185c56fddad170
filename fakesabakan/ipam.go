package fakesabakan

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
)

// IPAMConfig is sabakan's IPAM configuration (PUT /api/v1/config/ipam,
// `sabactl ipam set`): how a registered machine gets its index in the rack
// and its addresses. The JSON names are sabakan's.
type IPAMConfig struct {
	MaxNodesInRack    uint   `json:"max-nodes-in-rack"`
	NodeIPv4Pool      string `json:"node-ipv4-pool"`
	NodeIPv4Offset    string `json:"node-ipv4-offset,omitempty"`
	NodeRangeSize     uint   `json:"node-ipv4-range-size"`
	NodeRangeMask     uint   `json:"node-ipv4-range-mask"`
	NodeIPPerNode     uint   `json:"node-ip-per-node"`
	NodeIndexOffset   uint   `json:"node-index-offset"`
	NodeGatewayOffset uint   `json:"node-gateway-offset"`

	BMCIPv4Pool      string `json:"bmc-ipv4-pool"`
	BMCIPv4Offset    string `json:"bmc-ipv4-offset,omitempty"`
	BMCRangeSize     uint   `json:"bmc-ipv4-range-size"`
	BMCRangeMask     uint   `json:"bmc-ipv4-range-mask"`
	BMCGatewayOffset uint   `json:"bmc-ipv4-gateway-offset"`
}

// ReadIPAMConfig reads an IPAM configuration in sabakan's JSON; an unknown
// field or trailing data is an error. It is not validated.
func ReadIPAMConfig(r io.Reader) (IPAMConfig, error) {
	var c IPAMConfig
	if err := decodeStrict(r, &c); err != nil {
		return IPAMConfig{}, fmt.Errorf("IPAM configuration: %w", err)
	}
	return c, nil
}

// Validate checks what sabakan checks: every count and offset that must be
// set is set, the pools are IPv4 networks with their host part cleared, the
// offsets are IPv4 addresses and the masks are 8 to 32 bits.
func (c *IPAMConfig) Validate() error {
	positive := []struct {
		name string
		v    uint
	}{
		{"max-nodes-in-rack", c.MaxNodesInRack},
		{"node-ipv4-range-size", c.NodeRangeSize},
		{"node-ip-per-node", c.NodeIPPerNode},
		{"node-index-offset", c.NodeIndexOffset},
		{"node-gateway-offset", c.NodeGatewayOffset},
		{"bmc-ipv4-range-size", c.BMCRangeSize},
		{"bmc-ipv4-gateway-offset", c.BMCGatewayOffset},
	}
	for _, p := range positive {
		if p.v == 0 {
			return fmt.Errorf("%s: must not be zero", p.name)
		}
	}
	for _, p := range []struct {
		name string
		v    uint
	}{{"node-ipv4-range-size", c.NodeRangeSize}, {"bmc-ipv4-range-size", c.BMCRangeSize}} {
		if p.v > 31 {
			return fmt.Errorf("%s: %d bits: must be 1 to 31", p.name, p.v)
		}
	}
	for _, p := range []struct {
		name string
		v    uint
	}{{"node-ipv4-range-mask", c.NodeRangeMask}, {"bmc-ipv4-range-mask", c.BMCRangeMask}} {
		if p.v < 8 || p.v > 32 {
			return fmt.Errorf("%s: %d: must be 8 to 32", p.name, p.v)
		}
	}
	if _, err := parsePool("node-ipv4-pool", c.NodeIPv4Pool); err != nil {
		return err
	}
	if _, err := parseOffset("node-ipv4-offset", c.NodeIPv4Offset); err != nil {
		return err
	}
	if _, err := parsePool("bmc-ipv4-pool", c.BMCIPv4Pool); err != nil {
		return err
	}
	if _, err := parseOffset("bmc-ipv4-offset", c.BMCIPv4Offset); err != nil {
		return err
	}
	return nil
}

func parsePool(name, s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("%s: %q is not an IPv4 network such as 10.69.0.0/16", name, s)
	}
	if p != p.Masked() {
		return netip.Prefix{}, fmt.Errorf("%s: %q: the host part must be cleared (%s)", name, s, p.Masked())
	}
	return p, nil
}

// parseOffset reads an address offset; empty means 0.0.0.0.
func parseOffset(name, s string) (uint32, error) {
	if s == "" {
		return 0, nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, fmt.Errorf("%s: %q is not an IPv4 address such as 0.0.1.0", name, s)
	}
	return toUint32(a), nil
}

func toUint32(a netip.Addr) uint32 {
	b := a.As4()
	return binary.BigEndian.Uint32(b[:])
}

func fromUint32(n uint32) netip.Addr {
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], n)
	return netip.AddrFrom4(b)
}

// NICConfig is one interface's configuration in a machine's info, as
// sabakan's REST API shows it.
type NICConfig struct {
	Address  string `json:"address"`
	Netmask  string `json:"netmask"`
	MaskBits int    `json:"maskbits"`
	Gateway  string `json:"gateway"`
}

// MachineInfo is what sabakan derives from the IPAM configuration for a
// machine: its NICs and its BMC's NIC.
type MachineInfo struct {
	Network struct {
		IPv4 []NICConfig `json:"ipv4"`
	} `json:"network"`
	BMC struct {
		IPv4 NICConfig `json:"ipv4"`
	} `json:"bmc"`
}

// addresses is what the IPAM configuration gives a machine at (rack, index).
type addresses struct {
	node []string
	bmc  string
	info MachineInfo
}

// assign computes a machine's addresses as ipam.md describes: the node's
// first address is pool + offset + 2^range-size * ip-per-node * rack +
// index, the others follow 2^range-size apart; the BMC's is bmc-pool +
// bmc-offset + 2^bmc-range-size * rack + index. An address that would fall
// outside its pool is an error (sabakan would hand it out anyway).
func (c *IPAMConfig) assign(rack, index int) (addresses, error) {
	var out addresses
	pool, _ := parsePool("node-ipv4-pool", c.NodeIPv4Pool)
	off, _ := parseOffset("node-ipv4-offset", c.NodeIPv4Offset)
	size := uint64(1) << c.NodeRangeSize
	first := uint64(toUint32(pool.Addr())) + uint64(off) + size*uint64(c.NodeIPPerNode)*uint64(rack) + uint64(index)
	for i := range uint64(c.NodeIPPerNode) {
		a, ok := inPool(pool, first+i*size)
		if !ok {
			return out, fmt.Errorf("rack %d, index %d: address %d of the node is outside node-ipv4-pool %s", rack, index, i, pool)
		}
		out.node = append(out.node, a.String())
		out.info.Network.IPv4 = append(out.info.Network.IPv4, nic(a, int(c.NodeRangeMask), c.NodeGatewayOffset))
	}
	bpool, _ := parsePool("bmc-ipv4-pool", c.BMCIPv4Pool)
	boff, _ := parseOffset("bmc-ipv4-offset", c.BMCIPv4Offset)
	b, ok := inPool(bpool, uint64(toUint32(bpool.Addr()))+uint64(boff)+(uint64(1)<<c.BMCRangeSize)*uint64(rack)+uint64(index))
	if !ok {
		return out, fmt.Errorf("rack %d, index %d: the BMC address is outside bmc-ipv4-pool %s", rack, index, bpool)
	}
	out.bmc = b.String()
	out.info.BMC.IPv4 = nic(b, int(c.BMCRangeMask), c.BMCGatewayOffset)
	return out, nil
}

func inPool(pool netip.Prefix, n uint64) (netip.Addr, bool) {
	if n > 0xffffffff {
		return netip.Addr{}, false
	}
	a := fromUint32(uint32(n))
	return a, pool.Contains(a)
}

// nic is an address's configuration: its range's mask, and the gateway at
// the given offset from the start of that range.
func nic(a netip.Addr, bits int, gatewayOffset uint) NICConfig {
	p := netip.PrefixFrom(a, bits).Masked()
	m := uint32(0xffffffff) << (32 - bits)
	if bits == 0 {
		m = 0
	}
	return NICConfig{
		Address:  a.String(),
		Netmask:  fromUint32(m).String(),
		MaskBits: bits,
		Gateway:  fromUint32(toUint32(p.Addr()) + uint32(gatewayOffset)).String(),
	}
}
