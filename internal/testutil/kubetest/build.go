// Package kubetest runs a real kube-apiserver for tests: built from the
// module in mtest/kubeapiserver (k8s.io/kubernetes as a library) once per
// machine into a cache, and started on loopback against an embedded etcd.
//
// When the API server cannot be built or started, a test that needs it is
// skipped with the reason, and fails instead when CI=true.
package kubetest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
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

// Binary returns the path of a kube-apiserver binary: $CKEGEN_KUBE_APISERVER
// when set, otherwise the one built from mtest/kubeapiserver, building it
// first when the cache has none for the module's current go.mod, go.sum and
// main.go. When no binary can be had the test is skipped, or fails under CI.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildPath, buildErr = binary()
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

// ModuleDir is the directory of the kube-apiserver module, found from this
// source file.
func ModuleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the kubetest package's source")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "mtest", "kubeapiserver")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the kube-apiserver module is missing: %w", err)
	}
	return dir, nil
}

// CachePath is where the binary built from the module's current sources
// is, or will be, kept.
func CachePath() (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	cache, err := buildcache.Dir(EnvCacheDir, "kube-apiserver")
	if err != nil {
		return "", err
	}
	key, err := buildcache.Key(dir, buildArgs("VERSION"), "go.mod", "go.sum", "main.go")
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, key, "kube-apiserver"), nil
}

func binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", EnvBinary, err)
		}
		return p, nil
	}
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	path, err := CachePath()
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("no go command to build kube-apiserver: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	// Other test processes may want the binary at the same time: one
	// builds, the others wait for it.
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	version, err := kubernetesVersion(dir)
	if err != nil {
		return "", err
	}
	tmp := path + ".tmp"
	cmd := exec.Command("go", append(buildArgs(version), "-o", tmp, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("building kube-apiserver in %s failed: %w\n%s", dir, err, tail(out, 40))
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return path, nil
}

// buildArgs are the arguments of go build, stamping the binary with the
// Kubernetes version (as /version reports it) that the module requires.
func buildArgs(version string) []string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const pkg = "k8s.io/component-base/version"
	return []string{"build", "-ldflags=-s -w" +
		" -X " + pkg + ".gitVersion=" + version +
		" -X " + pkg + ".gitMajor=" + major +
		" -X " + pkg + ".gitMinor=" + minor +
		" -X " + pkg + ".gitTreeState=clean"}
}

// kubernetesVersion is the version of k8s.io/kubernetes that the module in
// dir requires.
func kubernetesVersion(dir string) (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "k8s.io/kubernetes")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("the version of k8s.io/kubernetes in %s: %w", dir, err)
	}
	return strings.TrimSpace(string(out)), nil
}
