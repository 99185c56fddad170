package cluster

// Validate checks a cluster against what CKE v1.35.4 accepts in
// its etcd key `cluster`, so that ckegen never writes a cluster that CKE's
// server refuses ("invalid cluster configuration" in its log, nothing
// applied) or cannot even read.
//
// CKE's server reads the key with encoding/json into its own cke.Cluster
// and then runs Cluster.Validate(false). Validate checks both, in the
// same order, on the JSON that ckegen writes for c (json.Marshal of the
// Cluster):
//
// Decoding (before any rule): the fields ckegen carries as raw JSON
// (reboot, repair, sabakan, trusted_rest_mappings, options) must decode
// into CKE's types: a value of the wrong JSON type anywhere (a string
// where CKE has a number or a list, a number out of its Go type's range, a
// fraction where it has an integer), a label selector, taint or timestamp
// that does not decode, and options.*.config objects without a "kind"
// (CKE keeps them as Kubernetes unstructured objects, which require one)
// are refused. Field names match ignoring case and unknown fields are
// ignored, as encoding/json does, because the same decoder is used on
// types of the same shape.
//
// Validate(false), rule by rule, in CKE's order:
//   - name is not empty; service_subnet is an IP network in CIDR notation;
//   - each node: not null; address is an IP address (IPv4 or IPv6, as
//     net.ParseIP reads it); user is not empty; label keys are qualified
//     names and values label values (Kubernetes' rules); annotation keys
//     are qualified names ignoring case and the annotations total at most
//     256 KiB; each taint's key is a qualified name, its value a label
//     value and its effect NoSchedule, PreferNoSchedule or NoExecute; no
//     two nodes have the same address (compared as written);
//   - control_plane_tolerations are qualified names; dns_servers are IP
//     addresses; dns_service, when set, is "namespace/name" (exactly one
//     "/");
//   - reboot: eviction_timeout_seconds and max_concurrent_reboots positive,
//     command_timeout_seconds, command_retries, command_interval,
//     evict_retries and evict_interval not negative, protected_namespaces
//     and protected_job_pods valid label selectors;
//   - repair: max_concurrent_repairs and eviction_timeout_seconds positive,
//     evict_retries and evict_interval not negative, the two selectors
//     valid;
//   - options: extra_binds' source and destination absolute paths (etcd,
//     kube-api, kube-controller-manager, kube-scheduler, kube-proxy,
//     kubelet; CKE does not check rivers' and etcd-rivers'); the kubelet's
//     config has apiVersion kubelet.config.k8s.io/v1beta1 and kind
//     KubeletConfiguration and decodes into KubeletConfiguration, and its
//     clusterDomain, when set, is a DNS-1123 subdomain; kubelet.cri_endpoint
//     is not empty (so every cluster needs one); kubelet.cni_conf_file has a
//     name when it has content, the name is made of [0-9A-Za-z_.-], and the
//     content is a CNI network configuration list (name ending in
//     .conflist) or a plugin configuration (otherwise) as CNI's libcni
//     v1.3.0 reads them; kubelet.boot_taints as node taints; kube-api's
//     audit_log_policy is not empty when audit_log_enabled, and is a YAML
//     mapping when set; kube-scheduler's config has apiVersion
//     kubescheduler.config.k8s.io/v1 and kind KubeSchedulerConfiguration and
//     decodes into KubeSchedulerConfiguration; kube-proxy's config has
//     apiVersion kubeproxy.config.k8s.io/v1alpha1 and kind
//     KubeProxyConfiguration, decodes into KubeProxyConfiguration, and its
//     mode, when set, is userspace, iptables or ipvs (CKE v1.35.4 refuses
//     nftables);
//   - trusted_rest_mappings: version, kind and resource not empty, no two
//     with the same group, version and kind.
//
// The Kubernetes rules are apimachinery's own functions (qualified names,
// label values, annotations, DNS-1123 subdomains, label selectors,
// unstructured objects); the component configurations are decoded into a
// generated mirror of their types (internal/kubeconfig, from the versions
// CKE v1.35.4 requires); the CNI configuration is read by code of ckegen's
// own that follows libcni v1.3.0's reading rule for rule. The reference
// module's differential test (ckeref/validate_test.go) compares the
// verdicts with CKE's own code on hand-made and random clusters. Where the
// result could still differ from a real CKE v1.35.4 server:
//   - ckegen builds with k8s.io/apimachinery and k8s.io/api v0.37.2, CKE
//     v1.35.4 with v0.35.5: the functions used here are the same in both
//     but for error texts (checked by diff when this was written);
//   - paths are absolute as on Linux, where CKE's servers run, and CKE's
//     integers are Go ints, 64 bits on the platforms both run on.
//
// One difference from checking the Cluster's strings as they are:
// ckegen's JSON turns each byte of invalid UTF-8 into U+FFFD (three
// bytes), which is what CKE then reads; the annotation size counts that.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	v1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ValidationError is a rule of CKE's that a cluster breaks: the first one,
// in the order CKE checks them.
type ValidationError struct {
	// Field is where, in cluster.yml's names: "name", "nodes[3].labels",
	// "nodes[3].taints[0].effect", "options.kubelet.cri_endpoint",
	// "reboot" (the whole object, for a decoding error).
	Field string
	// Rule says what CKE requires there, with the value it found.
	Rule string
}

func (e *ValidationError) Error() string {
	return "CKE's validation: " + e.Field + ": " + e.Rule
}

// fieldError turns one of apimachinery's field errors into a
// *ValidationError.
func fieldError(fe *field.Error) *ValidationError {
	return &ValidationError{Field: fe.Field, Rule: fe.ErrorBody()}
}

func invalid(path *field.Path, value any, rule string) *ValidationError {
	return fieldError(field.Invalid(path, value, rule))
}

// Validate returns nil when CKE v1.35.4 accepts c as its `cluster` key,
// written as ckegen writes it (json.Marshal), and otherwise a
// *ValidationError that names the first rule c breaks and where.
//
// It takes time linear in the size of the cluster: each distinct label key,
// label value and annotation key is checked once.
func (c *Cluster) Validate() error {
	if c == nil {
		return &ValidationError{Field: "cluster", Rule: "no cluster"}
	}
	o, err := decodeOpaque(c)
	if err != nil {
		return err
	}

	if c.Name == "" {
		return fieldError(field.Required(field.NewPath("name"), "CKE refuses a cluster without a name"))
	}
	if _, _, err := net.ParseCIDR(c.ServiceSubnet); err != nil {
		return invalid(field.NewPath("service_subnet"), c.ServiceSubnet, "must be an IP network in CIDR notation (such as 10.68.0.0/16)")
	}
	if err := checkNodes(c.Nodes); err != nil {
		return err
	}
	for i, key := range c.ControlPlaneTolerations {
		if el := v1validation.ValidateLabelName(key, field.NewPath("control_plane_tolerations").Index(i)); len(el) > 0 {
			return fieldError(el[0])
		}
	}
	for i, a := range c.DNSServers {
		if net.ParseIP(a) == nil {
			return invalid(field.NewPath("dns_servers").Index(i), a, "must be an IP address")
		}
	}
	if c.DNSService != "" && strings.Count(c.DNSService, "/") != 1 {
		return invalid(field.NewPath("dns_service"), c.DNSService, `must be "namespace/name"`)
	}
	if err := o.reboot.check(); err != nil {
		return err
	}
	if err := o.repair.check(); err != nil {
		return err
	}
	if err := o.options.check(); err != nil {
		return err
	}
	return checkMappings(o.mappings)
}

// checker remembers the label keys, label values and annotation keys it has
// found valid, so that a string shared by many nodes is checked once.
type checker struct {
	qualified map[string]struct{} // label and taint keys
	values    map[string]struct{} // label and taint values
	annKeys   map[string]struct{}
}

func checkNodes(nodes []*Node) error {
	ch := &checker{
		qualified: make(map[string]struct{}),
		values:    make(map[string]struct{}),
		annKeys:   make(map[string]struct{}),
	}
	addrs := make(map[string]struct{}, len(nodes))
	for i, n := range nodes {
		if n == nil {
			// CKE's Validate dereferences it: its server would crash.
			return &ValidationError{Field: fmt.Sprintf("nodes[%d]", i), Rule: "null instead of a node"}
		}
		if net.ParseIP(n.Address) == nil {
			return invalid(nodePath(i).Child("address"), n.Address, "must be an IP address")
		}
		if n.User == "" {
			return fieldError(field.Required(nodePath(i).Child("user"), "CKE refuses a node without a user"))
		}
		if err := ch.labels(i, n.Labels); err != nil {
			return err
		}
		if err := ch.annotations(i, n.Annotations); err != nil {
			return err
		}
		for j, t := range n.Taints {
			if err := ch.taint(nodePath(i).Child("taints").Index(j), t.Key, t.Value, corev1.TaintEffect(t.Effect)); err != nil {
				return err
			}
		}
		if _, dup := addrs[n.Address]; dup {
			return invalid(nodePath(i).Child("address"), n.Address, "duplicate node address")
		}
		addrs[n.Address] = struct{}{}
	}
	return nil
}

func nodePath(i int) *field.Path { return field.NewPath("nodes").Index(i) }

// labels applies Kubernetes' label rules (v1validation.ValidateLabels, as
// CKE does) to a node's labels.
func (ch *checker) labels(i int, labels map[string]string) error {
	for k, v := range labels {
		if !ch.qualifiedName(k) || !ch.labelValue(v) {
			// Say which, the same whatever the map's order.
			path := nodePath(i).Child("labels")
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				if el := v1validation.ValidateLabels(map[string]string{k: labels[k]}, path); len(el) > 0 {
					return fieldError(el[0])
				}
			}
			return invalid(path, k, "invalid label") // not reached
		}
	}
	return nil
}

func (ch *checker) qualifiedName(s string) bool {
	if _, ok := ch.qualified[s]; ok {
		return true
	}
	if len(validation.IsQualifiedName(s)) > 0 {
		return false
	}
	ch.qualified[s] = struct{}{}
	return true
}

func (ch *checker) labelValue(s string) bool {
	if _, ok := ch.values[s]; ok {
		return true
	}
	if len(validation.IsValidLabelValue(s)) > 0 {
		return false
	}
	ch.values[s] = struct{}{}
	return true
}

// annotations applies apivalidation.ValidateAnnotations's rules, as CKE
// does: keys are qualified names ignoring case; keys and values total at
// most TotalAnnotationSizeLimitB bytes as CKE reads them.
func (ch *checker) annotations(i int, ann map[string]string) error {
	size := 0
	for k, v := range ann {
		if _, ok := ch.annKeys[k]; !ok {
			if len(validation.IsQualifiedName(strings.ToLower(k))) > 0 {
				path := nodePath(i).Child("annotations")
				for _, k := range slices.Sorted(maps.Keys(ann)) {
					if el := apivalidation.ValidateAnnotations(map[string]string{k: ""}, path); len(el) > 0 {
						return fieldError(el[0])
					}
				}
				return invalid(path, k, "invalid annotation key") // not reached
			}
			ch.annKeys[k] = struct{}{}
		}
		size += jsonLen(k) + jsonLen(v)
	}
	if size > apivalidation.TotalAnnotationSizeLimitB {
		return fieldError(field.TooLong(nodePath(i).Child("annotations"), "", apivalidation.TotalAnnotationSizeLimitB))
	}
	return nil
}

// jsonLen is the length of s as CKE reads it from ckegen's JSON:
// encoding/json writes each byte of invalid UTF-8 as U+FFFD.
func jsonLen(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += utf8.RuneLen(utf8.RuneError)
		} else {
			n += size
		}
		i += size
	}
	return n
}

// taint applies CKE's taint rules: the key a qualified name, the value a
// label value, the effect one of Kubernetes' three.
func (ch *checker) taint(path *field.Path, key, value string, effect corev1.TaintEffect) error {
	if !ch.qualifiedName(key) {
		return fieldError(v1validation.ValidateLabelName(key, path.Child("key"))[0])
	}
	if !ch.labelValue(value) {
		return invalid(path.Child("value"), value, strings.Join(validation.IsValidLabelValue(value), "; "))
	}
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	}
	return fieldError(field.NotSupported(path.Child("effect"), effect, []corev1.TaintEffect{
		corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}))
}

// opaque holds the fields ckegen carries as raw JSON, decoded as CKE
// decodes them.
type opaque struct {
	reboot   reboot
	repair   repair
	sabakan  sabakan
	mappings []restMapping
	options  options
}

// decodeOpaque decodes c's raw JSON fields into types of the shape of
// CKE's, in the order ckegen writes them.
func decodeOpaque(c *Cluster) (*opaque, error) {
	o := new(opaque)
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		into any
	}{
		{"reboot", c.Reboot, &o.reboot},
		{"repair", c.Repair, &o.repair},
		{"sabakan", c.Sabakan, &o.sabakan},
		{"trusted_rest_mappings", c.TrustedRESTMappings, &o.mappings},
		{"options", c.Options, &o.options},
	} {
		if len(f.raw) == 0 {
			continue // omitted from the JSON
		}
		if err := decodeInto(f.name, f.raw, f.into); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// decodeInto decodes raw into v with encoding/json, as CKE does, and turns
// its errors into an *ValidationError under the field name.
func decodeInto(name string, raw []byte, v any) error {
	if !json.Valid(raw) {
		// json.Marshal refuses it: ckegen could not even write it.
		err := json.Unmarshal(raw, new(any))
		return &ValidationError{Field: name, Rule: fmt.Sprintf("not valid JSON: %v", err)}
	}
	err := json.Unmarshal(raw, v)
	if err == nil {
		return nil
	}
	var e *ValidationError
	if errors.As(err, &e) {
		return e
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := name
		if f := jsonPath(reflect.TypeOf(v), te.Field); f != "" {
			where += "." + f
		}
		return &ValidationError{Field: where, Rule: fmt.Sprintf("must be %s, not %s", jsonKind(te.Type), article(te.Value))}
	}
	return &ValidationError{Field: name, Rule: strings.TrimPrefix(err.Error(), "json: ")}
}

// jsonPath removes from the path of a decoding error (te.Field) the names of
// the structs that t embeds, which encoding/json includes.
func jsonPath(t reflect.Type, path string) string {
	embedded := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.Anonymous && name == "" {
				embedded[f.Type.Name()] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	parts := strings.Split(path, ".")
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return embedded[p] }), ".")
}

// jsonKind says which JSON values a Go type decodes.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		return fmt.Sprintf("an integer from %d to %d", -(int64(1) << (t.Bits() - 1)), int64(1)<<(t.Bits()-1)-1)
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return fmt.Sprintf("an integer from 0 to %d", uint64(1)<<t.Bits()-1)
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint64, reflect.Uintptr:
		return "an integer >= 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a base64 string"
		}
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value of another kind"
}

// article reads encoding/json's description of a value ("string", "number
// 1.5", "array") as a phrase.
func article(v string) string {
	switch {
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case strings.HasPrefix(v, "number "):
		return v
	}
	return "a " + v
}

// restMapping has the shape of CKE's TrustedRESTMapping.
type restMapping struct {
	Group      string `json:"group"`
	Version    string `json:"version"`
	Kind       string `json:"kind"`
	Resource   string `json:"resource"`
	Namespaced bool   `json:"namespaced"`
}

func checkMappings(ms []restMapping) error {
	seen := make(map[[3]string]int, len(ms))
	for i, m := range ms {
		path := field.NewPath("trusted_rest_mappings").Index(i)
		switch {
		case m.Version == "":
			return fieldError(field.Required(path.Child("version"), ""))
		case m.Kind == "":
			return fieldError(field.Required(path.Child("kind"), ""))
		case m.Resource == "":
			return fieldError(field.Required(path.Child("resource"), ""))
		}
		key := [3]string{m.Group, m.Version, m.Kind}
		if j, dup := seen[key]; dup {
			return &ValidationError{Field: path.String(), Rule: fmt.Sprintf("the same group, version and kind as trusted_rest_mappings[%d] (%s/%s/%s)", j, m.Group, m.Version, m.Kind)}
		}
		seen[key] = i
	}
	return nil
}

// sabakan has the shape of CKE's Sabakan: CKE only decodes it.
type sabakan struct {
	SpareNodeTaintKey string `json:"spare_node_taint_key"`
}
