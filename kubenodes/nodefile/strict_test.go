package nodefile_test

import (
	"testing"

	"github.com/ckegen/ckegen/kubenodes/nodefile"
)

// TestParseStrict: ckegen's own format refuses a name given twice, a name
// in another case and an unknown member, naming the Node, the field and the
// position; a Kubernetes document skips the fields Parse does not read but
// still matches names exactly and refuses one given twice.
func TestParseStrict(t *testing.T) {
	const shape = `want [{"name": ADDRESS, "taints": [...]}], or Nodes as "kubectl get nodes -o json" writes them`
	cases := []struct{ name, in, want string }{
		{"name twice", `[{"name": "a", "name": "b"}]`, `line 1, column 16: [0]: duplicate key "name" (first at line 1, column 3)`},
		{"taint key twice", "[{\"name\": \"a\",\n \"taints\": [{\"key\": \"k\", \"key\": \"j\", \"effect\": \"NoSchedule\"}]}]",
			`line 2, column 26: [0].taints[0]: duplicate key "key" (first at line 2, column 14)`},
		{"name in another case", `[{"Name": "a"}]`, `line 1, column 3: [0]: unknown field "Name"; did you mean name?`},
		{"taint field in another case", `[{"name": "a", "taints": [{"Key": "k"}]}]`, `line 1, column 28: [0].taints[0]: unknown field "Key"; did you mean key?`},
		{"unknown member", `[{"name": "a", "taint": []}]`, `line 1, column 16: [0]: unknown field "taint"; did you mean taints?`},
		{"wrong kind", `[{"name": "a", "taints": {}}]`, `line 1, column 26: [0].taints: want an array of objects, got an object`},
		{"trailing data", "[]\n\n[]", "line 3, column 1: trailing data after the JSON value"},
		{"Kubernetes name twice", `{"kind": "Node", "apiVersion": "v1", "kind": "Node"}`, `line 1, column 38: duplicate key "kind" (first at line 1, column 2)`},
		{"Kubernetes name in another case", `{"Kind": "NodeList", "apiVersion": "v1", "items": []}`, "line 1, column 1: kind: missing (" + shape + ")"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := nodefile.Parse([]byte(c.in))
			if err == nil || err.Error() != c.want {
				t.Errorf("Parse = %v, %v\nwant the error %s", got, err, c.want)
			}
		})
	}
}
