// Package daemon is ckegen's own host of the integration step (package
// tick): a leader-elected process that campaigns, watches the settings,
// and ticks at once, every interval, on a settings change and after a
// failure with a backoff, while it leads.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/liveview"

	"github.com/prometheus/client_golang/prometheus"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// Config of the daemon: the step's configuration (decision.Config) and
// the daemon's own.
type Config struct {
	decision.Config
	Storage storage.Storage
	// SessionTTL is the leader session's TTL.
	SessionTTL time.Duration
	// Kubernetes is the view of the Kubernetes Nodes, read once per tick
	// (docs/design.md 6.4; kubenodes.APIView with --kubeconfig); nil: no
	// Kubernetes access, the generator sees no taints.
	Kubernetes kubenodes.Kubernetes
	// Registry receives the daemon's metrics and is what /metrics serves;
	// nil: a new one.
	Registry *prometheus.Registry
}

// DefaultSessionTTL is the leader session's TTL by default.
const DefaultSessionTTL = 60 * time.Second

// Daemon runs the loop.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	step    *tick.Step
	metrics *liveview.Metrics
	leader  *leaderMetrics
	// forecast is the leader's forecast, made beside the ticks.
	forecast *liveview.Forecaster

	mu      sync.Mutex
	status  storage.Status
	leading bool
}

// New returns a daemon; zero fields of cfg take their defaults.
func New(cfg Config) *Daemon {
	cfg.Config = cfg.WithDefaults()
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	d := &Daemon{cfg: cfg, log: cfg.Log, leader: newLeaderMetrics(),
		metrics: liveview.NewMetrics(liveview.MetricsOptions{CKENames: true}),
		step:    tick.New(cfg.Storage, cfg.Config)}
	d.forecast = liveview.NewForecaster(liveview.ForecasterOptions{Storage: cfg.Storage, Now: cfg.Now, Log: cfg.Log})
	cfg.Registry.MustRegister(d.leader, d.metrics, d.forecast)
	return d
}

// errSessionLost ends a term of leadership.
var errSessionLost = errors.New("etcd session lost")

// Run campaigns for leadership and, while leader, ticks. Losing the
// session stops ticking at once and campaigns again. It returns when ctx is
// done, after resigning.
func (d *Daemon) Run(ctx context.Context) error {
	go d.watchMode(ctx)
	for {
		err := d.term(ctx)
		if ctx.Err() != nil {
			return nil
		}
		d.log.Warn("not leading any more; campaigning again", "error", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}

// term is one session: campaign, lead until the session or ctx ends,
// resign.
func (d *Daemon) term(ctx context.Context) error {
	cli := d.cfg.Storage.Client
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(d.cfg.SessionTTL.Seconds())), concurrency.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("etcd session: %w", err)
	}
	defer sess.Close()
	if err := d.announce(ctx, sess); err != nil {
		return err
	}
	elec := concurrency.NewElection(sess, d.cfg.Storage.Key(storage.KeyCKEGenLeader))
	d.log.Info("campaigning for leadership", "name", d.cfg.Name)
	if err := campaign(ctx, sess, elec, d.cfg.Name); err != nil {
		return err
	}
	d.log.Info("elected leader", "name", d.cfg.Name, "key", elec.Key())
	d.setLeading(true)
	err = d.lead(ctx, sess, elec.Key())
	// Not leading from here on, even while the resignation waits for an
	// etcd that may not answer.
	d.setLeading(false)
	rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if rerr := elec.Resign(rctx); rerr != nil {
		d.log.Warn("resign failed", "error", rerr)
	}
	return err
}

// campaign waits until elec is won, ctx is done or the session ends,
// whichever comes first. Without the session's end, a campaign whose
// lease expired while it waited (etcd unreachable for longer than the
// TTL) would wait for ever behind a key that no longer exists, or win with
// it.
func campaign(ctx context.Context, sess *concurrency.Session, elec *concurrency.Election, name string) error {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-sess.Done():
			cancel()
		case <-cctx.Done():
		}
	}()
	err := elec.Campaign(cctx, name)
	select {
	case <-sess.Done():
		return fmt.Errorf("campaign: %w", errSessionLost)
	default:
	}
	if err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	return nil
}

func (d *Daemon) setLeading(leading bool) {
	d.mu.Lock()
	d.leading = leading
	d.mu.Unlock()
	d.leader.setLeading(leading)
	if !leading {
		d.metrics.Clear()
	}
}

// Leading reports whether this daemon leads.
func (d *Daemon) Leading() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leading
}

// lead runs, in one group, the session watch, the settings watch, the
// ticker and the forecast; the first to fail ends the term.
func (d *Daemon) lead(ctx context.Context, sess *concurrency.Session, leaderKey string) error {
	g, ctx := errgroup.WithContext(ctx)
	trigger := make(chan struct{}, 1)
	g.Go(func() error {
		select {
		case <-sess.Done():
			return errSessionLost
		case <-ctx.Done():
			return nil
		}
	})
	g.Go(func() error { return intake.Watch(ctx, d.cfg.Storage, trigger) })
	g.Go(func() error { return d.tickLoop(ctx, leaderKey, trigger) })
	g.Go(func() error { d.forecast.Run(ctx); return nil })
	return g.Wait()
}

// tickLoop ticks at once, then when the step says it should run again
// (tick.Result.Next: the interval, a retry's backoff, the end of a quiet
// time), and at once on a trigger.
func (d *Daemon) tickLoop(ctx context.Context, leaderKey string, trigger <-chan struct{}) error {
	for {
		res := d.runOnce(ctx, leaderKey)
		if ctx.Err() != nil {
			return nil
		}
		if reason.Of(res.Err) == reason.LostLeadership {
			return res.Err
		}
		if tick.EtcdHung(res.Err) {
			// etcd stopped answering this daemon (storage.WithDeadline):
			// another daemon may reach it; stop leading and campaign again.
			return fmt.Errorf("etcd did not answer: %w", res.Err)
		}
		timer := time.NewTimer(res.Next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-trigger:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// runOnce is one tick, with its metrics.
func (d *Daemon) runOnce(ctx context.Context, leaderKey string) tick.Result {
	res := d.step.Run(ctx, leaderKey, d.cfg.Kubernetes, nil)
	d.forecast.Offer(leaderKey, res.Decision)
	if res.Status.Time.IsZero() {
		return res // cut short: nothing to show
	}
	d.metrics.Observe(d.cfg.Now().UTC(), liveview.Tick{Decision: res.Decision, Status: res.Status, Failed: res.Err != nil, Warnings: res.Warnings, Duration: res.Duration})
	d.leader.setMode(res.Status.Mode)
	d.mu.Lock()
	d.status = res.Status
	d.mu.Unlock()
	return res
}

// Status is the status of the daemon's last tick (for /health).
func (d *Daemon) Status() storage.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}
