package failuredomain

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
)

func mach(serial string, rack, index int, ls ...string) *machine.Machine {
	m := &machine.Machine{Spec: machine.Spec{
		Serial: serial, Rack: rack, IndexInRack: index,
		IPv4: []string{fmt.Sprintf("10.0.%d.%d", rack, index)},
	}, Status: machine.Status{State: machine.StateHealthy}}
	for i := 0; i+1 < len(ls); i += 2 {
		m.Spec.Labels = append(m.Spec.Labels, machine.Label{Name: ls[i], Value: ls[i+1]})
	}
	return m
}

func cp(addr string, ls ...string) *cluster.Node {
	n := &cluster.Node{Address: addr, ControlPlane: true, Labels: map[string]string{}}
	for i := 0; i+1 < len(ls); i += 2 {
		n.Labels[ls[i]] = ls[i+1]
	}
	return n
}

// TestLimit: N control planes keep quorum with floor(N/2)+1; a domain
// breaks it holding more than floor((N-1)/2).
func TestLimit(t *testing.T) {
	for _, c := range []struct{ n, limit, quorum int }{
		{0, 0, 1}, {1, 0, 1}, {2, 0, 2}, {3, 1, 2}, {4, 1, 3}, {5, 2, 3}, {6, 2, 4}, {7, 3, 4},
	} {
		if got := Limit(c.n); got != c.limit {
			t.Errorf("Limit(%d) = %d, want %d", c.n, got, c.limit)
		}
		if got := Quorum(c.n); got != c.quorum {
			t.Errorf("Quorum(%d) = %d, want %d", c.n, got, c.quorum)
		}
		// Losing limit+1 leaves fewer than quorum; losing limit does not.
		if c.n > 0 && (c.n-c.limit < c.quorum || c.n-c.limit-1 >= c.quorum) {
			t.Errorf("n=%d: limit %d and quorum %d disagree", c.n, c.limit, c.quorum)
		}
	}
	if BreaksQuorum(1, 3) || !BreaksQuorum(2, 3) || !BreaksQuorum(3, 5) || BreaksQuorum(2, 5) || !BreaksQuorum(1, 1) {
		t.Error("BreaksQuorum disagrees with Limit")
	}
}

func TestOf(t *testing.T) {
	m := mach("S1", 4, 12, "power-feed", "b")
	bare := mach("S2", 11, 3)
	if got := Rack().Of(m); got != "4" {
		t.Errorf("rack domain %q, want 4", got)
	}
	feed := ByLabel("power-feed")
	if got := feed.Of(m); got != "b" {
		t.Errorf("label domain %q, want b", got)
	}
	own := feed.Of(bare)
	if own != "S2 (no power-feed label)" {
		t.Errorf("domain of a machine without the label %q", own)
	}
	if got := feed.Describe(own); got != "machine S2 (no power-feed label)" {
		t.Errorf("Describe(%q) = %q", own, got)
	}
	if got := feed.Describe("b"); got != "power-feed b" {
		t.Errorf("Describe(b) = %q", got)
	}
	if got := Rack().DescribeAll([]string{"4", "11"}); got != "racks 4, 11" {
		t.Errorf("DescribeAll = %q", got)
	}
	if got := feed.DescribeAll([]string{"a", own}); got != "power-feed a, machine S2 (no power-feed label)" {
		t.Errorf("DescribeAll = %q", got)
	}
	if Rack().Name() != "rack" || feed.Name() != "power-feed" {
		t.Error("Name")
	}
}

func TestCompare(t *testing.T) {
	racks := []string{"11", "4", "100", "0"}
	slices.SortFunc(racks, Rack().Compare)
	if !slices.Equal(racks, []string{"0", "4", "11", "100"}) {
		t.Errorf("racks sorted %v", racks)
	}
	feed := ByLabel("power-feed")
	vals := []string{"S1 (no power-feed label)", "b", "a"}
	slices.SortFunc(vals, feed.Compare)
	if !slices.Equal(vals, []string{"a", "b", "S1 (no power-feed label)"}) {
		t.Errorf("label domains sorted %v", vals)
	}
}

// TestControlPlanes: the census of the bundled data center's story, two of
// three control planes in rack 4, by rack and by a label, with a control
// plane whose machine left sabakan read from its node's labels.
func TestControlPlanes(t *testing.T) {
	ms := []*machine.Machine{
		mach("S092", 4, 12, "power-feed", "a"),
		mach("S093", 4, 13, "power-feed", "b"),
		mach("S224", 11, 4, "power-feed", "b"),
		mach("S225", 11, 5),
	}
	c := &cluster.Cluster{Nodes: []*cluster.Node{
		cp("10.0.11.4"), cp("10.0.4.12"), {Address: "10.0.11.5"}, cp("10.0.4.13"),
	}}
	cen := ControlPlanes(Rack(), ms, c)
	if cen.ControlPlanes != 3 || cen.Limit() != 1 || cen.Quorum() != 2 {
		t.Fatalf("census %+v", cen)
	}
	want := []Domain{{"4", []string{"10.0.4.12", "10.0.4.13"}}, {"11", []string{"10.0.11.4"}}}
	if fmt.Sprint(cen.Domains) != fmt.Sprint(want) {
		t.Fatalf("domains %v, want %v", cen.Domains, want)
	}
	risk := cen.AtRisk()
	if len(risk) != 1 || risk[0].Name != "4" {
		t.Fatalf("at risk %v, want rack 4", risk)
	}
	if got, want := cen.Words(risk[0]), "rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum"; got != want {
		t.Errorf("words %q, want %q", got, want)
	}

	feed := ControlPlanes(ByLabel("power-feed"), ms, c)
	if w := feed.Warnings(); len(w) != 1 || w[0] != "power-feed b holds 2 of 3 control planes: losing it breaks etcd's quorum" {
		t.Errorf("power feed warnings %q", w)
	}

	// S093 left sabakan: its domain comes from the node's labels.
	c.Nodes[3] = cp("10.0.4.13", "cke.cybozu.com/rack", "4", "sabakan.cke.cybozu.com/power-feed", "a")
	if got := ControlPlanes(Rack(), ms[:1:1], c); got.Held("4") != 2 || got.Held("11") != 0 {
		t.Errorf("with machines gone: %+v", got)
	}
	gone := ControlPlanes(ByLabel("power-feed"), ms[:1], c)
	if gone.Held("a") != 2 || gone.Held("10.0.11.4 (no power-feed label)") != 1 {
		t.Errorf("label census with machines gone: %+v", gone)
	}
	if w := gone.Warnings(); len(w) != 1 || w[0] != "power-feed a holds 2 of 3 control planes: losing it breaks etcd's quorum" {
		t.Errorf("warnings %q", w)
	}

	// One control plane: its domain always breaks the quorum.
	one := ControlPlanes(Rack(), ms, &cluster.Cluster{Nodes: []*cluster.Node{cp("10.0.11.4")}})
	if w := one.Warnings(); len(w) != 1 || w[0] != "rack 11 holds 1 of 1 control plane: losing it breaks etcd's quorum" {
		t.Errorf("one control plane: %q", w)
	}
	if got := ControlPlanes(Rack(), ms, nil); got.ControlPlanes != 0 || got.AtRisk() != nil {
		t.Errorf("no cluster: %+v", got)
	}
}

// BenchmarkControlPlanes20000 is a tick's check at 20,000 machines (500
// racks of 40), with the control planes at the end of the inventory so
// that every machine is read.
func BenchmarkControlPlanes20000(b *testing.B) {
	o := dcgen.Default(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	o.Racks, o.PerRack = 500, 40
	raw := dcgen.Machines(o)
	ms := make([]*machine.Machine, len(raw))
	for i := range raw {
		ms[i] = &raw[i]
	}
	c := &cluster.Cluster{}
	for i := range ms {
		n := &cluster.Node{Address: ms[i].Address()}
		if i >= len(ms)-3 {
			n.ControlPlane = true
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, key := range []Key{Rack(), ByLabel("product")} {
		b.Run(key.Name(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cen := ControlPlanes(key, ms, c)
				if cen.ControlPlanes != 3 {
					b.Fatal(cen)
				}
			}
		})
	}
}
