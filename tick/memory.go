package tick

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Memory is what a tick carries to the next one. The step owns it: it
// lives in the Step and, so that the next leader continues where this one
// stopped, under storage.KeyCKEGenMemory, written with each status in one
// transaction and read with the first snapshot of a leadership. It is
// never read back from the status: the status is a projection of each
// tick and of this value.
type Memory struct {
	// Inventory is the set of serials sabakan returned and since when it
	// has been the same (the quiet time counts from there).
	Inventory InventoryMemory `json:"inventory,omitzero"`
	// Trigger is the trigger the last tick that ran the integration
	// read: a change from planning to schedule releases the plan.
	Trigger string `json:"trigger,omitempty"`
	// QuietHeld: the last such tick was held by the quiet time, whose end
	// releases the plan.
	QuietHeld bool `json:"quietHeld,omitempty"`
	// Release is what released the plan still being applied.
	Release string `json:"release,omitempty"`
	// PlanDigest identifies the plan stored in sabakan/plan (all of it
	// but the time), so that an unchanged plan is not written again.
	PlanDigest string `json:"planDigest,omitempty"`
	// ObservedGroups is, by placement, the group of its last pick (docs/
	// design.md 12.4), kept while no later pick says otherwise.
	ObservedGroups map[string]string `json:"observedGroups,omitempty"`
	// Shown is what the status keeps showing of earlier ticks.
	Shown Shown `json:"shown,omitzero"`
}

// InventoryMemory is the set of serials of a tick's inventory, by its
// digest, and since when the leader has seen it.
type InventoryMemory struct {
	Digest string    `json:"digest,omitempty"`
	Since  time.Time `json:"since,omitzero"`
}

// Shown is what the status keeps of earlier ticks while a tick does not
// get as far as knowing it again: since when the result has been the
// same, the last success and the last change, the failures in a row, and
// the last placements, worker rate and change management figures.
type Shown struct {
	Result              string                    `json:"result,omitempty"`
	Reason              string                    `json:"reason,omitempty"`
	Since               time.Time                 `json:"since,omitzero"`
	LastSuccess         time.Time                 `json:"lastSuccess,omitzero"`
	ConsecutiveFailures int                       `json:"consecutiveFailures,omitempty"`
	LastOp              string                    `json:"lastOp,omitempty"`
	LastChanges         []storage.Change          `json:"lastChanges,omitempty"`
	LastChangeCount     int                       `json:"lastChangeCount,omitempty"`
	Placements          []storage.PlacementStatus `json:"placements,omitempty"`
	WorkerRate          *storage.WorkerRate       `json:"workerRate,omitempty"`
	Change              storage.ChangeStatus      `json:"change,omitzero"`
}

// remember makes the memory the next tick starts from, after a tick that
// recorded st and ended with out (nil: it read nothing).
func (m *Memory) remember(st storage.Status, out *outcome) {
	m.Shown = Shown{Result: st.Result, Reason: st.Reason, Since: st.Since, LastSuccess: st.LastSuccess,
		ConsecutiveFailures: st.ConsecutiveFailures, LastOp: st.LastOp, LastChanges: st.LastChanges,
		LastChangeCount: st.LastChangeCount, Placements: st.Placements, WorkerRate: st.WorkerRate, Change: st.ChangeStatus}
	m.Trigger, m.Release = st.Trigger, st.Release
	m.QuietHeld = st.Result == reason.Planning && st.Reason == reason.QuietTime
	if out == nil || out.idle() || out.change.Trigger == "" {
		// The tick did not get as far as change management: what it
		// would have learnt stays as it was.
		return
	}
	if out.change.Quiet != nil {
		m.Inventory = out.inventory
	}
	if out.planKept {
		m.PlanDigest = out.planDigest
	}
	if out.placed {
		m.ObservedGroups = nil
		for _, p := range out.placements {
			if p.ObservedGroup != "" {
				if m.ObservedGroups == nil {
					m.ObservedGroups = map[string]string{}
				}
				m.ObservedGroups[p.Placement] = p.ObservedGroup
			}
		}
	}
}

// marshal is the memory as stored.
func (m *Memory) marshal() ([]byte, error) { return json.Marshal(m) }

// recall takes the memory the last leader stored (none: empty). A value
// that does not parse is left unused, with an error to log: the memory is
// ckegen's own, and losing it restarts the quiet time and stores the plan
// again, no more.
func (m *Memory) recall(v storage.Value) error {
	*m = Memory{}
	if !v.Exists() {
		return nil
	}
	if err := strictjson.UnmarshalIgnoringUnknown(v.Data, m); err != nil {
		*m = Memory{}
		return fmt.Errorf("%s: %w", storage.KeyCKEGenMemory, err)
	}
	return nil
}
