package template

import (
	"bytes"
	"encoding/json"
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
  labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: ".5"}
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

// TestValidationRules has one case per rule of SPEC 1.2; each error must
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
		{"options not an object", "name: a\nnodes:\n" + cp + w + tail + "options: [1]\n", []string{"options: must be an object"}},
		{"reboot not an object", "name: a\nnodes:\n" + cp + w + tail + "reboot: 3\n", []string{"reboot: must be an object"}},
		{"not YAML", "name: [\n", []string{"not valid YAML or JSON"}},
		{"empty", "", []string{"empty document"}},
		{"null node", "name: a\nnodes:\n- null\n" + tail, []string{"nodes[0]: must be an object"}},
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
		`"reboot":{"command":["true"],"eviction_timeout_seconds":60},"repair":{"repair_procedures":[]},"options":{"kubelet":{"x":1.50}}}`
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
		{"reboot", string(back.Reboot), `{"command":["true"],"eviction_timeout_seconds":60}`},
		{"repair", string(back.Repair), `{"repair_procedures":[]}`},
		{"options", string(back.Options), `{"kubelet":{"x":1.50}}`},
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
}
