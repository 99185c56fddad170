// Package intake is the one path from settings to the generator's input:
// what the generator is asked.
//
// Three callers ask it: the daemon's tick, the live views of ckecli (plan,
// --dry-run and the checks of the setting commands) and the offline
// generator (ckecli sabakan generate, from files). Each needs the same
// settings (template, query variables, constraints, placement policy, and
// the change settings: trigger, quiet time, max-unhealthy) and the same
// state (the cluster, the template revision it was built from, CKE's reboot
// queue), then the inventory, the metrics and the Nodes' taints joined to
// them. This package does each step once:
//
//   - Reader.Read parses one storage.Snapshot (one etcd transaction) into
//     Settings, what-if values replacing stored ones;
//   - FromFiles parses the offline generator's files into Settings;
//   - Sanitize, FetchMetrics and Settings.Input join the inventory, the
//     metrics and the taints into a generator.Input.
//
// A value that is missing or invalid is a *Refusal, which names its reason
// code (the daemon's status), the setting and where the value came from.
// Refusal.Error is how the daemon's status says it; Refusal.Explain is how
// ckecli says it to a person, with the command that fixes it.
//
// A new setting is added here once: a field of Settings, a step of Read
// (and of FromFiles when the offline generator takes it) and its row in
// the table of settings.
package intake

import (
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// Settings are what the generator is asked, apart from the inventory:
// every value parsed and valid.
type Settings struct {
	Template *template.Template
	// TemplateRevision is the stored template's mod revision (0: none
	// stored, or the settings come from files).
	TemplateRevision int64
	// templateGiven: the template is not the stored one (a what-if or a
	// file).
	templateGiven bool

	// URL is sabakan's GraphQL URL ("" from files).
	URL string
	// Variables are the query variables; VariablesData as stored (nil:
	// none), which identifies them.
	Variables     sabakan.Variables
	VariablesData []byte

	Constraints constraints.Constraints
	// ConstraintsStored: the constraints were stored or given (else they
	// are the count model's defaults).
	ConstraintsStored bool

	// Current is the cluster (nil: none yet); ClusterRevision is its key's
	// mod revision, for the guarded write; BuiltFrom is the template
	// revision it was built from.
	Current         *cluster.Cluster
	ClusterRevision int64
	BuiltFrom       int64
	// Rebooting are the addresses CKE's reboot queue drains or reboots.
	Rebooting map[string]bool

	// Policy is the placement policy compiled for Template (nil: none).
	Policy *policy.Policy

	// Warnings are for the operator: values that work but look wrong.
	Warnings []string
}

// Change are the change management settings (docs/design.md 11), read
// by ReadChange: the daemon acts on them, the views only mention them.
type Change struct {
	// Trigger is planning or schedule; TriggerRevision its key's mod
	// revision (0: unset, schedule).
	Trigger         string
	TriggerRevision int64
	// QuietTime is how long the inventory must stay still (0: off).
	QuietTime time.Duration
	// MaxUnhealthy is the circuit breaker's limit (nil: none).
	MaxUnhealthy *storage.MaxUnhealthy
}

// TemplateChanged reports whether the template is not the one the cluster
// was built from, so that a tick may regenerate. A what-if template always
// counts as changed.
func (s *Settings) TemplateChanged() bool {
	return s.Current != nil && (s.templateGiven || s.TemplateRevision != s.BuiltFrom)
}

// Inventory is what joins the settings: the machines and what was read
// about them.
type Inventory struct {
	// Machines are sanitized; Roles are the roles of every machine
	// sabakan returned, before sanitizing (the generator's typo guard).
	Machines []*machine.Machine
	Roles    []string
	// Metrics are the policy's metric values (nil: none).
	Metrics *policy.Values
	// NodeTaints are the Kubernetes Nodes' taints by name (nil: no
	// Kubernetes access).
	NodeTaints map[string][]cluster.Taint
}

// Input is the generator's input: the settings joined with the inventory,
// at now.
func (s *Settings) Input(inv Inventory, now time.Time, retireWait time.Duration) generator.Input {
	return generator.Input{
		Template:       s.Template,
		Constraints:    s.Constraints,
		Machines:       inv.Machines,
		InventoryRoles: inv.Roles,
		Current:        s.Current,
		Rebooting:      s.Rebooting,
		Now:            now,
		RetireWait:     retireWait,
		Policy:         s.Policy,
		Metrics:        inv.Metrics,
		NodeTaints:     inv.NodeTaints,
	}
}
