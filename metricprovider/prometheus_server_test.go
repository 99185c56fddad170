package metricprovider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/etcdtest"
	"github.com/ckegen/ckegen/machine"
)

// prometheusBinary finds Debian's prometheus. Without one the test is
// skipped, except in CI, where it must run.
func prometheusBinary(t *testing.T) string {
	t.Helper()
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no prometheus binary in PATH: CI must install it (apt-get install -y prometheus)")
	}
	t.Skip("no prometheus binary in PATH: install Debian's prometheus (apt-get install -y prometheus) to run the test against a real Prometheus")
	return ""
}

// syncBuffer is a log both the process and the test use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPrometheus runs a Prometheus with this scrape configuration on a
// loopback port, with its storage in a temporary directory; it is killed
// when the test ends. It returns its URL and a function that kills it
// earlier.
func startPrometheus(t *testing.T, scrapeConfigs string) (string, func()) {
	t.Helper()
	bin := prometheusBinary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	config := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n" + scrapeConfigs
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cmd.Process.Kill()
			cmd.Wait()
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})
	base := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base, stop
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready after 30s: %v\n%s", base, err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// exporter serves per-machine series as a small exporter would:
// /bmc has series labelled by serial (temperatures) and by address
// (power); /node?host=ADDRESS has series with no machine label, which
// Prometheus labels with the target's instance.
func exporter(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		switch r.URL.Path {
		case "/bmc":
			fmt.Fprint(w, `# TYPE ipmi_temperature_celsius gauge
ipmi_temperature_celsius{serial="S1",sensor="inlet"} 21
ipmi_temperature_celsius{serial="S1",sensor="outlet"} 40
ipmi_temperature_celsius{serial="S2",sensor="inlet"} 33.5
ipmi_temperature_celsius{serial="S2",sensor="outlet"} 51
ipmi_temperature_celsius{serial="GONE",sensor="inlet"} 18
# TYPE pdu_power_watts gauge
pdu_power_watts{address="10.0.0.3"} 300
pdu_power_watts{address="10.0.0.4"} 410
`)
		case "/node":
			load := map[string]string{"10.0.0.5": "1.5", "10.0.0.9": "0.25"}[r.URL.Query().Get("host")]
			fmt.Fprintf(w, "# TYPE node_load1 gauge\nnode_load1 %s\n", load)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestPrometheusServer reads the values of three metrics from a real
// Prometheus scraping the exporter: by serial, by address and by the
// instance the target was given; then a bad query, a range vector, a
// query with two samples per machine, and Prometheus gone.
func TestPrometheusServer(t *testing.T) {
	exp := exporter(t)
	target := strings.TrimPrefix(exp.URL, "http://")
	promURL, stop := startPrometheus(t, fmt.Sprintf(`- job_name: bmc
  metrics_path: /bmc
  static_configs: [{targets: [%q]}]
- job_name: node
  metrics_path: /node
  static_configs:
  - targets: [%q]
    labels: {instance: "10.0.0.5:9100", __param_host: "10.0.0.5"}
  - targets: [%q]
    labels: {instance: "10.0.0.9:9100", __param_host: "10.0.0.9"}
`, target, target, target))
	policyDoc := func(metrics string) string {
		return `{"metrics": {` + metrics + `}, "providers": {"prom": {"type": "prometheus", "url": "` + promURL + `", "timeout": "5s"}}}`
	}
	p := load(t, policyDoc(`
		"inlet": {"provider": "prom", "query": "max by (serial) (ipmi_temperature_celsius{sensor=\"inlet\"})", "min": 15, "max": 45},
		"inlet_raw": {"provider": "prom", "query": "ipmi_temperature_celsius{sensor=\"inlet\"}", "min": 15, "max": 45},
		"power": {"provider": "prom", "query": "pdu_power_watts", "min": 100, "max": 500},
		"load": {"provider": "prom", "query": "node_load1", "min": 0, "max": 4}`))
	// LOCAL has the exporter's address: every scraped series has
	// instance="127.0.0.1:PORT", which must not win over serial or address.
	machines := []*machine.Machine{
		mach("S1", "10.0.0.1"), mach("S2", "10.0.0.2"), mach("S3", "10.0.0.3"),
		mach("S4", "10.0.0.4"), mach("S5", "10.0.0.5"), mach("LOCAL", "127.0.0.1"),
	}
	// Wait for the first scrapes of both jobs.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, stats, err := Fetch(context.Background(), p, machines)
		if err == nil && stats[0].Samples == 3 && stats[2].Samples == 2 && stats[3].Samples == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scraped values after 30s: %v %v", err, stats)
		}
		time.Sleep(200 * time.Millisecond)
	}
	vals, stats, err := Fetch(context.Background(), p, machines)
	if err != nil {
		t.Fatal(err)
	}
	nan := math.NaN()
	for _, tc := range []struct {
		serial string
		want   map[string]float64
	}{
		{"S1", map[string]float64{"inlet": 21, "inlet_raw": 21, "power": nan, "load": nan}},
		{"S2", map[string]float64{"inlet": 33.5, "inlet_raw": 33.5, "power": nan, "load": nan}},
		{"S3", map[string]float64{"inlet": nan, "power": 300, "load": nan}},
		{"S4", map[string]float64{"inlet": nan, "power": 410, "load": nan}},
		{"S5", map[string]float64{"inlet": nan, "power": nan, "load": 1.5}},
		{"LOCAL", map[string]float64{"inlet": nan, "inlet_raw": nan, "power": nan, "load": nan}},
	} {
		for metric, w := range tc.want {
			if got := value(vals, tc.serial, metric); !same(got, w) {
				t.Errorf("%s %s = %v, want %v", tc.serial, metric, got, w)
			}
		}
	}
	// Stats, in the order of the metrics' names: GONE and 10.0.0.9 name
	// no machine.
	want := []string{
		"metric inlet from prom: 3 samples, 2 matched a machine",
		"metric inlet_raw from prom: 3 samples, 2 matched a machine",
		"metric load from prom: 2 samples, 1 matched a machine",
		"metric power from prom: 2 samples, 2 matched a machine",
	}
	for i, s := range stats {
		if s.String() != want[i] {
			t.Errorf("stat %d: %q, want %q", i, s, want[i])
		}
	}

	for _, tc := range []struct {
		name, query, msg string
	}{
		{"query error", "max by (serial) (", "bad_data"},
		{"range vector", "pdu_power_watts[1m]", "returned a matrix, want an instant vector"},
		{"two samples per machine", "ipmi_temperature_celsius", "returned two samples for one machine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := load(t, policyDoc(`"m": {"provider": "prom", "query": "`+strings.ReplaceAll(tc.query, `"`, `\"`)+`", "max": 1}`))
			_, _, err := Fetch(context.Background(), bad, machines)
			if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want ErrUnavailable containing %q", err, tc.msg)
			}
		})
	}

	stop()
	_, _, err = Fetch(context.Background(), p, machines)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Prometheus down: error %v, want ErrUnavailable", err)
	}
	u, _ := url.Parse(promURL)
	if !strings.Contains(err.Error(), u.Host) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q does not name the server and the cause", err)
	}
	if n := strings.Count(err.Error(), "metrics unavailable"); n != 4 {
		t.Errorf("%d metrics reported unavailable, want 4: %v", n, err)
	}
}
