package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

const policyYAML = `# where control planes and gpu workers may go
placements:
  control-plane:
    constraints:
    - topology.kubernetes.io/zone in (rack0, rack1, rack2)
    metricConstraints: [inlet_temperature < 35]
    groups:
    - name: dedicated
      constraints: [sabakan.cke.cybozu.com/cp-ready is "true"]
    - name: any
    metrics:
    - {name: inlet_temperature, weight: -5}
  gpu:
    constraints: ["sabakan.cke.cybozu.com/gpu in (a100, h100)"]
metrics:
  inlet_temperature:
    provider: prom
    query: max by (serial) (ipmi_temperature_celsius{sensor="inlet"})
    min: 15
    max: 45
providers:
  prom: {type: prometheus, url: "http://127.0.0.1:9090", timeout: 10s}
stickiness: 5
`

const storedPolicy = `{"placements":{"control-plane":{"constraints":["topology.kubernetes.io/zone in (rack0, rack1, rack2)"],"metricConstraints":["inlet_temperature < 35"],"groups":[{"name":"dedicated","constraints":["sabakan.cke.cybozu.com/cp-ready is \"true\""]},{"name":"any"}],"metrics":[{"name":"inlet_temperature","weight":-5}]},"gpu":{"constraints":["sabakan.cke.cybozu.com/gpu in (a100, h100)"]}},"metrics":{"inlet_temperature":{"provider":"prom","query":"max by (serial) (ipmi_temperature_celsius{sensor=\"inlet\"})","min":15,"max":45}},"providers":{"prom":{"type":"prometheus","url":"http://127.0.0.1:9090","timeout":"10s"}},"stickiness":5}`

const policyGetYAML = `metrics:
  inlet_temperature:
    max: 45
    min: 15
    provider: prom
    query: max by (serial) (ipmi_temperature_celsius{sensor="inlet"})
placements:
  control-plane:
    constraints:
    - topology.kubernetes.io/zone in (rack0, rack1, rack2)
    groups:
    - constraints:
      - sabakan.cke.cybozu.com/cp-ready is "true"
      name: dedicated
    - name: any
    metricConstraints:
    - inlet_temperature < 35
    metrics:
    - name: inlet_temperature
      weight: -5
  gpu:
    constraints:
    - sabakan.cke.cybozu.com/gpu in (a100, h100)
providers:
  prom:
    timeout: 10s
    type: prometheus
    url: http://127.0.0.1:9090
stickiness: 5
`

// TestPolicyCommands runs set-policy, get-policy and clear-policy against
// a real etcd: outputs exactly, and refused input stores nothing.
func TestPolicyCommands(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	dir := t.TempDir()
	write := func(name, content string) string { return writeFileIn(t, dir, name, content) }
	raw := func(key string) string {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}
	good := write("policy.yml", policyYAML)
	other := write("other.json", `{"stickiness": 1}`)
	template := write("t.yml", "name: demo\nnodes:\n- {user: cybozu, control_plane: true}\n"+
		"- {user: cybozu, labels: {cke.cybozu.com/role: compute}}\n- {user: cybozu, labels: {cke.cybozu.com/role: gpu}}\nservice_subnet: 10.68.0.0/16\n")
	noGPUTemplate := write("t2.yml", "name: demo\nnodes:\n- {user: cybozu, control_plane: true}\n"+
		"- {user: cybozu, labels: {cke.cybozu.com/role: compute}}\nservice_subnet: 10.68.0.0/16\n")
	unknownPlacement := write("gpuu.yml", strings.Replace(policyYAML, "  gpu:", "  gpuu:", 1))
	badConstraint := write("bad.yml", strings.Replace(policyYAML, "(rack0, rack1, rack2)", "(rack0 rack1)", 1))
	unknownField := write("field.yml", strings.Replace(policyYAML, "stickiness:", "stickyness:", 1))
	duplicate := write("dup.json", `{"stickiness": 1, "stickiness": 2}`)
	negative := write("neg.json", `{"stickiness": -1}`)

	const key = "/cke/sabakan/policy"
	steps := []struct {
		args   []string
		code   int
		stdout string
		stderr string // contained; "" means none
		value  string // of key after the step
	}{
		{args: []string{"sabakan", "get-policy"}, code: 1, stderr: "ckegenctl: no placement policy: machines are placed by role and weight only; set one with ckegenctl sabakan set-policy\n", value: "<none>"},
		// No template yet: stored with a warning.
		{args: []string{"sabakan", "set-policy", other}, stderr: "warning: no template is stored: the placements were not checked against one", value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-template", template}, value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", unknownPlacement}, code: 1,
			stderr: unknownPlacement + `: policy: placements.gpuu: no template takes this placement (placements of this template: "control-plane", "compute", "gpu")`, value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", badConstraint}, code: 1,
			stderr: `policy: line 5, column 7: placements.control-plane.constraints[0]: character 39 of the constraint: expected "," or ")" after a value in the list, got "rack1"`, value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", unknownField}, code: 1, stderr: `policy: line 23, column 1: unknown field "stickyness"; did you mean stickiness?`, value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", duplicate}, code: 1, stderr: `policy: line 1, column 19: duplicate key "stickiness" (first at line 1, column 2)`, value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", negative}, code: 1, stderr: "policy: line 1, column 16: stickiness: must be a finite number >= 0", value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", filepath.Join(dir, "missing.yml")}, code: 1, stderr: "no such file", value: `{"stickiness":1}`},
		{args: []string{"sabakan", "set-policy", good}, value: storedPolicy},
		{args: []string{"sabakan", "get-policy"}, stdout: policyGetYAML, value: storedPolicy},
		{args: []string{"sabakan", "get-policy", "-o", "json"}, stdout: indentJSON(t, storedPolicy), value: storedPolicy},
		{args: []string{"sabakan", "get-policy", "-o", "xml"}, code: 2, stderr: "--output: must be one of [yaml json]", value: storedPolicy},
		// The template loses the gpu role: the stored policy no longer fits
		// it (the daemon reports that), and setting it again is refused.
		{args: []string{"sabakan", "set-template", noGPUTemplate}, value: storedPolicy},
		{args: []string{"sabakan", "set-policy", good}, code: 1, stderr: "placements.gpu: no template takes this placement", value: storedPolicy},
		{args: []string{"sabakan", "clear-policy"}, value: "<none>"},
		{args: []string{"sabakan", "clear-policy"}, stderr: "no policy was set", value: "<none>"},
		{args: []string{"sabakan", "get-policy"}, code: 1, stderr: "ckegenctl: no placement policy: machines are placed by role and weight only; set one with ckegenctl sabakan set-policy\n", value: "<none>"},
	}
	for i, st := range steps {
		out, errOut, code := runCLI(t, append([]string{"--endpoints", url}, st.args...)...)
		if code != st.code {
			t.Fatalf("step %d %v: exit %d, want %d (stderr %q)", i, st.args, code, st.code, errOut)
		}
		if out != st.stdout {
			t.Errorf("step %d %v: stdout\n%s\nwant\n%s", i, st.args, out, st.stdout)
		}
		if !strings.Contains(errOut, st.stderr) || (st.stderr == "" && errOut != "") {
			t.Errorf("step %d %v: stderr %q, want %q", i, st.args, errOut, st.stderr)
		}
		if got := raw(key); got != st.value {
			t.Errorf("step %d %v: %s = %q\nwant %q", i, st.args, key, got, st.value)
		}
	}

	// What get-policy prints is a policy set-policy takes (from stdin),
	// storing the same value.
	var out, errOut bytes.Buffer
	if code := run([]string{"--endpoints", url, "sabakan", "set-template", template}, nil, &out, &errOut); code != 0 {
		t.Fatal(errOut.String())
	}
	if code := run([]string{"--endpoints", url, "sabakan", "set-policy", "-"}, strings.NewReader(policyGetYAML), &out, &errOut); code != 0 {
		t.Fatalf("set-policy from stdin: %s", errOut.String())
	}
	if got := raw(key); got != storedPolicy {
		t.Errorf("get-policy's output stored back as %q", got)
	}

	// A stored template that does not parse: warned, not checked.
	if _, err := cli.Put(context.Background(), "/cke/sabakan/template", `{"name": 1}`); err != nil {
		t.Fatal(err)
	}
	_, errText, code := runCLI(t, "--endpoints", url, "sabakan", "set-policy", other)
	if code != 0 || !strings.Contains(errText, "warning: the stored template is invalid, the placements were not checked against it") || raw(key) != `{"stickiness":1}` {
		t.Errorf("set-policy with an invalid stored template: exit %d, stderr %q, stored %q", code, errText, raw(key))
	}
	// A stored policy that does not validate is reported, not printed.
	if _, err := cli.Put(context.Background(), key, `{"stickiness": -3}`); err != nil {
		t.Fatal(err)
	}
	out2, errText, code := runCLI(t, "--endpoints", url, "sabakan", "get-policy")
	if code != 1 || out2 != "" || !strings.Contains(errText, "stored sabakan/policy: policy: line 1, column 16: stickiness: must be a finite number >= 0") {
		t.Errorf("get-policy of an invalid stored policy: exit %d, stdout %q, stderr %q", code, out2, errText)
	}
}

func indentJSON(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, []byte(s), "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String() + "\n"
}
