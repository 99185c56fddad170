package generator

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
)

// TestPickerMatchesLinearScan checks the heap picker against the plain
// definition: at every step, the candidate with the best (score, retire
// date, serial, address) computed from the live rack counts.
func TestPickerMatchesLinearScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "machines")
		racks := rapid.IntRange(1, 8).Draw(t, "racks")
		var ms []*machine.Machine
		for i := 0; i < n; i++ {
			rack := rapid.IntRange(0, racks-1).Draw(t, "rack")
			b := mkMachine(fmt.Sprintf("s%03d", rapid.IntRange(0, 999).Draw(t, "serial")*1000+i), rack, i+1).
				retireIn(rapid.IntRange(-1500, 1500).Draw(t, "days"))
			if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
				b.state(machine.StateUnhealthy)
			}
			ms = append(ms, b.obj())
		}
		s, err := newState(&Input{Template: mustTemplate(simpleTemplate), Constraints: constraints.Default(), Machines: ms, Now: testNow}, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Seed some control planes so that rack counts start uneven.
		for i := 0; i < rapid.IntRange(0, 3).Draw(t, "seeded"); i++ {
			if x := s.machines[rapid.IntRange(0, n-1).Draw(t, "seed")]; x.member == nil {
				s.add(x, true)
			}
		}
		p := s.cpPicker()
		for {
			got, _ := p.peek()
			var want *machineInfo
			wantScore := 0
			for _, x := range s.machines {
				if !s.isCPCandidate(x) {
					continue
				}
				sc := rackPoints(s.cpRackCount(x)) + x.lifetimePoints
				if want == nil || betterSelection(x, sc, want, wantScore) {
					want, wantScore = x, sc
				}
			}
			if got != want {
				t.Fatalf("picker chose %v, linear scan %v", name(got), name(want))
			}
			if got == nil {
				return
			}
			p.take()
			s.add(got, true)
		}
	})
}

func name(x *machineInfo) string {
	if x == nil {
		return "<none>"
	}
	return x.serial
}
