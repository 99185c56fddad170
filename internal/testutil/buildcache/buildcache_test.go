package buildcache

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestKey: the key changes with the arguments and with each file, and is
// the same for the same inputs; its hashing is pinned, since changing it
// throws away every warm cache (minutes of builds in CI).
func TestKey(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "go.mod", "module m\n")
	write(t, dir, "go.sum", "")
	k := func(args ...string) string {
		k, err := key(dir, args, []string{"go.mod", "go.sum"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	first := k("build", "x")
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" && first != "e1d6827e9707d776" {
		t.Errorf("key %s: the hashing changed; every cache entry will be rebuilt", first)
	}
	if again := k("build", "x"); again != first {
		t.Errorf("same inputs, keys %s and %s", first, again)
	}
	if k("build", "y") == first {
		t.Error("other arguments, same key")
	}
	write(t, dir, "go.sum", "m v1 h1:x\n")
	if k("build", "x") == first {
		t.Error("another go.sum, same key")
	}
	if _, err := key(dir, nil, []string{"missing"}, nil); err == nil {
		t.Error("a missing file gave a key")
	}
}

// TestSpecKey: a Spec's key is its go build command line's and its files',
// and KeyTrees add what can go into a build of their packages (a Go file,
// an embedded file, go.mod) and nothing else (a test, testdata, a nested
// module, a directory without Go files).
func TestSpecKey(t *testing.T) {
	mod, tree := t.TempDir(), t.TempDir()
	write(t, mod, "go.mod", "module m\n")
	write(t, mod, "go.sum", "")
	write(t, mod, "main.go", "package main\n")
	spec := Spec{Module: mod, Packages: []string{"."}, Outputs: []string{"m"}, Flags: []string{"-trimpath"}}
	sk := func() string {
		k, err := spec.Key()
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	want, err := key(mod, []string{"build", "-trimpath", "-o", "DIR/m", "."}, []string{"go.mod", "go.sum"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := sk(); got != want {
		t.Errorf("one package: key %s, want the key of its command line %s", got, want)
	}
	spec.KeyFiles = []string{"main.go"}
	withMain := sk()
	if withMain == want {
		t.Error("KeyFiles: same key")
	}
	write(t, mod, "main.go", "package main\n\nfunc main() {}\n")
	if sk() == withMain {
		t.Error("another main.go, same key")
	}

	for name, content := range map[string]string{
		"go.mod":                  "module root\n",
		"go.sum":                  "",
		"README.md":               "top: no Go files here\n",
		"a/a.go":                  "package a\n",
		"a/page.html":             "<p>embedded</p>\n",
		"a/a_test.go":             "package a\n",
		"a/testdata/x.go":         "package x\n",
		"a/.hidden/h.go":          "package h\n",
		"a/_skip/s.go":            "package s\n",
		"docs/notes.md":           "no Go files\n",
		"nested/go.mod":           "module nested\n",
		"nested/n.go":             "package n\n",
		"cmd/tool/main.go":        "package main\n",
		"cmd/tool/only_test.go":   "package main\n",
		"cmd/tool/sub/helper.txt": "a directory without Go files\n",
	} {
		write(t, tree, name, content)
	}
	names, err := TreeFiles(tree)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"a/a.go", "a/page.html", "cmd/tool/main.go", "go.mod", "go.sum"}; !slices.Equal(names, want) {
		t.Errorf("TreeFiles = %q, want %q", names, want)
	}
	noTrees := sk()
	spec.KeyTrees = []string{tree}
	if sk() == noTrees {
		t.Error("KeyTrees: same key")
	}
	for _, c := range []struct {
		name    string
		changes bool
	}{
		{"a/a.go", true}, {"a/page.html", true}, {"go.mod", true}, {"go.sum", true}, {"cmd/tool/main.go", true},
		{"a/a_test.go", false}, {"a/testdata/x.go", false}, {"nested/n.go", false}, {"README.md", false}, {"docs/notes.md", false},
	} {
		before := sk()
		write(t, tree, c.name, "changed "+c.name+"\n")
		if changed := sk() != before; changed != c.changes {
			t.Errorf("%s changed: key changed %v, want %v", c.name, changed, c.changes)
		}
	}
}

// TestTreeFilesRepo: keying a build on the whole repository is quick.
func TestTreeFilesRepo(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	names, err := TreeFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := key(root, nil, nil, []string{root}); err != nil {
		t.Fatal(err)
	}
	d := time.Since(start)
	t.Logf("%d files of the repository key a build, listed and hashed in %s", len(names), d.Round(time.Millisecond))
	for _, want := range []string{"go.mod", "go.sum", "cmd/ckegen/main.go", "liveview/page.html"} {
		if !slices.Contains(names, want) {
			t.Errorf("TreeFiles of the repository lacks %s", want)
		}
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") || strings.HasPrefix(name, "ckeref/") || strings.HasPrefix(name, "mtest/kubeapiserver/") || strings.Contains(name, "testdata/") {
			t.Errorf("TreeFiles of the repository has %s", name)
		}
	}
	if d > time.Second {
		t.Errorf("keying a build on the repository took %s, over a second", d)
	}
}

func TestDir(t *testing.T) {
	t.Setenv("CKEGEN_TEST_CACHE", "/x/y")
	if d, err := Dir("CKEGEN_TEST_CACHE", "n"); err != nil || d != "/x/y" {
		t.Errorf("Dir = %q, %v; want the variable's value", d, err)
	}
	t.Setenv("CKEGEN_TEST_CACHE", "")
	t.Setenv("XDG_CACHE_HOME", "/c")
	if d, err := Dir("CKEGEN_TEST_CACHE", "n"); err != nil || d != "/c/ckegen/n" {
		t.Errorf("Dir = %q, %v; want /c/ckegen/n", d, err)
	}
}

// tinyModule is a module of two commands, a and b, that print their
// names, and a spec that builds them into a cache in a temporary
// directory.
func tinyModule(t *testing.T) Spec {
	t.Helper()
	mod := t.TempDir()
	write(t, mod, "go.mod", "module example.com/tiny\n\ngo 1.21\n")
	for _, name := range []string{"a", "b"} {
		write(t, mod, name+"/main.go", "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\""+name+"\") }\n")
	}
	write(t, mod, "go.sum", "")
	t.Setenv("CKEGEN_BUILDCACHE_TEST", t.TempDir())
	return Spec{Name: "the tiny commands", CacheEnv: "CKEGEN_BUILDCACHE_TEST", Cache: "tiny", Prefix: "v1-", Module: mod,
		Packages: []string{"./a", "./b"}, Outputs: []string{"a", "b"}, Flags: []string{"-trimpath"}, Timeout: 5 * time.Minute}
}

// TestBuild: Build builds into the cache entry once, reuses it, and
// builds one package under its output's name; two Builds at once build
// once, the other waiting.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs with go build")
	}
	spec := tinyModule(t)
	var builds, waits atomic.Int32
	spec.Logf = func(format string, args ...any) {
		t.Logf(format, args...)
		switch {
		case strings.HasPrefix(format, "building"):
			builds.Add(1)
		case strings.HasPrefix(format, "another process"):
			waits.Add(1)
		}
	}
	var wg sync.WaitGroup
	dirs := make([]string, 2)
	for i := range dirs {
		wg.Go(func() {
			dir, err := Build(spec)
			if err != nil {
				t.Error(err)
			}
			dirs[i] = dir
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	entry, _ := spec.Entry()
	if dirs[0] != entry || dirs[1] != entry || !strings.HasPrefix(filepath.Base(entry), "v1-") {
		t.Errorf("Build = %q, entry %s", dirs, entry)
	}
	if builds.Load() != 1 {
		t.Errorf("%d builds for two Builds at once, want 1", builds.Load())
	}
	for _, name := range []string{"a", "b"} {
		if out, err := exec.Command(filepath.Join(entry, name)).Output(); err != nil || string(out) != name+"\n" {
			t.Errorf("%s: %q, %v", name, out, err)
		}
	}
	if _, err := os.Stat(entry + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary directory is left: %v", err)
	}
	if _, err := Build(spec); err != nil || builds.Load() != 1 {
		t.Errorf("Build again: %v, %d builds, want the entry reused", err, builds.Load())
	}

	// An incomplete entry is built again.
	if err := os.Remove(filepath.Join(entry, "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(spec); err != nil || builds.Load() != 2 {
		t.Errorf("Build of an incomplete entry: %v, %d builds, want 2", err, builds.Load())
	}

	// One package: written under its output's name.
	one := spec
	one.Packages, one.Outputs = []string{"./b"}, []string{"bee"}
	dir, err := Build(one)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(filepath.Join(dir, "bee")).Output(); err != nil || string(out) != "b\n" {
		t.Errorf("bee: %q, %v", out, err)
	}
	if dir == entry {
		t.Error("another package and output, same entry")
	}
}

// TestBuildFails: a build that fails, or does not finish within the
// limit, or waits too long for another, is an error naming what failed;
// nothing is left in the cache.
func TestBuildFails(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go build")
	}
	spec := tinyModule(t)
	write(t, spec.Module, "a/main.go", "package main\n\nfunc main() { undefined() }\n")
	_, err := Build(spec)
	if err == nil || !strings.Contains(err.Error(), "building the tiny commands") || !strings.Contains(err.Error(), "undefined") {
		t.Errorf("a build that fails: %v", err)
	}
	entry, _ := spec.Entry()
	for _, p := range []string{entry, entry + ".tmp"} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left after a failed build: %v", p, err)
		}
	}

	// Another process holds the lock past the limit.
	unlock, err := lock(t.Context(), entry+".lock", func() {})
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	spec.Timeout = time.Second
	waited := false
	spec.Logf = func(format string, args ...any) { waited = waited || strings.HasPrefix(format, "another process") }
	start := time.Now()
	if _, err := Build(spec); err == nil || !strings.Contains(err.Error(), "waiting for the lock") || !waited {
		t.Errorf("waiting past the limit: %v (told it waits: %v)", err, waited)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Build waited %s with a limit of 1s", d)
	}
}

// TestEnv: the module is built on its own, and a file module proxy that
// exists comes first in GOPROXY, before the usual one; the spec's own
// variables come last, so that they win.
func TestEnv(t *testing.T) {
	spec := tinyModule(t)
	has := func(env []string, prefix string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if strings.HasPrefix(env[i], prefix) {
				return env[i]
			}
		}
		return ""
	}
	spec.Env = []string{"GONOSUMDB=example.com/x"}
	spec.FileProxy = filepath.Join(t.TempDir(), "missing")
	env, err := spec.env()
	if err != nil {
		t.Fatal(err)
	}
	if has(env, "GOWORK=") != "GOWORK=off" || has(env, "GOFLAGS=") != "GOFLAGS=-mod=readonly -buildvcs=false" || has(env, "GONOSUMDB=") != "GONOSUMDB=example.com/x" {
		t.Errorf("environment ends %q", env[len(env)-4:])
	}
	if strings.HasPrefix(has(env, "GOPROXY="), "GOPROXY=file://") {
		t.Errorf("a missing file proxy in %s", has(env, "GOPROXY="))
	}
	spec.FileProxy = t.TempDir()
	t.Setenv("GOPROXY", "https://proxy.example,direct")
	if env, err = spec.env(); err != nil {
		t.Fatal(err)
	}
	if got, want := has(env, "GOPROXY="), "GOPROXY=file://"+spec.FileProxy+",https://proxy.example,direct"; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

// TestTreeFilesNestedModule: a module of the repository keyed with the
// repository (ckeserver/, which replaces ckegen's main module with ..)
// is its own tree, and the repository's tree leaves it out.
func TestTreeFilesNestedModule(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod := filepath.Join(root, "ckeserver")
	if _, err := os.Stat(filepath.Join(mod, "go.mod")); err != nil {
		t.Skipf("no ckeserver module: %v", err)
	}
	start := time.Now()
	own, err := TreeFiles(mod)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := key(mod, nil, []string{"go.mod", "go.sum"}, []string{mod, root}); err != nil {
		t.Fatal(err)
	}
	t.Logf("ckeserver's %d files and the repository's keyed in %s", len(own), time.Since(start).Round(time.Millisecond))
	for _, want := range []string{"go.mod", "go.sum", "cmd/cke/main.go", "integrator/integrator.go"} {
		if !slices.Contains(own, want) {
			t.Errorf("ckeserver's tree lacks %s: %q", want, own)
		}
	}
	repo, err := TreeFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range repo {
		if strings.HasPrefix(name, "ckeserver/") {
			t.Errorf("the repository's tree has %s, of the nested module", name)
		}
	}
}

// TestPrune: a cache keeps the newest entries of a spec and those used
// lately; older ones go, and nothing of another spec or in the making.
func TestPrune(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	for name, age := range map[string]time.Duration{
		"v1-a": time.Minute, "v1-b": 2 * time.Hour, "v1-c": 3 * time.Hour, "v1-d": 4 * time.Hour, "v1-e": 5 * time.Hour,
		"v2-x": 9 * time.Hour, "v1-f.tmp": 9 * time.Hour,
	} {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
	}
	prune(dir, "v1-", 3, time.Hour, now)
	var left []string
	des, _ := os.ReadDir(dir)
	for _, de := range des {
		if de.IsDir() {
			left = append(left, de.Name())
		}
	}
	if want := []string{"v1-a", "v1-b", "v1-c", "v1-f.tmp", "v2-x"}; !slices.Equal(left, want) {
		t.Errorf("after prune: %v, want %v", left, want)
	}
	prune(dir, "v1-", 0, 90*time.Minute, now)
	if _, err := os.Stat(filepath.Join(dir, "v1-a")); err != nil {
		t.Errorf("an entry used a minute ago was pruned: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "v1-b")); err == nil {
		t.Error("an entry of two hours ago beyond the kept ones stayed")
	}
}
