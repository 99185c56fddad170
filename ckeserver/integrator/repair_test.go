package integrator

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
)

// queuedPairs are the address and operation of each entry of CKE's repair
// queue, in the queue's order.
func queuedPairs(t *testing.T, f *fixture) []string {
	t.Helper()
	var out []string
	for _, e := range repairEntries(t, f.cke) {
		out = append(out, e.Address+" "+e.Operation)
	}
	return out
}

// TestAutoRepairQueuesOnce is the one deliberate difference from CKE's
// own auto-repair (docs/inside-cke.md): while no API server answers, CKE's
// cluster status carries no repair queue, and CKE v1.35.4's integrator,
// called at every loop of its server, registers every non-healthy machine
// again each time; ckegen's registers each once, the entries CKE's
// registers at its first call, and then only machines not queued yet.
// While an API server answers, the status's queue and the stored one are
// the same entries, counted once against maximum-repair-queue-entries.
func TestAutoRepairQueuesOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5, MaximumRepairQueueEntries: ptr(3)})
	must(t, f.ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
	}
	set := func(addr string, s machine.State) {
		t.Helper()
		_, err := f.site.Store.SetState(serialOf(t, f, addr), s)
		must(t, err)
	}
	set(all[1], machine.StateUnhealthy)
	set(all[4], machine.StateUnreachable)
	// CKE's status without an API server: node statuses, no Kubernetes,
	// no repair queue.
	status := clusterStatus(all, nil)
	status.Kubernetes = cke.KubernetesClusterStatus{}
	must(t, f.st.SetDisabled(ctx, true)) // the repairers alone

	queue := cke.Storage{Client: f.cke}
	clear := func() {
		t.Helper()
		for _, e := range repairEntries(t, f.cke) {
			must(t, queue.DeleteRepairsEntry(ctx, f.leader, e.Index))
		}
	}
	ckes := ckesabakan.NewIntegrator(f.cke)
	must(t, ckes.Do(ctx, f.leader, status))
	first := queuedPairs(t, f)
	must(t, ckes.Do(ctx, f.leader, status))
	if want := []string{all[1] + " unhealthy", all[4] + " unreachable"}; !slices.Equal(sorted(first), sorted(want)) ||
		!slices.Equal(queuedPairs(t, f), append(slices.Clone(first), first...)) {
		t.Fatalf("CKE's integrator registered %v, then %v; want %v, then the same again: the test's inputs are not what it means", first, queuedPairs(t, f), want)
	}
	clear()

	must(t, f.ig.Do(ctx, f.leader, status))
	if got := queuedPairs(t, f); !slices.Equal(got, first) {
		t.Errorf("ckegen's first call registered %v, want CKE's %v", got, first)
	}
	must(t, f.ig.Do(ctx, f.leader, status))
	if got := queuedPairs(t, f); !slices.Equal(got, first) {
		t.Errorf("ckegen's second call: the queue is %v, want %v: an entry already queued was registered again", got, first)
	}
	// A machine not queued yet is queued, alone.
	set(all[6], machine.StateUnhealthy)
	must(t, f.ig.Do(ctx, f.leader, status))
	third := append(slices.Clone(first), all[6]+" unhealthy")
	if got := queuedPairs(t, f); !slices.Equal(got, third) {
		t.Errorf("a third machine: the queue is %v, want %v", got, third)
	}

	// An API server answers: the status's queue is the stored one. Its
	// entry counts once: 1 + 2 new machines is within the limit, 3;
	// counted twice, 2 + 2 would refuse both.
	clear()
	set(all[4], machine.StateHealthy)
	set(all[6], machine.StateHealthy)
	must(t, f.ig.Do(ctx, f.leader, status))
	stored := repairEntries(t, f.cke)
	if len(stored) != 1 {
		t.Fatalf("the queue is %v, want %s alone", queuedPairs(t, f), all[1])
	}
	withAPI := clusterStatus(all, nil)
	withAPI.RepairQueue.Entries = stored
	set(all[5], machine.StateUnhealthy)
	set(all[7], machine.StateUnhealthy)
	must(t, f.ig.Do(ctx, f.leader, withAPI))
	if got, want := queuedPairs(t, f), []string{all[1] + " unhealthy", all[5] + " unhealthy", all[7] + " unhealthy"}; !slices.Equal(got, want) {
		t.Errorf("with an API server: the queue is %v, want %v", got, want)
	}
}

// TestQueued: the status's entries, then the stored ones it did not see,
// each index once; an entry of the status deleted since stays.
func TestQueued(t *testing.T) {
	e := func(i int64, addr string) *cke.RepairQueueEntry {
		return &cke.RepairQueueEntry{Index: i, Address: addr}
	}
	pairs := func(es []*cke.RepairQueueEntry) []string {
		var out []string
		for _, x := range es {
			out = append(out, x.Address)
		}
		return out
	}
	for _, c := range []struct {
		seen, stored []*cke.RepairQueueEntry
		want         []string
	}{
		{nil, nil, nil},
		{nil, []*cke.RepairQueueEntry{e(0, "a"), e(1, "b")}, []string{"a", "b"}},
		{[]*cke.RepairQueueEntry{e(0, "a")}, nil, []string{"a"}},
		{[]*cke.RepairQueueEntry{e(0, "a"), e(1, "b")}, []*cke.RepairQueueEntry{e(1, "b"), e(2, "c")}, []string{"a", "b", "c"}},
		{[]*cke.RepairQueueEntry{e(3, "a")}, []*cke.RepairQueueEntry{e(3, "a")}, []string{"a"}},
	} {
		if got := pairs(queued(c.seen, c.stored)); !slices.Equal(got, c.want) {
			t.Errorf("queued(%v, %v) = %v, want %v", pairs(c.seen), pairs(c.stored), got, c.want)
		}
	}
}

// TestRepairQueueFull: entries left in CKE's repair queue by CKE's own
// server (a machine that is HEALTHY again, and its duplicate) fill
// maximum-repair-queue-entries; two machines that turn UNHEALTHY then
// get no entry, from CKE's repairer as from ckegen's. ckegen's status
// says which machines wait and why, ckegen_auto_repair_waiting_machines
// counts them, and the log says it once. Once the stale entries are
// deleted, CKE's repairer queues exactly the machines the status named,
// and the status and the gauge say nothing waits.
func TestRepairQueueFull(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5, MaximumRepairQueueEntries: ptr(4)})
	var logs strings.Builder
	reg := prometheus.NewRegistry()
	ig, err := New(Config{Client: f.cke, Registerer: reg, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(&logs, nil))}})
	must(t, err)
	must(t, ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
	}
	set := func(s machine.State, addrs ...string) {
		t.Helper()
		for _, a := range addrs {
			_, err := f.site.Store.SetState(serialOf(t, f, a), s)
			must(t, err)
		}
	}
	// CKE's own server, without an API server, queues each of two
	// machines twice; they turn HEALTHY again, and two others UNHEALTHY.
	status := clusterStatus(all, nil)
	status.Kubernetes = cke.KubernetesClusterStatus{}
	must(t, f.st.SetDisabled(ctx, true)) // the repairers alone
	set(machine.StateUnhealthy, all[1], all[2])
	ckes := ckesabakan.NewIntegrator(f.cke)
	must(t, ckes.Do(ctx, f.leader, status))
	must(t, ckes.Do(ctx, f.leader, status))
	set(machine.StateHealthy, all[1], all[2])
	set(machine.StateUnhealthy, all[3], all[6])
	stale := queuedPairs(t, f)
	if want := []string{all[1] + " unhealthy", all[2] + " unhealthy"}; len(stale) != 4 || !slices.Equal(sorted(stale), sorted(append(want, want...))) {
		t.Fatalf("CKE's integrator left %v, want %v twice: the test's inputs are not what it means", stale, want)
	}
	// With an API server, CKE's integrator sees the queue full: it
	// queues nothing.
	withAPI := clusterStatus(all, nil)
	withAPI.RepairQueue.Entries = repairEntries(t, f.cke)
	must(t, ckes.Do(ctx, f.leader, withAPI))
	if got := queuedPairs(t, f); !slices.Equal(got, stale) {
		t.Fatalf("CKE's integrator queued %v with a full queue: the test's inputs are not what it means", got)
	}

	waitingGauge := func() float64 {
		t.Helper()
		mfs, err := reg.Gather()
		must(t, err)
		for _, mf := range mfs {
			if mf.GetName() == "ckegen_auto_repair_waiting_machines" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no ckegen_auto_repair_waiting_machines")
		return 0
	}
	for range 2 {
		must(t, ig.Do(ctx, f.leader, status))
	}
	if got := queuedPairs(t, f); !slices.Equal(got, stale) {
		t.Errorf("ckegen's integrator queued %v with a full queue, want %v", got, stale)
	}
	st := f.status(t)
	r := st.Repair
	var waiting []string
	if r != nil {
		for _, w := range r.Waiting {
			waiting = append(waiting, w.Address+" "+w.State)
		}
	}
	if want := []string{all[3] + " UNHEALTHY", all[6] + " UNHEALTHY"}; r == nil || r.Entries != 4 || r.Maximum != 4 || r.Stale != 2 || r.Repeated != 2 ||
		r.WaitingCount != 2 || !slices.Equal(sorted(waiting), sorted(want)) {
		t.Fatalf("the status's repair: %+v, want 4 of 4 entries, 2 stale, 2 repeated, %v waiting", r, want)
	}
	words := "auto-repair: the repair queue holds 4 entries (maximum-repair-queue-entries: 4): 2 second entries for machines queued already," +
		" 2 entries for machines sabakan no longer reports non-healthy; 2 machines wait for an entry"
	if !strings.HasPrefix(r.Message, words) || !strings.Contains(r.Message, all[3]+" (UNHEALTHY)") || !strings.Contains(r.Message, "ckecli repair-queue delete INDEX") ||
		!slices.Contains(st.Warnings, r.Message) {
		t.Errorf("the status says %q (warnings %q), want it to begin %q, name the machines and ckecli's command, and be a warning", r.Message, st.Warnings, words)
	}
	if got := waitingGauge(); got != 2 {
		t.Errorf("ckegen_auto_repair_waiting_machines %v, want 2", got)
	}
	if n := strings.Count(logs.String(), `msg="tick warning" warning="auto-repair: the repair queue holds 4 entries`); n != 1 {
		t.Errorf("the full queue logged %d times over 2 calls, want once:\n%s", n, logs.String())
	}

	// The stale entries dequeued (ckecli repair-queue delete INDEX marks
	// them, CKE's server dequeues them: TestRepairAdviceWithCKECLI):
	// exactly the machines the status named are queued.
	queue := cke.Storage{Client: f.cke}
	for _, e := range repairEntries(t, f.cke) {
		must(t, queue.DeleteRepairsEntry(ctx, f.leader, e.Index))
	}
	must(t, ig.Do(ctx, f.leader, status))
	if got, want := queuedPairs(t, f), []string{all[3] + " unhealthy", all[6] + " unhealthy"}; !slices.Equal(sorted(got), sorted(want)) {
		t.Errorf("with room in the queue, the queue is %v, want the machines the status named, %v", got, want)
	}
	if st := f.status(t); st.Repair != nil || slices.Contains(st.Warnings, r.Message) {
		t.Errorf("with room in the queue, the status still says %+v (warnings %q)", st.Repair, st.Warnings)
	}
	if got := waitingGauge(); got != 0 {
		t.Errorf("ckegen_auto_repair_waiting_machines %v with room in the queue, want 0", got)
	}
	if n := strings.Count(logs.String(), `msg="tick warning cleared" warning="auto-repair: the repair queue holds 4 entries`); n != 1 {
		t.Errorf("the end of the full queue logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestSabakanDownOneLine: inside CKE's server, a call while sabakan does
// not answer logs one line: the tick's, naming the reason and the URL in
// plain words; auto-repair, which finds sabakan down too, adds none.
func TestSabakanDownOneLine(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5})
	var logs strings.Builder
	ig, err := New(Config{Client: f.cke, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(&logs, nil))}})
	must(t, err)
	must(t, ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
	}
	const url = "http://127.0.0.1:1/graphql"
	must(t, f.st.SetURL(ctx, url))
	for range 2 {
		before := logs.Len()
		must(t, ig.Do(ctx, f.leader, clusterStatus(all, nil)))
		lines := strings.Split(strings.TrimSpace(logs.String()[before:]), "\n")
		want := `reason=SABAKAN_UNREACHABLE error="sabakan at ` + url + `: connection refused"`
		if len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("a call with sabakan down logged %d lines, want one with %s:\n%s", len(lines), want, strings.Join(lines, "\n"))
		}
	}
}
