package decision

import (
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// BenchmarkCountDomains20000 is the tick's check as Decide makes it, at
// 20,000 machines (500 racks of 40) and a cluster of 10,003 nodes whose 3
// control planes are the last machines, so that every machine is read:
// by rack, and by a label. It must stay well under 5 ms.
func BenchmarkCountDomains20000(b *testing.B) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 500, 40
	raw := dcgen.Machines(o)
	ms := make([]*machine.Machine, len(raw))
	for i := range raw {
		ms[i] = &raw[i]
	}
	c := &cluster.Cluster{}
	for i := len(ms) - 10003; i < len(ms); i++ {
		c.Nodes = append(c.Nodes, &cluster.Node{Address: ms[i].Address(), ControlPlane: i >= len(ms)-3})
	}
	for _, key := range []failuredomain.Key{failuredomain.Rack(), failuredomain.ByLabel("product")} {
		pol := policyOf(b, key)
		b.Run(key.Name(), func(b *testing.B) {
			in := generator.Input{Machines: ms, Current: c, Policy: pol, Now: testNow, RetireWait: time.Minute}
			b.ReportAllocs()
			for b.Loop() {
				d := &Decision{}
				d.countDomains(in)
				if d.Domains.ControlPlanes != 3 {
					b.Fatal(d.Domains)
				}
			}
		})
	}
}

// policyOf is a policy whose failure domain is key (nil for the rack:
// no policy).
func policyOf(b *testing.B, key failuredomain.Key) *policy.Policy {
	b.Helper()
	if key.IsRack() {
		return nil
	}
	tmpl, err := template.Parse([]byte(sitetest.Template))
	if err != nil {
		b.Fatal(err)
	}
	p, err := policy.Load([]byte(`{"failureDomain": {"label": "`+key.Label+`"}}`), tmpl)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
