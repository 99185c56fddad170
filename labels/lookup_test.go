package labels

import (
	"strconv"
	"testing"

	"pgregory.net/rapid"
)

// TestNodeLabelAgreesWithRender: Node.Label answers every key exactly as
// the map of Render, for random machines and templates, including
// template labels that later steps override and keys Render never sets.
func TestNodeLabelAgreesWithRender(t *testing.T) {
	keys := []string{
		Rack, IndexInRack, Role, RegisterMon, RetireMon, RetireYear, Zone, ZoneBeta,
		Master, ControlPlane, Weight, NodeRoleBase + "cs", NodeRoleBase + "ss", NodeRoleBase,
		SabakanPrefix + "product", SabakanPrefix + "dc", SabakanPrefix + "x", SabakanPrefix,
		"example.com/a", "example.com/b", "absent",
	}
	rapid.Check(t, func(t *rapid.T) {
		m, tm, cp := drawMachine(t), drawTemplate(t), rapid.Bool().Draw(t, "cp")
		// Template labels that rendering overrides.
		for _, k := range []string{Zone, Master, NodeRoleBase + "cs", SabakanPrefix + "dc"} {
			if rapid.Bool().Draw(t, "override "+k) {
				tm.Labels[k] = "from-template"
			}
		}
		ls, _ := Render(m, tm, cp)
		n := Node{Machine: m, Template: tm, ControlPlane: cp}
		if rapid.Bool().Draw(t, "texts given") {
			n.RackText, n.ZoneText = strconv.Itoa(m.Spec.Rack), "rack"+strconv.Itoa(m.Spec.Rack)
		}
		for _, k := range keys {
			want, wantOK := ls[k]
			got, ok := n.Label(k)
			if got != want || ok != wantOK {
				t.Fatalf("Label(%q) = %q, %v; Render has %q, %v", k, got, ok, want, wantOK)
			}
		}
	})
}
