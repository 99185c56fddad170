// Package liveview holds the views of ckegen, which read and never write:
// the decision the leader would make now (Reader.Decide: ckegenctl's
// plan, owner, --dry-run), the rack map (`ckegenctl sabakan map`, terminal
// and JSON), the daemon's page at /, and who acts now. The map and the
// page show one decision, made as the leader's is (decision.Gatherer and
// decision.Decide): they query sabakan, read the settings and sanitize
// machines only through it.
//
// The page's decision is kept for a short while, so that a page refreshed
// by many browsers queries sabakan at most once per CacheTTL.
package liveview

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// Defaults of Options.
const (
	DefaultCacheTTL     = 10 * time.Second
	DefaultHistoryLimit = 10
	DefaultEtcdTimeout  = 10 * time.Second
)

// NextStep is the next step of the plan the leader would follow now.
type NextStep struct {
	Op      string
	Changes []generator.Change
	// Steps is the number of steps the plan has left, this one included.
	Steps      int
	ComputedAt time.Time
	// Wait says when it comes after a hold (planreport.WaitWords; "":
	// at the leader's next tick).
	Wait string
}

// Options configure a Reader. Zero fields take their defaults.
type Options struct {
	// Sabakan configures the sabakan client (timeout, TLS).
	Sabakan sabakan.Options
	// CacheTTL is how long the map's decision (and so sabakan's answer)
	// is reused.
	CacheTTL time.Duration
	// EtcdTimeout bounds the etcd reads of a snapshot (sabakan's requests
	// have Sabakan.Timeout each).
	EtcdTimeout time.Duration
	// HistoryLimit is how many history entries a snapshot keeps.
	HistoryLimit int
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

// Reader reads snapshots. It is safe for concurrent use.
type Reader struct {
	st   storage.Storage
	opts Options

	mu     sync.Mutex // held during a gather: the gatherer is not safe for concurrent use
	gather *decision.Gatherer

	drawMu sync.Mutex // held while the map's decision is made, so concurrent readers share it
	drawn  *drawnDecision
}

// drawnDecision is the map's decision and when it was made.
type drawnDecision struct {
	d  *decision.Decision
	at time.Time
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
	return &Reader{st: st, opts: o}
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
	// (Silence: "" while it calls at its pace).
	Status  *storage.Status
	Silence string
	// Acting is who leads now, read with the status (nil without one),
	// and Writes who writes the cluster (Writes).
	Acting *Actor
	Writes string
	// History holds the last entries, newest first.
	History []storage.HistoryEntry
	// NextStep is the next step of the plan the leader would follow now
	// (the map's decision); nil when there is none.
	NextStep *NextStep
	// Notes are what keeps the leader from following that plan now.
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
		s.Status, s.Silence, s.Acting, s.Writes = &v.Status, strings.Join(v.Notes, "; "), v.Acting, v.Writes
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

	d, err := r.drawDecision(ctx)
	if err != nil {
		return nil, err
	}
	s.Notes, s.NextStep = Notes(d), nextStep(d)
	if c := d.Gathered.Settings.Current; c != nil {
		s.ClusterName = c.Name
	}
	in, err := MapInputOf(d)
	if err != nil {
		s.MapErr = err
		return s, nil
	}
	s.Map = BuildMap(in)
	return s, nil
}

// EtcdError is a failure to read etcd (as opposed to a stored value that
// is missing or invalid, or sabakan failing).
type EtcdError struct{ Err error }

func (e *EtcdError) Error() string { return "etcd: " + e.Err.Error() }
func (e *EtcdError) Unwrap() error { return e.Err }

// Input is what the rack map is drawn from: the decision the leader
// would make now (Decide's), with every machine of sabakan for context,
// made at most once per CacheTTL. Notes say what keeps the leader from
// following it now. It is an error when the decision read no machines:
// etcd, sabakan or a metric provider do not answer, or a setting the
// generator needs is missing or refused; an etcd failure is an
// *EtcdError.
func (r *Reader) Input(ctx context.Context) (MapInput, []string, error) {
	d, err := r.drawDecision(ctx)
	if err != nil {
		return MapInput{}, nil, err
	}
	in, err := MapInputOf(d)
	if err != nil {
		return MapInput{}, nil, err
	}
	return in, Notes(d), nil
}

// MapInputOf is what the map of decision d shows: its machines (and
// every other one around them), its cluster and settings, its next step,
// its model and worker rate, its count of the failure domains and the
// generator's candidates. The online map draws the leader's decision, the
// offline one the decision on its files (decision.Files).
func MapInputOf(d *decision.Decision) (MapInput, error) {
	g := d.Gathered
	if g.Machines == nil {
		return MapInput{}, whyNot(d, false)
	}
	s := g.Settings
	in := MapInput{Machines: g.Machines, Context: g.Context, Warnings: g.Warnings, LeftOut: leftOutOnline,
		Current: s.Current, Template: s.Template, Rebooting: s.Rebooting, Domains: d.Domains}
	if p := d.Plan; p != nil && len(p.Steps) > 0 {
		in.Next = p.Steps[0].Changes
	}
	if c := d.Constraints; c != nil {
		in.Model, in.Rate = c.Model(), d.Rate
	}
	if w := d.World; w != nil && w.In.Template != nil {
		var err error
		if in.Candidates, err = CandidatesOf(w.In); err != nil {
			return MapInput{}, err
		}
	}
	return in, nil
}

// nextStep is the first step of decision d's plan; nil without one.
func nextStep(d *decision.Decision) *NextStep {
	p := d.Plan
	if p == nil || len(p.Steps) == 0 {
		return nil
	}
	n := &NextStep{Op: p.Steps[0].Op, Changes: p.Steps[0].Changes, Steps: len(p.Steps), ComputedAt: d.At}
	if w := p.Steps[0].Wait; w != nil {
		n.Wait = planreport.WaitWords(w.Reason, w.Until)
	}
	return n
}

// leftOutOnline says why the map draws a machine of sabakan that is not
// among the decision's: the query did not return it, or the gather left it
// out (its warnings say which).
const leftOutOnline = "not returned by the query variables, or ignored as a bad inventory entry (see warnings)"

// drawDecision is the map's decision: the cached one while it is fresh,
// else a new one.
func (r *Reader) drawDecision(ctx context.Context) (*decision.Decision, error) {
	r.drawMu.Lock()
	defer r.drawMu.Unlock()
	now := r.opts.Now()
	if c := r.drawn; c != nil && now.Sub(c.at) < r.opts.CacheTTL && !now.Before(c.at) {
		return c.d, nil
	}
	d, _, err := r.decide(ctx, Preview{drawing: true})
	if err != nil {
		return nil, err
	}
	r.drawn = &drawnDecision{d: d, at: now}
	return d, nil
}
