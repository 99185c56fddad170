package liveview

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/assume"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
)

// TestRehearse: Preview.Assume decides on sabakan's answer as if the
// control plane's machine were UNREACHABLE (the plan gives it a state
// taint) and says what it matched; the same reader then decides without
// it as before, sabakan's answer untouched; an assumption that matches
// no machine is an *AssumeError.
func TestRehearse(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	must(t, sitetest.StoreOf(f.st).SetTemplate(ctx, []byte(sitetest.Template)))
	r := f.reader(Options{})
	plain, err := r.Decide(ctx, Preview{})
	must(t, err)
	as, err := assume.ParseAll([]string{"10.0.0.2:unreachable"})
	must(t, err)
	d, matches, err := r.Rehearse(ctx, Preview{Assume: as})
	must(t, err)
	if len(matches) != 1 || matches[0].Machines != 1 || reflect.DeepEqual(d.Plan.Steps, plain.Plan.Steps) || !tainted(d.Plan, "10.0.0.2") || tainted(plain.Plan, "10.0.0.2") {
		t.Fatalf("rehearsed: matches %+v, plan %+v", matches, d.Plan)
	}
	for _, m := range d.Gathered.Machines {
		if m.Address() == "10.0.0.2" && m.Status.State != machine.StateUnreachable {
			t.Errorf("the decision's machine %s is %s", m.Address(), m.Status.State)
		}
	}
	again, err := r.Decide(ctx, Preview{})
	must(t, err)
	if !reflect.DeepEqual(again.Plan.Steps, plain.Plan.Steps) {
		t.Errorf("after a rehearsal, the plan without it: %+v, want %+v", again.Plan.Steps, plain.Plan.Steps)
	}

	none, err := assume.ParseAll([]string{"rack=9:retiring"})
	must(t, err)
	var ae *AssumeError
	if _, _, err := r.Rehearse(ctx, Preview{Assume: none}); !errors.As(err, &ae) || err.Error() != "rack=9:retiring: no machine has rack 9" {
		t.Errorf("no machine in rack 9: %v", err)
	}
}

// tainted reports whether a step of p gives addr a state taint.
func tainted(p *generator.Plan, addr string) bool {
	for _, s := range p.Steps {
		for _, c := range s.Changes {
			if c.Address == addr && strings.Contains(c.Reason, "taints cke.cybozu.com/state added") {
				return true
			}
		}
	}
	return false
}

// TestRehearseThroughTheQuery: a rehearsal answers as the query would
// once sabakan has the state. The cluster's only control plane assumed
// RETIRED leaves the default query's answer: the plan is refused with
// TOO_MANY_NONEXISTENT_CONTROL_PLANES, as it is once the machine is made
// RETIRING then RETIRED in the compatible server, and the match says the
// query leaves it out. With variables whose notHaving keeps RETIRED
// machines, the same rehearsal keeps it and plans a step, again as the
// decision on the changed inventory does.
func TestRehearseThroughTheQuery(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	must(t, sitetest.StoreOf(f.st).SetTemplate(ctx, []byte(sitetest.Template)))
	r := f.reader(Options{})
	serial := ""
	for _, m := range f.store.Search(nil, nil) {
		if m.Spec.IPv4[0] == "10.0.0.2" {
			serial = m.Spec.Serial
		}
	}
	as, err := assume.ParseAll([]string{serial + ":RETIRED"})
	must(t, err)
	outcome := func(d *decision.Decision) string {
		if d.Plan.Result == generator.PlanRefused {
			return "refused: " + d.Plan.Err.Error()
		}
		if len(d.Plan.Steps) == 0 {
			return d.Plan.Result
		}
		return d.Plan.Steps[0].Op + fmt.Sprint(d.Plan.Steps[0].Changes)
	}
	for _, vars := range []string{"", `{"notHaving": {"roles": ["boot"]}}`} {
		if vars != "" {
			must(t, sitetest.StoreOf(f.st).SetQueryVariables(ctx, []byte(vars)))
		}
		rehearsed, matches, err := r.Rehearse(ctx, Preview{Assume: as})
		must(t, err)
		for _, st := range []machine.State{machine.StateRetiring, machine.StateRetired} {
			_, err := f.store.SetState(serial, st)
			must(t, err)
		}
		real, err := r.Decide(ctx, Preview{})
		must(t, err)
		if got, want := outcome(rehearsed), outcome(real); got != want {
			t.Errorf("variables %q: rehearsed %s; with the machine RETIRED in sabakan %s", vars, got, want)
		}
		refused := strings.Contains(outcome(real), generator.ErrTooManyNonExistent.Error())
		if refused != (vars == "") || (matches[0].LeftOut == 1) != (vars == "") {
			t.Errorf("variables %q: outcome %s, match %+v", vars, outcome(real), matches[0])
		}
		// Back as it was, by sabakan's own way back.
		for _, st := range []machine.State{machine.StateUninitialized, machine.StateHealthy} {
			_, err := f.store.SetState(serial, st)
			must(t, err)
		}
	}
}
