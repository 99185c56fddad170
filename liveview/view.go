// Package liveview reads, without writing anything, what the data center
// and the daemon look like now: the cluster, status and history from etcd,
// and the machines from sabakan with the stored URL and query variables.
// `ckegenctl sabakan map` and the daemon's page at / draw from it.
//
// sabakan's answer is kept for a short while, so that a page refreshed by
// many browsers queries sabakan at most once per CacheTTL.
package liveview

import (
	"context"
	"errors"
	"fmt"
	"github.com/ckegen/ckegen/decision"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Defaults of Options.
const (
	DefaultCacheTTL     = 10 * time.Second
	DefaultHistoryLimit = 10
	DefaultEtcdTimeout  = 10 * time.Second
)

// NextStep is the next step of a pending plan.
type NextStep struct {
	Op      string
	Changes []generator.Change
	// Steps is the number of steps the plan has left, this one included.
	Steps      int
	ComputedAt time.Time
}

// Options configure a Reader. Zero fields take their defaults.
type Options struct {
	// Sabakan configures the sabakan client (timeout, TLS).
	Sabakan sabakan.Options
	// CacheTTL is how long sabakan's answer is reused.
	CacheTTL time.Duration
	// EtcdTimeout bounds the etcd reads of a snapshot (sabakan's requests
	// have Sabakan.Timeout each).
	EtcdTimeout time.Duration
	// HistoryLimit is how many history entries a snapshot keeps.
	HistoryLimit int
	// Now is the clock (time.Now by default).
	Now func() time.Time
	// NextStep returns the pending plan's next step, or nil when there is
	// none; nil means no plan is read.
	NextStep func(ctx context.Context, st storage.Storage) (*NextStep, error)
}

// Reader reads snapshots. It is safe for concurrent use.
type Reader struct {
	st   storage.Storage
	opts Options

	mu       sync.Mutex // held during a read, so concurrent readers share a query
	cached   *answer
	sabakan  sabakan.Clients
	settings intake.Reader
	gather   *decision.Gatherer
}

// answer is sabakan's answer to both queries, with what it answered.
type answer struct {
	url, vars string
	at        time.Time
	all       []machine.Machine
	selected  map[string]bool
}

// NewReader returns a Reader of the keys of st.
func NewReader(st storage.Storage, o Options) *Reader {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.EtcdTimeout <= 0 {
		o.EtcdTimeout = DefaultEtcdTimeout
	}
	if o.HistoryLimit <= 0 {
		o.HistoryLimit = DefaultHistoryLimit
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Reader{st: st, opts: o, sabakan: sabakan.Clients{Options: o.Sabakan}}
}

// View is what the page shows.
type View struct {
	Time time.Time
	// ClusterName is the current cluster's name ("" when there is none).
	ClusterName string
	// Map is the rack map; nil when it could not be drawn, with MapErr
	// saying why (no URL, sabakan unreachable, ...).
	Map    *Map
	MapErr error
	// Status is the last tick's result; nil when none was recorded.
	// Silence says that its host stopped calling the step, when it did
	// (decision.Silence: "" while it calls at its pace).
	Status  *storage.Status
	Silence string
	// Acting is who leads now, read with the status (nil without one).
	Acting *Actor
	// History holds the last entries, newest first.
	History []storage.HistoryEntry
	// NextStep is the pending plan's next step; nil when there is none.
	NextStep *NextStep
	// Notes are things the map could not take into account.
	Notes []string
	// Runway is the leader's last forecast.
	Runway Runway
}

// View reads everything the page shows. It fails only when etcd does
// not answer; a map that cannot be drawn is reported in MapErr.
func (r *Reader) View(ctx context.Context) (*View, error) {
	s := &View{Time: r.opts.Now()}
	ectx, cancel := context.WithTimeout(ctx, r.opts.EtcdTimeout)
	defer cancel()
	v, err := ReadStatus(ectx, r.st, s.Time)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, &EtcdError{fmt.Errorf("status: %w", err)}
	default:
		s.Status, s.Silence, s.Acting = &v.Status, strings.Join(v.Notes, "; "), v.Acting
	}
	h, err := r.st.History(ectx)
	if err != nil {
		return nil, &EtcdError{fmt.Errorf("history: %w", err)}
	}
	if s.Runway, err = ReadRunway(ectx, r.st, s.Time); err != nil {
		return nil, &EtcdError{fmt.Errorf("forecast: %w", err)}
	}
	h = h[max(0, len(h)-r.opts.HistoryLimit):]
	slices.Reverse(h)
	s.History = h
	if r.opts.NextStep != nil {
		if s.NextStep, err = r.opts.NextStep(ectx, r.st); err != nil {
			return nil, &EtcdError{fmt.Errorf("pending plan: %w", err)}
		}
	}

	in, notes, err := r.Input(ctx)
	s.Notes = notes
	var etcdErr *EtcdError
	switch {
	case errors.As(err, &etcdErr):
		return nil, err
	case err != nil:
		s.MapErr = err
		return s, nil
	}
	if in.Current != nil {
		s.ClusterName = in.Current.Name
	}
	if s.NextStep != nil {
		in.Next = s.NextStep.Changes
	}
	s.Map = BuildMap(in)
	return s, nil
}

// EtcdError is a failure to read etcd (as opposed to a stored value that
// is missing or invalid, or sabakan failing).
type EtcdError struct{ Err error }

func (e *EtcdError) Error() string { return "etcd: " + e.Err.Error() }
func (e *EtcdError) Unwrap() error { return e.Err }

// Input reads what a rack map is drawn from: the cluster, the template,
// the rebooting nodes and the constraints (the model of the workers) from
// etcd, and the machines from sabakan (every machine, and which of them
// the stored query variables select). The notes say what could not be
// taken into account. Next is left empty.
func (r *Reader) Input(ctx context.Context) (MapInput, []string, error) {
	var in MapInput
	snap, err := r.snapshot(ctx)
	if err != nil {
		return in, nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, refused := r.settings.ReadEach(snap, intake.WhatIf{})
	if ref := refused[intake.SettingCluster]; ref != nil {
		return in, nil, intake.Explained(ref, false)
	}
	in.Current, in.Rebooting = s.Current, s.Rebooting

	var notes []string
	switch ref := refused[intake.SettingTemplate]; {
	case ref == nil:
		in.Template = s.Template
	case ref.Missing:
		notes = append(notes, "no template is set: unused machines of every role are shown as candidates")
	default:
		notes = append(notes, fmt.Sprintf("the stored template is invalid (%v): unused machines of every role are shown as candidates", ref.Err))
	}
	// The constraints say the model of the workers; none stored means the
	// defaults, the count model's, as for the daemon.
	if ref := refused[intake.SettingConstraints]; ref != nil {
		notes = append(notes, fmt.Sprintf("the stored constraints are invalid (%v): the model of the workers is not shown", ref.Err))
	} else {
		in.Constraints = &s.Constraints
	}

	// The failure domain is the placement policy's, as for the tick
	// (sabakan's rack without a policy).
	switch ref := refused[intake.SettingPolicy]; {
	case ref != nil:
		notes = append(notes, fmt.Sprintf("the stored placement policy is invalid (%v): the failure domains at risk are not marked", ref.Err))
	case s.Template == nil && snap.Get(storage.KeySabakanPolicy).Exists():
		notes = append(notes, "the placement policy is read with the template: the failure domains at risk are not marked")
	default:
		key := s.Policy.FailureDomain()
		in.FailureDomain = &key
	}

	for _, setting := range []intake.Setting{intake.SettingURL, intake.SettingVariables} {
		if ref := refused[setting]; ref != nil {
			return in, notes, intake.Explained(ref, false)
		}
	}
	a, err := r.query(ctx, s)
	if err != nil {
		return in, notes, err
	}
	in.Machines, in.Selected = a.all, a.selected
	return in, notes, nil
}

// snapshot reads the settings in one etcd transaction, bounded by
// EtcdTimeout.
func (r *Reader) snapshot(ctx context.Context) (*storage.Snapshot, error) {
	ectx, cancel := context.WithTimeout(ctx, r.opts.EtcdTimeout)
	defer cancel()
	snap, err := r.st.Read(ectx, r.settings.Request(""))
	if err != nil {
		return nil, &EtcdError{err}
	}
	return snap, nil
}

// query returns sabakan's answer for the URL and variables of s, from
// the cache when it is fresh; r.mu must be held.
func (r *Reader) query(ctx context.Context, s *intake.Settings) (*answer, error) {
	url, vars, varsData := s.URL, s.Variables, s.VariablesData
	now := r.opts.Now()
	if a := r.cached; a != nil && a.url == url && a.vars == string(varsData) && now.Sub(a.at) < r.opts.CacheTTL && !now.Before(a.at) {
		return a, nil
	}
	client, err := r.sabakan.For(url)
	if err != nil {
		return nil, err
	}
	// Both queries at once: every machine (no condition), and what the
	// daemon's query returns.
	everything := sabakan.Variables{Having: &sabakan.MachineParams{}, NotHaving: &sabakan.MachineParams{}}
	var all, sel []machine.Machine
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) { all, err = client.SearchMachines(gctx, everything); return err })
	g.Go(func() (err error) { sel, err = client.SearchMachines(gctx, vars); return err })
	if err := g.Wait(); err != nil {
		return nil, err
	}
	a := &answer{url: url, vars: string(varsData), at: now, all: all, selected: make(map[string]bool, len(sel))}
	inAll := make(map[string]bool, len(all))
	for i := range all {
		inAll[all[i].Spec.Serial] = true
	}
	for i := range sel {
		a.selected[sel[i].Spec.Serial] = true
		// A machine registered between the two queries is drawn too.
		if !inAll[sel[i].Spec.Serial] {
			a.all = append(a.all, sel[i])
		}
	}
	r.cached = a
	return a, nil
}
