package liveview

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/forecast"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// ForecastEvery is how often, at most, the leader recomputes the
// forecast (docs/forecast.md): a change of the settings or of the
// machines' retire dates within it waits for its end.
const ForecastEvery = time.Hour

// ForecastEvents is how many events the stored summary keeps.
const ForecastEvents = 3

// ForecastPurchases is how many purchases the stored summary keeps, the
// first by needed date (the leader's forecast by month buys far fewer):
// it bounds the summary's size, which etcd's request limit bounds.
const ForecastPurchases = 200

// ForecastFunc makes a forecast of a world: forecast.Of.
type ForecastFunc func(world.World, forecast.Options) (*forecast.Forecast, error)

// ForecasterOptions are what a host gives its Forecaster.
type ForecasterOptions struct {
	// Storage is where the summary is stored, guarded on the leader's
	// key.
	Storage storage.Storage
	// Now is the clock (time.Now when nil); Log the logger
	// (slog.Default() when nil).
	Now func() time.Time
	Log *slog.Logger
	// Forecast makes the forecast: forecast.Of when nil.
	Forecast ForecastFunc
}

// Forecaster is the leader's forecast, which both hosts run the same
// way (ckegen's daemon, and CKE's server with ckegen inside): the tick
// offers it the decision it made (Offer, which only keeps a pointer),
// and a goroutine of the host's, outside the tick (Run), makes the
// forecast, buying what keeps the constraints and assuming the stored
// orders, when the input's key changed (the settings' revisions, the
// machines' serials, retire dates and states, and the orders), at most
// once per ForecastEvery, stores its summary and exports the runway's end
// and the next order-by date. A forecast that fails or panics is logged
// and stored as the summary's failure; it never leaves Run.
type Forecaster struct {
	st       storage.Storage
	now      func() time.Time
	every    time.Duration
	log      *slog.Logger
	forecast ForecastFunc
	end      *prometheus.Desc
	failing  *prometheus.Desc
	orderBy  *prometheus.Desc
	wake     chan struct{}

	mu        sync.Mutex
	offered   *decision.Decision
	leaderKey string
	// stored is the summary made or found stored (nil: none yet in this
	// term of leadership).
	stored *storage.ForecastSummary
	// tried is the key of the last input this term forecast, triedAt
	// when: a forecast that failed, or whose summary could not be
	// stored, is not tried again for the same input, nor sooner than
	// every.
	tried   string
	triedAt time.Time
}

// NewForecaster returns a host's forecaster; register it as a
// prometheus.Collector.
func NewForecaster(o ForecasterOptions) *Forecaster {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Forecast == nil {
		o.Forecast = forecast.Of
	}
	return &Forecaster{st: o.Storage, now: o.Now, every: ForecastEvery, log: o.Log, forecast: o.Forecast, wake: make(chan struct{}, 1),
		end: prometheus.NewDesc("ckegen_runway_end_timestamp_seconds",
			"The first day the cluster no longer meets its constraints as the machines retire, if nothing is bought (the forecast's end when nothing fails before it), as the leader's last forecast says.", nil, nil),
		failing: prometheus.NewDesc("ckegen_forecast_failing",
			"1 when the leader's last forecast failed (its runway's end is the one before), 0 when it was made.", nil, nil),
		orderBy: prometheus.NewDesc("ckegen_capacity_order_by_timestamp_seconds",
			"The first day by which the machines the leader's last forecast buys must be ordered (UTC midnight); absent when it buys nothing.", nil, nil)}
}

// Offer hands the forecaster a tick's decision, made while leaderKey
// exists; it never blocks. Only a decision on sabakan's answer that
// found a cluster stored and wrote no step is one to forecast from: the
// forecast starts from the cluster the leader settled on, not one it is
// still changing (nor, before any cluster, from the cluster's
// generation), so that its memo keeps what the settled cluster gives.
func (f *Forecaster) Offer(leaderKey string, d *decision.Decision) {
	if d == nil || d.Step != nil || d.Gathered == nil || d.Gathered.Settings == nil || !d.Gathered.Asked || !d.Gathered.HasCluster ||
		d.Gathered.Machines == nil || d.Gathered.Failure != nil {
		return
	}
	f.mu.Lock()
	f.offered, f.leaderKey = d, leaderKey
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Run makes forecasts while the term lasts (until ctx ends); the gauge
// goes with it. It returns nothing: a forecast's failure or panic is
// the forecast's, never the host's.
func (f *Forecaster) Run(ctx context.Context) {
	defer f.forget()
	var later <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		case <-later:
		}
		later = nil
		if wait := f.once(ctx); wait > 0 {
			later = time.After(wait)
		}
	}
}

// once forecasts the last offered input when its key is new and the
// last forecast is old enough; it returns how long to wait when it is
// not.
func (f *Forecaster) once(ctx context.Context) time.Duration {
	f.mu.Lock()
	d, leaderKey := f.offered, f.leaderKey
	f.mu.Unlock()
	if d == nil {
		return 0
	}
	orders, raw, ordersErr := f.orders(ctx)
	if ordersErr != nil && raw == nil {
		f.log.Warn("reading the orders failed", "error", ordersErr)
		return 0
	}
	key := inputKey(d.Gathered, raw)
	last := f.summary(ctx)
	if last != nil && (last.Input == key || last.Failed != nil && last.Failed.Input == key) || key == f.tried {
		return 0
	}
	since := f.triedAt
	if last != nil && last.At.After(since) {
		since = last.At
	}
	if last != nil && last.Failed != nil && last.Failed.At.After(since) {
		since = last.Failed.At
	}
	if wait := since.Add(f.every).Sub(f.now()); !since.IsZero() && wait > 0 {
		return wait
	}
	f.tried, f.triedAt = key, f.now()
	sum, err := f.make(d, key, orders, ordersErr)
	if err != nil {
		f.log.Warn("forecast failed", "error", err, "input", key)
		// The last runway stays, with the failure after it.
		sum = storage.ForecastSummary{Events: []storage.ForecastEvent{}}
		if last != nil {
			sum = *last
		}
		sum.Failed = &storage.ForecastFailure{At: f.now().UTC(), Input: key, Message: err.Error()}
	}
	if err := f.st.PutForecast(ctx, leaderKey, sum); err != nil {
		f.log.Warn("storing the forecast failed", "error", err)
		return 0
	}
	f.mu.Lock()
	f.stored = &sum
	f.mu.Unlock()
	if sum.Failed == nil {
		f.log.Info("forecast made", "runway", sum.RunwayMessage, "input", key)
	}
	return 0
}

// summary is the last summary this term knows, read from etcd at the
// term's first need (a new leader does not redo its predecessor's
// forecast of the same input).
func (f *Forecaster) summary(ctx context.Context) *storage.ForecastSummary {
	f.mu.Lock()
	s := f.stored
	f.mu.Unlock()
	if s != nil {
		return s
	}
	got, err := f.st.GetForecast(ctx)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			f.log.Warn("reading the stored forecast failed", "error", err)
		}
		return nil
	}
	f.mu.Lock()
	f.stored = &got
	f.mu.Unlock()
	return &got
}

// orders are the stored orders and what of them enters the input's key:
// their specs, one a line, or the document itself when it is not one
// (err says why; raw nil: it could not be read at all).
func (f *Forecaster) orders(ctx context.Context) (storage.Orders, []byte, error) {
	o, v, err := f.st.GetOrders(ctx)
	if err != nil {
		return o, v.Data, err
	}
	raw := []byte{}
	for _, od := range o.Orders {
		raw = append(append(raw, od.Spec...), '\n')
	}
	return o, raw, nil
}

// OrdersNew are the stored orders as the machines the forecast assumes
// new, and their specs; an order that does not parse is an error that
// names it and the command that removes it.
func OrdersNew(orders storage.Orders) ([]assume.New, []string, error) {
	news := make([]assume.New, len(orders.Orders))
	specs := make([]string, len(orders.Orders))
	for i, o := range orders.Orders {
		var err error
		if news[i], err = assume.ParseNew(o.Spec); err != nil {
			return nil, nil, fmt.Errorf("order %d: %w: remove it (ckegenctl sabakan order remove %d), then add it again corrected", o.ID, err, o.ID)
		}
		specs[i] = o.Spec
	}
	return news, specs, nil
}

// make is the forecast of d's world with the command's defaults (3
// years by month, RETIRING 30 days before the retire date, the need of
// the count model), buying what keeps the constraints with the default
// lead time and assuming the stored orders (ordersErr: why they could
// not be read), as `ckegenctl sabakan forecast --buy` makes it online; a
// bad order, or a panic of the forecast, is its error.
func (f *Forecaster) make(d *decision.Decision, key string, orders storage.Orders, ordersErr error) (sum storage.ForecastSummary, err error) {
	defer func() {
		if p := recover(); p != nil {
			f.log.Error("the forecast panicked", "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("the forecast panicked: %v", p)
		}
	}()
	if ordersErr != nil {
		return storage.ForecastSummary{}, ordersErr
	}
	news, specs, err := OrdersNew(orders)
	if err != nil {
		return storage.ForecastSummary{}, err
	}
	w, err := d.WhatIf()
	if err != nil {
		return storage.ForecastSummary{}, err
	}
	fc, err := f.forecast(*w, forecast.Options{Until: w.In.Now.AddDate(forecast.DefaultYears, 0, 0),
		Resolution: forecast.Month, RetireLead: forecast.DefaultRetireLead, New: news, Lifetime: forecast.DefaultLifetime,
		Buy: &forecast.Buy{LeadTime: forecast.DefaultLeadTime}})
	if err != nil {
		return storage.ForecastSummary{}, err
	}
	return summaryOf(fc, f.now().UTC(), key, specs)
}

// summaryOf is what the leader keeps of fc, made assuming the orders
// specs: its runway if nothing is bought (fc.Unbought when it bought,
// else fc.Runway), its first events, every event's figures, its
// purchases (the first ForecastPurchases) and the first order-by date.
func summaryOf(fc *forecast.Forecast, at time.Time, key string, specs []string) (storage.ForecastSummary, error) {
	r := fc.Runway
	if fc.Unbought != nil {
		r = *fc.Unbought
	}
	end, err := runwayEnd(r, fc.Until)
	if err != nil {
		return storage.ForecastSummary{}, err
	}
	s := storage.ForecastSummary{At: at, Until: fc.Until.UTC(), Input: key, RunwayUntil: r.Until,
		RunwayReason: r.Reason, RunwayMessage: r.Message, End: end, Events: []storage.ForecastEvent{},
		NeedWorkers: fc.NeedWorkers, Points: make([]storage.ForecastPoint, len(fc.Events))}
	if fc.Unbought != nil {
		s.UnboughtEnd = end
	}
	if len(specs) > 0 {
		s.Orders = specs
	}
	for k := range fc.Events {
		ev := &fc.Events[k]
		if k < ForecastEvents {
			s.Events = append(s.Events, storage.ForecastEvent{Date: ev.Date, Retiring: ev.Retiring, Retired: ev.Retired,
				Workers: ev.Workers, Plan: ev.PlanText(), Fails: ev.Fails()})
		}
		s.Points[k] = storage.ForecastPoint{Date: ev.Date, Workers: ev.Workers, ControlPlanes: len(ev.ControlPlanes),
			Retired: ev.Retired, Arriving: ev.Arriving, Bought: ev.Bought, Fails: ev.Fails()}
	}
	s.OrderBy = fc.FirstOrderBy()
	s.PurchasesLeft = max(0, len(fc.Purchases)-ForecastPurchases)
	for _, p := range fc.Purchases[:min(ForecastPurchases, len(fc.Purchases))] {
		s.Purchases = append(s.Purchases, storage.ForecastPurchase{Role: p.Role, Product: p.Product, Count: p.Count,
			Racks: p.Racks, Needed: p.Needed, OrderBy: p.OrderBy, Overdue: p.Overdue, Reason: p.Reason})
	}
	return s, nil
}

// runwayEnd is the first day the cluster no longer meets its
// constraints by r (the day after its last), or the forecast's end,
// until, when nothing fails before it.
func runwayEnd(r forecast.Runway, until time.Time) (time.Time, error) {
	if r.Until == "" {
		return until.UTC(), nil
	}
	last, err := time.Parse(time.DateOnly, r.Until)
	if err != nil {
		return time.Time{}, fmt.Errorf("the runway's last day: %w", err)
	}
	return last.AddDate(0, 0, 1), nil
}

// inputKey identifies what a forecast is made from: the settings'
// revisions, the machines' serials, retire dates and states, in the
// serials' order, and the orders (their specs, one a line: f.orders).
// The orders' part is there even when none is stored, so that no key
// is one a release without orders made, whose summary has no purchases.
func inputKey(g *decision.Gathered, orders []byte) string {
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
	h.Write([]byte("\x00orders\n"))
	h.Write(orders)
	return g.SettingsID + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// forget ends a term: the next leader exports the gauge.
func (f *Forecaster) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stored, f.offered, f.leaderKey, f.tried, f.triedAt = nil, nil, "", "", time.Time{}
}

// Describe implements prometheus.Collector.
func (f *Forecaster) Describe(ch chan<- *prometheus.Desc) {
	ch <- f.end
	ch <- f.failing
	ch <- f.orderBy
}

// Collect implements prometheus.Collector: while this host leads and
// knows a forecast, the runway's end (when one was ever made), the
// first order-by date (when it buys something) and whether the last
// forecast failed.
func (f *Forecaster) Collect(ch chan<- prometheus.Metric) {
	f.mu.Lock()
	s := f.stored
	f.mu.Unlock()
	if s == nil {
		return
	}
	if !s.End.IsZero() {
		ch <- prometheus.MustNewConstMetric(f.end, prometheus.GaugeValue, float64(s.End.Unix()))
	}
	if s.OrderBy != "" {
		if by, err := time.Parse(time.DateOnly, s.OrderBy); err != nil {
			f.log.Warn("the stored forecast's order-by date is not one", "orderBy", s.OrderBy, "error", err)
		} else {
			ch <- prometheus.MustNewConstMetric(f.orderBy, prometheus.GaugeValue, float64(by.Unix()))
		}
	}
	failing := 0.0
	if s.Failed != nil {
		failing = 1
	}
	ch <- prometheus.MustNewConstMetric(f.failing, prometheus.GaugeValue, failing)
}
