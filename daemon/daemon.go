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
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/clip"
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
	// CKEStatusMaxAge is how old CKE's status may be for ckegen to write
	// beside a CKE server (docs/beside-cke.md).
	CKEStatusMaxAge time.Duration
	// MaxClusterBytes is etcd's request size limit: a larger cluster is
	// refused with CLUSTER_TOO_LARGE instead of failing in etcd.
	MaxClusterBytes int
	Sabakan         sabakan.Options
	// Nodes lists the Kubernetes Nodes' taints once per tick (docs/design.md 6.4);
	// nil: no Kubernetes access, the generator sees no taints.
	Nodes Nodes
	Now   func() time.Time
	Log   *slog.Logger
	// Registry receives the daemon's metrics and is what /metrics serves;
	// nil: a new one.
	Registry *prometheus.Registry
}

// Nodes lists the taints of the cluster's Kubernetes Nodes by Node name;
// *kubenodes.Reader is one.
type Nodes interface {
	List(ctx context.Context) (map[string][]cluster.Taint, error)
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
	// sabakan makes the sabakan client, and settings reads the tick's
	// settings with its caches; only the tick's goroutine uses them.
	sabakan  sabakan.Clients
	settings intake.Reader

	mu      sync.Mutex
	status  storage.Status
	leading bool
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
	if cfg.CKEStatusMaxAge <= 0 {
		cfg.CKEStatusMaxAge = DefaultCKEStatusMaxAge
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
	return &Daemon{cfg: cfg, log: cfg.Log, metrics: newMetrics(cfg.Registry), sabakan: sabakan.Clients{Options: cfg.Sabakan}}
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
	d.metrics.owner.setLeading(leading)
	if !leading {
		d.metrics.inventory.clear()
		d.metrics.change.clear()
		d.metrics.placements.clear()
		d.metrics.model.clear()
		d.metrics.warnings.clear()
	}
}

// Leading reports whether this daemon leads.
func (d *Daemon) Leading() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.leading
}

// lead runs, in one group, the session watch, the settings watch and the
// ticker; the first to fail ends the term.
func (d *Daemon) lead(ctx context.Context, sess *concurrency.Session, leaderKey string) error {
	d.loadStatus(ctx)
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
	storage.KeySabakanTrigger:        true,
	storage.KeySabakanQuietTime:      true,
	storage.KeySabakanMaxUnhealthy:   true,
	storage.KeySabakanPolicy:         true,
	storage.KeyOwner:                 true,
	storage.KeyCKEGenDisabled:        true,
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
		if etcdHung(err) {
			// etcd stopped answering this daemon (storage.WithDeadline):
			// another daemon may reach it; stop leading and campaign again.
			return fmt.Errorf("etcd did not answer: %w", err)
		}
		var wait time.Duration
		wait, backoff = d.nextWait(err, backoff)
		wait = d.metrics.change.untilQuiet(wait)
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
	case errors.As(err, &te) && (te.reason == ReasonConflict || te.reason == ReasonOwnershipChanged):
		return 0, backoff
	}
	return min(backoff, d.cfg.Interval), min(2*backoff, d.cfg.Interval)
}

// etcdHung reports whether a tick failed because an etcd call ran out
// of time (storage.WithDeadline), not because of what etcd answered.
func etcdHung(err error) bool {
	var te *tickError
	return errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &te) || te.reason == ReasonEtcdError)
}

// runOnce is one tick with its status, metrics and log events.
func (d *Daemon) runOnce(ctx context.Context, leaderKey string) error {
	start := time.Now()
	out, err := d.tick(ctx, leaderKey)
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// Cut short by shutdown or the end of leadership: not a failure
		// of the integration, so no failure status (the next leader's
		// first tick writes one).
		d.log.Info("tick cut short", "error", err)
		return err
	}
	d.metrics.tickDuration.Observe(time.Since(start).Seconds())
	now := d.cfg.Now().UTC()

	st := nextStatus(d.Status(), now, d.cfg.Name, out, err)
	d.logTick(st, out, err)
	d.metrics.inventory.observe(now, out, err)
	d.metrics.change.observe(st, out)
	d.metrics.placements.observe(st)
	d.metrics.model.observe(st)
	d.metrics.owner.observe(st)
	d.metrics.warnings.observe(st, out)
	d.mu.Lock()
	d.status = st
	d.mu.Unlock()
	if etcdHung(err) {
		// The status would wait for the same etcd: the term ends now.
		return err
	}
	if perr := d.cfg.Storage.PutStatus(ctx, leaderKey, st); perr != nil && ctx.Err() == nil {
		d.log.Warn("status not recorded", "error", perr)
		if err == nil && errors.Is(perr, context.DeadlineExceeded) {
			// etcd stopped answering after the tick's reads: the term
			// ends now, not at the next tick's first read.
			return fail(ReasonEtcdError, fmt.Errorf("status not recorded: %w", perr))
		}
	}
	return err
}

// nextStatus is the status after a tick that ended with out and err,
// following prev.
func nextStatus(prev storage.Status, now time.Time, leader string, out *outcome, err error) storage.Status {
	st := storage.Status{Time: now, Leader: leader, LastSuccess: prev.LastSuccess,
		LastOp: prev.LastOp, LastChanges: prev.LastChanges, LastChangeCount: prev.LastChangeCount}
	var te *tickError
	switch {
	case err != nil:
		st.Result, st.Reason, st.Message = ResultFailing, ReasonEtcdError, err.Error()
		if errors.As(err, &te) {
			st.Reason, st.Message = te.reason, te.err.Error()
		}
		st.ConsecutiveFailures = prev.ConsecutiveFailures + 1
	case out.hold != nil:
		st.Result, st.Reason, st.Message = ResultHeld, out.hold.reason, out.hold.msg
	case out.disabled:
		st.Result, st.Reason, st.Message = ResultDisabled, ReasonDisabled, "sabakan integration is disabled"
	default:
		st.Result = ResultOK
		st.LastSuccess = now
		if out.result != nil {
			st.LastOp, st.LastChanges, st.LastChangeCount = out.result.Op, statusChanges(out.result.Changes), len(out.result.Changes)
		}
	}
	if out != nil && out.own != nil {
		st.Mode, st.Owner = modeOf(*out.own), out.own.Owner
	}
	if out != nil {
		st.Warnings = boundWarnings(out.warnings)
		st.Kubernetes = out.kube
	}
	st.Message = clip.Text(st.Message, maxMessage)
	placementsStatus(&st, prev, out)
	modelStatus(&st, prev, out)
	changeStatus(&st, prev, out, err)
	st.Since = now
	if prev.Result == st.Result && prev.Reason == st.Reason && !prev.Since.IsZero() {
		st.Since = prev.Since
	}
	return st
}

// maxMessage bounds a status message: its values are cut already
// (clip.Value), this bounds the whole.
const maxMessage = 4 * clip.MaxValue

// boundWarnings is what a status keeps of a tick's warnings: the first
// storage.MaxWarnings, each bounded, and how many more there were.
func boundWarnings(ws []string) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(ws), storage.MaxWarnings)+1)
	for _, w := range ws[:min(len(ws), storage.MaxWarnings)] {
		out = append(out, clip.Text(w, 2*clip.MaxValue))
	}
	if more := len(ws) - storage.MaxWarnings; more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// placementsStatus completes a tick's status with the placements: those
// the tick counted, or, when it did not get to count them (sabakan or a
// metric provider failed), the last ones; none while disabled.
func placementsStatus(st *storage.Status, prev storage.Status, out *outcome) {
	switch {
	case out != nil && out.idle():
	case out != nil && out.placed:
		st.Placements = out.placements
	default:
		st.Placements = prev.Placements
	}
}

// modelStatus completes a tick's status with the constraints model in
// force and, in the rate model, the worker rate of the cluster as the
// tick leaves it (docs/models.md), counting the machines the tick gave the
// generator, as rule 7 does. A tick that did not get to query sabakan
// keeps the last rate, against the minimum-workers-rate now in force; one
// that did not read valid constraints (or a disabled integration) says
// nothing of either.
func modelStatus(st *storage.Status, prev storage.Status, out *outcome) {
	if out == nil || out.idle() || out.constraints == nil {
		return
	}
	c := *out.constraints
	st.Model, st.ConstraintsSource = c.Model(), out.constraintsSource
	switch {
	case !c.RateModel():
	case out.machines != nil:
		st.WorkerRate = statusRate(generator.RateOf(out.cluster(), len(out.machines), c))
	case prev.WorkerRate != nil:
		r := *prev.WorkerRate
		r.Minimum = *c.MinimumWorkersRate
		st.WorkerRate = &r
	}
}

// logTick logs the tick's warnings and result.
func (d *Daemon) logTick(st storage.Status, out *outcome, err error) {
	if out != nil {
		// As bounded as the status: an inventory of bad machines must
		// not write thousands of lines every tick.
		for _, w := range st.Warnings {
			d.log.Warn("tick warning", "warning", w)
		}
	}
	switch {
	case err != nil:
		d.log.Error("tick failed", "reason", st.Reason, "error", st.Message, "failures", st.ConsecutiveFailures)
	case st.Result == ResultPlanning:
		// Held by the trigger or the quiet time: the status says
		// "planning" with the steps pending, and so does the log.
		steps := 0
		if st.Pending != nil {
			steps = st.Pending.Steps
		}
		d.log.Info("tick planned, no cluster written", "reason", st.Reason, "why", st.Message, "pending_steps", steps)
	case out.hold != nil:
		d.log.Info("tick held", "reason", out.hold.reason, "why", out.hold.msg)
	case out.disabled:
		d.log.Info("tick skipped: disabled")
	case out.result != nil:
		d.log.Info("cluster updated", "op", out.result.Op, "changes", changeSummary(out.result.Changes), "nodes", len(out.result.Cluster.Nodes))
	default:
		nodes := 0
		if out.current != nil {
			nodes = len(out.current.Nodes)
		}
		d.log.Info("nothing to do", "nodes", nodes, "machines", len(out.machines))
	}
}

// plural is "1 step", "2 steps".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func changeSummary(cs []generator.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Action + " " + c.Address
	}
	return out
}

// Status is the status of the daemon's last tick (for /health).
func (d *Daemon) Status() storage.Status {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.status
}
