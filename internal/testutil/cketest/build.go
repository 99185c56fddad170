// Package cketest provides CKE v1.35.4's own `cke` server and `ckecli` for
// tests that run ckegen beside a real CKE (docs/beside-cke.md): built from the module
// in ckemodule/ (github.com/cybozu-go/cke at v1.35.4 with the dependency
// versions of CKE's release) once per machine into a cache, as the
// kube-apiserver is (internal/testutil/buildcache/programs).
//
// CKE v1.35.4 comes from ../shared/goproxy (a file module proxy) when it
// exists beside the repository, otherwise from the usual proxy. When the
// binaries cannot be had, a test that needs them is skipped with the
// reason, and fails instead when CI=true.
package cketest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
)

// Environment variables that steer the build.
const (
	// EnvBinDir names a directory holding CKE's cke and ckecli to use
	// instead of building them.
	EnvBinDir = programs.EnvCKEBinDir
	// EnvCacheDir is where built binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/cke (~/.cache/... on Linux).
	EnvCacheDir = programs.EnvCKECache
)

// Version is the CKE release the module builds.
const Version = programs.CKEVersion

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// Binaries returns the paths of CKE's cke server and ckecli, in the
// directory programs.CKE returns ($CKEGEN_CKE_BIN_DIR, or the cache's,
// built first when missing), once per test process. When they cannot be
// had the test is skipped, or fails under CI.
func Binaries(t testing.TB) (cke, ckecli string) {
	t.Helper()
	buildOnce.Do(func() {
		start := time.Now()
		buildDir, buildErr = programs.CKE(nil)
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

var (
	insideOnce sync.Once
	insidePath string
	insideErr  error
)

// Inside returns the path of ckeserver/'s cke, CKE's server with ckegen
// inside (programs.Inside: $CKEGEN_CKE_INSIDE, or the cache's, built first
// when missing or when ckegen's packages changed), once per test process.
// When it cannot be had the test is skipped, or fails under CI.
func Inside(t testing.TB) string {
	t.Helper()
	insideOnce.Do(func() {
		start := time.Now()
		insidePath, insideErr = programs.Inside(nil)
		if insideErr == nil {
			if d := time.Since(start); d > time.Second {
				t.Logf("CKE %s's server with ckegen inside built in %s: %s", Version, d.Round(time.Second), insidePath)
			}
		}
	})
	if insideErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CKE %s's server with ckegen inside needed and not available under CI: %v", Version, insideErr)
		}
		t.Skipf("skipped: this test needs CKE %s's server with ckegen inside (ckeserver/), and %v (set %s to a built binary, or make github.com/cybozu-go/cke %s downloadable; under CI=true this fails)",
			Version, insideErr, programs.EnvInsideBinary, Version)
	}
	return insidePath
}
