package cluster

import (
	"strings"
	"testing"
)

func TestParseStrict(t *testing.T) {
	cases := []struct{ doc, want string }{
		{"name: a\nnodes:\n- {address: 10.0.0.1, user: u, hostnmae: h}\n", `nodes[0]: unknown field "hostnmae"`},
		{"name: a\nservice_subnet: x\nsevice_subnet: y\n", `unknown field "sevice_subnet"`},
		{"name: a\nnodes: {}\n", "cannot use a object"},
		{"name: a\nnodes:\n- {address: 10.0.0.1, user: u, taints: [{key: k, effect: NoSchedule, extra: 1}]}\n", `nodes[0]: unknown field "extra"`},
		{`{"name":"a"} {"name":"b"}`, "not valid YAML or JSON"},
		{"name: a\n---\nname: b\n", "more than one document"},
		{"options: 3\n", "options: must be an object"},
	}
	for _, c := range cases {
		if _, err := Parse([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.doc, err, c.want)
		}
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
