package kubetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Node is the i-th Node of a benchmark, named name, as CKE's sabakan
// integration registers them: labels and annotations from sabakan, and
// one Node in ten (i%10 == 0) tainted with the state taint, which control
// planes tolerate, and example.com/maintenance, which they do not.
func Node(i int, name string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				"cke.cybozu.com/rack":          fmt.Sprint(i % 40),
				"cke.cybozu.com/index-in-rack": fmt.Sprint(i / 40),
				"cke.cybozu.com/role":          []string{"cs", "ss", "gpu"}[i%3],
				"topology.kubernetes.io/zone":  fmt.Sprintf("rack%d", i%40),
				"kubernetes.io/hostname":       name,
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

// CreateNodes creates the Nodes, 16 requests at a time and without
// client-side throttling, and logs how long it took.
func (s *Server) CreateNodes(tb testing.TB, nodes []*corev1.Node) {
	tb.Helper()
	cfg := rest.CopyConfig(s.Config)
	cfg.QPS = -1
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Now()
	var g errgroup.Group
	g.SetLimit(16)
	for _, n := range nodes {
		g.Go(func() error {
			if _, err := cs.CoreV1().Nodes().Create(context.Background(), n, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("creating Node %s: %w", n.Name, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		tb.Fatal(err)
	}
	tb.Logf("created %d Nodes in %s", len(nodes), time.Since(start).Round(time.Millisecond))
}

// SetTaints creates the Node named name with the taints, or replaces the
// taints of the existing one.
func (s *Server) SetTaints(tb testing.TB, name string, taints ...corev1.Taint) {
	tb.Helper()
	cs, err := kubernetes.NewForConfig(s.Config)
	if err != nil {
		tb.Fatal(err)
	}
	nodes := cs.CoreV1().Nodes()
	ctx := context.Background()
	n, err := nodes.Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		n = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
		_, err = nodes.Create(ctx, n, metav1.CreateOptions{})
	case err == nil:
		n.Spec.Taints = taints
		_, err = nodes.Update(ctx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		tb.Fatalf("setting the taints of Node %s: %v", name, err)
	}
}
