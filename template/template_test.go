package template

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
)

const valid = `name: test
nodes:
- user: cybozu
  control_plane: true
  labels: {cke.cybozu.com/role: compute}
- user: cybozu
  labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "6.0"}
- user: cybozu
  labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "0.5"}
service_subnet: 10.68.0.0/16
`

func TestParseValid(t *testing.T) {
	tmpl, err := Parse([]byte(valid))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.ControlPlane.Index != 0 || tmpl.ControlPlane.Role != "compute" {
		t.Errorf("control plane template = %+v, want index 0 role compute", tmpl.ControlPlane)
	}
	if len(tmpl.Workers) != 2 || tmpl.Workers[0].Weight != 6 || tmpl.Workers[1].Weight != 0.5 {
		t.Errorf("workers = %+v, want weights 6 and 0.5", tmpl.Workers)
	}
	if w := tmpl.WorkerFor("storage"); w == nil || w.Index != 2 {
		t.Errorf("WorkerFor(storage) = %+v, want nodes[2]", w)
	}
	if w := tmpl.WorkerFor("gpu"); w != nil {
		t.Errorf("WorkerFor(gpu) = %+v, want nil", w)
	}
}

func TestSingleWorkerWithoutRoleTakesAnyRole(t *testing.T) {
	tmpl, err := Parse([]byte("name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/24\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.Workers[0].Weight != 1.0 {
		t.Errorf("default weight = %v, want 1", tmpl.Workers[0].Weight)
	}
	if tmpl.WorkerFor("anything") == nil || tmpl.WorkersHaveRoles() {
		t.Error("a single worker template without a role must take any role")
	}
}

// TestValidationRules has one case per rule of docs/design.md 1.2; each error must
// name the node (or field) and what is wrong.
func TestValidationRules(t *testing.T) {
	cp := "- {user: u, control_plane: true}\n"
	w := "- {user: u}\n"
	tail := "service_subnet: 10.0.0.0/24\n"
	cases := []struct {
		name, doc string
		want      []string
	}{
		{"unknown top-level field", "name: a\nnodez: []\n" + tail, []string{`unknown field "nodez"`}},
		{"unknown node field", "name: a\nnodes:\n- {user: u, contol_plane: true}\n" + w + tail, []string{`nodes[0]: unknown field "contol_plane"`}},
		{"rule 1: no control plane", "name: a\nnodes:\n" + w + tail, []string{"need exactly one control plane node"}},
		{"rule 1: two control planes", "name: a\nnodes:\n" + cp + cp + w + tail, []string{"nodes[1]: control_plane: a template has exactly one control plane node"}},
		{"rule 1: no worker", "name: a\nnodes:\n" + cp + tail, []string{"need at least one worker node"}},
		{"rule 2: address", "name: a\nnodes:\n- {user: u, control_plane: true, address: 10.0.0.1}\n" + w + tail, []string{`nodes[0]: address: must be empty`}},
		{"rule 2: hostname", "name: a\nnodes:\n" + cp + "- {user: u, hostname: h}\n" + tail, []string{`nodes[1]: hostname: must be empty`}},
		{"rule 2: user", "name: a\nnodes:\n" + cp + "- {user: ''}\n" + tail, []string{`nodes[1]: user: must not be empty`}},
		{"rule 3: two workers, one without role", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/role: x}}\n" + w + tail,
			[]string{`nodes[2]: label "cke.cybozu.com/role": required when the template has two or more worker nodes`}},
		{"rule 3: duplicate roles", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/role: x}}\n- {user: u, labels: {cke.cybozu.com/role: x}}\n" + tail,
			[]string{`nodes[2]: label "cke.cybozu.com/role": role "x" is already used by nodes[1]`}},
		{"rule 4: weight on control plane", "name: a\nnodes:\n- {user: u, control_plane: true, labels: {cke.cybozu.com/weight: '1'}}\n" + w + tail,
			[]string{`nodes[0]: label "cke.cybozu.com/weight": not allowed on the control plane node`}},
		{"rule 4: negative weight", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '-1'}}\n" + tail, []string{`nodes[1]: label "cke.cybozu.com/weight": must be a decimal number > 0, got "-1"`}},
		{"rule 4: zero weight", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '0.0'}}\n" + tail, []string{`nodes[1]: label "cke.cybozu.com/weight": must be a finite decimal number > 0, got "0.0"`}},
		{"rule 4: not a decimal", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: 'NaN'}}\n" + tail, []string{`got "NaN"`}},
		{"rule 4: not a decimal (word)", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: abc}}\n" + tail, []string{`nodes[1]: label "cke.cybozu.com/weight": must be a decimal number > 0, got "abc"`}},
		{"rule 4: weight not a label value (leading point)", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '.5'}}\n" + tail,
			[]string{`nodes[1]: label "cke.cybozu.com/weight": ".5" is not a valid Kubernetes label value (it must begin and end with a digit): ` +
				`the weight is copied onto every node of this template, as CKE copies it, and Kubernetes would refuse that node label; write "0.5", the same weight`}},
		{"rule 4: weight not a label value (trailing point)", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '1.'}}\n" + tail,
			[]string{`nodes[1]: label "cke.cybozu.com/weight": "1." is not a valid Kubernetes label value (it must begin and end with a digit): `, `write "1", the same weight`}},
		{"rule 4: weight not a label value (too long)", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '1." + strings.Repeat("0", 63) + "'}}\n" + tail,
			[]string{`(it must be at most 63 characters)`, `write "1", the same weight`}},
		{"rule 4: weight not a label value (too long, long number)", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '" + strings.Repeat("9", 64) + "'}}\n" + tail,
			[]string{`(it must be at most 63 characters)`, `write it in at most 63 characters`}},
		{"rule 4: exponent", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/weight: '1e400'}}\n" + tail, []string{`got "1e400"`}},
		{"rule 5: label key", "name: a\nnodes:\n" + cp + "- {user: u, labels: {'bad key': v}}\n" + tail, []string{`nodes[1]: label "bad key": invalid key`}},
		{"rule 5: label value", "name: a\nnodes:\n" + cp + "- {user: u, labels: {k: 'bad value'}}\n" + tail, []string{`nodes[1]: label "k": invalid value "bad value"`}},
		{"rule 5: annotation key", "name: a\nnodes:\n" + cp + "- {user: u, annotations: {'-x': v}}\n" + tail, []string{`nodes[1]: annotation "-x": invalid key`}},
		{"rule 5: taint effect", "name: a\nnodes:\n" + cp + "- {user: u, taints: [{key: k, effect: Never}]}\n" + tail, []string{`nodes[1]: taints[0]: effect "Never": must be one of`}},
		{"rule 5: taint key", "name: a\nnodes:\n" + cp + "- {user: u, taints: [{key: 'a b', effect: NoSchedule}]}\n" + tail, []string{`nodes[1]: taints[0]: key "a b"`}},
		{"rule 5: taint value", "name: a\nnodes:\n" + cp + "- {user: u, taints: [{key: k, value: 'a b', effect: NoSchedule}]}\n" + tail, []string{`nodes[1]: taints[0]: value "a b"`}},
		{"rule 6: state taint", "name: a\nnodes:\n" + cp + "- {user: u, taints: [{key: cke.cybozu.com/state, value: x, effect: NoSchedule}]}\n" + tail, []string{`nodes[1]: taints[0]: key "cke.cybozu.com/state": reserved`}},
		{"rule 6: rack label", "name: a\nnodes:\n" + cp + "- {user: u, labels: {cke.cybozu.com/rack: '1'}}\n" + tail, []string{`nodes[1]: label "cke.cybozu.com/rack": reserved`}},
		{"rule 6: zone label", "name: a\nnodes:\n- {user: u, control_plane: true, labels: {topology.kubernetes.io/zone: z}}\n" + w + tail, []string{`nodes[0]: label "topology.kubernetes.io/zone": reserved`}},
		{"rule 6: deprecated zone label", "name: a\nnodes:\n" + cp + "- {user: u, labels: {failure-domain.beta.kubernetes.io/zone: rack1}}\n" + tail,
			[]string{`nodes[1]: label "failure-domain.beta.kubernetes.io/zone": reserved: the deprecated name of topology.kubernetes.io/zone`}},
		{"rule 6: node-role label", "name: a\nnodes:\n" + cp + "- {user: u, labels: {node-role.kubernetes.io/x: 'true'}}\n" + tail, []string{`label "node-role.kubernetes.io/x": reserved`}},
		{"rule 6: sabakan label", "name: a\nnodes:\n" + cp + "- {user: u, labels: {sabakan.cke.cybozu.com/x: v}}\n" + tail, []string{`label "sabakan.cke.cybozu.com/x": reserved`}},
		{"rule 6: serial annotation", "name: a\nnodes:\n" + cp + "- {user: u, annotations: {cke.cybozu.com/serial: v}}\n" + tail, []string{`annotation "cke.cybozu.com/serial": reserved`}},
		{"rule 6: retire-date annotation", "name: a\nnodes:\n" + cp + "- {user: u, annotations: {cke.cybozu.com/retire-date: v}}\n" + tail, []string{`annotation "cke.cybozu.com/retire-date": reserved`}},
		{"rule 7: name", "nodes:\n" + cp + w + tail, []string{"template name: must not be empty"}},
		{"rule 7: service_subnet missing", "name: a\nnodes:\n" + cp + w, []string{"template service_subnet: required"}},
		{"rule 7: service_subnet not CIDR", "name: a\nnodes:\n" + cp + w + "service_subnet: 10.0.0.0\n", []string{`service_subnet: must be a CIDR, got "10.0.0.0"`}},
		{"rule 7: tolerations", "name: a\nnodes:\n" + cp + w + tail + "control_plane_tolerations: ['a b']\n", []string{`control_plane_tolerations[0]: invalid key "a b"`}},
		{"rule 7: dns_servers", "name: a\nnodes:\n" + cp + w + tail + "dns_servers: [8.8.8.8, dns.example]\n", []string{`dns_servers[1]: must be an IP address, got "dns.example"`}},
		{"rule 7: dns_service", "name: a\nnodes:\n" + cp + w + tail + "dns_service: kube-system\n", []string{`dns_service: must be empty or "namespace/name", got "kube-system"`}},
		{"options not an object", "name: a\nnodes:\n" + cp + w + tail + "options: [1]\n", []string{"line 6, column 10: options: want an object, got an array"}},
		{"reboot not an object", "name: a\nnodes:\n" + cp + w + tail + "reboot: 3\n", []string{"line 6, column 9: reboot: want an object, got the number 3"}},
		{"not YAML", "name: [\n", []string{"template: line 1, column 7: not valid YAML: sequence end token ']' not found"}},
		{"empty", "", []string{"empty document"}},
		{"null node", "name: a\nnodes:\n- null\n" + tail, []string{"template: line 3, column 3: nodes[0]: want an object, got null"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl, err := Parse([]byte(c.doc))
			if err == nil {
				t.Fatalf("Parse succeeded (%+v), want an error containing %q", tmpl, c.want)
			}
			if tmpl != nil {
				t.Errorf("Parse returned a template with the error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestAllViolationsReported(t *testing.T) {
	_, err := Parse([]byte("name: ''\nnodes:\n- {user: '', control_plane: true}\n- {user: u, hostname: h}\n"))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, w := range []string{"nodes[0]: user", "nodes[1]: hostname", "template name", "service_subnet: required"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not report %q", err, w)
		}
	}
}

func TestOpaqueFieldsCarriedThrough(t *testing.T) {
	doc := `{"name":"a","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.0.0.0/24",` +
		`"reboot":{"reboot_command":["true"],"eviction_timeout_seconds":60},"repair":{"repair_procedures":[]},"options":{"kubelet":{"config":{"x":1.50}}}}`
	tmpl, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tmpl.Cluster.MarshalIndentJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := cluster.Parse(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"reboot", string(back.Reboot), `{"reboot_command":["true"],"eviction_timeout_seconds":60}`},
		{"repair", string(back.Repair), `{"repair_procedures":[]}`},
		{"options", string(back.Options), `{"kubelet":{"config":{"x":1.50}}}`},
	} {
		var b bytes.Buffer
		if err := json.Compact(&b, []byte(f.got)); err != nil {
			t.Fatal(err)
		}
		if b.String() != f.want {
			t.Errorf("%s = %s, want %s", f.name, f.got, f.want)
		}
	}
}

func TestFillDefaults(t *testing.T) {
	cases := []struct{ in, want string }{
		{``, `{"etcd":{"volume_name":"etcd-cke"},"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`},
		{`{"etcd":{"volume_name":"mine","extra":1},"other":true}`, `{"etcd":{"volume_name":"mine","extra":1},"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"},"other":true}`},
		{`{"etcd":{"volume_name":"v"},"kubelet":{"cri_endpoint":"/x"}}`, `{"etcd":{"volume_name":"v"},"kubelet":{"cri_endpoint":"/x"}}`},
	}
	for _, c := range cases {
		cl := &cluster.Cluster{}
		if c.in != "" {
			cl.Options = []byte(c.in)
		}
		if err := FillDefaults(cl); err != nil {
			t.Fatal(err)
		}
		if string(cl.Options) != c.want {
			t.Errorf("FillDefaults(%s) = %s, want %s", c.in, cl.Options, c.want)
		}
	}
	for in, want := range map[string]string{
		`[]`:              "template: options: want an object, got an array",
		`{"kubelet":"x"}`: `template: options.kubelet: want an object, got the string "x"`,
	} {
		if err := FillDefaults(&cluster.Cluster{Options: []byte(in)}); err == nil || err.Error() != want {
			t.Errorf("FillDefaults(%s) = %v, want %s", in, err, want)
		}
	}
}

// everyDocumentedField is a template that sets every field CKE documents
// under reboot, repair, sabakan, trusted_rest_mappings and options.
const everyDocumentedField = `name: a
nodes:
- {user: u, control_plane: true}
- {user: u}
service_subnet: 10.0.0.0/24
reboot:
  reboot_command: [reboot]
  boot_check_command: [check]
  eviction_timeout_seconds: 600
  command_timeout_seconds: 0
  command_retries: 1
  command_interval: 2
  evict_retries: 3
  evict_interval: 4
  max_concurrent_reboots: 1
  protected_namespaces: {matchLabels: {team: a}}
  protected_job_pods: {matchExpressions: [{key: k, operator: In, values: [a, b]}]}
repair:
  repair_procedures:
  - machine_types: [x]
    repair_operations:
    - operation: unreachable
      repair_steps:
      - {repair_command: [r], command_timeout_seconds: 30, command_retries: 1, command_interval: 5, need_drain: true, watch_seconds: 60}
      health_check_command: [h]
      command_timeout_seconds: 30
      success_command: [s]
      success_command_timeout: 30
  max_concurrent_repairs: 1
  protected_namespaces: {}
  evict_retries: 1
  evict_interval: 1
  eviction_timeout_seconds: 600
  protected_job_pods: null
sabakan: {spare_node_taint_key: cke.cybozu.com/spare}
trusted_rest_mappings:
- {group: example.com, version: v1, kind: Test, resource: tests, namespaced: true}
options:
  etcd: {volume_name: v, extra_args: [--a], extra_binds: [{source: /s, destination: /d, read_only: true, propagation: rshared, selinux_label: z}], extra_env: {A: b}}
  etcd-rivers: {extra_args: [--a]}
  rivers: {extra_env: {A: b}}
  kube-api: {audit_log_enabled: true, audit_log_policy: "x", audit_log_path: /var/log/audit}
  kube-controller-manager: {extra_args: [--v=2]}
  kube-scheduler: {config: {apiVersion: kubescheduler.config.k8s.io/v1, profiles: []}}
  kube-proxy: {config: {mode: ipvs}, disable: false}
  kubelet:
    boot_taints: [{key: k, value: v, effect: NoSchedule}]
    cni_conf_file: {name: 99.conflist, content: "{}"}
    config: {apiVersion: kubelet.config.k8s.io/v1beta1, containerLogMaxSize: 10Mi}
    cri_endpoint: /run/containerd/containerd.sock
    in_place_update: true
`

func TestEveryDocumentedFieldAccepted(t *testing.T) {
	tmpl, err := Parse([]byte(everyDocumentedField))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SpareNodeTaintKey != "cke.cybozu.com/spare" {
		t.Errorf("SpareNodeTaintKey = %q", tmpl.SpareNodeTaintKey)
	}
}

// TestCarriedFieldsChecked: a field CKE does not document under the carried
// fields is refused with the documented field it most likely meant, and a
// value of the wrong type names the field and the type.
func TestCarriedFieldsChecked(t *testing.T) {
	base := "name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/24\n"
	cases := []struct{ name, doc, want string }{
		{"options typo", "options: {kubelet: {cri_endpiont: /x}}",
			`line 6, column 21: options.kubelet: unknown field "cri_endpiont"; did you mean cri_endpoint?`},
		{"options component typo", "options: {kubelt: {}}", `line 6, column 11: options: unknown field "kubelt"; did you mean kubelet?`},
		{"options separator", "options: {kube_api: {}}", `line 6, column 11: options: unknown field "kube_api"; did you mean kube-api?`},
		{"options camel case", "options: {etcd: {volumeName: v}}", `line 6, column 18: options.etcd: unknown field "volumeName"; did you mean volume_name?`},
		{"options nothing close", "options: {kubelet: {port: 1}}",
			`line 6, column 21: options.kubelet: unknown field "port" (known fields: boot_taints, cni_conf_file, config, cri_endpoint, extra_args, extra_binds, extra_env, in_place_update)`},
		{"mount typo", "options: {rivers: {extra_binds: [{source: /a, destination: /b}, {sorce: /a}]}}",
			`line 6, column 66: options.rivers.extra_binds[1]: unknown field "sorce"; did you mean source?`},
		{"boot taint typo", "options: {kubelet: {boot_taints: [{key: k, efect: NoSchedule}]}}",
			`line 6, column 44: options.kubelet.boot_taints[0]: unknown field "efect"; did you mean effect?`},
		{"reboot typo", "reboot: {reboot_comand: [x]}", `line 6, column 10: reboot: unknown field "reboot_comand"; did you mean reboot_command?`},
		{"label selector typo", "reboot: {protected_namespaces: {matchLabel: {a: b}}}",
			`line 6, column 33: reboot.protected_namespaces: unknown field "matchLabel"; did you mean matchLabels?`},
		{"repair step typo", "repair: {repair_procedures: [{repair_operations: [{repair_steps: [{need_drian: true}]}]}]}",
			`line 6, column 68: repair.repair_procedures[0].repair_operations[0].repair_steps[0]: unknown field "need_drian"; did you mean need_drain?`},
		{"sabakan typo", "sabakan: {spare_node_taint: k}", `line 6, column 11: sabakan: unknown field "spare_node_taint"; did you mean spare_node_taint_key?`},
		{"trusted mapping typo", "trusted_rest_mappings: [{group: g, versoin: v1}]",
			`line 6, column 36: trusted_rest_mappings[0]: unknown field "versoin"; did you mean version?`},
		{"string expected", "options: {kubelet: {cri_endpoint: 5}}", "line 6, column 35: options.kubelet.cri_endpoint: want a string, got the number 5"},
		{"array expected", "options: {etcd: {extra_args: --a}}", `line 6, column 30: options.etcd.extra_args: want an array, got the string "--a"`},
		{"array of strings", "options: {etcd: {extra_args: [--a, 1]}}", "line 6, column 36: options.etcd.extra_args[1]: want a string, got the number 1"},
		{"env values are strings", "options: {etcd: {extra_env: {A: true}}}", "line 6, column 33: options.etcd.extra_env.A: want a string, got true"},
		{"integer expected", "reboot: {max_concurrent_reboots: 1.5}", "line 6, column 34: reboot.max_concurrent_reboots: want an integer, got the number 1.5"},
		{"integer, not a string", "reboot: {evict_retries: '3'}", `line 6, column 25: reboot.evict_retries: want an integer, got the string "3"`},
		{"bool expected", "options: {kube-proxy: {disable: 'yes'}}", `line 6, column 33: options.kube-proxy.disable: want true or false, got the string "yes"`},
		{"object expected", "options: {kubelet: []}", "line 6, column 20: options.kubelet: want an object, got an array"},
		{"config is an object", "options: {kubelet: {config: x}}", `line 6, column 29: options.kubelet.config: want an object, got the string "x"`},
		{"spare key invalid", "sabakan: {spare_node_taint_key: 'a b'}", `line 6, column 33: sabakan.spare_node_taint_key: invalid taint key "a b": name part must consist of alphanumeric characters`},
		{"spare key not a string", "sabakan: {spare_node_taint_key: 1}", "line 6, column 33: sabakan.spare_node_taint_key: want a string, got the number 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(base + c.doc + "\n"))
			if err == nil || !strings.HasPrefix(err.Error(), "template: "+c.want) {
				t.Fatalf("Parse = %v\nwant template: %s", err, c.want)
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != 1 { // one mistake, one error
				t.Errorf("%d errors, want 1: %v", n, err)
			}
			if m := goTypeName.FindString(err.Error()); m != "" {
				t.Errorf("%v names a Go type (%s)", err, m)
			}
		})
	}
	// In JSON, at the line and column of the JSON.
	_, err := Parse([]byte(`{"name":"a","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.0.0.0/24",` +
		"\n" + `"options":{"kubelet":{"cri_endpiont":"/x"}}}`))
	if want := `template: line 2, column 23: options.kubelet: unknown field "cri_endpiont"; did you mean cri_endpoint?`; err == nil || err.Error() != want {
		t.Errorf("Parse = %v\nwant %s", err, want)
	}
	// Without the document (validate), without a position.
	c, err := cluster.Parse([]byte(base + "options: {kubelet: {cri_endpiont: /x}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = validate(c, nil)
	if want := `template: options.kubelet: unknown field "cri_endpiont"; did you mean cri_endpoint?`; err == nil || err.Error() != want {
		t.Errorf("validate = %v\nwant %s", err, want)
	}
}

// goTypeName matches what Go writes of a type: cluster.Cluster, []string,
// map[string]string, *Node, struct {...}, bool, int64.
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|\*[A-Za-z]|\b(u?int(8|16|32|64)?|float(32|64)|bool|interface)\b|Go value|Go type`)

// TestSpareNodeTaintKey: sabakan.spare_node_taint_key is read from the
// template; empty or absent means none, as CKE stores a template without it
// ("sabakan": {"spare_node_taint_key": ""}).
func TestSpareNodeTaintKey(t *testing.T) {
	base := "name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/24\n"
	for _, c := range []struct{ doc, want string }{
		{"", ""},
		{"sabakan: {}", ""},
		{"sabakan: null", ""},
		{"sabakan: {spare_node_taint_key: ''}", ""},
		{"sabakan: {spare_node_taint_key: null}", ""},
		{"sabakan: {spare_node_taint_key: node.cybozu.io/spare}", "node.cybozu.io/spare"},
	} {
		tmpl, err := Parse([]byte(base + c.doc + "\n"))
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		if tmpl.SpareNodeTaintKey != c.want {
			t.Errorf("%s: SpareNodeTaintKey = %q, want %q", c.doc, tmpl.SpareNodeTaintKey, c.want)
		}
	}
}

// TestNullCarriedValuesAccepted: CKE reads null as absent.
func TestNullCarriedValuesAccepted(t *testing.T) {
	doc := "name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/24\n" +
		"options: {kubelet: null, etcd: {extra_args: null, volume_name: null}}\nreboot: {protected_namespaces: null}\n"
	if _, err := Parse([]byte(doc)); err != nil {
		t.Error(err)
	}
}

// TestTemplateAsCKEStoresIt: CKE stores a template as encoding/json writes
// its Go types: every field, null or zero when unset. Such a template (read
// by the daemon when it takes over from CKE) is valid.
func TestTemplateAsCKEStoresIt(t *testing.T) {
	service := `"extra_args":null,"extra_binds":null,"extra_env":null`
	node := `{"address":"","hostname":"","user":"cybozu","control_plane":%v,"annotations":null,"labels":null,"taints":null}`
	doc := `{"name":"a","nodes":[` + fmt.Sprintf(node, true) + `,` + fmt.Sprintf(node, false) + `],` +
		`"taint_control_plane":false,"control_plane_tolerations":null,"service_subnet":"10.68.0.0/16","dns_servers":null,"dns_service":"",` +
		`"reboot":{"reboot_command":null,"boot_check_command":null,"protected_namespaces":null,"protected_job_pods":null},` +
		`"repair":{"repair_procedures":null,"protected_namespaces":null},` +
		`"sabakan":{"spare_node_taint_key":""},"trusted_rest_mappings":null,` +
		`"options":{"etcd":{` + service + `,"volume_name":"etcd-cke"},"rivers":{` + service + `},"etcd-rivers":{` + service + `},` +
		`"kube-api":{` + service + `,"audit_log_enabled":false,"audit_log_policy":"","audit_log_path":""},` +
		`"kube-controller-manager":{` + service + `},"kube-scheduler":{` + service + `},"kube-proxy":{` + service + `,"disable":false},` +
		`"kubelet":{` + service + `,"boot_taints":null,"cni_conf_file":{"name":"","content":""},"cri_endpoint":"/run/containerd/containerd.sock","in_place_update":false}}}`
	tmpl, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SpareNodeTaintKey != "" {
		t.Errorf("SpareNodeTaintKey = %q, want none", tmpl.SpareNodeTaintKey)
	}
}

// TestWeightLabelValues: a weight that is a decimal > 0 and a valid
// Kubernetes label value is accepted with its value; one that is a number
// but not a label value (rendered on every node of its template, it
// would be refused by Kubernetes) is refused, naming the node and the
// label, with the same number written as a label value.
func TestWeightLabelValues(t *testing.T) {
	doc := func(w string) string {
		return "name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u, labels: {cke.cybozu.com/weight: '" + w + "'}}\nservice_subnet: 10.0.0.0/24\n"
	}
	for w, want := range map[string]float64{"1": 1, "0.5": 0.5, "6.0": 6, "10": 10, "007": 7, "1.50": 1.5, "2." + strings.Repeat("5", 61): 2.5555555555555554} {
		tmpl, err := Parse([]byte(doc(w)))
		if err != nil {
			t.Errorf("weight %q: %v", w, err)
			continue
		}
		if got := tmpl.Workers[0].Weight; got != want {
			t.Errorf("weight %q: %v, want %v", w, got, want)
		}
	}
	for w, instead := range map[string]string{".5": `write "0.5"`, "1.": `write "1"`, ".25": `write "0.25"`, "10.": `write "10"`, ".": "must be a decimal number > 0"} {
		_, err := Parse([]byte(doc(w)))
		if err == nil {
			t.Errorf("weight %q accepted", w)
			continue
		}
		for _, s := range []string{`template nodes[1]: label "cke.cybozu.com/weight": `, instead} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("weight %q: %q does not say %q", w, err, s)
			}
		}
	}
}
