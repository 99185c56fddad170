package machine

import (
	"strconv"
	"time"
	"unicode/utf8"
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
	d := decoder{b: data}
	d.ws()
	if envelope {
		if !d.open('{') || !d.key("data") || !d.open('{') || !d.key("searchMachines") {
			return nil, false
		}
	}
	ms, ok := d.list()
	if !ok {
		return nil, false
	}
	if envelope && !(d.close('}') && d.close('}')) {
		return nil, false
	}
	d.ws()
	if d.p != len(d.b) {
		return nil, false
	}
	return ms, true
}

// decoder reads b from p. Every method reports false when the input is
// not what it reads; the decoding then gives up.
type decoder struct {
	b []byte
	p int
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

func (d *decoder) ws() {
	b, p := d.b, d.p
	for p < len(b) && jsonSpace[b[p]] {
		p++
	}
	d.p = p
}

// jsonSpace marks JSON's white space: an indented list is mostly that.
var jsonSpace = [256]bool{' ': true, '\t': true, '\n': true, '\r': true}

// at is the byte at p after whitespace, or 0 at the end (0 is never
// valid there).
func (d *decoder) at() byte {
	d.ws()
	if d.p < len(d.b) {
		return d.b[d.p]
	}
	return 0
}

// open reads c, '{' or '['.
func (d *decoder) open(c byte) bool {
	if d.at() != c {
		return false
	}
	d.p++
	return true
}

func (d *decoder) close(c byte) bool { return d.open(c) }

// null reads a null if one comes. encoding/json leaves a field a null is
// given for alone (a string, a number, a date, an object) or sets it to
// nil (a list, a pointer): a field's zero value, since each field is
// read once.
func (d *decoder) null() bool {
	if d.at() != 'n' || len(d.b)-d.p < 4 || string(d.b[d.p:d.p+4]) != "null" {
		return false
	}
	d.p += 4
	return true
}

// key reads an object's only member key, want, and its colon.
func (d *decoder) key(want string) bool {
	k, ok := d.str()
	return ok && string(k) == want && d.open(':')
}

// member reads the next member key of an object after its '{' (first) or
// after a value, and the colon; end reports the object's '}' instead.
func (d *decoder) member(first bool) (key []byte, end, ok bool) {
	c := d.at()
	if c == '}' {
		d.p++
		return nil, true, true
	}
	if !first {
		if c != ',' {
			return nil, false, false
		}
		d.p++
	}
	if key, ok = d.str(); !ok || !d.open(':') {
		return nil, false, false
	}
	return key, false, true
}

// element reads what comes before the next element of an array after its
// '[' (first) or after an element; end reports the array's ']' instead.
func (d *decoder) element(first bool) (end, ok bool) {
	c := d.at()
	if c == ']' {
		d.p++
		return true, true
	}
	if first {
		return false, true
	}
	if c != ',' {
		return false, false
	}
	d.p++
	return false, true
}

// plainByte marks the bytes a string may hold as they are: not ", \,
// a control character or a byte of a multi-byte UTF-8 sequence.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str reads a string without escapes, and returns its bytes, which must
// be UTF-8.
func (d *decoder) str() ([]byte, bool) {
	if d.at() != '"' {
		return nil, false
	}
	start := d.p + 1
	i := start
	for i < len(d.b) && plainByte[d.b[i]] {
		i++
	}
	if i < len(d.b) && d.b[i] == '"' {
		d.p = i + 1
		return d.b[start:i], true
	}
	// Not ASCII, or not a plain string.
	for ; i < len(d.b); i++ {
		switch c := d.b[i]; {
		case c == '"':
			s := d.b[start:i]
			if !utf8.Valid(s) {
				return nil, false
			}
			d.p = i + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// string reads a string into a new string.
func (d *decoder) string() (string, bool) {
	s, ok := d.str()
	return string(s), ok
}

// sharedString reads a string, shared with its equals when short: last
// is the string the same field had last (inventories come in runs of
// the same role, label, BMC type and state), then the decoder's map.
func (d *decoder) sharedString(last *string) (string, bool) {
	s, ok := d.str()
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

// number reads a JSON number and returns its bytes; integer reports
// whether it has neither a fraction nor an exponent.
func (d *decoder) number() (num []byte, integer, ok bool) {
	d.ws()
	b, p := d.b, d.p
	start := p
	if p < len(b) && b[p] == '-' {
		p++
	}
	switch {
	case p < len(b) && b[p] == '0':
		p++
	case p < len(b) && b[p] >= '1' && b[p] <= '9':
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	default:
		return nil, false, false
	}
	integer = true
	if p < len(b) && b[p] == '.' {
		integer = false
		p++
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			return nil, false, false
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	if p < len(b) && (b[p] == 'e' || b[p] == 'E') {
		integer = false
		p++
		if p < len(b) && (b[p] == '+' || b[p] == '-') {
			p++
		}
		if p >= len(b) || b[p] < '0' || b[p] > '9' {
			return nil, false, false
		}
		for p < len(b) && b[p] >= '0' && b[p] <= '9' {
			p++
		}
	}
	d.p = p
	return b[start:p], integer, true
}

// int reads an integer that fits an int, as encoding/json does
// (strconv.ParseInt).
func (d *decoder) int() (int, bool) {
	num, integer, ok := d.number()
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
	num, integer, ok := d.number()
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
	d.ws()
	start := d.p
	if _, ok := d.str(); !ok {
		return time.Time{}, false
	}
	var t time.Time
	// The string with its quotes, as encoding/json hands it over.
	if err := t.UnmarshalJSON(d.b[start:d.p]); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// list reads an array of machines. The first machine's size tells how
// many the rest of the input holds, to allocate the list once; a size
// under minMachineBytes counts as that, so that a small first machine
// does not make the list larger than its input's machines would.
func (d *decoder) list() ([]Machine, bool) {
	if !d.open('[') {
		return nil, false
	}
	var ms []Machine
	for first := true; ; first = false {
		end, ok := d.element(first)
		if !ok {
			return nil, false
		}
		if end {
			break
		}
		start := d.p
		var m Machine
		if !d.machine(&m) {
			return nil, false
		}
		if first {
			size := max(d.p-start, minMachineBytes)
			ms = make([]Machine, 0, (len(d.b)-start)/size*9/8+1)
		}
		ms = append(ms, m)
	}
	if ms == nil {
		ms = []Machine{}
	}
	return ms, true
}

// The members of each object, as bits: a key twice gives up, and so does
// a key that is none of them (0).
const (
	fSpec = 1 << iota
	fStatus
)

func machineField(key []byte) int {
	switch string(key) {
	case "spec":
		return fSpec
	case "status":
		return fStatus
	}
	return 0
}

// members reads an object, calling value for each member whose value is
// not null, with the member's bit (field gives it).
func (d *decoder) members(field func([]byte) int, value func(bit int) bool) bool {
	if !d.open('{') {
		return false
	}
	seen := 0
	for first := true; ; first = false {
		key, end, ok := d.member(first)
		if !ok || end {
			return ok
		}
		bit := field(key)
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		if !d.null() && !value(bit) {
			return false
		}
	}
}

func (d *decoder) machine(m *Machine) bool {
	return d.members(machineField, func(bit int) bool {
		if bit == fSpec {
			return d.spec(&m.Spec)
		}
		return d.status(&m.Status)
	})
}

const (
	fSerial = 1 << iota
	fLabels
	fRack
	fIndexInRack
	fRole
	fIPv4
	fRegisterDate
	fRetireDate
	fBMC
)

func specField(key []byte) int {
	switch string(key) {
	case "serial":
		return fSerial
	case "labels":
		return fLabels
	case "rack":
		return fRack
	case "indexInRack":
		return fIndexInRack
	case "role":
		return fRole
	case "ipv4":
		return fIPv4
	case "registerDate":
		return fRegisterDate
	case "retireDate":
		return fRetireDate
	case "bmc":
		return fBMC
	}
	return 0
}

func (d *decoder) spec(sp *Spec) bool {
	return d.members(specField, func(bit int) bool {
		var ok bool
		switch bit {
		case fSerial:
			sp.Serial, ok = d.string()
		case fLabels:
			sp.Labels, ok = d.labelList()
		case fRack:
			sp.Rack, ok = d.int()
		case fIndexInRack:
			sp.IndexInRack, ok = d.int()
		case fRole:
			sp.Role, ok = d.sharedString(&d.lastRole)
		case fIPv4:
			sp.IPv4, ok = d.addrList()
		case fRegisterDate:
			sp.RegisterDate, ok = d.time()
		case fRetireDate:
			sp.RetireDate, ok = d.time()
		case fBMC:
			ok = d.bmc(&sp.BMC)
		}
		return ok
	})
}

// labelList reads labels into a block shared with other machines'.
func (d *decoder) labelList() ([]Label, bool) {
	return carveList(d, &d.labels, (*decoder).label)
}

// carveList reads a list into block, shared with other machines' lists:
// the list returned has no room to grow, so an append to it copies it
// out of the block. A full block is replaced by a new one, with the
// list's elements so far.
func carveList[T any](d *decoder, block *[]T, read func(*decoder, *T) bool) ([]T, bool) {
	if !d.open('[') {
		return nil, false
	}
	start := len(*block)
	for first := true; ; first = false {
		end, ok := d.element(first)
		if !ok {
			return nil, false
		}
		if end {
			break
		}
		if len(*block) == cap(*block) {
			n := len(*block) - start
			next := make([]T, n, max(blockSize, 2*(n+1)))
			copy(next, (*block)[start:])
			*block, start = next, 0
		}
		var zero T
		*block = append(*block, zero)
		if !read(d, &(*block)[len(*block)-1]) {
			return nil, false
		}
	}
	end := len(*block)
	if end == start {
		return []T{}, true
	}
	return (*block)[start:end:end], true
}

const (
	fName = 1 << iota
	fValue
)

func labelField(key []byte) int {
	switch string(key) {
	case "name":
		return fName
	case "value":
		return fValue
	}
	return 0
}

func (d *decoder) label(l *Label) bool {
	return d.members(labelField, func(bit int) bool {
		var ok bool
		if bit == fName {
			l.Name, ok = d.sharedString(&d.lastName)
		} else {
			l.Value, ok = d.sharedString(&d.lastValue)
		}
		return ok
	})
}

// addrList reads addresses into a block shared with other machines'.
func (d *decoder) addrList() ([]string, bool) {
	return carveList(d, &d.addrs, (*decoder).addr)
}

func (d *decoder) addr(a *string) bool {
	var ok bool
	*a, ok = d.string()
	return ok
}

const (
	fBMCType = 1 << iota
	fBMCIPv4
)

func bmcField(key []byte) int {
	switch string(key) {
	case "bmcType":
		return fBMCType
	case "ipv4":
		return fBMCIPv4
	}
	return 0
}

func (d *decoder) bmc(b *BMC) bool {
	return d.members(bmcField, func(bit int) bool {
		var ok bool
		if bit == fBMCType {
			b.BMCType, ok = d.sharedString(&d.lastBMC)
		} else {
			b.IPv4, ok = d.string()
		}
		return ok
	})
}

const (
	fState = 1 << iota
	fTimestamp
	fDuration
)

func statusField(key []byte) int {
	switch string(key) {
	case "state":
		return fState
	case "timestamp":
		return fTimestamp
	case "duration":
		return fDuration
	}
	return 0
}

func (d *decoder) status(st *Status) bool {
	return d.members(statusField, func(bit int) bool {
		switch bit {
		case fState:
			s, ok := d.sharedString(&d.lastState)
			st.State = State(s)
			return ok
		case fTimestamp:
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
