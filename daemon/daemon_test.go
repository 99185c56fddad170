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
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
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
	site *sitetest.Site
	etcd *embedded.Etcd
	st   sitetest.Store
	url  string
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
	return &fixture{site: s, etcd: s.Etcd, st: sitetest.StoreOf(s.Storage), url: s.URL}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) daemon(name string, mod func(*Config)) *Daemon {
	cfg := Config{Storage: f.st.Storage, SessionTTL: time.Second, Config: decision.Config{
		Name: name, Interval: storage.Duration(200 * time.Millisecond),
		MinBackoff: storage.Duration(20 * time.Millisecond), RetireWait: storage.Duration(time.Minute),
		Sabakan: sabakan.Options{Timeout: time.Second, Retries: -1},
		Now:     func() time.Time { return testNow },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	}}
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

// ticks is the number of ticks d has finished, read from its
// ckegen_tick_duration_seconds histogram.
func ticks(d *Daemon) int64 {
	var m dto.Metric
	ch := make(chan prometheus.Metric, 64)
	d.metrics.Collect(ch)
	close(ch)
	for c := range ch {
		if strings.Contains(c.Desc().String(), `"ckegen_tick_duration_seconds"`) {
			if err := c.Write(&m); err != nil {
				panic(err)
			}
		}
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
	d := f.daemon("d", func(c *Config) { c.Interval = storage.Duration(time.Hour) })
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
	must(t, d.runOnce(ctx, leader).Err)
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
	if err := d.runOnce(ctx, leader).Err; err == nil {
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
	must(t, d.runOnce(ctx, leader).Err)
	m = scrape(t, d)
	for _, name := range []string{"cke_sabakan_", "ckegen_machines"} {
		if got := series(m, name); len(got) != 0 {
			t.Errorf("a disabled integration exports %q", got)
		}
	}

	// Enabled again, then leadership ends: nothing is exported.
	must(t, f.st.SetDisabled(ctx, false))
	must(t, f.st.SetURL(ctx, f.url))
	must(t, d.runOnce(ctx, leader).Err)
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
	d.metrics.Observe(testNow, tick.Result{Status: storage.Status{Time: testNow, Result: reason.OK,
		Inventory: &storage.InventoryFigures{Machines: map[string]int{}, Workers: map[string]int{"new": 1}}}})
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
	if code != 200 || ctype != "application/json" || body["version"] != version.String() || body["cke_version"] != version.CKEVersion || len(body) != 3 {
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
	must(t, d.runOnce(context.Background(), leader).Err)
	if _, _, body = get("/health"); body["leader"] != true || body["lastTick"].(map[string]any)["result"] != reason.OK {
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
	d := f.daemon("d", func(c *Config) {
		c.Interval = storage.Duration(time.Hour)
		c.MinBackoff = storage.Duration(20 * time.Millisecond)
	})
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
	if st := d.Status(); st.Reason != reason.SabakanUnreachable {
		t.Errorf("status %+v", st)
	}
	cancel()
	<-done
}
