package machine

import (
	"fmt"
	"net/netip"
)

// Made-up machines are those a what-if assumes before they exist
// (`--assume-new`, an order, a purchase of the forecast): their addresses
// are in 240.0.0.0/4, which IANA reserves and no site gives a machine,
// and their serials say what they are.
var madeUp = netip.MustParsePrefix("240.0.0.0/4")

// MadeUpIndex is the first index in its rack a made-up machine has.
const MadeUpIndex = 1000

// ProductLabel is sabakan's label for a machine's product.
const ProductLabel = "product"

// MadeUpSerial is the serial of the k-th made-up machine of role in
// rack arriving on date (YYYYMMDD): the same machines get the same
// serials whatever order they are made up in, and sort as sabakan sorts
// serials, by date, role, rack and number.
func MadeUpSerial(date, role string, rack, k int) string {
	return fmt.Sprintf("made-up-%s-%s-r%04d-%05d", date, role, rack, k)
}

// MadeUpAddress is the address of the k-th made-up machine (k below 2^28).
func MadeUpAddress(k int) netip.Addr {
	b := madeUp.Addr().As4()
	v := uint32(b[0])<<24 | uint32(k)&(1<<28-1)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// MadeUp reports whether m is a made-up machine: its address is in
// 240.0.0.0/4.
func (m *Machine) MadeUp() bool { return IsMadeUpAddress(m.Address()) }

// IsMadeUpAddress reports whether addr is a made-up machine's.
func IsMadeUpAddress(addr string) bool {
	a, err := netip.ParseAddr(addr)
	return err == nil && madeUp.Contains(a)
}
