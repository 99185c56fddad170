package deploy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/promtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
)

// site is what the daemons of a test run against: a real etcd and the
// sabakan-compatible server with the bundled data center (sitetest's,
// in the test process).
type site struct {
	bin, etcd, sabakan string
}

// newSite starts etcd and the compatible server and configures the
// integration with ckegenctl as docs/install.md says: URL, constraints,
// template.
func newSite(t *testing.T) *site {
	t.Helper()
	s := startSite(t)
	s.ckegenctl(t, "sabakan", "set-url", s.sabakan)
	s.ckegenctl(t, "constraints", "set", "control-plane-count", "3")
	s.ckegenctl(t, "constraints", "set", "minimum-workers", "20")
	s.setTemplate(t)
	return s
}

// startSite starts etcd and the compatible server, and configures nothing.
func startSite(t *testing.T) *site {
	t.Helper()
	bin := binaries(t)
	h := sitetest.Start(t, sitetest.Options{
		Machines: sitetest.ReadMachines(t, filepath.Join(root, "examples", "machines.json")), Clock: time.Now,
	})
	return &site{bin: bin, etcd: h.EtcdURL, sabakan: h.Server.URL}
}

// setTemplate stores the bundled template.
func (s *site) setTemplate(t *testing.T) {
	t.Helper()
	s.ckegenctl(t, "sabakan", "set-template", filepath.Join(root, "examples", "template.yml"))
}

// ckegenctl runs ckegenctl against the site's etcd and returns its output.
func (s *site) ckegenctl(t *testing.T, args ...string) string {
	t.Helper()
	return string(run(t, time.Minute, "", filepath.Join(s.bin, "ckegenctl"), append([]string{"--endpoints", s.etcd}, args...)...))
}

// daemon is a ckegen process.
type daemon struct {
	name, url string
	proc      *proc
}

// startDaemon starts a ckegen named name against the site's etcd, ticking
// every 500 ms, and waits until its /health answers 200.
func (s *site) startDaemon(t *testing.T, name string) *daemon {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	d := &daemon{name: name, url: "http://" + addr}
	d.proc = startProc(t, name, filepath.Join(s.bin, "ckegen"), "--etcd-endpoints", s.etcd, "--http", addr,
		"--name", name, "--interval", "500ms")
	waitFor(t, 30*time.Second, name+"'s /health to answer 200", func() bool {
		resp, err := http.Get(d.url + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return d
}

// scrape returns the sample names and values of the daemon's /metrics.
func (d *daemon) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatalf("%s /metrics: %v", d.name, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s /metrics: status %d, %v", d.name, resp.StatusCode, err)
	}
	samples := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		name := line[:strings.IndexAny(line+" ", "{ ")]
		var v float64
		if i := strings.LastIndexByte(line, ' '); i >= 0 {
			fmt.Sscan(line[i+1:], &v)
		}
		samples[name] = v
	}
	return samples
}

// TestAlertMetricsExported: every metric that alerts.yml names is one the
// daemon exports. It starts the daemon (the ckegen binary) on a real etcd
// and the compatible server before the template is stored, scrapes
// /metrics while it waits for it (ckegen_integration_waiting is only
// exported then), after the first ticks of a converging integration
// and the leader's forecast, which buys (the order-by date is only
// exported then),
// while its ticks fail (sabakan's URL pointed at a closed port), after
// they succeed again, and after `ckegenctl sabakan takeover` and
// `handback` have made the leader hold (ckegen_integration_held is only
// exported while it holds), and looks each name up in what it saw.
func TestAlertMetricsExported(t *testing.T) {
	var wanted []string
	for _, r := range alertRules(t) {
		names, err := promtest.MetricNames(r.Expr)
		if err != nil {
			t.Fatalf("rule %s: expr %q: %v", r.Alert+r.Record, r.Expr, err)
		}
		if len(names) == 0 {
			t.Errorf("rule %s names no metric", r.Alert+r.Record)
		}
		for _, n := range names {
			if !slices.Contains(wanted, n) {
				wanted = append(wanted, n)
			}
		}
	}
	slices.Sort(wanted)

	s := startSite(t)
	s.ckegenctl(t, "sabakan", "set-url", s.sabakan)
	s.ckegenctl(t, "constraints", "set", "control-plane-count", "3")
	// 60 workers: the bundled machines' retire dates take the cluster
	// below them within the forecast's 3 years, so the leader's forecast
	// buys (ckegen_capacity_order_by_timestamp_seconds).
	s.ckegenctl(t, "constraints", "set", "minimum-workers", "60")
	d := s.startDaemon(t, "deploytest-a")
	seen := map[string]string{} // name: the phase it was first seen in
	// observe scrapes until until holds, then for two more ticks, so that
	// every collector has seen the tick that made it hold.
	observe := func(phase, what string, until func(map[string]float64) bool) {
		t.Helper()
		var after time.Time
		start := time.Now()
		defer func() { t.Logf("%s: %s", phase, time.Since(start).Round(100*time.Millisecond)) }()
		waitFor(t, time.Minute, phase+": "+what, func() bool {
			m := d.scrape(t)
			for n := range m {
				if _, ok := seen[n]; !ok {
					seen[n] = phase
				}
			}
			if after.IsZero() && until(m) {
				after = time.Now().Add(1500 * time.Millisecond)
			}
			return !after.IsZero() && time.Now().After(after)
		})
	}
	has := func(name string, v float64) func(map[string]float64) bool {
		return func(m map[string]float64) bool { got, ok := m[name]; return ok && got == v }
	}
	present := func(name string) func(map[string]float64) bool {
		return func(m map[string]float64) bool { _, ok := m[name]; return ok }
	}
	observe("waiting", "a tick waiting for the template", has("ckegen_integration_waiting", 1))
	s.setTemplate(t)
	observe("converging", "a successful tick", has("cke_sabakan_integration_successful", 1))
	observe("forecast", "the leader's forecast buying", present("ckegen_capacity_order_by_timestamp_seconds"))
	// sabakan unreachable: the ticks fail.
	s.ckegenctl(t, "sabakan", "set-url", fmt.Sprintf("http://127.0.0.1:%d", etcdtest.FreePort(t)))
	observe("failing", "a failed tick", has("cke_sabakan_integration_successful", 0))
	s.ckegenctl(t, "sabakan", "set-url", s.sabakan)
	observe("converging again", "a successful tick", has("cke_sabakan_integration_successful", 1))
	// Standalone, nobody owns the integration: ckegen takes it over, then
	// gives it back to CKE, whose server does not run, and holds (with
	// --force: in the count model a handback is refused, since CKE's own
	// integration would make every HEALTHY machine a node).
	s.ckegenctl(t, "sabakan", "takeover")
	s.ckegenctl(t, "sabakan", "handback", "--force")
	observe("held", "a tick held by OWNED_BY_CKE", has(`ckegen_integration_held`, 1))

	for _, n := range wanted {
		if phase, ok := seen[n]; ok {
			t.Logf("%s: exported (%s)", n, phase)
			continue
		}
		t.Errorf("alerts.yml names %s, which the daemon does not export", n)
	}
	if t.Failed() {
		var names []string
		for n := range seen {
			names = append(names, n)
		}
		slices.Sort(names)
		t.Logf("exported: %s", strings.Join(names, " "))
	}
}

// TestUpgradeHandover is docs/install.md, "Upgrade": two daemons; the leader,
// stopped as systemd stops it (SIGTERM), resigns, and the other daemon
// leads and ticks within seconds, not after the session TTL (60 s here,
// the default), so restarting the daemons one at a time loses no tick.
func TestUpgradeHandover(t *testing.T) {
	s := newSite(t)
	a := s.startDaemon(t, "deploytest-a")
	waitFor(t, time.Minute, "deploytest-a to lead and tick", func() bool {
		m := a.scrape(t)
		return m["ckegen_leader"] == 1 && m["cke_sabakan_integration_timestamp_seconds"] > 0
	})
	b := s.startDaemon(t, "deploytest-b")
	if m := b.scrape(t); m["ckegen_leader"] != 0 {
		t.Fatalf("deploytest-b leads beside deploytest-a: ckegen_leader %v", m["ckegen_leader"])
	}
	if out := strings.TrimSpace(s.ckegenctl(t, "leader")); !strings.Contains(out, "deploytest-a") {
		t.Fatalf("ckegenctl leader = %q, want deploytest-a", out)
	}

	stopped := time.Now()
	a.proc.stop(t, syscall.SIGTERM)
	stopTook := time.Since(stopped)
	if code := a.proc.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("deploytest-a exited %d on SIGTERM, want 0 (systemd would count a failure)", code)
	}
	waitFor(t, 30*time.Second, "deploytest-b to lead and tick", func() bool {
		m := b.scrape(t)
		return m["ckegen_leader"] == 1 && m["cke_sabakan_integration_timestamp_seconds"] >= float64(stopped.Unix())
	})
	took := time.Since(stopped)
	t.Logf("SIGTERM to deploytest-a: it exited after %s; deploytest-b led and ticked %s after the signal", stopTook.Round(10*time.Millisecond), took.Round(10*time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("the handover took %s: the leader did not resign (a session TTL of 60 s would have run out)", took)
	}
	if out := strings.TrimSpace(s.ckegenctl(t, "leader")); !strings.Contains(out, "deploytest-b") {
		t.Errorf("ckegenctl leader = %q after the handover, want deploytest-b", out)
	}
	var st struct {
		Leader string `json:"leader"`
	}
	if err := json.Unmarshal([]byte(s.ckegenctl(t, "sabakan", "status", "-o", "json")), &st); err != nil || st.Leader != "deploytest-b" {
		t.Errorf("sabakan status: leader %q (%v), want deploytest-b", st.Leader, err)
	}
}

// proc is a process a test started; its output goes to a log that is
// shown if the test fails.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
}

func startProc(t *testing.T, name, bin string, args ...string) *proc {
	t.Helper()
	log, err := os.Create(filepath.Join(t.TempDir(), name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: exec.Command(bin, args...), log: log, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = log, log
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.stop(t, syscall.SIGKILL)
		if t.Failed() {
			data, _ := os.ReadFile(log.Name())
			if len(data) > 3000 {
				data = data[len(data)-3000:]
			}
			t.Logf("%s's log, the end:\n%s", name, data)
		}
		log.Close()
	})
	return p
}

// stop sends sig and waits for the exit (SIGKILL after 20 s).
func (p *proc) stop(t *testing.T, sig syscall.Signal) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(sig)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		t.Errorf("%s did not exit within 20 s of %s", p.name, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// waitFor polls cond every 100 ms until it holds, or fails the test after
// timeout naming what it waited for.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
