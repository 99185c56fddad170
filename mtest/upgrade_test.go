package mtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/buildcache/programs"
	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/internal/testutil/needed"
	"github.com/ckegen/ckegen/internal/testutil/vaulttest"
)

// previousDaemons is the previous release's ckegen and ckegenctl, built
// from its commit (programs.PreviousRecord) once per machine.
var previousDaemons = needed.Program{
	What:      "the previous release's ckegen and ckegenctl, built from its commit in " + programs.PreviousRecord,
	Build:     programs.PreviousDaemons,
	Otherwise: "fetch the repository's history (git fetch --unshallow) so that the commit is in it",
}

// previous is the previous release's record; the test fails when it does
// not parse.
func previous(t *testing.T) programs.Previous {
	t.Helper()
	p, err := programs.ReadPrevious()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// upgradeFollow bounds the time from a change in sabakan to the leader's
// cluster write: the next tick (the interval) and the tick itself, with
// room for a loaded machine.
const upgradeFollow = 3 * time.Second

// TestRollingUpgrade (docs/install.md, "Upgrade"): the previous release's
// daemon and this tree's on one etcd, as a site upgrades them one host at
// a time and rolls back. The previous release leads, this tree's follows;
// the previous leader stops and this tree's leads; then the previous
// release starts again as the follower and this tree's stops. At each
// handover the one that leads after the other: ticks with no failure,
// writes no change of membership, follows an UNREACHABLE worker within
// its interval (the taint in cluster.yml), and lists in its history every
// node each of its writes changes.
func TestRollingUpgrade(t *testing.T) {
	oldDir := previousDaemons.Path(t)
	prev := previous(t)
	e := newEnv(t, withoutDaemons())
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	statuses := watchStatuses(t, e)
	oldBin, newBin := filepath.Join(oldDir, "ckegen"), filepath.Join(binDir, "ckegen")

	old := e.startDaemon("ckegen-old", oldBin)
	e.waitLeader(old.name, time.Now(), 30*time.Second)
	e.converge(60 * time.Second)
	cur := e.startDaemon("ckegen-new", newBin)
	var oldVersion, newVersion string
	e.eventually("both daemons to answer /version", 20*time.Second, func() bool {
		oldVersion, newVersion = e.daemonVersion(old), e.daemonVersion(cur)
		return oldVersion != "" && newVersion != ""
	})
	if oldVersion != prev.Version || newVersion == oldVersion {
		t.Fatalf("versions: the previous release answers %q (want %q), this tree's %q: they must differ", oldVersion, prev.Version, newVersion)
	}
	t.Logf("previous release %s (%s), this tree %s", oldVersion, prev.Commit[:12], newVersion)
	e.stillLeads(old.name, 2*time.Second)

	// Upgrade: the previous release's leader stops, this tree's leads.
	e.handover(statuses, old, cur, 0)
	// The previous release's CLI reads what this tree's daemon stored.
	e.previousCtlReads(filepath.Join(oldDir, "ckegenctl"), cur.name)
	// Rollback: the previous release starts again and follows; this
	// tree's stops, and the previous release leads.
	back := e.startDaemon("ckegen-old-again", oldBin)
	e.eventually("the previous release to serve again", 20*time.Second, func() bool { return e.daemonVersion(back) == prev.Version })
	e.stillLeads(cur.name, 2*time.Second)
	e.handover(statuses, cur, back, 1)
	e.rec.check()
	e.checkHistory()
}

// previousCtlReads runs the previous release's ckegenctl: its sabakan
// status names leader with a successful tick, and its history reads
// every entry this tree's ckegenctl reads.
func (e *env) previousCtlReads(ctl, leader string) {
	t := e.t
	t.Helper()
	run := func(args ...string) string {
		c, cancel := context.WithTimeout(e.ctx, 30*time.Second)
		defer cancel()
		out, err := exec.CommandContext(c, ctl, append([]string{"--endpoints", strings.Join(e.clients, ",")}, args...)...).Output()
		if err != nil {
			t.Fatalf("the previous release's ckegenctl %v: %v", args, err)
		}
		return string(out)
	}
	var st status
	if err := json.Unmarshal([]byte(run("sabakan", "status", "-o", "json")), &st); err != nil || st.Leader != leader || st.Result != "ok" {
		t.Errorf("the previous release's ckegenctl reads the status as %+v (%v), want %s's successful tick", st, err, leader)
	}
	var oldH, newH []historyEntry
	if err := json.Unmarshal([]byte(run("sabakan", "history", "-o", "json")), &oldH); err != nil {
		t.Fatalf("the previous release's ckegenctl reads the history: %v", err)
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &newH); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(oldH, newH) {
		t.Errorf("the previous release's ckegenctl reads %d history entries, this tree's %d, not the same", len(oldH), len(newH))
	}
}

// upgradeDaemon is one daemon of the test, with its name and address.
type upgradeDaemon struct {
	*proc
	addr string
}

// startDaemon starts a ckegen daemon from bin, named name, with the flags
// of the scenarios' daemons.
func (e *env) startDaemon(name, bin string) upgradeDaemon {
	t := e.t
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	d := &proc{name: name, path: bin, log: filepath.Join(e.dir, name+".log"), args: []string{
		"--etcd-endpoints", strings.Join(e.clients, ","), "--http", addr, "--name", name,
		"--interval", interval, "--session-ttl", sessionTTL.String(), "--retire-wait", retireWait.String(),
		"--sabakan-timeout", "1s", "--min-backoff", "200ms",
	}, env: []string{"CANCELLATION_DELAY_SECONDS=0"}}
	d.start(t)
	e.daemons = append(e.daemons, d)
	e.dHTTP = append(e.dHTTP, addr)
	return upgradeDaemon{proc: d, addr: addr}
}

// daemonVersion is the version d's /version answers; "" while it does
// not answer.
func (e *env) daemonVersion(d upgradeDaemon) string {
	resp, err := http.Get("http://" + d.addr + "/version")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct{ Version string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return ""
	}
	return v.Version
}

// waitLeader waits for a successful tick of name's that began after
// since, and returns how long after since it came.
func (e *env) waitLeader(name string, since time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	e.eventually(name+" to lead and tick", timeout, func() bool {
		st, err := e.status()
		return err == nil && st.Leader == name && st.Result == "ok" && st.Time.After(since)
	})
	return time.Since(since)
}

// stillLeads checks for d that name leads and its ticks succeed.
func (e *env) stillLeads(name string, d time.Duration) {
	e.t.Helper()
	e.statusStays(name+" leading", d, func(st status) bool {
		return st.Leader == name && st.Result == "ok" && st.ConsecutiveFailures == 0
	})
}

// handover stops from with SIGTERM, as systemctl restart does, and checks
// what to does as the leader after it: see TestRollingUpgrade. worker
// picks the worker made UNREACHABLE.
func (e *env) handover(statuses *statusLog, from, to upgradeDaemon, worker int) {
	t := e.t
	t.Helper()
	before := e.rawCluster()
	writes := e.rec.count()
	stopAt := time.Now()
	from.stop(syscall.SIGTERM)
	took := e.waitLeader(to.name, stopAt, sessionTTL+10*time.Second)
	e.stillLeads(to.name, 4*time.Duration(intervalDuration()))
	t.Logf("%s stopped, %s led and ticked ok %s later", from.name, to.name, took.Round(10*time.Millisecond))
	statuses.allOK(t, stopAt)
	e.sameMembership(from.name+" to "+to.name, before, writes)

	// It follows sabakan: a worker UNREACHABLE is tainted.
	w := healthyWorker(t, before, worker)
	changed := time.Now()
	e.setState(serialOf(before, w), "unreachable")
	e.eventually(to.name+" to taint the UNREACHABLE worker", 30*time.Second, func() bool {
		return e.rawCluster().stateTaint(w) == "unreachable:NoSchedule"
	})
	if d := time.Since(changed); d > upgradeFollow {
		t.Errorf("%s tainted the UNREACHABLE worker %s after %s: not within its interval (%s, limit %s)", to.name, w, d.Round(10*time.Millisecond), interval, upgradeFollow)
	} else {
		t.Logf("%s tainted the UNREACHABLE worker %s %s after the change", to.name, w, d.Round(10*time.Millisecond))
	}
	e.converge(60 * time.Second)
	e.stillLeads(to.name, time.Second)
	statuses.allOK(t, stopAt)
	e.historyNamesChanges(to.name, before, writes)
}

// healthyWorker is the nth worker of c, in address order, with no state
// taint.
func healthyWorker(t *testing.T, c rawCluster, n int) string {
	t.Helper()
	var healthy []string
	for _, a := range c.set(false) {
		if c.stateTaint(a) == "" {
			healthy = append(healthy, a)
		}
	}
	if len(healthy) <= n {
		t.Fatalf("%d workers without a state taint, want more than %d", len(healthy), n)
	}
	return healthy[n]
}

func intervalDuration() time.Duration {
	d, err := time.ParseDuration(interval)
	if err != nil {
		panic(err)
	}
	return d
}

// sameMembership checks that the cluster has before's nodes and control
// planes, and that no write since the first writes changed them.
func (e *env) sameMembership(what string, before rawCluster, writes int) {
	e.t.Helper()
	check := func(at string, c rawCluster) {
		if b, a := before.set(true), c.set(true); !slices.Equal(b, a) {
			e.t.Errorf("handover %s: %s: control planes %v, before the handover %v", what, at, a, b)
		}
		if b, a := before.set(false), c.set(false); !slices.Equal(b, a) {
			e.t.Errorf("handover %s: %s: %d workers, %d before the handover (added %v, removed %v)", what, at, len(a), len(b), minus(a, b), minus(b, a))
		}
	}
	for _, rev := range e.rec.revsAfter(writes) {
		check(fmt.Sprintf("the write at revision %d", rev), e.rawClusterAt(rev))
	}
	check("the cluster after the handover", e.rawCluster())
}

// minus is the elements of a not in b; both sorted.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if _, ok := slices.BinarySearch(b, x); !ok {
			out = append(out, x)
		}
	}
	return out
}

// revsAfter is the etcd revision of every cluster write after the first n.
func (r *recorder) revsAfter(n int) []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []int64
	for _, w := range r.writes[min(n, len(r.writes)):] {
		out = append(out, w.rev)
	}
	return out
}

// historyNamesChanges checks every cluster write since the first writes,
// from before on: the history has an entry for it whose changes list
// every node the write added, removed or changed (the cluster before and
// after it compared, node by node).
func (e *env) historyNamesChanges(leader string, before rawCluster, writes int) {
	t := e.t
	t.Helper()
	entries := e.historyByRevision()
	prev := before
	revs := e.rec.revsAfter(writes)
	if len(revs) == 0 {
		t.Errorf("%s wrote no cluster after the UNREACHABLE worker", leader)
	}
	for _, rev := range revs {
		c := e.rawClusterAt(rev)
		changed := changedNodes(prev, c)
		entry, ok := entries[rev]
		switch {
		case !ok:
			t.Errorf("%s's cluster write at revision %d (changing %v) has no history entry", leader, rev, changed)
		case entry.ChangeCount != len(entry.Changes):
			t.Errorf("%s's history entry of revision %d lists %d of %d changes", leader, rev, len(entry.Changes), entry.ChangeCount)
		default:
			listed := map[string]bool{}
			for _, ch := range entry.Changes {
				listed[ch.Address] = true
			}
			missing := false
			for _, a := range changed {
				if !listed[a] {
					missing = true
					t.Errorf("%s's history entry of revision %d (%s) does not list %s, which its write changed (changed: %v; listed: %v)", leader, rev, entry.Op, a, changed, entry.Changes)
				}
			}
			if missing {
				break
			}
			t.Logf("%s's write at revision %d (%s): changed %v, all listed in its history entry", leader, rev, entry.Op, changed)
		}
		prev = c
	}
}

// historyEntry is a history entry as `ckegenctl sabakan history -o json`
// prints it.
type historyEntry struct {
	Op              string `json:"op"`
	ClusterRevision int64  `json:"clusterRevision"`
	ChangeCount     int    `json:"changeCount"`
	Changes         []struct {
		Action  string `json:"action"`
		Address string `json:"address"`
	} `json:"changes"`
}

func (e *env) historyByRevision() map[int64]historyEntry {
	e.t.Helper()
	var h []historyEntry
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		e.t.Fatal(err)
	}
	out := map[int64]historyEntry{}
	for _, x := range h {
		out[x.ClusterRevision] = x
	}
	return out
}

// changedNodes is the addresses of the nodes added, removed or changed in
// any field from before to after, sorted.
func changedNodes(before, after rawCluster) []string {
	var out []string
	for a, n := range after.nodes {
		if !reflect.DeepEqual(before.nodes[a], n) {
			out = append(out, a)
		}
	}
	for a := range before.nodes {
		if after.nodes[a] == nil {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// statusLog is every write of ckegen's status key, as a watch sees it.
type statusLog struct {
	mu     sync.Mutex
	writes []statusWrite
}

type statusWrite struct {
	rev int64
	st  status
	raw string
}

// watchStatuses records every write of the status key until the test
// ends.
func watchStatuses(t *testing.T, e *env) *statusLog {
	ctx, cancel := context.WithCancel(context.Background())
	l := &statusLog{}
	ch := e.cli.Watch(clientv3.WithRequireLeader(ctx), "/cke/sabakan/status")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for resp := range ch {
			for _, ev := range resp.Events {
				var st status
				_ = json.Unmarshal(ev.Kv.Value, &st)
				l.mu.Lock()
				l.writes = append(l.writes, statusWrite{rev: ev.Kv.ModRevision, st: st, raw: string(ev.Kv.Value)})
				l.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l
}

// allOK checks that every status written for a tick that began after
// since records a success: no failed tick.
func (l *statusLog) allOK(t *testing.T, since time.Time) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, w := range l.writes {
		if !w.st.Time.After(since) {
			continue
		}
		n++
		if w.st.Result != "ok" || w.st.ConsecutiveFailures != 0 {
			t.Errorf("a tick after the handover did not succeed (status at revision %d): %.600s", w.rev, w.raw)
		}
	}
	if n == 0 {
		t.Errorf("no status written since %s", since.Format(time.RFC3339Nano))
	}
}

// previousInside is the previous release's cke, CKE's server with ckegen
// inside, built from its commit's ckeserver/ once per machine.
var previousInside = needed.Program{
	What:      "the previous release's cke (CKE's server with ckegen inside), built from its commit in " + programs.PreviousRecord,
	Build:     programs.PreviousInside,
	Otherwise: "fetch the repository's history (git fetch --unshallow) so that the commit is in it, and make github.com/cybozu-go/cke " + cketest.Version + " downloadable",
}

// upgradeFollowInside bounds the time from a change in sabakan to the
// cluster write inside CKE's server: its next loop (--interval 1s), which
// reads the nodes' status first.
const upgradeFollowInside = 10 * time.Second

// TestRollingUpgradeInsideCKE: TestRollingUpgrade with two builds of cke,
// CKE's server with ckegen inside: the previous release's and this
// tree's, on one etcd with a Vault set up by CKE's own ckecli, as a site
// upgrades its CKE servers one at a time and rolls back (docs/install.md,
// "Upgrade", "Inside CKE"). The server that leads after the other (CKE's
// election) ticks with no failure, writes no change of membership,
// follows an UNREACHABLE worker, and lists in the history every node each
// of its writes changes.
func TestRollingUpgradeInsideCKE(t *testing.T) {
	oldBin := previousInside.Path(t)
	prev := previous(t)
	newBin := cketest.Inside(t)
	_, cli := cketest.Binaries(t)
	v := vaulttest.Start(t)
	e := newEnv(t, withoutDaemons())
	old := newVaultSite(e, v, "the previous release's cke", "cke-old", oldBin, cli, "/cke/", e.sabAddr)
	cur := newVaultSite(e, v, "this tree's cke", "cke-new", newBin, cli, "/cke/", e.sabAddr)
	old.configure(sshKey(t, e.dir))
	statuses := watchStatuses(t, e)

	start := time.Now()
	old.start()
	e.eventually("the first cluster", 60*time.Second, e.hasCluster)
	old.waitPhase("upgrade-aborted", start, 60*time.Second)
	e.waitInsideLeader(old, start, 60*time.Second)
	cur.start()
	var oldVersion, newVersion string
	e.eventually("both servers to answer /ckegen/version", 30*time.Second, func() bool {
		oldVersion, newVersion = old.ckegenVersion(), cur.ckegenVersion()
		return oldVersion != "" && newVersion != ""
	})
	if oldVersion != prev.Version || newVersion == oldVersion {
		t.Fatalf("versions: the previous release's cke answers %q (want %q), this tree's %q: they must differ", oldVersion, prev.Version, newVersion)
	}
	t.Logf("previous release's cke %s, this tree's %s", oldVersion, newVersion)
	e.stillLeadsInside(old, cur, 3*time.Second)
	// The previous release keeps no record of itself: who leads is said
	// as not known, never as CKE's own integration.
	e.ownerSays("the previous release's cke leads", "whether ckegen runs inside is not known")

	// Upgrade, then rollback: the previous release's cke starts again.
	e.handoverInside(statuses, old, cur, 0)
	e.ownerSays("this tree's cke leads", "leads with ckegen "+newVersion+" (")
	back := newVaultSite(e, v, "the previous release's cke, started again", "cke-old-again", oldBin, cli, "/cke/", e.sabAddr)
	back.start()
	e.eventually("the previous release's cke to serve again", 30*time.Second, func() bool { return back.ckegenVersion() == prev.Version })
	e.stillLeadsInside(cur, back, 3*time.Second)
	e.handoverInside(statuses, cur, back, 1)
	e.ownerSays("the previous release's cke leads again", "whether ckegen runs inside is not known")
	e.rec.check()
}

// ownerSays waits until this tree's `ckegenctl sabakan owner` says want
// of who leads now.
func (e *env) ownerSays(when, want string) {
	e.t.Helper()
	var out string
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if out, err = e.ctl("sabakan", "owner"); strings.Contains(out, want) {
			return
		}
	}
	e.t.Errorf("%s: ckegenctl sabakan owner does not say %q (%v):\n%s", when, want, err, out)
}

// ckegenVersion is the ckegen version the server's /ckegen/version
// answers; "" while it does not answer.
func (s *vaultSite) ckegenVersion() string {
	resp, err := http.Get("http://" + s.httpAddr() + "/ckegen/version")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var v struct{ Version string }
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&v) != nil {
		return ""
	}
	return v.Version
}

// leadsCKE reports whether the server leads CKE's election, as its
// cke_leader series says: the servers campaign with the same host name
// here, so the election's key does not tell them apart.
func (s *vaultSite) leadsCKE() bool {
	resp, err := http.Get("http://" + s.httpAddr() + "/metrics")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var b strings.Builder
	if _, err := io.Copy(&b, resp.Body); err != nil {
		return false
	}
	return strings.Contains("\n"+b.String(), "\ncke_leader 1\n")
}

// waitInsideLeader waits for s to lead CKE's election and for a
// successful tick of ckegen's inside it that began after since.
func (e *env) waitInsideLeader(s *vaultSite, since time.Time, timeout time.Duration) time.Duration {
	e.t.Helper()
	e.eventually(s.label+" to lead and ckegen to tick inside it", timeout, func() bool {
		if !s.leadsCKE() {
			return false
		}
		st, err := e.status()
		return err == nil && st.Mode == "inside-cke" && st.Result == "ok" && st.Time.After(since)
	})
	return time.Since(since)
}

// stillLeadsInside checks for d that leader leads CKE's election, the
// other does not, and ckegen's ticks succeed.
func (e *env) stillLeadsInside(leader, other *vaultSite, d time.Duration) {
	e.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if !leader.leadsCKE() || other.leadsCKE() {
			e.t.Fatalf("%s does not lead alone (leads: %t; %s: %t)", leader.label, leader.leadsCKE(), other.label, other.leadsCKE())
		}
		if st, err := e.status(); err != nil || st.Result != "ok" || st.ConsecutiveFailures != 0 {
			e.t.Fatalf("ckegen's status while %s leads: %+v %v", leader.label, st, err)
		}
	}
}

// handoverInside is handover with CKE's servers: from stops with SIGTERM,
// as systemctl restart does, and to leads after it.
func (e *env) handoverInside(statuses *statusLog, from, to *vaultSite, worker int) {
	t := e.t
	t.Helper()
	before := e.rawCluster()
	writes := e.rec.count()
	stopAt := time.Now()
	from.server.stop(syscall.SIGTERM)
	took := e.waitInsideLeader(to, stopAt, 60*time.Second)
	t.Logf("%s stopped, %s led and ckegen ticked ok inside it %s later", from.label, to.label, took.Round(10*time.Millisecond))
	e.waitTick("another tick inside "+to.label, time.Now(), 30*time.Second)
	statuses.allOK(t, stopAt)
	e.sameMembership(from.label+" to "+to.label, before, writes)

	w := healthyWorker(t, before, worker)
	changed := time.Now()
	e.setState(serialOf(before, w), "unreachable")
	e.eventually(to.label+" to taint the UNREACHABLE worker", 60*time.Second, func() bool {
		return e.rawCluster().stateTaint(w) == "unreachable:NoSchedule"
	})
	if d := time.Since(changed); d > upgradeFollowInside {
		t.Errorf("%s tainted the UNREACHABLE worker %s after %s (limit %s)", to.label, w, d.Round(10*time.Millisecond), upgradeFollowInside)
	} else {
		t.Logf("%s tainted the UNREACHABLE worker %s %s after the change", to.label, w, d.Round(10*time.Millisecond))
	}
	e.waitTick("two more ticks inside "+to.label, time.Now().Add(time.Second), 30*time.Second)
	if !to.leadsCKE() {
		t.Errorf("%s no longer leads", to.label)
	}
	statuses.allOK(t, stopAt)
	e.historyNamesChanges(to.label, before, writes)
}
