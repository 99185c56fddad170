package decision

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// Decision is what one tick decides, and every view of it reads: the
// status, the history entry, the log line, the metrics, the memory, the
// stored plan, ckegenctl's plan and owner, and the page. Decide makes
// it; nothing else decides.
type Decision struct {
	// At is when it was made; Config how.
	At     time.Time
	Config Config
	// Mode and Owner are how ckegen runs and which integration owns the
	// cluster ("" when the settings were not read).
	Mode, Owner string

	// Result, Reason and Message are what the decision is, in the
	// status's words: ok (a step to write, or nothing to do), held,
	// disabled, waiting, planning or failing; Err is a failure with its
	// cause.
	Result, Reason, Message string
	Err                     *reason.Error
	// Hold is the rung of the hold ladder the tick holds on (nil: none);
	// Also the rungs after it that would hold it too (the circuit
	// breaker, while the quiet time or the trigger holds).
	Hold *Hold
	Also []Hold
	// Gated are the rungs an ungated decision (Ask.PastGates) went
	// past: what holds the leader's tick now.
	Gated []Hold
	// Step is the change the tick writes (nil: none), and Data its
	// cluster as written. Unchanged: the step leaves the cluster as it
	// is (a Regenerate that renders every node as before): its write
	// records the template revision the cluster is now built from, and
	// is no op (no history entry, no last op).
	Step      *generator.Result
	Data      []byte
	Unchanged bool
	// Plan is the plan from the cluster as read: the ticks the leader
	// would make if nothing else changed, Step first when there is one;
	// nil when none was computed.
	Plan *generator.Plan
	// Warnings are what the operator should fix although the tick went
	// on.
	Warnings []string

	// What the decision was made from: the gather, and the world it
	// decided on (nil: the inventory was not read), whose Plan is the
	// plan's loop and every what-if's.
	Gathered *Gathered
	World    *world.World
	// Kubernetes is what the status says of the view.
	Kubernetes *storage.KubernetesStatus
	// Quiet is the inventory's stillness (nil: not evaluated), with the
	// time left (QuietRemaining) and what the memory keeps of it.
	Quiet          *storage.QuietStatus
	QuietRemaining time.Duration
	Inventory      InventoryMemory
	// Unhealthy counts the unhealthy nodes against max-unhealthy (nil:
	// no limit); Release says what released the plan being applied.
	Unhealthy *storage.UnhealthyStatus
	Release   string
	// Placed: the placements were counted, as Placements (nil without a
	// policy), in the cluster as the tick leaves it.
	Placed     bool
	Placements []storage.PlacementStatus
	// Domains are the control planes of the cluster as the tick leaves
	// it by failure domain (nil: the inventory was not read), and Rate
	// its worker rate in the rate model (nil: the count model, or the
	// inventory was not read), counting the machines the tick gave the
	// generator, as rule 7 does.
	Domains *failuredomain.Census
	Rate    *generator.WorkerRate
	// Constraints are the valid constraints in force (nil: not read),
	// from ConstraintsSource.
	Constraints       *constraints.Constraints
	ConstraintsSource string

	// observed is the memory's group of each placement's last pick.
	observed map[string]string
}

// Idle reports whether the integration did not run: disabled, held
// back beside a CKE server, or waiting for its settings.
func (d *Decision) Idle() bool {
	return d.Result == reason.Held || d.Result == reason.Disabled || d.Result == reason.Waiting
}

// Decide makes the decision of a tick from what was gathered, the
// memory of the last ticks (quiet time, trigger, observed groups) and
// the options. It is a pure function: no I/O, no clock.
//
// It climbs the hold ladder: a failure to gather; the switches and the
// owner (disabled, held); CKE's pace (held); a setting missing (waiting)
// or refused (failing); then, with the inventory, the quiet time and the
// trigger (planning: nothing written, the plan kept), the circuit
// breaker (state taints only); then the generator's step and the plan
// from the cluster as read. It reads only g and mem: the gather climbed
// the rungs decided from the settings alone to know whether to ask
// sabakan, and Decide climbs them again on what it gathered; the
// configuration is the one the gather was asked with (Ask.Config).
func Decide(g *Gathered, mem Memory) *Decision {
	d, o := newDecision(g), g.Config
	if g.Settings == nil {
		// The gather stopped before the settings were read.
		return d.fail(g.Failure)
	}
	if d.climbSettings() {
		return d
	}
	s := g.Settings
	d.observed = mem.ObservedGroups
	c := s.Constraints
	d.Constraints, d.ConstraintsSource = &c, storage.ConstraintsDefault
	if s.ConstraintsStored {
		d.ConstraintsSource = storage.ConstraintsStored
	}
	d.Warnings = append(d.Warnings, g.Warnings...)
	d.Kubernetes = g.Kubernetes.Status(g.HostView, generator.Tolerations(s.Template))
	switch {
	case g.Failure != nil:
		return d.fail(g.Failure)
	case !g.Asked:
		d.Message = "sabakan was not asked"
		return d
	}
	in := g.Input(time.Duration(o.RetireWait))
	d.World = g.World(in)
	defer d.countDomains(in) // on every path from here: the cluster as the decision leaves it

	q := evaluateQuiet(g.Machines, s.QuietTime, mem.Inventory, g.Now)
	d.Quiet, d.QuietRemaining, d.Inventory = &q.status, q.remaining, q.inventory
	var overLimit string
	d.Unhealthy, overLimit = breaker(d.World)
	switch {
	case !q.quiet:
		msg := q.message
		if s.Trigger == intake.TriggerPlanning {
			msg += "; the trigger is planning as well"
		}
		d.Hold = &Hold{Rung: RungQuiet, Reason: reason.QuietTime, Message: msg}
	case s.Trigger == intake.TriggerPlanning:
		d.Hold = &Hold{Rung: RungTrigger, Message: "the trigger is planning: ckegenctl sabakan trigger schedule applies the plan"}
	}
	if d.Hold != nil {
		return d.planning(in, overLimit)
	}
	d.Release = releasedBy(mem, s)
	if overLimit != "" {
		d.Hold = &Hold{Rung: RungBreaker, Reason: reason.TooManyUnhealthy, Message: overLimit + ": " + world.BreakerHolds}
	}
	return d.decideStep(in)
}

// decideStep decides the step of a tick that goes on past the hold
// ladder (or, over max-unhealthy, its state taints), checks it, and keeps
// the plan from the cluster as read, step first.
func (d *Decision) decideStep(in generator.Input) *Decision {
	step, settled, err := d.first(in)
	if err == nil && step != nil {
		if err := d.check(step); err != nil {
			// Nothing to write: no plan and no placements from a cluster
			// that will not be.
			return d.fail(err)
		}
	}
	if err != nil {
		d.fail(err)
		d.count(in)
		d.keepPlan(in, nil, nil)
		return d
	}
	d.Result, d.Step = reason.OK, step
	if d.Hold != nil {
		// Over max-unhealthy: the state taints, if any, and the failure
		// that says why nothing else changes.
		msg := d.Hold.Message
		if step != nil {
			msg += fmt.Sprintf("; state taints written (%s)", words.Count(len(step.Changes), "change", "changes"))
		}
		d.Result, d.Reason, d.Message, d.Err = reason.Failing, reason.TooManyUnhealthy, msg, reason.Fail(reason.TooManyUnhealthy, errors.New(msg))
	}
	d.count(in)
	d.keepPlan(in, step, settled)
	if step == nil && settled == nil && d.Hold == nil {
		// Nothing asked of this tick (generator.Init): the warnings in
		// force are the plan's.
		d.planWarnings()
	}
	return d
}

// planWarnings adds the warnings of the plan's first tick to a decision
// that made no tick's decision of its own (held, or nothing asked of
// it by generator.Init): the warnings in force are those of the tick the
// leader would make.
func (d *Decision) planWarnings() {
	switch p := d.Plan; {
	case p == nil:
	case len(p.Steps) > 0:
		d.Warnings = append(d.Warnings, p.Steps[0].Warnings...)
	default:
		d.Warnings = append(d.Warnings, p.Warnings...)
	}
}

// climbSettings climbs the ladder's rungs decided from the settings
// alone, before sabakan is asked: a failure to read etcd, a switch or
// the owner refused, the gate (disabled, held), a missing setting
// (waiting), a refused one (failing), constraints that name no model
// after the count model (held, unchosenHold). It reports whether one of them
// decided the tick. Gather climbs them, once, and stops where they
// decide.
func (d *Decision) climbSettings() bool {
	g, o := d.Gathered, d.Config
	s := g.Settings
	ref := g.Refused
	switch {
	case ref != nil && intake.RowOf(ref.Setting).Kind == intake.Switch && !g.PastGates:
		d.fail(reason.Fail(ref.Reason, ref))
		return true
	case ref != nil && intake.RowOf(ref.Setting).Kind == intake.Switch:
		// The ownership cannot be read: no gate to climb.
		d.gated(RungOwner, ref)
	default:
		if h := Gate(s.Own, o.Mode, g.HasCluster, g.Now, time.Duration(o.CKEStatusMaxAge)); h != nil && g.PastGates {
			d.Gated = append(d.Gated, *h)
		} else if h != nil {
			d.Hold = h
			d.Result, d.Reason, d.Message = reason.Held, h.Reason, h.Message
			if h.Rung == RungSwitch {
				d.Result = reason.Disabled
			}
			return true
		}
	}
	for _, row := range intake.Table {
		ref := g.Refusals[row.Setting]
		switch {
		case ref == nil || row.Kind == intake.Switch:
		case ref.Missing && reason.ResultOf(ref.Reason) == reason.Waiting:
			d.Hold = &Hold{Rung: RungSettings, Reason: ref.Reason, Message: ref.Error()}
			d.Result, d.Reason, d.Message = reason.Waiting, ref.Reason, ref.Error()
			return true
		case row.Kind == intake.Input || !g.PastGates:
			d.fail(reason.Fail(ref.Reason, ref))
			return true
		default:
			d.gated(RungSettings, ref)
		}
	}
	if g.Refusals[intake.SettingConstraints] != nil {
		return false
	}
	if h := unchosenHold(s.Constraints, s.ConstraintsStored, g.LastModel, g.LastConstraintsSource); h != nil {
		d.Hold = h
		d.Result, d.Reason, d.Message = reason.Held, h.Reason, h.Message
		return true
	}
	return false
}

// gated records a refused setting an ungated decision went past.
func (d *Decision) gated(r Rung, ref *intake.Refusal) {
	d.Gated = append(d.Gated, Hold{Rung: r, Reason: ref.Reason, Message: ref.Explain()})
}

func newDecision(g *Gathered) *Decision {
	d := &Decision{At: g.Now, Config: g.Config, Gathered: g}
	if s := g.Settings; s != nil && (g.Refused == nil || intake.RowOf(g.Refused.Setting).Kind != intake.Switch) {
		d.Mode, d.Owner = ModeOf(g.Config.Mode, s.Own), s.Own.Owner
	}
	return d
}

// fail makes d a failure with err's reason.
func (d *Decision) fail(err error) *Decision {
	var te *reason.Error
	if !errors.As(err, &te) {
		te = reason.Fail(reason.EtcdError, err)
	}
	d.Result, d.Reason, d.Message, d.Err = reason.Failing, te.Reason, te.Err.Error(), te
	return d
}

// first is the change the tick makes, when it makes one: the generator's
// decision the host asked for (Ask.Generate), or over max-unhealthy the
// world's tick (world.World.Tick: the state taints alone, or its hold
// when there are none). nil when there is nothing to do; settled, with the
// warnings of that tick, when the generator says nothing is left to do
// (generator.ErrNothingToDo: the plan from here is settled).
func (d *Decision) first(in generator.Input) (*generator.Result, []string, error) {
	s := d.Gathered.Settings
	taints := d.Hold != nil && d.Hold.Rung == RungBreaker
	var res *generator.Result
	var err error
	if taints {
		res, err = d.World.Tick(in, s.TemplateChanged())
	} else {
		res, err = d.Gathered.Generate(in, s.TemplateChanged())
	}
	var warnings []string
	if res != nil {
		warnings = res.Warnings
		d.Warnings = append(d.Warnings, warnings...)
	}
	var held *generator.Held
	switch {
	case errors.As(err, &held):
		return nil, nil, nil
	case errors.Is(err, generator.ErrNothingToDo):
		return nil, append([]string{}, warnings...), nil
	case err != nil:
		return nil, nil, reason.Fail(generator.Refusal(err), err)
	}
	return res, nil, nil
}

// check marshals the step's cluster and refuses what etcd or CKE would
// refuse: a write request over etcd's limit (CLUSTER_TOO_LARGE) and a
// cluster CKE v1.35.4's validation refuses (INVALID_CLUSTER).
func (d *Decision) check(step *generator.Result) error {
	data, err := step.Cluster.AppendJSON(nil) // json.Marshal's bytes, without reflection
	if err != nil {
		return reason.Fail(reason.GenerationError, err)
	}
	o := d.Config
	if size := len(data) + o.WriteOverhead; o.MaxClusterBytes > 0 && size > o.MaxClusterBytes {
		return reason.Fail(reason.ClusterTooLarge, tooLarge(len(data), size, len(step.Cluster.Nodes), o.MaxClusterBytes, d.Gathered.Settings.Constraints))
	}
	if err := step.Cluster.Validate(); err != nil {
		return reason.Fail(reason.InvalidCluster, fmt.Errorf("the generated cluster would be refused by CKE: %w", err))
	}
	d.Data = data
	if cur := d.Gathered.Settings.Current; len(step.Changes) == 0 && cur != nil {
		was, err := cur.AppendJSON(nil)
		d.Unchanged = err == nil && bytes.Equal(was, data)
	}
	return nil
}

// planning is the decision of a tick held by the quiet time or the
// trigger: nothing is written, and the plan from the cluster as read is
// kept. A plan that cannot be computed is the tick's failure, since
// keeping it was the tick's work.
func (d *Decision) planning(in generator.Input, overLimit string) *Decision {
	d.count(in)
	w := d.World
	if d.Hold.Rung == RungQuiet && d.QuietRemaining > 0 {
		// The leader's next step comes at the end of the quiet time: the
		// plan starts there, on the world's clock.
		at := w.After(d.QuietRemaining)
		w = &at
	}
	p, err := w.Plan(nil, d.Config.MaxSteps)
	if err != nil {
		return d.fail(reason.Fail(reason.GenerationError, fmt.Errorf("plan: %w", err)))
	}
	switch {
	case len(p.Steps) == 0:
	case d.Hold.Rung == RungQuiet:
		// The first step waits for the end of the quiet time.
		p.Steps[0].Wait = &generator.Wait{Until: d.At.Add(d.QuietRemaining), Reason: fmt.Sprintf("the quiet time (%s)", d.Gathered.Settings.QuietTime)}
	case d.Hold.Rung == RungTrigger:
		// The steps are planned as if applied; the first waits for the
		// operator.
		p.Steps[0].Wait = &generator.Wait{Reason: "the trigger set to schedule (ckegenctl sabakan trigger schedule)"}
	}
	d.Plan = p
	d.planWarnings()
	d.Result, d.Reason = reason.Planning, d.Hold.Reason
	msg := d.Hold.Message
	if overLimit != "" {
		d.Reason = reason.TooManyUnhealthy
		msg += "; also " + overLimit
		d.Also = append(d.Also, Hold{Rung: RungBreaker, Reason: reason.TooManyUnhealthy, Message: overLimit + ": " + world.BreakerHolds})
	}
	switch {
	case len(p.Steps) > 0:
		msg += fmt.Sprintf("; %s pending, next: %s", words.Count(len(p.Steps), "step", "steps"), p.Steps[0].Op)
	case p.Result == generator.PlanSettled:
		msg += "; nothing pending"
	}
	d.Message = msg
	return d
}

// keepPlan computes the plan from the cluster as read, step first: when
// the tick writes a step, the plan is the step and the plan from its
// cluster. settled (not nil: the warnings of that tick) says the usual
// decision had nothing to do, which is the plan's first tick already. A
// plan that cannot be computed is a warning: the decision is made
// already.
func (d *Decision) keepPlan(in generator.Input, step *generator.Result, settled []string) {
	if settled != nil {
		// Nothing to do now; a worker may wait for the retire wait.
		p, err := d.World.WaitOut(generator.Settled(in.Current, settled), d.Config.MaxSteps)
		if err != nil {
			d.Warnings = append(d.Warnings, "plan: "+err.Error())
			return
		}
		d.Plan = p
		return
	}
	p, err := d.World.Plan(step, d.Config.MaxSteps)
	if err != nil {
		d.Warnings = append(d.Warnings, "plan: "+err.Error())
		return
	}
	d.Plan = p
}

// WhatIf is the world the decision was made on, for a what-if to start
// from (resilience, the forecast); an error when the decision did not
// get as far as the inventory.
func (d *Decision) WhatIf() (*world.World, error) {
	if d.World == nil {
		return nil, fmt.Errorf("the decision did not read the inventory (%s %s: %s): nothing to make a what-if of", d.Result, d.Reason, d.Message)
	}
	return d.World, nil
}

// Pending is the plan from the cluster as the tick leaves it: the plan
// without the step the tick writes (nil: none computed).
func (d *Decision) Pending() *generator.Plan {
	p := d.Plan
	if p == nil || d.Step == nil || len(p.Steps) == 0 {
		return p
	}
	return &generator.Plan{Result: p.Result, Err: p.Err, Reason: p.Reason, Message: p.Message, Steps: p.Steps[1:], Start: d.Step.Cluster, Cluster: p.Cluster, Warnings: p.Warnings}
}

// count records the placements of the policy in the cluster as the tick
// leaves it, and the group of each one's last pick (docs/design.md
// 12.4).
func (d *Decision) count(in generator.Input) {
	d.Placed = true
	if in.Policy == nil {
		return
	}
	var changes []generator.Change
	if d.Step != nil {
		in.Current, changes = d.Step.Cluster, d.Step.Changes
	}
	counts, err := generator.Placements(in)
	if err != nil {
		d.Warnings = append(d.Warnings, "placements not counted: "+err.Error())
		d.Placed = false
		return
	}
	d.Placements = planreport.Placements(d.observed, counts, changes)
}

// releasedBy says what released the plan a tick in schedule applies: the
// trigger set to schedule since the last tick, or the end of the quiet
// time the last tick waited for; otherwise what released the plan still
// being applied.
func releasedBy(mem Memory, s *intake.Settings) string {
	switch {
	case mem.Trigger == intake.TriggerPlanning && s.Trigger == intake.TriggerSchedule:
		return fmt.Sprintf("the trigger set to schedule (sabakan/trigger revision %d)", s.TriggerRevision)
	case mem.QuietHeld:
		since := "-"
		if !mem.Inventory.Since.IsZero() {
			since = mem.Inventory.Since.UTC().Format(time.RFC3339)
		}
		return fmt.Sprintf("the end of the quiet time %s (the inventory unchanged since %s)", s.QuietTime, since)
	}
	return mem.Release
}

// tooLarge is the error of a cluster of data bytes of JSON and nodes
// nodes whose write request (size bytes) is over the limit: how many
// nodes of this size fit, the flags to raise, and what else makes the
// cluster smaller in the model in force.
func tooLarge(data, size, nodes, limit int, c constraints.Constraints) error {
	perNode := float64(data) / float64(max(nodes, 1))
	fit := int(float64(limit-(size-data)) / perNode)
	smaller := "or ask for fewer workers (ckegenctl constraints set minimum-workers N)"
	if c.RateModel() {
		smaller = "or, as the rate model (minimum-workers-rate) makes every HEALTHY machine a worker template accepts a node, " +
			"query fewer machines (ckegenctl sabakan set-variables)"
	}
	return fmt.Errorf("the cluster is %d bytes of JSON for %d nodes (%.0f bytes a node), and its write %d bytes, over etcd's request size limit of %s: "+
		"about %d nodes fit, this cluster has %d; raise etcd's --max-request-bytes and ckegen's --max-cluster-bytes together to at least %d bytes, %s",
		data, nodes, perNode, size, words.Bytes(limit), fit, nodes, size, smaller)
}
