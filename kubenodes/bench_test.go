package kubenodes_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/ckegen/ckegen/internal/testutil/kubetest"
	"github.com/ckegen/ckegen/kubenodes"
)

// BenchmarkList10000 lists and converts 10,000 Nodes from a real API
// server, in pages of the default size, with protobuf (the Reader's
// default) and with JSON.
func BenchmarkList10000(b *testing.B) {
	const total = 10000
	s := kubetest.Start(b)
	nodes := make([]*corev1.Node, total)
	for i := range nodes {
		nodes[i] = kubetest.Node(i, fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256))
	}
	s.CreateNodes(b, nodes)
	b.Logf("kube-apiserver resident memory %s", rss(s.PID()))

	for _, c := range []struct{ name, contentType string }{{"protobuf", ""}, {"json", "application/json"}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := rest.CopyConfig(s.Config)
			cfg.ContentType = c.contentType
			r := newReader(b, cfg, kubenodes.Options{Timeout: time.Minute})
			ctx := context.Background()
			for b.Loop() {
				got, err := r.NodeTaints(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if len(got) != total {
					b.Fatalf("listed %d Nodes, want %d", len(got), total)
				}
			}
		})
	}
	b.Logf("kube-apiserver resident memory after the lists: %s", rss(s.PID()))
}

func rss(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "unknown"
	}
	m := regexp.MustCompile(`VmRSS:\s*(\d+ kB)`).FindSubmatch(data)
	if m == nil {
		return "unknown"
	}
	return string(m[1])
}
