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
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/internal/strictjson"
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
}

// PlacementSpec is what a policy says about one template.
type PlacementSpec struct {
	Constraints       []string      `json:"constraints,omitempty"`
	MetricConstraints []string      `json:"metricConstraints,omitempty"`
	Groups            []GroupSpec   `json:"groups,omitempty"`
	Metrics           []MetricScore `json:"metrics,omitempty"`
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
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Number]()}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return &json.UnmarshalTypeError{Value: "number " + s, Type: reflect.TypeFor[Number]()}
	}
	*n = Number(f)
	return nil
}

// Duration is a time.Duration written as a string ("10s", "1m30s").
type Duration time.Duration

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return &json.UnmarshalTypeError{Value: jsonKind(b), Type: reflect.TypeFor[Duration]()}
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return &json.UnmarshalTypeError{Value: "string " + strconv.Quote(s), Type: reflect.TypeFor[Duration]()}
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

// jsonKind names the JSON type of a value, for errors.
func jsonKind(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	case 'n':
		return "null"
	}
	return "number"
}

// Error is one problem of a policy, at a path such as
// placements.gpu.constraints[0].
type Error struct {
	Path string
	Msg  string
}

func (e *Error) Error() string {
	if e.Path == "" {
		return "policy: " + e.Msg
	}
	return "policy: " + e.Path + ": " + e.Msg
}

func pathErr(path, format string, args ...any) error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
}

// plainKey is a map key written bare in a path; others are quoted.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// field appends a map key or struct field to a path.
func field(path, key string) string {
	if !plainKey.MatchString(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}

// Parse reads a policy (YAML or JSON) strictly: an unknown field or a
// repeated key is an error, as is every problem Validate finds. Every
// error names its path.
func Parse(data []byte) (*Document, error) {
	js, err := toJSON(data)
	if err != nil {
		return nil, err
	}
	d, err := decodeDocument(js)
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// toJSON returns JSON input as is and converts YAML, refusing several
// documents, repeated keys (YAML's own check) and infinite or NaN numbers
// (which JSON cannot hold; they are named by path).
func toJSON(data []byte) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, pathErr("", "empty document")
	}
	if json.Valid(data) {
		return data, nil
	}
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var doc yamlv2.MapSlice
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		var te *yamlv2.TypeError
		if errors.As(err, &te) {
			return nil, pathErr("", "must be an object (a YAML mapping) of placements, metrics, providers and stickiness")
		}
		return nil, pathErr("", "not valid YAML or JSON: %v", err)
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, pathErr("", "not valid YAML or JSON: %v", err)
		}
		return nil, pathErr("", "more than one YAML document: a policy is exactly one")
	}
	if err := nonFinite("", doc); err != nil {
		return nil, err
	}
	js, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, pathErr("", "not valid YAML: %v", err)
	}
	return js, nil
}

// nonFinite finds the first .inf or .nan of a YAML document, in document
// order.
func nonFinite(path string, v any) error {
	switch v := v.(type) {
	case yamlv2.MapSlice:
		for _, it := range v {
			if err := nonFinite(field(path, fmt.Sprint(it.Key)), it.Value); err != nil {
				return err
			}
		}
	case []any:
		for i, x := range v {
			if err := nonFinite(index(path, i), x); err != nil {
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
		Placements map[string]json.RawMessage `json:"placements"`
		Metrics    map[string]json.RawMessage `json:"metrics"`
		Providers  map[string]json.RawMessage `json:"providers"`
		Stickiness Number                     `json:"stickiness"`
	}
	placementFields struct {
		Constraints       []string          `json:"constraints"`
		MetricConstraints []string          `json:"metricConstraints"`
		Groups            []json.RawMessage `json:"groups"`
		Metrics           []json.RawMessage `json:"metrics"`
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
	if err := decodeStrict("", js, &f); err != nil {
		return nil, err
	}
	d := &Document{Stickiness: f.Stickiness}
	var errs []error
	if f.Placements != nil {
		d.Placements = map[string]*PlacementSpec{}
	}
	for _, k := range sortedKeys(f.Placements) {
		path := field("placements", k)
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
		path := field("metrics", k)
		var mf metricFields
		if err := decodeStrict(path, f.Metrics[k], &mf); err != nil {
			errs = append(errs, err)
			continue
		}
		if mf.Max == nil {
			errs = append(errs, pathErr(field(path, "max"), "required: the value normalized to 1 (min, default 0, is normalized to 0)"))
			continue
		}
		d.Metrics[k] = &MetricSpec{Provider: mf.Provider, Query: mf.Query, Min: mf.Min, Max: *mf.Max}
	}
	if f.Providers != nil {
		d.Providers = map[string]*ProviderSpec{}
	}
	for _, k := range sortedKeys(f.Providers) {
		p, err := decodeProvider(field("providers", k), f.Providers[k])
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

func decodeProvider(path string, raw json.RawMessage) (*ProviderSpec, error) {
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
		spath := field(field(path, "values"), serial)
		var byMetric map[string]json.RawMessage
		if err := decodeStrict(spath, pf.Values[serial], &byMetric); err != nil {
			errs = append(errs, err)
			continue
		}
		p.Values[serial] = map[string]Number{}
		for _, name := range sortedKeys(byMetric) {
			var n Number
			if err := n.UnmarshalJSON(bytes.TrimSpace(byMetric[name])); err != nil {
				errs = append(errs, pathErr(field(spath, name), "must be a number, got %s", article(jsonKind(byMetric[name]))))
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

func decodePlacement(path string, raw json.RawMessage) (*PlacementSpec, error) {
	var pf placementFields
	if err := decodeStrict(path, raw, &pf); err != nil {
		return nil, err
	}
	p := &PlacementSpec{Constraints: pf.Constraints, MetricConstraints: pf.MetricConstraints}
	var errs []error
	for i, raw := range pf.Groups {
		var g GroupSpec
		if err := decodeStrict(index(field(path, "groups"), i), raw, &g); err != nil {
			errs = append(errs, err)
			continue
		}
		p.Groups = append(p.Groups, g)
	}
	for i, raw := range pf.Metrics {
		mpath := index(field(path, "metrics"), i)
		var mf metricScoreFields
		if err := decodeStrict(mpath, raw, &mf); err != nil {
			errs = append(errs, err)
			continue
		}
		if mf.Weight == nil {
			errs = append(errs, pathErr(field(mpath, "weight"), "required: the points a value at max is worth (negative prefers low values)"))
			continue
		}
		p.Metrics = append(p.Metrics, MetricScore{Name: mf.Name, Weight: *mf.Weight})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// decodeStrict decodes one JSON object into v, refusing unknown fields,
// names in another case, repeated keys, null and trailing data, with errors
// that name the path.
func decodeStrict(path string, raw []byte, v any) error {
	if k := jsonKind(raw); k != "object" {
		return pathErr(path, "must be an object, got %s", article(k))
	}
	err := strictjson.Unmarshal(raw, v)
	var se *strictjson.Error
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &se):
		return pathErr(path, "%v", err)
	}
	p := within(path, se.Path)
	switch se.Kind {
	case strictjson.Trailing:
		return pathErr(path, "trailing data after the document")
	case strictjson.Duplicate:
		return pathErr(p, "key %q appears twice", se.Name)
	case strictjson.Unknown:
		return pathErr(field(p, se.Name), "unknown field (fields here: %s)", knownFields(se.GoType))
	case strictjson.Type:
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Type != nil {
			// Number's and Duration's own refusal, with the value.
			return pathErr(p, "must be %s, got %s", typeName(te.Type), article(te.Value))
		}
		if se.GoType != nil {
			return pathErr(p, "must be %s, got %s", typeName(se.GoType), article(se.Value))
		}
	}
	return pathErr(p, "not valid JSON: %s", se.Msg)
}

// within is the path of a value at p inside the value at path.
func within(path string, p strictjson.Path) string {
	for _, s := range p {
		if s.IsIndex {
			path = index(path, s.Index)
		} else {
			path = field(path, s.Key)
		}
	}
	return path
}

func knownFields(t reflect.Type) string {
	return strings.Join(strictjson.FieldNames(t), ", ")
}

func typeName(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Number]():
		return "a number"
	case reflect.TypeFor[Duration]():
		return "a duration such as 10s or 1m30s"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list of " + strings.TrimPrefix(typeName(t.Elem()), "a ") + "s"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Float64, reflect.Int, reflect.Int64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	}
	return t.String()
}

func article(kind string) string {
	switch {
	case kind == "null" || kind == "nothing":
		return kind
	case strings.HasPrefix(kind, "a") || strings.HasPrefix(kind, "o"):
		return "an " + kind
	}
	return "a " + kind
}
