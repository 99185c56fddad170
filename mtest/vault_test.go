package mtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/internal/testutil/vaulttest"
)

// vaultSite is one CKE server on the scenario's etcd under a prefix of its
// own, with a compatible sabakan of its own and the scenario's Vault, set
// up as a CKE site is: CKE's ckecli initializes the Vault (PKI, policy,
// AppRole, the connection stored in etcd) and stores the SSH key in it.
// The nodes' addresses (10.x) have no SSH, so CKE's server finds every
// node unreachable and calls its integration at every loop.
type vaultSite struct {
	*ckeSite
	label   string // in messages: "ours" or "CKE's"
	prefix  string // CKE's etcd prefix, "/cke/"
	sabAddr string
	vault   *vaulttest.Server
	starts  int // how many times the server was started
}

func newVaultSite(e *env, v *vaulttest.Server, label, name, bin, cli, prefix, sabAddr string) *vaultSite {
	e.t.Helper()
	k := &ckeSite{e: e, bin: bin, cli: cli, config: filepath.Join(e.dir, name+"-config.yml")}
	var eps []string
	for _, c := range e.clients {
		eps = append(eps, fmt.Sprintf("%q", c))
	}
	if err := writeFile(k.config, fmt.Sprintf("endpoints: [%s]\nprefix: %s\n", strings.Join(eps, ", "), prefix)); err != nil {
		e.t.Fatal(err)
	}
	h, err := os.Hostname()
	if err != nil {
		e.t.Fatal(err)
	}
	k.hostname = h
	k.server = &proc{name: name, path: bin, log: filepath.Join(e.dir, name+".log"), args: []string{
		"--config", k.config, "--http", fmt.Sprintf("127.0.0.1:%d", freePort(e.t)),
		"--interval", "1s", "--session-ttl", "5s",
	}}
	// Registered after newEnv's cleanup, so it runs first: CKE's server
	// stops before etcd.
	e.t.Cleanup(func() { k.server.stop(syscall.SIGKILL) })
	return &vaultSite{ckeSite: k, label: label, prefix: prefix, sabAddr: sabAddr, vault: v}
}

// vcli runs CKE's ckecli with the Vault's address and root token in its
// environment, as an operator sets them for `ckecli vault init`.
func (s *vaultSite) vcli(args ...string) string {
	s.e.t.Helper()
	c, cancel := context.WithTimeout(s.e.ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(c, s.cli, append([]string{"--config", s.config}, args...)...)
	cmd.Env = append(os.Environ(), s.vault.Env()...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		s.e.t.Fatalf("%s: CKE's ckecli %v: %v: %s", s.label, args, err, strings.TrimSpace(errOut.String()))
	}
	return out.String()
}

// configure sets the site up with CKE's ckecli: the Vault, the SSH key,
// sabakan's URL, the constraints (CKE v1.35's rate model, and repairs
// allowed: maximum-repair-queue-entries is 0 by default) and the template.
func (s *vaultSite) configure(sshKey string) {
	s.e.t.Helper()
	start := time.Now()
	s.vcli("vault", "init")
	s.vcli("vault", "ssh-privkey", sshKey)
	s.vcli("sabakan", "set-url", "http://"+s.sabAddr)
	s.vcli("constraints", "set", "control-plane-count", "3")
	s.vcli("constraints", "set", "minimum-workers-rate", "80")
	s.vcli("constraints", "set", "maximum-repair-queue-entries", "10")
	s.vcli("sabakan", "set-template", "../examples/template-rate.yml")
	s.e.t.Logf("%s: ckecli vault init, ssh-privkey, set-url, constraints and template in %s", s.label, time.Since(start).Round(time.Millisecond))
}

func (s *vaultSite) start() {
	s.server.start(s.e.t)
	s.starts++
}

// value reads a key under the site's prefix; "" when it does not exist.
func (s *vaultSite) value(key string) string {
	s.e.t.Helper()
	resp, err := s.e.cli.Get(s.e.ctx, s.prefix+key)
	if err != nil {
		s.e.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return ""
	}
	return string(resp.Kvs[0].Value)
}

// clusterDoc is the site's stored cluster; nil before the first.
func (s *vaultSite) clusterDoc() *clusterDoc {
	s.e.t.Helper()
	v := s.value("cluster")
	if v == "" {
		return nil
	}
	var c clusterDoc
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		s.e.t.Fatalf("%s: the cluster: %v", s.label, err)
	}
	return &c
}

// phase is the phase of CKE's status key, written at every loop of CKE's
// server before it calls its integration.
func (s *vaultSite) phase() (string, time.Time) {
	s.e.t.Helper()
	var st struct {
		Phase     string    `json:"phase"`
		Timestamp time.Time `json:"timestamp"`
	}
	if v := s.value("status"); v != "" {
		if err := json.Unmarshal([]byte(v), &st); err != nil {
			s.e.t.Fatalf("%s: CKE's status: %v", s.label, err)
		}
	}
	return st.Phase, st.Timestamp
}

// waitPhase waits until CKE's server is in phase at a loop that began
// after since.
func (s *vaultSite) waitPhase(phase string, since time.Time, timeout time.Duration) time.Duration {
	s.e.t.Helper()
	s.e.eventually(fmt.Sprintf("%s: CKE's phase %s", s.label, phase), timeout, func() bool {
		p, at := s.phase()
		return p == phase && at.After(since)
	})
	return time.Since(since)
}

// repairs are the address and operation of each entry of CKE's repair
// queue, in the queue's order.
func (s *vaultSite) repairs() []string {
	s.e.t.Helper()
	resp, err := s.e.cli.Get(s.e.ctx, s.prefix+"repairs/data/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
	if err != nil {
		s.e.t.Fatal(err)
	}
	var out []string
	for _, kv := range resp.Kvs {
		var entry struct{ Address, Operation string }
		if err := json.Unmarshal(kv.Value, &entry); err != nil {
			s.e.t.Fatalf("%s: repair entry %s: %v", s.label, kv.Key, err)
		}
		out = append(out, entry.Address+" "+entry.Operation)
	}
	return out
}

// sabakan calls the site's compatible server's REST API.
func (s *vaultSite) sabakan(method, path, body string) string {
	s.e.t.Helper()
	req, err := http.NewRequestWithContext(s.e.ctx, method, "http://"+s.sabAddr+path, strings.NewReader(body))
	if err != nil {
		s.e.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	if resp.StatusCode/100 != 2 {
		s.e.t.Fatalf("%s: %s %s %q: %s %s", s.label, method, path, body, resp.Status, out.String())
	}
	return out.String()
}

// nodeJSON is the node at addr in c as JSON; "" when it is not there.
func nodeJSON(c *clusterDoc, addr string) string {
	if c == nil {
		return ""
	}
	n := c.find(addr)
	if n == nil {
		return ""
	}
	data, _ := json.Marshal(n)
	return string(data)
}

// describe says what became of the node at addr from before to after.
func describe(before, after *clusterDoc, addr string) string {
	b, a := before.find(addr), after.find(addr)
	role := func(n *node) string {
		if n.ControlPlane {
			return "control plane"
		}
		return "worker"
	}
	switch {
	case b == nil && a != nil:
		return "added as a " + role(a)
	case a == nil:
		return "removed"
	}
	var out []string
	if b.ControlPlane != a.ControlPlane {
		out = append(out, role(b)+" -> "+role(a))
	}
	if a.stateTaint() != b.stateTaint() {
		out = append(out, fmt.Sprintf("taint %q -> %q", b.stateTaint(), a.stateTaint()))
	}
	if len(out) == 0 {
		return "changed"
	}
	return strings.Join(out, ", ")
}

// vaultPair is ckegen inside CKE's server and CKE's own server, side by
// side, each with its own sabakan holding the same data center.
type vaultPair struct {
	e            *env
	ours, theirs *vaultSite
	// times: each change, and how long each server took to write it.
	times []string
}

// follow makes a change in both sabakans (apply, given each site) and
// measures, for each server and each of addrs, the time from the change to
// the cluster write that changes the node at that address (polling etcd
// every 20 ms). Ours must write them all within 30 s; CKE's own is the
// reference, given 10 s (its generator does not make every change
// ckegen's does), and what it did not write is logged. It returns our
// cluster after the last write.
func (p *vaultPair) follow(what string, addrs []string, apply func(*vaultSite)) *clusterDoc {
	p.e.t.Helper()
	sites := []*vaultSite{p.ours, p.theirs}
	before := make([]*clusterDoc, 2)
	for i, s := range sites {
		before[i] = s.clusterDoc()
	}
	start := time.Now()
	for _, s := range sites {
		apply(s)
	}
	deadlines := []time.Time{start.Add(30 * time.Second), start.Add(10 * time.Second)}
	took := [2]map[string]time.Duration{{}, {}}
	did := [2]map[string]string{{}, {}}
	var last *clusterDoc
	for {
		waiting := false
		for i, s := range sites {
			if len(took[i]) == len(addrs) || time.Now().After(deadlines[i]) {
				continue
			}
			waiting = true
			c := s.clusterDoc()
			for _, a := range addrs {
				if _, ok := took[i][a]; !ok && nodeJSON(c, a) != nodeJSON(before[i], a) {
					took[i][a], did[i][a] = time.Since(start), describe(before[i], c, a)
					if i == 0 {
						last = c
					}
				}
			}
		}
		if !waiting {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	line := what + ":"
	for i, s := range sites {
		var parts []string
		for _, a := range addrs {
			if d, ok := took[i][a]; ok {
				parts = append(parts, fmt.Sprintf("%s %s %s", a, did[i][a], d.Round(10*time.Millisecond)))
			} else {
				parts = append(parts, fmt.Sprintf("%s: no write within %s", a, deadlines[i].Sub(start)))
			}
		}
		line += fmt.Sprintf(" %s: %s;", s.label, strings.Join(parts, ", "))
	}
	p.times = append(p.times, strings.TrimSuffix(line, ";"))
	p.e.t.Log(p.times[len(p.times)-1])
	if len(took[0]) != len(addrs) {
		p.e.t.Fatalf("%s: ckegen inside CKE's server did not write the cluster within %s: %s", what, deadlines[0].Sub(start), lastLine(p.ours.serverLog()))
	}
	return last
}

// setState sets a machine's state in both sabakans.
func setState(serial, state string) func(*vaultSite) {
	return func(s *vaultSite) { s.sabakan(http.MethodPut, "/api/v1/state/"+serial, state) }
}

// sshKey writes an ed25519 private key (PKCS #8, which CKE's SSH client
// reads) for `ckecli vault ssh-privkey`.
func sshKey(t *testing.T, dir string) string {
	t.Helper()
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(dir, "ssh-key")
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// startSabakan starts another compatible server with the scenario's data
// center and returns its address.
func (e *env) startSabakan(name string) string {
	e.t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(e.t))
	p := &proc{name: "fakesabakan", log: filepath.Join(e.dir, name+".log"),
		args: []string{"--listen", addr, "--machines", filepath.Join(e.dir, "machines.json")}}
	p.start(e.t)
	e.t.Cleanup(func() { p.stop(syscall.SIGKILL) })
	e.eventually(name+" to serve", 20*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/api/v1/state/" + e.machines[0])
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return addr
}

// insideStatus is ckegen's status as `ckegenctl sabakan status -o json`
// prints it, with what it read of Kubernetes.
type insideStatus struct {
	Result     string    `json:"result"`
	Reason     string    `json:"reason"`
	Time       time.Time `json:"time"`
	Mode       string    `json:"mode"`
	Kubernetes *struct {
		Read bool `json:"read"`
	} `json:"kubernetes"`
}

func (e *env) insideStatus() insideStatus {
	e.t.Helper()
	var st insideStatus
	out := e.mustCtl("sabakan", "status", "-o", "json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("sabakan status -o json: %v\n%s", err, out)
	}
	return st
}

// waitTick waits for a tick of ckegen's that began after since: CKE's
// server called Do.
func (e *env) waitTick(what string, since time.Time, timeout time.Duration) insideStatus {
	e.t.Helper()
	var st insideStatus
	e.eventually(what, timeout, func() bool {
		st = e.insideStatus()
		return st.Time.After(since)
	})
	return st
}

// distinct is s sorted, each element once.
func distinct(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// TestInsideCKEVault: CKE v1.35.4's server with ckegen inside, with a real
// Vault (OpenBao in dev mode) set up by CKE's own ckecli, on nodes without
// SSH: CKE's server gets past Vault and calls its integration at every
// loop, in phase upgrade-aborted (no config-version) and
// etcd-boot-aborted (config-version 2), and ckegen follows sabakan
// through that normal path: a control plane UNREACHABLE, a worker
// RETIRING, machines added, a worker UNREACHABLE. CKE's own server runs
// beside it with the same Vault, under its own prefix, with the same data
// center in its own sabakan: the repair queue entries are the same, but
// for the one deliberate difference (docs/inside-cke.md): CKE's registers
// them again at every loop while no API server answers, ours once; CKE's
// ckecli auto-repair disable stops both. With no API server ready,
// ckegen's status says the Kubernetes Nodes were not read and no taint
// comes from them; Do never ends the server.
func TestInsideCKEVault(t *testing.T) {
	inside := cketest.Inside(t)
	own, cli := cketest.Binaries(t)
	v := vaulttest.Start(t)
	storyStart := time.Now()
	e := newEnv(t, withoutDaemons())
	p := &vaultPair{e: e,
		ours:   newVaultSite(e, v, "ours", "cke-inside", inside, cli, "/cke/", e.sabAddr),
		theirs: newVaultSite(e, v, "CKE's", "cke-own", own, cli, "/cke-own/", e.startSabakan("sabakan-own"))}
	ours, theirs := p.ours, p.theirs
	key := sshKey(t, e.dir)
	ours.configure(key)
	theirs.configure(key)

	// Both servers start. CKE's own exits once after its first Generate
	// (its repairer finds no cluster status): restarted, as systemd would.
	start := time.Now()
	ours.start()
	theirs.start()
	e.eventually("both first clusters", 60*time.Second, func() bool { return ours.value("cluster") != "" && theirs.value("cluster") != "" })
	select {
	case <-theirs.server.done:
		t.Logf("CKE's own server exited after its first Generate, restarted: %s", lastLine(theirs.serverLog()))
		theirs.start()
	case <-time.After(10 * time.Second):
		t.Log("CKE's own server did not exit after its first Generate")
	}
	// Past Vault: CKE's server reads the status of the (unreachable)
	// nodes and calls Do with it; phase upgrade-aborted without a
	// config-version key.
	tookOurs := ours.waitPhase("upgrade-aborted", start, 60*time.Second)
	st := e.waitTick("ckegen's tick in phase upgrade-aborted", time.Now(), 30*time.Second)
	theirs.waitPhase("upgrade-aborted", start, 60*time.Second)
	for _, s := range []*vaultSite{ours, theirs} {
		if log := s.serverLog(); !strings.Contains(log, "connected to vault") || strings.Contains(log, "vault is not connected") {
			t.Errorf("%s: CKE's server did not connect to Vault: %s", s.label, lastLine(log))
		}
	}
	if st.Mode != "inside-cke" || st.Result != "ok" {
		t.Errorf("ckegen's status inside CKE's server: %+v", st)
	}
	t.Logf("ours: phase upgrade-aborted %s after the start, ckegen's tick %s", tookOurs.Round(10*time.Millisecond), st.Time.Sub(start).Round(10*time.Millisecond))

	first := ours.clusterDoc()
	if n := len(theirs.clusterDoc().Nodes); len(first.cps()) != 3 || len(first.Nodes) != n {
		t.Fatalf("first clusters: ours %d nodes (%d control planes), CKE's %d", len(first.Nodes), len(first.cps()), n)
	}
	changed := map[string]bool{} // addresses whose machine left HEALTHY

	// (1) A control plane UNREACHABLE: tainted (the rate model, CKE
	// v1.35's, does not replace it).
	cp := first.cps()[0]
	changed[cp.Address] = true
	c := p.follow("a control plane UNREACHABLE", []string{cp.Address}, setState(cp.serial(), "unreachable"))
	if n := c.find(cp.Address); n == nil || !n.ControlPlane || n.stateTaint() != "unreachable:NoSchedule" {
		t.Errorf("the unreachable control plane in our cluster: %+v", n)
	}

	// The workers of both clusters now, in the order of ours.
	var workers []node
	theirsNow := theirs.clusterDoc()
	for _, w := range ours.clusterDoc().workers() {
		if n := theirsNow.find(w.Address); n != nil && !n.ControlPlane && !changed[w.Address] {
			workers = append(workers, w)
		}
	}

	// (2) A worker RETIRING: tainted.
	retiring := workers[0]
	changed[retiring.Address] = true
	c = p.follow("a worker RETIRING", []string{retiring.Address}, setState(retiring.serial(), "retiring"))
	if n := c.find(retiring.Address); n == nil || n.stateTaint() != "retiring:NoExecute" {
		t.Errorf("the retiring worker in our cluster: %+v", n)
	}

	// (3) Machines added (registered, then HEALTHY): workers.
	added := []string{`{"serial":"vault-new-1","rack":0,"role":"compute","bmc":{"type":"IPMI-2.0"}}`,
		`{"serial":"vault-new-2","rack":1,"role":"storage","bmc":{"type":"IPMI-2.0"}}`}
	var addedAddrs []string
	for _, s := range []*vaultSite{ours, theirs} {
		s.sabakan(http.MethodPost, "/api/v1/machines", "["+strings.Join(added, ",")+"]")
	}
	for _, serial := range []string{"vault-new-1", "vault-new-2"} {
		var ms []struct{ Spec struct{ IPv4 []string } }
		if err := json.Unmarshal([]byte(ours.sabakan(http.MethodGet, "/api/v1/machines?serial="+serial, "")), &ms); err != nil || len(ms) != 1 || len(ms[0].Spec.IPv4) == 0 {
			t.Fatalf("the added machine %s: %v %v", serial, ms, err)
		}
		addedAddrs = append(addedAddrs, ms[0].Spec.IPv4[0])
	}
	c = p.follow("two machines added", addedAddrs, func(s *vaultSite) {
		for _, serial := range []string{"vault-new-1", "vault-new-2"} {
			setState(serial, "healthy")(s)
		}
	})
	for _, a := range addedAddrs {
		if n := c.find(a); n == nil || n.ControlPlane {
			t.Errorf("the added machine %s in our cluster: %+v", a, n)
		}
	}

	// (4) A worker UNHEALTHY (which changes no node: neither generator
	// taints it); then the repair queues. Each server had several loops
	// since the control plane went UNREACHABLE.
	unhealthy := workers[1]
	changed[unhealthy.Address] = true
	for _, s := range []*vaultSite{ours, theirs} {
		setState(unhealthy.serial(), "unhealthy")(s)
	}
	want := []string{cp.Address + " unreachable", unhealthy.Address + " unhealthy"}
	p.compareRepairs("upgrade-aborted", "a worker UNHEALTHY", time.Now(), want)

	// (5) config-version 2: phase etcd-boot-aborted; CKE's server calls
	// Do there too, and ckegen follows sabakan.
	switched := time.Now()
	for _, s := range []*vaultSite{ours, theirs} {
		if _, err := e.cli.Put(e.ctx, s.prefix+"config-version", "2"); err != nil {
			t.Fatal(err)
		}
	}
	ours.waitPhase("etcd-boot-aborted", switched, 30*time.Second)
	theirs.waitPhase("etcd-boot-aborted", switched, 30*time.Second)
	e.waitTick("ckegen's tick in phase etcd-boot-aborted", time.Now(), 30*time.Second)
	unreachable := workers[2]
	changed[unreachable.Address] = true
	at := time.Now()
	c = p.follow("a worker UNREACHABLE (phase etcd-boot-aborted)", []string{unreachable.Address}, setState(unreachable.serial(), "unreachable"))
	if n := c.find(unreachable.Address); n == nil || n.stateTaint() != "unreachable:NoSchedule" {
		t.Errorf("the unreachable worker in our cluster: %+v", n)
	}
	want = append(want, unreachable.Address+" unreachable")
	p.compareRepairs("etcd-boot-aborted", "a worker UNREACHABLE", at, want)

	// (6) CKE's ckecli auto-repair disable stops both: a worker turning
	// UNREACHABLE is tainted, and queued by neither.
	disabled := time.Now()
	for _, s := range []*vaultSite{ours, theirs} {
		s.vcli("auto-repair", "disable")
	}
	// A loop of each server that began after the switch: the queues as
	// they stay.
	ours.waitPhase("etcd-boot-aborted", disabled.Add(time.Second), 30*time.Second)
	theirs.waitPhase("etcd-boot-aborted", disabled.Add(time.Second), 30*time.Second)
	oursBefore, theirsBefore := ours.repairs(), theirs.repairs()
	off := workers[3]
	changed[off.Address] = true
	p.follow("a worker UNREACHABLE, auto-repair disabled", []string{off.Address}, setState(off.serial(), "unreachable"))
	loops := time.Now()
	e.waitTick("two more ticks of ckegen's", loops.Add(1500*time.Millisecond), 30*time.Second)
	theirs.waitPhase("etcd-boot-aborted", loops.Add(1500*time.Millisecond), 30*time.Second)
	if now := ours.repairs(); !slices.Equal(now, oursBefore) {
		t.Errorf("auto-repair disabled: our queue went from %v to %v", oursBefore, now)
	}
	if now := theirs.repairs(); !slices.Equal(now, theirsBefore) {
		t.Errorf("auto-repair disabled: CKE's queue went from %d to %d entries (the test's inputs are not what it means)", len(theirsBefore), len(now))
	}
	t.Logf("auto-repair disabled with CKE's ckecli: the queues stay at %d entries (ours) and %d (CKE's)", len(oursBefore), len(theirsBefore))

	// (7) No API server is ready: ckegen's status says the Nodes were not
	// read, and no taint comes from Kubernetes: the only taints are the
	// template's and those of the machines that left HEALTHY.
	st = e.insideStatus()
	if st.Kubernetes != nil && st.Kubernetes.Read {
		t.Errorf("ckegen's status says the Kubernetes Nodes were read, with no API server ready: %+v", st.Kubernetes)
	}
	for _, l := range strings.Split(e.mustCtl("sabakan", "status"), "\n") {
		if strings.HasPrefix(l, "KUBERNETES") && strings.Contains(l, "read:") {
			t.Errorf("ckegenctl sabakan status says the Nodes were read: %s", l)
		}
	}
	t.Logf("ckegen's status with no API server ready: kubernetes %+v (absent: not read)", st.Kubernetes)
	for _, n := range ours.clusterDoc().Nodes {
		for _, tn := range n.Taints {
			if tn.Key != "cke.cybozu.com/role" && tn.Key != "cke.cybozu.com/state" {
				t.Errorf("%s: taint %s=%s:%s, from neither the template nor sabakan", n.Address, tn.Key, tn.Value, tn.Effect)
			}
		}
		if n.stateTaint() != "" && !changed[n.Address] {
			t.Errorf("%s: taint %s on a HEALTHY machine", n.Address, n.stateTaint())
		}
	}

	// (8) The server with ckegen inside ran all along, never restarted;
	// it stops before etcd.
	if !ours.server.running() || ours.starts != 1 {
		t.Fatalf("ckegen inside CKE's server ended (started %d times): %s", ours.starts, lastLine(ours.serverLog()))
	}
	stopAt := time.Now()
	stopped := make(chan string)
	for _, s := range []*vaultSite{ours, theirs} {
		go func() {
			s.server.stop(syscall.SIGTERM)
			stopped <- fmt.Sprintf("%s: CKE's server stopped %s after SIGTERM (%v)", s.label, time.Since(stopAt).Round(10*time.Millisecond), s.server.cmd.ProcessState)
		}()
	}
	t.Log(<-stopped)
	t.Log(<-stopped)
	e.rec.check()
	e.checkHistory()
	t.Logf("from a change in sabakan to the cluster write (CKE's --interval 1s):\n\t%s", strings.Join(p.times, "\n\t"))
	t.Logf("story: %s", time.Since(storyStart).Round(100*time.Millisecond))
}

// compareRepairs: ours holds each of want once; CKE's own holds the same
// entries, again at every loop of its server (none is processed while the
// nodes are unreachable): its queue grows while ours stays. It logs how
// long after the change at each queue held them all.
func (p *vaultPair) compareRepairs(phase, change string, at time.Time, want []string) {
	t := p.e.t
	t.Helper()
	want = distinct(want)
	var oursQ, theirsQ []string
	took := make([]time.Duration, 2)
	p.e.eventually("both repair queues to hold "+strings.Join(want, ", "), 20*time.Second, func() bool {
		oursQ, theirsQ = p.ours.repairs(), p.theirs.repairs()
		for i, q := range [][]string{oursQ, theirsQ} {
			if took[i] == 0 && slices.Equal(distinct(q), want) {
				took[i] = time.Since(at)
			}
		}
		return took[0] != 0 && took[1] != 0
	})
	p.times = append(p.times, fmt.Sprintf("%s: queued for repair: ours %s; CKE's %s", change,
		took[0].Round(10*time.Millisecond), took[1].Round(10*time.Millisecond)))
	t.Log(p.times[len(p.times)-1])
	since := time.Now()
	p.e.waitTick("two more of ckegen's ticks", since.Add(1500*time.Millisecond), 30*time.Second)
	p.theirs.waitPhase(phase, since.Add(1500*time.Millisecond), 30*time.Second)
	oursLater, theirsLater := p.ours.repairs(), p.theirs.repairs()
	if !slices.Equal(oursLater, oursQ) || len(oursQ) != len(want) {
		t.Errorf("%s: our repair queue %v, then %v; want each of %v once", phase, oursQ, oursLater, want)
	}
	if len(theirsLater) <= len(theirsQ) {
		t.Errorf("%s: CKE's own repair queue did not grow with its loops (%d, then %d entries): the deliberate difference is not shown", phase, len(theirsQ), len(theirsLater))
	}
	t.Logf("%s: repair entries (address, operation): ours %v; CKE's the same %d, in %d entries, then %d two loops later", phase, oursLater, len(want), len(theirsQ), len(theirsLater))
}
