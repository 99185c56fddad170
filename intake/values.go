package intake

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/ckegen/ckegen/internal/redact"
	"github.com/ckegen/ckegen/storage"
)

// The values of the switches, the owner and change management, each
// with its parse: a setting command checks a value with the same
// function a tick reads it with.

// Owners of the integration beside a CKE server (docs/beside-cke.md).
const (
	OwnerCKE    = "cke"
	OwnerCKEGen = "ckegen"
)

// CKEStatus is CKE's server's status key: its phase and when it was
// written.
type CKEStatus struct {
	Phase     string    `json:"phase"`
	Timestamp time.Time `json:"timestamp"`
}

// Ownership is the state of the keys that decide whether ckegen may
// write the cluster beside a CKE server, with the mod revisions a guarded
// write compares (0: absent).
type Ownership struct {
	// Owner is OwnerCKE when the key is absent.
	Owner    string
	OwnerRev int64
	// CKEDisabled is CKE's sabakan/disabled (false when absent).
	CKEDisabled    bool
	CKEDisabledRev int64
	// CKEGenDisabled is ckegen's own switch (false when absent).
	CKEGenDisabled    bool
	CKEGenDisabledRev int64
	// CKEServer: a key exists under CKE's leader/ (a CKE server runs).
	CKEServer bool
	// CKEStatus is CKE's status key, nil when absent.
	CKEStatus *CKEStatus
}

// OwnedByCKEGen reports whether ckegen owns the integration.
func (o Ownership) OwnedByCKEGen() bool { return o.Owner == OwnerCKEGen }

// HandedBack reports whether sabakan/owner says cke explicitly (a
// handback wrote it): CKE owns the integration even while no CKE server
// runs, since its server may only be restarting.
func (o Ownership) HandedBack() bool { return o.Owner == OwnerCKE && o.OwnerRev != 0 }

// Guards are what a write that relies on o must find unchanged: the owner
// and both switches.
func (o Ownership) Guards() []storage.Guard {
	return []storage.Guard{
		{Key: storage.KeyOwner, ModRevision: o.OwnerRev},
		{Key: storage.KeySabakanDisabled, ModRevision: o.CKEDisabledRev},
		{Key: storage.KeyCKEGenDisabled, ModRevision: o.CKEGenDisabledRev},
	}
}

// SwitchKey is the switch that enable and disable act on: ckegen's own
// while it owns the integration, CKE's otherwise.
func (o Ownership) SwitchKey() string {
	if o.OwnedByCKEGen() {
		return storage.KeyCKEGenDisabled
	}
	return storage.KeySabakanDisabled
}

// LeftToDaemons reports whether a step inside CKE's server leaves the
// integration and its status to ckegen's daemons: while they own it
// (sabakan/owner: ckegen) and CKE's switch is off, as a takeover left it.
// The step then writes nothing, not even its status, which is theirs: a
// site that moves between the daemons and the build inside CKE may run
// both for a while, and its status must not flip between them.
func (o Ownership) LeftToDaemons() bool { return o.OwnedByCKEGen() && o.CKEDisabled }

// Disabled reports whether the switch in force (SwitchKey) is on.
func (o Ownership) Disabled() bool {
	if o.OwnedByCKEGen() {
		return o.CKEGenDisabled
	}
	return o.CKEDisabled
}

// ParseSwitch reads a switch as stored: true or false, exactly.
func ParseSwitch(data []byte) (bool, error) {
	switch string(data) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("want true or false, got %q", data)
}

// ParseOwner reads sabakan/owner as stored.
func ParseOwner(data []byte) (string, error) {
	switch v := string(data); v {
	case OwnerCKE, OwnerCKEGen:
		return v, nil
	}
	return "", fmt.Errorf("want %q or %q, got %q", OwnerCKE, OwnerCKEGen, data)
}

// parseCKEStatus reads CKE's own status key; a value that does not parse
// ckePhases are the phases of CKE's status in which ckegen writes beside
// a CKE server: those in which CKE v1.35.4's server runs its own
// integration. CKE's controller calls its integrator when DecideOps has
// no operation (completed, the two aborted phases, and repair-machines
// or reboot-nodes while blocked) and in reboot-nodes. repair-machines
// blocked cannot be told from repair-machines busy by the status key
// alone: ckegen holds there.
var ckePhases = []string{"completed", "reboot-nodes", "upgrade-aborted", "etcd-boot-aborted"}

// CKEPhases says in which phases of CKE's status ckegen writes beside a
// CKE server (docs/beside-cke.md).
func CKEPhases() string {
	return strings.Join(ckePhases[:len(ckePhases)-1], ", ") + " or " + ckePhases[len(ckePhases)-1]
}

// IsCKEPhase reports whether CKE's phase p is one in which its server
// runs its integration (ckePhases).
func IsCKEPhase(p string) bool {
	for _, q := range ckePhases {
		if p == q {
			return true
		}
	}
	return false
}

// is a status of no phase, which never allows a write.
func parseCKEStatus(data []byte) *CKEStatus {
	var st CKEStatus
	if json.Unmarshal(data, &st) != nil {
		st = CKEStatus{}
	}
	return &st
}

// Change are the change management settings (docs/design.md 11): the
// daemon acts on them, the views only mention them.
type Change struct {
	// Trigger is planning or schedule; TriggerRevision its key's mod
	// revision (0: unset, schedule).
	Trigger         string
	TriggerRevision int64
	// QuietTime is how long the inventory must stay still (0: off).
	QuietTime time.Duration
	// MaxUnhealthy is the circuit breaker's limit (nil: none).
	MaxUnhealthy *MaxUnhealthy
}

// Triggers (docs/design.md 11.2).
const (
	// TriggerSchedule applies changes as they come, one step per tick
	// (CKE's behaviour, and the default).
	TriggerSchedule = "schedule"
	// TriggerPlanning computes and stores the plan, and writes no cluster.
	TriggerPlanning = "planning"
)

// ParseTrigger validates a trigger.
func ParseTrigger(s string) (string, error) {
	switch s {
	case TriggerPlanning, TriggerSchedule:
		return s, nil
	}
	return "", fmt.Errorf("trigger: must be %s (compute and store the plan, change nothing) or %s (apply it one step per tick), got %q",
		TriggerPlanning, TriggerSchedule, s)
}

// ParseQuietTime validates a quiet time (docs/design.md 11.3): a Go
// duration, not negative; 0 turns quiet time off.
func ParseQuietTime(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("quiet-time: must not be negative (0 turns it off), got %s", s)
	}
	return d, nil
}

// MaxUnhealthy is how many of the cluster's nodes may be unhealthy before
// the daemon stops changing membership (docs/design.md 11.4): a count, or a
// percentage of the current cluster's nodes.
type MaxUnhealthy struct {
	// Value is the count, or the percentage (0-100) when Percent is set.
	Value   int
	Percent bool
}

// MaxUnhealthyOff is the value of set-max-unhealthy that removes the
// limit, and what get-max-unhealthy prints when none is set.
const MaxUnhealthyOff = "off"

// ParseMaxUnhealthy reads "5" (a count) or "40%" (a percentage of the
// cluster's nodes, 0-100).
func ParseMaxUnhealthy(s string) (MaxUnhealthy, error) {
	bad := func(why string) (MaxUnhealthy, error) {
		return MaxUnhealthy{}, fmt.Errorf("max-unhealthy: want a count of nodes such as 5 or a percentage of the cluster's nodes such as 40%%%s, got %q", why, s)
	}
	digits, percent := strings.CutSuffix(s, "%")
	if digits == "" || strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return bad("")
	}
	v, err := strconv.Atoi(digits)
	if err != nil {
		return bad("")
	}
	if percent && v > 100 {
		return bad(" (at most 100%)")
	}
	return MaxUnhealthy{Value: v, Percent: percent}, nil
}

// parseMaxUnhealthyLimit is ParseMaxUnhealthy for Change.MaxUnhealthy.
func parseMaxUnhealthyLimit(s string) (*MaxUnhealthy, error) {
	m, err := ParseMaxUnhealthy(s)
	if err != nil {
		return nil, err
	}
	return &m, nil
}

// String is the value as stored: "5" or "40%".
func (m MaxUnhealthy) String() string {
	if m.Percent {
		return strconv.Itoa(m.Value) + "%"
	}
	return strconv.Itoa(m.Value)
}

// Limit is the number of unhealthy nodes allowed in a cluster of nodes
// nodes: the count, or the percentage rounded down (as Cluster API's
// maxUnhealthy). More unhealthy nodes than that hold membership changes.
func (m MaxUnhealthy) Limit(nodes int) int {
	if m.Percent {
		return nodes * m.Value / 100
	}
	return m.Value
}

// ParseURL checks a sabakan URL as set-url takes it and returns it as
// stored: /graphql appended when missing.
func ParseURL(s string) (string, error) {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("URL %q: must be an absolute http or https URL such as http://sabakan:10080", redact.URL(s))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("URL %q: must have no query or fragment", redact.URL(s))
	}
	if !strings.HasSuffix(u.Path, "/graphql") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/graphql"
	}
	return u.String(), nil
}

// ParseClusterRevision reads cluster-revision as stored: a decimal
// revision.
func ParseClusterRevision(data []byte) (int64, error) {
	rev, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("not a decimal revision: %q", data)
	}
	return rev, nil
}

// rebootEntry is the part of a CKE reboot queue entry ckegen reads.
type rebootEntry struct {
	Node   string `json:"node"`
	Status string `json:"status"`
}

// rebootingNodes are the addresses that CKE's reboot queue marks as
// draining or rebooting. Entries that do not parse are skipped: the queue
// is CKE's, and a bad entry must not stop ckegen.
func rebootingNodes(kvs []storage.KeyValue) map[string]bool {
	out := map[string]bool{}
	for _, kv := range kvs {
		var e rebootEntry
		if json.Unmarshal(kv.Data, &e) != nil {
			continue
		}
		if e.Status == "draining" || e.Status == "rebooting" {
			out[e.Node] = true
		}
	}
	return out
}
