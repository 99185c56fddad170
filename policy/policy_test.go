package policy

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/template"
)

// evalPolicy has a control-plane placement with constraints, a metric
// constraint, two groups and two scored metrics, and a gpu placement
// with a label constraint only.
const evalPolicy = `
placements:
  control-plane:
    constraints:
    - topology.kubernetes.io/zone in (rack0, rack1, rack2)
    - sabakan.cke.cybozu.com/broken != "true"
    metricConstraints: ["temp lt 40"]
    groups:
    - name: dedicated
      constraints: [sabakan.cke.cybozu.com/cp-ready is "true"]
      metricConstraints: [power <= 300]
    - name: any
    metrics:
    - {name: temp, weight: -5}
    - {name: power, weight: 2}
  gpu:
    constraints: ["sabakan.cke.cybozu.com/gpu in (a100, h100)"]
metrics:
  temp: {provider: lab, min: 15, max: 45}
  power: {provider: lab, min: 100, max: 500}
providers:
  lab: {type: static}
stickiness: 2.5
`

func compileEval(t testing.TB) *Policy {
	t.Helper()
	p, err := Load([]byte(evalPolicy), exampleTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// row builds a Row of p's metrics from name=value pairs (others: no value).
func row(p *Policy, kv map[string]float64) Row {
	r := make(Row, len(p.Metrics()))
	for i := range r {
		r[i] = math.NaN()
	}
	for k, v := range kv {
		r[p.MetricIndex(k)] = v
	}
	return r
}

func TestAdmitAndGroups(t *testing.T) {
	p := compileEval(t)
	cp := p.Placement(ControlPlane)
	ready := LabelMap{"topology.kubernetes.io/zone": "rack1", "sabakan.cke.cybozu.com/cp-ready": "true"}
	plain := LabelMap{"topology.kubernetes.io/zone": "rack2"}
	for _, tc := range []struct {
		name      string
		labels    LabelMap
		values    map[string]float64
		admit     bool
		groups    GroupSet
		first     string
		rejection string
	}{
		{"ready, cool, low power: both groups", ready, map[string]float64{"temp": 20, "power": 250}, true, 0b11, "dedicated", ""},
		{"ready but power too high: second group", ready, map[string]float64{"temp": 20, "power": 301}, true, 0b10, "any", ""},
		{"ready but no power value: second group", ready, map[string]float64{"temp": 20}, true, 0b10, "any", ""},
		{"not ready: second group", plain, map[string]float64{"temp": 39.9, "power": 100}, true, 0b10, "any", ""},
		{"wrong rack", LabelMap{"topology.kubernetes.io/zone": "rack3"}, map[string]float64{"temp": 20}, false, 0, "",
			`constraint "topology.kubernetes.io/zone in (rack0, rack1, rack2)" does not hold: label topology.kubernetes.io/zone is rack3`},
		{"no zone label", LabelMap{}, map[string]float64{"temp": 20}, false, 0, "",
			`constraint "topology.kubernetes.io/zone in (rack0, rack1, rack2)" does not hold: label topology.kubernetes.io/zone is missing`},
		{"broken", LabelMap{"topology.kubernetes.io/zone": "rack0", "sabakan.cke.cybozu.com/broken": "true"}, map[string]float64{"temp": 20}, false, 0, "",
			`constraint "sabakan.cke.cybozu.com/broken is not true" does not hold: label sabakan.cke.cybozu.com/broken is true`},
		{"too hot", plain, map[string]float64{"temp": 40}, false, 0, "",
			`metric constraint "temp < 40" does not hold: value 40`},
		{"no temperature: fails the metric constraint", plain, nil, false, 0, "",
			`metric constraint "temp < 40" does not hold: no value`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := row(p, tc.values)
			groups, ok := cp.Admit(tc.labels, r)
			if ok != tc.admit || groups != tc.groups {
				t.Errorf("Admit = %b, %v; want %b, %v", groups, ok, tc.groups, tc.admit)
			}
			if got := cp.GroupName(groups.First()); got != tc.first {
				t.Errorf("first group %q, want %q", got, tc.first)
			}
			if got := cp.Rejection(tc.labels, r); got != tc.rejection {
				t.Errorf("Rejection = %q, want %q", got, tc.rejection)
			}
			if cp.MatchLabels(tc.labels) && cp.MatchMetrics(r) && cp.Groups(tc.labels, r) != tc.groups {
				t.Errorf("Groups = %b, want %b", cp.Groups(tc.labels, r), tc.groups)
			}
		})
	}
	// The gpu placement: label constraint only, no groups.
	gpu := p.Placement("gpu")
	if g, ok := gpu.Admit(LabelMap{"sabakan.cke.cybozu.com/gpu": "h100"}, nil); !ok || g != 0 || g.First() != -1 {
		t.Errorf("gpu h100: Admit = %b, %v", g, ok)
	}
	if _, ok := gpu.Admit(LabelMap{"sabakan.cke.cybozu.com/gpu": "v100"}, nil); ok {
		t.Error("gpu v100 admitted")
	}
}

// TestInNoGroup: a machine the placement takes but no group does is not a
// candidate, and the rejection says why per group.
func TestInNoGroup(t *testing.T) {
	p, err := Load([]byte(`{"placements": {"control-plane": {"groups": [
		{"name": "a", "constraints": ["x is 1"]}, {"name": "b", "metricConstraints": ["temp > 3"]}]}},
		"metrics": {"temp": {"provider": "s", "max": 1}}, "providers": {"s": {"type": "static"}}}`), exampleTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	cp := p.Placement(ControlPlane)
	l := LabelMap{"x": "2"}
	if g, ok := cp.Admit(l, row(p, map[string]float64{"temp": 3})); ok || g != 0 {
		t.Errorf("Admit = %b, %v; want not admitted", g, ok)
	}
	want := `in no group: group a: constraint "x is 1" does not hold: label x is 2; group b: metric constraint "temp > 3" does not hold: value 3`
	if got := cp.Rejection(l, row(p, map[string]float64{"temp": 3})); got != want {
		t.Errorf("Rejection = %q\nwant        %q", got, want)
	}
	if g, ok := cp.Admit(l, row(p, map[string]float64{"temp": 3.5})); !ok || g != 0b10 || cp.GroupName(g.First()) != "b" {
		t.Errorf("Admit = %b, %v; want group b", g, ok)
	}
}

func TestPointsAndTerms(t *testing.T) {
	p := compileEval(t)
	cp := p.Placement(ControlPlane)
	for _, tc := range []struct {
		values map[string]float64
		points float64
		terms  []string
	}{
		// temp: -5 x (v-15)/30; power: 2 x (v-100)/400
		{map[string]float64{"temp": 27, "power": 300}, -5*0.4 + 2*0.5,
			[]string{"temp=27 (normalized 0.4) x weight -5 = -2", "power=300 (normalized 0.5) x weight 2 = 1"}},
		// clamped below min and above max
		{map[string]float64{"temp": 10, "power": 900}, 0 + 2,
			[]string{"temp=10 (normalized 0) x weight -5 = 0", "power=900 (normalized 1) x weight 2 = 2"}},
		{map[string]float64{"temp": 45, "power": 100}, -5,
			[]string{"temp=45 (normalized 1) x weight -5 = -5", "power=100 (normalized 0) x weight 2 = 0"}},
		// infinite values clamp too
		{map[string]float64{"temp": math.Inf(1), "power": math.Inf(-1)}, -5,
			[]string{"temp=+Inf (normalized 1) x weight -5 = -5", "power=-Inf (normalized 0) x weight 2 = 0"}},
		// a missing value adds 0 and says so
		{map[string]float64{"power": 200}, 0.5,
			[]string{"temp: no value, 0", "power=200 (normalized 0.25) x weight 2 = 0.5"}},
		{nil, 0, []string{"temp: no value, 0", "power: no value, 0"}},
		// normalized and points are shown to three decimals
		{map[string]float64{"temp": 20, "power": 100}, -5.0 / 6,
			[]string{"temp=20 (normalized 0.167) x weight -5 = -0.833", "power=100 (normalized 0) x weight 2 = 0"}},
	} {
		t.Run(fmt.Sprint(tc.values), func(t *testing.T) {
			r := row(p, tc.values)
			if got := cp.Points(r); math.Abs(got-tc.points) > 1e-12 {
				t.Errorf("Points = %v, want %v", got, tc.points)
			}
			terms := cp.Terms(r)
			var got []string
			var sum float64
			for _, term := range terms {
				got = append(got, term.String())
				sum += term.Points
			}
			if strings.Join(got, "; ") != strings.Join(tc.terms, "; ") {
				t.Errorf("Terms:\n%q\nwant\n%q", got, tc.terms)
			}
			if sum != cp.Points(r) {
				t.Errorf("terms add up to %v, Points is %v", sum, cp.Points(r))
			}
		})
	}
	if got := p.Placement("gpu").Points(row(p, map[string]float64{"temp": 30})); got != 0 {
		t.Errorf("a placement without metrics scores %v", got)
	}
	if p.Stickiness() != 2.5 {
		t.Errorf("Stickiness = %v", p.Stickiness())
	}
}

func TestNormalize(t *testing.T) {
	for _, tc := range []struct{ v, lo, hi, want float64 }{
		{15, 15, 45, 0}, {45, 15, 45, 1}, {30, 15, 45, 0.5}, {0, 15, 45, 0}, {100, 15, 45, 1},
		{-1, -2, 2, 0.25}, {math.Inf(1), 0, 1, 1}, {math.Inf(-1), 0, 1, 0},
		{0, -math.MaxFloat64, math.MaxFloat64, 0}, // the span overflows: no NaN
	} {
		if got := normalize(tc.v, tc.lo, tc.hi); got != tc.want {
			t.Errorf("normalize(%v, %v, %v) = %v, want %v", tc.v, tc.lo, tc.hi, got, tc.want)
		}
	}
}

// TestNoPolicy: a nil policy and a template the policy says nothing about
// admit everything, with no groups and no points.
func TestNoPolicy(t *testing.T) {
	var p *Policy
	pl := p.Placement(ControlPlane)
	if g, ok := pl.Admit(nil, nil); !ok || g != 0 || pl.Points(nil) != 0 || pl.Terms(nil) != nil || pl.Rejection(nil, nil) != "" || pl.NumGroups() != 0 {
		t.Error("a nil placement restricts or scores")
	}
	if p.Stickiness() != 0 || p.Metrics() != nil || p.Document() != nil || p.MetricIndex("x") != -1 {
		t.Error("a nil policy has settings")
	}
	var v *Values
	if v.Lookup("S") != nil || v.Len() != 0 {
		t.Error("a nil table has values")
	}
	if compileEval(t).Placement("storage") != nil {
		t.Error("storage has a placement it was not given")
	}
}

func TestValues(t *testing.T) {
	p := compileEval(t)
	if got := strings.Join(p.Metrics(), ","); got != "power,temp" {
		t.Fatalf("Metrics = %s, want sorted", got)
	}
	v := p.NewValues([]string{"S1", "S2", "S1"})
	if v.Len() != 3 {
		t.Errorf("Len = %d", v.Len())
	}
	v.Set(1, p.MetricIndex("temp"), 30)
	if x, ok := v.Lookup("S2").Get(p.MetricIndex("temp")); !ok || x != 30 {
		t.Errorf("S2 temp = %v, %v", x, ok)
	}
	if _, ok := v.Lookup("S1").Get(p.MetricIndex("temp")); ok {
		t.Error("S1 has a temp it was not given")
	}
	if i, _ := v.Index("S1"); i != 0 {
		t.Errorf("a repeated serial keeps its first row, got %d", i)
	}
	if v.Lookup("S9") != nil {
		t.Error("an unknown serial has a row")
	}
	if got := p.Placement(ControlPlane).Points(v.Lookup("S2")); got != -2.5 {
		t.Errorf("Points(S2) = %v, want -2.5", got)
	}
	// LookupAt agrees with Lookup wherever the caller's index is: right,
	// wrong, out of range, or at a repeated serial's second row.
	v.Set(0, p.MetricIndex("temp"), 20)
	v.Set(2, p.MetricIndex("temp"), 99) // S1's second row: never read
	temp := p.MetricIndex("temp")
	for _, c := range []struct {
		i      int
		serial string
	}{{0, "S1"}, {2, "S1"}, {1, "S2"}, {0, "S2"}, {7, "S2"}, {-1, "S1"}, {1, "S9"}} {
		got, _ := v.LookupAt(c.i, c.serial).Get(temp)
		want, _ := v.Lookup(c.serial).Get(temp)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Errorf("LookupAt(%d, %s) temp = %v, Lookup = %v", c.i, c.serial, got, want)
		}
	}
	u := p.NewValues([]string{"A", "B"})
	u.Set(1, temp, 5)
	if got, _ := u.LookupAt(1, "B").Get(temp); got != 5 {
		t.Errorf("LookupAt(1, B) = %v, want 5", got)
	}
	var none *Values
	if none.LookupAt(0, "A") != nil {
		t.Error("a nil table has a row")
	}
}

// TestEvaluationDoesNotAllocate: the calls the generator makes for every
// machine allocate nothing.
func TestEvaluationDoesNotAllocate(t *testing.T) {
	p := compileEval(t)
	cp := p.Placement(ControlPlane)
	v := p.NewValues([]string{"S1"})
	v.Set(0, 0, 200)
	v.Set(0, 1, 20)
	l := LabelMap{"topology.kubernetes.io/zone": "rack1", "sabakan.cke.cybozu.com/cp-ready": "true"}
	allocs := testing.AllocsPerRun(100, func() {
		r := v.Lookup("S1")
		if _, ok := cp.Admit(l, r); !ok {
			t.Fatal("not admitted")
		}
		_ = cp.Points(r)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per machine", allocs)
	}
}

// benchPolicy is the policy of the benchmark: 3 placements, 5
// label constraints and 2 metrics.
const benchPolicy = `
placements:
  control-plane:
    constraints: ["topology.kubernetes.io/zone in (rack0, rack1, rack2, rack3, rack4, rack5, rack6, rack7, rack8)", "sabakan.cke.cybozu.com/broken != true"]
    metricConstraints: ["temp < 40"]
    groups:
    - {name: dedicated, constraints: [sabakan.cke.cybozu.com/cp-ready is "true"]}
    - {name: any}
    metrics: [{name: temp, weight: -5}, {name: power, weight: 2}]
  compute:
    constraints: ["cke.cybozu.com/retire-year not in (2024, 2025)"]
    metrics: [{name: temp, weight: -3}]
  gpu:
    constraints: ["sabakan.cke.cybozu.com/gpu in (a100, h100)"]
metrics:
  temp: {provider: lab, min: 15, max: 45}
  power: {provider: lab, min: 100, max: 500}
providers:
  lab: {type: static}
`

// BenchmarkEvaluate20000 admits and scores 20,000 machines for the control
// plane, as the generator does for one pick.
func BenchmarkEvaluate20000(b *testing.B) {
	p, err := Load([]byte(benchPolicy), exampleTemplate(b))
	if err != nil {
		b.Fatal(err)
	}
	const n = 20000
	serials := make([]string, n)
	nodes := make([]LabelMap, n)
	for i := range n {
		serials[i] = fmt.Sprintf("S%05d", i)
		nodes[i] = LabelMap{
			"topology.kubernetes.io/zone":     fmt.Sprintf("rack%d", i%12),
			"cke.cybozu.com/rack":             fmt.Sprint(i % 12),
			"cke.cybozu.com/role":             "compute",
			"cke.cybozu.com/retire-year":      "2030",
			"sabakan.cke.cybozu.com/cp-ready": fmt.Sprint(i%3 == 0),
		}
	}
	v := p.NewValues(serials)
	for i := range n {
		v.Set(i, 0, float64(100+i%400))
		v.Set(i, 1, float64(15+i%30))
	}
	cp := p.Placement(ControlPlane)
	b.ReportAllocs()
	for b.Loop() {
		admitted := 0
		var points float64
		for i := range n {
			r := v.Row(i)
			if _, ok := cp.Admit(nodes[i], r); ok {
				admitted++
				points += cp.Points(r)
			}
		}
		if admitted == 0 || points == 0 {
			b.Fatal("nothing admitted")
		}
	}
}

func TestKeys(t *testing.T) {
	tmpl := exampleTemplate(t)
	if got := strings.Join(Keys(tmpl), ","); got != "control-plane,compute,storage,gpu" {
		t.Errorf("Keys = %s", got)
	}
	if Key(&tmpl.ControlPlane) != ControlPlane || Key(&tmpl.Workers[2]) != "gpu" {
		t.Errorf("Key: %q, %q", Key(&tmpl.ControlPlane), Key(&tmpl.Workers[2]))
	}
	want := "sabakan.cke.cybozu.com/broken,sabakan.cke.cybozu.com/cp-ready,sabakan.cke.cybozu.com/gpu,topology.kubernetes.io/zone"
	if got := strings.Join(compileEval(t).LabelKeys(), ","); got != want {
		t.Errorf("LabelKeys = %s\nwant        %s", got, want)
	}
}

// TestExamplePolicy: the bundled example policy fits the bundled template.
func TestExamplePolicy(t *testing.T) {
	tdata, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Parse(tdata)
	if err != nil {
		t.Fatal(err)
	}
	pdata, err := os.ReadFile("../examples/policy.yml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(pdata, tmpl)
	if err != nil {
		t.Fatalf("examples/policy.yml: %v", err)
	}
	if p.Placement(ControlPlane).NumGroups() != 2 || p.Placement("gpu") == nil || p.Stickiness() != 5 {
		t.Errorf("examples/policy.yml compiled to %+v", p.Document())
	}
}

// TestSpreadAndFailureDomain: a policy's failure domain and spreads
// (docs/design.md 20) are read, kept in the canonical JSON and compiled;
// without them, the domain is the rack and nothing spreads.
func TestSpreadAndFailureDomain(t *testing.T) {
	doc := `
failureDomain: {label: power-feed}
placements:
  control-plane: {spread: quorum}
  gpu: {spread: {maxSkew: 2}}
`
	d, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	js, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"placements":{"control-plane":{"spread":"quorum"},"gpu":{"spread":{"maxSkew":2}}},"failureDomain":{"label":"power-feed"}}`
	if string(js) != want {
		t.Fatalf("canonical\n%s\nwant\n%s", js, want)
	}
	again, err := Parse(js)
	if err != nil {
		t.Fatalf("canonical form does not parse: %v", err)
	}
	p, err := Compile(again, exampleTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	if k := p.FailureDomain(); k.Label != "power-feed" {
		t.Errorf("failure domain %+v", k)
	}
	if !p.Placement(ControlPlane).SpreadQuorum() || p.Placement(ControlPlane).MaxSkew() != 0 {
		t.Error("control plane: want spread quorum")
	}
	if p.Placement("gpu").MaxSkew() != 2 || p.Placement("gpu").SpreadQuorum() {
		t.Error("gpu: want maxSkew 2")
	}
	if !p.Spreads() {
		t.Error("Spreads: false")
	}

	plain, err := Load([]byte(`placements: {gpu: {constraints: [a is b]}}`), exampleTemplate(t))
	if err != nil {
		t.Fatal(err)
	}
	var none *Policy
	for _, q := range []*Policy{plain, none} {
		if !q.FailureDomain().IsRack() || q.Spreads() || q.Placement(ControlPlane).SpreadQuorum() || q.Placement("gpu").MaxSkew() != 0 {
			t.Errorf("policy %v: want the rack and no spread", q)
		}
	}
}
