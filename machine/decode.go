package machine

import (
	"strconv"
	"time"

	"github.com/ckegen/ckegen/internal/jsonscan"
)

// DecodeList decodes a machine list in one pass, without reflection: a
// JSON array of machines or, with envelope, a searchMachines answer
// {"data":{"searchMachines":[...]}}, as sabakan, the compatible server
// and ckegen's own writers put them. It reports false for anything but
// that plain shape: a key other than the fields of Machine (or of the
// envelope) as they are spelled, a key twice in an object, a null in a
// list or for the list, a string with an escape or that is not UTF-8, a
// number where a string goes or the other way, a number that is not an
// integer where an int goes, a date that does not parse, data after the
// value, or JSON that is not valid. A null for a field is read as
// encoding/json reads it: the field's zero value. The caller then
// decodes the input with encoding/json,
// whose result or error is the reference: on what DecodeList accepts,
// encoding/json gives the same machines (TestDecodeListMatchesJSON), so
// the fast path decides nothing.
//
// The machines' strings are copied out of data, which may be reused.
// Equal short strings that repeat from machine to machine (a role, a
// label, a BMC type, a state) share one copy.
func DecodeList(data []byte, envelope bool) ([]Machine, bool) {
	d := decoder{Scanner: jsonscan.New(data)}
	if envelope {
		if !d.Delim('{') || !d.key("data") || !d.Delim('{') || !d.key("searchMachines") {
			return nil, false
		}
	}
	ms, ok := d.list()
	if !ok {
		return nil, false
	}
	// Each Delim reads one: the data object's end, then the answer's.
	if envelope && !(d.Delim('}') && d.Delim('}')) { //nolint:staticcheck // SA4000: not the same call twice
		return nil, false
	}
	if !d.End() {
		return nil, false
	}
	return ms, true
}

// decoder reads machines with a scanner. Every method reports false when
// the input is not what it reads; the decoding then gives up.
type decoder struct {
	jsonscan.Scanner
	// shared holds the short strings that repeat: a machine's role,
	// labels and BMC type are mostly one of a few; the last ones are the
	// string each field had last.
	shared                                            map[string]string
	lastRole, lastName, lastValue, lastBMC, lastState string
	// labels, addrs and times are where machines' labels, addresses and
	// timestamps are carved from, a block at a time.
	labels []Label
	addrs  []string
	times  []time.Time
}

// The bounds of shared: strings up to maxShared bytes, at most
// maxSharedCount of them (an inventory has a few roles and labels; an
// answer of unique strings does not fill memory).
const (
	maxShared      = 64
	maxSharedCount = 4096
	blockSize      = 1024
	// minMachineBytes is less than a machine with the fields ckegen
	// reads takes in JSON (about 300 bytes).
	minMachineBytes = 128
)

// key reads an object's only member name, want, and its colon.
func (d *decoder) key(want string) bool {
	k, ok := d.Str()
	return ok && string(k) == want && d.Delim(':')
}

// string reads a string into a new string.
func (d *decoder) string() (string, bool) {
	s, ok := d.Str()
	return string(s), ok
}

// sharedString reads a string, shared with its equals when short: last
// is the string the same field had last (inventories come in runs of
// the same role, label, BMC type and state), then the decoder's map.
func (d *decoder) sharedString(last *string) (string, bool) {
	s, ok := d.Str()
	if !ok {
		return "", false
	}
	if string(s) == *last {
		return *last, true
	}
	if len(s) > maxShared {
		return string(s), true
	}
	v, ok := d.shared[string(s)]
	if !ok {
		v = string(s)
		if d.shared == nil {
			d.shared = make(map[string]string)
		}
		if len(d.shared) < maxSharedCount {
			d.shared[v] = v
		}
	}
	*last = v
	return v, true
}

// int reads an integer that fits an int, as encoding/json does
// (strconv.ParseInt).
func (d *decoder) int() (int, bool) {
	num, integer, ok := d.Number()
	if !ok || !integer {
		return 0, false
	}
	neg := num[0] == '-'
	digits := num
	if neg {
		digits = num[1:]
	}
	if len(digits) > 18 {
		// Past what cannot overflow: strconv decides.
		n, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil || int64(int(n)) != n {
			return 0, false
		}
		return int(n), true
	}
	n := 0
	for _, c := range digits {
		n = n*10 + int(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// float reads a number into a float64, as encoding/json does
// (strconv.ParseFloat, refusing one out of range).
func (d *decoder) float() (float64, bool) {
	num, integer, ok := d.Number()
	if !ok {
		return 0, false
	}
	if integer && num[0] != '-' && len(num) <= 15 {
		// Exact in a float64, as ParseFloat gives it.
		n := 0
		for _, c := range num {
			n = n*10 + int(c-'0')
		}
		return float64(n), true
	}
	f, err := strconv.ParseFloat(string(num), 64)
	return f, err == nil
}

// time reads a date as time.Time's UnmarshalJSON, which encoding/json
// calls, reads it.
func (d *decoder) time() (time.Time, bool) {
	d.Space()
	start := d.Offset()
	if _, ok := d.Str(); !ok {
		return time.Time{}, false
	}
	var t time.Time
	// The string with its quotes, as encoding/json hands it over.
	if err := t.UnmarshalJSON(d.Since(start)); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// list reads an array of machines. The first machine's size tells how
// many the rest of the input holds, to allocate the list once; a size
// under minMachineBytes counts as that, so that a small first machine
// does not make the list larger than its input's machines would.
func (d *decoder) list() ([]Machine, bool) {
	ms := []Machine{}
	ok := d.Array(func() bool {
		start := d.Offset()
		var m Machine
		if !d.machine(&m) {
			return false
		}
		if len(ms) == 0 {
			size := max(d.Offset()-start, minMachineBytes)
			ms = make([]Machine, 0, (d.Len()-start)/size*9/8+1)
		}
		ms = append(ms, m)
		return true
	})
	if !ok {
		return nil, false
	}
	return ms, true
}

// The member names of each object, as Machine's fields spell them.
var (
	machineNames = []string{"spec", "status"}
	specNames    = []string{"serial", "labels", "rack", "indexInRack", "role", "ipv4", "registerDate", "retireDate", "bmc"}
	labelNames   = []string{"name", "value"}
	bmcNames     = []string{"bmcType", "ipv4"}
	statusNames  = []string{"state", "timestamp", "duration"}
)

func (d *decoder) machine(m *Machine) bool {
	return d.Object(machineNames, func(name string) bool {
		if name == "spec" {
			return d.spec(&m.Spec)
		}
		return d.status(&m.Status)
	})
}

func (d *decoder) spec(sp *Spec) bool {
	return d.Object(specNames, func(name string) bool {
		var ok bool
		switch name {
		case "serial":
			sp.Serial, ok = d.string()
		case "labels":
			sp.Labels, ok = carveList(d, &d.labels, (*decoder).label)
		case "rack":
			sp.Rack, ok = d.int()
		case "indexInRack":
			sp.IndexInRack, ok = d.int()
		case "role":
			sp.Role, ok = d.sharedString(&d.lastRole)
		case "ipv4":
			sp.IPv4, ok = carveList(d, &d.addrs, (*decoder).addr)
		case "registerDate":
			sp.RegisterDate, ok = d.time()
		case "retireDate":
			sp.RetireDate, ok = d.time()
		case "bmc":
			ok = d.bmc(&sp.BMC)
		}
		return ok
	})
}

// carveList reads a list into block, shared with other machines' lists:
// the list returned has no room to grow, so an append to it copies it
// out of the block. A full block is replaced by a new one, with the
// list's elements so far.
func carveList[T any](d *decoder, block *[]T, read func(*decoder, *T) bool) ([]T, bool) {
	start := len(*block)
	ok := d.Array(func() bool {
		if len(*block) == cap(*block) {
			n := len(*block) - start
			next := make([]T, n, max(blockSize, 2*(n+1)))
			copy(next, (*block)[start:])
			*block, start = next, 0
		}
		var zero T
		*block = append(*block, zero)
		return read(d, &(*block)[len(*block)-1])
	})
	if !ok {
		return nil, false
	}
	end := len(*block)
	if end == start {
		return []T{}, true
	}
	return (*block)[start:end:end], true
}

func (d *decoder) label(l *Label) bool {
	return d.Object(labelNames, func(name string) bool {
		var ok bool
		if name == "name" {
			l.Name, ok = d.sharedString(&d.lastName)
		} else {
			l.Value, ok = d.sharedString(&d.lastValue)
		}
		return ok
	})
}

func (d *decoder) addr(a *string) bool {
	var ok bool
	*a, ok = d.string()
	return ok
}

func (d *decoder) bmc(b *BMC) bool {
	return d.Object(bmcNames, func(name string) bool {
		var ok bool
		if name == "bmcType" {
			b.BMCType, ok = d.sharedString(&d.lastBMC)
		} else {
			b.IPv4, ok = d.string()
		}
		return ok
	})
}

func (d *decoder) status(st *Status) bool {
	return d.Object(statusNames, func(name string) bool {
		switch name {
		case "state":
			s, ok := d.sharedString(&d.lastState)
			st.State = State(s)
			return ok
		case "timestamp":
			t, ok := d.time()
			if ok {
				if len(d.times) == cap(d.times) {
					d.times = make([]time.Time, 0, blockSize)
				}
				d.times = append(d.times, t)
				st.Timestamp = &d.times[len(d.times)-1]
			}
			return ok
		}
		var ok bool
		st.Duration, ok = d.float()
		return ok
	})
}
