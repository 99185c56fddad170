// Package cluster models CKE's cluster.yml: the file the generator writes and
// the syntax templates are written in.
//
// Only the fields ckegen reads are modelled; reboot, repair and options are
// carried through untouched as JSON objects so that a generated cluster keeps
// them exactly as the template had them.
package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	"sigs.k8s.io/yaml"
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

// Cluster is cluster.yml.
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
	Options                 json.RawMessage `json:"options,omitempty"`
}

// clusterFields mirrors Cluster with nodes kept raw, so that each node can be
// decoded on its own and an unknown field can be reported with its index.
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
	Options                 json.RawMessage   `json:"options"`
}

// Parse reads a cluster.yml (YAML or JSON). Field names are strict: an
// unknown field at the top level or in a node is an error naming it.
//
// JSON input is decoded as is, so that reboot, repair and options keep their
// exact bytes; YAML is converted to JSON first.
func Parse(data []byte) (*Cluster, error) {
	js := data
	if !json.Valid(data) {
		if err := singleDocument(data); err != nil {
			return nil, err
		}
		var err error
		if js, err = yaml.YAMLToJSON(data); err != nil {
			return nil, fmt.Errorf("not valid YAML or JSON: %w", err)
		}
	}
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
		Options:                 nullToNil(f.Options),
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"reboot", c.Reboot}, {"repair", c.Repair}, {"options", c.Options}} {
		if f.raw != nil && !isObject(f.raw) {
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

// singleDocument refuses input with more than one YAML document: the
// conversion to JSON would keep the first and silently drop the rest.
func singleDocument(data []byte) error {
	dec := yamlv2.NewDecoder(bytes.NewReader(data))
	var doc any
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil // empty; reported below
		}
		return fmt.Errorf("not valid YAML or JSON: %w", err)
	}
	if err := dec.Decode(&doc); !errors.Is(err, io.EOF) {
		if err != nil {
			return fmt.Errorf("not valid YAML or JSON: %w", err)
		}
		return errors.New("more than one document: a cluster.yml holds exactly one")
	}
	return nil
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%s", jsonErrorText(err))
	}
	if dec.More() {
		return fmt.Errorf("trailing data after the document")
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
	// "json: unknown field \"x\"" is already clear.
	return trimJSONPrefix(err.Error())
}

func trimJSONPrefix(s string) string {
	return strings.TrimPrefix(s, "json: ")
}

func nullToNil(raw json.RawMessage) json.RawMessage {
	if raw == nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil
	}
	return raw
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{'
}

// MarshalYAML returns c as YAML.
func (c *Cluster) MarshalYAML() ([]byte, error) {
	return yaml.Marshal(c)
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
