package tick

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/kubetest"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// kubeFixture is the daemon's fixture plus a real kube-apiserver holding
// a Node for every member of the cluster the first tick built.
type kubeFixture struct {
	*fixture
	api    *kubetest.Server
	leader string
	d      *testStep
}

func newKubeFixture(t *testing.T, tmpl string) *kubeFixture {
	t.Helper()
	api := kubetest.Start(t)
	f := newFixture(t)
	if tmpl != "" {
		must(t, f.st.SetTemplate(context.Background(), []byte(tmpl)))
	}
	cfg, err := kubenodes.LoadKubeconfig(api.Kubeconfig)
	must(t, err)
	r, err := kubenodes.NewReader(cfg, kubenodes.Options{Timeout: 2 * time.Second, PageSize: 3})
	must(t, err)
	k := &kubeFixture{fixture: f, api: api, leader: f.lead(t)}
	k.d = f.step("d", func(c *testConfig) { c.Kubernetes = kubenodes.APIView(r, nil) })
	// No Nodes yet: the first tick builds the cluster.
	must(t, k.d.runOnce(context.Background(), k.leader))
	for _, n := range f.cluster(t).Nodes {
		k.setTaints(t, n.Address, nil)
	}
	return k
}

// setTaints creates the Node named addr, or replaces its taints.
func (k *kubeFixture) setTaints(t *testing.T, addr string, ts []corev1.Taint) {
	t.Helper()
	k.api.SetTaints(t, addr, ts...)
}

func cps(c *cluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.ControlPlane {
			out = append(out, n.Address)
		}
	}
	return out
}

// TestKubernetesTaintReplacesControlPlane: a control plane whose Node
// carries a taint it does not tolerate is replaced; the taints docs/design.md 6.4
// tolerates keep the others.
func TestKubernetesTaintReplacesControlPlane(t *testing.T) {
	tmpl := strings.Replace(testTemplate, `"service_subnet"`, `"control_plane_tolerations":["example.com/tolerated"],"service_subnet"`, 1)
	k := newKubeFixture(t, tmpl)
	ctx := context.Background()
	before := cps(k.cluster(t))
	if len(before) != 3 {
		t.Fatalf("control planes %v", before)
	}
	tolerated := [][]corev1.Taint{
		{{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute}},
		{{Key: "cke.cybozu.com/state", Value: "unhealthy", Effect: corev1.TaintEffectNoSchedule},
			{Key: "example.com/tolerated", Effect: corev1.TaintEffectNoSchedule}},
	}
	k.setTaints(t, before[0], tolerated[0])
	k.setTaints(t, before[1], tolerated[1])
	_, rev, _ := k.st.GetCluster(ctx)
	must(t, k.d.runOnce(ctx, k.leader))
	if _, again, _ := k.st.GetCluster(ctx); again != rev {
		t.Fatalf("tolerated taints changed the cluster: control planes %v, were %v", cps(k.cluster(t)), before)
	}

	k.setTaints(t, before[2], []corev1.Taint{{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}})
	must(t, k.d.runOnce(ctx, k.leader))
	after := cps(k.cluster(t))
	if len(after) != 3 || after[0] != before[0] || after[1] != before[1] || contains(after, before[2]) {
		t.Fatalf("control planes %v after %s was tainted example.com/broken, were %v", after, before[2], before)
	}
	st, err := k.st.GetStatus(ctx)
	must(t, err)
	want := storage.KubernetesStatus{Read: true, Source: kubenodes.SourceAPI, Nodes: 8, Intolerable: 1}
	if st.Result != reason.OK || st.Kubernetes == nil || *st.Kubernetes != want {
		t.Errorf("status %+v, kubernetes %+v, want %+v", st, st.Kubernetes, want)
	}
	if got := series(scrape(t, k.d), "ckegen_kubernetes_nodes_intolerable"); len(got) != 1 || got[0] != "ckegen_kubernetes_nodes_intolerable 1" {
		t.Errorf("metrics: %q", got)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestKubernetesUnreachable: with the API server stopped the tick fails
// with KUBERNETES_UNREACHABLE and writes nothing, even when sabakan has a
// change; after a restart the change is made.
func TestKubernetesUnreachable(t *testing.T) {
	k := newKubeFixture(t, "")
	ctx := context.Background()
	// A change to make: one more worker wanted.
	c, _ := k.st.GetConstraints(ctx)
	c.MinimumWorkers++
	must(t, k.st.SetConstraints(ctx, c))

	k.api.Stop()
	before, _ := k.st.GetClusterRaw(ctx)
	err := k.d.runOnce(ctx, k.leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.KubernetesUnreachable || !errors.Is(err, kubenodes.ErrUnreachable) {
		t.Fatalf("error %v, want %s", err, reason.KubernetesUnreachable)
	}
	st, err := k.st.GetStatus(ctx)
	must(t, err)
	if st.Result != reason.Failing || st.Reason != reason.KubernetesUnreachable || st.Kubernetes == nil || st.Kubernetes.Read {
		t.Errorf("status %+v, kubernetes %+v", st, st.Kubernetes)
	}
	if after, _ := k.st.GetClusterRaw(ctx); string(after) != string(before) {
		t.Error("a tick without kubenodes.Kubernetes wrote a cluster")
	}
	if h, _ := k.st.History(ctx); len(h) != 1 {
		t.Errorf("history has %d changes, want the first one only", len(h))
	}

	k.api.Restart()
	must(t, k.d.runOnce(ctx, k.leader))
	st, err = k.st.GetStatus(ctx)
	must(t, err)
	if st.Result != reason.OK || len(k.cluster(t).Nodes) != 9 {
		t.Errorf("after the restart: status %+v, %d nodes", st, len(k.cluster(t).Nodes))
	}
}

// TestKubernetesSparePromotedFirst: with spare_node_taint_key, a control
// plane with an intolerable taint is replaced by the worker whose Node
// carries the spare taint, and the spare taint counts as tolerated.
func TestKubernetesSparePromotedFirst(t *testing.T) {
	tmpl := strings.Replace(testTemplate, `"service_subnet"`, `"sabakan":{"spare_node_taint_key":"example.com/spare"},"service_subnet"`, 1)
	k := newKubeFixture(t, tmpl)
	ctx := context.Background()
	c := k.cluster(t)
	before := cps(c)
	var spare string
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			spare = n.Address // the last worker: not the one a score would pick first
		}
	}
	k.setTaints(t, spare, []corev1.Taint{{Key: "example.com/spare", Effect: corev1.TaintEffectNoSchedule}})
	_, rev, _ := k.st.GetCluster(ctx)
	must(t, k.d.runOnce(ctx, k.leader))
	if _, again, _ := k.st.GetCluster(ctx); again != rev {
		t.Fatalf("a spare worker alone changed the cluster: control planes %v, were %v", cps(k.cluster(t)), before)
	}

	k.setTaints(t, before[0], []corev1.Taint{{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}})
	must(t, k.d.runOnce(ctx, k.leader))
	after := cps(k.cluster(t))
	if contains(after, before[0]) || !contains(after, spare) {
		t.Fatalf("control planes %v after %s was tainted, were %v; want spare %s promoted", after, before[0], before, spare)
	}
	st, err := k.st.GetStatus(ctx)
	must(t, err)
	if len(st.LastChanges) != 2 || !strings.Contains(st.LastChanges[1].Reason, "spare node") {
		t.Errorf("changes %+v, want the spare node's promotion", st.LastChanges)
	}
	if want := (storage.KubernetesStatus{Read: true, Source: kubenodes.SourceAPI, Nodes: 8, Intolerable: 1}); st.Kubernetes == nil || *st.Kubernetes != want {
		t.Errorf("kubernetes %+v, want %+v (the spare taint is tolerated)", st.Kubernetes, want)
	}
}
