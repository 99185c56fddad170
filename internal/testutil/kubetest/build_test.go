package kubetest

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
	dir, err := ModuleDir()
	if err != nil {
		t.Fatal(err)
	}
	v, err := kubernetesVersion(dir)
	if err != nil || !strings.HasPrefix(v, "v1.34.") {
		t.Errorf("the module's version %q, %v; want v1.34.x (TestStart checks the server says 1.34)", v, err)
	}
	spec, err := Spec()
	if err != nil || !strings.Contains(spec.Flags[0], ".gitVersion="+v+" ") || !strings.Contains(spec.Flags[0], ".gitMinor=34 ") {
		t.Errorf("Spec's flags %q, %v", spec.Flags, err)
	}
}
