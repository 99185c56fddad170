package cketest_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
)

// TestBinaries: CKE's cke and ckecli are CKE's release Version, built with the
// dependency versions of CKE's release. Run alone, this test builds them
// into the cache (make test does first, in internal/testutil/prepare):
//
//	go test -count=1 -timeout 45m -run TestBinaries ./internal/testutil/cketest/
func TestBinaries(t *testing.T) {
	cke, ckecli := cketest.Binaries(t)

	// The versions ckemodule/go.mod requires: CKE's, and its own etcd and
	// Kubernetes (make bump-cke moves them).
	data, err := os.ReadFile("ckemodule/go.mod")
	if err != nil {
		t.Fatal(err)
	}
	required := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[1], "v") {
			required[f[0]] = f[1]
		}
	}
	if required["github.com/cybozu-go/cke"] != cketest.Version {
		t.Fatalf("ckemodule/go.mod requires CKE %q; cketest.Version is %s", required["github.com/cybozu-go/cke"], cketest.Version)
	}

	out, err := exec.Command(ckecli, "--version").CombinedOutput()
	if want := "ckecli version " + strings.TrimPrefix(cketest.Version, "v"); err != nil || strings.TrimSpace(string(out)) != want {
		t.Errorf("ckecli --version: %v\n%s, want %q", err, out, want)
	}
	// CKE's server has no --version: its build information says what it is.
	for _, bin := range []string{cke, ckecli} {
		out, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", bin, err)
		}
		info := string(out)
		for _, want := range []string{
			"\tmod\tgithub.com/cybozu-go/cke\t" + cketest.Version + "\t",
			// CKE's go.mod, not ckegen's newer etcd and Kubernetes.
			"\tdep\tgo.etcd.io/etcd/client/v3\t" + required["go.etcd.io/etcd/client/v3"] + "\t",
			"\tdep\tk8s.io/apimachinery\t" + required["k8s.io/apimachinery"] + "\t",
		} {
			if !strings.Contains(info, want) {
				t.Errorf("%s: the build information lacks %q:\n%s", bin, strings.TrimSpace(want), info)
			}
		}
	}
	// pkg/cke is CKE's server: its flags.
	out, _ = exec.Command(cke, "--help").CombinedOutput()
	for _, flag := range []string{"--config", "--interval", "--session-ttl", "--http"} {
		if !strings.Contains(string(out), flag) {
			t.Errorf("cke --help lacks %s:\n%s", flag, out)
		}
	}
}
