// Package programs lists the programs the tests build from modules of
// their own, and builds them with buildcache: the kube-apiserver
// (internal/testutil/kubetest runs it) and CKE v1.35.4's own cke and
// ckecli (internal/testutil/cketest). Each can be taken from elsewhere
// instead, through an environment variable.
//
// A program is a buildcache.Spec and a function that builds it, which the
// tests' preparation (internal/testutil/prepare) calls too. One built
// from a module of the repository with packages of its own that replaces
// ckegen's main module with the repository (ckeserver/, whose go.mod has
// a replace to ..) lists both directories in KeyTrees, the module's and
// buildcache.RepoRoot(), so that a change of its packages or of ckegen's
// is a new build (the repository's tree leaves out the nested module).
//
// It imports nothing heavier than buildcache, so that the preparation
// compiles in seconds on a cold build cache and says what it builds from
// the start.
package programs

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// BuildTimeout bounds a build of each program: cold, one takes several
// minutes on 2 cores.
const BuildTimeout = 45 * time.Minute

// Environment variables that steer the builds.
const (
	// EnvKubeAPIServer names a kube-apiserver binary to use instead of
	// building one.
	EnvKubeAPIServer = "CKEGEN_KUBE_APISERVER"
	// EnvKubeAPIServerCache is where built kube-apiservers are kept;
	// default $XDG_CACHE_HOME/ckegen/kube-apiserver (~/.cache/... on
	// Linux).
	EnvKubeAPIServerCache = "CKEGEN_KUBE_APISERVER_CACHE"
	// EnvCKEBinDir names a directory holding CKE's cke and ckecli to use
	// instead of building them.
	EnvCKEBinDir = "CKEGEN_CKE_BIN_DIR"
	// EnvCKECache is where built CKE binaries are kept; default
	// $XDG_CACHE_HOME/ckegen/cke.
	EnvCKECache = "CKEGEN_CKE_CACHE"
)

// moduleDir is the directory of a module of the repository.
func moduleDir(rel, what string) (string, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, filepath.FromSlash(rel))
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		return "", fmt.Errorf("%s is missing: %w", what, err)
	}
	return dir, nil
}

// KubeAPIServerSpec is the build of the kube-apiserver from
// mtest/kubeapiserver (k8s.io/kubernetes as a library), stamped with the
// Kubernetes version (as /version reports it) that the module requires,
// keyed by its go.mod, go.sum and main.go.
func KubeAPIServerSpec() (buildcache.Spec, error) {
	dir, err := moduleDir("mtest/kubeapiserver", "the kube-apiserver module")
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
		CacheEnv: EnvKubeAPIServerCache,
		Module:   dir,
		Packages: []string{"."},
		Outputs:  []string{"kube-apiserver"},
		Flags:    []string{kubeLDFlags(version)},
		KeyFiles: []string{"main.go"},
		Timeout:  BuildTimeout,
	}, nil
}

// KubeAPIServer returns the path of a kube-apiserver binary:
// $CKEGEN_KUBE_APISERVER when set, otherwise the one built from
// KubeAPIServerSpec, building it first when the cache has none. logf,
// when not nil, is told when it builds or waits for another process's
// build.
func KubeAPIServer(logf func(format string, args ...any)) (string, error) {
	return program(EnvKubeAPIServer, KubeAPIServerSpec, logf)
}

// program is the binary a spec builds: the file $env names when set,
// otherwise the spec's first output, built first when the cache has none.
func program(env string, specOf func() (buildcache.Spec, error), logf func(format string, args ...any)) (string, error) {
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w", env, err)
		}
		return p, nil
	}
	spec, err := specOf()
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

// kubeLDFlags are go build's -ldflags, stamping the binary with the
// Kubernetes version.
func kubeLDFlags(version string) string {
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const pkg = "k8s.io/component-base/version"
	return "-ldflags=-s -w" +
		" -X " + pkg + ".gitVersion=" + version +
		" -X " + pkg + ".gitMajor=" + major +
		" -X " + pkg + ".gitMinor=" + minor +
		" -X " + pkg + ".gitTreeState=clean"
}

// kubernetesRequirement is a requirement of k8s.io/kubernetes in go.mod:
// in a require block, or on a require line of its own.
var kubernetesRequirement = regexp.MustCompile(`(?m)^(?:require)?[ \t]*k8s\.io/kubernetes[ \t]+(v[0-9][^ \t\n]*)[ \t]*(?://.*)?$`)

// kubernetesVersion is the version of k8s.io/kubernetes that the module in
// dir requires, read from its go.mod (which keys the build).
func kubernetesVersion(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	m := kubernetesRequirement.FindAllSubmatch(data, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("%s/go.mod: %d requirements of k8s.io/kubernetes, want one", dir, len(m))
	}
	return string(m[0][1]), nil
}

// CKEVersion is the CKE release whose cke and ckecli are built.
const CKEVersion = "v1.35.4"

// CKESpec is the build of CKE's cke and ckecli from
// internal/testutil/cketest/ckemodule (github.com/cybozu-go/cke at
// v1.35.4 with the dependency versions of CKE's release), keyed by its
// go.mod and go.sum. CKE v1.35.4 comes from ../shared/goproxy when it
// exists beside the repository (its checksum is in go.sum, so the
// checksum database is not asked for it).
func CKESpec() (buildcache.Spec, error) {
	dir, err := moduleDir("internal/testutil/cketest/ckemodule", "the CKE build module")
	if err != nil {
		return buildcache.Spec{}, err
	}
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:      "CKE " + CKEVersion + "'s cke and ckecli",
		Cache:     "cke",
		CacheEnv:  EnvCKECache,
		Prefix:    CKEVersion + "-",
		Module:    dir,
		Packages:  []string{"github.com/cybozu-go/cke/pkg/cke", "github.com/cybozu-go/cke/pkg/ckecli"},
		Outputs:   []string{"cke", "ckecli"},
		Flags:     []string{"-trimpath", "-ldflags=-s -w"},
		FileProxy: proxy,
		Env:       []string{"GONOSUMDB=github.com/cybozu-go/cke"},
		Timeout:   BuildTimeout,
	}, nil
}

// CKE returns the directory of CKE's cke and ckecli: $CKEGEN_CKE_BIN_DIR
// when set, otherwise the one built from CKESpec, building them first when
// the cache has none. logf, when not nil, is told when it builds or waits
// for another process's build.
func CKE(logf func(format string, args ...any)) (string, error) {
	if d := os.Getenv(EnvCKEBinDir); d != "" {
		for _, name := range []string{"cke", "ckecli"} {
			if fi, err := os.Stat(filepath.Join(d, name)); err != nil || !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s=%s does not hold both cke and ckecli", EnvCKEBinDir, d)
			}
		}
		return d, nil
	}
	spec, err := CKESpec()
	if err != nil {
		return "", err
	}
	spec.Logf = logf
	return buildcache.Build(spec)
}

// EnvInsideBinary names a cke binary built from ckeserver/ to use
// instead of building one; EnvInsideCache is where built ones are kept
// (default $XDG_CACHE_HOME/ckegen/cke-inside).
const (
	EnvInsideBinary = "CKEGEN_CKE_INSIDE"
	EnvInsideCache  = "CKEGEN_CKE_INSIDE_CACHE"
)

// InsideSpec is the build of ckeserver/'s cke: CKE v1.35.4's server with
// ckegen's step as its sabakan integration, a module of its own that
// replaces ckegen's main module with the repository. Its key is the
// module's tree and the repository's: a change of either is a new build,
// and building it proves that ckegen's packages compile on CKE's etcd and
// Kubernetes versions.
func InsideSpec() (buildcache.Spec, error) {
	dir, err := moduleDir("ckeserver", "the module of CKE's server with ckegen inside")
	if err != nil {
		return buildcache.Spec{}, err
	}
	root, err := buildcache.RepoRoot()
	if err != nil {
		return buildcache.Spec{}, err
	}
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:      "CKE " + CKEVersion + "'s server with ckegen inside (cke)",
		Cache:     "cke-inside",
		CacheEnv:  EnvInsideCache,
		Module:    dir,
		Packages:  []string{"./cmd/cke"},
		Outputs:   []string{"cke"},
		Flags:     []string{"-trimpath"},
		KeyTrees:  []string{dir, root},
		FileProxy: proxy,
		Env:       []string{"GONOSUMDB=github.com/cybozu-go/cke"},
		Timeout:   BuildTimeout,
	}, nil
}

// Inside returns the path of the cke built from ckeserver/:
// $CKEGEN_CKE_INSIDE when set, otherwise the one built from InsideSpec,
// building it first when the cache has none for the trees as they are.
func Inside(logf func(format string, args ...any)) (string, error) {
	return program(EnvInsideBinary, InsideSpec, logf)
}
