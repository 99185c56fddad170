package liveview

import (
	"context"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// TestStoredNextStep: the page's next step is the stored plan's first;
// none without a plan, with a plan of no step, or with one that does not
// parse.
func TestStoredNextStep(t *testing.T) {
	ctx := context.Background()
	st := storage.New(etcdtest.Client(t), "")
	if p, err := StoredNextStep(ctx, st); p != nil || err != nil {
		t.Errorf("no plan: %+v, %v", p, err)
	}
	sess, err := concurrency.NewSession(st.Client)
	must(t, err)
	defer sess.Close()
	e := concurrency.NewElection(sess, st.Key(storage.KeyLeader))
	must(t, e.Campaign(ctx, "d"))
	put := func(p planreport.Stored) {
		t.Helper()
		data, err := planreport.MarshalStored(p, 0)
		must(t, err)
		must(t, st.PutPlan(ctx, e.Key(), data))
	}
	at := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	put(planreport.Stored{Document: planreport.Document{Result: generator.PlanSettled}, ComputedAt: at})
	if p, err := StoredNextStep(ctx, st); p != nil || err != nil {
		t.Errorf("a plan of no step: %+v, %v", p, err)
	}
	put(planreport.Stored{ComputedAt: at, Document: planreport.Document{Result: generator.PlanSettled, Steps: []planreport.Step{
		{Op: generator.OpIncreaseWorker, Changes: []planreport.Change{{Action: generator.ActionAddWorker, Address: "10.0.0.1", Serial: "s", Reason: "r"}}},
		{Op: generator.OpTaintNodes},
	}}})
	p, err := StoredNextStep(ctx, st)
	if err != nil || p == nil || p.Op != generator.OpIncreaseWorker || p.Steps != 2 || len(p.Changes) != 1 ||
		p.Changes[0].Address != "10.0.0.1" || !p.ComputedAt.Equal(at) {
		t.Errorf("a plan of two steps: %+v, %v", p, err)
	}
	_, err = st.Client.Put(ctx, st.Key(storage.KeySabakanPlan), "{")
	must(t, err)
	if p, err := StoredNextStep(ctx, st); p != nil || err != nil {
		t.Errorf("a plan that does not parse: %+v, %v", p, err)
	}
}
