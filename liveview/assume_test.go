package liveview

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/assume"
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
