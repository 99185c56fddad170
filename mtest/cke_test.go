package mtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
)

// ckeSite is CKE v1.35.4's own server and ckecli on the scenario's etcd
// (prefix /cke/), configured as CKE's are: a config file with the etcd
// endpoints and the prefix only (github.com/cybozu-go/etcdutil's format).
type ckeSite struct {
	e        *env
	bin, cli string
	config   string
	server   *proc
	hostname string // CKE's server campaigns with the host name
}

func newCKESite(e *env, bin, cli string) *ckeSite {
	e.t.Helper()
	k := &ckeSite{e: e, bin: bin, cli: cli, config: filepath.Join(e.dir, "cke-config.yml")}
	var eps []string
	for _, c := range e.clients {
		eps = append(eps, fmt.Sprintf("%q", c))
	}
	if err := writeFile(k.config, fmt.Sprintf("endpoints: [%s]\nprefix: /cke/\n", strings.Join(eps, ", "))); err != nil {
		e.t.Fatal(err)
	}
	h, err := os.Hostname()
	if err != nil {
		e.t.Fatal(err)
	}
	k.hostname = h
	k.server = &proc{name: "cke-server", path: bin, log: filepath.Join(e.dir, "cke-server.log"), args: []string{
		"--config", k.config, "--http", fmt.Sprintf("127.0.0.1:%d", freePort(e.t)),
		"--interval", "1s", "--session-ttl", "5s",
	}}
	// Registered after newEnv's cleanup, so it runs first: CKE's server
	// stops before etcd.
	e.t.Cleanup(func() { k.server.stop(syscall.SIGKILL) })
	return k
}

// ckecli runs CKE's own ckecli.
func (k *ckeSite) ckecli(args ...string) (string, error) {
	c, cancel := context.WithTimeout(k.e.ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, k.cli, append([]string{"--config", k.config}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("CKE's ckecli %v: %w: %s", args, err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

func (k *ckeSite) mustCkecli(args ...string) string {
	k.e.t.Helper()
	out, err := k.ckecli(args...)
	if err != nil {
		k.e.t.Fatal(err)
	}
	return out
}

// serverLog is CKE's server's log so far.
func (k *ckeSite) serverLog() string {
	data, _ := os.ReadFile(k.server.log)
	return string(data)
}

// validated counts the times CKE's server validated a stored cluster and
// went on: without Vault, the next step after Validate(false) fails with
// "failed to initialize infrastructure" (an invalid cluster logs "invalid
// cluster configuration" instead).
func (k *ckeSite) validated() int {
	return strings.Count(k.serverLog(), "failed to initialize infrastructure")
}

// waitValidated waits for CKE's server to validate the stored cluster once
// more (it reads the cluster at every round of its loop), and fails at
// once on "invalid cluster configuration".
func (k *ckeSite) waitValidated() {
	k.e.t.Helper()
	before := k.validated()
	deadline := time.Now().Add(15 * time.Second)
	for k.validated() <= before {
		k.checkNoInvalid()
		if time.Now().After(deadline) {
			k.e.t.Fatalf("CKE's server did not validate ckegen's cluster within 15s: %s", lastLine(k.serverLog()))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkNoInvalid fails the test when CKE's server refused a cluster.
func (k *ckeSite) checkNoInvalid() {
	k.e.t.Helper()
	for _, l := range strings.Split(k.serverLog(), "\n") {
		if strings.Contains(l, "invalid cluster configuration") {
			k.e.t.Fatalf("CKE's server refused a cluster ckegen wrote: %s", l)
		}
	}
}

// leaderKV is a key under an election prefix.
type leaderKV struct {
	Key, Value     string
	Lease, Created int64
}

func (e *env) electionKeys(prefix string) []leaderKV {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		e.t.Fatal(err)
	}
	var out []leaderKV
	for _, kv := range resp.Kvs {
		out = append(out, leaderKV{string(kv.Key), string(kv.Value), kv.Lease, kv.CreateRevision})
	}
	return out
}

// ckeStatus stands in for a CKE server at rest or busy: CKE's leader keeps
// the key status ({"phase", "timestamp"}, under its leader's lease) fresh
// at every round of its loop, which without Vault and SSH to real nodes it
// never reaches here. It writes the phase every 500 ms, as CKE's leader
// would, until paused.
type ckeStatus struct {
	e      *env
	mu     sync.Mutex
	phase  string
	paused bool
	stop   chan struct{}
	done   chan struct{}
}

func (e *env) startCKEStatus(phase string) *ckeStatus {
	s := &ckeStatus{e: e, stop: make(chan struct{}), done: make(chan struct{})}
	s.set(phase)
	go func() {
		defer close(s.done)
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(500 * time.Millisecond):
				s.write()
			}
		}
	}()
	e.t.Cleanup(func() { close(s.stop); <-s.done })
	return s
}

// set writes phase now and keeps it fresh.
func (s *ckeStatus) set(phase string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase, s.paused = phase, false
	s.put(phase, time.Now())
}

// stale writes phase as written age ago and stops refreshing it, as a
// stuck CKE server leaves its last status.
func (s *ckeStatus) stale(phase string, age time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.phase, s.paused = phase, true
	s.put(phase, time.Now().Add(-age))
}

// write refreshes the key unless paused.
func (s *ckeStatus) write() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.paused {
		s.put(s.phase, time.Now())
	}
}

// put writes the key; the caller holds mu, so writes never cross.
func (s *ckeStatus) put(phase string, at time.Time) {
	data, _ := json.Marshal(map[string]any{"phase": phase, "timestamp": at.UTC()})
	ctx, cancel := context.WithTimeout(s.e.ctx, 2*time.Second)
	defer cancel()
	var opts []clientv3.OpOption
	// Under the lease of CKE's leader, as CKE's server writes it.
	if resp, err := s.e.cli.Get(ctx, "/cke/leader/", clientv3.WithPrefix()); err == nil && len(resp.Kvs) > 0 {
		opts = append(opts, clientv3.WithLease(clientv3.LeaseID(resp.Kvs[0].Lease)))
	}
	_, _ = s.e.cli.Put(ctx, "/cke/status", string(data), opts...)
}

// besideStatus is sabakan/status as ckegen's ckegenctl prints it, with the
// mode and owner (docs/beside-cke.md).
type besideStatus struct {
	Result  string    `json:"result"`
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
	Leader  string    `json:"leader"`
	LastOp  string    `json:"lastOp"`
	Mode    string    `json:"mode"`
	Owner   string    `json:"owner"`
}

func (e *env) besideStatus() (besideStatus, error) {
	var st besideStatus
	out, err := e.ctl("sabakan", "status", "-o", "json")
	if err == nil {
		err = json.Unmarshal([]byte(out), &st)
	}
	return st, err
}

// waitBeside waits for a status written after since by which cond holds.
func (e *env) waitBeside(what string, since time.Time, timeout time.Duration, cond func(besideStatus) bool) besideStatus {
	e.t.Helper()
	var last besideStatus
	e.eventually(what, timeout, func() bool {
		st, err := e.besideStatus()
		if err != nil {
			return false
		}
		last = st
		return st.Time.After(since) && cond(st)
	})
	return last
}

func held(reason string) func(besideStatus) bool {
	return func(st besideStatus) bool { return st.Result == "held" && st.Reason == reason }
}

// rawCluster is the stored cluster as CKE wrote it, decoded without
// ckegen's code.
type rawCluster struct {
	rev   int64
	doc   map[string]any
	nodes map[string]map[string]any // by address
}

func (e *env) rawCluster() rawCluster {
	e.t.Helper()
	return e.rawClusterAt(0)
}

// rawClusterAt is the cluster as it was at etcd revision rev (0: now).
func (e *env) rawClusterAt(rev int64) rawCluster {
	e.t.Helper()
	var opts []clientv3.OpOption
	if rev != 0 {
		opts = append(opts, clientv3.WithRev(rev))
	}
	resp, err := e.cli.Get(e.ctx, "/cke/cluster", opts...)
	if err != nil || len(resp.Kvs) == 0 {
		e.t.Fatalf("the cluster key: %v (%d keys)", err, len(resp.Kvs))
	}
	c := rawCluster{rev: resp.Kvs[0].ModRevision, nodes: map[string]map[string]any{}}
	var doc any
	if err := json.Unmarshal(resp.Kvs[0].Value, &doc); err != nil {
		e.t.Fatal(err)
	}
	c.doc = dropZero(doc).(map[string]any)
	for _, n := range c.doc["nodes"].([]any) {
		m := n.(map[string]any)
		c.nodes[m["address"].(string)] = m
	}
	return c
}

// dropZero removes the members of JSON objects that hold a zero value
// ("", 0, false, null, [] or {}), recursively: an absent field and a zero
// one decode alike in CKE (Go's encoding/json), so only the rest is
// compared.
func dropZero(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, m := range x {
			if m = dropZero(m); isZero(m) {
				delete(x, k)
			} else {
				x[k] = m
			}
		}
		return x
	case []any:
		for i := range x {
			x[i] = dropZero(x[i])
		}
		return x
	}
	return v
}

func isZero(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func (c rawCluster) set(cp bool) []string {
	var out []string
	for a, n := range c.nodes {
		if b, _ := n["control_plane"].(bool); b == cp {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

func (c rawCluster) labels(addr string) map[string]any {
	l, _ := c.nodes[addr]["labels"].(map[string]any)
	return l
}

func (c rawCluster) stateTaint(addr string) string {
	ts, _ := c.nodes[addr]["taints"].([]any)
	for _, t := range ts {
		m := t.(map[string]any)
		if m["key"] == "cke.cybozu.com/state" {
			return fmt.Sprintf("%v:%v", m["value"], m["effect"])
		}
	}
	return ""
}

// compareTakeover checks that after differs from before in no membership,
// label, annotation, taint (but those of the nodes at retainted) or other
// field: a move between CKE's integration and ckegen changes no label of
// any node (docs/beside-cke.md, "What changes in cluster.yml at
// takeover"). It returns the label differences, counted; each kind of
// difference is also one error, with its count and a node that has it.
func compareTakeover(t *testing.T, before, after rawCluster, retainted ...string) map[string]int {
	t.Helper()
	if b, a := before.set(true), after.set(true); !slices.Equal(b, a) {
		t.Errorf("control planes changed: %v -> %v", b, a)
	}
	if b, a := before.set(false), after.set(false); !slices.Equal(b, a) {
		t.Errorf("workers changed: %d -> %d", len(b), len(a))
	}
	strip := func(d map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range d {
			if k != "nodes" {
				out[k] = v
			}
		}
		return out
	}
	if b, a := strip(before.doc), strip(after.doc); !reflect.DeepEqual(b, a) {
		t.Errorf("cluster fields other than nodes changed:\n%v\n->\n%v", b, a)
	}
	diffs := map[string]int{}
	bad := map[string]int{}
	example := map[string]string{}
	unexpected := func(kind, detail string) {
		bad[kind]++
		example[kind] = detail
	}
	for addr, bn := range before.nodes {
		an := after.nodes[addr]
		if an == nil {
			continue
		}
		fields := map[string]bool{}
		for k := range bn {
			fields[k] = true
		}
		for k := range an {
			fields[k] = true
		}
		for k := range fields {
			if k == "labels" || (k == "taints" && slices.Contains(retainted, addr)) {
				continue
			}
			if !reflect.DeepEqual(bn[k], an[k]) {
				unexpected("node field "+k+" changed", fmt.Sprintf("%s: %v -> %v", addr, bn[k], an[k]))
			}
		}
		bl, al := before.labels(addr), after.labels(addr)
		for k, av := range al {
			bv, ok := bl[k]
			switch {
			case ok && bv == av:
			case !ok:
				diffs["added "+k]++
				unexpected("label "+k+" added", fmt.Sprintf("%s: %v", addr, av))
			default:
				diffs["changed "+k]++
				unexpected("label "+k+" changed", fmt.Sprintf("%s: %v -> %v", addr, bv, av))
			}
		}
		for k, bv := range bl {
			if _, ok := al[k]; !ok {
				diffs["removed "+k]++
				unexpected("label "+k+" removed", fmt.Sprintf("%s: %v", addr, bv))
			}
		}
	}
	kinds := make([]string, 0, len(bad))
	for kind := range bad {
		kinds = append(kinds, kind)
	}
	sort.Strings(kinds)
	for _, kind := range kinds {
		t.Errorf("%s on %d node(s), e.g. %s", kind, bad[kind], example[kind])
	}
	return diffs
}

// weighted is the number of workers of c whose labels hold the weight
// of their template (all three of the bundled template's have one).
func weighted(c rawCluster) int {
	n := 0
	for _, addr := range c.set(false) {
		if w, ok := c.labels(addr)["cke.cybozu.com/weight"].(string); ok && w != "" {
			n++
		}
	}
	return n
}

// sameLabels checks that every node of both before and after has the same
// labels in both, whatever else changed (membership, taints): the first
// write after a move changes no label of any node. It fails when the two
// have no node in common.
func sameLabels(t *testing.T, what string, before, after rawCluster) {
	t.Helper()
	common, changed, example := 0, 0, ""
	for addr := range before.nodes {
		if after.nodes[addr] == nil {
			continue
		}
		common++
		if bl, al := before.labels(addr), after.labels(addr); !reflect.DeepEqual(bl, al) {
			changed++
			example = fmt.Sprintf("%s: %v -> %v", addr, bl, al)
		}
	}
	if common == 0 {
		t.Errorf("%s: no node in common", what)
	}
	if changed > 0 {
		t.Errorf("%s: the labels of %d of %d nodes changed, e.g. %s", what, changed, common, example)
	}
}

// identical checks that after is before node for node: the same nodes in
// the same order, every field of each, and the same other fields.
func identical(t *testing.T, what string, before, after rawCluster) {
	t.Helper()
	if reflect.DeepEqual(before.doc, after.doc) {
		return
	}
	compareTakeover(t, before, after)
	bn, _ := before.doc["nodes"].([]any)
	an, _ := after.doc["nodes"].([]any)
	for i := range min(len(bn), len(an)) {
		if !reflect.DeepEqual(bn[i], an[i]) {
			t.Errorf("%s: the cluster is not the same node for node: node %d was %v, is %v", what, i, bn[i], an[i])
			return
		}
	}
	t.Errorf("%s: the cluster is not the same node for node (%d nodes, then %d)", what, len(bn), len(an))
}

// firstWriteAfter is the cluster as the first write the recorder saw
// after its first n writes left it.
func (e *env) firstWriteAfter(n int) rawCluster {
	e.t.Helper()
	e.rec.mu.Lock()
	rev := e.rec.writes[n].rev
	e.rec.mu.Unlock()
	return e.rawClusterAt(rev)
}

// TestBesideCKE (scenario 14, docs/beside-cke.md): ckegen's daemons beside CKE
// v1.35.4's own server and ckecli on one etcd. CKE's ckecli configures the
// integration and CKE's server generates the first cluster; ckegen's two
// daemons then elect on their own prefix and hold (OWNED_BY_CKE) until
// ckegen's ckegenctl takes over; after that they follow CKE's pace (its
// status key), hold while CKE's own integration is enabled again, survive
// a SIGKILL of their leader without touching CKE's election, and hold
// again after handback. CKE's server validates every cluster ckegen
// writes. The template has weights, which both CKE's code and ckegen copy
// onto the workers: neither the takeover nor the handback changes a label.
func TestBesideCKE(t *testing.T) {
	bin, cli := cketest.Binaries(t)
	storyStart := time.Now()
	e := newEnv(t, withoutDaemons())
	k := newCKESite(e, bin, cli)

	// Neither CKE's election nor anything else ever holds a ckegen daemon
	// under leader/.
	var ckeLeaders sync.Map
	wctx, wcancel := context.WithCancel(context.Background())
	t.Cleanup(wcancel)
	go func() {
		for resp := range e.cli.Watch(wctx, "/cke/leader/", clientv3.WithPrefix()) {
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					ckeLeaders.Store(string(ev.Kv.Value), true)
				}
			}
		}
	}()

	// CKE's ckecli sets the integration up, as an operator of a CKE v1.35
	// site did: the stored constraints are CKE's five-key document.
	k.mustCkecli("sabakan", "set-url", "http://"+e.sabAddr)
	k.mustCkecli("constraints", "set", "control-plane-count", "3")
	k.mustCkecli("constraints", "set", "minimum-workers-rate", "80")
	// The bundled template has weights (6.0, 3.0, 1.0): meaningless in the
	// rate model, but CKE's code copies them onto every worker, and a move
	// either way must change no label.
	k.mustCkecli("sabakan", "set-template", "../examples/template.yml")
	var cons map[string]any
	if err := json.Unmarshal([]byte(k.mustCkecli("constraints", "show")), &cons); err != nil {
		t.Fatal(err)
	}
	if len(cons) != 5 || cons["minimum-workers-rate"] != 80.0 || cons["control-plane-count"] != 3.0 {
		t.Fatalf("CKE's stored constraints: %v", cons)
	}

	// CKE's server generates the first cluster. v1.35.4's exits right after
	// that first Generate (its repairer finds no cluster status); restarted,
	// as systemd would.
	k.server.start(t)
	e.eventually("CKE's server to generate the first cluster", 30*time.Second, func() bool {
		resp, err := e.cli.Get(e.ctx, "/cke/cluster", clientv3.WithCountOnly())
		return err == nil && resp.Count == 1
	})
	select {
	case <-k.server.done:
		t.Logf("CKE's server exited after its first Generate, restarted: %s", lastLine(k.serverLog()))
		k.server.start(t)
	case <-time.After(10 * time.Second):
	}
	e.eventually("CKE's server to lead", 30*time.Second, func() bool {
		out, err := k.ckecli("leader")
		return err == nil && strings.TrimSpace(out) == k.hostname
	})
	first := e.rawCluster()
	// The default query returns every machine but the boot servers (one
	// per rack), all HEALTHY: every one is a node.
	machines := len(e.machines) - 12
	if cps, ws := first.set(true), first.set(false); len(cps) != 3 || len(ws) != machines-3 {
		t.Fatalf("CKE's first cluster: %d control planes, %d workers; want 3 and every other HEALTHY machine, %d", len(cps), len(ws), machines-3)
	}
	if n := weighted(first); n != machines-3 {
		t.Fatalf("CKE's first cluster: %d of %d workers carry the template's weight label; CKE copies it onto every one", n, machines-3)
	}
	e.eventually("CKE's server to validate the cluster", 15*time.Second, func() bool { return k.validated() > 0 })
	ckeKeys := e.electionKeys("/cke/leader/")

	// ckegen's daemons: their own election, and they hold.
	daemonsAt := time.Now()
	writes := e.rec.count()
	e.startDaemons("--cke-status-max-age", "3s")
	var leader string
	deadline := time.Now().Add(30 * time.Second)
	for leader != "ckegen-0" && leader != "ckegen-1" {
		if time.Now().After(deadline) {
			var seen []string
			ckeLeaders.Range(func(v, _ any) bool { seen = append(seen, v.(string)); return true })
			t.Fatalf("no ckegen daemon leads ckegen's election (ckegen's ckegenctl leader: %q); names put under CKE's leader/: %q", leader, seen)
		}
		time.Sleep(100 * time.Millisecond)
		out, _ := e.ctl("leader")
		leader = strings.TrimSpace(out)
	}
	st := e.waitBeside("OWNED_BY_CKE", daemonsAt, 30*time.Second, held("OWNED_BY_CKE"))
	if st.Mode != "beside-cke" || st.Owner != "cke" || !strings.Contains(st.Message, "ckegenctl sabakan takeover") {
		t.Errorf("ckegen's status beside CKE: %+v", st)
	}
	if out := strings.TrimSpace(e.mustCtl("leader", "--cke")); out != k.hostname {
		t.Errorf("ckegen's ckegenctl leader --cke: %q, want CKE's server %q", out, k.hostname)
	}
	if out := strings.TrimSpace(k.mustCkecli("leader")); out != k.hostname {
		t.Errorf("CKE's ckecli leader: %q, want CKE's server %q", out, k.hostname)
	}
	li := map[string]int{"ckegen-0": 0, "ckegen-1": 1}[leader]
	m := e.metrics(e.dHTTP[li])
	for _, w := range []string{"ckegen_leader 1", "ckegen_standalone 0", `ckegen_integration_held{reason="OWNED_BY_CKE"} 1`} {
		if !strings.Contains(m, "\n"+w+"\n") {
			t.Errorf("ckegen's leader's /metrics lacks %q:\n%s", w, grepLines(m, "ckegen_"))
		}
	}
	if strings.Contains(m, "\ncke_leader ") {
		t.Errorf("beside CKE's server, ckegen's leader exports cke_leader (CKE's metric):\n%s", grepLines(m, "cke_leader"))
	}
	if resp, err := http.Get("http://" + e.dHTTP[li] + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("/health while holding OWNED_BY_CKE: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	time.Sleep(time.Second)
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen wrote the cluster %d times while CKE owns the integration", n)
	}

	// A CKE server at rest (phase completed, fresh).
	status := e.startCKEStatus("completed")

	// takeover --dry-run writes nothing.
	dryOut, err := e.ctl("sabakan", "takeover", "--dry-run")
	if err != nil {
		t.Fatal(err)
	}
	if keys := e.electionKeys("/cke/sabakan/owner"); len(keys) != 0 {
		t.Errorf("takeover --dry-run wrote sabakan/owner: %v", keys)
	}
	if keys := e.electionKeys("/cke/sabakan/disabled"); len(keys) != 0 {
		t.Errorf("takeover --dry-run wrote sabakan/disabled: %v", keys)
	}
	if c := e.rawCluster(); c.rev != first.rev {
		t.Error("takeover --dry-run: the cluster was written")
	}
	if want := fmt.Sprintf("control planes: 3 -> 3; workers: %d -> %d", machines-3, machines-3); !strings.Contains(dryOut, "plan: settled") || !strings.Contains(dryOut, want) {
		t.Errorf("takeover --dry-run on CKE's cluster of an unchanged inventory, want a settled plan with %q:\n%s", want, dryOut)
	}
	t.Logf("takeover --dry-run:\n%s", dryOut)

	// takeover: the first tick changes no membership and no taint.
	takeoverAt := time.Now()
	out := e.mustCtl("sabakan", "takeover")
	if !strings.Contains(out, "ckegen now owns the sabakan integration") {
		t.Errorf("takeover said:\n%s", out)
	}
	if owner := e.electionKeys("/cke/sabakan/owner"); len(owner) != 1 || owner[0].Value != "ckegen" {
		t.Errorf("sabakan/owner after takeover: %v", owner)
	}
	if dis := e.electionKeys("/cke/sabakan/disabled"); len(dis) != 1 || dis[0].Value != "true" {
		t.Errorf("CKE's sabakan/disabled after takeover: %v", dis)
	}
	if out := strings.TrimSpace(k.mustCkecli("sabakan", "is-enabled")); out != "false" {
		t.Errorf("CKE's ckecli sabakan is-enabled after takeover: %q", out)
	}
	st = e.waitBeside("ckegen's first tick after takeover", takeoverAt, 20*time.Second, func(st besideStatus) bool {
		return st.Owner == "ckegen" && st.Result == "ok"
	})
	firstTick := st.Time.Sub(takeoverAt)
	e.converge(30 * time.Second)
	takeoverWrites := e.rec.count() - writes
	wrote := "no cluster write"
	if takeoverWrites > 0 {
		wrote = fmt.Sprintf("%d cluster write(s), the first %s after it", takeoverWrites, e.rec.writeAt(writes).Sub(takeoverAt).Round(time.Millisecond))
	}
	after := e.rawCluster()
	// The inventory did not change: no write, or one that leaves CKE's
	// cluster as it was, node for node.
	if takeoverWrites > 0 {
		identical(t, "ckegen's first write after takeover", first, e.firstWriteAfter(writes))
	}
	identical(t, "the cluster after takeover", first, after)
	t.Logf("takeover: ckegen's first tick %s after it (result %s), %s until converged; the cluster is CKE's, node for node",
		firstTick.Round(time.Millisecond), st.Result, wrote)
	if takeoverWrites > 0 {
		k.waitValidated()
	}

	// CKE busy: nothing written, even with a machine UNREACHABLE.
	workers := after.set(false)
	victim1 := serialOf(after, workers[0])
	busyAt := time.Now()
	status.set("k8s-maintain")
	st = e.waitBeside("CKE_NOT_READY", busyAt, 10*time.Second, held("CKE_NOT_READY"))
	if !strings.Contains(st.Message, "k8s-maintain") {
		t.Errorf("CKE_NOT_READY does not name the phase: %q", st.Message)
	}
	writes = e.rec.count()
	e.setState(victim1, "unreachable")
	time.Sleep(2 * time.Second)
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen wrote the cluster %d times while CKE's server is in phase k8s-maintain", n)
	}

	// ckegen's leader is SIGKILLed while it holds: the other daemon takes
	// over ckegen's own election, never CKE's.
	ckegenKeys := e.electionKeys("/cke/sabakan/ckegen/leader/")
	other := fmt.Sprintf("ckegen-%d", 1-li)
	killAt := time.Now()
	e.daemons[li].stop(syscall.SIGKILL)
	e.eventually("the other daemon to lead ckegen's election", 20*time.Second, func() bool {
		out, err := e.ctl("leader")
		return err == nil && strings.TrimSpace(out) == other
	})
	failover := time.Since(killAt)
	st = e.waitBeside("the new leader's tick", killAt, 10*time.Second, func(st besideStatus) bool {
		return st.Leader == other && st.Result == "held" && st.Reason == "CKE_NOT_READY"
	})
	failoverTick := st.Time.Sub(killAt)
	if after := e.electionKeys("/cke/sabakan/ckegen/leader/"); reflect.DeepEqual(after, ckegenKeys) {
		t.Errorf("ckegen's election keys did not change after its leader died: %v", after)
	}
	if now := e.electionKeys("/cke/leader/"); !reflect.DeepEqual(now, ckeKeys) {
		t.Errorf("CKE's election keys changed when ckegen's leader died:\n%v\n->\n%v", ckeKeys, now)
	}
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen's new leader wrote the cluster %d times while CKE's server is busy", n)
	}
	if out := strings.TrimSpace(k.mustCkecli("leader")); out != k.hostname {
		t.Errorf("CKE's ckecli leader after ckegen's failover: %q, want CKE's server %q", out, k.hostname)
	}
	if m := e.metrics(e.dHTTP[1-li]); !strings.Contains(m, "\nckegen_leader 1\n") || !strings.Contains(m, "\n"+`ckegen_integration_held{reason="CKE_NOT_READY"} 1`+"\n") {
		t.Errorf("the new leader's /metrics:\n%s", grepLines(m, "ckegen_"))
	}
	t.Logf("failover: %s led ckegen's election %s after the SIGKILL of %s, first tick at %s", other, failover.Round(time.Millisecond), leader, failoverTick.Round(time.Millisecond))

	// A stale status (CKE's server stuck) holds as well.
	status.stale("completed", 10*time.Second)
	st = e.waitBeside("CKE_NOT_READY for a stale status", time.Now(), 10*time.Second, held("CKE_NOT_READY"))
	if !strings.Contains(st.Message, "--cke-status-max-age") {
		t.Errorf("a stale status's CKE_NOT_READY: %q", st.Message)
	}
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen wrote the cluster %d times while CKE's status is stale", n)
	}

	// completed, fresh: the UNREACHABLE machine is tainted, and CKE's
	// server takes the cluster.
	status.set("completed")
	addr1 := workers[0]
	writes = e.rec.count()
	e.eventually("the UNREACHABLE worker's taint", 20*time.Second, func() bool {
		return e.rawCluster().stateTaint(addr1) == "unreachable:NoSchedule"
	})
	e.converge(30 * time.Second)
	// ckegen's first write beside CKE: the taint, and nothing else; no
	// label of any node changes.
	tainted := e.firstWriteAfter(writes)
	diffs := compareTakeover(t, after, tainted, addr1)
	if n, w := weighted(tainted), len(tainted.set(false)); n != w {
		t.Errorf("ckegen's first write after takeover: %d of %d workers carry the weight label", n, w)
	}
	if tainted.stateTaint(addr1) != "unreachable:NoSchedule" {
		t.Errorf("ckegen's first write after takeover does not taint %s: %q", addr1, tainted.stateTaint(addr1))
	}
	t.Logf("ckegen's first cluster write after takeover (%d write(s)): the taint of %s; label differences from CKE's cluster: %v", e.rec.count()-writes, addr1, diffs)
	k.waitValidated()

	// CKE's own ckecli enables CKE's integration: ckegen holds.
	activeAt := time.Now()
	k.mustCkecli("sabakan", "enable")
	e.waitBeside("CKE_INTEGRATION_ACTIVE", activeAt, 10*time.Second, held("CKE_INTEGRATION_ACTIVE"))
	writes = e.rec.count()
	addr2 := workers[1]
	e.setState(serialOf(after, addr2), "unreachable")
	time.Sleep(2 * time.Second)
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen wrote the cluster %d times while CKE's own integration is enabled", n)
	}

	// takeover again stops CKE's integration; ckegen goes on.
	out = e.mustCtl("sabakan", "takeover")
	if !strings.Contains(out, "set it to true again") {
		t.Errorf("the second takeover said:\n%s", out)
	}
	if out := strings.TrimSpace(k.mustCkecli("sabakan", "is-enabled")); out != "false" {
		t.Errorf("CKE's ckecli sabakan is-enabled after the second takeover: %q", out)
	}
	e.eventually("the second UNREACHABLE worker's taint", 20*time.Second, func() bool {
		return e.rawCluster().stateTaint(addr2) == "unreachable:NoSchedule"
	})
	e.converge(30 * time.Second)
	k.waitValidated()

	// handback: ckegen holds again.
	handbackAt := time.Now()
	e.mustCtl("sabakan", "handback")
	if out := strings.TrimSpace(k.mustCkecli("sabakan", "is-enabled")); out != "true" {
		t.Errorf("CKE's ckecli sabakan is-enabled after handback: %q", out)
	}
	st = e.waitBeside("OWNED_BY_CKE after handback", handbackAt, 10*time.Second, held("OWNED_BY_CKE"))
	if st.Owner != "cke" {
		t.Errorf("status after handback: %+v", st)
	}

	// CKE's own integration after handback. This CKE server never calls it
	// (it has no Vault); CKE's own cke --debug-sabakan runs it, CKE's
	// generator in CKE's binary, one pass (v1.35.4's then exits: its
	// repairer finds no cluster status). The inventory did not change: no
	// write, or one that leaves ckegen's cluster as it was, node for node.
	handedBack := e.rawCluster()
	writes = e.rec.count()
	k.debugPass()
	if n := e.rec.count() - writes; n > 0 {
		identical(t, "CKE's first write after handback", handedBack, e.firstWriteAfter(writes))
	}
	identical(t, "the cluster after CKE's first pass after handback", handedBack, e.rawCluster())
	writes = e.rec.count()
	e.setState(serialOf(after, workers[2]), "unreachable")
	time.Sleep(2 * time.Second)
	if n := e.rec.count() - writes; n != 0 {
		t.Fatalf("ckegen wrote the cluster %d times after handback", n)
	}
	// CKE's next pass taints the UNREACHABLE worker: its first write after
	// handback changes that taint and no label of any node.
	k.debugPass()
	if n := e.rec.count() - writes; n == 0 {
		t.Fatalf("CKE's own integration did not taint the UNREACHABLE worker %s: %s", workers[2], lastLine(k.debugLog()))
	}
	ckeWrite := e.firstWriteAfter(writes)
	diffs = compareTakeover(t, handedBack, ckeWrite, workers[2])
	if n, w := weighted(ckeWrite), len(ckeWrite.set(false)); n != w {
		t.Errorf("CKE's first write after handback: %d of %d workers carry the weight label", n, w)
	}
	if ckeWrite.stateTaint(workers[2]) != "unreachable:NoSchedule" {
		t.Errorf("CKE's first write after handback does not taint %s: %q", workers[2], ckeWrite.stateTaint(workers[2]))
	}
	t.Logf("CKE's own integration's first write after handback: the taint of %s; label differences from ckegen's cluster: %v", workers[2], diffs)
	if st, err := e.besideStatus(); err != nil || st.Result != "held" || st.Reason != "OWNED_BY_CKE" {
		t.Errorf("ckegen's status while CKE's integration writes: %+v %v", st, err)
	}

	// CKE's server all along: the same election keys, validated every
	// cluster, never refused one, still running.
	if now := e.electionKeys("/cke/leader/"); !reflect.DeepEqual(now, ckeKeys) {
		t.Errorf("CKE's election keys changed during the story:\n%v\n->\n%v", ckeKeys, now)
	}
	ckeLeaders.Range(func(v, _ any) bool {
		if v != k.hostname {
			t.Errorf("%q campaigned on CKE's leader/", v)
		}
		return true
	})
	k.checkNoInvalid()
	if !k.server.running() {
		t.Errorf("CKE's server is not running: %s", lastLine(k.serverLog()))
	}
	e.rec.check()
	t.Logf("story: %s", time.Since(storyStart).Round(100*time.Millisecond))
}

// debugPass runs CKE's own server under --debug-sabakan until it ends:
// v1.35.4's runs its integrator once, at most 5 s after it starts, and
// exits when its repairer finds no cluster status (there is none under
// --debug-sabakan).
func (k *ckeSite) debugPass() {
	k.e.t.Helper()
	// What v1.35.4's repairer says after its generator ran.
	const ran = "CKE cluster does not exist"
	before := strings.Count(k.debugLog(), ran)
	p := &proc{name: "cke-debug-sabakan", path: k.bin, log: filepath.Join(k.e.dir, "cke-debug-sabakan.log"),
		args: []string{"--config", k.config, "--debug-sabakan"}}
	p.start(k.e.t)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.stop(syscall.SIGKILL)
		k.e.t.Fatalf("CKE's own cke --debug-sabakan did not end within 30s: %s", lastLine(k.debugLog()))
	}
	if strings.Count(k.debugLog(), ran) != before+1 {
		k.e.t.Fatalf("CKE's own cke --debug-sabakan ended without one pass of its integrator: %s", lastLine(k.debugLog()))
	}
	k.e.caughtUp()
}

// caughtUp waits until the recorder, which watches the cluster, has seen
// its last write: a process may end before the watch reports its write.
func (e *env) caughtUp() {
	e.t.Helper()
	resp, err := e.cli.Get(e.ctx, "/cke/cluster")
	if err != nil || len(resp.Kvs) == 0 {
		e.t.Fatalf("the cluster key: %v", err)
	}
	rev := resp.Kvs[0].ModRevision
	e.eventually("the recorder to see the cluster's last write", 10*time.Second, func() bool {
		e.rec.mu.Lock()
		defer e.rec.mu.Unlock()
		n := len(e.rec.writes)
		return n > 0 && e.rec.writes[n-1].rev >= rev
	})
}

// debugLog is the log of CKE's own server under --debug-sabakan.
func (k *ckeSite) debugLog() string {
	data, _ := os.ReadFile(filepath.Join(k.e.dir, "cke-debug-sabakan.log"))
	return string(data)
}

// writeAt is when the recorder saw write i.
func (r *recorder) writeAt(i int) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.writes[i].at
}

// serialOf is the serial of the node at addr.
func serialOf(c rawCluster, addr string) string {
	a, _ := c.nodes[addr]["annotations"].(map[string]any)
	return fmt.Sprint(a["cke.cybozu.com/serial"])
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
