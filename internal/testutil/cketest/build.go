// Package cketest provides CKE v1.35.4's own `cke` server and `ckecli` for
// tests that run ckegen beside a real CKE (docs/beside-cke.md): built from the module
// in ckemodule/ (github.com/cybozu-go/cke at v1.35.4 with the dependency
// versions of CKE's release) once per machine into a cache, as
// internal/testutil/kubetest caches the kube-apiserver.
//
// CKE v1.35.4 comes from ../shared/goproxy (a file module proxy) when it
// exists beside the repository, otherwise from the usual proxy. When the
// binaries cannot be had, a test that needs them is skipped with the
// reason, and fails instead when CI=true.
package cketest

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
	// EnvBinDir names a directory holding CKE's cke and ckecli to use
	// instead of building them.
	EnvBinDir = "CKEGEN_CKE_BIN_DIR"
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/cke (~/.cache/... on Linux).
	EnvCacheDir = "CKEGEN_CKE_CACHE"
)

// Version is the CKE release the module builds.
const Version = "v1.35.4"

// The packages of CKE's two commands.
const (
	pkgServer = "github.com/cybozu-go/cke/pkg/cke"
	pkgCLI    = "github.com/cybozu-go/cke/pkg/ckecli"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries returns the paths of CKE's cke server and ckecli: those in
// $CKEGEN_CKE_BIN_DIR when set, otherwise the ones built from ckemodule/,
// building them first when the cache has none for the module's current
// go.mod and go.sum. When they cannot be had the test is skipped, or fails
// under CI.
func Binaries(t testing.TB) (cke, ckecli string) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildDir, buildErr = binaries()
		if buildErr == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("CKE %s's cke and ckecli built in %s: %s", Version, d.Round(time.Second), buildDir)
			}
		}
	})
	if buildErr != nil {
		unavailable(t, buildErr)
	}
	return filepath.Join(buildDir, "cke"), filepath.Join(buildDir, "ckecli")
}

// unavailable skips the test, or fails it under CI, because CKE's
// binaries cannot be had.
func unavailable(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("CKE %s's cke and ckecli needed and not available under CI: %v", Version, err)
	}
	t.Skipf("skipped: this test needs CKE %s's own cke and ckecli, and %v (set %s to a directory holding both, or make github.com/cybozu-go/cke %s downloadable: ../shared/goproxy or the Go module proxy; under CI=true this fails)",
		Version, err, EnvBinDir, Version)
}

// ModuleDir is the directory of the module that builds CKE's commands,
// found from this source file.
func ModuleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cannot locate the cketest package's source")
	}
	dir := filepath.Join(filepath.Dir(file), "ckemodule")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the CKE build module is missing: %w", err)
	}
	return dir, nil
}

// CacheDir is where the binaries built from the module's current go.mod
// and go.sum are, or will be, kept.
func CacheDir() (string, error) {
	dir, err := ModuleDir()
	if err != nil {
		return "", err
	}
	cache, err := buildcache.Dir(EnvCacheDir, "cke")
	if err != nil {
		return "", err
	}
	key, err := buildcache.Key(dir, buildArgs("DIR"), "go.mod", "go.sum")
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, Version+"-"+key), nil
}

// buildArgs are go build's arguments, writing into dir.
func buildArgs(dir string) []string {
	return []string{"build", "-trimpath", "-ldflags=-s -w", "-o", dir + string(filepath.Separator), pkgServer, pkgCLI}
}

// complete reports whether dir holds both binaries.
func complete(dir string) bool {
	for _, name := range []string{"cke", "ckecli"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

func binaries() (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		if !complete(d) {
			return "", fmt.Errorf("%s=%s does not hold both cke and ckecli", EnvBinDir, d)
		}
		return d, nil
	}
	mod, err := ModuleDir()
	if err != nil {
		return "", err
	}
	dir, err := CacheDir()
	if err != nil {
		return "", err
	}
	if complete(dir) {
		return dir, nil
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Errorf("no go command to build CKE: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	// Other test processes may want the binaries at the same time: one
	// builds, the others wait for it.
	lock, err := os.OpenFile(dir+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if complete(dir) {
		return dir, nil
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	env, err := buildEnv(mod)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", buildArgs(tmp)...)
	cmd.Dir = mod
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("building CKE %s's cke and ckecli in %s failed: %w\n%s", Version, mod, err, tail(out, 40))
	}
	os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// buildEnv is the environment of go build: the module on its own (no
// workspace, go.mod and go.sum as committed), and ../shared/goproxy first
// in GOPROXY when it exists beside the repository, for CKE v1.35.4 (whose
// checksum is in go.sum, so the checksum database is not asked for it).
func buildEnv(mod string) ([]string, error) {
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false")
	proxy, err := filepath.Abs(filepath.Join(mod, "..", "..", "..", "..", "..", "shared", "goproxy"))
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(proxy); err != nil || !fi.IsDir() {
		return env, nil
	}
	cmd := exec.Command("go", "env", "GOPROXY")
	cmd.Dir = mod
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go env GOPROXY: %w", err)
	}
	return append(env,
		"GOPROXY=file://"+filepath.ToSlash(proxy)+","+strings.TrimSpace(string(out)),
		"GONOSUMDB=github.com/cybozu-go/cke"), nil
}

// tail is the last n lines of out.
func tail(out []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
