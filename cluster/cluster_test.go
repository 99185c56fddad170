package cluster

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseRefuses: each error names what is wrong and where: the field's
// path, and for JSON the line and column (YAML's converted form has no
// position of its own; yaml.v2 reports a repeated key's line).
func TestParseRefuses(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown node field", "name: a\nnodes:\n- {address: 10.0.0.1, user: u, hostnmae: h}\n",
			`nodes[0]: unknown field "hostnmae"; did you mean hostname?`},
		{"unknown top-level field", "name: a\nservice_subnet: x\nsevice_subnet: y\n",
			`unknown field "sevice_subnet"; did you mean service_subnet?`},
		{"unknown field, nothing close", "name: a\nfoo: 1\n", `unknown field "foo"`},
		{"unknown taint field", "name: a\nnodes:\n- {address: 10.0.0.1, user: u, taints: [{key: k, effect: NoSchedule, extra: 1}]}\n",
			`nodes[0].taints[0]: unknown field "extra"`},
		{"field name in another case (JSON)", `{"Name": "a"}`, `unknown field "Name"; did you mean name? (line 1, column 2)`},
		{"field name in another case (YAML)", "nodes:\n- {Control_Plane: true}\n", `nodes[0]: unknown field "Control_Plane"; did you mean control_plane?`},
		{"wrong type", "name: a\nnodes: {}\n", "cannot use a object"},
		{"options not an object", "options: 3\n", "options: must be an object"},
		{"sabakan not an object", "sabakan: [k]\n", "sabakan: must be an object"},
		{"trusted_rest_mappings not an array", "trusted_rest_mappings: {group: g}\n", "trusted_rest_mappings: must be an array"},

		{"YAML duplicate top-level key", "name: x\nname: foo\n", `line 2: duplicate key "name"`},
		{"YAML duplicate node key", "name: a\nnodes:\n- address: 10.0.0.1\n  user: u\n  address: 10.0.0.2\n", `line 5: duplicate key "address"`},
		{"YAML duplicate label", "nodes:\n- labels:\n    a: x\n    b: y\n    a: z\n", `line 5: duplicate key "a"`},
		{"YAML duplicate in options", "options:\n  kubelet: {cri_endpoint: a, cri_endpoint: b}\n", `line 2: duplicate key "cri_endpoint"`},
		{"YAML keys that read the same", "nodes:\n- labels: {1: a, \"1\": b}\n", `nodes[0].labels: duplicate key "1"`},
		{"YAML keys that read the same (bool)", "options: {yes: 1, \"true\": 2}\n", `options: duplicate key "true"`},
		{"JSON duplicate top-level key", `{"name":"x","name":"foo"}`, `duplicate key "name" (line 1, column 13)`},
		{"JSON duplicate node key", "{\"nodes\":[{\"user\":\"u\"},\n{\"user\":\"u\",\"user\":\"v\"}]}", `nodes[1]: duplicate key "user" (line 2, column 13)`},
		{"JSON duplicate label", `{"nodes":[{"labels":{"a":"1","a":"2"}}]}`, `nodes[0].labels: duplicate key "a" (line 1, column 30)`},
		{"JSON duplicate taint key", `{"nodes":[{"taints":[{"key":"k","key":"j"}]}]}`, `nodes[0].taints[0]: duplicate key "key" (line 1, column 33)`},
		{"JSON duplicate in reboot", `{"reboot":{"reboot_command":["a"],"reboot_command":["b"]}}`, `reboot: duplicate key "reboot_command"`},

		{"JSON then more JSON", `{"name":"a"} {"name":"b"}`, "trailing data after the JSON value (line 1, column 14)"},
		{"JSON then a brace", "{\"name\":\"a\"}\n}", "trailing data after the JSON value (line 2, column 1)"},
		{"JSON then a bracket", `{"name":"a"}]`, "trailing data after the JSON value (line 1, column 13)"},
		{"second YAML document", "name: a\n---\nname: b\n", "more than one document"},
		{"second YAML document, empty", "name: a\n---\n", "more than one document"},
		{"not YAML", "name: [\n", "not valid YAML or JSON"},
		{"broken JSON", `{"name": "a" "x": 1}`, `not valid YAML or JSON: yaml: did not find expected ',' or '}'; ` +
			`as JSON: invalid character '"' after object key:value pair (line 1, column 14)`},
		{"null key", "~: 1\n", "top level: a null key has no JSON form"},
		{"NaN", "options: {a: .nan}\n", "options.a: NaN has no JSON form"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse(%q) = %v, want an error containing %q", c.doc, err, c.want)
			}
			if got != nil {
				t.Errorf("Parse returned a cluster with the error")
			}
		})
	}
}

// TestYAMLErrorsHaveNoJSONPosition: the field checks run on the JSON that
// YAML becomes, whose lines and columns would point nowhere in the input.
func TestYAMLErrorsHaveNoJSONPosition(t *testing.T) {
	_, err := Parse([]byte("name: a\nnodes:\n- {user: u, hostnmae: h}\n"))
	if want := `nodes[0]: unknown field "hostnmae"; did you mean hostname?`; err == nil || err.Error() != want {
		t.Errorf("Parse = %v, want %s", err, want)
	}
}

// TestParseJSONErrorsExactly: through Parse, each strict refusal of JSON is
// the whole message a cluster.yml author gets: the path of the object or
// value, the field, what to do, and the line and column.
func TestParseJSONErrorsExactly(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"name":"a","name":"b"}`, `duplicate key "name" (line 1, column 13)`},
		{`{"nodes":[{"labels":{"k.io/x":"1","k.io/x":"2"}}]}`, `nodes[0].labels: duplicate key "k.io/x" (line 1, column 35)`},
		{`{"options":{"kubelet":{"a":1,"a":2}}}`, `options.kubelet: duplicate key "a" (line 1, column 30)`},
		{`{"nodes":[{"Address":"10.0.0.1"}]}`, `nodes[0]: unknown field "Address"; did you mean address? (line 1, column 12)`},
		{`{"nodes":[{"taints":[{"Key":"k"}]}]}`, `nodes[0].taints[0]: unknown field "Key"; did you mean key? (line 1, column 23)`},
		{`{"Service_Subnet":"x"}`, `unknown field "Service_Subnet"; did you mean service_subnet? (line 1, column 2)`},
		{`{"nodes":[{"labels":{"a":1}}]}`, `nodes[0].labels.a: cannot use a number as string (line 1, column 26)`},
		{`{"nodes":[{"control_plane":"yes"}]}`, `nodes[0].control_plane: cannot use a string as bool (line 1, column 28)`},
		{`{"nodes":[null]}`, `nodes[0]: must be an object, got null`},
	} {
		_, err := Parse([]byte(c.doc))
		if err == nil || err.Error() != c.want {
			t.Errorf("Parse(%s) = %v\nwant %s", c.doc, err, c.want)
		}
	}
}

// TestParseAccepts: YAML that a JSON reading could mistake, and CKE v1.35's
// top-level fields.
func TestParseAccepts(t *testing.T) {
	for _, doc := range []string{
		"\"name\": a\nservice_subnet: 10.0.0.0/24\n", // a JSON string, then YAML
		"{name: a}\n",        // a YAML flow mapping
		"{\"name\": \"a\",}", // not JSON, but YAML
		"name: a\nnodes:\n- {labels: {a: '1', A: '2'}}\n",
		`{"nodes":[{"labels":{"a":"1"}},{"labels":{"a":"1"}}]}`, // the same key in two objects
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Errorf("Parse(%q) = %v", doc, err)
		}
	}
}

// cke135Fields are the top-level fields of cluster.yml at CKE v1.35
// (docs/cluster.md).
var cke135Fields = []string{"name", "nodes", "taint_control_plane", "control_plane_tolerations", "service_subnet",
	"dns_servers", "dns_service", "reboot", "repair", "sabakan", "trusted_rest_mappings", "options"}

func TestEveryCKEFieldIsModelled(t *testing.T) {
	if diff := cmp.Diff(cke135Fields, clusterNames); diff != "" {
		t.Errorf("Cluster's fields differ from CKE's (-CKE +Cluster):\n%s", diff)
	}
}

// TestCKEFieldsCarriedThrough: every top-level field of CKE v1.35 is read,
// and written back unchanged: the same bytes in JSON (up to indentation),
// the same values through YAML.
func TestCKEFieldsCarriedThrough(t *testing.T) {
	doc := `{"name":"a","nodes":[],"taint_control_plane":true,"control_plane_tolerations":["t"],` +
		`"service_subnet":"10.0.0.0/24","dns_servers":["8.8.8.8"],"dns_service":"kube-system/dns",` +
		`"reboot":{"reboot_command":["true"],"eviction_timeout_seconds":60,"protected_job_pods":{"matchLabels":{"a":"b"}}},` +
		`"repair":{"repair_procedures":[{"machine_types":["x"],"repair_operations":[]}],"max_concurrent_repairs":1.50},` +
		`"sabakan":{"spare_node_taint_key":"cke.cybozu.com/spare"},` +
		`"trusted_rest_mappings":[{"group":"g.example","version":"v1","kind":"T","resource":"ts","namespaced":true}],` +
		`"options":{"kubelet":{"cri_endpoint":"/x","config":{"a":1e3}}}}`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ name, got, want string }{
		{"reboot", string(c.Reboot), `{"reboot_command":["true"],"eviction_timeout_seconds":60,"protected_job_pods":{"matchLabels":{"a":"b"}}}`},
		{"repair", string(c.Repair), `{"repair_procedures":[{"machine_types":["x"],"repair_operations":[]}],"max_concurrent_repairs":1.50}`},
		{"sabakan", string(c.Sabakan), `{"spare_node_taint_key":"cke.cybozu.com/spare"}`},
		{"trusted_rest_mappings", string(c.TrustedRESTMappings), `[{"group":"g.example","version":"v1","kind":"T","resource":"ts","namespaced":true}]`},
		{"options", string(c.Options), `{"kubelet":{"cri_endpoint":"/x","config":{"a":1e3}}}`},
	} {
		if f.got != f.want {
			t.Errorf("%s = %s, want %s", f.name, f.got, f.want)
		}
	}
	out, err := c.MarshalIndentJSON()
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, out); err != nil {
		t.Fatal(err)
	}
	if compact.String() != doc {
		t.Errorf("JSON out differs from JSON in:\n%s\n%s", compact.String(), doc)
	}
	y, err := c.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(y)
	if err != nil {
		t.Fatalf("Parse(MarshalYAML) = %v\n%s", err, y)
	}
	for _, f := range []struct {
		name      string
		got, want json.RawMessage
	}{{"reboot", back.Reboot, c.Reboot}, {"repair", back.Repair, c.Repair}, {"sabakan", back.Sabakan, c.Sabakan},
		{"trusted_rest_mappings", back.TrustedRESTMappings, c.TrustedRESTMappings}, {"options", back.Options, c.Options}} {
		var got, want any
		if err := json.Unmarshal(f.got, &got); err != nil {
			t.Fatalf("%s after YAML: %v", f.name, err)
		}
		_ = json.Unmarshal(f.want, &want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s changed through YAML (-want +got):\n%s", f.name, diff)
		}
	}
	if cp := c.ShallowCopy(); string(cp.Sabakan) != string(c.Sabakan) || string(cp.TrustedRESTMappings) != string(c.TrustedRESTMappings) {
		t.Error("ShallowCopy drops sabakan or trusted_rest_mappings")
	}
}

func TestLeadingDocumentMarker(t *testing.T) {
	c, err := Parse([]byte("---\nname: a\nservice_subnet: 10.0.0.0/24\n"))
	if err != nil || c.Name != "a" {
		t.Errorf("Parse with a leading ---: %+v, %v", c, err)
	}
}

func TestRoundTrip(t *testing.T) {
	doc := `name: a
nodes:
- address: 10.0.0.1
  annotations: {note: "1"}
  control_plane: true
  labels: {tier: "2"}
  taints:
  - {effect: NoSchedule, key: k, value: v}
  user: u
options: {kubelet: {x: 1}}
service_subnet: 10.68.0.0/16
`
	c, err := Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	y, err := c.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	c2, err := Parse(y)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := c.MarshalIndentJSON()
	j2, _ := c2.MarshalIndentJSON()
	if string(j1) != string(j2) {
		t.Errorf("YAML round trip changed the cluster:\n%s\n%s", j1, j2)
	}
	if n := c.Nodes[0]; n.Name() != "10.0.0.1" || !n.ControlPlane || n.Taints[0].Value != "v" {
		t.Errorf("node %+v", n)
	}
	cl := c.Nodes[0].Clone()
	cl.Labels["tier"] = "changed"
	if c.Nodes[0].Labels["tier"] != "2" {
		t.Error("Clone shares labels")
	}
}
