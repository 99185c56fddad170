package strictjson_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/kubenodes/nodefile"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/template"
)

// goTypeName matches what Go writes of a type: cluster.Cluster, []string,
// map[string]string, *Node, struct {...}, int64, bool.
var goTypeName = regexp.MustCompile(`\b[a-z]+\.[A-Z]\w*\b|\[\]|map\[|\bstruct\b|\*[A-Za-z]|\b(u?int(8|16|32|64)?|float(32|64)|bool|interface)\b|Go value|Go type`)

// position is where a message says the problem is.
var position = regexp.MustCompile(`(^|: )line \d+(, column \d+)?: `)

// TestEveryInputErrorIsPlacedAndWordedInJSON: every parser of an input
// ckegen reads (a template, a cluster, a placement policy, constraints,
// query variables, a Nodes file, a sabakan REST body), given a document
// that is wrong in each way a document can be, says where, by line (and
// column), and names no Go type.
func TestEveryInputErrorIsPlacedAndWordedInJSON(t *testing.T) {
	const tmpl = "name: a\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/24\n"
	parsers := map[string]func([]byte) error{
		"template": func(b []byte) error { _, err := template.Parse(b); return err },
		"cluster":  func(b []byte) error { _, err := cluster.Parse(b); return err },
		"policy":   func(b []byte) error { _, err := policy.Parse(b); return err },
		"constraints": func(b []byte) error {
			_, err := constraints.Parse(b)
			return err
		},
		"variables": func(b []byte) error { _, err := sabakan.ParseVariables(b); return err },
		"nodes":     func(b []byte) error { _, err := nodefile.Parse(b); return err },
		"ipam": func(b []byte) error {
			_, err := fakesabakan.ReadIPAMConfig(strings.NewReader(string(b)))
			return err
		},
	}
	// Documents wrong for every parser: syntax, truncation, trailing data,
	// a repeated key, the wrong kind at the top.
	common := []string{`{"a": 1 "b": 2}`, `{"a": [1, 2`, `{} {}`, `{"a": 1, "a": 2}`, `[1]`, `"x"`, `true`, `1.5`}
	// And documents wrong for one: an unknown field, a value of the wrong
	// kind, YAML syntax and YAML types.
	own := map[string][]string{
		"template": {tmpl + "nodez: 1\n", tmpl + "options: {kubelet: {cri_endpiont: x}}\n", tmpl + "options: {etcd: {extra_args: 1}}\n",
			tmpl + "taint_control_plane: 'yes'\n", tmpl + "name: [\n", tmpl + "dns_servers: {a: 1}\n", "- a\n", tmpl + "---\n"},
		"cluster": {"nodes:\n- {labels: {a: 1}}\n", "nodes: [1]\n", "name: {}\n", "a: b: c\n", "nodes:\n- taints: [{key: k, efect: x}]\n",
			"{\"nodes\": [{\"control_plane\": 1}]}", "control_plane_tolerations: [1.5]\n", "options: {x: .nan}\n"},
		"policy": {"placements: {gpu: {constraints: x}}\n", "stickiness: x\n", "providers: {p: {timeout: 5}}\n", "metrics: {m: {max: true}}\n",
			"placements: [\n", "placements: {gpu: {groups: [{nam: x}]}}\n", "stickiness: 1\nstickiness: 2\n", "- 1\n"},
		"constraints": {`{"control-plane-count": "3"}`, `{"control-plane-count": 1.5}`, `{"replicas": 1}`, `{"minimum-workers": 1e99}`, `null`},
		"variables":   {`{"having": {"racks": ["1"]}}`, `{"having": {"labels": [1]}}`, `{"having": 3}`, `{"having": {"minDaysBeforeRetire": "x"}}`, `null`},
		"nodes":       {`[{"name": "a", "taints": {}}]`, `[{"name": 1}]`, `[1]`, `{"kind": "List", "apiVersion": "v1", "items": {}}`, `{"kind": ["x"]}`},
		"ipam":        {`{"max-nodes-in-rack": -1}`, `{"max-nodes-in-rack": "1"}`, `{"node-ipv4-pool": 1}`, `{"max-nodes-in-rak": 1}`},
	}
	for name, parse := range parsers {
		for _, in := range append(append([]string(nil), common...), own[name]...) {
			err := parse([]byte(in))
			if err == nil {
				t.Errorf("%s: %q accepted", name, in)
				continue
			}
			msg := err.Error()
			if !position.MatchString(msg) {
				t.Errorf("%s: %q: %v: no line", name, in, err)
			}
			if m := goTypeName.FindString(msg); m != "" {
				t.Errorf("%s: %q: %v: names a Go type (%s)", name, in, err, m)
			}
		}
	}
}
