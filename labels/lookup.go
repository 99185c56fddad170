package labels

import (
	"strconv"
	"strings"

	"github.com/ckegen/ckegen/machine"
)

// Node is a machine as a node of a template, whose labels are read one at
// a time: a placement policy's constraints (docs/design.md 12.2) read a few labels of
// every machine, and rendering all of them would cost a map per machine.
// Its Label answers exactly as the map of Render would.
type Node struct {
	Machine      *machine.Machine
	Template     Template
	ControlPlane bool
	// RackText and ZoneText, when set, are the machine's rack as a
	// decimal and its zone ("rack" and the rack): a caller that reads the
	// labels of thousands of machines in few racks keeps them per rack
	// instead of formatting them for every machine.
	RackText, ZoneText string
}

// Label returns the value Render would give key, and whether Render sets
// it; later steps of docs/design.md 2 win over earlier ones as in Render.
func (n Node) Label(key string) (string, bool) {
	spec := &n.Machine.Spec
	if n.ControlPlane && (key == Master || key == ControlPlane) {
		return "true", true
	}
	switch key {
	case Rack:
		if n.RackText != "" {
			return n.RackText, true
		}
		return strconv.Itoa(spec.Rack), true
	case IndexInRack:
		return strconv.Itoa(spec.IndexInRack), true
	case Role:
		return spec.Role, true
	case RegisterMon:
		return month(FormatDate(spec.RegisterDate)), true
	case RetireMon:
		return month(FormatDate(spec.RetireDate)), true
	case RetireYear:
		return year(FormatDate(spec.RetireDate)), true
	case Zone:
		if n.ZoneText != "" {
			return n.ZoneText, true
		}
		return "rack" + strconv.Itoa(spec.Rack), true
	}
	if spec.Role != "" && strings.HasPrefix(key, NodeRoleBase) && key[len(NodeRoleBase):] == spec.Role {
		return "true", true
	}
	if v, ok := n.Template.Labels[key]; ok {
		return v, true
	}
	if name, ok := strings.CutPrefix(key, SabakanPrefix); ok {
		// The last of repeated names wins, as in Render.
		for i := len(spec.Labels) - 1; i >= 0; i-- {
			if spec.Labels[i].Name == name {
				return spec.Labels[i].Value, true
			}
		}
	}
	return "", false
}
