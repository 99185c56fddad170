package mtest

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
)

// domainsStatus is sabakan/status's failure domains as ckegenctl prints
// them.
type domainsStatus struct {
	Warnings []string `json:"warnings"`
	Domains  *struct {
		FailureDomain string   `json:"failureDomain"`
		ControlPlanes int      `json:"controlPlanes"`
		AtRisk        []string `json:"atRisk"`
		Warnings      []string `json:"warnings"`
		Domains       []struct {
			Domain        string   `json:"domain"`
			ControlPlanes []string `json:"controlPlanes"`
		} `json:"domains"`
	} `json:"domains"`
}

func (e *env) domains() domainsStatus {
	e.t.Helper()
	var st domainsStatus
	out := e.mustCtl("sabakan", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("status: %v\n%s", err, out)
	}
	return st
}

// leaderGauges are the failure domain series of the daemon that leads
// ("" when none exports ckegen_leader 1).
func (e *env) leaderGauges() string {
	e.t.Helper()
	for _, addr := range e.dHTTP {
		m := e.metrics(addr)
		if strings.Contains(m, "\nckegen_leader 1\n") {
			return grepLines(m, "ckegen_failure_domain")
		}
	}
	return ""
}

// TestQuorumAtRisk: the daemons on the bundled data center (examples/),
// with the bundled cluster whose control planes are in racks 4, 4 and 11
// stored as the current cluster. Every tick sees it: the status names rack
// 4 in its words (its AT RISK row, the words once among the warnings),
// the leader's ckegen_failure_domains_at_risk is 1, and the map marks rack
// 4. Then the bundled policy with spread: quorum is set: the daemon moves
// one control plane out of rack 4, one spread control plane write per
// tick (each one history entry, quorum kept), until no rack breaks the
// quorum; the gauge falls to 0, and the status and the map say no rack.
func TestQuorumAtRisk(t *testing.T) {
	e := newEnv(t, withoutDaemons())
	// The bundled data center instead of the harness's.
	e.sabakan.stop(syscall.SIGKILL)
	e.sabakan = &proc{name: "fakesabakan", log: filepath.Join(e.dir, "sabakan-examples.log"),
		args: []string{"--listen", e.sabAddr, "--machines", "../examples/machines.json"}}
	e.sabakan.start(t)
	e.eventually("the bundled data center to be served", 20*time.Second, func() bool {
		// The harness's server has exited: the answer is the new one's.
		resp, err := http.Get("http://" + e.sabAddr + "/api/v1/state/S000092")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	// The current cluster, as CKE's tools may write it.
	data, err := os.ReadFile("../examples/cluster-rack4.yml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Put(e.ctx, "/cke/cluster", string(js)); err != nil {
		t.Fatal(err)
	}
	e.startDaemons()
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("constraints", "set", "maximum-workers", "40")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	e.converge(90 * time.Second)

	words := "rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum"
	st := e.domains()
	if d := st.Domains; d == nil || d.FailureDomain != "rack" || d.ControlPlanes != 3 || strings.Join(d.AtRisk, ",") != "4" {
		t.Fatalf("status domains %+v, want rack 4 at risk", st.Domains)
	}
	if n := strings.Count(strings.Join(st.Warnings, "\n"), words); n != 0 {
		t.Errorf("status warnings %q: the words %d times, want them in the domains row only", st.Warnings, n)
	}
	if table := e.mustCtl("sabakan", "status"); !strings.Contains(table, "\nAT RISK         "+words+"\n") {
		t.Errorf("status table:\n%s", table)
	}
	e.eventually("the leader's gauge of domains at risk at 1", 10*time.Second, func() bool {
		g := e.leaderGauges()
		return strings.Contains(g, "ckegen_failure_domains_at_risk 1") && strings.Contains(g, `ckegen_failure_domain_control_planes{domain="4"} 2`)
	})
	if m := e.mustCtl("sabakan", "map", "--color", "never", "--width", "200"); !strings.Contains(m, "  4# ") || !strings.Contains(m, "\nquorum at risk (#): "+words+"\n") {
		t.Errorf("map:\n%s", m)
	}

	// spread: quorum.
	before := e.rec.count()
	e.mustCtl("sabakan", "set-policy", "../examples/policy-spread.yml")
	e.eventually("the leader's gauge of domains at risk at 0", 60*time.Second, func() bool {
		return strings.Contains(e.leaderGauges(), "ckegen_failure_domains_at_risk 0")
	})
	e.converge(60 * time.Second)
	e.rec.check()

	var h []struct {
		Op              string `json:"op"`
		ChangeCount     int    `json:"changeCount"`
		ClusterRevision int64  `json:"clusterRevision"`
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	ops := map[int64]string{}
	spread := 0
	for _, x := range h {
		ops[x.ClusterRevision] = x.Op
		if x.Op == "spread control plane" {
			spread++
			if x.ChangeCount != 2 {
				t.Errorf("a spread control plane entry with %d changes, want 2 (one demoted, one added)", x.ChangeCount)
			}
		}
	}
	e.rec.mu.Lock()
	writes := append([]write(nil), e.rec.writes[before:]...)
	e.rec.mu.Unlock()
	if spread != 1 || len(writes) != 1 {
		t.Errorf("%d spread control plane entries and %d writes after the policy, want one of each (rack 4 has one too many)", spread, len(writes))
	}
	for _, w := range writes {
		if ops[w.rev] != "spread control plane" {
			t.Errorf("write at revision %d after the policy: %q, want spread control plane", w.rev, ops[w.rev])
		}
	}
	racks := map[string]int{}
	for _, n := range e.cluster().cps() {
		racks[n.Labels["cke.cybozu.com/rack"]]++
	}
	if len(racks) != 3 {
		t.Errorf("control planes by rack %v, want one in each of three racks", racks)
	}
	st = e.domains()
	if d := st.Domains; d == nil || len(d.AtRisk) != 0 || strings.Contains(strings.Join(st.Warnings, "\n"), "breaks etcd's quorum") {
		t.Errorf("after the move: domains %+v, warnings %q", st.Domains, st.Warnings)
	}
	if table := e.mustCtl("sabakan", "status"); strings.Contains(table, "AT RISK") {
		t.Errorf("status table after the move:\n%s", table)
	}
	if m := e.mustCtl("sabakan", "map", "--color", "never", "--width", "200"); strings.Contains(m, "#  ") || strings.Contains(m, "quorum at risk") {
		t.Errorf("map after the move:\n%s", m)
	}
	if g := e.leaderGauges(); !strings.Contains(g, `ckegen_failure_domain_control_planes{domain="4"} 1`) {
		t.Errorf("leader's gauges after the move:\n%s", g)
	}
}
