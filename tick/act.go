package tick

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Outcome is what acting on a decision did: the guarded write of its
// step, its history entry, the stored plan. The decision stands whatever
// the outcome; a write that did not land says why.
type Outcome struct {
	// Err is why the step was not written (nil: written, or nothing to
	// write).
	Err *reason.Error
	// Revision is the etcd revision of the cluster write (0: nothing
	// written).
	Revision int64
	// PlanKept: the decision's plan was kept (sabakan/plan holds it, or
	// held it already, identified by PlanDigest).
	PlanKept   bool
	PlanDigest string
	// Warnings are what acting adds to the decision's: a plan that could
	// not be stored.
	Warnings []string
	// Repair is what the host's auto-repair left waiting (nil: nothing),
	// when RepairKnown: it ran after the step was acted on (Repair).
	Repair      *storage.RepairStatus
	RepairKnown bool
}

// act writes what d decided as the leader holding leaderKey: the step,
// in one transaction guarded on the leadership, the cluster and (beside
// CKE) the ownership as read, with its history entry; then the plan from
// the cluster as it leaves it, when that plan is not the one stored.
func (s *Step) act(ctx context.Context, leaderKey string, d *decision.Decision) Outcome {
	var o Outcome
	set := d.Gathered.Settings
	clusterRev := int64(0)
	if set != nil {
		clusterRev = set.ClusterRevision
	}
	if d.Step != nil {
		rev, err := s.write(ctx, leaderKey, d)
		if err != nil {
			o.Err = err
			return o
		}
		o.Revision, clusterRev = rev, rev
		if err := s.addHistory(ctx, leaderKey, d, rev); err != nil {
			// The cluster is written: a history that could not be
			// recorded is logged, not a failed tick.
			s.log.Error("history not recorded", "error", err)
		}
	}
	s.keepPlan(ctx, leaderKey, d, clusterRev, &o)
	return o
}

// addHistory records the decision's step, written at etcd revision rev,
// in the history; a step that leaves the cluster as it is (it records the
// template revision alone) is no op to keep.
func (s *Step) addHistory(ctx context.Context, leaderKey string, d *decision.Decision, rev int64) error {
	if d.Unchanged {
		return nil
	}
	return s.st.AddHistory(ctx, leaderKey, historyEntry(d, rev))
}

// write stores the decision's cluster with the template revision it was
// built from, in one transaction that needs the leadership and an
// unchanged cluster (and, beside CKE, unchanged ownership keys). It
// returns the etcd revision of the write.
func (s *Step) write(ctx context.Context, leaderKey string, d *decision.Decision) (int64, *reason.Error) {
	set := d.Gathered.Settings
	var guards []storage.Guard
	if d.Config.Mode != decision.ModeInsideCKE {
		guards = set.Own.Guards()
	}
	rev, err := s.st.PutCluster(ctx, leaderKey, d.Data, set.ClusterRevision, set.TemplateRevision, guards...)
	var changed *storage.ChangedError
	switch {
	case err == nil:
		return rev, nil
	case errors.Is(err, storage.ErrNoLeader):
		return 0, reason.Fail(reason.LostLeadership, err)
	case errors.As(err, &changed) && changed.Key == storage.KeyCluster:
		return 0, reason.Fail(reason.ClusterChanged, fmt.Errorf("cluster changed since it was read: %w", err))
	case errors.As(err, &changed):
		return 0, reason.Fail(reason.OwnershipChanged, fmt.Errorf("the integration's owner or switch changed since it was read: %w", err))
	}
	return 0, etcdFailure(err)
}

// etcdFailure is the failure of an etcd write: ETCD_NO_SPACE, with what
// to do, when etcd's database is full; ETCD_ERROR otherwise.
func etcdFailure(err error) *reason.Error {
	if storage.NoSpace(err) {
		return reason.Fail(reason.EtcdNoSpace, fmt.Errorf("etcd's database is full (alarm NOSPACE: over its --quota-backend-bytes) and refuses every write: "+
			"compact its history (etcdctl compact with the current revision), defragment each member (etcdctl defrag), "+
			"then disarm the alarm (etcdctl alarm disarm); ckegen writes again at its first tick after: %w", err))
	}
	return reason.Fail(reason.EtcdError, err)
}

// keepPlan stores the plan from the cluster as the tick leaves it in
// sabakan/plan: at every held tick (planning, quiet time), otherwise only
// when it is not the plan stored. A plan that cannot be stored is a
// warning.
func (s *Step) keepPlan(ctx context.Context, leaderKey string, d *decision.Decision, clusterRev int64, o *Outcome) {
	p := d.Pending()
	if p == nil {
		return
	}
	set := d.Gathered.Settings
	doc := planreport.New(p)
	doc.SetModel(set.Constraints, len(d.Gathered.Machines))
	doc.View = d.Gathered.Kubernetes.Describe(time.Time{})
	stored := planreport.Stored{Document: *doc, TemplateRevision: set.TemplateRevision, ClusterRevision: clusterRev, Trigger: set.Trigger}
	o.PlanKept, o.PlanDigest = true, s.memory.PlanDigest
	digest, err := stored.Digest(p.Cluster == p.Start)
	if err != nil {
		o.Warnings = append(o.Warnings, "plan: "+err.Error())
		return
	}
	held := d.Hold != nil && (d.Hold.Rung == decision.RungQuiet || d.Hold.Rung == decision.RungTrigger)
	if !held && o.PlanDigest == digest {
		return
	}
	stored.ComputedAt = d.At.UTC()
	data, err := planreport.MarshalStored(stored, s.cfg.MaxClusterBytes)
	if err == nil {
		err = s.st.PutPlan(ctx, leaderKey, data)
	}
	if err != nil {
		o.Warnings = append(o.Warnings, fmt.Sprintf("plan not stored in %s: %v", storage.KeySabakanPlan, err))
		return
	}
	o.PlanDigest = digest
}
