// Package daemon is ckegen's integration loop: a leader-elected process
// that keeps cluster.yml in etcd in step with sabakan, one tick at a time.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Config of the daemon.
type Config struct {
	Storage storage.Storage
	// Name is written to the election key (ckecli leader shows it).
	Name       string
	Interval   time.Duration
	SessionTTL time.Duration
	RetireWait time.Duration
	// MinBackoff is the first retry delay after a failed tick; it doubles
	// up to Interval.
	MinBackoff time.Duration
	// MaxClusterBytes is etcd's request size limit: a larger cluster is
	// refused with CLUSTER_TOO_LARGE instead of failing in etcd.
	MaxClusterBytes int
	Sabakan         sabakan.Options
	Now             func() time.Time
	Log             *slog.Logger
	Registry        prometheus.Registerer
}

// Defaults.
const (
	DefaultInterval        = time.Minute
	DefaultSessionTTL      = 60 * time.Second
	DefaultMinBackoff      = 5 * time.Second
	DefaultMaxClusterBytes = 1536 * 1024 // etcd's default --max-request-bytes
)

// Daemon runs the loop.
type Daemon struct {
	cfg     Config
	log     *slog.Logger
	metrics *metrics
	client  *sabakan.Client

	mu     sync.Mutex
	status storage.Status
}

// New returns a daemon; zero fields of cfg take their defaults.
func New(cfg Config) *Daemon {
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.MinBackoff <= 0 {
		cfg.MinBackoff = DefaultMinBackoff
	}
	if cfg.MaxClusterBytes <= 0 {
		cfg.MaxClusterBytes = DefaultMaxClusterBytes
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	return &Daemon{cfg: cfg, log: cfg.Log, metrics: newMetrics(cfg.Registry)}
}

// errSessionLost ends a term of leadership.
var errSessionLost = errors.New("etcd session lost")

// Run campaigns for leadership and, while leader, ticks. Losing the
// session stops ticking at once and campaigns again. It returns when ctx is
// done, after resigning.
func (d *Daemon) Run(ctx context.Context) error {
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
	elec := concurrency.NewElection(sess, d.cfg.Storage.Key(storage.KeyLeader))
	d.log.Info("campaigning for leadership", "name", d.cfg.Name)
	if err := elec.Campaign(ctx, d.cfg.Name); err != nil {
		return fmt.Errorf("campaign: %w", err)
	}
	d.log.Info("elected leader", "name", d.cfg.Name, "key", elec.Key())
	d.metrics.leader.Set(1)
	defer d.metrics.leader.Set(0)
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := elec.Resign(rctx); err != nil {
			d.log.Warn("resign failed", "error", err)
		}
	}()
	return d.lead(ctx, sess, elec.Key())
}

// lead runs, in one group, the session watch, the settings watch and the
// ticker; the first to fail ends the term.
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
	g.Go(func() error { return d.watchSettings(ctx, trigger) })
	g.Go(func() error { return d.tickLoop(ctx, leaderKey, trigger) })
	return g.Wait()
}

// watched are the keys whose change triggers a tick at once.
var watched = map[string]bool{
	storage.KeySabakanTemplate:       true,
	storage.KeySabakanURL:            true,
	storage.KeySabakanQueryVariables: true,
	storage.KeySabakanDisabled:       true,
	storage.KeyConstraints:           true,
}

func (d *Daemon) watchSettings(ctx context.Context, trigger chan<- struct{}) error {
	st := d.cfg.Storage
	wctx := clientv3.WithRequireLeader(ctx)
	sabakanCh := st.Client.Watch(wctx, st.Key("sabakan/"), clientv3.WithPrefix())
	consCh := st.Client.Watch(wctx, st.Key(storage.KeyConstraints))
	for {
		var resp clientv3.WatchResponse
		var ok bool
		select {
		case <-ctx.Done():
			return nil
		case resp, ok = <-sabakanCh:
		case resp, ok = <-consCh:
		}
		if !ok {
			if ctx.Err() != nil {
				return nil
			}
			return errors.New("settings watch closed")
		}
		if err := resp.Err(); err != nil {
			return fmt.Errorf("settings watch: %w", err)
		}
		for _, ev := range resp.Events {
			if watched[string(ev.Kv.Key[len(st.Prefix):])] {
				select {
				case trigger <- struct{}{}:
				default:
				}
				break
			}
		}
	}
}

// tickLoop ticks at once, then every Interval, at once on a trigger, and
// after a failure with a backoff from MinBackoff doubling up to Interval.
func (d *Daemon) tickLoop(ctx context.Context, leaderKey string, trigger <-chan struct{}) error {
	backoff := d.cfg.MinBackoff
	for {
		err := d.runOnce(ctx, leaderKey)
		if ctx.Err() != nil {
			return nil
		}
		var te *tickError
		if errors.As(err, &te) && te.reason == ReasonLostLeadership {
			return err
		}
		var wait time.Duration
		wait, backoff = d.nextWait(err, backoff)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-trigger:
			timer.Stop()
			backoff = d.cfg.MinBackoff
		case <-timer.C:
		}
	}
}

// nextWait returns how long to wait after a tick that ended with err, and
// the backoff for the next failure: Interval after a success; at once when
// the cluster changed under us; otherwise the backoff, which doubles up to
// Interval.
func (d *Daemon) nextWait(err error, backoff time.Duration) (wait, next time.Duration) {
	var te *tickError
	switch {
	case err == nil:
		return d.cfg.Interval, d.cfg.MinBackoff
	case errors.As(err, &te) && te.reason == ReasonConflict:
		return 0, backoff
	}
	return min(backoff, d.cfg.Interval), min(2*backoff, d.cfg.Interval)
}

// runOnce is one tick with its status, metrics and log event.
func (d *Daemon) runOnce(ctx context.Context, leaderKey string) error {
	start := time.Now()
	out, err := d.tick(ctx, leaderKey)
	d.metrics.tickDuration.Observe(time.Since(start).Seconds())
	now := d.cfg.Now().UTC()
	d.metrics.timestamp.Set(float64(now.Unix()))

	prev := d.Status()
	st := storage.Status{Time: now, Leader: d.cfg.Name, LastSuccess: prev.LastSuccess,
		LastOp: prev.LastOp, LastChanges: prev.LastChanges, LastChangeCount: prev.LastChangeCount}
	var te *tickError
	switch {
	case err != nil && errors.As(err, &te):
		st.Result, st.Reason, st.Message = ResultFailing, te.reason, te.err.Error()
		st.ConsecutiveFailures = prev.ConsecutiveFailures + 1
		d.metrics.successful.Set(0)
		d.log.Error("tick failed", "reason", te.reason, "error", te.err, "failures", st.ConsecutiveFailures)
	case err != nil:
		st.Result, st.Reason, st.Message = ResultFailing, ReasonEtcdError, err.Error()
		st.ConsecutiveFailures = prev.ConsecutiveFailures + 1
		d.metrics.successful.Set(0)
		d.log.Error("tick failed", "error", err)
	case out.disabled:
		st.Result, st.Reason, st.Message = ResultDisabled, ReasonDisabled, "sabakan integration is disabled"
		d.log.Info("tick skipped: disabled")
	default:
		st.Result = ResultOK
		st.LastSuccess = now
		d.metrics.successful.Set(1)
		if out.result != nil {
			st.LastOp, st.LastChanges, st.LastChangeCount = out.result.Op, storageChanges(out.result.Changes), len(out.result.Changes)
			d.log.Info("cluster updated", "op", out.result.Op, "changes", changeSummary(out.result.Changes), "nodes", out.nodes)
		} else {
			d.log.Info("nothing to do", "nodes", out.nodes, "machines", len(out.machines))
		}
	}
	st.Since = now
	if prev.Result == st.Result && prev.Reason == st.Reason && !prev.Since.IsZero() {
		st.Since = prev.Since
	}
	if out != nil {
		var c *cluster.Cluster
		if out.result != nil {
			c = out.result.Cluster
		} else if cur, _, gerr := d.cfg.Storage.GetCluster(ctx); gerr == nil {
			c = cur
		}
		d.metrics.observeInventory(out.machines, c)
	}
	d.mu.Lock()
	d.status = st
	d.mu.Unlock()
	if perr := d.cfg.Storage.PutStatus(ctx, leaderKey, st); perr != nil && ctx.Err() == nil {
		d.log.Warn("status not recorded", "error", perr)
	}
	return err
}

func changeSummary(cs []generator.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Action + " " + c.Address
	}
	return out
}

// Status is the daemon's last status (for /health).
func (d *Daemon) Status() storage.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}
