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
	"path/filepath"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
	"github.com/ckegen/ckegen/internal/testutil/needed"
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

// cke is CKE's own cke and ckecli, in the directory programs.CKE gives
// ($CKEGEN_CKE_BIN_DIR, or the cache's, built first when missing).
var ckeBinaries = needed.Program{What: "CKE " + Version + "'s own cke and ckecli", Build: programs.CKE,
	Otherwise: "set " + EnvBinDir + " to a directory holding both, or make github.com/cybozu-go/cke " + Version +
		" downloadable: ../shared/goproxy or the Go module proxy"}

// Binaries returns the paths of CKE's cke server and ckecli, once per
// test process. When they cannot be had the test is skipped, or fails
// under CI.
func Binaries(t testing.TB) (cke, ckecli string) {
	t.Helper()
	dir := ckeBinaries.Path(t)
	return filepath.Join(dir, "cke"), filepath.Join(dir, "ckecli")
}

// inside is the cke built from ckeserver/, as programs.Inside has it
// ($CKEGEN_CKE_INSIDE, or the cache's, built first when missing or when
// ckegen's packages changed).
var inside = needed.Program{What: "CKE " + Version + "'s server with ckegen inside (ckeserver/)", Build: programs.Inside,
	Otherwise: "set " + programs.EnvInsideBinary + " to a built binary, or make github.com/cybozu-go/cke " + Version + " downloadable"}

// Inside returns the path of ckeserver/'s cke, CKE's server with ckegen
// inside, once per test process. When it cannot be had the test is
// skipped, or fails under CI.
func Inside(t testing.TB) string {
	t.Helper()
	return inside.Path(t)
}
