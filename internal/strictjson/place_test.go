package strictjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"
)

// TestWithinAndPlace: a piece of a document decoded on its own reports
// paths and positions in the whole document; so do the errors a caller
// makes, and the nearest value when the path is not in the document.
func TestWithinAndPlace(t *testing.T) {
	whole := []byte(`{
  "a": {
    "b": [
      {"c": 1},
      {"c": "x", "d": 2},
      {"d": 2, "d": 3}
    ]
  }
}
`)
	var pieces struct {
		A struct {
			B []json.RawMessage `json:"b"`
		} `json:"a"`
	}
	if err := json.Unmarshal(whole, &pieces); err != nil {
		t.Fatal(err)
	}
	var v struct {
		C int `json:"c"`
	}
	b := Path(nil).Key("a").Key("b")
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"type error in a piece", Within(UnmarshalIgnoringUnknown(pieces.A.B[1], &v), b.Index(1)), `line 5, column 13: a.b[1].c: want an integer, got the string "x"`},
		{"duplicate in a piece", Within(Unmarshal(pieces.A.B[2], &map[string]int{}), b.Index(2)), `line 6, column 16: a.b[2]: duplicate key "d" (first at line 6, column 8)`},
		{"a piece with a name twice and an unknown member", Within(Unmarshal(pieces.A.B[2], &v), b.Index(2)), `line 6, column 16: a.b[2]: duplicate key "d" (first at line 6, column 8)`},
		{"unknown member in a piece", Within(Unmarshal([]byte(`{"d":2}`), &v), b.Index(1)), `line 5, column 18: a.b[1]: unknown field "d"; did you mean c?`},
		{"a caller's wrong kind", WrongKind(b.Index(1).Key("c"), "an integer", []byte(`"x"`)), `line 5, column 13: a.b[1].c: want an integer, got the string "x"`},
		{"a caller's unknown member", UnknownField(b.Index(1), "d", []string{"dd"}), `line 5, column 18: a.b[1]: unknown field "d"; did you mean dd?`},
		{"a caller's invalid value", Invalidf(b.Index(1).Key("c"), "must not be %s", "x"), `line 5, column 13: a.b[1].c: must not be x`},
		{"a path not in the document", Invalidf(b.Index(1).Key("e").Index(3), "required"), `line 5, column 7: a.b[1].e[3]: required`},
		{"an index past the end", Invalidf(b.Index(3), "x"), `line 3, column 10: a.b[3]: x`},
		{"an index into an object", Invalidf(Path(nil).Key("a").Index(0), "x"), `line 2, column 8: a[0]: x`},
		{"the root", Invalidf(nil, "x"), `line 1, column 1: x`},
	} {
		t.Run(c.name, func(t *testing.T) {
			// Placed in a joined error, before it is wrapped: fmt.Errorf
			// writes the text of what it wraps when it is called.
			err := fmt.Errorf("wrapped: %w", Place(errors.Join(errors.New("other"), c.err), whole))
			if got := "wrapped: other\n" + c.want; err.Error() != got {
				t.Errorf("got  %q\nwant %q", err, got)
			}
		})
	}
}

// TestPlaceKeepsPositions: an error that has a position keeps it.
func TestPlaceKeepsPositions(t *testing.T) {
	err := Unmarshal([]byte(`{"a":1}`), &struct{}{})
	Place(err, []byte(`{"x":0, "a":1}`))
	if want := `line 1, column 2: unknown field "a"`; err.Error() != want {
		t.Errorf("got %q, want %q", err, want)
	}
}

// goTypeName matches what Go writes of a type: cluster.Cluster, []string,
// map[string]int, *T, struct {...}, int64.
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|\*[A-Za-z]|\b(u?int(8|16|32|64)?|float(32|64)|bool|interface)\b|Go value|Go type`)

// TestNoGoTypeName: whatever the Go type a value does not fit, the message
// words it in JSON's terms.
func TestNoGoTypeName(t *testing.T) {
	type inner struct {
		N *int `json:"n"`
	}
	type all struct {
		S  string            `json:"s"`
		I  int64             `json:"i"`
		U  uint8             `json:"u"`
		F  float32           `json:"f"`
		B  bool              `json:"b"`
		L  []string          `json:"l"`
		LL [][]int           `json:"ll"`
		M  map[string]int    `json:"m"`
		P  *inner            `json:"p"`
		PS []*inner          `json:"ps"`
		A  any               `json:"a"`
		T  time.Time         `json:"t"`
		Y  []byte            `json:"y"`
		R  [2]bool           `json:"r"`
		MM map[string][]bool `json:"mm"`
	}
	for _, in := range []string{
		`{"s":1}`, `{"s":{}}`, `{"i":"1"}`, `{"i":1.5}`, `{"i":1e30}`, `{"u":-1}`, `{"u":256}`, `{"f":"x"}`, `{"f":1e300}`,
		`{"b":"true"}`, `{"b":0}`, `{"l":"x"}`, `{"l":[1]}`, `{"ll":[1]}`, `{"ll":[["x"]]}`, `{"m":[]}`, `{"m":{"a":"1"}}`,
		`{"p":1}`, `{"p":{"n":"1"}}`, `{"ps":{}}`, `{"ps":[1]}`, `{"t":"2020"}`, `{"t":true}`, `{"y":1}`, `{"y":"!"}`,
		`{"r":[1]}`, `{"r":{}}`, `{"mm":{"a":"x"}}`, `[]`, `"x"`, `1`, `true`, `null x`, `{"x":1}`, `{"s":"a","s":"b"}`,
		`{`, `{"s"`, `{"s":`, `{"s":"`, `{"s":tru}`, `[}`, `{"s":"\z"}`,
	} {
		var v all
		err := Unmarshal([]byte(in), &v, Document("a test document"))
		if err == nil {
			t.Errorf("Unmarshal(%s) accepted", in)
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Line == 0 || e.Column == 0 {
			t.Errorf("Unmarshal(%s) = %v: not an *Error with a position", in, err)
		}
		if m := goTypeName.FindString(err.Error()); m != "" {
			t.Errorf("Unmarshal(%s) = %v: names a Go type (%s)", in, err, m)
		}
	}
}

func TestWantOf(t *testing.T) {
	type s struct{}
	for _, c := range []struct {
		v    any
		want string
	}{
		{"", "a string"}, {0, "an integer"}, {uint(0), "an integer >= 0"}, {0.5, "a number"}, {true, "true or false"},
		{s{}, "an object"}, {&s{}, "an object"}, {map[string]s{}, "an object"}, {[]s{}, "an array of objects"},
		{[]*s{}, "an array of objects"}, {[]string{}, "an array of strings"}, {[][]string{}, "an array of arrays"},
		{[]any{}, "an array"}, {[]byte{}, "a base64 string"}, {time.Time{}, "a time such as 2006-01-02T15:04:05Z (RFC 3339)"},
	} {
		if got := WantOf(reflectType(c.v)); got != c.want {
			t.Errorf("WantOf(%T) = %q, want %q", c.v, got, c.want)
		}
	}
}

func TestWhat(t *testing.T) {
	for _, c := range []struct{ raw, want string }{
		{`{"a":1}`, "an object"}, {` [1]`, "an array"}, {"\n true", "true"}, {"false", "false"}, {"null", "null"},
		{`"a\"b"`, `the string "a\"b"`}, {`-1.5e3`, "the number -1.5e3"}, {``, "nothing"},
		{`"` + "0123456789012345678901234567890123456789more" + `"`, `the string "0123456789012345678901234567890123456789..."`},
		{"1234567890123456789012345678901234567890999", "the number 1234567890123456789012345678901234567890..."},
	} {
		if got := What([]byte(c.raw)); got != c.want {
			t.Errorf("What(%q) = %q, want %q", c.raw, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	if err := Check([]byte(` {"a":[1,{"b":null}]} `)); err != nil {
		t.Errorf("Check of a JSON value = %v", err)
	}
	for in, want := range map[string]string{
		`{"a":1,"a":2}`: `line 1, column 8: duplicate key "a" (first at line 1, column 2)`,
		`{"a":1} 2`:     `line 1, column 9: trailing data after the JSON value`,
		`{"a":}`:        `line 1, column 6: invalid character '}' at start of value`,
	} {
		if err := Check([]byte(in)); err == nil || err.Error() != want {
			t.Errorf("Check(%s) = %v, want %s", in, err, want)
		}
	}
}

// wantsDuration says what it wants, as policy's types do.
type wantsDuration struct{}

func (*wantsDuration) UnmarshalJSON(b []byte) error { return Wants("a duration such as 10s") }

func TestWants(t *testing.T) {
	var v struct {
		D wantsDuration `json:"d"`
	}
	err := Unmarshal([]byte(`{"d": 12}`), &v)
	if want := `line 1, column 7: d: want a duration such as 10s, got the number 12`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
