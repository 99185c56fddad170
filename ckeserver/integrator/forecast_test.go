package integrator

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke/server"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/forecast"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// forecastIntegrator is an integrator on f's site whose series go to a
// registry of its own, and whose forecast is made by fc (forecast.Of
// when nil).
func forecastIntegrator(t *testing.T, f *fixture, fc liveview.ForecastFunc) (*Integrator, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	ig, err := New(Config{Client: f.cke, Registerer: reg, Forecast: fc, Config: decision.Config{Name: "cke-1",
		Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now:     func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	must(t, err)
	return ig, reg
}

// series are a registry's series by name (a histogram: its count), -1
// for none.
func series(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	must(t, err)
	for _, mf := range mfs {
		if mf.GetName() == name {
			m := mf.GetMetric()[0]
			return m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
		}
	}
	return -1
}

// storedForecast is the site's stored forecast (ok false: none).
func storedForecast(t *testing.T, f *fixture) (storage.ForecastSummary, bool) {
	t.Helper()
	s, err := f.st.GetForecast(context.Background())
	if errors.Is(err, storage.ErrNotFound) {
		return storage.ForecastSummary{}, false
	}
	must(t, err)
	return s, true
}

// eventually waits up to 30 s for cond, calling tick between tries.
func eventually(t *testing.T, what string, tick func(), cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		tick()
		time.Sleep(50 * time.Millisecond)
	}
}

// TestForecastInsideCKE: inside CKE's server the leader forecasts as
// ckegen's daemon does, in StartWatch's goroutine once a tick settled
// the cluster: the summary is stored, the views say its runway, and the
// runway's end is exported while StartWatch runs (CKE's server leads),
// not after.
func TestForecastInsideCKE(t *testing.T) {
	f := newFixture(t, *sitetest.Counts(3, 5))
	ig, reg := forecastIntegrator(t, f, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ig.StartWatch(ctx, make(chan struct{}, 1)) }()

	eventually(t, "a forecast stored", func() { must(t, ig.Do(ctx, f.leader, nil)) }, func() bool {
		_, ok := storedForecast(t, f)
		return ok
	})
	sum, _ := storedForecast(t, f)
	if !sum.At.Equal(testNow) || sum.RunwayMessage == "" || sum.Failed != nil || len(sum.Events) == 0 {
		t.Fatalf("stored forecast %+v", sum)
	}
	eventually(t, "the runway's end exported", func() {}, func() bool {
		return series(t, reg, "ckegen_runway_end_timestamp_seconds") == float64(sum.End.Unix())
	})
	if got := series(t, reg, "ckegen_forecast_failing"); got != 0 {
		t.Errorf("ckegen_forecast_failing = %v, want 0", got)
	}
	r, err := liveview.ReadRunway(ctx, storage.Storage{Client: f.cke}, testNow)
	must(t, err)
	if line := r.Line(); !strings.HasPrefix(line, sum.RunwayMessage) || len(r.Events()) != len(sum.Events) {
		t.Errorf("the status's runway %q, events %q; want the stored forecast's %q", line, r.Events(), sum.RunwayMessage)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("StartWatch: %v", err)
	}
	if got := series(t, reg, "ckegen_runway_end_timestamp_seconds"); got != -1 {
		t.Errorf("ckegen_runway_end_timestamp_seconds = %v after StartWatch ended, want none", got)
	}
}

// TestForecastPanicInsideCKE: a forecast that panics, run by CKE's own
// loop (server.RunIntegrator, as --debug-sabakan runs it), does not end
// it. The forecast never holds up a tick: while it runs, the ticks go
// on. Its panic is stored as the forecast's failure, which the status
// says, and ckegen_forecast_failing is 1; the loop keeps ticking.
func TestForecastPanicInsideCKE(t *testing.T) {
	f := newFixture(t, *sitetest.Counts(3, 5))
	started, release := make(chan struct{}), make(chan struct{})
	ig, reg := forecastIntegrator(t, f, func(world.World, forecast.Options) (*forecast.Forecast, error) {
		close(started)
		<-release
		panic("a forecast's bug")
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- server.RunIntegrator(ctx, ig) }()

	statusRev := func() int64 {
		v, err := f.st.Get(ctx, storage.KeySabakanStatus)
		if errors.Is(err, storage.ErrNotFound) {
			return 0
		}
		must(t, err)
		return v.ModRevision
	}
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("CKE's loop ended before a forecast: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no forecast started")
	}
	// The forecast runs: ticks still happen.
	rev := statusRev()
	eventually(t, "a tick while the forecast runs", func() {}, func() bool { return statusRev() > rev })
	close(release)

	eventually(t, "the failure stored", func() {}, func() bool {
		s, ok := storedForecast(t, f)
		return ok && s.Failed != nil
	})
	sum, _ := storedForecast(t, f)
	if !strings.Contains(sum.Failed.Message, "the forecast panicked: a forecast's bug") || !sum.At.IsZero() {
		t.Errorf("stored forecast %+v, failure %+v", sum, sum.Failed)
	}
	r, err := liveview.ReadRunway(ctx, storage.Storage{Client: f.cke}, testNow)
	must(t, err)
	if line := r.Line(); !strings.Contains(line, "the last forecast failed") || !strings.Contains(line, "panicked") {
		t.Errorf("the status's runway %q does not say the forecast failed", line)
	}
	eventually(t, "ckegen_forecast_failing 1", func() {}, func() bool { return series(t, reg, "ckegen_forecast_failing") == 1 })
	if got := series(t, reg, "ckegen_runway_end_timestamp_seconds"); got != -1 {
		t.Errorf("ckegen_runway_end_timestamp_seconds = %v with no forecast ever made, want none", got)
	}
	rev = statusRev()
	eventually(t, "a tick after the panic", func() {}, func() bool { return statusRev() > rev })
	select {
	case err := <-done:
		t.Fatalf("CKE's loop ended: %v", err)
	default:
	}
	if got := series(t, reg, "ckegen_leader"); got != 1 {
		t.Errorf("ckegen_leader = %v after the panic, want 1", got)
	}
	cancel()
	<-done
}

// TestOrderByInsideCKE: inside CKE's server the leader's forecast buys,
// as ckegen's daemon's does, and the first order-by date of its
// purchases is exported while StartWatch runs, not after. The forecast
// is forecast.Of's, with a purchase added when it was asked to buy.
func TestOrderByInsideCKE(t *testing.T) {
	f := newFixture(t, *sitetest.Counts(3, 5))
	ig, reg := forecastIntegrator(t, f, func(w world.World, o forecast.Options) (*forecast.Forecast, error) {
		fc, err := forecast.Of(w, o)
		if err != nil || o.Buy == nil {
			return fc, err
		}
		fc.Purchases = []forecast.Purchase{{Role: "cs", Count: 2, Racks: map[string]int{"0": 2}, Needed: "2026-06-01", OrderBy: "2026-03-03", Reason: "workers"}}
		return fc, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ig.StartWatch(ctx, make(chan struct{}, 1)) }()

	by := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	eventually(t, "the order-by date exported", func() { must(t, ig.Do(ctx, f.leader, nil)) }, func() bool {
		return series(t, reg, "ckegen_capacity_order_by_timestamp_seconds") == float64(by.Unix())
	})
	if sum, _ := storedForecast(t, f); sum.OrderBy != "2026-03-03" || len(sum.Purchases) != 1 {
		t.Errorf("stored forecast: order by %q, purchases %+v", sum.OrderBy, sum.Purchases)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("StartWatch: %v", err)
	}
	if got := series(t, reg, "ckegen_capacity_order_by_timestamp_seconds"); got != -1 {
		t.Errorf("ckegen_capacity_order_by_timestamp_seconds = %v after StartWatch ended, want none", got)
	}
}
