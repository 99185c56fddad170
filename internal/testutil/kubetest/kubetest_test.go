package kubetest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/ckegen/ckegen/internal/testutil/kubetest"
)

// TestStart: the server answers through the kubeconfig file, keeps its
// objects across a restart, and is gone after Stop. Run alone, this test
// builds the API server into the cache:
//
//	go test -run TestStart -timeout 30m ./internal/testutil/kubetest/
func TestStart(t *testing.T) {
	s := kubetest.Start(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("version through the kubeconfig file: %v", err)
	}
	if v.Major != "1" || v.Minor != "34" {
		t.Errorf("server version %s.%s, want 1.34", v.Major, v.Minor)
	}
	if data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.PID())); err == nil {
		if m := regexp.MustCompile(`VmRSS:\s*(\d+ kB)`).FindSubmatch(data); m != nil {
			t.Logf("kube-apiserver ready, resident memory %s", m[1])
		}
	}

	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	s.Stop()
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err == nil {
		t.Fatal("the server answered after Stop")
	}
	s.Restart()
	if _, err := cs.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{}); err != nil {
		t.Fatalf("the namespace after a restart: %v", err)
	}
}

// TestUnavailable: without an API server, a test that needs one is skipped
// with the reason, and fails under CI=true.
func TestUnavailable(t *testing.T) {
	if os.Getenv("KUBETEST_CHILD") == "1" {
		kubetest.Start(t)
		t.Fatal("Start returned without an API server")
	}
	missing := filepath.Join(t.TempDir(), "no-kube-apiserver")
	for _, c := range []struct {
		ci       string
		wantExit int
		want     string
	}{
		{"", 0, "--- SKIP: TestUnavailable"},
		{"true", 1, "--- FAIL: TestUnavailable"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailable$", "-test.v")
		cmd.Env = append(os.Environ(), "KUBETEST_CHILD=1", "CI="+c.ci, kubetest.EnvBinary+"="+missing)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.wantExit || !strings.Contains(string(out), c.want) || !strings.Contains(string(out), missing) {
			t.Errorf("CI=%q: exit %d, output:\n%s\nwant exit %d, %q and the missing binary named", c.ci, code, out, c.wantExit, c.want)
		}
	}
}
