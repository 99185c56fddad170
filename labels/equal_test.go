package labels

import (
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/machine"
)

func drawMachine(t *rapid.T) *machine.Machine {
	m := &machine.Machine{Spec: machine.Spec{
		Serial:       rapid.SampledFrom([]string{"a", "b", "s1"}).Draw(t, "serial"),
		Rack:         rapid.IntRange(-2, 300).Draw(t, "rack"),
		IndexInRack:  rapid.IntRange(0, 120).Draw(t, "index"),
		Role:         rapid.SampledFrom([]string{"", "cs", "ss"}).Draw(t, "role"),
		RegisterDate: drawDate(t, "reg"),
		RetireDate:   drawDate(t, "ret"),
	}}
	for i := 0; i < rapid.IntRange(0, 3).Draw(t, "labels"); i++ {
		m.Spec.Labels = append(m.Spec.Labels, machine.Label{
			Name:  rapid.SampledFrom([]string{"product", "dc", "x"}).Draw(t, "lname"),
			Value: rapid.SampledFrom([]string{"", "1", "R630"}).Draw(t, "lvalue"),
		})
	}
	return m
}

// drawDate draws a date in some UTC offset, with or without fractional
// seconds, around year boundaries more often than not.
func drawDate(t *rapid.T, label string) time.Time {
	sec := rapid.OneOf(
		rapid.Int64Range(-1e10, 3e11),
		rapid.Int64Range(1924991999-2*86400, 1924991999+2*86400), // around 2030-12-31T23:59:59Z
	).Draw(t, label)
	nsec := rapid.SampledFrom([]int64{0, 1, 5e8, 999999999}).Draw(t, label+" nsec")
	return time.Unix(sec, nsec).In(drawZone(t, label))
}

func drawZone(t *rapid.T, label string) *time.Location {
	off := rapid.SampledFrom([]int{0, 3600, 9 * 3600, -5*3600 - 1800, 14 * 3600, -12 * 3600}).Draw(t, label+" offset")
	if off == 0 && rapid.Bool().Draw(t, label+" utc") {
		return time.UTC
	}
	return time.FixedZone("", off)
}

func drawTemplate(t *rapid.T) Template {
	tm := Template{Labels: map[string]string{}, Annotations: map[string]string{}}
	for _, k := range []string{Weight, Role, "example.com/a", "example.com/b"} {
		if rapid.Bool().Draw(t, "has "+k) {
			tm.Labels[k] = rapid.SampledFrom([]string{"1", "cs", "v"}).Draw(t, "v "+k)
		}
	}
	if rapid.Bool().Draw(t, "annotation") {
		tm.Annotations["example.com/note"] = rapid.SampledFrom([]string{"", "n"}).Draw(t, "note")
	}
	return tm
}

// TestEqualAgreesWithRender: Equal(Render(a), b) is true exactly when
// Render(a) == Render(b) (or false, never wrongly true), for random pairs of
// machines, templates and roles.
func TestEqualAgreesWithRender(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m1, t1, cp1 := drawMachine(t), drawTemplate(t), rapid.Bool().Draw(t, "cp1")
		ls, as := Render(m1, t1, cp1)
		if !Equal(ls, as, m1, t1, cp1) && !hasDuplicateNames(m1) {
			t.Fatal("Equal(Render(x), x) = false")
		}
		// A rendering with one value changed is not equal.
		if !hasDuplicateNames(m1) {
			tampered, tamperedAs := maps.Clone(ls), maps.Clone(as)
			target := tampered
			if rapid.Bool().Draw(t, "tamper annotation") {
				target = tamperedAs
			}
			keys := slices.Sorted(maps.Keys(target))
			k := rapid.SampledFrom(keys).Draw(t, "tampered key")
			target[k] += "x"
			if Equal(tampered, tamperedAs, m1, t1, cp1) {
				t.Fatalf("Equal = true with %s changed to %q", k, target[k])
			}
		}
		t2, cp2 := t1, cp1
		// Change one field at a time, so that no check hides behind another.
		other := drawMachine(t)
		c := *m1
		c.Spec.Labels = append([]machine.Label(nil), m1.Spec.Labels...)
		switch rapid.IntRange(0, 12).Draw(t, "change") {
		case 1:
			c.Spec.Rack = other.Spec.Rack
		case 2:
			c.Spec.IndexInRack = other.Spec.IndexInRack
		case 3:
			c.Spec.Role = other.Spec.Role
		case 4:
			c.Spec.Serial = other.Spec.Serial
		case 5:
			c.Spec.RegisterDate = other.Spec.RegisterDate
		case 6:
			c.Spec.RetireDate = other.Spec.RetireDate
		case 7:
			c.Spec.Labels = other.Spec.Labels
		case 8:
			c = *other
		case 9:
			t2 = drawTemplate(t)
		case 10:
			cp2 = !cp1
		case 11:
			// The same instant in another offset renders differently.
			c.Spec.RetireDate = m1.Spec.RetireDate.In(drawZone(t, "other retire zone"))
		case 12:
			c.Spec.RegisterDate = m1.Spec.RegisterDate.In(drawZone(t, "other register zone"))
		}
		m2 := &c
		ls2, as2 := Render(m2, t2, cp2)
		same := maps.Equal(ls, ls2) && maps.Equal(as, as2)
		if got := Equal(ls, as, m2, t2, cp2); got && !same {
			t.Fatalf("Equal = true for different renderings:\n%v\n%v", ls, ls2)
		}
	})
}

// TestEqualRefusesOtherKeys: Equal is false for a rendering with one label
// replaced by a key Render does not write there (a weight the template
// does not have, a control plane's labels on a worker, another role's or
// an empty role's node-role label, a sabakan label the machine does not
// have, a label the template does not have), or with an annotation
// missing: the count of keys hides no check.
func TestEqualRefusesOtherKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m, tm, cp := drawMachine(t), drawTemplate(t), rapid.Bool().Draw(t, "cp")
		if hasDuplicateNames(m) {
			t.Skip("Equal gives up on repeated sabakan label names")
		}
		ls, as := Render(m, tm, cp)
		others := []struct{ k, v string }{
			{Weight, "1"}, {Master, "true"}, {ControlPlane, "true"},
			{NodeRoleBase, "true"}, {NodeRoleBase + "other", "true"},
			{SabakanPrefix + "absent", ""}, {"example.com/c", "v"},
		}
		for _, o := range others {
			if _, ok := ls[o.k]; ok {
				continue
			}
			swapped := maps.Clone(ls)
			delete(swapped, rapid.SampledFrom(slices.Sorted(maps.Keys(ls))).Draw(t, "replaced by "+o.k))
			swapped[o.k] = o.v
			if Equal(swapped, as, m, tm, cp) {
				t.Fatalf("Equal = true with %s=%q in place of a label of %v", o.k, o.v, ls)
			}
		}
		fewer := maps.Clone(as)
		delete(fewer, rapid.SampledFrom(slices.Sorted(maps.Keys(as))).Draw(t, "dropped annotation"))
		if Equal(ls, fewer, m, tm, cp) {
			t.Fatalf("Equal = true without an annotation of %v", as)
		}
	})
}

func hasDuplicateNames(m *machine.Machine) bool {
	seen := map[string]bool{}
	for _, l := range m.Spec.Labels {
		if seen[l.Name] {
			return true
		}
		seen[l.Name] = true
	}
	return false
}

func BenchmarkRender(b *testing.B) {
	m := &machine.Machine{Spec: machine.Spec{Serial: "s", Rack: 12, IndexInRack: 3, Role: "cs",
		Labels: []machine.Label{{Name: "product", Value: "R630"}}, RetireDate: time.Now(), RegisterDate: time.Now()}}
	tm := Template{Labels: map[string]string{Role: "cs", Weight: "2"}}
	ls, as := Render(m, tm, false)
	b.Run("render", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Render(m, tm, false)
		}
	})
	b.Run("equal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !Equal(ls, as, m, tm, false) {
				b.Fatal("not equal")
			}
		}
	})
}
