package tick

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// The models' end-to-end flow (docs/models.md) runs on newClockFixture's data
// center: 20 machines, of which the query variables below return the 16
// that are not boot servers (RETIRED ones included), all HEALTHY.
const (
	modelMachines = 16
	// includeRetired returns every machine but the boot servers, so that
	// a RETIRED worker stays in the search and rule 7 decides.
	includeRetired = `{"notHaving":{"roles":["boot"]}}`
)

// putConstraints stores a constraints document as given (as CKE's own
// ckegenctl, or an operator with etcdctl, would).
func putConstraints(t *testing.T, f *fixture, doc string) {
	t.Helper()
	_, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeyConstraints), doc)
	must(t, err)
}

// setRate stores minimum-workers-rate with storage's setter, as ckegenctl
// constraints set does: from a count-model document, it switches models.
func setRate(t *testing.T, f *fixture, rate int) {
	t.Helper()
	ctx := context.Background()
	c, err := f.st.GetConstraints(ctx)
	must(t, err)
	must(t, c.Set(constraints.MinimumWorkersRate, rate))
	must(t, c.Validate())
	must(t, f.st.SetConstraints(ctx, c))
}

func cpAddresses(c *cluster.Cluster) []string {
	var out []string
	for _, n := range c.Nodes {
		if n.ControlPlane {
			out = append(out, n.Address)
		}
	}
	return out
}

func workerCount(c *cluster.Cluster) int {
	n := 0
	for _, nd := range c.Nodes {
		if !nd.ControlPlane {
			n++
		}
	}
	return n
}

func findNode(c *cluster.Cluster, addr string) *cluster.Node {
	for _, n := range c.Nodes {
		if n.Address == addr {
			return n
		}
	}
	return nil
}

func stateTaint(n *cluster.Node) string {
	for _, t := range n.Taints {
		if t.Key == "cke.cybozu.com/state" {
			return t.Value
		}
	}
	return ""
}

func hasWarning(st storage.Status, parts ...string) bool {
	return slices.ContainsFunc(st.Warnings, func(w string) bool {
		for _, p := range parts {
			if !strings.Contains(w, p) {
				return false
			}
		}
		return true
	})
}

// checkRate checks the status's worker rate against workers of
// modelMachines machines and minimum (the rate model), or its absence
// (minimum < 0: the count model).
func checkRate(t *testing.T, st storage.Status, workers, minimum int) {
	t.Helper()
	if minimum < 0 {
		if st.WorkerRate != nil {
			t.Errorf("a worker rate in the count model: %+v", st.WorkerRate)
		}
		return
	}
	want := generator.WorkerRate{Workers: workers, Machines: modelMachines,
		Percent: float64(workers-1) / modelMachines * 100, Minimum: minimum}
	if r := st.WorkerRate; r == nil || generator.WorkerRate(*r) != want {
		t.Errorf("worker rate %+v, want %+v", r, want)
	}
}

// TestModelsEndToEnd runs the daemon's main flow in both models (docs/models.md), each step a real tick against etcd and the compatible server:
// the first cluster; a worker RETIRED past the retire wait (removed in
// the count model; in the rate model kept while the rate does not allow
// it, with a warning, and removed when it does); a control plane turned
// UNREACHABLE (replaced in the count model; a warning in the rate model);
// and stored constraints that are invalid (both models' keys, a rate of
// 101): INVALID_CONSTRAINTS naming the key, nothing written. The status
// and /metrics say the model and, in the rate model, the rate.
func TestModelsEndToEnd(t *testing.T) {
	for _, c := range []struct {
		model, doc string
		// firstWorkers: the first cluster's workers; minimum: the
		// minimum-workers-rate, -1 in the count model.
		firstWorkers, minimum int
	}{
		{constraints.CountModel, `{"control-plane-count":3,"minimum-workers":5}`, 5, -1},
		// 13 workers of 16 machines: (13 - 1) / 16 = 75% < 80%.
		{constraints.RateModel, `{"control-plane-count":3,"minimum-workers-rate":80}`, modelMachines - 3, 80},
	} {
		t.Run(c.model, func(t *testing.T) {
			clk := &testClock{t: testNow}
			f := newClockFixture(t, clk)
			ctx := context.Background()
			putConstraints(t, f, c.doc)
			must(t, f.st.SetQueryVariables(ctx, []byte(includeRetired)))
			leader := f.lead(t)
			d := f.step("d", nil)
			d.setLeading(true)
			rate := c.model == constraints.RateModel

			// The first cluster.
			must(t, d.runOnce(ctx, leader))
			cl := f.cluster(t)
			if got := len(cpAddresses(cl)); got != 3 || workerCount(cl) != c.firstWorkers {
				t.Fatalf("first cluster: %d control planes and %d workers, want 3 and %d", got, workerCount(cl), c.firstWorkers)
			}
			if plan, err := planreport.ReadStored(ctx, f.st.Storage); err != nil || plan.Model != c.model || (plan.Rate != nil) != rate {
				t.Errorf("stored plan: %+v, %v; want model %s and a rate only in the rate model", plan, err, c.model)
			}
			st := f.status(t)
			if st.Model != c.model || st.ConstraintsSource != storage.ConstraintsStored {
				t.Errorf("status model %q from %q, want %q from %q", st.Model, st.ConstraintsSource, c.model, storage.ConstraintsStored)
			}
			checkRate(t, st, c.firstWorkers, c.minimum)
			m := scrape(t, d)
			other := map[string]string{constraints.CountModel: constraints.RateModel, constraints.RateModel: constraints.CountModel}[c.model]
			for _, w := range []string{`ckegen_constraints_model{model="` + c.model + `"} 1`, `ckegen_constraints_model{model="` + other + `"} 0`} {
				if !strings.Contains(m, "\n"+w+"\n") {
					t.Errorf("/metrics lacks %q: %q", w, series(m, "ckegen_constraints_model"))
				}
			}
			rateSeries := append(series(m, "ckegen_worker_rate_percent "), series(m, "ckegen_minimum_workers_rate_percent ")...)
			if want := []string{"ckegen_worker_rate_percent 75", "ckegen_minimum_workers_rate_percent 80"}; rate && !slices.Equal(rateSeries, want) {
				t.Errorf("rate series %q, want %q", rateSeries, want)
			} else if !rate && len(rateSeries) != 0 {
				t.Errorf("rate series in the count model: %q", rateSeries)
			}

			// A worker turns RETIRED: tainted, and kept until the retire
			// wait has passed.
			w := cl.Nodes[len(cl.Nodes)-1]
			if w.ControlPlane {
				t.Fatal("the last node is a control plane")
			}
			serial := w.Annotations["cke.cybozu.com/serial"]
			_, err := f.store.SetState(serial, machine.StateRetiring)
			must(t, err)
			_, err = f.store.SetState(serial, machine.StateRetired)
			must(t, err)
			must(t, d.runOnce(ctx, leader))
			if n := findNode(f.cluster(t), w.Address); n == nil || stateTaint(n) != "retired" {
				t.Fatalf("RETIRED worker before the retire wait: %+v", n)
			}

			clk.add(2 * time.Minute) // past the retire wait (1m)
			must(t, d.runOnce(ctx, leader))
			workers := c.firstWorkers
			if rate {
				// 75% < 80%: kept, with a warning, and nothing written.
				rev := f.clusterRev(t)
				must(t, d.runOnce(ctx, leader))
				if findNode(f.cluster(t), w.Address) == nil {
					t.Fatal("the rate model removed a RETIRED worker below minimum-workers-rate")
				}
				if f.clusterRev(t) != rev {
					t.Error("a tick with nothing to do wrote the cluster")
				}
				st = f.status(t)
				if !hasWarning(st, "RETIRED worker "+w.Address, "stays", "(13 workers - 1) / 16 machines = 75.0% < minimum-workers-rate 80%") {
					t.Errorf("status warnings %q lack the RETIRED worker held by the rate", st.Warnings)
				}
				checkRate(t, st, workers, 80)
				if (*generator.WorkerRate)(st.WorkerRate).CanRemove() {
					t.Error("the status's rate allows a removal at 75% < 80%")
				}

				// At exactly the rate it leaves (75% >= 75%).
				setRate(t, f, 75)
				must(t, d.runOnce(ctx, leader))
				if findNode(f.cluster(t), w.Address) != nil {
					t.Fatal("the RETIRED worker stayed at (workers - 1) / machines = minimum-workers-rate")
				}
				workers--
				st = f.status(t)
				checkRate(t, st, workers, 75)
				if hasWarning(st, "stays") {
					t.Errorf("warnings after the removal: %q", st.Warnings)
				}
				if m := scrape(t, d); !strings.Contains(m, "\nckegen_worker_rate_percent 68.75\n") || !strings.Contains(m, "\nckegen_minimum_workers_rate_percent 75\n") {
					t.Errorf("rate series after the removal: %q", append(series(m, "ckegen_worker_rate"), series(m, "ckegen_minimum")...))
				}
			} else if findNode(f.cluster(t), w.Address) != nil {
				t.Fatal("the count model kept a worker RETIRED past the retire wait")
			}

			// A control plane turns UNREACHABLE.
			cl = f.cluster(t)
			cps := cpAddresses(cl)
			cp := findNode(cl, cps[0])
			_, err = f.store.SetState(cp.Annotations["cke.cybozu.com/serial"], machine.StateUnreachable)
			must(t, err)
			must(t, d.runOnce(ctx, leader))
			cl = f.cluster(t)
			if rate {
				if got := cpAddresses(cl); !slices.Equal(got, cps) {
					t.Errorf("control planes %v, want %v kept: the rate model has no rule 5", got, cps)
				}
				if n := findNode(cl, cp.Address); n == nil || stateTaint(n) != "unreachable" {
					t.Errorf("the UNREACHABLE control plane: %+v", n)
				}
				rev := f.clusterRev(t)
				must(t, d.runOnce(ctx, leader))
				if f.clusterRev(t) != rev {
					t.Error("a tick with nothing to do wrote the cluster")
				}
				st = f.status(t)
				if st.Result != reason.OK || !hasWarning(st, "control plane "+cp.Address, "UNREACHABLE", "does not replace it") {
					t.Errorf("status %s, warnings %q: want ok with the UNREACHABLE control plane", st.Result, st.Warnings)
				}
			} else if got := cpAddresses(cl); slices.Contains(got, cp.Address) || len(got) != 3 {
				t.Errorf("control planes %v: want %s replaced", got, cp.Address)
			}

			// Invalid stored constraints: the tick fails naming the key,
			// nothing is written, and the status keeps the model the
			// cluster was last written under, without a rate.
			rev := f.clusterRev(t)
			for _, bad := range []struct{ doc, want string }{
				{`{"control-plane-count":3,"minimum-workers":5,"minimum-workers-rate":80}`, "minimum-workers-rate cannot be used with minimum-workers"},
				{`{"control-plane-count":3,"minimum-workers-rate":101}`, "minimum-workers-rate: must be a percentage from 0 to 100, got 101"},
			} {
				putConstraints(t, f, bad.doc)
				err := d.runOnce(ctx, leader)
				var te *reason.Error
				if !errors.As(err, &te) || te.Reason != reason.InvalidConstraints {
					t.Errorf("%s: error %v, want %s", bad.doc, err, reason.InvalidConstraints)
				}
				st = f.status(t)
				if st.Reason != reason.InvalidConstraints || !strings.Contains(st.Message, bad.want) || st.Model != c.model || st.WorkerRate != nil {
					t.Errorf("%s: status %s %q, model %q, rate %+v", bad.doc, st.Reason, st.Message, st.Model, st.WorkerRate)
				}
				if f.clusterRev(t) != rev {
					t.Errorf("%s: the cluster was written", bad.doc)
				}
				if got := series(scrape(t, d), "ckegen_"); slices.ContainsFunc(got, func(l string) bool {
					return strings.HasPrefix(l, "ckegen_worker_rate") || strings.HasPrefix(l, "ckegen_minimum_workers_rate")
				}) || !slices.Contains(got, `ckegen_constraints_model{model="`+c.model+`"} 1`) {
					t.Errorf("%s: /metrics %q, want the last model and no rate", bad.doc, got)
				}
			}
		})
	}
}

// TestRateKeptWithoutSabakan: a tick that does not get an answer from
// sabakan keeps the last worker rate, against the minimum-workers-rate
// now stored.
func TestRateKeptWithoutSabakan(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	putConstraints(t, f, `{"control-plane-count":3,"minimum-workers-rate":80}`)
	leader := f.lead(t)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader))
	before := f.status(t).WorkerRate
	if before == nil || before.Workers != modelMachines-3 {
		t.Fatalf("rate after the first cluster: %+v", before)
	}
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	setRate(t, f, 90)
	if err := d.runOnce(ctx, leader); err == nil {
		t.Fatal("a tick without sabakan succeeded")
	}
	st := f.status(t)
	want := *before
	want.Minimum = 90
	if st.Reason != reason.SabakanUnreachable || st.Model != constraints.RateModel || st.WorkerRate == nil || *st.WorkerRate != want {
		t.Errorf("status %s, model %q, rate %+v; want %+v", st.Reason, st.Model, st.WorkerRate, want)
	}
}

// TestSwitchCountToRate: storing minimum-workers-rate over a count-model
// document, as ckegenctl constraints set does, makes the next tick top the
// workers up to every HEALTHY machine, all in one cluster write, with no
// control plane changed.
func TestSwitchCountToRate(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	first := f.cluster(t)
	if workerCount(first) != 5 {
		t.Fatalf("%d workers in the count model, want 5", workerCount(first))
	}
	var unhealthy string
	for _, m := range f.store.Search(nil, nil) {
		if m.Spec.Role != "boot" && findNode(first, m.Spec.IPv4[0]) == nil {
			unhealthy = m.Spec.Serial
			break
		}
	}
	_, err := f.store.SetState(unhealthy, machine.StateUnhealthy)
	must(t, err)
	h, err := f.st.History(ctx)
	must(t, err)
	writes := len(h)

	// One machine not HEALTHY: it does not become a worker.
	setRate(t, f, 80)
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Model != constraints.RateModel {
		t.Fatalf("model %q after the switch", st.Model)
	}

	cl := f.cluster(t)
	if want := modelMachines - 1 - 3; workerCount(cl) != want {
		t.Errorf("%d workers after the switch, want %d: every HEALTHY machine but the control planes", workerCount(cl), want)
	}
	for _, n := range cl.Nodes {
		if n.Annotations["cke.cybozu.com/serial"] == unhealthy {
			t.Errorf("the UNHEALTHY machine %s became a node", unhealthy)
		}
	}
	if got, want := cpAddresses(cl), cpAddresses(first); !slices.Equal(got, want) {
		t.Errorf("control planes %v after the switch, want %v", got, want)
	}
	h, err = f.st.History(context.Background())
	must(t, err)
	if len(h) != writes+1 || h[len(h)-1].ChangeCount != workerCount(cl)-5 {
		t.Errorf("history after the switch: %d entries (before %d), last %+v; want one write adding %d workers", len(h), writes, h[len(h)-1], workerCount(cl)-5)
	}
	st := f.status(t)
	if r := st.WorkerRate; r == nil || r.Workers != workerCount(cl) || r.Machines != modelMachines || r.Minimum != 80 ||
		math.Abs(r.Percent-float64(workerCount(cl)-1)/modelMachines*100) > 1e-9 {
		t.Errorf("status rate %+v", r)
	}
}
