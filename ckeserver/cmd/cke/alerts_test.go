package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke"
	"github.com/cybozu-go/cke/metrics"
	"github.com/cybozu-go/etcdutil"
	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/ckeserver/integrator"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/promtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// daemonOnlyReasons are the reasons only a ckegen daemon beside CKE's
// server has (decision.Gate holds nothing inside CKE's server, which
// paces ckegen itself): an alert rule on one of them is not expected to
// fire inside.
var daemonOnlyReasons = []string{"OWNED_BY_CKE", "CKE_INTEGRATION_ACTIVE", "CKE_NOT_READY"}

// alertTemplate is a template CKE's validation accepts.
const alertTemplate = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` +
	`"options":{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"},"etcd":{"volume_name":"etcd-cke"}}}`

// TestAlertMetricsInsideCKE: every alert rule of deploy/prometheus reads
// metrics our cke serves on its /metrics (newHandler: CKE's collector and
// the default registry, where the integrator registers, as run does),
// but the rules on a reason only a daemon beside CKE's server has. It
// scrapes while the integrator waits for the template, after a tick
// that settled the cluster and the forecast that followed, while it holds
// on constraints no longer stored, and while its ticks fail (sabakan unreachable), the leader's loop (StartWatch)
// running throughout, and looks up each rule's metrics in what it saw.
func TestAlertMetricsInsideCKE(t *testing.T) {
	rules, err := promtest.AlertRules(filepath.Join("..", "..", "..", "deploy", "prometheus", "alerts.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rules) == 0 {
		t.Fatal("no alert rule in deploy/prometheus/alerts.yml")
	}
	s := sitetest.Start(t, sitetest.Options{DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		StoreURL: true, Constraints: sitetest.Counts(3, 5)})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := cke.NewEtcdConfig()
	cfg.Endpoints = []string{s.EtcdURL}
	etcd, err := etcdutil.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer etcd.Close()
	lg := slog.New(slog.NewTextHandler(io.Discard, nil))
	ig, err := integrator.New(integrator.Config{Client: etcd, Registerer: prometheus.DefaultRegisterer,
		Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1}, Log: lg}})
	if err != nil {
		t.Fatal(err)
	}
	mux, err := newHandler(etcd, 5*time.Second, lg)
	if err != nil {
		t.Fatal(err)
	}
	// What CKE's controller does while it leads: the election, its
	// leader series, and StartWatch.
	sess, err := concurrency.NewSession(etcd, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	e := concurrency.NewElection(sess, "leader/")
	if err := e.Campaign(ctx, "cke-1"); err != nil {
		t.Fatal(err)
	}
	leaderKey := e.Key()
	metrics.UpdateLeader(true)
	defer metrics.UpdateLeader(false)
	watching := make(chan error, 1)
	go func() { watching <- ig.StartWatch(ctx, make(chan struct{}, 1)) }()

	seen := map[string]string{} // name: the phase it was first seen in
	scrape := func(phase string) map[string]bool {
		t.Helper()
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		if rec.Code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", rec.Code, rec.Body)
		}
		names := map[string]bool{}
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			name := line[:strings.IndexAny(line, "{ ")]
			names[name] = true
			if _, ok := seen[name]; !ok {
				seen[name] = phase
			}
		}
		return names
	}
	do := func() {
		t.Helper()
		if err := ig.Do(ctx, leaderKey, nil); err != nil {
			t.Fatalf("Do: %v", err)
		}
	}
	// until ticks and scrapes until the phase shows name.
	until := func(phase, name string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !scrape(phase)[name] {
			if time.Now().After(deadline) {
				t.Fatalf("%s: no %s on /metrics", phase, name)
			}
			do()
			time.Sleep(50 * time.Millisecond)
		}
	}
	st := sitetest.StoreOf(storage.Storage{Client: etcd})
	until("waiting", "ckegen_integration_waiting")
	if err := st.SetTemplate(ctx, []byte(alertTemplate)); err != nil {
		t.Fatal(err)
	}
	until("settled and forecast", "ckegen_runway_end_timestamp_seconds")
	// The site's retire dates take it below its 5 workers within 3
	// years: the forecast buys, and its order-by date is exported.
	until("settled and forecast", "ckegen_capacity_order_by_timestamp_seconds")
	// The count model ran; with the constraints gone the leader holds
	// (CONSTRAINTS_UNCHOSEN) until a model is stored again.
	if _, err := etcd.Delete(ctx, storage.KeyConstraints); err != nil {
		t.Fatal(err)
	}
	until("held", "ckegen_integration_held")
	if err := st.SetConstraints(ctx, *sitetest.Counts(3, 5)); err != nil {
		t.Fatal(err)
	}
	if err := st.SetURL(ctx, fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t))); err != nil {
		t.Fatal(err)
	}
	until("failing", "ckegen_integration_failing")

	checked := 0
	for _, r := range rules {
		names, err := promtest.MetricNames(r.Expr)
		if err != nil {
			t.Fatalf("rule %s: expr %q: %v", r.Alert, r.Expr, err)
		}
		if len(names) == 0 {
			t.Errorf("rule %s names no metric", r.Alert)
		}
		if exempt := slices.ContainsFunc(promtest.LabelValues(r.Expr, "reason"), func(v string) bool { return slices.Contains(daemonOnlyReasons, v) }); exempt {
			t.Logf("%s: exempt (a reason only a daemon beside CKE's server has)", r.Alert)
			continue
		}
		checked++
		for _, n := range names {
			if phase, ok := seen[n]; ok {
				t.Logf("%s: %s exported (%s)", r.Alert, n, phase)
				continue
			}
			t.Errorf("alert %s reads %s, which CKE's server with ckegen inside never exported: export it inside (ckeserver/integrator), or if only a daemon beside CKE's server can have its state, say so in daemonOnlyReasons", r.Alert, n)
		}
	}
	if checked == 0 {
		t.Error("every rule is exempt")
	}
	select {
	case err := <-watching:
		t.Fatalf("StartWatch ended: %v", err)
	default:
	}
}
