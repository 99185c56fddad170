package template

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"
	"strconv"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/strictjson"
)

// The generator copies reboot, repair, sabakan, trusted_rest_mappings and
// options from the template to the cluster without reading them (but for
// sabakan.spare_node_taint_key), and CKE reads them with encoding/json,
// which drops a field it does not know: a typo there (cri_endpiont) would
// reach CKE and be ignored. So a template's carried fields are checked
// against the fields CKE documents (CKE's docs/cluster.md at v1.35), below.

// shape is what CKE documents a value to be.
type shape struct {
	kind kind
	// fields are an object's fields; nil for an object of any fields.
	fields map[string]*shape
	// elem is the shape of an array's elements or of a map's values.
	elem *shape
}

type kind int

const (
	kindString kind = iota + 1
	kindBool
	kindInt
	kindObject // fields as listed, or any when fields is nil
	kindMap    // any keys, values of elem's shape
	kindArray  // elements of elem's shape
)

type fields = map[string]*shape

var (
	str     = &shape{kind: kindString}
	boolean = &shape{kind: kindBool}
	integer = &shape{kind: kindInt}
	// anyObject is an object whose fields belong to Kubernetes
	// (KubeletConfiguration and the like), not to CKE.
	anyObject = &shape{kind: kindObject}
)

func object(f fields) *shape     { return &shape{kind: kindObject, fields: f} }
func arrayOf(elem *shape) *shape { return &shape{kind: kindArray, elem: elem} }
func mapOf(elem *shape) *shape   { return &shape{kind: kindMap, elem: elem} }

var (
	stringList = arrayOf(str)

	// A bind mount of a CKE-run container.
	mountShape = object(fields{"source": str, "destination": str, "read_only": boolean,
		"propagation": str, "selinux_label": str})

	taintShape = object(fields{"key": str, "value": str, "effect": str})

	// A Kubernetes label selector (metav1.LabelSelector).
	labelSelector = object(fields{
		"matchLabels":      mapOf(str),
		"matchExpressions": arrayOf(object(fields{"key": str, "operator": str, "values": stringList})),
	})
)

// service is the shape of one component's options: the three fields every
// component has, and its own.
func service(own fields) *shape {
	f := fields{"extra_args": stringList, "extra_binds": arrayOf(mountShape), "extra_env": mapOf(str)}
	maps.Copy(f, own)
	return object(f)
}

// carriedShapes are the documented shapes of the carried fields.
var carriedShapes = map[string]*shape{
	"options": object(fields{
		"etcd":                    service(fields{"volume_name": str}),
		"etcd-rivers":             service(nil),
		"rivers":                  service(nil),
		"kube-api":                service(fields{"audit_log_enabled": boolean, "audit_log_policy": str, "audit_log_path": str}),
		"kube-controller-manager": service(nil),
		"kube-scheduler":          service(fields{"config": anyObject}),
		"kube-proxy":              service(fields{"config": anyObject, "disable": boolean}),
		"kubelet": service(fields{
			"boot_taints":     arrayOf(taintShape),
			"cni_conf_file":   object(fields{"name": str, "content": str}),
			"config":          anyObject,
			"cri_endpoint":    str,
			"in_place_update": boolean,
		}),
	}),
	"reboot": object(fields{
		"reboot_command":           stringList,
		"boot_check_command":       stringList,
		"eviction_timeout_seconds": integer,
		"command_timeout_seconds":  integer,
		"command_retries":          integer,
		"command_interval":         integer,
		"evict_retries":            integer,
		"evict_interval":           integer,
		"max_concurrent_reboots":   integer,
		"protected_namespaces":     labelSelector,
		"protected_job_pods":       labelSelector,
	}),
	"repair": object(fields{
		"repair_procedures": arrayOf(object(fields{
			"machine_types": stringList,
			"repair_operations": arrayOf(object(fields{
				"operation": str,
				"repair_steps": arrayOf(object(fields{
					"repair_command":          stringList,
					"command_timeout_seconds": integer,
					"command_retries":         integer,
					"command_interval":        integer,
					"need_drain":              boolean,
					"watch_seconds":           integer,
				})),
				"health_check_command":    stringList,
				"command_timeout_seconds": integer,
				"success_command":         stringList,
				"success_command_timeout": integer,
			})),
		})),
		"max_concurrent_repairs":   integer,
		"protected_namespaces":     labelSelector,
		"evict_retries":            integer,
		"evict_interval":           integer,
		"eviction_timeout_seconds": integer,
		"protected_job_pods":       labelSelector,
	}),
	"sabakan": object(fields{"spare_node_taint_key": str}),
	"trusted_rest_mappings": arrayOf(object(fields{
		"group": str, "version": str, "kind": str, "resource": str, "namespaced": boolean,
	})),
}

// carried checks the template's carried fields against carriedShapes.
func (v *validator) carried(c *cluster.Cluster) {
	for _, f := range []struct {
		name string
		raw  []byte
	}{{"reboot", c.Reboot}, {"repair", c.Repair}, {"sabakan", c.Sabakan},
		{"trusted_rest_mappings", c.TrustedRESTMappings}, {"options", c.Options}} {
		if f.raw == nil {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(f.raw))
		dec.UseNumber()
		var val any
		if err := dec.Decode(&val); err != nil {
			// cluster.Parse read it as JSON already.
			v.bad(strictjson.Invalidf(strictjson.Path(nil).Key(f.name), "not JSON: %v", err))
			continue
		}
		v.shape(strictjson.Path(nil).Key(f.name), val, carriedShapes[f.name])
	}
}

// shape reports where val differs from s: an unknown field (with the
// documented field it most likely meant), or a value of the wrong kind.
// null is accepted anywhere, as CKE reads it as absent.
func (v *validator) shape(path strictjson.Path, val any, s *shape) {
	if val == nil {
		return
	}
	switch s.kind {
	case kindString:
		if _, ok := val.(string); !ok {
			v.wrongKind(path, "a string", val)
		}
	case kindBool:
		if _, ok := val.(bool); !ok {
			v.wrongKind(path, "true or false", val)
		}
	case kindInt:
		n, ok := val.(json.Number)
		if _, err := strconv.ParseInt(string(n), 10, 64); !ok || err != nil {
			v.wrongKind(path, "an integer", val)
		}
	case kindArray:
		a, ok := val.([]any)
		if !ok {
			v.wrongKind(path, "an array", val)
			return
		}
		for i, e := range a {
			v.shape(path.Index(i), e, s.elem)
		}
	case kindMap, kindObject:
		m, ok := val.(map[string]any)
		if !ok {
			v.wrongKind(path, "an object", val)
			return
		}
		if s.kind == kindObject && s.fields == nil {
			return
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if s.kind == kindMap {
				v.shape(path.Key(k), m[k], s.elem)
				continue
			}
			f, ok := s.fields[k]
			if !ok {
				v.bad(strictjson.UnknownField(path, k, slices.Sorted(maps.Keys(s.fields))))
				continue
			}
			v.shape(path.Key(k), m[k], f)
		}
	}
}

// wrongKind reports val, decoded from JSON, where want was documented.
func (v *validator) wrongKind(path strictjson.Path, want string, val any) {
	raw, _ := json.Marshal(val) // decoded from JSON: it marshals
	v.bad(strictjson.WrongKind(path, want, raw))
}
