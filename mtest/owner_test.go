package mtest

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
)

// TestOwnerNamesWhatLeads: who leads is read from CKE's election and the
// records ckegen keeps, never from the last tick's mode. Three CKE
// servers on one etcd, as a site in the middle of a change of binary: ours
// (ckegen inside) leads and generates the cluster; CKE v1.35.4's own cke
// and a second of ours campaign behind it. When ours stops, CKE's own
// leads: owner, status and the second server's /ckegen/status say that
// CKE's server leads and that whether ckegen runs inside is not known
// (never that ckegen writes, nor "inside CKE"). When CKE's own stops, the
// second of ours leads, without Vault: the note says it has not set up
// its infrastructure. When it stops too, nothing leads, and they say so.
func TestOwnerNamesWhatLeads(t *testing.T) {
	e := newEnv(t, withoutDaemons())
	ours := insideServer(t, e, false)
	ours.mustCkecli("sabakan", "set-url", "http://"+e.sabAddr)
	ours.mustCkecli("constraints", "set", "control-plane-count", "3")
	ours.mustCkecli("constraints", "set", "minimum-workers-rate", "80")
	ours.mustCkecli("sabakan", "set-template", "../examples/template-rate.yml")
	ours.server.start(t)
	e.eventually("the first cluster", 60*time.Second, e.hasCluster)
	e.waitStatus("ok", "", "", 10*time.Second)
	host := ours.hostname
	e.eventually("owner to name ckegen inside CKE's server", 10*time.Second, func() bool {
		out, err := e.ctl("sabakan", "owner")
		return err == nil && strings.Contains(out, "LEADS NOW       CKE's server "+host+" leads with ckegen ")
	})
	if kind := acting(t, ours); kind != "cke-with-ckegen" {
		t.Errorf("/ckegen/status while ours leads: acting %q", kind)
	}

	// CKE's own cke, then a second of ours, campaign behind it.
	own, cli := cketest.Binaries(t)
	theirs := newCKESite(e, own, cli)
	theirs.server.name, theirs.server.log = "cke-own", filepath.Join(e.dir, "cke-own.log")
	theirs.server.start(t)
	second := insideServer(t, e, false)
	second.server.name, second.server.log = "cke-inside-2", filepath.Join(e.dir, "cke-inside-2.log")
	// One after the other: CKE's own is next in line.
	e.eventually("CKE's own to campaign", 30*time.Second, func() bool { return e.leaderKeys() == 2 })
	second.server.start(t)
	e.eventually("the second of ours to campaign", 30*time.Second, func() bool { return e.leaderKeys() == 3 })

	ours.server.stop(syscall.SIGTERM)
	notKnown := "CKE's server " + host + " leads; whether ckegen runs inside is not known"
	e.eventually("owner to name CKE's server of no record", 30*time.Second, func() bool {
		out, err := e.ctl("sabakan", "owner")
		return err == nil && strings.Contains(out, "LEADS NOW       "+notKnown)
	})
	out := e.mustCtl("sabakan", "owner")
	for _, not := range []string{"WRITES CLUSTER  ckegen", "MODE            inside CKE"} {
		if strings.Contains(out, not) {
			t.Errorf("owner with CKE's own cke leading says %q:\n%s", not, out)
		}
	}
	if !strings.Contains(out, "WRITES CLUSTER  not known: CKE's server "+host+" leads and keeps no record of ckegen") {
		t.Errorf("owner with CKE's own cke leading:\n%s", out)
	}
	e.eventually("status's note to name CKE's server of no record", 30*time.Second, func() bool {
		out, err := e.ctl("sabakan", "status")
		return err == nil && strings.Contains(out, "LEADS NOW       "+notKnown) && strings.Contains(out, "why: "+notKnown)
	})
	if kind := acting(t, second); kind != "cke-not-known" {
		t.Errorf("/ckegen/status of a follower while CKE's own leads: acting %q", kind)
	}

	// The second of ours leads, with no Vault: it never gets past its
	// infrastructure, so it never calls ckegen.
	theirs.server.stop(syscall.SIGTERM)
	e.eventually("status's note to say the server leads without Vault", 30*time.Second, func() bool {
		out, err := e.ctl("sabakan", "status")
		return err == nil && strings.Contains(out, "LEADS NOW       CKE's server "+host+" leads with ckegen ") &&
			strings.Contains(out, "leads but has written no status of its own (status) since") && strings.Contains(out, "Vault is not connected")
	})
	if kind := acting(t, second); kind != "cke-with-ckegen" {
		t.Errorf("/ckegen/status while the second of ours leads: acting %q", kind)
	}
	if out, err := e.ctl("leader"); err != nil || !strings.HasPrefix(out, host+" (CKE's server, /cke/leader/, with ckegen ") {
		t.Errorf("leader inside CKE: %v %q", err, out)
	}

	// Nothing leads.
	second.server.stop(syscall.SIGTERM)
	e.eventually("owner and status to say nothing leads", 30*time.Second, func() bool {
		o, err1 := e.ctl("sabakan", "owner")
		s, err2 := e.ctl("sabakan", "status")
		return err1 == nil && err2 == nil && strings.Contains(o, "LEADS NOW       nothing leads") &&
			strings.Contains(s, "LEADS NOW       nothing leads") && strings.Contains(s, "why: no server leads")
	})
	if _, err := e.ctl("leader"); err == nil || !strings.Contains(err.Error(), "nothing leads") {
		t.Errorf("leader with nothing leading: %v", err)
	}
}

// acting is what k's /ckegen/status says of who acts.
func acting(t *testing.T, k *ckeSite) string {
	t.Helper()
	code, body := k.get(t, "/ckegen/status")
	var v struct {
		Acting struct{ Kind, Says string } `json:"acting"`
	}
	if err := json.Unmarshal([]byte(body), &v); code != 200 || err != nil {
		t.Fatalf("/ckegen/status: %d %v %s", code, err, body)
	}
	t.Logf("/ckegen/status of %s: %s", k.server.name, v.Acting.Says)
	return v.Acting.Kind
}

// leaderKeys is the number of keys under CKE's leader/: its servers
// campaigning.
func (e *env) leaderKeys() int64 {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx, "/cke/leader/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.Count
}
