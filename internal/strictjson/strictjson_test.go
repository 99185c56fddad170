package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

type taint struct {
	Key    string `json:"key"`
	Effect string `json:"effect"`
}

type node struct {
	Address string            `json:"address"`
	Labels  map[string]string `json:"labels,omitempty"`
	Taints  []taint           `json:"taints"`
	Racks   []int             `json:"racks"`
}

type doc struct {
	Name    string          `json:"name"`
	Nodes   []*node         `json:"nodes"`
	Options json.RawMessage `json:"options"`
}

func TestUnmarshalRefuses(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
		want string // the whole error text
	}{
		// a name twice, in any object, however it is escaped
		{`{"name":"x","name":"foo"}`, Duplicate, `line 1, column 13: duplicate key "name" (first at line 1, column 2)`},
		{"{\"name\": \"x\",\n \"name\": \"foo\"}", Duplicate, `line 2, column 2: duplicate key "name" (first at line 1, column 2)`},
		{`{"nodes":[{"labels":{"x":"1","y":"2","x":"3"}}]}`, Duplicate, `line 1, column 38: nodes[0].labels: duplicate key "x" (first at line 1, column 22)`},
		{`{"nodes":[{},{"taints":[{"key":"k","key":"j"}]}]}`, Duplicate, `line 1, column 36: nodes[1].taints[0]: duplicate key "key" (first at line 1, column 26)`},
		{`{"options":{"k.io/x":{"b":1,"b":2}}}`, Duplicate, `line 1, column 29: options["k.io/x"]: duplicate key "b" (first at line 1, column 23)`},
		{`{"nodes":[{"labels":{"1":"a","1":"b"}}]}`, Duplicate, `line 1, column 30: nodes[0].labels: duplicate key "1" (first at line 1, column 22)`},
		{`{"name":"x","\u006eame":"y"}`, Duplicate, `line 1, column 13: duplicate key "name" (first at line 1, column 2)`},
		{"{\"options\":{\"\xa2\":0,\"\xe7\":0}}", Duplicate, "line 1, column 19: options: duplicate key \"\ufffd\" (first at line 1, column 13)"}, // as encoding/json reads them
		// names matched exactly; unknown members refused, with the closest
		// or, when none is close, the names known there
		{`{"Name":"a"}`, Unknown, `line 1, column 2: unknown field "Name"; did you mean name?`},
		{`{"nodes":[{"adress":"a"}]}`, Unknown, `line 1, column 12: nodes[0]: unknown field "adress"; did you mean address?`},
		{`{"nodes":[{"taints":[{"key":"k","efect":"a"}]}]}`, Unknown, `line 1, column 33: nodes[0].taints[0]: unknown field "efect"; did you mean effect?`},
		{`{"zzz":1}`, Unknown, `line 1, column 2: unknown field "zzz" (known fields: name, nodes, options)`},
		// values of the wrong kind, at their path, in JSON's words
		{`{"nodes":{}}`, Type, `line 1, column 10: nodes: want an array of objects, got an object`},
		{`{"nodes":[{"racks":[1,"2"]}]}`, Type, `line 1, column 23: nodes[0].racks[1]: want an integer, got the string "2"`},
		{`{"nodes":[{"racks":[1.5]}]}`, Type, `line 1, column 21: nodes[0].racks[0]: want an integer, got the number 1.5`},
		{`{"nodes":[{"racks":[9223372036854775808]}]}`, Type, `line 1, column 21: nodes[0].racks[0]: want an integer, got the number 9223372036854775808: out of range`},
		{`{"nodes":[{"labels":{"1":true}}]}`, Type, `line 1, column 26: nodes[0].labels.1: want a string, got true`},
		{`{"nodes":[{"taints":[{"key":null},{"key":{}}]}]}`, Type, `line 1, column 42: nodes[0].taints[1].key: want a string, got an object`},
		{`{"name":["x"]}`, Type, `line 1, column 9: name: want a string, got an array`},
		{`[1]`, Type, `line 1, column 1: want an object (a test document), got an array`},
		{"\n\n  \"é\"", Type, `line 3, column 3: want an object (a test document), got the string "é"`},
		// exactly one value
		{`{"name":"a"} {"name":"b"}`, Trailing, `line 1, column 14: trailing data after the JSON value`},
		{"{\"name\":\"a\"}\n}", Trailing, `line 2, column 1: trailing data after the JSON value`},
		{`{"name":"a"}]`, Trailing, `line 1, column 13: trailing data after the JSON value`},
		{`{"name":"a"} x`, Trailing, `line 1, column 14: trailing data after the JSON value`},
		// what the input is comes before what it means
		{`"name": x`, Trailing, `line 1, column 7: trailing data after the JSON value`},
		{`{"nodes":{}} {}`, Trailing, `line 1, column 14: trailing data after the JSON value`},
		{`{"nodes":{},"name":"a","name":"b"}`, Duplicate, `line 1, column 24: duplicate key "name" (first at line 1, column 13)`},
		{`{"nodes":{},"name":}`, Syntax, `line 1, column 20: invalid character '}' at start of value`},
		// syntax, in json/v2's words, at the character
		{`{"name":}`, Syntax, `line 1, column 9: invalid character '}' at start of value`},
		{`{"name": "a" "x": 1}`, Syntax, `line 1, column 14: invalid character '"' after object value (expecting ',' or '}')`},
		{`name: x`, Syntax, `line 1, column 2: invalid character 'a' in literal null (expecting 'u')`},
		{"{\"n\u00e9\": \"\u00e9\u00e9\" \"x\"}", Syntax, `line 1, column 13: invalid character '"' after object value (expecting ',' or '}')`}, // columns count characters, not bytes (16)
		{`{1:2}`, Syntax, `line 1, column 2: object member name must be a string`},
		{`{"name":"a"`, Syntax, `line 1, column 12: unexpected end of input: the JSON value is not complete`},
		{"{\"nodes\": [\n", Syntax, `line 2, column 1: unexpected end of input: the JSON value is not complete`},
		{``, Syntax, `no JSON value`},
		{" \n ", Syntax, `no JSON value`},
	}
	for _, c := range cases {
		var v doc
		err := Unmarshal([]byte(c.in), &v, Document("a test document"))
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Unmarshal(%q) = %v, want an *Error", c.in, err)
			continue
		}
		if e.Kind != c.kind || err.Error() != c.want {
			t.Errorf("Unmarshal(%q) = kind %d %q\nwant kind %d %q", c.in, e.Kind, err, c.kind, c.want)
		}
	}
}

// TestPathTellsIndexFromName: a JSON pointer writes the array index 1 and
// the object name "1" alike; the path tells them apart.
func TestPathTellsIndexFromName(t *testing.T) {
	var v struct {
		A []map[string][]map[string]int `json:"a"`
	}
	err := Unmarshal([]byte(`{"a":[{"0":[{"1":1}]},{"1":[{"0":2},{"1":true}]}]}`), &v)
	var e *Error
	if !errors.As(err, &e) || e.Kind != Type {
		t.Fatalf("Unmarshal = %v, want a type error", err)
	}
	want := Path(nil).Key("a").Index(1).Key("1").Index(1).Key("1")
	if !reflect.DeepEqual(e.Path, want) || e.Path.String() != "a[1].1[1].1" {
		t.Errorf("path %#v (%s), want %#v", e.Path, e.Path, want)
	}
}

func TestUnmarshalAccepts(t *testing.T) {
	in := `{"name":"a","nodes":[{"labels":{"x":"1","X":"2"}},{"labels":{"x":"1"}},null],"options":{"a":1.50,"b" : [1e3]}}`
	var v doc
	if err := Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "a" || len(v.Nodes) != 3 || v.Nodes[0].Labels["X"] != "2" || v.Nodes[2] != nil {
		t.Errorf("decoded %+v", v)
	}
	if string(v.Options) != `{"a":1.50,"b" : [1e3]}` {
		t.Errorf("a raw member is not kept byte for byte: %s", v.Options)
	}
}

func TestErrorFields(t *testing.T) {
	var v doc
	err := Unmarshal([]byte(`{"nodes":[{"racks":["x"]}]}`), &v)
	var e *Error
	if !errors.As(err, &e) || e.Kind != Type || e.Got != "the string \"x\"" || e.GoType != reflect.TypeFor[int]() ||
		e.Path.String() != "nodes[0].racks[0]" {
		t.Errorf("type error = %#v", e)
	}
	err = Unmarshal([]byte(`{"nodes":[{"adress":"x"}]}`), &v)
	if !errors.As(err, &e) || e.Kind != Unknown || e.Name != "adress" || e.GoType != reflect.TypeFor[node]() ||
		e.Path.String() != "nodes[0]" {
		t.Errorf("unknown member error = %#v", e)
	}
}

func TestUnmarshalIgnoringUnknown(t *testing.T) {
	var v doc
	if err := UnmarshalIgnoringUnknown([]byte(`{"name":"a","kind":"List","nodes":[{"address":"x","spec":{}}]}`), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "a" || v.Nodes[0].Address != "x" {
		t.Errorf("decoded %+v", v)
	}
	// Names are still exact: Name is skipped as unknown, not read as name.
	v = doc{}
	if err := UnmarshalIgnoringUnknown([]byte(`{"Name":"a"}`), &v); err != nil || v.Name != "" {
		t.Errorf("Name read as name: %+v, %v", v, err)
	}
	err := UnmarshalIgnoringUnknown([]byte(`{"kind":"a","kind":"b"}`), &v)
	var e *Error
	if !errors.As(err, &e) || e.Kind != Duplicate {
		t.Errorf("a name twice = %v, want it refused", err)
	}
}

func TestFieldNames(t *testing.T) {
	type inner struct {
		A string `json:"a"`
	}
	type outer struct {
		inner
		B       int `json:"b,omitempty"`
		C       int
		D       int `json:"-"`
		E       int `json:",omitempty"`
		private int //nolint:unused // FieldNames must leave it out
	}
	if got, want := FieldNames(reflect.TypeFor[*outer]()), []string{"a", "b", "C", "E"}; !reflect.DeepEqual(got, want) {
		t.Errorf("FieldNames = %q, want %q", got, want)
	}
	if FieldNames(reflect.TypeFor[map[string]int]()) != nil {
		t.Error("a map has field names")
	}
}

func TestPathString(t *testing.T) {
	p := Path(nil).Key("options").Key("kube-api").Key("extra_binds").Index(2).Key("a.b/c").Key("")
	if got, want := p.String(), `options.kube-api.extra_binds[2]["a.b/c"][""]`; got != want {
		t.Errorf("Path = %s, want %s", got, want)
	}
	if Path(nil).String() != "" {
		t.Error("the root path is not empty")
	}
}

// reference finds the first duplicate key with encoding/json's tokenizer;
// found is false when there is none.
func reference(data []byte) (dup string, found bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var walk func() bool
	walk = func() bool {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				if seen[k.(string)] {
					dup, found = k.(string), true
					return true
				}
				seen[k.(string)] = true
				if walk() {
					return true
				}
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				if walk() {
					return true
				}
			}
			dec.Token()
		}
		return false
	}
	walk()
	return dup, found
}

// TestAgreesWithTokenizer: on random documents with repeated keys,
// Unmarshal refuses a duplicate exactly when encoding/json's tokenizer
// finds one, and the same first one.
func TestAgreesWithTokenizer(t *testing.T) {
	keys := []string{"a", "b", "A", "\u00e9", "a\"", "\\", "k.io/x"}
	var gen func(depth int) *rapid.Generator[any]
	gen = func(depth int) *rapid.Generator[any] {
		return rapid.Custom(func(t *rapid.T) any {
			kind := rapid.IntRange(0, 3).Draw(t, "kind")
			if depth > 3 {
				kind = 0
			}
			switch kind {
			case 1:
				n := rapid.IntRange(0, 20).Draw(t, "n")
				var b strings.Builder
				b.WriteByte('{')
				for i := range n {
					if i > 0 {
						b.WriteString(", ")
					}
					k, _ := json.Marshal(rapid.SampledFrom(keys).Draw(t, "key"))
					if rapid.Bool().Draw(t, "escape") {
						k = bytes.ReplaceAll(k, []byte("a"), []byte(`\u0061`))
					}
					b.Write(k)
					b.WriteString(": ")
					fmt.Fprint(&b, gen(depth+1).Draw(t, "v"))
				}
				b.WriteByte('}')
				return b.String()
			case 2:
				n := rapid.IntRange(0, 4).Draw(t, "n")
				parts := make([]string, n)
				for i := range parts {
					parts[i] = fmt.Sprint(gen(depth+1).Draw(t, "e"))
				}
				return "[" + strings.Join(parts, ",") + "]"
			case 3:
				s, _ := json.Marshal(rapid.String().Draw(t, "s"))
				return string(s)
			}
			return rapid.SampledFrom([]string{"1", "-2.5e3", "true", "null"}).Draw(t, "lit")
		})
	}
	rapid.Check(t, func(t *rapid.T) {
		doc := []byte(gen(0).Draw(t, "doc").(string))
		dup, found := reference(doc)
		var v any
		err := Unmarshal(doc, &v)
		var e *Error
		switch {
		case !found && err != nil:
			t.Fatalf("Unmarshal(%s) = %v, want nil", doc, err)
		case found && (!errors.As(err, &e) || e.Kind != Duplicate || e.Name != dup):
			t.Fatalf("Unmarshal(%s) = %v, want duplicate %q", doc, err, dup)
		}
	})
}

// FuzzUnmarshal: no input panics; every error is an *Error with a position
// inside the input; input Unmarshal accepts is one JSON value that
// encoding/json decodes entirely to the same, without a duplicate key; a
// duplicate Unmarshal reports is one the tokenizer finds; syntax errors
// are exactly the inputs encoding/json cannot read.
func FuzzUnmarshal(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":"\"","b":1}]}`, `{"a":1} }`, `[`, `"\u00`, `{"\\":1}`, `{"a":{"1":[0,{"x":1,"x":2}]}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got any
		err := Unmarshal(data, &got)
		var e *Error
		if err != nil {
			if !errors.As(err, &e) {
				t.Fatalf("Unmarshal(%q) = %v, not an *Error", data, err)
			}
			if e.Line > 1+bytes.Count(data, []byte{'\n'}) || e.Column > len(data)+1 {
				t.Fatalf("Unmarshal(%q) = %v: the position is outside the input", data, err)
			}
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		var want any
		v1err := dec.Decode(&want)
		if err == nil && v1err == nil {
			if _, end := dec.Token(); end != io.EOF {
				t.Fatalf("Unmarshal accepted %q, which has trailing data", data)
			}
		}
		switch {
		case e != nil && e.Kind == Syntax && v1err == nil:
			t.Fatalf("Unmarshal(%q) = %v, but encoding/json reads it", data, err)
		case e != nil && e.Kind == Duplicate:
			if dup, found := reference(data); !found || dup != e.Name {
				t.Fatalf("Unmarshal(%q) = %v; the tokenizer finds %q", data, err, dup)
			}
		case err == nil:
			if v1err != nil {
				t.Fatalf("Unmarshal accepted %q, which encoding/json refuses: %v", data, v1err)
			}
			if dup, found := reference(data); found {
				t.Fatalf("Unmarshal accepted %q, which has the key %q twice", data, dup)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Unmarshal(%q) = %#v, encoding/json reads %#v", data, got, want)
			}
		}
	})
}

func reflectType(v any) reflect.Type { return reflect.TypeOf(v) }
