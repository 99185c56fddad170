package integrator

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
	"github.com/cybozu-go/etcdutil"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

var testNow = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testTemplate has CKE's option defaults, a spare-node taint key, and a
// control plane that tolerates nothing but its own.
const testTemplate = `{"name":"t","nodes":[{"user":"u","control_plane":true},{"user":"u"}],"service_subnet":"10.68.0.0/16",` +
	`"sabakan":{"spare_node_taint_key":"example.com/spare"},` +
	`"options":{"kubelet":{"cri_endpoint":"/run/containerd/containerd.sock"},"etcd":{"volume_name":"etcd-cke"}}}`

// fixture is a site (an etcd, the compatible sabakan with 4 racks of 5
// machines, the template, URL and constraints stored) and the integrator
// on CKE's client to that etcd, namespaced by CKE's prefix as CKE's
// server has it.
type fixture struct {
	site   *sitetest.Site
	st     sitetest.Store
	cke    *clientv3.Client
	ig     *Integrator
	leader string
}

func newFixture(t *testing.T, c constraints.Constraints) *fixture {
	t.Helper()
	s := sitetest.Start(t, sitetest.Options{
		Now:        testNow,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.UnhealthyPct = 4, 5, 0 },
		Template:   testTemplate, StoreURL: true, Constraints: &c,
	})
	cfg := cke.NewEtcdConfig()
	cfg.Endpoints = []string{s.EtcdURL}
	cli, err := etcdutil.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	ig, err := New(Config{Client: cli, Config: decision.Config{Name: "cke-1", Sabakan: sabakan.Options{Timeout: 5 * time.Second, Retries: -1},
		Now: func() time.Time { return testNow }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(5))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	e := concurrency.NewElection(sess, "leader/")
	if err := e.Campaign(context.Background(), "cke-1"); err != nil {
		t.Fatal(err)
	}
	return &fixture{site: s, st: sitetest.StoreOf(s.Storage), cke: cli, ig: ig, leader: e.Key()}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f *fixture) status(t *testing.T) storage.Status {
	t.Helper()
	st, err := f.st.GetStatus(context.Background())
	must(t, err)
	return st
}

// node is a Kubernetes Node of a CKE cluster: named after its address.
func node(addr string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: addr}, Spec: corev1.NodeSpec{Taints: taints}}
}

// clusterStatus is what CKE's server would give Do: a ready API server
// and a Node per node of the cluster, with the taints of taints.
func clusterStatus(addrs []string, taints map[string][]corev1.Taint) *cke.ClusterStatus {
	st := &cke.ClusterStatus{NodeStatuses: map[string]*cke.NodeStatus{}}
	st.Kubernetes.IsControlPlaneReady = true
	for _, a := range addrs {
		st.Kubernetes.Nodes = append(st.Kubernetes.Nodes, node(a, taints[a]...))
		st.NodeStatuses[a] = &cke.NodeStatus{}
	}
	return st
}

// TestDoSeesKubernetes: Do with a synthesized cluster status (a real one
// needs Vault and real nodes). A control plane whose Node carries a taint
// it does not tolerate is replaced, by the worker whose Node carries the
// template's spare-node taint; the status says the Nodes were read. The
// same taint in a status whose API server is not ready, or with no status,
// is not known: nothing is replaced, and the status says the Nodes were
// not read.
func TestDoSeesKubernetes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, *sitetest.Counts(3, 5))
	must(t, f.ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var cps, workers, all []string
	for _, n := range c.Nodes {
		all = append(all, n.Address)
		if n.ControlPlane {
			cps = append(cps, n.Address)
		} else {
			workers = append(workers, n.Address)
		}
	}
	if len(cps) != 3 || len(workers) != 5 {
		t.Fatalf("first cluster: control planes %v, workers %v", cps, workers)
	}
	// Not known, and said so: no Node read, no taint invented.
	if st := f.status(t); st.Mode != decision.ModeInsideCKE || st.Kubernetes == nil || st.Kubernetes.Read || st.Kubernetes.Source != SourceStatus ||
		!strings.Contains(st.Kubernetes.Why, "no cluster status") {
		t.Errorf("without a cluster status: mode %q, kubernetes %+v", st.Mode, st.Kubernetes)
	}
	bad, spare := cps[1], workers[3]
	taints := map[string][]corev1.Taint{
		bad:   {{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}},
		spare: {{Key: "example.com/spare", Effect: corev1.TaintEffectNoSchedule}},
	}

	// Not known: the API server is not ready, or no status.
	unready := clusterStatus(all, taints)
	unready.Kubernetes.IsControlPlaneReady = false
	rev, _ := f.st.Get(ctx, storage.KeyCluster)
	for _, st := range []*cke.ClusterStatus{unready, nil} {
		must(t, f.ig.Do(ctx, f.leader, st))
		if now, _ := f.st.Get(ctx, storage.KeyCluster); now.ModRevision != rev.ModRevision {
			t.Fatalf("a taint not known replaced a control plane")
		}
		if st := f.status(t); st.Kubernetes == nil || st.Kubernetes.Read || st.Kubernetes.Nodes != 0 || st.Kubernetes.Why == "" {
			t.Errorf("an API server not ready counted as read: %+v", st.Kubernetes)
		}
	}

	must(t, f.ig.Do(ctx, f.leader, clusterStatus(all, taints)))
	st := f.status(t)
	if st.Kubernetes == nil || !st.Kubernetes.Read || st.Kubernetes.Nodes != len(all) || st.Kubernetes.Intolerable != 1 {
		t.Errorf("kubernetes in the status: %+v", st.Kubernetes)
	}
	if st.LastOp != "replace control plane" {
		t.Fatalf("op %q (%s %s), want the tainted control plane replaced", st.LastOp, st.Reason, st.Message)
	}
	c, _, err = f.st.GetCluster(ctx)
	must(t, err)
	for _, n := range c.Nodes {
		switch n.Address {
		case bad:
			if n.ControlPlane {
				t.Errorf("%s, tainted, is still a control plane", bad)
			}
		case spare:
			if !n.ControlPlane {
				t.Errorf("%s, the spare worker, was not promoted", spare)
			}
		}
	}
}

// TestInitRegeneratesOnly: Init re-renders the cluster when the template
// changed since it was built, and does nothing else.
func TestInitRegeneratesOnly(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, *sitetest.Counts(3, 5))
	must(t, f.ig.Init(ctx, f.leader))
	if _, err := f.st.Get(ctx, storage.KeyCluster); err == nil {
		t.Fatal("Init generated a cluster")
	}
	must(t, f.ig.Do(ctx, f.leader, nil))
	rev, _ := f.st.Get(ctx, storage.KeyCluster)
	must(t, f.ig.Init(ctx, f.leader))
	if now, _ := f.st.Get(ctx, storage.KeyCluster); now.ModRevision != rev.ModRevision {
		t.Fatal("Init wrote the cluster although the template is unchanged")
	}
	must(t, f.st.SetTemplate(ctx, []byte(strings.Replace(testTemplate, `{"user":"u"}]`, `{"user":"u","labels":{"example.com/x":"y"}}]`, 1))))
	must(t, f.ig.Init(ctx, f.leader))
	if st := f.status(t); st.LastOp != "regenerate" {
		t.Errorf("after a template change: op %q, want regenerate", st.LastOp)
	}
}

// TestFailuresAreTheStatus: sabakan down, an invalid setting: the status
// says why and Do returns nil (an error would end CKE's server); a tick
// that lost leadership is the one error returned.
func TestFailuresAreTheStatus(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, *sitetest.Counts(3, 5))
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	if err := f.ig.Do(ctx, f.leader, nil); err != nil {
		t.Fatalf("Do with sabakan down: %v", err)
	}
	if st := f.status(t); st.Reason != reason.SabakanUnreachable || st.Result != reason.Failing {
		t.Errorf("status %s %s", st.Result, st.Reason)
	}
	must(t, f.st.SetTemplate(ctx, []byte(`{"name":""}`)))
	if err := f.ig.Do(ctx, f.leader, nil); err != nil {
		t.Fatalf("Do with an invalid template: %v", err)
	}
	if st := f.status(t); st.Reason != reason.InvalidTemplate {
		t.Errorf("status %s %s", st.Result, st.Reason)
	}
	// CKE's switch holds ckegen.
	must(t, f.st.SetDisabled(ctx, true))
	if err := f.ig.Do(ctx, f.leader, nil); err != nil || f.status(t).Result != reason.Disabled {
		t.Errorf("disabled: %v, %s", err, f.status(t).Result)
	}
	if err := f.ig.Do(ctx, "leader/gone", nil); err == nil || !strings.Contains(err.Error(), reason.LostLeadership) {
		t.Errorf("Do without leadership: %v, want %s", err, reason.LostLeadership)
	}
}

// TestYieldsToDaemons: while ckegen's daemons own the integration
// (sabakan/owner: ckegen, CKE's switch off, as takeover leaves them), Do
// writes nothing, not the cluster, not the status, whatever changes in
// sabakan: a site moving between the daemons and the build inside CKE
// sees one status. CKE's switch off without that owner is the plain
// "disabled" status; after a handback Do runs again.
func TestYieldsToDaemons(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, *sitetest.Counts(3, 5))
	must(t, f.ig.Do(ctx, f.leader, nil))
	own, err := f.st.Ownership(ctx)
	must(t, err)
	must(t, f.st.Takeover(ctx, own))
	cluster0, _ := f.st.Get(ctx, storage.KeyCluster)
	status0, _ := f.st.Get(ctx, storage.KeySabakanStatus)
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var worker string
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			worker = n.Annotations["cke.cybozu.com/serial"]
			break
		}
	}
	if _, err := f.site.Store.SetState(worker, machine.StateUnreachable); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		must(t, f.ig.Do(ctx, f.leader, nil))
	}
	if now, _ := f.st.Get(ctx, storage.KeyCluster); now.ModRevision != cluster0.ModRevision {
		t.Error("Do wrote the cluster while ckegen's daemons own the integration")
	}
	if now, _ := f.st.Get(ctx, storage.KeySabakanStatus); now.ModRevision != status0.ModRevision {
		t.Errorf("Do wrote the status while ckegen's daemons own it: %s", now.Data)
	}

	// CKE's switch off, and CKE owns the integration: the status says so.
	own, err = f.st.Ownership(ctx)
	must(t, err)
	must(t, f.st.Handback(ctx, own))
	must(t, f.st.SetDisabled(ctx, true))
	must(t, f.ig.Do(ctx, f.leader, nil))
	if st := f.status(t); st.Result != reason.Disabled || st.Mode != decision.ModeInsideCKE {
		t.Errorf("CKE's switch off: status %s, mode %s; want disabled inside CKE", st.Result, st.Mode)
	}
	must(t, f.st.SetDisabled(ctx, false))
	must(t, f.ig.Do(ctx, f.leader, nil))
	if st := f.status(t); st.Result != reason.OK || st.LastOp == "" {
		t.Errorf("after the handback: status %s, op %q; want ok with the taint", st.Result, st.LastOp)
	}
	if now, _ := f.st.Get(ctx, storage.KeyCluster); now.ModRevision == cluster0.ModRevision {
		t.Error("after the handback the unreachable worker was not tainted")
	}
}

// repairEntries reads CKE's repair queue, the fields the integrators set.
func repairEntries(t *testing.T, cli *clientv3.Client) []*cke.RepairQueueEntry {
	t.Helper()
	entries, err := cke.Storage{Client: cli}.GetRepairsEntries(context.Background())
	must(t, err)
	return entries
}

// TestAutoRepairAsCKE: on the same inventory, repair settings and cluster
// status, ckegen's integrator registers the repair queue entries CKE
// v1.35.4's own integrator registers: both are run, one after the other,
// from the same queue. The machines cover CKE's rules: an UNHEALTHY node
// and an UNREACHABLE one are repaired; an UNREACHABLE machine out of the
// cluster, one CKE's reboot queue is rebooting, and one recently repaired
// are not.
func TestAutoRepairAsCKE(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, constraints.Constraints{ControlPlaneCount: 3, MinimumWorkers: 5,
		MaximumRepairQueueEntries: ptr(4), WaitSecondsToRepairRebooting: ptr(600)})
	must(t, f.ig.Do(ctx, f.leader, nil))
	c, _, err := f.st.GetCluster(ctx)
	must(t, err)
	var all []string
	in := map[string]bool{}
	for _, n := range c.Nodes {
		all = append(all, n.Address)
		in[n.Address] = true
	}
	var outside string
	for _, m := range f.site.Store.Search(nil, nil) {
		if !in[m.Spec.IPv4[0]] && m.Spec.Role != "boot" {
			outside = m.Spec.IPv4[0]
			break
		}
	}
	unhealthy, unreachable, rebooting, recent := all[1], all[4], all[5], all[7]
	set := func(addr string, s machine.State) {
		_, err := f.site.Store.SetState(serialOf(t, f, addr), s)
		must(t, err)
	}
	set(unhealthy, machine.StateUnhealthy)
	for _, a := range []string{unreachable, rebooting, recent, outside} {
		set(a, machine.StateUnreachable)
	}
	_, err = f.cke.Put(ctx, "reboots/data/0000000000000001", `{"index":"1","node":"`+rebooting+`","status":"rebooting"}`)
	must(t, err)
	status := clusterStatus(all, nil)
	status.RepairQueue.Entries = []*cke.RepairQueueEntry{{Address: recent}}
	// The integration's own decision is left out: only the repairer.
	must(t, f.st.SetDisabled(ctx, true))

	queue := cke.Storage{Client: f.cke}
	must(t, ckesabakan.NewIntegrator(f.cke).Do(ctx, f.leader, status))
	want := repairEntries(t, f.cke)
	var wantAddrs []string
	for _, e := range want {
		wantAddrs = append(wantAddrs, e.Address)
		must(t, queue.DeleteRepairsEntry(ctx, f.leader, e.Index))
	}
	slices.Sort(wantAddrs)
	if exp := []string{unhealthy, unreachable}; !slices.Equal(wantAddrs, sorted(exp)) {
		t.Fatalf("CKE's integrator registered %v, want %v: the test's inputs are not what it means", wantAddrs, exp)
	}
	must(t, f.ig.Do(ctx, f.leader, status))
	got := repairEntries(t, f.cke)
	opt := cmpopts.IgnoreFields(cke.RepairQueueEntry{}, "Index", "Deleted", "StepStatus", "LastTransitionTime", "DrainBackOffCount", "DrainBackOffExpire")
	if diff := cmp.Diff(want, got, opt); diff != "" {
		t.Errorf("repair entries (-CKE's +ckegen's):\n%s", diff)
	}

	// auto-repair/disabled stops ckegen's as it stops CKE's.
	for _, e := range got {
		must(t, queue.DeleteRepairsEntry(ctx, f.leader, e.Index))
	}
	must(t, queue.EnableAutoRepair(ctx, false))
	must(t, f.ig.Do(ctx, f.leader, status))
	if got := repairEntries(t, f.cke); len(got) != 0 {
		t.Errorf("auto-repair disabled, yet %d entries", len(got))
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func ptr(v int) *int { return &v }

func serialOf(t *testing.T, f *fixture, addr string) string {
	t.Helper()
	for _, m := range f.site.Store.Search(nil, nil) {
		if slices.Contains(m.Spec.IPv4, addr) {
			return m.Spec.Serial
		}
	}
	t.Fatalf("no machine has %s", addr)
	return ""
}

// TestNoCKESeriesOfItsOwn: inside CKE's server ckegen exports its own
// series and none of CKE's names (cke_sabakan_*, cke_leader): CKE's are
// fed through CKE's metrics package. ckegen_leader, which the alert rules
// read, is 1 while CKE's server leads and runs ckegen (StartWatch runs),
// and 0 once it stops.
func TestNoCKESeriesOfItsOwn(t *testing.T) {
	f := newFixture(t, *sitetest.Counts(3, 5))
	reg := prometheus.NewRegistry()
	ig, err := New(Config{Client: f.cke, Registerer: reg, Config: decision.Config{Log: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	must(t, err)
	gathered := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		must(t, err)
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				out[mf.GetName()] = m.GetGauge().GetValue() + float64(m.GetHistogram().GetSampleCount())
			}
		}
		return out
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ig.StartWatch(ctx, make(chan struct{}, 1)) }()
	deadline := time.Now().Add(5 * time.Second)
	for gathered()["ckegen_leader"] != 1 {
		if time.Now().After(deadline) {
			t.Fatal("ckegen_leader is not 1 while StartWatch runs")
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, ig.Do(ctx, f.leader, nil))
	got := gathered()
	for name := range got {
		if strings.HasPrefix(name, "cke_") {
			t.Errorf("ckegen exports CKE's series %s", name)
		}
	}
	if got["ckegen_tick_duration_seconds"] == 0 || got["ckegen_machines"] == 0 && len(got) < 3 {
		t.Errorf("ckegen's own series missing: %v", got)
	}
	cancel()
	<-done
	if got := gathered(); got["ckegen_leader"] != 0 {
		t.Errorf("ckegen_leader %v after StartWatch ended", got["ckegen_leader"])
	}
}
