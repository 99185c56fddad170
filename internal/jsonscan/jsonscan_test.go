package jsonscan

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// checkValue fails when the scanner reads one value of data otherwise
// than jsontext: a string Str reads (or a number Number reads) is one
// jsontext reads the same, and every string without escapes and every
// number jsontext reads, Str (Number) reads whole; Skip finds the end of
// every value jsontext reads, as encoding/json reads it (invalid UTF-8, a
// name twice).
func checkValue(t *testing.T, data []byte) {
	t.Helper()
	trimmed := bytes.Trim(data, " \t\r\n")
	valid := jsontext.Value(trimmed).IsValid()
	kind := jsontext.Value(trimmed).Kind()

	s := New(data)
	str, ok := s.Str()
	switch {
	case ok:
		read := trimmed[:len(str)+2]
		var want []byte
		if tok, err := jsontext.NewDecoder(bytes.NewReader(read)).ReadToken(); err != nil || tok.Kind() != '"' {
			t.Fatalf("Str read %q from %q, jsontext refuses it (%v)", str, data, err)
		} else {
			want = []byte(tok.String())
		}
		if !bytes.Equal(str, want) {
			t.Fatalf("Str read %q from %q, jsontext %q", str, data, want)
		}
	case valid && kind == '"' && !bytes.Contains(trimmed, []byte(`\`)):
		t.Fatalf("Str refused the string %q", data)
	}
	if ok && s.End() != (valid && kind == '"') {
		t.Fatalf("Str read all of %q: %v; jsontext reads one string: %v", data, s.End(), valid)
	}

	s = New(data)
	num, integer, ok := s.Number()
	switch {
	case ok:
		if !jsontext.Value(num).IsValid() || jsontext.Value(num).Kind() != '0' {
			t.Fatalf("Number read %q from %q, jsontext refuses it", num, data)
		}
		if integer != !bytes.ContainsAny(num, ".eE") {
			t.Fatalf("Number read %q, integer %v", num, integer)
		}
	case valid && kind == '0':
		t.Fatalf("Number refused the number %q", data)
	}
	if ok && s.End() != (valid && kind == '0') {
		t.Fatalf("Number read all of %q: %v; jsontext reads one number: %v", data, s.End(), valid)
	}

	loose := jsontext.Value(trimmed).IsValid(jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true))
	s = New(data)
	if loose && !(s.Skip() && s.End()) {
		t.Fatalf("Skip did not find the end of %q (at %d)", data, s.Offset())
	}
}

var values = []string{
	`""`, `"a"`, ` "東京" `, `"a\"b"`, `"\u0041"`, "\"\xff\"", "\"a\x01\"", `"a`, `"`, "\"\xed\xa0\x80\"",
	"0", "-0", "1", "-12", "1.5", "1e3", "1E+3", "-0.25e-2", "01", "-", "1.", ".5", "1e", "+1", "0x10", "1 2", "12345678901234567890",
	"true", "false", "null", "nul", "[]", "{}", `[1,"a",{"b":[null]}]`, `{"a":1,"a":2}`, "{\"\xff\":\"]\"}", `[1,]`, `{"a":"\\"}`,
	`[{"a":"}"}]`, "[", "]", "{", `{"a"}`, "",
}

func TestValues(t *testing.T) {
	for _, v := range values {
		checkValue(t, []byte(v))
	}
}

// FuzzValue: on any input, the scanner reads a value as jsontext does
// or refuses it (checkValue).
func FuzzValue(f *testing.F) {
	for _, v := range values {
		f.Add([]byte(v))
	}
	f.Fuzz(checkValue)
}

// TestMembersAndElements: an object of arrays read member by member and
// element by element, and where each reading gives up.
func TestMembersAndElements(t *testing.T) {
	s := New([]byte(` { "a" : [ 1 , 2 ] ,"b":[]} `))
	var got []string
	if !s.Delim('{') {
		t.Fatal("no object")
	}
	for first := true; ; first = false {
		name, end, ok := s.Member(first)
		if !ok {
			t.Fatalf("Member at %d", s.Offset())
		}
		if end {
			break
		}
		if !s.Delim('[') {
			t.Fatalf("no array at %d", s.Offset())
		}
		for first := true; ; first = false {
			end, ok := s.Element(first)
			if !ok {
				t.Fatalf("Element at %d", s.Offset())
			}
			if end {
				break
			}
			num, _, ok := s.Number()
			if !ok {
				t.Fatalf("Number at %d", s.Offset())
			}
			got = append(got, string(name)+"="+string(num))
		}
		got = append(got, string(name)+" ends")
	}
	if !s.End() || strings.Join(got, " ") != "a=1 a=2 a ends b ends" {
		t.Errorf("read %q, end %v", got, s.End())
	}
	for _, c := range []struct {
		doc   string
		read  func(*Scanner) bool
		what  string
		wants bool
	}{
		{`{"a" 1}`, func(s *Scanner) bool { s.Delim('{'); _, _, ok := s.Member(true); return ok }, "a member without its colon", false},
		{`{"a":1 "b":2}`, func(s *Scanner) bool {
			s.Delim('{')
			s.Member(true)
			s.Number()
			_, _, ok := s.Member(false)
			return ok
		}, "a member without a comma", false},
		{`{"a\u0041":1}`, func(s *Scanner) bool { s.Delim('{'); _, _, ok := s.Member(true); return ok }, "a name with an escape", false},
		{`[1 2]`, func(s *Scanner) bool { s.Delim('['); s.Element(true); s.Number(); _, ok := s.Element(false); return ok }, "an element without a comma", false},
		{`nul`, func(s *Scanner) bool { return s.Literal("null") }, "a cut literal", false},
		{` null `, func(s *Scanner) bool { return s.Literal("null") && s.End() }, "null", true},
	} {
		s := New([]byte(c.doc))
		if got := c.read(&s); got != c.wants {
			t.Errorf("%s (%s): %v, want %v", c.what, c.doc, got, c.wants)
		}
	}
}

// TestObjectAndArray: an object's members by name, a null member skipped,
// and a name twice or unknown giving up.
func TestObjectAndArray(t *testing.T) {
	names := []string{"a", "b", "c"}
	read := func(doc string) (string, bool) {
		s := New([]byte(doc))
		var got []string
		ok := s.Object(names, func(name string) bool {
			return s.Array(func() bool {
				num, _, ok := s.Number()
				got = append(got, name+"="+string(num))
				return ok
			})
		})
		return strings.Join(got, " "), ok && s.End()
	}
	for doc, want := range map[string]string{
		`{"b":[1,2],"a":[],"c":null}`: "b=1 b=2",
		`{}`:                          "",
	} {
		if got, ok := read(doc); !ok || got != want {
			t.Errorf("%s: read %q, %v; want %q", doc, got, ok, want)
		}
	}
	for _, doc := range []string{`{"a":[],"a":[]}`, `{"d":[]}`, `{"A":[]}`, `{"a":[1,]}`, `{"a":{}}`, `[]`} {
		if got, ok := read(doc); ok {
			t.Errorf("%s: read %q, want it given up", doc, got)
		}
	}
}
