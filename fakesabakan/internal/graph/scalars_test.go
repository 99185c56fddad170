package graph

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/machine"
)

// TestAppendString: strings are written as encoding/json writes them, any
// bytes included (invalid UTF-8 becomes U+FFFD, <, > and & are escaped).
func TestAppendString(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.StringOf(rapid.RuneFrom([]rune{'a', '"', '\\', '<', '>', '&', '\n', 0x01, 0x7f, 'é', '\u2028', '😀'})),
			rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
		).Draw(t, "s")
		want, _ := json.Marshal(s)
		if got := AppendString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: got %s, want %s", s, got[1:], want)
		}
		var buf bytes.Buffer
		MarshalString(s).MarshalGQL(&buf)
		if buf.String() != string(want) {
			t.Fatalf("%q: MarshalString %s, want %s", s, buf.String(), want)
		}
	})
}

// TestAppendFloat: Floats are written as encoding/json writes them; NaN
// and the infinities are an error.
func TestAppendFloat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		f := rapid.OneOf(
			rapid.Float64(),
			rapid.Map(rapid.Uint64(), math.Float64frombits),
			rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-6, 1e-7, 9.99e-7, 1e20, 1e21, 123456789e13, 5e-324, math.MaxFloat64, math.Inf(1), math.NaN()}),
		).Draw(t, "f")
		got, ok := AppendFloat(nil, f)
		want, err := json.Marshal(f)
		if ok != (err == nil) || ok && string(got) != string(want) {
			t.Fatalf("%v: got %q %v, want %q %v", f, got, ok, want, err)
		}
		var buf bytes.Buffer
		err = MarshalFloat(f).MarshalGQLContext(context.Background(), &buf)
		if ok != (err == nil) || buf.String() != string(got) {
			t.Fatalf("%v: MarshalFloat %q %v", f, buf.String(), err)
		}
	})
}

// TestDateTime: a DateTime is written in RFC 3339 with fractional seconds
// in its own offset, and read back the same.
func TestDateTime(t *testing.T) {
	for _, s := range []string{"2031-08-01T05:00:00+09:00", "2026-11-22T12:46:12.604070862Z", "2030-04-05T06:07:08.25-05:00"} {
		v, err := UnmarshalDateTime(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		var buf bytes.Buffer
		MarshalDateTime(v).MarshalGQL(&buf)
		if buf.String() != `"`+s+`"` {
			t.Errorf("%s: written %s", s, buf.String())
		}
	}
	for _, v := range []any{"2031-08-01", "tomorrow", 12, nil} {
		if _, err := UnmarshalDateTime(v); err == nil {
			t.Errorf("%v: no error", v)
		}
	}
}

// TestMachineState: a state is read in any case and written upper-case;
// anything else is refused, naming the value.
func TestMachineState(t *testing.T) {
	for in, want := range map[any]machine.State{"healthy": machine.StateHealthy, "Retiring": machine.StateRetiring, "UNREACHABLE": machine.StateUnreachable} {
		got, err := UnmarshalMachineState(in)
		if err != nil || got != want {
			t.Errorf("%v: %v %v, want %v", in, got, err, want)
		}
		var buf bytes.Buffer
		MarshalMachineState(got).MarshalGQL(&buf)
		if buf.String() != `"`+string(want)+`"` {
			t.Errorf("%v: written %s", in, buf.String())
		}
	}
	for _, in := range []any{"BROKEN", "", 3, nil} {
		if _, err := UnmarshalMachineState(in); err == nil {
			t.Errorf("%v: no error", in)
		}
	}
}

// TestID: an ID argument is a string or an integer in decimal.
func TestID(t *testing.T) {
	for in, want := range map[any]string{"S1": "S1", json.Number("123"): "123", int64(-5): "-5", 7: "7"} {
		if got, err := UnmarshalID(in); err != nil || got != want {
			t.Errorf("%v: %q %v, want %q", in, got, err, want)
		}
	}
	if _, err := UnmarshalID(1.5); err == nil {
		t.Error("1.5: no error")
	}
	if _, err := UnmarshalString(12); err == nil {
		t.Error("12 as a String: no error")
	}
}

// TestErrorsNameNoGoType: a value of the wrong kind is named in JSON's
// words, never by its Go type (float64, map[string]interface {}).
func TestErrorsNameNoGoType(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(UnmarshalString(12)), "want a string, got the number 12"},
		{second(UnmarshalID(1.5)), "want a string or an integer, got the number 1.5"},
		{second(UnmarshalID(map[string]any{"a": 1})), "want a string or an integer, got an object"},
		{second(UnmarshalDateTime(json.Number("12"))), "DateTime: want a string, got the number 12"},
		{second(UnmarshalDateTime(nil)), "DateTime: want a string, got null"},
		{second(UnmarshalMachineState([]any{"HEALTHY"})), "MachineState: want a string, got a list"},
		{second(UnmarshalMachineState(true)), "MachineState: want a string, got true"},
	} {
		if c.err == nil || c.err.Error() != c.want {
			t.Errorf("%v, want %q", c.err, c.want)
		}
	}
}

// second is the error of a two-valued call.
func second[T any](_ T, err error) error { return err }
