package liveview

import (
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/intake"
)

// TestWriterIsTheGates: who writes the cluster is what the leader's gate
// decided, for every ownership, inside CKE's server and out: a gate that
// holds on the switch or the owner never names ckegen as the writer, one
// that lets the tick pass or keeps CKE's pace names it, and a switch off
// anywhere names nobody.
func TestWriterIsTheGates(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	statuses := []*intake.CKEStatus{nil, {Phase: "completed", Timestamp: now}, {Phase: "reboot-nodes", Timestamp: now.Add(-time.Hour)}, {Phase: "etcd-boot", Timestamp: now}}
	for _, mode := range []string{"", decision.ModeInsideCKE} {
		for _, owner := range []string{"", intake.OwnerCKE, intake.OwnerCKEGen} {
			for bits := range 8 {
				for _, status := range statuses {
					own := intake.Ownership{Owner: owner, CKEServer: bits&1 != 0, CKEDisabled: bits&2 != 0, CKEGenDisabled: bits&4 != 0, CKEStatus: status}
					if owner == intake.OwnerCKE {
						own.OwnerRev = 7 // written: handed back
					}
					h := decision.Gate(own, mode, true, now, time.Minute)
					w := writer(&decision.Decision{Mode: decision.ModeOf(mode, own), Hold: h})
					names := strings.HasPrefix(w, "ckegen")
					switch {
					case h == nil && !names:
						t.Errorf("%s %+v: nothing holds, the writer is %q", mode, own, w)
					case h != nil && h.Writer != w:
						t.Errorf("%s %+v: the gate holds (%s) with writer %q, owner says %q", mode, own, h.Rung, h.Writer, w)
					case h != nil && names != (h.Rung == decision.RungPace):
						t.Errorf("%s %+v: the gate holds (%s), the writer is %q", mode, own, h.Rung, w)
					case h != nil && h.Rung == decision.RungSwitch && !strings.HasPrefix(w, "none"):
						t.Errorf("%s %+v: the switch is off, the writer is %q", mode, own, w)
					case own.CKEDisabled && !own.OwnedByCKEGen() && !strings.HasPrefix(w, "none"):
						t.Errorf("%s %+v: CKE's switch is off and CKE owns it, the writer is %q", mode, own, w)
					}
				}
			}
		}
	}
}
