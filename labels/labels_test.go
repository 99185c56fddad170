package labels

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/machine"
)

func TestRender(t *testing.T) {
	m := &machine.Machine{Spec: machine.Spec{
		Serial: "s1", Rack: 3, IndexInRack: 7, Role: "compute",
		Labels:       []machine.Label{{Name: "product", Value: "R630"}, {Name: "datacenter", Value: "ty3"}},
		RegisterDate: time.Date(2024, 2, 29, 23, 0, 0, 0, time.FixedZone("x", -3600)),
		RetireDate:   time.Date(2030, 12, 31, 23, 30, 0, 0, time.FixedZone("y", -3600)),
	}}
	tmpl := Template{
		Labels:      map[string]string{Weight: "2.0", "example.com/a": "b", Role: "overridden"},
		Annotations: map[string]string{"example.com/note": "n"},
	}
	ls, as := Render(m, tmpl, true)
	wantLabels := map[string]string{
		"sabakan.cke.cybozu.com/product":         "R630",
		"sabakan.cke.cybozu.com/datacenter":      "ty3",
		"example.com/a":                          "b",
		"cke.cybozu.com/rack":                    "3",
		"cke.cybozu.com/index-in-rack":           "7",
		"cke.cybozu.com/role":                    "compute",
		"cke.cybozu.com/register-month":          "2024-03", // UTC
		"cke.cybozu.com/retire-month":            "2031-01", // UTC
		"node-role.kubernetes.io/compute":        "true",
		"topology.kubernetes.io/zone":            "rack3",
		"failure-domain.beta.kubernetes.io/zone": "rack3",
		"node-role.kubernetes.io/master":         "true",
		"node-role.kubernetes.io/control-plane":  "true",
	}
	if diff := cmp.Diff(wantLabels, ls); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		"example.com/note":             "n",
		"cke.cybozu.com/serial":        "s1",
		"cke.cybozu.com/register-date": "2024-03-01T00:00:00Z",
		"cke.cybozu.com/retire-date":   "2031-01-01T00:30:00Z",
	}
	if diff := cmp.Diff(wantAnnotations, as); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestRenderWorkerWithoutRole(t *testing.T) {
	m := &machine.Machine{Spec: machine.Spec{Serial: "s", Rack: 0}}
	ls, _ := Render(m, Template{}, false)
	for k := range ls {
		if len(k) > len(NodeRoleBase) && k[:len(NodeRoleBase)] == NodeRoleBase {
			t.Errorf("worker without a role got %s", k)
		}
	}
	if v, ok := ls[Role]; !ok || v != "" {
		t.Errorf("role label = %q, %v; want present and empty", v, ok)
	}
}

func TestReserved(t *testing.T) {
	for _, k := range []string{Rack, IndexInRack, RegisterMon, RetireMon, Zone, ZoneBeta, "node-role.kubernetes.io/x", "sabakan.cke.cybozu.com/y"} {
		if !IsReservedLabel(k) {
			t.Errorf("%s is not reserved", k)
		}
	}
	for _, k := range []string{Role, Weight, "example.com/x"} {
		if IsReservedLabel(k) {
			t.Errorf("%s is reserved", k)
		}
	}
	if !IsReservedAnnotation(AnnotationSerial) || IsReservedAnnotation("example.com/x") {
		t.Error("IsReservedAnnotation is wrong")
	}
}

func TestValidateSabakanLabel(t *testing.T) {
	if err := ValidateSabakanLabel("product", "R630"); err != nil {
		t.Error(err)
	}
	for _, c := range [][2]string{{"bad/name", "x"}, {"ok", "bad value"}, {"-x", "y"}, {string(make([]byte, 64)), "y"}} {
		if ValidateSabakanLabel(c[0], c[1]) == nil {
			t.Errorf("ValidateSabakanLabel(%q, %q) accepted", c[0], c[1])
		}
	}
}
