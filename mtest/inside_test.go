package mtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/internal/testutil/promtest"
)

// insideServer is CKE's server with ckegen inside (ckeserver/'s cke) on
// the scenario's etcd, run as CKE's own: ckeSite's configuration file,
// flags and CKE's own ckecli beside it; debug runs it with
// --debug-sabakan (its integrator alone, no election, no HTTP).
func insideServer(t *testing.T, e *env, debug bool) *ckeSite {
	t.Helper()
	inside := cketest.Inside(t)
	_, cli := cketest.Binaries(t)
	k := newCKESite(e, inside, cli)
	k.server.name = "cke-inside"
	if debug {
		k.server.args = []string{"--config", k.config, "--debug-sabakan"}
	}
	return k
}

// httpAddr is the server's --http address.
func (k *ckeSite) httpAddr() string {
	for i, a := range k.server.args {
		if a == "--http" {
			return k.server.args[i+1]
		}
	}
	return ""
}

func (k *ckeSite) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + k.httpAddr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data)
}

// TestInsideCKE: CKE v1.35.4's server with ckegen inside, configured with
// CKE's own ckecli, as a CKE site runs it. With no cluster its first Do
// generates one, which CKE's server validates; ckegen's status, history,
// page and metrics are served on CKE's HTTP server, beside CKE's API and
// series; a real Prometheus scrapes /metrics with no error; ckegen's CLI
// says the mode is inside CKE.
func TestInsideCKE(t *testing.T) {
	e := newEnv(t, withoutDaemons())
	k := insideServer(t, e, false)
	k.mustCkecli("sabakan", "set-url", "http://"+e.sabAddr)
	k.mustCkecli("constraints", "set", "control-plane-count", "3")
	k.mustCkecli("constraints", "set", "minimum-workers-rate", "80")
	k.mustCkecli("sabakan", "set-template", "../examples/template-rate.yml")
	start := time.Now()
	k.server.start(t)

	// (a) The first Do generates the cluster; CKE's server validates it.
	e.eventually("the first cluster", 60*time.Second, e.hasCluster)
	t.Logf("the first cluster written %s after the server started", time.Since(start).Round(time.Millisecond))
	k.waitValidated()
	k.checkNoInvalid()
	st := e.waitStatus("ok", "", "", 10*time.Second)
	if st.LastOp != "new" {
		t.Errorf("status %+v, want the new cluster", st)
	}

	// (c) ckegen's status, history and page under /ckegen/, CKE's API
	// as it was.
	code, body := k.get(t, "/ckegen/status")
	var status struct{ Result, Mode, LastOp string }
	if err := json.Unmarshal([]byte(body), &status); code != 200 || err != nil || status.Mode != "inside-cke" || status.LastOp != "new" {
		t.Errorf("/ckegen/status: %d %s", code, body)
	}
	if code, body := k.get(t, "/ckegen/history"); code != 200 || !strings.Contains(body, `"op":"new"`) {
		t.Errorf("/ckegen/history: %d %s", code, body)
	}
	if code, body := k.get(t, "/ckegen/"); code != 200 || !strings.Contains(body, "<svg") {
		t.Errorf("/ckegen/: %d, page %.200s", code, body)
	}
	if code, body := k.get(t, "/version"); code != 200 || !strings.Contains(body, strings.TrimPrefix(cketest.Version, "v")) {
		t.Errorf("CKE's /version: %d %s", code, body)
	}

	// The metrics: CKE's families and ckegen's, none twice, and CKE's
	// sabakan series fed by ckegen.
	_, m := k.get(t, "/metrics")
	for _, want := range []string{"cke_leader 1", "ckegen_leader 1", "cke_sabakan_integration_successful 1", "ckegen_tick_duration_seconds_count "} {
		if !strings.Contains(m, "\n"+want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, not := range []string{"ckegen_standalone", "cke_leader 0"} {
		if strings.Contains(m, "\n"+not) {
			t.Errorf("/metrics has %q, a series of ckegen's own daemon", not)
		}
	}
	// (f) A real Prometheus scrapes it with no error.
	prom := promtest.Start(t, fmt.Sprintf("- job_name: cke\n  static_configs: [{targets: [%q]}]\n", k.httpAddr()))
	prom.WaitSamples(t, `up{job="cke"} == 1`, 1)
	prom.WaitSamples(t, `cke_leader == 1`, 1)
	prom.WaitSamples(t, `ckegen_tick_duration_seconds_count > 0`, 1)
	prom.WaitSamples(t, `cke_sabakan_workers`, 1)
	if log := k.serverLog(); strings.Contains(log, "gathered metric family") || strings.Contains(log, "has help") {
		t.Errorf("CKE's /metrics handler logged a clash of families:\n%s", log)
	}

	// ckegen's CLI says where ckegen runs.
	if out := e.mustCtl("sabakan", "status"); !strings.Contains(out, "MODE            inside CKE:") {
		t.Errorf("sabakan status:\n%s", out)
	}
	if out := e.mustCtl("sabakan", "owner"); !strings.Contains(out, "WRITES CLUSTER  ckegen, as CKE's server's own sabakan integration") {
		t.Errorf("sabakan owner:\n%s", out)
	}
	k.server.stop(syscall.SIGTERM)
}

// TestInsideCKEDebug: the server with ckegen inside under
// --debug-sabakan (its integrator alone, every 5 s and on a watched
// change: no Vault needed): the leader's forecast is stored and status
// says its runway; in the count model an UNREACHABLE control plane
// is replaced; in the rate model a RETIRING worker is tainted; CKE's own
// ckecli sabakan disable holds ckegen; with sabakan down the server keeps
// running and the status says why.
func TestInsideCKEDebug(t *testing.T) {
	e := newEnv(t, withoutDaemons())
	k := insideServer(t, e, true)
	// ckegen's CLI sets the count model, which CKE v1.35's cannot.
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "5")
	e.mustCtl("sabakan", "set-template", "../examples/template.yml")
	k.server.start(t)
	e.eventually("the first cluster", 60*time.Second, e.hasCluster)
	e.waitStatus("ok", "", "", 20*time.Second)

	// (a) The leader's forecast, made beside the ticks once the cluster
	// is settled, is stored: status says its runway.
	start := time.Now()
	e.eventually("the leader's forecast in the status", 30*time.Second, func() bool {
		out := e.mustCtl("sabakan", "status")
		return strings.Contains(out, "RUNWAY") && strings.Contains(out, "the cluster meets its constraints until")
	})
	t.Logf("the forecast in the status %s after the first settled tick", time.Since(start).Round(100*time.Millisecond))

	// (b) Count model: a control plane turns UNREACHABLE and is replaced.
	cp := e.cluster().cps()[0]
	e.setState(cp.serial(), "unreachable")
	e.eventually("the unreachable control plane replaced", 30*time.Second, func() bool {
		c := e.cluster()
		n := c.find(cp.Address)
		return len(c.cps()) == 3 && (n == nil || !n.ControlPlane)
	})

	// (b) Rate model: a worker turns RETIRING and is tainted.
	k.mustCkecli("constraints", "set", "minimum-workers-rate", "80")
	k.mustCkecli("sabakan", "set-template", "../examples/template-rate.yml")
	e.eventually("the rate model's workers", 30*time.Second, func() bool { return len(e.cluster().workers()) > 5 })
	w := e.cluster().workers()[0]
	e.setState(w.serial(), "retiring")
	e.eventually("the retiring worker tainted", 30*time.Second, func() bool {
		n := e.cluster().find(w.Address)
		return n != nil && n.stateTaint() == "retiring:NoExecute"
	})

	// (d) CKE's own ckecli disables the integration: ckegen holds.
	k.mustCkecli("sabakan", "disable")
	e.waitStatus("disabled", "DISABLED", "", 30*time.Second)
	k.mustCkecli("sabakan", "enable")
	e.waitStatus("ok", "", "", 30*time.Second)

	// (e) sabakan down: the server goes on, the status says why.
	e.sabakan.stop(syscall.SIGKILL)
	st := e.waitStatus("failing", "SABAKAN_UNREACHABLE", "", 30*time.Second)
	if !k.server.running() {
		t.Fatalf("the server ended with sabakan down: %s", lastLine(k.serverLog()))
	}
	t.Logf("with sabakan down: %s %s %q", st.Result, st.Reason, st.Message)
}

// TestMoveInsideCKE is docs/inside-cke.md's move, there and back, with
// the server under --debug-sabakan (its integration every 5 s, no Vault).
// ckegen's daemons own the integration; the server with ckegen inside
// starts and writes nothing, not even the status, while the daemons go on
// following sabakan. The daemons stop, a handback gives the integration to
// the server: no cluster write at the move, then it follows sabakan, its
// first write changing no label of any node. The daemons start again and
// a takeover gives it back to them: no write, or one that changes nothing,
// until the inventory changes, and no label changed by their first; the
// server leaves the status to them from then on.
func TestMoveInsideCKE(t *testing.T) {
	e := newEnv(t)
	e.converge(60 * time.Second)
	e.mustCtl("sabakan", "takeover")
	e.waitStatus("ok", "", "", 10*time.Second)

	k := insideServer(t, e, true)
	k.server.start(t)
	e.eventually("the server to leave the integration to the daemons", 30*time.Second, func() bool {
		return strings.Contains(k.serverLog(), "ckegen's daemons own the integration")
	})
	w := e.cluster().workers()[0]
	e.setState(w.serial(), "unreachable")
	e.eventually("the daemons to taint the unreachable worker", 30*time.Second, func() bool {
		n := e.cluster().find(w.Address)
		return n != nil && n.stateTaint() == "unreachable:NoSchedule"
	})
	e.statusStays("the daemons' status while the server runs beside them", 6*time.Second, func(st status) bool {
		return strings.HasPrefix(st.Leader, "ckegen-") && st.Mode != "inside-cke"
	})

	// There: the daemons stop, the handback gives the integration to the
	// server, which writes no cluster at the move.
	for _, d := range e.daemons {
		d.stop(syscall.SIGTERM)
	}
	writes := e.rec.count()
	beside := e.rawCluster()
	// The count model (newEnv's): handback is refused unless forced, as
	// CKE's own binary would add every HEALTHY machine; here every server
	// runs ckegen inside.
	e.mustCtl("sabakan", "handback", "--force")
	e.eventually("the server's first tick", 30*time.Second, func() bool {
		st, err := e.status()
		return err == nil && st.Mode == "inside-cke" && st.Result == "ok"
	})
	time.Sleep(6 * time.Second) // another tick of the server's
	if n := e.rec.count() - writes; n != 0 {
		t.Errorf("the move wrote the cluster %d times; the same generator on the same settings has nothing to change", n)
	}
	w2 := e.cluster().workers()[1]
	writes = e.rec.count()
	e.setState(w2.serial(), "unreachable")
	e.eventually("the server to taint the unreachable worker", 30*time.Second, func() bool {
		n := e.cluster().find(w2.Address)
		return n != nil && n.stateTaint() == "unreachable:NoSchedule"
	})
	// The server's first write after the move (that taint, and a worker
	// added in its place) changes no label of any node.
	sameLabels(t, "the server's first write after the move", beside, e.firstWriteAfter(writes))

	// And back: the daemons start, the takeover gives them the
	// integration, and the server leaves the status to them.
	e.startDaemons()
	_, err := e.ctl("sabakan", "takeover")
	if err == nil || !strings.Contains(err.Error(), "no ckegen daemon leads") {
		// Refused until a daemon leads: it would stop ckegen inside CKE's
		// server with nothing in its place. (A daemon elected within
		// milliseconds would make this pass: a race the test allows.)
		if err == nil {
			t.Log("the daemons led before the first takeover")
		} else {
			t.Errorf("takeover before a daemon leads: %v", err)
		}
	}
	e.eventually("a ckegen daemon to lead", 30*time.Second, func() bool {
		out, err := e.ctl("leader")
		return err == nil && strings.Contains(out, "ckegen-")
	})
	inside := e.rawCluster()
	writes = e.rec.count()
	e.mustCtl("sabakan", "takeover")
	e.eventually("the daemons' status", 30*time.Second, func() bool {
		st, err := e.status()
		return err == nil && st.Result == "ok" && strings.HasPrefix(st.Leader, "ckegen-")
	})
	e.statusStays("the daemons' status after the takeover", 6*time.Second, func(st status) bool {
		return strings.HasPrefix(st.Leader, "ckegen-") && st.Mode != "inside-cke"
	})
	// The inventory did not change: no write, or one that leaves the
	// server's cluster as it was, node for node.
	if e.rec.count() > writes {
		identical(t, "the daemons' first write after the takeover", inside, e.firstWriteAfter(writes))
	}
	identical(t, "the cluster after the takeover", inside, e.rawCluster())
	w3 := e.cluster().workers()[2]
	writes = e.rec.count()
	e.setState(w3.serial(), "unreachable")
	e.eventually("the daemons to taint the unreachable worker", 30*time.Second, func() bool {
		n := e.cluster().find(w3.Address)
		return n != nil && n.stateTaint() == "unreachable:NoSchedule"
	})
	// The daemons' first write after the move (that taint, and a worker
	// added in its place) changes no label of any node.
	sameLabels(t, "the daemons' first write after the takeover", inside, e.firstWriteAfter(writes))
	if !k.server.running() {
		t.Errorf("the server ended: %s", lastLine(k.serverLog()))
	}
	e.rec.check()
}

// statusStays checks for d that every status read satisfies cond.
func (e *env) statusStays(what string, d time.Duration, cond func(status) bool) {
	e.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		st, err := e.status()
		if err != nil {
			e.t.Fatalf("%s: %v", what, err)
		}
		if !cond(st) {
			e.t.Fatalf("%s: the status is %+v", what, st)
		}
	}
}

// hasCluster reports whether a cluster is stored.
func (e *env) hasCluster() bool {
	resp, err := e.cli.Get(e.ctx, "/cke/cluster", clientv3.WithCountOnly())
	return err == nil && resp.Count > 0
}
