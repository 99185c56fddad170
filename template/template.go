// Package template loads and validates cluster templates: cluster.yml files
// whose nodes describe kinds of nodes (one control plane, one or more worker
// roles with weights) rather than machines.
package template

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/validate/content"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/taints"
)

// NodeTemplate is one validated template node.
type NodeTemplate struct {
	// Index is the node's position in the template's nodes.
	Index int
	Node  *cluster.Node
	// Role is the sabakan role this template takes; "" takes any role.
	Role string
	// Weight is the worker template's share of the workers (1.0 by default).
	Weight float64
}

// Template is a validated cluster template.
type Template struct {
	Cluster      *cluster.Cluster
	ControlPlane NodeTemplate
	Workers      []NodeTemplate
	// SpareNodeTaintKey is sabakan.spare_node_taint_key (CKE v1.35): the
	// key of the taint that marks a node as a spare; "" when not set.
	SpareNodeTaintKey string
}

// Parse reads and validates a template (YAML or JSON). An error about the
// document's syntax or its carried fields names the line and column in
// data.
func Parse(data []byte) (*Template, error) {
	c, err := cluster.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return validate(c, data)
}

// The two options CKE fills when it stores a template.
const (
	DefaultEtcdVolumeName     = "etcd-cke"
	DefaultKubeletCRIEndpoint = "/run/containerd/containerd.sock"
)

// FillDefaults sets options.etcd.volume_name and
// options.kubelet.cri_endpoint when they are absent, as CKE does when a
// template is stored. Every other byte of options is kept.
func FillDefaults(c *cluster.Cluster) error {
	opts := map[string]json.RawMessage{}
	options := strictjson.Path(nil).Key("options")
	if c.Options != nil {
		if err := strictjson.Unmarshal(c.Options, &opts); err != nil {
			return fmt.Errorf("template: %w", strictjson.Within(err, options))
		}
	}
	changed := false
	for _, d := range []struct{ section, key, value string }{
		{"etcd", "volume_name", DefaultEtcdVolumeName},
		{"kubelet", "cri_endpoint", DefaultKubeletCRIEndpoint},
	} {
		sec := map[string]json.RawMessage{}
		if raw, ok := opts[d.section]; ok && string(raw) != "null" {
			if err := strictjson.Unmarshal(raw, &sec); err != nil {
				return fmt.Errorf("template: %w", strictjson.Within(err, options.Key(d.section)))
			}
		}
		if v, ok := sec[d.key]; ok && string(v) != `""` && string(v) != "null" {
			continue
		}
		val, _ := json.Marshal(d.value)
		sec[d.key] = val
		raw, err := json.Marshal(sec)
		if err != nil {
			return err
		}
		opts[d.section] = raw
		changed = true
	}
	if !changed {
		return nil
	}
	raw, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	c.Options = raw
	return nil
}

// validate checks c as a template (docs/design.md 1.2, rules 1-7) and
// reports every violation, each naming the node index and field; the
// errors with a path get their line and column in src, the document c was
// read from, when it is not nil.
func validate(c *cluster.Cluster, src []byte) (*Template, error) {
	v := &validator{src: src}
	t := &Template{Cluster: c}
	cpIndex := -1
	for i, n := range c.Nodes {
		v.node(i, n)
		if n.ControlPlane {
			if cpIndex >= 0 {
				v.errorf("template nodes[%d]: control_plane: a template has exactly one control plane node; nodes[%d] is one already", i, cpIndex)
				continue
			}
			cpIndex = i
			if _, ok := n.Labels[labels.Weight]; ok {
				v.errorf("template nodes[%d]: label %q: not allowed on the control plane node", i, labels.Weight)
			}
			t.ControlPlane = NodeTemplate{Index: i, Node: n, Role: n.Labels[labels.Role]}
			continue
		}
		w := NodeTemplate{Index: i, Node: n, Role: n.Labels[labels.Role], Weight: 1.0}
		if s, ok := n.Labels[labels.Weight]; ok {
			f, err := parseWeight(s)
			if err != nil {
				v.errorf("template nodes[%d]: label %q: %v", i, labels.Weight, err)
			}
			w.Weight = f
		}
		t.Workers = append(t.Workers, w)
	}
	if cpIndex < 0 {
		v.errorf("template nodes: need exactly one control plane node (control_plane: true), found none")
	}
	if len(t.Workers) == 0 {
		v.errorf("template nodes: need at least one worker node (control_plane: false), found none")
	}
	if len(t.Workers) >= 2 {
		seen := map[string]int{}
		for _, w := range t.Workers {
			if w.Role == "" {
				v.errorf("template nodes[%d]: label %q: required when the template has two or more worker nodes", w.Index, labels.Role)
				continue
			}
			if prev, ok := seen[w.Role]; ok {
				v.errorf("template nodes[%d]: label %q: role %q is already used by nodes[%d]", w.Index, labels.Role, w.Role, prev)
				continue
			}
			seen[w.Role] = w.Index
		}
	}
	v.cluster(c)
	v.carried(c)
	t.SpareNodeTaintKey = v.spareNodeTaintKey(c)
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return t, nil
}

// WorkerFor returns the worker template that takes machines of role, or nil.
func (t *Template) WorkerFor(role string) *NodeTemplate {
	for i := range t.Workers {
		if t.Workers[i].Role == "" || t.Workers[i].Role == role {
			return &t.Workers[i]
		}
	}
	return nil
}

// WorkersHaveRoles reports whether the worker templates select machines by
// role (false for a single template without a role).
func (t *Template) WorkersHaveRoles() bool {
	return len(t.Workers) > 1 || t.Workers[0].Role != ""
}

var decimal = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)

// parseWeight reads a worker template's weight: a finite decimal > 0 that
// is also a valid Kubernetes label value, since the weight is rendered on
// every node of its template as CKE renders it (docs/design.md 2).
func parseWeight(s string) (float64, error) {
	if !decimal.MatchString(s) {
		return 0, fmt.Errorf("must be a decimal number > 0, got %q", s)
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || f <= 0 {
		return 0, fmt.Errorf("must be a finite decimal number > 0, got %q", s)
	}
	if err := weightAsLabel(s, f); err != nil {
		return 0, err
	}
	return f, nil
}

// maxLabelValue is the length Kubernetes allows a label value.
const maxLabelValue = 63

// weightAsLabel refuses a weight that is a number but not a label value
// Kubernetes accepts (".5", "1."), saying why and what to write instead:
// the same number written as a label value.
func weightAsLabel(s string, f float64) error {
	if labels.ValidateValue(s) == nil {
		return nil
	}
	rule := "it must begin and end with a digit"
	if len(s) > maxLabelValue {
		rule = fmt.Sprintf("it must be at most %d characters", maxLabelValue)
	}
	alt := strconv.FormatFloat(f, 'f', -1, 64)
	instead := fmt.Sprintf("write %q, the same weight", alt)
	if labels.ValidateValue(alt) != nil {
		instead = fmt.Sprintf("write it in at most %d characters", maxLabelValue)
	}
	return fmt.Errorf("%q is not a valid Kubernetes label value (%s): the weight is copied onto every node of this template, "+
		"as CKE copies it, and Kubernetes would refuse that node label; %s", s, rule, instead)
}

type validator struct {
	errs []error
	// src is the document the template was read from, or nil.
	src []byte
}

func (v *validator) errorf(format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf(format, args...))
}

// bad reports a problem at a path of the document, placed in src.
func (v *validator) bad(e *strictjson.Error) {
	var err error = e
	if v.src != nil {
		err = cluster.Place(e, v.src)
	}
	v.errs = append(v.errs, fmt.Errorf("template: %w", err))
}

func (v *validator) node(i int, n *cluster.Node) {
	p := fmt.Sprintf("template nodes[%d]", i)
	if n.Address != "" {
		v.errorf("%s: address: must be empty in a template, got %q", p, n.Address)
	}
	if n.Hostname != "" {
		v.errorf("%s: hostname: must be empty in a template, got %q", p, n.Hostname)
	}
	if n.User == "" {
		v.errorf("%s: user: must not be empty", p)
	}
	for _, k := range sortedKeys(n.Labels) {
		val := n.Labels[k]
		if err := labels.ValidateKey(k); err != nil {
			v.errorf("%s: label %q: invalid key: %v", p, k, err)
			continue
		}
		if why := labels.ReservedLabelReason(k); why != "" {
			v.errorf("%s: label %q: reserved: %s", p, k, why)
			continue
		}
		if k == labels.Weight {
			continue // checked as a number and a label value (parseWeight)
		}
		if err := labels.ValidateValue(val); err != nil {
			v.errorf("%s: label %q: invalid value %q: %v", p, k, val, err)
		}
	}
	for _, k := range sortedKeys(n.Annotations) {
		if err := labels.ValidateKey(k); err != nil {
			v.errorf("%s: annotation %q: invalid key: %v", p, k, err)
			continue
		}
		if labels.IsReservedAnnotation(k) {
			v.errorf("%s: annotation %q: reserved: the generator sets it", p, k)
		}
	}
	if size := annotationsSize(n.Annotations); size > maxAnnotationsSize {
		v.errorf("%s: annotations: total size %d bytes is over Kubernetes' limit of %d", p, size, maxAnnotationsSize)
	}
	for j, t := range n.Taints {
		if t.Key == taints.StateKey {
			v.errorf("%s: taints[%d]: key %q: reserved: the generator sets it", p, j, t.Key)
			continue
		}
		if err := taints.Validate(t); err != nil {
			v.errorf("%s: taints[%d]: %v", p, j, err)
		}
	}
}

func (v *validator) cluster(c *cluster.Cluster) {
	if c.Name == "" {
		v.errorf("template name: must not be empty")
	}
	if c.ServiceSubnet == "" {
		v.errorf("template service_subnet: required")
	} else if _, err := netip.ParsePrefix(c.ServiceSubnet); err != nil {
		v.errorf("template service_subnet: must be a CIDR, got %q", c.ServiceSubnet)
	}
	for i, k := range c.ControlPlaneTolerations {
		if err := labels.ValidateKey(k); err != nil {
			v.errorf("template control_plane_tolerations[%d]: invalid key %q: %v", i, k, err)
		}
	}
	for i, s := range c.DNSServers {
		if _, err := netip.ParseAddr(s); err != nil {
			v.errorf("template dns_servers[%d]: must be an IP address, got %q", i, s)
		}
	}
	if c.DNSService != "" {
		ns, name, ok := strings.Cut(c.DNSService, "/")
		if !ok || len(content.IsDNS1123Label(ns)) > 0 || len(content.IsDNS1123Subdomain(name)) > 0 {
			v.errorf("template dns_service: must be empty or \"namespace/name\", got %q", c.DNSService)
		}
	}
}

// spareNodeTaintKey returns sabakan.spare_node_taint_key, checked to be a
// taint key. Empty or absent means no spare nodes, as in CKE, which stores
// "sabakan": {"spare_node_taint_key": ""} when none is set.
func (v *validator) spareNodeTaintKey(c *cluster.Cluster) string {
	var s struct {
		Key any `json:"spare_node_taint_key"`
	}
	if c.Sabakan == nil || json.Unmarshal(c.Sabakan, &s) != nil {
		return "" // not an object: reported by carried
	}
	key, ok := s.Key.(string)
	if !ok || key == "" {
		return "" // not a string: reported by carried
	}
	if err := labels.ValidateKey(key); err != nil {
		v.bad(strictjson.Invalidf(strictjson.Path(nil).Key("sabakan").Key("spare_node_taint_key"), "invalid taint key %q: %v", key, err))
		return ""
	}
	return key
}

// maxAnnotationsSize is Kubernetes' limit on the total size of an object's
// annotations (keys and values).
const maxAnnotationsSize = 256 << 10

func annotationsSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
