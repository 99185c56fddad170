package mtest

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/ckegen/ckegen/internal/testutil/kubetest"
)

// kubeStatus is the part of sabakan/status this scenario reads.
type kubeStatus struct {
	Result      string    `json:"result"`
	Reason      string    `json:"reason"`
	Message     string    `json:"message"`
	Time        time.Time `json:"time"`
	LastChanges []struct {
		Action  string `json:"action"`
		Address string `json:"address"`
		Reason  string `json:"reason"`
	} `json:"lastChanges"`
	Kubernetes *kubeRead `json:"kubernetes"`
}

// kubeRead is what the last tick read from Kubernetes.
type kubeRead struct {
	Read        bool `json:"read"`
	Nodes       int  `json:"nodes"`
	Intolerable int  `json:"intolerable"`
}

func (e *env) kubeStatus() kubeStatus {
	e.t.Helper()
	var st kubeStatus
	out := e.mustCtl("sabakan", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("sabakan status: %v\n%s", err, out)
	}
	return st
}

// Scenario 11: the daemons read the Nodes of a real kube-apiserver
// (--kubeconfig). Taints a control plane tolerates change nothing; an
// intolerable one has it replaced, by the spare worker first; with the
// API server stopped nothing is written, and after its restart the
// pending change is made.
func TestKubernetes(t *testing.T) {
	api := kubetest.Start(t)
	tmpl := filepath.Join(t.TempDir(), "template.yml")
	if err := writeFile(tmpl, readFile(t, "../examples/template.yml")+
		"control_plane_tolerations: [example.com/tolerated]\nsabakan:\n  spare_node_taint_key: example.com/spare\n"); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, withDaemonArgs("--kubeconfig", api.Kubeconfig, "--kubernetes-timeout", "2s"), withTemplate(tmpl))
	e.converge(90 * time.Second)
	if st := e.kubeStatus(); st.Kubernetes == nil || !st.Kubernetes.Read || st.Kubernetes.Nodes != 0 {
		t.Fatalf("before any Node: kubernetes %+v, want read, 0 nodes", st.Kubernetes)
	}

	// A Node for every member, as kubelet would register them. The API
	// server's admission taints each new Node node.kubernetes.io/not-ready
	// (no kubelet ever reports it ready), which control planes tolerate.
	c := e.cluster()
	for _, n := range c.Nodes {
		api.SetTaints(t, n.Address)
	}
	cps := c.cps()
	cpRacks := map[string]bool{}
	for _, n := range cps {
		cpRacks[n.Labels["cke.cybozu.com/rack"]] = true
	}
	// The spare: a worker that could be a control plane, in a rack
	// without one.
	var spare string
	for _, n := range c.workers() {
		if n.Labels["cke.cybozu.com/role"] == "compute" && !cpRacks[n.Labels["cke.cybozu.com/rack"]] {
			spare = n.Address
		}
	}
	if spare == "" {
		t.Fatal("no compute worker outside the control planes' racks")
	}

	// Tolerated taints: Kubernetes' own node.kubernetes.io/*, the
	// template's control_plane_tolerations, and the spare key on a
	// worker. Nothing changes.
	api.SetTaints(t, cps[0].Address, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute})
	api.SetTaints(t, cps[1].Address, corev1.Taint{Key: "example.com/tolerated", Effect: corev1.TaintEffectNoSchedule})
	api.SetTaints(t, spare, corev1.Taint{Key: "example.com/spare", Effect: corev1.TaintEffectNoSchedule})
	if w := e.converge(60 * time.Second); w != 0 {
		t.Errorf("tolerated taints caused %d cluster write(s)", w)
	}
	if st := e.kubeStatus(); st.Kubernetes == nil || *st.Kubernetes != (kubeRead{Read: true, Nodes: len(c.Nodes)}) {
		t.Errorf("with tolerated taints: kubernetes %+v, want read, %d nodes, 0 intolerable", st.Kubernetes, len(c.Nodes))
	}

	// An intolerable taint, seen first while the trigger is planning: the
	// plan ckegenctl computes is the daemon's (the steps it stores), with
	// the daemon's last view of the Nodes or with --kubeconfig, and its
	// first line says which view. Then schedule: that control plane goes,
	// and the spare worker takes its place, not a new machine.
	broken := cps[2].Address
	e.mustCtl("sabakan", "trigger", "planning")
	api.SetTaints(t, broken, corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule})
	stored := e.storedPlanSteps(generatorOpReplaceCP, 30*time.Second)
	for _, args := range [][]string{nil, {"--kubeconfig", api.Kubeconfig}} {
		if got := planSteps(t, e.mustCtl(append([]string{"sabakan", "plan", "-o", "json"}, args...)...)); got != stored {
			t.Errorf("plan %v -o json has the steps\n%s\nthe daemon stored\n%s", args, got, stored)
		}
	}
	if first, _, _ := strings.Cut(e.mustCtl("sabakan", "plan"), "\n"); !strings.HasPrefix(first, "Kubernetes view: the leader's view, from the Kubernetes API (--kubeconfig), read ") {
		t.Errorf("the plan's first line: %q, want the leader's view", first)
	}
	if first, _, _ := strings.Cut(e.mustCtl("sabakan", "plan", "--kubeconfig", api.Kubeconfig), "\n"); !strings.HasPrefix(first, "Kubernetes view: the Kubernetes API (--kubeconfig), read 0s ago (") {
		t.Errorf("the plan's first line with --kubeconfig: %q", first)
	}
	e.mustCtl("sabakan", "trigger", "schedule")
	if w := e.converge(60 * time.Second); w != 1 {
		t.Errorf("the tainted control plane was replaced in %d writes, want 1", w)
	}
	c = e.cluster()
	if n := c.find(broken); n != nil && n.ControlPlane {
		t.Errorf("%s with an intolerable taint is still a control plane", broken)
	}
	if n := c.find(spare); n == nil || !n.ControlPlane {
		t.Errorf("the spare worker %s was not promoted; control planes %+v", spare, c.cps())
	}
	for _, n := range cps[:2] {
		if m := c.find(n.Address); m == nil || !m.ControlPlane {
			t.Errorf("%s with a tolerated taint is no longer a control plane", n.Address)
		}
	}
	st := e.kubeStatus()
	promoted := false
	for _, ch := range st.LastChanges {
		promoted = promoted || ch.Address == spare && strings.Contains(ch.Reason, "spare node")
	}
	if !promoted {
		t.Errorf("last changes %+v do not name the spare node", st.LastChanges)
	}
	if st.Kubernetes == nil || st.Kubernetes.Intolerable != 1 {
		t.Errorf("kubernetes %+v, want 1 intolerable", st.Kubernetes)
	}
	leader := strings.TrimSpace(e.mustCtl("leader"))
	for i, addr := range e.dHTTP {
		if leader != fmt.Sprintf("ckegen-%d", i) {
			continue
		}
		if got := grepLines(e.metrics(addr), "ckegen_kubernetes_nodes_intolerable "); got != "ckegen_kubernetes_nodes_intolerable 1" {
			t.Errorf("the leader's metric: %q", got)
		}
	}

	// The API server stops while a change is pending: the ticks fail with
	// KUBERNETES_UNREACHABLE and write nothing.
	workers := len(c.workers())
	api.Stop()
	before := e.rec.count()
	e.mustCtl("constraints", "set", "minimum-workers", strconv.Itoa(workers+1))
	e.waitStatus("failing", "KUBERNETES_UNREACHABLE", api.URL, 20*time.Second)
	time.Sleep(2 * time.Second) // four more ticks
	if st := e.kubeStatus(); st.Reason != "KUBERNETES_UNREACHABLE" || st.Kubernetes == nil || st.Kubernetes.Read {
		t.Errorf("with the API server stopped: status %s %s, kubernetes %+v", st.Result, st.Reason, st.Kubernetes)
	}
	if w := e.rec.count() - before; w != 0 {
		t.Errorf("%d cluster write(s) while Kubernetes was unreachable", w)
	}

	// Restarted: the pending change is made.
	api.Restart()
	e.converge(60 * time.Second)
	if n := len(e.cluster().workers()); n != workers+1 {
		t.Errorf("%d workers after the restart, want %d", n, workers+1)
	}
	if st := e.kubeStatus(); st.Result != "ok" || st.Kubernetes == nil || !st.Kubernetes.Read {
		t.Errorf("after the restart: status %s %s, kubernetes %+v", st.Result, st.Reason, st.Kubernetes)
	}
	e.rec.check()
	e.checkHistory()
}

// generatorOpReplaceCP is the generator's op that replaces a control
// plane, as plans name it.
const generatorOpReplaceCP = "replace control plane"

// storedPlanSteps waits until the plan the daemon stored starts with op,
// and returns its steps as JSON.
func (e *env) storedPlanSteps(op string, within time.Duration) string {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		out, err := e.ctl("sabakan", "plan", "--stored", "-o", "json")
		if err == nil {
			var p struct {
				Steps []struct {
					Op string `json:"op"`
				} `json:"steps"`
			}
			if json.Unmarshal([]byte(out), &p) == nil && len(p.Steps) > 0 && p.Steps[0].Op == op {
				return planSteps(e.t, out)
			}
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the stored plan does not start with %s after %s:\n%s", op, within, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// planSteps is the steps of a plan in JSON, re-encoded.
func planSteps(t testing.TB, out string) string {
	t.Helper()
	var p struct {
		Steps json.RawMessage `json:"steps"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("a plan in JSON: %v\n%s", err, out)
	}
	var v any
	if err := json.Unmarshal(p.Steps, &v); err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
