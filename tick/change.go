package tick

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// changeOutcome is what change management made of a tick.
type changeOutcome struct {
	change storage.ChangeStatus
	// held says why the tick wrote nothing although it could have: the
	// trigger is planning, or the inventory is not quiet ("": not held).
	held       string
	heldReason string // reason.QuietTime, or "" for the trigger
	// overLimit says how many nodes are unhealthy when more than
	// max-unhealthy allows ("": not over the limit).
	overLimit      string
	quietRemaining time.Duration
	// inventory is the set of serials of this tick and since when it is
	// unchanged, for the memory.
	inventory InventoryMemory
	// settled: the tick's decision was the usual one (generator.Tick) and
	// had nothing to do, with settledWarnings: the plan from here is
	// settled, and is not computed again.
	settled         bool
	settledWarnings []string
	// planDigest identifies the plan stored in sabakan/plan after the
	// tick; planKept: the tick got as far as keeping the plan.
	planDigest string
	planKept   bool
}

// manage makes the tick's decision under change management,
// in this order: quiet time and the trigger hold every write (the plan is
// computed and stored instead); too many unhealthy nodes restrict the
// decision to state taints; otherwise the decision is the usual one. It
// returns the result to write, or nil.
func (s *Step) manage(set *settings, in generator.Input, out *outcome) (*generator.Result, error) {
	c := &out.change
	c.Trigger = set.Trigger
	q := evaluateQuiet(in.Machines, set.QuietTime, s.memory.Inventory, s.cfg.Now())
	c.Quiet = &q.status
	out.quietRemaining, out.inventory = q.remaining, q.inventory
	c.Unhealthy, out.overLimit = Breaker(set.Change, in)

	switch {
	case !q.quiet:
		out.held, out.heldReason = q.message, reason.QuietTime
		if set.Trigger == intake.TriggerPlanning {
			out.held += "; the trigger is planning as well"
		}
	case set.Trigger == intake.TriggerPlanning:
		out.held = TriggerHeld
	}
	if out.held != "" {
		return nil, nil
	}
	set.release = releasedBy(s.memory, set)
	c.Release = set.release
	if out.overLimit != "" {
		res, err := generator.Taints(in)
		if res != nil {
			out.warnings = append(out.warnings, res.Warnings...)
		}
		if errors.Is(err, generator.ErrNothingToDo) {
			return nil, nil
		}
		if err != nil {
			return nil, fail(reason.GenerationError, err)
		}
		return res, nil
	}
	res, warnings, err := s.decide(set, in)
	out.warnings = append(out.warnings, warnings...)
	if res == nil && err == nil && !s.regenerateOnly {
		out.settled, out.settledWarnings = true, warnings
	}
	return res, err
}

// releasedBy says what released the plan a tick in schedule applies: the
// trigger set to schedule since the last tick, or the end of the quiet
// time the last tick waited for; otherwise what released the plan still
// being applied.
func releasedBy(mem Memory, set *settings) string {
	switch {
	case mem.Trigger == intake.TriggerPlanning && set.Trigger == intake.TriggerSchedule:
		return fmt.Sprintf("the trigger set to schedule (sabakan/trigger revision %d)", set.TriggerRevision)
	case mem.QuietHeld:
		since := "-"
		if !mem.Inventory.Since.IsZero() {
			since = mem.Inventory.Since.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("the end of the quiet time %s (the inventory unchanged since %s)", set.QuietTime, since)
	}
	return mem.Release
}

// TriggerHeld is what a tick held by the trigger says.
const TriggerHeld = "the trigger is planning: ckegenctl sabakan trigger schedule applies the plan"

// Breaker is the circuit breaker (docs/design.md 11.4) on the input of a
// tick: the unhealthy nodes of the cluster counted against max-unhealthy
// (nil without a limit or a cluster) and, when there are more than it
// allows, what the status says of them ("": within the limit). The tick
// and ckegenctl sabakan plan's notes both ask it.
func Breaker(c intake.Change, in generator.Input) (*storage.UnhealthyStatus, string) {
	lim := c.MaxUnhealthy
	if lim == nil || in.Current == nil {
		return nil, ""
	}
	bad := generator.Unhealthy(in)
	nodes := len(in.Current.Nodes)
	u := &storage.UnhealthyStatus{Count: len(bad), Nodes: nodes, MaxUnhealthy: lim.String(),
		Limit: lim.Limit(nodes), Addresses: bad[:min(len(bad), storage.MaxChanges)]}
	if u.Count <= u.Limit {
		return u, ""
	}
	shown := bad[:min(len(bad), maxLastMoved)]
	names := strings.Join(shown, ", ")
	if len(bad) > len(shown) {
		names += fmt.Sprintf(" and %d more", len(bad)-len(shown))
	}
	return u, fmt.Sprintf("%d of %d nodes are unhealthy (%s), more than max-unhealthy %s allows (%d)",
		u.Count, u.Nodes, names, u.MaxUnhealthy, u.Limit)
}

// BreakerHolds is what the breaker holds back while it is over the limit.
const BreakerHolds = "no node is added, removed, promoted or demoted until fewer are"

// tooManyUnhealthy is the failure a tick over max-unhealthy ends with,
// after it wrote the state taints, if any.
func (o *outcome) tooManyUnhealthy() error {
	if o.overLimit == "" || o.held != "" {
		return nil
	}
	msg := o.overLimit + ": " + BreakerHolds
	if o.result != nil {
		msg += fmt.Sprintf("; state taints written (%s)", plural(len(o.result.Changes), "change", "changes"))
	}
	return fail(reason.TooManyUnhealthy, errors.New(msg))
}

// keepPlan computes the plan from the cluster as the tick leaves it and
// stores it in sabakan/plan: at every tick that was held (planning, quiet
// time), otherwise only when it differs from the stored one. A plan that
// cannot be stored is a warning. A plan that cannot be computed fails a
// held tick, whose work it was, and is a warning otherwise (the decision
// has failed already or is done).
func (s *Step) keepPlan(ctx context.Context, leaderKey string, set *settings, in generator.Input, out *outcome, clusterRev int64) error {
	templateChanged := set.TemplateChanged()
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
		return fail(reason.GenerationError, fmt.Errorf("plan: %w", err))
	}
	if err != nil {
		out.warnings = append(out.warnings, "plan: "+err.Error())
		return nil
	}
	doc := planreport.New(p)
	doc.SetModel(set.Constraints, len(in.Machines))
	stored := planreport.Stored{Document: *doc, TemplateRevision: set.TemplateRevision, ClusterRevision: clusterRev, Trigger: set.Trigger}
	pending := &storage.PlanSummary{Result: p.Result, Steps: len(p.Steps)}
	if p.Err != nil {
		pending.Error = p.Err.Error()
	}
	if len(p.Steps) > 0 {
		next := p.Steps[0]
		pending.NextOp, pending.NextChanges, pending.NextChangeCount = next.Op, statusChanges(next.Changes), len(next.Changes)
	}
	out.change.Pending, out.planKept, out.planDigest = pending, true, s.memory.PlanDigest
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
	if out.held == "" && out.planDigest == digest {
		return nil
	}
	stored.ComputedAt = s.cfg.Now().UTC()
	data, err := planreport.MarshalStored(stored, s.cfg.MaxClusterBytes)
	if err == nil {
		err = s.cfg.Storage.PutPlan(ctx, leaderKey, data)
	}
	if err != nil {
		out.warnings = append(out.warnings, fmt.Sprintf("plan not stored in %s: %v", storage.KeySabakanPlan, err))
		return nil
	}
	out.planDigest = digest
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
func changeStatus(st *storage.Status, last Shown, out *outcome, err error) {
	st.ChangeStatus = last.Change
	if out == nil || out.idle() || out.change.Trigger == "" {
		return
	}
	c := out.change
	if c.Pending == nil {
		c.Pending = last.Change.Pending
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
	st.Result, st.Reason = reason.Planning, out.heldReason
	msg := out.held
	if out.overLimit != "" {
		st.Reason = reason.TooManyUnhealthy
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
