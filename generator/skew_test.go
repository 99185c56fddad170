package generator

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
)

const skewTemplate = `name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: cs}}
- {user: u, labels: {cke.cybozu.com/role: ss}}
service_subnet: 10.68.0.0/16
`

// TestSkewPickerMatchesLinearScan checks a worker template's maxSkew pool
// (docs/design.md 20) against its definition, pick after pick: in the
// first group that has a candidate, the best candidate (score, retire
// date, serial, address) among those whose domain would then hold at most
// maxSkew more workers of the role than the eligible domain with fewest
// (eligible: holding such a worker or a candidate for one), or the best of
// the group when none would.
func TestSkewPickerMatchesLinearScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		maxSkew := rapid.IntRange(1, 3).Draw(t, "maxSkew")
		byLabel := rapid.Bool().Draw(t, "by label")
		groups := rapid.Bool().Draw(t, "groups")
		doc := fmt.Sprintf("placements:\n  cs:\n    spread: {maxSkew: %d}\n", maxSkew)
		if groups {
			doc += "    groups: [{name: tier1, constraints: [\"sabakan.cke.cybozu.com/tier = 1\"]}, {name: any}]\n"
		}
		key := failuredomain.Rack()
		if byLabel {
			doc = "failureDomain: {label: feed}\n" + doc
			key = failuredomain.ByLabel("feed")
		}
		n := rapid.IntRange(1, 50).Draw(t, "machines")
		racks := rapid.IntRange(1, 6).Draw(t, "racks")
		var ms []*machine.Machine
		for i := range n {
			b := mkMachine(fmt.Sprintf("s%03d", i), rapid.IntRange(0, racks-1).Draw(t, "rack"), i+1).
				role(rapid.SampledFrom([]string{"cs", "ss"}).Draw(t, "role")).
				retireIn(rapid.IntRange(-1500, 1500).Draw(t, "days"))
			if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
				b.state(machine.StateUnhealthy)
			}
			if f := rapid.SampledFrom([]string{"a", "b", "c", ""}).Draw(t, "feed"); f != "" {
				b.label("feed", f)
			}
			if rapid.IntRange(0, 2).Draw(t, "tier1") == 0 {
				b.label("tier", "1")
			}
			ms = append(ms, b.obj())
		}
		in := &Input{Template: mustTemplate(skewTemplate), Constraints: constraints.CountDefaults(), Machines: ms, Now: testNow}
		in.Policy, in.Metrics = drawMetrics(t, in.Template, doc, ms)
		s, err := newState(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &s.tmpl.Workers[0]
		pi := s.workerPlacement(tmpl)
		// Workers already there, of either role, and whatever their state.
		for range rapid.IntRange(0, 8).Draw(t, "seeded") {
			if x := s.machines[rapid.IntRange(0, n-1).Draw(t, "seed")]; x.member == nil {
				s.add(x, false)
			}
		}
		p := s.workerPools()[0]
		candidate := func(x *machineInfo) bool { return isWorkerCandidate(x, tmpl) && pi.admits(s, x) }
		for {
			counts, counted := map[string]int{}, map[string]bool{}
			s.live(func(mb *member) {
				if !mb.controlPlane && mb.machine != nil && mb.machine.role == "cs" {
					counts[key.Of(mb.machine.raw)]++
					counted[key.Of(mb.machine.raw)] = true
				}
			})
			for _, x := range s.machines {
				if candidate(x) {
					counted[key.Of(x.raw)] = true
				}
			}
			least := -1
			for d := range counted {
				if least < 0 || counts[d] < least {
					least = counts[d]
				}
			}
			var want *machineInfo
			wantScore, wantRank, wantWithin := 0.0, 0, false
			for _, x := range s.machines {
				if !candidate(x) {
					continue
				}
				r := pi.rank(s, x)
				within := counts[key.Of(x.raw)]+1-least <= maxSkew
				sc := float64(rackPoints(s.workerRackCount(x, tmpl))+x.lifetimePoints) + pi.points(s, x)
				switch {
				case want == nil, r < wantRank, r == wantRank && within && !wantWithin,
					r == wantRank && within == wantWithin && betterSelection(x, sc, want, wantScore):
					want, wantScore, wantRank, wantWithin = x, sc, r, within
				}
			}
			got, _ := p.peek()
			if got != want {
				t.Fatalf("maxSkew pool chose %v, linear scan %v (within %v)", name(got), name(want), wantWithin)
			}
			if got == nil {
				return
			}
			p.take()
			s.add(got, false)
		}
	})
}

// TestSkewAcrossGroups: a pick from the first group raises its domain's
// count; the next group, asked next, must see that domain out of the skew
// although its own best candidate did not change.
func TestSkewAcrossGroups(t *testing.T) {
	ms := []*machine.Machine{
		mkMachine("t1", 1, 1).role("cs").label("feed", "a").label("tier", "1").retireIn(400).obj(),
		mkMachine("xa", 2, 1).role("cs").label("feed", "a").retireIn(1500).obj(),
		mkMachine("xb", 3, 1).role("cs").label("feed", "b").retireIn(400).obj(),
	}
	doc := `failureDomain: {label: feed}
placements:
  cs:
    spread: {maxSkew: 1}
    groups: [{name: tier1, constraints: ["sabakan.cke.cybozu.com/tier = 1"]}, {name: any}]
`
	in := &Input{Template: mustTemplate(skewTemplate), Constraints: constraints.CountDefaults(), Machines: ms, Now: testNow}
	pol, err := policy.Load([]byte(doc), in.Template)
	if err != nil {
		t.Fatal(err)
	}
	in.Policy = pol
	s, err := newState(in, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := s.workerPools()[0]
	var got []string
	for {
		x, _ := p.peek()
		if x == nil {
			break
		}
		p.take()
		s.add(x, false)
		got = append(got, x.serial)
	}
	if fmt.Sprint(got) != "[t1 xb xa]" {
		t.Errorf("picks %v, want t1 (tier1), then xb (feed a would hold 2, feed b 0), then xa", got)
	}
}
