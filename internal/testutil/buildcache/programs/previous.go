package programs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ckegen/ckegen/internal/testutil/buildcache"
)

// PreviousRecord is the file of the repository that names the previous
// release: its commit and the version its binaries are stamped with.
const PreviousRecord = "mtest/testdata/previous-release"

// EnvPreviousCache is where the previous release's source and binaries
// are kept; default $XDG_CACHE_HOME/ckegen/previous.
const EnvPreviousCache = "CKEGEN_PREVIOUS_CACHE"

// Previous is the previous release as PreviousRecord names it.
type Previous struct {
	// Commit is the full hash of its commit.
	Commit string
	// Version is what its binaries are stamped with (internal/version):
	// another version than the tree's, so that the two can be told apart.
	Version string
}

var (
	fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)
	// A release tag, or v0.0.0-SHORT for a commit before the first.
	releaseVersion = regexp.MustCompile(`^v0\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9a-f]{7,12})?$`)
)

// ReadPrevious reads PreviousRecord: "commit HASH" and "version VERSION"
// lines; blank lines and lines starting with # are skipped.
func ReadPrevious() (Previous, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return Previous{}, err
	}
	name := filepath.Join(root, filepath.FromSlash(PreviousRecord))
	data, err := os.ReadFile(name)
	if err != nil {
		return Previous{}, err
	}
	return parsePrevious(name, data)
}

// parsePrevious parses the record read from name.
func parsePrevious(name string, data []byte) (Previous, error) {
	var p Previous
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, _ := strings.Cut(line, " ")
		value = strings.TrimSpace(value)
		switch key {
		case "commit":
			p.Commit = value
		case "version":
			p.Version = value
		default:
			return Previous{}, fmt.Errorf("%s:%d: %q: want \"commit HASH\" or \"version VERSION\"", name, n, line)
		}
	}
	if !fullCommit.MatchString(p.Commit) {
		return Previous{}, fmt.Errorf("%s: commit %q: want the commit's 40 hex digits", name, p.Commit)
	}
	if !releaseVersion.MatchString(p.Version) {
		return Previous{}, fmt.Errorf("%s: version %q: want v0.MINOR.PATCH, or v0.0.0-SHORT before the first release", name, p.Version)
	}
	return p, nil
}

// PreviousSource returns the directory of the previous release's source:
// a git archive of its commit, unpacked into the cache once (a directory
// named by the commit, renamed into place complete). The commit must be
// in the repository's history: a shallow clone lacks it, and it is an
// error that says so.
func PreviousSource(p Previous) (string, error) {
	root, err := buildcache.RepoRoot()
	if err != nil {
		return "", err
	}
	if out, err := exec.Command("git", "-C", root, "cat-file", "-e", p.Commit+"^{commit}").CombinedOutput(); err != nil {
		return "", fmt.Errorf("the previous release's commit %s (%s) is not in the repository's history at %s: %v %s(a shallow clone? fetch the history: git fetch --unshallow)",
			p.Commit, PreviousRecord, root, err, out)
	}
	cache, err := buildcache.Dir(EnvPreviousCache, "previous")
	if err != nil {
		return "", err
	}
	top := "ckegen-" + p.Commit[:12]
	dir := filepath.Join(cache, "src-"+p.Commit)
	module := filepath.Join(dir, top)
	if unpacked(module, p.Commit) {
		return module, nil
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(cache, "src-*.tmp")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	archive := filepath.Join(tmp, "source.tar.gz")
	if out, err := exec.Command("git", "-C", root, "archive", "--format=tar.gz", "--prefix="+top+"/", "-o", archive, p.Commit).CombinedOutput(); err != nil {
		return "", fmt.Errorf("git archive %s: %v %s", p.Commit, err, out)
	}
	if err := untar(archive, tmp, top); err != nil {
		return "", fmt.Errorf("unpacking the previous release %s: %w", p.Commit, err)
	}
	if err := os.Remove(archive); err != nil {
		return "", err
	}
	// Written last: the copy is complete once it names the commit.
	if err := os.WriteFile(filepath.Join(tmp, top, sourceSum), []byte(p.Commit+"\n"), 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil && !unpacked(module, p.Commit) {
		return "", fmt.Errorf("%w (remove %s, an incomplete copy of the source)", err, dir)
	}
	return module, nil
}

// previousLDFlags stamp the previous release's binaries with its version
// and commit, as make build stamps a release's.
func previousLDFlags(p Previous) string {
	const pkg = "github.com/ckegen/ckegen/internal/version"
	return "-ldflags=-s -w -X " + pkg + ".Version=" + p.Version + " -X " + pkg + ".Revision=" + p.Commit
}

// PreviousDaemonsSpec is the build of the previous release's ckegen and
// ckegenctl from its source, keyed by its commit (in the flags).
func PreviousDaemonsSpec() (buildcache.Spec, error) {
	p, err := ReadPrevious()
	if err != nil {
		return buildcache.Spec{}, err
	}
	src, err := PreviousSource(p)
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:     "the previous release " + p.Version + "'s ckegen and ckegenctl",
		Cache:    "previous",
		CacheEnv: EnvPreviousCache,
		Prefix:   p.Version + "-daemons-",
		Module:   src,
		Packages: []string{"./cmd/ckegen", "./cmd/ckegenctl"},
		Outputs:  []string{"ckegen", "ckegenctl"},
		Flags:    []string{"-trimpath", previousLDFlags(p)},
		Timeout:  BuildTimeout,
	}, nil
}

// PreviousDaemons returns the directory of the previous release's ckegen
// and ckegenctl, building them first when the cache has none.
func PreviousDaemons(logf func(format string, args ...any)) (string, error) {
	spec, err := PreviousDaemonsSpec()
	if err != nil {
		return "", err
	}
	spec.Logf = logf
	return buildcache.Build(spec)
}

// PreviousInsideSpec is the build of the previous release's cke (CKE's
// server with ckegen inside, its ckeserver/), keyed by its commit.
func PreviousInsideSpec() (buildcache.Spec, error) {
	p, err := ReadPrevious()
	if err != nil {
		return buildcache.Spec{}, err
	}
	src, err := PreviousSource(p)
	if err != nil {
		return buildcache.Spec{}, err
	}
	proxy, err := buildcache.SharedGoProxy()
	if err != nil {
		return buildcache.Spec{}, err
	}
	return buildcache.Spec{
		Name:      "the previous release " + p.Version + "'s cke (CKE's server with ckegen inside)",
		Cache:     "previous",
		CacheEnv:  EnvPreviousCache,
		Prefix:    p.Version + "-cke-",
		Module:    filepath.Join(src, "ckeserver"),
		Packages:  []string{"./cmd/cke"},
		Outputs:   []string{"cke"},
		Flags:     []string{"-trimpath", previousLDFlags(p)},
		FileProxy: proxy,
		Env:       []string{"GONOSUMDB=github.com/cybozu-go/cke"},
		Timeout:   BuildTimeout,
	}, nil
}

// PreviousInside returns the path of the previous release's cke,
// building it first when the cache has none.
func PreviousInside(logf func(format string, args ...any)) (string, error) {
	return program("", PreviousInsideSpec, logf)
}
