package liveview

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// PlanInput is what a plan is computed from: the generator's input as the
// daemon's next tick would see it, what-if settings applied.
type PlanInput struct {
	Input generator.Input
	// TemplateChanged: the template is not the one the cluster was built
	// from (a what-if template always counts as changed), so the first
	// tick may regenerate.
	TemplateChanged bool
	// TemplateRevision is the stored template's mod revision.
	TemplateRevision int64
	// ClusterRevision is the stored cluster's mod revision (0: none).
	ClusterRevision int64
	// Warnings are for the operator: machines ignored or changed,
	// constraints that work but look wrong.
	Warnings []string
	// Settings are the settings the plan was computed from, read from
	// etcd in one transaction, and Held the refusals of those that would
	// hold the daemon (a switch, the owner, change management) rather
	// than change the plan.
	Settings *intake.Settings
	Held     []*intake.Refusal
}

// PlanInput reads, without writing anything, what the daemon's next tick
// reads: the settings and the cluster from etcd (one transaction), and the
// machines from sabakan with the query variables (one query, not cached)
// and the policy's metrics. The what-if settings replace the stored ones.
// A stored setting that is missing or invalid is an error that says which
// and how to set it; an etcd failure is an *EtcdError.
func (r *Reader) PlanInput(ctx context.Context, w intake.WhatIf, retireWait time.Duration) (*PlanInput, error) {
	snap, err := r.snapshot(ctx)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, refused := r.settings.ReadEach(snap, w)
	if ref := intake.First(refused, intake.Input); ref != nil {
		return nil, intake.Explained(ref, true)
	}
	var held []*intake.Refusal
	for _, row := range intake.Table {
		if ref := refused[row.Setting]; ref != nil && row.Kind != intake.Input {
			held = append(held, ref)
		}
	}
	client, err := r.sabakan.For(s.URL)
	if err != nil {
		return nil, err
	}
	raw, err := client.SearchMachines(ctx, s.Variables)
	if err != nil {
		return nil, err
	}
	var inv intake.Inventory
	var warnings, metricWarnings []string
	inv.Machines, inv.Roles, warnings = intake.Sanitize(raw)
	if inv.Metrics, _, metricWarnings, err = intake.FetchMetrics(ctx, s.Policy, inv.Machines); err != nil {
		return nil, err
	}
	return &PlanInput{
		Input:            s.Input(inv, r.opts.Now(), retireWait),
		TemplateChanged:  s.TemplateChanged(),
		TemplateRevision: s.TemplateRevision,
		ClusterRevision:  s.ClusterRevision,
		Warnings:         slices.Concat(s.Warnings, warnings, metricWarnings),
		Settings:         s,
		Held:             held,
	}, nil
}

// StoredNextStep is an Options.NextStep that reads the daemon's stored plan
// (sabakan/plan): its first step and how many steps it has; nil when there
// is no plan, it does not parse, or it has no step.
func StoredNextStep(ctx context.Context, st storage.Storage) (*NextStep, error) {
	p, err := planreport.ReadStored(ctx, st)
	switch {
	case errors.Is(err, storage.ErrNotFound), errors.Is(err, storage.ErrInvalid):
		// A plan that does not parse is no reason not to draw the rest.
		return nil, nil
	case err != nil:
		return nil, err
	case len(p.Steps) == 0:
		return nil, nil
	}
	first := p.Steps[0]
	changes := make([]generator.Change, len(first.Changes))
	for i, c := range first.Changes {
		changes[i] = generator.Change{Action: c.Action, Address: c.Address, Serial: c.Serial, Reason: c.Reason}
	}
	return &NextStep{Op: first.Op, Changes: changes, Steps: len(p.Steps), ComputedAt: p.ComputedAt}, nil
}
