package yamlpos

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	yamlv2 "go.yaml.in/yaml/v2"
	yamlv3 "go.yaml.in/yaml/v3"
	"pgregory.net/rapid"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// convert reads src as ckegen reads YAML: strict yaml.v2 (refusing a key
// given twice), then JSON, as sigs.k8s.io/yaml converts it.
func convert(t *testing.T, src string) ([]byte, error) {
	t.Helper()
	dec := yamlv2.NewDecoder(strings.NewReader(src))
	dec.SetStrict(true)
	var v any
	if err := dec.Decode(&v); err != nil && !errors.Is(err, io.EOF) {
		return nil, Errors(err, []byte(src))
	}
	js, err := sigsyaml.YAMLToJSON([]byte(src))
	if err != nil {
		return nil, Errors(err, []byte(src))
	}
	return js, nil
}

type node struct {
	Name   string            `json:"name"`
	Labels map[string]string `json:"labels"`
	Racks  []int             `json:"racks"`
}

type doc struct {
	Nodes []node         `json:"nodes"`
	Flags map[string]int `json:"flags"`
	Ref   *node          `json:"ref"`
	Base  *node          `json:"base"`
}

// TestPlace: errors found in the JSON that YAML becomes point at the YAML,
// through flow and block styles, keys YAML 1.1 reads as other scalars,
// aliases and merges.
func TestPlace(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"block", "nodes:\n- name: a\n  racks: [1, x]\n", `line 3, column 14: nodes[0].racks[1]: want an integer, got the string "x"`},
		{"unknown key", "nodes:\n- name: a\n  rack: 1\n", `line 3, column 3: nodes[0]: unknown field "rack"; did you mean racks?`},
		{"flow", "nodes: [{name: a}, {name: b, labels: {a: [1]}}]\n", `line 1, column 42: nodes[1].labels.a: want a string, got an array`},
		{"a key YAML reads as true", "flags: {yes: x}\n", `line 1, column 14: flags.true: want an integer, got the string "x"`},
		{"a key YAML reads as a number", "flags:\n  0x10: x\n", `line 2, column 9: flags.16: want an integer, got the string "x"`},
		{"a quoted key", "flags:\n  '0x10': x\n", `line 2, column 11: flags.0x10: want an integer, got the string "x"`},
		{"a float key", "flags:\n  1.0: x\n", `line 2, column 8: flags.1: want an integer, got the string "x"`},
		{"an alias", "base: &b {name: a, racks: {}}\nref: *b\n", `line 1, column 27: base.racks: want an array of integers, got an object`},
		{"a merge", "base: &b {name: a}\nnodes:\n- <<: *b\n  labels: {x: 1}\n", `line 4, column 15: nodes[0].labels.x: want a string, got the number 1`},
		{"the top level", "- a\n", `line 1, column 1: want an object, got an array`},
		{"after a comment and a document marker", "# c\n---\n\n  nodes: 1\n", `line 4, column 10: nodes: want an array of objects, got the number 1`},
		{"characters, not bytes", "nodes:\n- {name: \"ééé\", racks: 1}\n", `line 2, column 24: nodes[0].racks: want an array of integers, got the number 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			js, err := convert(t, c.src)
			if err != nil {
				t.Fatal(err)
			}
			var v doc
			err = Place(strictjson.Unmarshal(js, &v), []byte(c.src))
			if err == nil || err.Error() != c.want {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestPlaceCallersErrors: an error a caller makes, with a path, is placed
// too; a path the YAML does not have gets the nearest value's position.
func TestPlaceCallersErrors(t *testing.T) {
	src := []byte("nodes:\n- name: a\n  labels:\n    k: v\n")
	p := strictjson.Path(nil).Key("nodes").Index(0)
	for _, c := range []struct {
		err  *strictjson.Error
		want string
	}{
		{strictjson.Invalidf(p.Key("name"), "too short"), `line 2, column 9: nodes[0].name: too short`},
		{strictjson.WrongKind(p.Key("labels").Key("k"), "a number", []byte(`"v"`)), `line 4, column 8: nodes[0].labels.k: want a number, got the string "v"`},
		{strictjson.UnknownField(p.Key("labels"), "k", nil), `line 4, column 5: nodes[0].labels: unknown field "k"`},
		{strictjson.Invalidf(p.Key("taints").Index(2), "required"), `line 2, column 3: nodes[0].taints[2]: required`},
		{strictjson.Invalidf(p.Index(1), "x"), `line 2, column 3: nodes[0][1]: x`},
	} {
		if err := Place(c.err, src); err.Error() != c.want {
			t.Errorf("got  %v\nwant %s", err, c.want)
		}
	}
	// Keys merged from an anchor are where the anchor writes them.
	merged := []byte("nodes:\n- name: a\n- <<: [{}, &m {rack: 1, name: a}]\n  name: b\n")
	p = strictjson.Path(nil).Key("nodes").Index(1)
	for _, c := range []struct {
		err  *strictjson.Error
		want string
	}{
		{strictjson.UnknownField(p, "rack", nil), `line 3, column 16: nodes[1]: unknown field "rack"`},
		{&strictjson.Error{Kind: strictjson.Duplicate, Path: p, Name: "name"}, `line 4, column 3: nodes[1]: duplicate key "name" (first at line 3, column 25)`},
	} {
		if err := Place(c.err, merged); err.Error() != c.want {
			t.Errorf("got  %v\nwant %s", err, c.want)
		}
	}
	// Not YAML: no position, rather than a wrong one.
	e := strictjson.Invalidf(p, "x")
	e.Line, e.Column = 9, 9
	if err := Place(e, []byte("a: [\n")); err.Error() != "nodes[1]: x" {
		t.Errorf("got %v", err)
	}
}

// TestErrors: yaml.v2's refusals, with their lines (and, for a key given
// twice, its path and column), in YAML's words.
func TestErrors(t *testing.T) {
	for _, c := range []struct{ name, src, want string }{
		{"key twice", "name: x\nname: foo\n", `line 2, column 1: duplicate key "name" (first at line 1, column 1)`},
		{"key twice, nested", "nodes:\n- name: a\n  labels:\n    a: x\n    b: y\n    a: z\n", `line 6, column 5: nodes[0].labels: duplicate key "a" (first at line 4, column 5)`},
		{"key twice, flow", "flags: {a: 1, b: 2, a: 3}\n", `line 1, column 21: flags: duplicate key "a" (first at line 1, column 9)`},
		{"key twice, as read", "flags: {yes: 1, true: 2}\n", `line 1, column 17: flags: duplicate key "true" (first at line 1, column 9)`},
		{"key set by a merge, then again", "base: &b {x: 1}\nm:\n  <<: *b\n  x: 2\n", `line 4, column 3: m: duplicate key "x" (first at line 1, column 11)`},
		{"keys twice", "a: 1\na: 2\nb: {c: 1, c: 2}\n", "line 2, column 1: duplicate key \"a\" (first at line 1, column 1)\nline 3, column 11: b: duplicate key \"c\" (first at line 3, column 5)"},
		{"first line", "a: b: c\n", `line 1, column 4: not valid YAML: mapping values are not allowed in this context`},
		{"scanner", "x: 1\na: b: c\n", `line 2, column 4: not valid YAML: mapping values are not allowed in this context`},
		{"parser", "x: 1\ny: {\"a\": \"b\" \"c\": 1}\n", `line 2, column 14: not valid YAML: did not find expected ',' or '}'`},
		{"parser, block", "x:\n  y:\n    z: 1\n   w: 2\n", `line 4, column 4: not valid YAML: did not find expected key`},
		{"quote not closed: where it opens", "a: 1\nb: \"x\nc: 2\n", `line 2, column 4: not valid YAML: could not find end character of double-quoted text`},
		{"column not known: the line alone", "%YAML 1.3\n---\na: 1\n", `line 1: not valid YAML: found incompatible YAML document`},
		{"tab", "name: a\n\tb: c\n", `line 2, column 1: not valid YAML: found a tab character that violates indentation`},
		{"control character", "a: b\nc: d\x01\n", `line 2, column 5: not valid YAML: control characters are not allowed`},
		{"not UTF-8", "a: b\nc: \xff\n", `line 2, column 4: not valid YAML: invalid leading UTF-8 octet`},
		{"unknown anchor", "a: 1\nb: [*x]\n", `line 2, column 5: not valid YAML: unknown anchor 'x' referenced`},
		{"null key", "a:\n  b: 1\n  ~: 2\n", `line 3, column 3: a: a null key has no JSON form; quote it`},
		{"list as a key", "a: 1\n? [x]\n: 1\n", `line 2, column 3: not valid YAML: a mapping key must be a scalar (a string, a number, true or false), not a list or mapping`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := convert(t, c.src)
			if err == nil || err.Error() != c.want {
				t.Errorf("got  %v\nwant %s", err, c.want)
			}
			if m := goTypeName.FindString(err.Error()); m != "" {
				t.Errorf("%v names a Go type (%s)", err, m)
			}
		})
	}
}

func TestSecondDocument(t *testing.T) {
	for src, want := range map[string]string{
		"a: 1\n---\nb: 2\n":     "line 2, column 1: more than one",
		"a: 1\n---\n":           "line 2, column 1: more than one",
		"a: 1\n...\n# x\n---\n": "line 4, column 1: more than one",
	} {
		if got := SecondDocument([]byte(src), "more than %s", "one").Error(); got != want {
			t.Errorf("SecondDocument(%q) = %q, want %q", src, got, want)
		}
	}
}

// TestUnreadable: input that starts as JSON is told in JSON's terms first.
func TestUnreadable(t *testing.T) {
	for src, want := range map[string]string{
		`{"a": 1 "b": 2}`: `line 1, column 9: invalid character '"' after object value (expecting ',' or '}'); not YAML either: did not find expected ',' or '}' (line 1)`,
		"[1,\n2\n":        `line 3, column 1: unexpected end of input: the JSON value is not complete; not YAML either: sequence end token ']' not found (line 1, column 1)`,
		"a: [\n":          `line 1, column 4: not valid YAML: sequence end token ']' not found`,
	} {
		_, err := convert(t, src)
		if got := Unreadable([]byte(src), err); got.Error() != want {
			t.Errorf("Unreadable(%q) = %q\nwant %q", src, got, want)
		}
	}
}

var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|interface \{|\*[A-Za-z]`)

// TestJSONKeyAsSigsYAML: the name a YAML key is looked up by is the one
// sigs.k8s.io/yaml writes.
func TestJSONKeyAsSigsYAML(t *testing.T) {
	scalars := []string{"a", "yes", "No", "on", "OFF", "y", "true", "True", "1", "01", "0x1F", "0o17", "017", "1e3", ".5", "1_000",
		"-0", "+1", "1.0", "1.50", ".inf", "-.Inf", ".NaN", "2001-12-14", "12:30", "'1'", `"yes"`, "!!str 1", "!!int '2'", "9223372036854775808",
		"3.4028235e+39", "0b101", "null-ish", "~a"}
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.SampledFrom(scalars).Draw(t, "key")
		src := []byte(k + ": 1\n")
		js, err := sigsyaml.YAMLToJSON(src)
		if err != nil {
			t.Skip(err)
		}
		var n yamlv3.Node
		if err := yamlv3.Unmarshal(src, &n); err != nil {
			t.Skip(err)
		}
		got, ok := jsonKey(n.Content[0].Content[0])
		want := string(bytes.TrimSuffix(bytes.TrimPrefix(js, []byte(`{"`)), []byte(`":1}`)))
		if !ok || got != want {
			t.Fatalf("key %s: jsonKey %q, sigs.k8s.io/yaml writes %s", k, got, js)
		}
	})
}
