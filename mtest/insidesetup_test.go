package mtest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/internal/testutil/vaulttest"
)

// Markers around docs/inside-cke.md's setup of a new site.
const (
	setupBegin = "<!-- new-site-setup: begin -->"
	setupEnd   = "<!-- new-site-setup: end -->"
)

// TestInsideSetup runs docs/inside-cke.md's setup of a new site ("A new
// site, in order") as an operator would, in bash: the sh blocks between
// the markers, as they are, against a real Vault (OpenBao's bao as
// `vault`, in dev mode with nothing enabled), a real etcd, CKE's own
// ckecli and ckegen's ckegenctl, with the site's values in the variables
// the section names. ckecli and ckegenctl are the real programs, given
// the test's etcd with --config as CKE's /etc/cke/config.yml would give
// it. Then it checks what the lines stored (Vault's connection and its
// AppRole, CKE's certificate authorities, the SSH key in Vault, the rate
// model's constraints, sabakan's URL and the template) and starts the
// section's last step, our cke: it connects to Vault, gets past its
// infrastructure to its phase (the nodes have no SSH: upgrade-aborted),
// and calls ckegen, whose tick is ok.
func TestInsideSetup(t *testing.T) {
	data, err := os.ReadFile("../docs/inside-cke.md")
	if err != nil {
		t.Fatal(err)
	}
	script, err := shBlocks(string(data), setupBegin, setupEnd)
	if err != nil {
		t.Fatalf("docs/inside-cke.md: %v", err)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("the doc's lines need bash: install it (apt-get install -y bash)")
		}
		t.Skip("the doc's lines need bash: install it (apt-get install -y bash) (under CI this fails)")
	}
	inside := cketest.Inside(t)
	_, ckecli := cketest.Binaries(t)
	bao := vaulttest.Binary(t)
	v := vaulttest.Start(t)
	// vaulttest enables AppRole, the section's first line: undone, so
	// that the line runs as on a new Vault.
	if code, body, err := v.Call(http.MethodDelete, "/v1/sys/auth/approle", ""); err != nil || code/100 != 2 {
		t.Fatalf("disabling AppRole: %d %s %v", code, body, err)
	}
	e := newEnv(t, withoutDaemons())
	k := newCKESite(e, inside, ckecli)
	k.server.name = "cke-inside"

	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"vault":     `"` + bao + `"`,
		"ckecli":    `"` + ckecli + `" --config "` + k.config + `"`,
		"ckegenctl": `"` + filepath.Join(binDir, "ckegenctl") + `" --config "` + k.config + `"`,
	} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\nexec "+target+` "$@"`+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tmpl, err := os.ReadFile("../examples/template-rate.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "template.yml"), tmpl, 0o644); err != nil {
		t.Fatal(err)
	}
	key := sshKey(t, dir)

	start := time.Now()
	ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append(v.Env(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"SSH_KEY="+key, "SABAKAN_URL=http://"+e.sabAddr)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("the section's lines failed (%v) after %s; their output:\n%s", err, time.Since(start).Round(time.Millisecond), out.String())
	}
	lines := time.Since(start)
	t.Logf("the section's lines took %s", lines.Round(time.Millisecond))

	// What they stored. Vault's connection: the address, and the role
	// id of Vault's AppRole cke.
	var conn struct {
		Endpoint string `json:"endpoint"`
		RoleID   string `json:"role-id"`
		SecretID string `json:"secret-id"`
	}
	if err := json.Unmarshal([]byte(ckeValue(t, e, "vault")), &conn); err != nil {
		t.Fatalf("/cke/vault: %v", err)
	}
	code, body, err := v.Call(http.MethodGet, "/v1/auth/approle/role/cke/role-id", "")
	if err != nil || code != http.StatusOK || conn.RoleID == "" || !strings.Contains(body, `"role_id":"`+conn.RoleID+`"`) {
		t.Errorf("Vault's AppRole cke: %d %v %s; /cke/vault's role-id %q", code, err, body, conn.RoleID)
	}
	if conn.Endpoint != v.Addr || conn.SecretID == "" {
		t.Errorf("/cke/vault: endpoint %q (want %s), secret-id %q", conn.Endpoint, v.Addr, conn.SecretID)
	}
	// vault init's certificate authorities, in etcd.
	for _, ca := range []string{"server", "etcd-peer", "etcd-client", "kubernetes"} {
		if !strings.Contains(ckeValue(t, e, "ca/"+ca), "BEGIN CERTIFICATE") {
			t.Errorf("/cke/ca/%s: no certificate (ckecli vault init)", ca)
		}
	}
	// The SSH key, as the default key in Vault.
	code, body, err = v.Call(http.MethodGet, "/v1/cke/secrets/ssh", "")
	pem, _ := os.ReadFile(key)
	var ssh struct {
		Data map[string]string `json:"data"`
	}
	if err != nil || code != http.StatusOK || json.Unmarshal([]byte(body), &ssh) != nil || ssh.Data[""] != string(pem) {
		t.Errorf("Vault's cke/secrets/ssh: %d %v, want the key file as the default key", code, err)
	}
	var cons map[string]int
	if err := json.Unmarshal([]byte(ckeValue(t, e, "constraints")), &cons); err != nil || cons["minimum-workers-rate"] != 80 || cons["control-plane-count"] != 3 {
		t.Errorf("/cke/constraints %v (%v): want the rate model, minimum-workers-rate 80, control-plane-count 3", cons, err)
	}
	if _, ok := cons["minimum-workers"]; ok {
		t.Errorf("/cke/constraints %v: the count model's key", cons)
	}
	// set-url stores the URL of sabakan's GraphQL endpoint.
	if got := ckeValue(t, e, "sabakan/url"); got != "http://"+e.sabAddr+"/graphql" {
		t.Errorf("/cke/sabakan/url %q, want http://%s/graphql", got, e.sabAddr)
	}
	if ckeValue(t, e, "sabakan/template") == "" {
		t.Error("no /cke/sabakan/template")
	}

	// The last step: our cke. It generates the cluster, connects to
	// Vault, gets past its infrastructure to its phase and calls ckegen.
	started := time.Now()
	k.server.start(t)
	e.eventually("CKE's status after its start", 60*time.Second, func() bool {
		var st struct {
			Phase     string    `json:"phase"`
			Timestamp time.Time `json:"timestamp"`
		}
		return json.Unmarshal([]byte(ckeValue(t, e, "status")), &st) == nil && st.Phase == "upgrade-aborted" && st.Timestamp.After(started)
	})
	st := e.waitTick("ckegen's tick called by CKE's server", started, 30*time.Second)
	log := k.serverLog()
	if !strings.Contains(log, "connected to vault") || strings.Contains(log, "vault is not connected") || strings.Contains(log, "no ssh private key") {
		t.Errorf("CKE's server did not get past Vault: %s", lastLine(log))
	}
	if st.Mode != "inside-cke" || st.Result != "ok" {
		t.Errorf("ckegen's status inside CKE's server: %+v", st)
	}
	if e.cluster() == nil {
		t.Error("no cluster written")
	}
	t.Logf("CKE's server: from its start to ckegen's tick in phase upgrade-aborted %s; the test %s",
		time.Since(started).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

// ckeValue reads a key under CKE's prefix, /cke/; "" when it does not
// exist.
func ckeValue(t *testing.T, e *env, key string) string {
	t.Helper()
	resp, err := e.cli.Get(e.ctx, "/cke/"+key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}
