package labels

import (
	"maps"
	"strings"
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
		"sabakan.cke.cybozu.com/product":        "R630",
		"sabakan.cke.cybozu.com/datacenter":     "ty3",
		"example.com/a":                         "b",
		"cke.cybozu.com/weight":                 "2.0", // copied as CKE does
		"cke.cybozu.com/rack":                   "3",
		"cke.cybozu.com/index-in-rack":          "7",
		"cke.cybozu.com/role":                   "compute",
		"cke.cybozu.com/register-month":         "2024-02", // in the date's offset
		"cke.cybozu.com/retire-month":           "2030-12",
		"cke.cybozu.com/retire-year":            "2030",
		"node-role.kubernetes.io/compute":       "true",
		"topology.kubernetes.io/zone":           "rack3",
		"node-role.kubernetes.io/master":        "true",
		"node-role.kubernetes.io/control-plane": "true",
	}
	if diff := cmp.Diff(wantLabels, ls); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	wantAnnotations := map[string]string{
		"example.com/note":             "n",
		"cke.cybozu.com/serial":        "s1",
		"cke.cybozu.com/register-date": "2024-02-29T23:00:00-01:00",
		"cke.cybozu.com/retire-date":   "2030-12-31T23:30:00-01:00",
	}
	if diff := cmp.Diff(wantAnnotations, as); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

// TestRenderDates: month, year and date annotations are rendered in the
// offset sabakan returned the date with (docs/design.md 1.5), to the second.
func TestRenderDates(t *testing.T) {
	cases := []struct {
		date               string // as sabakan returns it
		month, year, annot string
	}{
		{"2031-08-01T05:00:00+09:00", "2031-08", "2031", "2031-08-01T05:00:00+09:00"},
		{"2031-08-01T05:00:00Z", "2031-08", "2031", "2031-08-01T05:00:00Z"},
		{"2027-12-31T22:33:31.123456789+09:00", "2027-12", "2027", "2027-12-31T22:33:31+09:00"},
		{"2028-01-01T00:00:00.999-05:30", "2028-01", "2028", "2028-01-01T00:00:00-05:30"},
		{"2030-12-31T23:59:59.5Z", "2030-12", "2030", "2030-12-31T23:59:59Z"},
	}
	for _, c := range cases {
		var d time.Time
		if err := d.UnmarshalJSON([]byte(`"` + c.date + `"`)); err != nil {
			t.Fatal(err)
		}
		m := &machine.Machine{Spec: machine.Spec{Serial: "s", RegisterDate: d, RetireDate: d}}
		ls, as := Render(m, Template{}, false)
		if ls[RetireMon] != c.month || ls[RegisterMon] != c.month || ls[RetireYear] != c.year ||
			as[AnnotationRetireDate] != c.annot || as[AnnotationRegisterDate] != c.annot {
			t.Errorf("%s: months %s/%s, year %s, annotations %s/%s; want %s, %s, %s", c.date,
				ls[RegisterMon], ls[RetireMon], ls[RetireYear], as[AnnotationRegisterDate], as[AnnotationRetireDate],
				c.month, c.year, c.annot)
		}
		if !Equal(ls, as, m, Template{}, false) {
			t.Errorf("%s: Equal(Render(m), m) = false", c.date)
		}
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

// TestRenderWeight: the weight is a template label like any other on the
// node, as CKE's code renders it (a site moving between CKE's integration
// and ckegen sees no label change): rendered with its value as written,
// and a node written without it (by an earlier ckegen) is not what Render
// gives, so the next write adds it.
func TestRenderWeight(t *testing.T) {
	m := &machine.Machine{Spec: machine.Spec{Serial: "s", Rack: 1, Role: "cs"}}
	for _, w := range []string{"6.0", "0.5", "1", "10"} {
		tm := Template{Labels: map[string]string{Role: "cs", Weight: w}}
		ls, as := Render(m, tm, false)
		if ls[Weight] != w {
			t.Errorf("weight %q: rendered %s=%q", w, Weight, ls[Weight])
		}
		if !Equal(ls, as, m, tm, false) {
			t.Errorf("weight %q: Equal refuses Render's own labels", w)
		}
		if v, ok := (Node{Machine: m, Template: tm}).Label(Weight); !ok || v != w {
			t.Errorf("weight %q: Node.Label = %q, %v", w, v, ok)
		}
		old := maps.Clone(ls)
		delete(old, Weight)
		if Equal(old, as, m, tm, false) {
			t.Errorf("weight %q: Equal accepts a node without the weight label", w)
		}
	}
	// Without a weight in the template, none on the node.
	ls, _ := Render(m, Template{Labels: map[string]string{Role: "cs"}}, false)
	if v, ok := ls[Weight]; ok {
		t.Errorf("no weight in the template, rendered %s=%q", Weight, v)
	}
}

func TestReserved(t *testing.T) {
	for _, k := range []string{Rack, IndexInRack, RegisterMon, RetireMon, RetireYear, Zone, "node-role.kubernetes.io/x", "sabakan.cke.cybozu.com/y"} {
		if got := ReservedLabelReason(k); got != "the generator sets it" {
			t.Errorf("ReservedLabelReason(%q) = %q, want %q", k, got, "the generator sets it")
		}
	}
	for _, k := range []string{Role, Weight, "example.com/x"} {
		if got := ReservedLabelReason(k); got != "" {
			t.Errorf("%s is reserved: %q", k, got)
		}
	}
	if !IsReservedAnnotation(AnnotationSerial) || IsReservedAnnotation("example.com/x") {
		t.Error("IsReservedAnnotation is wrong")
	}
}

// TestZoneBeta: the deprecated zone label is not rendered, as CKE v1.35.4
// does not render it, and a template still may not set it, with the
// reason: it would contradict the zone the generator sets.
func TestZoneBeta(t *testing.T) {
	m := &machine.Machine{Spec: machine.Spec{Serial: "s", Rack: 4, Role: "cs"}}
	for _, cp := range []bool{false, true} {
		ls, as := Render(m, Template{}, cp)
		if v, ok := ls[ZoneBeta]; ok {
			t.Errorf("control plane %v: Render set %s=%q; CKE v1.35.4 does not", cp, ZoneBeta, v)
		}
		if ls[Zone] != "rack4" {
			t.Errorf("control plane %v: %s = %q, want rack4", cp, Zone, ls[Zone])
		}
		// A node that still carries it (written by an earlier ckegen) is
		// not what Render gives: the next write drops it.
		ls[ZoneBeta] = "rack4"
		if Equal(ls, as, m, Template{}, cp) {
			t.Errorf("control plane %v: Equal accepts a node with %s", cp, ZoneBeta)
		}
	}
	why := ReservedLabelReason(ZoneBeta)
	for _, want := range []string{"deprecated", Zone, "rack", "remove it"} {
		if !strings.Contains(why, want) {
			t.Errorf("ReservedLabelReason(%s) = %q: does not say %q", ZoneBeta, why, want)
		}
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
