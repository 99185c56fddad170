package tick

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"

	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// The projections of a decision: the status, the history entry and the
// log. Each is a function of the decision, what acting on it did, and
// what the memory keeps of the last ticks; none decides anything.

// status is the status of decision d acted on with o, given the last
// status (the memory's): what this tick knows, and of what it did not
// get to know, what the last one knew.
func status(d *decision.Decision, o Outcome, last storage.Status, leader string, interval storage.Duration) storage.Status {
	st := storage.Status{Time: d.At, Leader: leader, Interval: interval, Mode: d.Mode, Owner: d.Owner,
		LastSuccess: last.LastSuccess, LastOp: last.LastOp, LastChanges: last.LastChanges, LastChangeCount: last.LastChangeCount,
		Result: d.Result, Reason: d.Reason, Message: d.Message}
	if o.Err != nil {
		st.Result, st.Reason, st.Message = reason.Failing, o.Err.Reason, o.Err.Err.Error()
	}
	written := d.Step != nil && o.Err == nil
	st.LastRun = last.LastRun
	if !d.Idle() {
		st.LastRun = d.At
	}
	switch st.Result {
	case reason.Failing:
		st.ConsecutiveFailures = last.ConsecutiveFailures + 1
	case reason.OK, reason.Planning:
		st.LastSuccess = d.At
	}
	if written && !d.Unchanged {
		st.LastOp, st.LastChanges, st.LastChangeCount = d.Step.Op, planreport.StoredChanges(d.Step.Changes), len(d.Step.Changes)
	}
	st.Repair = repairStatus(d, o, last)
	st.Warnings = storage.BoundWarnings(slices.Concat(repairWarnings(st.Repair), d.Warnings, o.Warnings))
	st.SettingsNotes = settingsNotes(d, last)
	st.Kubernetes = d.Kubernetes
	if st.Mode == decision.ModeInsideCKE {
		// The operator has CKE's ckecli: its commands in its words.
		st.Message = intake.InCKEWords(st.Message)
		for i, w := range st.Warnings {
			st.Warnings[i] = intake.InCKEWords(w)
		}
	}
	st.Message = clip.Text(st.Message, storage.MaxMessage)
	switch {
	case d.Idle():
	case d.Placed && o.Err == nil:
		st.Placements = d.Placements
	default:
		st.Placements = last.Placements
	}
	st.Domains = domainsStatus(d, o, last.Domains)
	modelStatus(&st, last, d, written)
	inventoryStatus(&st, last, d, written)
	changeStatus(&st, last, d, o)
	st.Since = d.At
	if last.Result == st.Result && last.Reason == st.Reason && !last.Since.IsZero() {
		st.Since = last.Since
	}
	return st
}

// modelStatus completes a status with the constraints model in force
// and, in the rate model, the worker rate of the cluster as the tick
// leaves it (docs/models.md), counting the machines the tick gave the
// generator, as rule 7 does (Decision.Rate). A tick that did not get to
// query sabakan or to write its step keeps the last rate, against the
// minimum-workers-rate now in force. One that did not read valid
// constraints (held, disabled, waiting, or failing before or at them)
// keeps the last model and its source, and no rate: the model the
// cluster was last written under, which the hold on unchosen constraints
// reads (CONSTRAINTS_UNCHOSEN), so that no tick between forgets it.
func modelStatus(st *storage.Status, last storage.Status, d *decision.Decision, written bool) {
	if d.Idle() || d.Constraints == nil {
		st.Model, st.ConstraintsSource = last.Model, last.ConstraintsSource
		return
	}
	c := *d.Constraints
	st.Model, st.ConstraintsSource = c.Model(), d.ConstraintsSource
	switch {
	case !c.RateModel():
	case d.Rate != nil && (written || d.Step == nil):
		st.WorkerRate = planreport.Rate(d.Rate)
	case last.WorkerRate != nil:
		r := *last.WorkerRate
		r.Minimum = *c.MinimumWorkersRate
		st.WorkerRate = &r
	}
}

// settingsNotes are what the status says of the settings that their model
// ignores (generator.TemplateNotes, which set-template says when it
// stores the template): of the template and constraints the tick read;
// the last status's when it did not get to read valid ones; none while
// the integration does not run.
func settingsNotes(d *decision.Decision, last storage.Status) []string {
	switch {
	case d.Idle():
		return nil
	case d.Constraints == nil || d.Gathered.Settings == nil || d.Gathered.Settings.Template == nil:
		return last.SettingsNotes
	}
	return storage.BoundWarnings(generator.TemplateNotes(d.Gathered.Settings.Template, *d.Constraints))
}

// inventoryStatus completes a status with the figures of the inventory
// and of the cluster as the tick leaves it (its step's when written); a
// tick that did not get to query sabakan keeps the last ones; a
// disabled or held integration shows none.
func inventoryStatus(st *storage.Status, last storage.Status, d *decision.Decision, written bool) {
	switch {
	case d.Idle():
		return
	case d.Gathered.Machines == nil:
		st.Inventory = last.Inventory
		return
	}
	after := d.Gathered.Settings.Current
	if written {
		after = d.Step.Cluster
	}
	st.Inventory = planreport.Inventory(d.Gathered.Machines, after)
}

// changeStatus completes a status with change management's part. What
// the tick did not get to (the quiet state, the pending plan) keeps its
// last value, so that a failed tick does not restart the quiet time.
func changeStatus(st *storage.Status, last storage.Status, d *decision.Decision, o Outcome) {
	st.ChangeStatus = last.ChangeStatus
	if d.Idle() || d.Quiet == nil {
		return
	}
	c := storage.ChangeStatus{Trigger: d.Gathered.Settings.Trigger, Quiet: d.Quiet, Unhealthy: d.Unhealthy, Release: d.Release,
		Pending: last.Pending}
	if p := d.Pending(); p != nil && o.Err == nil {
		c.Pending = planreport.Pending(p)
	}
	if c.Pending != nil && c.Pending.Steps == 0 {
		c.Release = "" // the released plan is done
	}
	st.ChangeStatus = c
}

// historyEntry is the history's record of a decision's step, written at
// etcd revision rev.
func historyEntry(d *decision.Decision, rev int64) storage.HistoryEntry {
	return storage.HistoryEntry{
		Time:             d.At.UTC(),
		Op:               d.Step.Op,
		Changes:          planreport.StoredChanges(d.Step.Changes),
		ChangeCount:      len(d.Step.Changes),
		TemplateRevision: d.Gathered.Settings.TemplateRevision,
		ClusterRevision:  rev,
		ReleasedBy:       d.Release,
	}
}

// logState names what the log tells of a status: its result and
// reason, and while planning the plan pending. A state is logged when it
// begins; a failure at every tick.
func logState(st storage.Status) string {
	state := st.Result + " " + st.Reason
	if p := st.Pending; st.Result == reason.Planning && p != nil {
		state += fmt.Sprintf(" %d %s", p.Steps, p.NextOp)
	}
	return state
}

// logTick logs a tick that recorded st, given what the log said last:
// each write; a failure at error when it starts, at warning on each
// retry, at info on recovery; every other state (nothing to do,
// planning, held, disabled, waiting) once, when it begins; each warning
// when it appears and when it clears. A settled integration logs
// nothing per tick. A tick of Regenerate (regen: CKE's server's Init)
// only re-renders the cluster with a changed template: when it does
// not, it says that, never "nothing to do", which the next tick may
// contradict with its first write. It returns what the log has said now.
func logTick(log *slog.Logger, d *decision.Decision, o Outcome, st storage.Status, was decision.Logged, lastRepair *storage.RepairStatus, regen bool) decision.Logged {
	now := decision.Logged{State: logState(st), Warnings: was.Warnings}
	op := d.Step != nil && o.Err == nil && !d.Unchanged
	switch {
	case op:
		// A write is an event: the state after it is not "nothing to
		// do" yet.
		now.State += " wrote"
	case regen:
		// Regenerate decides nothing else: the next tick's state is
		// its own.
		now.State += " regenerate"
	}
	switch {
	case !d.Idle() && d.Quiet != nil:
		// The tick got as far as every warning: those that appeared and
		// those that cleared are told.
		now.Warnings = st.Warnings
		tellWarnings(log, was.Warnings, st.Warnings)
	case o.RepairKnown:
		// Only the host's auto-repair is known anew.
		old, cur := repairWarnings(lastRepair), repairWarnings(st.Repair)
		tellWarnings(log, old, cur)
		now.Warnings = append(slices.DeleteFunc(slices.Clone(was.Warnings), func(w string) bool { return slices.Contains(old, w) }), cur...)
	}
	wasFailing := strings.HasPrefix(was.State, reason.Failing+" ")
	switch {
	case st.Result == reason.Failing && !wasFailing:
		log.Error("tick failed", "reason", st.Reason, "error", st.Message)
	case st.Result == reason.Failing:
		log.Warn("tick failed again", "reason", st.Reason, "error", st.Message, "failures", st.ConsecutiveFailures)
	case wasFailing:
		log.Info("tick recovered", "failed_with", strings.TrimPrefix(was.State, reason.Failing+" "), "result", st.Result)
	}
	if op {
		log.Info("cluster updated", "op", d.Step.Op, "changes", planreport.Summarize(d.Step.Changes), "nodes", len(d.Step.Cluster.Nodes))
	}
	if now.State == was.State || st.Result == reason.Failing {
		return now
	}
	switch st.Result {
	case reason.Planning:
		steps := 0
		if st.Pending != nil {
			steps = st.Pending.Steps
		}
		log.Info("tick planned, no cluster written", "reason", st.Reason, "why", st.Message, "pending_steps", steps)
	case reason.Held:
		log.Info("tick held", "reason", st.Reason, "why", st.Message)
	case reason.Disabled:
		log.Info("tick skipped: disabled")
	case reason.Waiting:
		log.Info("waiting for the settings", "reason", st.Reason, "why", st.Message)
	case reason.OK:
		if op {
			break
		}
		nodes := 0
		if c := d.Gathered.Settings.Current; c != nil {
			nodes = len(c.Nodes)
		}
		switch {
		case regen && d.Gathered.Settings.Current == nil:
			log.Info("no cluster to regenerate: the integration's next tick generates the first", "nodes", nodes)
		case regen && d.Gathered.Settings.TemplateChanged():
			log.Info("cluster not regenerated: rendered with the changed template, it is the same", "nodes", nodes)
		case regen:
			log.Info("cluster not regenerated: the template did not change since the cluster was built", "nodes", nodes)
		default:
			log.Info("nothing to do", "nodes", nodes, "machines", len(d.Gathered.Machines))
		}
	}
	return now
}

// tellWarnings logs the warnings of now that were not in was, and
// those of was that are not in now.
func tellWarnings(log *slog.Logger, was, now []string) {
	for _, w := range now {
		if !slices.Contains(was, w) {
			log.Warn("tick warning", "warning", w)
		}
	}
	for _, w := range was {
		if !slices.Contains(now, w) {
			log.Info("tick warning cleared", "warning", w)
		}
	}
}

// nextMemory is the memory m becomes after a decision d acted on with o, which recorded
// st.
func nextMemory(m decision.Memory, d *decision.Decision, o Outcome, st storage.Status) decision.Memory {
	m.Last = st
	m.Trigger, m.Release = st.Trigger, st.Release
	m.QuietHeld = st.Result == reason.Planning && st.Reason == reason.QuietTime
	m.Leader = d.Config
	if g := d.Gathered; g.Settings != nil {
		m.Settings = g.SettingsID
	}
	if d.Idle() || d.Quiet == nil {
		// The tick did not get as far as change management: what it
		// would have learnt stays as it was.
		return m
	}
	m.Inventory = d.Inventory
	if v := d.Gathered.Kubernetes; v != nil {
		m.Kubernetes = v
	} else if !d.Gathered.HostView {
		m.Kubernetes = nil
	}
	if o.PlanKept {
		m.PlanDigest = o.PlanDigest
	}
	if d.Placed && o.Err == nil {
		m.ObservedGroups = nil
		for _, p := range d.Placements {
			if p.ObservedGroup != "" {
				if m.ObservedGroups == nil {
					m.ObservedGroups = map[string]string{}
				}
				m.ObservedGroups[p.Placement] = p.ObservedGroup
			}
		}
	}
	return m
}

// domainsStatus is what the status says of the failure domains of
// decision d acted on with o: the decision's count when it was made and
// the tick wrote what it decided; the last status's when the tick did
// not get to read the inventory or its write failed; nothing while the
// integration does not run.
func domainsStatus(d *decision.Decision, o Outcome, last *storage.FailureDomains) *storage.FailureDomains {
	switch {
	case d.Idle():
		return nil
	case d.Domains == nil || o.Err != nil:
		return last
	}
	return planreport.Domains(d.Domains)
}
