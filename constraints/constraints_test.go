package constraints

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`{"control-plane-count": 3, "maximum-workers": 10}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.ControlPlaneCount != 3 || c.MinimumWorkers != 1 || c.MaximumWorkers != 10 {
		t.Errorf("got %+v, want 3/1(default)/10", c)
	}
	if len(c.Warnings()) != 0 {
		t.Errorf("odd count warned: %v", c.Warnings())
	}
}

func TestPreservesCKEKeys(t *testing.T) {
	in := `{"control-plane-count":1,"minimum-workers":1,"maximum-workers":0,"maximum-unreachable-nodes-for-reboot":2,"maximum-repair-queue-entries":0,"wait-seconds-to-repair-rebooting":30}`
	c, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("round trip = %s, want %s", out, in)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"control-plane-count": 0}`, "control-plane-count: must be >= 1, got 0"},
		{`{"minimum-workers": -1}`, "minimum-workers: must be >= 0, got -1"},
		{`{"minimum-workers": 5, "maximum-workers": 3}`, "maximum-workers: must be 0 (unlimited) or >= minimum-workers (5), got 3"},
		{`{"maximum-workers": -2}`, "maximum-workers: must be 0 (unlimited)"},
		{`{"control-plane-count": 1.5}`, "control-plane-count: must be an integer, got 1.5"},
		{`{"control-plane-count": "3"}`, `control-plane-count: must be an integer, got "3"`},
		{`{"control-plane-count": 1e1}`, "control-plane-count: must be an integer, got 1e1"},
		{`{"control-plane-count": 99999999999}`, "must be an integer"},
		{`{"contol-plane-count": 3}`, `unknown key "contol-plane-count"; did you mean control-plane-count?`},
		{`{"replicas": 3}`, `constraints: unknown key "replicas" (known: control-plane-count, minimum-workers,`},
		{`{"control-plane-count": 3, "control-plane-count": 1}`, `constraints: duplicate key "control-plane-count" (line 1, column 28)`},
		{`{"minimum-workers": 3, "maximum-workers": 5, "minimum-workers": 9}`, `constraints: duplicate key "minimum-workers" (line 1, column 46)`},
		{`{"control-plane-count": 3} }`, "constraints: trailing data after the JSON value (line 1, column 28)"},
		{`{"control-plane-count": 3}]`, "constraints: trailing data after the JSON value (line 1, column 27)"},
		{"{\"control-plane-count\": 3}\n{}", "constraints: trailing data after the JSON value (line 2, column 1)"},
		{`control-plane-count: 3`, "constraints: want a single JSON object"},
		{`{"maximum-repair-queue-entries": -1}`, "maximum-repair-queue-entries: must be >= 0"},
		{`[1]`, "want a single JSON object"},
		{`null`, "want a JSON object, got null"},
		{`{"control-plane-count": 3} {"minimum-workers": 9}`, "constraints: trailing data after the JSON value (line 1, column 28)"},
		{``, "want a single JSON object"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) error = %v, want it to contain %q", c.in, err, c.want)
		}
	}
}

func TestEvenCountWarns(t *testing.T) {
	c := Default()
	c.ControlPlaneCount = 4
	if err := c.Validate(); err != nil {
		t.Fatalf("an even count is allowed: %v", err)
	}
	if w := c.Warnings(); len(w) != 1 || !strings.Contains(w[0], "even") {
		t.Errorf("Warnings() = %v, want one about the even count", w)
	}
}
