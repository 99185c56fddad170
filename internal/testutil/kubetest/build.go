// Package kubetest runs a real kube-apiserver for tests: built from the
// module in mtest/kubeapiserver (k8s.io/kubernetes as a library) once per
// machine into a cache (internal/testutil/buildcache/programs), and
// started on loopback against an embedded etcd.
//
// When the API server cannot be built or started, a test that needs it is
// skipped with the reason, and fails instead when CI=true.
package kubetest

import (
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
	"github.com/ckegen/ckegen/internal/testutil/needed"
)

// Environment variables that steer the build.
const (
	// EnvBinary names a kube-apiserver binary to use instead of building one.
	EnvBinary = programs.EnvKubeAPIServer
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/kube-apiserver (~/.cache/... on Linux).
	EnvCacheDir = programs.EnvKubeAPIServerCache
)

// kubeAPIServer is the kube-apiserver, as programs.KubeAPIServer has it
// ($CKEGEN_KUBE_APISERVER, or the cache's, built first when missing).
var kubeAPIServer = needed.Program{What: "a real kube-apiserver", Build: programs.KubeAPIServer,
	Otherwise: "set " + EnvBinary + " to a built binary, or make the Go module proxy reachable"}

// Binary returns the path of a kube-apiserver binary, once per test
// process. When no binary can be had the test is skipped, or fails under
// CI.
func Binary(t testing.TB) string {
	t.Helper()
	return kubeAPIServer.Path(t)
}
