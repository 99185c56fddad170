package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/storage"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testOptions are CKE's option defaults, which ckecli sabakan set-template
// fills in: CKE refuses a cluster without a CRI endpoint.
const testOptions = `"options":{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"}}`

const testTemplate = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`

// fixture is a test site: an etcd, the compatible server with 4 racks of
// 5 machines (all HEALTHY), and the template, URL and constraints (3
// control planes, 5 workers) stored.
type fixture struct {
	site  *sitetest.Site
	etcd  *embedded.Etcd
	st    storage.Storage
	store *fakesabakan.Store
	url   string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	return newSiteFixture(t, nil)
}

// newSiteFixture is the fixture with the compatible server on clock (nil:
// testNow).
func newSiteFixture(t *testing.T, clock func() time.Time) *fixture {
	t.Helper()
	s := sitetest.Start(t, sitetest.Options{
		Now: testNow, Clock: clock,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		Template:   testTemplate, StoreURL: true, Constraints: sitetest.Counts(3, 5),
	})
	return &fixture{site: s, etcd: s.Etcd, st: s.Storage, store: s.Store, url: s.URL}
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

// lead makes the test the leader and returns the election key. A short
// TTL: closing the session when the test ends waits up to the TTL when
// the test has stopped etcd.
func (f *fixture) lead(t *testing.T) string {
	t.Helper()
	return f.site.Lead(t, "test", 2)
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
		{"HTTP error", func(t *testing.T, f *fixture) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", 500) }))
			t.Cleanup(ts.Close)
			must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
		}, nil, ReasonSabakanUnreachable, "HTTP 500: broken"},
		{"query error", func(t *testing.T, f *fixture) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"data":{}}`))
			}))
			t.Cleanup(ts.Close)
			must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
		}, nil, ReasonQueryError, "data.searchMachines is missing or null"},
		{"invalid variables", func(t *testing.T, f *fixture) {
			must(t, f.st.SetQueryVariables(context.Background(), []byte(`{"having":{"states":["X"]}}`)))
		}, nil, ReasonInvalidVariables, `unknown state "X"`},
		{"invalid constraints", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyConstraints), `{"control-plane-count":0}`)
			must(t, err)
		}, nil, ReasonInvalidConstraints, "control-plane-count: must be >= 1"},
		{"invalid disabled flag", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeySabakanDisabled), "yes")
			must(t, err)
		}, nil, ReasonInvalidDisabled, `want true or false, got "yes"`},
		{"invalid stored cluster", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyCluster), `{"name": "x", "nodes": [`)
			must(t, err)
		}, nil, ReasonInvalidCluster, "stored cluster"},
		{"invalid cluster-revision", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyClusterRevision), "twelve")
			must(t, err)
		}, nil, ReasonInvalidCluster, `cluster-revision: invalid stored value: not a decimal revision: "twelve"`},
		{"not enough machines", func(t *testing.T, f *fixture) {
			c, _ := f.st.GetConstraints(context.Background())
			c.MinimumWorkers = 500
			must(t, f.st.SetConstraints(context.Background(), c))
		}, nil, ReasonNotEnoughMachines, "need 500 workers"},
		{"invalid policy: no such template", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"gpu": {"constraints": ["topology.kubernetes.io/zone in (rack1)"]}}}`)
		}, nil, ReasonInvalidPolicy, "placements.gpu: no template takes this placement"},
		{"invalid policy: bad constraint", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in rack1"]}}}`)
		}, nil, ReasonInvalidPolicy, "placements.control-plane.constraints[0]"},
		{"metrics unavailable", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"control-plane": {"metrics": [{"name": "temp", "weight": -5}]}},
				"metrics": {"temp": {"provider": "prom", "query": "temp", "max": 50}},
				"providers": {"prom": {"type": "prometheus", "url": "http://127.0.0.1:1", "timeout": "1s"}}}`)
		}, nil, ReasonMetricsUnavailable, "metric temp from provider prom"},
		{"cluster too large", nil, func(c *Config) { c.MaxClusterBytes = 1000 }, ReasonClusterTooLarge, "over etcd's request size limit of 1000 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.setup != nil {
				c.setup(t, f)
			}
			leader := f.lead(t)
			before, _ := f.st.GetClusterRaw(context.Background())
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
			if after, _ := f.st.GetClusterRaw(context.Background()); string(after) != string(before) {
				t.Errorf("a failed tick wrote a cluster: %.80s", after)
			}
			if h, _ := f.st.History(context.Background()); len(h) != 0 {
				t.Errorf("a failed tick recorded %d changes", len(h))
			}
		})
	}
}

// TestEtcdErrorIsEtcdError: when etcd does not answer, the tick fails with
// ETCD_ERROR, not with the reason of whatever it was reading (it used to
// be INVALID_CONSTRAINTS or INVALID_CLUSTER), and writes nothing.
func TestEtcdErrorIsEtcdError(t *testing.T) {
	t.Parallel() // a stop takes etcd's request timeout (7 s) while a session is open
	for _, stop := range []struct {
		name string
		stop func(f *fixture)
	}{
		{"etcd stopped", func(f *fixture) { f.etcd.Close() }},
		{"client closed", func(f *fixture) { f.st.Client.Close() }},
	} {
		t.Run(stop.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			leader := f.lead(t)
			d := f.daemon("d", nil)
			stop.stop(f)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := d.runOnce(ctx, leader)
			var te *tickError
			if !errors.As(err, &te) || te.reason != ReasonEtcdError {
				t.Fatalf("error %v, want %s", err, ReasonEtcdError)
			}
			if st := d.Status(); st.Reason != ReasonEtcdError || st.Result != ResultFailing {
				t.Errorf("status %+v", st)
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
	e := concurrency.NewElection(sess, f.st.Key(storage.KeyCKEGenLeader))
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
	if name, _ := f.st.CKEGenLeader(ctx); name != "d1" {
		t.Fatalf("leader %q", name)
	}

	// d1's session dies, as when its process is killed.
	resp, err := f.st.Client.Get(ctx, f.st.Key(storage.KeyCKEGenLeader), clientv3.WithFirstCreate()...)
	must(t, err)
	_, err = f.st.Client.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	must(t, err)
	// From now on, every write of status or cluster comes from d2.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	writes := f.st.Client.Watch(wctx, f.st.Key("sabakan/status"))
	waitFor(t, "d2 to take over", func() bool { return ticks(d2) > 0 })
	if name, _ := f.st.CKEGenLeader(ctx); name != "d2" {
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

// scrape returns d's /metrics, as Prometheus reads it, over HTTP.
func scrape(t *testing.T, d *Daemon) string {
	t.Helper()
	ts := httptest.NewServer(d.Handler())
	defer ts.Close()
	resp, err := http.Get(ts.URL + "/metrics")
	must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(body)
}

// series returns the lines of a scrape that start with name, sorted as
// exported.
func series(scraped, name string) []string {
	var out []string
	for _, l := range strings.Split(scraped, "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return out
}

// TestMetrics: CKE's series with CKE's names; the cke_sabakan_* series
// and ckegen_machines only on the leader, only while the integration is
// enabled, and only after a tick.
func TestMetrics(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.daemon("d", nil)
	ctx := context.Background()

	// Before leading: cke_leader 0 and no integration series.
	m := scrape(t, d)
	if got := series(m, "cke_leader"); len(got) != 1 || got[0] != "cke_leader 0" {
		t.Errorf("a follower exports %q", got)
	}
	for _, name := range []string{"cke_sabakan_", "ckegen_machines", "ckegen_kubernetes_"} {
		if got := series(m, name); len(got) != 0 {
			t.Errorf("a follower exports %q", got)
		}
	}

	d.setLeading(true)
	if got := series(scrape(t, d), "cke_sabakan_"); len(got) != 0 {
		t.Errorf("a leader exports %q before its first tick", got)
	}
	must(t, d.runOnce(ctx, leader))
	m = scrape(t, d)
	if got := series(m, "ckegen_kubernetes_"); len(got) != 0 {
		t.Errorf("a daemon without Kubernetes access exports %q", got)
	}
	want := []string{
		"cke_sabakan_integration_successful 1",
		"cke_sabakan_integration_timestamp_seconds " + strconv.FormatFloat(float64(testNow.Unix()), 'g', -1, 64),
		// 20 machines, 4 boot servers not returned, 8 in the cluster.
		"cke_sabakan_unused_machines 8",
	}
	for _, w := range want {
		if !strings.Contains(m, w+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", w, strings.Join(series(m, "cke_"), "\n"))
		}
	}
	if got := series(m, "cke_leader"); len(got) != 1 || got[0] != "cke_leader 1" {
		t.Errorf("the leader exports %q", got)
	}
	total := 0
	for _, l := range series(m, "cke_sabakan_workers{") {
		var n int
		_, err := fmt.Sscanf(l[strings.LastIndex(l, " ")+1:], "%d", &n)
		must(t, err)
		total += n
	}
	if total != 5 {
		t.Errorf("cke_sabakan_workers sums to %d, want 5: %q", total, series(m, "cke_sabakan_workers"))
	}
	if !strings.Contains(m, `ckegen_machines{state="HEALTHY"} 16`+"\n") {
		t.Errorf("ckegen_machines: %q", series(m, "ckegen_machines"))
	}

	// A failed tick: successful 0, the counts of the last tick that had
	// them are kept.
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	if err := d.runOnce(ctx, leader); err == nil {
		t.Fatal("a tick against no sabakan succeeded")
	}
	m = scrape(t, d)
	for _, w := range []string{"cke_sabakan_integration_successful 0", "cke_sabakan_unused_machines 8"} {
		if !strings.Contains(m, w+"\n") {
			t.Errorf("after a failed tick /metrics lacks %q", w)
		}
	}

	// Disabled is not "successful": nothing is exported.
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	m = scrape(t, d)
	for _, name := range []string{"cke_sabakan_", "ckegen_machines"} {
		if got := series(m, name); len(got) != 0 {
			t.Errorf("a disabled integration exports %q", got)
		}
	}

	// Enabled again, then leadership ends: nothing is exported.
	must(t, f.st.SetDisabled(ctx, false))
	must(t, f.st.SetURL(ctx, f.url))
	must(t, d.runOnce(ctx, leader))
	if got := series(scrape(t, d), "cke_sabakan_integration_successful"); len(got) != 1 {
		t.Fatalf("enabled again: %q", got)
	}
	d.setLeading(false)
	m = scrape(t, d)
	if got := series(m, "cke_sabakan_"); len(got) != 0 {
		t.Errorf("after leadership ended: %q", got)
	}
	if got := series(m, "cke_leader"); len(got) != 1 || got[0] != "cke_leader 0" {
		t.Errorf("after leadership ended: %q", got)
	}

	// Stale roles disappear.
	d.setLeading(true)
	d.metrics.inventory.observe(testNow, &outcome{machines: []*machine.Machine{},
		current: &cluster.Cluster{Nodes: []*cluster.Node{{Address: "x", Labels: map[string]string{"cke.cybozu.com/role": "new"}}}}}, nil)
	if got := series(scrape(t, d), "cke_sabakan_workers{"); len(got) != 1 || got[0] != `cke_sabakan_workers{role="new"} 1` {
		t.Errorf("worker series after the roles changed: %q", got)
	}
}

// TestFollowerMetrics: of two running daemons, the follower exports
// cke_leader 0 and none of the integration's series.
func TestFollowerMetrics(t *testing.T) {
	f := newFixture(t)
	d1, d2 := f.daemon("d1", nil), f.daemon("d2", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 2)
	go func() { _ = d1.Run(ctx); done <- struct{}{} }()
	waitFor(t, "d1 to tick", func() bool { return ticks(d1) > 0 })
	go func() { _ = d2.Run(ctx); done <- struct{}{} }()
	time.Sleep(500 * time.Millisecond)
	m1, m2 := scrape(t, d1), scrape(t, d2)
	if !strings.Contains(m1, "cke_leader 1\n") || !strings.Contains(m1, "cke_sabakan_integration_successful 1\n") {
		t.Errorf("the leader: %q", append(series(m1, "cke_leader"), series(m1, "cke_sabakan_integration")...))
	}
	if !strings.Contains(m2, "cke_leader 0\n") || len(series(m2, "cke_sabakan_")) != 0 || len(series(m2, "ckegen_machines")) != 0 {
		t.Errorf("the follower: %q", append(series(m2, "cke_leader"), series(m2, "cke_sabakan_")...))
	}
	cancel()
	<-done
	<-done
}

// TestHealthAndVersion: /health and /version answer as CKE's.
func TestHealthAndVersion(t *testing.T) {
	t.Parallel() // see TestEtcdErrorIsEtcdError
	f := newFixture(t)
	d := f.daemon("d", nil)
	ts := httptest.NewServer(d.Handler())
	defer ts.Close()
	get := func(path string) (int, string, map[string]any) {
		t.Helper()
		resp, err := http.Get(ts.URL + path)
		must(t, err)
		defer resp.Body.Close()
		var body map[string]any
		must(t, json.NewDecoder(resp.Body).Decode(&body))
		return resp.StatusCode, resp.Header.Get("Content-Type"), body
	}
	code, ctype, body := get("/version")
	if code != 200 || ctype != "application/json" || body["version"] == "" || len(body) != 1 {
		t.Errorf("/version: %d %s %v", code, ctype, body)
	}

	code, ctype, body = get("/health")
	if code != 200 || ctype != "application/json" || body["health"] != "healthy" || body["etcd"] != "ok" || body["leader"] != false {
		t.Errorf("/health with etcd up: %d %s %v", code, ctype, body)
	}
	if _, ok := body["lastTick"]; ok {
		t.Errorf("a follower shows a last tick: %v", body)
	}
	leader := f.lead(t)
	d.setLeading(true)
	must(t, d.runOnce(context.Background(), leader))
	if _, _, body = get("/health"); body["leader"] != true || body["lastTick"].(map[string]any)["result"] != ResultOK {
		t.Errorf("/health of the leader: %v", body)
	}

	f.etcd.Close()
	code, ctype, body = get("/health")
	if code != http.StatusInternalServerError || ctype != "application/json" || body["health"] != "unhealthy" || body["etcd"] == "ok" {
		t.Errorf("/health with etcd down: %d %s %v", code, ctype, body)
	}
}

// leaderKeys returns the election keys held under name.
func (f *fixture) leaderKeys(t *testing.T, name string) []*mvccpb.KeyValue {
	t.Helper()
	resp, err := f.st.Client.Get(context.Background(), f.st.Key(storage.KeyCKEGenLeader), clientv3.WithPrefix())
	must(t, err)
	var out []*mvccpb.KeyValue
	for _, kv := range resp.Kvs {
		if string(kv.Value) == name {
			out = append(out, kv)
		}
	}
	return out
}

// TestCampaignGivesUpWhenSessionEnds: a daemon waiting behind a leader
// whose own session ends (its lease expired while etcd was out of reach)
// starts a new session and campaigns again, instead of waiting for ever
// behind a key that no longer exists.
func TestCampaignGivesUpWhenSessionEnds(t *testing.T) {
	f := newFixture(t)
	f.lead(t) // the test leads throughout
	d := f.daemon("waiting", nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	var first *mvccpb.KeyValue
	waitFor(t, "the daemon's campaign", func() bool {
		kvs := f.leaderKeys(t, "waiting")
		if len(kvs) == 1 {
			first = kvs[0]
		}
		return first != nil
	})
	_, err := f.st.Client.Revoke(ctx, clientv3.LeaseID(first.Lease))
	must(t, err)
	waitFor(t, "a new campaign with a new session", func() bool {
		kvs := f.leaderKeys(t, "waiting")
		return len(kvs) == 1 && kvs[0].Lease != first.Lease
	})
	if d.Leading() || ticks(d) != 0 {
		t.Error("the daemon leads while the test holds the leadership")
	}
	cancel()
	<-done
}

// TestSettingsChangeResetsBackoff: after failures have stretched the
// backoff, a settings change ticks at once and a failure after it retries
// after MinBackoff again, not after the stretched backoff.
func TestSettingsChangeResetsBackoff(t *testing.T) {
	f := newFixture(t)
	must(t, f.st.SetURL(context.Background(), "http://127.0.0.1:1/graphql"))
	d := f.daemon("d", func(c *Config) { c.Interval = time.Hour; c.MinBackoff = 20 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { _ = d.Run(ctx); close(done) }()
	// Waits of 20, 40, ..., 1280 ms: after the seventh failure the next
	// wait is 1.28 s, and the one after 2.56 s.
	waitFor(t, "seven failed ticks", func() bool { return ticks(d) == 7 })
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:2/graphql"))
	waitFor(t, "the triggered tick", func() bool { return ticks(d) == 8 })
	triggered := time.Now()
	waitFor(t, "the retry after the triggered tick", func() bool { return ticks(d) == 9 })
	if wait := time.Since(triggered); wait > 800*time.Millisecond {
		t.Errorf("the retry after a settings change came %s later, want about MinBackoff (20ms)", wait.Round(time.Millisecond))
	}
	if st := d.Status(); st.Reason != ReasonSabakanUnreachable {
		t.Errorf("status %+v", st)
	}
	cancel()
	<-done
}

// TestWarnings: a warning (here: an even control-plane-count) is in the
// status and in the log, and the tick goes on.
func TestWarnings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 2
	must(t, f.st.SetConstraints(ctx, c))
	var log strings.Builder
	var mu sync.Mutex
	d := f.daemon("d", func(c *Config) {
		c.Log = slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil))
	})
	must(t, d.runOnce(ctx, f.lead(t)))
	st, err := f.st.GetStatus(ctx)
	must(t, err)
	if st.Result != ResultOK || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "control-plane-count is even (2)") {
		t.Errorf("status %+v, want ok with the even control-plane-count warning", st)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(log.String(), `level=WARN msg="tick warning" warning="constraints: control-plane-count is even (2)`) {
		t.Errorf("the log lacks the warning:\n%s", log.String())
	}
}

type lockedWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// A misspelt worker role in a new template is held by the generator's
// typo guard: the daemon shows the warning in its status and removes no
// worker of the role the template used to name.
func TestMisspeltRoleWarning(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	roles := func(gpu string) []byte {
		return []byte(`{"name":"t","nodes":[{"user":"u","control_plane":true,"labels":{"cke.cybozu.com/role":"compute"}},` +
			`{"user":"u","labels":{"cke.cybozu.com/role":"compute"}},{"user":"u","labels":{"cke.cybozu.com/role":"storage"}},` +
			`{"user":"u","labels":{"cke.cybozu.com/role":"` + gpu + `"}}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`)
	}
	c, _ := f.st.GetConstraints(ctx)
	c.MinimumWorkers = 12
	must(t, f.st.SetConstraints(ctx, c))
	must(t, f.st.SetTemplate(ctx, roles("gpu")))
	d := f.daemon("d", nil)
	leader := f.lead(t)
	must(t, d.runOnce(ctx, leader))
	gpuWorkers := func() int {
		n := 0
		for _, nd := range f.cluster(t).Nodes {
			if !nd.ControlPlane && nd.Labels["cke.cybozu.com/role"] == "gpu" {
				n++
			}
		}
		return n
	}
	before := gpuWorkers()
	if before == 0 {
		t.Fatal("the first cluster has no gpu worker; the test needs one")
	}

	must(t, f.st.SetTemplate(ctx, roles("gpuu")))
	for range 3 {
		_ = d.runOnce(ctx, leader)
	}
	if got := gpuWorkers(); got != before {
		t.Errorf("gpu workers %d after the misspelt template, want %d kept", got, before)
	}
	st, err := f.st.GetStatus(ctx)
	must(t, err)
	found := false
	for _, w := range st.Warnings {
		found = found || strings.Contains(w, `template role "gpuu" matches no machine`)
	}
	if !found {
		t.Errorf("status warnings %q lack the misspelt role", st.Warnings)
	}
}
