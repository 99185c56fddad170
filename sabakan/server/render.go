package server

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	graphql "github.com/graph-gophers/graphql-go"

	"github.com/ckegen/ckegen/machine"
)

// render writes the response body of p, {"data":{...}} and a newline, byte
// for byte as graph-gophers' answer passes through writeJSON. It returns
// false when graph-gophers would answer otherwise (a machine not found, a
// state outside the enum, a serial that is not valid JSON once quoted, a
// duration that is not a number): the caller then executes the request
// with graph-gophers.
func (s *Store) render(b []byte, p *plan) ([]byte, bool) {
	b = append(b, `{"data":{`...)
	for i := range p.root {
		st := &p.root[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, st.key...)
		var ok bool
		switch st.kind {
		case kTypename:
			b, ok = appendString(b, st.typename), true
		case kSearchMachines:
			b, ok = s.renderSearch(b, st)
		case kMachine:
			b, ok = s.renderMachine(b, st)
		}
		if !ok {
			return b, false
		}
	}
	return append(b, "}}\n"...), true
}

func (s *Store) renderSearch(b []byte, st *step) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	now := s.now()
	b = append(b, '[')
	for i, e := range s.matching(st.having, st.notHaving, now) {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendMachine(b, st.sub, e, now); !ok {
			return b, false
		}
	}
	return append(b, ']'), true
}

func (s *Store) renderMachine(b []byte, st *step) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	e, ok := s.machines[st.serial]
	if !ok {
		return b, false
	}
	return appendMachine(b, st.sub, e, s.now())
}

// appendObject writes a JSON object with the fields the query selected,
// in its order: __typename itself, every other field by value. It returns
// false when value cannot write a field as graph-gophers would (the caller
// then answers with the resolvers instead).
func appendObject(b []byte, steps []step, value func(b []byte, st *step) ([]byte, bool)) ([]byte, bool) {
	b = append(b, '{')
	for i := range steps {
		st := &steps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, st.key...)
		if st.kind == kTypename {
			b = appendString(b, st.typename)
			continue
		}
		var ok bool
		if b, ok = value(b, st); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendMachine writes a Machine as the resolvers of graph.go give it: the
// status timestamp is the last state change in UTC, the duration the
// seconds since then.
func appendMachine(b []byte, steps []step, e *entry, now time.Time) ([]byte, bool) {
	return appendObject(b, steps, func(b []byte, st *step) ([]byte, bool) {
		switch st.kind {
		case kSpec:
			return appendSpec(b, st.sub, &e.m.Spec)
		case kStatus:
			return appendStatus(b, st.sub, e, now)
		}
		return b, false
	})
}

func appendSpec(b []byte, steps []step, sp *machine.Spec) ([]byte, bool) {
	return appendObject(b, steps, func(b []byte, st *step) ([]byte, bool) {
		switch st.kind {
		case kSerial:
			return appendID(b, sp.Serial)
		case kLabels:
			if sp.Labels == nil {
				return append(b, "null"...), true
			}
			b = append(b, '[')
			for j := range sp.Labels {
				if j > 0 {
					b = append(b, ',')
				}
				var ok bool
				if b, ok = appendLabel(b, st.sub, &sp.Labels[j]); !ok {
					return b, false
				}
			}
			return append(b, ']'), true
		case kRack:
			return strconv.AppendInt(b, int64(int32(sp.Rack)), 10), true
		case kIndexInRack:
			return strconv.AppendInt(b, int64(int32(sp.IndexInRack)), 10), true
		case kRole:
			return appendString(b, sp.Role), true
		case kIPv4:
			b = append(b, '[')
			for j, a := range sp.IPv4 {
				if j > 0 {
					b = append(b, ',')
				}
				b = appendString(b, a)
			}
			return append(b, ']'), true
		case kRegisterDate:
			return appendDate(b, sp.RegisterDate), true
		case kRetireDate:
			return appendDate(b, sp.RetireDate), true
		case kBMC:
			return appendBMC(b, st.sub, &sp.BMC)
		}
		return b, false
	})
}

func appendLabel(b []byte, steps []step, l *machine.Label) ([]byte, bool) {
	return appendObject(b, steps, func(b []byte, st *step) ([]byte, bool) {
		switch st.kind {
		case kLabelName:
			return appendString(b, l.Name), true
		case kLabelValue:
			return appendString(b, l.Value), true
		}
		return b, false
	})
}

func appendBMC(b []byte, steps []step, bmc *machine.BMC) ([]byte, bool) {
	return appendObject(b, steps, func(b []byte, st *step) ([]byte, bool) {
		switch st.kind {
		case kBMCType:
			return appendString(b, bmc.BMCType), true
		case kBMCIPv4:
			return appendString(b, bmc.IPv4), true
		}
		return b, false
	})
}

func appendStatus(b []byte, steps []step, e *entry, now time.Time) ([]byte, bool) {
	return appendObject(b, steps, func(b []byte, st *step) ([]byte, bool) {
		switch st.kind {
		case kState:
			// graph-gophers refuses a value outside the enum.
			if !e.m.Status.State.Valid() {
				return b, false
			}
			b = append(b, '"')
			b = append(b, e.m.Status.State...)
			return append(b, '"'), true
		case kTimestamp:
			return appendDate(b, e.changed.UTC()), true
		case kDuration:
			return appendFloat(b, now.Sub(e.changed).Seconds())
		}
		return b, false
	})
}

// plainJSON reports whether s is written as it is between quotes by
// encoding/json (which escapes '"', '\\', control characters, '<', '>',
// '&' and anything beyond ASCII may need care) and by strconv.Quote.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendString writes a String (or an IPAddress) as graph-gophers does,
// with json.Marshal.
func appendString(b []byte, s string) []byte {
	if plainJSON(s) {
		return appendQuoted(b, s)
	}
	out, _ := json.Marshal(s) // a string always marshals
	return append(b, out...)
}

// appendQuoted writes a plainJSON string between quotes.
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendID writes an ID as graph-gophers does: json.Marshal of graphql.ID,
// which quotes with strconv.Quote and then compacts; false when that is not
// JSON (graph-gophers fails the request).
func appendID(b []byte, s string) ([]byte, bool) {
	if plainJSON(s) {
		return appendQuoted(b, s), true
	}
	out, err := json.Marshal(graphql.ID(s))
	if err != nil {
		return b, false
	}
	return append(b, out...), true
}

// appendDate writes a DateTime as dateTime.MarshalJSON does: RFC 3339 with
// fractional seconds, in the time's own offset.
func appendDate(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// appendFloat writes a Float as encoding/json does: the shortest
// representation, in exponent form below 1e-6 and from 1e21, with a
// two-digit negative exponent shortened (1e-07 is 1e-7). NaN and the
// infinities are not JSON: false.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}
