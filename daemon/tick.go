package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ckegen/ckegen/ckevalidate"
	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Reason codes recorded in sabakan/status when a tick fails.
const (
	ReasonDisabled           = "DISABLED"
	ReasonInvalidDisabled    = "INVALID_DISABLED_FLAG"
	ReasonNoTemplate         = intake.ReasonNoTemplate
	ReasonInvalidTemplate    = intake.ReasonInvalidTemplate
	ReasonNoURL              = intake.ReasonNoURL
	ReasonInvalidVariables   = intake.ReasonInvalidVariables
	ReasonInvalidConstraints = intake.ReasonInvalidConstraints
	ReasonInvalidCluster     = intake.ReasonInvalidCluster
	ReasonSabakanUnreachable = "SABAKAN_UNREACHABLE"
	ReasonKubernetesUnreach  = "KUBERNETES_UNREACHABLE"
	ReasonQueryError         = "QUERY_ERROR"
	ReasonNotEnoughMachines  = "NOT_ENOUGH_MACHINES"
	ReasonTooManyNonExistent = "TOO_MANY_NONEXISTENT_CONTROL_PLANES"
	ReasonGenerationError    = "GENERATION_ERROR"
	ReasonClusterTooLarge    = "CLUSTER_TOO_LARGE"
	ReasonConflict           = "CLUSTER_CHANGED"
	// ReasonOwnershipChanged: a takeover, a handback or a switch landed
	// between the tick's read and its write, which lost (docs/beside-cke.md).
	ReasonOwnershipChanged = "OWNERSHIP_CHANGED"
	ReasonLostLeadership   = "LOST_LEADERSHIP"
	ReasonEtcdError        = "ETCD_ERROR"
	// ReasonInvalidPolicy: the stored placement policy does not parse,
	// validate, or fit the template (docs/design.md 12.1).
	ReasonInvalidPolicy = intake.ReasonInvalidPolicy
	// ReasonMetricsUnavailable: a metric provider of the policy failed
	// (unreachable, timeout, query error; docs/design.md 12.3).
	ReasonMetricsUnavailable = "METRICS_UNAVAILABLE"
)

// Results recorded in sabakan/status.
const (
	ResultOK       = "ok"
	ResultFailing  = "failing"
	ResultDisabled = "disabled"
)

// tickError is a failed tick with its reason code.
type tickError struct {
	reason string
	err    error
}

func (e *tickError) Error() string { return e.reason + ": " + e.err.Error() }
func (e *tickError) Unwrap() error { return e.err }

func fail(reason string, err error) *tickError { return &tickError{reason: reason, err: err} }

// settings are what a tick reads from etcd, parsed: whether it runs, and
// the generator's settings (the intake package reads them).
type settings struct {
	disabled bool
	// own is who owns the integration, and hold why the tick holds back
	// (docs/beside-cke.md); nil: it goes on.
	own  storage.Ownership
	hold *hold
	*intake.Settings
	changeSettings
}

// outcome is what one tick saw and did.
type outcome struct {
	disabled bool
	// held: the tick held back on purpose (docs/beside-cke.md); own: the ownership
	// it read.
	hold     *hold
	own      *storage.Ownership
	current  *cluster.Cluster  // the cluster the tick read
	result   *generator.Result // nil when nothing was written
	machines []*machine.Machine
	// warnings are for the operator: the tick went on regardless.
	warnings []string
	// kube is what the tick read from Kubernetes; nil without access.
	kube *storage.KubernetesStatus
	// placed: the tick got as far as counting the placements (the policy
	// and its metrics were read), and placements is what it counted (nil
	// without a policy).
	placed     bool
	placements []storage.PlacementStatus
	// constraints are the tick's valid constraints, and where they came
	// from (storage.ConstraintsStored or ConstraintsDefault); nil when the
	// tick did not get to read them.
	constraints       *constraints.Constraints
	constraintsSource string
	changeOutcome
}

// idle reports whether the tick did not run the integration: disabled, or
// held back.
func (o *outcome) idle() bool { return o.disabled || o.hold != nil }

// cluster is the cluster after the tick.
func (o *outcome) cluster() *cluster.Cluster {
	if o.result != nil {
		return o.result.Cluster
	}
	return o.current
}

// tick runs one integration step (docs/design.md 7): read the settings, query
// sabakan, decide, write the new cluster if there is one, and record the
// change in the history. A failed step ends the tick with its reason; the
// caller records the status.
func (d *Daemon) tick(ctx context.Context, leaderKey string) (*outcome, error) {
	s, err := d.readSettings(ctx, leaderKey)
	if err != nil {
		return nil, err
	}
	if s.hold != nil || s.disabled {
		return &outcome{disabled: s.disabled, hold: s.hold, own: &s.own}, nil
	}
	out := &outcome{own: &s.own, current: s.Current, warnings: s.Warnings,
		constraints: &s.Constraints, constraintsSource: storage.ConstraintsDefault}
	if s.ConstraintsStored {
		out.constraintsSource = storage.ConstraintsStored
	}
	if d.cfg.Nodes != nil {
		out.kube = &storage.KubernetesStatus{}
	}
	ms, roles, warnings, err := d.querySabakan(ctx, s)
	out.machines = ms
	out.warnings = append(out.warnings, warnings...)
	if err != nil {
		return out, err
	}
	vals, err := d.fetchMetrics(ctx, s, ms, out)
	if err != nil {
		return out, err
	}
	taints, err := d.listNodes(ctx, s, out)
	if err != nil {
		return out, err
	}
	in := s.Input(intake.Inventory{Machines: ms, Roles: roles, Metrics: vals, NodeTaints: taints}, d.cfg.Now(), d.cfg.RetireWait)
	res, err := d.manage(s, in, out)
	clusterRev := s.ClusterRevision
	if err == nil && res != nil {
		rev, werr := d.write(ctx, leaderKey, s, res)
		if werr != nil {
			return out, werr
		}
		out.result = res
		d.record(ctx, leaderKey, s, res, rev)
		clusterRev = rev
	}
	d.countPlacements(in, out)
	if perr := d.keepPlan(ctx, leaderKey, s, in, out, clusterRev); err == nil {
		err = perr
	}
	if err != nil {
		return out, err
	}
	return out, out.tooManyUnhealthy()
}

// readSettings reads everything a tick needs in one etcd transaction and
// parses it. An etcd error is ETCD_ERROR; a value that does not parse is
// the reason of that value.
func (d *Daemon) readSettings(ctx context.Context, leaderKey string) (*settings, error) {
	snap, err := d.cfg.Storage.SnapshotKnowing(ctx, leaderKey, d.settings.ClusterRevision())
	if err != nil {
		return nil, fail(ReasonEtcdError, err)
	}
	// A leader learns that its lease is gone only at the next keepalive;
	// the election key in the snapshot keeps a deposed leader from
	// querying sabakan. (The cluster write is guarded by the key in any
	// case.)
	if !snap.Leading {
		return nil, fail(ReasonLostLeadership, storage.ErrNoLeader)
	}
	var s settings
	if _, err = snap.Disabled(); err != nil {
		return nil, fail(ReasonInvalidDisabled, fmt.Errorf("%w (set it with ckecli sabakan enable or disable)", err))
	}
	if s.own, err = snap.Ownership(); err != nil {
		return nil, fail(ReasonInvalidOwner, fmt.Errorf("%w (set it with ckecli sabakan takeover, handback, enable or disable)", err))
	}
	s.disabled, s.hold = d.gate(s.own, snap.ClusterModRevision() > 0, d.cfg.Now())
	if s.disabled || s.hold != nil {
		return &s, nil
	}

	read, err := d.settings.Read(snap, intake.WhatIf{})
	if err != nil {
		return nil, refused(err)
	}
	s.Settings = read
	if s.Change, err = intake.ReadChange(snap); err != nil {
		return nil, refused(err)
	}
	return &s, nil
}

// refused is the tick's failure for a setting intake refused, with its
// reason.
func refused(err error) *tickError {
	var r *intake.Refusal
	if errors.As(err, &r) {
		return fail(r.Reason, r)
	}
	return fail(ReasonEtcdError, err)
}

// querySabakan returns the machines sabakan has for the user's variables,
// sanitized, the roles of every machine it returned (before sanitizing,
// for the generator's typo guard), and a warning for each machine ignored
// or changed.
func (d *Daemon) querySabakan(ctx context.Context, s *settings) ([]*machine.Machine, []string, []string, error) {
	client, err := d.sabakan.For(s.URL)
	if err != nil {
		return nil, nil, nil, fail(ReasonQueryError, err)
	}
	start := time.Now()
	raw, err := client.SearchMachines(ctx, s.Variables)
	d.metrics.queryDuration.Observe(time.Since(start).Seconds())
	switch {
	case errors.Is(err, sabakan.ErrUnreachable):
		return nil, nil, nil, fail(ReasonSabakanUnreachable, err)
	case err != nil:
		return nil, nil, nil, fail(ReasonQueryError, err)
	}
	ms, roles, warnings := intake.Sanitize(raw)
	return ms, roles, warnings, nil
}

// fetchMetrics gets the values of the policy's metrics for the machines,
// once per tick and before any decision (docs/design.md 12.3); nil without a policy
// or without metrics. A provider that fails is METRICS_UNAVAILABLE: the
// tick decides nothing, as when sabakan does not answer. What Prometheus
// warned about, and a metric that no machine of the tick has a value of,
// are warnings.
func (d *Daemon) fetchMetrics(ctx context.Context, s *settings, ms []*machine.Machine, out *outcome) (*policy.Values, error) {
	start := time.Now()
	vals, stats, warnings, err := intake.FetchMetrics(ctx, s.Policy, ms)
	if s.Policy != nil && len(s.Policy.Metrics()) > 0 {
		d.metrics.metricsDuration.Observe(time.Since(start).Seconds())
	}
	if err != nil {
		return nil, fail(ReasonMetricsUnavailable, err)
	}
	out.warnings = append(out.warnings, warnings...)
	for _, st := range stats {
		d.log.Debug("metric fetched", "metric", st.Metric, "provider", st.Provider, "samples", st.Samples, "matched", st.Matched)
	}
	return vals, nil
}

// countPlacements records in out, for the status and the metric, each
// placement of the policy with its nodes by group in the cluster as the
// tick leaves it, and the group of its last pick (docs/design.md 12.4).
func (d *Daemon) countPlacements(in generator.Input, out *outcome) {
	out.placed = true
	if in.Policy == nil {
		return
	}
	in.Current = out.cluster()
	counts, err := generator.Placements(in)
	if err != nil {
		out.warnings = append(out.warnings, "placements not counted: "+err.Error())
		out.placed = false
		return
	}
	var changes []generator.Change
	if out.result != nil {
		changes = out.result.Changes
	}
	out.placements = placementStatus(d.Status().Placements, counts, changes)
}

// placementStatus is the status of each counted placement: its observed
// group is the group of the last change of this tick that added a machine
// for it, else the one of the previous status while the placement still
// has a group of that name.
func placementStatus(prev []storage.PlacementStatus, counts []generator.PlacementNodes, changes []generator.Change) []storage.PlacementStatus {
	if len(counts) == 0 {
		return nil
	}
	out := make([]storage.PlacementStatus, len(counts))
	for i, c := range counts {
		ps := storage.PlacementStatus{Placement: c.Placement, Groups: statusGroups(c.Groups)}
		for j := len(changes) - 1; j >= 0; j-- {
			if ch := changes[j]; ch.Placement == c.Placement && ch.Group != "" {
				ps.ObservedGroup = ch.Group
				break
			}
		}
		if ps.ObservedGroup == "" {
			for _, p := range prev {
				if p.Placement == c.Placement && p.ObservedGroup != "" && slices.ContainsFunc(c.Groups, func(g generator.GroupNodes) bool {
					return g.Group == p.ObservedGroup
				}) {
					ps.ObservedGroup = p.ObservedGroup
				}
			}
		}
		out[i] = ps
	}
	return out
}

// listNodes returns the taints of the Kubernetes Nodes by name, or nil
// when the daemon has no Kubernetes access. A failure is
// KUBERNETES_UNREACHABLE: without the Nodes a tick could keep a control
// plane Kubernetes has given up on, so it decides nothing.
// It records in out what it read.
func (d *Daemon) listNodes(ctx context.Context, s *settings, out *outcome) (map[string][]cluster.Taint, error) {
	if d.cfg.Nodes == nil {
		return nil, nil
	}
	taints, err := d.cfg.Nodes.List(ctx)
	if err != nil {
		return nil, fail(ReasonKubernetesUnreach, err)
	}
	out.kube.Read, out.kube.Nodes = true, len(taints)
	out.kube.Intolerable = kubenodes.CountIntolerable(taints, generator.Tolerations(s.Template))
	return taints, nil
}

// decide runs the generator: Generate without a cluster, else Update, and
// Regenerate when Update has nothing to do and the template changed since
// the cluster was built. It returns a nil result when there is nothing to
// do, and the generator's warnings (a template role that matches no
// machine) in every case.
func (d *Daemon) decide(s *settings, in generator.Input) (*generator.Result, []string, error) {
	res, err := generator.Tick(in, s.TemplateChanged())
	var warnings []string
	if res != nil {
		warnings = res.Warnings
	}
	switch {
	case errors.Is(err, generator.ErrNothingToDo):
		return nil, warnings, nil
	case errors.Is(err, generator.ErrNotEnoughMachines):
		return nil, warnings, fail(ReasonNotEnoughMachines, err)
	case errors.Is(err, generator.ErrTooManyNonExistent):
		return nil, warnings, fail(ReasonTooManyNonExistent, err)
	case err != nil:
		return nil, warnings, fail(ReasonGenerationError, err)
	}
	return res, warnings, nil
}

// write stores the new cluster with the template revision it was built
// from, in one transaction that needs the leadership and an unchanged
// cluster. It returns the etcd revision of the write.
func (d *Daemon) write(ctx context.Context, leaderKey string, s *settings, res *generator.Result) (int64, error) {
	data, err := res.Cluster.AppendJSON(nil) // json.Marshal's bytes, without reflection
	if err != nil {
		return 0, fail(ReasonGenerationError, err)
	}
	if size := len(data) + d.writeOverhead(leaderKey); size > d.cfg.MaxClusterBytes {
		return 0, fail(ReasonClusterTooLarge, tooLarge(len(data), size, len(res.Cluster.Nodes), d.cfg.MaxClusterBytes, s.Constraints))
	}
	if err := ckevalidate.Cluster(res.Cluster); err != nil {
		return 0, fail(ReasonInvalidCluster, fmt.Errorf("the generated cluster would be refused by CKE: %w", err))
	}
	rev, err := d.cfg.Storage.PutClusterOwned(ctx, leaderKey, data, s.ClusterRevision, s.TemplateRevision, s.own)
	switch {
	case errors.Is(err, storage.ErrNoLeader):
		return 0, fail(ReasonLostLeadership, err)
	case errors.Is(err, storage.ErrOwnershipChanged):
		return 0, fail(ReasonOwnershipChanged, err)
	case errors.Is(err, storage.ErrConflict):
		return 0, fail(ReasonConflict, err)
	case err != nil:
		return 0, fail(ReasonEtcdError, err)
	}
	return rev, nil
}

// requestFraming bounds what etcd counts in a request besides its keys and
// values: the transaction's framing and the request header (about 100
// bytes measured with etcd 3.6).
const requestFraming = 256

// writeOverhead is what the cluster write's etcd request holds besides the
// cluster: the leader key (compared, and read when refused), the cluster
// key (compared, put, and read when refused), cluster-revision and its
// value, the owner and both switches (compared, with their revisions), and
// the framing. etcd refuses a request over its --max-request-bytes as a
// whole, so a cluster only this much below the limit would fail in etcd.
func (d *Daemon) writeOverhead(leaderKey string) int {
	st := d.cfg.Storage
	guard := len(st.Key(storage.KeyOwner)) + len(st.Key(storage.KeySabakanDisabled)) + len(st.Key(storage.KeyCKEGenDisabled)) + 3*12
	return 2*len(leaderKey) + 3*len(st.Key(storage.KeyCluster)) + len(st.Key(storage.KeyClusterRevision)) + 20 + guard + requestFraming
}

// tooLarge is the error of a cluster of data bytes of JSON and nodes
// nodes whose write request (size bytes) is over the limit: how many
// nodes of this size fit, the flags to raise, and what else makes the
// cluster smaller in the model in force.
func tooLarge(data, size, nodes, limit int, c constraints.Constraints) error {
	perNode := float64(data) / float64(max(nodes, 1))
	fit := int(float64(limit-(size-data)) / perNode)
	smaller := "or ask for fewer workers (ckecli constraints set minimum-workers N)"
	if c.RateModel() {
		smaller = "or, as the rate model (minimum-workers-rate) makes every HEALTHY machine a worker template accepts a node, " +
			"query fewer machines (ckecli sabakan set-variables)"
	}
	return fmt.Errorf("the cluster is %d bytes of JSON for %d nodes (%.0f bytes a node), and its write %d bytes, over etcd's request size limit of %s: "+
		"about %d nodes fit, this cluster has %d; raise etcd's --max-request-bytes and cke's --max-cluster-bytes together to at least %d bytes, %s",
		data, nodes, perNode, size, byteSize(limit), fit, nodes, size, smaller)
}

// byteSize is n bytes, and in MiB too when that says more.
func byteSize(n int) string {
	if n < 64<<10 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%d bytes (%.3g MiB)", n, float64(n)/(1<<20))
}

// record adds the written change to the history. The cluster is written
// by then: a history that could not be recorded is logged, not a failed
// tick.
func (d *Daemon) record(ctx context.Context, leaderKey string, s *settings, res *generator.Result, rev int64) {
	err := d.cfg.Storage.AddHistory(ctx, leaderKey, storage.HistoryEntry{
		Time:             d.cfg.Now().UTC(),
		Op:               res.Op,
		Changes:          statusChanges(res.Changes),
		ChangeCount:      len(res.Changes),
		TemplateRevision: s.TemplateRevision,
		ClusterRevision:  rev,
		ReleasedBy:       s.release,
	})
	if err != nil {
		d.log.Error("history not recorded", "error", err)
	}
}
