package tick

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/liveview"

	"github.com/google/go-cmp/cmp"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/world"
)

// testClock is a clock the test moves, shared by the daemon and the
// compatible server (whose status.duration counts from it).
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// newClockFixture is newFixture with the compatible server on clk.
func newClockFixture(t *testing.T, clk *testClock) *fixture {
	t.Helper()
	return newSiteFixture(t, clk.now)
}

// rest calls the compatible server's REST API, as sabakan's users do.
func (f *fixture) rest(t *testing.T, method, path, body string) {
	t.Helper()
	f.site.REST(t, method, path, body)
}

func (f *fixture) status(t *testing.T) storage.Status {
	t.Helper()
	st, err := f.st.GetStatus(context.Background())
	must(t, err)
	return st
}

func (f *fixture) clusterRev(t *testing.T) int64 {
	t.Helper()
	_, rev, err := f.st.GetCluster(context.Background())
	if errors.Is(err, storage.ErrNotFound) {
		return 0
	}
	must(t, err)
	return rev
}

func (f *fixture) planRev(t *testing.T) int64 {
	t.Helper()
	resp, err := f.st.Client.Get(context.Background(), f.st.Key(storage.KeySabakanPlan))
	must(t, err)
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].ModRevision
}

func workers(c *cluster.Cluster) []*cluster.Node {
	var out []*cluster.Node
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			out = append(out, n)
		}
	}
	return out
}

func serial(n *cluster.Node) string { return n.Annotations["cke.cybozu.com/serial"] }

// TestPlanningThenSchedule: in planning, ticks store the plan and write no
// cluster; switched to schedule, each tick applies the next step of that
// plan until it settles on the plan's cluster, and the history says what
// released them.
func TestPlanningThenSchedule(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	before := f.cluster(t)
	if st := f.status(t); st.Trigger != intake.TriggerSchedule || st.Pending == nil || st.Pending.Steps != 0 {
		t.Fatalf("schedule, settled: trigger %q, pending %+v", st.Trigger, st.Pending)
	}

	must(t, f.st.SetTrigger(ctx, intake.TriggerPlanning))
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 5
	must(t, f.st.SetConstraints(ctx, c))
	_, err := f.store.SetState(serial(workers(before)[0]), machine.StateUnreachable)
	must(t, err)

	rev0 := f.clusterRev(t)
	var planRevs []int64
	for range 3 {
		must(t, d.runOnce(ctx, leader))
		if f.clusterRev(t) != rev0 {
			t.Fatal("a tick in planning wrote the cluster")
		}
		planRevs = append(planRevs, f.planRev(t))
	}
	if planRevs[0] == 0 || planRevs[1] <= planRevs[0] || planRevs[2] <= planRevs[1] {
		t.Errorf("in planning each tick stores the plan: sabakan/plan revisions %v", planRevs)
	}
	plan, err := planreport.ReadStored(ctx, f.st.Storage)
	must(t, err)
	_, tmplRev, _ := f.st.GetTemplate(ctx)
	if plan.Result != generator.PlanSettled || len(plan.Steps) < 2 || plan.Trigger != intake.TriggerPlanning ||
		!plan.ComputedAt.Equal(testNow) || plan.TemplateRevision != tmplRev || plan.ClusterRevision != rev0 {
		t.Fatalf("stored plan: %s, %d steps, trigger %s, computed at %s, template %d (want %d), cluster %d (want %d)",
			plan.Result, len(plan.Steps), plan.Trigger, plan.ComputedAt, plan.TemplateRevision, tmplRev, plan.ClusterRevision, rev0)
	}
	if w := plan.Steps[0].Wait; w == nil || w.Reason != "the trigger set to schedule (ckegenctl sabakan trigger schedule)" || !w.Until.IsZero() || plan.Steps[1].Wait != nil {
		t.Errorf("in planning the first step waits for the trigger, no other: %+v, %+v", plan.Steps[0].Wait, plan.Steps[1].Wait)
	}
	st := f.status(t)
	if st.Result != reason.Planning || st.Reason != "" || st.Trigger != intake.TriggerPlanning || st.Pending == nil ||
		st.Pending.Steps != len(plan.Steps) || st.Pending.NextOp != plan.Steps[0].Op || len(st.Pending.NextChanges) != len(plan.Steps[0].Changes) ||
		!strings.Contains(st.Message, "the trigger is planning") {
		t.Errorf("status in planning: %s %s %q, pending %+v", st.Result, st.Reason, st.Message, st.Pending)
	}
	if h, _ := f.st.History(ctx); len(h) != 1 {
		t.Errorf("planning recorded %d history entries after the first", len(h)-1)
	}
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_plan_pending_steps"); !slices.Equal(got, []string{"ckegen_plan_pending_steps " + strconv.Itoa(len(plan.Steps))}) {
		t.Errorf("metrics in planning: %q", got)
	}

	// Schedule: one step of the plan per tick, in order.
	must(t, f.st.SetTrigger(ctx, intake.TriggerSchedule))
	trig, _ := f.st.Get(ctx, storage.KeySabakanTrigger)
	trigRev := trig.ModRevision
	for i, step := range plan.Steps {
		rev := f.clusterRev(t)
		must(t, d.runOnce(ctx, leader))
		if f.clusterRev(t) == rev {
			t.Fatalf("step %d (%s): no write", i+1, step.Op)
		}
		h, _ := f.st.History(ctx)
		last := h[len(h)-1]
		if last.Op != step.Op || last.ChangeCount != len(step.Changes) {
			t.Errorf("step %d: applied %s (%d changes), the plan said %s (%d)", i+1, last.Op, last.ChangeCount, step.Op, len(step.Changes))
		}
		want := "the trigger set to schedule (sabakan/trigger revision " + strconv.FormatInt(trigRev, 10) + ")"
		if last.ReleasedBy != want {
			t.Errorf("step %d: released by %q, want %q", i+1, last.ReleasedBy, want)
		}
		if st := f.status(t); st.Result != reason.OK || st.Pending == nil || st.Pending.Steps != len(plan.Steps)-i-1 {
			t.Errorf("after step %d: %s, pending %+v", i+1, st.Result, st.Pending)
		}
	}
	rev := f.clusterRev(t)
	prev := f.planRev(t)
	must(t, d.runOnce(ctx, leader))
	must(t, d.runOnce(ctx, leader))
	if f.clusterRev(t) != rev {
		t.Error("the plan did not settle where it said")
	}
	if f.planRev(t) != prev {
		t.Error("in schedule, an unchanged plan was stored again")
	}
	if st := f.status(t); st.Result != reason.OK || st.Release != "" || st.Pending.Steps != 0 {
		t.Errorf("settled: %s, release %q, pending %+v", st.Result, st.Release, st.Pending)
	}
	if diff := cmp.Diff(plan.Cluster, f.cluster(t)); diff != "" {
		t.Errorf("the cluster applied is not the plan's (-plan +applied):\n%s", diff)
	}

	// Something new to do in schedule: the stored plan follows.
	c.MinimumWorkers = 6
	must(t, f.st.SetConstraints(ctx, c))
	must(t, d.runOnce(ctx, leader))
	if f.planRev(t) == prev {
		t.Error("in schedule, a changed plan was not stored")
	}
	if h, _ := f.st.History(ctx); h[len(h)-1].ReleasedBy != "" {
		t.Errorf("a change made as it came says it was released by %q", h[len(h)-1].ReleasedBy)
	}
}

// TestQuietTime: while a machine flaps (state changes through the
// compatible server's REST API), nothing is written and the status says
// how long is left and which machine moved; once it has been still for the
// quiet time, the change is written.
func TestQuietTime(t *testing.T) {
	clk := &testClock{t: testNow}
	f := newClockFixture(t, clk)
	leader := f.lead(t)
	d := f.step("d", func(c *testConfig) { c.Now = clk.now })
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	worker := workers(f.cluster(t))[2]
	rev0 := f.clusterRev(t)

	must(t, f.st.SetQuietTime(ctx, time.Minute))
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "unreachable")
	clk.add(10 * time.Second)
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	want := "the inventory has not been quiet for the quiet time 1m0s: 50s left; last moved: " + worker.Address + " (serial " + serial(worker) + ") UNREACHABLE for 10s"
	if st.Result != reason.Planning || st.Reason != reason.QuietTime || !strings.HasPrefix(st.Message, want) ||
		st.Quiet == nil || st.Quiet.Remaining != "50s" || st.Pending == nil || st.Pending.Steps == 0 {
		t.Errorf("held by quiet time: %s %s %q, quiet %+v, pending %+v\nwant the message to start with %q", st.Result, st.Reason, st.Message, st.Quiet, st.Pending, want)
	}
	// The stored plan's first step waits for the end of the quiet time.
	data, err := f.st.GetPlan(ctx)
	must(t, err)
	var plan planreport.Stored
	must(t, json.Unmarshal(data, &plan))
	if len(plan.Steps) == 0 || plan.Steps[0].Wait == nil || !plan.Steps[0].Wait.Until.Equal(testNow.Add(time.Minute)) || plan.Steps[0].Wait.Reason != "the quiet time (1m0s)" {
		t.Errorf("the stored plan's first step: %+v", plan.Steps)
	}
	if p := st.Pending; p == nil || p.NextWait != "the quiet time (1m0s)" || !p.NextUntil.Equal(testNow.Add(time.Minute)) {
		t.Errorf("the status's next step does not say it waits for the quiet time: %+v", p)
	}
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_quiet_time_remaining_seconds"); !slices.Equal(got, []string{"ckegen_quiet_time_remaining_seconds 50"}) {
		t.Errorf("metrics: %q", got)
	}

	// It flaps: back to HEALTHY, then UNREACHABLE again.
	clk.add(20 * time.Second)
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "healthy")
	clk.add(10 * time.Second)
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Reason != reason.QuietTime || st.Quiet.Remaining != "50s" {
		t.Errorf("after the flap back: %s %+v", st.Reason, st.Quiet)
	}
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "unreachable")
	clk.add(59 * time.Second)
	r := d.run(ctx, leader)
	must(t, r.Err)
	if st := f.status(t); st.Reason != reason.QuietTime || st.Quiet.Remaining != "1s" || f.clusterRev(t) != rev0 {
		t.Errorf("one second before the end: %s %+v, cluster written %v", st.Reason, st.Quiet, f.clusterRev(t) != rev0)
	}
	if r.Next <= 0 || r.Next > 2*time.Second {
		t.Errorf("the next tick is due in %s, not when the quiet time ends", r.Next)
	}

	clk.add(time.Second)
	must(t, d.runOnce(ctx, leader))
	if f.clusterRev(t) == rev0 {
		t.Fatal("nothing written after the quiet time")
	}
	st = f.status(t)
	h, _ := f.st.History(ctx)
	if st.Result != reason.OK || st.Reason != "" || h[len(h)-1].ReleasedBy != "the end of the quiet time 1m0s (the inventory unchanged since 2026-01-01T00:00:00Z)" {
		t.Errorf("released: %s %s, history %q", st.Result, st.Reason, h[len(h)-1].ReleasedBy)
	}
	for _, n := range f.cluster(t).Nodes {
		if n.Address == worker.Address && (len(n.Taints) != 1 || n.Taints[0].Value != "unreachable") {
			t.Errorf("the unreachable worker: taints %+v", n.Taints)
		}
	}
}

// TestQuietTimeAcrossFailover: the set of machines changed (one left the
// query's result, no state changed) and a change is held by the quiet
// time; the leader's session ends; the new leader's step counts the quiet
// time from when the old one first saw the set, not from its own first
// tick, and keeps the held plan without storing it again. The memory
// comes from its own key: the status is made unreadable first.
func TestQuietTimeAcrossFailover(t *testing.T) {
	clk := &testClock{t: testNow}
	f := newClockFixture(t, clk)
	ctx := context.Background()
	must(t, f.st.SetQueryVariables(ctx, []byte(`{"notHaving": {"labels": [{"name": "gone", "value": "yes"}], "roles": ["boot"]}}`)))
	now := func(c *testConfig) { c.Now = clk.now }
	leader1, resign := f.leadSession(t, "d1")
	d1 := f.step("d1", now)
	must(t, d1.runOnce(ctx, leader1))
	in := map[string]bool{}
	for _, n := range f.cluster(t).Nodes {
		in[serial(n)] = true
	}
	rev0 := f.clusterRev(t)

	// Five minutes later, the set changes.
	clk.add(5 * time.Minute)
	t1 := clk.now()
	must(t, f.st.SetQuietTime(ctx, time.Minute))
	var unused string
	for _, m := range f.store.Search(nil, nil) {
		if !in[m.Spec.Serial] && m.Spec.Role != "boot" {
			unused = m.Spec.Serial
			break
		}
	}
	f.rest(t, http.MethodPut, "/api/v1/labels/"+unused+"/gone", "yes")
	must(t, d1.runOnce(ctx, leader1))
	if st := f.status(t); st.Reason != reason.QuietTime || st.Quiet == nil || !st.Quiet.InventorySince.Equal(t1) ||
		!strings.Contains(st.Message, "machines joined or left the query's result 0s ago") {
		t.Fatalf("d1 after the set changed: %s %q %+v", st.Reason, st.Message, st.Quiet)
	}
	// Something to write, held by the quiet time.
	c, _ := f.st.GetConstraints(ctx)
	c.MinimumWorkers = 6
	must(t, f.st.SetConstraints(ctx, c))
	clk.add(time.Second)
	must(t, d1.runOnce(ctx, leader1))
	if st := f.status(t); st.Reason != reason.QuietTime || st.Pending == nil || st.Pending.NextOp != generator.OpIncreaseWorker {
		t.Fatalf("d1 holding the new worker: %s %+v", st.Reason, st.Pending)
	}
	planRev := f.planRev(t)

	// d1's session ends; d2 leads. The status cannot be read back: the
	// memory is what carries the count over.
	resign()
	leader2, _ := f.leadSession(t, "d2")
	must(t, f.st.Put(ctx, storage.KeySabakanStatus, []byte("not a status")))
	d2 := f.step("d2", now)
	clk.add(49 * time.Second)
	must(t, d2.runOnce(ctx, leader2))
	if st := f.status(t); st.Leader != "d2" || st.Reason != reason.QuietTime || st.Quiet.Remaining != "10s" || !st.Quiet.InventorySince.Equal(t1) || f.clusterRev(t) != rev0 {
		t.Fatalf("d2 50 s later: %s %s %q %+v, cluster written %v", st.Leader, st.Reason, st.Message, st.Quiet, f.clusterRev(t) != rev0)
	}
	clk.add(10 * time.Second)
	must(t, d2.runOnce(ctx, leader2))
	if f.clusterRev(t) == rev0 {
		t.Fatal("d2 wrote nothing once the set had been still for a minute")
	}
	if n := len(workers(f.cluster(t))); n != 6 {
		t.Errorf("%d workers after the write, want 6", n)
	}
	h, _ := f.st.History(ctx)
	if got := h[len(h)-1].ReleasedBy; got != "the end of the quiet time 1m0s (the inventory unchanged since "+t1.Format(time.RFC3339)+")" {
		t.Errorf("released by %q", got)
	}
	if f.planRev(t) == planRev {
		t.Error("the plan was not stored again after the write")
	}
}

// TestMemoryKeptForTheNextLeader: each tick stores the memory with the
// status; a new leadership of the same step reads it back; a memory that
// does not parse is left unused, and the tick goes on.
func TestMemoryKeptForTheNextLeader(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader1, resign := f.leadSession(t, "d1")
	d := f.step("d", nil)
	must(t, d.runOnce(ctx, leader1))
	must(t, d.runOnce(ctx, leader1))
	m, err := liveview.ReadMemory(ctx, f.st.Storage)
	must(t, err)
	if m.Inventory.Digest == "" || !m.Inventory.Since.Equal(testNow) || m.PlanDigest == "" || m.Trigger != intake.TriggerSchedule || m.Last.LastOp != "new" {
		t.Fatalf("stored memory %+v", m)
	}
	if d.memory.PlanDigest != m.PlanDigest {
		t.Errorf("the step's memory %+v differs from the stored one", d.memory)
	}
	planRev := f.planRev(t)

	// A new leadership of the same step: the memory comes from etcd, so
	// the plan it stored is not stored again.
	resign()
	leader2, resign2 := f.leadSession(t, "d")
	d.memory = decision.Memory{}
	must(t, d.runOnce(ctx, leader2))
	if f.planRev(t) != planRev || d.memory.PlanDigest != m.PlanDigest {
		t.Errorf("after a new leadership the settled plan was stored again (%d, was %d), memory %+v", f.planRev(t), planRev, d.memory)
	}
	if st := f.status(t); st.LastOp != "new" {
		t.Errorf("the last op is not carried over: %+v", st)
	}

	// A memory that does not parse: the tick goes on from nothing, and
	// stores the plan again.
	resign2()
	leader3, _ := f.leadSession(t, "d")
	must(t, f.st.Put(ctx, storage.KeyCKEGenMemory, []byte("{")))
	if err := d.runOnce(ctx, leader3); err != nil {
		t.Fatalf("a tick with an unreadable memory: %v", err)
	}
	if f.planRev(t) == planRev {
		t.Error("an unreadable memory, yet the plan was not stored again")
	}
}

// TestBreaker: over max-unhealthy, the tick writes the state taints and no
// membership change, and fails with TOO_MANY_UNHEALTHY naming the count and
// the limit; with a higher limit, membership changes resume.
func TestBreaker(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	before := f.cluster(t)
	must(t, f.st.SetMaxUnhealthy(ctx, intake.MaxUnhealthy{Value: 1}))
	ws := workers(before)
	for _, w := range ws[:2] {
		_, err := f.store.SetState(serial(w), machine.StateUnreachable)
		must(t, err)
	}

	err := d.runOnce(ctx, leader)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.TooManyUnhealthy {
		t.Fatalf("error %v, want %s", err, reason.TooManyUnhealthy)
	}
	after := f.cluster(t)
	if len(after.Nodes) != len(before.Nodes) {
		t.Fatalf("membership changed: %d nodes, had %d", len(after.Nodes), len(before.Nodes))
	}
	for i, n := range after.Nodes {
		tainted := len(n.Taints) == 1 && n.Taints[0].Value == "unreachable"
		if n.Address != before.Nodes[i].Address || n.ControlPlane != before.Nodes[i].ControlPlane || tainted != (n.Address == ws[0].Address || n.Address == ws[1].Address) {
			t.Errorf("node %d: %s cp=%v taints %+v; was %s cp=%v", i, n.Address, n.ControlPlane, n.Taints, before.Nodes[i].Address, before.Nodes[i].ControlPlane)
		}
	}
	st := f.status(t)
	want := "2 of 8 nodes are unhealthy (" + ws[0].Address + ", " + ws[1].Address + "), more than max-unhealthy 1 allows (1): no node is added, removed, promoted or demoted until fewer are; state taints written (2 changes)"
	// The plan from the tainted cluster is the breaker's hold: the next
	// tick holds, as the one below does, and plans no new worker.
	if st.Result != reason.Failing || st.Reason != reason.TooManyUnhealthy || st.Message != want || st.LastOp != generator.OpTaintNodes ||
		st.Unhealthy == nil || st.Unhealthy.Count != 2 || st.Unhealthy.Limit != 1 || st.Pending == nil || st.Pending.Steps != 0 ||
		st.Pending.Result != generator.PlanHeld || st.Pending.Reason != reason.TooManyUnhealthy || !strings.HasSuffix(st.Pending.Error, world.BreakerHolds) {
		t.Errorf("status: %s %s %q (last op %s), unhealthy %+v, pending %+v\nwant %q", st.Result, st.Reason, st.Message, st.LastOp, st.Unhealthy, st.Pending, want)
	}
	if h, _ := f.st.History(ctx); h[len(h)-1].Op != generator.OpTaintNodes {
		t.Errorf("history: %s", h[len(h)-1].Op)
	}
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_integration_failing"); !slices.Equal(got, []string{`ckegen_integration_failing{reason="TOO_MANY_UNHEALTHY"} 1`}) {
		t.Errorf("metrics %q, want the breaker's failure TOO_MANY_UNHEALTHY", got)
	}

	// Still over the limit: nothing more to write.
	rev := f.clusterRev(t)
	if err := d.runOnce(ctx, leader); !errors.As(err, &te) || te.Reason != reason.TooManyUnhealthy || f.clusterRev(t) != rev {
		t.Errorf("second tick over the limit: %v, cluster written %v", err, f.clusterRev(t) != rev)
	}
	if st := f.status(t); !strings.HasSuffix(st.Message, "until fewer are") || st.ConsecutiveFailures != 2 {
		t.Errorf("second tick: %q, %d failures", st.Message, st.ConsecutiveFailures)
	}

	// In planning, the count is the reason, and nothing is written.
	must(t, f.st.SetTrigger(ctx, intake.TriggerPlanning))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Result != reason.Planning || st.Reason != reason.TooManyUnhealthy || f.clusterRev(t) != rev ||
		!strings.Contains(st.Message, "the trigger is planning") || !strings.Contains(st.Message, "also 2 of 8 nodes are unhealthy") {
		t.Errorf("planning over the limit: %s %s %q, cluster written %v", st.Result, st.Reason, st.Message, f.clusterRev(t) != rev)
	}
	must(t, f.st.SetTrigger(ctx, intake.TriggerSchedule))

	// A limit of 25% of 8 nodes is 2: membership changes resume.
	must(t, f.st.SetMaxUnhealthy(ctx, intake.MaxUnhealthy{Value: 25, Percent: true}))
	must(t, d.runOnce(ctx, leader))
	if n := len(f.cluster(t).Nodes); n != len(before.Nodes)+2 {
		t.Errorf("%d nodes after the limit was raised, want %d", n, len(before.Nodes)+2)
	}
	if st := f.status(t); st.Result != reason.OK || st.Unhealthy.Limit != 2 {
		t.Errorf("status after the limit was raised: %s %+v", st.Result, st.Unhealthy)
	}
	if got := series(scrape(t, d), "ckegen_integration_failing"); len(got) != 0 {
		t.Errorf("metrics %q after a successful tick, want no ckegen_integration_failing", got)
	}

	// Disabled: the plan's series goes, as CKE's do.
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_plan_pending_steps"); len(got) != 1 {
		t.Errorf("enabled: %q", got)
	}
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if got := series(scrape(t, d), "ckegen_"); slices.ContainsFunc(got, func(l string) bool {
		return strings.HasPrefix(l, "ckegen_plan") || strings.HasPrefix(l, "ckegen_quiet")
	}) {
		t.Errorf("disabled: %q", got)
	}
}

// TestPlanningFailsWithoutAPlan: a held tick whose plan cannot be computed
// fails as the decision would have.
func TestPlanningFailsWithoutAPlan(t *testing.T) {
	f := newFixture(t)
	must(t, f.st.SetTrigger(context.Background(), intake.TriggerPlanning))
	err := f.step("d", func(c *testConfig) { c.RetireWait = storage.Duration(-time.Second) }).runOnce(context.Background(), f.lead(t))
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.GenerationError || !strings.Contains(err.Error(), "retire wait: must not be negative") {
		t.Fatalf("error %v, want %s", err, reason.GenerationError)
	}
	if st := f.status(t); st.Result != reason.Failing || f.planRev(t) != 0 || f.cluster(t) != nil {
		t.Errorf("status %s, plan stored %v, cluster %v", st.Result, f.planRev(t) != 0, f.cluster(t) != nil)
	}
}

// TestChangeManagementReasons: a bad stored setting is a failed tick with
// its reason, which writes nothing.
func TestChangeManagementReasons(t *testing.T) {
	for _, c := range []struct {
		key, value, reason, want string
	}{
		{storage.KeySabakanTrigger, "paused", reason.InvalidTrigger, `got "paused" (set it with ckegenctl sabakan trigger)`},
		{storage.KeySabakanQuietTime, "-1s", reason.InvalidQuietTime, "must not be negative"},
		{storage.KeySabakanMaxUnhealthy, "140%", reason.InvalidMaxUnhealthy, "at most 100%"},
	} {
		t.Run(c.reason, func(t *testing.T) {
			f := newFixture(t)
			_, err := f.st.Client.Put(context.Background(), f.st.Key(c.key), c.value)
			must(t, err)
			err = f.step("d", nil).runOnce(context.Background(), f.lead(t))
			var te *reason.Error
			if !errors.As(err, &te) || te.Reason != c.reason {
				t.Fatalf("error %v, want %s", err, c.reason)
			}
			if st := f.status(t); st.Result != reason.Failing || st.Reason != c.reason || !strings.Contains(st.Message, c.want) {
				t.Errorf("status %s %s %q, want %q", st.Result, st.Reason, st.Message, c.want)
			}
			if f.cluster(t) != nil || f.planRev(t) != 0 {
				t.Error("a failed tick wrote the cluster or the plan")
			}
		})
	}
}

// TestChangeStatusKept: a tick that fails before it queries sabakan keeps
// the quiet state and the pending plan of the last one.
func TestChangeStatusKept(t *testing.T) {
	f := newFixture(t)
	leader := f.lead(t)
	d := f.step("d", nil)
	ctx := context.Background()
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	if st.Quiet == nil || st.Pending == nil {
		t.Fatalf("first status: %+v %+v", st.Quiet, st.Pending)
	}
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	if err := d.runOnce(ctx, leader); err == nil {
		t.Fatal("a tick without sabakan succeeded")
	}
	after := f.status(t)
	if diff := cmp.Diff(st.ChangeStatus, after.ChangeStatus); diff != "" {
		t.Errorf("a failed tick changed the change status (-before +after):\n%s", diff)
	}
	// A tick that fails to decide and to plan keeps the last plan too.
	must(t, f.st.SetURL(ctx, f.url))
	bad := f.step("d", func(c *testConfig) { c.RetireWait = storage.Duration(-time.Second) })
	if err := bad.runOnce(ctx, leader); err == nil {
		t.Fatal("a tick with a negative retire wait succeeded")
	}
	if got := f.status(t); got.Reason != reason.GenerationError || !cmp.Equal(got.Pending, st.Pending) {
		t.Errorf("after a failed decision: %s, pending %+v, want %+v", got.Reason, got.Pending, st.Pending)
	}
	v, err := f.st.Get(ctx, storage.KeyCKEGenMemory)
	must(t, err)
	m, err := liveview.ReadMemory(ctx, f.st.Storage)
	if err != nil || m.Inventory.Digest == "" || !m.Inventory.Since.Equal(st.Quiet.InventorySince) {
		t.Errorf("the memory after the failed ticks: %s (%v)", v.Data, err)
	}
}

// TestQuietTimePlanStartsAtItsEnd: the plan of a tick the quiet time
// holds starts at its end, on the world's clock: a worker RETIRED 10 s
// ago, with a retire wait of 30 s and the quiet time ending in 50 s, is
// past the retire wait by the time the leader writes, so the plan's
// first step, at the quiet time's end, removes it, and no later step
// waits for the retire wait.
func TestQuietTimePlanStartsAtItsEnd(t *testing.T) {
	clk := &testClock{t: testNow}
	f := newClockFixture(t, clk)
	ctx := context.Background()
	must(t, f.st.SetQueryVariables(ctx, []byte(`{"notHaving":{"roles":["boot"]}}`))) // RETIRED machines stay in the answer
	leader := f.lead(t)
	d := f.step("d", func(c *testConfig) { c.Now = clk.now; c.RetireWait = storage.Duration(30 * time.Second) })
	must(t, d.runOnce(ctx, leader))
	worker := workers(f.cluster(t))[0]
	must(t, f.st.SetQuietTime(ctx, time.Minute))
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "retiring")
	f.rest(t, http.MethodPut, "/api/v1/state/"+serial(worker), "retired")
	clk.add(10 * time.Second)
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); st.Reason != reason.QuietTime || st.Quiet == nil || st.Quiet.Remaining != "50s" {
		t.Fatalf("held by the quiet time: %s %s %+v", st.Result, st.Reason, st.Quiet)
	}
	plan, err := planreport.ReadStored(ctx, f.st.Storage)
	must(t, err)
	if len(plan.Steps) == 0 || plan.Steps[0].Wait == nil || !plan.Steps[0].Wait.Until.Equal(testNow.Add(time.Minute)) {
		t.Fatalf("the plan's first step does not wait for the quiet time's end: %+v", plan.Steps)
	}
	removed := false
	for i, s := range plan.Steps {
		if i > 0 && s.Wait != nil {
			t.Errorf("step %d waits (%+v): the retire wait ends before the quiet time", i+1, s.Wait)
		}
		for _, c := range s.Changes {
			removed = removed || (c.Action == generator.ActionRemoveRetiredWorker && c.Address == worker.Address)
		}
	}
	if !removed {
		t.Errorf("the plan does not remove the RETIRED worker %s: %+v", worker.Address, plan.Steps)
	}
}
