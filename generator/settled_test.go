package generator_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/generator"
)

// TestSettledIsRun: whenever a first tick has nothing to do, Settled
// with its warnings is the plan Run computes. Half the inputs are
// the clusters their plans settle on, so that the property is checked on
// every run.
func TestSettledIsRun(t *testing.T) {
	seen := 0
	rapid.Check(t, func(t *rapid.T) {
		in, changed := drawPlanInput(t)
		if rapid.Bool().Draw(t, "settle") {
			// The cluster as its plan leaves it, which has nothing to do
			// when the plan settles: a drawn inventory alone rarely
			// does.
			p, err := generator.Run(in, nil, changed, generator.DefaultMaxSteps, generator.Tick)
			if err == nil && p.Result == generator.PlanSettled {
				in.Current, changed = p.Cluster, false
			}
		}
		res, err := generator.Tick(in, changed)
		if !errors.Is(err, generator.ErrNothingToDo) {
			return
		}
		seen++
		var warnings []string
		if res != nil {
			warnings = res.Warnings
		}
		want, err := generator.Run(in, nil, changed, generator.DefaultMaxSteps, generator.Tick)
		if err != nil {
			t.Fatal(err)
		}
		got := generator.Settled(in.Current, warnings)
		if diff := cmp.Diff(planView(want), planView(got)); diff != "" || want.Start != got.Start || want.Cluster != got.Cluster {
			t.Fatalf("Settled differs from Run (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want.Warnings, got.Warnings); diff != "" {
			t.Fatalf("warnings differ (-Run +Settled):\n%s", diff)
		}
	})
	if seen == 0 {
		t.Error("no drawn input had nothing to do: the property was never checked")
	}
}
