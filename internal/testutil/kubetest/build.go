// Package kubetest runs a real kube-apiserver for tests: built from the
// module in mtest/kubeapiserver (k8s.io/kubernetes as a library) once per
// machine into a cache (internal/testutil/buildcache/programs), and
// started on loopback against an embedded etcd.
//
// When the API server cannot be built or started, a test that needs it is
// skipped with the reason, and fails instead when CI=true.
package kubetest

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
)

// Environment variables that steer the build.
const (
	// EnvBinary names a kube-apiserver binary to use instead of building one.
	EnvBinary = programs.EnvKubeAPIServer
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/kube-apiserver (~/.cache/... on Linux).
	EnvCacheDir = programs.EnvKubeAPIServerCache
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of a kube-apiserver binary, as
// programs.KubeAPIServer does ($CKEGEN_KUBE_APISERVER, or the cache's,
// built first when missing), once per test process. When no binary can be
// had the test is skipped, or fails under CI.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildPath, buildErr = programs.KubeAPIServer(nil)
		if buildErr == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("kube-apiserver built in %s: %s", d.Round(time.Second), buildPath)
			}
		}
	})
	if buildErr != nil {
		unavailable(t, buildErr)
	}
	return buildPath
}

// unavailable skips the test, or fails it under CI, because the API server
// cannot be had.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("kube-apiserver needed and not available under CI: %v", err)
	}
	t.Skipf("skipped: this test needs a real kube-apiserver, and %v (set %s to a built binary, or make the Go module proxy reachable; under CI=true this fails)", err, EnvBinary)
}
