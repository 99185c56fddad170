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
	const want = `want [{"name": ADDRESS, "taints": [...]}], or Nodes as "kubectl get nodes -o json" writes them: `
	cases := []struct{ name, in, want string }{
		{"name twice", `[{"name": "a", "name": "b"}]`, want + `[0]: duplicate key "name" (line 1, column 16)`},
		{"taint key twice", "[{\"name\": \"a\",\n \"taints\": [{\"key\": \"k\", \"key\": \"j\", \"effect\": \"NoSchedule\"}]}]",
			want + `[0].taints[0]: duplicate key "key" (line 2, column 26)`},
		{"name in another case", `[{"Name": "a"}]`, want + `[0]: unknown field "Name"; did you mean name? (line 1, column 3)`},
		{"taint field in another case", `[{"name": "a", "taints": [{"Key": "k"}]}]`, want + `[0].taints[0]: unknown field "Key"; did you mean key? (line 1, column 28)`},
		{"unknown member", `[{"name": "a", "taint": []}]`, want + `[0]: unknown field "taint"; did you mean taints? (line 1, column 16)`},
		{"wrong type", `[{"name": "a", "taints": {}}]`, want + `[0].taints: cannot unmarshal object into Go value of type []cluster.Taint (line 1, column 26)`},
		{"trailing data", "[]\n\n[]", "trailing data after the JSON document: one document per file (line 3, column 1)"},
		{"Kubernetes name twice", `{"kind": "Node", "apiVersion": "v1", "kind": "Node"}`, want + `duplicate key "kind" (line 1, column 38)`},
		{"Kubernetes name in another case", `{"Kind": "NodeList", "apiVersion": "v1", "items": []}`, "kind: missing (" + want[:len(want)-2] + ")"},
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
