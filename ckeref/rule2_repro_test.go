//go:build ckegenbug

package ckeref

import (
	"fmt"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

// TestRule2StarvesControlPlanes reproduces a ckegen defect the
// differential test found (class "rule 2 removes the workers fill needed to
// promote"), in both models: after a template change, rule 2 removes the
// workers whose role no worker template takes; they were the only machines
// of the control plane template's role, so fill cannot reach
// control-plane-count (a node removed in a tick is not re-added by that
// tick's fill) and the tick fails. Every later tick does the same, so the
// cluster stays one control plane short of the constraint for as long as
// the template stays. CKE v1.35.4 (no rule 2) promotes them.
//
//	go test -tags ckegenbug -run TestRule2StarvesControlPlanes -v ./
func TestRule2StarvesControlPlanes(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mk := func(i int, role string) *machine.Machine {
		return &machine.Machine{
			Spec: machine.Spec{
				Serial: fmt.Sprintf("S%d", i), Rack: i, IndexInRack: 1, Role: role,
				IPv4:         []string{fmt.Sprintf("10.0.%d.1", i)},
				RegisterDate: now.AddDate(-1, 0, 0), RetireDate: now.AddDate(4, 0, 0),
			},
			Status: machine.Status{State: machine.StateHealthy},
		}
	}
	// ss1 is the control plane; ss2 and ss3 were workers of a template
	// that took role ss; cs1 is a worker of role cs.
	ms := []*machine.Machine{mk(1, "ss"), mk(2, "ss"), mk(3, "ss"), mk(4, "cs")}
	// The new template: control planes of role ss, workers of role cs.
	tmpl, err := template.Parse([]byte(`name: c
nodes:
- {user: u, control_plane: true, labels: {cke.cybozu.com/role: ss}}
- {user: u, labels: {cke.cybozu.com/role: cs}}
service_subnet: 10.68.0.0/16
`))
	if err != nil {
		t.Fatal(err)
	}
	cur := &cluster.Cluster{Name: "c", ServiceSubnet: "10.68.0.0/16", Nodes: []*cluster.Node{
		{Address: "10.0.1.1", User: "u", ControlPlane: true},
		{Address: "10.0.2.1", User: "u"},
		{Address: "10.0.3.1", User: "u"},
		{Address: "10.0.4.1", User: "u"},
	}}
	for _, doc := range []string{`{"control-plane-count":3,"minimum-workers-rate":80}`, `{"control-plane-count":3,"minimum-workers":1}`} {
		cons, err := constraints.Parse([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		in := generator.Input{Template: tmpl, Constraints: cons, Machines: ms, Current: cur, Now: now, RetireWait: generator.DefaultRetireWait}
		res, err := generator.Tick(in, true)
		if err != nil {
			t.Errorf("%s: %v (every tick fails the same way; CKE v1.35.4 promotes 10.0.2.1 and 10.0.3.1)", doc, err)
			continue
		}
		t.Logf("%s: %s", doc, res.Op)
	}
}
