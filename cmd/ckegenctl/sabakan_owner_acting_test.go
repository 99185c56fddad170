package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// server is a CKE server on the fixture's etcd: a session, its campaign
// on leader/ and, with ckegen inside, its record of presence.
type server struct {
	sess *concurrency.Session
	key  string
}

func startServer(t *testing.T, st storage.Storage, name string, p *storage.Presence) server {
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
	e := concurrency.NewElection(sess, st.Key(storage.KeyLeader))
	if err := e.Campaign(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return server{sess: sess, key: e.Key()}
}

// TestOwnerAndStatusSayWhoLeads: ckegen inside CKE's server leads and
// ticks; then a CKE server of no record (CKE's own binary) leads after
// it; then nothing leads. owner, status and leader say which, from the
// elections and the records, never from the mode of the last tick: with
// CKE's own binary leading they never say that ckegen writes or runs
// inside CKE, and the note of the silent status names its cause.
func TestOwnerAndStatusSayWhoLeads(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	// The rate model: in the count model, owner and status warn of CKE's
	// own integration too (TestCKEOwnWarning).
	putSettings(t, f.st, "", rateConstraints, "")
	ours := startServer(t, f.st, "cke-1", &storage.Presence{Kind: storage.PresenceInsideCKE, Version: "v0.9.0", Commit: "abc", CKEVersion: "v1.35.4"})
	last := time.Now().Add(-5 * time.Minute).UTC().Truncate(time.Second)
	mem, err := json.Marshal(decision.Memory{Leader: decision.Config{Mode: decision.ModeInsideCKE}})
	must(t, err)
	must(t, f.st.PutStatus(ctx, ours.key, storage.Status{Result: "ok", Time: last, LastRun: last, Since: last, Leader: "cke-1",
		Mode: decision.ModeInsideCKE, Interval: storage.Duration(time.Minute)}, mem))

	out, _, code := f.run("sabakan", "owner")
	for _, want := range []string{"LEADS NOW       CKE's server cke-1 leads with ckegen v0.9.0 (commit abc, for CKE v1.35.4) inside (its election key's lease",
		"MODE            inside CKE:", "WRITES CLUSTER  " + liveview.InsideWriter} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("owner, ckegen inside: exit %d\n%s\nlacks %q", code, out, want)
		}
	}
	if out, errOut, code := f.run("leader"); code != 0 || out != "cke-1 (CKE's server, /cke/leader/, with ckegen v0.9.0 inside; no ckegen daemon leads)\n" {
		t.Errorf("leader inside CKE: exit %d, %q, %q", code, out, errOut)
	}
	ownerOut := out
	out, _, _ = f.run("sabakan", "status")
	sameWriter(t, "ckegen inside", ownerOut, out)
	if !strings.Contains(out, "VERSION         ckegen v0.9.0 on cke-1; this ckegenctl is "+version.String()+"\n") ||
		!strings.Contains(out, "why: CKE's server cke-1 leads but has written no status of its own (status) since") {
		t.Errorf("status, ckegen inside, silent with no CKE status:\n%s", out)
	}

	// CKE's own binary leads after ours: no record.
	ours.sess.Close()
	theirs := startServer(t, f.st, "cke-2", nil)
	out, _, _ = f.run("sabakan", "owner")
	for _, want := range []string{"LEADS NOW       CKE's server cke-2 leads; whether ckegen runs inside is not known",
		"MODE            not known: CKE's server cke-2 leads", "WRITES CLUSTER  not known: CKE's server cke-2 leads and keeps no record of ckegen"} {
		if !strings.Contains(out, want) {
			t.Errorf("owner, CKE's own binary:\n%s\nlacks %q", out, want)
		}
	}
	for _, not := range []string{"WRITES CLUSTER  ckegen", "MODE            inside CKE", "CKEGEN LEADER   none: ckegen runs inside"} {
		if strings.Contains(out, not) {
			t.Errorf("owner, CKE's own binary:\n%s\nsays %q", out, not)
		}
	}
	if out, errOut, code := f.run("leader"); code != 1 || out != "" || !strings.Contains(errOut, "CKE's server cke-2 leads; whether ckegen runs inside is not known") {
		t.Errorf("leader beside CKE's own: exit %d, %q, %q", code, out, errOut)
	}
	ownerOut = out
	out, _, _ = f.run("sabakan", "status")
	sameWriter(t, "CKE's own binary", ownerOut, out)
	for _, want := range []string{"LEADER          cke-1 (the last tick's, 5m", "LEADS NOW       CKE's server cke-2 leads; whether ckegen runs inside is not known",
		"MODE            not known:", "why: CKE's server cke-2 leads; whether ckegen runs inside is not known"} {
		if !strings.Contains(out, want) {
			t.Errorf("status, CKE's own binary:\n%s\nlacks %q", out, want)
		}
	}

	// Nothing leads.
	theirs.sess.Close()
	out, _, _ = f.run("sabakan", "status")
	for _, want := range []string{"LEADER          cke-1 (the last tick's, 5m", "LEADS NOW       nothing leads", "MODE            none: nothing leads",
		"why: no server leads: nothing under leader/ nor sabakan/ckegen/leader/"} {
		if !strings.Contains(out, want) {
			t.Errorf("status, nothing leads:\n%s\nlacks %q", out, want)
		}
	}
	if strings.Contains(out, "CKE runs its integration only when it has no operations") {
		t.Errorf("status gives the one cause for every case:\n%s", out)
	}
	out, _, _ = f.run("sabakan", "status", "-o", "json")
	var v struct {
		Acting struct{ Kind string } `json:"acting"`
		Notes  []string              `json:"notes"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Acting.Kind != "none" || len(v.Notes) != 1 {
		t.Errorf("status -o json, nothing leads: %v %+v\n%s", err, v, out)
	}
}

// TestSkewWarning: a ckegenctl of another minor version than the ckegen
// that leads (its daemon, else CKE's server with ckegen inside) warns
// once on stderr, naming both versions; the same minor, or a development
// build, does not.
func TestSkewWarning(t *testing.T) {
	f := newPlanFixture(t)
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	startServer(t, f.st, "cke-1", &storage.Presence{Kind: storage.PresenceInsideCKE, Version: "v0.1.3", Commit: "abc", CKEVersion: "v1.35.4"})
	for _, c := range []struct{ mine, warn string }{
		{"v0.2.0", "warning: this ckegenctl is v0.2.0, and CKE's leading server (ckegen inside) cke-1 runs ckegen v0.1.3: their minor versions differ"},
		{"v0.1.0", ""},
		{"devel", ""},
	} {
		version.Version = c.mine
		// sabakan owner reads etcd more than once: one warning all the same.
		_, errOut, code := f.run("sabakan", "owner")
		if code != 0 || strings.Count(errOut, "warning:") != min(len(c.warn), 1) || !strings.HasPrefix(errOut, c.warn) {
			t.Errorf("ckegenctl %s beside v0.1.3: exit %d, stderr %q, want %q", c.mine, code, errOut, c.warn)
		}
	}
}

// TestNobodyLeadsEachLeader: while nothing leads, owner says what each
// possible leader would write, by the gate decided for each (ckegen's
// daemon alone, CKE's server alone, both), never a guess of one.
func TestNobodyLeadsEachLeader(t *testing.T) {
	f := newPlanFixture(t)
	putSettings(t, f.st, string(storedTemplate(t)), rateConstraints, f.sabakan.URL+"/graphql")
	writes := func() string {
		t.Helper()
		out, errOut, code := f.run("sabakan", "owner")
		if code != 0 {
			t.Fatalf("owner: exit %d, %s", code, errOut)
		}
		for _, l := range strings.Split(out, "\n") {
			if w, ok := strings.CutPrefix(l, "WRITES CLUSTER  "); ok {
				return w
			}
		}
		t.Fatalf("owner has no WRITES CLUSTER:\n%s", out)
		return ""
	}
	const none = "none now: nothing leads (nothing under leader/ nor sabakan/ckegen/leader/); "

	// ckegen owns the integration: its daemon writes, alone or beside
	// CKE's server; CKE's server alone writes nothing, its switch off.
	if _, errOut, code := f.run("sabakan", "takeover"); code != 0 {
		t.Fatal(errOut)
	}
	want := none + "if ckegen's daemon leads alone: ckegen, standalone (no CKE server holds leader/); " +
		"if CKE's server leads alone: none: CKE's sabakan/disabled is true (inside CKE's server, the switch of ckegen too); " +
		"if both lead: ckegen, while CKE's status says completed, reboot-nodes, upgrade-aborted or etcd-boot-aborted"
	if got := writes(); got != want {
		t.Errorf("ckegen owns, nothing leads:\n%s\nwant\n%s", got, want)
	}

	// Handed back: CKE's server writes, with its own integration or
	// ckegen's inside; ckegen's daemon holds, even alone.
	if _, errOut, code := f.run("sabakan", "handback"); code != 0 {
		t.Fatal(errOut)
	}
	want = none + "if ckegen's daemon leads alone: CKE's own integration once its server runs (handed back; ckegen holds, OWNED_BY_CKE, also while no CKE server holds leader/); " +
		"if CKE's server leads alone: its own integration: CKE's own if it runs CKE's own binary, ckegen if it is a cke built from ckeserver/; " +
		"if both lead: CKE's own integration (ckegen holds, OWNED_BY_CKE; ckegenctl sabakan takeover hands it to ckegen)"
	if got := writes(); got != want {
		t.Errorf("handed back, nothing leads:\n%s\nwant\n%s", got, want)
	}
}

// sameWriter fails unless owner's and status's WRITES CLUSTER rows say
// the same (liveview.Writes), and say something.
func sameWriter(t *testing.T, when, owner, status string) {
	t.Helper()
	row := func(out string) string {
		for _, l := range strings.Split(out, "\n") {
			if v, ok := strings.CutPrefix(l, "WRITES CLUSTER"); ok {
				return strings.TrimSpace(v)
			}
		}
		return ""
	}
	if o, s := row(owner), row(status); o == "" || o != s {
		t.Errorf("%s: owner says %q writes, status %q", when, o, s)
	}
}
