package mtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scenario 1: from an empty etcd to a converged cluster.
func TestBootstrap(t *testing.T) {
	e := newEnv(t)
	start := time.Now()
	writes := e.converge(90 * time.Second)
	c := e.cluster()
	if len(c.cps()) != 3 || len(c.workers()) != 20 {
		t.Errorf("%d control planes and %d workers, want 3 and 20", len(c.cps()), len(c.workers()))
	}
	racks := map[string]bool{}
	for _, n := range c.cps() {
		racks[n.Labels["cke.cybozu.com/rack"]] = true
	}
	if len(racks) != 3 {
		t.Errorf("control planes in %d racks, want 3", len(racks))
	}
	st, _ := e.status()
	leader := strings.TrimSpace(e.mustCtl("leader"))
	t.Logf("bootstrap: converged in %d cluster write(s), %s; leader %s; last op %q",
		writes, time.Since(start).Round(100*time.Millisecond), leader, st.LastOp)

	// Metrics as CKE's: the leader exports cke_leader 1 and the
	// integration's series; the follower cke_leader 0 and none of them
	// (a 0 there would page someone).
	for i, addr := range e.dHTTP {
		m := e.metrics(addr)
		isLeader := leader == fmt.Sprintf("ckegen-%d", i)
		switch {
		case isLeader && (!strings.Contains(m, "\ncke_leader 1\n") || !strings.Contains(m, "\ncke_sabakan_integration_successful 1\n") ||
			!strings.Contains(m, "\ncke_sabakan_unused_machines ")):
			t.Errorf("the leader ckegen-%d exports:\n%s", i, grepLines(m, "cke_"))
		case !isLeader && (!strings.Contains(m, "\ncke_leader 0\n") || strings.Contains(m, "\ncke_sabakan_")):
			t.Errorf("the follower ckegen-%d exports:\n%s", i, grepLines(m, "cke_"))
		}
	}
	e.rec.check()
	e.checkHistory()
}

// Scenario 2: machines become UNREACHABLE, RETIRING, RETIRED.
func TestMachineLifecycle(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	c := e.cluster()
	w := c.workers()

	// Taints follow the states.
	e.setState(w[0].serial(), "unreachable")
	e.setState(w[1].serial(), "retiring")
	e.converge(60 * time.Second)
	c = e.cluster()
	if got := c.find(w[0].Address).stateTaint(); got != "unreachable:NoSchedule" {
		t.Errorf("UNREACHABLE worker taint %q", got)
	}
	if got := c.find(w[1].Address).stateTaint(); got != "retiring:NoExecute" {
		t.Errorf("RETIRING worker taint %q", got)
	}

	// Two control planes become UNREACHABLE: replaced one per tick.
	before := e.rec.count()
	cps := c.cps()
	e.setState(cps[0].serial(), "unreachable")
	e.setState(cps[1].serial(), "unreachable")
	e.converge(60 * time.Second)
	c = e.cluster()
	for _, n := range cps[:2] {
		if m := c.find(n.Address); m == nil || m.ControlPlane {
			t.Errorf("UNREACHABLE control plane %s still a control plane", n.Address)
		}
	}
	if len(c.cps()) != 3 {
		t.Errorf("%d control planes, want 3", len(c.cps()))
	}
	replaces := 0
	e.rec.mu.Lock()
	for _, wr := range e.rec.writes[before:] {
		lost := 0
		prev := map[string]bool{}
		for _, n := range wr.c.cps() {
			prev[n.Address] = true
		}
		for _, n := range cps {
			if !prev[n.Address] {
				lost++
			}
		}
		replaces = max(replaces, lost)
	}
	e.rec.mu.Unlock()
	if replaces != 2 || e.rec.count()-before < 2 {
		t.Errorf("control planes replaced in %d writes", e.rec.count()-before)
	}

	// With the default variables a RETIRED machine leaves the search and
	// is replaced at once.
	e.setState(w[1].serial(), "retired")
	e.converge(60 * time.Second)
	c = e.cluster()
	if c.find(w[1].Address) != nil {
		t.Errorf("RETIRED worker %s still in the cluster", w[1].Address)
	}
	if len(c.workers()) < 20 {
		t.Errorf("%d workers, want >= 20", len(c.workers()))
	}

	// With variables that include RETIRED machines, a retired worker stays,
	// tainted, until the retire wait has passed.
	e.mustCtl("sabakan", "set-variables", "testdata/include-retired.json")
	e.converge(60 * time.Second)
	c = e.cluster()
	w = c.workers()
	var victim node
	for _, n := range w {
		if n.stateTaint() == "" {
			victim = n
			break
		}
	}
	e.setState(victim.serial(), "retiring")
	e.setState(victim.serial(), "retired")
	retiredAt := time.Now()
	e.eventually("the retired taint", 10*time.Second, func() bool {
		n := e.cluster().find(victim.Address)
		return n != nil && n.stateTaint() == "retired:NoExecute"
	})
	if time.Since(retiredAt) < retireWait-time.Second && e.cluster().find(victim.Address) == nil {
		t.Error("the retired worker was removed before the retire wait")
	}
	e.eventually("the retired worker to go", retireWait+15*time.Second, func() bool {
		return e.cluster().find(victim.Address) == nil
	})
	if gone := time.Since(retiredAt); gone < retireWait {
		t.Errorf("removed %s after RETIRED, before the retire wait %s", gone, retireWait)
	}
	e.converge(60 * time.Second)
	e.rec.check()
	e.checkHistory()
}

// Scenario 3: a whole rack disappears; then half of the control planes.
func TestRackLoss(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	c := e.cluster()
	cps := c.cps()
	rack := cps[0].Labels["cke.cybozu.com/rack"]
	e.mustCtl("sabakan", "set-variables", writeVars(t, e, fmt.Sprintf(`{"notHaving": {"racks": [%s], "roles": ["boot"], "states": ["RETIRED"]}}`, rack)))
	writes := e.converge(60 * time.Second)
	c = e.cluster()
	for _, n := range c.Nodes {
		if n.Labels["cke.cybozu.com/rack"] == rack {
			t.Errorf("node %s of the lost rack %s is still in the cluster", n.Address, rack)
		}
	}
	if len(c.cps()) != 3 {
		t.Errorf("%d control planes after the rack loss, want 3", len(c.cps()))
	}
	t.Logf("rack %s lost: converged in %d write(s)", rack, writes)

	// Two racks holding two of the three control planes disappear: refused.
	cps = c.cps()
	r1, r2 := cps[0].Labels["cke.cybozu.com/rack"], cps[1].Labels["cke.cybozu.com/rack"]
	before := e.rec.count()
	e.mustCtl("sabakan", "set-variables", writeVars(t, e, fmt.Sprintf(`{"notHaving": {"racks": [%s, %s, %s], "roles": ["boot"], "states": ["RETIRED"]}}`, rack, r1, r2)))
	e.waitStatus("failing", "TOO_MANY_NONEXISTENT_CONTROL_PLANES", "2 of 3 control planes", 30*time.Second)
	time.Sleep(2 * time.Second)
	if e.rec.count() != before {
		t.Errorf("%d cluster writes while refused", e.rec.count()-before)
	}

	// The machines return: the daemon recovers by itself.
	e.mustCtl("sabakan", "set-variables", writeVars(t, e, `{}`))
	e.converge(60 * time.Second)
	if st, _ := e.status(); st.Result != "ok" {
		t.Errorf("status after recovery %+v", st)
	}
	e.rec.check()
	e.checkHistory()
}

func writeVars(t *testing.T, e *env, content string) string {
	t.Helper()
	name := fmt.Sprintf("%s/vars-%d.json", e.dir, time.Now().UnixNano())
	if err := writeFile(name, content); err != nil {
		t.Fatal(err)
	}
	return name
}

// Scenario 4: template and constraint changes, one safe step at a time.
func TestShapeChanges(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)

	// A new label and new weights: every node is re-rendered.
	tmpl := strings.Replace(readFile(t, "../examples/template.yml"), `cke.cybozu.com/weight: "6.0"`, `cke.cybozu.com/weight: "4.0"
    example.com/tier: frontend`, 1)
	e.mustCtl("sabakan", "set-template", writeVars(t, e, tmpl))
	e.converge(60 * time.Second)
	for _, n := range e.cluster().workers() {
		if n.Labels["cke.cybozu.com/role"] == "compute" && n.Labels["example.com/tier"] != "frontend" {
			t.Errorf("compute worker %s lacks the new label", n.Address)
		}
	}
	if st, _ := e.status(); st.LastOp != "regenerate" {
		t.Errorf("last op %q after a template change, want regenerate", st.LastOp)
	}

	// The gpu role leaves the template: its workers go in one step, and
	// others replace them.
	noGPU := tmpl[:strings.Index(tmpl, "- user: cybozu\n  labels:\n    cke.cybozu.com/role: gpu")] + "service_subnet: 10.68.0.0/16\n"
	e.mustCtl("sabakan", "set-template", writeVars(t, e, noGPU))
	e.converge(60 * time.Second)
	c := e.cluster()
	for _, n := range c.workers() {
		if n.Labels["cke.cybozu.com/role"] == "gpu" {
			t.Errorf("gpu worker %s remains", n.Address)
		}
	}
	if len(c.workers()) < 20 {
		t.Errorf("%d workers, want >= 20", len(c.workers()))
	}

	// More control planes, then fewer: demoted one per tick.
	e.mustCtl("constraints", "set", "control-plane-count", "5")
	e.converge(60 * time.Second)
	if n := len(e.cluster().cps()); n != 5 {
		t.Errorf("%d control planes, want 5", n)
	}
	before := e.rec.count()
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.converge(60 * time.Second)
	if n := len(e.cluster().cps()); n != 3 {
		t.Errorf("%d control planes, want 3", n)
	}
	if w := e.rec.count() - before; w != 2 {
		t.Errorf("5 -> 3 control planes took %d writes, want 2 (one per tick)", w)
	}

	// More workers.
	e.mustCtl("constraints", "set", "minimum-workers", "30")
	e.converge(60 * time.Second)
	if n := len(e.cluster().workers()); n != 30 {
		t.Errorf("%d workers, want 30", n)
	}
	e.rec.check()
	e.checkHistory()
}

// Scenario 5: the leader is killed; the other daemon takes over within the
// session TTL, and only it writes afterwards.
func TestLeaderKilled(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	leader := strings.TrimSpace(e.mustCtl("leader"))
	var victim, other int
	if leader == "ckegen-0" {
		victim, other = 0, 1
	} else {
		victim, other = 1, 0
	}
	killed := time.Now()
	e.daemons[victim].stop(syscall.SIGKILL)
	otherName := fmt.Sprintf("ckegen-%d", other)
	e.eventually("the other daemon to lead and tick", sessionTTL+15*time.Second, func() bool {
		st, err := e.status()
		return err == nil && st.Leader == otherName && st.Time.After(killed)
	})
	failover := time.Since(killed)
	t.Logf("failover: %s after SIGKILL (session TTL %s)", failover.Round(100*time.Millisecond), sessionTTL)
	if failover > sessionTTL+5*time.Second {
		t.Errorf("failover took %s", failover)
	}
	// The new leader keeps the cluster in step.
	w := e.cluster().workers()[0]
	e.setState(w.serial(), "unreachable")
	e.eventually("the taint from the new leader", 20*time.Second, func() bool {
		return e.cluster().find(w.Address).stateTaint() == "unreachable:NoSchedule"
	})
	if st, _ := e.status(); st.Leader != otherName {
		t.Errorf("status written by %q", st.Leader)
	}

	// The killed daemon comes back as a follower; SIGTERM on the leader
	// resigns, so the handover takes far less than the session TTL.
	e.daemons[victim].start(t)
	time.Sleep(time.Second)
	victimName := fmt.Sprintf("ckegen-%d", victim)
	stopped := time.Now()
	e.daemons[other].stop(syscall.SIGTERM)
	e.eventually("the restarted daemon to lead", sessionTTL+15*time.Second, func() bool {
		st, err := e.status()
		return err == nil && st.Leader == victimName && st.Time.After(stopped)
	})
	handover := time.Since(stopped)
	t.Logf("handover after SIGTERM (resign): %s", handover.Round(100*time.Millisecond))
	if handover >= sessionTTL {
		t.Errorf("handover after SIGTERM took %s, not shorter than the session TTL %s: no resign?", handover, sessionTTL)
	}
	e.rec.check()
	e.checkHistory()
}

// Scenario 6: one etcd member down changes nothing; two down stop writes
// until quorum returns.
func TestEtcdMemberLoss(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	w := e.cluster().workers()

	e.etcd[0].stop(syscall.SIGKILL)
	e.setState(w[0].serial(), "unreachable")
	e.eventually("a write with one member down", 30*time.Second, func() bool {
		n := e.cluster().find(w[0].Address)
		return n != nil && n.stateTaint() == "unreachable:NoSchedule"
	})
	e.etcd[0].start(t)
	e.converge(60 * time.Second)

	// Quorum lost: nothing is written, /health says why.
	before := e.rec.count()
	e.etcd[1].stop(syscall.SIGKILL)
	e.etcd[2].stop(syscall.SIGKILL)
	e.setState(w[1].serial(), "unreachable")
	e.eventually("/health to report etcd unreachable", 30*time.Second, func() bool {
		for _, a := range e.dHTTP {
			resp, err := http.Get("http://" + a + "/health")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusInternalServerError {
					return true
				}
			}
		}
		return false
	})
	time.Sleep(3 * time.Second)
	if e.rec.count() != before {
		t.Errorf("%d cluster writes without quorum", e.rec.count()-before)
	}
	restored := time.Now()
	e.etcd[1].start(t)
	e.etcd[2].start(t)
	e.eventually("the taint after quorum returns", 90*time.Second, func() bool {
		out, err := e.ctl("cluster", "get", "-o", "json")
		return err == nil && strings.Contains(out, w[1].Address) && e.cluster().find(w[1].Address).stateTaint() == "unreachable:NoSchedule"
	})
	t.Logf("recovered %s after quorum returned", time.Since(restored).Round(100*time.Millisecond))
	e.converge(60 * time.Second)
	e.rec.check()
	e.checkHistory()
}

func setFault(t *testing.T, e *env, mode string) {
	t.Helper()
	e.rest(http.MethodPut, "/-/fault", mode)
}

// Scenario 7: sabakan down, slow, or returning garbage.
func TestSabakanFaults(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	w := e.cluster().workers()
	before := e.rec.count()

	e.sabakan.stop(syscall.SIGKILL)
	e.waitStatus("failing", "SABAKAN_UNREACHABLE", "connection refused", 30*time.Second)
	e.sabakan.start(t)
	e.waitStatus("ok", "", "", 30*time.Second)

	setFault(t, e, "slow 5s")
	e.waitStatus("failing", "SABAKAN_UNREACHABLE", "timeout after 1s", 30*time.Second)
	setFault(t, e, "garbage")
	e.waitStatus("failing", "QUERY_ERROR", "malformed response", 30*time.Second)
	setFault(t, e, "error")
	if st := e.waitStatus("failing", "SABAKAN_UNREACHABLE", "HTTP 500: injected failure", 30*time.Second); st.ConsecutiveFailures < 2 {
		t.Errorf("consecutive failures %d", st.ConsecutiveFailures)
	}
	if e.rec.count() != before {
		t.Errorf("%d cluster writes while sabakan failed", e.rec.count()-before)
	}
	setFault(t, e, "none")
	e.waitStatus("ok", "", "", 30*time.Second)
	// And it works again.
	e.setState(w[0].serial(), "unreachable")
	e.eventually("the taint after recovery", 20*time.Second, func() bool {
		return e.cluster().find(w[0].Address).stateTaint() == "unreachable:NoSchedule"
	})
	e.rec.check()
}

// Scenario 8: bad operator input is refused, nothing stored, the daemon
// unaffected.
func TestBadOperatorInput(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	tmplBefore := e.mustCtl("sabakan", "get-template")
	consBefore := e.mustCtl("constraints", "show")
	before := e.rec.count()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"sabakan", "set-template", writeVars(t, e, "name: x\nnodes:\n- {user: u, contol_plane: true}\n")}, `unknown field "contol_plane"`},
		{[]string{"sabakan", "set-template", writeVars(t, e, "name: x\nnodes:\n- {user: u, control_plane: true}\nservice_subnet: 10.0.0.0/24\n")}, "need at least one worker node"},
		{[]string{"constraints", "set", "control-plane-count", "0"}, "control-plane-count: must be >= 1"},
		{[]string{"constraints", "set", "maximum-workers", "3"}, "maximum-workers: must be 0 (unlimited) or >= minimum-workers (20)"},
		{[]string{"sabakan", "set-variables", writeVars(t, e, `{"having": {"states": ["BROKEN"]}}`)}, `unknown state "BROKEN"`},
		{[]string{"sabakan", "set-url", "sabakan.example"}, "must be an absolute http or https URL"},
	} {
		if _, err := e.ctl(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ckegenctl %v: %v, want a refusal with %q", c.args[:2], err, c.want)
		}
	}
	if got := e.mustCtl("sabakan", "get-template"); got != tmplBefore {
		t.Error("a refused template changed the stored one")
	}
	if got := e.mustCtl("constraints", "show"); got != consBefore {
		t.Error("refused constraints changed the stored ones")
	}
	if _, err := e.ctl("sabakan", "get-variables"); err == nil {
		t.Error("refused variables were stored")
	}
	time.Sleep(2 * time.Second)
	if st, _ := e.status(); st.Result != "ok" || e.rec.count() != before {
		t.Errorf("the daemon was affected: status %+v, %d writes", st, e.rec.count()-before)
	}
}

// Scenario 9: a rebooting node (in CKE's reboot queue) whose machine is
// UNREACHABLE is neither tainted nor removed.
func TestRebootingNode(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	c := e.cluster()
	w, cp := c.workers()[0], c.cps()[0]
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	for i, n := range []node{w, cp} {
		if _, err := e.cli.Put(ctx, fmt.Sprintf("/cke/reboots/data/%016x", i+1),
			fmt.Sprintf(`{"index":%d,"node":%q,"status":"rebooting"}`, i+1, n.Address)); err != nil {
			t.Fatal(err)
		}
	}
	before := e.rec.count()
	e.setState(w.serial(), "unreachable")
	e.setState(cp.serial(), "unreachable")
	time.Sleep(4 * time.Second) // several ticks
	c = e.cluster()
	if n := c.find(w.Address); n == nil || n.stateTaint() != "" {
		t.Errorf("rebooting worker: %+v", n)
	}
	if n := c.find(cp.Address); n == nil || !n.ControlPlane || n.stateTaint() != "" {
		t.Errorf("rebooting control plane: %+v", n)
	}
	if e.rec.count() != before {
		t.Logf("%d writes while rebooting (workers topped up)", e.rec.count()-before)
	}
	// The reboot ends: now the machines are treated as UNREACHABLE.
	if _, err := e.cli.Delete(ctx, "/cke/reboots/data/", clientv3WithPrefix()...); err != nil {
		t.Fatal(err)
	}
	e.eventually("the taint after the reboot", 20*time.Second, func() bool {
		n := e.cluster().find(w.Address)
		return n != nil && n.stateTaint() == "unreachable:NoSchedule"
	})
	e.eventually("the control plane replaced", 20*time.Second, func() bool {
		n := e.cluster().find(cp.Address)
		return n == nil || !n.ControlPlane
	})
	e.rec.check()
	e.checkHistory()
}

// changeStatus is the change management part of sabakan/status as ckegenctl
// prints it.
type changeStatus struct {
	Result  string `json:"result"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
	Trigger string `json:"trigger"`
	Pending *struct {
		Steps  int    `json:"steps"`
		NextOp string `json:"nextOp"`
	} `json:"pending"`
	Quiet *struct {
		Remaining string `json:"remaining"`
	} `json:"quiet"`
}

func (e *env) changeStatus() changeStatus {
	e.t.Helper()
	var st changeStatus
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "status", "-o", "json")), &st); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// planOps runs ckegenctl sabakan plan with args and -o json, and returns the
// ops of its steps.
func (e *env) planOps(args ...string) []string {
	e.t.Helper()
	var p struct {
		Result string `json:"result"`
		Steps  []struct {
			Op string `json:"op"`
		} `json:"steps"`
	}
	out := e.mustCtl(append([]string{"sabakan", "plan", "-o", "json"}, args...)...)
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		e.t.Fatalf("plan %v: %v\n%s", args, err, out)
	}
	if p.Result != "settled" {
		e.t.Errorf("plan %v: %s", args, p.Result)
	}
	ops := make([]string, len(p.Steps))
	for i, s := range p.Steps {
		ops[i] = s.Op
	}
	return ops
}

// Scenario 10: change management. In planning, machine state changes and
// a constraint change are planned, not applied; the plan is stored and
// shown; switched to schedule, it is applied one step per tick. With a
// quiet time, a flapping machine holds every write until it has been
// still for that long.
func TestChangeManagement(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	c := e.cluster()
	w := c.workers()

	// Bad settings are refused, nothing stored.
	for _, bad := range [][]string{
		{"sabakan", "trigger", "paused"}, {"sabakan", "set-quiet-time", "-1s"}, {"sabakan", "set-max-unhealthy", "140%"},
	} {
		if _, err := e.ctl(bad...); err == nil {
			t.Errorf("ckegenctl %v accepted", bad)
		}
	}
	for _, get := range [][]string{{"sabakan", "trigger"}, {"sabakan", "get-quiet-time"}, {"sabakan", "get-max-unhealthy"}} {
		if got, want := strings.TrimSpace(e.mustCtl(get...)), map[string]string{"trigger": "schedule", "get-quiet-time": "0s", "get-max-unhealthy": "off"}[get[1]]; got != want {
			t.Errorf("ckegenctl %v = %q after refused settings, want %q", get, got, want)
		}
	}

	// Planning: changes are planned, not applied.
	e.mustCtl("sabakan", "trigger", "planning")
	before := e.rec.count()
	e.setState(w[0].serial(), "unreachable")
	e.mustCtl("constraints", "set", "minimum-workers", "22")
	e.eventually("the plan of the changes", 20*time.Second, func() bool {
		st := e.changeStatus()
		return st.Result == "planning" && st.Pending != nil && st.Pending.Steps >= 1 && st.Trigger == "planning"
	})
	time.Sleep(3 * time.Second) // six ticks
	if n := e.rec.count() - before; n != 0 {
		t.Fatalf("%d cluster writes in planning", n)
	}
	var stored struct {
		Trigger string `json:"trigger"`
		Steps   []struct {
			Op string `json:"op"`
		} `json:"steps"`
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "plan", "--stored", "-o", "json")), &stored); err != nil {
		t.Fatal(err)
	}
	var storedOps []string
	for _, s := range stored.Steps {
		storedOps = append(storedOps, s.Op)
	}
	if live := e.planOps(); stored.Trigger != "planning" || len(storedOps) == 0 || strings.Join(live, ",") != strings.Join(storedOps, ",") {
		t.Errorf("stored plan %v (trigger %s), live plan %v", storedOps, stored.Trigger, live)
	}
	if text := e.mustCtl("sabakan", "plan", "--stored"); !strings.Contains(text, fmt.Sprintf("plan: settled after %d step", len(storedOps))) {
		t.Errorf("plan --stored:\n%s", text)
	}
	// A dry run shows more, stores nothing.
	if text := e.mustCtl("constraints", "set", "minimum-workers", "24", "--dry-run"); !strings.Contains(text, "step 1: ") {
		t.Errorf("constraints set --dry-run:\n%s", text)
	}
	if show := e.mustCtl("constraints", "show"); !strings.Contains(show, `"minimum-workers": 22`) {
		t.Errorf("a dry run changed the constraints:\n%s", show)
	}
	if m := e.metrics(e.dHTTP[leaderIndex(e)]); !strings.Contains(m, fmt.Sprintf("\nckegen_plan_pending_steps %d\n", len(storedOps))) {
		t.Errorf("the leader's metrics:\n%s", grepLines(m, "ckegen_plan"))
	}

	// Schedule: the plan, one step per tick.
	e.mustCtl("sabakan", "trigger", "schedule")
	e.converge(60 * time.Second)
	if n := e.rec.count() - before; n != len(storedOps) {
		t.Errorf("%d writes for a plan of %d steps", n, len(storedOps))
	}
	var h []struct {
		Op         string `json:"op"`
		ReleasedBy string `json:"releasedBy"`
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	applied := h[max(0, len(h)-len(storedOps)):]
	for i, x := range applied {
		if i < len(storedOps) && (x.Op != storedOps[i] || !strings.HasPrefix(x.ReleasedBy, "the trigger set to schedule")) {
			t.Errorf("applied step %d: %s released by %q; the plan said %s", i+1, x.Op, x.ReleasedBy, storedOps[i])
		}
	}
	c = e.cluster()
	if len(c.workers()) != 23 || c.find(w[0].Address).stateTaint() != "unreachable:NoSchedule" {
		t.Errorf("after the plan: %d workers, %s tainted %q", len(c.workers()), w[0].Address, c.find(w[0].Address).stateTaint())
	}

	// Quiet time: a machine flaps; nothing is written until it has been
	// still for 4 s.
	const quiet = 4 * time.Second
	e.mustCtl("sabakan", "set-quiet-time", quiet.String())
	before = e.rec.count()
	e.setState(w[1].serial(), "unreachable")
	time.Sleep(1500 * time.Millisecond)
	e.setState(w[1].serial(), "healthy")
	time.Sleep(1500 * time.Millisecond)
	e.setState(w[1].serial(), "unreachable")
	last := time.Now()
	e.eventually("the quiet time status", 5*time.Second, func() bool {
		st := e.changeStatus()
		return st.Result == "planning" && st.Reason == "QUIET_TIME" && strings.Contains(st.Message, w[1].Address) && st.Quiet != nil && st.Quiet.Remaining != ""
	})
	if m := e.metrics(e.dHTTP[leaderIndex(e)]); !strings.Contains(m, "\nckegen_quiet_time_remaining_seconds ") || strings.Contains(m, "\nckegen_quiet_time_remaining_seconds 0\n") {
		t.Errorf("the leader's metrics while not quiet:\n%s", grepLines(m, "ckegen_quiet"))
	}
	e.eventually("the taint after the quiet time", 15*time.Second, func() bool {
		return e.cluster().find(w[1].Address).stateTaint() == "unreachable:NoSchedule"
	})
	e.rec.mu.Lock()
	first := e.rec.writes[before]
	e.rec.mu.Unlock()
	if early := first.at.Sub(last); early < quiet-200*time.Millisecond {
		t.Errorf("the first write came %s after the machine last moved, before the quiet time %s", early, quiet)
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		t.Fatal(err)
	}
	if r := h[len(h)-1].ReleasedBy; !strings.HasPrefix(r, "the end of the quiet time 4s") {
		t.Errorf("the write after the quiet time was released by %q", r)
	}
	e.rec.check()
	e.checkHistory()
}

// leaderIndex is the index in e.dHTTP of the leading daemon.
func leaderIndex(e *env) int {
	e.t.Helper()
	name := strings.TrimSpace(e.mustCtl("leader"))
	for i := range e.dHTTP {
		if name == fmt.Sprintf("ckegen-%d", i) {
			return i
		}
	}
	e.t.Fatalf("leader %q is none of the daemons", name)
	return 0
}
