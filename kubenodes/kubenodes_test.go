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
