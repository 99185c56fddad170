// Package kubetest runs a real kube-apiserver for tests: built from the
// module in mtest/kubeapiserver (k8s.io/kubernetes as a library) once per
// machine into a cache, and started on loopback against an embedded etcd.
//
// When the API server cannot be built or started, a test that needs it is
// skipped with the reason, and fails instead when CI=true.
package kubetest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// Environment variables that steer the build.
const (
	// EnvBinary names a kube-apiserver binary to use instead of building one.
	EnvBinary = "CKEGEN_KUBE_APISERVER"
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/kube-apiserver (~/.cache/... on Linux).
	EnvCacheDir = "CKEGEN_KUBE_APISERVER_CACHE"
)

var (
	buildOnce sync.Once
	buildPath string
	buildErr  error
)

// Binary returns the path of a kube-apiserver binary, as Build does, once
// per test process. When no binary can be had the test is skipped, or
// fails under CI.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildPath, buildErr = Build(nil)
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

// ModuleDir is the directory of the kube-apiserver module.
func ModuleDir() (string, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "mtest", "kubeapiserver")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the kube-apiserver module is missing: %w", err)
	}
	return dir, nil
}

// BuildTimeout bounds a build of the kube-apiserver (cold, several
// minutes on 2 cores).
const BuildTimeout = 45 * time.Minute

// Spec is the build of the kube-apiserver from the module, stamped with
// the Kubernetes version (as /version reports it) that the module
// requires, keyed by its go.mod, go.sum and main.go.
func Spec() (buildcache.Spec, error) {
	dir, err := ModuleDir()
	if err != nil {
		return buildcache.Spec{}, err
	}
	version, err := kubernetesVersion(dir)
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:     "the kube-apiserver",
		Cache:    "kube-apiserver",
		CacheEnv: EnvCacheDir,
		Module:   dir,
		Packages: []string{"."},
		Outputs:  []string{"kube-apiserver"},
		Flags:    []string{ldflags(version)},
		KeyFiles: []string{"main.go"},
		Timeout:  BuildTimeout,
	}, nil
}

// Build returns the path of a kube-apiserver binary: $CKEGEN_KUBE_APISERVER
// when set, otherwise the one built from the module, building it first
// when the cache has none for the module's current go.mod, go.sum and
// main.go. logf, when not nil, is told when it builds or waits for
// another process's build.
func Build(logf func(format string, args ...any)) (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return p, nil
	}
	spec, err := Spec()
	if err != nil {
		return "", err
	}
	spec.Logf = logf
	dir, err := buildcache.Build(spec)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, spec.Outputs[0]), nil
}

// ldflags are go build's -ldflags, stamping the binary with the
// Kubernetes version.
func ldflags(version string) string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const pkg = "k8s.io/component-base/version"
	return "-ldflags=-s -w" +
		" -X " + pkg + ".gitVersion=" + version +
		" -X " + pkg + ".gitMajor=" + major +
		" -X " + pkg + ".gitMinor=" + minor +
		" -X " + pkg + ".gitTreeState=clean"
}

// requirement is a requirement of k8s.io/kubernetes in go.mod: in a
// require block, or on a require line of its own.
var requirement = regexp.MustCompile(`(?m)^(?:require)?[ \t]*k8s\.io/kubernetes[ \t]+(v[0-9][^ \t\n]*)[ \t]*(?://.*)?$`)

// kubernetesVersion is the version of k8s.io/kubernetes that the module in
// dir requires, read from its go.mod (which keys the build).
func kubernetesVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	m := requirement.FindAllSubmatch(data, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s/go.mod: %d requirements of k8s.io/kubernetes, want one", dir, len(m))
	}
	return string(m[0][1]), nil
}
