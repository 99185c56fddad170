package sitetest

import (
	"testing"

	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/machine"
)

// TestStatePath: the shortest way between two states takes only the
// transitions sabakan allows, ends at the state asked for, and is empty
// from a state to itself.
func TestStatePath(t *testing.T) {
	for _, from := range machine.States {
		for _, to := range machine.States {
			p := StatePath(from, to)
			if from == to {
				if len(p) != 0 {
					t.Errorf("%s to itself: %v", from, p)
				}
				continue
			}
			if len(p) == 0 {
				continue // not reachable
			}
			at := from
			for _, s := range p {
				if !fakesabakan.CanTransition(at, s) || at == s {
					t.Errorf("%s to %s: %v takes %s to %s", from, to, p, at, s)
				}
				at = s
			}
			if at != to {
				t.Errorf("%s to %s: %v ends at %s", from, to, p, at)
			}
		}
	}
	if p := StatePath(machine.StateHealthy, machine.StateRetired); len(p) != 2 || p[0] != machine.StateRetiring {
		t.Errorf("HEALTHY to RETIRED: %v, want RETIRING, RETIRED", p)
	}
}
