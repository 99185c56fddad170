package liveview

import (
	"context"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/storage"
)

// process is a server on a real etcd: a session, a campaign on an
// election, and, when it runs ckegen, its record of presence under the
// session's lease, as ckegen's daemon and CKE's server with ckegen inside
// keep it.
type process struct {
	sess *concurrency.Session
	key  string
}

func start(t *testing.T, st storage.Storage, election, name string, p *storage.Presence) *process {
	t.Helper()
	sess, err := concurrency.NewSession(st.Client, concurrency.WithTTL(30))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	if p != nil {
		p.Name = name
		if err := st.PutPresence(context.Background(), sess.Lease(), *p); err != nil {
			t.Fatal(err)
		}
	}
	e := concurrency.NewElection(sess, st.Key(election))
	if err := e.Campaign(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return &process{sess: sess, key: e.Key()}
}

func inside(version string) *storage.Presence {
	return &storage.Presence{Kind: storage.PresenceInsideCKE, Version: version, Commit: "abc", CKEVersion: "v1.35.4", Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func daemonPresence(version string) *storage.Presence {
	return &storage.Presence{Kind: storage.PresenceDaemon, Version: version, Commit: "def", CKEVersion: "v1.35.4", Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func read(t *testing.T, st storage.Storage, own intake.Ownership) Actor {
	t.Helper()
	r, err := ReadActor(context.Background(), st, own, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func check(t *testing.T, what string, r Actor, kind ActorKind, says ...string) {
	t.Helper()
	if r.Kind != kind {
		t.Errorf("%s: kind %s, want %s (%s)", what, r.Kind, kind, r.Says)
	}
	for _, s := range says {
		if !strings.Contains(r.Says, s) {
			t.Errorf("%s: %q lacks %q", what, r.Says, s)
		}
	}
}

// TestWhoActs: each case of who acts, on a real etcd with real sessions,
// elections and leases: nothing leads; CKE's server leads with no record
// (not known, never CKE's own); with ckegen inside; with ckegen inside
// switched off, or leaving the integration to daemons none of which
// leads; ckegen's daemon, alone and beside CKE's server. Each says how old
// its evidence is (the lease), and the record of a server that does not
// lead is no evidence for the one that does.
func TestWhoActs(t *testing.T) {
	st := storage.New(etcdtest.Client(t), "")
	check(t, "nothing", read(t, st, intake.Ownership{}), Nobody, "nothing leads: no key under leader/ nor sabakan/ckegen/leader/")

	// A CKE server of no record leads; a follower of ckegen inside
	// campaigns behind it: its record says nothing of the leader.
	own := start(t, st, storage.KeyLeader, "cke-1", nil)
	start2 := make(chan *process)
	go func() { start2 <- start(t, st, storage.KeyLeader, "cke-2", inside("v0.2.0")) }()
	waitKeys(t, st, storage.KeyLeader, 2)
	r := read(t, st, intake.Ownership{})
	check(t, "CKE's server of no record", r, CKENotKnown, "CKE's server cke-1 leads; whether ckegen runs inside is not known",
		"its election key's lease was renewed at most", "expires in")
	if r.CKE == nil || r.CKE.Presence != nil || r.CKE.LeaseTTL != storage.Duration(30*time.Second) || r.CKE.LeaseLeft <= 0 {
		t.Errorf("CKE's server of no record: %+v", r.CKE)
	}
	if strings.Contains(r.Says, "own integration") {
		t.Errorf("a server of no record is claimed to be CKE's own: %s", r.Says)
	}
	if v, _ := r.Version(); v != "" {
		t.Errorf("version of a leader of no record: %q", v)
	}

	// It stops: the follower, with ckegen inside, leads.
	own.sess.Close()
	follower := <-start2
	r = read(t, st, intake.Ownership{})
	check(t, "ckegen inside", r, InsideCKE, "CKE's server cke-2 leads with ckegen v0.2.0 (commit abc, for CKE v1.35.4) inside", "running since 2026-01-01T00:00:00Z")
	if v, who := r.Version(); v != "v0.2.0" || who != "cke-2" {
		t.Errorf("version: %q on %q", v, who)
	}
	check(t, "ckegen inside, switched off", read(t, st, intake.Ownership{CKEDisabled: true}), CKEWithoutCKEGen,
		"CKE's server cke-2 leads and runs no ckegen now", "but CKE's sabakan/disabled is true")
	yielding := intake.Ownership{Owner: intake.OwnerCKEGen, OwnerRev: 1, CKEDisabled: true}
	check(t, "ckegen inside, leaving it to no daemon", read(t, st, yielding), CKEWithoutCKEGen,
		"it leaves the integration to ckegen's daemons (sabakan/owner: ckegen), and none leads")

	// A daemon leads: beside the server, it acts when the server leaves
	// the integration to it.
	start(t, st, storage.KeyCKEGenLeader, "gen-1", daemonPresence("v0.2.1"))
	check(t, "a daemon beside ckegen inside", read(t, st, yielding), Daemon,
		"ckegen's daemon gen-1 (v0.2.1 (commit def, for CKE v1.35.4)) leads", "beside CKE's server cke-2 with ckegen v0.2.0")
	check(t, "ckegen inside integrating beside a daemon", read(t, st, intake.Ownership{}), InsideCKE, "cke-2")

	// The server stops: its record goes with its lease.
	follower.sess.Close()
	r = read(t, st, intake.Ownership{})
	check(t, "a daemon alone", r, Daemon, "ckegen's daemon gen-1", "no CKE server leads (nothing under leader/)")
	if v, who := r.Version(); v != "v0.2.1" || who != "gen-1" {
		t.Errorf("version: %q on %q", v, who)
	}
	resp, err := st.Client.Get(context.Background(), st.Key(storage.KeyPresence), clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || resp.Count != 1 {
		t.Errorf("records of presence after the server stopped: %v, %d, want the daemon's alone", err, resp.Count)
	}
}

func waitKeys(t *testing.T, st storage.Storage, prefix string, n int64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		resp, err := st.Client.Get(context.Background(), st.Key(prefix), clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count == n {
			return
		}
	}
	t.Fatalf("%d keys under %s: not within 10s", n, prefix)
}

// TestCause: the note's cause for each case, on a real etcd: nothing
// leads; CKE's server of no record leads; CKE's server with ckegen inside
// has written no status under its lease (Vault not connected); its
// status says a phase with operations to run; a status key left by
// another server's lease is not its. Each is what Cause says, never the
// one sentence for all.
func TestCause(t *testing.T) {
	st := storage.New(etcdtest.Client(t), "")
	ctx := context.Background()
	if c := read(t, st, intake.Ownership{}).Cause(nil); c != "no server leads: nothing under leader/ nor sabakan/ckegen/leader/" {
		t.Errorf("nothing leads: %q", c)
	}
	p := start(t, st, storage.KeyLeader, "cke-1", nil)
	if c := read(t, st, intake.Ownership{}).Cause(nil); !strings.HasPrefix(c, "CKE's server cke-1 leads; whether ckegen runs inside is not known") {
		t.Errorf("CKE's server of no record: %q", c)
	}
	p.sess.Close()

	p = start(t, st, storage.KeyLeader, "cke-2", inside("v0.2.0"))
	// A status key under another lease (a server before this one).
	other, err := st.Client.Grant(ctx, 60)
	if err != nil {
		t.Fatal(err)
	}
	putStatus := func(lease clientv3.LeaseID, phase string) *intake.CKEStatus {
		t.Helper()
		s := &intake.CKEStatus{Phase: phase, Timestamp: time.Now().Add(-time.Minute)}
		data := `{"phase":"` + phase + `","timestamp":"` + s.Timestamp.UTC().Format(time.RFC3339) + `"}`
		if _, err := st.Client.Put(ctx, st.Key(storage.KeyCKEStatus), data, clientv3.WithLease(lease)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	vault := "CKE's server cke-2 leads but has written no status of its own (status) since: it calls ckegen only past the setup of its infrastructure, so Vault is not connected"
	if c := read(t, st, intake.Ownership{}).Cause(nil); !strings.HasPrefix(c, vault) {
		t.Errorf("no status key: %q", c)
	}
	old := putStatus(other.ID, "completed")
	if c := read(t, st, intake.Ownership{}).Cause(old); !strings.HasPrefix(c, vault) {
		t.Errorf("a status key of another server: %q", c)
	}
	busy := putStatus(p.sess.Lease(), "upgrade")
	if c := read(t, st, intake.Ownership{}).Cause(busy); c != "CKE has operations to run: its server cke-2 is in phase upgrade (written 1m0s ago), and calls ckegen only when it has none" {
		t.Errorf("operations to run: %q", c)
	}
	rest := putStatus(p.sess.Lease(), "completed")
	if c := read(t, st, intake.Ownership{}).Cause(rest); !strings.HasPrefix(c, "CKE's server cke-2 is in phase completed (written 1m0s ago), in which it calls ckegen, yet it has not") {
		t.Errorf("at rest: %q", c)
	}
}

// TestUnreadableRecord: a leader whose record of presence does not parse
// is not taken for one that keeps none: who acts says the record is
// there and why it cannot be read.
func TestUnreadableRecord(t *testing.T) {
	st := storage.New(etcdtest.Client(t), "")
	p := start(t, st, storage.KeyLeader, "cke-1", nil)
	if _, err := st.Client.Put(context.Background(), st.Key(storage.PresenceKey(p.sess.Lease())), `{"kind":`, clientv3.WithLease(p.sess.Lease())); err != nil {
		t.Fatal(err)
	}
	r := read(t, st, intake.Ownership{})
	check(t, "CKE's server of an unreadable record", r, CKENotKnown, "whether ckegen runs inside is not known: its record sabakan/ckegen/presence/", "does not parse")
	if strings.Contains(r.Says, "keeps no record") {
		t.Errorf("an unreadable record is taken for none: %s", r.Says)
	}
	start(t, st, storage.KeyCKEGenLeader, "gen-1", daemonPresence("v0.2.1"))
	check(t, "a daemon beside it", read(t, st, intake.Ownership{}), Daemon, "beside CKE's server cke-1, whose record sabakan/ckegen/presence/")
}
