package intake

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ckegen/ckegen/constraints"
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

// Kind is what a setting decides, which says what a tick does when it is
// refused.
type Kind int

// Kinds of settings.
const (
	// Switch: the switches and the owner, which decide whether a tick
	// runs the integration at all.
	Switch Kind = iota
	// Input: what the generator is asked; a plan cannot be computed
	// without a valid value.
	Input
	// Holding: change management, which decides when a tick writes.
	Holding
)

// String is the kind as the documents name it.
func (k Kind) String() string {
	switch k {
	case Switch:
		return "switch"
	case Input:
		return "input"
	case Holding:
		return "holding"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Verb is a ckegenctl command that sets or shows a setting, with its
// help.
type Verb struct {
	// Path is the command under ckegenctl: "sabakan set-url".
	Path string
	// Args is what the command takes, as its usage line says it: "URL".
	Args string
	// Short and Long are the command's help; both "" where another row
	// gives it (enable is both switches'), or where the command is not
	// one setting's and its own file gives it (takeover).
	Short, Long string
	// Choices are the values the command takes, for completion and a
	// "did you mean".
	Choices []string
	// Signed: the value may start with "-" (a negative duration or
	// count), which is then a value, not a flag.
	Signed bool
}

// Name is the command's name: "set-url".
func (v Verb) Name() string { return v.Path[strings.LastIndexByte(v.Path, ' ')+1:] }

// Use is the command's usage line: "set-url URL".
func (v Verb) Use() string { return strings.TrimSpace(v.Name() + " " + v.Args) }

// Row is one setting: where it is stored, what it is, how it is refused
// and fixed, whether a change of it wakes the leader, and the CLI
// commands that act on it with their help. Reader.read says how each is
// read. Everything that reads, watches, sets, documents or refuses a
// setting takes it from its row.
type Row struct {
	Setting Setting
	Kind    Kind
	// Key is the setting's etcd key (relative to the prefix); Prefix is
	// set instead for what is read as every key under a prefix.
	Key, Prefix string
	// Also are keys the read needs besides Key (CKE's status for the
	// owner); Counts are prefixes whose keys it counts (CKE's election).
	Also, Counts []string
	// About says what the setting is, in docs/daemon.md's table.
	About string
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
	// Wakes: a change of the key, or of a key under the prefix, makes the
	// leader tick at once.
	Wakes bool
	// Verbs are the CLI's commands that set or show the setting. For a
	// setting with Set, the first sets and the second, if any, shows.
	Verbs []Verb
	// Set checks a value given on the command line, with the parse a
	// tick reads the setting with, and returns it as stored (nil: the
	// value removes the key); nil for a setting set otherwise (from a
	// file, by takeover). ckegenctl builds its commands from the row.
	Set func(value string) ([]byte, error)
	// Show is the setting's value as its get command prints it.
	Show func(s *Settings) string
}

// Table is the table of settings, in the order a tick reads them: the
// switches and the owner first (they decide whether the tick runs at
// all), then what the generator is asked, then change management. A
// tick reports the first setting refused.
var Table = []Row{
	{Setting: SettingDisabled, Kind: Switch, Key: storage.KeySabakanDisabled, About: "CKE's switch of the integration (`true` or `false`)",
		Reason: reason.InvalidDisabled, Fix: "set it with ckegenctl sabakan enable or disable", Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan enable", Short: "enable the sabakan integration",
				Long: "enable the sabakan integration." + switchHelp},
			{Path: "sabakan disable", Short: "disable the sabakan integration (the cluster stays as it is)",
				Long: "disable the sabakan integration (the cluster stays as it is)." + switchHelp},
			{Path: "sabakan is-enabled", Short: "print true if the sabakan integration is enabled",
				Long: "print true if the sabakan integration is enabled, false otherwise." + switchHelp},
		}},
	{Setting: SettingOwner, Kind: Switch, Key: storage.KeyOwner, Also: []string{storage.KeyCKEStatus}, Counts: []string{storage.KeyLeader},
		About:  "which integration writes the cluster beside a CKE server: `cke` (or absent) or `ckegen`",
		Reason: reason.InvalidOwner, Fix: "set it with ckegenctl sabakan takeover, handback, enable or disable", Wakes: true,
		Verbs: []Verb{{Path: "sabakan takeover"}, {Path: "sabakan handback"}, {Path: "sabakan owner"}}},
	{Setting: SettingCKEGenDisabled, Kind: Switch, Key: storage.KeyCKEGenDisabled, About: "ckegen's own switch, while ckegen owns the integration",
		Reason: reason.InvalidOwner, Fix: "set it with ckegenctl sabakan takeover, handback, enable or disable", Wakes: true,
		Verbs: []Verb{{Path: "sabakan enable"}, {Path: "sabakan disable"}, {Path: "sabakan is-enabled"}}},
	{Setting: SettingTemplate, Kind: Input, Key: storage.KeySabakanTemplate, About: "the cluster template (JSON, with CKE's defaults)",
		Reason: reason.InvalidTemplate, Missing: reason.NoTemplate,
		Stored: "the stored template is invalid", Fix: "set one with ckegenctl sabakan set-template",
		Absent: "no template: set one with ckegenctl sabakan set-template", Plan: ", or give --template", Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan set-template", Args: "FILE", Short: "validate and store the cluster template (YAML or JSON; - for stdin)",
				Long: `set-template validates the template, fills CKE's defaults for
options.etcd.volume_name and options.kubelet.cri_endpoint when absent, and
stores it as JSON. An invalid template is refused and nothing is stored.
Before storing it, the generator runs dry on the current inventory with the
new template, as --dry-run does, and its warnings (a template role that
matches no machine) are printed on stderr; the template is stored all the
same. With --dry-run nothing is stored either: the plan the daemon would follow
with this template is printed instead (ckegenctl sabakan plan --template FILE).`},
			{Path: "sabakan get-template", Short: "print the stored template"},
		}},
	{Setting: SettingURL, Kind: Input, Key: storage.KeySabakanURL, About: "sabakan's GraphQL URL",
		Missing: reason.NoURL, Absent: "no sabakan URL: set one with ckegenctl sabakan set-url", Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan set-url", Args: "URL", Short: "set sabakan's URL (/graphql is appended when missing)"},
			{Path: "sabakan get-url", Short: "print sabakan's URL"},
		},
		Set: func(v string) ([]byte, error) {
			u, err := ParseURL(v)
			return []byte(u), err
		},
		Show: func(s *Settings) string { return s.URL }},
	{Setting: SettingVariables, Kind: Input, Key: storage.KeySabakanQueryVariables, About: "the variables of sabakan's `searchMachines` query",
		Reason: reason.InvalidVariables, Stored: "the stored query variables are invalid", Fix: "set them with ckegenctl sabakan set-variables",
		Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan set-variables", Args: "FILE",
				Short: `set the query variables: {"having": MachineParams|null, "notHaving": MachineParams|null} (- for stdin)`,
				Long: `set-variables validates the variables of sabakan's searchMachines query
and stores them as given. A key left out keeps the query's default (notHaving
skips boot servers and RETIRED machines); null means no condition. With
--dry-run nothing is stored: the plan the daemon would follow with these
variables is printed instead (ckegenctl sabakan plan --variables FILE).`},
			{Path: "sabakan get-variables", Short: "print the stored query variables"},
		}},
	{Setting: SettingConstraints, Kind: Input, Key: storage.KeyConstraints, About: "the constraints, of the count or the rate model ([models.md](models.md))",
		Reason: reason.InvalidConstraints, Stored: "the stored constraints are invalid", Fix: "set them with ckegenctl constraints set",
		Wakes: true,
		Verbs: []Verb{
			{Path: "constraints set", Args: "NAME VALUE", Short: "set one constraint; the result is validated before it is stored",
				Long: constraintsSetHelp(), Choices: constraints.Names},
			{Path: "constraints show", Short: "print the constraints of the model in force as JSON, 0 for those unset; the model on stderr",
				Long: `Show prints the constraints as JSON on stdout, as CKE's ckecli does: the keys
of the model in force, with CKE's 0 for those never set (CKE v1.35.4's
defaults when no constraints are stored). In the count model they are control-plane-count,
minimum-workers and maximum-workers; in the rate model (CKE v1.35)
control-plane-count and minimum-workers-rate; then CKE's three queue settings.
A line on stderr names the model ("model: count" or "model: rate"). The JSON
can be given back to --constraints.`},
		}},
	{Setting: SettingCluster, Kind: Input, Key: storage.KeyCluster, About: "the cluster the daemon writes (cluster.yml as JSON)",
		Reason: reason.InvalidCluster, Stored: "the stored cluster is invalid",
		Verbs: []Verb{{Path: "cluster get"}}},
	{Setting: SettingClusterRevision, Kind: Input, Key: storage.KeyClusterRevision, About: "the mod revision of the template the cluster was built from",
		Reason: reason.InvalidCluster, Stored: "the cluster's template revision"},
	{Setting: SettingRebooting, Kind: Input, Prefix: storage.KeyRebootsData, About: "CKE's reboot queue: its draining and rebooting nodes are left as they are"},
	{Setting: SettingPolicy, Kind: Input, Key: storage.KeySabakanPolicy, About: "the placement policy ([policy.md](policy.md))",
		Reason: reason.InvalidPolicy, Stored: "the stored policy is invalid for the template",
		Fix:    "fix it with ckegenctl sabakan set-policy, or clear it with clear-policy",
		Status: "; this is the policy stored in " + storage.KeySabakanPolicy + ": fix it with ckegenctl sabakan set-policy, or remove it with ckegenctl sabakan clear-policy",
		Wakes:  true,
		Verbs: []Verb{
			{Path: "sabakan set-policy", Args: "FILE", Short: "validate and store the placement policy (YAML or JSON; - for stdin)",
				Long: `set-policy validates the placement policy (constraints, metrics, providers,
groups, stickiness) and checks that each placement names a template of the
stored template: "control-plane" or a worker template's role. It stores the
policy as JSON. An invalid policy is refused, naming the path of each
problem, and nothing is stored. Without a stored template the placements
are not checked (a warning says so); the daemon checks them at every tick.`},
			{Path: "sabakan get-policy", Short: "print the stored placement policy"},
			{Path: "sabakan clear-policy", Short: "remove the placement policy (machines are placed by role and weight only)"},
		}},
	{Setting: SettingTrigger, Kind: Holding, Key: storage.KeySabakanTrigger, About: "`planning` (plan, change nothing) or `schedule` (apply; the default)",
		Reason: reason.InvalidTrigger, Fix: "set it with ckegenctl sabakan trigger", Wakes: true,
		Verbs: []Verb{{Path: "sabakan trigger", Args: "[planning|schedule]",
			Short: "print or set the trigger: planning (plan only, change nothing) or schedule (apply)",
			Long: `With no argument, trigger prints the trigger (schedule when never set).

planning: the daemon computes the plan at every tick and stores it
(ckegenctl sabakan plan --stored), and writes no cluster.
schedule: the daemon applies the changes one step per tick, recomputed from
the live state at every tick (CKE's behaviour).

A change wakes the daemon at once.`,
			Choices: []string{TriggerPlanning, TriggerSchedule}}},
		Set: func(v string) ([]byte, error) {
			t, err := ParseTrigger(v)
			return []byte(t), err
		},
		Show: func(s *Settings) string { return s.Trigger }},
	{Setting: SettingQuietTime, Kind: Holding, Key: storage.KeySabakanQuietTime, About: "how long the inventory must be still before a write (a Go duration; 0 or absent: off)",
		Reason: reason.InvalidQuietTime, Fix: "set it with ckegenctl sabakan set-quiet-time", Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan set-quiet-time", Args: "DURATION", Signed: true,
				Short: "write a cluster only after the inventory was still for DURATION (0 turns it off)",
				Long: `set-quiet-time sets how long the inventory must have been still before
the daemon writes a cluster: every machine's state unchanged for DURATION
(sabakan's status.duration), and no machine added to or removed from the
query's result for DURATION. Until then the daemon plans, as with the
trigger planning. DURATION is a Go duration such as 10m or 1h30m; 0 turns
quiet time off.`},
			{Path: "sabakan get-quiet-time", Short: "print the quiet time (0s: off)"},
		},
		Set: func(v string) ([]byte, error) {
			d, err := ParseQuietTime(v)
			return []byte(d.String()), err
		},
		Show: func(s *Settings) string { return s.QuietTime.String() }},
	{Setting: SettingMaxUnhealthy, Kind: Holding, Key: storage.KeySabakanMaxUnhealthy, About: "how many unhealthy nodes stop membership changes (`N` or `N%`; absent: no limit)",
		Reason: reason.InvalidMaxUnhealthy, Fix: "set it with ckegenctl sabakan set-max-unhealthy", Wakes: true,
		Verbs: []Verb{
			{Path: "sabakan set-max-unhealthy", Args: "VALUE", Signed: true,
				Short: "stop membership changes while more nodes than VALUE (5, or 40% of the nodes) are unhealthy",
				Long: `set-max-unhealthy sets how many of the cluster's nodes may be unhealthy
(machine gone from sabakan, or neither HEALTHY, UPDATING nor UNINITIALIZED;
rebooting nodes not counted) before the daemon stops changing membership:
above it, nodes are neither added, removed, promoted nor demoted, and only
state taints follow the machines. So many failures at once usually mean a
switch, a power feed or sabakan itself, which replacing machines would make
worse.

VALUE is a count (5) or a percentage of the cluster's nodes (40%, rounded
down), or off to remove the limit.`},
			{Path: "sabakan get-max-unhealthy", Short: "print the limit of unhealthy nodes (off: none)"},
		},
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

// read reads the setting of row from snap into s, w applied: the one
// place that names the function reading each setting. A setting one
// stored value sets is read by value with its parse; the others by a
// method of their own (read.go).
func (r *Reader) read(row *Row, snap *storage.Snapshot, w WhatIf, s *Settings) *Refusal {
	switch row.Setting {
	case SettingDisabled:
		return r.disabled(snap, s)
	case SettingOwner:
		return r.owner(snap, s)
	case SettingCKEGenDisabled:
		return r.ckegenDisabled(snap, s)
	case SettingTemplate:
		return r.template(snap, w, s)
	case SettingURL:
		return r.url(snap, s)
	case SettingVariables:
		return r.variables(snap, w, s)
	case SettingConstraints:
		return r.constraints(snap, w, s)
	case SettingCluster:
		return r.currentCluster(snap, s)
	case SettingClusterRevision:
		return r.clusterRevision(snap, s)
	case SettingRebooting:
		s.Rebooting = rebootingNodes(snap.Under(row.Prefix))
		return nil
	case SettingPolicy:
		return r.compilePolicy(snap, w, s)
	case SettingTrigger:
		s.Trigger, s.TriggerRevision = TriggerSchedule, snap.Get(row.Key).ModRevision
		return value(snap, row, ParseTrigger, &s.Trigger)
	case SettingQuietTime:
		return value(snap, row, ParseQuietTime, &s.QuietTime)
	case SettingMaxUnhealthy:
		return value(snap, row, parseMaxUnhealthyLimit, &s.MaxUnhealthy)
	}
	panic(fmt.Sprintf("intake: the setting %s has a row and no read", row.Setting))
}

// value reads a setting one stored value sets, with its parse: an absent
// key leaves *dst as it is (the setting's default), a value that does not
// parse is refused as invalid with its row's fix.
func value[T any](snap *storage.Snapshot, row *Row, parse func(string) (T, error), dst *T) *Refusal {
	v := snap.Get(row.Key)
	if !v.Exists() {
		return nil
	}
	x, err := parse(string(v.Data))
	if err != nil {
		return invalidStored(row.Setting, err)
	}
	*dst = x
	return nil
}

// rows indexes Table by setting.
var rows = map[Setting]*Row{}

func init() {
	for i := range Table {
		rows[Table[i].Setting] = &Table[i]
	}
}

// First is the first of refused, in the order of Table, whose setting is
// of one of kinds (of any kind without kinds); nil when there is none.
func First(refused map[Setting]*Refusal, kinds ...Kind) *Refusal {
	for _, row := range Table {
		if r := refused[row.Setting]; r != nil && (len(kinds) == 0 || slices.Contains(kinds, row.Kind)) {
			return r
		}
	}
	return nil
}

// RowOf is the row of a setting.
func RowOf(s Setting) Row { return *rows[s] }

// VerbOf is the verb of the ckegenctl command path ("sabakan set-url")
// in the row that gives its help; false when no row does.
func VerbOf(path string) (Verb, bool) {
	for _, row := range Table {
		for _, v := range row.Verbs {
			if v.Path == path && v.Short != "" {
				return v, true
			}
		}
	}
	return Verb{}, false
}

// Watched are the keys whose change makes the leader tick at once.
func Watched() []string {
	var keys []string
	for _, r := range Table {
		if r.Wakes && r.Key != "" {
			keys = append(keys, r.Key)
		}
	}
	return keys
}

// WatchedPrefixes are the prefixes under which a change makes the leader
// tick at once.
func WatchedPrefixes() []string {
	var prefixes []string
	for _, r := range Table {
		if r.Wakes && r.Prefix != "" {
			prefixes = append(prefixes, r.Prefix)
		}
	}
	return prefixes
}

// add adds what row reads to req.
func (row *Row) add(req *storage.Request) {
	if row.Prefix != "" {
		req.Prefixes = append(req.Prefixes, row.Prefix)
	} else {
		req.Keys = append(req.Keys, row.Key)
	}
	req.Keys = append(req.Keys, row.Also...)
	req.Counts = append(req.Counts, row.Counts...)
}

// Request is what a snapshot of the settings reads: every key and prefix
// of the table with what their reads need besides (CKE's server's
// election and status), whether leaderKey exists, and the extra keys a
// caller keeps with them (the tick's memory). The cluster is not read
// again while its mod revision is the one the reader holds parsed.
func (r *Reader) Request(leaderKey string, extra ...string) storage.Request {
	req := storage.Request{LeaderKey: leaderKey, Held: storage.KeyCluster, HeldRevision: r.cluster.rev}
	for i := range Table {
		Table[i].add(&req)
	}
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
	for i := range Table {
		if row := &Table[i]; slices.Contains(settings, row.Setting) {
			selected = append(selected, row)
			row.add(&req)
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
		if ref := r.read(row, snap, WhatIf{}, s); ref != nil {
			refused[row.Setting] = ref
		}
	}
	return s, refused, snap, nil
}
