package machine

// The decoding of a machine list on jsontext's Decoder (token by token,
// no reflection), the candidate DecodeList is measured against
// (BenchmarkDecodeList20000 and BenchmarkParse20000, impl=jsontext;
// docs/design.md D18): it reads what DecodeList reads and gives up where
// it gives up (TestDecodeListTextMatches). Above the tokens, its code is
// DecodeList's.

import (
	"bytes"
	"io"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/jsonscan"
	"github.com/go-json-experiment/json/jsontext"
	"pgregory.net/rapid"
)

// decodeListText is DecodeList on jsontext. Names twice are found by the
// decoder's own bits, as DecodeList finds them; invalid UTF-8 is an error
// of jsontext's, where DecodeList gives up.
func decodeListText(data []byte, envelope bool) ([]Machine, bool) {
	d := textDecoder{dec: jsontext.NewDecoder(bytes.NewBuffer(data), jsontext.AllowDuplicateNames(true)), n: len(data)}
	if envelope {
		if !d.open('{') || !d.key("data") || !d.open('{') || !d.key("searchMachines") {
			return nil, false
		}
	}
	ms, ok := d.list()
	if !ok {
		return nil, false
	}
	if envelope && !(d.close('}') && d.close('}')) { //nolint:staticcheck // SA4000: each call reads one brace
		return nil, false
	}
	if _, err := d.dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	return ms, true
}

// textDecoder is DecodeList's decoder with jsontext's Decoder in place of
// the scanner.
type textDecoder struct {
	dec                                               *jsontext.Decoder
	n                                                 int
	shared                                            map[string]string
	lastRole, lastName, lastValue, lastBMC, lastState string
	labels                                            []Label
	addrs                                             []string
	times                                             []time.Time
}

// open reads c, '{' or '['; close reads '}' or ']'.
func (d *textDecoder) open(c byte) bool {
	if d.dec.PeekKind() != jsontext.Kind(c) {
		return false
	}
	_, err := d.dec.ReadToken()
	return err == nil
}

func (d *textDecoder) close(c byte) bool { return d.open(c) }

func (d *textDecoder) null() bool {
	if d.dec.PeekKind() != 'n' {
		return false
	}
	_, err := d.dec.ReadToken()
	return err == nil
}

func (d *textDecoder) key(want string) bool {
	k, ok := d.str()
	return ok && string(k) == want
}

// member reads the next member name of an object, or its end.
func (d *textDecoder) member(first bool) (key []byte, end, ok bool) {
	if d.dec.PeekKind() == '}' {
		return nil, true, d.open('}')
	}
	key, ok = d.str()
	return key, false, ok
}

// element reads the end of an array if it comes.
func (d *textDecoder) element(first bool) (end, ok bool) {
	if d.dec.PeekKind() == ']' {
		return true, d.open(']')
	}
	return false, true
}

// str reads a string without escapes (DecodeList gives up on them).
func (d *textDecoder) str() ([]byte, bool) {
	if d.dec.PeekKind() != '"' {
		return nil, false
	}
	v, err := d.dec.ReadValue()
	if err != nil || bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// number reads a number; integer reports whether it has neither a
// fraction nor an exponent.
func (d *textDecoder) number() (num []byte, integer, ok bool) {
	if d.dec.PeekKind() != '0' {
		return nil, false, false
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return nil, false, false
	}
	return v, !bytes.ContainsAny(v, ".eE"), true
}

// string reads a string into a new string.
func (d *textDecoder) string() (string, bool) {
	s, ok := d.str()
	return string(s), ok
}

// sharedString reads a string, shared with its equals when short: last
// is the string the same field had last (inventories come in runs of
// the same role, label, BMC type and state), then the textDecoder's map.
func (d *textDecoder) sharedString(last *string) (string, bool) {
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

// int reads an integer that fits an int, as encoding/json does
// (strconv.ParseInt).
func (d *textDecoder) int() (int, bool) {
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
func (d *textDecoder) float() (float64, bool) {
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

// time reads a date as time.Time's UnmarshalJSON reads it.
func (d *textDecoder) time() (time.Time, bool) {
	if d.dec.PeekKind() != '"' {
		return time.Time{}, false
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return time.Time{}, false
	}
	var t time.Time
	if err := t.UnmarshalJSON(v); err != nil {
		return time.Time{}, false
	}
	return t, true
}

// list reads an array of machines. The first machine's size tells how
// many the rest of the input holds, to allocate the list once; a size
// under minMachineBytes counts as that, so that a small first machine
// does not make the list larger than its input's machines would.
func (d *textDecoder) list() ([]Machine, bool) {
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
		start := int(d.dec.InputOffset())
		var m Machine
		if !d.machine(&m) {
			return nil, false
		}
		if first {
			size := max(int(d.dec.InputOffset())-start, minMachineBytes)
			ms = make([]Machine, 0, (d.n-start)/size*9/8+1)
		}
		ms = append(ms, m)
	}
	if ms == nil {
		ms = []Machine{}
	}
	return ms, true
}

// members reads an object, calling value with the name of each member
// whose value is not null. A name that is not one of names, or that comes
// twice, gives up.
func (d *textDecoder) members(names []string, value func(name string) bool) bool {
	if !d.open('{') {
		return false
	}
	var seen uint64
	for first := true; ; first = false {
		key, end, ok := d.member(first)
		if !ok || end {
			return ok
		}
		name := jsonscan.Once(names, key, &seen)
		if name == "" || !d.null() && !value(name) {
			return false
		}
	}
}

func (d *textDecoder) machine(m *Machine) bool {
	return d.members(machineNames, func(name string) bool {
		if name == "spec" {
			return d.spec(&m.Spec)
		}
		return d.status(&m.Status)
	})
}

func (d *textDecoder) spec(sp *Spec) bool {
	return d.members(specNames, func(name string) bool {
		var ok bool
		switch name {
		case "serial":
			sp.Serial, ok = d.string()
		case "labels":
			sp.Labels, ok = d.labelList()
		case "rack":
			sp.Rack, ok = d.int()
		case "indexInRack":
			sp.IndexInRack, ok = d.int()
		case "role":
			sp.Role, ok = d.sharedString(&d.lastRole)
		case "ipv4":
			sp.IPv4, ok = d.addrList()
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

// labelList reads labels into a block shared with other machines'.
func (d *textDecoder) labelList() ([]Label, bool) {
	return textCarveList(d, &d.labels, (*textDecoder).label)
}

// textCarveList reads a list into block, shared with other machines' lists:
// the list returned has no room to grow, so an append to it copies it
// out of the block. A full block is replaced by a new one, with the
// list's elements so far.
func textCarveList[T any](d *textDecoder, block *[]T, read func(*textDecoder, *T) bool) ([]T, bool) {
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

func (d *textDecoder) label(l *Label) bool {
	return d.members(labelNames, func(name string) bool {
		var ok bool
		if name == "name" {
			l.Name, ok = d.sharedString(&d.lastName)
		} else {
			l.Value, ok = d.sharedString(&d.lastValue)
		}
		return ok
	})
}

// addrList reads addresses into a block shared with other machines'.
func (d *textDecoder) addrList() ([]string, bool) {
	return textCarveList(d, &d.addrs, (*textDecoder).addr)
}

func (d *textDecoder) addr(a *string) bool {
	var ok bool
	*a, ok = d.string()
	return ok
}

func (d *textDecoder) bmc(b *BMC) bool {
	return d.members(bmcNames, func(name string) bool {
		var ok bool
		if name == "bmcType" {
			b.BMCType, ok = d.sharedString(&d.lastBMC)
		} else {
			b.IPv4, ok = d.string()
		}
		return ok
	})
}

func (d *textDecoder) status(st *Status) bool {
	return d.members(statusNames, func(name string) bool {
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

// TestDecodeListTextMatches: the candidate reads what DecodeList reads
// and gives up where it gives up, on every variation of jsonGen.
func TestDecodeListTextMatches(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := &jsonGen{t: t, odd: rapid.IntRange(0, 3).Draw(t, "oddness") > 0}
		envelope := rapid.Bool().Draw(t, "envelope")
		data := g.document(envelope)
		want, wantOK := DecodeList(data, envelope)
		got, ok := decodeListText(data, envelope)
		if ok != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("jsontext: %v %#v\nDecodeList: %v %#v\nfrom\n%s", ok, got, wantOK, want, data)
		}
	})
}
