package constraints

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: no input makes Parse panic; accepted constraints are valid and
// survive a round trip.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{"control-plane-count": 3}`, `{"a":1,"a":2}`, `{"minimum-workers": 1} }`, `{"maximum-workers": 1e1}`, `null`, `{"maximum-repair-queue-entries": 2}`, `{"minimum-workers-rate": 80}`, `{"minimum-workers-rate": 8, "minimum-workers": 1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted invalid constraints %s: %v", data, err)
		}
		out, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(out)
		if err == nil && back.Implicit {
			t.Fatalf("%s, as written, names no model", out)
		}
		// Written, a document names its model: the rest is the same.
		back.Implicit = c.Implicit
		if err != nil || !reflect.DeepEqual(back, c) {
			t.Fatalf("round trip of %s: %+v, %v", out, back, err)
		}
	})
}
