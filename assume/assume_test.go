package assume

import (
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

func inventory() []*machine.Machine {
	mk := func(serial string, rack int, ip string, st machine.State, dur float64, feed string) *machine.Machine {
		m := &machine.Machine{
			Spec:   machine.Spec{Serial: serial, Rack: rack, IPv4: []string{ip, "192.168.0." + ip[len(ip)-1:]}},
			Status: machine.Status{State: st, Duration: dur},
		}
		if feed != "" {
			m.Spec.Labels = []machine.Label{{Name: "power-feed", Value: feed}}
		}
		return m
	}
	return []*machine.Machine{
		mk("S1", 4, "10.0.4.1", machine.StateHealthy, 500, "a"),
		mk("S2", 4, "10.0.4.2", machine.StateRetiring, 700, "b"),
		mk("S3", 11, "10.0.11.3", machine.StateHealthy, 900, "a"),
		mk("S4", 12, "10.0.12.4", machine.StateHealthy, 100, ""),
	}
}

func states(ms []*machine.Machine) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Spec.Serial + "=" + string(m.Status.State) + " ")
	}
	return strings.TrimSpace(b.String())
}

// TestApply: each form of WHICH names its machines, in either case of the
// state; a machine whose state changes has been in it 0 s, one already
// in it keeps its duration, @DURATION sets it; the last assumption wins;
// the input is left untouched.
func TestApply(t *testing.T) {
	for _, tc := range []struct {
		assume   []string
		states   string
		machines []int
	}{
		{[]string{"S3:UNREACHABLE"}, "S1=HEALTHY S2=RETIRING S3=UNREACHABLE S4=HEALTHY", []int{1}},
		{[]string{"10.0.4.1:unreachable"}, "S1=UNREACHABLE S2=RETIRING S3=HEALTHY S4=HEALTHY", []int{1}},
		{[]string{"192.168.0.3:retired"}, "S1=HEALTHY S2=RETIRING S3=RETIRED S4=HEALTHY", []int{1}},
		{[]string{"rack=4:RETIRING"}, "S1=RETIRING S2=RETIRING S3=HEALTHY S4=HEALTHY", []int{2}},
		{[]string{"power-feed=a:Unhealthy"}, "S1=UNHEALTHY S2=RETIRING S3=UNHEALTHY S4=HEALTHY", []int{2}},
		{[]string{"sabakan.cke.cybozu.com/power-feed=b:HEALTHY"}, "S1=HEALTHY S2=HEALTHY S3=HEALTHY S4=HEALTHY", []int{1}},
		{[]string{"rack=4:RETIRING", "S1:RETIRED"}, "S1=RETIRED S2=RETIRING S3=HEALTHY S4=HEALTHY", []int{2, 1}},
	} {
		in := inventory()
		as, err := ParseAll(tc.assume)
		if err != nil {
			t.Fatalf("%v: %v", tc.assume, err)
		}
		out, matches, err := Apply(in, as, nil)
		if err != nil {
			t.Fatalf("%v: %v", tc.assume, err)
		}
		if got := states(out); got != tc.states {
			t.Errorf("%v: states %s, want %s", tc.assume, got, tc.states)
		}
		for i, n := range tc.machines {
			if matches[i].Machines != n || matches[i].Assume != tc.assume[i] {
				t.Errorf("%v: match %d is %+v, want %d machines", tc.assume, i, matches[i], n)
			}
		}
		if got := states(in); got != "S1=HEALTHY S2=RETIRING S3=HEALTHY S4=HEALTHY" {
			t.Errorf("%v: the input changed: %s", tc.assume, got)
		}
	}

	as, _ := ParseAll([]string{"rack=4:RETIRING"})
	out, m, _ := Apply(inventory(), as, nil)
	if out[0].Status.Duration != 0 || out[1].Status.Duration != 700 {
		t.Errorf("durations %v, %v: want 0 for S1 (its state changed) and 700 for S2 (already RETIRING)", out[0].Status.Duration, out[1].Status.Duration)
	}
	if m[0].String() != "assume rack=4:RETIRING: 2 machines" {
		t.Errorf("match line %q", m[0].String())
	}
	as, _ = ParseAll([]string{"rack=4:retired@1h"})
	out, _, _ = Apply(inventory(), as, nil)
	if out[0].Status.Duration != 3600 || out[1].Status.Duration != 3600 || out[0].Status.State != machine.StateRetired {
		t.Errorf("@1h: %+v %+v", out[0].Status, out[1].Status)
	}
	if a, _ := Parse("S1:retired@90m"); a.For == nil || *a.For != 90*time.Minute {
		t.Errorf("@90m parsed as %v", a.For)
	}
}

// TestRefused: a WHICH that matches no machine, and a STATE that is not
// one, are refused with a message that names them.
func TestRefused(t *testing.T) {
	for _, tc := range []struct{ assume, want string }{
		{"S9:RETIRING", `S9:RETIRING: no machine has serial S9`},
		{"rack=99:RETIRING", `rack=99:RETIRING: no machine has rack 99`},
		{"10.9.9.9:RETIRING", `10.9.9.9:RETIRING: no machine has address 10.9.9.9`},
		{"power-feed=z:RETIRING", `power-feed=z:RETIRING: no machine has label power-feed=z`},
	} {
		as, err := ParseAll([]string{"S1:HEALTHY", tc.assume})
		if err != nil {
			t.Fatalf("%s: %v", tc.assume, err)
		}
		if _, _, err := Apply(inventory(), as, nil); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v, want %q", tc.assume, err, tc.want)
		}
	}
	for _, tc := range []struct{ assume, want string }{
		{"S1:RETIRNG", `"S1:RETIRNG": unknown machine state "RETIRNG" (want one of UNINITIALIZED, HEALTHY, UNHEALTHY, UNREACHABLE, UPDATING, RETIRING, RETIRED)`},
		{"S1", `"S1": want WHICH:STATE[@DURATION]`},
		{":RETIRING", `":RETIRING": no machine named before the state`},
		{"rack=four:RETIRING", `"rack=four:RETIRING": rack=four: want a rack number`},
		{"=x:RETIRING", `"=x:RETIRING": =x: want LABEL=VALUE`},
		{"S1:RETIRED@soon", `"S1:RETIRED@soon": @soon: want a duration such as 30m or 2h`},
		{"S1:RETIRED@-1h", `"S1:RETIRED@-1h": @-1h: want a duration`},
	} {
		if _, err := ParseAll([]string{tc.assume}); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.assume, err, tc.want)
		}
	}
}

// defaultQuery is the default query's conditions on states.
func defaultQuery() Query {
	_, f := sabakan.Variables{}.WithoutStates()
	return f
}

// TestApplyLeavesOut: on a machines file, a machine assumed RETIRED
// leaves the answer as it leaves the default query's, and the match says
// so; a machine the file holds RETIRED, and no assumption names, stays
// (the file is the answer as it is).
func TestApplyLeavesOut(t *testing.T) {
	in := append(inventory(), &machine.Machine{Spec: machine.Spec{Serial: "S5", Rack: 4, IPv4: []string{"10.0.4.5"}},
		Status: machine.Status{State: machine.StateRetired}})
	as, _ := ParseAll([]string{"S1:RETIRED", "rack=4:RETIRING"})
	as = append(as[1:], as[0]) // rack=4 first, S1 last: S1 ends RETIRED
	out, _, err := Apply(in, as, defaultQuery())
	if err != nil {
		t.Fatal(err)
	}
	if got := states(out); got != "S2=RETIRING S3=HEALTHY S4=HEALTHY S5=RETIRING" {
		t.Errorf("states %s, want S1 left out and S5 made RETIRING", got)
	}
	as, _ = ParseAll([]string{"S1:RETIRED"})
	out, m, err := Apply(in, as, defaultQuery())
	if err != nil {
		t.Fatal(err)
	}
	if got := states(out); got != "S2=RETIRING S3=HEALTHY S4=HEALTHY S5=RETIRED" {
		t.Errorf("states %s, want S1 left out, S5 kept", got)
	}
	want := "assume S1:RETIRED: 1 machine left out of the query's answer (the default query leaves out RETIRED machines)"
	if m[0].String() != want || m[0].LeftOut != 1 || m[0].Machines != 1 {
		t.Errorf("match %+v %q, want %q", m[0], m[0].String(), want)
	}
}

// TestInventory: online, the assumptions edit what sabakan holds, then
// the query's states apply to every machine: one already RETIRED is left
// out as sabakan leaves it, one assumed back out of RETIRED comes in, and
// the counts say how many of a rack the query leaves out.
func TestInventory(t *testing.T) {
	var held []machine.Machine
	for _, m := range inventory() {
		held = append(held, *m)
	}
	held = append(held, machine.Machine{Spec: machine.Spec{Serial: "S5", Rack: 4, IPv4: []string{"10.0.4.5"}},
		Status: machine.Status{State: machine.StateRetired}})
	answer := func(ms []machine.Machine) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Spec.Serial+"="+string(m.Status.State))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		assume []string
		want   string
		lines  []string
	}{
		{[]string{"S3:UNREACHABLE"}, "S1=HEALTHY S2=RETIRING S3=UNREACHABLE S4=HEALTHY", []string{"assume S3:UNREACHABLE: 1 machine"}},
		{[]string{"rack=4:RETIRED"}, "S3=HEALTHY S4=HEALTHY",
			[]string{"assume rack=4:RETIRED: 3 machines left out of the query's answer (the default query leaves out RETIRED machines)"}},
		{[]string{"rack=4:UNINITIALIZED", "S1:RETIRED"}, "S2=UNINITIALIZED S3=HEALTHY S4=HEALTHY S5=UNINITIALIZED",
			[]string{"assume rack=4:UNINITIALIZED: 3 machines, 1 of them left out of the query's answer (the default query leaves out RETIRED machines)",
				"assume S1:RETIRED: 1 machine left out of the query's answer (the default query leaves out RETIRED machines)"}},
	} {
		as, err := ParseAll(tc.assume)
		if err != nil {
			t.Fatal(err)
		}
		out, m, err := Inventory(held, as, defaultQuery())
		if err != nil {
			t.Fatalf("%v: %v", tc.assume, err)
		}
		if got := answer(out); got != tc.want {
			t.Errorf("%v: answer %s, want %s", tc.assume, got, tc.want)
		}
		for i, line := range tc.lines {
			if m[i].String() != line {
				t.Errorf("%v: line %q, want %q", tc.assume, m[i].String(), line)
			}
		}
	}
	if got := answer(held); got != "S1=HEALTHY S2=RETIRING S3=HEALTHY S4=HEALTHY S5=RETIRED" {
		t.Errorf("the inventory changed: %s", got)
	}
	as, _ := ParseAll([]string{"rack=99:RETIRED"})
	if _, _, err := Inventory(held, as, defaultQuery()); err == nil || err.Error() != "rack=99:RETIRED: no machine has rack 99" {
		t.Errorf("no match: %v", err)
	}
}

// TestAvoid: a plan refused because assumptions took control planes out
// of the answer says the order that would not be, in the model in force,
// naming them and how to rehearse it: RETIRING first in the count model,
// which replaces them then; one at a time in the rate model, which
// replaces each only in the write that removes it. Another refusal, or no
// machine left out, says nothing.
func TestAvoid(t *testing.T) {
	as, _ := ParseAll([]string{"rack=4:RETIRED", "S3:UNREACHABLE"})
	matches := []Match{{Assume: "rack=4:RETIRED", Machines: 2, LeftOut: 2, Why: "x"}, {Assume: "S3:UNREACHABLE", Machines: 1}}
	for _, tc := range []struct {
		rate bool
		want string
	}{
		{false, "to avoid it, set rack=4 RETIRING first and wait until ckegen has replaced them (one per tick), then RETIRED: " +
			"RETIRING keeps the machines in the query's answer while ckegen moves the control planes away (rehearse it with --assume rack=4:retiring)"},
		{true, "to avoid it, retire rack=4 one machine at a time, RETIRING then RETIRED, the next only after the write that removes the previous one: " +
			"in the rate model (minimum-workers-rate) a control plane is not replaced while it is RETIRING, " +
			"but by the write that removes it once RETIRED takes it out of the query's answer (rehearse each with one --assume SERIAL:RETIRED)"},
	} {
		if got := Avoid(as, matches, true, tc.rate); got != tc.want {
			t.Errorf("Avoid, rate model %v: %q, want %q", tc.rate, got, tc.want)
		}
		if got := Avoid(as, matches, false, tc.rate); got != "" {
			t.Errorf("another refusal: %q", got)
		}
	}
	matches[0].LeftOut = 0
	if got := Avoid(as, matches, true, true); got != "" {
		t.Errorf("nothing left out: %q", got)
	}
}
