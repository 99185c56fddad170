package liveview

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture: an etcd with a URL, template and cluster; the compatible
// server with 3 racks of 5 (one boot server each), counting requests.
type fixture struct {
	st       storage.Storage
	store    *fakesabakan.Store
	sabakan  *httptest.Server
	requests atomic.Int64
	clock    *clock
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{clock: &clock{t: testNow}}
	s := sitetest.Start(t, sitetest.Options{
		Now:        testNow,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 3, 5, 0 },
		Wrap: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				f.requests.Add(1)
				h.ServeHTTP(w, r)
			})
		},
		Template: `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` + sitetest.CKEOptions + `}`,
		StoreURL: true,
	})
	f.st, f.store, f.sabakan = s.Storage, s.Store, s.Server
	ctx := context.Background()
	// CKE's tools may write the cluster directly; so does this test.
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyCluster),
		`{"name":"t","nodes":[{"address":"10.0.0.2","user":"u","control_plane":true},{"address":"10.0.1.3","user":"u","control_plane":false},{"address":"10.0.9.9","user":"u","control_plane":false}],"service_subnet":"10.68.0.0/16"}`)
	must(t, err)
	return f
}

func (f *fixture) reader(o Options) *Reader {
	o.Now = f.clock.now
	o.Sabakan = sabakan.Options{Timeout: 2 * time.Second, Retries: -1}
	return NewReader(f.st, o)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func cells(m *Map) map[string]Cell {
	out := map[string]Cell{}
	for _, r := range m.Racks {
		for _, c := range r.Cells {
			out[c.Address] = c
		}
	}
	return out
}

// TestMapSnapshotInput: the map shows every machine sabakan has, the ones
// the stored query variables leave out as not usable, the cluster, the
// reboot queue and the template's roles.
func TestMapSnapshotInput(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyRebootsData+"1"), `{"index":1,"node":"10.0.1.3","status":"draining"}`)
	must(t, err)
	for _, st := range []machine.State{machine.StateRetiring, machine.StateRetired} { // 10.0.1.2
		_, err = f.store.SetState("S000007", st)
		must(t, err)
	}

	r := f.reader(Options{})
	s, err := r.View(ctx)
	must(t, err)
	if s.MapErr != nil {
		t.Fatal(s.MapErr)
	}
	if s.Map.Totals.Machines != 15 {
		t.Errorf("machines: got %d, want 15 (boot servers and RETIRED machines included)", s.Map.Totals.Machines)
	}
	c := cells(s.Map)
	for addr, want := range map[string]struct {
		kind      Kind
		why       string
		rebooting bool
	}{
		"10.0.0.1": {KindUnusable, leftOutOnline, false}, // boot: the default query skips it
		"10.0.1.2": {KindUnusable, leftOutOnline, false}, // RETIRED: likewise
		"10.0.0.2": {KindControlPlane, "", false},
		"10.0.1.3": {KindWorker, "", true},
		"10.0.2.4": {KindUnused, "", false},
	} {
		got := c[addr]
		if got.Kind != want.kind || got.Why != want.why || got.Rebooting != want.rebooting {
			t.Errorf("%s: got %+v, want kind %s, why %q, rebooting %v", addr, got, want.kind, want.why, want.rebooting)
		}
	}
	if len(s.Map.Orphans) != 1 || s.Map.Orphans[0].Address != "10.0.9.9" {
		t.Errorf("orphans: %+v", s.Map.Orphans)
	}
	if s.ClusterName != "t" || s.Status != nil || len(s.History) != 0 {
		t.Errorf("snapshot: %+v", s)
	}

	// Variables that select one role: the others are filtered out (once
	// the decision drawn is older than CacheTTL).
	must(t, sitetest.StoreOf(f.st).SetQueryVariables(ctx, []byte(`{"having": {"roles": ["storage"]}}`)))
	f.clock.add(DefaultCacheTTL)
	s, err = r.View(ctx)
	must(t, err)
	for _, cell := range cells(s.Map) {
		if selected := cell.Why != leftOutOnline; selected != (cell.Role == "storage") {
			t.Errorf("with roles [storage]: %+v", cell)
		}
	}
}

// TestMapSnapshotCache: a page refreshed within CacheTTL does not query
// sabakan again, whatever changed: the decision drawn is reused; an
// expired one is made again.
func TestMapSnapshotCache(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.reader(Options{CacheTTL: 10 * time.Second})
	snap := func() *View {
		t.Helper()
		s, err := r.View(ctx)
		must(t, err)
		if s.MapErr != nil {
			t.Fatal(s.MapErr)
		}
		return s
	}
	snap()
	if n := f.requests.Load(); n != 2 {
		t.Fatalf("first snapshot: %d requests, want 2 (every machine, and the daemon's query)", n)
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() { snap() })
	}
	wg.Wait()
	f.clock.add(9 * time.Second)
	snap()
	if n := f.requests.Load(); n != 2 {
		t.Errorf("within the TTL: %d requests, want still 2", n)
	}

	// An answer within the TTL is reused even when sabakan changed...
	_, err := f.store.SetState("S000004", machine.StateUnreachable)
	must(t, err)
	if c := cells(snap().Map)["10.0.0.4"]; c.State != machine.StateHealthy {
		t.Errorf("cached answer: %+v", c)
	}
	// ...and not after it.
	f.clock.add(2 * time.Second)
	if c := cells(snap().Map)["10.0.0.4"]; c.State != machine.StateUnreachable {
		t.Errorf("after the TTL: %+v, want UNREACHABLE", c)
	}
	if n := f.requests.Load(); n != 4 {
		t.Errorf("after the TTL: %d requests, want 4", n)
	}
	must(t, sitetest.StoreOf(f.st).SetQueryVariables(ctx, []byte(`{"having": null}`)))
	snap()
	if n := f.requests.Load(); n != 4 {
		t.Errorf("new variables within the TTL: %d requests, want still 4", n)
	}
	f.clock.add(10 * time.Second)
	snap()
	if n := f.requests.Load(); n != 6 {
		t.Errorf("new variables after the TTL: %d requests, want 6", n)
	}
}

// TestMapSnapshotFailures: sabakan or a setting failing leaves the status
// and history readable, with the reason in MapErr; etcd failing is an
// EtcdError.
func TestMapSnapshotFailures(t *testing.T) {
	ctx := context.Background()
	t.Run("no URL", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.st.Client.Delete(ctx, f.st.Key(storage.KeySabakanURL))
		must(t, err)
		s, err := f.reader(Options{}).View(ctx)
		must(t, err)
		if s.MapErr == nil || !strings.Contains(s.MapErr.Error(), "no sabakan URL: set one with ckegenctl sabakan set-url") || s.Map != nil {
			t.Errorf("MapErr %v, map %v", s.MapErr, s.Map)
		}
	})
	t.Run("bad variables", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanQueryVariables), `{"having": {"states": ["BROKEN"]}}`)
		must(t, err)
		s, err := f.reader(Options{}).View(ctx)
		must(t, err)
		if s.MapErr == nil || !strings.Contains(s.MapErr.Error(), `stored query variables are invalid: query variables: line 1, column 24: having.states[0]: unknown state "BROKEN"`) {
			t.Errorf("MapErr %v", s.MapErr)
		}
	})
	t.Run("bad template", func(t *testing.T) {
		f := newFixture(t)
		_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeySabakanTemplate), `{"name":"t"}`)
		must(t, err)
		s, err := f.reader(Options{}).View(ctx)
		must(t, err)
		if s.MapErr == nil || s.Map != nil || !strings.Contains(s.MapErr.Error(), "template") {
			t.Errorf("MapErr %v, map %v", s.MapErr, s.Map)
		}
	})
	t.Run("sabakan down", func(t *testing.T) {
		f := newFixture(t)
		f.sabakan.Close()
		s, err := f.reader(Options{}).View(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.MapErr == nil || !errors.Is(s.MapErr, sabakan.ErrUnreachable) {
			t.Errorf("MapErr %v, want sabakan unreachable", s.MapErr)
		}
	})
	t.Run("etcd down", func(t *testing.T) {
		url := etcdtest.Start(t)
		cli := etcdtest.Connect(t, url)
		st := storage.New(cli, "")
		must(t, sitetest.StoreOf(st).SetURL(ctx, "http://127.0.0.1:1/graphql"))
		cli.Close()
		_, err := NewReader(st, Options{EtcdTimeout: 500 * time.Millisecond}).View(ctx)
		var ee *EtcdError
		if !errors.As(err, &ee) {
			t.Errorf("got %v, want an EtcdError", err)
		}
	})
}

// TestMapSnapshotPendingAndHistory: the next step of the leader's
// decision is the page's pending step, highlighted on the map, and the
// history is the last HistoryLimit entries, newest first.
func TestMapSnapshotPendingAndHistory(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	sess := f.st.Key(storage.KeyLeader + "test")
	_, err := f.st.Client.Put(ctx, sess, "test")
	must(t, err)
	for i := 1; i <= 4; i++ {
		must(t, f.st.AddHistory(ctx, sess, storage.HistoryEntry{Op: fmt.Sprintf("op%d", i), ClusterRevision: int64(i)}))
	}
	r := f.reader(Options{HistoryLimit: 3})
	d, err := r.Decide(ctx, Preview{})
	must(t, err)
	s, err := r.View(ctx)
	must(t, err)
	var ops []string
	for _, h := range s.History {
		ops = append(ops, h.Op)
	}
	if strings.Join(ops, ",") != "op4,op3,op2" {
		t.Errorf("history: %q, want op4,op3,op2", ops)
	}
	first := d.Plan.Steps[0]
	if s.NextStep == nil || s.NextStep.Op != first.Op || s.NextStep.Steps != len(d.Plan.Steps) || len(s.NextStep.Changes) != len(first.Changes) ||
		!s.NextStep.ComputedAt.Equal(testNow) {
		t.Fatalf("pending: %+v, want the decision's first step %+v of %d", s.NextStep, first, len(d.Plan.Steps))
	}
	for _, ch := range first.Changes {
		c, ok := cells(s.Map)[ch.Address]
		if !ok {
			c = Cell{Change: orphanChange(s.Map, ch.Address)}
		}
		if c.Change == "" {
			t.Errorf("the change %s %s is not highlighted", ch.Action, ch.Address)
		}
	}
}

// TestMapSnapshotModel: the map says the model of the stored constraints
// (CKE v1.35.4's defaults, the rate model, when none are stored) and, in the rate
// model, the figure of the cluster as the decision's step leaves it
// against the machines the daemon's query returns; invalid constraints
// leave no map, and say why.
func TestMapSnapshotModel(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	r := f.reader(Options{})
	s, err := r.View(ctx)
	must(t, err)
	if s.Map == nil || s.Map.Model != "rate" || s.Map.Rate == nil || s.Map.Rate.Minimum != 80 || len(s.Notes) != 0 {
		t.Fatalf("no constraints stored: map %+v, notes %q; want CKE's defaults, the rate model at 80%%", s.Map, s.Notes)
	}
	_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeyConstraints), `{"control-plane-count":1,"minimum-workers-rate":80,"maximum-unreachable-nodes-for-reboot":0,"maximum-repair-queue-entries":0,"wait-seconds-to-repair-rebooting":0}`)
	must(t, err)
	f.clock.add(DefaultCacheTTL)
	s, err = r.View(ctx)
	must(t, err)
	d, err := r.Decide(ctx, Preview{})
	must(t, err)
	if d.Step == nil {
		t.Fatal("the decision writes no step: the rate of the cluster after it is not told apart")
	}
	// The workers of the cluster after the step; 12 machines: 15 less the
	// 3 boot servers the default query skips.
	workers := 0
	for _, n := range d.Step.Cluster.Nodes {
		if !n.ControlPlane {
			workers++
		}
	}
	want := &generator.WorkerRate{Workers: workers, Machines: 12, Percent: 100 * float64(workers-1) / 12, Minimum: 80}
	if got := s.Map.Rate; s.Map.Model != "rate" || got == nil || got.Workers != want.Workers || got.Machines != want.Machines ||
		got.Minimum != want.Minimum || math.Abs(got.Percent-want.Percent) > 0.001 {
		t.Errorf("rate model: model %q, rate %+v, want %+v", s.Map.Model, s.Map.Rate, want)
	}

	_, err = f.st.Client.Put(ctx, f.st.Key(storage.KeyConstraints), `{"control-plane-count":1,"minimum-workers":2,"minimum-workers-rate":80}`)
	must(t, err)
	f.clock.add(DefaultCacheTTL)
	s, err = r.View(ctx)
	must(t, err)
	if s.Map != nil || s.MapErr == nil || !strings.Contains(s.MapErr.Error(), "minimum-workers-rate cannot be used with minimum-workers") {
		t.Errorf("both models stored: map %+v, error %v", s.Map, s.MapErr)
	}
}

// orphanChange is the highlighted change of the orphan node at addr.
func orphanChange(m *Map, addr string) string {
	for _, o := range m.Orphans {
		if o.Address == addr {
			return o.Change
		}
	}
	return ""
}
