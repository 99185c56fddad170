package liveview

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/forecast"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// TestRunwayLineFailed: a failed forecast is said after the last runway
// made, which stays, or alone when none was ever made.
func TestRunwayLineFailed(t *testing.T) {
	failed := &storage.ForecastFailure{At: testNow.Add(-2 * time.Hour), Input: "k2", Message: "the forecast panicked: boom"}
	made := storage.ForecastSummary{At: testNow.Add(-3 * time.Hour), Input: "k1", RunwayMessage: "the cluster meets its constraints until 2027-01-31", Failed: failed}
	cases := []struct {
		r    Runway
		want string
	}{
		{Runway{Summary: &made, Age: 3 * time.Hour, Now: testNow},
			"the cluster meets its constraints until 2027-01-31 (forecast made 3h ago, 2025-12-31T21:00:00Z); the last forecast failed 2h ago (2025-12-31T22:00:00Z): the forecast panicked: boom"},
		{Runway{Summary: &storage.ForecastSummary{Failed: failed}, Now: testNow},
			"no forecast made yet: the last forecast failed 2h ago (2025-12-31T22:00:00Z): the forecast panicked: boom"},
	}
	for _, c := range cases {
		if got := c.r.Line(); got != c.want {
			t.Errorf("Line() = %q\nwant     %q", got, c.want)
		}
	}
}

// forecasterSite is a leader's forecaster on a small site, offered a
// decision read from it, whose forecasts fc makes (it counts them and
// keeps the options of the last).
type forecasterSite struct {
	st    storage.Storage
	clock *clock
	f     *Forecaster
	mu    sync.Mutex
	made  int
	opts  forecast.Options
}

func newForecasterSite(t *testing.T, fc func(world.World, forecast.Options) (*forecast.Forecast, error)) *forecasterSite {
	t.Helper()
	s := sitetest.Start(t, sitetest.Options{Now: testNow, DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 3, 5, 0 },
		Template: sitetest.Template, StoreURL: true, Constraints: sitetest.Counts(3, 5)})
	fs := &forecasterSite{st: s.Storage, clock: &clock{t: testNow}}
	fs.f = NewForecaster(ForecasterOptions{Storage: s.Storage, Now: fs.clock.now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Forecast: func(w world.World, o forecast.Options) (*forecast.Forecast, error) {
			fs.mu.Lock()
			fs.made, fs.opts = fs.made+1, o
			fs.mu.Unlock()
			return fc(w, o)
		}})
	d, err := NewReader(s.Storage, Options{Now: fs.clock.now}).Decide(context.Background(), Preview{})
	must(t, err)
	if d.World == nil {
		t.Fatalf("the decision read no inventory: %s %s", d.Reason, d.Message)
	}
	fs.f.offered, fs.f.leaderKey = d, s.Lead(t, "the-test", 5)
	return fs
}

// once moves the clock past ForecastEvery and lets the forecaster try.
func (fs *forecasterSite) once(t *testing.T) storage.ForecastSummary {
	t.Helper()
	fs.clock.add(ForecastEvery + time.Minute)
	fs.f.once(context.Background())
	s, err := fs.st.GetForecast(context.Background())
	must(t, err)
	return s
}

func (fs *forecasterSite) order(t *testing.T, id int, spec string) {
	t.Helper()
	ctx := context.Background()
	o, v, err := fs.st.GetOrders(ctx)
	must(t, err)
	o.Orders = append(o.Orders, storage.Order{ID: id, Spec: spec, Added: testNow})
	must(t, fs.st.PutOrders(ctx, v, o))
}

// gauges are the forecaster's series by name.
func gauges(t *testing.T, f *Forecaster) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 10)
	f.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for c := range ch {
		var m dto.Metric
		must(t, c.Write(&m))
		name := c.Desc().String()
		name = name[strings.Index(name, `fqName: "`)+9:]
		out[name[:strings.IndexByte(name, '"')]] = m.GetGauge().GetValue()
	}
	return out
}

// boughtForecast is a forecast that buys twice, the second purchase to
// be ordered first, and fails on 2026-10-01 if nothing is bought.
func boughtForecast(w world.World, o forecast.Options) (*forecast.Forecast, error) {
	cps := []forecast.ControlPlane{{Address: "10.0.0.1"}, {Address: "10.0.1.1"}, {Address: "10.0.2.1"}}
	return &forecast.Forecast{Now: w.In.Now, Until: o.Until, NeedWorkers: 5,
		Runway:   forecast.Runway{Reason: forecast.None, Message: "with the purchases, nothing fails"},
		Unbought: &forecast.Runway{Until: "2026-09-30", Reason: forecast.WorkersBelowNeed, Message: "the cluster meets its constraints until 2026-09-30"},
		Purchases: []forecast.Purchase{
			{Role: "cs", Product: "R1", Count: 4, Racks: map[string]int{"0": 2, "1": 2}, Needed: "2026-10-01", OrderBy: "2026-07-03", Reason: "workers"},
			{Role: "ss", Count: 1, Racks: map[string]int{"2": 1}, Needed: "2026-11-01", OrderBy: "2026-07-01", Overdue: true, Reason: "storage"},
		},
		Events: []forecast.Event{
			{Date: "2026-02-01", Retiring: 1, Workers: 9, ControlPlanes: cps},
			{Date: "2026-06-01", Retired: 2, Arriving: 2, Workers: 9, ControlPlanes: cps},
			{Date: "2026-10-01", Retired: 5, Arriving: 4, Bought: 4, Workers: 8, ControlPlanes: cps[:2]},
			{Date: "2026-11-01", Arriving: 1, Bought: 1, Workers: 8, ControlPlanes: cps[:2]},
		}}, nil
}

// TestForecasterBuys: the leader's forecast buys with the default lead
// time and lifetime and assumes the stored orders; the summary keeps
// the runway and its end if nothing is bought, every event's figures,
// the purchases and the first order-by date, which the gauge exports at
// UTC midnight.
func TestForecasterBuys(t *testing.T) {
	fs := newForecasterSite(t, boughtForecast)
	spec := "rack=1,role=cs,count=2,from=2026-06-01"
	fs.order(t, 3, spec)
	got := fs.once(t)

	want, _ := assume.ParseNew(spec)
	o := fs.opts
	if o.Buy == nil || o.Buy.LeadTime != forecast.DefaultLeadTime || o.Lifetime != forecast.DefaultLifetime || !reflect.DeepEqual(o.New, []assume.New{want}) {
		t.Errorf("forecast options: buy %+v, lifetime %s, new %+v; want the default lead time and lifetime and the order %s", o.Buy, o.Lifetime, o.New, spec)
	}
	end := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	wantSum := storage.ForecastSummary{At: got.At, Until: got.Until, Input: got.Input,
		RunwayUntil: "2026-09-30", RunwayReason: forecast.WorkersBelowNeed, RunwayMessage: "the cluster meets its constraints until 2026-09-30",
		End: end, UnboughtEnd: end, NeedWorkers: 5, Events: got.Events,
		Points: []storage.ForecastPoint{
			{Date: "2026-02-01", Workers: 9, ControlPlanes: 3},
			{Date: "2026-06-01", Workers: 9, ControlPlanes: 3, Retired: 2, Arriving: 2},
			{Date: "2026-10-01", Workers: 8, ControlPlanes: 2, Retired: 5, Arriving: 4, Bought: 4},
			{Date: "2026-11-01", Workers: 8, ControlPlanes: 2, Arriving: 1, Bought: 1},
		},
		Purchases: []storage.ForecastPurchase{
			{Role: "cs", Product: "R1", Count: 4, Racks: map[string]int{"0": 2, "1": 2}, Needed: "2026-10-01", OrderBy: "2026-07-03", Reason: "workers"},
			{Role: "ss", Count: 1, Racks: map[string]int{"2": 1}, Needed: "2026-11-01", OrderBy: "2026-07-01", Overdue: true, Reason: "storage"},
		},
		OrderBy: "2026-07-01", Orders: []string{spec}}
	if !reflect.DeepEqual(got, wantSum) {
		t.Errorf("stored summary\n%+v\nwant\n%+v", got, wantSum)
	}
	if len(got.Events) != ForecastEvents {
		t.Errorf("%d events kept, want %d", len(got.Events), ForecastEvents)
	}
	g := gauges(t, fs.f)
	if v, by := g["ckegen_capacity_order_by_timestamp_seconds"], time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC); v != float64(by.Unix()) {
		t.Errorf("ckegen_capacity_order_by_timestamp_seconds = %v, want %v (2026-07-01)", v, by.Unix())
	}
	if v := g["ckegen_runway_end_timestamp_seconds"]; v != float64(end.Unix()) {
		t.Errorf("ckegen_runway_end_timestamp_seconds = %v, want %v (2026-10-01, if nothing is bought)", v, end.Unix())
	}
}

// TestForecasterNothingToBuy: a forecast that buys nothing stores no
// order-by date and exports no order-by gauge; without Unbought, the
// runway is the forecast's.
func TestForecasterNothingToBuy(t *testing.T) {
	fs := newForecasterSite(t, func(w world.World, o forecast.Options) (*forecast.Forecast, error) {
		return &forecast.Forecast{Now: w.In.Now, Until: o.Until, Runway: forecast.Runway{Reason: forecast.None, Message: "nothing fails"},
			Events: []forecast.Event{{Date: "2026-02-01", Workers: 9}}}, nil
	})
	got := fs.once(t)
	if got.OrderBy != "" || got.Purchases != nil || !got.UnboughtEnd.IsZero() || got.Orders != nil || !got.End.Equal(got.Until) || got.RunwayMessage != "nothing fails" {
		t.Errorf("stored summary %+v: want no order-by, purchases, unbought end or orders, the runway's end the forecast's", got)
	}
	g := gauges(t, fs.f)
	if v, ok := g["ckegen_capacity_order_by_timestamp_seconds"]; ok {
		t.Errorf("ckegen_capacity_order_by_timestamp_seconds = %v with nothing to buy, want none", v)
	}
	if _, ok := g["ckegen_runway_end_timestamp_seconds"]; !ok {
		t.Error("no ckegen_runway_end_timestamp_seconds")
	}
}

// TestForecasterOrders: a new order makes a new forecast, which assumes
// it; unchanged orders make none; a stored order that does not parse is
// the forecast's failure, naming the order, and so is an orders
// document that is not one.
func TestForecasterOrders(t *testing.T) {
	fs := newForecasterSite(t, boughtForecast)
	first := fs.once(t)
	if fs.made != 1 || len(fs.opts.New) != 0 || first.Orders != nil {
		t.Fatalf("%d forecasts, new %+v, orders %q; want 1 assuming no order", fs.made, fs.opts.New, first.Orders)
	}
	fs.once(t)
	if fs.made != 1 {
		t.Fatalf("unchanged input forecast again (%d forecasts)", fs.made)
	}
	fs.order(t, 1, "rack=2,role=cs,count=3,from=2026-05-01")
	second := fs.once(t)
	if fs.made != 2 || len(fs.opts.New) != 1 || fs.opts.New[0].Count != 3 || second.Input == first.Input || !slices.Equal(second.Orders, []string{"rack=2,role=cs,count=3,from=2026-05-01"}) {
		t.Fatalf("after an order: %d forecasts, new %+v, input %q (was %q), orders %q", fs.made, fs.opts.New, second.Input, first.Input, second.Orders)
	}

	fs.order(t, 7, "rack=2,role=cs,count=0,from=2026-05-01")
	bad := fs.once(t)
	if fs.made != 2 || bad.Failed == nil || !strings.Contains(bad.Failed.Message, "order 7: ") || !strings.Contains(bad.Failed.Message, "count") || bad.Input != second.Input {
		t.Fatalf("a bad order: %d forecasts, summary %+v, failure %+v; want the last forecast kept and a failure naming order 7", fs.made, bad, bad.Failed)
	}

	_, err := fs.st.Client.Put(context.Background(), fs.st.Key(storage.KeyCKEGenOrders), `{"orders":`)
	must(t, err)
	broken := fs.once(t)
	if fs.made != 2 || broken.Failed == nil || !strings.Contains(broken.Failed.Message, storage.KeyCKEGenOrders) || broken.Failed.Input == bad.Failed.Input {
		t.Fatalf("an orders document that is not one: %d forecasts, failure %+v", fs.made, broken.Failed)
	}
}

// legacyKey is inputKey as the release before orders made it.
func legacyKey(g *decision.Gathered) string {
	rows := make([]string, len(g.Machines))
	for i, m := range g.Machines {
		rows[i] = m.Spec.Serial + "\x00" + m.Spec.RetireDate.UTC().Format(time.RFC3339) + "\x00" + string(m.Status.State)
	}
	slices.Sort(rows)
	h := sha256.New()
	for _, r := range rows {
		h.Write([]byte(r))
		h.Write([]byte{'\n'})
	}
	return g.SettingsID + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// TestInputKeyOrders: the orders enter the key, and no key without
// orders is the one a release before them made (whose summary has no
// purchases), so that the new release forecasts again.
func TestInputKeyOrders(t *testing.T) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 2, 5
	ms := dcgen.Machines(o)
	g := &decision.Gathered{SettingsID: "s", Machines: make([]*machine.Machine, len(ms))}
	for i := range ms {
		g.Machines[i] = &ms[i]
	}
	none := inputKey(g, []byte{})
	if inputKey(g, nil) != none {
		t.Error("no orders read as nil and as empty give two keys")
	}
	if one := inputKey(g, []byte("rack=1,role=cs,count=1,from=2027-01-01\n")); one == none {
		t.Error("an order does not change the key")
	}
	if none == legacyKey(g) {
		t.Error("the key without orders is the previous release's: its stored summary, without purchases, would be kept")
	}
}

// dailyWorstCase is a forecast of 20,000 machines over 3 years by day
// (1,100 events) that buys at every event, for 2 roles, over 100 racks
// each, more than the summary keeps: the largest summary the leader
// could store.
func dailyWorstCase() *forecast.Forecast {
	fc := &forecast.Forecast{Now: testNow, Until: testNow.AddDate(3, 0, 0), NeedWorkers: 19000,
		Runway:   forecast.Runway{Reason: forecast.None, Message: "the cluster meets its constraints until 2029-01-01, the end of the forecast: nothing fails before"},
		Unbought: &forecast.Runway{Until: "2026-03-31", Reason: forecast.WorkersBelowNeed, Message: strings.Repeat("w", 300)}}
	cps := make([]forecast.ControlPlane, 5)
	for k := range 1100 {
		date := testNow.AddDate(0, 0, k).Format(time.DateOnly)
		fc.Events = append(fc.Events, forecast.Event{Date: date, Retiring: 20, Retired: 20, Arriving: 40, Bought: 40, Workers: 19999, ControlPlanes: cps})
		for _, role := range []string{"cs", "ss"} {
			racks := map[string]int{}
			for r := range 100 {
				racks[strconv.Itoa(r)] = 10
			}
			fc.Purchases = append(fc.Purchases, forecast.Purchase{Role: role, Product: "R6525-rev2", Count: 1000, Racks: racks, Needed: date,
				OrderBy: testNow.AddDate(0, 0, k-90).Format(time.DateOnly), Reason: strings.Repeat("r", 200)})
		}
	}
	return fc
}

// TestForecastSummarySize: the daily forecast of 3 years of 20,000
// machines, buying at every event, makes a summary well under etcd's
// request limit (1.5 MiB by default).
func TestForecastSummarySize(t *testing.T) {
	fc := dailyWorstCase()
	orders := make([]string, 50)
	for i := range orders {
		orders[i] = fmt.Sprintf("rack=%d,role=cs,count=100,from=2027-01-01,product=R6525-rev2,retire=2032-01-01", i)
	}
	s, err := summaryOf(fc, testNow, strings.Repeat("k", 80), orders)
	must(t, err)
	data, err := json.Marshal(s)
	must(t, err)
	t.Logf("summary of %d events and %d purchases: %d bytes", len(fc.Events), len(fc.Purchases), len(data))
	if const512KiB := 512 << 10; len(data) > const512KiB {
		t.Errorf("the summary is %d bytes, over %d", len(data), const512KiB)
	}
	if len(s.Points) != 1100 || len(s.Purchases) != ForecastPurchases || s.PurchasesLeft != 2200-ForecastPurchases || s.OrderBy != "2025-10-03" {
		t.Errorf("%d points, %d purchases and %d left, order by %s; want every event, %d purchases, the rest counted, the first order-by date",
			len(s.Points), len(s.Purchases), s.PurchasesLeft, s.OrderBy, ForecastPurchases)
	}
}

// oldSummary is ForecastSummary as the release before purchases had it.
type oldSummary struct {
	At            time.Time `json:"at"`
	Until         time.Time `json:"until"`
	Input         string    `json:"input"`
	RunwayUntil   string    `json:"runwayUntil,omitempty"`
	RunwayReason  string    `json:"runwayReason"`
	RunwayMessage string    `json:"runwayMessage"`
	End           time.Time `json:"end"`
	Events        []struct {
		Date     string `json:"date"`
		Retiring int    `json:"retiring"`
		Retired  int    `json:"retired"`
		Workers  int    `json:"workers"`
		Plan     string `json:"plan"`
		Fails    bool   `json:"fails,omitempty"`
	} `json:"events"`
	Failed *storage.ForecastFailure `json:"failed,omitempty"`
}

// TestForecastSummaryOldReader: the release before purchases reads a
// summary that bought (encoding/json into its struct) and finds the
// runway if nothing is bought, its end and the events.
func TestForecastSummaryOldReader(t *testing.T) {
	w := world.World{}
	w.In.Now = testNow
	fc, _ := boughtForecast(w, forecast.Options{Until: testNow.AddDate(3, 0, 0)})
	s, err := summaryOf(fc, testNow, "k", []string{"rack=1,role=cs,count=2,from=2026-06-01"})
	must(t, err)
	data, err := json.Marshal(s)
	must(t, err)
	var old oldSummary
	must(t, json.NewDecoder(bytes.NewReader(data)).Decode(&old))
	end := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	if old.RunwayUntil != "2026-09-30" || old.RunwayReason != forecast.WorkersBelowNeed || old.RunwayMessage != fc.Unbought.Message ||
		!old.End.Equal(end) || old.Input != "k" || !old.At.Equal(testNow) || len(old.Events) != ForecastEvents || old.Events[2].Date != "2026-10-01" {
		t.Errorf("the old release reads %+v; want the runway if nothing is bought, ending on 2026-10-01", old)
	}
}

// BenchmarkInputKey is what the forecaster does, outside the tick, at
// each tick's offer: the key of 20,000 machines.
func BenchmarkInputKey(b *testing.B) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 100, 200
	ms := dcgen.Machines(o)
	g := &decision.Gathered{SettingsID: "s", Machines: make([]*machine.Machine, len(ms))}
	for i := range ms {
		g.Machines[i] = &ms[i]
	}
	b.ResetTimer()
	for range b.N {
		_ = inputKey(g, nil)
	}
}
