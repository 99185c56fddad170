// Package integrator is ckegen's step as the sabakan integration of CKE
// v1.35.4's own server: a server.Integrator whose Init, StartWatch and Do
// CKE's controller calls while it leads. CKE's server owns the election,
// the pace (it calls Do only when it has nothing else to do) and the
// switch (CKE's sabakan/disabled); ckegen's step decides and writes the
// cluster, and CKE's own repair functions keep its sabakan-triggered
// auto-repair. The leader's forecast (liveview.Forecaster, as ckegen's
// daemon makes it) runs beside the ticks, in a goroutine of StartWatch's.
//
// ckegen's failures (sabakan down, an invalid setting, a metrics provider
// down) are ckegen's status, never an error of Do: an error from Do ends
// CKE's whole server. Only the end of leadership is returned.
package integrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cybozu-go/cke"
	"github.com/cybozu-go/cke/metrics"
	"github.com/cybozu-go/cke/server"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// Config of the integrator: the step's configuration (its mode is
// decision.ModeInsideCKE; its Interval is CKE's server's --interval, the
// pace it calls Do at when it has nothing else to do: the status says
// when CKE's server has not called for three of them; after a failure
// the step runs again after MinBackoff, doubling up to Interval, and
// StartWatch wakes CKE's loop then, sooner than its interval), and the
// integrator's own.
type Config struct {
	decision.Config
	// Client is CKE's etcd client, namespaced by CKE's prefix
	// (etcdutil.NewClient), as CKE's server has it.
	Client *clientv3.Client
	// Registerer receives ckegen's own series (ckegen_*); CKE's /metrics
	// handler gathers prometheus.DefaultGatherer. CKE's cke_sabakan_*
	// series are CKE's: the integrator feeds them.
	Registerer prometheus.Registerer
	// Forecast makes the leader's forecast (forecast.Of when nil, the
	// forecast of ckegenctl sabakan forecast and of ckegen's daemon).
	Forecast liveview.ForecastFunc
}

// Integrator is ckegen's step as CKE's server.Integrator.
type Integrator struct {
	cfg     Config
	st      storage.Storage
	cke     cke.Storage
	step    *tick.Step
	metrics *liveview.Metrics
	// leading is ckegen_leader: 1 while CKE's server leads and runs
	// ckegen (StartWatch runs for as long as it leads).
	leading prometheus.Gauge
	// forecast is the leader's forecast, made in a goroutine of
	// StartWatch's, beside the ticks.
	forecast *liveview.Forecaster

	mu sync.Mutex
	// due is when the next tick is due sooner than CKE's interval, by
	// what the last one said (tick.Result.Next: the end of a quiet time,
	// a retry after a failure; zero: nothing due).
	due time.Time
	// rearm tells StartWatch that due changed.
	rearm chan struct{}
}

var _ server.Integrator = (*Integrator)(nil)

// New returns the integrator; zero fields of cfg take their defaults.
func New(cfg Config) (*Integrator, error) {
	if cfg.Client == nil {
		return nil, errors.New("integrator: no etcd client")
	}
	cfg.Mode = decision.ModeInsideCKE
	cfg.Config = cfg.WithDefaults()
	// CKE's client is namespaced by its prefix: the keys need none.
	st := storage.Storage{Client: cfg.Client}
	ig := &Integrator{cfg: cfg, st: st, cke: cke.Storage{Client: cfg.Client},
		metrics:  liveview.NewMetrics(liveview.MetricsOptions{CKENames: false}),
		step:     tick.New(st, cfg.Config),
		forecast: liveview.NewForecaster(liveview.ForecasterOptions{Storage: st, Now: cfg.Now, Log: cfg.Log, Forecast: cfg.Forecast}),
		rearm:    make(chan struct{}, 1),
		leading: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ckegen_leader",
			Help: "True (=1) while this process leads and runs ckegen: inside CKE's server, while that server leads."})}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{ig.metrics, ig.leading, ig.forecast} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return ig, nil
}

// Announce records, under the lease of CKE's server's session (the one
// it campaigns with, which names its election key under leader/), that
// this server runs ckegen: its name as CKE's election has it (the host
// name), ckegen's version and commit, and the CKE release it is built
// on. The record goes when the session does: whoever reads CKE's
// election then knows whether its leader runs ckegen (liveview.ReadActor).
func (ig *Integrator) Announce(ctx context.Context, lease clientv3.LeaseID) error {
	v := version.Current()
	p := storage.Presence{Name: ig.cfg.Name, Kind: storage.PresenceInsideCKE, Version: v.Version, Commit: v.Commit,
		CKEVersion: v.CKEVersion, Since: ig.cfg.Now().UTC()}
	if err := ig.st.PutPresence(ctx, lease, p); err != nil {
		return fmt.Errorf("recording that this server runs ckegen: %w", err)
	}
	return nil
}

// StartWatch wakes CKE's loop when a ckegen setting changes, and when
// the quiet time or a retry after a failure falls due, and makes the
// leader's forecast beside the ticks (a failure or panic of the forecast
// is its summary's and its log's, never CKE's loop's). It runs until ctx
// ends.
func (ig *Integrator) StartWatch(ctx context.Context, ch chan<- struct{}) error {
	// CKE's server runs StartWatch for as long as it leads: the series
	// only a leader exports are exported meanwhile, and the forecast is
	// made meanwhile.
	ig.leading.Set(1)
	fctx, stop := context.WithCancel(ctx)
	forecasting := make(chan struct{})
	go func() {
		defer close(forecasting)
		ig.forecast.Run(fctx)
	}()
	defer func() {
		stop()
		<-forecasting
		ig.leading.Set(0)
		ig.metrics.Clear()
	}()
	errc := make(chan error, 1)
	go func() { errc <- intake.Watch(ctx, ig.st, ch) }()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		ig.mu.Lock()
		due := ig.due
		ig.mu.Unlock()
		timer.Stop()
		if !due.IsZero() {
			timer.Reset(max(due.Sub(ig.cfg.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return <-errc
		case err := <-errc:
			return err
		case <-ig.rearm:
		case <-timer.C:
			ig.mu.Lock()
			if ig.due.Equal(due) {
				ig.due = time.Time{}
			}
			ig.mu.Unlock()
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// Init does what CKE's own integrator does for a new leader: the cluster
// re-rendered when the template changed since it was built.
func (ig *Integrator) Init(ctx context.Context, leaderKey string) error {
	r := ig.step.Regenerate(ctx, leaderKey, kubenodes.View{Source: SourceStatus, Why: "CKE's server gives no cluster status to Init"})
	ig.after(leaderKey, r)
	return fatal(r)
}

// Do runs one tick of ckegen's step, with what status says of
// Kubernetes and CKE's sabakan-triggered auto-repair after its write. status is nil
// when no cluster exists yet (and under --debug-sabakan).
func (ig *Integrator) Do(ctx context.Context, leaderKey string, status *cke.ClusterStatus) error {
	var repair tick.Repair
	if status != nil {
		repair = func(ctx context.Context, failed string) (*storage.RepairStatus, bool) {
			return ig.repair(ctx, status, failed)
		}
	}
	r := ig.step.Run(ctx, leaderKey, kubernetesOf(status, ig.cfg.Now()), repair)
	ig.after(leaderKey, r)
	if err := fatal(r); err != nil {
		return err
	}
	return nil
}

// fatal is what of a tick's failure CKE's server must see: the end of
// leadership. Everything else is ckegen's status.
func fatal(r tick.Result) error {
	if reason.Of(r.Err) == reason.LostLeadership {
		return r.Err
	}
	return nil
}

// after offers a tick's decision to the forecast, feeds the metrics with
// its result, CKE's sabakan series included, and sets when the next tick
// is due, when the step says it is due before CKE's interval.
func (ig *Integrator) after(leaderKey string, r tick.Result) {
	ig.forecast.Offer(leaderKey, r.Decision)
	if r.Status.Time.IsZero() {
		// Cut short (nothing to show), or left to ckegen's daemons
		// (intake.Ownership.LeftToDaemons): the series of a running integration
		// are theirs then.
		if r.Yielded {
			ig.metrics.Clear()
		}
		return
	}
	now := ig.cfg.Now().UTC()
	seen := liveview.Tick{Decision: r.Decision, Status: r.Status, Failed: r.Err != nil, Warnings: r.Warnings, Duration: r.Duration}
	ig.metrics.Observe(now, seen)
	if !r.Idle() {
		ok, byRole, unused := seen.Figures()
		metrics.UpdateSabakanIntegration(ok, byRole, unused, now)
	}
	ig.mu.Lock()
	ig.due = time.Time{}
	if r.Next < time.Duration(ig.cfg.Interval) {
		ig.due = now.Add(r.Next)
	}
	ig.mu.Unlock()
	select {
	case ig.rearm <- struct{}{}:
	default:
	}
}

// SourceStatus is the source of the Kubernetes view inside CKE's
// server.
const SourceStatus = "CKE's cluster status"

// kubernetesOf is what a cluster status says of the Kubernetes Nodes at
// now: not known without a status or while no API server is ready (CKE's
// status then has no Node at all, which is not "no taints").
func kubernetesOf(status *cke.ClusterStatus, now time.Time) kubenodes.View {
	switch {
	case status == nil:
		return kubenodes.View{Source: SourceStatus, Why: "CKE's server has no cluster status: no cluster yet, or --debug-sabakan"}
	case !status.Kubernetes.IsControlPlaneReady:
		return kubenodes.View{Source: SourceStatus, Why: "no API server of the cluster is ready"}
	}
	all := make(map[string][]cluster.Taint, len(status.Kubernetes.Nodes))
	for _, n := range status.Kubernetes.Nodes {
		taints := make([]cluster.Taint, len(n.Spec.Taints))
		for i, t := range n.Spec.Taints {
			taints[i] = cluster.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)}
		}
		all[n.Name] = taints
	}
	return kubenodes.ViewOf(SourceStatus, now, all)
}
