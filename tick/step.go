// Package tick is ckegen's integration step: one tick reads one snapshot
// of etcd, queries sabakan, decides, makes the guarded write, and records
// the status. It runs in any host that leads: ckegen's own daemon (its
// election, watch, timers and backoff) and CKE's server (as its sabakan
// integration). The host calls Step.Run and reads the Result: whether to
// tick again soon, what to log and export. What a tick must remember for
// the next one is the step's Memory, kept in memory and, for the next
// leader, under a key of its own; it is never read back from the status.
package tick

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Config of a step.
type Config struct {
	Storage storage.Storage
	// Name is the leader's name the status shows.
	Name string
	// Mode is ModeInsideCKE for a step run by CKE's server; "" for
	// ckegen's daemon, whose mode (standalone or beside CKE) each tick
	// reads from etcd.
	Mode       string
	RetireWait time.Duration
	// CKEStatusMaxAge is how old CKE's status may be for ckegen to write
	// beside a CKE server (docs/beside-cke.md).
	CKEStatusMaxAge time.Duration
	// MaxClusterBytes is etcd's request size limit: a larger cluster is
	// refused with CLUSTER_TOO_LARGE instead of failing in etcd.
	MaxClusterBytes int
	Sabakan         sabakan.Options
	Now             func() time.Time
	Log             *slog.Logger
}

// Defaults.
const (
	DefaultMaxClusterBytes = 1536 * 1024 // etcd's default --max-request-bytes
	DefaultCKEStatusMaxAge = 10 * time.Minute
)

// Kubernetes is what a host knows of the cluster's Kubernetes Nodes: the
// taints of each Node by name (docs/design.md 6.4). A nil Kubernetes is
// nothing known: the generator sees no taints, and the status says the
// Nodes were not read. *kubenodes.Reader is one; Known is another.
type Kubernetes interface {
	NodeTaints(ctx context.Context) (map[string][]cluster.Taint, error)
}

// Known is a Kubernetes view the host already holds (CKE's server reads
// the Nodes into its cluster status).
type Known map[string][]cluster.Taint

// NodeTaints implements Kubernetes.
func (k Known) NodeTaints(context.Context) (map[string][]cluster.Taint, error) { return k, nil }

// Step runs ticks. It holds the storage, the sabakan clients, the
// settings reader (with its caches) and the memory. A Step is not safe for
// concurrent use: its host runs one tick at a time.
type Step struct {
	cfg      Config
	log      *slog.Logger
	sabakan  sabakan.Clients
	settings intake.Reader
	// memory is what the last tick of this leadership left for the next;
	// term is the leader key it belongs to ("" before the first tick).
	memory Memory
	term   string
	// recall: the next snapshot brings the last leader's memory.
	recall bool
	// regenerateOnly: the decision of this tick is Regenerate alone
	// (Step.Regenerate).
	regenerateOnly bool
	// yielded: the last tick left the integration to ckegen's daemons
	// (YieldsToDaemons), and said so once.
	yielded bool
}

// New returns a step; zero fields of cfg take their defaults.
func New(cfg Config) *Step {
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
	return &Step{cfg: cfg, log: cfg.Log, sabakan: sabakan.Clients{Options: cfg.Sabakan}}
}

// Result is what one tick did, for its host: the status it recorded, and
// what the metrics and the loop need.
type Result struct {
	// Status is the status the tick recorded in sabakan/status.
	Status storage.Status
	// Err is the tick's failure (an *Error with its reason code), nil
	// when it ran, held back or was disabled.
	Err error
	// Recorded: the status was stored. A tick cut short by the end of
	// its context records nothing.
	Recorded bool
	// Idle: the integration did not run (disabled, or held back beside a
	// CKE server).
	Idle bool
	// Machines are the machines the tick gave the generator (nil: sabakan
	// was not read), and Cluster the cluster as the tick left it (nil:
	// none, or not read).
	Machines []*machine.Machine
	Cluster  *cluster.Cluster
	// Warnings counts the tick's warnings (the status keeps the first
	// storage.MaxWarnings).
	Warnings int
	// Kubernetes is what the tick read of the Nodes; nil without a view.
	Kubernetes *storage.KubernetesStatus
	// DueIn is when the next tick is due at the latest by what this one
	// saw: the end of the quiet time (0: nothing due).
	DueIn time.Duration
	// QuietKnown: the tick evaluated the quiet time, and QuietRemaining
	// is what is left of it (0: quiet, or no quiet time).
	QuietKnown     bool
	QuietRemaining time.Duration
	// Duration is how long the tick took; Query and Metrics how long
	// sabakan and the policy's metric providers took (0: not asked).
	Duration, Query, Metrics time.Duration
}

// Error is a failed tick with its reason code.
type Error struct {
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

func fail(code string, err error) *Error { return &Error{Reason: code, Err: err} }

// ReasonOf is the reason code of a tick's error ("" for nil, ETCD_ERROR
// for an error without one).
func ReasonOf(err error) string {
	var te *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		return te.Reason
	}
	return reason.EtcdError
}

// Run does one tick as the leader holding leaderKey: it reads one
// snapshot, queries sabakan, decides, writes the cluster guarded on what it
// read, and records the status with the step's memory. kube is what the
// host knows of Kubernetes (nil: nothing). A tick cut short by the end
// of ctx (shutdown, the end of leadership) records nothing.
func (s *Step) Run(ctx context.Context, leaderKey string, kube Kubernetes) Result {
	start := time.Now()
	if leaderKey != s.term {
		// A new leadership: its memory is the last leader's, read with
		// the first snapshot.
		s.term, s.memory = leaderKey, Memory{}
		s.recall = true
	}
	out, err := s.tick(ctx, leaderKey, kube)
	res := Result{Err: err, Duration: time.Since(start)}
	if out != nil {
		res.Idle, res.Machines, res.Cluster, res.Warnings, res.Kubernetes = out.idle(), out.machines, out.cluster(), len(out.warnings), out.kube
		res.Query, res.Metrics = out.queryTime, out.metricsTime
		if out.change.Quiet != nil {
			res.QuietKnown, res.QuietRemaining, res.DueIn = true, out.quietRemaining, out.quietRemaining
		}
	}
	if err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// Cut short by shutdown or the end of leadership: not a failure
		// of the integration, so no failure status (the next leader's
		// first tick writes one).
		s.log.Info("tick cut short", "error", err)
		return res
	}
	if err == nil && out.own != nil && YieldsToDaemons(*out.own, s.cfg.Mode) {
		if !s.yielded {
			s.log.Info("ckegen's daemons own the integration (sabakan/owner: ckegen): it does not run inside CKE's server, and their status is left as it is; " +
				"ckegenctl sabakan handback gives it to CKE's server")
		}
		s.yielded = true
		return res
	}
	s.yielded = false
	now := s.cfg.Now().UTC()
	st, mem := s.project(now, out, err)
	res.Status = st
	s.logTick(st, out, err)
	s.memory = mem
	if etcdHung(err) {
		// The status would wait for the same etcd.
		return res
	}
	data, merr := mem.marshal()
	if merr != nil {
		s.log.Warn("memory not kept", "error", merr)
	}
	if perr := s.cfg.Storage.PutStatus(ctx, leaderKey, st, data); perr != nil && ctx.Err() == nil {
		s.log.Warn("status not recorded", "error", perr)
		if err == nil && errors.Is(perr, context.DeadlineExceeded) {
			// etcd stopped answering after the tick's reads: the host
			// ends the term now, not at the next tick's first read.
			res.Err = fail(reason.EtcdError, fmt.Errorf("status not recorded: %w", perr))
		}
		return res
	}
	res.Recorded = true
	return res
}

// Regenerate is Run whose decision is Regenerate alone: the cluster
// re-rendered with the template when the template changed since the
// cluster was built, and nothing to do otherwise. It is what CKE's server
// asks of its integrator when it becomes leader (Init).
func (s *Step) Regenerate(ctx context.Context, leaderKey string, kube Kubernetes) Result {
	s.regenerateOnly = true
	defer func() { s.regenerateOnly = false }()
	return s.Run(ctx, leaderKey, kube)
}

// EtcdHung reports whether a tick failed because an etcd call ran out of
// time (storage.WithDeadline), not because of what etcd answered: the
// host should stop leading, as another process may reach etcd.
func EtcdHung(err error) bool { return etcdHung(err) }

func etcdHung(err error) bool {
	var te *Error
	return errors.Is(err, context.DeadlineExceeded) && (!errors.As(err, &te) || te.Reason == reason.EtcdError)
}

// project is the status after a tick that ended with out and err, and
// the memory the next tick starts from. The status is a projection of
// this tick and of what the memory carries from the last ones; nothing is
// read back from the stored status.
func (s *Step) project(now time.Time, out *outcome, err error) (storage.Status, Memory) {
	mem := s.memory
	last := mem.Shown
	st := storage.Status{Time: now, Leader: s.cfg.Name, LastSuccess: last.LastSuccess,
		LastOp: last.LastOp, LastChanges: last.LastChanges, LastChangeCount: last.LastChangeCount}
	switch {
	case err != nil:
		st.Result, st.Reason, st.Message = reason.Failing, reason.EtcdError, err.Error()
		var te *Error
		if errors.As(err, &te) {
			st.Reason, st.Message = te.Reason, te.Err.Error()
		}
		st.ConsecutiveFailures = last.ConsecutiveFailures + 1
	case out.hold != nil:
		st.Result, st.Reason, st.Message = reason.Held, out.hold.Reason, out.hold.Message
	case out.disabled:
		st.Result, st.Reason, st.Message = reason.Disabled, reason.DisabledFlag, "sabakan integration is disabled"
	case out.waiting != nil:
		st.Result, st.Reason, st.Message = reason.Waiting, out.waiting.Reason, out.waiting.Message
	default:
		st.Result = reason.OK
		st.LastSuccess = now
		if out.result != nil {
			st.LastOp, st.LastChanges, st.LastChangeCount = out.result.Op, statusChanges(out.result.Changes), len(out.result.Changes)
		}
	}
	if out != nil && out.own != nil {
		st.Mode, st.Owner = s.modeOf(*out.own), out.own.Owner
	}
	if out != nil {
		st.Warnings = boundWarnings(out.warnings)
		st.Kubernetes = out.kube
	}
	st.Message = clip.Text(st.Message, maxMessage)
	placementsStatus(&st, last, out)
	modelStatus(&st, last, out)
	changeStatus(&st, last, out, err)
	st.Since = now
	if last.Result == st.Result && last.Reason == st.Reason && !last.Since.IsZero() {
		st.Since = last.Since
	}
	mem.remember(st, out)
	return st, mem
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
func placementsStatus(st *storage.Status, last Shown, out *outcome) {
	switch {
	case out != nil && out.idle():
	case out != nil && out.placed:
		st.Placements = out.placements
	default:
		st.Placements = last.Placements
	}
}

// modelStatus completes a tick's status with the constraints model in
// force and, in the rate model, the worker rate of the cluster as the
// tick leaves it (docs/models.md), counting the machines the tick gave the
// generator, as rule 7 does. A tick that did not get to query sabakan
// keeps the last rate, against the minimum-workers-rate now in force; one
// that did not read valid constraints (or a disabled integration) says
// nothing of either.
func modelStatus(st *storage.Status, last Shown, out *outcome) {
	if out == nil || out.idle() || out.constraints == nil {
		return
	}
	c := *out.constraints
	st.Model, st.ConstraintsSource = c.Model(), out.constraintsSource
	switch {
	case !c.RateModel():
	case out.machines != nil:
		st.WorkerRate = statusRate(generator.RateOf(out.cluster(), len(out.machines), c))
	case last.WorkerRate != nil:
		r := *last.WorkerRate
		r.Minimum = *c.MinimumWorkersRate
		st.WorkerRate = &r
	}
}

// logTick logs the tick's warnings and result: the log line is a
// projection of the tick, as the status is.
func (s *Step) logTick(st storage.Status, out *outcome, err error) {
	if out != nil {
		// As bounded as the status: an inventory of bad machines must
		// not write thousands of lines every tick.
		for _, w := range st.Warnings {
			s.log.Warn("tick warning", "warning", w)
		}
	}
	switch {
	case err != nil:
		s.log.Error("tick failed", "reason", st.Reason, "error", st.Message, "failures", st.ConsecutiveFailures)
	case st.Result == reason.Planning:
		// Held by the trigger or the quiet time: the status says
		// "planning" with the steps pending, and so does the log.
		steps := 0
		if st.Pending != nil {
			steps = st.Pending.Steps
		}
		s.log.Info("tick planned, no cluster written", "reason", st.Reason, "why", st.Message, "pending_steps", steps)
	case out.hold != nil:
		s.log.Info("tick held", "reason", out.hold.Reason, "why", out.hold.Message)
	case out.disabled:
		s.log.Info("tick skipped: disabled")
	case out.waiting != nil:
		// Said once, and again when what it waits for changes: a new
		// installation waits until an operator stores its settings.
		if last := s.memory.Shown; last.Result != st.Result || last.Reason != st.Reason {
			s.log.Info("waiting for the settings", "reason", st.Reason, "why", st.Message)
		}
	case out.result != nil:
		s.log.Info("cluster updated", "op", out.result.Op, "changes", changeSummary(out.result.Changes), "nodes", len(out.result.Cluster.Nodes))
	default:
		nodes := 0
		if out.current != nil {
			nodes = len(out.current.Nodes)
		}
		s.log.Info("nothing to do", "nodes", nodes, "machines", len(out.machines))
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
