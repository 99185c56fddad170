package liveview

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/kubenodes"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"pgregory.net/rapid"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// TestPlanIsTheTick: the plan a view computes (Reader.Decide, what
// ckegenctl sabakan plan prints) is the leader's decision. On random data
// centers, settings, Node taints and events, before each tick the view
// decides, then the tick runs: when the tick writes a step, the view's
// plan starts with that very step (its op and every change, re-rendered
// nodes included) and notes nothing that holds it, and the plan the tick
// stores is the rest of the view's plan; when the tick writes nothing,
// the view's plan has no step, or the view says what holds it. The view
// takes the Kubernetes view the leader last decided with, or, as with
// --kubeconfig, the one given.
func TestPlanIsTheTick(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Start(t, sitetest.Options{Now: now, DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack = 1, 1 }})
	st, store := site.Storage, sitetest.StoreOf(site.Storage)
	leader := site.Lead(t, "d", 0)
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		clearKeys(t, st)
		dc := dcgen.Options{Racks: rapid.IntRange(2, 5).Draw(rt, "racks"), PerRack: rapid.IntRange(2, 6).Draw(rt, "per rack"),
			Seed: rapid.Uint64().Draw(rt, "seed"), Now: now, Roles: []string{"compute", "gpu"}, Weights: []int{3, 1},
			UnhealthyPct: rapid.IntRange(0, 30).Draw(rt, "unhealthy %")}
		sb := sitetest.StartSabakan(t, sitetest.Options{Now: now, Machines: dcgen.Machines(dc)})
		machines := dcgen.Machines(dc)
		must(t, store.SetTemplate(ctx, []byte(sitetest.Template)))
		must(t, store.SetURL(ctx, sb.URL))
		cps := rapid.SampledFrom([]int{1, 3}).Draw(rt, "control planes")
		must(t, store.SetConstraints(ctx, *sitetest.Counts(cps, rapid.IntRange(0, len(machines)).Draw(rt, "workers"))))
		if rapid.Bool().Draw(rt, "max-unhealthy") {
			must(t, store.SetMaxUnhealthy(ctx, intake.MaxUnhealthy{Value: rapid.IntRange(0, 3).Draw(rt, "limit")}))
		}
		view := kubenodes.ViewOf("a test's view", now, nil)
		step := tick.New(st, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
			Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
		step.Run(ctx, leader, view, nil)

		for i := range rapid.IntRange(1, 5).Draw(rt, "ticks") {
			given := false
			switch ev := rapid.IntRange(0, 6).Draw(rt, fmt.Sprintf("event %d", i)); ev {
			case 0, 1:
				m := rapid.SampledFrom(machines).Draw(rt, "machine")
				to := rapid.SampledFrom(machine.States).Draw(rt, "state")
				_, _ = sb.Store.SetState(m.Spec.Serial, to) // a change the lifecycle refuses is no event
			case 2:
				m := rapid.SampledFrom(machines).Draw(rt, "machine")
				must(t, sb.Store.SetLabel(m.Spec.Serial, "power", rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "feed")))
			case 3:
				must(t, store.SetTrigger(ctx, rapid.SampledFrom([]string{intake.TriggerPlanning, intake.TriggerSchedule}).Draw(rt, "trigger")))
			case 4:
				// Another view of the Nodes: a view of the plan takes it
				// as --kubeconfig gives it (the leader has not seen it).
				m := rapid.SampledFrom(machines).Draw(rt, "tainted")
				view = kubenodes.ViewOf("a test's view", now, map[string][]cluster.Taint{
					m.Spec.IPv4[0]: {{Key: "example.com/broken", Effect: "NoSchedule"}}})
				given = true
			case 5:
				// Another view, which the leader reads while it holds (the
				// trigger is planning): the view of the plan takes it from
				// the leader's memory.
				c, _, err := store.GetCluster(ctx)
				if errors.Is(err, storage.ErrNotFound) {
					break
				}
				must(t, err)
				n := rapid.SampledFrom(c.Nodes).Draw(rt, "tainted node")
				view = kubenodes.ViewOf("a test's view", now, map[string][]cluster.Taint{
					n.Address: {{Key: "example.com/broken", Effect: "NoSchedule"}}})
				must(t, store.SetTrigger(ctx, intake.TriggerPlanning))
				step.Run(ctx, leader, view, nil)
				must(t, store.SetTrigger(ctx, intake.TriggerSchedule))
			}
			p := Preview{}
			if given {
				p.Kubernetes = view
			}
			d, err := NewReader(st, Options{Now: func() time.Time { return now }}).Decide(ctx, p)
			if err != nil {
				rt.Fatalf("the view's decision: %v", err)
			}
			r := step.Run(ctx, leader, view, nil)
			if r.Decision == nil {
				rt.Fatalf("the tick was cut short: %v", r.Err)
			}
			compare(rt, ctx, st, d, r)
		}
	})
}

// compare checks a view's decision against the tick that followed it.
func compare(rt *rapid.T, ctx context.Context, st storage.Storage, view *decision.Decision, r tick.Result) {
	td := r.Decision
	wrote := td.Step != nil && (r.Err == nil || reason.Of(r.Err) == reason.TooManyUnhealthy)
	steps := view.Plan.Steps
	switch {
	case wrote && len(steps) == 0:
		rt.Fatalf("the tick wrote %s; the view's plan has no step (%s)", td.Step.Op, view.Plan.Result)
	case wrote && steps[0].Op != td.Step.Op:
		rt.Fatalf("the tick wrote %s; the view's plan starts with %s", td.Step.Op, steps[0].Op)
	case wrote:
		if diff := cmp.Diff(steps[0].Changes, td.Step.Changes); diff != "" {
			rt.Fatalf("the tick's %s and the view's first step differ (-view +tick):\n%s", td.Step.Op, diff)
		}
		if n := Notes(view); len(n) > 0 && td.Hold == nil {
			rt.Fatalf("the tick wrote %s; the view noted %q", td.Step.Op, n)
		}
		stored, err := planreport.ReadStored(ctx, st)
		if err != nil {
			rt.Fatalf("the stored plan: %v", err)
		}
		rest := *view.Plan
		rest.Steps = rest.Steps[1:]
		if diff := cmp.Diff(planreport.New(&rest).Steps, stored.Steps); diff != "" {
			rt.Fatalf("the stored plan is not the rest of the view's (-view +stored):\n%s", diff)
		}
	case len(steps) > 0 && len(Notes(view)) == 0 && r.Status.Result != reason.Failing:
		rt.Fatalf("the tick wrote nothing (%s %s); the view plans %s and notes nothing", r.Status.Result, r.Status.Reason, steps[0].Op)
	}
}

// clearKeys deletes every key but the daemons' election.
func clearKeys(t *testing.T, st storage.Storage) {
	ctx := context.Background()
	resp, err := st.Client.Get(ctx, st.Key(""), clientv3.WithPrefix(), clientv3.WithKeysOnly())
	must(t, err)
	for _, kv := range resp.Kvs {
		if k := string(kv.Key); !strings.HasPrefix(k, st.Key(storage.KeyCKEGenLeader)) {
			_, err := st.Client.Delete(ctx, k)
			must(t, err)
		}
	}
}
