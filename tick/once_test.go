package tick

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
)

// TestGatherStopsAtTheSettings: a rung decided from the settings alone
// stops the gather before sabakan is asked, and Decide on that gather
// decides it. Decide reads only what was gathered, carrying no decision
// made during the gather: with the gathered switch turned off, it no
// longer holds on it, and says sabakan was not asked.
func TestGatherStopsAtTheSettings(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	must(t, f.st.SetDisabled(ctx, true))
	gr := decision.NewGatherer(f.st.Storage, sabakan.Options{Timeout: time.Second, Retries: -1}, func() time.Time { return testNow })
	g := gr.Gather(ctx, leader, decision.Ask{Config: decision.Config{}.WithDefaults()})
	if g.Asked {
		t.Fatal("a disabled integration's gather asked sabakan")
	}
	d := decision.Decide(g, decision.Memory{})
	if d.Result != reason.Disabled || d.Hold == nil || d.Hold.Rung != decision.RungSwitch || d.World != nil {
		t.Fatalf("disabled: %s %s, hold %+v", d.Result, d.Reason, d.Hold)
	}
	if w, err := d.WhatIf(); w != nil || err == nil || !strings.Contains(err.Error(), "did not read the inventory (disabled "+reason.DisabledFlag) {
		t.Errorf("a what-if of a decision that read no inventory: %v, %v", w, err)
	}
	g.Settings.Own.CKEDisabled = false
	if d := decision.Decide(g, decision.Memory{}); d.Result == reason.Disabled || d.Hold != nil || d.Message != "sabakan was not asked" {
		t.Errorf("Decide on the gather with the switch off: %s %s %q, hold %+v", d.Result, d.Reason, d.Message, d.Hold)
	}
}

// TestSwitchInForce: the switch in force is decided once
// (intake.Ownership.Disabled): wherever the owner does not hold the
// gate, the gate holds on the switch exactly when that switch is on.
func TestSwitchInForce(t *testing.T) {
	for _, owner := range []string{"", intake.OwnerCKE, intake.OwnerCKEGen} {
		for bits := range 8 {
			own := intake.Ownership{Owner: owner, CKEServer: bits&1 != 0, CKEDisabled: bits&2 != 0, CKEGenDisabled: bits&4 != 0}
			if owner == intake.OwnerCKE {
				own.OwnerRev = 7 // written: handed back
			}
			h := decision.Gate(own, "", false, testNow, time.Minute)
			if h != nil && h.Rung == decision.RungOwner {
				continue
			}
			if got := h != nil && h.Rung == decision.RungSwitch; got != own.Disabled() {
				t.Errorf("%+v: the gate holds on the switch %v, the switch in force is on %v", own, got, own.Disabled())
			}
		}
	}
}
