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
		{`{"control-plane-count": 0}`, "constraints: line 1, column 25: control-plane-count: must be >= 1, got 0"},
		{`{"minimum-workers": -1}`, "constraints: line 1, column 21: minimum-workers: must be >= 0, got -1"},
		{`{"minimum-workers": 5, "maximum-workers": 3}`, "constraints: line 1, column 43: maximum-workers: must be 0 (unlimited) or >= minimum-workers (5), got 3"},
		{`{"maximum-workers": -2}`, "constraints: line 1, column 21: maximum-workers: must be 0 (unlimited) or >= minimum-workers, got -2"},
		{`{"control-plane-count": 1.5}`, "constraints: line 1, column 25: control-plane-count: want an integer, got the number 1.5"},
		{`{"control-plane-count": "3"}`, `constraints: line 1, column 25: control-plane-count: want an integer, got the string "3"`},
		{`{"control-plane-count": 1e1}`, "constraints: line 1, column 25: control-plane-count: want an integer, got the number 1e1"},
		{`{"control-plane-count": 99999999999}`, "constraints: line 1, column 25: control-plane-count: want an integer, got the number 99999999999: out of range (-2147483648 to 2147483647)"},
		{`{"control-plane-count": 99999999999999999999}`, "constraints: line 1, column 25: control-plane-count: want an integer, got the number 99999999999999999999: out of range (-2147483648 to 2147483647)"},
		{`{"contol-plane-count": 3}`, `constraints: line 1, column 2: unknown field "contol-plane-count"; did you mean control-plane-count?`},
		{`{"replicas": 3}`, `constraints: line 1, column 2: unknown field "replicas" (known fields: control-plane-count, minimum-workers, maximum-workers, ` +
			`minimum-workers-rate, maximum-unreachable-nodes-for-reboot, maximum-repair-queue-entries, wait-seconds-to-repair-rebooting)`},
		{`{"Control-Plane-Count": 3}`, `constraints: line 1, column 2: unknown field "Control-Plane-Count"; did you mean control-plane-count?`},
		{`[1]`, `constraints: line 1, column 1: want an object (constraints by name, such as {"control-plane-count": 3}), got an array`},
		{`{"control-plane-count": 3,`, `constraints: line 1, column 27: unexpected end of input: the JSON value is not complete`},
		{`{"control-plane-count": 3, "control-plane-count": 1}`, `constraints: line 1, column 28: duplicate key "control-plane-count" (first at line 1, column 2)`},
		{`{"minimum-workers": 3, "maximum-workers": 5, "minimum-workers": 9}`, `constraints: line 1, column 46: duplicate key "minimum-workers" (first at line 1, column 2)`},
		{`{"control-plane-count": 3} }`, "constraints: line 1, column 28: trailing data after the JSON value"},
		{`{"control-plane-count": 3}]`, "constraints: line 1, column 27: trailing data after the JSON value"},
		{"{\"control-plane-count\": 3}\n{}", "constraints: line 2, column 1: trailing data after the JSON value"},
		{`control-plane-count: 3`, "constraints: line 1, column 1: invalid character 'c' at start of value"},
		{"{\n  \"maximum-repair-queue-entries\": -1}", "constraints: line 2, column 35: maximum-repair-queue-entries: must be >= 0, got -1"},
		{`null`, `constraints: line 1, column 1: want an object (constraints by name, such as {"control-plane-count": 3}), got null`},
		{`{"control-plane-count": 3} {"minimum-workers": 9}`, "constraints: line 1, column 28: trailing data after the JSON value"},
		{``, "constraints: no JSON value"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%s) error = %v\nwant %s", c.in, err, c.want)
		}
	}
	// Without a document, without a position.
	if err := (Constraints{}).Validate(); err == nil || err.Error() != "constraints: control-plane-count: must be >= 1, got 0" {
		t.Errorf("Validate = %v", err)
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

// CKE v1.35's `ckecli constraints set` stores all five of its keys; ckegen
// reads that document as the rate model and writes it back byte for byte.
func TestReadsCKEv135Document(t *testing.T) {
	in := `{"control-plane-count":3,"minimum-workers-rate":80,"maximum-unreachable-nodes-for-reboot":0,"maximum-repair-queue-entries":0,"wait-seconds-to-repair-rebooting":0}`
	c, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if !c.RateModel() || c.Model() != RateModel || *c.MinimumWorkersRate != 80 || c.ControlPlaneCount != 3 {
		t.Errorf("got %+v (model %s), want the rate model with rate 80 and 3 control planes", c, c.Model())
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != in {
		t.Errorf("round trip = %s, want %s", out, in)
	}
	if Default().Model() != CountModel {
		t.Errorf("the default is the %s model, want the count model", Default().Model())
	}
}

func TestRateModelErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"minimum-workers-rate": 101}`, "minimum-workers-rate: must be a percentage from 0 to 100, got 101"},
		{`{"minimum-workers-rate": -1}`, "minimum-workers-rate: must be a percentage from 0 to 100, got -1"},
		{`{"minimum-workers-rate": 80.5}`, "constraints: line 1, column 26: minimum-workers-rate: want an integer, got the number 80.5"},
		{`{"minimum-workers-rate": "80"}`, `constraints: line 1, column 26: minimum-workers-rate: want an integer, got the string "80"`},
		{`{"minimum-workers-rate": 80, "minimum-workers": 3}`, "minimum-workers-rate cannot be used with minimum-workers: choose one model"},
		{`{"maximum-workers": 9, "minimum-workers-rate": 80, "minimum-workers": 3}`, "minimum-workers-rate cannot be used with maximum-workers and minimum-workers"},
		{`{"minimum-worker-rate": 80}`, "did you mean minimum-workers-rate?"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%s) error = %v, want it to contain %q", c.in, err, c.want)
		}
	}
	for _, ok := range []string{`{"minimum-workers-rate": 0}`, `{"minimum-workers-rate": 100}`} {
		if _, err := Parse([]byte(ok)); err != nil {
			t.Errorf("Parse(%s): %v", ok, err)
		}
	}
}

// Setting a key of the other model switches the document in one step, so
// that ckegen's `constraints set` stores what CKE v1.35's stores.
func TestSetSwitchesModels(t *testing.T) {
	c, err := Parse([]byte(`{"control-plane-count":3,"minimum-workers":5,"maximum-workers":9,"maximum-repair-queue-entries":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(MinimumWorkersRate, 70); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(c)
	if want := `{"control-plane-count":3,"minimum-workers-rate":70,"maximum-repair-queue-entries":2}`; string(out) != want {
		t.Errorf("after set %s 70: %s, want %s", MinimumWorkersRate, out, want)
	}
	if err := c.Set(MaximumWorkers, 12); err != nil {
		t.Fatal(err)
	}
	out, _ = json.Marshal(c)
	if want := `{"control-plane-count":3,"minimum-workers":1,"maximum-workers":12,"maximum-repair-queue-entries":2}`; string(out) != want {
		t.Errorf("after set %s 12: %s, want %s", MaximumWorkers, out, want)
	}
	if c.RateModel() {
		t.Error("still in the rate model")
	}
}

func TestMayRemoveWorker(t *testing.T) {
	c, _ := Parse([]byte(`{"minimum-workers-rate": 80}`))
	// (9 - 1) / 10 = 80% >= 80: allowed; (8 - 1) / 10 = 70%: not.
	if !c.MayRemoveWorker(9, 10) || c.MayRemoveWorker(8, 10) {
		t.Errorf("MayRemoveWorker(9,10)=%v (want true), (8,10)=%v (want false)", c.MayRemoveWorker(9, 10), c.MayRemoveWorker(8, 10))
	}
	if Default().MayRemoveWorker(100, 10) {
		t.Error("the count model has no rate rule")
	}
	if got := Rate(9, 10); got != 80 {
		t.Errorf("Rate(9, 10) = %v, want 80", got)
	}
}
