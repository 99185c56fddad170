package ckeref

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cybozu-go/cke"

	"github.com/ckegen/ckegen/constraints"
)

// TestConstraintsReadAsCKE: a constraints document with neither model's
// worker key is read as CKE v1.35.4 reads it. CKE's Storage.GetConstraints
// decodes the stored value into a zero cke.Constraints with
// encoding/json; so does this test, with CKE's own type. Where CKE reads
// control planes, ckegen reads the rate model with the same
// control-plane-count, minimum-workers-rate and queue settings; where
// CKE reads none (a left-out control-plane-count), CKE's own check
// refuses a cluster with a control plane, and ckegen refuses the
// document, naming the key.
func TestConstraintsReadAsCKE(t *testing.T) {
	oneCP := &cke.Cluster{Nodes: []*cke.Node{{Address: "10.0.0.1", ControlPlane: true}, {Address: "10.0.0.2"}}}
	for _, doc := range []string{
		`{"control-plane-count":3}`,
		`{"control-plane-count":1}`,
		`{"control-plane-count":5,"maximum-repair-queue-entries":2}`,
		`{"control-plane-count":3,"minimum-workers-rate":80}`,
		`{"control-plane-count":3,"minimum-workers-rate":0,"maximum-unreachable-nodes-for-reboot":1,"maximum-repair-queue-entries":4,"wait-seconds-to-repair-rebooting":30}`,
		`{"minimum-workers-rate":80}`,
		`{"maximum-repair-queue-entries":2}`,
		`{}`,
	} {
		want := new(cke.Constraints)
		if err := json.Unmarshal([]byte(doc), want); err != nil {
			t.Fatalf("%s: CKE: %v", doc, err)
		}
		got, err := constraints.Parse([]byte(doc))
		if want.ControlPlaneCount == 0 {
			cstr := *want
			if cerr := cstr.Check(oneCP); cerr == nil {
				t.Errorf("%s: CKE's check takes a cluster with a control plane", doc)
			}
			if err == nil || !strings.Contains(err.Error(), constraints.ControlPlaneCount+": missing") {
				t.Errorf("%s: CKE reads no control plane; ckegen read %+v, %v, want an error naming %s", doc, got, err, constraints.ControlPlaneCount)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: CKE reads %+v; ckegen refused: %v", doc, *want, err)
			continue
		}
		value := func(p *int) int {
			if p == nil {
				return 0
			}
			return *p
		}
		if !got.RateModel() || got.ControlPlaneCount != want.ControlPlaneCount || *got.MinimumWorkersRate != want.MinimumWorkersRate ||
			value(got.MaximumUnreachableNodesForReboot) != want.RebootMaximumUnreachable || value(got.MaximumRepairQueueEntries) != want.MaximumRepairs ||
			value(got.WaitSecondsToRepairRebooting) != want.RepairRebootingSeconds {
			t.Errorf("%s: ckegen reads %+v (model %s), CKE %+v", doc, got, got.Model(), *want)
		}
	}
	// Nothing stored: CKE's defaults.
	d, def := constraints.Default(), cke.DefaultConstraints()
	if !d.RateModel() || d.ControlPlaneCount != def.ControlPlaneCount || *d.MinimumWorkersRate != def.MinimumWorkersRate {
		t.Errorf("ckegen's defaults %+v, CKE's %+v", d, *def)
	}
}
