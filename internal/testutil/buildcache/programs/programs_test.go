package programs

import (
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
