package policy

import (
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/template"
)

// specExample is docs/design.md 12.1's example policy, with the gpu constraint
// quoted: unquoted in a YAML flow list, the comma would end the item.
const specExample = `
placements:                    # by template
  control-plane:
    constraints:
    - topology.kubernetes.io/zone in (rack0, rack1, rack2, rack3, rack4)
    metricConstraints:
    - inlet_temperature < 35
    groups:
    - name: dedicated
      constraints: [sabakan.cke.cybozu.com/cp-ready is true]
    - name: any
    metrics:
    - name: inlet_temperature
      weight: -5
  gpu:
    constraints: ["sabakan.cke.cybozu.com/gpu in (a100, h100)"]
metrics:
  inlet_temperature:
    provider: prom
    query: max by (serial) (ipmi_temperature_celsius{sensor="inlet"})
    min: 15
    max: 45
providers:
  prom:   {type: prometheus, url: "http://127.0.0.1:9090", timeout: 10s}
  lab:    {type: static, values: {"SERIAL1": {inlet_temperature: 20}}}
stickiness: 5
`

func exampleTemplate(t testing.TB) *template.Template {
	t.Helper()
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

func TestParseSpecExample(t *testing.T) {
	d, err := Parse([]byte(specExample))
	if err != nil {
		t.Fatal(err)
	}
	want := &Document{
		Placements: map[string]*PlacementSpec{
			"control-plane": {
				Constraints:       []string{"topology.kubernetes.io/zone in (rack0, rack1, rack2, rack3, rack4)"},
				MetricConstraints: []string{"inlet_temperature < 35"},
				Groups: []GroupSpec{
					{Name: "dedicated", Constraints: []string{"sabakan.cke.cybozu.com/cp-ready is true"}},
					{Name: "any"},
				},
				Metrics: []MetricScore{{Name: "inlet_temperature", Weight: -5}},
			},
			"gpu": {Constraints: []string{"sabakan.cke.cybozu.com/gpu in (a100, h100)"}},
		},
		Metrics: map[string]*MetricSpec{
			"inlet_temperature": {Provider: "prom", Query: `max by (serial) (ipmi_temperature_celsius{sensor="inlet"})`, Min: 15, Max: 45},
		},
		Providers: map[string]*ProviderSpec{
			"prom": {Type: "prometheus", URL: "http://127.0.0.1:9090", Timeout: Duration(10 * time.Second)},
			"lab":  {Type: "static", Values: map[string]map[string]Number{"SERIAL1": {"inlet_temperature": 20}}},
		},
		Stickiness: 5,
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("parsed document (-want +got):\n%s", diff)
	}
	// The canonical JSON parses back to the same document, byte for byte
	// the same JSON again.
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(js)
	if err != nil {
		t.Fatalf("canonical JSON does not parse: %v\n%s", err, js)
	}
	if diff := cmp.Diff(d, back); diff != "" {
		t.Errorf("JSON round trip (-before +after):\n%s", diff)
	}
	js2, _ := json.Marshal(back)
	if string(js) != string(js2) {
		t.Errorf("JSON is not stable:\n%s\n%s", js, js2)
	}
	canon, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(canon), `"inlet_temperature < 35"`) || strings.HasSuffix(string(canon), "\n") {
		t.Errorf("canonical JSON escapes < or ends with a newline: %s", canon)
	}
	if c2, _ := mustParse(t, string(canon)).Canonical(); string(c2) != string(canon) {
		t.Errorf("canonical JSON is not stable:\n%s\n%s", canon, c2)
	}
	if _, err := Compile(d, exampleTemplate(t)); err != nil {
		t.Errorf("Compile with the example template: %v", err)
	}
}

// base is a valid policy the refusal cases change one thing of.
const base = `{
  "placements": {
    "control-plane": {
      "constraints": ["topology.kubernetes.io/zone in (rack0, rack1)"],
      "metricConstraints": ["temp < 35"],
      "groups": [{"name": "a", "constraints": ["x is y"]}, {"name": "b"}],
      "metrics": [{"name": "temp", "weight": -5}]
    },
    "gpu": {"constraints": ["sabakan.cke.cybozu.com/gpu in (a100)"]}
  },
  "metrics": {"temp": {"provider": "prom", "query": "t", "min": 15, "max": 45}},
  "providers": {
    "prom": {"type": "prometheus", "url": "http://127.0.0.1:9090", "timeout": "5s"},
    "lab": {"type": "static", "values": {}}
  },
  "stickiness": 5
}`

// TestValidationRefusals: each refusal of docs/design.md 12.1 (and the others the
// document needs) names its path.
func TestValidationRefusals(t *testing.T) {
	if _, err := Compile(mustParse(t, base), exampleTemplate(t)); err != nil {
		t.Fatalf("base policy: %v", err)
	}
	r := strings.NewReplacer
	for _, tc := range []struct {
		name string
		doc  string
		path string
		msg  string
		at   string // line and column in doc
	}{
		// unknown fields, at every level
		{"unknown top-level field", r(`"stickiness": 5`, `"stickyness": 5`).Replace(base), "", `unknown field "stickyness"; did you mean stickiness?`, "line 16, column 3"},
		{"unknown placement field", r(`"metricConstraints": ["temp < 35"]`, `"metricConstraint": ["temp < 35"]`).Replace(base), "placements.control-plane", `unknown field "metricConstraint"; did you mean metricConstraints?`, "line 5, column 7"},
		{"unknown group field", r(`{"name": "b"}`, `{"name": "b", "constraint": []}`).Replace(base), "placements.control-plane.groups[1]", `unknown field "constraint"; did you mean constraints?`, "line 6, column 74"},
		{"unknown metric score field", r(`"weight": -5`, `"weight": -5, "wieght": 1`).Replace(base), "placements.control-plane.metrics[0]", `unknown field "wieght"; did you mean weight?`, "line 7, column 50"},
		{"unknown metric field", r(`"max": 45`, `"max": 45, "maximum": 1`).Replace(base), "metrics.temp", `unknown field "maximum" (known fields: provider, query, min, max)`, "line 11, column 80"},
		{"unknown provider field", r(`"timeout": "5s"`, `"timeout": "5s", "adress": "x"`).Replace(base), "providers.prom", `unknown field "adress" (known fields: type, url, timeout, values)`, "line 13, column 85"},
		// repeated keys
		{"duplicate key", r(`"stickiness": 5`, `"stickiness": 5, "stickiness": 6`).Replace(base), "", `duplicate key "stickiness" (first at line 16, column 3)`, "line 16, column 20"},
		{"duplicate nested key", r(`"min": 15`, `"min": 15, "min": 16`).Replace(base), "metrics.temp", `duplicate key "min" (first at line 11, column 58)`, "line 11, column 69"},
		{"duplicate YAML key", "stickiness: 1\nstickiness: 2\n", "", `duplicate key "stickiness" (first at line 1, column 1)`, "line 2, column 1"},
		// constraints that do not parse
		{"bad label constraint", r(`rack0, rack1)`, `rack0 rack1)`).Replace(base), "placements.control-plane.constraints[0]", `character 39 of the constraint: expected "," or ")" after a value in the list, got "rack1"`, "line 4, column 23"},
		{"bad group constraint", r(`"x is y"`, `"x is"`).Replace(base), "placements.control-plane.groups[0].constraints[0]", `character 5 of the constraint: expected a value after "is"`, "line 6, column 48"},
		{"bad metric constraint", r(`"temp < 35"`, `"temp smaller 35"`).Replace(base), "placements.control-plane.metricConstraints[0]", "character 6 of the constraint: expected a comparison", "line 5, column 29"},
		// metrics used but not defined, or with an unknown provider
		{"undefined metric in a constraint", r(`"temp < 35"`, `"power < 35"`).Replace(base), "placements.control-plane.metricConstraints[0]", `metric "power" is not defined (defined: temp)`, "line 5, column 29"},
		{"undefined metric in a group", r(`{"name": "b"}`, `{"name": "b", "metricConstraints": ["power gt 1"]}`).Replace(base), "placements.control-plane.groups[1].metricConstraints[0]", `metric "power" is not defined`, "line 6, column 96"},
		{"undefined metric scored", r(`"name": "temp", "weight"`, `"name": "power", "weight"`).Replace(base), "placements.control-plane.metrics[0].name", `metric "power" is not defined`, "line 7, column 28"},
		{"metric with an unknown provider", r(`"provider": "prom"`, `"provider": "promm"`).Replace(base), "metrics.temp.provider", `provider "promm" is not defined (defined: lab, prom)`, "line 11, column 36"},
		{"metric without a provider", r(`"provider": "prom", `, ``).Replace(base), "metrics.temp.provider", "required", "line 11, column 23"},
		{"prometheus metric without a query", r(`"query": "t", `, ``).Replace(base), "metrics.temp.query", "required with a prometheus provider", "line 11, column 23"},
		{"static metric with a query", r(`"provider": "prom"`, `"provider": "lab"`).Replace(base), "metrics.temp.query", "not used with a static provider", "line 11, column 52"},
		// min >= max
		{"min > max", r(`"min": 15, "max": 45`, `"min": 45, "max": 15`).Replace(base), "metrics.temp", "min (45) must be less than max (15)", "line 11, column 23"},
		{"min = max", r(`"min": 15, "max": 45`, `"min": 15, "max": 15`).Replace(base), "metrics.temp", "min (15) must be less than max (15)", "line 11, column 23"},
		{"max missing", r(`, "max": 45`, ``).Replace(base), "metrics.temp.max", "required", "line 11, column 23"},
		{"infinite max", r(`"max": 45`, `"max": 1e999`).Replace(base), "metrics.temp.max", "must be a finite number, got +Inf", "line 11, column 76"},
		// non-finite weights
		{"infinite weight (JSON)", r(`"weight": -5`, `"weight": -1e400`).Replace(base), "placements.control-plane.metrics[0].weight", "must be a finite number, got -Inf", "line 7, column 46"},
		{"infinite weight (YAML)", "placements:\n  gpu:\n    metrics:\n    - {name: t, weight: .inf}\n", "placements.gpu.metrics[0].weight", "must be a finite number, got +Inf", "line 4, column 25"},
		{"NaN weight (YAML)", "placements:\n  gpu:\n    metrics:\n    - {name: t, weight: .nan}\n", "placements.gpu.metrics[0].weight", "must be a finite number, got NaN", "line 4, column 25"},
		{"weight missing", r(`, "weight": -5`, ``).Replace(base), "placements.control-plane.metrics[0].weight", "required", "line 7, column 19"},
		{"weight not a number", r(`"weight": -5`, `"weight": "-5"`).Replace(base), "placements.control-plane.metrics[0].weight", `want a number, got the string "-5"`, "line 7, column 46"},
		{"metric scored twice", r(`[{"name": "temp", "weight": -5}]`, `[{"name": "temp", "weight": -5}, {"name": "temp", "weight": 1}]`).Replace(base), "placements.control-plane.metrics[1].name", `metric "temp" is already scored at metrics[0]`, "line 7, column 60"},
		// unknown provider types, and what a type needs
		{"unknown provider type", r(`"type": "prometheus"`, `"type": "prometeus"`).Replace(base), "providers.prom.type", `unknown provider type "prometeus" (known: prometheus, static)`, "line 13, column 22"},
		{"provider without a type", r(`"type": "static", `, ``).Replace(base), "providers.lab.type", "required", "line 14, column 12"},
		{"prometheus without a url", r(`"url": "http://127.0.0.1:9090", `, ``).Replace(base), "providers.prom.url", "required", "line 13, column 13"},
		{"prometheus with a bad url", r(`http://127.0.0.1:9090`, `127.0.0.1:9090`).Replace(base), "providers.prom.url", "must be an absolute http or https URL", "line 13, column 43"},
		{"bad timeout", r(`"5s"`, `"5 seconds"`).Replace(base), "providers.prom.timeout", `want a duration such as 10s or 1m30s, got the string "5 seconds"`, "line 13, column 79"},
		{"negative timeout", r(`"5s"`, `"-5s"`).Replace(base), "providers.prom.timeout", "must be > 0, got -5s", "line 13, column 79"},
		{"static with a url", r(`"type": "static", `, `"type": "static", "url": "http://x", `).Replace(base), "providers.lab.url", "only a prometheus provider has a url", "line 14, column 38"},
		{"static value of an undefined metric", r(`"values": {}`, `"values": {"S1": {"power": 3}}`).Replace(base), "providers.lab.values.S1.power", `metric "power" is not defined`, "line 14, column 58"},
		// duplicate group names
		{"duplicate group names", r(`{"name": "b"}`, `{"name": "a"}`).Replace(base), "placements.control-plane.groups[1].name", `"a" is already the name of groups[0]`, "line 6, column 69"},
		{"group without a name", r(`{"name": "b"}`, `{}`).Replace(base), "placements.control-plane.groups[1].name", "required", "line 6, column 60"},
		// negative stickiness
		{"negative stickiness", r(`"stickiness": 5`, `"stickiness": -1`).Replace(base), "stickiness", "must be a finite number >= 0 (0: never rebalance), got -1", "line 16, column 17"},
		// spread and failure domains (docs/design.md 20)
		{"maxSkew on the control plane", r(`"metrics": [{"name": "temp", "weight": -5}]`, `"metrics": [{"name": "temp", "weight": -5}], "spread": {"maxSkew": 1}`).Replace(base), "placements.control-plane.spread", "the control plane spreads with spread: quorum", "line 7, column 62"},
		{"quorum on a worker template", r(`"gpu": {"constraints"`, `"gpu": {"spread": "quorum", "constraints"`).Replace(base), "placements.gpu.spread", "quorum is the control plane's spread (etcd runs there); a worker template takes {maxSkew: N}", "line 9, column 23"},
		{"maxSkew 0", r(`"gpu": {"constraints"`, `"gpu": {"spread": {"maxSkew": 0}, "constraints"`).Replace(base), "placements.gpu.spread.maxSkew", "must be an integer >= 1, got 0", "line 9, column 35"},
		{"maxSkew not an integer", "placements:\n  gpu:\n    spread: {maxSkew: 1.5}\n", "placements.gpu.spread.maxSkew", "must be an integer >= 1, got 1.5", "line 3, column 23"},
		{"maxSkew missing", "placements:\n  gpu:\n    spread: {}\n", "placements.gpu.spread.maxSkew", "required", "line 3, column 13"},
		{"maxSkew misspelt", "placements:\n  gpu:\n    spread: {maxskew: 1}\n", "placements.gpu.spread", `unknown field "maxskew"; did you mean maxSkew?`, "line 3, column 14"},
		{"spread neither", "placements:\n  control-plane:\n    spread: quorom\n", "placements.control-plane.spread", `want "quorum" (the control plane) or {maxSkew: N} (a worker template), got "quorom"`, "line 3, column 13"},
		{"spread a list", "placements:\n  control-plane:\n    spread: [quorum]\n", "placements.control-plane.spread", `want "quorum" (the control plane) or {maxSkew: N} (a worker template), got an array`, "line 3, column 13"},
		{"failure domain without a label", r(`"stickiness": 5`, `"stickiness": 5, "failureDomain": {}`).Replace(base), "failureDomain.label", "required: the sabakan label", "line 16, column 37"},
		{"failure domain label not a name", "failureDomain: {label: power feed}\n", "failureDomain.label", `"power feed" is not a sabakan label name a node can carry`, "line 1, column 24"},
		{"failure domain unknown field", "failureDomain: {lable: power-feed}\n", "failureDomain", `unknown field "lable" (known fields: label)`, "line 1, column 17"},
		{"failure domain a string", "failureDomain: power-feed\n", "failureDomain", `want an object, got the string "power-feed"`, "line 1, column 16"},
		// shapes
		{"placement not an object", r(`"gpu": {"constraints": ["sabakan.cke.cybozu.com/gpu in (a100)"]}`, `"gpu": null`).Replace(base), "placements.gpu", "want an object, got null", "line 9, column 12"},
		{"constraints not a list", r(`"constraints": ["sabakan.cke.cybozu.com/gpu in (a100)"]`, `"constraints": "sabakan.cke.cybozu.com/gpu in (a100)"`).Replace(base), "placements.gpu.constraints", `want an array of strings, got the string "sabakan.cke.cybozu.com/gpu in (a100)"`, "line 9, column 28"},
		{"document not an object", `[1]`, "", "want an object (a placement policy: placements, metrics, providers, stickiness, failureDomain), got an array", "line 1, column 1"},
		{"YAML list", "- a\n", "", "want an object (a placement policy: placements, metrics, providers, stickiness, failureDomain), got an array", "line 1, column 1"},
		{"empty document", "  \n", "", "empty document", ""},
		{"two YAML documents", "stickiness: 1\n---\nstickiness: 2\n", "", "more than one YAML document", "line 2, column 1"},
		{"not YAML", "a: [\n", "", "not valid YAML: sequence end token ']' not found", "line 1, column 4"},
		{"unknown field (YAML)", "placements:\n  gpu:\n    constraint: [a is b]\n", "placements.gpu", `unknown field "constraint"; did you mean constraints?`, "line 3, column 5"},
		{"wrong kind (YAML)", "metrics:\n  m: {provider: p, max: [1]}\n", "metrics.m.max", "want a number, got an array", "line 2, column 25"},
		{"null key (YAML)", "placements:\n  ~: {}\n", "placements", "a null key has no JSON form; quote it", "line 2, column 3"},
		{"a scalar (YAML)", "hello\n", "", `want an object (a placement policy: placements, metrics, providers, stickiness, failureDomain), got the string "hello"`, "line 1, column 1"},
		{"JSON that is not", `{"stickiness": 1 "x": 2}`, "", `invalid character '"' after object value (expecting ',' or '}'); not YAML either`, "line 1, column 18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := Parse([]byte(tc.doc))
			if err == nil {
				_, err = Compile(d, exampleTemplate(t))
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !hasPathError(err, tc.path, tc.msg, tc.at) {
				t.Errorf("error:\n%v\nwant one at %s, path %q, containing %q", err, tc.at, tc.path, tc.msg)
			}

		})
	}
}

// TestParseStrictJSON: through Parse, a name in another case, an unknown
// member and a name given twice are refused at every level, as is a value of
// the wrong type, each at its path.
func TestParseStrictJSON(t *testing.T) {
	r := strings.NewReplacer
	for _, tc := range []struct{ name, doc, path, msg, at string }{
		{"top-level name in another case", r(`"stickiness": 5`, `"Stickiness": 5`).Replace(base), "", `unknown field "Stickiness"; did you mean stickiness?`, "line 16, column 3"},
		{"group name in another case", r(`{"name": "b"}`, `{"Name": "b"}`).Replace(base), "placements.control-plane.groups[1]", `unknown field "Name"; did you mean name?`, "line 6, column 61"},
		{"provider field in another case", r(`"timeout": "5s"`, `"Timeout": "5s"`).Replace(base), "providers.prom", `unknown field "Timeout"; did you mean timeout?`, "line 13, column 68"},
		{"duplicate placement", r(`"gpu": {`, `"gpu": {}, "gpu": {`).Replace(base), "placements", `duplicate key "gpu" (first at line 9, column 5)`, "line 9, column 16"},
		{"duplicate in a group", r(`{"name": "b"}`, `{"name": "b", "name": "c"}`).Replace(base), "placements.control-plane.groups[1]", `duplicate key "name" (first at line 6, column 61)`, "line 6, column 74"},
		{"duplicate static value", r(`"values": {}`, `"values": {"S1": {"temp": 1, "temp": 2}}`).Replace(base), "providers.lab.values.S1", `duplicate key "temp" (first at line 14, column 49)`, "line 14, column 60"},
		{"constraint not a string", r(`"constraints": ["sabakan.cke.cybozu.com/gpu in (a100)"]`, `"constraints": ["a in (b)", 3]`).Replace(base), "placements.gpu.constraints[1]", "want a string, got the number 3", "line 9, column 41"},
		{"stickiness not a number", r(`"stickiness": 5`, `"stickiness": true`).Replace(base), "stickiness", "want a number, got true", "line 16, column 17"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc))
			if err == nil || !hasPathError(err, tc.path, tc.msg, tc.at) {
				t.Errorf("error:\n%v\nwant one at %s, path %q, containing %q", err, tc.at, tc.path, tc.msg)
			}

		})
	}
}

// TestFlowListHint: docs/design.md 12.1's example as printed writes
// [sabakan.cke.cybozu.com/gpu in (a100, h100)], which YAML reads as two
// items; the error says why.
func TestFlowListHint(t *testing.T) {
	doc := strings.Replace(specExample, `["sabakan.cke.cybozu.com/gpu in (a100, h100)"]`, `[sabakan.cke.cybozu.com/gpu in (a100, h100)]`, 1)
	_, err := Parse([]byte(doc))
	for _, want := range []struct{ path, msg, at string }{
		{"placements.gpu.constraints[0]", `character 36 of the constraint: expected "," or ")" after a value in the list, got the end of the constraint (in "sabakan.cke.cybozu.com/gpu in (a100"); in a YAML flow list [...] a comma ends the item`, "line 16, column 19"},
		{"placements.gpu.constraints[1]", `character 5 of the constraint: expected an operator after the label key`, "line 16, column 56"},
	} {
		if !hasPathError(err, want.path, want.msg, want.at) {
			t.Errorf("error:\n%v\nwant one at %s, %s containing %q", err, want.at, want.path, want.msg)
		}
	}
}

// TestPlacementMustNameATemplate: checked against the template given.
func TestPlacementMustNameATemplate(t *testing.T) {
	d := mustParse(t, `{"placements": {"gpuu": {}, "compute": {}, "control-plane": {}}}`)
	_, err := Compile(d, exampleTemplate(t))
	if !hasPathError(err, "placements.gpuu", `no template takes this placement (placements of this template: "control-plane", "compute", "storage", "gpu")`) {
		t.Errorf("error %v", err)
	}
	var pe *Error
	if errors.As(err, &pe) && strings.Contains(err.Error(), "placements.compute") {
		t.Errorf("a placement of an existing role was refused: %v", err)
	}
	// A single worker template without a role: its placement is "".
	single, err := template.Parse([]byte("name: s\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/16\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Compile(mustParse(t, `{"placements": {"": {"constraints": ["a is b"]}}}`), single); err != nil {
		t.Errorf(`placement "" with a single worker template: %v`, err)
	}
	_, err = Compile(mustParse(t, `{"placements": {"compute": {}}}`), single)
	if !hasPathError(err, "placements.compute", `placements of this template: "control-plane", ""`) {
		t.Errorf("error %v", err)
	}
}

// TestEveryErrorReported: all problems at once, in a fixed order.
func TestEveryErrorReported(t *testing.T) {
	doc := `{"placements": {"gpu": {"constraints": ["a is"]}, "control-plane": {"metricConstraints": ["x < 1"]}},
	"metrics": {"m": {"provider": "p", "max": 1}}, "stickiness": -2}`
	_, err := Parse([]byte(doc))
	if err == nil {
		t.Fatal("accepted")
	}
	got := err.Error()
	want := strings.Join([]string{
		`policy: line 1, column 91: placements.control-plane.metricConstraints[0]: metric "x" is not defined (defined: m)`,
		`policy: line 1, column 41: placements.gpu.constraints[0]: character 5 of the constraint: expected a value after "is", got the end of the constraint (in "a is")`,
		`policy: line 2, column 32: metrics.m.provider: provider "p" is not defined (defined: )`,
		`policy: line 2, column 63: stickiness: must be a finite number >= 0 (0: never rebalance), got -2`,
	}, "\n")
	if got != want {
		t.Errorf("errors:\n%s\nwant\n%s", got, want)
	}
}

func mustParse(t testing.TB, s string) *Document {
	t.Helper()
	d, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// hasPathError reports whether err holds an *Error at path whose message
// contains msg, in JSON's words, and, when at is given, whose text starts
// with at (its line and column, "" for none), then the path.
func hasPathError(err error, path, msg string, at ...string) bool {
	var errs []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	} else {
		errs = []error{err}
	}
	for _, e := range errs {
		var pe *Error
		if !errors.As(e, &pe) || pe.Err.Path.String() != path || !strings.Contains(pe.Err.What(), msg) {
			continue
		}
		if len(at) == 0 {
			return !goTypeName.MatchString(pe.Err.What())
		}
		var where []string
		for _, a := range append(at, path) {
			if a != "" {
				where = append(where, a)
			}
		}
		prefix := "policy: " + strings.Join(append(where, ""), ": ")
		if strings.HasPrefix(e.Error(), prefix) && !goTypeName.MatchString(pe.Err.What()) {
			return true
		}
	}
	return false
}

// goTypeName matches what Go writes of a type: policy.Number, []string,
// map[string]string, *Number, struct {...}, bool, float64.
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|\*[A-Za-z]|\b(u?int(8|16|32|64)?|float(32|64)|bool|interface)\b|Go value|Go type`)

// FuzzParse: any input parses or is refused with an *Error naming a
// path, never a panic; what parses compiles for the example template or
// is refused, and its canonical JSON parses back to itself.
func FuzzParse(f *testing.F) {
	f.Add([]byte(specExample))
	f.Add([]byte(base))
	f.Add([]byte("placements:\n  gpu:\n    metrics:\n    - {name: t, weight: .inf}\n"))
	f.Add([]byte(`{"a": 1, "a": 2}`))
	f.Add([]byte("stickiness: 1\n---\n"))
	tmpl := exampleTemplate(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := Parse(data)
		if err != nil {
			if !errors.As(err, new(*Error)) {
				t.Fatalf("error %v is not a policy *Error", err)
			}
			return
		}
		canon, err := d.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(canon)
		if err != nil {
			t.Fatalf("canonical JSON %s does not parse: %v", canon, err)
		}
		if c2, _ := back.Canonical(); string(c2) != string(canon) {
			t.Fatalf("canonical JSON not stable:\n%s\n%s", canon, c2)
		}
		if p, err := Compile(d, tmpl); err == nil {
			for _, k := range Keys(tmpl) {
				pl := p.Placement(k)
				pl.Admit(LabelMap{"a": "b"}, nil)
				pl.Points(nil)
				pl.Terms(Row{1, 2, 3})
				pl.Rejection(LabelMap{}, nil)
			}
		}
	})
}
