package daemon

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// Change management (README, "Change management"): reason codes, and the result of a tick that
// planned instead of writing.
const (
	// ReasonQuietTime: the inventory has not been still for the quiet
	// time; the tick planned and wrote nothing.
	ReasonQuietTime = "QUIET_TIME"
	// ReasonTooManyUnhealthy: more nodes are unhealthy than max-unhealthy
	// allows; no membership change, state taints only.
	ReasonTooManyUnhealthy = "TOO_MANY_UNHEALTHY"
	// ReasonInvalidTrigger, ReasonInvalidQuietTime and
	// ReasonInvalidMaxUnhealthy: a stored setting does not parse.
	ReasonInvalidTrigger      = intake.ReasonInvalidTrigger
	ReasonInvalidQuietTime    = intake.ReasonInvalidQuietTime
	ReasonInvalidMaxUnhealthy = intake.ReasonInvalidMaxUnhealthy

	// ResultPlanning: the tick computed and stored the plan and wrote no
	// cluster, because the trigger is planning or the inventory is not
	// quiet.
	ResultPlanning = "planning"
)

// changeSettings are the change management settings of a tick.
type changeSettings struct {
	intake.Change
	// release is what released the plan this tick applies (the trigger
	// change or the end of quiet time), for the history.
	release string
}

// changeOutcome is what change management made of a tick.
type changeOutcome struct {
	change storage.ChangeStatus
	// held says why the tick wrote nothing although it could have: the
	// trigger is planning, or the inventory is not quiet ("": not held).
	held       string
	heldReason string // ReasonQuietTime, or "" for the trigger
	// overLimit says how many nodes are unhealthy when more than
	// max-unhealthy allows ("": not over the limit).
	overLimit      string
	quietRemaining time.Duration
	// settled: the tick's decision was the usual one (generator.Tick) and
	// had nothing to do, with settledWarnings: the plan from here is
	// settled, and is not computed again.
	settled         bool
	settledWarnings []string
}

// manage makes the tick's decision under change management,
// in this order: quiet time and the trigger hold every write (the plan is
// computed and stored instead); too many unhealthy nodes restrict the
// decision to state taints; otherwise the decision is the usual one. It
// returns the result to write, or nil.
func (d *Daemon) manage(s *settings, in generator.Input, out *outcome) (*generator.Result, error) {
	prev := d.Status()
	c := &out.change
	c.Trigger = s.Trigger
	q := evaluateQuiet(in.Machines, s.QuietTime, prev.Quiet, d.cfg.Now())
	c.Quiet = &q.status
	out.quietRemaining = q.remaining

	if lim := s.MaxUnhealthy; lim != nil && s.Current != nil {
		bad := generator.Unhealthy(in)
		u := &storage.UnhealthyStatus{Count: len(bad), Nodes: len(s.Current.Nodes), MaxUnhealthy: lim.String(),
			Limit: lim.Limit(len(s.Current.Nodes)), Addresses: bad[:min(len(bad), storage.MaxChanges)]}
		c.Unhealthy = u
		if u.Count > u.Limit {
			shown := bad[:min(len(bad), maxLastMoved)]
			names := strings.Join(shown, ", ")
			if len(bad) > len(shown) {
				names += fmt.Sprintf(" and %d more", len(bad)-len(shown))
			}
			out.overLimit = fmt.Sprintf("%d of %d nodes are unhealthy (%s), more than max-unhealthy %s allows (%d)",
				u.Count, u.Nodes, names, u.MaxUnhealthy, u.Limit)
		}
	}

	switch {
	case !q.quiet:
		out.held, out.heldReason = q.message, ReasonQuietTime
		if s.Trigger == storage.TriggerPlanning {
			out.held += "; the trigger is planning as well"
		}
	case s.Trigger == storage.TriggerPlanning:
		out.held = "the trigger is planning: ckecli sabakan trigger schedule applies the plan"
	}
	if out.held != "" {
		return nil, nil
	}
	s.release = releasedBy(prev, s)
	c.Release = s.release
	if out.overLimit != "" {
		res, err := generator.Taints(in)
		if res != nil {
			out.warnings = append(out.warnings, res.Warnings...)
		}
		if errors.Is(err, generator.ErrNothingToDo) {
			return nil, nil
		}
		if err != nil {
			return nil, fail(ReasonGenerationError, err)
		}
		return res, nil
	}
	res, warnings, err := d.decide(s, in)
	out.warnings = append(out.warnings, warnings...)
	if res == nil && err == nil {
		out.settled, out.settledWarnings = true, warnings
	}
	return res, err
}

// releasedBy says what released the plan a tick in schedule applies: the
// trigger set to schedule since the last tick, or the end of the quiet
// time the last tick waited for; otherwise what released the plan still
// being applied.
func releasedBy(prev storage.Status, s *settings) string {
	switch {
	case prev.Trigger == storage.TriggerPlanning && s.Trigger == storage.TriggerSchedule:
		return fmt.Sprintf("the trigger set to schedule (sabakan/trigger revision %d)", s.TriggerRevision)
	case prev.Result == ResultPlanning && prev.Reason == ReasonQuietTime:
		since := "-"
		if prev.Quiet != nil {
			since = prev.Quiet.InventorySince.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("the end of the quiet time %s (the inventory unchanged since %s)", s.QuietTime, since)
	}
	return prev.Release
}

// tooManyUnhealthy is the failure a tick over max-unhealthy ends with,
// after it wrote the state taints, if any.
func (o *outcome) tooManyUnhealthy() error {
	if o.overLimit == "" || o.held != "" {
		return nil
	}
	msg := o.overLimit + ": no node is added, removed, promoted or demoted until fewer are"
	if o.result != nil {
		msg += fmt.Sprintf("; state taints written (%s)", plural(len(o.result.Changes), "change", "changes"))
	}
	return fail(ReasonTooManyUnhealthy, errors.New(msg))
}

// keepPlan computes the plan from the cluster as the tick leaves it and
// stores it in sabakan/plan: at every tick that was held (planning, quiet
// time), otherwise only when it differs from the stored one. A plan that
// cannot be stored is a warning. A plan that cannot be computed fails a
// held tick, whose work it was, and is a warning otherwise (the decision
// has failed already or is done).
func (d *Daemon) keepPlan(ctx context.Context, leaderKey string, s *settings, in generator.Input, out *outcome, clusterRev int64) error {
	prev := d.Status().Pending
	templateChanged := s.TemplateChanged()
	if out.result != nil {
		in.Current, templateChanged = out.result.Cluster, false
	}
	var p *generator.Plan
	var err error
	if out.settled && out.result == nil {
		// This tick's decision ran the plan's first tick: nothing to do.
		p = generator.Settled(in.Current, out.settledWarnings)
	} else {
		p, err = generator.MakePlan(in, templateChanged, generator.DefaultMaxSteps)
	}
	if err != nil && out.held != "" {
		return fail(ReasonGenerationError, fmt.Errorf("plan: %w", err))
	}
	if err != nil {
		out.warnings = append(out.warnings, "plan: "+err.Error())
		return nil
	}
	doc := planreport.New(p)
	doc.SetModel(s.Constraints, len(in.Machines))
	stored := planreport.Stored{Document: *doc, TemplateRevision: s.TemplateRevision, ClusterRevision: clusterRev, Trigger: s.Trigger}
	pending := &storage.PlanSummary{Result: p.Result, Steps: len(p.Steps)}
	if p.Err != nil {
		pending.Error = p.Err.Error()
	}
	if len(p.Steps) > 0 {
		next := p.Steps[0]
		pending.NextOp, pending.NextChanges, pending.NextChangeCount = next.Op, statusChanges(next.Changes), len(next.Changes)
	}
	out.change.Pending = pending
	if out.held != "" {
		// No decision was made: the plan's first tick has its warnings.
		if len(p.Steps) > 0 {
			out.warnings = append(out.warnings, p.Steps[0].Warnings...)
		} else {
			out.warnings = append(out.warnings, p.Warnings...)
		}
	}
	digest, err := planDigest(stored, p.Cluster == in.Current)
	if err != nil {
		out.warnings = append(out.warnings, "plan: "+err.Error())
		return nil
	}
	if prev != nil {
		pending.Digest = prev.Digest
	}
	if out.held == "" && pending.Digest == digest {
		return nil
	}
	stored.ComputedAt = d.cfg.Now().UTC()
	data, err := planreport.MarshalStored(stored, d.cfg.MaxClusterBytes)
	if err == nil {
		err = d.cfg.Storage.PutPlan(ctx, leaderKey, data)
	}
	if err != nil {
		out.warnings = append(out.warnings, fmt.Sprintf("plan not stored in %s: %v", storage.KeySabakanPlan, err))
		return nil
	}
	pending.Digest = digest
	return nil
}

// planDigest identifies a stored plan: all of it but the time. A plan
// that leaves the cluster as it is (a settled plan, a refused first
// step) is identified by the cluster's mod revision, which the plan
// records, instead of the cluster's JSON: at 10,000 nodes, encoding the
// cluster at every tick only to hash it was most of a steady tick.
func planDigest(p planreport.Stored, clusterUnchanged bool) (string, error) {
	p.ComputedAt = time.Time{}
	if clusterUnchanged {
		p.Cluster = nil
	}
	h := sha256.New()
	if err := json.NewEncoder(h).Encode(struct {
		planreport.Stored
		ClusterUnchanged bool
	}{p, clusterUnchanged}); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// changeStatus completes a tick's status with change management's part.
// What the tick did not get to (the quiet state, the pending plan) keeps
// its last value, so that a failed tick does not restart the quiet time.
func changeStatus(st *storage.Status, prev storage.Status, out *outcome, err error) {
	st.ChangeStatus = prev.ChangeStatus
	if out == nil || out.idle() || out.change.Trigger == "" {
		return
	}
	c := out.change
	if c.Pending == nil {
		c.Pending = prev.Pending
	}
	if c.Pending != nil && c.Pending.Steps == 0 {
		c.Release = "" // the released plan is done
	}
	st.ChangeStatus = c
	if out.result != nil && err != nil {
		// Over max-unhealthy: the taints written are the last op.
		st.LastOp, st.LastChanges, st.LastChangeCount = out.result.Op, statusChanges(out.result.Changes), len(out.result.Changes)
	}
	if err != nil || out.held == "" {
		return
	}
	st.Result, st.Reason = ResultPlanning, out.heldReason
	msg := out.held
	if out.overLimit != "" {
		st.Reason = ReasonTooManyUnhealthy
		msg += "; also " + out.overLimit
	}
	if p := c.Pending; p != nil {
		switch {
		case p.Steps > 0:
			msg += fmt.Sprintf("; %s pending, next: %s", plural(p.Steps, "step", "steps"), p.NextOp)
		case p.Result == generator.PlanSettled:
			msg += "; nothing pending"
		}
	}
	st.Message = msg
}

// changeMetrics are change management's series: the pending steps and
// the quiet time left, exported on the leader after a tick.
type changeMetrics struct {
	pending, quiet *prometheus.Desc

	mu        sync.Mutex
	set       bool
	steps     int
	remaining time.Duration
}

func newChangeMetrics() *changeMetrics {
	return &changeMetrics{
		pending: prometheus.NewDesc("ckegen_plan_pending_steps",
			"The number of steps of the plan from the cluster as the last tick left it.", nil, nil),
		quiet: prometheus.NewDesc("ckegen_quiet_time_remaining_seconds",
			"The time left before the inventory counts as quiet and writes resume (0: quiet, or no quiet time).", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (m *changeMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- m.pending
	ch <- m.quiet
}

// Collect implements prometheus.Collector.
func (m *changeMetrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.set {
		return
	}
	ch <- prometheus.MustNewConstMetric(m.pending, prometheus.GaugeValue, float64(m.steps))
	ch <- prometheus.MustNewConstMetric(m.quiet, prometheus.GaugeValue, m.remaining.Seconds())
}

// observe records a tick's status; a disabled integration exports
// nothing, as CKE's series.
func (m *changeMetrics) observe(st storage.Status, out *outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if out != nil && out.idle() {
		m.set, m.steps, m.remaining = false, 0, 0
		return
	}
	if st.Pending == nil {
		return
	}
	m.set, m.steps = true, st.Pending.Steps
	if out != nil && out.change.Quiet != nil {
		m.remaining = out.quietRemaining
	}
}

// clear stops the export, as when leadership ends.
func (m *changeMetrics) clear() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.set, m.steps, m.remaining = false, 0, 0
}

// untilQuiet shortens a wait to the end of the quiet time, so that
// writes resume as soon as the inventory is quiet, not an interval later.
func (m *changeMetrics) untilQuiet(wait time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.remaining > 0 && m.remaining < wait {
		return m.remaining + 10*time.Millisecond
	}
	return wait
}

// loadStatus takes the last status from etcd at the start of a term, so
// that a new leader continues the quiet time, the pending plan's digest
// and what released it, where the last leader left them.
func (d *Daemon) loadStatus(ctx context.Context) {
	// A hung etcd must not keep a new leader from ticking: the status is
	// only the last tick's, and the first tick writes a new one.
	ctx, cancel := context.WithTimeout(ctx, d.cfg.Interval)
	defer cancel()
	st, err := d.cfg.Storage.GetStatus(ctx)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			d.log.Warn("last status not read", "error", err)
		}
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if st.Time.After(d.status.Time) || d.status.Time.IsZero() {
		d.status = st
	}
}
