package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
	"github.com/ckegen/ckegen/internal/version"
)

// TestExcludesFor: ckegen's newer etcd and Kubernetes staging modules are
// excluded, none that is not newer, and nothing outside those two sets.
func TestExcludesFor(t *testing.T) {
	cke := []module{
		{"go.etcd.io/etcd/api/v3", "v3.6.11"}, {"go.etcd.io/etcd/client/v3", "v3.6.11"},
		{"go.etcd.io/raft/v3", "v3.6.0"}, {"go.etcd.io/bbolt", "v1.4.3"},
		{"k8s.io/api", "v0.35.5"}, {"k8s.io/client-go", "v0.35.5"}, {"k8s.io/kubelet", "v0.35.5"},
		{"k8s.io/klog/v2", "v2.130.1"}, {"github.com/prometheus/client_golang", "v1.23.2"},
	}
	own := []module{
		{"go.etcd.io/etcd/api/v3", "v3.7.3"}, {"go.etcd.io/etcd/client/v3", "v3.6.11"},
		{"go.etcd.io/raft/v3", "v3.7.0"}, {"go.etcd.io/bbolt", "v1.5.0"},
		{"k8s.io/api", "v0.37.2"}, {"k8s.io/client-go", "v0.34.0"},
		{"k8s.io/klog/v2", "v2.140.0"}, {"github.com/prometheus/client_golang", "v1.25.0"},
	}
	got := excludesFor(own, cke)
	want := []string{"go.etcd.io/etcd/api/v3@v3.7.3", "go.etcd.io/raft/v3@v3.7.0", "k8s.io/api@v0.37.2"}
	if !slices.Equal(got, want) {
		t.Errorf("excludesFor = %q, want %q", got, want)
	}
}

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"v3.7.3", "v3.6.11", true}, {"v3.6.11", "v3.7.3", false}, {"v0.37.2", "v0.37.2", false},
		{"v0.10.0", "v0.9.9", true}, {"v1.0.0", "v1.0.0-rc.1", true}, {"v1.0.0-rc.1", "v1.0.0", false},
		{"v1.0.0-rc.2", "v1.0.0-rc.1", true}, {"v1.0.0-rc.10", "v1.0.0-rc.9", true},
		{"latest", "v1.0.0", false}, {"v1.0.0", "latest", false}, {"v3.7.3+incompatible", "v3.6.0", true},
	} {
		if got := newer(c.a, c.b); got != c.want {
			t.Errorf("newer(%s, %s) = %v", c.a, c.b, got)
		}
	}
}

// TestRefused: a VERSION that is not a release is refused before
// anything is read or written.
func TestRefused(t *testing.T) {
	for _, v := range []string{"", "1.35.4", "v1.35", "devel", "v1.35.4-rc.1", "v01.35.4"} {
		var out bytes.Buffer
		err := run(t.TempDir(), v, &out)
		if err == nil || !strings.Contains(err.Error(), "want a CKE release such as v1.35.5") {
			t.Errorf("VERSION %q: %v", v, err)
		}
	}
}

// TestBumpToCurrentChangesNothing: moving a copy of the repository to the
// CKE release it already requires leaves every file as it was: the
// modules tidy, the excludes those computed from ckegen's and CKE's
// go.mod, every constant already that release. CKE's module comes from
// the test harness's proxies.
func TestBumpToCurrentChangesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short: runs go mod tidy on three modules")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := programs.CKESpec()
	if err != nil {
		t.Fatal(err)
	}
	env, err := spec.Environ()
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}

	ls := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	ls.Dir = root
	out, err := ls.Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	copyDir := t.TempDir()
	var files []string
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		data, err := os.ReadFile(filepath.Join(root, f))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(copyDir, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}

	var said bytes.Buffer
	if err := run(copyDir, version.CKEVersion, &said); err != nil {
		t.Fatalf("make bump-cke VERSION=%s: %v", version.CKEVersion, err)
	}
	t.Logf("it said:\n%s", said.String())
	for _, f := range files {
		want, _ := os.ReadFile(filepath.Join(root, f))
		got, err := os.ReadFile(filepath.Join(copyDir, f))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s changed (%v)", f, err)
		}
	}
	// Nothing new either (a go.sum where there was none).
	var extra []string
	if err := filepath.WalkDir(copyDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(copyDir, p)
		if !slices.Contains(files, filepath.ToSlash(rel)) {
			extra = append(extra, rel)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(extra) > 0 {
		t.Errorf("files made: %q", extra)
	}
}
