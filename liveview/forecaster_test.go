package liveview

import (
	"testing"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

// BenchmarkInputKey is what the forecaster does, outside the tick, at
// each tick's offer: the key of 20,000 machines.
func BenchmarkInputKey(b *testing.B) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 100, 200
	ms := dcgen.Machines(o)
	g := &decision.Gathered{SettingsID: "s", Machines: make([]*machine.Machine, len(ms))}
	for i := range ms {
		g.Machines[i] = &ms[i]
	}
	b.ResetTimer()
	for range b.N {
		_ = inputKey(g)
	}
}
