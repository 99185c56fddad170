package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The rules one by one, each with a cluster that breaks it and nothing
// else, so that each case fails when its rule is removed. The reference
// module (ckeref/validate_test.go) compares the verdicts with CKE's own
// code.

func base() *Cluster {
	return &Cluster{
		Name:          "test",
		ServiceSubnet: "10.68.0.0/16",
		Nodes: []*Node{{
			Address: "10.0.0.1", User: "cybozu", ControlPlane: true,
			Labels:      map[string]string{"cke.cybozu.com/role": "cs", "topology.kubernetes.io/zone": "rack1"},
			Annotations: map[string]string{"cke.cybozu.com/serial": "abc"},
			Taints:      []Taint{{Key: "cke.cybozu.com/state", Value: "unreachable", Effect: "NoSchedule"}},
		}, {
			Address: "fd00::2", User: "cybozu",
		}},
		Options: json.RawMessage(`{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`),
	}
}

func withNode0(f func(n *Node)) func(c *Cluster) {
	return func(c *Cluster) { f(c.Nodes[0]) }
}

func withOptions(js string) func(c *Cluster) {
	return func(c *Cluster) { c.Options = json.RawMessage(js) }
}

// withKubelet sets options: the required cri_endpoint, then fields (which
// may close the kubelet object and open others).
func withKubelet(fields string) func(c *Cluster) {
	return withOptions(`{"kubelet":{"cri_endpoint":"/x",` + fields + `}}`)
}

func withConfig(component, apiVersion, kind, fields string) func(c *Cluster) {
	return withOptions(fmt.Sprintf(`{"kubelet":{"cri_endpoint":"/x"},%q:{"config":{"apiVersion":%q,"kind":%q%s}}}`,
		component, apiVersion, kind, fields))
}

func withCNI(name, content string) func(c *Cluster) {
	f, _ := json.Marshal(map[string]string{"name": name, "content": content})
	return withKubelet(`"cni_conf_file":` + string(f))
}

const (
	kubeletV   = "kubelet.config.k8s.io/v1beta1"
	schedulerV = "kubescheduler.config.k8s.io/v1"
	proxyV     = "kubeproxy.config.k8s.io/v1alpha1"
)

func TestClusterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(c *Cluster)
		field string // the *ValidationError's Field
		rule  string // in its Rule
	}{
		{"name", func(c *Cluster) { c.Name = "" }, "name", "Required value"},
		{"service_subnet", func(c *Cluster) { c.ServiceSubnet = "10.68.0.0" }, "service_subnet", "CIDR"},
		{"service_subnet empty", func(c *Cluster) { c.ServiceSubnet = "" }, "service_subnet", "CIDR"},
		{"null node", func(c *Cluster) { c.Nodes[1] = nil }, "nodes[1]", "null"},
		{"address", withNode0(func(n *Node) { n.Address = "10.0.0.256" }), "nodes[0].address", "must be an IP address"},
		{"address empty", withNode0(func(n *Node) { n.Address = "" }), "nodes[0].address", "must be an IP address"},
		{"user", withNode0(func(n *Node) { n.User = "" }), "nodes[0].user", "Required value"},
		{"label key", withNode0(func(n *Node) { n.Labels["a b"] = "x" }), "nodes[0].labels", `Invalid value: "a b": name part must consist of`},
		{"label value", withNode0(func(n *Node) { n.Labels["app"] = strings.Repeat("v", 64) }), "nodes[0].labels", "must be no more than 63"},
		{"annotation key", withNode0(func(n *Node) { n.Annotations["a/b/c"] = "" }), "nodes[0].annotations", `Invalid value: "a/b/c"`},
		{"annotation size", withNode0(func(n *Node) { n.Annotations["big"] = strings.Repeat("x", 256*1024) }), "nodes[0].annotations", "Too long"},
		{"annotation size one over", withNode0(func(n *Node) {
			n.Annotations["big"] = strings.Repeat("x", 256*1024-len("big")-len("cke.cybozu.com/serial")-len("abc")+1)
		}), "nodes[0].annotations", "Too long"},
		{"annotation size as written", withNode0(func(n *Node) { n.Annotations["raw"] = strings.Repeat("\xff", 90000) }), "nodes[0].annotations", "Too long"},
		{"taint key", withNode0(func(n *Node) { n.Taints[0].Key = "-x" }), "nodes[0].taints[0].key", "name part"},
		{"taint value", withNode0(func(n *Node) { n.Taints[0].Value = "a b" }), "nodes[0].taints[0].value", "a valid label"},
		{"taint effect", withNode0(func(n *Node) { n.Taints[0].Effect = "noschedule" }), "nodes[0].taints[0].effect", `Unsupported value: "noschedule"`},
		{"taint effect empty", withNode0(func(n *Node) { n.Taints[0].Effect = "" }), "nodes[0].taints[0].effect", `Unsupported value: ""`},
		{"duplicate address", func(c *Cluster) { c.Nodes[1].Address = "10.0.0.1" }, "nodes[1].address", "duplicate"},
		{"toleration", func(c *Cluster) { c.ControlPlaneTolerations = []string{"ok", "a b"} }, "control_plane_tolerations[1]", "name part"},
		{"dns server", func(c *Cluster) { c.DNSServers = []string{"8.8.8.8", "x"} }, "dns_servers[1]", "must be an IP address"},
		{"dns service", func(c *Cluster) { c.DNSService = "dns" }, "dns_service", "namespace/name"},

		{"reboot decoding", func(c *Cluster) { c.Reboot = json.RawMessage(`{"reboot_command":"reboot"}`) }, "reboot.reboot_command", "must be a list, not a string"},
		{"reboot not an object", func(c *Cluster) { c.Reboot = json.RawMessage(`[]`) }, "reboot", "must be an object"},
		{"reboot eviction_timeout_seconds", func(c *Cluster) { c.Reboot = json.RawMessage(`{"eviction_timeout_seconds":0}`) }, "reboot.eviction_timeout_seconds", "positive"},
		{"reboot command_timeout_seconds", func(c *Cluster) { c.Reboot = json.RawMessage(`{"command_timeout_seconds":-1}`) }, "reboot.command_timeout_seconds", "negative"},
		{"reboot command_retries", func(c *Cluster) { c.Reboot = json.RawMessage(`{"command_retries":-1}`) }, "reboot.command_retries", "negative"},
		{"reboot command_interval", func(c *Cluster) { c.Reboot = json.RawMessage(`{"command_interval":-1}`) }, "reboot.command_interval", "negative"},
		{"reboot evict_retries", func(c *Cluster) { c.Reboot = json.RawMessage(`{"evict_retries":-1}`) }, "reboot.evict_retries", "negative"},
		{"reboot evict_interval", func(c *Cluster) { c.Reboot = json.RawMessage(`{"evict_interval":-1}`) }, "reboot.evict_interval", "negative"},
		{"reboot max_concurrent_reboots", func(c *Cluster) { c.Reboot = json.RawMessage(`{"max_concurrent_reboots":0}`) }, "reboot.max_concurrent_reboots", "positive"},
		{"reboot protected_namespaces", func(c *Cluster) {
			c.Reboot = json.RawMessage(`{"protected_namespaces":{"matchExpressions":[{"key":"a","operator":"Equals"}]}}`)
		}, "reboot.protected_namespaces", "invalid label selector"},
		{"reboot protected_job_pods", func(c *Cluster) {
			c.Reboot = json.RawMessage(`{"protected_job_pods":{"matchLabels":{"a":"x y"}}}`)
		}, "reboot.protected_job_pods", "invalid label selector"},
		{"repair max_concurrent_repairs", func(c *Cluster) { c.Repair = json.RawMessage(`{"max_concurrent_repairs":0}`) }, "repair.max_concurrent_repairs", "positive"},
		{"repair evict_retries", func(c *Cluster) { c.Repair = json.RawMessage(`{"evict_retries":-1}`) }, "repair.evict_retries", "negative"},
		{"repair evict_interval", func(c *Cluster) { c.Repair = json.RawMessage(`{"evict_interval":-1}`) }, "repair.evict_interval", "negative"},
		{"repair eviction_timeout_seconds", func(c *Cluster) { c.Repair = json.RawMessage(`{"eviction_timeout_seconds":0}`) }, "repair.eviction_timeout_seconds", "positive"},
		{"repair protected_namespaces", func(c *Cluster) {
			c.Repair = json.RawMessage(`{"protected_namespaces":{"matchExpressions":[{"key":"a","operator":"In"}]}}`)
		}, "repair.protected_namespaces", "invalid label selector"},
		{"repair protected_job_pods", func(c *Cluster) {
			c.Repair = json.RawMessage(`{"protected_job_pods":{"matchLabels":{"a b":"x"}}}`)
		}, "repair.protected_job_pods", "invalid label selector"},
		{"repair decoding", func(c *Cluster) {
			c.Repair = json.RawMessage(`{"repair_procedures":[{"repair_operations":[{"repair_steps":[{"need_drain":"yes"}]}]}]}`)
		}, "repair.repair_procedures.repair_operations.repair_steps.need_drain", "true or false"},
		{"sabakan decoding", func(c *Cluster) { c.Sabakan = json.RawMessage(`{"spare_node_taint_key":5}`) }, "sabakan.spare_node_taint_key", "must be a string"},
		{"mapping version", func(c *Cluster) {
			c.TrustedRESTMappings = json.RawMessage(`[{"kind":"Foo","resource":"foos"}]`)
		}, "trusted_rest_mappings[0].version", "Required"},
		{"mapping kind", func(c *Cluster) {
			c.TrustedRESTMappings = json.RawMessage(`[{"version":"v1","resource":"foos"}]`)
		}, "trusted_rest_mappings[0].kind", "Required"},
		{"mapping resource", func(c *Cluster) { c.TrustedRESTMappings = json.RawMessage(`[{"version":"v1","kind":"Foo"}]`) }, "trusted_rest_mappings[0].resource", "Required"},
		{"mapping twice", func(c *Cluster) {
			c.TrustedRESTMappings = json.RawMessage(`[{"version":"v1","kind":"Foo","resource":"a"},{"version":"v1","kind":"Foo","resource":"b"}]`)
		}, "trusted_rest_mappings[1]", "trusted_rest_mappings[0]"},

		{"options not JSON", withOptions(`{"kubelet":`), "options", "not valid JSON"},
		{"options decoding", withKubelet(`"extra_args":"--v=2"`), "options.kubelet.extra_args", "must be a list"},
		{"bind source", withKubelet(`"x":0},"etcd":{"extra_binds":[{"source":"x","destination":"/x"}]`), "options.etcd.extra_binds[0].source", "absolute"},
		{"bind destination", withKubelet(`"x":0},"kube-api":{"extra_binds":[{"source":"/x","destination":"x"}]`), "options.kube-api.extra_binds[0].destination", "absolute"},
		{"bind controller manager", withKubelet(`"x":0},"kube-controller-manager":{"extra_binds":[{"source":"x","destination":"/x"}]`), "options.kube-controller-manager.extra_binds[0].source", "absolute"},
		{"bind scheduler", withKubelet(`"x":0},"kube-scheduler":{"extra_binds":[{"source":"x","destination":"/x"}]`), "options.kube-scheduler.extra_binds[0].source", "absolute"},
		{"bind proxy", withKubelet(`"x":0},"kube-proxy":{"extra_binds":[{"source":"x","destination":"/x"}]`), "options.kube-proxy.extra_binds[0].source", "absolute"},
		{"bind kubelet", withKubelet(`"extra_binds":[{"source":"x","destination":"/x"}]`), "options.kubelet.extra_binds[0].source", "absolute"},
		{"kubelet config kind missing", withKubelet(`"config":{"apiVersion":"kubelet.config.k8s.io/v1beta1"}`), "options.kubelet.config", `"kind"`},
		{"kubelet config apiVersion", withConfig("kubelet", "v1", "KubeletConfiguration", ""), "options.kubelet.config.apiVersion", kubeletV},
		{"kubelet config kind", withConfig("kubelet", kubeletV, "Other", ""), "options.kubelet.config.kind", "KubeletConfiguration"},
		{"kubelet config field type", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"port":"10250"`), "options.kubelet.config.port", "an integer from -2147483648 to 2147483647"},
		{"kubelet config int32 range", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"port":3000000000`), "options.kubelet.config.port", "an integer from -2147483648 to 2147483647"},
		{"kubelet config duration", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"syncFrequency":null`), "options.kubelet.config", "invalid duration"},
		{"kubelet config flushFrequency string", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"logging":{"flushFrequency":"soon"}`), "options.kubelet.config", "invalid duration"},
		{"kubelet config flushFrequency", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"logging":{"flushFrequency":1.5}`), "options.kubelet.config", `invalid duration 1.5: want a string such as "1s" or an integer of nanoseconds`},
		{"kubelet config embedded field", withConfig("kube-scheduler", schedulerV, "KubeSchedulerConfiguration", `,"enableProfiling":"yes"`), "options.kube-scheduler.config.enableProfiling", "true or false"},
		{"kubelet clusterDomain", withConfig("kubelet", kubeletV, "KubeletConfiguration", `,"clusterDomain":"Cluster.Local"`), "options.kubelet.config.clusterDomain", "RFC 1123"},
		{"cri_endpoint", withOptions(`{"kubelet":{}}`), "options.kubelet.cri_endpoint", "Required"},
		{"no options", func(c *Cluster) { c.Options = nil }, "options.kubelet.cri_endpoint", "Required"},
		{"cni name required", withCNI("", `{"type":"bridge"}`), "options.kubelet.cni_conf_file.name", "Required"},
		{"cni name characters", withCNI("a b.conf", `{"type":"bridge"}`), "options.kubelet.cni_conf_file.name", "letters, digits"},
		{"cni plugin type", withCNI("10-net.conf", `{"name":"x"}`), "options.kubelet.cni_conf_file.content", `"type"`},
		{"cni plugin decoding", withCNI("10-net.conf", `{"type":"x","dns":{"search":"a"}}`), "options.kubelet.cni_conf_file.content", `not a CNI plugin configuration: line 1, column 29: dns.search: want an array of strings, got the string "a"`},
		{"cni plugin not JSON", withCNI("10-net.conf", ``), "options.kubelet.cni_conf_file.content", "not a CNI plugin configuration"},
		{"cni list not JSON", withCNI("10-net.conflist", `[]`), "options.kubelet.cni_conf_file.content", "not a CNI configuration list: line 1, column 1: want an object, got an array"},
		{"cni list name", withCNI("10-net.conflist", `{"plugins":[{"type":"x"}]}`), "options.kubelet.cni_conf_file.content", `needs a "name"`},
		{"cni list name type", withCNI("10-net.conflist", `{"name":1}`), "options.kubelet.cni_conf_file.content", `"name" must be a string`},
		{"cni list cniVersion type", withCNI("10-net.conflist", `{"name":"n","cniVersion":1}`), "options.kubelet.cni_conf_file.content", `"cniVersion" must be a string`},
		{"cni list cniVersions type", withCNI("10-net.conflist", `{"name":"n","cniVersions":"1.0.0"}`), "options.kubelet.cni_conf_file.content", `"cniVersions" must be a list`},
		{"cni list cniVersions item type", withCNI("10-net.conflist", `{"name":"n","cniVersions":[1]}`), "options.kubelet.cni_conf_file.content", `"cniVersions"[0] must be a string`},
		{"cni list cniVersions item", withCNI("10-net.conflist", `{"name":"n","cniVersions":["1.x"]}`), "options.kubelet.cni_conf_file.content", `invalid version "1.x"`},
		{"cni list cniVersions parts", withCNI("10-net.conflist", `{"name":"n","cniVersions":["1.0.0.0"]}`), "options.kubelet.cni_conf_file.content", `more than three parts`},
		{"cni list cniVersion with cniVersions", withCNI("10-net.conflist", `{"name":"n","cniVersion":"x","cniVersions":[]}`), "options.kubelet.cni_conf_file.content", `"cniVersion": invalid version`},
		{"cni list disableCheck", withCNI("10-net.conflist", `{"name":"n","disableCheck":"yes"}`), "options.kubelet.cni_conf_file.content", `"disableCheck"`},
		{"cni list disableGC", withCNI("10-net.conflist", `{"name":"n","disableGC":1}`), "options.kubelet.cni_conf_file.content", `"disableGC"`},
		{"cni list loadOnlyInlinedPlugins", withCNI("10-net.conflist", `{"name":"n","loadOnlyInlinedPlugins":null}`), "options.kubelet.cni_conf_file.content", `"loadOnlyInlinedPlugins" must`},
		{"cni list inlined without plugins", withCNI("10-net.conflist", `{"name":"n","loadOnlyInlinedPlugins":"True"}`), "options.kubelet.cni_conf_file.content", `without "plugins"`},
		{"cni list plugins type", withCNI("10-net.conflist", `{"name":"n","plugins":{}}`), "options.kubelet.cni_conf_file.content", `"plugins" must be a list`},
		{"cni list plugins empty", withCNI("10-net.conflist", `{"name":"n","plugins":[]}`), "options.kubelet.cni_conf_file.content", `"plugins" is empty`},
		{"cni list plugin", withCNI("10-net.conflist", `{"name":"n","plugins":[{"type":"x"},{"name":"y"}]}`), "options.kubelet.cni_conf_file.content", `"plugins"[1]: a CNI plugin configuration needs a "type"`},
		{"boot taint", withKubelet(`"boot_taints":[{"key":"a","effect":"Boot"}]`), "options.kubelet.boot_taints[0].effect", "Unsupported value"},
		{"boot taint decoding", withKubelet(`"boot_taints":[{"key":"a","effect":"NoSchedule","timeAdded":"x"}]`), "options", "parsing time"},
		{"audit policy required", withKubelet(`"x":0},"kube-api":{"audit_log_enabled":true`), "options.kube-api.audit_log_policy", "Required"},
		{"audit policy YAML", withKubelet(`"x":0},"kube-api":{"audit_log_policy":"- a"`), "options.kube-api.audit_log_policy", "must be a YAML mapping, not a list"},
		{"audit policy syntax", withKubelet(`"x":0},"kube-api":{"audit_log_policy":"a: 1\n\tb: 2"`), "options.kube-api.audit_log_policy", "must be a YAML mapping: line 2, column 1: not valid YAML: "},
		{"scheduler config apiVersion", withConfig("kube-scheduler", "v1", "KubeSchedulerConfiguration", ""), "options.kube-scheduler.config.apiVersion", schedulerV},
		{"scheduler config kind", withConfig("kube-scheduler", schedulerV, "Other", ""), "options.kube-scheduler.config.kind", "KubeSchedulerConfiguration"},
		{"scheduler config decoding", withConfig("kube-scheduler", schedulerV, "KubeSchedulerConfiguration", `,"extenders":[{"tlsConfig":{"caData":"!"}}]`), "options.kube-scheduler.config", "base64"},
		{"scheduler config kind missing", withKubelet(`"x":0},"kube-scheduler":{"config":{}`), "options.kube-scheduler.config", `"kind"`},
		{"proxy config apiVersion", withConfig("kube-proxy", "v1", "KubeProxyConfiguration", ""), "options.kube-proxy.config.apiVersion", proxyV},
		{"proxy config kind", withConfig("kube-proxy", proxyV, "Other", ""), "options.kube-proxy.config.kind", "KubeProxyConfiguration"},
		{"proxy config decoding", withConfig("kube-proxy", proxyV, "KubeProxyConfiguration", `,"conntrack":{"maxPerCore":"1"}`), "options.kube-proxy.config.conntrack.maxPerCore", "an integer from -2147483648 to 2147483647"},
		{"proxy config kind missing", withKubelet(`"x":0},"kube-proxy":{"config":"x"`), "options.kube-proxy.config", `must be an object with a "kind" (a Kubernetes object), not the string "x"`},
		{"proxy mode", withConfig("kube-proxy", proxyV, "KubeProxyConfiguration", `,"mode":"nftables"`), "options.kube-proxy.config.mode", `Unsupported value: "nftables"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(c)
			err := c.Validate()
			var e *ValidationError
			if !errors.As(err, &e) {
				t.Fatalf("got %v, want an *ValidationError", err)
			}
			if e.Field != tc.field || !strings.Contains(e.Rule, tc.rule) {
				t.Errorf("got %v\nwant field %s, rule containing %q", err, tc.field, tc.rule)
			}
			if !strings.HasPrefix(err.Error(), "CKE's validation: "+tc.field+": ") {
				t.Errorf("the message does not start with CKE's validation and the field: %v", err)
			}
			if m := goType.FindString(err.Error()); m != "" {
				t.Errorf("the message names a Go type (%s): %v", m, err)
			}
		})
	}
}

// goType matches what Go writes of a type: v1.Duration, Config.port,
// []string, map[string]interface {}, int32, float64, struct field.
var goType = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\b[A-Z]\w*\.[a-z]\w*\b|\[\]|map\[|\bstruct\b|interface \{|\b(u?int(8|16|32|64)?|float(32|64))\b|Go (value|type|struct)`)

// TestClusterAccepts is what CKE accepts around the rules: each case fails
// if a rule is stricter than CKE's.
func TestClusterAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(c *Cluster)
	}{
		{"the base", func(*Cluster) {}},
		{"no nodes", func(c *Cluster) { c.Nodes = nil }},
		{"IPv6 subnet and odd addresses", func(c *Cluster) {
			c.ServiceSubnet = "fd00:10::/108"
			c.Nodes[0].Address, c.Nodes[1].Address = "fd00::2", "fd00:0::2" // not the same string
		}},
		{"longest label parts", withNode0(func(n *Node) {
			n.Labels[strings.Repeat("a.", 126)+"a/"+strings.Repeat("n", 63)] = strings.Repeat("v", 63)
			n.Labels["empty"] = ""
		})},
		{"annotation keys ignore case", withNode0(func(n *Node) { n.Annotations["Example.COM/Foo"] = "any\nthing" })},
		{"annotations at the limit", withNode0(func(n *Node) {
			n.Annotations["big"] = strings.Repeat("x", 256*1024-len("big")-len("cke.cybozu.com/serial")-len("abc"))
		})},
		{"taint effects", withNode0(func(n *Node) {
			n.Taints = []Taint{{Key: "a", Effect: "NoExecute"}, {Key: "b", Value: "v", Effect: "PreferNoSchedule"}}
		})},
		{"dns", func(c *Cluster) { c.DNSServers, c.DNSService = []string{"8.8.8.8", "fd00::53"}, "/" }},
		{"reboot and repair at their bounds", func(c *Cluster) {
			c.Reboot = json.RawMessage(`{"eviction_timeout_seconds":1,"max_concurrent_reboots":1,"command_timeout_seconds":0,"command_retries":0,"command_interval":0,"evict_retries":0,"evict_interval":0,"protected_namespaces":{}}`)
			c.Repair = json.RawMessage(`{"max_concurrent_repairs":1,"eviction_timeout_seconds":1,"evict_retries":0,"evict_interval":0,"repair_procedures":[{"repair_operations":[{"command_timeout_seconds":-1}]}]}`)
		}},
		{"null and unknown fields", func(c *Cluster) {
			c.Reboot, c.Sabakan = json.RawMessage(`null`), json.RawMessage(`{"other":[1]}`)
		}},
		{"keys in other case", withOptions(`{"KUBELET":{"Cri_Endpoint":"/x"}}`)},
		{"rivers binds are not checked", withKubelet(`"x":0},"rivers":{"extra_binds":[{"source":"x","destination":"y"}]`)},
		{"configs", withOptions(`{"kubelet":{"cri_endpoint":"/x","config":{"apiVersion":"` + kubeletV + `","kind":"KubeletConfiguration","port":1e3,"clusterDomain":"cluster.local","logging":{"flushFrequency":null},"unknown":1}},` +
			`"kube-scheduler":{"config":{"apiVersion":"` + schedulerV + `","kind":"KubeSchedulerConfiguration","profiles":[{"pluginConfig":[{"name":"x","args":{"a":1}}]}]}},` +
			`"kube-proxy":{"config":{"apiVersion":"` + proxyV + `","kind":"KubeProxyConfiguration","mode":"ipvs"}}}`)},
		{"cni list", withCNI("10-net.conflist", `{"name":"","cniVersion":"x","disableCheck":"TRUE","plugins":[{"type":"bridge"}]}`)},
		{"cni list without plugins", withCNI("10-net.conflist", `{"name":"n"}`)},
		{"cni plugin", withCNI("net.json", `{"type":"bridge"}`)},
		{"audit policy", withKubelet(`"x":0},"kube-api":{"audit_log_enabled":true,"audit_log_policy":"rules: []"`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base()
			tc.edit(c)
			if err := c.Validate(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestClusterFirstError: among several broken labels, the error names the
// same one whatever the map's order.
func TestClusterFirstError(t *testing.T) {
	for range 20 {
		c := base()
		for _, k := range []string{"z z", "b b", "y y", "a a", "c c"} {
			c.Nodes[0].Labels[k] = "x"
		}
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `"a a"`) {
			t.Fatalf("got %v, want the error of \"a a\"", err)
		}
	}
	if err := (*Cluster)(nil).Validate(); err == nil {
		t.Error("a nil cluster is accepted")
	}
}

// validateBenchCluster is a cluster of n nodes like the ones ckegen generates: the
// labels and annotations a node is rendered with, one unique label value per node (the
// worst case for the cache), a taint on every twentieth.
func validateBenchCluster(n int) *Cluster {
	c := base()
	c.Nodes = nil
	for i := range n {
		rack := strconv.Itoa(i / 20)
		node := &Node{
			Address: fmt.Sprintf("10.%d.%d.%d", i>>16, (i>>8)&255, i&255), User: "cybozu", ControlPlane: i < 5,
			Labels: map[string]string{
				"cke.cybozu.com/index-in-rack":           strconv.Itoa(i%20 + 1),
				"cke.cybozu.com/rack":                    rack,
				"cke.cybozu.com/register-month":          "2024-01",
				"cke.cybozu.com/retire-month":            "2031-01",
				"cke.cybozu.com/retire-year":             "2031",
				"cke.cybozu.com/role":                    "cs",
				"failure-domain.beta.kubernetes.io/zone": "rack" + rack,
				"node-role.kubernetes.io/cs":             "true",
				"topology.kubernetes.io/zone":            "rack" + rack,
				"kubernetes.io/hostname":                 fmt.Sprintf("node-%06d", i),
			},
			Annotations: map[string]string{
				"cke.cybozu.com/register-date": "2024-01-01T00:00:00Z",
				"cke.cybozu.com/retire-date":   "2031-01-01T00:00:00Z",
				"cke.cybozu.com/serial":        fmt.Sprintf("s%06d", i),
			},
		}
		if i%20 == 7 {
			node.Taints = []Taint{{Key: "cke.cybozu.com/state", Value: "unreachable", Effect: "NoSchedule"}}
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c
}

func TestValidateBenchCluster(t *testing.T) {
	if err := validateBenchCluster(1000).Validate(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkValidate(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		c := validateBenchCluster(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkValidateClusterJSON is the daemon's json.Marshal of the same clusters
// before each write, for scale.
func BenchmarkValidateClusterJSON(b *testing.B) {
	for _, n := range []int{10000, 20000} {
		c := validateBenchCluster(n)
		b.Run(fmt.Sprintf("nodes=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := json.Marshal(c); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
