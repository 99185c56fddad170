package decision

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/ckegen/ckegen/internal/strictjson"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/storage"
)

// Memory is what a tick carries to the next one. The step owns it: it
// lives in the Step and, so that the next leader continues where this one
// stopped, under storage.KeyCKEGenMemory, written with each status in one
// transaction and read with the first snapshot of a leadership. It is
// never read back from the status: the status is a projection of each
// decision and of this value, and the next memory a projection of the
// decision and of the last memory (Memory.next).
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
	// Last is the last status: what the next status keeps showing of
	// earlier ticks while a tick does not get as far as knowing it again
	// (since when the result has been the same, the last success and
	// change, the failures in a row, placements, the worker rate, the
	// inventory's figures, change management's).
	Last storage.Status `json:"last,omitzero"`
	// Backoff is the wait after the next failure (0: the first), and
	// Settings identifies the settings the last tick read: a change of
	// them starts the backoff again.
	Backoff  storage.Duration `json:"backoff,omitempty"`
	Settings string           `json:"settings,omitempty"`
	// Kubernetes is the view of the Nodes the leader last decided with
	// (nil: none), which views that decide as the leader does take.
	Kubernetes *kubenodes.View `json:"kubernetes,omitempty"`
	// Leader is the leader's configuration, which views that decide as
	// it does take.
	Leader Config `json:"leader,omitzero"`
	// Logged is what the log last said of the integration's state, so
	// that a state is logged when it begins and ends, not at every tick.
	Logged Logged `json:"logged,omitzero"`
}

// Logged is the state the log last told: the tick's state (its result,
// reason, and pending plan while planning) and the warnings in force.
type Logged struct {
	State    string   `json:"state,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// InventoryMemory is the set of serials of a tick's inventory, by its
// digest, and since when the leader has seen it.
type InventoryMemory struct {
	Digest string    `json:"digest,omitempty"`
	Since  time.Time `json:"since,omitzero"`
}

// Marshal is the memory as stored.
func (m *Memory) Marshal() ([]byte, error) { return json.Marshal(m) }

// Recall takes the memory the last leader stored (none: empty). A value
// that does not parse is left unused, with an error to log: the memory is
// ckegen's own, and losing it restarts the quiet time and stores the plan
// again, no more.
func (m *Memory) Recall(v storage.Value) error {
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
