// Package policy is the placement policy (docs/design.md 12): where machines may go
// beyond role and weight (Krake's label and metric constraints), which are
// preferred (metric scores), and in which order groups of machines are
// used (Karmada's ordered cluster affinities).
//
// A policy is written as a Document (YAML or JSON), parsed and validated
// with Parse, checked against a template and compiled with Compile. The
// compiled Policy answers, for a template's Placement, whether a machine is
// a candidate, which groups it belongs to, and its metric points, without
// allocating, so that the generator can ask for every machine of a large
// data center on every tick.
package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
)

// ControlPlane is the placement key of the control plane template. A
// worker template's placement key is its role ("" for a single worker
// template without a role).
const ControlPlane = "control-plane"

// Provider types.
const (
	ProviderPrometheus = "prometheus"
	ProviderStatic     = "static"
)

// DefaultTimeout is a Prometheus provider's timeout when none is given.
const DefaultTimeout = 10 * time.Second

// MaxGroups is the most groups a placement may list.
const MaxGroups = 64

// Document is a placement policy as written (docs/design.md 12.1). It marshals to
// the canonical JSON that is stored in etcd.
type Document struct {
	// Placements by template: ControlPlane, or a worker template's role.
	Placements map[string]*PlacementSpec `json:"placements,omitempty"`
	// Metrics by name: where each comes from and its normalization.
	Metrics map[string]*MetricSpec `json:"metrics,omitempty"`
	// Providers by name.
	Providers map[string]*ProviderSpec `json:"providers,omitempty"`
	// Stickiness is the gain in points a control plane's move must exceed
	// (docs/design.md 12.5); 0 never moves one.
	Stickiness Number `json:"stickiness,omitempty"`
	// FailureDomain says what a data center loses at once (docs/design.md
	// 20); nil: sabakan's rack.
	FailureDomain *FailureDomainSpec `json:"failureDomain,omitempty"`
}

// FailureDomainSpec names the sabakan label whose value is a machine's
// failure domain (a power feed, a switch), instead of its rack.
type FailureDomainSpec struct {
	Label string `json:"label"`
}

// SpreadQuorum is the one spread of the control plane's placement:
// "spread: quorum".
const SpreadQuorum = "quorum"

// Spread is how a placement spreads its nodes over the failure domains
// (docs/design.md 20). The control plane's is written "quorum": no domain
// holds more control planes than etcd's quorum survives losing. A worker
// template's is written {maxSkew: N}: Kubernetes' topology spread, per
// role, as a preference.
type Spread struct {
	Quorum  bool
	MaxSkew int
}

// MarshalJSON writes the spread as it is written: "quorum" or
// {"maxSkew": N}.
func (s Spread) MarshalJSON() ([]byte, error) {
	if s.Quorum {
		return json.Marshal(SpreadQuorum)
	}
	return json.Marshal(struct {
		MaxSkew int `json:"maxSkew"`
	}{s.MaxSkew})
}

// PlacementSpec is what a policy says about one template.
type PlacementSpec struct {
	Constraints       []string      `json:"constraints,omitempty"`
	MetricConstraints []string      `json:"metricConstraints,omitempty"`
	Groups            []GroupSpec   `json:"groups,omitempty"`
	Metrics           []MetricScore `json:"metrics,omitempty"`
	// Spread: the control plane's "quorum", or a worker template's
	// {maxSkew: N}; nil for none.
	Spread *Spread `json:"spread,omitempty"`
}

// GroupSpec is one of a placement's ordered groups.
type GroupSpec struct {
	Name              string   `json:"name"`
	Constraints       []string `json:"constraints,omitempty"`
	MetricConstraints []string `json:"metricConstraints,omitempty"`
}

// MetricScore is one weighted metric of a placement's score.
type MetricScore struct {
	Name   string `json:"name"`
	Weight Number `json:"weight"`
}

// MetricSpec says where a metric comes from and how it is normalized.
type MetricSpec struct {
	Provider string `json:"provider"`
	// Query is the PromQL instant query of a Prometheus provider.
	Query string `json:"query,omitempty"`
	Min   Number `json:"min"`
	Max   Number `json:"max"`
}

// ProviderSpec is a source of metric values.
type ProviderSpec struct {
	Type string `json:"type"`
	// URL and Timeout: prometheus only.
	URL     string   `json:"url,omitempty"`
	Timeout Duration `json:"timeout,omitempty"`
	// Values by serial, then by metric name: static only.
	Values map[string]map[string]Number `json:"values,omitempty"`
}

// Canonical returns d as compact JSON, map keys sorted and "<" and ">"
// written as is (the form stored in etcd).
func (d *Document) Canonical() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// TimeoutOrDefault is the provider's timeout, DefaultTimeout when unset.
func (p *ProviderSpec) TimeoutOrDefault() time.Duration {
	if p.Timeout == 0 {
		return DefaultTimeout
	}
	return time.Duration(p.Timeout)
}

// Number is a float64 read from any JSON number, also one too large for a
// float64 (it becomes an infinity that validation then refuses, naming the
// field, instead of a decoding error).
type Number float64

// UnmarshalJSON reads a JSON number.
func (n *Number) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "" || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return strictjson.Wants("a number")
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return strictjson.Wants("a number")
	}
	*n = Number(f)
	return nil
}

// Duration is a time.Duration written as a string ("10s", "1m30s").
type Duration time.Duration

// wantDuration says what a Duration is written as.
const wantDuration = "a duration such as 10s or 1m30s"

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return strictjson.Wants(wantDuration)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return strictjson.Wants(wantDuration)
	}
	*d = Duration(v)
	return nil
}

// String writes the duration as time.Duration does.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// Error is one problem of a policy, at a path such as
// placements.gpu.constraints[0], with its line and column in the document
// when Parse read it.
type Error struct {
	Err *strictjson.Error
}

func (e *Error) Error() string { return "policy: " + e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// pathErr is a problem of the value at path.
func pathErr(path strictjson.Path, format string, args ...any) error {
	return &Error{Err: strictjson.Invalidf(path, format, args...)}
}

// root is the path of the document.
var root strictjson.Path

// Parse reads a policy (YAML or JSON) strictly: an unknown field or a
// repeated key is an error, as is every problem Validate finds. Every
// error names its path, and its line and column in data.
func Parse(data []byte) (*Document, error) {
	js, yamlIn, err := toJSON(data)
	if err != nil {
		return nil, err
	}
	d, err := decodeDocument(js)
	if err == nil {
		err = d.Validate()
	}
	switch {
	case err == nil:
		return d, nil
	case yamlIn:
		return nil, yamlpos.Place(err, data)
	default:
		return nil, strictjson.Place(err, data)
	}
}

// toJSON returns JSON input as is and converts YAML (yamlIn), refusing
// several documents, repeated keys (YAML's own check) and infinite or NaN
// numbers (which JSON cannot hold; they are named by path).
func toJSON(data []byte) (js []byte, yamlIn bool, err error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, false, pathErr(nil, "empty document")
	}
	if json.Valid(data) {
		return data, false, nil
	}
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var doc yamlv2.MapSlice
	mapping := true
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		var te *yamlv2.TypeError
		if !errors.As(err, &te) {
			return nil, true, yamlError(data, err)
		}
		// Not a mapping: decoding the JSON says what it is, and where.
		mapping = false
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, true, yamlError(data, err)
		}
		return nil, true, &Error{Err: yamlpos.SecondDocument(data, "more than one YAML document: a policy is exactly one")}
	}
	if mapping {
		if err := nonFinite(nil, doc); err != nil {
			return nil, true, yamlpos.Place(err, data)
		}
	}
	js, err = yaml.YAMLToJSONStrict(data)
	if err != nil {
		if !mapping {
			return nil, true, yamlpos.Place(pathErr(nil, "want %s", wantDocument), data)
		}
		return nil, true, yamlError(data, err)
	}
	return js, true, nil
}

// yamlError is the error of data that YAML does not read.
func yamlError(data []byte, err error) error {
	err = yamlpos.Unreadable(data, yamlpos.Errors(err, data))
	var errs []error
	strictjson.Each(err, func(e *strictjson.Error) { errs = append(errs, &Error{Err: e}) })
	if len(errs) == 0 {
		return pathErr(nil, "%v", err)
	}
	return errors.Join(errs...)
}

// nonFinite finds the first .inf or .nan of a YAML document, in document
// order.
func nonFinite(path strictjson.Path, v any) error {
	switch v := v.(type) {
	case yamlv2.MapSlice:
		for _, it := range v {
			if err := nonFinite(path.Key(fmt.Sprint(it.Key)), it.Value); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := nonFinite(path.Index(i), x); err != nil {
				return err
			}
		}
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return pathErr(path, "must be a finite number, got %v", v)
		}
	}
	return nil
}

// The decoding layers: each level keeps its children raw, so that an
// unknown field or a wrong type is reported with the child's path.
type (
	documentFields struct {
		Placements    map[string]json.RawMessage `json:"placements"`
		Metrics       map[string]json.RawMessage `json:"metrics"`
		Providers     map[string]json.RawMessage `json:"providers"`
		Stickiness    Number                     `json:"stickiness"`
		FailureDomain json.RawMessage            `json:"failureDomain"`
	}
	placementFields struct {
		Constraints       []string          `json:"constraints"`
		MetricConstraints []string          `json:"metricConstraints"`
		Groups            []json.RawMessage `json:"groups"`
		Metrics           []json.RawMessage `json:"metrics"`
		Spread            json.RawMessage   `json:"spread"`
	}
	spreadFields struct {
		MaxSkew *Number `json:"maxSkew"`
	}
	metricScoreFields struct {
		Name   string  `json:"name"`
		Weight *Number `json:"weight"`
	}
	providerFields struct {
		Type    string                     `json:"type"`
		URL     string                     `json:"url"`
		Timeout Duration                   `json:"timeout"`
		Values  map[string]json.RawMessage `json:"values"`
	}
	metricFields struct {
		Provider string  `json:"provider"`
		Query    string  `json:"query"`
		Min      Number  `json:"min"`
		Max      *Number `json:"max"`
	}
)

func decodeDocument(js []byte) (*Document, error) {
	var f documentFields
	if err := decodeStrict(nil, js, &f); err != nil {
		return nil, err
	}
	d := &Document{Stickiness: f.Stickiness}
	var errs []error
	if f.FailureDomain != nil {
		var fd FailureDomainSpec
		if err := decodeStrict(root.Key("failureDomain"), f.FailureDomain, &fd); err != nil {
			errs = append(errs, err)
		} else {
			d.FailureDomain = &fd
		}
	}
	if f.Placements != nil {
		d.Placements = map[string]*PlacementSpec{}
	}
	for _, k := range sortedKeys(f.Placements) {
		path := root.Key("placements").Key(k)
		p, err := decodePlacement(path, f.Placements[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.Placements[k] = p
	}
	if f.Metrics != nil {
		d.Metrics = map[string]*MetricSpec{}
	}
	for _, k := range sortedKeys(f.Metrics) {
		path := root.Key("metrics").Key(k)
		var mf metricFields
		if err := decodeStrict(path, f.Metrics[k], &mf); err != nil {
			errs = append(errs, err)
			continue
		}
		if mf.Max == nil {
			errs = append(errs, pathErr(path.Key("max"), "required: the value normalized to 1 (min, default 0, is normalized to 0)"))
			continue
		}
		d.Metrics[k] = &MetricSpec{Provider: mf.Provider, Query: mf.Query, Min: mf.Min, Max: *mf.Max}
	}
	if f.Providers != nil {
		d.Providers = map[string]*ProviderSpec{}
	}
	for _, k := range sortedKeys(f.Providers) {
		p, err := decodeProvider(root.Key("providers").Key(k), f.Providers[k])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		d.Providers[k] = p
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeProvider(path strictjson.Path, raw json.RawMessage) (*ProviderSpec, error) {
	var pf providerFields
	if err := decodeStrict(path, raw, &pf); err != nil {
		return nil, err
	}
	p := &ProviderSpec{Type: pf.Type, URL: pf.URL, Timeout: pf.Timeout}
	if pf.Values == nil {
		return p, nil
	}
	// Values are decoded one by one, so that an error names the serial
	// and the metric.
	var errs []error
	p.Values = map[string]map[string]Number{}
	for _, serial := range sortedKeys(pf.Values) {
		spath := path.Key("values").Key(serial)
		var byMetric map[string]json.RawMessage
		if err := decodeStrict(spath, pf.Values[serial], &byMetric); err != nil {
			errs = append(errs, err)
			continue
		}
		p.Values[serial] = map[string]Number{}
		for _, name := range sortedKeys(byMetric) {
			var n Number
			if err := n.UnmarshalJSON(bytes.TrimSpace(byMetric[name])); err != nil {
				errs = append(errs, &Error{Err: strictjson.WrongKind(spath.Key(name), "a number", byMetric[name])})
				continue
			}
			p.Values[serial][name] = n
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

func decodePlacement(path strictjson.Path, raw json.RawMessage) (*PlacementSpec, error) {
	var pf placementFields
	if err := decodeStrict(path, raw, &pf); err != nil {
		return nil, err
	}
	p := &PlacementSpec{Constraints: pf.Constraints, MetricConstraints: pf.MetricConstraints}
	var errs []error
	for i, raw := range pf.Groups {
		var g GroupSpec
		if err := decodeStrict(path.Key("groups").Index(i), raw, &g); err != nil {
			errs = append(errs, err)
			continue
		}
		p.Groups = append(p.Groups, g)
	}
	for i, raw := range pf.Metrics {
		mpath := path.Key("metrics").Index(i)
		var mf metricScoreFields
		if err := decodeStrict(mpath, raw, &mf); err != nil {
			errs = append(errs, err)
			continue
		}
		if mf.Weight == nil {
			errs = append(errs, pathErr(mpath.Key("weight"), "required: the points a value at max is worth (negative prefers low values)"))
			continue
		}
		p.Metrics = append(p.Metrics, MetricScore{Name: mf.Name, Weight: *mf.Weight})
	}
	if pf.Spread != nil {
		sp, err := decodeSpread(path.Key("spread"), pf.Spread)
		if err != nil {
			errs = append(errs, err)
		}
		p.Spread = sp
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// wantSpread says what a spread is written as.
const wantSpread = `"quorum" (the control plane) or {maxSkew: N} (a worker template)`

// decodeSpread reads a placement's spread: the string "quorum", or an
// object with maxSkew. What kind of placement may have which is
// Validate's to say.
func decodeSpread(path strictjson.Path, raw json.RawMessage) (*Spread, error) {
	switch strictjson.What(raw) {
	case "an object":
		var sf spreadFields
		if err := decodeStrict(path, raw, &sf); err != nil {
			return nil, err
		}
		if sf.MaxSkew == nil {
			return nil, pathErr(path.Key("maxSkew"), "required: how many more nodes of the role one failure domain may hold than the one with fewest (1 or more)")
		}
		v := float64(*sf.MaxSkew)
		if v != math.Trunc(v) || v < 1 || v > math.MaxInt32 {
			return nil, pathErr(path.Key("maxSkew"), "must be an integer >= 1, got %v", v)
		}
		return &Spread{MaxSkew: int(v)}, nil
	default:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, &Error{Err: strictjson.WrongKind(path, wantSpread, raw)}
		}
		if s != SpreadQuorum {
			return nil, pathErr(path, "want %s, got %q", wantSpread, s)
		}
		return &Spread{Quorum: true}, nil
	}
}

// wantDocument says what a policy is, for a document of another kind.
const wantDocument = "an object (a placement policy: placements, metrics, providers, stickiness, failureDomain)"

// decodeStrict decodes one JSON object, the value at path, into v, refusing
// unknown fields, names in another case, repeated keys, null and trailing
// data. The errors have path's paths and no position: Parse places them.
func decodeStrict(path strictjson.Path, raw []byte, v any) error {
	if k := strictjson.What(raw); k != "an object" {
		want := "an object"
		if len(path) == 0 {
			want = wantDocument
		}
		return &Error{Err: strictjson.WrongKind(path, want, raw)}
	}
	err := strictjson.Unmarshal(raw, v)
	var se *strictjson.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se):
		_ = strictjson.Within(se, path) // it places se, in place
		return &Error{Err: se}
	}
	return pathErr(path, "%v", err)
}
