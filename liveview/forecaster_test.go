package liveview

import (
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/storage"
)

// TestRunwayLineFailed: a failed forecast is said after the last runway
// made, which stays, or alone when none was ever made.
func TestRunwayLineFailed(t *testing.T) {
	failed := &storage.ForecastFailure{At: testNow.Add(-2 * time.Hour), Input: "k2", Message: "the forecast panicked: boom"}
	made := storage.ForecastSummary{At: testNow.Add(-3 * time.Hour), Input: "k1", RunwayMessage: "the cluster meets its constraints until 2027-01-31", Failed: failed}
	cases := []struct {
		r    Runway
		want string
	}{
		{Runway{Summary: &made, Age: 3 * time.Hour, Now: testNow},
			"the cluster meets its constraints until 2027-01-31 (forecast made 3h ago, 2025-12-31T21:00:00Z); the last forecast failed 2h ago (2025-12-31T22:00:00Z): the forecast panicked: boom"},
		{Runway{Summary: &storage.ForecastSummary{Failed: failed}, Now: testNow},
			"no forecast made yet: the last forecast failed 2h ago (2025-12-31T22:00:00Z): the forecast panicked: boom"},
	}
	for _, c := range cases {
		if got := c.r.Line(); got != c.want {
			t.Errorf("Line() = %q\nwant     %q", got, c.want)
		}
	}
}

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
