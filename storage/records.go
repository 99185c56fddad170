package storage

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/clientv3util"

	"github.com/ckegen/ckegen/internal/clip"
	"github.com/ckegen/ckegen/internal/strictjson"
)

// The records ckegen writes for itself: the last tick's status, the
// history of cluster writes and the stored plan.

// Status is the result of the last tick (sabakan/status).
type Status struct {
	Result              string    `json:"result"` // ok, failing or disabled
	Reason              string    `json:"reason,omitempty"`
	Message             string    `json:"message,omitempty"`
	Since               time.Time `json:"since"`
	Time                time.Time `json:"time"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	LastSuccess         time.Time `json:"lastSuccess,omitzero"`
	// LastRun is the time of the last tick that ran the integration: not
	// disabled, held back or waiting for a setting.
	LastRun time.Time `json:"lastRun,omitzero"`
	LastOp  string    `json:"lastOp,omitempty"`
	// LastChanges holds at most MaxChanges of the LastChangeCount changes.
	LastChanges     []Change `json:"lastChanges,omitempty"`
	LastChangeCount int      `json:"lastChangeCount,omitempty"`
	Leader          string   `json:"leader,omitempty"`
	// Warnings are what the operator should fix although the tick went
	// on (at most MaxWarnings).
	Warnings []string `json:"warnings,omitempty"`
	// SettingsNotes say what the settings ask that their model ignores (a
	// cke.cybozu.com/weight of the template in the rate model): they
	// stand as long as the settings do, so they are no tick's warning
	// (at most MaxWarnings).
	SettingsNotes []string `json:"settingsNotes,omitempty"`
	// Kubernetes is what the tick read from the Kubernetes API; nil when
	// the daemon has no Kubernetes access (no --kubeconfig).
	Kubernetes *KubernetesStatus `json:"kubernetes,omitempty"`
	// Placements are the placement policy's placements as the last tick
	// that read the policy left the cluster (docs/design.md 12.4); nil without a
	// policy.
	Placements []PlacementStatus `json:"placements,omitempty"`
	// Model is the constraints model in force at the tick
	// (constraints.CountModel or constraints.RateModel, docs/models.md);
	// a tick that did not get to read valid constraints (held, disabled,
	// waiting, failing before or at them) keeps the last status's: the
	// model the cluster was last written under. "" before any tick read
	// them. The hold on unchosen constraints (CONSTRAINTS_UNCHOSEN) reads
	// it: a last status that says the count model, while the constraints
	// name none, holds the leader, and the held tick keeps it, so that
	// the next leader holds too; an earlier release reads it as the model
	// its ticks ran.
	Model string `json:"model,omitempty"`
	// ConstraintsSource says where the constraints came from:
	// ConstraintsStored (the constraints key) or ConstraintsDefault (no
	// key stored: CKE v1.35.4's defaults, the rate model; with Model
	// count, written by an earlier release, the count model's defaults);
	// "" with Model.
	ConstraintsSource string `json:"constraintsSource,omitempty"`
	// WorkerRate is, in the rate model, the worker rate of the cluster as
	// the last tick that queried sabakan left it, against the
	// minimum-workers-rate in force; nil in the count model, or before
	// sabakan answered.
	WorkerRate *WorkerRate `json:"workerRate,omitempty"`
	// Mode is how the daemon runs (docs/beside-cke.md): "standalone" (no CKE server
	// holds leader/) or "beside-cke"; Owner is the integration's owner
	// (OwnerCKE or OwnerCKEGen). Both "" when the tick did not read them.
	Mode  string `json:"mode,omitempty"`
	Owner string `json:"owner,omitempty"`
	// Interval is the pace the host runs the step at (ckegen's
	// --interval, or CKE's server's): a status older than a few of them
	// says the host stopped calling.
	Interval Duration `json:"interval,omitempty"`
	// Inventory counts what the last tick that queried sabakan saw.
	Inventory *InventoryFigures `json:"inventory,omitempty"`
	// Domains are the cluster's control planes by failure domain, as the
	// last tick that queried sabakan left the cluster
	// (docs/failure-domains.md); nil before.
	Domains *FailureDomains `json:"domains,omitempty"`
	// Repair is, inside CKE's server, why CKE's sabakan-triggered
	// auto-repair leaves machines waiting for a repair queue entry
	// (docs/inside-cke.md); nil while none waits.
	Repair *RepairStatus `json:"repair,omitempty"`
	ChangeStatus
}

// RepairStatus says which machines auto-repair would queue for repair
// and why they wait: the repair queue holds Entries, against Maximum
// (maximum-repair-queue-entries). Deleted of them are marked deleted and
// wait for CKE's server to dequeue them (counted all the same); of the
// live ones, Finished succeeded or failed, Repeated are a second entry of
// a machine and Stale for machines sabakan no longer reports
// non-healthy. WaitingCount machines wait, the first MaxChanges of them
// in Waiting. Message says it in words, and is a warning of the status
// too.
type RepairStatus struct {
	Entries      int             `json:"entries"`
	Maximum      int             `json:"maximum"`
	Deleted      int             `json:"deleted"`
	Finished     int             `json:"finished"`
	Stale        int             `json:"stale"`
	Repeated     int             `json:"repeated"`
	WaitingCount int             `json:"waitingCount"`
	Waiting      []RepairWaiting `json:"waiting"`
	Message      string          `json:"message"`
}

// RepairWaiting is a machine waiting for a repair queue entry.
type RepairWaiting struct {
	Address string `json:"address"`
	Serial  string `json:"serial"`
	State   string `json:"state"`
}

// InventoryFigures count a tick's machines by state and the cluster's
// workers by role, as the tick left the cluster.
type InventoryFigures struct {
	// Machines counts the machines sabakan returned (sanitized), by
	// state.
	Machines map[string]int `json:"machines"`
	// Workers counts the cluster's workers by the role label of each
	// ("" for none); nil without a cluster.
	Workers map[string]int `json:"workers,omitempty"`
	// Unused counts the machines that are not in the cluster (with a
	// cluster).
	Unused int `json:"unused"`
}

// Duration is a time.Duration that JSON holds as Go writes it ("1m0s").
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Where a tick's constraints came from (Status.ConstraintsSource).
const (
	ConstraintsStored  = "stored"
	ConstraintsDefault = "default"
)

// PlacementStatus is one placement of the policy: the group of its last
// pick and its nodes by group.
type PlacementStatus struct {
	// Placement is the placement's key: "control-plane" or a worker
	// template's role.
	Placement string `json:"placement"`
	// ObservedGroup is the group the last machine added for the placement
	// was picked from (Karmada's observed affinity name); "" until a pick
	// from a group was seen, or when the placement has no groups.
	ObservedGroup string `json:"observedGroup,omitempty"`
	// Groups count the placement's current nodes by group, in the
	// policy's order; the last entry, group "", counts the nodes in none
	// (all of them for a placement without groups).
	Groups []GroupNodes `json:"groups"`
}

// GroupNodes counts a placement's nodes in one of its groups; Group ""
// counts those in none.
type GroupNodes struct {
	Group string `json:"group"`
	Nodes int    `json:"nodes"`
}

// WorkerRate is the rate model's figure as the status keeps it: the
// workers, the machines counted, the percentage and the minimum in force.
type WorkerRate struct {
	Workers  int     `json:"workers"`
	Machines int     `json:"machines"`
	Percent  float64 `json:"percent"`
	Minimum  int     `json:"minimumWorkersRate"`
}

// KubernetesStatus is what a tick learnt from the Kubernetes Nodes.
type KubernetesStatus struct {
	// Read: the tick knew the Nodes.
	Read bool `json:"read"`
	// Source says where the view comes from (the Kubernetes API, CKE's
	// cluster status); Why why it is not known, when it is not.
	Source string `json:"source,omitempty"`
	Why    string `json:"why,omitempty"`
	// Nodes is how many Nodes it listed, Intolerable how many of them
	// carried a taint a control plane does not tolerate (docs/design.md 6.4).
	Nodes       int `json:"nodes"`
	Intolerable int `json:"intolerable"`
}

// FailureDomains are where a cluster's control planes are by failure
// domain, and the domains whose loss breaks etcd's quorum.
type FailureDomains struct {
	// FailureDomain is what a domain is: "rack", or a label's name.
	FailureDomain string `json:"failureDomain"`
	// ControlPlanes is the cluster's number of control planes, Quorum
	// the number of etcd members that keep its quorum.
	ControlPlanes int `json:"controlPlanes"`
	Quorum        int `json:"quorum"`
	// Domains are the domains that hold a control plane, in the
	// failure domain's order.
	Domains []DomainControlPlanes `json:"domains"`
	// AtRisk names the domains whose loss breaks etcd's quorum, and
	// Warnings says it of each, in the same order.
	AtRisk   []string `json:"atRisk"`
	Warnings []string `json:"warnings,omitempty"`
}

// DomainControlPlanes are the control planes one failure domain holds.
type DomainControlPlanes struct {
	Domain string `json:"domain"`
	// ControlPlanes are their addresses, in the cluster's order.
	ControlPlanes []string `json:"controlPlanes"`
	// QuorumLost: losing the domain breaks etcd's quorum.
	QuorumLost bool `json:"quorumLost"`
}

// MaxWarnings is how many warnings a status keeps.
const MaxWarnings = 100

// MaxMessage bounds a status message: its values are cut already
// (clip.Value), this bounds the whole.
const MaxMessage = 4 * clip.MaxValue

// BoundWarnings is what a status keeps of a tick's warnings: the first
// MaxWarnings, each bounded, and how many more there were.
func BoundWarnings(ws []string) []string {
	if len(ws) == 0 {
		return nil
	}
	out := make([]string, 0, min(len(ws), MaxWarnings)+1)
	for _, w := range ws[:min(len(ws), MaxWarnings)] {
		out = append(out, clip.Text(w, 2*clip.MaxValue))
	}
	if more := len(ws) - MaxWarnings; more > 0 {
		out = append(out, fmt.Sprintf("and %d more", more))
	}
	return out
}

// MaxChanges is how many changes a status or history entry keeps: a first
// cluster of thousands of nodes would not fit in one etcd value.
const MaxChanges = 100

// Change is a change of the cluster as status and history keep it: the
// score is its value (an integer without a policy's metric points), and
// the placement and group are those of a machine added under a policy's
// ordered groups.
type Change struct {
	Action    string   `json:"action"`
	Address   string   `json:"address"`
	Serial    string   `json:"serial,omitempty"`
	Score     *float64 `json:"score"`
	Reason    string   `json:"reason"`
	Placement string   `json:"placement,omitempty"`
	Group     string   `json:"group,omitempty"`
}

// GetStatus returns the last tick's status, or ErrNotFound. A value that
// does not parse is an error wrapping ErrInvalid that says where in it (a
// *strictjson.Error); fields it does not know are skipped, as a newer
// ckegen may write more.
func (s Storage) GetStatus(ctx context.Context) (Status, error) {
	var st Status
	v, err := s.Get(ctx, KeySabakanStatus)
	if err != nil {
		return st, err
	}
	if err := strictjson.UnmarshalIgnoringUnknown(v.Data, &st); err != nil {
		return Status{}, fmt.Errorf("stored %s: %w: %w", KeySabakanStatus, ErrInvalid, err)
	}
	return st, nil
}

// MaxStatusBytes bounds the stored status: a status always fits, however
// many and however long the warnings of a bad inventory are.
const MaxStatusBytes = 256 << 10

// PutStatus stores the status, cut to MaxStatusBytes (FitStatus), and
// with it the tick's memory when memory is not nil, in one transaction
// that needs leaderKey.
func (s Storage) PutStatus(ctx context.Context, leaderKey string, st Status, memory []byte) error {
	data, err := FitStatus(st)
	if err != nil {
		return err
	}
	writes := []Write{{Key: KeySabakanStatus, Data: data}}
	if memory != nil {
		writes = append(writes, Write{Key: KeyCKEGenMemory, Data: memory})
	}
	return s.PutLeading(ctx, leaderKey, writes...)
}

// FitStatus is st as JSON in at most MaxStatusBytes: when it is larger,
// the warnings are halved (the last line says how many more there were),
// then the list of the last changes is left out (their count stays),
// then the message is cut.
func FitStatus(st Status) ([]byte, error) {
	warnings, dropped := st.Warnings, 0
	for {
		data, err := json.Marshal(st)
		if err != nil || len(data) <= MaxStatusBytes {
			return data, err
		}
		switch {
		case len(warnings) > 1:
			keep := len(warnings) / 2
			dropped += len(warnings) - keep
			warnings = warnings[:keep:keep]
			st.Warnings = append(warnings, fmt.Sprintf("and %d more (the status is limited to %d KiB)", dropped, MaxStatusBytes>>10))
		case len(st.LastChanges) > 0:
			st.LastChanges = nil
		case len(st.Message) > 1024:
			st.Message = clip.Text(st.Message, 1024)
		default:
			return nil, fmt.Errorf("status of %d bytes: over the limit of %d", len(data), MaxStatusBytes)
		}
	}
}

// HistoryLimit is how many applied changes are kept.
const HistoryLimit = 100

// HistoryEntry is one applied change of the cluster (sabakan/history/<id>).
type HistoryEntry struct {
	ID               string    `json:"id"`
	Time             time.Time `json:"time"`
	Op               string    `json:"op"`
	Changes          []Change  `json:"changes"` // at most MaxChanges
	ChangeCount      int       `json:"changeCount"`
	TemplateRevision int64     `json:"templateRevision"`
	ClusterRevision  int64     `json:"clusterRevision"`
	// ReleasedBy says what released the plan this change belongs to: the
	// trigger set to schedule, or the end of the quiet time.
	ReleasedBy string `json:"releasedBy,omitempty"`
}

// AddHistory appends an entry, named after the etcd revision of the
// cluster write so that keys sort by time, and drops the oldest beyond
// HistoryLimit: both in one transaction that needs leaderKey.
func (s Storage) AddHistory(ctx context.Context, leaderKey string, e HistoryEntry) error {
	e.ID = fmt.Sprintf("%016x", e.ClusterRevision)
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	key := s.Key(KeySabakanHistory + e.ID)
	resp, err := s.Client.Get(ctx, s.Key(KeySabakanHistory), clientv3.WithPrefix(), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return err
	}
	ops := []clientv3.Op{clientv3.OpPut(key, string(data))}
	others := make([]string, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if string(kv.Key) != key {
			others = append(others, string(kv.Key))
		}
	}
	if excess := len(others) + 1 - HistoryLimit; excess > 0 {
		// One range from the oldest up to the first kept entry (and never
		// over the new one, which a transaction may not both put and
		// delete).
		end := min(others[excess], key)
		ops = append(ops, clientv3.OpDelete(others[0], clientv3.WithRange(end)))
	}
	tresp, err := s.Client.Txn(ctx).If(clientv3util.KeyExists(leaderKey)).Then(ops...).Commit()
	if err != nil {
		return err
	}
	if !tresp.Succeeded {
		return ErrNoLeader
	}
	return nil
}

// History returns the kept entries, oldest first.
func (s Storage) History(ctx context.Context) ([]HistoryEntry, error) {
	resp, err := s.Client.Get(ctx, s.Key(KeySabakanHistory), clientv3.WithPrefix(),
		clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		return nil, err
	}
	out := make([]HistoryEntry, 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		var e HistoryEntry
		if err := strictjson.UnmarshalIgnoringUnknown(kv.Value, &e); err != nil {
			return nil, fmt.Errorf("stored %s: %w: %w", strings.TrimPrefix(string(kv.Key), s.Prefix), ErrInvalid, err)
		}
		out = append(out, e)
	}
	return out, nil
}

// ChangeStatus is change management's part of sabakan/status
// (docs/design.md 11): what held the tick's writes and what is pending.
type ChangeStatus struct {
	// Trigger is the trigger the tick ran with.
	Trigger string `json:"trigger,omitempty"`
	// Pending is the plan from the cluster as the tick left it; nil when
	// the tick did not get as far as computing one.
	Pending *PlanSummary `json:"pending,omitempty"`
	// Quiet is the inventory's stillness; kept by every tick that
	// queried sabakan, whether or not a quiet time is set.
	Quiet *QuietStatus `json:"quiet,omitempty"`
	// Unhealthy counts the unhealthy nodes against max-unhealthy; nil when
	// no limit is set.
	Unhealthy *UnhealthyStatus `json:"unhealthy,omitempty"`
	// Release says what released the plan being applied (the trigger set
	// to schedule, or the end of quiet time); kept on the history entries
	// of its steps until the plan settles or is held again.
	Release string `json:"release,omitempty"`
}

// PlanSummary sums up the pending plan in the status.
type PlanSummary struct {
	// Result is how the plan ends: settled, refused, held or max-steps;
	// Reason the reason code of a plan refused or held.
	Result string `json:"result"`
	Reason string `json:"reason,omitempty"`
	// Steps is the number of steps pending.
	Steps int `json:"steps"`
	// NextOp and NextChanges are the first pending step (at most
	// MaxChanges of its NextChangeCount changes).
	NextOp          string   `json:"nextOp,omitempty"`
	NextChanges     []Change `json:"nextChanges,omitempty"`
	NextChangeCount int      `json:"nextChangeCount,omitempty"`
	// NextWait is what the first pending step waits for (the retire
	// wait, the quiet time, the trigger), and NextUntil until when (zero
	// for the trigger); "": it comes at the next tick.
	NextWait  string    `json:"nextWait,omitempty"`
	NextUntil time.Time `json:"nextUntil,omitzero"`
	// Error is a refused plan's error, or the words of the hold that
	// ends a held one.
	Error string `json:"error,omitempty"`
}

// QuietStatus is the inventory's stillness (docs/design.md 11.3).
type QuietStatus struct {
	// QuietTime is the quiet time the tick ran with ("0s": off).
	QuietTime string `json:"quietTime"`
	// InventorySince is when the leader first saw the set of serials
	// sabakan returns now.
	InventorySince time.Time `json:"inventorySince"`
	// Remaining is the time left before writes resume ("" when quiet).
	Remaining string `json:"remaining,omitempty"`
	// LastMoved names the machines that changed state most recently,
	// while that is less than the quiet time ago.
	LastMoved []string `json:"lastMoved,omitempty"`
}

// UnhealthyStatus is the count of unhealthy nodes against max-unhealthy
// (docs/design.md 11.4).
type UnhealthyStatus struct {
	Count        int    `json:"count"`
	Nodes        int    `json:"nodes"`
	MaxUnhealthy string `json:"maxUnhealthy"`
	// Limit is MaxUnhealthy for this many nodes.
	Limit int `json:"limit"`
	// Addresses are the first MaxChanges unhealthy nodes.
	Addresses []string `json:"addresses,omitempty"`
}

// GetPlan returns the stored plan's JSON, or ErrNotFound.
func (s Storage) GetPlan(ctx context.Context) ([]byte, error) {
	v, err := s.Get(ctx, KeySabakanPlan)
	return v.Data, err
}

// PutPlan stores a plan while leaderKey exists.
func (s Storage) PutPlan(ctx context.Context, leaderKey string, data []byte) error {
	return s.PutLeading(ctx, leaderKey, Write{Key: KeySabakanPlan, Data: data})
}
