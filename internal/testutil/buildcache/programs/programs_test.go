package programs

import (
	"archive/tar"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubernetesVersion: the version stamped into the kube-apiserver is
// the one go.mod requires, on a require line of its own or in a block,
// never a replacement's.
func TestKubernetesVersion(t *testing.T) {
	for _, c := range []struct{ gomod, want string }{
		{"module m\n\nrequire (\n\tk8s.io/component-base v0.34.4\n\tk8s.io/kubernetes v1.34.4\n)\n", "v1.34.4"},
		{"module m\n\nrequire k8s.io/kubernetes v1.35.0-rc.1 // indirect\n", "v1.35.0-rc.1"},
		{"module m\n\nrequire (\n\tk8s.io/kubernetes v1.34.4\n)\n\nreplace k8s.io/api => k8s.io/api v0.34.4\n\nreplace (\n\tk8s.io/kubernetes v1.34.4 => ../k\n)\n", "v1.34.4"},
		{"module m\n", ""},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(c.gomod), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := kubernetesVersion(dir)
		if got != c.want || (err != nil) != (c.want == "") {
			t.Errorf("%q: %q, %v; want %q", c.gomod, got, err, c.want)
		}
	}
	dir, err := moduleDir("mtest/kubeapiserver", "the kube-apiserver module")
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetesVersion(dir)
	if err != nil || !strings.HasPrefix(v, "v1.34.") {
		t.Errorf("the module's version %q, %v; want v1.34.x (TestStart checks the server says 1.34)", v, err)
	}
	spec, err := KubeAPIServerSpec()
	if err != nil || !strings.Contains(spec.Flags[0], ".gitVersion="+v+" ") || !strings.Contains(spec.Flags[0], ".gitMinor=34 ") {
		t.Errorf("Spec's flags %q, %v", spec.Flags, err)
	}
}

// TestOverrides: a program taken from elsewhere is used as it is, and one
// that is not there is an error naming the variable.
func TestOverrides(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"kube-apiserver", "cke"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvKubeAPIServer, filepath.Join(dir, "kube-apiserver"))
	if p, err := KubeAPIServer(nil); err != nil || p != filepath.Join(dir, "kube-apiserver") {
		t.Errorf("KubeAPIServer = %q, %v", p, err)
	}
	t.Setenv(EnvKubeAPIServer, filepath.Join(dir, "missing"))
	if _, err := KubeAPIServer(nil); err == nil || !strings.Contains(err.Error(), EnvKubeAPIServer) {
		t.Errorf("a missing kube-apiserver: %v", err)
	}
	t.Setenv(EnvCKEBinDir, dir)
	if _, err := CKE(nil); err == nil || !strings.Contains(err.Error(), "does not hold both cke and ckecli") {
		t.Errorf("a directory without ckecli: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ckecli"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := CKE(nil); err != nil || d != dir {
		t.Errorf("CKE = %q, %v", d, err)
	}
	t.Setenv(EnvOpenBao, filepath.Join(dir, "cke"))
	if p, err := OpenBao(nil); err != nil || p != filepath.Join(dir, "cke") {
		t.Errorf("OpenBao = %q, %v", p, err)
	}
	t.Setenv(EnvOpenBao, filepath.Join(dir, "missing"))
	if _, err := OpenBao(nil); err == nil || !strings.Contains(err.Error(), EnvOpenBao) {
		t.Errorf("a missing bao: %v", err)
	}
}

// TestCKESpec: CKE's commands are built with CKE from ../shared/goproxy
// first, into an entry named by CKE's version.
func TestCKESpec(t *testing.T) {
	spec, err := CKESpec()
	if err != nil {
		t.Fatal(err)
	}
	entry, err := spec.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(entry), CKEVersion+"-") || filepath.Base(spec.FileProxy) != "goproxy" || len(spec.Outputs) != 2 {
		t.Errorf("entry %s, file proxy %s, outputs %q", entry, spec.FileProxy, spec.Outputs)
	}
}

// writeArchive writes a gzipped tar archive of entries (name: content; a
// name ending in "/" is a directory, content "->X" a symbolic link to X)
// with git archive's global header first.
func writeArchive(t *testing.T, name string, entries [][2]string) {
	t.Helper()
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	tw := tar.NewWriter(zw)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeXGlobalHeader, Name: "pax_global_header", PAXRecords: map[string]string{"comment": "0123"}}))
	for _, e := range entries {
		switch {
		case strings.HasSuffix(e[0], "/"):
			must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: e[0], Mode: 0o775}))
		case strings.HasPrefix(e[1], "->"):
			must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: e[0], Linkname: e[1][2:]}))
		default:
			must(tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: e[0], Mode: 0o664, Size: int64(len(e[1]))}))
			_, err := tw.Write([]byte(e[1]))
			must(err)
		}
	}
	must(tw.Close())
	must(zw.Close())
	must(f.Close())
}

// TestUnpackSource: the archive is unpacked once into a directory named by
// its hash, directories and regular files only, and the copy holds the
// archive's hash, which keys the build; another archive is another copy.
// An entry outside the top directory is refused, and nothing is left.
func TestUnpackSource(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	archive := filepath.Join(dir, "src.tar.gz")
	good := [][2]string{{openBaoTop + "/", ""}, {openBaoTop + "/go.mod", "module m\n"}, {openBaoTop + "/sdk/", ""},
		{openBaoTop + "/sdk/a.go", "package sdk\n"}, {openBaoTop + "/LINK.md", "->go.mod"}}
	writeArchive(t, archive, good)
	module, err := unpackSource(archive, cache)
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := fileSum(archive)
	if want := filepath.Join(cache, "src-"+OpenBaoVersion+"-"+sum[:16], openBaoTop); module != want {
		t.Errorf("module %s, want %s", module, want)
	}
	if data, err := os.ReadFile(filepath.Join(module, "sdk", "a.go")); err != nil || string(data) != "package sdk\n" {
		t.Errorf("sdk/a.go: %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(module, "LINK.md")); !os.IsNotExist(err) {
		t.Errorf("a symbolic link was unpacked: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(module, sourceSum)); strings.TrimSpace(string(data)) != sum {
		t.Errorf("%s holds %q, want the archive's hash %s", sourceSum, data, sum)
	}
	// Unpacked once: a second call uses the copy as it is.
	marker := filepath.Join(module, "marker")
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if again, err := unpackSource(archive, cache); err != nil || again != module {
		t.Errorf("again: %s, %v", again, err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Errorf("the copy was unpacked again: %v", err)
	}
	// Another archive, another copy.
	writeArchive(t, archive, append(good, [2]string{openBaoTop + "/b.go", "package m\n"}))
	if other, err := unpackSource(archive, cache); err != nil || other == module {
		t.Errorf("another archive: %s, %v; want a copy other than %s", other, err, module)
	}

	for _, bad := range []string{"elsewhere/go.mod", openBaoTop + "/../x", "/etc/x"} {
		writeArchive(t, archive, append(good, [2]string{bad, "x"}))
		c := t.TempDir()
		if _, err := unpackSource(archive, c); err == nil || !strings.Contains(err.Error(), "is not under "+openBaoTop) {
			t.Errorf("an entry %q: %v", bad, err)
		}
		if des, _ := os.ReadDir(c); len(des) != 0 {
			t.Errorf("an entry %q: left %v in the cache", bad, des)
		}
	}
	if _, err := unpackSource(filepath.Join(dir, "missing.tar.gz"), cache); err == nil || !strings.Contains(err.Error(), EnvOpenBao) {
		t.Errorf("a missing archive: %v; want the error to name %s", err, EnvOpenBao)
	}
}

// TestOpenBaoSpec: OpenBao is built from the archive beside the
// repository, unpacked into its cache, with ../shared/goproxy first, into
// an entry named by its version and keyed by the archive's hash.
func TestOpenBaoSpec(t *testing.T) {
	archive, err := OpenBaoSource()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(archive) != "openbao-"+OpenBaoVersion+"-src.tar.gz" || filepath.Base(filepath.Dir(archive)) != "openbao" {
		t.Errorf("the source is looked for at %s", archive)
	}
	t.Setenv(EnvOpenBaoCache, t.TempDir())
	spec, err := OpenBaoSpec()
	if _, serr := os.Stat(archive); serr != nil {
		if err == nil || !strings.Contains(err.Error(), archive) || !strings.Contains(err.Error(), EnvOpenBao) {
			t.Errorf("without the archive: %v; want the error to name it and %s", err, EnvOpenBao)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	entry, err := spec.Entry()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(filepath.Base(entry), OpenBaoVersion+"-") || filepath.Base(spec.FileProxy) != "goproxy" ||
		filepath.Base(spec.Module) != openBaoTop || spec.Timeout != OpenBaoBuildTimeout {
		t.Errorf("entry %s, module %s, file proxy %s, limit %s", entry, spec.Module, spec.FileProxy, spec.Timeout)
	}
	if _, err := os.Stat(filepath.Join(spec.Module, "go.mod")); err != nil {
		t.Error(err)
	}
	// Keyed by the archive: a copy of another archive is another entry.
	if err := os.WriteFile(filepath.Join(spec.Module, sourceSum), []byte("0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if other, err := spec.Entry(); err != nil || other == entry {
		t.Errorf("the entry does not change with the archive's hash: %s, %v", other, err)
	}
}
