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
		{`{"having": {}, "having": null}`, `query variables: duplicate key "having" (line 1, column 16)`},
		{`{"having": {"roles": ["cs"], "roles": ["ss"]}}`, `query variables: having: duplicate key "roles" (line 1, column 30)`},
		{`{"having": {"labels": [{"name": "a", "value": "b", "name": "c"}]}}`, `query variables: having.labels[0]: duplicate key "name" (line 1, column 52)`},
		{`{"Having": {}}`, `query variables: unknown key "Having" (want having, notHaving)`},
		{`{"having": {"Roles": ["cs"]}}`, `query variables: having: unknown field "Roles"; did you mean roles?`},
		{`{"notHaving": {"labels": [{"Name": "a", "value": "b"}]}}`, `query variables: notHaving.labels[0]: unknown field "Name"; did you mean name?`},
		{`{"having": {"rack": [1]}}`, `query variables: having: unknown field "rack"; did you mean racks?`},
		{`{"having": {"racks": [1, "2"]}}`, `query variables: having.racks: cannot use a string at [1] (want int)`},
		{`{"having": {"labels": [{"name": 1, "value": "b"}]}}`, `query variables: having.labels[0].name: cannot use a number here (want string)`},
		{`{"having": 3}`, `query variables: having: cannot use a number here (want a MachineParams object or null)`},
		{`{"having": {}} {}`, `query variables: want a JSON object {"having": ..., "notHaving": ...}: trailing data after the JSON value (line 1, column 16)`},
		{`null`, `query variables: want a JSON object {"having": ..., "notHaving": ...}, got null`},
	}
	for _, c := range cases {
		_, err := sabakan.ParseVariables([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("ParseVariables(%s) = %v\nwant %s", c.in, err, c.want)
		}
	}
}
