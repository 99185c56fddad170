// Command ckebump moves the repository to another CKE release: `make
// bump-cke VERSION=vX.Y.Z` runs it from the repository's root
// (docs/inside-cke.md, "Keeping up with CKE"). It changes every place that
// names the release the build and the tests use:
//
//   - ckeserver/go.mod and go.sum: the requirement of
//     github.com/cybozu-go/cke, and the exclude lines computed again (below);
//   - internal/testutil/cketest/ckemodule, which builds CKE's own cke and
//     ckecli for the tests: CKE alone is required, every other module at the
//     version of CKE's release;
//   - ckeref/go.mod and go.sum;
//   - the constants that name the release (internal/version.CKEVersion, the
//     test harness's programs.CKEVersion) and the Makefile's messages;
//
// then lists the other lines of the tracked files that name the old
// release (documentation and comments that say what that release does),
// to be checked against the new one. The go commands it runs take CKE
// from the proxies of the environment, which the Makefile sets as for its
// other targets. Run with the release already required, it changes
// nothing.
//
// The exclude lines of ckeserver/go.mod keep CKE's own etcd and Kubernetes:
// for each module of etcd (go.etcd.io/etcd/..., go.etcd.io/raft/...) and
// of Kubernetes' staging set (the k8s.io modules CKE requires at the
// version of its k8s.io/api), ckegen's own requirement (go.mod at the
// root) is excluded when it is newer than CKE's, so that version selection
// falls back to CKE's.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/mod/semver"
)

const ckeModule = "github.com/cybozu-go/cke"

// Where the release is named, relative to the repository's root.
const (
	serverDir = "ckeserver"
	buildDir  = "internal/testutil/cketest/ckemodule"
	refDir    = "ckeref"
)

// constantFiles hold a Go constant `CKEVersion = "vX.Y.Z"`.
var constantFiles = []string{
	"internal/version/buildinfo.go",
	"internal/testutil/buildcache/programs/programs.go",
}

// textFiles name the release in messages a command prints: every
// mention is replaced.
var textFiles = []string{"Makefile"}

var release = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

func main() {
	root := flag.String("root", ".", "the repository's root")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: ckebump [--root DIR] vX.Y.Z\n\nMoves the repository to CKE's release vX.Y.Z (make bump-cke VERSION=vX.Y.Z).\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*root, flag.Arg(0), os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "bump-cke: %v\n", err)
		os.Exit(1)
	}
}

// run moves the repository at root to CKE's release to, saying what it
// did on out.
func run(root, to string, out io.Writer) error {
	if !release.MatchString(to) {
		return fmt.Errorf("VERSION %q: want a CKE release such as v1.35.5 (make bump-cke VERSION=v1.35.5)", to)
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	from, err := requirement(filepath.Join(root, serverDir), ckeModule)
	if err != nil {
		return err
	}
	ckeMod, err := download(root, ckeModule+"@"+to)
	if err != nil {
		return err
	}
	cke, err := readMod(root, ckeMod)
	if err != nil {
		return err
	}
	own, err := readMod(root, filepath.Join(root, "go.mod"))
	if err != nil {
		return err
	}
	for _, step := range []func() error{
		func() error { return moveServer(root, to, excludesFor(own.Require, cke.Require), out) },
		func() error { return moveBuild(root, to, out) },
		func() error { return moveRef(root, to, out) },
		func() error { return moveText(root, from, to, out) },
	} {
		if err := step(); err != nil {
			return err
		}
	}
	if from == to {
		fmt.Fprintf(out, "already on CKE %s\n", to)
		return nil
	}
	left, err := mentions(root, from)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "moved from CKE %s to %s. These lines still name %s: they say what that release does; check each against %s, update it, then run make test:\n%s",
		from, to, from, to, left)
	return nil
}

// moveServer moves ckeserver/ to CKE's release to, with the excludes want:
// the excludes first, so that tidy resolves with them.
func moveServer(root, to string, want []string, out io.Writer) error {
	server := filepath.Join(root, serverDir)
	mod, err := readMod(server, filepath.Join(server, "go.mod"))
	if err != nil {
		return err
	}
	var edits, current []string
	for _, e := range mod.Exclude {
		current = append(current, e.Path+"@"+e.Version)
	}
	for _, e := range current {
		if !slices.Contains(want, e) {
			edits = append(edits, "-dropexclude="+e)
		}
	}
	for _, e := range want {
		if !slices.Contains(current, e) {
			edits = append(edits, "-exclude="+e)
		}
	}
	if err := editTidy(server, append(edits, "-require="+ckeModule+"@"+to)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: requires %s %s; excludes %s\n", serverDir, ckeModule, to, strings.Join(want, ", "))
	return nil
}

// moveBuild moves the module that builds CKE's own binaries: CKE alone,
// so that every other module is at the version of CKE's release.
func moveBuild(root, to string, out io.Writer) error {
	build := filepath.Join(root, buildDir)
	mod, err := readMod(root, filepath.Join(build, "go.mod"))
	if err != nil {
		return err
	}
	var edits []string
	for _, r := range mod.Require {
		if r.Path != ckeModule {
			edits = append(edits, "-droprequire="+r.Path)
		}
	}
	if err := editTidy(build, append(edits, "-require="+ckeModule+"@"+to)); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: requires %s %s, every other module at CKE's version\n", buildDir, ckeModule, to)
	return nil
}

// moveRef moves ckeref/ to CKE's release to.
func moveRef(root, to string, out io.Writer) error {
	if err := editTidy(filepath.Join(root, refDir), []string{"-require=" + ckeModule + "@" + to}); err != nil {
		return err
	}
	fmt.Fprintf(out, "%s: requires %s %s\n", refDir, ckeModule, to)
	return nil
}

// editTidy runs go mod edit with edits in dir, then go mod tidy.
func editTidy(dir string, edits []string) error {
	if err := goRun(dir, nil, append([]string{"mod", "edit"}, edits...)...); err != nil {
		return err
	}
	return goRun(dir, nil, "mod", "tidy")
}

// moveText moves the constants, the messages and the go.mod files'
// comments from CKE's release from to to.
func moveText(root, from, to string, out io.Writer) error {
	constant := regexp.MustCompile(`(?m)^(\s*(?:const )?CKEVersion\s*=\s*)"v[0-9.]+"`)
	for _, f := range constantFiles {
		if err := rewrite(filepath.Join(root, f), func(s string) (string, error) {
			if len(constant.FindAllString(s, -1)) != 1 {
				return "", fmt.Errorf("%s: no single CKEVersion constant to move (update ckebump's constantFiles)", f)
			}
			return constant.ReplaceAllString(s, `${1}"`+to+`"`), nil
		}); err != nil {
			return err
		}
	}
	if from != to {
		if err := replaceMentions(root, from, to); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s: CKEVersion %s; %s: messages\n", strings.Join(constantFiles, ", "), to, strings.Join(textFiles, ", "))
	return nil
}

// replaceMentions replaces from with to in textFiles and in the go.mod
// files' comments; their requirements are go's.
func replaceMentions(root, from, to string) error {
	for _, f := range textFiles {
		if err := rewrite(filepath.Join(root, f), func(s string) (string, error) {
			return strings.ReplaceAll(s, from, to), nil
		}); err != nil {
			return err
		}
	}
	for _, d := range []string{serverDir, buildDir, refDir} {
		if err := rewrite(filepath.Join(root, d, "go.mod"), func(s string) (string, error) {
			lines := strings.SplitAfter(s, "\n")
			for i, l := range lines {
				if strings.HasPrefix(strings.TrimSpace(l), "//") {
					lines[i] = strings.ReplaceAll(l, from, to)
				}
			}
			return strings.Join(lines, ""), nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// module is a requirement of a go.mod file.
type module struct {
	Path, Version string
}

// goMod is a go.mod file as go mod edit -json reads it.
type goMod struct {
	Require, Exclude []module
}

// readMod reads the go.mod file gomod, running go in dir.
func readMod(dir, gomod string) (goMod, error) {
	var f goMod
	err := goRun(dir, &f, "mod", "edit", "-json", gomod)
	return f, err
}

// requirement is the version dir's go.mod requires of path.
func requirement(dir, path string) (string, error) {
	mod, err := readMod(dir, filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", err
	}
	reqs := mod.Require
	i := slices.IndexFunc(reqs, func(r module) bool { return r.Path == path })
	if i < 0 {
		return "", fmt.Errorf("%s/go.mod does not require %s", dir, path)
	}
	return reqs[i].Version, nil
}

// excludesFor are the versions of ckegen's own requirements (own) to
// exclude so that CKE's requirements (cke) of etcd and Kubernetes win:
// those newer than CKE's, "path@version" each, sorted.
func excludesFor(own, cke []module) []string {
	var kube string
	for _, r := range cke {
		if r.Path == "k8s.io/api" {
			kube = r.Version
		}
	}
	var out []string
	for _, c := range cke {
		pinned := strings.HasPrefix(c.Path, "go.etcd.io/etcd/") || strings.HasPrefix(c.Path, "go.etcd.io/raft/") ||
			strings.HasPrefix(c.Path, "k8s.io/") && c.Version == kube
		if !pinned {
			continue
		}
		for _, o := range own {
			if o.Path == c.Path && newer(o.Version, c.Version) {
				out = append(out, o.Path+"@"+o.Version)
			}
		}
	}
	slices.Sort(out)
	return out
}

// newer reports whether version a is newer than b in semantic versioning's
// order (golang.org/x/mod/semver); where either is not a semantic version,
// it is not.
func newer(a, b string) bool {
	return semver.IsValid(b) && semver.Compare(a, b) > 0
}

// download fetches a module through the environment's proxies and
// returns the path of its go.mod.
func download(root, mod string) (string, error) {
	var d struct {
		GoMod, Error string
	}
	err := goRun(root, &d, "mod", "download", "-json", mod)
	if d.Error != "" {
		return "", fmt.Errorf("%s cannot be had from GOPROXY (%s): %s", mod, os.Getenv("GOPROXY"), d.Error)
	}
	if err != nil {
		return "", err
	}
	return d.GoMod, nil
}

// rewrite replaces the content of path by edit's; the file is written
// only when it changes.
func rewrite(path string, edit func(string) (string, error)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s, err := edit(string(data))
	if err != nil {
		return err
	}
	if s == string(data) {
		return nil
	}
	return os.WriteFile(path, []byte(s), 0o644)
}

// mentions lists the lines of the tracked files (go.sum files aside)
// that name release, in both its forms (v1.35.4 and 1.35.4).
func mentions(root, release string) (string, error) {
	cmd := exec.Command("git", "grep", "-n", "-F", "-e", strings.TrimPrefix(release, "v"), "--", ".", ":(exclude)*go.sum")
	cmd.Dir = root
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 {
		return "(none)\n", nil
	}
	if err != nil {
		return "", fmt.Errorf("git grep: %w", err)
	}
	return string(out), nil
}

// goRun runs the go command in dir and reads its JSON answer into v,
// unless v is nil.
func goRun(dir string, v any, args ...string) error {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if v != nil && len(out) > 0 {
		if jerr := json.Unmarshal(out, v); jerr != nil && err == nil {
			return fmt.Errorf("in %s, go %s: %w", dir, strings.Join(args, " "), jerr)
		}
	}
	if err != nil {
		return fmt.Errorf("in %s, go %s: %w\n%s", dir, strings.Join(args, " "), err, stderr.String())
	}
	return nil
}
