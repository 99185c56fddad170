package main

import (
	"strings"
	"testing"

	"github.com/ckegen/ckegen/storage"
)

// TestStatusTableKubernetes: the status shows what the last tick read
// from Kubernetes, and nothing about it without Kubernetes access.
func TestStatusTableKubernetes(t *testing.T) {
	for _, c := range []struct {
		kube *storage.KubernetesStatus
		want string
	}{
		{nil, ""},
		{&storage.KubernetesStatus{}, "KUBERNETES    not read\n"},
		{&storage.KubernetesStatus{Read: true, Nodes: 12, Intolerable: 2}, "KUBERNETES    read: 12 nodes, 2 with intolerable taints\n"},
	} {
		var b strings.Builder
		if err := statusTable(&b, storage.Status{Result: "ok", Leader: "h", Kubernetes: c.kube}); err != nil {
			t.Fatal(err)
		}
		got := ""
		for _, l := range strings.SplitAfter(b.String(), "\n") {
			if strings.HasPrefix(l, "KUBERNETES") {
				got += l
			}
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q in\n%s", c.kube, got, c.want, b.String())
		}
	}
}
