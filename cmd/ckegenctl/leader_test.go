package main

import (
	"context"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/storage"
)

// TestLeaderCommand: `leader` prints ckegen's leader, from
// sabakan/ckegen/leader/, never CKE's server; --cke prints CKE's.
func TestLeaderCommand(t *testing.T) {
	f := newPlanFixture(t)
	check := func(args []string, code int, stdout, stderr string) {
		t.Helper()
		out, errOut, c := f.run(args...)
		if c != code || out != stdout || errOut != stderr {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want %d, %q, %q", args, c, out, errOut, code, stdout, stderr)
		}
	}
	nothing := "ckegenctl: nothing leads: no ckegen daemon (nothing under /cke/sabakan/ckegen/leader/) and no CKE server (nothing under /cke/leader/); " +
		"is ckegen's daemon, or CKE's server, running on this etcd and prefix?\n"
	check([]string{"leader"}, 1, "", nothing)
	check([]string{"leader", "--cke"}, 1, "", "ckegenctl: no CKE server leads: nothing under /cke/leader/\n")
	campaign(t, f.st, storage.KeyLeader, "cke-server-1")
	// CKE's server keeps no record of ckegen: CKE's own binary, or an
	// older cke with ckegen inside.
	if out, errOut, c := f.run("leader"); c != 1 || out != "" || !strings.HasPrefix(errOut, "ckegenctl: no ckegen daemon leads (nothing under /cke/sabakan/ckegen/leader/), "+
		"and CKE's server cke-server-1 leads; whether ckegen runs inside is not known") {
		t.Errorf("leader beside a CKE server of no record: exit %d, stdout %q, stderr %q", c, out, errOut)
	}
	check([]string{"leader", "--cke"}, 0, "cke-server-1\n", "")
	campaign(t, f.st, storage.KeyCKEGenLeader, "gen-1")
	check([]string{"leader"}, 0, "gen-1\n", "")
	check([]string{"leader", "--cke"}, 0, "cke-server-1\n", "")
	// A second candidate does not lead.
	sess, err := concurrency.NewSession(f.st.Client)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = concurrency.NewElection(sess, f.st.Key(storage.KeyCKEGenLeader)).Campaign(ctx, "gen-2") }()
	for {
		resp, err := f.st.Client.Get(context.Background(), f.st.Key(storage.KeyCKEGenLeader), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == 2 {
			break
		}
	}
	check([]string{"leader"}, 0, "gen-1\n", "")
}
