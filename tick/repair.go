package tick

import (
	"context"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/storage"
)

// Repair is the host's auto-repair: CKE's server runs its
// sabakan-triggered auto-repair after its integration (docs/inside-cke.md).
// The step runs it after acting on its decision and before it makes its
// status, so that what it leaves waiting (nil: nothing) is part of that
// status, a warning of it. failed is the reason code of the tick's
// failure ("": none). known false: it did not run, and the status keeps
// what the last one said.
type Repair func(ctx context.Context, failed string) (waiting *storage.RepairStatus, known bool)

// repairStatus is what a tick's status says of the host's auto-repair:
// what it said now, else, inside CKE's server, what the last status said;
// nothing elsewhere (ckegen's daemons run no auto-repair).
func repairStatus(d *decision.Decision, o Outcome, last storage.Status) *storage.RepairStatus {
	switch {
	case o.RepairKnown:
		return o.Repair
	case d.Config.Mode == decision.ModeInsideCKE:
		return last.Repair
	}
	return nil
}

// repairWarnings are the warnings a status carries of the host's
// auto-repair.
func repairWarnings(r *storage.RepairStatus) []string {
	if r == nil {
		return nil
	}
	return []string{r.Message}
}
