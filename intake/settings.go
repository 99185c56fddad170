package intake

import (
	"context"
	"fmt"
	"slices"

	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// Setting names a setting, or a piece of state read with the settings.
type Setting string

// The settings, in the order a tick reads them.
const (
	SettingDisabled        Setting = "disabled"
	SettingOwner           Setting = "owner"
	SettingCKEGenDisabled  Setting = "ckegen-disabled"
	SettingTemplate        Setting = "template"
	SettingURL             Setting = "url"
	SettingVariables       Setting = "variables"
	SettingConstraints     Setting = "constraints"
	SettingCluster         Setting = "cluster"
	SettingClusterRevision Setting = "cluster-revision"
	SettingRebooting       Setting = "reboot-queue"
	SettingPolicy          Setting = "policy"
	SettingTrigger         Setting = "trigger"
	SettingQuietTime       Setting = "quiet-time"
	SettingMaxUnhealthy    Setting = "max-unhealthy"
)

// Kinds of settings.
const (
	// Switch: the switches and the owner, which decide whether a tick
	// runs the integration at all.
	Switch = iota
	// Input: what the generator is asked; a plan cannot be computed
	// without a valid value.
	Input
	// Holding: change management, which decides when a tick writes.
	Holding
)

// Row is one setting: where it is stored, how it is read, how it is
// refused and fixed, whether a change of it wakes the leader, and the
// CLI commands that act on it. Everything that reads, watches, sets or
// refuses a setting takes it from its row.
type Row struct {
	Setting Setting
	// Kind is Switch, Input or Holding.
	Kind int
	// Key is the setting's etcd key (relative to the prefix); Prefix is
	// set instead for what is read as every key under a prefix.
	Key, Prefix string
	// Reason is the reason code of an invalid value; Missing the one of
	// a missing value ("" when a missing value takes a default).
	Reason, Missing string
	// Stored names an invalid stored value for a person ("": the cause
	// names the key itself); Fix says how to fix it ("" when there is no
	// command for it).
	Stored, Fix string
	// Status is added to an invalid stored value's cause in the daemon's
	// status ("" for nothing).
	Status string
	// Absent is what the daemon and ckegenctl say of a missing value; Plan
	// is added for a person who can give the value to ckegenctl instead.
	Absent, Plan string
	// Wakes: a change of the key makes the leader tick at once.
	Wakes bool
	// Verbs are the CLI's commands that set or show the setting, under
	// its "sabakan" or "constraints" command ("sabakan set-url").
	Verbs []string
	// Set checks a value given on the command line, with the parse a
	// tick reads the setting with, and returns it as stored (nil: the
	// value removes the key); nil for a setting set otherwise (from a
	// file, by takeover).
	Set func(value string) ([]byte, error)
	// Show is the setting's value as its get command prints it.
	Show func(s *Settings) string

	read func(r *Reader, snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal
}

// Table is the table of settings, in the order a tick reads them: the
// switches and the owner first (they decide whether the tick runs at
// all), then what the generator is asked, then change management. A
// tick reports the first setting refused.
var Table = []Row{
	{Setting: SettingDisabled, Kind: Switch, Key: storage.KeySabakanDisabled, Reason: reason.InvalidDisabled,
		Fix:   "set it with ckegenctl sabakan enable or disable",
		Wakes: true, Verbs: []string{"sabakan enable", "sabakan disable", "sabakan is-enabled"}, read: (*Reader).disabled},
	{Setting: SettingOwner, Kind: Switch, Key: storage.KeyOwner, Reason: reason.InvalidOwner,
		Fix:   "set it with ckegenctl sabakan takeover, handback, enable or disable",
		Wakes: true, Verbs: []string{"sabakan takeover", "sabakan handback", "sabakan owner"}, read: (*Reader).owner},
	{Setting: SettingCKEGenDisabled, Kind: Switch, Key: storage.KeyCKEGenDisabled, Reason: reason.InvalidOwner,
		Fix:   "set it with ckegenctl sabakan takeover, handback, enable or disable",
		Wakes: true, Verbs: []string{"sabakan enable", "sabakan disable", "sabakan is-enabled"}, read: (*Reader).ckegenDisabled},
	{Setting: SettingTemplate, Kind: Input, Key: storage.KeySabakanTemplate, Reason: reason.InvalidTemplate, Missing: reason.NoTemplate,
		Stored: "the stored template is invalid", Fix: "set one with ckegenctl sabakan set-template",
		Absent: "no template: set one with ckegenctl sabakan set-template", Plan: ", or give --template",
		Wakes: true, Verbs: []string{"sabakan set-template", "sabakan get-template"}, read: (*Reader).template},
	{Setting: SettingURL, Kind: Input, Key: storage.KeySabakanURL, Missing: reason.NoURL,
		Absent: "no sabakan URL: set one with ckegenctl sabakan set-url",
		Wakes:  true, Verbs: []string{"sabakan set-url", "sabakan get-url"}, read: (*Reader).url,
		Set: func(v string) ([]byte, error) {
			u, err := ParseURL(v)
			return []byte(u), err
		},
		Show: func(s *Settings) string { return s.URL }},
	{Setting: SettingVariables, Kind: Input, Key: storage.KeySabakanQueryVariables, Reason: reason.InvalidVariables,
		Stored: "the stored query variables are invalid", Fix: "set them with ckegenctl sabakan set-variables",
		Wakes: true, Verbs: []string{"sabakan set-variables", "sabakan get-variables"}, read: (*Reader).variables},
	{Setting: SettingConstraints, Kind: Input, Key: storage.KeyConstraints, Reason: reason.InvalidConstraints,
		Stored: "the stored constraints are invalid", Fix: "set them with ckegenctl constraints set",
		Wakes: true, Verbs: []string{"constraints set", "constraints show"}, read: (*Reader).constraints},
	{Setting: SettingCluster, Kind: Input, Key: storage.KeyCluster, Reason: reason.InvalidCluster,
		Stored: "the stored cluster is invalid", Verbs: []string{"cluster get"}, read: (*Reader).currentCluster},
	{Setting: SettingClusterRevision, Kind: Input, Key: storage.KeyClusterRevision, Reason: reason.InvalidCluster,
		Stored: "the cluster's template revision", read: (*Reader).clusterRevision},
	{Setting: SettingRebooting, Kind: Input, Prefix: storage.KeyRebootsData, read: (*Reader).rebooting},
	{Setting: SettingPolicy, Kind: Input, Key: storage.KeySabakanPolicy, Reason: reason.InvalidPolicy,
		Stored: "the stored policy is invalid for the template", Fix: "fix it with ckegenctl sabakan set-policy, or clear it with clear-policy",
		Status: "; this is the policy stored in " + storage.KeySabakanPolicy + ": fix it with ckegenctl sabakan set-policy, or remove it with ckegenctl sabakan clear-policy",
		Wakes:  true, Verbs: []string{"sabakan set-policy", "sabakan get-policy", "sabakan clear-policy"}, read: (*Reader).compilePolicy},
	{Setting: SettingTrigger, Kind: Holding, Key: storage.KeySabakanTrigger, Reason: reason.InvalidTrigger,
		Fix:   "set it with ckegenctl sabakan trigger",
		Wakes: true, Verbs: []string{"sabakan trigger"}, read: (*Reader).trigger,
		Set: func(v string) ([]byte, error) {
			t, err := ParseTrigger(v)
			return []byte(t), err
		},
		Show: func(s *Settings) string { return s.Trigger }},
	{Setting: SettingQuietTime, Kind: Holding, Key: storage.KeySabakanQuietTime, Reason: reason.InvalidQuietTime,
		Fix:   "set it with ckegenctl sabakan set-quiet-time",
		Wakes: true, Verbs: []string{"sabakan set-quiet-time", "sabakan get-quiet-time"}, read: (*Reader).quietTime,
		Set: func(v string) ([]byte, error) {
			d, err := ParseQuietTime(v)
			return []byte(d.String()), err
		},
		Show: func(s *Settings) string { return s.QuietTime.String() }},
	{Setting: SettingMaxUnhealthy, Kind: Holding, Key: storage.KeySabakanMaxUnhealthy, Reason: reason.InvalidMaxUnhealthy,
		Fix:   "set it with ckegenctl sabakan set-max-unhealthy",
		Wakes: true, Verbs: []string{"sabakan set-max-unhealthy", "sabakan get-max-unhealthy"}, read: (*Reader).maxUnhealthy,
		Set: func(v string) ([]byte, error) {
			if v == MaxUnhealthyOff {
				return nil, nil
			}
			m, err := ParseMaxUnhealthy(v)
			if err != nil {
				return nil, fmt.Errorf("%w (%s removes the limit)", err, MaxUnhealthyOff)
			}
			return []byte(m.String()), nil
		},
		Show: func(s *Settings) string {
			if s.MaxUnhealthy == nil {
				return MaxUnhealthyOff
			}
			return s.MaxUnhealthy.String()
		}},
}

// rows indexes Table by setting.
var rows = map[Setting]*Row{}

func init() {
	for i := range Table {
		rows[Table[i].Setting] = &Table[i]
	}
}

// First is the first of refused, in the order of Table, whose setting is
// of kind; nil when there is none.
func First(refused map[Setting]*Refusal, kind int) *Refusal {
	for _, row := range Table {
		if r := refused[row.Setting]; r != nil && row.Kind == kind {
			return r
		}
	}
	return nil
}

// RowOf is the row of a setting.
func RowOf(s Setting) Row { return *rows[s] }

// Watched are the keys whose change makes the leader tick at once.
func Watched() []string {
	var keys []string
	for _, r := range Table {
		if r.Wakes {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// Request is what a snapshot of the settings reads: every key and prefix
// of the table, CKE's server's election and status (beside a CKE server),
// whether leaderKey exists, and the extra keys a caller keeps with them
// (the tick's memory). The cluster is not read again while its mod
// revision is the one the reader holds parsed.
func (r *Reader) Request(leaderKey string, extra ...string) storage.Request {
	req := storage.Request{LeaderKey: leaderKey, Counts: []string{storage.KeyLeader},
		Held: storage.KeyCluster, HeldRevision: r.cluster.rev}
	for _, row := range Table {
		if row.Prefix != "" {
			req.Prefixes = append(req.Prefixes, row.Prefix)
		} else {
			req.Keys = append(req.Keys, row.Key)
		}
	}
	req.Keys = append(req.Keys, storage.KeyCKEStatus)
	req.Keys = append(req.Keys, extra...)
	return req
}

// Load reads the given settings as a tick reads them, from one snapshot
// of only their keys: a setting command's check, a get command, ckegenctl's
// view of the owner. It returns the settings read (the others keep their
// zero values), the refusal of each setting refused, and the snapshot (for
// the mod revisions a guarded write compares). A switch setting brings
// what is known of CKE's server too.
func Load(ctx context.Context, st storage.Storage, settings ...Setting) (*Settings, map[Setting]*Refusal, *storage.Snapshot, error) {
	var req storage.Request
	var selected []*Row
	for _, row := range Table {
		if !slices.Contains(settings, row.Setting) {
			continue
		}
		selected = append(selected, rows[row.Setting])
		switch {
		case row.Prefix != "":
			req.Prefixes = append(req.Prefixes, row.Prefix)
		default:
			req.Keys = append(req.Keys, row.Key)
		}
		if row.Setting == SettingOwner {
			req.Keys = append(req.Keys, storage.KeyCKEStatus)
			req.Counts = append(req.Counts, storage.KeyLeader)
		}
	}
	snap, err := st.Read(ctx, req)
	if err != nil {
		return nil, nil, nil, err
	}
	var r Reader
	s := &Settings{}
	refused := map[Setting]*Refusal{}
	for _, row := range selected {
		if ref := row.read(&r, snap, WhatIf{}, s); ref != nil {
			refused[row.Setting] = ref
		}
	}
	return s, refused, snap, nil
}
