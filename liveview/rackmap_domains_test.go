package liveview

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/failuredomain"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
)

// riskInput: racks 4 and 11 of three machines, two control planes in rack
// 4 and one in rack 11; machine d1 (rack 4) and e1 (rack 11) are on power
// feed a, the others on b.
func riskInput(key *failuredomain.Key) MapInput {
	ms := []machine.Machine{
		mc("d1", "10.0.4.1", 4, 1, "cs", machine.StateHealthy),
		mc("d2", "10.0.4.2", 4, 2, "cs", machine.StateHealthy),
		mc("d3", "10.0.4.3", 4, 3, "cs", machine.StateHealthy),
		mc("e1", "10.0.11.1", 11, 1, "cs", machine.StateHealthy),
		mc("e2", "10.0.11.2", 11, 2, "cs", machine.StateHealthy),
		mc("e3", "10.0.11.3", 11, 3, "cs", machine.StateHealthy),
	}
	for i := range ms {
		feed := "b"
		if ms[i].Spec.Serial == "d1" || ms[i].Spec.Serial == "e1" {
			feed = "a"
		}
		ms[i].Spec.Labels = []machine.Label{{Name: "power-feed", Value: feed}}
	}
	c := &cluster.Cluster{Nodes: []*cluster.Node{node("10.0.4.1", true), node("10.0.4.2", true), node("10.0.11.1", true), node("10.0.11.2", false)}}
	in := rawIn(ms, MapInput{Current: c})
	if key != nil {
		cen := failuredomain.ControlPlanes(*key, in.Machines, c)
		in.Domains = &cen
	}
	return in
}

func keyOf(k failuredomain.Key) *failuredomain.Key { return &k }

// TestMapMarksDomainsAtRisk: by rack, rack 4 (two of three control
// planes) is marked, in JSON (the map's quorumAtRisk with the words, the
// rack's) and in text (its number marked #, red in colour, and a line
// under the map); rack 11 is not. By power feed, feed a holds the control
// planes of racks 4 and 11, and both are marked. Without a failure domain,
// nothing is.
func TestMapMarksDomainsAtRisk(t *testing.T) {
	m := BuildMap(riskInput(keyOf(failuredomain.Rack())))
	words := "rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum"
	if m.FailureDomain != "rack" || len(m.QuorumAtRisk) != 1 || m.QuorumAtRisk[0].Domain != "4" || m.QuorumAtRisk[0].Words != words ||
		!slices.Equal(m.QuorumAtRisk[0].Racks, []int{4}) || !slices.Equal(m.QuorumAtRisk[0].ControlPlanes, []string{"10.0.4.1", "10.0.4.2"}) {
		t.Fatalf("at risk %+v", m.QuorumAtRisk)
	}
	if !slices.Equal(m.Racks[0].QuorumAtRisk, []string{"4"}) || m.Racks[1].QuorumAtRisk != nil {
		t.Errorf("racks marked: 4 %q, 11 %q", m.Racks[0].QuorumAtRisk, m.Racks[1].QuorumAtRisk)
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"quorumAtRisk":[{"domain":"4","controlPlanes":["10.0.4.1","10.0.4.2"],"racks":[4],"words":"`+words+`"}]`) ||
		!strings.Contains(string(data), `"failureDomain":"rack"`) || strings.Count(string(data), `"quorumAtRisk"`) != 2 {
		t.Errorf("json: %s", data)
	}
	var plain, color bytes.Buffer
	if err := m.WriteText(&plain, TextOptions{Width: 100}); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteText(&color, TextOptions{Width: 100, Color: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain.String(), "rack  4# 11\n") || !strings.Contains(plain.String(), "\nquorum at risk (#): "+words+"\n") ||
		!strings.Contains(plain.String(), " # rack whose loss breaks etcd's quorum\n") {
		t.Errorf("text:\n%s", plain.String())
	}
	if !strings.HasPrefix(color.String(), "rack  \x1b[1;31m4\x1b[0m# 11\n") {
		t.Errorf("colour: %q", color.String())
	}

	// Narrow: the line wraps, the grid keeps its columns.
	var narrow bytes.Buffer
	if err := m.WriteText(&narrow, TextOptions{Width: 30}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(narrow.String(), "\nquorum at risk (#): rack 4\n  holds 2 of 3 control\n") {
		t.Errorf("narrow:\n%s", narrow.String())
	}

	feed := BuildMap(riskInput(keyOf(failuredomain.ByLabel("power-feed"))))
	if feed.FailureDomain != "power-feed" || len(feed.QuorumAtRisk) != 1 || feed.QuorumAtRisk[0].Domain != "a" ||
		!slices.Equal(feed.QuorumAtRisk[0].Racks, []int{4, 11}) || !slices.Equal(feed.Racks[1].QuorumAtRisk, []string{"a"}) {
		t.Errorf("by power feed: %+v", feed.QuorumAtRisk)
	}
	plain.Reset()
	if err := feed.WriteText(&plain, TextOptions{Width: 200}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plain.String(), "rack  4# 11#\n") ||
		!strings.Contains(plain.String(), "\nquorum at risk (# over racks 4, 11): power-feed a holds 2 of 3 control planes: losing it breaks etcd's quorum\n") {
		t.Errorf("by power feed:\n%s", plain.String())
	}

	none := BuildMap(riskInput(nil))
	data, _ = json.Marshal(none)
	if none.FailureDomain != "" || none.QuorumAtRisk != nil || strings.Contains(string(data), "quorumAtRisk") || strings.Contains(string(data), "failureDomain") {
		t.Errorf("no failure domain: %s", data)
	}
	spread := riskInput(keyOf(failuredomain.Rack()))
	spread.Current.Nodes[1] = node("10.0.4.2", false)
	spread.Current.Nodes = append(spread.Current.Nodes, node("10.0.9.9", true)) // its machine gone: a domain of its own
	cen := failuredomain.ControlPlanes(failuredomain.Rack(), spread.Machines, spread.Current)
	spread.Domains = &cen
	if m := BuildMap(spread); m.FailureDomain != "rack" || m.QuorumAtRisk != nil || m.Racks[0].QuorumAtRisk != nil {
		t.Errorf("no domain at risk: %+v", m.QuorumAtRisk)
	}
}

// TestMarksDistinct: the mark of a rack at risk is none of the marks and
// symbols of a cell, so that a map says one thing with each.
func TestMarksDistinct(t *testing.T) {
	cellMarks := map[byte]string{}
	for _, k := range []Kind{KindControlPlane, KindWorker, KindUnused, KindUnusable} {
		cellMarks[k.Symbol()] = "the symbol of " + string(k)
	}
	for _, c := range []Cell{{Kind: KindWorker, Rebooting: true}, {Kind: KindWorker, Why: "UNHEALTHY"}} {
		cellMarks[c.Marker()] = "a cell's mark"
	}
	for _, a := range []string{generator.ActionAddWorker, generator.ActionPromoteWorker, generator.ActionDemoteControlPlane,
		generator.ActionRerender, generator.ActionRemoveUnmatchedWorker} {
		cellMarks[ChangeMarker(a)] = "the mark of " + a
	}
	if what, ok := cellMarks[riskMarker]; ok {
		t.Errorf("a rack at risk is marked %c, as is %s", riskMarker, what)
	}
}
