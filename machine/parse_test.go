package machine

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// checkParse fails when Parse, which takes DecodeList's path where it
// can, reads other machines than encoding/json's path alone, or gives
// another error; and when an error does not say where the problem is or
// names a Go type.
func checkParse(t interface {
	Fatalf(string, ...any)
}, data []byte) {
	got, gotErr := Parse(data)
	want, wantErr := parse(data, false)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("Parse: %v\nencoding/json's path: %v\nfrom\n%s", gotErr, wantErr, data)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Parse read\n%#v\nencoding/json's path\n%#v\nfrom\n%s", got, want, data)
	}
	if gotErr != nil {
		checkErrorText(t, data, gotErr)
	}
}

// lineColumn is where an error says the problem is.
var lineColumn = regexp.MustCompile(`line [1-9][0-9]*, column [1-9][0-9]*`)

// goNames are what Go, not a machines file, calls things.
var goNames = regexp.MustCompile(`Go (value|struct)|machine\.|time\.Time|Unmarshal|json:|\bint\b|float64|\[\]`)

func checkErrorText(t interface {
	Fatalf(string, ...any)
}, data []byte, err error) {
	msg := err.Error()
	if strings.TrimSpace(string(data)) != "" && !lineColumn.MatchString(msg) {
		t.Fatalf("error without its line and column: %s\nfrom\n%s", msg, data)
	}
	if goNames.MatchString(strings.ReplaceAll(msg, "machines[", "")) {
		t.Fatalf("error with Go's names: %s\nfrom\n%s", msg, data)
	}
}

// TestParseMatchesSlowPath: on machine lists written with every variation
// the fast path must leave to encoding/json (jsonGen), Parse reads the
// machines and gives the errors encoding/json's path alone gives, and
// every error says where.
func TestParseMatchesSlowPath(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := &jsonGen{t: t, odd: rapid.IntRange(0, 3).Draw(t, "oddness") > 0}
		checkParse(t, g.document(rapid.Bool().Draw(t, "envelope")))
	})
}

// TestParseErrorsSayWhere: each kind of error names the value, and gives
// the line and column of the value (of a truncated file, its end).
func TestParseErrorsSayWhere(t *testing.T) {
	m := func(spec, status string) string {
		return `{"spec":{"serial":"s9"` + spec + `},"status":{"state":"HEALTHY"` + status + `}}`
	}
	cases := []struct{ doc, want string }{
		{"[\n" + one + ",\n", "machines: unexpected end of JSON input (line 4, column 47)"},
		{"[\n" + m("", "") + "\n", "machines: unexpected end of JSON input (line 2, column 54)"},
		{"[" + m("", "") + " x]", "machines: invalid character 'x' after array element (line 1, column 56)"},
		{" \n x", "machines: want a JSON array or a GraphQL response object (line 2, column 2)"},
		{"[" + m(`,"rack":"1"`, "") + "]", `machines[0].spec.rack: must be a 64-bit integer, got the string "1" (line 1, column 32)`},
		{"[" + m(`,"rack":1.5`, "") + "]", `machines[0].spec.rack: must be a 64-bit integer, got the number 1.5 (line 1, column 32)`},
		{"[" + m(`,"labels":{}`, "") + "]", `machines[0].spec.labels: must be an array, got an object (line 1, column 34)`},
		{"[" + m("", `,"duration":"1"`) + "]", `machines[0].status.duration: must be a number, got the string "1" (line 1, column 65)`},
		{"[" + m(`,"bmc":{"bmcType":true}`, "") + "]", `machines[0].spec.bmc.bmcType: must be a string, got true (line 1, column 42)`},
		{"[1]", "machines[0]: must be an object, got the number 1 (line 1, column 2)"},
		{`{"data":{"searchMachines":[` + m(`,"rack":"1"`, "") + `]}}`, `data.searchMachines[0].spec.rack: must be a 64-bit integer, got the string "1" (line 1, column 58)`},
		{`{"data":{"searchMachines":5}}`, "data.searchMachines: must be an array, got the number 5 (line 1, column 27)"},
		{`{"data":{}}`, "machines: object without data.searchMachines (line 1, column 1)"},
		{"[" + m("", "") + "]\n x", "machines: trailing data after the JSON value, from line 2, column 2: remove it"},
		{"[" + m(`,"registerDate":"2024-13-01T00:00:00Z"`, "") + "]", `machines[0].spec.registerDate: "2024-13-01T00:00:00Z" is not an RFC 3339 date (2006-01-02T15:04:05Z): month out of range (line 1, column 40)`},
		{"[\n" + m(`,"retireDate":"soon"`, "") + "]", `machines[0].spec.retireDate: "soon" is not an RFC 3339 date (2006-01-02T15:04:05Z) (line 2, column 37)`},
		{"[" + m("", `,"timestamp":5`) + "]", `machines[0].status.timestamp: must be a date in a string (RFC 3339: 2006-01-02T15:04:05Z), got the number 5 (line 1, column 66)`},
		{"[" + m("", "") + ",\n" + m("", "") + "]", `machines[1]: spec.serial: s9 is also machines[0]'s: serials are unique in sabakan, so the list is broken (line 2, column 19)`},
		{`[{"spec":{"serial":"s9"},"status":{"state":"BAD"}}]`, `machines[0] (serial s9): status.state: unknown state "BAD" (want one of UNINITIALIZED, HEALTHY, UNHEALTHY, UNREACHABLE, UPDATING, RETIRING, RETIRED) (line 1, column 44)`},
		{`[{"status":{"state":"HEALTHY"}}]`, "machines[0]: spec.serial: must not be empty (line 1, column 2)"},
		{``, "machines: empty input"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if fmt.Sprint(err) != c.want {
			t.Errorf("Parse(%q)\n = %v\nwant %s", c.doc, err, c.want)
		}
	}
}

// TestParseColumnsCountCharacters: on a line with multi-byte characters
// before the problem, the column counts characters, not bytes, as every
// other error about a document does (strictjson.Position): a type error,
// a date that does not parse, a machine Validate refuses, trailing data.
func TestParseColumnsCountCharacters(t *testing.T) {
	// 東京 is 2 characters and 6 bytes, é 1 and 2.
	labels := `"labels":[{"name":"dc","value":"東京"},{"name":"é","value":""}]`
	cases := []struct{ doc, want string }{
		{`[{"spec":{"serial":"s9",` + labels + `,"rack":"1"},"status":{"state":"HEALTHY"}}]`,
			`machines[0].spec.rack: must be a 64-bit integer, got the string "1" (line 1, column 94)`},
		{"[\n" + `{"spec":{"serial":"s9",` + labels + `,"retireDate":"soon"},"status":{"state":"HEALTHY"}}]`,
			`machines[0].spec.retireDate: "soon" is not an RFC 3339 date (2006-01-02T15:04:05Z) (line 2, column 99)`},
		{`[{"spec":{"serial":"s9",` + labels + `},"status":{"state":"BAD"}}]`,
			`machines[0] (serial s9): status.state: unknown state "BAD" (want one of UNINITIALIZED, HEALTHY, UNHEALTHY, UNREACHABLE, UPDATING, RETIRING, RETIRED) (line 1, column 106)`},
		{`[{"spec":{"serial":"s9",` + labels + `},"status":{"state":"HEALTHY"}}] x`,
			"machines: trailing data after the JSON value, from line 1, column 119: remove it"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.doc))
		if fmt.Sprint(err) != c.want {
			t.Errorf("Parse(%s)\n = %v\nwant %s", c.doc, err, c.want)
		}
	}
}
