// Package intake is the one path from settings to the generator's input:
// what the generator is asked.
//
// Its callers: the tick, the live views of ckegenctl (plan, --dry-run, the
// checks of the setting commands, takeover's refusals) and the offline
// generator (ckegenctl sabakan generate, from files). Each needs the same
// settings (the owner and the switches; template, query variables,
// constraints, placement policy; the change settings: trigger, quiet
// time, max-unhealthy) and the same state (the cluster, the template
// revision it was built from, CKE's reboot queue), then the inventory, the
// metrics and the Nodes' taints joined to them. This package does each
// step once:
//
//   - Table is the table of settings: one Row each, with its etcd key, its
//     kind, what it is, its reason codes, the fix to print, whether a
//     change wakes the leader, and the CLI's commands for it with their
//     help; Reader.read, beside it, names the typed read of each;
//   - Reader.Read parses one storage.Snapshot (one etcd transaction, read
//     by Reader.Request) into Settings, row by row, what-if values
//     replacing stored ones;
//   - FromFiles parses the offline generator's files into Settings;
//   - Sanitize, FetchMetrics and Settings.Input join the inventory, the
//     metrics and the taints into a generator.Input; FetchMetrics asks
//     Prometheus (prometheus.go, its answer read by prometheus_answer.go)
//     or reads a static provider's values (metrics.go).
//
// A value that is missing or invalid is a *Refusal, which names its reason
// code (the daemon's status), the setting and where the value came from.
// Refusal.Error is how the daemon's status says it; Refusal.Explain is how
// ckegenctl says it to a person, with the command that fixes it.
//
// A new setting is added here once: its row in Table and its case in
// Reader.read (settings.go), its parse and its field (values.go for one
// stored value, as the change settings); the storage layer only learns its
// key, and the daemon's watch, ckegenctl's commands and docs/daemon.md's
// table of settings follow from the row.
package intake

import (
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/template"
)

// Settings are every setting, parsed and valid: who writes the cluster
// and the switches, what the generator is asked (apart from the
// inventory), and change management.
type Settings struct {
	// Own is the owner, both switches and what is known of a CKE server
	// (docs/beside-cke.md).
	Own Ownership

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
	// are CKE v1.35.4's defaults, constraints.Default); ConstraintsRevision
	// is the stored key's mod revision (0: none), for a guarded
	// read-modify-write. Constraints.Implicit: they name no model.
	ConstraintsStored   bool
	ConstraintsRevision int64

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

	Change

	// Warnings are for the operator: values that work but look wrong.
	Warnings []string
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
