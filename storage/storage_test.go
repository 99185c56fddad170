package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

func raw(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>"
	}
	return string(resp.Kvs[0].Value)
}

// campaign makes this test the leader and returns the election key.
func campaign(t *testing.T, s Storage) (string, *concurrency.Session) {
	t.Helper()
	sess, err := concurrency.NewSession(s.Client, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	e := concurrency.NewElection(sess, s.Key(KeyLeader))
	if err := e.Campaign(context.Background(), "test-leader"); err != nil {
		t.Fatal(err)
	}
	return e.Key(), sess
}

// TestValueFormats: each key holds exactly what CKE's tools expect.
func TestValueFormats(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "/p")
	if s.Prefix != "/p/" {
		t.Fatalf("prefix %q", s.Prefix)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetURL(ctx, "http://sabakan:10080/graphql"))
	must(s.SetTemplate(ctx, []byte(`{"name":"t"}`)))
	must(s.SetQueryVariables(ctx, []byte(`{"having": null}`)))
	must(s.SetDisabled(ctx, true))
	c := constraints.Default()
	c.ControlPlaneCount = 3
	must(s.SetConstraints(ctx, c))
	leader, _ := campaign(t, s)
	if _, err := s.PutCluster(ctx, leader, []byte(`{"name":"t","nodes":[],"service_subnet":"10.0.0.0/24"}`), 0, 42); err != nil {
		t.Fatal(err)
	}

	for _, kv := range []struct{ key, want string }{
		{"/p/sabakan/url", "http://sabakan:10080/graphql"},
		{"/p/sabakan/template", `{"name":"t"}`},
		{"/p/sabakan/query-variables", `{"having": null}`},
		{"/p/sabakan/disabled", "true"},
		{"/p/constraints", `{"control-plane-count":3,"minimum-workers":1,"maximum-workers":0}`},
		{"/p/cluster", `{"name":"t","nodes":[],"service_subnet":"10.0.0.0/24"}`},
		{"/p/cluster-revision", "42"},
		{leader, "test-leader"},
	} {
		if got := raw(t, cli, kv.key); got != kv.want {
			t.Errorf("%s = %q, want %q", kv.key, got, kv.want)
		}
	}

	// And they read back.
	if u, _ := s.GetURL(ctx); u != "http://sabakan:10080/graphql" {
		t.Errorf("GetURL = %q", u)
	}
	if d, _ := s.IsDisabled(ctx); !d {
		t.Error("IsDisabled = false")
	}
	if got, _ := s.GetConstraints(ctx); got != c {
		t.Errorf("GetConstraints = %+v", got)
	}
	if rev, _ := s.GetClusterRevision(ctx); rev != 42 {
		t.Errorf("GetClusterRevision = %d", rev)
	}
	if name, _ := s.Leader(ctx); name != "test-leader" {
		t.Errorf("Leader = %q", name)
	}
}

func TestDefaultsWhenUnset(t *testing.T) {
	ctx := context.Background()
	s := New(etcdtest.Client(t), "")
	if d, err := s.IsDisabled(ctx); d || err != nil {
		t.Errorf("IsDisabled = %v, %v", d, err)
	}
	if c, err := s.GetConstraints(ctx); c != constraints.Default() || err != nil {
		t.Errorf("GetConstraints = %+v, %v", c, err)
	}
	if _, _, err := s.GetCluster(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetCluster error %v", err)
	}
	if _, err := s.GetURL(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetURL error %v", err)
	}
	if _, err := s.Leader(ctx); !errors.Is(err, ErrNotFound) {
		t.Errorf("Leader error %v", err)
	}
}

// TestGuardedClusterWrite: the write needs leadership and an unchanged
// cluster; a refused write changes nothing.
func TestGuardedClusterWrite(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	leader, sess := campaign(t, s)

	wrote, err := s.PutCluster(ctx, leader, []byte(`{"v":1}`), 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	resp, _ := cli.Get(ctx, s.Key(KeyCluster))
	rev := resp.Kvs[0].ModRevision
	if wrote != rev {
		t.Errorf("PutCluster returned revision %d, the key has %d", wrote, rev)
	}

	// Stale: someone else wrote since we read.
	if _, err := cli.Put(ctx, s.Key(KeyCluster), `{"v":"by hand"}`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":2}`), rev, 2); !errors.Is(err, ErrConflict) {
		t.Errorf("stale write: %v, want ErrConflict", err)
	}
	// Expecting no cluster when there is one.
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":2}`), 0, 2); !errors.Is(err, ErrConflict) {
		t.Errorf("create over an existing cluster: %v, want ErrConflict", err)
	}
	if got := raw(t, cli, s.Key(KeyCluster)); got != `{"v":"by hand"}` {
		t.Errorf("cluster = %s after refused writes", got)
	}
	if got := raw(t, cli, s.Key(KeyClusterRevision)); got != "1" {
		t.Errorf("cluster-revision = %s after refused writes", got)
	}

	// Leaderless: the session ended.
	resp, _ = cli.Get(ctx, s.Key(KeyCluster))
	rev = resp.Kvs[0].ModRevision
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutCluster(ctx, leader, []byte(`{"v":3}`), rev, 3); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless write: %v, want ErrNoLeader", err)
	}
	if err := s.PutStatus(ctx, leader, Status{Result: "ok"}); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless status: %v, want ErrNoLeader", err)
	}
	if got := raw(t, cli, s.Key(KeyCluster)); got != `{"v":"by hand"}` {
		t.Errorf("cluster = %s after a leaderless write", got)
	}
}

func TestHistoryBounded(t *testing.T) {
	ctx := context.Background()
	s := New(etcdtest.Client(t), "")
	leader, _ := campaign(t, s)
	for i := 1; i <= HistoryLimit+5; i++ {
		err := s.AddHistory(ctx, leader, HistoryEntry{Time: time.Unix(int64(i), 0).UTC(), Op: fmt.Sprintf("op%d", i), ClusterRevision: int64(i * 1000)})
		if err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != HistoryLimit || h[0].Op != "op6" || h[len(h)-1].Op != fmt.Sprintf("op%d", HistoryLimit+5) {
		t.Errorf("history has %d entries from %s to %s; want %d from op6", len(h), h[0].Op, h[len(h)-1].Op, HistoryLimit)
	}
	if h[0].ID != fmt.Sprintf("%016x", 6000) {
		t.Errorf("id %q", h[0].ID)
	}
}

// TestHistoryOneGuardedTransaction: adding an entry and pruning the
// oldest happen in one transaction (one etcd revision), and neither
// happens without leadership.
func TestHistoryOneGuardedTransaction(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	leader, sess := campaign(t, s)
	// More entries than the limit, as an older version or a hand may
	// have left.
	for i := 1; i <= HistoryLimit+3; i++ {
		if _, err := cli.Put(ctx, s.Key(KeySabakanHistory)+fmt.Sprintf("%016x", i), fmt.Sprintf(`{"id":"%016x","op":"old"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := cli.Watch(wctx, s.Key(KeySabakanHistory), clientv3.WithPrefix())
	if err := s.AddHistory(ctx, leader, HistoryEntry{Op: "new", ClusterRevision: 1000}); err != nil {
		t.Fatal(err)
	}
	var puts, deletes int
	revs := map[int64]bool{}
	for puts+deletes < 5 {
		select {
		case wr := <-events:
			revs[wr.Header.Revision] = true
			for _, ev := range wr.Events {
				if ev.Type == clientv3.EventTypePut {
					puts++
				} else {
					deletes++
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("saw %d puts and %d deletes, want 1 and 4", puts, deletes)
		}
	}
	if puts != 1 || deletes != 4 || len(revs) != 1 {
		t.Errorf("%d puts and %d deletes at %d revisions; want 1 put and 4 deletes at one revision", puts, deletes, len(revs))
	}
	if h, _ := s.History(ctx); len(h) != HistoryLimit || h[0].ID != fmt.Sprintf("%016x", 5) || h[len(h)-1].Op != "new" {
		t.Errorf("history after pruning: %d entries from %s", len(h), h[0].ID)
	}

	// Without leadership: nothing added, nothing pruned.
	for i := 1; i <= 3; i++ {
		if _, err := cli.Put(ctx, s.Key(KeySabakanHistory)+fmt.Sprintf("%016x", i), fmt.Sprintf(`{"id":"%016x","op":"old"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sess.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.AddHistory(ctx, leader, HistoryEntry{Op: "late", ClusterRevision: 2000}); !errors.Is(err, ErrNoLeader) {
		t.Errorf("leaderless AddHistory: %v, want ErrNoLeader", err)
	}
	if h, _ := s.History(ctx); len(h) != HistoryLimit+3 || h[len(h)-1].Op != "new" {
		t.Errorf("a leaderless AddHistory changed the history: %d entries, last %q", len(h), h[len(h)-1].Op)
	}
}

func TestRebootingNodes(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	for k, v := range map[string]string{
		"0000000000000001": `{"index":1,"node":"10.0.0.1","status":"rebooting"}`,
		"0000000000000002": `{"index":2,"node":"10.0.0.2","status":"draining"}`,
		"0000000000000003": `{"index":3,"node":"10.0.0.3","status":"queued"}`,
		"0000000000000004": `not json`,
	} {
		if _, err := cli.Put(ctx, s.Key(KeyRebootsData)+k, v); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.RebootingNodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !got["10.0.0.1"] || !got["10.0.0.2"] {
		t.Errorf("RebootingNodes = %v", got)
	}
}

// TestBadStoredValues: a stored value that does not parse is ErrInvalid,
// read alone or in a snapshot.
func TestBadStoredValues(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	for k, v := range map[string]string{
		s.Key(KeySabakanDisabled): "yes",
		s.Key(KeyConstraints):     `{"control-plane-count": 0}`,
		s.Key(KeyClusterRevision): "x",
		s.Key(KeyCluster):         `{"name": `,
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := s.Snapshot(ctx, "no-leader")
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func() error{
		"IsDisabled":               func() error { _, err := s.IsDisabled(ctx); return err },
		"GetConstraints":           func() error { _, err := s.GetConstraints(ctx); return err },
		"GetClusterRevision":       func() error { _, err := s.GetClusterRevision(ctx); return err },
		"GetCluster":               func() error { _, _, err := s.GetCluster(ctx); return err },
		"Snapshot.Disabled":        func() error { _, err := snap.Disabled(); return err },
		"Snapshot.Constraints":     func() error { _, err := snap.Constraints(); return err },
		"Snapshot.ClusterRevision": func() error { _, err := snap.ClusterRevision(); return err },
		"Snapshot.Cluster":         func() error { _, _, err := snap.Cluster(); return err },
	} {
		if err := read(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

// TestEtcdErrorIsNotInvalid: when etcd does not answer, reads return
// etcd's error, never ErrInvalid or ErrNotFound: a tick must not blame
// the stored data for an etcd outage.
func TestEtcdErrorIsNotInvalid(t *testing.T) {
	e, url := etcdtest.StartServer(t, embedded.Options{})
	cli := etcdtest.Connect(t, url)
	s := New(cli, "")
	ctx := context.Background()
	if _, err := cli.Put(ctx, s.Key(KeyConstraints), `{"control-plane-count": 3}`); err != nil {
		t.Fatal(err)
	}
	e.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for name, read := range map[string]func() error{
		"IsDisabled":         func() error { _, err := s.IsDisabled(ctx); return err },
		"GetConstraints":     func() error { _, err := s.GetConstraints(ctx); return err },
		"GetClusterRevision": func() error { _, err := s.GetClusterRevision(ctx); return err },
		"GetCluster":         func() error { _, _, err := s.GetCluster(ctx); return err },
		"Snapshot":           func() error { _, err := s.Snapshot(ctx, "k"); return err },
	} {
		if err := read(); err == nil || errors.Is(err, ErrInvalid) || errors.Is(err, ErrNotFound) {
			t.Errorf("%s with etcd stopped: %v, want etcd's error", name, err)
		}
	}
}

// countingKV counts the requests made through a real client.
type countingKV struct {
	clientv3.KV
	n *int
}

func (c countingKV) Get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	*c.n++
	return c.KV.Get(ctx, key, opts...)
}

func (c countingKV) Txn(ctx context.Context) clientv3.Txn {
	*c.n++
	return c.KV.Txn(ctx)
}

// TestSnapshot: one transaction reads what a tick needs, so the cluster
// and the template revision it was built from come from one etcd
// revision; each value reads as the single-key functions read it.
func TestSnapshot(t *testing.T) {
	ctx := context.Background()
	_, url := etcdtest.StartServer(t, embedded.Options{})
	cli := etcdtest.Connect(t, url)
	s := New(cli, "/p/")
	leader, _ := campaign(t, s)

	empty, err := s.Snapshot(ctx, leader)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := empty.Template(); !errors.Is(err, ErrNotFound) {
		t.Errorf("template of an empty etcd: %v", err)
	}
	if _, _, err := empty.Cluster(); !errors.Is(err, ErrNotFound) {
		t.Errorf("cluster of an empty etcd: %v", err)
	}
	if c, err := empty.Constraints(); c != constraints.Default() || err != nil {
		t.Errorf("constraints of an empty etcd: %+v %v", c, err)
	}
	if empty.ConstraintsStored() {
		t.Error("ConstraintsStored = true in an empty etcd")
	}
	if d, err := empty.Disabled(); d || err != nil {
		t.Errorf("disabled of an empty etcd: %v %v", d, err)
	}
	if rev, err := empty.ClusterRevision(); rev != 0 || err != nil {
		t.Errorf("cluster-revision of an empty etcd: %d %v", rev, err)
	}

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.SetTemplate(ctx, []byte(`{"name":"t"}`)))
	must(s.SetURL(ctx, "http://sabakan/graphql"))
	must(s.SetQueryVariables(ctx, []byte(`{}`)))
	must(s.SetDisabled(ctx, true))
	c := constraints.Default()
	c.ControlPlaneCount = 5
	must(s.SetConstraints(ctx, c))
	_, tmplRev, _ := s.GetTemplate(ctx)
	wrote, err := s.PutCluster(ctx, leader, []byte(`{"name":"t","nodes":[],"service_subnet":"10.0.0.0/24"}`), 0, tmplRev)
	must(err)
	_, err = cli.Put(ctx, s.Key(KeyRebootsData)+"0000000000000001", `{"index":1,"node":"10.0.0.1","status":"rebooting"}`)
	must(err)
	_, err = cli.Put(ctx, "/cke/cluster", `{"name":"another prefix"}`)
	must(err)

	n := 0
	counting := etcdtest.Connect(t, url)
	counting.KV = countingKV{counting.KV, &n}
	snap, err := New(counting, "/p/").Snapshot(ctx, leader)
	must(err)
	if n != 1 {
		t.Errorf("Snapshot made %d etcd requests, want 1", n)
	}
	if !snap.Leading {
		t.Error("Leading = false while the election key exists")
	}
	if d, _ := snap.Disabled(); !d {
		t.Error("Disabled = false")
	}
	if data, rev, _ := snap.Template(); string(data) != `{"name":"t"}` || rev != tmplRev {
		t.Errorf("Template = %s at %d, want at %d", data, rev, tmplRev)
	}
	if u, _ := snap.URL(); u != "http://sabakan/graphql" {
		t.Errorf("URL = %q", u)
	}
	if v, _ := snap.QueryVariables(); string(v) != `{}` {
		t.Errorf("QueryVariables = %s", v)
	}
	if got, _ := snap.Constraints(); got != c {
		t.Errorf("Constraints = %+v", got)
	}
	if !snap.ConstraintsStored() {
		t.Error("ConstraintsStored = false with constraints stored")
	}
	if cl, rev, err := snap.Cluster(); err != nil || cl.Name != "t" || rev != wrote {
		t.Errorf("Cluster = %+v at %d (%v), want t at %d", cl, rev, err, wrote)
	}
	if rev, _ := snap.ClusterRevision(); rev != tmplRev {
		t.Errorf("ClusterRevision = %d, want %d", rev, tmplRev)
	}
	if r := snap.RebootingNodes(); len(r) != 1 || !r["10.0.0.1"] {
		t.Errorf("RebootingNodes = %v", r)
	}

	other, err := s.Snapshot(ctx, s.Key(KeyLeader)+"gone")
	must(err)
	if other.Leading {
		t.Error("Leading = true for an election key that does not exist")
	}
}

// TestFitStatus: a status always fits in MaxStatusBytes, however many and
// however long its warnings, changes and message; one that fits is kept
// whole.
func TestFitStatus(t *testing.T) {
	small := Status{Result: "ok", Warnings: []string{"w1", "w2"}, Message: "m"}
	data, err := FitStatus(small)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := json.Marshal(small); string(data) != string(want) {
		t.Errorf("a small status changed: %s", data)
	}

	long := strings.Repeat("x", 2048)
	big := Status{Result: "failing", Message: strings.Repeat("m", 4096), LastChangeCount: 100}
	for i := range 101 {
		big.Warnings = append(big.Warnings, fmt.Sprintf("%d %s", i, long))
	}
	for range 50 {
		big.LastChanges = append(big.LastChanges, Change{Action: "add", Address: "10.0.0.1", Serial: long})
	}
	data, err = FitStatus(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > MaxStatusBytes {
		t.Fatalf("status of %d bytes, over %d", len(data), MaxStatusBytes)
	}
	var got Status
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	last := got.Warnings[len(got.Warnings)-1]
	kept := len(got.Warnings) - 1
	if want := fmt.Sprintf("and %d more (the status is limited to 256 KiB)", 101-kept); last != want || kept < 50 {
		t.Errorf("kept %d warnings, last %q, want %q", kept, last, want)
	}
	if got.LastChangeCount != 100 || got.Message != big.Message {
		t.Errorf("count %d, message of %d bytes: only warnings had to go", got.LastChangeCount, len(got.Message))
	}
}
