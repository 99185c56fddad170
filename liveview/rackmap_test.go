package liveview

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

// mc builds a machine: serial, address ("" for none), rack, index, role,
// state.
func mc(serial, addr string, rack, index int, role string, state machine.State) machine.Machine {
	m := machine.Machine{
		Spec: machine.Spec{Serial: serial, Rack: rack, IndexInRack: index, Role: role,
			RegisterDate: testNow.AddDate(-1, 0, 0), RetireDate: testNow.AddDate(4, 0, 0)},
		Status: machine.Status{State: state},
	}
	if addr != "" {
		m.Spec.IPv4 = []string{addr}
	}
	return m
}

func node(addr string, cp bool) *cluster.Node {
	return &cluster.Node{Address: addr, User: "u", ControlPlane: cp}
}

// offline is the map's input of raw machines as a query that returns
// the selected ones (nil: every one) would make it: sanitized as a tick
// does, every machine drawn around them.
func offline(raw []machine.Machine, selected map[string]bool) MapInput {
	var sel []machine.Machine
	for _, m := range raw {
		if selected == nil || selected[m.Spec.Serial] {
			sel = append(sel, m)
		}
	}
	kept, _, warnings := intake.Sanitize(sel)
	in := MapInput{Machines: kept, Context: raw, Warnings: warnings, LeftOut: leftOutOnline}
	if selected == nil {
		in.LeftOut = "ignored as a bad inventory entry (see warnings)"
	}
	return in
}

// rawIn is in drawn from the raw machines ms, every one selected.
func rawIn(ms []machine.Machine, in MapInput) MapInput {
	o := offline(ms, nil)
	in.Machines, in.Context, in.Warnings, in.LeftOut = o.Machines, o.Context, o.Warnings, o.LeftOut
	return in
}

func mustTemplate(t testing.TB, s string) *template.Template {
	t.Helper()
	tm, err := template.Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

const roleTemplate = `{"name":"t","nodes":[
 {"user":"u","control_plane":true,"labels":{"cke.cybozu.com/role":"cs"}},
 {"user":"u","labels":{"cke.cybozu.com/role":"cs"}},
 {"user":"u","labels":{"cke.cybozu.com/role":"ss"}}],"service_subnet":"10.68.0.0/16"}`

// cellsBySerial flattens a map; a serial seen twice gets a suffix.
func cellsBySerial(m *Map) map[string]Cell {
	out := map[string]Cell{}
	for _, r := range m.Racks {
		for _, c := range r.Cells {
			k := c.Serial
			for out[k].Serial != "" {
				k += "'"
			}
			out[k] = c
		}
	}
	return out
}

// TestMapBuildCells: each reason a machine is a control plane, a worker,
// a candidate or not usable, and what a cell says about it.
func TestMapBuildCells(t *testing.T) {
	ms := []machine.Machine{
		mc("cp", "10.0.0.1", 0, 1, "cs", machine.StateHealthy),
		mc("sick-worker", "10.0.0.2", 0, 2, "ss", machine.StateUnreachable),
		mc("free", "10.0.0.3", 0, 3, "cs", machine.StateHealthy),
		mc("unhealthy", "10.0.0.4", 0, 4, "cs", machine.StateUnhealthy),
		mc("boot", "10.0.0.5", 0, 5, "boot", machine.StateHealthy),
		mc("rebooting", "10.0.1.1", 1, 1, "cs", machine.StateHealthy),
		mc("filtered", "10.0.1.2", 1, 2, "cs", machine.StateHealthy),
		mc("filtered-member", "10.0.1.3", 1, 3, "cs", machine.StateHealthy),
		mc("no-address", "", 1, 4, "cs", machine.StateHealthy),
		mc("dup", "10.0.1.5", 1, 5, "cs", machine.StateHealthy),
		mc("dup", "10.0.1.6", 1, 6, "cs", machine.StateHealthy),
		// The node joins the machine the daemon keeps (the smaller serial),
		// not the first one listed.
		mc("same-addr-b", "10.0.2.1", 2, 2, "cs", machine.StateHealthy),
		mc("same-addr-a", "10.0.2.1", 2, 1, "cs", machine.StateHealthy),
		mc("rebooting-member", "10.0.2.3", 2, 3, "ss", machine.StateUnreachable),
		mc("to-add", "10.0.2.4", 2, 4, "ss", machine.StateHealthy),
	}
	selected := map[string]bool{}
	for _, m := range ms {
		if m.Spec.Serial != "filtered" && m.Spec.Serial != "filtered-member" {
			selected[m.Spec.Serial] = true
		}
	}
	in := offline(ms, selected)
	in2 := MapInput{
		Current: &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{
			node("10.0.0.1", true), node("10.0.0.2", false), node("10.0.1.3", false),
			node("10.0.2.1", false), node("10.0.2.3", false), node("10.9.9.9", true),
		}},
		Template:  mustTemplate(t, roleTemplate),
		Rebooting: map[string]bool{"10.0.1.1": true, "10.0.2.3": true, "10.9.9.9": true},
		Next: []generator.Change{
			{Action: generator.ActionAddWorker, Address: "10.0.2.4", Serial: "to-add"},
			{Action: generator.ActionRemoveNonExistentCP, Address: "10.9.9.9"},
			{Action: generator.ActionChangeTaint, Address: "10.0.0.2", Serial: "sick-worker"},
			{Action: generator.ActionRemoveBadCP, Address: "10.0.0.2", Serial: "sick-worker"},
		},
	}
	in.Current, in.Template, in.Rebooting, in.Next = in2.Current, in2.Template, in2.Rebooting, in2.Next
	m := BuildMap(in)
	want := map[string]Cell{
		"cp":               {Serial: "cp", Address: "10.0.0.1", Index: 1, Role: "cs", State: "HEALTHY", Kind: KindControlPlane},
		"sick-worker":      {Serial: "sick-worker", Address: "10.0.0.2", Index: 2, Role: "ss", State: "UNREACHABLE", Kind: KindWorker, Why: "state UNREACHABLE", Change: "change-taint"},
		"free":             {Serial: "free", Address: "10.0.0.3", Index: 3, Role: "cs", State: "HEALTHY", Kind: KindUnused},
		"unhealthy":        {Serial: "unhealthy", Address: "10.0.0.4", Index: 4, Role: "cs", State: "UNHEALTHY", Kind: KindUnusable, Why: "state UNHEALTHY"},
		"boot":             {Serial: "boot", Address: "10.0.0.5", Index: 5, Role: "boot", State: "HEALTHY", Kind: KindUnusable, Why: `role "boot" matches no template`},
		"rebooting":        {Serial: "rebooting", Address: "10.0.1.1", Index: 1, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: "rebooting", Rebooting: true},
		"filtered":         {Serial: "filtered", Address: "10.0.1.2", Index: 2, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: leftOutOnline},
		"filtered-member":  {Serial: "filtered-member", Address: "10.0.1.3", Index: 3, Role: "cs", State: "HEALTHY", Kind: KindWorker, Why: leftOutOnline},
		"no-address":       {Serial: "no-address", Index: 4, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: leftOutOnline},
		"dup":              {Serial: "dup", Address: "10.0.1.5", Index: 5, Role: "cs", State: "HEALTHY", Kind: KindUnused},
		"dup'":             {Serial: "dup", Address: "10.0.1.6", Index: 6, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: leftOutOnline},
		"same-addr-a":      {Serial: "same-addr-a", Address: "10.0.2.1", Index: 1, Role: "cs", State: "HEALTHY", Kind: KindWorker},
		"same-addr-b":      {Serial: "same-addr-b", Address: "10.0.2.1", Index: 2, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: leftOutOnline},
		"rebooting-member": {Serial: "rebooting-member", Address: "10.0.2.3", Index: 3, Role: "ss", State: "UNREACHABLE", Kind: KindWorker, Why: "state UNREACHABLE", Rebooting: true},
		"to-add":           {Serial: "to-add", Address: "10.0.2.4", Index: 4, Role: "ss", State: "HEALTHY", Kind: KindUnused, Change: "add-worker"},
	}
	if diff := cmp.Diff(want, cellsBySerial(m)); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	wantOrphans := []Orphan{{Address: "10.9.9.9", Kind: KindControlPlane, Rebooting: true, Change: "remove-non-existent-control-plane"}}
	if diff := cmp.Diff(wantOrphans, m.Orphans); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
	if len(m.Next) != 4 || len(m.Warnings) != 3 {
		t.Errorf("next %v, warnings %q", m.Next, m.Warnings)
	}
	wantTotals := Counts{Machines: 15, ControlPlanes: map[string]int{"cs": 1}, Workers: map[string]int{"cs": 2, "ss": 2},
		Unused: 3, Unusable: 7, Rebooting: 2}
	if diff := cmp.Diff(wantTotals, m.Totals); diff != "" {
		t.Errorf("totals (-want +got):\n%s", diff)
	}
	wantRack2 := Counts{Machines: 4, ControlPlanes: map[string]int{}, Workers: map[string]int{"cs": 1, "ss": 1},
		Unused: 1, Unusable: 1, Rebooting: 1}
	if diff := cmp.Diff(wantRack2, m.Racks[2].Counts); diff != "" {
		t.Errorf("rack 2 counts (-want +got):\n%s", diff)
	}

	// The model: unknown without constraints; in the rate model, the
	// figure counts the cluster's workers (orphans and filtered ones
	// included, as the cluster has them) against the machines the
	// daemon's query returns after sanitizing: 13 selected, 3 of them
	// bad entries.
	if m.Model != "" || m.Rate != nil || m.ModelText() != "" {
		t.Errorf("without constraints: model %q, rate %+v", m.Model, m.Rate)
	}
	rate := constraints.CountDefaults()
	if err := rate.Set(constraints.MinimumWorkersRate, 80); err != nil {
		t.Fatal(err)
	}
	in.Model, in.Rate = rate.Model(), generator.RateOf(in.Current, len(in.Machines), rate)
	mr := BuildMap(in)
	if want := (&generator.WorkerRate{Workers: 4, Machines: 10, Percent: 30, Minimum: 80}); mr.Model != "rate" || !cmp.Equal(mr.Rate, want) {
		t.Errorf("rate model: model %q, rate %+v, want rate %+v", mr.Model, mr.Rate, want)
	}
	count := constraints.CountDefaults()
	in.Model, in.Rate = count.Model(), generator.RateOf(in.Current, len(in.Machines), count)
	if mc := BuildMap(in); mc.Model != "count" || mc.Rate != nil || mc.ModelText() != "model: count" {
		t.Errorf("count model: model %q, rate %+v, text %q", mc.Model, mc.Rate, mc.ModelText())
	}

	// Without a template every role is a candidate; a query that selects
	// every machine leaves none out.
	all := offline(ms, nil)
	all.Current = in.Current
	got := cellsBySerial(BuildMap(all))
	if c := got["boot"]; c.Kind != KindUnused {
		t.Errorf("boot without a template: %+v, want an unused candidate", c)
	}
	if c := got["filtered"]; c.Kind != KindUnused {
		t.Errorf("filtered without Selected: %+v, want an unused candidate", c)
	}
}

// TestMapBuildNoAddressJoinsNothing: a machine without an address is no
// node's, even listed first and with a node, a change and a reboot of the
// empty address: that node is an orphan.
func TestMapBuildNoAddressJoinsNothing(t *testing.T) {
	m := BuildMap(rawIn([]machine.Machine{mc("no-address", "", 0, 1, "cs", machine.StateHealthy)}, MapInput{
		Current:   &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{node("", false)}},
		Rebooting: map[string]bool{"": true},
		Next:      []generator.Change{{Action: generator.ActionRemoveNonExistentWorker, Address: ""}},
	}))
	want := map[string]Cell{
		"no-address": {Serial: "no-address", Index: 1, Role: "cs", State: "HEALTHY", Kind: KindUnusable, Why: "ignored as a bad inventory entry (see warnings)"},
	}
	if diff := cmp.Diff(want, cellsBySerial(m)); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	wantOrphans := []Orphan{{Address: "", Kind: KindWorker, Rebooting: true, Change: generator.ActionRemoveNonExistentWorker}}
	if diff := cmp.Diff(wantOrphans, m.Orphans); diff != "" {
		t.Errorf("orphans (-want +got):\n%s", diff)
	}
}

// TestMapBuildOrderAndDeterminism: racks in number order, cells in index
// then serial order, whatever the input order; the same input gives the
// same JSON.
func TestMapBuildOrderAndDeterminism(t *testing.T) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 5, 6
	ms := dcgen.Machines(o)
	ms = append(ms, mc("Z-extra", "10.0.3.99", 3, 2, "compute", machine.StateHealthy)) // index 2 twice in rack 3
	in := rawIn(ms, MapInput{Current: &cluster.Cluster{Nodes: []*cluster.Node{node("10.0.0.2", true), node("10.0.1.3", false)}}})
	want, err := json.Marshal(BuildMap(in))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 5 {
		shuffled := append([]machine.Machine(nil), ms...)
		rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		m := BuildMap(rawIn(shuffled, MapInput{Current: in.Current}))
		got, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("the map depends on the input order:\n%s", cmp.Diff(string(want), string(got)))
		}
		for k, r := range m.Racks {
			if k > 0 && m.Racks[k-1].Number >= r.Number {
				t.Fatalf("racks out of order: %d then %d", m.Racks[k-1].Number, r.Number)
			}
			for j := 1; j < len(r.Cells); j++ {
				a, b := r.Cells[j-1], r.Cells[j]
				if a.Index > b.Index || (a.Index == b.Index && a.Serial > b.Serial) {
					t.Fatalf("rack %d: %s (#%d) before %s (#%d)", r.Number, a.Serial, a.Index, b.Serial, b.Index)
				}
			}
		}
	}
}

// TestMapBands: racks whose machines share an index share a row; a rack
// with two machines of one index takes two rows.
func TestMapBands(t *testing.T) {
	m := BuildMap(rawIn([]machine.Machine{
		mc("a1", "10.0.0.1", 0, 1, "", machine.StateHealthy),
		mc("a3", "10.0.0.3", 0, 3, "", machine.StateHealthy),
		mc("b2", "10.0.1.2", 1, 2, "", machine.StateHealthy),
		mc("b3", "10.0.1.3", 1, 3, "", machine.StateHealthy),
		mc("b3bis", "10.0.1.4", 1, 3, "", machine.StateHealthy),
		mc("c7", "10.0.2.7", 2, 7, "", machine.StateHealthy),
	}, MapInput{}))
	bands := m.Bands(2)
	if len(bands) != 2 {
		t.Fatalf("bands: got %d, want 2", len(bands))
	}
	if diff := cmp.Diff([]int{1, 2, 3, 3}, bands[0].Rows); diff != "" {
		t.Errorf("rows of band 0 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([][]int{{0, 2}, {1, 2, 3}}, bands[0].CellRow); diff != "" {
		t.Errorf("cell rows of band 0 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{7}, bands[1].Rows); diff != "" {
		t.Errorf("rows of band 1 (-want +got):\n%s", diff)
	}
	if got := m.Bands(0); len(got) != 3 {
		t.Errorf("Bands(0): %d bands, want one rack per band", len(got))
	}
}

var ansi = regexp.MustCompile("\x1b\\[[0-9;]*m")

// TestMapTextWraps: at every width the rack grid fits (as long as one rack
// does), the racks are cut into as many bands as needed, and colour
// changes no column.
func TestMapTextWraps(t *testing.T) {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack, o.UnhealthyPct = 30, 8, 20
	ms := dcgen.Machines(o)
	in := rawIn(ms, MapInput{Current: &cluster.Cluster{Nodes: []*cluster.Node{node("10.0.0.2", true), node("10.0.12.3", false)}},
		Rebooting: map[string]bool{"10.0.12.3": true}, Next: []generator.Change{{Action: "add-worker", Address: "10.0.29.5"}}})
	m := BuildMap(in)
	for width := 10; width <= 200; width += 7 {
		var plain, color bytes.Buffer
		if err := m.WriteText(&plain, TextOptions{Width: width}); err != nil {
			t.Fatal(err)
		}
		if err := m.WriteText(&color, TextOptions{Width: width, Color: true}); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), "\x1b") {
			t.Fatalf("width %d: escapes without colour", width)
		}
		if !strings.Contains(color.String(), "\x1b[1;7;32m.+") {
			t.Fatalf("width %d: the next step's cell is not highlighted:\n%s", width, color.String())
		}
		stripped := ansi.ReplaceAllString(color.String(), "")
		if i := strings.LastIndex(stripped, "state: "); i < 0 || stripped[:i] != plain.String() {
			t.Fatalf("width %d: colour changes the layout:\n%s", width, cmp.Diff(plain.String(), stripped))
		}

		// labels: "w compute" (9), columns: 2 digits + 2
		perBand := max(1, (width-9)/4)
		lines := strings.Split(plain.String(), "\n")
		for i, line := range lines {
			if line == "" && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "rack ")) {
				break // the grid ends at the blank line after the last band
			}
			if width >= 9+4 && len(line) > width {
				t.Errorf("width %d: line of %d columns: %q", width, len(line), line)
			}
		}
		if got, want := strings.Count("\n"+plain.String(), "\nrack "), (30+perBand-1)/perBand; got != want {
			t.Errorf("width %d: %d bands, want %d", width, got, want)
		}
	}
}

// TestMapTextEmpty: no machines is said, not drawn as nothing.
func TestMapTextEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := BuildMap(MapInput{}).WriteText(&b, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "no machines\n") || !strings.Contains(b.String(), "0 machines in 0 racks") {
		t.Errorf("empty map:\n%s", b.String())
	}
}

// TestMapChangeMarkers: every change action of the generator has a
// marker, and unknown ones are '?'.
func TestMapChangeMarkers(t *testing.T) {
	want := map[string]byte{
		generator.ActionGenerate: '+', generator.ActionAddControlPlane: '+', generator.ActionAddWorker: '+',
		generator.ActionPromoteWorker: '^', generator.ActionDemoteControlPlane: 'v',
		generator.ActionRemoveNonExistentCP: 'x', generator.ActionRemoveNonExistentWorker: 'x',
		generator.ActionRemoveUnmatchedWorker: 'x', generator.ActionRemoveExcessiveCP: 'x',
		generator.ActionRemoveBadCP: 'x', generator.ActionRemoveRetiredWorker: 'x',
		generator.ActionChangeTaint: '*', generator.ActionRegenerate: '*',
		generator.ActionRebalanceAddCP: '+', generator.ActionRebalanceDemoteCP: 'v', generator.ActionRebalanceRemoveCP: 'x',
		generator.ActionSpreadAddCP: '+', generator.ActionSpreadDemoteCP: 'v', generator.ActionSpreadRemoveCP: 'x',
		generator.ActionRerender: '*',
		"something-new":          '?',
	}
	for _, action := range generatorActions(t) {
		if _, ok := want[action]; !ok {
			t.Errorf("action %q has no expected marker here", action)
		}
	}
	for action, w := range want {
		if got := ChangeMarker(action); got != w {
			t.Errorf("ChangeMarker(%q) = %c, want %c", action, got, w)
		}
	}
}

func BenchmarkMapBuild20000(b *testing.B) {
	in := bigInput(b)
	b.ReportAllocs()
	for b.Loop() {
		BuildMap(in)
	}
}

func BenchmarkMapText20000(b *testing.B) {
	m := BuildMap(bigInput(b))
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := m.WriteText(&buf, TextOptions{Width: 200, Color: true}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(buf.Len()), "text-bytes")
}

// bigInput: 500 racks of 40 machines, every other one a node.
func bigInput(tb testing.TB) MapInput {
	o := dcgen.Default(testNow)
	o.Racks, o.PerRack = 500, 40
	ms := dcgen.Machines(o)
	c := &cluster.Cluster{Name: "big"}
	for i := 0; i < len(ms); i += 2 {
		c.Nodes = append(c.Nodes, node(ms[i].Address(), i%4000 == 0))
	}
	if len(c.Nodes) != 10000 {
		tb.Fatal(fmt.Sprint("nodes: ", len(c.Nodes)))
	}
	return rawIn(ms, MapInput{Current: c})
}

// TestMapModelText: the terminal map says the model under the summary,
// with the rate model's figure wrapped to the width; the JSON has the
// same; a map without known constraints says nothing of a model.
func TestMapModelText(t *testing.T) {
	ms := []machine.Machine{
		mc("a1", "10.0.1.1", 1, 1, "cs", machine.StateHealthy),
		mc("a2", "10.0.1.2", 1, 2, "cs", machine.StateHealthy),
		mc("b1", "10.0.2.1", 2, 1, "cs", machine.StateRetired),
		mc("b2", "10.0.2.2", 2, 2, "cs", machine.StateHealthy),
	}
	cur := &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{node("10.0.1.1", true), node("10.0.1.2", false), node("10.0.2.1", false), node("10.0.2.2", false)}}
	rate := constraints.CountDefaults()
	if err := rate.Set(constraints.MinimumWorkersRate, 50); err != nil {
		t.Fatal(err)
	}
	const line = "model: rate, workers 50.0% ((3 workers - 1) / 4 machines), minimum-workers-rate 50%"
	for _, tc := range []struct {
		name  string
		cons  *constraints.Constraints
		cur   *cluster.Cluster
		width int
		want  string // the lines after the summary, before the legend
		json  string // in the JSON, "" for no model
	}{
		{"rate", &rate, cur, 100, line + "\n", `"model": "rate",
  "rate": {
    "workers": 3,
    "machines": 4,
    "percent": 50,
    "minimumWorkersRate": 50
  }`},
		{"rate, narrow", &rate, cur, 50, "model: rate,\n  workers 50.0% ((3 workers - 1) / 4 machines),\n  minimum-workers-rate 50%\n", `"model": "rate"`},
		{"rate, no cluster", &rate, nil, 100, "model: rate\n", `"model": "rate"`},
		{"unknown", nil, cur, 100, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := rawIn(ms, MapInput{Current: tc.cur})
			if c := tc.cons; c != nil {
				in.Model = c.Model()
				if tc.cur != nil {
					in.Rate = generator.RateOf(tc.cur, len(in.Machines), *c)
				}
			}
			m := BuildMap(in)
			var b bytes.Buffer
			if err := m.WriteText(&b, TextOptions{Width: tc.width}); err != nil {
				t.Fatal(err)
			}
			text := b.String()
			start := strings.Index(text, "rebooting\n") + len("rebooting\n")
			end := strings.Index(text, "cells: ")
			if got := text[start:end]; got != tc.want {
				t.Errorf("between the summary and the legend:\n%q\nwant\n%q\nin\n%s", got, tc.want, text)
			}
			data, err := json.MarshalIndent(m, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			if (tc.json == "") != !strings.Contains(string(data), `"model"`) || !strings.Contains(string(data), tc.json) {
				t.Errorf("json:\n%s\nwant %q", data, tc.json)
			}
		})
	}
}

// generatorActions are the values of the generator's Action constants,
// read from its source: every change action it can make.
func generatorActions(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../generator/generator.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					continue
				}
				if lit, ok := vs.Values[i].(*ast.BasicLit); ok && strings.HasPrefix(name.Name, "Action") && lit.Kind == token.STRING {
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					actions = append(actions, v)
				}
			}
		}
	}
	if len(actions) < 20 {
		t.Fatalf("only %d Action constants read from the generator", len(actions))
	}
	return actions
}

// TestMapCandidatesAreTheGenerators: an unused HEALTHY machine is drawn
// as a candidate only when the generator could add a node on it
// (generator.Candidates through CandidatesOf): with a policy that keeps
// workers of role ss out of rack 1, the unused ss machine of rack 1 is
// unusable and says why, its twin in rack 0 is a candidate, and so is a
// cs machine of rack 1 (a control-plane and cs worker candidate).
func TestMapCandidatesAreTheGenerators(t *testing.T) {
	ms := []machine.Machine{
		mc("cp", "10.0.0.1", 0, 1, "cs", machine.StateHealthy),
		mc("ss0", "10.0.0.2", 0, 2, "ss", machine.StateHealthy),
		mc("ss1", "10.0.1.2", 1, 2, "ss", machine.StateHealthy),
		mc("cs1", "10.0.1.3", 1, 3, "cs", machine.StateHealthy),
	}
	in := offline(ms, nil)
	in.Template = mustTemplate(t, roleTemplate)
	in.Current = &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{node("10.0.0.1", true)}}
	doc, err := policy.Parse([]byte(`{"placements": {"ss": {"constraints": ["topology.kubernetes.io/zone not in (rack1)"]}}}`))
	must(t, err)
	pol, err := policy.Compile(doc, in.Template)
	must(t, err)
	in.Candidates, err = CandidatesOf(generator.Input{Template: in.Template, Constraints: constraints.CountDefaults(), Machines: in.Machines,
		Current: in.Current, Policy: pol, RetireWait: generator.DefaultRetireWait})
	must(t, err)
	got := cellsBySerial(BuildMap(in))
	if c := got["ss1"]; c.Kind != KindUnusable || c.Why != notCandidate {
		t.Errorf("ss1, kept out by the placement: %+v", c)
	}
	for _, s := range []string{"ss0", "cs1"} {
		if c := got[s]; c.Kind != KindUnused {
			t.Errorf("%s: %+v, want an unused candidate", s, c)
		}
	}
}
