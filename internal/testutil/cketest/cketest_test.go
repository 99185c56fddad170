package cketest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
)

// TestBinaries: CKE's cke and ckecli are CKE v1.35.4's, built with the
// dependency versions of CKE's release. Run alone, this test builds them
// into the cache (make test does first, in internal/testutil/prepare):
//
//	go test -count=1 -timeout 45m -run TestBinaries ./internal/testutil/cketest/
func TestBinaries(t *testing.T) {
	cke, ckecli := cketest.Binaries(t)

	out, err := exec.Command(ckecli, "--version").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "ckecli version 1.35.4" {
		t.Errorf("ckecli --version: %v\n%s", err, out)
	}
	// CKE's server has no --version: its build information says what it is.
	for _, bin := range []string{cke, ckecli} {
		out, err := exec.Command("go", "version", "-m", bin).Output()
		if err != nil {
			t.Fatalf("go version -m %s: %v", bin, err)
		}
		info := string(out)
		for _, want := range []string{
			"\tmod\tgithub.com/cybozu-go/cke\tv1.35.4\t",
			// CKE v1.35.4's go.mod, not ckegen's newer etcd and Kubernetes.
			"\tdep\tgo.etcd.io/etcd/client/v3\tv3.6.11\t",
			"\tdep\tk8s.io/apimachinery\tv0.35.5\t",
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
