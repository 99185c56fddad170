package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/dcgen"
	"github.com/ckegen/ckegen/internal/etcdtest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/sabakan/server"
	"github.com/ckegen/ckegen/storage"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const testTemplate = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16"}`

// fixture is an etcd, a sabakan-compatible server with a small data center,
// and storage configured for them.
type fixture struct {
	st    storage.Storage
	store *server.Store
	url   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cli := etcdtest.Client(t)
	store := server.NewStore(func() time.Time { return testNow })
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0
	if err := store.Load(dcgen.Machines(o)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(store)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	f := &fixture{st: storage.New(cli, ""), store: store, url: ts.URL + "/graphql"}
	ctx := context.Background()
	must(t, f.st.SetTemplate(ctx, []byte(testTemplate)))
	must(t, f.st.SetURL(ctx, f.url))
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount, c.MinimumWorkers = 3, 5
	must(t, f.st.SetConstraints(ctx, c))
	return f
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) daemon(name string, mod func(*Config)) *Daemon {
	cfg := Config{
		Storage: f.st, Name: name, Interval: 200 * time.Millisecond, SessionTTL: time.Second,
		MinBackoff: 20 * time.Millisecond, RetireWait: time.Minute,
		Sabakan: sabakan.Options{Timeout: time.Second, Retries: -1},
		Now:     func() time.Time { return testNow },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if mod != nil {
		mod(&cfg)
	}
	return New(cfg)
}

// lead makes the test the leader and returns the election key.
func (f *fixture) lead(t *testing.T) string {
	t.Helper()
	sess, err := concurrency.NewSession(f.st.Client)
	must(t, err)
	t.Cleanup(func() { sess.Close() })
	e := concurrency.NewElection(sess, f.st.Key(storage.KeyLeader))
	must(t, e.Campaign(context.Background(), "test"))
	return e.Key()
}

func (f *fixture) cluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	c, _, err := f.st.GetCluster(context.Background())
	if errors.Is(err, storage.ErrNotFound) {
		return nil
	}
	must(t, err)
	return c
}

// TestTickWritesAndSettles: ticks build the cluster, then settle.
func TestTickWritesAndSettles(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.daemon("d1", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	c := f.cluster(t)
	if c == nil || len(c.Nodes) != 8 {
		t.Fatalf("cluster after the first tick: %+v", c)
	}
	rev, _ := f.st.GetClusterRevision(ctx)
	_, tmplRev, _ := f.st.GetTemplate(ctx)
	if rev != tmplRev {
		t.Errorf("cluster-revision %d, template revision %d", rev, tmplRev)
	}
	st, err := f.st.GetStatus(ctx)
	must(t, err)
	if st.Result != ResultOK || st.LastOp != "new" || st.LastChangeCount != 8 || st.Leader != "d1" {
		t.Errorf("status %+v", st)
	}
	h, _ := f.st.History(ctx)
	if len(h) != 1 || h[0].Op != "new" || h[0].TemplateRevision != tmplRev {
		t.Errorf("history %+v", h)
	}
	// An unchanged inventory: nothing to do, nothing written.
	_, modRev, _ := f.st.GetCluster(ctx)
	must(t, d.runOnce(ctx, leader))
	if _, again, _ := f.st.GetCluster(ctx); again != modRev {
		t.Error("a tick with nothing to do rewrote the cluster")
	}

	// A template change re-renders the same membership (Regenerate).
	must(t, f.st.SetTemplate(ctx, []byte(strings.Replace(testTemplate, `"user":"u"}]`, `"user":"u","labels":{"example.com/x":"y"}}]`, 1))))
	must(t, d.runOnce(ctx, leader))
	st, _ = f.st.GetStatus(ctx)
	if st.LastOp != "regenerate" {
		t.Errorf("after a template change: op %q, want regenerate", st.LastOp)
	}
	c2 := f.cluster(t)
	if c2.Nodes[3].Labels["example.com/x"] != "y" || c2.Nodes[0].Address != c.Nodes[0].Address {
		t.Errorf("regenerated cluster: %+v", c2.Nodes[3])
	}
	_, tmplRev, _ = f.st.GetTemplate(ctx)
	if rev, _ := f.st.GetClusterRevision(ctx); rev != tmplRev {
		t.Errorf("cluster-revision %d after regenerate, template %d", rev, tmplRev)
	}

	// A machine becomes UNREACHABLE: its node is tainted.
	worker := c2.Nodes[5]
	_, err = f.store.SetState(worker.Annotations["cke.cybozu.com/serial"], machine.StateUnreachable)
	must(t, err)
	must(t, d.runOnce(ctx, leader))
	for _, n := range f.cluster(t).Nodes {
		if n.Address == worker.Address && (len(n.Taints) != 1 || n.Taints[0].Value != "unreachable") {
			t.Errorf("unreachable node taints: %+v", n.Taints)
		}
	}
}

// TestFailureReasons: each failure kind records its reason and writes no
// cluster.
func TestFailureReasons(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(t *testing.T, f *fixture)
		mod    func(*Config)
		reason string
		want   string
	}{
		{"no template", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Delete(context.Background(), f.st.Key(storage.KeySabakanTemplate))
			must(t, err)
		}, nil, ReasonNoTemplate, "set-template"},
		{"invalid template", func(t *testing.T, f *fixture) {
			must(t, f.st.SetTemplate(context.Background(), []byte(`{"name":"t","nodes":[]}`)))
		}, nil, ReasonInvalidTemplate, "need exactly one control plane node"},
		{"no URL", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Delete(context.Background(), f.st.Key(storage.KeySabakanURL))
			must(t, err)
		}, nil, ReasonNoURL, "set-url"},
		{"sabakan unreachable", func(t *testing.T, f *fixture) {
			must(t, f.st.SetURL(context.Background(), "http://127.0.0.1:1/graphql"))
		}, nil, ReasonSabakanUnreachable, "connection refused"},
		{"query error", func(t *testing.T, f *fixture) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", 500) }))
			t.Cleanup(ts.Close)
			must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
		}, nil, ReasonQueryError, "HTTP 500: broken"},
		{"invalid variables", func(t *testing.T, f *fixture) {
			must(t, f.st.SetQueryVariables(context.Background(), []byte(`{"having":{"states":["X"]}}`)))
		}, nil, ReasonInvalidVariables, `unknown state "X"`},
		{"invalid constraints", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyConstraints), `{"control-plane-count":0}`)
			must(t, err)
		}, nil, ReasonInvalidConstraints, "control-plane-count: must be >= 1"},
		{"not enough machines", func(t *testing.T, f *fixture) {
			c, _ := f.st.GetConstraints(context.Background())
			c.MinimumWorkers = 500
			must(t, f.st.SetConstraints(context.Background(), c))
		}, nil, ReasonNotEnoughMachines, "need 500 workers"},
		{"cluster too large", nil, func(c *Config) { c.MaxClusterBytes = 1000 }, ReasonClusterTooLarge, "over etcd's request size limit of 1000 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.setup != nil {
				c.setup(t, f)
			}
			leader := f.lead(t)
			err := f.daemon("d", c.mod).runOnce(context.Background(), leader)
			var te *tickError
			if !errors.As(err, &te) || te.reason != c.reason {
				t.Fatalf("error %v, want reason %s", err, c.reason)
			}
			st, gerr := f.st.GetStatus(context.Background())
			must(t, gerr)
			if st.Result != ResultFailing || st.Reason != c.reason || !strings.Contains(st.Message, c.want) || st.ConsecutiveFailures != 1 {
				t.Errorf("status %+v, want failing %s with %q", st, c.reason, c.want)
			}
			if f.cluster(t) != nil {
				t.Error("a failed tick wrote a cluster")
			}
		})
	}
}

func TestTooManyNonExistentAndRecovery(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.daemon("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	c := f.cluster(t)
	_, modRev, _ := f.st.GetCluster(ctx)
	// Two of three control planes leave sabakan.
	for _, n := range c.Nodes[:2] {
		must(t, f.store.SetLabel(n.Annotations["cke.cybozu.com/serial"], "gone", "yes"))
	}
	must(t, f.st.SetQueryVariables(ctx, []byte(`{"notHaving":{"labels":[{"name":"gone","value":"yes"}]}}`)))
	err := d.runOnce(ctx, leader)
	var te *tickError
	if !errors.As(err, &te) || te.reason != ReasonTooManyNonExistent {
		t.Fatalf("error %v", err)
	}
	if _, again, _ := f.st.GetCluster(ctx); again != modRev {
		t.Error("the refused tick wrote the cluster")
	}
	// They come back: the next tick succeeds.
	must(t, f.st.SetQueryVariables(ctx, []byte(`{}`)))
	must(t, d.runOnce(ctx, leader))
	if st, _ := f.st.GetStatus(ctx); st.Result != ResultOK || st.ConsecutiveFailures != 0 {
		t.Errorf("status after recovery %+v", st)
	}
}

func TestLostLeadershipWritesNothing(t *testing.T) {
	f := newFixture(t)
	sess, err := concurrency.NewSession(f.st.Client)
	must(t, err)
	e := concurrency.NewElection(sess, f.st.Key(storage.KeyLeader))
	must(t, e.Campaign(context.Background(), "old"))
	key := e.Key()
	must(t, sess.Close()) // the session ends: the key is gone
	err = f.daemon("d", nil).runOnce(context.Background(), key)
	var te *tickError
	if !errors.As(err, &te) || te.reason != ReasonLostLeadership {
		t.Fatalf("error %v, want LOST_LEADERSHIP", err)
	}
	if f.cluster(t) != nil {
		t.Error("a leaderless tick wrote a cluster")
	}
}

func TestDisabled(t *testing.T) {
	f := newFixture(t)
	must(t, f.st.SetDisabled(context.Background(), true))
	must(t, f.daemon("d", nil).runOnce(context.Background(), f.lead(t)))
	if st, _ := f.st.GetStatus(context.Background()); st.Result != ResultDisabled {
		t.Errorf("status %+v", st)
	}
	if f.cluster(t) != nil {
		t.Error("a disabled tick wrote a cluster")
	}
}

func TestBackoff(t *testing.T) {
	d := New(Config{Interval: time.Minute, MinBackoff: 5 * time.Second})
	failure := fail(ReasonQueryError, errors.New("x"))
	b := d.cfg.MinBackoff
	var waits []time.Duration
	for i := 0; i < 6; i++ {
		var w time.Duration
		w, b = d.nextWait(failure, b)
		waits = append(waits, w)
	}
	want := []time.Duration{5, 10, 20, 40, 60, 60}
	for i := range want {
		if waits[i] != want[i]*time.Second {
			t.Fatalf("waits %v, want %v seconds", waits, want)
		}
	}
	if w, next := d.nextWait(nil, b); w != time.Minute || next != 5*time.Second {
		t.Errorf("after success: wait %v next %v", w, next)
	}
	if w, _ := d.nextWait(fail(ReasonConflict, errors.New("x")), b); w != 0 {
		t.Errorf("after a conflict: wait %v, want 0", w)
	}
}

// ticks is the number of ticks d has finished, read from its
// ckegen_tick_duration_seconds histogram.
func ticks(d *Daemon) int64 {
	var m dto.Metric
	if err := d.metrics.tickDuration.Write(&m); err != nil {
		panic(err)
	}
	return int64(m.GetHistogram().GetSampleCount())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestTwoDaemons: only the leader ticks; when its session ends (lease
// revoked, as when it dies), the other takes over.
func TestTwoDaemons(t *testing.T) {
	f := newFixture(t)
	d1, d2 := f.daemon("d1", nil), f.daemon("d2", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 2)
	go func() { _ = d1.Run(ctx); done <- struct{}{} }()
	waitFor(t, "d1 to tick", func() bool { return ticks(d1) > 0 })
	go func() { _ = d2.Run(ctx); done <- struct{}{} }()
	time.Sleep(600 * time.Millisecond)
	if n := ticks(d2); n != 0 {
		t.Fatalf("the follower ticked %d times", n)
	}
	if name, _ := f.st.Leader(ctx); name != "d1" {
		t.Fatalf("leader %q", name)
	}

	// d1's session dies, as when its process is killed.
	resp, err := f.st.Client.Get(ctx, f.st.Key(storage.KeyLeader), clientv3.WithFirstCreate()...)
	must(t, err)
	_, err = f.st.Client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	must(t, err)
	// From now on, every write of status or cluster comes from d2.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	writes := f.st.Client.Watch(wctx, f.st.Key("sabakan/status"))
	waitFor(t, "d2 to take over", func() bool { return ticks(d2) > 0 })
	if name, _ := f.st.Leader(ctx); name != "d2" {
		t.Errorf("leader %q after failover", name)
	}
	timeout := time.After(time.Second)
	seen := 0
	for done := false; !done; {
		select {
		case wr := <-writes:
			for _, ev := range wr.Events {
				var st storage.Status
				must(t, json.Unmarshal(ev.Kv.Value, &st))
				if st.Leader != "d2" {
					t.Errorf("status written by %q after failover", st.Leader)
				}
				seen++
			}
		case <-timeout:
			done = true
		}
	}
	if seen == 0 {
		t.Error("d2 wrote no status after taking over")
	}
	cancel()
	<-done
	<-done
}

// TestWatchTriggersTick: a settings change ticks at once, not after the
// interval.
func TestWatchTriggersTick(t *testing.T) {
	f := newFixture(t)
	d := f.daemon("d", func(c *Config) { c.Interval = time.Hour })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()
	waitFor(t, "the first tick", func() bool { return ticks(d) == 1 })
	time.Sleep(200 * time.Millisecond)
	for i, change := range []func() error{
		func() error {
			c, _ := f.st.GetConstraints(ctx)
			c.MinimumWorkers = 6
			return f.st.SetConstraints(ctx, c)
		},
		func() error { return f.st.SetTemplate(ctx, []byte(testTemplate)) },
		func() error { return f.st.SetURL(ctx, f.url) },
		func() error { return f.st.SetQueryVariables(ctx, []byte(`{}`)) },
		func() error { return f.st.SetDisabled(ctx, false) },
	} {
		before := ticks(d)
		must(t, change())
		waitFor(t, "a triggered tick", func() bool { return ticks(d) > before })
		if i == 0 {
			waitFor(t, "the sixth worker", func() bool {
				c := f.cluster(t)
				return c != nil && len(c.Nodes) == 9
			})
		}
	}
	// Our own writes (cluster, status, history) do not trigger ticks.
	before := ticks(d)
	time.Sleep(500 * time.Millisecond)
	if n := ticks(d); n != before {
		t.Errorf("%d ticks without a settings change", n-before)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	d := f.daemon("d", func(c *Config) { c.Registry = reg })
	must(t, d.runOnce(context.Background(), f.lead(t)))
	if v := testutil.ToFloat64(d.metrics.successful); v != 1 {
		t.Errorf("cke_sabakan_integration_successful = %v", v)
	}
	if v := testutil.ToFloat64(d.metrics.timestamp); v != float64(testNow.Unix()) {
		t.Errorf("cke_sabakan_integration_timestamp_seconds = %v", v)
	}
	// 20 machines, 4 boot servers not returned, 8 in the cluster.
	if v := testutil.ToFloat64(d.metrics.unused); v != 8 {
		t.Errorf("cke_sabakan_unused_machines = %v, want 8", v)
	}
	total := 0.0
	for _, role := range []string{"compute", "storage", "gpu"} {
		total += testutil.ToFloat64(d.metrics.workers.WithLabelValues(role))
	}
	if total != 5 {
		t.Errorf("cke_sabakan_workers sums to %v, want 5", total)
	}
	if v := testutil.ToFloat64(d.metrics.machines.WithLabelValues("HEALTHY")); v != 16 {
		t.Errorf("ckegen_machines{state=HEALTHY} = %v, want 16", v)
	}
	n, err := testutil.GatherAndCount(reg, "cke_sabakan_integration_successful", "cke_sabakan_workers",
		"ckegen_tick_duration_seconds", "ckegen_sabakan_query_duration_seconds", "ckegen_leader")
	if err != nil || n < 5 {
		t.Errorf("gathered %d series: %v", n, err)
	}
	// Stale roles disappear.
	d.metrics.observeInventory(nil, &cluster.Cluster{Nodes: []*cluster.Node{{Address: "x", Labels: map[string]string{"cke.cybozu.com/role": "new"}}}})
	if n := testutil.CollectAndCount(d.metrics.workers); n != 1 {
		t.Errorf("%d worker role series after the roles changed, want 1", n)
	}
}
