package ckeref

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cybozu-go/cke"
	ckesabakan "github.com/cybozu-go/cke/sabakan"
	"github.com/cybozu-go/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ckegen/ckegen/cluster"
)

// Running CKE v1.35.4's own generator: the inputs converted from ckegen's
// types through JSON (both read the same machines JSON and cluster.yml),
// and what it decided, read from its result and from the one log record its
// fill writes ("sabakan: generated cluster", with the operation and the
// changes), which is all CKE says about a decision whose cluster its own
// validation then refuses.

// ckeLog collects CKE's log records; CKE's generator logs through
// github.com/cybozu-go/log's default logger.
var ckeLog = struct {
	sync.Mutex
	buf bytes.Buffer
}{}

type logSink struct{}

func (logSink) Write(p []byte) (int, error) {
	ckeLog.buf.Write(p)
	return len(p), nil
}

func init() {
	l := log.DefaultLogger()
	l.SetFormatter(log.JSONFormat{})
	l.SetOutput(logSink{})
}

// silenceCKE drops CKE's log output (benchmarks).
func silenceCKE() { log.DefaultLogger().SetOutput(io.Discard) }

// ckeInput is one decision's input in CKE's types.
type ckeInput struct {
	tmpl     *cke.Cluster
	cstr     *cke.Constraints
	machines []ckesabakan.Machine
	status   *cke.ClusterStatus
	now      time.Time
	current  *cke.Cluster
}

// jsonCopy converts in to out through JSON.
func jsonCopy(in, out any) {
	data, err := json.Marshal(in)
	if err != nil {
		panic(err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		panic(fmt.Sprintf("%v: %s", err, data))
	}
}

// toCKEMachines reads a machines JSON array (sabakan's GraphQL shape) as
// CKE does.
func toCKEMachines(data []byte) []ckesabakan.Machine {
	var out []ckesabakan.Machine
	if err := json.Unmarshal(data, &out); err != nil {
		panic(err)
	}
	return out
}

func toCKECluster(c *cluster.Cluster) *cke.Cluster {
	if c == nil {
		return nil
	}
	out := new(cke.Cluster)
	jsonCopy(c, out)
	return out
}

// toCKEStatus makes the cluster status CKE reads Kubernetes Nodes from.
func toCKEStatus(nodeTaints map[string][]cluster.Taint) *cke.ClusterStatus {
	st := &cke.ClusterStatus{}
	for name, ts := range nodeTaints {
		n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, t := range ts {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect)})
		}
		st.Kubernetes.Nodes = append(st.Kubernetes.Nodes, n)
	}
	return st
}

// ckeOutcome is what CKE's generator decided.
type ckeOutcome struct {
	cluster *cke.Cluster // nil for nothing to do, an error or a panic
	err     error
	panic   string
	// logged: the fill's record was written (op and changes are CKE's
	// decision, even when its validation refused the cluster).
	logged  bool
	op      string
	changes []string
}

// runCKE decides as CKE v1.35.4's integration does (sabakan/integrate.go's
// runGenerator): Generate without a cluster; else Update, and Regenerate
// when Update has nothing to do and the template changed.
func runCKE(in ckeInput, templateChanged bool, waitSeconds float64) (out ckeOutcome) {
	ckeLog.Lock()
	defer ckeLog.Unlock()
	ckeLog.buf.Reset()
	defer func() {
		if r := recover(); r != nil {
			out.panic = fmt.Sprint(r)
		}
		out.readLog()
	}()
	g := ckesabakan.NewGenerator(in.tmpl, in.cstr, in.machines, in.status, in.now)
	g.SetWaitSeconds(waitSeconds)
	var c *cke.Cluster
	var err error
	if in.current == nil {
		c, err = g.Generate()
	} else {
		c, err = g.Update(in.current)
		if c == nil && err == nil && templateChanged {
			c, err = g.Regenerate(in.current)
		}
	}
	out.cluster, out.err = c, err
	return out
}

// readLog takes the op and changes from the fill's log record.
func (out *ckeOutcome) readLog() {
	for line := range strings.SplitSeq(ckeLog.buf.String(), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Message string   `json:"message"`
			Op      string   `json:"op"`
			Changes []string `json:"changes"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			continue
		}
		if rec.Message == "sabakan: generated cluster" {
			out.logged, out.op, out.changes = true, rec.Op, rec.Changes
		}
	}
}

// CKE's change messages (sabakan/op.go and generator.go) and what each does
// to the membership.
var ckeChangePrefixes = []struct{ prefix, action string }{
	{"add new control plane: ", "add-cp"},
	{"add new worker: ", "add-worker"},
	{"promote a worker: ", "promote"},
	{"demote a control plane: ", "demote"},
	{"remove non-existent control plane: ", "remove"},
	{"remove non-existent worker: ", "remove"},
	{"remove retired worker: ", "remove"},
	{"change taint of ", "taint"},
}

type ckeChange struct{ action, address string }

// parseCKEChanges reads CKE's change messages; messages without an address
// ("generate new cluster", "regenerate with new template") are left out.
func parseCKEChanges(changes []string) ([]ckeChange, error) {
	var out []ckeChange
	for _, c := range changes {
		if c == "generate new cluster" || c == "regenerate with new template" {
			continue
		}
		found := false
		for _, p := range ckeChangePrefixes {
			if a, ok := strings.CutPrefix(c, p.prefix); ok {
				out = append(out, ckeChange{p.action, a})
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown CKE change %q", c)
		}
	}
	return out, nil
}
