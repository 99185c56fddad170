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
	"fmt"
	"os"
	"path/filepath"
	"sync"
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

// Binaries returns the paths of CKE's cke server and ckecli, in the
// directory Build returns, once per test process. When they cannot be had
// the test is skipped, or fails under CI.
func Binaries(t testing.TB) (cke, ckecli string) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildDir, buildErr = Build(nil)
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

// ModuleDir is the directory of the module that builds CKE's commands.
func ModuleDir() (string, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "internal", "testutil", "cketest", "ckemodule")
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("the CKE build module is missing: %w", err)
	}
	return dir, nil
}

// BuildTimeout bounds a build of CKE's commands (cold, several minutes on
// 2 cores).
const BuildTimeout = 45 * time.Minute

// Spec is the build of CKE's cke and ckecli from the module, keyed by its
// go.mod and go.sum. CKE v1.35.4 comes from ../shared/goproxy when it
// exists beside the repository (its checksum is in go.sum, so the
// checksum database is not asked for it).
func Spec() (buildcache.Spec, error) {
	dir, err := ModuleDir()
	if err != nil {
		return buildcache.Spec{}, err
	}
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:      "CKE " + Version + "'s cke and ckecli",
		Cache:     "cke",
		CacheEnv:  EnvCacheDir,
		Prefix:    Version + "-",
		Module:    dir,
		Packages:  []string{pkgServer, pkgCLI},
		Outputs:   []string{"cke", "ckecli"},
		Flags:     []string{"-trimpath", "-ldflags=-s -w"},
		FileProxy: proxy,
		Env:       []string{"GONOSUMDB=github.com/cybozu-go/cke"},
		Timeout:   BuildTimeout,
	}, nil
}

// Build returns the directory of CKE's cke and ckecli: $CKEGEN_CKE_BIN_DIR
// when set, otherwise the cache's, building them first when the cache has
// none for the module's current go.mod and go.sum. logf, when not nil, is
// told when it builds or waits for another process's build.
func Build(logf func(format string, args ...any)) (string, error) {
	if d := os.Getenv(EnvBinDir); d != "" {
		for _, name := range []string{"cke", "ckecli"} {
			if fi, err := os.Stat(filepath.Join(d, name)); err != nil || !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s=%s does not hold both cke and ckecli", EnvBinDir, d)
			}
		}
		return d, nil
	}
	spec, err := Spec()
	if err != nil {
		return "", err
	}
	spec.Logf = logf
	return buildcache.Build(spec)
}
