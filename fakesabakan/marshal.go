package fakesabakan

import (
	"bytes"
	"context"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/vektah/gqlparser/v2/ast"

	"github.com/ckegen/ckegen/fakesabakan/internal/graph"
	"github.com/ckegen/ckegen/machine"
)

// The machines of searchMachines and machine are written in one pass each,
// not field by field: the generated code spends about 250 allocations per
// machine (a field context, a context and a marshaler per field, a
// goroutine per list element), over a second for 20,000 machines
// (BenchmarkSearch20000Handler) where this pass takes tens of
// milliseconds.
//
// Everything else stays gqlgen's: parsing, validation, variables, the
// limits, the resolvers with their typed arguments, collecting the
// selected fields (fragments, @skip, @include, aliases:
// graphql.CollectFields), errors. A field middleware (writeMachines) takes
// a root resolver's result and returns a graphql.Marshaler, which the
// executor writes in place of the field. When a machine has a value that
// is a field error (a state outside the enum), the generated code writes
// the answer, with the error where it belongs.
// TestMachineWriterEqualsGenerated and TestMachineWriterEveryField check
// that the answers are byte for byte the generated code's.

// selection is what a query selected of one object, in the order gqlgen
// collected it.
type selection []selected

type selected struct {
	// key is the response key as written: `"alias":`.
	key  []byte
	name string
	// sub is the selection of an object field.
	sub selection
}

// objectTypes are the object types of a machine, by field type name.
var objectTypes = map[string]bool{"Machine": true, "MachineSpec": true, "MachineStatus": true, "Label": true, "BMC": true}

// collect collects the selection of an object of type typ, or reports
// false for a field it does not know (the generated code then writes the
// answer).
func collect(oc *graphql.OperationContext, sels ast.SelectionSet, typ string) (selection, bool) {
	fields := graphql.CollectFields(oc, sels, []string{typ})
	out := make(selection, 0, len(fields))
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f.Alias] {
			continue // as the generated code writes a response key once
		}
		seen[f.Alias] = true
		s := selected{key: append(strconv.AppendQuote(nil, f.Alias), ':'), name: f.Name}
		if !knownField(typ, f.Name) {
			return nil, false
		}
		if f.Definition != nil && objectTypes[f.Definition.Type.Name()] {
			var ok bool
			if s.sub, ok = collect(oc, f.Selections, f.Definition.Type.Name()); !ok {
				return nil, false
			}
		}
		out = append(out, s)
	}
	return out, true
}

// fieldsOf are the fields writeObject knows, by object type.
var fieldsOf = map[string]map[string]bool{
	"Machine": {"spec": true, "status": true},
	"MachineSpec": {"serial": true, "labels": true, "rack": true, "indexInRack": true, "role": true,
		"ipv4": true, "registerDate": true, "retireDate": true, "bmc": true},
	"MachineStatus": {"state": true, "timestamp": true, "duration": true},
	"Label":         {"name": true, "value": true},
	"BMC":           {"bmcType": true, "ipv4": true},
}

func knownField(typ, name string) bool {
	return name == "__typename" || fieldsOf[typ][name]
}

// writable reports whether every value of m can be written without a field
// error; otherwise the generated code writes the answer, with the error
// where it belongs.
func writable(m *machine.Machine) bool {
	st := &m.Status
	return st.State.Valid() && st.Timestamp != nil && !math.IsNaN(st.Duration) && !math.IsInf(st.Duration, 0)
}

// writeMachines is the executor's field middleware: the result of
// searchMachines and machine becomes a marshaler of the selected fields.
func writeMachines(ctx context.Context, next graphql.Resolver) (any, error) {
	res, err := next(ctx)
	fc := graphql.GetFieldContext(ctx)
	if err != nil || fc == nil || fc.Object != "Query" {
		return res, err
	}
	var ms []machine.Machine
	switch v := res.(type) {
	case []machine.Machine:
		ms = v
	case *machine.Machine:
		if v == nil {
			return res, err
		}
		ms = []machine.Machine{*v}
	default:
		return res, err
	}
	for i := range ms {
		if !writable(&ms[i]) {
			return res, err
		}
	}
	sel, ok := collect(graphql.GetOperationContext(ctx), fc.Field.Selections, "Machine")
	if !ok {
		return res, err
	}
	_, list := res.([]machine.Machine)
	return &machinesJSON{sel: sel, ms: ms, list: list}, nil
}

// machinesJSON writes machines, a list or one.
type machinesJSON struct {
	sel  selection
	ms   []machine.Machine
	list bool
}

func (j *machinesJSON) MarshalGQL(w io.Writer) {
	if !j.list {
		_, _ = w.Write(appendMachine(nil, j.sel, &j.ms[0]))
		return
	}
	_, _ = w.Write([]byte{'['})
	var b []byte
	for i := range j.ms {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMachine(b, j.sel, &j.ms[i])
		if i == 0 {
			// The answer's size, from the first machine's, grown once.
			if buf, ok := w.(*bytes.Buffer); ok {
				buf.Grow(len(b) * len(j.ms) * 9 / 8)
			}
		}
		_, _ = w.Write(b)
	}
	_, _ = w.Write([]byte{']'})
}

// appendObject writes an object's selected fields in their order, each
// value by value (__typename is the type's name).
func appendObject(b []byte, sel selection, typ string, value func(b []byte, f *selected) []byte) []byte {
	b = append(b, '{')
	for i := range sel {
		f := &sel[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, f.key...)
		if f.name == "__typename" {
			b = graph.AppendString(b, typ)
			continue
		}
		b = value(b, f)
	}
	return append(b, '}')
}

func appendMachine(b []byte, sel selection, m *machine.Machine) []byte {
	return appendObject(b, sel, "Machine", func(b []byte, f *selected) []byte {
		if f.name == "spec" {
			return appendSpec(b, f.sub, &m.Spec)
		}
		return appendStatus(b, f.sub, &m.Status)
	})
}

func appendSpec(b []byte, sel selection, sp *machine.Spec) []byte {
	return appendObject(b, sel, "MachineSpec", func(b []byte, f *selected) []byte {
		switch f.name {
		case "serial":
			return graph.AppendString(b, sp.Serial)
		case "labels":
			if sp.Labels == nil {
				return append(b, "null"...)
			}
			b = append(b, '[')
			for i := range sp.Labels {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendLabel(b, f.sub, &sp.Labels[i])
			}
			return append(b, ']')
		case "rack":
			return strconv.AppendInt(b, int64(sp.Rack), 10)
		case "indexInRack":
			return strconv.AppendInt(b, int64(sp.IndexInRack), 10)
		case "role":
			return graph.AppendString(b, sp.Role)
		case "ipv4":
			b = append(b, '[')
			for i, a := range sp.IPv4 {
				if i > 0 {
					b = append(b, ',')
				}
				b = graph.AppendString(b, a)
			}
			return append(b, ']')
		case "registerDate":
			return appendDateTime(b, sp.RegisterDate)
		case "retireDate":
			return appendDateTime(b, sp.RetireDate)
		}
		return appendBMC(b, f.sub, &sp.BMC)
	})
}

func appendLabel(b []byte, sel selection, l *machine.Label) []byte {
	return appendObject(b, sel, "Label", func(b []byte, f *selected) []byte {
		if f.name == "name" {
			return graph.AppendString(b, l.Name)
		}
		return graph.AppendString(b, l.Value)
	})
}

func appendBMC(b []byte, sel selection, bmc *machine.BMC) []byte {
	return appendObject(b, sel, "BMC", func(b []byte, f *selected) []byte {
		if f.name == "bmcType" {
			return graph.AppendString(b, bmc.BMCType)
		}
		return graph.AppendString(b, bmc.IPv4)
	})
}

// appendStatus writes a status that writable accepted.
func appendStatus(b []byte, sel selection, st *machine.Status) []byte {
	return appendObject(b, sel, "MachineStatus", func(b []byte, f *selected) []byte {
		switch f.name {
		case "state":
			return graph.AppendString(b, string(st.State))
		case "timestamp":
			return appendDateTime(b, *st.Timestamp)
		}
		b, _ = graph.AppendFloat(b, st.Duration)
		return b
	})
}

// appendDateTime is graph.AppendDateTime (RFC 3339 with nanoseconds as
// time.Time formats it), a date in UTC to the second, most of an
// inventory's, written digit by digit (TestAppendDateTime).
func appendDateTime(b []byte, t time.Time) []byte {
	if t.Location() != time.UTC || t.Nanosecond() != 0 {
		return graph.AppendDateTime(b, t)
	}
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return graph.AppendDateTime(b, t)
	}
	hour, minute, sec := t.Clock()
	b = append(b, '"',
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10))
	return append(b, 'Z', '"')
}
