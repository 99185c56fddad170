package storage

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/etcdtest"
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

func TestBadStoredValues(t *testing.T) {
	ctx := context.Background()
	cli := etcdtest.Client(t)
	s := New(cli, "")
	for k, v := range map[string]string{
		s.Key(KeySabakanDisabled): "yes",
		s.Key(KeyConstraints):     `{"control-plane-count": 0}`,
		s.Key(KeyClusterRevision): "x",
	} {
		if _, err := cli.Put(ctx, k, v); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.IsDisabled(ctx); err == nil {
		t.Error("disabled=yes accepted")
	}
	if _, err := s.GetConstraints(ctx); err == nil {
		t.Error("invalid stored constraints accepted")
	}
	if _, err := s.GetClusterRevision(ctx); err == nil {
		t.Error("cluster-revision x accepted")
	}
}
