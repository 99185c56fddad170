package cluster

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"
)

// reflected is a cluster as encoding/json writes it by reflection: the
// reference of the writer, whatever methods Cluster has.
type reflected Cluster

// TestJSONWriterMatchesEncodingJSON: AppendJSON is json.Marshal and
// MarshalIndentJSON json.MarshalIndent(c, "", "  ") plus a newline, byte
// for byte, on clusters of tricky strings (HTML characters, control
// characters, invalid UTF-8, U+2028), empty and nil maps and lists, nil
// nodes and fields carried as JSON, and the same error for a field
// carried as JSON that is not JSON.
func TestJSONWriterMatchesEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCluster(t)
		if len(c.Nodes) > 0 && rapid.IntRange(0, 9).Draw(t, "nil node") == 0 {
			c.Nodes[rapid.IntRange(0, len(c.Nodes)-1).Draw(t, "nil at")] = nil
		}
		for _, n := range c.Nodes {
			if n != nil && n.Taints == nil && rapid.IntRange(0, 5).Draw(t, "empty taints") == 0 {
				n.Taints = []Taint{}
			}
		}
		if rapid.IntRange(0, 5).Draw(t, "odd raw") == 0 {
			c.Repair = json.RawMessage(rapid.SampledFrom([]string{` { "a" : [ 1 , {} , [] ] } `, `{"h":"<&>"}`, "{\n}", `{"a":}`, `x`, "null", `"s"`}).Draw(t, "raw"))
		}
		if rapid.IntRange(0, 5).Draw(t, "empty lists") == 0 {
			c.ControlPlaneTolerations, c.DNSServers = []string{}, []string{"a", "<b>"}
		}
		want, wantErr := json.Marshal((*reflected)(c))
		got, err := c.AppendJSON([]byte("prefix"))
		switch {
		case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
			t.Fatalf("AppendJSON error %v, json.Marshal error %v", err, wantErr)
		case err == nil && string(got) != "prefix"+string(want):
			t.Fatalf("AppendJSON differs from json.Marshal:\n%s", cmp.Diff("prefix"+string(want), string(got)))
		}
		want, wantErr = json.MarshalIndent((*reflected)(c), "", "  ")
		got, err = c.MarshalIndentJSON()
		switch {
		case (err == nil) != (wantErr == nil) || err != nil && err.Error() != wantErr.Error():
			t.Fatalf("MarshalIndentJSON error %v, json.MarshalIndent error %v", err, wantErr)
		case err == nil && string(got) != string(want)+"\n":
			t.Fatalf("MarshalIndentJSON differs from json.MarshalIndent:\n%s", cmp.Diff(string(want)+"\n", string(got)))
		}
	})
}

// TestJSONWriterOnBenchCluster: the writer on a generated cluster's shape.
func TestJSONWriterOnBenchCluster(t *testing.T) {
	c := benchCluster(100)
	want, _ := json.Marshal((*reflected)(c))
	if got, err := c.AppendJSON(nil); err != nil || string(got) != string(want) {
		t.Errorf("AppendJSON (%v):\n%s", err, cmp.Diff(string(want), string(got)))
	}
	want, _ = json.MarshalIndent((*reflected)(c), "", "  ")
	if got, err := c.MarshalIndentJSON(); err != nil || string(got) != string(want)+"\n" {
		t.Errorf("MarshalIndentJSON (%v):\n%s", err, cmp.Diff(string(want)+"\n", string(got)))
	}
	var nilCluster *Cluster
	if got, err := nilCluster.MarshalIndentJSON(); err != nil || string(got) != "null\n" {
		t.Errorf("MarshalIndentJSON of nil: %q, %v", got, err)
	}
}

// BenchmarkJSON: a 10,000-node cluster's JSON, by the writer and by
// encoding/json (what the daemon's write and plan digest pay).
func BenchmarkJSON(b *testing.B) {
	c := benchCluster(10000)
	b.Run("AppendJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.AppendJSON(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal((*reflected)(c)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("MarshalIndentJSON", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.MarshalIndentJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json-indent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.MarshalIndent((*reflected)(c), "", "  "); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestJSONWriterWritesEveryField: a cluster with every field set (found
// by reflection, so a field added to Cluster, Node or Taint is set too)
// is written as json.Marshal writes it: the writer names its fields by
// hand, and a new one must not be left out silently.
func TestJSONWriterWritesEveryField(t *testing.T) {
	var c Cluster
	fill(t, reflect.ValueOf(&c).Elem())
	want, err := json.Marshal((*reflected)(&c))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.AppendJSON(nil)
	if err != nil || string(got) != string(want) {
		t.Fatalf("AppendJSON (%v) differs from json.Marshal:\n%s", err, cmp.Diff(string(want), string(got)))
	}
}

// fill sets v, and every field, element and value within it, to
// something other than its zero value.
func fill(t *testing.T, v reflect.Value) {
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"k":1}`))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(t, v.Index(0))
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(t, k)
		fill(t, e)
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		t.Fatalf("fill: no value for a %s", v.Type())
	}
}
