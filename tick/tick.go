package tick

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
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// settings are what a tick reads from etcd, parsed (the intake package
// reads them), with what gating made of them: whether the integration is
// disabled, and why the tick holds back (docs/beside-cke.md; nil: it goes
// on).
type settings struct {
	*intake.Settings
	disabled bool
	hold     *Hold
	// waiting: a setting without which nothing runs was never stored.
	waiting *Hold
	// release is what released the plan this tick applies (the trigger
	// change or the end of quiet time), for the history.
	release string
}

// outcome is what one tick saw and did.
type outcome struct {
	disabled bool
	// held: the tick held back on purpose (docs/beside-cke.md); own: the ownership
	// it read; waiting: it waits for a setting never stored.
	hold     *Hold
	waiting  *Hold
	own      *intake.Ownership
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
	// queryTime and metricsTime are how long sabakan and the metric
	// providers took (0: not asked).
	queryTime, metricsTime time.Duration
	changeOutcome
}

// idle reports whether the tick did not run the integration: disabled,
// held back, or waiting for its settings.
func (o *outcome) idle() bool { return o.disabled || o.hold != nil || o.waiting != nil }

// cluster is the cluster after the tick.
func (o *outcome) cluster() *cluster.Cluster {
	if o.result != nil {
		return o.result.Cluster
	}
	return o.current
}

// tick runs one integration step (docs/design.md 7): read the settings, query
// sabakan, decide, write the new cluster if there is one, and record the
// change in the history. A failed step ends the tick with its reason; Run
// records the status.
func (s *Step) tick(ctx context.Context, leaderKey string, kube Kubernetes) (*outcome, error) {
	set, err := s.readSettings(ctx, leaderKey)
	if err != nil {
		return nil, err
	}
	if set.hold != nil || set.disabled || set.waiting != nil {
		return &outcome{disabled: set.disabled, hold: set.hold, waiting: set.waiting, own: &set.Own}, nil
	}
	out := &outcome{own: &set.Own, current: set.Current, warnings: set.Warnings,
		constraints: &set.Constraints, constraintsSource: storage.ConstraintsDefault}
	if set.ConstraintsStored {
		out.constraintsSource = storage.ConstraintsStored
	}
	if kube != nil {
		out.kube = &storage.KubernetesStatus{}
	}
	ms, roles, warnings, err := s.querySabakan(ctx, set, out)
	out.machines = ms
	out.warnings = append(out.warnings, warnings...)
	if err != nil {
		return out, err
	}
	vals, err := s.fetchMetrics(ctx, set, ms, out)
	if err != nil {
		return out, err
	}
	taints, err := s.listNodes(ctx, kube, set, out)
	if err != nil {
		return out, err
	}
	in := set.Input(intake.Inventory{Machines: ms, Roles: roles, Metrics: vals, NodeTaints: taints}, s.cfg.Now(), s.cfg.RetireWait)
	res, err := s.manage(set, in, out)
	clusterRev := set.ClusterRevision
	if err == nil && res != nil {
		rev, werr := s.write(ctx, leaderKey, set, res)
		if werr != nil {
			return out, werr
		}
		out.result = res
		s.record(ctx, leaderKey, set, res, rev)
		clusterRev = rev
	}
	s.countPlacements(in, out)
	if perr := s.keepPlan(ctx, leaderKey, set, in, out, clusterRev); err == nil {
		err = perr
	}
	if err != nil {
		return out, err
	}
	return out, out.tooManyUnhealthy()
}

// readSettings reads everything a tick needs in one etcd transaction and
// parses it. An etcd error is ETCD_ERROR; a value that does not parse is
// the reason of that value. On the first tick of a leadership, the memory
// the last leader kept comes with the same snapshot.
func (s *Step) readSettings(ctx context.Context, leaderKey string) (*settings, error) {
	snap, err := s.cfg.Storage.Read(ctx, s.settings.Request(leaderKey, storage.KeyCKEGenMemory))
	if err != nil {
		return nil, fail(reason.EtcdError, err)
	}
	// A leader learns that its lease is gone only at the next keepalive;
	// the election key in the snapshot keeps a deposed leader from
	// querying sabakan. (The cluster write is guarded by the key in any
	// case.)
	if !snap.Leading {
		return nil, fail(reason.LostLeadership, storage.ErrNoLeader)
	}
	if s.recall {
		s.recall = false
		if err := s.memory.recall(snap.Get(storage.KeyCKEGenMemory)); err != nil {
			s.log.Warn("the last leader's memory is not used", "error", err)
		}
	}
	read, err := s.settings.Read(snap, intake.WhatIf{})
	var ref *intake.Refusal
	if errors.As(err, &ref) && intake.RowOf(ref.Setting).Kind == intake.Switch {
		return nil, fail(ref.Reason, ref)
	}
	set := &settings{Settings: read}
	set.disabled, set.hold = s.gate(read.Own, snap.Get(storage.KeyCluster).Exists(), s.cfg.Now())
	if set.disabled || set.hold != nil {
		return set, nil
	}
	if errors.As(err, &ref) && ref.Missing && reason.ResultOf(ref.Reason) == reason.Waiting {
		set.waiting = &Hold{Reason: ref.Reason, Message: ref.Error()}
		return set, nil
	}
	if err != nil {
		return nil, refused(err)
	}
	return set, nil
}

// refused is the tick's failure for a setting intake refused, with its
// reason.
func refused(err error) *Error {
	var r *intake.Refusal
	if errors.As(err, &r) {
		return fail(r.Reason, r)
	}
	return fail(reason.EtcdError, err)
}

// querySabakan returns the machines sabakan has for the user's variables,
// sanitized, the roles of every machine it returned (before sanitizing,
// for the generator's typo guard), and a warning for each machine ignored
// or changed.
func (s *Step) querySabakan(ctx context.Context, set *settings, out *outcome) ([]*machine.Machine, []string, []string, error) {
	client, err := s.sabakan.For(set.URL)
	if err != nil {
		return nil, nil, nil, fail(reason.QueryError, err)
	}
	start := time.Now()
	raw, err := client.SearchMachines(ctx, set.Variables)
	out.queryTime = time.Since(start)
	switch {
	case errors.Is(err, sabakan.ErrUnreachable):
		return nil, nil, nil, fail(reason.SabakanUnreachable, err)
	case err != nil:
		return nil, nil, nil, fail(reason.QueryError, err)
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
func (s *Step) fetchMetrics(ctx context.Context, set *settings, ms []*machine.Machine, out *outcome) (*policy.Values, error) {
	start := time.Now()
	vals, stats, warnings, err := intake.FetchMetrics(ctx, set.Policy, ms)
	if set.Policy != nil && len(set.Policy.Metrics()) > 0 {
		out.metricsTime = time.Since(start)
	}
	if err != nil {
		return nil, fail(reason.MetricsUnavailable, err)
	}
	out.warnings = append(out.warnings, warnings...)
	for _, st := range stats {
		s.log.Debug("metric fetched", "metric", st.Metric, "provider", st.Provider, "samples", st.Samples, "matched", st.Matched)
	}
	return vals, nil
}

// countPlacements records in out, for the status and the metric, each
// placement of the policy with its nodes by group in the cluster as the
// tick leaves it, and the group of its last pick (docs/design.md 12.4).
func (s *Step) countPlacements(in generator.Input, out *outcome) {
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
	out.placements = placementStatus(s.memory.ObservedGroups, counts, changes)
}

// placementStatus is the status of each counted placement: its observed
// group is the group of the last change of this tick that added a machine
// for it, else the one the memory keeps while the placement still has a
// group of that name.
func placementStatus(observed map[string]string, counts []generator.PlacementNodes, changes []generator.Change) []storage.PlacementStatus {
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
		if g := observed[c.Placement]; ps.ObservedGroup == "" && g != "" && slices.ContainsFunc(c.Groups, func(n generator.GroupNodes) bool {
			return n.Group == g
		}) {
			ps.ObservedGroup = g
		}
		out[i] = ps
	}
	return out
}

// listNodes returns the taints of the Kubernetes Nodes by name, or nil
// when nothing is known of Kubernetes. A failure is
// KUBERNETES_UNREACHABLE: without the Nodes a tick could keep a control
// plane Kubernetes has given up on, so it decides nothing.
// It records in out what it read.
func (s *Step) listNodes(ctx context.Context, kube Kubernetes, set *settings, out *outcome) (map[string][]cluster.Taint, error) {
	if kube == nil {
		return nil, nil
	}
	taints, err := kube.NodeTaints(ctx)
	if err != nil {
		return nil, fail(reason.KubernetesUnreachable, err)
	}
	out.kube.Read, out.kube.Nodes = true, len(taints)
	out.kube.Intolerable = kubenodes.CountIntolerable(taints, generator.Tolerations(set.Template))
	return taints, nil
}

// decide runs the generator: Generate without a cluster, else Update, and
// Regenerate when Update has nothing to do and the template changed since
// the cluster was built. It returns a nil result when there is nothing to
// do, and the generator's warnings (a template role that matches no
// machine) in every case. In a Step.Regenerate the decision is Regenerate
// alone, when the template changed.
func (s *Step) decide(set *settings, in generator.Input) (*generator.Result, []string, error) {
	var res *generator.Result
	var err error
	switch {
	case !s.regenerateOnly:
		res, err = generator.Tick(in, set.TemplateChanged())
	case set.Current == nil || !set.TemplateChanged():
		return nil, nil, nil
	default:
		res, err = generator.Regenerate(in)
	}
	var warnings []string
	if res != nil {
		warnings = res.Warnings
	}
	switch {
	case errors.Is(err, generator.ErrNothingToDo):
		return nil, warnings, nil
	case errors.Is(err, generator.ErrNotEnoughMachines):
		return nil, warnings, fail(reason.NotEnoughMachines, err)
	case errors.Is(err, generator.ErrTooManyNonExistent):
		return nil, warnings, fail(reason.TooManyNonExistent, err)
	case err != nil:
		return nil, warnings, fail(reason.GenerationError, err)
	}
	return res, warnings, nil
}

// write stores the new cluster with the template revision it was built
// from, in one transaction that needs the leadership and an unchanged
// cluster. It returns the etcd revision of the write.
func (s *Step) write(ctx context.Context, leaderKey string, set *settings, res *generator.Result) (int64, error) {
	data, err := res.Cluster.AppendJSON(nil) // json.Marshal's bytes, without reflection
	if err != nil {
		return 0, fail(reason.GenerationError, err)
	}
	if size := len(data) + s.writeOverhead(leaderKey); size > s.cfg.MaxClusterBytes {
		return 0, fail(reason.ClusterTooLarge, tooLarge(len(data), size, len(res.Cluster.Nodes), s.cfg.MaxClusterBytes, set.Constraints))
	}
	if err := ckevalidate.Cluster(res.Cluster); err != nil {
		return 0, fail(reason.InvalidCluster, fmt.Errorf("the generated cluster would be refused by CKE: %w", err))
	}
	var guards []storage.Guard
	if s.cfg.Mode != ModeInsideCKE {
		guards = set.Own.Guards()
	}
	rev, err := s.cfg.Storage.PutCluster(ctx, leaderKey, data, set.ClusterRevision, set.TemplateRevision, guards...)
	var changed *storage.ChangedError
	switch {
	case errors.Is(err, storage.ErrNoLeader):
		return 0, fail(reason.LostLeadership, err)
	case errors.As(err, &changed) && changed.Key == storage.KeyCluster:
		return 0, fail(reason.ClusterChanged, fmt.Errorf("cluster changed since it was read: %w", err))
	case errors.As(err, &changed):
		return 0, fail(reason.OwnershipChanged, fmt.Errorf("the integration's owner or switch changed since it was read: %w", err))
	case err != nil:
		return 0, fail(reason.EtcdError, err)
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
// value, the owner and both switches (compared with their revisions, and
// read when refused), and the framing. etcd refuses a request over its --max-request-bytes as a
// whole, so a cluster only this much below the limit would fail in etcd.
func (s *Step) writeOverhead(leaderKey string) int {
	st := s.cfg.Storage
	guard := 2*(len(st.Key(storage.KeyOwner))+len(st.Key(storage.KeySabakanDisabled))+len(st.Key(storage.KeyCKEGenDisabled))) + 3*12
	return 2*len(leaderKey) + 3*len(st.Key(storage.KeyCluster)) + len(st.Key(storage.KeyClusterRevision)) + 20 + guard + requestFraming
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
func (s *Step) record(ctx context.Context, leaderKey string, set *settings, res *generator.Result, rev int64) {
	err := s.cfg.Storage.AddHistory(ctx, leaderKey, storage.HistoryEntry{
		Time:             s.cfg.Now().UTC(),
		Op:               res.Op,
		Changes:          statusChanges(res.Changes),
		ChangeCount:      len(res.Changes),
		TemplateRevision: set.TemplateRevision,
		ClusterRevision:  rev,
		ReleasedBy:       set.release,
	})
	if err != nil {
		s.log.Error("history not recorded", "error", err)
	}
}
