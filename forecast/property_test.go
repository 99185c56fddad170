package forecast

import (
	"fmt"
	"github.com/ckegen/ckegen/world"
	"reflect"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// drawInput is a random data center: up to 6 racks of machines of the
// bundled template's roles (and boot servers), some in another state,
// retiring any day from 3 months ago to 4 years ahead (or never), in the
// count or the rate model, with the cluster Generate makes or none.
func drawInput(t *rapid.T) generator.Input {
	var c constraints.Constraints
	if rapid.Bool().Draw(t, "rate model") {
		rate := rapid.SampledFrom([]int{0, 50, 90}).Draw(t, "rate")
		c = constraints.Constraints{ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"), MinimumWorkersRate: &rate}
	} else {
		c = constraints.Constraints{ControlPlaneCount: rapid.IntRange(1, 5).Draw(t, "cp"), MinimumWorkers: rapid.IntRange(0, 8).Draw(t, "min")}
		if rapid.Bool().Draw(t, "hasMax") {
			c.MaximumWorkers = c.MinimumWorkers + rapid.IntRange(1, 4).Draw(t, "extra")
		}
	}
	racks := rapid.IntRange(1, 6).Draw(t, "racks")
	n := rapid.IntRange(0, 30).Draw(t, "machines")
	var ms []machine.Machine
	for i := 1; i <= n; i++ {
		retire := ""
		if rapid.IntRange(0, 9).Draw(t, "retires") > 0 {
			retire = now.AddDate(0, 0, rapid.IntRange(-90, 4*365).Draw(t, "days")).Format(dateLayout)
		}
		m := mk(fmt.Sprintf("s%03d", i), rapid.IntRange(0, racks-1).Draw(t, "rack"), i, rapid.SampledFrom([]string{"compute", "compute", "storage", "gpu", "boot"}).Draw(t, "role"), retire)
		if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
			m.Status.State = rapid.SampledFrom(machine.States).Draw(t, "state")
		}
		ms = append(ms, *m)
	}
	sane, _ := machine.Sanitize(ms, nil)
	in := generator.Input{Template: exampleTemplate(t), Constraints: c, Machines: sane, Now: now, RetireWait: generator.DefaultRetireWait,
		InventoryRoles: machine.Roles(ms)}
	if rapid.Bool().Draw(t, "current") {
		if res, err := generator.Generate(in); err == nil {
			in.Current = res.Cluster
		}
	}
	return in
}

// periodStart is the first day of the period of t, as a person counts
// it: the first of the month, the Monday of the week, the day.
func periodStart(res Resolution, t time.Time) time.Time {
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	switch res {
	case Month:
		return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	case Week:
		for d.Weekday() != time.Monday {
			d = d.AddDate(0, 0, -1)
		}
	}
	return d
}

// stateOn is the state a machine is assumed to have on d: RETIRED from
// the period of its retire date, RETIRING from the period lead before,
// each no earlier than now; as it is before.
func stateOn(m *machine.Machine, d time.Time, res Resolution, lead time.Duration) machine.State {
	s := m.Status.State
	if m.Spec.RetireDate.IsZero() || s == machine.StateRetired {
		return s
	}
	from := func(t time.Time) time.Time {
		if p := periodStart(res, t); p.After(now) {
			return p
		}
		return now
	}
	if !from(m.Spec.RetireDate).After(d) {
		return machine.StateRetired
	}
	if lead > 0 && !from(m.Spec.RetireDate.Add(-lead)).After(d) {
		return machine.StateRetiring
	}
	return s
}

// TestForecastIsTheRehearsal: at every event, the forecast's plan is the
// one `plan --assume` makes with each machine's state on that date
// (SERIAL:STATE, a machine leaving the inventory when the query leaves
// out its assumed state, with its role when it was the last of it) on
// the cluster the previous event settled on
// (the input's at the first); the events are now and every date a
// machine's state changes on until then, with the machines that change
// counted.
func TestForecastIsTheRehearsal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		in := drawInput(t)
		o := Options{
			Until:      now.AddDate(0, 0, rapid.IntRange(0, 5*365).Draw(t, "until")),
			Resolution: rapid.SampledFrom([]Resolution{Month, Week, Day}).Draw(t, "resolution"),
			RetireLead: time.Duration(rapid.SampledFrom([]int{0, 1, 30, 90}).Draw(t, "lead days")) * 24 * time.Hour,
		}
		q := queries[rapid.IntRange(0, len(queries)-1).Draw(t, "query")]
		var plans []*generator.Plan
		o.Each = func(_ *Event, p *generator.Plan, _ []*machine.Machine) { plans = append(plans, p) }
		f, err := Of(world.World{In: in, Query: q}, o)
		if err != nil {
			t.Fatal(err)
		}
		sameDates(t, in, o, f)
		for k := range f.Events {
			sameEvent(t, in, o, q, f, plans, k)
		}
	})
}

// sameDates fails unless the events are now and every period's first day
// on which a machine's state changes, until o.Until.
func sameDates(t *rapid.T, in generator.Input, o Options, f *Forecast) {
	wantDates := map[string]bool{now.Format(dateLayout): true}
	for _, m := range in.Machines {
		for d := now; !d.After(o.Until); d = d.AddDate(0, 0, 1) {
			if stateOn(m, d, o.Resolution, o.RetireLead) != stateOn(m, d.AddDate(0, 0, -1), o.Resolution, o.RetireLead) && d.After(now) {
				wantDates[periodStart(o.Resolution, d).Format(dateLayout)] = true
			}
		}
	}
	var dates []string
	for _, ev := range f.Events {
		dates = append(dates, ev.Date)
	}
	for d := range wantDates {
		if !slices.Contains(dates, d) {
			t.Fatalf("no event on %s: %v", d, dates)
		}
	}
	if len(dates) != len(wantDates) {
		t.Fatalf("events %v, want %v", dates, wantDates)
	}
}

// sameEvent fails unless event k counts the machines whose state changes
// on its date and its plan is the rehearsal's on the previous event's
// cluster.
func sameEvent(t *rapid.T, in generator.Input, o Options, q assume.Query, f *Forecast, plans []*generator.Plan, k int) {
	ev := &f.Events[k]
	d, prev := now, in.Current
	if k > 0 {
		d, prev = date(ev.Date), plans[k-1].Cluster
	}
	var as []string
	retiring, retired := 0, 0
	for _, m := range in.Machines {
		s := stateOn(m, d, o.Resolution, o.RetireLead)
		if s != m.Status.State {
			as = append(as, m.Spec.Serial+":"+string(s))
		}
		before := m.Status.State
		if k == 1 {
			before = stateOn(m, now, o.Resolution, o.RetireLead)
		} else if k > 1 {
			before = stateOn(m, date(f.Events[k-1].Date), o.Resolution, o.RetireLead)
		}
		switch s {
		case before:
		case machine.StateRetired:
			retired++
		default:
			retiring++
		}
	}
	if ev.Retiring != retiring || ev.Retired != retired {
		t.Fatalf("%s: %d RETIRING, %d RETIRED; want %d, %d", ev.Date, ev.Retiring, ev.Retired, retiring, retired)
	}
	parsed, err := assume.ParseAll(as)
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := assume.Apply(in.Machines, parsed, q)
	if err != nil {
		t.Fatal(err)
	}
	rin := in
	rin.Machines, rin.Current, rin.Now = ms, prev, d
	if len(ms) < len(in.Machines) {
		rin.InventoryRoles = rolesLeft(in.InventoryRoles, in.Machines, ms)
	}
	want, err := (&world.World{In: rin, Query: q}).Plan(nil, generator.DefaultMaxSteps)
	if err != nil {
		t.Fatalf("%s: the rehearsal: %v", ev.Date, err)
	}
	samePlan(t, ev.Date, plans[k], want)
}

// queries are the query's conditions on states a forecast is drawn with:
// none, the default query's, one that leaves out RETIRING machines too,
// and one that takes only HEALTHY and RETIRING machines.
var queries = []assume.Query{
	nil,
	defaultQuery(),
	sabakan.StateFilter{NotHaving: []machine.State{machine.StateRetiring, machine.StateRetired}},
	sabakan.StateFilter{Having: []machine.State{machine.StateHealthy, machine.StateRetiring}},
}

// rolesLeft are the inventory's roles once the machines of all not in
// kept left, as `generate --assume` counts them: a role none of kept has
// is gone.
func rolesLeft(roles []string, all, kept []*machine.Machine) []string {
	still := map[string]bool{}
	for _, m := range kept {
		still[m.Spec.Role] = true
	}
	gone := map[string]bool{}
	for _, m := range all {
		if !still[m.Spec.Role] {
			gone[m.Spec.Role] = true
		}
	}
	var out []string
	for _, r := range roles {
		if !gone[r] {
			out = append(out, r)
		}
	}
	return out
}

// samePlan fails unless got and want are the same plan: result, refusal,
// steps, and the cluster they settle on.
func samePlan(t *rapid.T, when string, got, want *generator.Plan) {
	if got.Result != want.Result || fmt.Sprint(got.Err) != fmt.Sprint(want.Err) {
		t.Fatalf("%s: plan %s (%v), the rehearsal's %s (%v)", when, got.Result, got.Err, want.Result, want.Err)
	}
	if !reflect.DeepEqual(got.Steps, want.Steps) || !reflect.DeepEqual(got.Warnings, want.Warnings) {
		t.Fatalf("%s: steps %+v\nthe rehearsal's %+v", when, got.Steps, want.Steps)
	}
	if (got.Cluster == nil) != (want.Cluster == nil) {
		t.Fatalf("%s: cluster %v, the rehearsal's %v", when, got.Cluster, want.Cluster)
	}
	if got.Cluster != nil {
		g, err1 := got.Cluster.MarshalYAML()
		w, err2 := want.Cluster.MarshalYAML()
		if err1 != nil || err2 != nil || string(g) != string(w) {
			t.Fatalf("%s: the clusters differ (%v, %v)", when, err1, err2)
		}
	}
}
