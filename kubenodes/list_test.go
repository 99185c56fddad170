package kubenodes_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/kubetest"
	"github.com/ckegen/ckegen/kubenodes"
)

// node builds a Node with taints.
func node(name string, ts ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: ts}}
}

func taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// createNodes creates Nodes with exactly the taints given: the API server
// adds node.kubernetes.io/not-ready to a new Node (admission plugin
// TaintNodesByCondition), so the taints are set again by an update.
func createNodes(t testing.TB, cfg *rest.Config, nodes ...*corev1.Node) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, n := range nodes {
		created, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating Node %s: %v", n.Name, err)
		}
		created.Spec.Taints = n.Spec.Taints
		if _, err := cs.CoreV1().Nodes().Update(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting the taints of Node %s: %v", n.Name, err)
		}
	}
}

func newReader(t testing.TB, cfg *rest.Config, o kubenodes.Options) *kubenodes.Reader {
	t.Helper()
	r, err := kubenodes.NewReader(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestListTaints: every Node is listed, through the kubeconfig file, with
// its taints as the API server has them (order, value, effect).
func TestListTaints(t *testing.T) {
	s := kubetest.Start(t)
	now := metav1.NewTime(time.Now())
	createNodes(t, s.Config,
		node("10.0.0.1", taint("node.kubernetes.io/unschedulable", "", corev1.TaintEffectNoSchedule),
			corev1.Taint{Key: "example.com/gone", Value: "soon", Effect: corev1.TaintEffectNoExecute, TimeAdded: &now},
			taint("cke.cybozu.com/state", "retiring", corev1.TaintEffectNoExecute)),
		node("10.0.0.2"),
		node("worker-3", taint("example.com/prefer", "", corev1.TaintEffectPreferNoSchedule)),
	)
	cfg, err := kubenodes.LoadKubeconfig(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	got, err := newReader(t, cfg, kubenodes.Options{}).NodeTaints(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	want := map[string][]cluster.Taint{
		"10.0.0.1": {
			{Key: "node.kubernetes.io/unschedulable", Effect: "NoSchedule"},
			{Key: "example.com/gone", Value: "soon", Effect: "NoExecute"},
			{Key: "cke.cybozu.com/state", Value: "retiring", Effect: "NoExecute"},
		},
		"10.0.0.2": nil,
		"worker-3": {{Key: "example.com/prefer", Effect: "PreferNoSchedule"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if n := kubenodes.CountIntolerable(got, nil); n != 2 {
		t.Errorf("CountIntolerable = %d, want 2 (10.0.0.1, worker-3)", n)
	}
}

// requestLog records the Node list requests a client makes.
type requestLog struct {
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.URL.Path == "/api/v1/nodes" {
			l.mu.Lock()
			l.urls = append(l.urls, req.URL.RawQuery)
			l.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestListPages: more Nodes than a page hold are listed in pages of the
// page size, each asking for the next with the server's continue token.
func TestListPages(t *testing.T) {
	s := kubetest.Start(t)
	const total, page = 25, 10
	want := map[string][]cluster.Taint{}
	var nodes []*corev1.Node
	for i := range total {
		name := fmt.Sprintf("node-%02d", i)
		k := fmt.Sprintf("example.com/n%d", i)
		nodes = append(nodes, node(name, taint(k, "", corev1.TaintEffectNoSchedule)))
		want[name] = []cluster.Taint{{Key: k, Effect: "NoSchedule"}}
	}
	createNodes(t, s.Config, nodes...)

	var log requestLog
	cfg := rest.CopyConfig(s.Config)
	cfg.WrapTransport = log.wrap
	got, err := newReader(t, cfg, kubenodes.Options{PageSize: page}).NodeTaints(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if len(log.urls) != 3 {
		t.Fatalf("%d list requests %q; want 3 pages of at most %d", len(log.urls), log.urls, page)
	}
	for i, q := range log.urls {
		if !strings.Contains(q, "limit=10") {
			t.Errorf("request %d: query %q has no limit=10", i, q)
		}
		if hasContinue := strings.Contains(q, "continue="); hasContinue != (i > 0) {
			t.Errorf("request %d: query %q: continue token present = %v, want %v", i, q, hasContinue, i > 0)
		}
	}
}

// TestUnreachable: a stopped server, and one that accepts connections but
// does not answer, give ErrUnreachable within the timeout; the same
// Reader lists again once the server is back.
func TestUnreachable(t *testing.T) {
	s := kubetest.Start(t)
	createNodes(t, s.Config, node("10.0.0.1", taint("example.com/a", "", corev1.TaintEffectNoSchedule)))
	want := map[string][]cluster.Taint{"10.0.0.1": {{Key: "example.com/a", Effect: "NoSchedule"}}}
	const timeout = 2 * time.Second
	r := newReader(t, s.Config, kubenodes.Options{Timeout: timeout})
	ctx := context.Background()

	list := func(what string) {
		t.Helper()
		got, err := r.NodeTaints(ctx)
		if err != nil {
			t.Fatalf("List %s: %v", what, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("List %s (-want +got):\n%s", what, diff)
		}
	}
	unreachable := func(what, msg string, minTime time.Duration) {
		t.Helper()
		start := time.Now()
		got, err := r.NodeTaints(ctx)
		took := time.Since(start)
		if !errors.Is(err, kubenodes.ErrUnreachable) {
			t.Fatalf("List %s: %v, %v; want an error wrapping ErrUnreachable", what, got, err)
		}
		if !strings.Contains(err.Error(), s.URL) || !strings.Contains(err.Error(), msg) {
			t.Errorf("List %s: error %q; want it to name %s and say %q", what, err, s.URL, msg)
		}
		if took < minTime || took > timeout+time.Second {
			t.Errorf("List %s took %s; want between %s and the timeout %s (+1 s)", what, took, minTime, timeout)
		}
	}

	list("before")
	s.Stop()
	unreachable("of a stopped server", "listing Nodes (page 1)", 0)
	s.Restart()
	list("after a restart")

	s.Pause()
	unreachable("of a paused server", "no answer within 2s", timeout)
	s.Resume()
	list("after the server resumed")
}

// TestListErrors: an error status from the server is ErrUnreachable too,
// and still says what the server said; a canceled caller is not.
func TestListErrors(t *testing.T) {
	s := kubetest.Start(t)
	bad := rest.CopyConfig(s.Config)
	bad.BearerToken = "not-a-token"
	_, err := newReader(t, bad, kubenodes.Options{}).NodeTaints(context.Background())
	if !errors.Is(err, kubenodes.ErrUnreachable) || !apierrors.IsUnauthorized(err) {
		t.Errorf("List with a bad token: %v; want ErrUnreachable wrapping Unauthorized", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = newReader(t, s.Config, kubenodes.Options{}).NodeTaints(ctx)
	if !errors.Is(err, context.Canceled) || errors.Is(err, kubenodes.ErrUnreachable) {
		t.Errorf("List with a canceled context: %v; want context.Canceled, not ErrUnreachable", err)
	}
}

func TestNewReaderErrors(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	for _, o := range []kubenodes.Options{{Timeout: -time.Second}, {PageSize: -1}} {
		if _, err := kubenodes.NewReader(cfg, o); err == nil {
			t.Errorf("NewReader(%+v) succeeded; want an error", o)
		}
	}
	if _, err := kubenodes.LoadKubeconfig(t.TempDir() + "/missing"); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("LoadKubeconfig of a missing file: %v; want an error naming it", err)
	}
}

// TestKubeconfigErrors: a file that is no kubeconfig is refused at the
// line and column of what is wrong, in YAML's and JSON's words; client-go
// named Go's types ("Go struct field Config.clusters of type
// []v1.NamedCluster", "struct { APIVersion string ... }").
func TestKubeconfigErrors(t *testing.T) {
	goType := regexp.MustCompile(`\b[a-z0-9]+\.[A-Z]\w*\b|\b[A-Z]\w*\.[a-z]\w*\b|\[\]|map\[|\bstruct\b|interface \{|Go (value|type|struct)`)
	for _, c := range []struct{ content, want string }{
		{"- a\n", "line 1, column 1: want an object (a kubeconfig: apiVersion, kind, clusters, users, contexts), got an array"},
		{"just text\n", `line 1, column 1: want an object (a kubeconfig: apiVersion, kind, clusters, users, contexts), got the string "just text"`},
		{"apiVersion: v1\nkind: Config\nclusters: 5\n", "line 3, column 11: clusters: want an array of objects, got the number 5"},
		{"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: [x]}\n", "line 5, column 21: clusters[0].cluster.server: want a string, got an array"},
		{"apiVersion: v1\nclusters: [\n", "line 2, column 11: not valid YAML: sequence end token ']' not found"},
	} {
		p := filepath.Join(t.TempDir(), "kubeconfig")
		if err := os.WriteFile(p, []byte(c.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := kubenodes.LoadKubeconfig(p)
		if want := "kubeconfig " + p + ": " + c.want; err == nil || err.Error() != want {
			t.Errorf("%q: %v, want %q", c.content, err, want)
		}
		if err != nil && goType.MatchString(err.Error()) {
			t.Errorf("%q: %v names a Go type (%s)", c.content, err, goType.FindString(err.Error()))
		}
	}
}
