// Package tick is ckegen's integration step: one tick gathers what it
// decides from (one etcd snapshot, sabakan's answer, the policy's
// metrics, the Kubernetes view), decides once (Decide, a pure function
// returning a Decision), acts on the decision (the guarded write, the
// history, the stored plan), and records the status. The status, the
// history entry, the log and the memory are projections of the decision,
// as are the views (liveview: the page, the map, the metrics); views that
// show what the leader would do (ckegenctl's plan and owner) gather and
// decide with the same code.
//
// It runs in any host that leads: ckegen's own daemon and CKE's server
// (as its sabakan integration). The host calls Step.Run and reads the
// Result: when to run again, what to export. What a tick must remember
// for the next one is the step's Memory, kept in memory and, for the
// next leader, under a key of its own; it is never read back from the
// status.
package tick

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/kubenodes"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Step runs ticks. It holds the storage, the gatherer (with its caches)
// and the memory. A Step is not safe for concurrent use: its host runs
// one tick at a time.
type Step struct {
	st     storage.Storage
	cfg    decision.Config
	log    *slog.Logger
	gather *decision.Gatherer
	// memory is what the last tick of this leadership left for the next;
	// term is the leader key it belongs to ("" before the first tick).
	memory decision.Memory
	term   string
	// recall: the next snapshot brings the last leader's memory.
	recall bool
	// yielded: the last tick left the integration to ckegen's daemons
	// (intake.Ownership.LeftToDaemons), and said so once.
	yielded bool
}

// New returns a step writing st, configured by cfg (its zero fields
// take their defaults).
func New(st storage.Storage, cfg decision.Config) *Step {
	if cfg.MaxSteps == 0 {
		// The plan the status keeps pending is the plan after the step
		// the tick writes: generator.DefaultMaxSteps of them.
		cfg.MaxSteps = generator.DefaultMaxSteps + 1
	}
	cfg = cfg.WithDefaults()
	return &Step{st: st, cfg: cfg, log: cfg.Log, gather: decision.NewGatherer(st, cfg.Sabakan, cfg.Now)}
}

// Result is what one tick did, for its host.
type Result struct {
	// Decision is the tick's decision (nil: the tick was cut short
	// before it decided anything worth showing).
	Decision *decision.Decision
	// Status is the tick's status, as recorded in sabakan/status when
	// etcd took it (zero: the tick was cut short).
	Status storage.Status
	// Err is the tick's failure (a *reason.Error with its reason code),
	// nil when it ran, held back or was disabled.
	Err error
	// Warnings counts the tick's warnings (the status keeps the first
	// storage.MaxWarnings).
	Warnings int
	// Next is when the step should run again, by what this tick saw:
	// the host's interval after a success (sooner when a quiet time ends
	// first), at once after a write lost to a concurrent change, after
	// the backoff after another failure.
	Next time.Duration
	// Duration is how long the tick took.
	Duration time.Duration
	// Yielded: the step inside CKE's server left the integration and its
	// status to ckegen's daemons (intake.Ownership.LeftToDaemons): nothing to export.
	Yielded bool
}

// Idle reports whether the integration did not run (disabled, held back
// beside a CKE server, waiting for its settings).
func (r Result) Idle() bool { return r.Decision != nil && r.Decision.Idle() }

// Run does one tick as the leader holding leaderKey: it gathers, decides,
// acts on the decision, and records the status with the step's memory.
// kube is what the host knows of Kubernetes (nil: nothing), repair its
// auto-repair (nil: none). A tick cut short by the end of ctx (shutdown,
// the end of leadership) records nothing.
func (s *Step) Run(ctx context.Context, leaderKey string, kube kubenodes.Kubernetes, repair Repair) Result {
	return s.run(ctx, leaderKey, kube, repair, nil)
}

// Regenerate is Run whose decision is Regenerate alone: the cluster
// re-rendered with the template when the template changed since the
// cluster was built, and nothing to do otherwise. It is what CKE's server
// asks of its integrator when it becomes leader (Init).
func (s *Step) Regenerate(ctx context.Context, leaderKey string, kube kubenodes.Kubernetes) Result {
	return s.run(ctx, leaderKey, kube, nil, generator.Init)
}

func (s *Step) run(ctx context.Context, leaderKey string, kube kubenodes.Kubernetes, repair Repair, generate func(generator.Input, bool) (*generator.Result, error)) Result {
	start := time.Now() // elapsed time, for the metrics: not the step's clock
	if leaderKey != s.term {
		// A new leadership: its memory is the last leader's, read with
		// the first snapshot.
		s.term, s.memory, s.recall = leaderKey, decision.Memory{}, true
	}
	o := s.cfg // as the leader holding leaderKey
	o.WriteOverhead = s.st.ClusterWriteOverhead(leaderKey)
	g := s.gather.Gather(ctx, leaderKey, decision.Ask{Memory: s.recall, Last: s.memory.Last, Kubernetes: kube, Config: o, Generate: generate})
	if s.recall && g.Stored != nil {
		if g.StoredErr != nil {
			s.log.Warn("the last leader's memory is not used", "error", g.StoredErr)
		}
		s.memory, s.recall = *g.Stored, false
	}
	d := decision.Decide(g, s.memory)
	out := s.act(ctx, leaderKey, d)
	if failed := reason.Of(failure(d, out)); repair != nil && ctx.Err() == nil && failed != reason.LostLeadership {
		out.Repair, out.RepairKnown = repair(ctx, failed)
	}
	res := Result{Decision: d, Err: failure(d, out), Warnings: len(repairWarnings(repairStatus(d, out, s.memory.Last))) + len(d.Warnings) + len(out.Warnings)}
	res.Duration = time.Since(start)
	if res.Err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// Cut short by shutdown or the end of leadership: not a failure
		// of the integration, so no failure status (the next leader's
		// first tick writes one).
		s.log.Info("tick cut short", "error", res.Err)
		res.Decision = nil
		return res
	}
	if own := g.Settings; own != nil && res.Err == nil && s.cfg.Mode == decision.ModeInsideCKE && own.Own.LeftToDaemons() {
		if !s.yielded {
			s.log.Info("ckegen's daemons own the integration (sabakan/owner: ckegen): it does not run inside CKE's server, and their status is left as it is; " +
				"ckegenctl sabakan handback gives it to CKE's server")
		}
		s.yielded = true
		res.Decision, res.Next, res.Yielded = nil, time.Duration(s.cfg.Interval), true
		return res
	}
	s.yielded = false
	prev := s.memory
	regen := generate != nil
	s.conclude(d, out, &res, prev, prev.Logged, regen)
	if EtcdHung(res.Err) {
		// The status would wait for the same etcd.
		return res
	}
	if e := s.record(ctx, leaderKey, res.Err); e != nil {
		// The status write found etcd in a state the tick had not: that
		// is the tick's outcome, for its status (kept in memory, as etcd
		// took none), its log and its next run.
		out.Err = e
		s.conclude(d, out, &res, prev, s.memory.Logged, regen)
	}
	return res
}

// conclude makes the tick's status, memory and next run from its
// decision and outcome, from the memory prev it started with, and logs
// what changed since logged; regen: the tick was Regenerate's.
func (s *Step) conclude(d *decision.Decision, out Outcome, res *Result, prev decision.Memory, logged decision.Logged, regen bool) {
	res.Err = failure(d, out)
	st := status(d, out, prev.Last, s.cfg.Name, s.cfg.Interval)
	mem := nextMemory(prev, d, out, st)
	mem.Logged = logTick(s.log, d, out, st, logged, prev.Last.Repair, regen)
	var backoff time.Duration
	res.Next, backoff = s.after(d, res.Err, prev)
	mem.Backoff = storage.Duration(backoff)
	res.Status, s.memory = st, mem
}

// record stores the tick's status and memory. It returns the failure the
// write found where the tick (which failed with err, or not) had none of
// its kind: etcd stopped answering after the tick's reads (the host ends
// the term now, not at the next tick's first read), or etcd is full,
// which a tick that wrote nothing finds only here.
func (s *Step) record(ctx context.Context, leaderKey string, err error) *reason.Error {
	data, merr := s.memory.Marshal()
	if merr != nil {
		s.log.Warn("memory not kept", "error", merr)
		data = nil
	}
	perr := s.st.PutStatus(ctx, leaderKey, s.memory.Last, data)
	if perr == nil || ctx.Err() != nil {
		return nil
	}
	s.log.Warn("status not recorded", "error", perr)
	switch {
	case err == nil && errors.Is(perr, context.DeadlineExceeded):
		return reason.Fail(reason.EtcdError, fmt.Errorf("status not recorded: %w", perr))
	case storage.NoSpace(perr) && reason.Of(err) != reason.EtcdNoSpace:
		return etcdFailure(perr)
	}
	return nil
}

// failure is the tick's failure: the decision's, or the write's.
func failure(d *decision.Decision, o Outcome) error {
	switch {
	case o.Err != nil:
		return o.Err
	case d.Err != nil:
		return d.Err
	}
	return nil
}

// after is the retry policy of both hosts: when the step should run
// again after a tick that ended with err, and the backoff the memory
// keeps for the next failure. After a success, the interval, or the end
// of a quiet time when it comes first; after a write that lost to a
// concurrent change of the cluster or its ownership, at once; after
// another failure, the backoff, from MinBackoff doubling up to the
// interval, and from MinBackoff again when the settings changed since
// the last tick.
func (s *Step) after(d *decision.Decision, err error, last decision.Memory) (wait, backoff time.Duration) {
	interval := time.Duration(s.cfg.Interval)
	backoff = time.Duration(last.Backoff)
	if backoff <= 0 || d.Gathered.SettingsID != last.Settings {
		backoff = time.Duration(s.cfg.MinBackoff)
	}
	switch reason.Of(err) {
	case "":
		wait, backoff = interval, 0
	case reason.ClusterChanged, reason.OwnershipChanged:
		wait = 0
	default:
		wait, backoff = min(backoff, interval), min(2*backoff, interval)
	}
	if r := d.QuietRemaining; r > 0 && r < wait {
		wait = r + 10*time.Millisecond
	}
	return wait, backoff
}

// EtcdHung reports whether a tick failed because an etcd call ran out of
// time (storage.WithDeadline), not because of what etcd answered: the
// host should stop leading, as another process may reach etcd.
func EtcdHung(err error) bool {
	var te *reason.Error
	return errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &te) || te.Reason == reason.EtcdError)
}
