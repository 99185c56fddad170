package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"

	yamlv2 "go.yaml.in/yaml/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/cluster/internal/kubeconfig"
	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/internal/strictjson/yamlpos"
)

// options has the shape of CKE's Options.
type options struct {
	Etcd struct {
		serviceParams
		VolumeName string `json:"volume_name"`
	} `json:"etcd"`
	Rivers     serviceParams `json:"rivers"`
	EtcdRivers serviceParams `json:"etcd-rivers"`
	APIServer  struct {
		serviceParams
		AuditLogEnabled bool   `json:"audit_log_enabled"`
		AuditLogPolicy  string `json:"audit_log_policy"`
		AuditLogPath    string `json:"audit_log_path"`
	} `json:"kube-api"`
	ControllerManager serviceParams `json:"kube-controller-manager"`
	Scheduler         struct {
		serviceParams
		Config *schedulerConfig `json:"config"`
	} `json:"kube-scheduler"`
	Proxy struct {
		serviceParams
		Disable bool         `json:"disable"`
		Config  *proxyConfig `json:"config"`
	} `json:"kube-proxy"`
	Kubelet struct {
		serviceParams
		BootTaints  []corev1.Taint `json:"boot_taints"`
		CNIConfFile struct {
			Name    string `json:"name"`
			Content string `json:"content"`
		} `json:"cni_conf_file"`
		Config        *kubeletConfig `json:"config"`
		CRIEndpoint   string         `json:"cri_endpoint"`
		InPlaceUpdate bool           `json:"in_place_update"`
	} `json:"kubelet"`
}

// serviceParams has the shape of CKE's ServiceParams, which its options
// embed.
type serviceParams struct {
	ExtraArguments []string          `json:"extra_args"`
	ExtraBinds     []mount           `json:"extra_binds"`
	ExtraEnvvar    map[string]string `json:"extra_env"`
}

type mount struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	ReadOnly    bool   `json:"read_only"`
	Propagation string `json:"propagation"`
	Label       string `json:"selinux_label"`
}

// A component's config is kept by CKE as a Kubernetes unstructured object:
// decoding refuses anything but a JSON object with a string "kind". Each
// component has its type here so that the error says which.
type (
	kubeletConfig   struct{ unstructured.Unstructured }
	schedulerConfig struct{ unstructured.Unstructured }
	proxyConfig     struct{ unstructured.Unstructured }
)

func (c *kubeletConfig) UnmarshalJSON(b []byte) error {
	return configError("options.kubelet.config", b, c.Unstructured.UnmarshalJSON(b))
}

func (c *schedulerConfig) UnmarshalJSON(b []byte) error {
	return configError("options.kube-scheduler.config", b, c.Unstructured.UnmarshalJSON(b))
}

func (c *proxyConfig) UnmarshalJSON(b []byte) error {
	return configError("options.kube-proxy.config", b, c.Unstructured.UnmarshalJSON(b))
}

func configError(where string, b []byte, err error) error {
	const want = `must be an object with a "kind" (a Kubernetes object)`
	switch {
	case err == nil:
		return nil
	case runtime.IsMissingKind(err):
		return &ValidationError{Field: where, Rule: want}
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		// encoding/json's words name the Go map it wanted.
		return &ValidationError{Field: where, Rule: want + ", not " + strictjson.What(b)}
	}
	return &ValidationError{Field: where, Rule: want + ": " + err.Error()}
}

// The component configuration versions CKE v1.35.4 takes, and only those.
const (
	kubeletAPIVersion   = "kubelet.config.k8s.io/v1beta1"
	kubeletKind         = "KubeletConfiguration"
	schedulerAPIVersion = "kubescheduler.config.k8s.io/v1"
	schedulerKind       = "KubeSchedulerConfiguration"
	proxyAPIVersion     = "kubeproxy.config.k8s.io/v1alpha1"
	proxyKind           = "KubeProxyConfiguration"
)

// The kube-proxy modes CKE v1.35.4 accepts.
var proxyModes = []string{"userspace", "iptables", "ipvs"}

// decodeConfig does what CKE's MergeConfig does to a component's config:
// the apiVersion and kind must be the one version CKE supports, and the
// object, written as JSON again, must decode into the component's
// configuration type (into, a mirror of it).
func decodeConfig(where string, u *unstructured.Unstructured, apiVersion, kind string, into any) error {
	if v := u.GetAPIVersion(); v != apiVersion {
		return &ValidationError{Field: where + ".apiVersion", Rule: fmt.Sprintf("must be %q (CKE v1.35.4 takes no other), not %q", apiVersion, v)}
	}
	if k := u.GetKind(); k != kind {
		return &ValidationError{Field: where + ".kind", Rule: fmt.Sprintf("must be %q, not %q", kind, k)}
	}
	data, err := json.Marshal(u)
	if err != nil {
		return &ValidationError{Field: where, Rule: err.Error()}
	}
	err = json.Unmarshal(data, into)
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te) && te.Field != "":
		return &ValidationError{Field: where + "." + jsonPath(reflect.TypeOf(into), te.Field), Rule: fmt.Sprintf("must be %s, not %s (in %s)", jsonKind(te.Type), article(te.Value), kind)}
	}
	return &ValidationError{Field: where, Rule: fmt.Sprintf("does not decode as %s: %v", kind, strings.TrimPrefix(err.Error(), "json: "))}
}

// check is CKE's validation of the options, in its order: the extra
// binds, the kubelet, the API server, the scheduler's and the proxy's
// configurations.
func (o *options) check() error {
	for _, step := range []func() error{o.checkBinds, o.checkKubelet, o.checkAPIServer, o.checkConfigs} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// checkBinds: every extra bind's source and destination are absolute.
func (o *options) checkBinds() error {
	for _, p := range []struct {
		name  string
		binds []mount
	}{
		{"etcd", o.Etcd.ExtraBinds},
		{"kube-api", o.APIServer.ExtraBinds},
		{"kube-controller-manager", o.ControllerManager.ExtraBinds},
		{"kube-scheduler", o.Scheduler.ExtraBinds},
		{"kube-proxy", o.Proxy.ExtraBinds},
		{"kubelet", o.Kubelet.ExtraBinds},
	} {
		for i, m := range p.binds {
			bp := field.NewPath("options", p.name, "extra_binds").Index(i)
			// CKE's servers run Linux, where filepath.IsAbs is this.
			if !strings.HasPrefix(m.Source, "/") {
				return invalid(bp.Child("source"), m.Source, "must be an absolute path")
			}
			if !strings.HasPrefix(m.Destination, "/") {
				return invalid(bp.Child("destination"), m.Destination, "must be an absolute path")
			}
		}
	}
	return nil
}

// checkKubelet: the kubelet's configuration, its cluster domain, its CRI
// endpoint, its CNI configuration file and its boot taints.
func (o *options) checkKubelet() error {
	kubelet := field.NewPath("options", "kubelet")
	var kc kubeconfig.KubeletConfiguration
	if c := o.Kubelet.Config; c != nil {
		if err := decodeConfig("options.kubelet.config", &c.Unstructured, kubeletAPIVersion, kubeletKind, &kc); err != nil {
			return err
		}
	}
	if d := kc.ClusterDomain; d != "" {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			return invalid(kubelet.Child("config", "clusterDomain"), d, strings.Join(msgs, "; "))
		}
	}
	if o.Kubelet.CRIEndpoint == "" {
		return fieldError(field.Required(kubelet.Child("cri_endpoint"), "CKE refuses a cluster without one"))
	}
	if err := checkCNIConfFile(kubelet.Child("cni_conf_file"), o.Kubelet.CNIConfFile.Name, o.Kubelet.CNIConfFile.Content); err != nil {
		return err
	}
	ch := &checker{qualified: map[string]struct{}{}, values: map[string]struct{}{}}
	for i, t := range o.Kubelet.BootTaints {
		if err := ch.taint(kubelet.Child("boot_taints").Index(i), t.Key, t.Value, t.Effect); err != nil {
			return err
		}
	}
	return nil
}

// checkAPIServer: an audit log has its policy, a mapping.
func (o *options) checkAPIServer() error {
	api := field.NewPath("options", "kube-api")
	if o.APIServer.AuditLogEnabled && o.APIServer.AuditLogPolicy == "" {
		return fieldError(field.Required(api.Child("audit_log_policy"), "CKE requires one when audit_log_enabled is true"))
	}
	if p := o.APIServer.AuditLogPolicy; p != "" {
		var policy map[string]any
		if err := yaml.Unmarshal([]byte(p), &policy); err != nil {
			return &ValidationError{Field: api.Child("audit_log_policy").String(), Rule: notMapping([]byte(p))}
		}
	}
	return nil
}

// checkConfigs: the scheduler's and the proxy's configurations decode,
// and the proxy's mode is one CKE knows.
func (o *options) checkConfigs() error {
	if c := o.Scheduler.Config; c != nil {
		var sc kubeconfig.KubeSchedulerConfiguration
		if err := decodeConfig("options.kube-scheduler.config", &c.Unstructured, schedulerAPIVersion, schedulerKind, &sc); err != nil {
			return err
		}
	}
	if c := o.Proxy.Config; c != nil {
		var pc kubeconfig.KubeProxyConfiguration
		if err := decodeConfig("options.kube-proxy.config", &c.Unstructured, proxyAPIVersion, proxyKind, &pc); err != nil {
			return err
		}
		if pc.Mode != "" && !slices.Contains(proxyModes, pc.Mode) {
			return fieldError(field.NotSupported(field.NewPath("options", "kube-proxy", "config", "mode"), pc.Mode, proxyModes))
		}
	}
	return nil
}

// checkCNIConfFile applies CKE's rules on the CNI configuration file it
// writes on the nodes: a name when there is content; a name of
// [0-9A-Za-z_.-]; content that CNI reads as a network configuration list
// (a name ending in .conflist) or a plugin configuration (any other name;
// so a name without content is refused too).
func checkCNIConfFile(p *field.Path, name, content string) error {
	if name == "" {
		if content != "" {
			return fieldError(field.Required(p.Child("name"), "CKE requires one when content is set"))
		}
		return nil
	}
	for _, r := range name {
		if !(r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '_' || r == '.' || r == '-') {
			return invalid(p.Child("name"), name, "must consist of letters, digits, '_', '.' and '-' only")
		}
	}
	var err error
	if path.Ext(name) == ".conflist" {
		err = cniConfList([]byte(content))
	} else {
		err = cniPluginConf([]byte(content))
	}
	if err != nil {
		return &ValidationError{Field: p.Child("content").String(), Rule: err.Error()}
	}
	return nil
}

// notMapping is the rule data breaks, which sigs.k8s.io/yaml could not
// read into a mapping: why, in YAML's words and with the line in data
// (sigs.k8s.io/yaml's own words name the Go map it wanted).
func notMapping(data []byte) string {
	const want = "must be a YAML mapping"
	var doc any
	if err := yamlv2.Unmarshal(data, &doc); err != nil {
		return want + ": " + yamlpos.Errors(err, data).Error()
	}
	switch doc.(type) {
	case map[any]any:
		if k := yamlpos.BadKey(data); k != nil {
			return want + ": " + k.Error()
		}
		return want + ": a key has no JSON form"
	case []any:
		return want + ", not a list"
	case nil:
		return want + ", not an empty document"
	}
	return want + ", not a scalar"
}
