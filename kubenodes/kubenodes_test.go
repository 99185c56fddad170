package kubenodes_test

import (
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/kubenodes"
)

func TestCountIntolerable(t *testing.T) {
	nodes := map[string][]cluster.Taint{
		"clean":     nil,
		"tolerated": {{Key: "node.kubernetes.io/not-ready", Effect: "NoExecute"}, {Key: "cke.cybozu.com/state", Value: "unreachable", Effect: "NoSchedule"}, {Key: "cke.cybozu.com/master", Effect: "PreferNoSchedule"}},
		"listed":    {{Key: "example.com/ok", Effect: "NoSchedule"}},
		"bad":       {{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"}, {Key: "example.com/bad", Effect: "NoSchedule"}},
		"spare":     {{Key: "example.com/spare", Effect: "NoSchedule"}},
	}
	if got := kubenodes.CountIntolerable(nodes, []string{"example.com/ok", "example.com/spare"}); got != 1 {
		t.Errorf("CountIntolerable with example.com/ok and example.com/spare tolerated = %d, want 1 (bad)", got)
	}
	if got := kubenodes.CountIntolerable(nodes, nil); got != 3 {
		t.Errorf("CountIntolerable with no tolerations = %d, want 3 (listed, bad, spare)", got)
	}
	if got := kubenodes.CountIntolerable(nil, nil); got != 0 {
		t.Errorf("CountIntolerable(nil) = %d, want 0", got)
	}
}

// TestParse: kubenodes.Parse is nodefile's (tested there), on a file of
// each format.
func TestParse(t *testing.T) {
	got, err := kubenodes.Parse([]byte(`[{"name": "10.0.0.1", "taints": [{"key": "k", "effect": "NoSchedule"}]}]`))
	if err != nil || len(got["10.0.0.1"]) != 1 {
		t.Errorf("Parse of a nodes array = %v, %v; want 10.0.0.1 with one taint", got, err)
	}
	got, err = kubenodes.Parse([]byte(`{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1"}}`))
	if err != nil || len(got) != 1 {
		t.Errorf("Parse of one Node = %v, %v; want n1", got, err)
	}
	if _, err := kubenodes.Parse([]byte(`[{"name": ""}]`)); err == nil {
		t.Error("Parse of a Node without a name succeeded; want an error")
	}
}
