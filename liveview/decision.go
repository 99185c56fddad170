package liveview

import (
	"context"
	"errors"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Preview is what a view asks of the leader's decision.
type Preview struct {
	// WhatIf replaces stored settings (ckegenctl sabakan plan --template,
	// a setting command's --dry-run).
	WhatIf intake.WhatIf
	// Kubernetes is the view of the Nodes to decide with (--kubeconfig);
	// nil: the one the leader last decided with, from its memory.
	Kubernetes kubenodes.Kubernetes
	// RetireWait replaces the leader's retire wait when not 0.
	RetireWait time.Duration
	// MaxSteps bounds the plan (generator.DefaultMaxSteps when 0).
	MaxSteps int
	// SettingsOnly: decide from the settings alone, without asking
	// sabakan, and gated: who writes the cluster now, and why not.
	SettingsOnly bool
	// Assume rehearses a change of the inventory before it happens
	// (ckegenctl sabakan plan --assume, docs/failure-domains.md): the
	// decision is made on sabakan's machines as if each assumption held.
	// It edits sabakan's inventory before the query's conditions on
	// states (decision.Ask.Rehearse), never what a tick gathers.
	Assume []assume.Assumption
	// New are machines that do not exist yet (--assume-new): made up,
	// HEALTHY, added to sabakan's inventory before the query's
	// conditions on states, as Assume's edits are.
	New []assume.New

	// drawing: gather every machine of sabakan too (decision.Ask.Context),
	// for the map.
	drawing bool
}

// Decide gathers, reading only, what the leader's next tick reads (the
// settings and the cluster in one etcd transaction, sabakan's answer,
// the policy's metrics, the Kubernetes view), and decides with the
// tick's own code as the leader would now: with its memory (the quiet
// time's inventory, the trigger last seen) and its options (its mode and
// retire wait, CKE's pace), unless told otherwise. The decision is
// ungated: where the leader holds on a switch, the owner, CKE's pace or
// a refused change setting, it still carries the plan the leader would
// follow once it runs, and Decision.Gated says what holds it. It is an
// error when no plan can be made: etcd, sabakan, a metric provider or
// Kubernetes do not answer, or a setting the generator needs is missing
// or refused (said as ckegenctl says it, with the what-if flag that can
// stand in for it); an etcd failure is an *EtcdError.
func (r *Reader) Decide(ctx context.Context, p Preview) (*decision.Decision, error) {
	d, _, err := r.Rehearse(ctx, p)
	return d, err
}

// Rehearse is Decide, with what each of p.Assume matched: how many
// machines of sabakan's inventory, and how many of them the query leaves
// out once they have the assumed state. An assumption that matches no
// machine is an error that names it (assume.Inventory).
func (r *Reader) Rehearse(ctx context.Context, p Preview) (*decision.Decision, []assume.Match, error) {
	d, matches, err := r.decide(ctx, p)
	switch {
	case err != nil:
		return nil, nil, err
	case p.SettingsOnly, d.Plan != nil:
		return d, matches, nil
	}
	return nil, nil, whyNot(d, true)
}

// decide gathers and decides as the leader would (Rehearse); it fails
// only when etcd does not answer (an *EtcdError) or an assumption matches
// no machine (an *AssumeError).
func (r *Reader) decide(ctx context.Context, p Preview) (*decision.Decision, []assume.Match, error) {
	mctx, cancel := context.WithTimeout(ctx, r.opts.EtcdTimeout)
	mem, err := ReadMemory(mctx, r.st)
	cancel()
	switch {
	case errors.Is(err, storage.ErrInvalid):
		// The leader's memory is the leader's: one that does not parse
		// gives no memory, as it gives the leader none.
		mem = decision.Memory{}
	case err != nil:
		return nil, nil, &EtcdError{err}
	}
	o := p.config(mem)
	kube := p.Kubernetes
	if kube == nil {
		kube = leaderView(mem)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ask := decision.Ask{WhatIf: p.WhatIf, Last: mem.Last, Kubernetes: kube, SettingsOnly: p.SettingsOnly, Config: o, PastGates: !p.SettingsOnly, Context: p.drawing}
	var matches []assume.Match
	if len(p.Assume) > 0 || len(p.New) > 0 {
		// The assumptions change sabakan's inventory before the query's
		// conditions on states, as sabakan would once told.
		ask.Rehearse = func(held []machine.Machine, states sabakan.StateFilter, pol *policy.Policy) ([]machine.Machine, error) {
			answer, m, err := assume.Inventory(held, p.Assume, states)
			if err != nil {
				return nil, &AssumeError{err}
			}
			if len(p.New) > 0 {
				for i := range held {
					if err := assume.RefuseMadeUp(held[i].Spec.Serial, held[i].Address()); err != nil {
						return nil, &AssumeError{err}
					}
				}
				made, mm := assume.MakeUp(p.New, assume.DefaultLifetime)
				real := make([]*machine.Machine, len(answer))
				for i := range answer {
					real[i] = &answer[i]
				}
				racked := pol.FailureDomain().Racked(real)
				for i := range made {
					if x := racked(&made[i]); states.Keeps(x.Status.State) {
						answer = append(answer, *x)
					}
				}
				m = append(m, mm...)
			}
			matches = m
			return answer, nil
		}
	}
	g := r.gatherer().Gather(ctx, "", ask)
	var ae *AssumeError
	switch {
	case g.Settings == nil:
		return nil, nil, &EtcdError{g.Failure}
	case g.Failure != nil && errors.As(g.Failure.Err, &ae):
		return nil, nil, ae
	}
	return decision.Decide(g, mem), matches, nil
}

// whyNot says why decision d has nothing to show: what the gather could
// not read, a setting the generator needs that is missing or refused
// (with the what-if flag that can stand in for it when flags), or the
// decision's message.
func whyNot(d *decision.Decision, flags bool) error {
	g := d.Gathered
	if g.Failure != nil {
		return g.Failure.Err
	}
	for _, row := range intake.Table {
		if ref := g.Refusals[row.Setting]; ref != nil && row.Kind == intake.Input {
			return intake.Explained(ref, flags)
		}
	}
	return errors.New(d.Message)
}

// config is the leader's configuration, from its memory, as p changes
// it.
func (p *Preview) config(mem decision.Memory) decision.Config {
	c := mem.Leader
	c.MaxSteps = p.MaxSteps
	if p.RetireWait != 0 {
		c.RetireWait = storage.Duration(p.RetireWait)
	}
	return c.WithDefaults()
}

// AssumeError is an assumption of Preview.Assume that matches no machine
// of sabakan's inventory.
type AssumeError struct{ Err error }

func (e *AssumeError) Error() string { return e.Err.Error() }
func (e *AssumeError) Unwrap() error { return e.Err }

// gatherer is the reader's gatherer, made once; r.mu must be held.
func (r *Reader) gatherer() *decision.Gatherer {
	if r.gather == nil {
		r.gather = decision.NewGatherer(r.st, r.opts.Sabakan, r.opts.Now)
		r.gather.EtcdTimeout = r.opts.EtcdTimeout
	}
	return r.gather
}

// Notes are what keeps the leader from following a decision's plan now,
// in the words of its status: the rungs an ungated decision went past
// (a switch, the owner, CKE's pace, a refused setting), then the rung
// the decision itself holds on (the quiet time, the trigger, the
// circuit breaker).
func Notes(d *decision.Decision) []string {
	var notes []string
	for _, h := range d.Gated {
		notes = append(notes, h.Message)
	}
	if h := d.Hold; h != nil && d.Result != reason.Waiting {
		notes = append(notes, h.Message)
	}
	for _, h := range d.Also {
		notes = append(notes, h.Message)
	}
	return notes
}

// Document is the plan of a decision for people and programs: its steps
// from the cluster as read, and the view of Kubernetes it was made with.
func Document(d *decision.Decision) *planreport.Document {
	doc := planreport.New(d.Plan)
	doc.SetModel(d.Gathered.Settings.Constraints, len(d.Gathered.Machines))
	doc.View = d.Gathered.Kubernetes.Describe(d.At)
	return doc
}

// Status is the last tick's status as the views show it: the record,
// who acts now (package actor: the record cannot say it of itself), and
// Notes on what the record cannot say of itself at the time it is shown
// (Silence: that its host stopped calling ckegen, and why).
type Status struct {
	storage.Status
	Acting *Actor `json:"acting,omitempty"`
	// Writes says who writes the cluster now (Writes).
	Writes string   `json:"writes,omitempty"`
	Notes  []string `json:"notes,omitempty"`
}

// ReadStatus reads the last tick's status, CKE's status key, who acts
// and who writes (the leader's decision on the settings alone), and
// notes at now what the status cannot say of itself. A status never
// recorded is storage.ErrNotFound.
func ReadStatus(ctx context.Context, st storage.Storage, now time.Time) (Status, error) {
	s, err := st.GetStatus(ctx)
	if err != nil {
		return Status{}, err
	}
	own, _, _, err := intake.Load(ctx, st, intake.SettingOwner)
	if err != nil {
		return Status{}, err
	}
	who, err := ReadActor(ctx, st, own.Own, now)
	if err != nil {
		return Status{}, err
	}
	d, err := NewReader(st, Options{Now: func() time.Time { return now }}).Decide(ctx, Preview{SettingsOnly: true})
	if err != nil {
		return Status{}, err
	}
	v := Status{Status: s, Acting: &who, Writes: Writes(d, who)}
	if n := Silence(s, own.Own.CKEStatus, who.Cause(own.Own.CKEStatus), now); n != "" {
		v.Notes = append(v.Notes, n)
	}
	return v, nil
}
