package vaulttest_test

import (
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/internal/testutil/vaulttest"
)

// TestStart: the server answers at its address with its root token, is
// OpenBao's release, has AppRole enabled, refuses a request without the
// token, and is gone after Stop. Run alone, this test builds bao into the
// cache (make test does first, in internal/testutil/prepare):
//
//	go test -count=1 -timeout 45m -run TestStart ./internal/testutil/vaulttest/
func TestStart(t *testing.T) {
	bin := vaulttest.Binary(t)
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "OpenBao "+vaulttest.Version+" ") {
		t.Errorf("bao version: %v: %s; want OpenBao %s", err, out, vaulttest.Version)
	}

	s := vaulttest.Start(t)
	code, body, err := s.Call(http.MethodGet, "/v1/sys/auth", "")
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"approle/"`) {
		t.Errorf("/v1/sys/auth: %d %v, want approle/ enabled:\n%s", code, err, body)
	}
	if env := s.Env(); len(env) != 2 || env[0] != "VAULT_ADDR="+s.Addr || env[1] != "VAULT_TOKEN="+s.Token {
		t.Errorf("Env() = %q", env)
	}
	resp, err := http.Get(s.Addr + "/v1/sys/auth")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("without the token: %s, want 403", resp.Status)
	}
	// The bao CLI, as CKE's ckecli is used, with Env.
	cmd := exec.Command(bin, "auth", "list")
	cmd.Env = append(cmd.Environ(), s.Env()...)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "approle/") {
		t.Errorf("bao auth list with Env(): %v\n%s", err, out)
	}

	s.Stop()
	if _, _, err := s.Call(http.MethodGet, "/v1/sys/health", ""); err == nil {
		t.Error("the server still answers after Stop")
	}
	s.Stop() // again: nothing
}
