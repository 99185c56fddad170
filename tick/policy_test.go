package tick

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/internal/testutil/promtest"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// putPolicy stores a policy as it is, unchecked: what the daemon must
// check at every tick.
func putPolicy(t *testing.T, f *fixture, doc string) {
	t.Helper()
	_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeySabakanPolicy), doc)
	must(t, err)
}

// cpNodes are the control planes of c.
func cpNodes(c *cluster.Cluster) []*cluster.Node {
	var out []*cluster.Node
	for _, n := range c.Nodes {
		if n.ControlPlane {
			out = append(out, n)
		}
	}
	return out
}

// placement returns the status of placement key.
func placement(st storage.Status, key string) (storage.PlacementStatus, bool) {
	for _, p := range st.Placements {
		if p.Placement == key {
			return p, true
		}
	}
	return storage.PlacementStatus{}, false
}

// groupNodes renders a placement's counts as "dedicated=2 any=1 =0".
func groupNodes(p storage.PlacementStatus) string {
	var parts []string
	for _, g := range p.Groups {
		parts = append(parts, fmt.Sprintf("%s=%d", g.Group, g.Nodes))
	}
	return strings.Join(parts, " ")
}

// staticPolicy restricts control planes to racks 1 and 2, prefers the
// machines labelled cp-ready (group dedicated) over the others (group
// any), and takes a static temperature off the score.
const staticPolicy = `{
  "placements": {
    "control-plane": {
      "constraints": ["topology.kubernetes.io/zone in (rack1, rack2)"],
      "groups": [
        {"name": "dedicated", "constraints": ["sabakan.cke.cybozu.com/cp-ready is true"]},
        {"name": "any"}
      ],
      "metrics": [{"name": "temp", "weight": -5}]
    }
  },
  "metrics": {"temp": {"provider": "lab", "min": 0, "max": 100}},
  "providers": {"lab": {"type": "static", "values": {
    "S000008": {"temp": 21}, "S000013": {"temp": 21}, "S000009": {"temp": 21}}}}
}`

// TestPolicyPlacesControlPlanes: with a rack constraint and two ordered
// groups, the daemon's control planes are in the allowed racks, the
// dedicated machines first; the status and ckegen_placement_nodes show
// the observed group and the nodes by group; the stored scores carry the
// metric points. The observed group is kept by a tick that picks nothing
// and follows the next pick.
func TestPolicyPlacesControlPlanes(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for _, serial := range []string{"S000008", "S000013"} {
		must(t, f.store.SetLabel(serial, "cp-ready", "true"))
	}
	putPolicy(t, f, staticPolicy)
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))

	c := f.cluster(t)
	if c == nil {
		t.Fatal("no cluster written")
	}
	var cpSerials []string
	for _, n := range cpNodes(c) {
		cpSerials = append(cpSerials, serial(n))
		if z := n.Labels[labels.Zone]; z != "rack1" && z != "rack2" {
			t.Errorf("control plane %s (%s) in %s, outside the policy's racks", n.Address, serial(n), z)
		}
	}
	if len(cpSerials) != 3 || !slices.Contains(cpSerials, "S000008") || !slices.Contains(cpSerials, "S000013") {
		t.Errorf("control planes %v, want 3 with both cp-ready machines", cpSerials)
	}

	st := f.status(t)
	if st.Result != reason.OK {
		t.Fatalf("status %+v", st)
	}
	// The changes record their group; the last control plane pick's group
	// is the observed one.
	var lastGroup string
	picked := map[string]string{}
	for _, ch := range st.LastChanges {
		if ch.Placement == "control-plane" {
			lastGroup, picked[ch.Serial] = ch.Group, ch.Group
		}
	}
	if picked["S000008"] != "dedicated" || picked["S000013"] != "dedicated" || len(picked) != 3 || lastGroup != "any" {
		t.Errorf("groups of the control plane picks %v (last %q), want both cp-ready machines in dedicated, the third in any", picked, lastGroup)
	}
	p, ok := placement(st, "control-plane")
	if !ok || p.ObservedGroup != "any" || groupNodes(p) != "dedicated=2 any=1 =0" {
		t.Errorf("placement status %+v, want observed group any and dedicated=2 any=1 =0", st.Placements)
	}
	// S000008's temperature takes 5 x 0.21 points off its score.
	for _, ch := range st.LastChanges {
		if ch.Serial == "S000008" && (ch.Score == nil || math.Abs(*ch.Score-math.Floor(*ch.Score)-0.95) > 1e-9) {
			t.Errorf("S000008's stored score %v does not carry -1.05 metric points", ch.Score)
		}
	}
	want := []string{
		`ckegen_placement_nodes{group="",template="control-plane"} 0`,
		`ckegen_placement_nodes{group="any",template="control-plane"} 1`,
		`ckegen_placement_nodes{group="dedicated",template="control-plane"} 2`,
	}
	if got := series(scrape(t, d), "ckegen_placement_nodes{"); !slices.Equal(got, want) {
		t.Errorf("ckegen_placement_nodes:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := series(scrape(t, d), "ckegen_policy_metrics_duration_seconds_count"); !slices.Equal(got, []string{"ckegen_policy_metrics_duration_seconds_count 1"}) {
		t.Errorf("one fetch timed, got %q", got)
	}

	// Nothing to do: the observed group stays.
	must(t, d.runOnce(ctx, leader))
	if p, _ := placement(f.status(t), "control-plane"); p.ObservedGroup != "any" {
		t.Errorf("after a tick without a pick: observed group %q, want any", p.ObservedGroup)
	}

	// An unused machine of rack 1 becomes cp-ready and a dedicated
	// control plane unreachable: its replacement comes from dedicated.
	spare := unusedIn(c, "S000007", "S000009", "S000010")
	if spare == "" {
		t.Fatalf("no unused machine in rack 1: %v", c.Nodes)
	}
	must(t, f.store.SetLabel(spare, "cp-ready", "true"))
	_, err := f.store.SetState("S000008", machine.StateUnreachable)
	must(t, err)
	for range 5 {
		must(t, d.runOnce(ctx, leader))
		if !slices.ContainsFunc(cpNodes(f.cluster(t)), func(n *cluster.Node) bool { return serial(n) == "S000008" }) {
			break
		}
	}
	c = f.cluster(t)
	cpSerials = nil
	for _, n := range cpNodes(c) {
		cpSerials = append(cpSerials, serial(n))
	}
	if !slices.Contains(cpSerials, spare) || slices.Contains(cpSerials, "S000008") {
		t.Fatalf("control planes %v after S000008 became unreachable, want %s in its place", cpSerials, spare)
	}
	p, _ = placement(f.status(t), "control-plane")
	if p.ObservedGroup != "dedicated" {
		t.Errorf("after the replacement: observed group %q, want dedicated (%+v)", p.ObservedGroup, p)
	}

	// Disabled: no placements, no series; enabled again: both back.
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Placements != nil {
		t.Errorf("placements while disabled: %+v", st.Placements)
	}
	if got := series(scrape(t, d), "ckegen_placement_nodes{"); len(got) != 0 {
		t.Errorf("ckegen_placement_nodes while disabled: %q", got)
	}
	must(t, f.st.SetDisabled(ctx, false))
	must(t, d.runOnce(ctx, leader))
	if got := series(scrape(t, d), "ckegen_placement_nodes{"); len(got) != 3 {
		t.Errorf("ckegen_placement_nodes enabled again: %q", got)
	}

	// The policy removed: no placements, no series.
	_, err = f.st.Client.Delete(ctx, f.st.Key(storage.KeySabakanPolicy))
	must(t, err)
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Placements != nil {
		t.Errorf("placements without a policy: %+v", st.Placements)
	}
	if got := series(scrape(t, d), "ckegen_placement_nodes{"); len(got) != 0 {
		t.Errorf("ckegen_placement_nodes without a policy: %q", got)
	}
}

// TestPolicyWakesTheDaemon: storing a policy triggers a tick at once.
// unusedIn returns the first of serials that is not a node of c.
func unusedIn(c *cluster.Cluster, serials ...string) string {
	for _, s := range serials {
		if !slices.ContainsFunc(c.Nodes, func(n *cluster.Node) bool { return serial(n) == s }) {
			return s
		}
	}
	return ""
}

// TestPolicyPrometheus: a real Prometheus scrapes per-machine inlet
// temperatures; the daemon reads them each tick and keeps control planes
// off the hot racks (0 and 1), which it would use without the policy, and
// their scores carry the temperatures' points. Prometheus stopped: the
// tick fails with METRICS_UNAVAILABLE and writes nothing, although a
// control plane needs replacing; Prometheus back: the replacement is made,
// on a cool rack.
func TestPolicyPrometheus(t *testing.T) {
	exp := promtest.NewExporter(t)
	var page strings.Builder
	page.WriteString("# TYPE ipmi_temperature_celsius gauge\n")
	for n := 1; n <= 20; n++ {
		temp := 20
		if rack := (n - 1) / 5; rack < 2 {
			temp = 40
		}
		fmt.Fprintf(&page, "ipmi_temperature_celsius{serial=\"S%06d\",sensor=\"inlet\"} %d\n", n, temp)
	}
	exp.Set("/bmc", page.String())
	prom := promtest.Start(t, fmt.Sprintf("- job_name: bmc\n  metrics_path: /bmc\n  static_configs: [{targets: [%q]}]\n", exp.Target()))
	query := `max by (serial) (ipmi_temperature_celsius{sensor="inlet"})`
	prom.WaitSamples(t, query, 20)

	f := newFixture(t)
	ctx := context.Background()
	putPolicy(t, f, fmt.Sprintf(`{
  "placements": {"control-plane": {
    "metricConstraints": ["inlet_temperature < 35"],
    "metrics": [{"name": "inlet_temperature", "weight": -5}]}},
  "metrics": {"inlet_temperature": {"provider": "prom", "query": %q, "min": 15, "max": 45}},
  "providers": {"prom": {"type": "prometheus", "url": %q, "timeout": "2s"}}
}`, query, prom.URL))
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))
	coolCPs := func(c *cluster.Cluster) {
		t.Helper()
		for _, n := range cpNodes(c) {
			if z := n.Labels[labels.Zone]; z != "rack2" && z != "rack3" {
				t.Errorf("control plane %s (%s) in %s, a hot rack", n.Address, serial(n), z)
			}
		}
	}
	c := f.cluster(t)
	coolCPs(c)
	st := f.status(t)
	for _, ch := range st.LastChanges {
		// 20 degrees: 5 x (20-15)/30 points off.
		if strings.Contains(ch.Action, "control-plane") && (ch.Score == nil || math.Abs(*ch.Score-math.Floor(*ch.Score)-(1-5.0/6)) > 1e-3) {
			t.Errorf("%s %s: score %v does not carry the temperature's -0.833 points", ch.Action, ch.Serial, ch.Score)
		}
	}
	before, ok := placement(st, "control-plane")
	if !ok || groupNodes(before) != "=3" {
		t.Errorf("placements %+v, want control-plane with 3 nodes", st.Placements)
	}

	// Prometheus stops; a control plane becomes unreachable.
	prom.Stop()
	victim := cpNodes(c)[0]
	_, err := f.store.SetState(serial(victim), machine.StateUnreachable)
	must(t, err)
	_, clusterRev, _ := f.st.GetCluster(ctx)
	history, _ := f.st.History(ctx)
	err = d.runOnce(ctx, leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.MetricsUnavailable {
		t.Fatalf("Prometheus stopped: error %v, want %s", err, reason.MetricsUnavailable)
	}
	st = f.status(t)
	if st.Reason != reason.MetricsUnavailable || !strings.Contains(st.Message, strings.TrimPrefix(prom.URL, "http://")) {
		t.Errorf("status %s: %s, want %s naming the server", st.Reason, st.Message, reason.MetricsUnavailable)
	}
	if p, _ := placement(st, "control-plane"); groupNodes(p) != "=3" {
		t.Errorf("a failed tick dropped the placements: %+v", st.Placements)
	}
	if _, rev, _ := f.st.GetCluster(ctx); rev != clusterRev {
		t.Error("a tick without metrics wrote the cluster")
	}
	if h, _ := f.st.History(ctx); len(h) != len(history) {
		t.Errorf("a tick without metrics recorded %d changes", len(h)-len(history))
	}

	// Prometheus is back: the unreachable control plane is replaced on a
	// cool rack.
	prom.Restart(t)
	prom.WaitSamples(t, query, 20)
	for range 5 {
		must(t, d.runOnce(ctx, leader))
		if !slices.ContainsFunc(cpNodes(f.cluster(t)), func(n *cluster.Node) bool { return n.Address == victim.Address }) {
			break
		}
	}
	c = f.cluster(t)
	if slices.ContainsFunc(cpNodes(c), func(n *cluster.Node) bool { return n.Address == victim.Address }) {
		t.Fatalf("the unreachable control plane %s was not replaced", victim.Address)
	}
	coolCPs(c)
	if st := f.status(t); st.Result != reason.OK || st.ConsecutiveFailures != 0 {
		t.Errorf("status after recovery %+v", st)
	}
}

// TestPolicyMetricWithoutValues: a metric that no machine of the tick has
// a value of is a warning (a provider listing other serials, a query
// whose labels name no machine), and the tick goes on.
func TestPolicyMetricWithoutValues(t *testing.T) {
	f := newFixture(t)
	putPolicy(t, f, `{"placements": {"control-plane": {"metrics": [{"name": "temp", "weight": -5}]}},
		"metrics": {"temp": {"provider": "lab", "max": 50}},
		"providers": {"lab": {"type": "static", "values": {"NOT-HERE": {"temp": 20}}}}}`)
	must(t, f.step("d", nil).runOnce(context.Background(), f.lead(t)))
	st := f.status(t)
	want := "metric temp from provider lab: no value for any of the 16 machines (1 samples)"
	if st.Result != reason.OK || !slices.ContainsFunc(st.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
		t.Errorf("status %s with warnings %q, want ok with %q", st.Result, st.Warnings, want)
	}
}

// TestPolicyRecompiled: a tick uses the policy as stored now, compiled
// for the template as stored now: a new policy, or a template that no
// longer has a placement's template, is seen at the next tick.
func TestPolicyRecompiled(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	d := f.step("d", nil)
	// "" is the single worker template without a role.
	putPolicy(t, f, `{"placements": {"": {"constraints": ["topology.kubernetes.io/zone != rack0"]}}}`)
	must(t, d.runOnce(ctx, leader))
	if p, ok := placement(f.status(t), ""); !ok || groupNodes(p) != "=5" {
		t.Fatalf("placements %+v, want the 5 workers", f.status(t).Placements)
	}
	putPolicy(t, f, `{"placements": {"": {"constraints": ["topology.kubernetes.io/zone != rack0"]}, "control-plane": {}}}`)
	must(t, d.runOnce(ctx, leader))
	if n := len(f.status(t).Placements); n != 2 {
		t.Errorf("after a new policy: %d placements, want 2", n)
	}
	must(t, f.st.SetTemplate(ctx, []byte(strings.Replace(testTemplate, `{"user":"u"}]`, `{"user":"u","labels":{"cke.cybozu.com/role":"cs"}}]`, 1))))
	err := d.runOnce(ctx, leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.InvalidPolicy || !strings.Contains(err.Error(), `placements[""]: no template takes this placement`) {
		t.Errorf("after the template lost the placement's template: error %v, want %s naming placements[\"\"]", err, reason.InvalidPolicy)
	}
}
