package generator

import (
	"fmt"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/template"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// mb builds a machine fluently: mb("s1", 2).role("cs").state(...).obj().
type machineBuilder struct{ m machine.Machine }

func mkMachine(serial string, rack, index int) *machineBuilder {
	return &machineBuilder{m: machine.Machine{
		Spec: machine.Spec{
			Serial: serial, Rack: rack, IndexInRack: index, Role: "cs",
			IPv4:         []string{fmt.Sprintf("10.%d.%d.%d", rack/256, rack%256, index)},
			RegisterDate: testNow.AddDate(-1, 0, 0),
			RetireDate:   testNow.AddDate(4, 0, 0),
		},
		Status: machine.Status{State: machine.StateHealthy},
	}}
}

func (b *machineBuilder) role(r string) *machineBuilder { b.m.Spec.Role = r; return b }
func (b *machineBuilder) state(s machine.State) *machineBuilder {
	b.m.Status.State = s
	return b
}
func (b *machineBuilder) retireIn(days int) *machineBuilder {
	b.m.Spec.RetireDate = testNow.AddDate(0, 0, days)
	return b
}
func (b *machineBuilder) label(name, value string) *machineBuilder {
	b.m.Spec.Labels = append(b.m.Spec.Labels, machine.Label{Name: name, Value: value})
	return b
}
func (b *machineBuilder) obj() *machine.Machine { m := b.m; return &m }

func mustTemplate(doc string) *template.Template {
	t, err := template.Parse([]byte(doc))
	if err != nil {
		panic(err)
	}
	return t
}

const simpleTemplate = `name: t
nodes:
- {user: u, control_plane: true}
- {user: u}
service_subnet: 10.68.0.0/16
`

const rolesTemplate = `name: t
nodes:
- {user: u, control_plane: true}
- {user: u, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "6"}}
- {user: u, labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "3"}}
- {user: u, labels: {cke.cybozu.com/role: gpu, cke.cybozu.com/weight: "1"}}
service_subnet: 10.68.0.0/16
`

func input(t *template.Template, c constraints.Constraints, ms []*machine.Machine, cur *cluster.Cluster) Input {
	return Input{Template: t, Constraints: c, Machines: ms, Current: cur, Now: testNow, RetireWait: DefaultRetireWait}
}
