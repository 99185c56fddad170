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

// missingCP is the error of a document without control-plane-count.
const missingCP = "constraints: control-plane-count: missing, which CKE reads as 0, and CKE's server runs no cluster without a control plane: " +
	"store it (ckegenctl constraints set control-plane-count 1, or 3 for etcd to survive the loss of one)"

func TestParseErrors(t *testing.T) {
	cases := []struct{ in, want string }{
		{`{"control-plane-count": 0}`, "constraints: line 1, column 25: control-plane-count: must be >= 1, got 0"},
		{`{"minimum-workers": -1, "control-plane-count": 1}`, "constraints: line 1, column 21: minimum-workers: must be >= 0, got -1"},
		{`{"minimum-workers": 5, "maximum-workers": 3, "control-plane-count": 1}`, "constraints: line 1, column 43: maximum-workers: must be 0 (unlimited) or >= minimum-workers (5), got 3"},
		{`{"maximum-workers": -2, "control-plane-count": 1}`, "constraints: line 1, column 21: maximum-workers: must be 0 (unlimited) or >= minimum-workers, got -2"},
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
		{"{\n  \"maximum-repair-queue-entries\": -1, \"control-plane-count\": 1}", "constraints: line 2, column 35: maximum-repair-queue-entries: must be >= 0, got -1"},
		// CKE reads a missing control-plane-count as 0.
		{`{"minimum-workers-rate": 80}`, missingCP},
		{`{"minimum-workers": 3}`, missingCP},
		{`{}`, missingCP},
		{`{"minimum-workers": -1}`, missingCP + "\nconstraints: line 1, column 21: minimum-workers: must be >= 0, got -1"},
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
	if d := Default(); d.Model() != RateModel || *d.MinimumWorkersRate != 80 || d.ControlPlaneCount != 1 || !d.Implicit || d.Validate() != nil {
		t.Errorf("the defaults are %+v, the %s model, want CKE v1.35.4's: the rate model, 80%%, one control plane, naming no model", d, d.Model())
	}
	if d := CountDefaults(); d.Model() != CountModel || d.MinimumWorkers != 1 || d.MaximumWorkers != 0 || d.ControlPlaneCount != 1 || d.Implicit {
		t.Errorf("the count model's defaults are %+v", d)
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
	for _, ok := range []string{`{"minimum-workers-rate": 0, "control-plane-count": 1}`, `{"minimum-workers-rate": 100, "control-plane-count": 1}`} {
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
	c, _ := Parse([]byte(`{"control-plane-count": 1, "minimum-workers-rate": 80}`))
	// (9 - 1) / 10 = 80% >= 80: allowed; (8 - 1) / 10 = 70%: not.
	if !c.MayRemoveWorker(9, 10) || c.MayRemoveWorker(8, 10) {
		t.Errorf("MayRemoveWorker(9,10)=%v (want true), (8,10)=%v (want false)", c.MayRemoveWorker(9, 10), c.MayRemoveWorker(8, 10))
	}
	if CountDefaults().MayRemoveWorker(100, 10) {
		t.Error("the count model has no rate rule")
	}
	if got := Rate(9, 10); got != 80 {
		t.Errorf("Rate(9, 10) = %v, want 80", got)
	}
}

// TestReadsAsCKE: a document with neither model's worker key is read as
// CKE v1.35.4 reads it, into a zero value: the rate model with
// minimum-workers-rate 0, naming no model (Implicit); a count key chooses
// the count model, whose left-out keys take the count model's defaults.
// (ckeref's TestConstraintsReadAsCKE compares with CKE's own reading.)
func TestReadsAsCKE(t *testing.T) {
	for _, c := range []struct {
		doc                string
		model              string
		cp, rate, min, max int
		implicit           bool
	}{
		{`{"control-plane-count": 3}`, RateModel, 3, 0, 0, 0, true},
		{`{"control-plane-count": 3, "maximum-repair-queue-entries": 2}`, RateModel, 3, 0, 0, 0, true},
		{`{"control-plane-count": 3, "minimum-workers-rate": 0}`, RateModel, 3, 0, 0, 0, false},
		{`{"control-plane-count": 5, "minimum-workers-rate": 70}`, RateModel, 5, 70, 0, 0, false},
		{`{"control-plane-count": 3, "maximum-workers": 10}`, CountModel, 3, 0, 1, 10, false},
		{`{"control-plane-count": 3, "minimum-workers": 4}`, CountModel, 3, 0, 4, 0, false},
	} {
		got, err := Parse([]byte(c.doc))
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		rate := 0
		if got.MinimumWorkersRate != nil {
			rate = *got.MinimumWorkersRate
		}
		if got.Model() != c.model || got.ControlPlaneCount != c.cp || rate != c.rate || got.MinimumWorkers != c.min || got.MaximumWorkers != c.max || got.Implicit != c.implicit {
			t.Errorf("%s: %+v (rate %d), want the %s model, %d control planes, rate %d, workers %d..%d, implicit %v", c.doc, got, rate, c.model, c.cp, c.rate, c.min, c.max, c.implicit)
		}
	}
	// With nothing stored, setting minimum-workers 1 stores the count
	// model's defaults exactly (CountDefaultsCommand); on a document
	// without a worker key it keeps its control planes.
	for _, c := range []struct {
		from Constraints
		want string
	}{
		{Default(), `{"control-plane-count":1,"minimum-workers":1,"maximum-workers":0}`},
		{mustParse(t, `{"control-plane-count":3}`), `{"control-plane-count":3,"minimum-workers":1,"maximum-workers":0}`},
	} {
		if err := c.from.Set(MinimumWorkers, 1); err != nil {
			t.Fatal(err)
		}
		if out, _ := json.Marshal(c.from); string(out) != c.want || c.from.Implicit {
			t.Errorf("set minimum-workers 1: %s (implicit %v), want %s", out, c.from.Implicit, c.want)
		}
	}
	if out, _ := json.Marshal(CountDefaults()); string(out) != `{"control-plane-count":1,"minimum-workers":1,"maximum-workers":0}` {
		t.Errorf("the count model's defaults marshal as %s", out)
	}
}

func mustParse(t *testing.T, doc string) Constraints {
	t.Helper()
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
