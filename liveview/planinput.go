package liveview

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/metricprovider"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// WhatIf replaces stored settings for a plan (`ckecli sabakan plan
// --template ...`, `--dry-run`); a nil field keeps the stored value. The
// values must be valid: they are what the setting command would store.
type WhatIf struct {
	// Template is a template as stored (JSON, with CKE's defaults).
	Template []byte
	// Constraints replace the stored constraints.
	Constraints *constraints.Constraints
	// Variables are query variables as stored (JSON).
	Variables []byte
	// Policy is a placement policy (YAML or JSON).
	Policy []byte
}

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
}

// PlanInput reads, without writing anything, what the daemon's next tick
// reads: the template, constraints, query variables, URL, cluster and
// reboot queue from etcd, and the machines from sabakan with the
// variables (one query, not cached). The what-if settings replace the
// stored ones. A stored setting that is missing or invalid is an error
// that says which and how to set it; an etcd failure is an *EtcdError.
func (r *Reader) PlanInput(ctx context.Context, w WhatIf, retireWait time.Duration) (*PlanInput, error) {
	st := r.st
	ectx, cancel := context.WithTimeout(ctx, r.opts.EtcdTimeout)
	defer cancel()
	p := &PlanInput{}
	in := &p.Input

	tmplData, tmplRev, err := st.GetTemplate(ectx)
	switch {
	case w.Template != nil:
		tmplData = w.Template
	case errors.Is(err, storage.ErrNotFound):
		return nil, errors.New("no template: set one with ckecli sabakan set-template, or give --template")
	case err != nil:
		return nil, &EtcdError{err}
	}
	if err == nil {
		p.TemplateRevision = tmplRev
	}
	if in.Template, err = template.Parse(tmplData); err != nil {
		if w.Template != nil {
			return nil, fmt.Errorf("template: %w", err)
		}
		return nil, fmt.Errorf("the stored template is invalid: %w (set one with ckecli sabakan set-template)", err)
	}

	if w.Constraints != nil {
		in.Constraints = *w.Constraints
	} else {
		c, err := st.GetConstraints(ectx)
		switch {
		case errors.Is(err, storage.ErrInvalid):
			return nil, fmt.Errorf("the stored constraints are invalid: %w (set them with ckecli constraints set)", err)
		case err != nil:
			return nil, &EtcdError{err}
		}
		in.Constraints = c
	}
	if err := in.Constraints.Validate(); err != nil {
		return nil, fmt.Errorf("constraints: %w", err)
	}
	p.Warnings = append(p.Warnings, in.Constraints.Warnings()...)

	cur, clusterRev, err := st.GetCluster(ectx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil && clusterRev != 0:
		return nil, fmt.Errorf("the stored cluster is invalid: %w", err)
	case err != nil:
		return nil, &EtcdError{err}
	default:
		in.Current, p.ClusterRevision = cur, clusterRev
	}
	builtFrom, err := st.GetClusterRevision(ectx)
	if err != nil {
		return nil, fmt.Errorf("the cluster's template revision: %w", err)
	}
	p.TemplateChanged = in.Current != nil && (w.Template != nil || tmplRev != builtFrom)
	if in.Rebooting, err = st.RebootingNodes(ectx); err != nil {
		return nil, &EtcdError{err}
	}

	url, err := st.GetURL(ectx)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, errors.New("no sabakan URL: set one with ckecli sabakan set-url")
	case err != nil:
		return nil, &EtcdError{err}
	}
	varsData := w.Variables
	if varsData == nil {
		varsData, err = st.GetQueryVariables(ectx)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			varsData = nil
		case err != nil:
			return nil, &EtcdError{err}
		}
	}
	var vars sabakan.Variables
	if varsData != nil {
		if vars, err = sabakan.ParseVariables(varsData); err != nil {
			if w.Variables != nil {
				return nil, fmt.Errorf("variables: %w", err)
			}
			return nil, fmt.Errorf("the stored query variables are invalid: %w (set them with ckecli sabakan set-variables)", err)
		}
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	client, err := r.sabakanClient(url)
	if err != nil {
		return nil, err
	}
	raw, err := client.SearchMachines(ctx, vars)
	if err != nil {
		return nil, err
	}
	in.InventoryRoles = machine.Roles(raw)
	ms, warnings := machine.Sanitize(raw, labels.ValidateSabakanLabel)
	in.Machines = ms
	p.Warnings = append(p.Warnings, warnings...)
	if err := r.loadPolicy(ctx, w, p); err != nil {
		return nil, err
	}
	in.Now = r.opts.Now()
	in.RetireWait = retireWait
	return p, nil
}

// StoredPending is an Options.Pending that reads the daemon's stored plan
// (sabakan/plan): its first step and how many steps it has; nil when there
// is no plan, it does not parse, or it has no step.
func StoredPending(ctx context.Context, st storage.Storage) (*Pending, error) {
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
	return &Pending{Op: first.Op, Changes: changes, Steps: len(p.Steps), ComputedAt: p.ComputedAt}, nil
}

// loadPolicy reads the stored placement policy (or the what-if one),
// compiles it for the plan's template and fetches its metrics once, as
// the daemon's tick does. Without a policy it does nothing.
func (r *Reader) loadPolicy(ctx context.Context, w WhatIf, p *PlanInput) error {
	data := w.Policy
	if data == nil {
		ectx, cancel := context.WithTimeout(ctx, r.opts.EtcdTimeout)
		defer cancel()
		var err error
		data, _, err = r.st.GetPolicy(ectx)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return nil
		case err != nil:
			return &EtcdError{err}
		}
	}
	pol, err := policy.Load(data, p.Input.Template)
	switch {
	case err != nil && w.Policy != nil:
		return fmt.Errorf("policy: %w", err)
	case err != nil:
		return fmt.Errorf("the stored policy is invalid for the template: %w (fix it with ckecli sabakan set-policy, or clear it with clear-policy)", err)
	}
	p.Input.Policy = pol
	if len(pol.Metrics()) == 0 {
		return nil
	}
	vals, stats, err := metricprovider.Fetch(ctx, pol, p.Input.Machines)
	if err != nil {
		return err
	}
	p.Input.Metrics = vals
	p.Warnings = append(p.Warnings, metricprovider.Warnings(stats, len(p.Input.Machines))...)
	return nil
}
