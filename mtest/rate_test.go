package mtest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// rateStatus is the rate model's part of sabakan/status as ckegenctl prints
// it (docs/models.md).
type rateStatus struct {
	Result            string   `json:"result"`
	Leader            string   `json:"leader"`
	Warnings          []string `json:"warnings"`
	SettingsNotes     []string `json:"settingsNotes"`
	Model             string   `json:"model"`
	ConstraintsSource string   `json:"constraintsSource"`
	WorkerRate        *struct {
		Workers  int     `json:"workers"`
		Machines int     `json:"machines"`
		Percent  float64 `json:"percent"`
		Minimum  int     `json:"minimumWorkersRate"`
	} `json:"workerRate"`
}

func (e *env) rateStatus() rateStatus {
	e.t.Helper()
	var st rateStatus
	out := e.mustCtl("sabakan", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("status: %v\n%s", err, out)
	}
	return st
}

// checkRate checks that the status, ckegenctl sabakan status and the
// leader's /metrics all show workers of machines against minimum.
func (e *env) checkRate(workers, machines, minimum int) {
	e.t.Helper()
	percent := float64(workers-1) / float64(machines) * 100
	st := e.rateStatus()
	if r := st.WorkerRate; st.Model != "rate" || r == nil || r.Workers != workers || r.Machines != machines || r.Minimum != minimum || r.Percent != percent {
		e.t.Errorf("status model %q, rate %+v; want rate, %d workers of %d machines, minimum %d", st.Model, r, workers, machines, minimum)
	}
	verdict := "a RETIRED worker past the retire wait may leave"
	if percent < float64(minimum) {
		verdict = "RETIRED workers stay"
	}
	want := fmt.Sprintf("MODEL           rate, workers %.1f%% ((%d workers - 1) / %d machines), minimum-workers-rate %d%%: %s",
		percent, workers, machines, minimum, verdict)
	if out := e.mustCtl("sabakan", "status"); grepLines(out, "MODEL") != want {
		e.t.Errorf("ckegenctl sabakan status:\n%s\nwant the line\n%s", out, want)
	}
	// The daemon that wrote the status leads.
	i := slices.IndexFunc(e.daemons, func(d *proc) bool { return slices.Contains(d.args, st.Leader) })
	if i < 0 {
		e.t.Fatalf("the status's leader %q is none of the daemons", st.Leader)
	}
	m := e.metrics(e.dHTTP[i])
	for _, w := range []string{
		`ckegen_constraints_model{model="count"} 0`,
		`ckegen_constraints_model{model="rate"} 1`,
		fmt.Sprintf("ckegen_worker_rate_percent %v", percent),
		fmt.Sprintf("ckegen_minimum_workers_rate_percent %d", minimum),
	} {
		if !strings.Contains(m, "\n"+w+"\n") {
			e.t.Errorf("the leader's /metrics lacks %q:\n%s", w, grepLines(m, "ckegen_"))
		}
	}
}

// TestRateModel (scenario 13): a running cluster of the count model (3
// control planes, 20 workers) is switched to CKE v1.35's rate model with
// ckegenctl constraints set minimum-workers-rate 80, as an operator would:
// the workers are topped up to every HEALTHY machine in one cluster
// write, with the control planes kept. Then a worker turns RETIRED: with
// minimum-workers-rate 99 the rate, (225 - 1) / 228 = 98.2%, keeps it past
// the retire wait (a warning says so); with 98 it leaves. The status,
// ckegenctl sabakan status and the leader's /metrics show the rate all along.
func TestRateModel(t *testing.T) {
	e := newEnv(t)
	e.converge(90 * time.Second)
	c := e.cluster()
	if len(c.cps()) != 3 || len(c.workers()) != 20 {
		t.Fatalf("count model: %d control planes and %d workers, want 3 and 20", len(c.cps()), len(c.workers()))
	}
	if st := e.rateStatus(); st.Model != "count" || st.ConstraintsSource != "stored" || st.WorkerRate != nil {
		t.Errorf("count model status: %+v", st)
	}
	cps := c.cps()
	// The default query returns every machine but the boot servers (one
	// per rack), all HEALTHY.
	machines := len(e.machines) - 12

	before := e.rec.count()
	e.mustCtl("constraints", "set", "minimum-workers-rate", "80")
	if writes := e.converge(60 * time.Second); writes != 1 {
		t.Errorf("the switch to the rate model took %d cluster writes, want 1", writes)
	}
	c = e.cluster()
	if len(c.Nodes) != machines || len(c.workers()) != machines-3 {
		t.Errorf("after the switch: %d nodes, %d workers; want every one of the %d HEALTHY machines, %d workers",
			len(c.Nodes), len(c.workers()), machines, machines-3)
	}
	for _, n := range cps {
		if m := c.find(n.Address); m == nil || !m.ControlPlane {
			t.Errorf("control plane %s is not one after the switch", n.Address)
		}
	}
	if e.rec.count()-before != 1 {
		t.Errorf("%d cluster writes since the switch", e.rec.count()-before)
	}
	st := e.rateStatus()
	weight := func(w string) bool {
		return strings.Contains(w, "cke.cybozu.com/weight has no meaning in the rate model")
	}
	if !slices.ContainsFunc(st.SettingsNotes, weight) || slices.ContainsFunc(st.Warnings, weight) {
		t.Errorf("the bundled template's weights: notes %q, warnings %q; want them in the notes only", st.SettingsNotes, st.Warnings)
	}
	workers := machines - 3
	e.checkRate(workers, machines, 80)

	// RETIRED machines stay in the search from now on, so that rule 7
	// decides; with 99% nothing may leave.
	e.mustCtl("sabakan", "set-variables", "testdata/include-retired.json")
	e.mustCtl("constraints", "set", "minimum-workers-rate", "99")
	e.converge(60 * time.Second)
	victim := c.workers()[0]
	e.setState(victim.serial(), "retiring")
	e.setState(victim.serial(), "retired")
	retiredAt := time.Now()
	e.eventually("the retired taint", 20*time.Second, func() bool {
		n := e.cluster().find(victim.Address)
		return n != nil && n.stateTaint() == "retired:NoExecute"
	})
	e.eventually("the warning of the RETIRED worker held by the rate", retireWait+20*time.Second, func() bool {
		return slices.ContainsFunc(e.rateStatus().Warnings, func(w string) bool {
			return strings.Contains(w, "RETIRED worker "+victim.Address) && strings.Contains(w, "< minimum-workers-rate 99%")
		})
	})
	if time.Since(retiredAt) < retireWait {
		t.Fatalf("the rate warning came %s after RETIRED, before the retire wait %s", time.Since(retiredAt), retireWait)
	}
	e.converge(30 * time.Second)
	if e.cluster().find(victim.Address) == nil {
		t.Fatal("the RETIRED worker left although (workers - 1) / machines < minimum-workers-rate 99%")
	}
	e.checkRate(workers, machines, 99)

	// 98%: (225 - 1) / 228 = 98.2% allows it.
	before = e.rec.count()
	e.mustCtl("constraints", "set", "minimum-workers-rate", "98")
	e.eventually("the RETIRED worker to leave", 30*time.Second, func() bool {
		return e.cluster().find(victim.Address) == nil
	})
	e.converge(30 * time.Second)
	if w := e.rec.count() - before; w != 1 {
		t.Errorf("the removal took %d cluster writes, want 1", w)
	}
	workers--
	if n := len(e.cluster().workers()); n != workers {
		t.Errorf("%d workers after the removal, want %d", n, workers)
	}
	e.checkRate(workers, machines, 98)
	e.rec.check()
	e.checkHistory()
}
