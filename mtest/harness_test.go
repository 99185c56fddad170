// Package mtest runs ckegen as an operator would: a 3-member etcd cluster,
// two ckegen daemons, the sabakan-compatible server and ckegenctl, each a
// separate process on loopback, with real faults.
package mtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
)

// binDir holds the binaries TestMain builds.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ckegen-mtest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	cmd := exec.Command("go", "build", "-o", binDir+"/", "../cmd/ckegen", "../cmd/ckegenctl", "../cmd/fakesabakan", "./etcd")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func freePort(t *testing.T) int { return etcdtest.FreePort(t) }

// proc is a started process with its log file.
type proc struct {
	name string
	path string // the binary; default binDir/name
	args []string
	env  []string // added to the test's environment
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) start(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(p.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	bin := p.path
	if bin == "" {
		bin = filepath.Join(binDir, p.name)
	}
	p.cmd = exec.Command(bin, p.args...)
	p.cmd.Env = append(os.Environ(), p.env...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.done = make(chan struct{})
	go func() { _ = p.cmd.Wait(); f.Close(); close(p.done) }()
}

func (p *proc) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// signal sends sig and waits for the exit (SIGKILL after 10 s).
func (p *proc) stop(sig syscall.Signal) {
	if !p.running() {
		return
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// env is one data center: etcd members, daemons, sabakan, and what the test
// observes.
type env struct {
	t        *testing.T
	dir      string
	etcd     []*proc
	clients  []string // etcd client URLs
	daemons  []*proc
	dHTTP    []string
	sabakan  *proc
	sabAddr  string
	cli      *clientv3.Client
	rec      *recorder
	ctx      context.Context
	machines []string // serials in the inventory
}

const (
	interval   = "500ms"
	sessionTTL = 3 * time.Second
	retireWait = 4 * time.Second
)

// envOption changes what newEnv starts; with none, newEnv is the
// scenarios' usual data center.
type envOption func(*envOptions)

type envOptions struct {
	daemonArgs []string // added to every ckegen daemon's flags
	template   string   // the template file set with ckegenctl
	// bare: only etcd and sabakan; the scenario starts the daemons
	// (startDaemons) and configures the integration itself.
	bare bool
}

// withDaemonArgs adds flags to every ckegen daemon.
func withDaemonArgs(args ...string) envOption {
	return func(o *envOptions) { o.daemonArgs = append(o.daemonArgs, args...) }
}

// withTemplate sets this template file instead of the bundled one.
func withTemplate(file string) envOption {
	return func(o *envOptions) { o.template = file }
}

// withoutDaemons starts only etcd and sabakan, and stores no settings.
func withoutDaemons() envOption {
	return func(o *envOptions) { o.bare = true }
}

// newEnv starts everything and configures the integration with ckegenctl:
// 3 control planes, 20 workers, the bundled template.
func newEnv(t *testing.T, opts ...envOption) *env {
	eo := envOptions{template: "../examples/template.yml"}
	for _, opt := range opts {
		opt(&eo)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	e := &env{t: t, dir: t.TempDir(), ctx: ctx}
	t.Cleanup(func() {
		for _, d := range e.daemons {
			d.stop(syscall.SIGKILL)
		}
		if e.sabakan != nil {
			e.sabakan.stop(syscall.SIGKILL)
		}
		if e.rec != nil {
			e.rec.stop()
		}
		if e.cli != nil {
			e.cli.Close()
		}
		for _, m := range e.etcd {
			m.stop(syscall.SIGKILL)
		}
		cancel()
		if t.Failed() {
			e.dumpLogs()
		}
	})

	// etcd: three members.
	var peers []string
	for i := 0; i < 3; i++ {
		e.clients = append(e.clients, fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		peers = append(peers, fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	}
	var initial []string
	for i, p := range peers {
		initial = append(initial, fmt.Sprintf("m%d=%s", i, p))
	}
	for i := 0; i < 3; i++ {
		m := &proc{name: "etcd", log: filepath.Join(e.dir, fmt.Sprintf("etcd%d.log", i)), args: []string{
			"--name", fmt.Sprintf("m%d", i),
			"--data-dir", filepath.Join(e.dir, fmt.Sprintf("etcd%d", i)),
			"--listen-client-urls", e.clients[i], "--advertise-client-urls", e.clients[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "mtest", "--log-level", "error",
		}}
		m.start(t)
		e.etcd = append(e.etcd, m)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: e.clients, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	e.cli = cli
	e.eventually("etcd to have quorum", 30*time.Second, func() bool {
		c, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := cli.Put(c, "/mtest/ready", "1")
		return err == nil
	})
	e.rec = newRecorder(t, cli)

	// sabakan: 12 racks of 20 machines, roles compute/storage/gpu.
	o := dcgen.Default(time.Now().UTC())
	o.UnhealthyPct = 0
	ms := dcgen.Machines(o)
	for _, m := range ms {
		e.machines = append(e.machines, m.Spec.Serial)
	}
	data, _ := json.Marshal(ms)
	mfile := filepath.Join(e.dir, "machines.json")
	if err := os.WriteFile(mfile, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.sabAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	e.sabakan = &proc{name: "fakesabakan", log: filepath.Join(e.dir, "sabakan.log"),
		args: []string{"--listen", e.sabAddr, "--machines", mfile, "--faults"}}
	e.sabakan.start(t)
	e.eventually("sabakan to serve", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + e.sabAddr + "/api/v1/state/" + e.machines[0])
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})

	if eo.bare {
		return e
	}
	e.startDaemons(eo.daemonArgs...)
	e.mustCtl("sabakan", "set-url", "http://"+e.sabAddr)
	e.mustCtl("constraints", "set", "control-plane-count", "3")
	e.mustCtl("constraints", "set", "minimum-workers", "20")
	e.mustCtl("sabakan", "set-template", eo.template)
	return e
}

// startDaemons starts two ckegen daemons, ckegen-0 and ckegen-1, with these flags
// added.
func (e *env) startDaemons(extra ...string) {
	t := e.t
	for i := 0; i < 2; i++ {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		d := &proc{name: "ckegen", log: filepath.Join(e.dir, fmt.Sprintf("ckegen%d.log", i)), args: append([]string{
			"--etcd-endpoints", strings.Join(e.clients, ","), "--http", addr, "--name", fmt.Sprintf("ckegen-%d", i),
			"--interval", interval, "--session-ttl", sessionTTL.String(), "--retire-wait", retireWait.String(),
			"--sabakan-timeout", "1s", "--min-backoff", "200ms",
		}, extra...),
			// well waits this long between SIGTERM and the stop (5 s by
			// default, longer than the session TTL here).
			env: []string{"CANCELLATION_DELAY_SECONDS=0"},
		}
		d.start(t)
		e.daemons = append(e.daemons, d)
		e.dHTTP = append(e.dHTTP, addr)
	}
}

func (e *env) dumpLogs() {
	files, _ := filepath.Glob(filepath.Join(e.dir, "*.log"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) > 40 {
			lines = lines[len(lines)-40:]
		}
		e.t.Logf("--- %s (last lines)\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

// ckegenctl runs the built ckegenctl against the etcd cluster and returns its
// standard output; when it fails, the error carries its standard error.
// The two are kept apart so that nothing but the command's output is ever
// parsed.
func (e *env) ctl(args ...string) (string, error) {
	c, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, filepath.Join(binDir, "ckegenctl"), append([]string{"--endpoints", strings.Join(e.clients, ",")}, args...)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%w: %s", err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}

func (e *env) mustCtl(args ...string) string {
	e.t.Helper()
	out, err := e.ctl(args...)
	if err != nil {
		e.t.Fatalf("ckegenctl %v: %v", args, err)
	}
	return out
}

// rest calls the compatible server's REST API as sabakan's users do.
func (e *env) rest(method, path, body string) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, "http://"+e.sabAddr+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		data, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("%s %s %q: %s %s", method, path, body, resp.Status, data)
	}
}

func (e *env) setState(serial, state string) {
	e.t.Helper()
	e.rest(http.MethodPut, "/api/v1/state/"+serial, state)
}

func (e *env) eventually(what string, timeout time.Duration, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// status is sabakan/status as ckegenctl prints it.
type status struct {
	Result              string    `json:"result"`
	Reason              string    `json:"reason"`
	Message             string    `json:"message"`
	Time                time.Time `json:"time"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	Leader              string    `json:"leader"`
	LastOp              string    `json:"lastOp"`
	Mode                string    `json:"mode"`
}

func (e *env) status() (status, error) {
	var st status
	out, err := e.ctl("sabakan", "status", "-o", "json")
	if err != nil {
		return st, err
	}
	err = json.Unmarshal([]byte(out), &st)
	return st, err
}

// node and clusterDoc are cluster.yml as ckegenctl prints it.
type node struct {
	Address      string            `json:"address"`
	ControlPlane bool              `json:"control_plane"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	Taints       []struct {
		Key, Value, Effect string
	} `json:"taints"`
}

func (n *node) serial() string { return n.Annotations["cke.cybozu.com/serial"] }

func (n *node) stateTaint() string {
	for _, t := range n.Taints {
		if t.Key == "cke.cybozu.com/state" {
			return t.Value + ":" + t.Effect
		}
	}
	return ""
}

type clusterDoc struct {
	Nodes []node `json:"nodes"`
}

func (c *clusterDoc) cps() []node {
	var out []node
	for _, n := range c.Nodes {
		if n.ControlPlane {
			out = append(out, n)
		}
	}
	return out
}

func (c *clusterDoc) workers() []node {
	var out []node
	for _, n := range c.Nodes {
		if !n.ControlPlane {
			out = append(out, n)
		}
	}
	return out
}

func (c *clusterDoc) find(addr string) *node {
	for i := range c.Nodes {
		if c.Nodes[i].Address == addr {
			return &c.Nodes[i]
		}
	}
	return nil
}

func (e *env) cluster() *clusterDoc {
	e.t.Helper()
	out := e.mustCtl("cluster", "get", "-o", "json")
	var c clusterDoc
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		e.t.Fatalf("cluster get: %v\n%s", err, out)
	}
	return &c
}

// converge waits until, after the call, a tick has succeeded and no
// cluster write has happened for a quiet period of several ticks (no
// flapping); it returns the number of writes it saw.
func (e *env) converge(timeout time.Duration) int {
	e.t.Helper()
	const quiet = 3 * time.Second
	start := time.Now()
	startCount := e.rec.count()
	deadline := start.Add(timeout)
	for {
		if time.Now().After(deadline) {
			st, _ := e.status()
			e.t.Fatalf("no convergence within %s (last status %+v)", timeout, st)
		}
		since := e.rec.lastWrite()
		if since.Before(start) {
			since = start
		}
		st, err := e.status()
		if err == nil && st.Result == "ok" && st.Time.After(start.Add(time.Second)) && time.Since(since) > quiet {
			return e.rec.count() - startCount
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitStatus waits for a status with the given result and reason whose
// message contains msg.
func (e *env) waitStatus(result, reason, msg string, timeout time.Duration) status {
	e.t.Helper()
	var last status
	e.eventually(fmt.Sprintf("status %s %s %q", result, reason, msg), timeout, func() bool {
		st, err := e.status()
		last = st
		return err == nil && st.Result == result && st.Reason == reason && strings.Contains(st.Message, msg)
	})
	return last
}

// recorder watches every write of the cluster key and checks, write by
// write, what must never happen.
type recorder struct {
	t      *testing.T
	cancel context.CancelFunc
	mu     sync.Mutex
	writes []write
	done   chan struct{}
}

type write struct {
	at  time.Time
	rev int64
	c   clusterDoc
}

func newRecorder(t *testing.T, cli *clientv3.Client) *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := &recorder{t: t, cancel: cancel, done: make(chan struct{})}
	ch := cli.Watch(clientv3.WithRequireLeader(ctx), "/cke/cluster")
	go func() {
		defer close(r.done)
		for resp := range ch {
			for _, ev := range resp.Events {
				var c clusterDoc
				if json.Unmarshal(ev.Kv.Value, &c) != nil {
					continue
				}
				r.mu.Lock()
				r.writes = append(r.writes, write{at: time.Now(), rev: ev.Kv.ModRevision, c: c})
				r.mu.Unlock()
			}
		}
	}()
	return r
}

func (r *recorder) stop() {
	r.cancel()
	<-r.done
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.writes)
}

func (r *recorder) lastWrite() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.writes) == 0 {
		return time.Time{}
	}
	return r.writes[len(r.writes)-1].at
}

// check asserts the invariants over every write so far: no address twice,
// at least one control plane, and etcd quorum kept from each write to the
// next (of the previous control planes, one leaves, or fewer than half).
func (r *recorder) check() {
	r.t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, w := range r.writes {
		seen := map[string]bool{}
		for _, n := range w.c.Nodes {
			if seen[n.Address] {
				r.t.Errorf("write %d: %s listed twice", i, n.Address)
			}
			seen[n.Address] = true
		}
		if len(w.c.cps()) == 0 {
			r.t.Errorf("write %d: no control plane", i)
		}
		if i == 0 {
			continue
		}
		prev := r.writes[i-1].c.cps()
		now := map[string]bool{}
		for _, n := range w.c.cps() {
			now[n.Address] = true
		}
		lost := 0
		for _, n := range prev {
			if !now[n.Address] {
				lost++
			}
		}
		if lost > 1 && 2*lost >= len(prev) {
			r.t.Errorf("write %d: %d of %d control planes left in one step", i, lost, len(prev))
		}
	}
}

// checkHistory: every cluster write is one applied change in the history,
// with one operation.
func (e *env) checkHistory() {
	e.t.Helper()
	var h []struct {
		Op              string `json:"op"`
		ClusterRevision int64  `json:"clusterRevision"`
	}
	if err := json.Unmarshal([]byte(e.mustCtl("sabakan", "history", "-o", "json")), &h); err != nil {
		e.t.Fatal(err)
	}
	revs := map[int64]string{}
	for _, x := range h {
		revs[x.ClusterRevision] = x.Op
	}
	e.rec.mu.Lock()
	defer e.rec.mu.Unlock()
	for _, w := range e.rec.writes {
		if _, ok := revs[w.rev]; !ok && len(h) < 100 {
			e.t.Errorf("cluster write at revision %d has no history entry", w.rev)
		}
	}
}

// metrics returns a daemon's /metrics.
func (e *env) metrics(addr string) string {
	e.t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return string(data)
}

// grepLines returns the lines of s that start with prefix.
func grepLines(s, prefix string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func writeFile(name, content string) error { return os.WriteFile(name, []byte(content), 0o644) }

func readFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func clientv3WithPrefix() []clientv3.OpOption { return []clientv3.OpOption{clientv3.WithPrefix()} }
