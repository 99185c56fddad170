// Package forecast says what the machines' retire dates will do to a
// cluster if nothing is bought (docs/forecast.md): from now to a date, at
// each event (the machines whose assumed state changes in one period), it
// runs the world's plan (world.World.Plan: the leader's ticks, the
// circuit breaker included) on the inventory as it would be then, from
// the cluster the previous event left, and finds the runway: the last day
// the cluster meets its constraints and the workers it needs, and why it
// ends there.
//
// A machine is assumed RETIRING a lead before its retire date and RETIRED
// at it, as a rehearsal (docs/failure-domains.md) would assume it: the
// state as sabakan would report it just after the change, and a machine
// whose new state the query leaves out (RETIRED, by default) left out of
// the inventory (world.World.Set's edit, machine.Machine.WithState and
// world.Leaves).
//
// It is pure, as the generator is: a forecast is a function of a
// world.World and Options, whether the world comes from files or from
// etcd and sabakan. It keeps no event's cluster: each event's figures are
// taken as it is made (Options.Each hands its plan to a caller that
// wants it).
package forecast

import (
	"fmt"
	"slices"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/world"
)

// DefaultRetireLead is how long before its retire date a machine is
// assumed RETIRING unless told otherwise.
const DefaultRetireLead = 30 * 24 * time.Hour

// DefaultYears is how far a forecast looks unless told otherwise.
const DefaultYears = 3

// Reason codes of a runway's end, beside the refusals' (reason
// .NotEnoughMachines, reason.TooManyNonExistent, reason.GenerationError).
const (
	// None: nothing fails before the forecast's end.
	None = "NONE"
	// WorkersBelowNeed: the HEALTHY workers fall below the need.
	WorkersBelowNeed = "WORKERS_BELOW_NEED"
	// NoControlPlaneCandidate: a control plane is no longer HEALTHY and
	// nothing could replace it.
	NoControlPlaneCandidate = "NO_CONTROL_PLANE_CANDIDATE"
	// QuorumAtRisk: a failure domain holds more control planes than
	// etcd's quorum survives losing.
	QuorumAtRisk = "QUORUM_AT_RISK"
	// Held: a hold that needs an operator stops the leader (Runway.Hold
	// names it: the circuit breaker's TOO_MANY_UNHEALTHY).
	Held = "HELD"
)

// Options shape a forecast.
type Options struct {
	// Until is the forecast's end; not before the input's Now.
	Until time.Time
	// Resolution is the length of a period (Month when empty).
	Resolution Resolution
	// RetireLead is how long before its retire date a machine is
	// RETIRING; 0: it becomes RETIRED at once.
	RetireLead time.Duration
	// NeedWorkers is how many HEALTHY workers the site needs; 0: the
	// count model's minimum-workers, and none in the rate model.
	NeedWorkers int
	// MaxSteps bounds each event's plan (generator.DefaultMaxSteps when 0).
	MaxSteps int
	// New are machines that do not exist yet (--assume-new, the orders):
	// each arrives HEALTHY at the first event on or after its From, and
	// retires at its retire date (assume.New.RetireAt with Lifetime).
	New []assume.New
	// Lifetime is a new machine's retire date after its arrival, when
	// it names none (DefaultLifetime when 0).
	Lifetime time.Duration
	// Buy, when not nil, buys what keeps the constraints until Until:
	// the Forecast's Purchases, assumed as they are bought.
	Buy *Buy
	// Each, when not nil, is given each event as it is made, with its
	// plan and the inventory it was made on, which the forecast does not
	// keep.
	Each func(ev *Event, p *generator.Plan, machines []*machine.Machine)
}

// Forecast is what the retire dates do to the cluster. Its JSON is the
// contract of `ckegenctl sabakan forecast -o json`.
type Forecast struct {
	Now   time.Time `json:"now"`
	Until time.Time `json:"until"`
	// Resolution and RetireLead are the options it was made with,
	// NeedWorkers the need in force (0: none, the rate model without
	// one), FailureDomain what a domain is.
	Resolution    Resolution `json:"resolution"`
	RetireLead    string     `json:"retireLead"`
	NeedWorkers   int        `json:"needWorkers,omitempty"`
	FailureDomain string     `json:"failureDomain"`
	Runway        Runway     `json:"runway"`
	// Unbought is, with Options.Buy, the runway if nothing were bought;
	// Runway is then the runway with the purchases.
	Unbought *Runway `json:"unbought,omitempty"`
	// Purchases are what Options.Buy buys, by Needed then role.
	Purchases []Purchase `json:"purchases,omitempty"`
	// MadeUp are the machines assumed new (Options.New and the
	// purchases), made up: their serials and addresses are no real
	// machine's.
	MadeUp []Arrival `json:"madeUp,omitempty"`
	Events []Event   `json:"events"`

	key failuredomain.Key
}

// Runway is the last day the cluster meets its constraints and need
// (absent when nothing fails before the forecast's end), why it ends
// (a code: None, WorkersBelowNeed, NoControlPlaneCandidate, QuorumAtRisk,
// Held with the hold's code in Hold, or the refusal's reason code) and
// the words for it.
type Runway struct {
	Until   string `json:"until,omitempty"`
	Reason  string `json:"reason"`
	Hold    string `json:"hold,omitempty"`
	Message string `json:"message"`
}

// Event is one date of the forecast: what changes, what the planner does
// about it, and the cluster it settles on.
type Event struct {
	Date string `json:"date"`
	// Retiring and Retired count the machines that become RETIRING and
	// RETIRED on this date, Arriving the made-up machines that arrive
	// (assumed or bought), Bought those of them bought.
	Retiring int `json:"retiring"`
	Retired  int `json:"retired"`
	Arriving int `json:"arriving,omitempty"`
	Bought   int `json:"bought,omitempty"`
	// Steps is the number of steps of the plan; Ops their operations,
	// Changes the changes of them all, Result how the plan ends
	// (generator.PlanSettled, PlanRefused, PlanHeld, PlanMaxSteps), with
	// Reason and Message a refused or held plan's code and words, as the
	// daemon's status says them.
	Steps   int      `json:"steps"`
	Ops     []string `json:"ops"`
	Changes int      `json:"changes"`
	Result  string   `json:"result"`
	Reason  string   `json:"reason,omitempty"`
	Message string   `json:"message,omitempty"`
	// Refusal is the refused step's reason, when the plan was refused.
	Refusal *Refusal `json:"refusal,omitempty"`
	// ControlPlanes are the control planes of the cluster the plan
	// leaves, with their failure domains, in the domains' order.
	ControlPlanes []ControlPlane `json:"controlPlanes"`
	// Workers counts its HEALTHY workers, WorkersRate their share of
	// the machines of the inventory (percent); BelowMinimum: Workers is
	// below the need.
	Workers      int     `json:"workers"`
	WorkersRate  float64 `json:"workersRate"`
	BelowMinimum bool    `json:"belowMinimum"`
	// AtRisk are the domains whose loss breaks etcd's quorum.
	AtRisk []string `json:"atRisk"`
	// Warnings are the plan's warnings, the words for each domain at
	// risk, and what the forecast assumed to go on (a refusal before).
	Warnings []string `json:"warnings"`

	// failure is why this event ends the runway ("" when it does not),
	// with the hold's code and the words for it.
	failure, hold, words string
}

// ControlPlane is a control plane and its failure domain.
type ControlPlane struct {
	Address string `json:"address"`
	Domain  string `json:"domain"`
}

// Refusal is a refused plan's reason code and message.
type Refusal struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// dateLayout is how events' dates and the runway's are written.
const dateLayout = "2006-01-02"

// Of makes the forecast of w (its cluster, or without one the cluster
// the first plan generates) from its clock to o.Until. It fails when the
// options are out of range or when an event's input cannot be planned at
// all (as world.World.Plan fails); a refused or held plan is part of the
// forecast.
func Of(w world.World, o Options) (*Forecast, error) {
	in := w.In
	if err := o.check(in.Now); err != nil {
		return nil, err
	}
	f := &Forecast{Now: in.Now, Until: o.Until, Resolution: o.Resolution, RetireLead: o.RetireLead.String(),
		NeedWorkers: need(in, o), FailureDomain: in.Policy.FailureDomain().Name(), key: in.Policy.FailureDomain()}
	r, err := newRun(w, o, f)
	if err != nil {
		return nil, err
	}
	r.sch = plan(r.all, len(in.Machines), in.Now, o.Until, o.Resolution, o.RetireLead)
	for k := 0; k < len(r.sch.dates); k++ {
		if err := r.event(r.sch.dates[k], r.sch.changes[k]); err != nil {
			return nil, err
		}
	}
	f.Runway = f.runway()
	if o.Buy != nil && f.Unbought == nil {
		f.Unbought = &f.Runway
	}
	f.Purchases = r.purchases()
	return f, nil
}

// check refuses options out of range, saying which.
func (o *Options) check(now time.Time) error {
	if o.Resolution == "" {
		o.Resolution = Month
	}
	if _, err := ParseResolution(string(o.Resolution)); err != nil {
		return fmt.Errorf("resolution: %w", err)
	}
	if o.Until.Before(now) {
		return fmt.Errorf("until: %s is before now (%s)", o.Until.Format(time.RFC3339), now.Format(time.RFC3339))
	}
	if o.RetireLead < 0 {
		return fmt.Errorf("retire lead: must not be negative, got %s", o.RetireLead)
	}
	if o.NeedWorkers < 0 {
		return fmt.Errorf("need workers: must not be negative, got %d", o.NeedWorkers)
	}
	if o.MaxSteps == 0 {
		o.MaxSteps = generator.DefaultMaxSteps
	}
	if o.Lifetime == 0 {
		o.Lifetime = DefaultLifetime
	}
	if o.Lifetime < 0 {
		return fmt.Errorf("lifetime: must be positive, got %s", o.Lifetime)
	}
	if b := o.Buy; b != nil {
		if b.LeadTime < 0 {
			return fmt.Errorf("lead time: must not be negative, got %s", b.LeadTime)
		}
		if b.RackSize < 0 {
			return fmt.Errorf("rack size: must not be negative, got %d", b.RackSize)
		}
	}
	return nil
}

// need is the HEALTHY workers the site needs: o's, else the count
// model's minimum-workers; 0 (none) in the rate model without one.
func need(in generator.Input, o Options) int {
	if o.NeedWorkers > 0 || in.Constraints.RateModel() {
		return o.NeedWorkers
	}
	return in.Constraints.MinimumWorkers
}

// run is a forecast being made: the world with the changes assumed so
// far (each event's edits through the query: world.World.Set, and the
// made-up machines that arrived: world.World.Add), and the cluster the
// last event left.
type run struct {
	w world.World
	o Options
	f *Forecast
	// all are the input's machines, then the made-up ones (Options.New)
	// that have not arrived yet; serials theirs, by place (a transition
	// names its machine by place).
	all     []*machine.Machine
	serials []string
	// maker makes up the machines assumed new and bought; sch is the
	// calendar.
	maker assume.Maker
	sch   *schedule
	// buy is the purchases being made (Options.Buy).
	buy *buyer
	// refused is the date of the first refused or held plan ("" when
	// none), stopped how.
	refused, stopped string
}

func newRun(w world.World, o Options, f *Forecast) (*run, error) {
	r := &run{w: w, o: o, f: f, all: w.In.Machines}
	// One memo of the nodes rendered for every event: an event's cluster
	// is the last one's, mostly.
	r.w.In.RenderMemo = &generator.RenderMemo{}
	for _, m := range w.In.Machines {
		if err := assume.RefuseMadeUp(m.Spec.Serial, m.Address()); err != nil {
			return nil, err
		}
	}
	if len(o.New) > 0 {
		r.all = slices.Clone(r.all)
		for _, n := range o.New {
			ms := r.makeUp(n, false, r.arrival(n.From))
			r.all = append(r.all, ms...)
		}
	}
	r.serials = make([]string, len(r.all))
	for i, m := range r.all {
		r.serials[i] = m.Spec.Serial
	}
	if o.Buy != nil {
		r.buy = newBuyer(r)
	}
	return r, nil
}

// arrival is the date a machine HEALTHY from from counts: the first
// event on or after it (an event falls on a period's first day, or now).
func (r *run) arrival(from time.Time) time.Time {
	now := r.w.In.Now
	if !from.After(now) {
		return now
	}
	s := r.o.Resolution.start(from)
	if s.Before(from) {
		s = r.o.Resolution.next(s)
	}
	return s
}

// makeUp makes n's machines, arriving on date, and says so in the
// forecast's Assumed.
func (r *run) makeUp(n assume.New, bought bool, date time.Time) []*machine.Machine {
	ms := r.maker.Make(n, date, r.o.Lifetime)
	out := make([]*machine.Machine, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	r.f.MadeUp = append(r.f.MadeUp, Arrival{Date: date.UTC().Format(dateLayout), Rack: n.Rack, Role: n.Role, Product: n.Product, Count: n.Count,
		Retire: n.RetireAt(r.o.Lifetime).UTC().Format(dateLayout), First: ms[0].Spec.Serial, Last: ms[len(ms)-1].Spec.Serial, Bought: bought})
	return out
}

// event assumes the changes of one date and plans from the cluster the
// last event left; with Options.Buy, it buys what keeps the event within
// the constraints and plans again with it.
func (r *run) event(date time.Time, changes []transition) error {
	ev := Event{Date: date.UTC().Format(dateLayout), Ops: []string{}, AtRisk: []string{}, Warnings: []string{}}
	to := make(map[string]machine.State, len(changes))
	var arriving []*machine.Machine
	for _, t := range changes {
		switch t.state {
		case machine.StateHealthy:
			arriving = append(arriving, r.all[t.machine])
			ev.Arriving++
			continue
		case machine.StateRetiring:
			ev.Retiring++
		default:
			ev.Retired++
		}
		to[r.serials[t.machine]] = t.state
	}
	if len(arriving) > 0 {
		r.w, _ = r.w.Add(arriving)
	}
	for _, st := range []machine.State{machine.StateRetiring, machine.StateRetired} {
		r.w, _ = r.w.Set(func(_ int, m *machine.Machine) bool { return to[m.Spec.Serial] == st }, st)
	}
	from := r.w.In.Current
	if r.buy != nil && r.f.Unbought != nil {
		// Once something was bought, machines short of the need are
		// bought before the plan, which then runs once.
		n := r.buy.ahead(date)
		ev.Arriving += n
		ev.Bought += n
	}
	p, in, err := r.plan(&ev, date)
	if err != nil {
		return err
	}
	for tries := 0; r.buy != nil && ev.failure != "" && tries < maxBuys; tries++ {
		if r.f.Unbought == nil {
			unbought := r.f.runwayAt(len(r.f.Events), &ev)
			r.f.Unbought = &unbought
		}
		was, workers := ev.failure, ev.Workers
		bought := r.buy.fix(&ev, p, date, in)
		if bought == 0 {
			break
		}
		ev.Arriving += bought
		ev.Bought += bought
		r.w.In.Current = from
		ev = Event{Date: ev.Date, Retiring: ev.Retiring, Retired: ev.Retired, Arriving: ev.Arriving, Bought: ev.Bought, Ops: []string{}, AtRisk: []string{}, Warnings: []string{}}
		if p, in, err = r.plan(&ev, date); err != nil {
			return err
		}
		if ev.failure == was && ev.Workers <= workers && was != reason.NotEnoughMachines {
			break // what was bought did not help: say the failure
		}
	}
	if (p.Result == generator.PlanRefused || p.Result == generator.PlanHeld) && r.refused == "" {
		r.refused, r.stopped = ev.Date, p.Result
	}
	r.w.In.Current = p.Cluster
	if r.o.Each != nil {
		r.o.Each(&ev, p, in.Machines)
	}
	r.f.Events = append(r.f.Events, ev)
	return nil
}

// maxBuys bounds the purchases of one event: each buys what the plan
// before it lacked (a control-plane candidate, then the workers short).
const maxBuys = 8

// plan plans the event on the world as it is now, from its cluster, and
// observes what the plan leaves; it returns the plan and the input the
// cluster was observed on.
func (r *run) plan(ev *Event, date time.Time) (*generator.Plan, generator.Input, error) {
	w := r.w
	w.In.Now, w.TemplateChanged = date, false
	p, err := w.Plan(nil, r.o.MaxSteps)
	if err != nil {
		return nil, generator.Input{}, fmt.Errorf("%s: %w", ev.Date, err)
	}
	if r.refused != "" {
		ev.Warnings = append(ev.Warnings, "the plan was "+r.stopped+" on "+r.refused+": the forecast goes on from the cluster as it was left")
	}
	r.record(ev, p)
	in := w.In
	in.Current = p.Cluster
	if err := r.observe(ev, in); err != nil {
		return nil, generator.Input{}, fmt.Errorf("%s: %w", ev.Date, err)
	}
	return p, in, nil
}

// record sums up the event's plan: its steps, changes, result, refusal
// and warnings.
func (r *run) record(ev *Event, p *generator.Plan) {
	ev.Steps, ev.Result, ev.Reason, ev.Message = len(p.Steps), p.Result, p.Reason, p.Message
	seen := map[string]bool{}
	warn := func(ws []string) {
		for _, w := range ws {
			if !seen[w] {
				seen[w] = true
				ev.Warnings = append(ev.Warnings, w)
			}
		}
	}
	for _, s := range p.Steps {
		ev.Ops = append(ev.Ops, s.Op)
		ev.Changes += len(s.Changes)
		warn(s.Warnings)
	}
	warn(p.Warnings)
	switch p.Result {
	case generator.PlanRefused:
		ev.Refusal = &Refusal{Reason: p.Reason, Message: p.Message}
	case generator.PlanMaxSteps:
		ev.Warnings = append(ev.Warnings, fmt.Sprintf("the plan had not settled after %d steps: the next event goes on from the cluster it had reached", len(p.Steps)))
	}
}
