package tick

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const (
	testOptions  = sitetest.CKEOptions
	testTemplate = sitetest.Template
)

// fixture is a test site: an etcd, the compatible server with 4 racks of
// 5 machines (all HEALTHY), and the template, URL and constraints (3
// control planes, 5 workers) stored.
type fixture struct {
	site  *sitetest.Site
	etcd  *embedded.Etcd
	st    sitetest.Store
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
	s := sitetest.Small(t, testNow, clock)
	return &fixture{site: s, etcd: s.Etcd, st: sitetest.StoreOf(s.Storage), store: s.Store, url: s.URL}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// testConfig is a step's configuration and what its host gives each
// tick.
type testConfig struct {
	decision.Config
	Storage    storage.Storage
	Kubernetes kubenodes.Kubernetes
}

// testStep is a step as a host runs it: with the Kubernetes view the
// host gives it, and its metrics, which these tests scrape as a host's
// /metrics serves them.
type testStep struct {
	*Step
	kube    kubenodes.Kubernetes
	repair  Repair
	metrics *Metrics
	reg     *prometheus.Registry
	// status is the status of the last tick, as a host keeps it.
	status storage.Status
}

// Status is the status of the last tick.
func (d *testStep) Status() storage.Status { return d.status }

// step is a step of the site named name; mod changes its configuration.
func (f *fixture) step(name string, mod func(*testConfig)) *testStep {
	cfg := testConfig{Storage: f.st.Storage, Config: decision.Config{
		Name: name, RetireWait: storage.Duration(time.Minute),
		Sabakan: sabakan.Options{Timeout: time.Second, Retries: -1},
		Now:     func() time.Time { return testNow },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
	if mod != nil {
		mod(&cfg)
	}
	d := &testStep{Step: New(cfg.Storage, cfg.Config), kube: cfg.Kubernetes, metrics: NewMetrics(MetricsOptions{CKENames: true}), reg: prometheus.NewRegistry()}
	d.reg.MustRegister(d.metrics)
	return d
}

// runOnce runs a tick as a host does, and returns its failure.
func (d *testStep) runOnce(ctx context.Context, leaderKey string) error {
	return d.run(ctx, leaderKey).Err
}

// run runs a tick as a host does: the metrics observe its result.
func (d *testStep) run(ctx context.Context, leaderKey string) Result {
	r := d.Run(ctx, leaderKey, d.kube, d.repair)
	if !r.Status.Time.IsZero() {
		d.metrics.Observe(d.cfg.Now().UTC(), r)
		d.status = r.Status
		record(r.Status.Reason, r.Status.Result)
	}
	return r
}

// setLeading is the host's: the end of leadership clears the series only
// a leader exports.
func (d *testStep) setLeading(leading bool) {
	if !leading {
		d.metrics.Clear()
	}
}

// scrape returns d's metrics as a host's /metrics serves them, over HTTP.
func scrape(t *testing.T, d *testStep) string {
	t.Helper()
	ts := httptest.NewServer(promhttp.HandlerFor(d.reg, promhttp.HandlerOpts{}))
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
	d := f.step("d1", nil)
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
	if st.Result != reason.OK || st.LastOp != "new" || st.LastChangeCount != 8 || st.Leader != "d1" {
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
		mod    func(*testConfig)
		reason string
		want   string
	}{

		{"invalid template", func(t *testing.T, f *fixture) {
			must(t, f.st.SetTemplate(context.Background(), []byte(`{"name":"t","nodes":[]}`)))
		}, nil, reason.InvalidTemplate, "need exactly one control plane node"},

		{"sabakan unreachable", func(t *testing.T, f *fixture) {
			must(t, f.st.SetURL(context.Background(), "http://127.0.0.1:1/graphql"))
		}, nil, reason.SabakanUnreachable, "connection refused"},
		{"HTTP error", func(t *testing.T, f *fixture) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "broken", 500) }))
			t.Cleanup(ts.Close)
			must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
		}, nil, reason.SabakanUnreachable, "HTTP 500: broken"},
		{"query error", func(t *testing.T, f *fixture) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"data":{}}`))
			}))
			t.Cleanup(ts.Close)
			must(t, f.st.SetURL(context.Background(), ts.URL+"/graphql"))
		}, nil, reason.QueryError, "data.searchMachines is missing or null"},
		{"invalid variables", func(t *testing.T, f *fixture) {
			must(t, f.st.SetQueryVariables(context.Background(), []byte(`{"having":{"states":["X"]}}`)))
		}, nil, reason.InvalidVariables, `unknown state "X"`},
		{"invalid constraints", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyConstraints), `{"control-plane-count":0}`)
			must(t, err)
		}, nil, reason.InvalidConstraints, "control-plane-count: must be >= 1"},
		{"invalid disabled flag", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeySabakanDisabled), "yes")
			must(t, err)
		}, nil, reason.InvalidDisabled, `want true or false, got "yes"`},
		{"invalid stored cluster", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyCluster), `{"name": "x", "nodes": [`)
			must(t, err)
		}, nil, reason.InvalidCluster, "stored cluster"},
		{"invalid cluster-revision", func(t *testing.T, f *fixture) {
			_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyClusterRevision), "twelve")
			must(t, err)
		}, nil, reason.InvalidCluster, `cluster-revision: invalid stored value: not a decimal revision: "twelve"`},
		{"not enough machines", func(t *testing.T, f *fixture) {
			c, _ := f.st.GetConstraints(context.Background())
			c.MinimumWorkers = 500
			must(t, f.st.SetConstraints(context.Background(), c))
		}, nil, reason.NotEnoughMachines, "need 500 workers"},
		{"invalid policy: no such template", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"gpu": {"constraints": ["topology.kubernetes.io/zone in (rack1)"]}}}`)
		}, nil, reason.InvalidPolicy, "placements.gpu: no template takes this placement"},
		{"invalid policy: bad constraint", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"control-plane": {"constraints": ["topology.kubernetes.io/zone in rack1"]}}}`)
		}, nil, reason.InvalidPolicy, "placements.control-plane.constraints[0]"},
		{"metrics unavailable", func(t *testing.T, f *fixture) {
			putPolicy(t, f, `{"placements": {"control-plane": {"metrics": [{"name": "temp", "weight": -5}]}},
				"metrics": {"temp": {"provider": "prom", "query": "temp", "max": 50}},
				"providers": {"prom": {"type": "prometheus", "url": "http://127.0.0.1:1", "timeout": "1s"}}}`)
		}, nil, reason.MetricsUnavailable, "metric temp from provider prom"},
		{"cluster too large", nil, func(c *testConfig) { c.MaxClusterBytes = 1000 }, reason.ClusterTooLarge, "over etcd's request size limit of 1000 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			if c.setup != nil {
				c.setup(t, f)
			}
			leader := f.lead(t)
			before, _ := f.st.GetClusterRaw(context.Background())
			err := f.step("d", c.mod).runOnce(context.Background(), leader)
			var te *reason.Error
			if !errors.As(err, &te) || te.Reason != c.reason {
				t.Fatalf("error %v, want reason %s", err, c.reason)
			}
			st, gerr := f.st.GetStatus(context.Background())
			must(t, gerr)
			if st.Result != reason.Failing || st.Reason != c.reason || !strings.Contains(st.Message, c.want) || st.ConsecutiveFailures != 1 {
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
			d := f.step("d", nil)
			stop.stop(f)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err := d.runOnce(ctx, leader)
			var te *reason.Error
			if !errors.As(err, &te) || te.Reason != reason.EtcdError {
				t.Fatalf("error %v, want %s", err, reason.EtcdError)
			}
			if st := d.Status(); st.Reason != reason.EtcdError || st.Result != reason.Failing {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestTooManyNonExistentAndRecovery(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
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
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.TooManyNonExistent {
		t.Fatalf("error %v", err)
	}
	if _, again, _ := f.st.GetCluster(ctx); again != modRev {
		t.Error("the refused tick wrote the cluster")
	}
	// They come back: the next tick succeeds.
	must(t, f.st.SetQueryVariables(ctx, []byte(`{}`)))
	must(t, d.runOnce(ctx, leader))
	if st, _ := f.st.GetStatus(ctx); st.Result != reason.OK || st.ConsecutiveFailures != 0 {
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
	err = f.step("d", nil).runOnce(context.Background(), key)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.LostLeadership {
		t.Fatalf("error %v, want LOST_LEADERSHIP", err)
	}
	if f.cluster(t) != nil {
		t.Error("a leaderless tick wrote a cluster")
	}
}

func TestDisabled(t *testing.T) {
	f := newFixture(t)
	must(t, f.st.SetDisabled(context.Background(), true))
	must(t, f.step("d", nil).runOnce(context.Background(), f.lead(t)))
	if st, _ := f.st.GetStatus(context.Background()); st.Result != reason.Disabled {
		t.Errorf("status %+v", st)
	}
	if f.cluster(t) != nil {
		t.Error("a disabled tick wrote a cluster")
	}
}

// ticks is the number of ticks d has finished, read from its
// ckegen_tick_duration_seconds histogram.
// TestTwoDaemons: only the leader ticks; when its session ends (lease
// revoked, as when it dies), the other takes over.
// TestWatchTriggersTick: a settings change ticks at once, not after the
// interval.
// scrape returns d's /metrics, as Prometheus reads it, over HTTP.
// series returns the lines of a scrape that start with name, sorted as
// exported.
// TestMetrics: CKE's series with CKE's names; the cke_sabakan_* series
// and ckegen_machines only on the leader, only while the integration is
// enabled, and only after a tick.
// TestFollowerMetrics: of two running daemons, the follower exports
// cke_leader 0 and none of the integration's series.
// TestHealthAndVersion: /health and /version answer as CKE's.
// leaderKeys returns the election keys held under name.
// TestCampaignGivesUpWhenSessionEnds: a daemon waiting behind a leader
// whose own session ends (its lease expired while etcd was out of reach)
// starts a new session and campaigns again, instead of waiting for ever
// behind a key that no longer exists.
// TestSettingsChangeResetsBackoff: after failures have stretched the
// backoff, a settings change ticks at once and a failure after it retries
// after MinBackoff again, not after the stretched backoff.
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
	d := f.step("d", func(c *testConfig) {
		c.Log = slog.New(slog.NewTextHandler(&lockedWriter{w: &log, mu: &mu}, nil))
	})
	must(t, d.runOnce(ctx, f.lead(t)))
	st, err := f.st.GetStatus(ctx)
	must(t, err)
	if st.Result != reason.OK || len(st.Warnings) != 1 || !strings.Contains(st.Warnings[0], "control-plane-count is even (2)") {
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
	d := f.step("d", nil)
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

// leadSession makes the test lead as name in a session of its own, and
// returns the election key and a function that ends the session, as a
// leader's death does.
func (f *fixture) leadSession(t *testing.T, name string) (string, func()) {
	t.Helper()
	sess, err := concurrency.NewSession(f.st.Client, concurrency.WithTTL(2))
	must(t, err)
	t.Cleanup(func() { sess.Close() })
	e := concurrency.NewElection(sess, f.st.Key(storage.KeyCKEGenLeader))
	must(t, e.Campaign(context.Background(), name))
	return e.Key(), func() { must(t, sess.Close()) }
}

// TestRegenerateOnly: Step.Regenerate (a CKE server's Init) changes the
// cluster only to re-render it with a changed template: with the template
// unchanged it writes nothing, even when Update would taint a node; once
// the template changed, it regenerates and nothing else.
func TestRegenerateOnly(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	if r := d.Regenerate(ctx, leader, nil); r.Err != nil || f.cluster(t) != nil {
		t.Fatalf("no cluster: %v, cluster %v", r.Err, f.cluster(t))
	}
	must(t, d.runOnce(ctx, leader))
	c := f.cluster(t)
	_, err := f.store.SetState(c.Nodes[5].Annotations["cke.cybozu.com/serial"], machine.StateUnreachable)
	must(t, err)
	rev := f.clusterRev(t)
	if r := d.Regenerate(ctx, leader, nil); r.Err != nil || f.clusterRev(t) != rev || r.Status.Result != reason.OK {
		t.Fatalf("template unchanged: %v, written %v, status %+v", r.Err, f.clusterRev(t) != rev, r.Status)
	}
	if st := f.status(t); st.Pending == nil || st.Pending.Steps == 0 {
		t.Errorf("the plan after a regenerate-only tick: %+v, want the steps Update would take", st.Pending)
	}
	must(t, f.st.SetTemplate(ctx, []byte(strings.Replace(testTemplate, `"user":"u"}]`, `"user":"u","labels":{"example.com/x":"y"}}]`, 1))))
	if r := d.Regenerate(ctx, leader, nil); r.Err != nil || r.Status.LastOp != generator.OpRegenerate {
		t.Fatalf("template changed: %v, op %q", r.Err, r.Status.LastOp)
	}
	after := f.cluster(t)
	if len(after.Nodes) != len(c.Nodes) {
		t.Fatalf("Regenerate changed the membership: %d nodes, was %d", len(after.Nodes), len(c.Nodes))
	}
	for i, n := range after.Nodes {
		if n.Address != c.Nodes[i].Address || (!n.ControlPlane && n.Labels["example.com/x"] != "y") {
			t.Errorf("node %d: %s %v, want %s re-rendered with the new label", i, n.Address, n.Labels, c.Nodes[i].Address)
		}
	}
}

// TestWaitingForSettings: a template or URL never stored is not a
// failure: the result is waiting, with the reason and how to set it, no
// failure is counted, the failing series stays silent and the waiting one
// says why; the log says it once, and again when what is missing changes.
// Once the settings are stored, the tick runs.
func TestWaitingForSettings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, k := range []string{storage.KeySabakanTemplate, storage.KeySabakanURL} {
		_, err := f.st.Client.Delete(ctx, f.st.Key(k))
		must(t, err)
	}
	leader := f.lead(t)
	var logs lockedBuffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	for range 3 {
		r := d.run(ctx, leader)
		if r.Err != nil || !r.Idle() {
			t.Fatalf("a tick without a template: %v, idle %v", r.Err, r.Idle())
		}
	}
	st := f.status(t)
	if st.Result != reason.Waiting || st.Reason != reason.NoTemplate || st.Message != "no template: set one with ckegenctl sabakan set-template" || st.ConsecutiveFailures != 0 {
		t.Errorf("status %+v", st)
	}
	m := scrape(t, d)
	if got := series(m, "ckegen_integration_waiting"); !slices.Equal(got, []string{`ckegen_integration_waiting{reason="NO_TEMPLATE"} 1`}) {
		t.Errorf("waiting series %q", got)
	}
	for _, name := range []string{"ckegen_integration_failing", "cke_sabakan_"} {
		if got := series(m, name); len(got) != 0 {
			t.Errorf("a daemon waiting for its settings exports %q", got)
		}
	}
	must(t, f.st.SetTemplate(ctx, []byte(testTemplate)))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.Waiting || st.Reason != reason.NoURL {
		t.Errorf("template stored, no URL: %s %s", st.Result, st.Reason)
	}
	if n := strings.Count(logs.String(), "waiting for the settings"); n != 2 {
		t.Errorf("%d log lines about waiting, want one for the template and one for the URL:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), "level=ERROR") {
		t.Errorf("waiting logged as an error:\n%s", logs.String())
	}
	must(t, f.st.SetURL(ctx, f.url))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.OK || st.LastOp != "new" {
		t.Errorf("all set: %s %s", st.Result, st.LastOp)
	}
	if got := series(scrape(t, d), "ckegen_integration_waiting"); len(got) != 0 {
		t.Errorf("waiting series after the settings were stored: %q", got)
	}
}

// lockedBuffer is a log sink safe for the step's logger.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
