package tick

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/kubetest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/kubenodes"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/storage"
)

// benchLimit is the request size limit of the benchmark's etcd, client
// and daemon: a 10,003-node cluster is about 6 MB of JSON.
const benchLimit = 64 << 20

// tickBench is a daemon leading over an embedded etcd, with the
// compatible server holding a data center of n machines (40 per rack, no
// boot servers, roles 6:3:1), the bundled template, 3 control planes and
// minimum-workers workers. nodes is the daemon's Kubernetes lister (nil:
// none, as without --kubeconfig).
type tickBench struct {
	d      *Step
	kube   kubenodes.Kubernetes
	st     sitetest.Store
	store  *fakesabakan.Store
	leader string
	// querySum and queries sum up the sabakan queries of the ticks run
	// (Result.Query), for reportStages.
	querySum float64
	queries  int
}

func newTickBench(b *testing.B, n, workers int, nodes kubenodes.Kubernetes) *tickBench {
	b.Helper()
	tmpl, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		b.Fatal(err)
	}
	tmplJSON, err := yaml.YAMLToJSON(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	s := sitetest.Start(b, sitetest.Options{
		Now: testNow, MaxRequestBytes: benchLimit,
		DataCenter: func(o *dcgen.Options) { o.Racks, o.PerRack, o.BootPerRack = n/40, 40, 0 },
		Template:   string(tmplJSON), StoreURL: true, Constraints: sitetest.Counts(3, workers),
	})
	d := New(s.Storage, decision.Config{
		Name: "bench", RetireWait: storage.Duration(time.Minute), MaxClusterBytes: benchLimit,
		Sabakan: sabakan.Options{Timeout: time.Minute, Retries: -1, MaxBodyBytes: 1 << 30},
		Now:     func() time.Time { return testNow },
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return &tickBench{d: d, kube: nodes, st: sitetest.StoreOf(s.Storage), store: s.Store, leader: s.Lead(b, "bench", 0)}
}

// tick runs one tick and checks, off the clock, whether it wrote the
// cluster.
func (tb *tickBench) tick(b *testing.B, wantWrite bool) {
	before := tb.clusterRev(b)
	r := tb.d.Run(context.Background(), tb.leader, tb.kube, nil)
	if r.Err != nil {
		b.Fatal(r.Err)
	}
	b.StopTimer()
	tb.querySum, tb.queries = tb.querySum+r.Decision.Gathered.QueryTime.Seconds(), tb.queries+1
	if wrote := tb.clusterRev(b) != before; wrote != wantWrite {
		b.Fatalf("the tick wrote the cluster: %v, want %v", wrote, wantWrite)
	}
	b.StartTimer()
}

// reportStages, deferred after the setup, reports the tick's breakdown
// when the benchmark ends: sabakan-ms/op is the time of the sabakan query
// (the compatible server's answer, its transfer and decoding: the
// tick's Result.Query), rest-ms/op the rest of
// the tick (reading etcd, sanitizing, generating, rendering, the guarded
// write, the status).
func (tb *tickBench) reportStages(b *testing.B) func() {
	sum0, n0 := tb.querySum, tb.queries
	return func() {
		sum, n := tb.querySum, tb.queries
		if n == n0 {
			return
		}
		ticks := float64(b.N)
		query := (sum - sum0) / float64(n-n0) * 1000
		b.ReportMetric(query, "sabakan-ms/op")
		b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/ticks-query, "rest-ms/op")
	}
}

// clusterRev returns the cluster key's mod revision (0: none).
func (tb *tickBench) clusterRev(b *testing.B) int64 {
	resp, err := tb.st.Client.Get(context.Background(), tb.st.Key(storage.KeyCluster), clientv3.WithKeysOnly())
	if err != nil {
		b.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return 0
	}
	return resp.Kvs[0].ModRevision
}

// settle runs ticks until one writes nothing.
func (tb *tickBench) settle(b *testing.B) {
	b.Helper()
	for range 10 {
		before := tb.clusterRev(b)
		if err := tb.d.Run(context.Background(), tb.leader, tb.kube, nil).Err; err != nil {
			b.Fatal(err)
		}
		if tb.clusterRev(b) == before {
			return
		}
	}
	b.Fatal("the cluster does not settle in 10 ticks")
}

// benchTicks measures the daemon's whole tick on the data centers newTB
// makes: the compatible server's searchMachines over real HTTP, decoding
// and sanitizing, the Kubernetes Nodes when the daemon has a lister, the
// generator, the cluster's JSON, and the guarded write to an embedded
// etcd with its request size limit raised, then the status and the
// history. The server and etcd run in the benchmark's process: the
// figures count their work too.
//
//   - generate: no cluster yet; the first one is written;
//   - update: a worker's machine turns UNREACHABLE or back to HEALTHY
//     before each tick, which writes the change;
//   - nothing: nothing changed; nothing is written.
func benchTicks(b *testing.B, newTB func(b *testing.B) *tickBench) {
	b.Run("generate", func(b *testing.B) {
		tb := newTB(b)
		defer tb.reportStages(b)()
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			if _, err := tb.st.Client.Delete(context.Background(), tb.st.Key(storage.KeyCluster)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			tb.tick(b, true)
		}
	})
	b.Run("update", func(b *testing.B) {
		tb := newTB(b)
		tb.settle(b)
		defer tb.reportStages(b)()
		c, _, err := tb.st.GetCluster(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		serial := c.Nodes[len(c.Nodes)-1].Annotations["cke.cybozu.com/serial"]
		state := machine.StateHealthy
		b.ReportAllocs()
		for b.Loop() {
			b.StopTimer()
			if state == machine.StateHealthy {
				state = machine.StateUnreachable
			} else {
				state = machine.StateHealthy
			}
			if _, err := tb.store.SetState(serial, state); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			tb.tick(b, true)
		}
	})
	b.Run("nothing", func(b *testing.B) {
		tb := newTB(b)
		tb.settle(b)
		defer tb.reportStages(b)()
		b.ReportAllocs()
		for b.Loop() {
			tb.tick(b, false)
		}
	})
}

// BenchmarkTick20000: 20,000 machines, a cluster of 10,003 nodes
// (minimum-workers 10,000), no Kubernetes.
func BenchmarkTick20000(b *testing.B) {
	benchTicks(b, func(b *testing.B) *tickBench { return newTickBench(b, 20000, 10000, nil) })
}

// tick10000 is the data center of the 10,000-node benchmarks: 10,800
// machines (3% of them not HEALTHY), a cluster of 10,000 nodes
// (3 control planes, minimum-workers 9,997).
const (
	tick10000Machines = 10800
	tick10000Workers  = 9997
)

// BenchmarkTick10000 is the tick on a cluster of 10,000 nodes without
// Kubernetes: the reference of BenchmarkTick10000Kubernetes.
func BenchmarkTick10000(b *testing.B) {
	benchTicks(b, func(b *testing.B) *tickBench {
		return newTickBench(b, tick10000Machines, tick10000Workers, nil)
	})
}

// BenchmarkTick10000Kubernetes is BenchmarkTick10000 with the daemon
// reading the Nodes of a real kube-apiserver, as cmd/ckegen wires
// --kubeconfig: one Node per node of the cluster (10,000), one in ten
// with a taint control planes do not tolerate (kubetest.Node). The ticks
// list all the Nodes; update and nothing have the cluster's tainted
// control planes replaced first (settle) so that only the measured change
// is written. list is the Reader's NodeTaints alone, on the same server.
func BenchmarkTick10000Kubernetes(b *testing.B) {
	api := kubetest.Start(b)
	// The cluster the data center gets, to name the Nodes after.
	tb := newTickBench(b, tick10000Machines, tick10000Workers, nil)
	tb.settle(b)
	c, _, err := tb.st.GetCluster(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	nodes := make([]*corev1.Node, len(c.Nodes))
	for i, n := range c.Nodes {
		nodes[i] = kubetest.Node(i, n.Address)
	}
	api.CreateNodes(b, nodes)
	cfg, err := kubenodes.LoadKubeconfig(api.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	r, err := kubenodes.NewReader(cfg, kubenodes.Options{})
	if err != nil {
		b.Fatal(err)
	}
	// The list alone, the part of a tick the Nodes add at least.
	b.Run("list", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := r.NodeTaints(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			if len(got) != len(nodes) {
				b.Fatalf("listed %d Nodes, want %d", len(got), len(nodes))
			}
		}
	})
	benchTicks(b, func(b *testing.B) *tickBench {
		tb := newTickBench(b, tick10000Machines, tick10000Workers, kubenodes.APIView(r, func() time.Time { return testNow }))
		tb.settle(b)
		st, err := tb.st.GetStatus(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if k := st.Kubernetes; k == nil || !k.Read || k.Nodes != len(nodes) || k.Intolerable != (len(nodes)+9)/10 {
			b.Fatalf("the tick read %+v from kubenodes.Kubernetes, want %d Nodes, %d intolerable", k, len(nodes), (len(nodes)+9)/10)
		}
		return tb
	})
}

// benchPolicy is a policy as the benchmark asks for: 3
// placements, 5 label constraints and 2 metrics, whose values come from a
// static provider listing every machine (a fetch that takes no network
// time, so that the figures are the daemon's and the generator's work).
func benchPolicy(n int) string {
	var values strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			values.WriteByte(',')
		}
		fmt.Fprintf(&values, `"S%06d":{"temp":%d,"power":%d}`, i, 15+i%30, 100+(i*7)%400)
	}
	return `{
  "placements": {
    "control-plane": {
      "constraints": ["topology.kubernetes.io/zone not in (rack0, rack1)", "sabakan.cke.cybozu.com/product in (R600, R610, R620)"],
      "groups": [{"name": "cool", "metricConstraints": ["temp < 30"]}, {"name": "any"}],
      "metrics": [{"name": "temp", "weight": -5}, {"name": "power", "weight": -2}]
    },
    "compute": {
      "constraints": ["sabakan.cke.cybozu.com/product != R999"],
      "metrics": [{"name": "temp", "weight": -1}]
    },
    "storage": {
      "constraints": ["topology.kubernetes.io/zone not in (rack7)", "cke.cybozu.com/role is storage"]
    }
  },
  "metrics": {"temp": {"provider": "lab", "min": 15, "max": 45}, "power": {"provider": "lab", "min": 100, "max": 500}},
  "providers": {"lab": {"type": "static", "values": {` + values.String() + `}}}
}`
}

// BenchmarkTick20000Policy is BenchmarkTick20000 with benchPolicy stored:
// the policy read and compiled (once while it is unchanged), the static
// fetch, the constrained and scored generator, and the placements'
// counts. Compare with BenchmarkTick20000.
func BenchmarkTick20000Policy(b *testing.B) {
	benchTicks(b, func(b *testing.B) *tickBench {
		tb := newTickBench(b, 20000, 10000, nil)
		if _, err := tb.st.Client.Put(context.Background(), tb.st.Key(storage.KeySabakanPolicy), benchPolicy(20000)); err != nil {
			b.Fatal(err)
		}
		tb.settle(b)
		st, err := tb.st.GetStatus(context.Background())
		if err != nil || len(st.Placements) != 3 {
			b.Fatalf("placements %+v (%v), want 3", st.Placements, err)
		}
		return tb
	})
}
