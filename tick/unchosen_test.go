package tick

import (
	"context"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
)

// The hold on unchosen constraints (docs/models.md, "Upgrading with
// nothing stored"): where the constraints name no model and the last
// status says the count model was in force, the leader holds, writes
// nothing, and says the command that keeps each model.

// putLastStatus records, as the last leader's status and memory, a status
// that says the model and where its constraints came from: what an
// earlier release left with nothing stored (count, default), or this
// one (rate, default).
func putLastStatus(t *testing.T, f *fixture, leader, model, source string) {
	t.Helper()
	st := storage.Status{Result: reason.OK, Time: testNow, Since: testNow, LastSuccess: testNow, LastRun: testNow, Model: model, ConstraintsSource: source}
	mem := decision.Memory{Last: st}
	data, err := mem.Marshal()
	must(t, err)
	must(t, f.st.PutStatus(context.Background(), leader, st, data))
}

func deleteConstraints(t *testing.T, f *fixture) {
	t.Helper()
	_, err := f.st.Client.Delete(context.Background(), f.st.Key(storage.KeyConstraints))
	must(t, err)
}

// TestModelDefaults: with no constraints key stored, and no status that
// says otherwise, CKE v1.35.4's defaults apply, in a tick on a real
// etcd: the rate model at 80% with one control plane, every HEALTHY
// machine a worker; the status says they are the defaults.
func TestModelDefaults(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	deleteConstraints(t, f)
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, f.lead(t)))
	st := f.status(t)
	if st.Result != reason.OK || st.Model != constraints.RateModel || st.ConstraintsSource != storage.ConstraintsDefault ||
		st.WorkerRate == nil || st.WorkerRate.Minimum != constraints.DefaultMinimumWorkersRate {
		t.Errorf("status %s, model %q from %q, rate %+v; want the rate model at 80%% from the defaults", st.Result, st.Model, st.ConstraintsSource, st.WorkerRate)
	}
	if c := f.cluster(t); len(cpAddresses(c)) != 1 || workerCount(c) != modelMachines-1 {
		t.Errorf("cluster with the defaults: %d control planes, %d workers, want 1 and %d (every HEALTHY machine)", len(cpAddresses(c)), workerCount(c), modelMachines-1)
	}
}

// TestUnchosenHold: a site an earlier release ran with nothing stored
// (its last status: the count model's defaults) upgrades. The leader
// holds, CONSTRAINTS_UNCHOSEN, writes nothing and names both commands;
// a new leader (a restart) holds again, also after a disabled tick; a
// view that decides as the leader does says the same; storing the count
// model's defaults as the message says clears it and keeps the cluster
// as it was.
func TestUnchosenHold(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	// The cluster an earlier release built with nothing stored: the count
	// model's defaults.
	must(t, f.st.SetConstraints(ctx, constraints.CountDefaults()))
	must(t, f.step("old", nil).runOnce(ctx, leader))
	built := f.cluster(t)
	if len(cpAddresses(built)) != 1 || workerCount(built) != 1 {
		t.Fatalf("the count model's defaults built %d control planes and %d workers", len(cpAddresses(built)), workerCount(built))
	}
	deleteConstraints(t, f)
	putLastStatus(t, f, leader, constraints.CountModel, storage.ConstraintsDefault)
	history, err := f.st.History(ctx)
	must(t, err)

	held := func(d *testStep, when string) {
		t.Helper()
		f.wantHeld(t, d, leader, reason.ConstraintsUnchosen, constraints.CountDefaultsCommand)
		st := f.status(t)
		if !strings.Contains(st.Message, "ckegenctl constraints set minimum-workers-rate 80") {
			t.Errorf("%s: message %q names no command that takes CKE's defaults", when, st.Message)
		}
		if st.Model != constraints.CountModel || st.ConstraintsSource != storage.ConstraintsDefault {
			t.Errorf("%s: status model %q from %q, want what makes the next leader hold: count from the defaults", when, st.Model, st.ConstraintsSource)
		}
		if h, err := f.st.History(ctx); err != nil || len(h) != len(history) {
			t.Errorf("%s: history of %d entries, was %d (%v)", when, len(h), len(history), err)
		}
	}
	held(f.step("upgraded", nil), "after the upgrade")
	held(f.step("restarted", nil), "after a restart")

	// A disabled tick between keeps it.
	d := f.step("again", nil)
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	must(t, f.st.SetDisabled(ctx, false))
	held(f.step("enabled", nil), "after a disabled tick and a restart")

	// The count model's defaults, stored as the message says: no hold,
	// and the cluster as it was.
	c := constraints.Default()
	must(t, c.Set(constraints.MinimumWorkers, 1))
	must(t, f.st.SetConstraints(ctx, c))
	rev := f.clusterRev(t)
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.OK || st.Model != constraints.CountModel || st.ConstraintsSource != storage.ConstraintsStored {
		t.Errorf("with the count model's defaults stored: status %s %s, model %q from %q", st.Result, st.Reason, st.Model, st.ConstraintsSource)
	}
	if f.clusterRev(t) != rev {
		t.Error("storing the count model's defaults changed the cluster")
	}
}

// TestUnchosenHoldRate: choosing CKE's defaults instead clears the hold,
// and the next tick runs the rate model.
func TestUnchosenHoldRate(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	deleteConstraints(t, f)
	putLastStatus(t, f, leader, constraints.CountModel, storage.ConstraintsDefault)
	d := f.step("d", nil)
	f.wantHeld(t, d, leader, reason.ConstraintsUnchosen, "no constraints are stored")
	if f.cluster(t) != nil {
		t.Fatal("a held tick wrote a cluster")
	}
	c := constraints.Default()
	must(t, c.Set(constraints.MinimumWorkersRate, 80))
	must(t, f.st.SetConstraints(ctx, c))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.OK || st.Model != constraints.RateModel || st.ConstraintsSource != storage.ConstraintsStored {
		t.Errorf("with rate 80 stored: status %s %s, model %q from %q", st.Result, st.Reason, st.Model, st.ConstraintsSource)
	}
	if cl := f.cluster(t); cl == nil || workerCount(cl) != modelMachines-1 {
		t.Errorf("no rate-model cluster after the hold")
	}
}

// TestUnchosenNoHold: no hold on a fresh site (no status), nor where the
// last status says the rate model's defaults (this release's), nor with
// a stored document that names a model.
func TestUnchosenNoHold(t *testing.T) {
	for _, c := range []struct {
		name, model, source, doc string
	}{
		{name: "fresh site"},
		{name: "rate defaults", model: constraints.RateModel, source: storage.ConstraintsDefault},
		{name: "count stored, count model", model: constraints.CountModel, source: storage.ConstraintsStored, doc: `{"control-plane-count":3,"minimum-workers":5}`},
		{name: "count defaults, rate stored", model: constraints.CountModel, source: storage.ConstraintsDefault, doc: `{"control-plane-count":3,"minimum-workers-rate":80}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			leader := f.lead(t)
			deleteConstraints(t, f)
			if c.doc != "" {
				putConstraints(t, f, c.doc)
			}
			if c.model != "" {
				putLastStatus(t, f, leader, c.model, c.source)
			}
			must(t, f.step("d", nil).runOnce(ctx, leader))
			if st := f.status(t); st.Result != reason.OK || f.cluster(t) == nil {
				t.Errorf("status %s %s %q, want ok and a cluster", st.Result, st.Reason, st.Message)
			}
		})
	}
}

// TestUnchosenDocument: a stored document without a worker key, which an
// earlier release read as the count model (minimum-workers 1) and CKE
// reads as the rate model at 0, holds where the last status says the
// count model; minimum-workers 1 keeps what was read, with its control
// planes.
func TestUnchosenDocument(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	putConstraints(t, f, `{"control-plane-count":3}`)
	putLastStatus(t, f, leader, constraints.CountModel, storage.ConstraintsStored)
	d := f.step("d", nil)
	f.wantHeld(t, d, leader, reason.ConstraintsUnchosen, "the stored constraints have no worker key")
	c, err := f.st.GetConstraints(ctx)
	must(t, err)
	must(t, c.Set(constraints.MinimumWorkers, 1))
	must(t, f.st.SetConstraints(ctx, c))
	must(t, d.runOnce(ctx, leader))
	if cl := f.cluster(t); cl == nil || len(cpAddresses(cl)) != 3 || workerCount(cl) != 1 {
		t.Errorf("after set minimum-workers 1: want 3 control planes and 1 worker")
	}
}
