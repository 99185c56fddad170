package nodefile_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/kubenodes/nodefile"
)

// kubectlList is what "kubectl get nodes -o json" writes, cut down.
const kubectlList = `{
    "apiVersion": "v1",
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "labels": {"kubernetes.io/hostname": "10.0.0.1"},
                "name": "10.0.0.1",
                "resourceVersion": "812"
            },
            "spec": {
                "taints": [
                    {"effect": "NoSchedule", "key": "node.kubernetes.io/unschedulable", "timeAdded": "2025-01-02T03:04:05Z"},
                    {"effect": "NoExecute", "key": "cke.cybozu.com/state", "value": "retiring"}
                ]
            },
            "status": {"addresses": [{"address": "10.0.0.1", "type": "InternalIP"}]}
        },
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "10.0.0.2"},
            "spec": {"podCIDR": "10.64.0.0/24"}
        }
    ],
    "kind": "List",
    "metadata": {"resourceVersion": ""}
}
`

var kubectlWant = map[string][]cluster.Taint{
	"10.0.0.1": {
		{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"},
		{Key: "cke.cybozu.com/state", Value: "retiring", Effect: "NoExecute"},
	},
	"10.0.0.2": nil,
}

func TestParse(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want map[string][]cluster.Taint
	}{
		{"nodes array", `[{"name": "10.0.0.1", "taints": [{"key": "example.com/a", "value": "v", "effect": "NoSchedule"}]}, {"name": "10.0.0.2"}, {"name": "10.0.0.3", "taints": []}]`,
			map[string][]cluster.Taint{"10.0.0.1": {{Key: "example.com/a", Value: "v", Effect: "NoSchedule"}}, "10.0.0.2": nil, "10.0.0.3": nil}},
		{"empty nodes array", ` [] `, map[string][]cluster.Taint{}},
		{"kubectl get nodes -o json", kubectlList, kubectlWant},
		{"NodeList from the API", `{"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [{"metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "PreferNoSchedule"}]}}]}`,
			map[string][]cluster.Taint{"n1": {{Key: "k", Effect: "PreferNoSchedule"}}}},
		{"empty List", `{"kind": "List", "apiVersion": "v1", "items": []}`, map[string][]cluster.Taint{}},
		{"one Node", `{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}, "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}` + "\n",
			map[string][]cluster.Taint{"n1": {{Key: "k", Effect: "NoExecute"}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := nodefile.Parse([]byte(c.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("taints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty", "  \n", "empty file"},
		{"not JSON", "\n  nodes: []", "line 2, column 3: not a JSON array or object"},
		{"null", "null", "line 1, column 1: not a JSON array or object"},
		{"YAML", "apiVersion: v1\nkind: List\n", "not a JSON array or object"},
		{"unknown field in nodes array", `[{"name": "a", "taint": []}]`, `unknown field "taint"`},
		{"empty name", `[{"taints": []}]`, "line 1, column 2: [0].name: must not be empty"},
		{"name twice", `[{"name": "a"}, {"name": "b"}, {"name": "a"}]`, `line 1, column 41: [2].name: Node "a" is named at [0].name too`},
		{"bad effect", `[{"name": "a", "taints": [{"key": "k", "effect": "NoSchedule"}, {"key": "k", "effect": "Never"}]}]`, `line 1, column 65: [0].taints[1]: effect "Never": must be one of`},
		{"bad key", `[{"name": "a", "taints": [{"key": "", "effect": "NoSchedule"}]}]`, `[0].taints[0]: key ""`},
		{"array of strings", `["10.0.0.1"]`, `line 1, column 2: [0]: want an object, got the string "10.0.0.1"`},
		{"truncated", `[{"name": "a"}`, "line 1, column 15: unexpected end of input"},
		{"trailing array", `[{"name": "a"}] [{"name": "b"}]`, "trailing data"},
		{"trailing garbage", kubectlList + "}", "trailing data"},
		{"object without kind", `{"control-plane-count": 0}`, "kind: missing"},
		{"other kind", `{"kind": "PodList", "apiVersion": "v1", "items": []}`, `line 1, column 10: kind: want List, NodeList or Node, got "PodList"`},
		{"other apiVersion", `{"kind": "NodeList", "apiVersion": "v2", "items": []}`, `apiVersion: want v1, got "v2"`},
		{"List of Pods", `{"kind": "List", "apiVersion": "v1", "items": [{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}]}`, `items[0].kind: want Node, got "Pod"`},
		{"List item without kind", `{"kind": "List", "apiVersion": "v1", "items": [{"apiVersion": "v1", "metadata": {"name": "p"}}]}`, `items[0].kind: want Node, got ""`},
		{"NodeList item of another kind", `{"kind": "NodeList", "apiVersion": "v1", "items": [{"kind": "Pod", "metadata": {"name": "p"}}]}`, `items[0].kind: want Node, got "Pod"`},
		{"item of another apiVersion", `{"kind": "List", "apiVersion": "v1", "items": [{"kind": "Node", "apiVersion": "v2", "metadata": {"name": "p"}}]}`, `items[0].apiVersion: want v1, got "v2"`},
		{"Node without name", `{"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}, {"metadata": {}}]}`, "items[1].metadata.name: must not be empty"},
		{"Node twice", `{"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}}, {"metadata": {"name": "a"}}]}`, `line 1, column 103: items[1].metadata.name: Node "a" is named at items[0].metadata.name too`},
		{"bad Node taint", `{"kind": "NodeList", "apiVersion": "v1", "items": [{"metadata": {"name": "a"}, "spec": {"taints": [{"key": "k"}]}}]}`, `items[0].spec.taints[0]: effect ""`},
		{"one Node without name", `{"kind": "Node", "apiVersion": "v1"}`, "metadata.name: must not be empty"},
		{"items not an array", `{"kind": "List", "apiVersion": "v1", "items": {}}`, "line 1, column 47: items: want an array of objects, got an object"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := nodefile.Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("Parse succeeded with %v; want an error containing %q", got, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q; want it to contain %q", err, c.want)
			}
			if got != nil {
				t.Errorf("Parse returned %v with its error; want nil", got)
			}
		})
	}
}
