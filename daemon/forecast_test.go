package daemon

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/storage"
)

// clock is a time a test moves on.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// storedForecast is the stored summary and its mod revision (0: none).
func (f *fixture) storedForecast(t *testing.T) (storage.ForecastSummary, int64) {
	t.Helper()
	v, err := f.st.Get(context.Background(), storage.KeyCKEGenForecast)
	if errors.Is(err, storage.ErrNotFound) {
		return storage.ForecastSummary{}, 0
	}
	must(t, err)
	s, err := f.st.GetForecast(context.Background())
	must(t, err)
	return s, v.ModRevision
}

// quietTicks lets d tick n more times and checks no forecast was made.
func quietTicks(t *testing.T, f *fixture, d *Daemon, n int64, rev int64, why string) {
	t.Helper()
	from := ticks(d)
	waitFor(t, "more ticks", func() bool { return ticks(d) >= from+n })
	if _, got := f.storedForecast(t); got != rev {
		t.Fatalf("%s: the forecast was stored again (revision %d, was %d)", why, got, rev)
	}
}

// TestForecastRecompute: the leader forecasts once, not again on
// unchanged ticks, and again on a change of the retire dates or the
// settings, but not before an hour since the last forecast has passed;
// the gauge gives the runway's end of the stored forecast.
func TestForecastRecompute(t *testing.T) {
	f := newFixture(t)
	clk := &clock{t: testNow}
	reg := prometheus.NewRegistry()
	d := f.daemon("d", func(c *Config) { c.Now, c.Registry = clk.now, reg })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = d.Run(ctx) }()

	waitFor(t, "the first forecast", func() bool { _, rev := f.storedForecast(t); return rev > 0 })
	first, rev := f.storedForecast(t)
	if !first.At.Equal(testNow) || len(first.Events) == 0 || len(first.Events) > liveview.ForecastEvents {
		t.Fatalf("first forecast %+v", first)
	}
	quietTicks(t, f, d, 5, rev, "unchanged ticks")

	// Every machine retires on 2027-03-15: RETIRING 30 days before, so
	// from February 2027's first day on, by month, no worker is
	// HEALTHY: the runway ends on 2027-02-01.
	for _, m := range f.site.Machines {
		f.site.REST(t, "PUT", "/api/v1/retire-date/"+m.Spec.Serial, "2027-03-15T00:00:00Z")
	}
	quietTicks(t, f, d, 5, rev, "a retire-date change within the hour")
	clk.add(61 * time.Minute)
	waitFor(t, "the forecast of the new retire dates", func() bool { _, r := f.storedForecast(t); return r != rev })
	second, rev := f.storedForecast(t)
	if second.RunwayUntil != "2027-01-31" || second.Input == first.Input {
		t.Fatalf("after the retire dates changed: %+v", second)
	}
	end := time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)
	if got := gaugeOf(t, d); got != float64(end.Unix()) {
		t.Errorf("ckegen_runway_end_timestamp_seconds = %v, want %v (2027-02-01)", got, end.Unix())
	}
	quietTicks(t, f, d, 5, rev, "unchanged ticks after a forecast")

	// A settings change, an hour later.
	c, err := f.st.GetConstraints(ctx)
	must(t, err)
	c.MinimumWorkers = 6
	must(t, f.st.SetConstraints(ctx, c))
	quietTicks(t, f, d, 5, rev, "a settings change within the hour")
	clk.add(61 * time.Minute)
	waitFor(t, "the forecast of the new settings", func() bool { _, r := f.storedForecast(t); return r != rev })
	third, _ := f.storedForecast(t)
	if third.Input == second.Input || third.RunwayUntil != "2027-01-31" {
		t.Fatalf("after the settings changed: %+v", third)
	}

	// Not leading any more: the gauge is the next leader's.
	cancel()
	waitFor(t, "the gauge to go with the leadership", func() bool { return gaugeOf(t, d) == -1 })
}

// gaugeOf is d's ckegen_runway_end_timestamp_seconds (-1: none).
func gaugeOf(t *testing.T, d *Daemon) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 4)
	d.forecast.Collect(ch)
	close(ch)
	v := -1.0
	for c := range ch {
		if !strings.Contains(c.Desc().String(), `"ckegen_runway_end_timestamp_seconds"`) {
			continue
		}
		var m dto.Metric
		must(t, c.Write(&m))
		v = m.GetGauge().GetValue()
	}
	return v
}

// TestRunwayMetricDocumented: the daemon's own series are named in its
// document, as the step's are (tick.TestMetricsDocumented).
func TestRunwayMetricDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/daemon.md")
	must(t, err)
	ch := make(chan *prometheus.Desc, 10)
	newLeaderMetrics().Describe(ch)
	liveview.NewForecaster(liveview.ForecasterOptions{}).Describe(ch)
	close(ch)
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	n := 0
	for d := range ch {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.Contains(string(doc), "`"+m[1]+"`") {
			t.Errorf("docs/daemon.md does not name the series %s: add it under HTTP", m[1])
		}
	}
	if n != 6 {
		t.Errorf("%d series described, want 6", n)
	}
}
