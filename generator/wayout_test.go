package generator_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
)

// TestTooManyNonExistentAdvice: the refusal of rule 1 gives the way out
// of the model in force. In the count model, the gone control planes come
// back RETIRING and rule 5 replaces them one per tick; in the rate model
// (no rule 5) enough of them come back that the others may leave with
// their replacements, and the rest are retired one at a time, each
// replaced by the write that removes it. Neither says the other's, and
// both name the runbook as ckegen's own.
func TestTooManyNonExistentAdvice(t *testing.T) {
	rate := 80
	count := constraints.Constraints{MinimumWorkers: 1}
	rated := constraints.Constraints{MinimumWorkersRate: &rate}
	countWay := "(a RETIRED machine: set it UNINITIALIZED, then RETIRING) and ckegen replaces them one per tick; "
	rateWay := "replaces a control plane only once it leaves sabakan's answer, not while it is RETIRING; "
	for _, tc := range []struct {
		name      string
		c         constraints.Constraints
		cps, gone int
		want      []string
		not       string
	}{
		{"count, 2 of 3", count, 3, 2, []string{"2 of 3 control planes are not in sabakan; removing them would break etcd's quorum: if their machines still run, bring them back into sabakan's answer " + countWay}, rateWay},
		{"rate, 2 of 3", rated, 3, 2, []string{"2 of 3 control planes are not in sabakan; removing them would break etcd's quorum: " +
			"if their machines still run, bring 1 of them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED): " +
			"the write that removes the other adds its replacement; after that write, retire it (RETIRING, then RETIRED): " +
			"the write that removes it adds its replacement, as the rate model (minimum-workers-rate) " + rateWay}, countWay},
		{"rate, 4 of 5", rated, 5, 4, []string{"bring 2 of them back", "the write that removes the others adds their replacements; " +
			"after that write, retire them one at a time (RETIRING, then RETIRED): the write that removes each adds its replacement"}, countWay},
		{"rate, 1 of 2", rated, 2, 1, []string{"bring them back into sabakan's answer (a RETIRED machine: set it UNINITIALIZED), " +
			"and raise control-plane-count above 2 before retiring one: with 2 control planes none may leave at once", rateWay}, countWay},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ms []machine.Machine
			for i := 1; i <= 7; i++ {
				ms = append(ms, planMachine(fmt.Sprintf("m%03d", i), i, i, "compute", 1000+i))
			}
			in := generator.Input{
				Template:    mustParseTemplate(t, planTemplates[0]),
				Constraints: tc.c,
				Machines:    sanitized(t, ms),
				Now:         planNow,
				RetireWait:  generator.DefaultRetireWait,
			}
			in.Constraints.ControlPlaneCount = tc.cps
			first, err := generator.Generate(in)
			if err != nil {
				t.Fatal(err)
			}
			in.Current = first.Cluster
			gone := map[string]bool{}
			for _, n := range first.Cluster.Nodes {
				if n.ControlPlane && len(gone) < tc.gone {
					gone[n.Address] = true
				}
			}
			in.Machines = nil
			for _, m := range sanitized(t, ms) {
				if !gone[m.Spec.IPv4[0]] {
					in.Machines = append(in.Machines, m)
				}
			}
			_, err = generator.Update(in)
			if !errors.Is(err, generator.ErrTooManyNonExistent) {
				t.Fatalf("Update: %v, want %v", err, generator.ErrTooManyNonExistent)
			}
			msg := err.Error()
			for _, w := range append(tc.want, "if they do not, etcd has lost those members and must be recovered with CKE's own tools first: "+
				"ckegen's runbook TOO_MANY_NONEXISTENT_CONTROL_PLANES (ckegen's docs/alerts.md) gives the steps") {
				if !strings.Contains(msg, w) {
					t.Errorf("the refusal\n%s\ndoes not say\n%s", msg, w)
				}
			}
			if strings.Contains(msg, tc.not) || strings.Contains(msg, "as CKE documents") {
				t.Errorf("the refusal says the other model's way out, or calls ckegen's runbook CKE's:\n%s", msg)
			}
		})
	}
}
