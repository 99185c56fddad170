package generator

import (
	"container/heap"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

// drawMetrics compiles doc for tmpl and draws each machine's value of
// every metric of the policy: none, or one in [0, 60].
func drawMetrics(t *rapid.T, tmpl *template.Template, doc string, ms []*machine.Machine) (*policy.Policy, *policy.Values) {
	pol, err := policy.Load([]byte(doc), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	serials := make([]string, len(ms))
	for i, m := range ms {
		serials[i] = m.Spec.Serial
	}
	vals := pol.NewValues(serials)
	for i := range ms {
		for col := range pol.Metrics() {
			if rapid.IntRange(0, 4).Draw(t, "has value") > 0 {
				vals.Set(i, col, float64(rapid.IntRange(0, 60).Draw(t, "value")))
			}
		}
	}
	return pol, vals
}

// pickerPolicy places control planes in two ordered groups (tier 1
// first, then any machine of racks 0-5) and scores them by temperature.
const pickerPolicy = `
placements:
  control-plane:
    constraints: ["cke.cybozu.com/rack not in (6, 7)"]
    groups:
    - {name: tier1, constraints: ["sabakan.cke.cybozu.com/tier = 1"]}
    - {name: any}
    metrics: [{name: temp, weight: -7}]
metrics:
  temp: {provider: lab, min: 10, max: 50}
providers:
  lab: {type: static, values: {}}
`

// TestPickerMatchesLinearScan checks the heap picker against the plain
// definition: at every step, the candidate with the best (score, retire
// date, serial, address) computed from the live rack counts; with a
// policy, among the admitted candidates of the first group that has one,
// metric points included.
func TestPickerMatchesLinearScan(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 60).Draw(t, "machines")
		racks := rapid.IntRange(1, 8).Draw(t, "racks")
		withPolicy := rapid.Bool().Draw(t, "policy")
		var ms []*machine.Machine
		for i := 0; i < n; i++ {
			rack := rapid.IntRange(0, racks-1).Draw(t, "rack")
			b := mkMachine(fmt.Sprintf("s%03d", rapid.IntRange(0, 999).Draw(t, "serial")*1000+i), rack, i+1).
				retireIn(rapid.IntRange(-1500, 1500).Draw(t, "days"))
			if rapid.IntRange(0, 4).Draw(t, "sick") == 0 {
				b.state(machine.StateUnhealthy)
			}
			if withPolicy && rapid.IntRange(0, 3).Draw(t, "tier1") == 0 {
				b.label("tier", "1")
			}
			ms = append(ms, b.obj())
		}
		in := &Input{Template: mustTemplate(simpleTemplate), Constraints: constraints.CountDefaults(), Machines: ms, Now: testNow}
		if withPolicy {
			in.Policy, in.Metrics = drawMetrics(t, in.Template, pickerPolicy, ms)
		}
		s, err := newState(in, nil)
		if err != nil {
			t.Fatal(err)
		}
		pi := s.cpPlacement()
		// Seed some control planes so that rack counts start uneven.
		for i := 0; i < rapid.IntRange(0, 3).Draw(t, "seeded"); i++ {
			if x := s.machines[rapid.IntRange(0, n-1).Draw(t, "seed")]; x.member == nil {
				s.add(x, true)
			}
		}
		p := s.cpPool()
		for {
			got, _ := p.peek()
			var want *machineInfo
			wantScore, wantRank := 0.0, 0
			for _, x := range s.machines {
				if !s.isCPCandidate(x) || !pi.admits(s, x) {
					continue
				}
				r := pi.rank(s, x)
				sc := float64(rackPoints(s.cpRackCount(x))+x.lifetimePoints) + pi.points(s, x)
				if want == nil || r < wantRank || r == wantRank && betterSelection(x, sc, want, wantScore) {
					want, wantScore, wantRank = x, sc, r
				}
			}
			if got != want {
				t.Fatalf("picker chose %v, linear scan %v", name(got), name(want))
			}
			if best, _ := s.bestCPCandidate(); best != want {
				t.Fatalf("rule 9's candidate %v, linear scan %v", name(best), name(want))
			}
			if got != nil && withPolicy && p.group() != pi.groupName(wantRank) {
				t.Fatalf("picker says group %q, linear scan %q", p.group(), pi.groupName(wantRank))
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

// TestRackHeapAsContainerHeap: fixTop and popTop leave the racks in the
// order heap.Fix and heap.Pop leave them, keys tied or not.
func TestRackHeapAsContainerHeap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(t, "racks")
		var a, b rackHeap
		for i := range n {
			x := &machineInfo{serial: fmt.Sprintf("s%02d", rapid.IntRange(0, 9).Draw(t, "serial")), address: fmt.Sprint(i)}
			q := rackQueue{ms: []*machineInfo{x}, key: float64(rapid.IntRange(0, 3).Draw(t, "key")), top: x}
			qa, qb := q, q
			a, b = append(a, &qa), append(b, &qb)
		}
		heap.Init(&a)
		heap.Init(&b)
		for len(a) > 0 {
			if rapid.Bool().Draw(t, "pop") {
				heap.Pop(&a)
				b.popTop()
			} else {
				k := float64(rapid.IntRange(0, 3).Draw(t, "new key"))
				a[0].key, b[0].key = k, k
				heap.Fix(&a, 0)
				b.fixTop()
			}
			for i := range a {
				if a[i].top != b[i].top || a[i].key != b[i].key {
					t.Fatalf("rack %d: %v %v, container/heap %v %v", i, b[i].top.address, b[i].key, a[i].top.address, a[i].key)
				}
			}
		}
		if len(b) != 0 {
			t.Fatalf("%d racks left", len(b))
		}
	})
}
