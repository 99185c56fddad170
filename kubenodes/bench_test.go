package kubenodes_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ckegen/ckegen/internal/kubetest"
	"github.com/ckegen/ckegen/kubenodes"
)

// benchNode is a Node as CKE's sabakan integration makes them: labels and
// annotations from sabakan, and one node in ten tainted.
func benchNode(i int) *corev1.Node {
	addr := fmt.Sprintf("10.%d.%d.%d", 1+i/65536, i/256%256, i%256)
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: addr,
			Labels: map[string]string{
				"cke.cybozu.com/rack":          fmt.Sprint(i % 40),
				"cke.cybozu.com/index-in-rack": fmt.Sprint(i / 40),
				"cke.cybozu.com/role":          []string{"cs", "ss", "gpu"}[i%3],
				"topology.kubernetes.io/zone":  fmt.Sprintf("rack%d", i%40),
				"kubernetes.io/hostname":       addr,
				"node-role.kubernetes.io/cs":   "true",
			},
			Annotations: map[string]string{
				"cke.cybozu.com/serial":        fmt.Sprintf("SN%08d", i),
				"cke.cybozu.com/register-date": "2024-01-02T03:04:05Z",
				"cke.cybozu.com/retire-date":   "2029-01-02T03:04:05Z",
			},
		},
	}
	if i%10 == 0 {
		n.Spec.Taints = []corev1.Taint{
			{Key: "cke.cybozu.com/state", Value: "unreachable", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoExecute},
		}
	}
	return n
}

// BenchmarkList10000 lists and converts 10,000 Nodes from a real API
// server, in pages of the default size, with protobuf (the Reader's
// default) and with JSON.
func BenchmarkList10000(b *testing.B) {
	const total = 10000
	s := kubetest.Start(b)
	setup := rest.CopyConfig(s.Config)
	setup.QPS = -1 // no client-side throttling of the creates
	cs, err := kubernetes.NewForConfig(setup)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	var g errgroup.Group
	const workers = 16
	for w := range workers {
		g.Go(func() error {
			for i := w; i < total; i += workers {
				if _, err := cs.CoreV1().Nodes().Create(context.Background(), benchNode(i), metav1.CreateOptions{}); err != nil {
					return fmt.Errorf("creating Node %d: %w", i, err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	b.Logf("created %d Nodes in %s; kube-apiserver resident memory %s", total, time.Since(start).Round(time.Millisecond), rss(s.PID()))

	for _, c := range []struct{ name, contentType string }{{"protobuf", ""}, {"json", "application/json"}} {
		b.Run(c.name, func(b *testing.B) {
			cfg := rest.CopyConfig(s.Config)
			cfg.ContentType = c.contentType
			r := newReader(b, cfg, kubenodes.Options{Timeout: time.Minute})
			ctx := context.Background()
			for b.Loop() {
				got, err := r.List(ctx)
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
