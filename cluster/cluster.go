// Package cluster models CKE's cluster.yml: the file the generator writes and
// the syntax templates are written in.
//
// Only the fields ckegen reads are modelled; reboot, repair, sabakan,
// trusted_rest_mappings and options are carried through untouched as JSON,
// so that a generated cluster keeps them exactly as the template had them.
// Cluster.Validate checks a cluster against CKE v1.35.4's own decoding and
// validation, before ckegen writes it (validate*.go).
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
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

// clusterNames are the top-level fields of cluster.yml, as written.
var clusterNames = strictjson.FieldNames(reflect.TypeFor[Cluster]())

// Parse reads a cluster.yml (YAML or JSON). It refuses, naming the field and
// where it is: an unknown field at the top level, in a node or in a taint
// (names are matched exactly, not ignoring case as encoding/json does); a
// key given twice in any object; anything after the document. Every error
// about the input is a *strictjson.Error with the line and column, in
// data, of what is wrong.
//
// JSON input is decoded as is, so that the fields carried as JSON keep their
// exact bytes; YAML is converted to JSON first, with YAML 1.1's scalars as
// CKE reads them.
func Parse(data []byte) (*Cluster, error) {
	if c, ok := parseFast(data); ok {
		return c, nil
	}
	return parseStrict(data)
}

// parseStrict is Parse without the fast path (parseFast).
func parseStrict(data []byte) (*Cluster, error) {
	c, err := decode(data)
	var se *strictjson.Error
	switch {
	case err == nil:
		return c, nil
	case !errors.As(err, &se):
		return nil, err
	case se.Kind == strictjson.Syntax, se.Kind == strictjson.Trailing && !startsObject(data):
		// Not JSON (a JSON string or number followed by more is YAML too:
		// "name": x).
	default:
		return nil, strictjson.Place(err, data)
	}
	js, err := yamlToJSON(data)
	if err != nil {
		if errors.As(err, &se) && se.Kind == strictjson.Syntax {
			return nil, yamlpos.Unreadable(data, err)
		}
		return nil, err
	}
	c, err = decode(js)
	if err != nil {
		// The positions are in the converted JSON: point at the YAML.
		return nil, yamlpos.Place(err, data)
	}
	return c, nil
}

// Place gives the errors in err about the cluster.yml data (YAML or JSON),
// as Parse read it, the line and column in data of what they are about, by
// their paths (see strictjson.Place). It returns err.
func Place(err error, data []byte) error {
	if jsontext.Value(data).IsValid(jsontext.AllowInvalidUTF8(true)) {
		return strictjson.Place(err, data)
	}
	return yamlpos.Place(err, data)
}

// startsObject reports whether the first non-space byte of data is '{'.
func startsObject(data []byte) bool {
	t := bytes.TrimLeft(data, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// decode decodes JSON strictly: unknown fields of the cluster, a node or a
// taint, and keys given twice anywhere are refused; labels, annotations and
// the fields carried as JSON take any key. The errors it finds after
// decoding have no position: the caller places them.
func decode(js []byte) (*Cluster, error) {
	if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
		return nil, fmt.Errorf("empty document")
	}
	c := new(Cluster)
	if err := strictjson.Unmarshal(js, c, strictjson.Document("a cluster.yml document")); err != nil {
		return nil, err
	}
	c.Reboot = nullToNil(c.Reboot)
	c.Repair = nullToNil(c.Repair)
	c.Sabakan = nullToNil(c.Sabakan)
	c.TrustedRESTMappings = nullToNil(c.TrustedRESTMappings)
	c.Options = nullToNil(c.Options)
	for _, f := range []struct {
		name  string
		raw   json.RawMessage
		array bool
	}{{"reboot", c.Reboot, false}, {"repair", c.Repair, false}, {"sabakan", c.Sabakan, false},
		{"trusted_rest_mappings", c.TrustedRESTMappings, true}, {"options", c.Options, false}} {
		switch {
		case f.raw == nil:
		case f.array && !startsWith(f.raw, '['):
			return nil, strictjson.WrongKind(strictjson.Path(nil).Key(f.name), "an array", f.raw)
		case !f.array && !startsWith(f.raw, '{'):
			return nil, strictjson.WrongKind(strictjson.Path(nil).Key(f.name), "an object", f.raw)
		}
	}
	if c.Nodes == nil {
		c.Nodes = []*Node{}
	}
	for i, n := range c.Nodes {
		if n == nil {
			return nil, strictjson.WrongKind(strictjson.Path(nil).Key("nodes").Index(i), "an object", []byte("null"))
		}
	}
	return c, nil
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
