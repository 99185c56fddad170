package mtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
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
	"github.com/ckegen/ckegen/internal/testutil/needed"
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
	// Rollback: the previous release starts again and follows; this
	// tree's stops, and the previous release leads.
	back := e.startDaemon("ckegen-old-again", oldBin)
	e.eventually("the previous release to serve again", 20*time.Second, func() bool { return e.daemonVersion(back) == prev.Version })
	e.stillLeads(cur.name, 2*time.Second)
	e.handover(statuses, cur, back, 1)
	e.rec.check()
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
	var healthy []string
	for _, a := range before.set(false) {
		if before.stateTaint(a) == "" {
			healthy = append(healthy, a)
		}
	}
	if len(healthy) <= worker {
		t.Fatalf("%d workers without a state taint, want more than %d", len(healthy), worker)
	}
	w := healthy[worker]
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
			for _, a := range changed {
				if !listed[a] {
					t.Errorf("%s's history entry of revision %d (%s) does not list %s, which its write changed (changed: %v; listed: %v)", leader, rev, entry.Op, a, changed, entry.Changes)
				}
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
