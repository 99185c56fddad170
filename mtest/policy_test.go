package mtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// restMachines lists the compatible server's machines of a role in a rack
// through its REST API, as an operator would.
func (e *env) restMachines(role string, rack int) []string {
	e.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/api/v1/machines?role=%s&rack=%d", e.sabAddr, role, rack))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var ms []struct {
		Spec struct {
			Serial string `json:"serial"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&ms); err != nil {
		e.t.Fatalf("GET machines of %s in rack %d: %v", role, rack, err)
	}
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Spec.Serial
	}
	return out
}

// placementStatus is a placement of sabakan/status as ckegenctl prints it.
type placementStatus struct {
	Placement     string `json:"placement"`
	ObservedGroup string `json:"observedGroup"`
	Groups        []struct {
		Group string `json:"group"`
		Nodes int    `json:"nodes"`
	} `json:"groups"`
}

func (e *env) placements() []placementStatus {
	e.t.Helper()
	var st struct {
		Placements []placementStatus `json:"placements"`
	}
	out := e.mustCtl("sabakan", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("status: %v\n%s", err, out)
	}
	return st.Placements
}

// TestPolicy: an operator restricts control planes to racks 4 to 6 with
// ckegenctl sabakan set-policy, preferring one machine labelled cp-ready
// (group dedicated) to the others (group any), with a static temperature.
// A bad policy is refused and nothing is stored. As control planes fail,
// their replacements come from the allowed racks: the dedicated machine
// first, then, the first group exhausted, the second; the status follows
// the observed group and counts the nodes by group, and the leader's
// /metrics has ckegen_placement_nodes.
func TestPolicy(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	inCluster := map[string]bool{}
	for _, n := range e.cluster().Nodes {
		inCluster[n.serial()] = true
	}

	// The dedicated machine: an unused compute machine of rack 4.
	var dedicated string
	for _, s := range e.restMachines("compute", 4) {
		if !inCluster[s] {
			dedicated = s
			break
		}
	}
	if dedicated == "" {
		t.Fatal("no unused compute machine in rack 4")
	}
	e.rest(http.MethodPut, "/api/v1/labels/"+dedicated+"/cp-ready", "true")

	// Bad policies: refused with the path of the problem, nothing stored.
	for _, bad := range []struct{ doc, want string }{
		{"placements:\n  control-plane:\n    constraints: [\"topology.kubernetes.io/zone in rack4\"]\n",
			"placements.control-plane.constraints[0]"},
		{"placements:\n  gpu-typo: {constraints: [\"topology.kubernetes.io/zone in (rack4)\"]}\n",
			"placements.gpu-typo"},
	} {
		file := filepath.Join(e.dir, "bad-policy.yml")
		if err := writeFile(file, bad.doc); err != nil {
			t.Fatal(err)
		}
		if _, err := e.ctl("sabakan", "set-policy", file); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("set-policy %q: error %v, want one naming %s", bad.doc, err, bad.want)
		}
		if out, err := e.ctl("sabakan", "get-policy"); err == nil {
			t.Errorf("a refused policy was stored:\n%s", out)
		}
	}

	policyFile := filepath.Join(e.dir, "policy.yml")
	if err := writeFile(policyFile, fmt.Sprintf(`placements:
  control-plane:
    constraints:
    - topology.kubernetes.io/zone in (rack4, rack5, rack6)
    groups:
    - name: dedicated
      constraints: [sabakan.cke.cybozu.com/cp-ready is true]
    - name: any
    metrics:
    - {name: inlet_temperature, weight: -5}
metrics:
  inlet_temperature: {provider: lab, min: 15, max: 45}
providers:
  lab: {type: static, values: {%s: {inlet_temperature: 21}}}
`, dedicated)); err != nil {
		t.Fatal(err)
	}
	e.mustCtl("sabakan", "set-policy", policyFile)
	if out := e.mustCtl("sabakan", "get-policy"); !strings.Contains(out, "dedicated") {
		t.Fatalf("get-policy after set-policy:\n%s", out)
	}
	e.eventually("the placements in the status", 30*time.Second, func() bool { return len(e.placements()) == 1 })

	// Control planes fail one by one; each replacement respects the
	// policy, the dedicated machine first.
	before := map[string]bool{}
	for _, n := range e.cluster().cps() {
		before[n.serial()] = true
	}
	for i, wantGroup := range []string{"dedicated", "any"} {
		var victim node
		for _, n := range e.cluster().cps() {
			if n.serial() != dedicated {
				victim = n
				break
			}
		}
		e.setState(victim.serial(), "unreachable")
		e.eventually(fmt.Sprintf("control plane %s replaced", victim.Address), 60*time.Second, func() bool {
			c := e.cluster()
			return !slices.ContainsFunc(c.cps(), func(n node) bool { return n.Address == victim.Address }) && len(c.cps()) == 3
		})
		e.converge(60 * time.Second)
		cps := e.cluster().cps()
		for _, n := range cps {
			if z := n.Labels["topology.kubernetes.io/zone"]; !before[n.serial()] && z != "rack4" && z != "rack5" && z != "rack6" {
				t.Errorf("control plane %s (%s) added in %s, outside the policy's racks", n.Address, n.serial(), z)
			}
		}
		if !slices.ContainsFunc(cps, func(n node) bool { return n.serial() == dedicated }) {
			t.Errorf("after failure %d: the dedicated machine %s is not a control plane", i+1, dedicated)
		}
		ps := e.placements()
		if len(ps) != 1 || ps[0].Placement != "control-plane" || ps[0].ObservedGroup != wantGroup {
			t.Fatalf("after failure %d: placements %+v, want control-plane observed in %s", i+1, ps, wantGroup)
		}
		counts, total := map[string]int{}, 0
		for _, g := range ps[0].Groups {
			counts[g.Group] = g.Nodes
			total += g.Nodes
		}
		if counts["dedicated"] != 1 || total != 3 || (i == 1 && counts["any"] < 1) {
			t.Errorf("after failure %d: nodes by group %+v, want dedicated 1 of 3 (and one in any after the second)", i+1, ps[0].Groups)
		}
	}

	// What the operator sees: the status table and the leader's metric.
	out := e.mustCtl("sabakan", "status")
	if !strings.Contains(out, "PLACEMENT") || !strings.Contains(grepLines(out, "control-plane"), "any") || !strings.Contains(out, "dedicated 1") {
		t.Errorf("ckegenctl sabakan status does not show the placement:\n%s", out)
	}
	m := e.metrics(e.dHTTP[leaderIndex(e)])
	if !strings.Contains(m, "\n"+`ckegen_placement_nodes{group="dedicated",template="control-plane"} 1`+"\n") {
		t.Errorf("the leader's ckegen_placement_nodes:\n%s", grepLines(m, "ckegen_placement_nodes"))
	}
	e.rec.check()
	e.checkHistory()
}
