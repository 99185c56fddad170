package decision

import (
	"context"
	"errors"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// Gathered is everything one decision is made from, read once: the
// settings of one etcd snapshot, sabakan's answer (sanitized), the
// placement policy's metrics and the Kubernetes view. Decide reads
// nothing else.
type Gathered struct {
	// Now is when the decision is made.
	Now time.Time
	// Failure is what kept the gather from reading what the decision
	// needs (etcd, the leadership, sabakan, a metric provider,
	// Kubernetes), with its reason code; nil when nothing failed.
	Failure *reason.Error

	// Settings are the settings of the snapshot (nil: etcd was not
	// read); Refusals those refused, by setting, and Refused the first of
	// them in the table's order.
	Settings *intake.Settings
	Refusals map[intake.Setting]*intake.Refusal
	Refused  *intake.Refusal
	// HasCluster: a cluster is stored.
	HasCluster bool
	// Config, PastGates and Generate are what was asked (Ask).
	Config    Config
	PastGates bool
	Generate  func(generator.Input, bool) (*generator.Result, error)
	// Stored is the memory stored with the last status, when the gather
	// was asked for it (the first tick of a leadership, and views that
	// decide as the leader does); StoredErr why it could not be used.
	Stored    *Memory
	StoredErr error
	// LastModel and LastConstraintsSource are the constraints model and
	// their source the last status says (Ask.Last, or the stored
	// memory's): the hold on unchosen constraints reads them
	// (unchosenHold).
	LastModel, LastConstraintsSource string
	// SettingsID identifies the watched settings as read (their keys'
	// mod revisions): a change of it resets the backoff.
	SettingsID string

	// Asked: sabakan was asked (the settings let the integration run and
	// the gather went that far). Machines are its answer, sanitized
	// (nil: no answer), Roles the roles of every machine it returned,
	// before sanitizing (the typo guard's input).
	Asked    bool
	Machines []*machine.Machine
	Roles    []string
	// Context is every machine sabakan has, raw, when the gather was
	// asked for it (Ask.Context): for drawing the data center around the
	// answer, never an input of Decide.
	Context []machine.Machine
	// Metrics are the policy's metric values (nil: none).
	Metrics *policy.Values
	// Kubernetes is the view of the Nodes the decision uses (nil: the
	// host has none, or the gather did not get to it); HostView: the
	// host has one.
	Kubernetes *kubenodes.View
	HostView   bool
	// Warnings are what the operator should fix although the tick can
	// go on: settings that work but look wrong, machines left out,
	// metrics without values.
	Warnings []string

	// QueryTime and MetricsTime are how long sabakan and the metric
	// providers took (0: not asked).
	QueryTime, MetricsTime time.Duration
}

// Input is the generator's input of a gather that read the inventory,
// with retireWait the retire wait in force.
func (g *Gathered) Input(retireWait time.Duration) generator.Input {
	return g.Settings.Input(intake.Inventory{Machines: g.Machines, Roles: g.Roles, Metrics: g.Metrics, NodeTaints: g.Kubernetes.GeneratorTaints()},
		g.Now, retireWait)
}

// Files is the gather of an offline view: the settings and the machines
// read from files (intake.ReadFiles) at now, taken as Gather takes what
// it reads from etcd and sabakan (raw sanitized, its warnings kept), so
// that Decide decides on them as on the leader's. There is no owner, no
// switch and no memory: the integration runs standalone.
func Files(s *intake.Settings, raw []machine.Machine, now time.Time, cfg Config) *Gathered {
	g := &Gathered{Now: now, Config: cfg, Settings: s, HasCluster: s.Current != nil, Asked: true, Generate: generator.Tick}
	g.Warnings = append(g.Warnings, s.Warnings...)
	g.take(raw)
	return g
}

// take takes sabakan's answer raw: sanitized into Machines, with the
// roles of every machine it returned (the typo guard's input) and a
// warning for each machine ignored or changed.
func (g *Gathered) take(raw []machine.Machine) {
	var warnings []string
	g.Machines, g.Roles, warnings = intake.Sanitize(raw)
	g.Warnings = append(g.Warnings, warnings...)
}

// Gatherer reads what a decision is made from. The step holds one; the
// views that decide as the leader does (ckegenctl's plan, owner, a
// setting's --dry-run) make one and read only. Not safe for concurrent
// use: it keeps the parsed cluster and the compiled policy between
// gathers (intake.Reader).
type Gatherer struct {
	Storage storage.Storage
	// EtcdTimeout bounds the snapshot's read when not 0 (a view's: the
	// step's etcd client bounds every call itself, storage.WithDeadline),
	// so that a slow sabakan is not taken for a slow etcd.
	EtcdTimeout time.Duration
	sabakan     sabakan.Clients
	settings    intake.Reader
	now         func() time.Time
}

// NewGatherer returns a gatherer reading st and sabakan with o, at the
// time now gives.
func NewGatherer(st storage.Storage, o sabakan.Options, now func() time.Time) *Gatherer {
	if now == nil {
		now = time.Now
	}
	return &Gatherer{Storage: st, sabakan: sabakan.Clients{Options: o}, now: now}
}

// Ask says what a gather reads.
type Ask struct {
	// Memory: read the memory stored with the last status too.
	Memory bool
	// Last is the last status as the host's memory keeps it
	// (Memory.Last: the step's, or the leader's memory a view read);
	// with Memory, the stored memory's replaces it.
	Last storage.Status
	// WhatIf replaces stored settings (a view's what-if).
	WhatIf intake.WhatIf
	// Kubernetes is the host's view of the Nodes (nil: none).
	Kubernetes kubenodes.Kubernetes
	// SettingsOnly: stop after the settings (a view of who writes).
	SettingsOnly bool
	// Config is how the decision will be made: the gather reads the
	// inventory only when the rungs before it let the tick go on, or
	// PastGates asks it to go past the rungs a view can see beyond (a
	// switch, the owner, CKE's pace, a refused switch or change
	// setting), as if the integration ran: the plan a takeover, an
	// enable or a fix would start (Decision.Gated says what holds the
	// leader).
	Config    Config
	PastGates bool
	// Generate is the generator's decision the host asks for, given the
	// input and whether the template changed since the cluster was built
	// (nil: generator.Tick, the usual tick; a CKE server that becomes
	// leader asks generator.Init).
	Generate func(generator.Input, bool) (*generator.Result, error)
	// Rehearse, when not nil, rehearses a change of sabakan's inventory
	// (a view's --assume): sabakan is asked with the variables'
	// conditions on states left out, and Rehearse makes of what it holds
	// the answer the query would give once it changed, applying states
	// itself, and the policy (its failure domains: Key.Racked). A tick
	// sets none.
	Rehearse func(held []machine.Machine, states sabakan.StateFilter, pol *policy.Policy) ([]machine.Machine, error)
	// Context: fetch every machine of sabakan too, beside the query, into
	// Gathered.Context (a map draws the racks around the answer).
	Context bool
}

// Gather reads what one decision is made from, as the leader holding
// leaderKey ("" for a view, which leads nothing: its snapshot checks no
// election key). What fails is in the result's Failure; a gather stops
// where the decision needs no more: a switch, the owner, CKE's pace or a
// missing setting decides the tick before sabakan is asked.
func (gr *Gatherer) Gather(ctx context.Context, leaderKey string, a Ask) *Gathered {
	g := &Gathered{Now: gr.now(), Config: a.Config, HostView: a.Kubernetes != nil, PastGates: a.PastGates, Generate: a.Generate}
	if g.Generate == nil {
		g.Generate = generator.Tick
	}
	req := gr.settings.Request(leaderKey)
	if a.Memory {
		req.Keys = append(req.Keys, storage.KeyCKEGenMemory)
	}
	snap, err := gr.read(ctx, req)
	if err != nil {
		g.Failure = reason.Fail(reason.EtcdError, err)
		return g
	}
	// A leader learns that its lease is gone only at the next keepalive;
	// the election key in the snapshot keeps a deposed leader from
	// querying sabakan. (The cluster write is guarded by the key in any
	// case.)
	if leaderKey != "" && !snap.Leading {
		g.Failure = reason.Fail(reason.LostLeadership, storage.ErrNoLeader)
		return g
	}
	last := a.Last
	if a.Memory {
		g.Stored = &Memory{}
		if err := g.Stored.Recall(snap.Get(storage.KeyCKEGenMemory)); err != nil {
			g.StoredErr = err
		}
		last = g.Stored.Last
	}
	g.LastModel, g.LastConstraintsSource = last.Model, last.ConstraintsSource
	s, refused := gr.settings.ReadEach(snap, a.WhatIf)
	g.Settings, g.Refusals, g.HasCluster, g.SettingsID = s, refused, snap.Get(storage.KeyCluster).Exists(), intake.SettingsID(snap)
	g.Refused = intake.First(refused)
	if newDecision(g).climbSettings() || a.SettingsOnly {
		// A rung decided from the settings alone decides the tick (Decide
		// climbs them again, on what was gathered): sabakan is not asked.
		return g
	}
	g.Warnings = append(g.Warnings, s.Warnings...)
	g.Asked = true
	if g.Failure = gr.query(ctx, g, a); g.Failure != nil {
		return g
	}
	if g.Failure = gr.fetchMetrics(ctx, g); g.Failure != nil {
		return g
	}
	g.Failure = gr.view(ctx, g, a.Kubernetes)
	return g
}

// read reads one snapshot, within EtcdTimeout when it is set.
func (gr *Gatherer) read(ctx context.Context, req storage.Request) (*storage.Snapshot, error) {
	if gr.EtcdTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, gr.EtcdTimeout)
		defer cancel()
	}
	return gr.Storage.Read(ctx, req)
}

// query asks sabakan for the machines of the user's variables and
// sanitizes them, keeping the roles of every machine returned (for the
// generator's typo guard) and a warning for each machine ignored or
// changed; with rehearse, the answer is the rehearsal's (Ask.Rehearse);
// with Ask.Context, every machine too, in parallel.
func (gr *Gatherer) query(ctx context.Context, g *Gathered, a Ask) *reason.Error {
	client, err := gr.sabakan.For(g.Settings.URL)
	if err != nil {
		return reason.Fail(reason.QueryError, err)
	}
	vars, states, rehearse := g.Settings.Variables, sabakan.StateFilter{}, a.Rehearse
	if rehearse != nil {
		vars, states = vars.WithoutStates()
	}
	var all errgroup.Group
	if a.Context {
		every := sabakan.Variables{Having: &sabakan.MachineParams{}, NotHaving: &sabakan.MachineParams{}}
		all.Go(func() (err error) { g.Context, err = client.SearchMachines(ctx, every); return err })
	}
	start := time.Now() // elapsed time, for the metrics
	raw, err := client.SearchMachines(ctx, vars)
	g.QueryTime = time.Since(start)
	err = errors.Join(err, all.Wait())
	switch {
	case errors.Is(err, sabakan.ErrUnreachable):
		return reason.Fail(reason.SabakanUnreachable, err)
	case err != nil:
		return reason.Fail(reason.QueryError, err)
	}
	if rehearse != nil {
		if raw, err = rehearse(raw, states, g.Settings.Policy); err != nil {
			return reason.Fail(reason.QueryError, err)
		}
	}
	g.take(raw)
	return nil
}

// fetchMetrics gets the values of the policy's metrics for the machines,
// once per tick and before any decision (docs/design.md 12.3); none
// without a policy or without metrics. A provider that fails is
// METRICS_UNAVAILABLE: the tick decides nothing, as when sabakan does not
// answer. What Prometheus warned about, and a metric that no machine of
// the tick has a value of, are warnings.
func (gr *Gatherer) fetchMetrics(ctx context.Context, g *Gathered) *reason.Error {
	start := time.Now() // elapsed time, for the metrics
	vals, _, warnings, err := intake.FetchMetrics(ctx, g.Settings.Policy, g.Machines)
	if p := g.Settings.Policy; p != nil && len(p.Metrics()) > 0 {
		g.MetricsTime = time.Since(start)
	}
	if err != nil {
		return reason.Fail(reason.MetricsUnavailable, err)
	}
	g.Metrics = vals
	g.Warnings = append(g.Warnings, warnings...)
	return nil
}

// view reads the host's view of the Kubernetes Nodes (section 13). A
// failure is KUBERNETES_UNREACHABLE: without the Nodes a tick could keep
// a control plane Kubernetes has given up on, so it decides nothing.
func (gr *Gatherer) view(ctx context.Context, g *Gathered, k kubenodes.Kubernetes) *reason.Error {
	if k == nil {
		return nil
	}
	v, err := k.View(ctx)
	if err != nil {
		return reason.Fail(reason.KubernetesUnreachable, err)
	}
	if v.At.IsZero() && v.Known {
		v.At = g.Now
	}
	g.Kubernetes = &v
	return nil
}

// World is the world a decision on in decides on: in, the breaker's
// limit and the query's conditions on states of the settings.
func (g *Gathered) World(in generator.Input) *world.World {
	s := g.Settings
	w := &world.World{In: in, TemplateChanged: s.TemplateChanged(), Interval: time.Duration(g.Config.Interval)}
	if lim := s.MaxUnhealthy; lim != nil {
		w.MaxUnhealthy = lim
	}
	_, w.Query = s.Variables.WithoutStates()
	return w
}
