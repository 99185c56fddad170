package cluster

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/internal/strictjson"
)

// TestParseRefuses: each error is the whole message a cluster.yml author
// gets: the line and column in the input (YAML or JSON), the field's path,
// what is wrong in JSON's words and, where it can, what to do.
func TestParseRefuses(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"unknown node field", "name: a\nnodes:\n- {address: 10.0.0.1, user: u, hostnmae: h}\n",
			`line 3, column 32: nodes[0]: unknown field "hostnmae"; did you mean hostname?`},
		{"unknown top-level field", "name: a\nservice_subnet: x\nsevice_subnet: y\n",
			`line 3, column 1: unknown field "sevice_subnet"; did you mean service_subnet?`},
		{"unknown field, nothing close", "name: a\nfoo: 1\n", `line 2, column 1: unknown field "foo" (known fields: ` +
			`name, nodes, taint_control_plane, control_plane_tolerations, service_subnet, dns_servers, dns_service, reboot, repair, sabakan, trusted_rest_mappings, options)`},
		{"unknown taint field", "name: a\nnodes:\n- {address: 10.0.0.1, user: u, taints: [{key: k, effect: NoSchedule, extra: 1}]}\n",
			`line 3, column 70: nodes[0].taints[0]: unknown field "extra" (known fields: key, value, effect)`},
		{"field name in another case (JSON)", `{"Name": "a"}`, `line 1, column 2: unknown field "Name"; did you mean name?`},
		{"field name in another case (YAML)", "nodes:\n- {Control_Plane: true}\n", `line 2, column 4: nodes[0]: unknown field "Control_Plane"; did you mean control_plane?`},
		{"wrong kind", "name: a\nnodes: {}\n", "line 2, column 8: nodes: want an array of objects, got an object"},
		{"wrong kind of label", "nodes:\n- labels:\n    a: 1\n", "line 3, column 8: nodes[0].labels.a: want a string, got the number 1"},
		{"wrong kind through an alias", "x: &a {k: 1}\nnodes: *a\n", "line 2, column 8: nodes: want an array of objects, got an object"},
		{"not a cluster (YAML)", "- a\n", "line 1, column 1: want an object (a cluster.yml document), got an array"},
		{"not a cluster (JSON)", "[{}]", "line 1, column 1: want an object (a cluster.yml document), got an array"},
		{"options not an object", "options: 3\n", "line 1, column 10: options: want an object, got the number 3"},
		{"sabakan not an object", "sabakan: [k]\n", "line 1, column 10: sabakan: want an object, got an array"},
		{"trusted_rest_mappings not an array", "trusted_rest_mappings: {group: g}\n", "line 1, column 24: trusted_rest_mappings: want an array, got an object"},
		{"options not an object (JSON)", "{\n \"options\": \"x\"}", `line 2, column 13: options: want an object, got the string "x"`},
		{"a null node (YAML)", "nodes:\n- null\n", "line 2, column 3: nodes[0]: want an object, got null"},

		{"YAML duplicate top-level key", "name: x\nname: foo\n", `line 2, column 1: duplicate key "name" (first at line 1, column 1)`},
		{"YAML duplicate node key", "name: a\nnodes:\n- address: 10.0.0.1\n  user: u\n  address: 10.0.0.2\n", `line 5, column 3: nodes[0]: duplicate key "address" (first at line 3, column 3)`},
		{"YAML duplicate label", "nodes:\n- labels:\n    a: x\n    b: y\n    a: z\n", `line 5, column 5: nodes[0].labels: duplicate key "a" (first at line 3, column 5)`},
		{"YAML duplicate in options", "options:\n  kubelet: {cri_endpoint: a, cri_endpoint: b}\n", `line 2, column 30: options.kubelet: duplicate key "cri_endpoint" (first at line 2, column 13)`},
		{"YAML keys that read the same", "nodes:\n- labels: {1: a, \"1\": b}\n", `line 2, column 18: nodes[0].labels: duplicate key "1" (first at line 2, column 12)`},
		{"YAML keys that read the same (bool)", "options: {yes: 1, \"true\": 2}\n", `line 1, column 19: options: duplicate key "true" (first at line 1, column 11)`},
		{"JSON duplicate top-level key", `{"name":"x","name":"foo"}`, `line 1, column 13: duplicate key "name" (first at line 1, column 2)`},
		{"JSON duplicate node key", "{\"nodes\":[{\"user\":\"u\"},\n{\"user\":\"u\",\"user\":\"v\"}]}", `line 2, column 13: nodes[1]: duplicate key "user" (first at line 2, column 2)`},
		{"JSON duplicate label", `{"nodes":[{"labels":{"a":"1","a":"2"}}]}`, `line 1, column 30: nodes[0].labels: duplicate key "a" (first at line 1, column 22)`},
		{"JSON duplicate taint key", `{"nodes":[{"taints":[{"key":"k","key":"j"}]}]}`, `line 1, column 33: nodes[0].taints[0]: duplicate key "key" (first at line 1, column 23)`},
		{"JSON duplicate in reboot", `{"reboot":{"reboot_command":["a"],"reboot_command":["b"]}}`, `line 1, column 35: reboot: duplicate key "reboot_command" (first at line 1, column 12)`},

		{"JSON then more JSON", `{"name":"a"} {"name":"b"}`, "line 1, column 14: trailing data after the JSON value"},
		{"JSON then a brace", "{\"name\":\"a\"}\n}", "line 2, column 1: trailing data after the JSON value"},
		{"JSON then a bracket", `{"name":"a"}]`, "line 1, column 13: trailing data after the JSON value"},
		{"second YAML document", "name: a\n---\nname: b\n", "line 2, column 1: more than one document: a cluster.yml holds exactly one"},
		{"second YAML document, empty", "name: a\n---\n", "line 2, column 1: more than one document: a cluster.yml holds exactly one"},
		{"not YAML", "name: [\n", "line 1, column 7: not valid YAML: sequence end token ']' not found"},
		{"not YAML, first line", "name: a: b\n", "line 1, column 7: not valid YAML: mapping values are not allowed in this context"},
		{"broken JSON", `{"name": "a" "x": 1}`, `line 1, column 14: invalid character '"' after object value (expecting ',' or '}'); ` +
			`not YAML either: did not find expected ',' or '}' (line 1, column 14)`},
		{"truncated JSON", "{\"name\": \"a\",\n \"nodes\": [\n", `line 3, column 1: unexpected end of input: the JSON value is not complete; ` +
			`not YAML either: sequence end token ']' not found (line 2, column 11)`},
		{"null key", "~: 1\n", "line 1, column 1: a null key has no JSON form; quote it"},
		{"null key, nested", "options:\n  a: 1\n  ~: 2\n", "line 3, column 3: options: a null key has no JSON form; quote it"},
		{"NaN", "options: {a: .nan}\n", "line 1, column 14: options.a: NaN has no JSON form"},
		{"list as a key", "? [a]\n: 1\n", "line 1, column 3: not valid YAML: a mapping key must be a scalar (a string, a number, true or false), not a list or mapping"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse([]byte(c.doc))
			if err == nil || err.Error() != c.want {
				t.Fatalf("Parse(%q) = %v\nwant %s", c.doc, err, c.want)
			}
			if m := goTypeName.FindString(err.Error()); m != "" {
				t.Errorf("Parse(%q) = %v: names a Go type (%s)", c.doc, err, m)
			}
			if got != nil {
				t.Errorf("Parse returned a cluster with the error")
			}
		})
	}
}

// goTypeName matches what Go writes of a type: cluster.Cluster, []string,
// map[string]string, *Node, struct {...}, bool, int64.
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|\*[A-Za-z]|\b(u?int(8|16|32|64)?|float(32|64)|bool|interface)\b|Go value|Go type`)

// TestPlaceInTemplateSyntax: an error found after Parse, by its path, is
// placed in the document as written, YAML or JSON.
func TestPlaceInTemplateSyntax(t *testing.T) {
	p := strictjson.Path(nil).Key("nodes").Index(0).Key("user")
	for doc, want := range map[string]string{
		"name: a\nnodes:\n- user: x\n":                       "line 3, column 9: nodes[0].user: bad",
		"{\"name\": \"a\",\n\"nodes\": [{\"user\": \"x\"}]}": "line 2, column 20: nodes[0].user: bad",
	} {
		if _, err := Parse([]byte(doc)); err != nil {
			t.Fatal(err)
		}
		if err := Place(strictjson.Invalidf(p, "bad"), []byte(doc)); err.Error() != want {
			t.Errorf("Place in %q = %v, want %s", doc, err, want)
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
// (CKE's docs/cluster.md).
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
