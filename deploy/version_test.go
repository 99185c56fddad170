package deploy

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// madeVersion is what `make -n TARGET` would build, read from the commands
// it prints: the -ldflags of every go build (each must be the same), the
// packages built, and the image's tag (image only).
type madeVersion struct {
	ldflags  string
	packages []string
	tag      string
}

var (
	ldflagsRE = regexp.MustCompile(`-ldflags "([^"]*)"`)
	tagRE     = regexp.MustCompile(`--tag "([^"]*)"`)
)

// makeN runs `make -n target` in the repository with the git repository
// gitDir standing for the checkout (GIT_DIR), and VERSION, REVISION and
// IMAGE unset, as on an operator's machine.
func makeN(t *testing.T, gitDir, target string) madeVersion {
	t.Helper()
	out, errOut, err := runEnv(time.Minute, root, []string{"GIT_DIR=" + gitDir, "VERSION=", "REVISION=", "IMAGE="},
		"make", "--no-print-directory", "-n", target, "CONTAINER_ENGINE=podman")
	if err != nil {
		t.Fatalf("make -n %s: %v\n%s%s", target, err, out, errOut)
	}
	var m madeVersion
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, " build ") && strings.Contains(line, "-ldflags") {
			f := ldflagsRE.FindStringSubmatch(line)
			if f == nil {
				t.Fatalf("make -n %s: a go build without a quoted -ldflags: %s", target, line)
			}
			if m.ldflags != "" && f[1] != m.ldflags {
				t.Errorf("make -n %s: go builds with different -ldflags:\n\t%s\n\t%s", target, m.ldflags, f[1])
			}
			m.ldflags = f[1]
			for _, want := range []string{"CGO_ENABLED=0 ", " -trimpath "} {
				if !strings.Contains(line, want) {
					t.Errorf("make -n %s: a go build without %q (the binaries are static and built without local paths): %s", target, strings.TrimSpace(want), line)
				}
			}
			for _, w := range strings.Fields(line) {
				if strings.HasPrefix(w, "./cmd/") {
					m.packages = append(m.packages, w)
				}
			}
		}
		if f := tagRE.FindStringSubmatch(line); f != nil {
			m.tag = f[1]
		}
	}
	slices.Sort(m.packages)
	return m
}

// TestVersionScheme: the version and commit every binary is stamped with
// and the image's tag (Makefile, deploy/version.sh; docs/install.md,
// "Versions"), read from what `make -n build` and `make -n image` print
// for a scratch git repository in every state that matters: untagged, a
// release tag v0.x.y on HEAD (lightweight or annotated, the highest of
// several), tags that are no release (v1.0.0, a pre-release, v0.2, a
// leading zero), a release tag on an earlier commit, and no repository at
// all. Both targets build ckegen, ckegenctl and cke (no fakesabakan), with
// the same flags. And deploy/systemd/ckegen.env names the image an
// untagged checkout builds.
func TestVersionScheme(t *testing.T) {
	need(t, "make", "apt-get install -y make")
	git := need(t, "git", "apt-get install -y git")
	repo := t.TempDir()
	gitDir := filepath.Join(repo, ".git")
	g := func(args ...string) string {
		t.Helper()
		out := run(t, time.Minute, repo, git, append([]string{"-c", "user.name=deploy test", "-c", "user.email=deploytest@example.com",
			"-c", "tag.gpgSign=false", "-c", "commit.gpgSign=false"}, args...)...)
		return strings.TrimSpace(string(out))
	}
	g("init", "--quiet")
	g("commit", "--quiet", "--allow-empty", "--message", "first")
	g("commit", "--quiet", "--allow-empty", "--message", "second")
	head := g("rev-parse", "HEAD")

	const pkg = "github.com/ckegen/ckegen/internal/version"
	wantPackages := []string{"./cmd/cke", "./cmd/ckegen", "./cmd/ckegenctl"}
	check := func(state, wantVersion, wantRevision string) madeVersion {
		t.Helper()
		var image madeVersion
		for _, target := range []string{"build", "image"} {
			m := makeN(t, gitDir, target)
			want := "-s -w -X " + pkg + ".Version=" + wantVersion + " -X " + pkg + ".Revision=" + wantRevision
			if m.ldflags != want {
				t.Errorf("%s: make %s links with -ldflags %q, want %q", state, target, m.ldflags, want)
			}
			if !slices.Equal(m.packages, wantPackages) {
				t.Errorf("%s: make %s builds %q, want %q (fakesabakan is a test server: not shipped)", state, target, m.packages, wantPackages)
			}
			if target == "image" {
				if want := "localhost/ckegen:" + wantVersion; m.tag != want {
					t.Errorf("%s: make image tags %q, want %q", state, m.tag, want)
				}
				image = m
			}
		}
		return image
	}

	untagged := check("untagged", "devel", head)
	env := readEnvFile(t, filepath.Join(root, "deploy", "systemd", "ckegen.env"))
	if env["CKEGEN_IMAGE"] != untagged.tag {
		t.Errorf("ckegen.env: CKEGEN_IMAGE=%s, but make image on an untagged checkout tags %s", env["CKEGEN_IMAGE"], untagged.tag)
	}

	g("tag", "v0.3.4")
	check("a release tag on HEAD", "v0.3.4", head)
	// The highest is neither the first nor the last in git's order of
	// names (v0.10.0, v0.10.2, v0.3.4, v0.9.0).
	g("tag", "--annotate", "--message", "release", "v0.10.2")
	g("tag", "v0.10.0")
	g("tag", "v0.9.0")
	check("four release tags on HEAD, one annotated", "v0.10.2", head)
	g("tag", "--delete", "v0.3.4", "v0.10.2", "v0.10.0", "v0.9.0")
	for _, tag := range []string{"v1.0.0", "v0.4.0-rc.1", "v0.4", "v0.04.0", "0.4.0", "v0.4.0.1", "xv0.4.0"} {
		g("tag", tag)
		check("HEAD tagged "+tag+" alone", "devel", head)
		g("tag", "--delete", tag)
	}
	g("tag", "v0.5.0", "HEAD~1")
	check("a release tag on the commit before HEAD", "devel", head)
	gitDir = filepath.Join(repo, "no-such-repository")
	check("no git repository", "devel", "")
}
