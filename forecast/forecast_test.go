package forecast

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/ckegen/ckegen/world"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/template"
)

// now is the tests' time: a Saturday in the middle of a month.
var now = time.Date(2026, 11, 28, 9, 30, 0, 0, time.UTC)

func date(s string) time.Time {
	t, err := time.Parse("2006-01-02", s)
	if err != nil {
		panic(err)
	}
	return t
}

// mk is a HEALTHY machine of role in rack, at 10.0.RACK.INDEX, retiring
// on retire (none when "").
func mk(serial string, rack, index int, role, retire string) *machine.Machine {
	m := &machine.Machine{
		Spec: machine.Spec{Serial: serial, Rack: rack, IndexInRack: index, Role: role,
			IPv4: []string{fmt.Sprintf("10.0.%d.%d", rack, index)}, RegisterDate: date("2024-01-01")},
		Status: machine.Status{State: machine.StateHealthy, Duration: 3600},
	}
	if retire != "" {
		m.Spec.RetireDate = date(retire)
	}
	return m
}

// exampleTemplate is the bundled template: compute machines as control
// planes, workers of compute, storage and gpu.
func exampleTemplate(t interface {
	Helper()
	Fatal(...any)
}) *template.Template {
	t.Helper()
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// inputOf is the input of ms with the bundled template and c, at now,
// with the cluster Generate makes.
func inputOf(t testing.TB, c constraints.Constraints, ms []*machine.Machine) generator.Input {
	t.Helper()
	sane, dropped := machine.Sanitize(derefAll(ms), nil)
	if len(dropped) > 0 {
		t.Fatalf("machines dropped: %v", dropped)
	}
	in := generator.Input{Template: exampleTemplate(t), Constraints: c, Machines: sane, Now: now, RetireWait: generator.DefaultRetireWait}
	res, err := generator.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	in.Current = res.Cluster
	return in
}

func derefAll(ms []*machine.Machine) []machine.Machine {
	out := make([]machine.Machine, len(ms))
	for i, m := range ms {
		out[i] = *m
	}
	return out
}

// TestSchedule: each machine becomes RETIRED on the first day of the
// period of its retire date (never after it, never before now), and
// RETIRING on the first day of the period lead before it, when that is
// an earlier date; Monday starts a week. Nothing after until; a RETIRED
// machine never changes, a RETIRING one only retires; now is the first
// event.
func TestSchedule(t *testing.T) {
	ms := []*machine.Machine{
		mk("a", 0, 1, "compute", "2027-03-17"), // Wednesday
		mk("b", 0, 2, "compute", "2026-12-01"),
		mk("c", 0, 3, "compute", "2026-11-20"), // past: at once
		mk("d", 0, 4, "compute", ""),
		mk("e", 0, 5, "compute", "2027-03-02"),
		mk("f", 0, 6, "compute", "2031-01-01"), // after until
		mk("g", 0, 7, "compute", "2027-01-10"),
		mk("h", 0, 8, "compute", "2027-01-10"),
	}
	ms[6].Status.State = machine.StateRetired
	ms[7].Status.State = machine.StateRetiring
	until := date("2029-01-01")
	type change struct {
		serial string
		state  machine.State
	}
	for _, tc := range []struct {
		res  Resolution
		lead time.Duration
		want map[string][]change
	}{
		{Month, DefaultRetireLead, map[string][]change{
			"2026-11-28": {{"b", "RETIRING"}, {"c", "RETIRED"}},
			"2026-12-01": {{"b", "RETIRED"}},
			"2027-01-01": {{"e", "RETIRING"}, {"h", "RETIRED"}},
			"2027-02-01": {{"a", "RETIRING"}},
			"2027-03-01": {{"a", "RETIRED"}, {"e", "RETIRED"}},
		}},
		{Week, DefaultRetireLead, map[string][]change{
			"2026-11-28": {{"b", "RETIRING"}, {"c", "RETIRED"}},
			"2026-11-30": {{"b", "RETIRED"}},
			"2027-01-04": {{"h", "RETIRED"}},
			"2027-01-25": {{"e", "RETIRING"}},
			"2027-02-15": {{"a", "RETIRING"}},
			"2027-03-01": {{"e", "RETIRED"}},
			"2027-03-15": {{"a", "RETIRED"}},
		}},
		{Day, 0, map[string][]change{
			"2026-11-28": {{"c", "RETIRED"}},
			"2026-12-01": {{"b", "RETIRED"}},
			"2027-01-10": {{"h", "RETIRED"}},
			"2027-03-02": {{"e", "RETIRED"}},
			"2027-03-17": {{"a", "RETIRED"}},
		}},
	} {
		s := plan(ms, len(ms), now, until, tc.res, tc.lead)
		got := map[string][]change{}
		for k, d := range s.dates {
			got[d.Format(dateLayout)] = []change{}
			for _, c := range s.changes[k] {
				got[d.Format(dateLayout)] = append(got[d.Format(dateLayout)], change{ms[c.machine].Spec.Serial, c.state})
			}
		}
		if g, w := fmt.Sprint(got), fmt.Sprint(tc.want); g != w {
			t.Errorf("%s, lead %s:\n got %s\nwant %s", tc.res, tc.lead, g, w)
		}
		if !s.dates[0].Equal(now) {
			t.Errorf("%s: first event %s, want now", tc.res, s.dates[0])
		}
	}
}

// TestErrsEarly: whatever the resolution and the lead, a machine is never
// assumed in a state later than it would be in on its dates: RETIRED on
// or before its retire date, RETIRING on or before its date less the
// lead, and in the same period.
func TestErrsEarly(t *testing.T) {
	var ms []*machine.Machine
	for i := range 400 {
		ms = append(ms, mk(fmt.Sprintf("s%03d", i), 0, i%250+1, "compute", now.AddDate(0, 0, i*3-20).Format(dateLayout)))
	}
	until := now.AddDate(4, 0, 0)
	for _, res := range []Resolution{Month, Week, Day} {
		for _, lead := range []time.Duration{0, 24 * time.Hour, DefaultRetireLead, 90 * 24 * time.Hour} {
			s := plan(ms, len(ms), now, until, res, lead)
			for k, d := range s.dates {
				for _, c := range s.changes[k] {
					due := ms[c.machine].Spec.RetireDate
					if c.state == machine.StateRetiring {
						due = due.Add(-lead)
					}
					if d.After(due) && d.After(now) {
						t.Errorf("%s lead %s: %s %s on %s, after %s", res, lead, ms[c.machine].Spec.Serial, c.state, d, due)
					}
					if p := res.start(due); d.After(now) && !d.Equal(p) {
						t.Errorf("%s lead %s: %s %s on %s, want the period's first day %s", res, lead, ms[c.machine].Spec.Serial, c.state, d, p)
					}
				}
			}
		}
	}
}

// TestLeaveOut: a machine whose new state the query leaves out leaves the
// inventory; without a query none leaves; the input is left as it is.
func TestLeaveOut(t *testing.T) {
	ms := []*machine.Machine{mk("a", 0, 1, "compute", "2035-01-01"), mk("b", 0, 2, "gpu", "2027-01-10"), mk("c", 0, 3, "compute", "2027-01-10")}
	in := generator.Input{Template: exampleTemplate(t), Constraints: constraints.Constraints{ControlPlaneCount: 1}, Machines: ms, Now: now,
		RetireWait: generator.DefaultRetireWait}
	for _, tc := range []struct {
		q    assume.Query
		want string
	}{
		{defaultQuery(), "a:HEALTHY"},
		{sabakan.StateFilter{NotHaving: []machine.State{machine.StateRetiring}}, "a:HEALTHY"},
		{sabakan.StateFilter{NotHaving: []machine.State{machine.StateUnhealthy}}, "a:HEALTHY b:RETIRED c:RETIRED"},
		{nil, "a:HEALTHY b:RETIRED c:RETIRED"},
	} {
		var last []*machine.Machine
		each := func(_ *Event, _ *generator.Plan, ms []*machine.Machine) { last = ms }
		if _, err := Of(world.World{In: in, Query: tc.q}, Options{Until: date("2028-01-01"), RetireLead: DefaultRetireLead, Each: each}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range last {
			got = append(got, m.Spec.Serial+":"+string(m.Status.State))
		}
		if g := strings.Join(got, " "); g != tc.want {
			t.Errorf("%v: %s, want %s", tc.q, g, tc.want)
		}
	}
	if ms[1].Status.State != machine.StateHealthy {
		t.Error("the input's machines changed")
	}
}

// defaultQuery is the default query's conditions on states.
func defaultQuery() assume.Query {
	_, q := sabakan.Variables{}.WithoutStates()
	return q
}

// runwayOf is the forecast of in to 2030 with lead and need.
func runwayOf(t *testing.T, in generator.Input, lead time.Duration, need int) *Forecast {
	t.Helper()
	f, err := Of(world.World{In: in, Query: defaultQuery()}, Options{Until: date("2030-01-01"), RetireLead: lead, NeedWorkers: need})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sixteenCompute: 4 racks of 4 compute machines, 3 control planes and
// minimum-workers 10 (13 nodes, 3 unused); 7 machines retire on
// 2027-06-15, the others in 2035.
func sixteenCompute() []*machine.Machine {
	var ms []*machine.Machine
	for i := range 16 {
		retire := "2035-01-01"
		if i%2 == 0 && i < 14 {
			retire = "2027-06-15"
		}
		ms = append(ms, mk(fmt.Sprintf("s%02d", i), i%4, i/4+1, "compute", retire))
	}
	return ms
}

// TestRunwayWorkersBelowNeed: the machines become RETIRING in May 2027
// and 9 HEALTHY machines are left for 3 control planes and 10 workers:
// the runway ends on April 30th, on the workers, before the plan is
// refused in June (when they leave).
func TestRunwayWorkersBelowNeed(t *testing.T) {
	f := runwayOf(t, inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10}, sixteenCompute()), DefaultRetireLead, 0)
	if f.Runway.Until != "2027-04-30" || f.Runway.Reason != WorkersBelowNeed {
		t.Fatalf("runway %+v\n%s", f.Runway, f.Text())
	}
	if want := "the cluster meets its constraints until 2027-04-30; on 2027-05-01, 7 machines retire and 6 HEALTHY workers remain (needed 10)"; f.Runway.Message != want {
		t.Errorf("message %q\nwant %q", f.Runway.Message, want)
	}
	ev := f.event(t, "2027-05-01")
	if ev.Retiring != 7 || ev.Workers != 6 || !ev.BelowMinimum || ev.Refusal != nil {
		t.Errorf("May: %+v", ev)
	}
	if june := f.event(t, "2027-06-01"); june.Retired != 7 || june.Refusal == nil {
		t.Errorf("June: %+v", june)
	}
	// With a need of 6, May is enough; June is refused.
	f = runwayOf(t, inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10}, sixteenCompute()), DefaultRetireLead, 6)
	if f.Runway.Until != "2027-05-31" || f.Runway.Reason != reason.NotEnoughMachines {
		t.Errorf("need 6: runway %+v", f.Runway)
	}
}

// TestRunwayRefusal: without a lead the machines leave at once in June
// 2027: the plan is refused (not enough machines), the runway ends on May
// 31st with the refusal's reason, and every later event says that the
// forecast goes on from the cluster the refusal left.
func TestRunwayRefusal(t *testing.T) {
	ms := append(sixteenCompute(), mk("s99", 3, 9, "storage", "2028-03-10"))
	plans := map[string]*generator.Plan{}
	each := func(ev *Event, p *generator.Plan, _ []*machine.Machine) { plans[ev.Date] = p }
	f, err := Of(world.World{In: inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10}, ms), Query: defaultQuery()},
		Options{Until: date("2030-01-01"), Each: each})
	if err != nil {
		t.Fatal(err)
	}
	if f.Runway.Until != "2027-05-31" || f.Runway.Reason != reason.NotEnoughMachines ||
		!strings.HasPrefix(f.Runway.Message, "the cluster meets its constraints until 2027-05-31; on 2027-06-01, 7 machines retire and the daemon refuses: ") {
		t.Fatalf("runway %+v\n%s", f.Runway, f.Text())
	}
	june := f.event(t, "2027-06-01")
	if june.Result != generator.PlanRefused || june.Refusal.Reason != reason.NotEnoughMachines || june.Refusal.Message != plans[june.Date].Err.Error() ||
		june.Reason != reason.NotEnoughMachines || june.Message != june.Refusal.Message {
		t.Errorf("June: %+v", june)
	}
	later := f.event(t, "2028-03-01")
	if !slices.Contains(later.Warnings, "the plan was refused on 2027-06-01: the forecast goes on from the cluster as it was left") {
		t.Errorf("later event without the refusal's note: %+v", later)
	}
	if plans[later.Date].Start != plans[june.Date].Cluster {
		t.Error("the later event does not start from the cluster the refusal left")
	}
}

// TestRunwayNoControlPlaneCandidate: the only compute machines are the 3
// control planes; when one becomes RETIRING nothing can replace it (no
// compute machine unused, no compute worker to promote).
func TestRunwayNoControlPlaneCandidate(t *testing.T) {
	ms := []*machine.Machine{
		mk("c0", 0, 1, "compute", "2027-09-10"), mk("c1", 1, 1, "compute", "2035-01-01"), mk("c2", 2, 1, "compute", "2035-01-01"),
	}
	for i := range 6 {
		ms = append(ms, mk(fmt.Sprintf("w%d", i), i%3, i+2, "storage", "2035-01-01"))
	}
	f := runwayOf(t, inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 4}, ms), DefaultRetireLead, 0)
	want := "the cluster meets its constraints until 2027-07-31; on 2027-08-01, 1 machine retires and control plane 10.0.0.1 is RETIRING with nothing to replace it"
	if f.Runway.Until != "2027-07-31" || f.Runway.Reason != NoControlPlaneCandidate || f.Runway.Message != want {
		t.Fatalf("runway %+v\n%s", f.Runway, f.Text())
	}
	// A fourth compute machine can replace it: the runway goes on.
	ms = append(ms, mk("c3", 0, 9, "compute", "2035-01-01"))
	f = runwayOf(t, inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 4}, ms), DefaultRetireLead, 0)
	if f.Runway.Reason == NoControlPlaneCandidate {
		t.Errorf("with a candidate: runway %+v", f.Runway)
	}
}

// TestRunwayQuorumAtRisk: the control plane of rack 1 retires and the
// only machine that can replace it is in rack 0, beside another control
// plane: rack 0 then holds 2 of 3.
func TestRunwayQuorumAtRisk(t *testing.T) {
	ms := []*machine.Machine{
		mk("c0", 0, 1, "compute", "2035-01-01"), mk("c1", 1, 1, "compute", "2027-09-10"), mk("c2", 2, 1, "compute", "2035-01-01"),
		mk("c3", 0, 2, "compute", "2035-01-01"),
	}
	for i := range 6 {
		ms = append(ms, mk(fmt.Sprintf("w%d", i), i%3, i+3, "storage", "2035-01-01"))
	}
	in := inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 4}, ms)
	f := runwayOf(t, in, DefaultRetireLead, 0)
	want := "the cluster meets its constraints until 2027-07-31; on 2027-08-01, 1 machine retires and rack 0 holds 2 of 3 control planes: losing it breaks etcd's quorum"
	if f.Runway.Until != "2027-07-31" || f.Runway.Reason != QuorumAtRisk || f.Runway.Message != want {
		t.Fatalf("runway %+v\n%s", f.Runway, f.Text())
	}
	if ev := f.event(t, "2027-08-01"); len(ev.AtRisk) != 1 || ev.AtRisk[0] != "0" || !slices.Contains(ev.Warnings, "rack 0 holds 2 of 3 control planes: losing it breaks etcd's quorum") {
		t.Errorf("August: %+v", ev)
	}
}

// TestRunwayNone: nothing fails before until: no date, reason NONE, and
// the JSON leaves runway.until out.
func TestRunwayNone(t *testing.T) {
	f := runwayOf(t, inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 4}, sixteenCompute()), DefaultRetireLead, 0)
	if f.Runway != (Runway{Reason: None, Message: "the cluster meets its constraints until 2030-01-01, the end of the forecast: nothing fails before"}) {
		t.Errorf("runway %+v\n%s", f.Runway, f.Text())
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"runway":{"reason":"NONE","message":`)) {
		t.Errorf("JSON: %s", data)
	}
}

// TestOptionsRefused: an end before now, a bad resolution, a negative
// lead or need are errors that name the option.
func TestOptionsRefused(t *testing.T) {
	in := inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 4}, sixteenCompute())
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Until: now.Add(-time.Hour)}, "until: "},
		{Options{Until: now, Resolution: "year"}, "resolution: "},
		{Options{Until: now, RetireLead: -time.Hour}, "retire lead: "},
		{Options{Until: now, NeedWorkers: -1}, "need workers: "},
	} {
		if _, err := Of(world.World{In: in}, tc.o); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestDeterministic: the same input gives the same bytes, text and JSON.
func TestDeterministic(t *testing.T) {
	in := benchInput(t, 10, false)
	var first []byte
	for i := range 2 {
		f, err := Of(world.World{In: in, Query: defaultQuery()}, Options{Until: benchNow.AddDate(5, 0, 0), RetireLead: DefaultRetireLead})
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, f.Text()...)
		if i == 1 && !bytes.Equal(first, data) {
			t.Error("two runs differ")
		}
		first = data
	}
}

// event is the forecast's event of date.
func (f *Forecast) event(t *testing.T, d string) *Event {
	t.Helper()
	for i := range f.Events {
		if f.Events[i].Date == d {
			return &f.Events[i]
		}
	}
	t.Fatalf("no event on %s:\n%s", d, f.Text())
	return nil
}

// limit is max-unhealthy as a count.
type limit int

func (l limit) Limit(int) int  { return int(l) }
func (l limit) String() string { return strconv.Itoa(int(l)) }

// TestRunwayHeld: with max-unhealthy 1, the 7 machines that become
// RETIRING in May 2027 (4 of them workers) take the cluster over it: the
// leader taints them, then holds (TOO_MANY_UNHEALTHY) and adds no
// worker, as the daemon would. The event says held with the hold's code and words, and the
// runway ends there with HELD, naming the hold.
func TestRunwayHeld(t *testing.T) {
	in := inputOf(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 10}, sixteenCompute())
	f, err := Of(world.World{In: in, Query: defaultQuery(), MaxUnhealthy: limit(1)}, Options{Until: date("2030-01-01"), RetireLead: DefaultRetireLead})
	if err != nil {
		t.Fatal(err)
	}
	may := f.event(t, "2027-05-01")
	if may.Result != generator.PlanHeld || may.Reason != reason.TooManyUnhealthy || !strings.HasSuffix(may.Message, world.BreakerHolds) ||
		slices.Contains(may.Ops, generator.OpIncreaseWorker) {
		t.Errorf("May: %+v", may)
	}
	if f.Runway.Until != "2027-04-30" || f.Runway.Reason != Held || f.Runway.Hold != reason.TooManyUnhealthy ||
		!strings.Contains(f.Runway.Message, "the daemon holds: 4 of 13 nodes are unhealthy") {
		t.Errorf("runway %+v\n%s", f.Runway, f.Text())
	}
	if text := string(f.Text()); !strings.Contains(text, "HELD "+reason.TooManyUnhealthy) {
		t.Errorf("the text does not say the event is held:\n%s", text)
	}
}
