package integrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"

	"github.com/ckegen/ckegen/internal/words"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
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
//
// CKE queues nothing while the machines to queue do not all fit under
// maximum-repair-queue-entries: ckegen's status then says which machines
// wait and why (fullQueue), until they are queued. It reports what
// waits, and whether that is known (tick.Repair); failed is the reason
// code of the tick's failure.
func (ig *Integrator) repair(ctx context.Context, status *cke.ClusterStatus, failed string) (*storage.RepairStatus, bool) {
	lg := ig.cfg.Log.With("what", "auto-repair")
	waiting, err := ig.autoRepair(ctx, status, failed, lg)
	if errors.Is(err, errSaid) {
		return nil, false
	}
	if err != nil {
		// What waits is not known this time: the status keeps what it
		// said.
		lg.Warn("auto-repair did not run", "error", err)
		return nil, false
	}
	return waiting, true
}

// errSaid: auto-repair did not run, for a reason the tick's log said.
var errSaid = errors.New("said by the tick")

// autoRepair registers the entries CKE's repairer returns, and returns
// what waits (nil: nothing; an error: not known).
func (ig *Integrator) autoRepair(ctx context.Context, status *cke.ClusterStatus, failed string, lg *slog.Logger) (*storage.RepairStatus, error) {
	disabled, err := ig.cke.IsAutoRepairDisabled(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("auto-repair switch not read: %w", err)
	case disabled:
		return nil, nil
	}
	machines, err := ckesabakan.QueryNonHealthy(ctx, ig.cke)
	switch {
	case errors.Is(err, cke.ErrNotFound):
		return nil, nil // no URL yet: ckegen's status says so
	case err != nil && failed == reason.SabakanUnreachable:
		// The tick's log line said so already: one line a tick.
		return nil, errSaid
	case err != nil:
		return nil, fmt.Errorf("sabakan not queried for non-healthy machines: %s", sabakan.Plain(err))
	}
	stored, err := ig.cke.GetRepairsEntries(ctx)
	if err != nil {
		return nil, fmt.Errorf("repair queue not read: %w", err)
	}
	reboots, err := ig.cke.GetRebootsEntries(ctx)
	if err != nil {
		return nil, fmt.Errorf("reboot queue not read: %w", err)
	}
	constraints, err := ig.cke.GetConstraints(ctx)
	switch {
	case errors.Is(err, cke.ErrNotFound):
		constraints = cke.DefaultConstraints()
	case err != nil:
		return nil, fmt.Errorf("constraints not read: %w", err)
	}
	queue, reboots := queued(status.RepairQueue.Entries, stored), cke.DedupRebootQueueEntries(reboots)
	entries := ckesabakan.Repairer(machines, queue, reboots, status.NodeStatuses, constraints)
	for _, e := range entries {
		if err := ig.cke.RegisterRepairsEntry(ctx, e); err != nil {
			return nil, fmt.Errorf("repair entry for %s not registered: %w", e.Address, err)
		}
		lg.Info("repair entry registered", "address", e.Address, "operation", e.Operation)
	}
	if len(entries) > 0 {
		return nil, nil
	}
	return fullQueue(machines, queue, waitingMachines(machines, queue, reboots, status.NodeStatuses, constraints), constraints.MaximumRepairs), nil
}

// waitingMachines are the machines CKE's repairer would queue but for
// maximum-repair-queue-entries: each non-healthy machine with an
// address, unless an entry of the queue has that address, or it is
// UNREACHABLE for less than wait-seconds-to-repair-rebooting while it is
// rebooting or is no node of the cluster (CKE's
// docs/sabakan-triggered-repair.md). TestRepairQueueFull checks it
// against CKE's repairer: once the queue has room, CKE's repairer
// queues these machines and no other.
func waitingMachines(machines []ckesabakan.Machine, queue []*cke.RepairQueueEntry, reboots []*cke.RebootQueueEntry,
	nodes map[string]*cke.NodeStatus, c *cke.Constraints) []ckesabakan.Machine {
	inQueue := make(map[string]bool, len(queue))
	for _, e := range queue {
		inQueue[e.Address] = true
	}
	rebooting := make(map[string]bool, len(reboots))
	for _, e := range reboots {
		if e.Status == cke.RebootStatusRebooting {
			rebooting[e.Node] = true
		}
	}
	var out []ckesabakan.Machine
	for _, m := range machines {
		if len(m.Spec.IPv4) == 0 || inQueue[m.Spec.IPv4[0]] {
			continue
		}
		addr := m.Spec.IPv4[0]
		_, node := nodes[addr]
		young := m.Status.State == ckesabakan.StateUnreachable && m.Status.Duration < float64(c.RepairRebootingSeconds)
		if young && (rebooting[addr] || !node) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// fullQueue is what the status says when machines wait for an entry
// while the queue holds too many to add them all (nil: none waits). The
// entries marked deleted (every ckecli repair-queue delete command marks,
// none removes) are counted apart: CKE's repairer counts them against
// maximum-repair-queue-entries, as it counts every entry, until CKE's
// server dequeues them. The live ones are counted by what deletes them:
// finished (delete-finished), a second entry for a machine, or an entry
// for a machine no longer non-healthy (delete INDEX each).
func fullQueue(machines []ckesabakan.Machine, queue []*cke.RepairQueueEntry, waiting []ckesabakan.Machine, maximum int) *storage.RepairStatus {
	if len(waiting) == 0 || len(queue)+len(waiting) <= maximum {
		return nil
	}
	nonHealthy := make(map[string]bool, len(machines))
	for _, m := range machines {
		if len(m.Spec.IPv4) > 0 {
			nonHealthy[m.Spec.IPv4[0]] = true
		}
	}
	r := &storage.RepairStatus{Entries: len(queue), Maximum: maximum, WaitingCount: len(waiting)}
	seen := make(map[string]bool, len(queue))
	for _, e := range queue {
		switch {
		case e.Deleted:
			r.Deleted++
			continue
		case e.HasFinished():
			r.Finished++
		case seen[e.Address]:
			r.Repeated++
		case !nonHealthy[e.Address]:
			r.Stale++
		}
		seen[e.Address] = true
	}
	for _, m := range waiting[:min(len(waiting), storage.MaxChanges)] {
		r.Waiting = append(r.Waiting, storage.RepairWaiting{Address: m.Spec.IPv4[0], Serial: m.Spec.Serial, State: string(m.Status.State)})
	}
	r.Message = repairMessage(r)
	return r
}

// repairMessage says in words why the machines of r wait, and what to do:
// the command that deletes each kind of entry no longer needed, with its
// scope.
func repairMessage(r *storage.RepairStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "auto-repair: the repair queue holds %s (maximum-repair-queue-entries: %d)", words.Count(r.Entries, "entry", "entries"), r.Maximum)
	var of []string
	if r.Deleted > 0 {
		of = append(of, fmt.Sprintf("%d marked deleted, which CKE's repairer counts until CKE's server dequeues %s", r.Deleted, pick(r.Deleted, "it", "them")))
	}
	if r.Finished > 0 {
		of = append(of, words.Count(r.Finished, "finished entry", "finished entries")+" (succeeded or failed)")
	}
	if r.Repeated > 0 {
		of = append(of, words.Count(r.Repeated, "second entry for a machine", "second entries for machines")+" queued already")
	}
	if r.Stale > 0 {
		of = append(of, words.Count(r.Stale, "entry for a machine", "entries for machines")+" sabakan no longer reports non-healthy")
	}
	if len(of) > 0 {
		b.WriteString(": " + strings.Join(of, ", "))
	}
	fmt.Fprintf(&b, "; %s for an entry, as CKE queues none while they would not all fit:", words.Count(r.WaitingCount, "machine waits", "machines wait"))
	for i, w := range r.Waiting {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s (%s)", w.Address, w.State)
	}
	if more := r.WaitingCount - len(r.Waiting); more > 0 {
		fmt.Fprintf(&b, " and %d more", more)
	}
	b.WriteString(". ")
	var do []string
	if r.Repeated+r.Stale > 0 {
		do = append(do, fmt.Sprintf("Delete %s with ckecli repair-queue delete INDEX (ckecli repair-queue list shows the indexes)",
			pick(r.Repeated+r.Stale, "that entry", "each of those entries")))
	}
	if r.Finished > 0 {
		do = append(do, "ckecli repair-queue delete-finished deletes the finished ones")
	}
	if len(do) > 0 {
		b.WriteString(strings.Join(do, "; ") + "; ckecli repair-queue delete-unfinished is no command for a few entries: it deletes every unfinished entry, those being processed included. ")
	}
	if r.Deleted > 0 || len(do) > 0 {
		b.WriteString("CKE's server dequeues an entry marked deleted when it next runs its repair operations (once nothing else is left to do on the cluster); until then it counts. ")
	}
	b.WriteString("Or raise maximum-repair-queue-entries (ckecli constraints set maximum-repair-queue-entries N)")
	return b.String()
}

// pick is one when n is 1, else many.
func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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
