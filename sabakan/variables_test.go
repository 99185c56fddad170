package sabakan_test

import (
	"testing"

	"github.com/ckegen/ckegen/sabakan"
)

// TestParseVariablesStrict: a name given twice, a name in another case and
// an unknown member are refused at every level, each error naming the
// variable and the field, with the closest known name.
func TestParseVariablesStrict(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"having": {}, "having": null}`, `query variables: line 1, column 16: duplicate key "having" (first at line 1, column 2)`},
		{`{"having": {"roles": ["cs"], "roles": ["ss"]}}`, `query variables: line 1, column 30: having: duplicate key "roles" (first at line 1, column 13)`},
		{`{"having": {"labels": [{"name": "a", "value": "b", "name": "c"}]}}`, `query variables: line 1, column 52: having.labels[0]: duplicate key "name" (first at line 1, column 25)`},
		{`{"Having": {}}`, `query variables: line 1, column 2: unknown field "Having"; did you mean having?`},
		{`{"zzz": {}}`, `query variables: line 1, column 2: unknown field "zzz" (known fields: having, notHaving)`},
		{`{"having": {"Roles": ["cs"]}}`, `query variables: line 1, column 13: having: unknown field "Roles"; did you mean roles?`},
		{`{"notHaving": {"labels": [{"Name": "a", "value": "b"}]}}`, `query variables: line 1, column 28: notHaving.labels[0]: unknown field "Name"; did you mean name?`},
		{`{"having": {"rack": [1]}}`, `query variables: line 1, column 13: having: unknown field "rack"; did you mean racks?`},
		{`{"having": {"racks": [1, "2"]}}`, `query variables: line 1, column 26: having.racks[1]: want an integer, got the string "2"`},
		{`{"having": {"labels": [{"name": 1, "value": "b"}]}}`, `query variables: line 1, column 33: having.labels[0].name: want a string, got the number 1`},
		{"{\n  \"having\": 3}", `query variables: line 2, column 13: having: want an object (MachineParams, or null), got the number 3`},
		{`{"having": {"labels": [{"name": "a"}]}}`, `query variables: line 1, column 24: having.labels[0]: want {"name": ..., "value": ...} with both set`},
		{`{"having": {"states": ["BROKEN"]}}`, `query variables: line 1, column 24: having.states[0]: unknown state "BROKEN"`},
		{`{"having": {}} {}`, `query variables: line 1, column 16: trailing data after the JSON value`},
		{`[]`, `query variables: line 1, column 1: want an object ({"having": ..., "notHaving": ...}), got an array`},
		{` null`, `query variables: line 1, column 2: want an object ({"having": ..., "notHaving": ...}), got null`},
		{`{"having": {`, `query variables: line 1, column 13: unexpected end of input: the JSON value is not complete`},
	}
	for _, c := range cases {
		_, err := sabakan.ParseVariables([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseVariables(%s) = %v\nwant %s", c.in, err, c.want)
		}
	}
}
