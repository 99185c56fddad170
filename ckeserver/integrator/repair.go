package integrator

import (
	"context"
	"errors"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
)

// repair is CKE v1.35.4's sabakan-triggered auto-repair, with CKE's own
// functions and the inputs CKE's integrator gives them: the non-healthy
// machines of sabakan, the repair queue, the node statuses of status, the
// reboot queue and the constraints. What fails is logged and left for
// the next tick: an error would end CKE's server.
//
// One input differs on purpose (docs/inside-cke.md, "Auto-repair: one
// deliberate difference"): the repair queue is the status's and the one
// stored now (queued). CKE's status holds the queue only while an API
// server answers; without one, CKE's own integrator is given an empty
// queue and registers every non-healthy machine again at every call.
// Given the stored queue too, CKE's repairer leaves a machine already
// queued alone, as it does while an API server answers.
func (ig *Integrator) repair(ctx context.Context, status *cke.ClusterStatus) {
	lg := ig.cfg.Log.With("what", "auto-repair")
	disabled, err := ig.cke.IsAutoRepairDisabled(ctx)
	if err != nil {
		lg.Warn("auto-repair switch not read", "error", err)
		return
	}
	if disabled {
		return
	}
	machines, err := ckesabakan.QueryNonHealthy(ctx, ig.cke)
	if err != nil {
		if !errors.Is(err, cke.ErrNotFound) {
			lg.Warn("sabakan not queried for non-healthy machines", "error", err)
		}
		return
	}
	stored, err := ig.cke.GetRepairsEntries(ctx)
	if err != nil {
		lg.Warn("repair queue not read", "error", err)
		return
	}
	reboots, err := ig.cke.GetRebootsEntries(ctx)
	if err != nil {
		lg.Warn("reboot queue not read", "error", err)
		return
	}
	constraints, err := ig.cke.GetConstraints(ctx)
	switch {
	case errors.Is(err, cke.ErrNotFound):
		constraints = cke.DefaultConstraints()
	case err != nil:
		lg.Warn("constraints not read", "error", err)
		return
	}
	entries := ckesabakan.Repairer(machines, queued(status.RepairQueue.Entries, stored), cke.DedupRebootQueueEntries(reboots), status.NodeStatuses, constraints)
	for _, e := range entries {
		if err := ig.cke.RegisterRepairsEntry(ctx, e); err != nil {
			lg.Warn("repair entry not registered", "address", e.Address, "error", err)
			return
		}
		lg.Info("repair entry registered", "address", e.Address, "operation", e.Operation)
	}
}

// queued is the repair queue as the status saw it, then the entries stored
// since: each entry once, by its index (the queue's key). An entry of the
// status deleted since stays, as CKE's repairer, given the status alone,
// would count it.
func queued(seen, stored []*cke.RepairQueueEntry) []*cke.RepairQueueEntry {
	if len(stored) == 0 {
		return seen
	}
	in := make(map[int64]bool, len(seen))
	for _, e := range seen {
		in[e.Index] = true
	}
	out := append(make([]*cke.RepairQueueEntry, 0, len(seen)+len(stored)), seen...)
	for _, e := range stored {
		if !in[e.Index] {
			out = append(out, e)
		}
	}
	return out
}
