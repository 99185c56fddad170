// Package cluster models CKE's cluster.yml: the file the generator writes and
// the syntax templates are written in.
//
// Only the fields ckegen reads are modelled; reboot, repair, sabakan,
// trusted_rest_mappings and options are carried through untouched as JSON,
// so that a generated cluster keeps them exactly as the template had them.
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/suggest"
)

// Taint is a Kubernetes node taint.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// Node is one entry of cluster.yml's nodes.
type Node struct {
	Address      string            `json:"address"`
	Hostname     string            `json:"hostname,omitempty"`
	User         string            `json:"user"`
	ControlPlane bool              `json:"control_plane"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	Labels       map[string]string `json:"labels,omitempty"`
	Taints       []Taint           `json:"taints,omitempty"`
}

// Cluster is cluster.yml, with every top-level field of CKE v1.35.
type Cluster struct {
	Name                    string          `json:"name"`
	Nodes                   []*Node         `json:"nodes"`
	TaintControlPlane       bool            `json:"taint_control_plane,omitempty"`
	ControlPlaneTolerations []string        `json:"control_plane_tolerations,omitempty"`
	ServiceSubnet           string          `json:"service_subnet"`
	DNSServers              []string        `json:"dns_servers,omitempty"`
	DNSService              string          `json:"dns_service,omitempty"`
	Reboot                  json.RawMessage `json:"reboot,omitempty"`
	Repair                  json.RawMessage `json:"repair,omitempty"`
	Sabakan                 json.RawMessage `json:"sabakan,omitempty"`
	TrustedRESTMappings     json.RawMessage `json:"trusted_rest_mappings,omitempty"`
	Options                 json.RawMessage `json:"options,omitempty"`
}

// clusterFields mirrors Cluster with nodes kept raw, so that each node can be
// decoded on its own and an error can name its index.
type clusterFields struct {
	Name                    string            `json:"name"`
	Nodes                   []json.RawMessage `json:"nodes"`
	TaintControlPlane       bool              `json:"taint_control_plane"`
	ControlPlaneTolerations []string          `json:"control_plane_tolerations"`
	ServiceSubnet           string            `json:"service_subnet"`
	DNSServers              []string          `json:"dns_servers"`
	DNSService              string            `json:"dns_service"`
	Reboot                  json.RawMessage   `json:"reboot"`
	Repair                  json.RawMessage   `json:"repair"`
	Sabakan                 json.RawMessage   `json:"sabakan"`
	TrustedRESTMappings     json.RawMessage   `json:"trusted_rest_mappings"`
	Options                 json.RawMessage   `json:"options"`
}

// The field names of each object Parse decodes, exactly as written.
var (
	clusterNames = jsonNames(reflect.TypeFor[Cluster]())
	nodeNames    = jsonNames(reflect.TypeFor[Node]())
	taintNames   = jsonNames(reflect.TypeFor[Taint]())
)

func jsonNames(t reflect.Type) []string {
	names := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// Parse reads a cluster.yml (YAML or JSON). It refuses, naming the field and
// where it is: an unknown field at the top level, in a node or in a taint
// (names are matched exactly, not ignoring case as encoding/json does); a
// key given twice in any object; anything after the document.
//
// JSON input is decoded as is, so that the fields carried as JSON keep their
// exact bytes; YAML is converted to JSON first, with YAML 1.1's scalars as
// CKE reads them.
func Parse(data []byte) (*Cluster, error) {
	err := strictjson.Walk(data, knownField)
	var se *strictjson.Error
	switch {
	case err == nil:
		return decode(data)
	case !errors.As(err, &se):
		return nil, err
	case se.Kind == strictjson.Syntax, se.Kind == strictjson.Trailing && !startsObject(data):
		// Not JSON (a JSON string or number followed by more is YAML too:
		// "name": x).
	default:
		return nil, err
	}
	js, err := yamlToJSON(data)
	if err != nil {
		if errors.Is(err, errNotYAML) && startsObject(data) {
			// Most likely meant as JSON: say where it breaks.
			return nil, fmt.Errorf("%w; as JSON: %v", err, se)
		}
		return nil, err
	}
	if err := strictjson.Walk(js, knownField); err != nil {
		if errors.As(err, &se) {
			// The position is in the converted JSON, not in the input.
			se.Line, se.Column = 0, 0
		}
		return nil, err
	}
	return decode(js)
}

// startsObject reports whether the first non-space byte of data is '{'.
func startsObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// knownField refuses a key that is not a field of the object at obj: the
// cluster, a node or a taint. Other objects (labels, the fields carried as
// JSON) take any key.
func knownField(obj strictjson.Path, key string) error {
	var names []string
	switch {
	case len(obj) == 0:
		names = clusterNames
	case len(obj) == 2 && obj[0] == strictjson.Step{Key: "nodes"} && obj[1].IsIndex:
		names = nodeNames
	case len(obj) == 4 && obj[0] == strictjson.Step{Key: "nodes"} && obj[1].IsIndex &&
		obj[2] == strictjson.Step{Key: "taints"} && obj[3].IsIndex:
		names = taintNames
	default:
		return nil
	}
	if slices.Contains(names, key) {
		return nil
	}
	if s, ok := suggest.Closest(key, names); ok {
		return fmt.Errorf("unknown field %q; did you mean %s?", key, s)
	}
	return fmt.Errorf("unknown field %q", key)
}

// decode decodes JSON that strictjson.Walk accepted with knownField.
func decode(js []byte) (*Cluster, error) {
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, fmt.Errorf("empty document")
	}
	var f clusterFields
	if err := decodeStrict(js, &f); err != nil {
		return nil, err
	}
	c := &Cluster{
		Name:                    f.Name,
		TaintControlPlane:       f.TaintControlPlane,
		ControlPlaneTolerations: f.ControlPlaneTolerations,
		ServiceSubnet:           f.ServiceSubnet,
		DNSServers:              f.DNSServers,
		DNSService:              f.DNSService,
		Reboot:                  nullToNil(f.Reboot),
		Repair:                  nullToNil(f.Repair),
		Sabakan:                 nullToNil(f.Sabakan),
		TrustedRESTMappings:     nullToNil(f.TrustedRESTMappings),
		Options:                 nullToNil(f.Options),
	}
	for _, f := range []struct {
		name  string
		raw   json.RawMessage
		array bool
	}{{"reboot", c.Reboot, false}, {"repair", c.Repair, false}, {"sabakan", c.Sabakan, false},
		{"trusted_rest_mappings", c.TrustedRESTMappings, true}, {"options", c.Options, false}} {
		switch {
		case f.raw == nil:
		case f.array && !startsWith(f.raw, '['):
			return nil, fmt.Errorf("%s: must be an array", f.name)
		case !f.array && !startsWith(f.raw, '{'):
			return nil, fmt.Errorf("%s: must be an object", f.name)
		}
	}
	c.Nodes = make([]*Node, 0, len(f.Nodes))
	for i, raw := range f.Nodes {
		n := new(Node)
		if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return nil, fmt.Errorf("nodes[%d]: must be an object, got null", i)
		}
		if err := decodeStrict(raw, n); err != nil {
			return nil, fmt.Errorf("nodes[%d]: %w", i, err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c, nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", jsonErrorText(err))
	}
	return nil
}

// jsonErrorText turns encoding/json's messages into ones that name the field
// the way a cluster.yml author wrote it.
func jsonErrorText(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field != "" {
			return fmt.Sprintf("field %q: cannot use a %s as %s", te.Field, te.Value, te.Type.String())
		}
		return fmt.Sprintf("cannot use a %s as %s", te.Value, te.Type.String())
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

func startsWith(raw json.RawMessage, c byte) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == c
}

// MarshalIndentJSON returns c as indented JSON ending with a newline.
func (c *Cluster) MarshalIndentJSON() ([]byte, error) {
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(data, '\n'), nil
}

// Clone returns a deep copy of n.
func (n *Node) Clone() *Node {
	c := *n
	c.Annotations = maps.Clone(n.Annotations)
	c.Labels = maps.Clone(n.Labels)
	c.Taints = slices.Clone(n.Taints)
	return &c
}

// Name is the Kubernetes node name: the hostname, or the address when the
// hostname is empty (as CKE names nodes).
func (n *Node) Name() string {
	if n.Hostname != "" {
		return n.Hostname
	}
	return n.Address
}

// ShallowCopy returns a copy of c without nodes; the JSON objects are shared
// because they are never modified.
func (c *Cluster) ShallowCopy() *Cluster {
	cp := *c
	cp.Nodes = nil
	cp.ControlPlaneTolerations = slices.Clone(c.ControlPlaneTolerations)
	cp.DNSServers = slices.Clone(c.DNSServers)
	return &cp
}
