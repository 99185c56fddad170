package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCheck(t *testing.T) {
	cases := []struct {
		in   string
		kind Kind
		want string // the whole error text; "" for no error
	}{
		{`{"a":1,"b":{"c":[1,{"d":2}]}}`, 0, ""},
		{`  {"a": 1}  ` + "\n", 0, ""},
		{`[1, "x", null, true]`, 0, ""},
		{`"a"`, 0, ""},
		{`{"a":1,"a":2}`, Duplicate, `duplicate key "a" (line 1, column 8)`},
		{"{\"name\": \"x\",\n \"name\": \"foo\"}", Duplicate, `duplicate key "name" (line 2, column 2)`},
		{`{"nodes":[{"labels":{"x":"1","y":"2","x":"3"}}]}`, Duplicate, `nodes[0].labels: duplicate key "x" (line 1, column 38)`},
		{`{"a":{"k.io/x":{"b":1,"b":2}}}`, Duplicate, `a["k.io/x"]: duplicate key "b" (line 1, column 23)`},
		{`{"a":1,"\u0061":2}`, Duplicate, `duplicate key "a" (line 1, column 8)`},
		{`{"a\"":1,"a\u0022":2}`, Duplicate, `duplicate key "a\"" (line 1, column 10)`},
		{"{\"\xa2\":0,\"\xe7\":0}", Duplicate, "duplicate key \"\ufffd\" (line 1, column 8)"}, // as encoding/json decodes them
		{`{"a":{"x":1},"b":{"x":1}}`, 0, ""},                                                  // the same key in two objects
		{`{"A":1,"a":2}`, 0, ""},                                                              // keys are case-sensitive
		{`{"a":1} }`, Trailing, `trailing data after the JSON value (line 1, column 9)`},
		{`[1] ]`, Trailing, `trailing data after the JSON value (line 1, column 5)`},
		{"{\"a\":1}\n{\"a\":2}", Trailing, `trailing data after the JSON value (line 2, column 1)`},
		{`{"a":1} x`, Trailing, `trailing data after the JSON value (line 1, column 9)`},
		{`{"a":}`, Syntax, `invalid character '}' looking for beginning of value (line 1, column 6)`},
		{`name: x`, Syntax, `invalid character 'a' in literal null (expecting 'u') (line 1, column 2)`},
		{``, Syntax, `no JSON value`},
		{`   `, Syntax, `no JSON value`},
		{`{"a":1`, Syntax, `unexpected end of JSON input (line 1, column 7)`},
	}
	for _, c := range cases {
		err := Check([]byte(c.in))
		if c.want == "" {
			if err != nil {
				t.Errorf("Check(%q) = %v, want nil", c.in, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("Check(%q) = %v, want an *Error", c.in, err)
			continue
		}
		if e.Kind != c.kind || err.Error() != c.want {
			t.Errorf("Check(%q) = kind %d %q, want kind %d %q", c.in, e.Kind, err, c.kind, c.want)
		}
	}
}

func TestWalkVisitsEveryKeyWithItsPath(t *testing.T) {
	var got []string
	err := Walk([]byte(`{"a":{"b":[{"c":1},{"d":{"e":2}}]},"f":[]}`), func(p Path, k string) error {
		got = append(got, p.String()+"|"+k)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "|a a|b a.b[0]|c a.b[1]|d a.b[1].d|e |f"
	if strings.Join(got, " ") != want {
		t.Errorf("visited %q, want %q", strings.Join(got, " "), want)
	}
}

func TestWalkRefused(t *testing.T) {
	err := Walk([]byte("{\"nodes\": [\n {\"adress\": 1}]}"), func(p Path, k string) error {
		if k == "adress" {
			return errors.New(`unknown field "adress"`)
		}
		return nil
	})
	var e *Error
	if !errors.As(err, &e) || e.Kind != Refused || err.Error() != `nodes[0]: unknown field "adress" (line 2, column 3)` {
		t.Errorf("Walk = %v", err)
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

// TestAgreesWithTokenizer: on random documents with repeated keys, Check
// finds a duplicate exactly when encoding/json's tokenizer does, and the
// same first one.
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
		err := Check(doc)
		var e *Error
		switch {
		case !found && err != nil:
			t.Fatalf("Check(%s) = %v, want nil", doc, err)
		case found && (!errors.As(err, &e) || e.Kind != Duplicate || !strings.Contains(err.Error(), fmt.Sprintf("%q", dup))):
			t.Fatalf("Check(%s) = %v, want duplicate %q", doc, err, dup)
		}
	})
}

// FuzzCheck: no input panics; input Check accepts is one JSON value that
// encoding/json decodes entirely, without a duplicate key; a duplicate Check
// reports is one the tokenizer finds.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":[{"b":"\"","b":1}]}`, `{"a":1} }`, `[`, `"\u00`, `{"\\":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		err := Check(data)
		var e *Error
		if errors.As(err, &e) && e.Kind == Duplicate {
			if dup, found := reference(data); !found || !strings.Contains(err.Error(), fmt.Sprintf("%q", dup)) {
				t.Fatalf("Check(%q) = %v; the tokenizer finds %q", data, err, dup)
			}
		}
		if err != nil {
			return
		}
		if dup, found := reference(data); found {
			t.Fatalf("Check accepted %q, which has the key %q twice", data, dup)
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("Check accepted %q, which does not decode: %v", data, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("Check accepted %q, which has trailing data", data)
		}
	})
}
