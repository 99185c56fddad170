package tick

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/template"
)

// sizeInventory is a data center of racks of 20 machines as dcgen's
// default (one boot server per rack, roles compute/storage/gpu at 6:3:1,
// 3% of the machines not HEALTHY), each machine with three sabakan labels
// (dcgen's product, and a data center and a CPU model), which every node
// carries as sabakan.cke.cybozu.com/ labels.
func sizeInventory(racks int) []machine.Machine {
	o := dcgen.Default(testNow)
	o.Racks = racks
	ms := dcgen.Machines(o)
	for i := range ms {
		ms[i].Spec.Labels = append(ms[i].Spec.Labels,
			machine.Label{Name: "datacenter", Value: "tokyo1"},
			machine.Label{Name: "cpu", Value: fmt.Sprintf("epyc-%d", 7443+100*(i%3))})
	}
	return ms
}

// sizeModels are the constraints of a cluster that takes every HEALTHY
// machine the bundled template accepts, in each model: 3 control planes,
// and every other candidate a worker.
func sizeModels(ms []machine.Machine) map[string]constraints.Constraints {
	healthy := 0
	for _, m := range ms {
		if m.Spec.Role != "boot" && m.Status.State == machine.StateHealthy {
			healthy++
		}
	}
	count := constraints.CountDefaults()
	count.ControlPlaneCount, count.MinimumWorkers = 3, healthy-3
	rate := constraints.CountDefaults()
	rate.ControlPlaneCount = 3
	if err := rate.Set(constraints.MinimumWorkersRate, constraints.DefaultMinimumWorkersRate); err != nil {
		panic(err)
	}
	return map[string]constraints.Constraints{constraints.CountModel: count, constraints.RateModel: rate}
}

// firstClusterJSON is the first cluster of the machines with the bundled
// template, as the daemon writes it (JSON), and its number of nodes.
func firstClusterJSON(t testing.TB, tmpl *template.Template, ms []machine.Machine, c constraints.Constraints) ([]byte, int) {
	t.Helper()
	sanitized, _ := machine.Sanitize(ms, labels.ValidateSabakanLabel)
	res, err := generator.Generate(generator.Input{Template: tmpl, Constraints: c, Machines: sanitized, Now: testNow, RetireWait: generator.DefaultRetireWait})
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(res.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	return data, len(res.Cluster.Nodes)
}

func bundledTemplate(t testing.TB) *template.Template {
	t.Helper()
	data, err := os.ReadFile("../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return tmpl
}

// The measured size of cluster.yml (docs/performance.md, "Size"): bytes of JSON per
// node and the nodes that fit in etcd's default request limit, in a
// cluster of every HEALTHY machine with the bundled template and three
// sabakan labels per machine. TestClusterSize keeps them true.
const (
	sizeBytesPerNodeLow, sizeBytesPerNodeHigh = 700, 720
	sizeFitLow, sizeFitHigh                   = 2_180, 2_250
)

// TestClusterSize measures, in both models, at how many machines the
// first cluster passes etcd's default request limit (1.5 MiB), and checks
// the figures docs/performance.md gives. go test ./tick -run TestClusterSize -v
// prints them.
func TestClusterSize(t *testing.T) {
	tmpl := bundledTemplate(t)
	inv := sizeInventory(200) // 4,000 machines: well past the limit
	// What the daemon allows the cluster: the limit less the rest of the
	// write request, with the default prefix and an election key as
	// etcd's concurrency package makes them.
	d := New(storage.New(nil, ""), decision.Config{})
	allowed := decision.DefaultMaxClusterBytes - d.st.ClusterWriteOverhead("/cke/leader/694d9b3c1e2f4a05")
	for _, model := range []string{constraints.CountModel, constraints.RateModel} {
		t.Run(model, func(t *testing.T) {
			// The first prefix of the inventory (in serial order, so whole
			// racks and then part of one) whose cluster is over the limit.
			sizes := map[int][2]int{}
			over := sort.Search(len(inv)+1, func(m int) bool {
				if m < 20 {
					return false
				}
				data, nodes := firstClusterJSON(t, tmpl, inv[:m], sizeModels(inv[:m])[model])
				sizes[m] = [2]int{len(data), nodes}
				return len(data) > allowed
			})
			if over > len(inv) {
				t.Fatalf("%d machines fit in %d bytes", len(inv), allowed)
			}
			fit := sizes[over-1]
			if _, ok := sizes[over-1]; !ok {
				data, nodes := firstClusterJSON(t, tmpl, inv[:over-1], sizeModels(inv[:over-1])[model])
				fit = [2]int{len(data), nodes}
			}
			perNode := float64(fit[0]) / float64(fit[1])
			t.Logf("%s model: %d machines (%d nodes) give %d bytes of JSON, %.1f bytes per node; %d machines are over the %d bytes a write of %d bytes allows the cluster",
				model, over-1, fit[1], fit[0], perNode, over, allowed, decision.DefaultMaxClusterBytes)
			if perNode < sizeBytesPerNodeLow || perNode > sizeBytesPerNodeHigh {
				t.Errorf("%.1f bytes per node, docs/performance.md says %d-%d: measure again and update both", perNode, sizeBytesPerNodeLow, sizeBytesPerNodeHigh)
			}
			if fit[1] < sizeFitLow || fit[1] > sizeFitHigh {
				t.Errorf("%d nodes fit in %d bytes, docs/performance.md says %d-%d: measure again and update both", fit[1], decision.DefaultMaxClusterBytes, sizeFitLow, sizeFitHigh)
			}
		})
	}
}

// TestClusterTooLargeMessage pins CLUSTER_TOO_LARGE's message in both
// models: the size, the nodes that fit, the flags to raise, and what else
// makes the cluster smaller in that model. Nothing is written.
func TestClusterTooLargeMessage(t *testing.T) {
	for _, c := range []struct {
		model, constraints, want string
	}{
		{constraints.CountModel, `{"control-plane-count":3,"minimum-workers":5}`,
			"the cluster is 4793 bytes of JSON for 8 nodes (599 bytes a node), and its write 5382 bytes, over etcd's request size limit of 4000 bytes: " +
				"about 5 nodes fit, this cluster has 8; raise etcd's --max-request-bytes and ckegen's --max-cluster-bytes together to at least 5382 bytes, " +
				"or ask for fewer workers (ckegenctl constraints set minimum-workers N)"},
		{constraints.RateModel, `{"control-plane-count":3,"minimum-workers-rate":80}`,
			"the cluster is 9217 bytes of JSON for 16 nodes (576 bytes a node), and its write 9806 bytes, over etcd's request size limit of 4000 bytes: " +
				"about 5 nodes fit, this cluster has 16; raise etcd's --max-request-bytes and ckegen's --max-cluster-bytes together to at least 9806 bytes, " +
				"or, as the rate model (minimum-workers-rate) makes every HEALTHY machine a worker template accepts a node, query fewer machines (ckegenctl sabakan set-variables)"},
	} {
		t.Run(c.model, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			_, err := f.st.Client.Put(ctx, f.st.Key(storage.KeyConstraints), c.constraints)
			must(t, err)
			// An election key of a fixed length: the write's size counts it.
			leader := f.st.Key(storage.KeyCKEGenLeader) + "0123456789abcdef"
			_, err = f.st.Client.Put(ctx, leader, "test")
			must(t, err)
			err = f.step("d", func(cfg *testConfig) { cfg.MaxClusterBytes = 4000 }).runOnce(ctx, leader)
			var te *reason.Error
			if !errors.As(err, &te) || te.Reason != reason.ClusterTooLarge {
				t.Fatalf("error %v, want %s", err, reason.ClusterTooLarge)
			}
			st, err := f.st.GetStatus(ctx)
			must(t, err)
			if st.Reason != reason.ClusterTooLarge || st.Message != c.want {
				t.Errorf("status %s:\n%s\nwant\n%s", st.Reason, st.Message, c.want)
			}
			if f.cluster(t) != nil {
				t.Error("a cluster too large was written")
			}
		})
	}
}

var tooLargeSizes = regexp.MustCompile(`^the cluster is (\d+) bytes of JSON for \d+ nodes \(\d+ bytes a node\), and its write (\d+) bytes`)

// TestClusterTooLargeCountsTheRequest: etcd refuses a request over its
// --max-request-bytes as a whole, so a cluster a few bytes under the limit
// must be CLUSTER_TOO_LARGE, not an etcd error after the fact; and a
// cluster the daemon lets through is one etcd accepts. Against an etcd
// with its default limit (1.5 MiB), as the daemon's default.
func TestClusterTooLargeCountsTheRequest(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	// 3 control planes and 5 workers, each with an annotation of pad
	// bytes: the cluster's JSON grows by 8 bytes a byte of pad.
	setPad := func(pad int) {
		p := strings.Repeat("x", pad)
		must(t, f.st.SetTemplate(ctx, []byte(`{"name":"t","nodes":[`+
			`{"user":"u","control_plane":true,"annotations":{"example.com/pad":"`+p+`"}},`+
			`{"user":"u","annotations":{"example.com/pad":"`+p+`"}}],"service_subnet":"10.68.0.0/16",`+testOptions+`}`)))
	}
	tick := func(limit int) (data, write int, err error) {
		err = f.step("d", func(c *testConfig) { c.MaxClusterBytes = limit }).runOnce(ctx, leader)
		var te *reason.Error
		if errors.As(err, &te) && te.Reason == reason.ClusterTooLarge {
			m := tooLargeSizes.FindStringSubmatch(te.Err.Error())
			if m == nil {
				t.Fatalf("message %q", te.Err)
			}
			data, _ = strconv.Atoi(m[1])
			write, _ = strconv.Atoi(m[2])
		}
		return data, write, err
	}
	const pad0 = 190_000
	setPad(pad0)
	size0, write0, _ := tick(1000)
	overhead := write0 - size0
	if size0 == 0 || overhead <= 0 {
		t.Fatalf("sizes %d and %d", size0, write0)
	}

	// Under the limit by less than the rest of the request: refused by
	// the daemon, not by etcd.
	padFor := func(size int) int { return pad0 + (size-size0)/8 }
	setPad(padFor(decision.DefaultMaxClusterBytes - 100))
	size, _, err := tick(decision.DefaultMaxClusterBytes)
	var te *reason.Error
	if !errors.As(err, &te) || te.Reason != reason.ClusterTooLarge {
		t.Fatalf("a cluster of about %d bytes against a limit of %d: %v, want %s", decision.DefaultMaxClusterBytes-100, decision.DefaultMaxClusterBytes, err, reason.ClusterTooLarge)
	}
	if size > decision.DefaultMaxClusterBytes || size < decision.DefaultMaxClusterBytes-108 {
		t.Fatalf("the padded cluster is %d bytes, want just under %d", size, decision.DefaultMaxClusterBytes)
	}
	if msg := te.Err.Error(); !strings.Contains(msg, "over etcd's request size limit of 1572864 bytes (1.5 MiB): about 7 nodes fit, this cluster has 8; "+
		"raise etcd's --max-request-bytes and ckegen's --max-cluster-bytes together to at least") {
		t.Errorf("message %q", msg)
	}
	if f.cluster(t) != nil {
		t.Fatal("a refused cluster was written")
	}

	// Just under what the daemon allows: written, and etcd takes it.
	setPad(padFor(decision.DefaultMaxClusterBytes - overhead - 16))
	must(t, f.step("d", nil).runOnce(ctx, leader))
	data, err := f.st.GetClusterRaw(ctx)
	must(t, err)
	if len(data) < decision.DefaultMaxClusterBytes-overhead-32 {
		t.Errorf("the written cluster is %d bytes, want about %d", len(data), decision.DefaultMaxClusterBytes-overhead-16)
	}
}
