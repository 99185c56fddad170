package intake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/promtest"
	"github.com/ckegen/ckegen/machine"
)

// exporter serves per-machine series as a small exporter would:
// /bmc has series labelled by serial (temperatures) and by address
// (power); /node?host=ADDRESS has series with no machine label, which
// Prometheus labels with the target's instance.
func exporter(t *testing.T) *promtest.Exporter {
	exp := promtest.NewExporter(t)
	exp.Set("/bmc", `# TYPE ipmi_temperature_celsius gauge
ipmi_temperature_celsius{serial="S1",sensor="inlet"} 21
ipmi_temperature_celsius{serial="S1",sensor="outlet"} 40
ipmi_temperature_celsius{serial="S2",sensor="inlet"} 33.5
ipmi_temperature_celsius{serial="S2",sensor="outlet"} 51
ipmi_temperature_celsius{serial="GONE",sensor="inlet"} 18
# TYPE pdu_power_watts gauge
pdu_power_watts{address="10.0.0.3"} 300
pdu_power_watts{address="10.0.0.4"} 410
`)
	for host, load := range map[string]string{"10.0.0.5": "1.5", "10.0.0.9": "0.25"} {
		exp.Set("/node?host="+host, "# TYPE node_load1 gauge\nnode_load1 "+load+"\n")
	}
	return exp
}

// TestPrometheusServer reads the values of three metrics from a real
// Prometheus scraping the exporter: by serial, by address and by the
// instance the target was given; then a bad query, a range vector, a
// query with two samples per machine, and Prometheus gone.
func TestPrometheusServer(t *testing.T) {
	target := exporter(t).Target()
	prom := promtest.Start(t, fmt.Sprintf(`- job_name: bmc
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
	promURL := prom.URL
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
		_, stats, err := fetchMetrics(context.Background(), p, machines)
		if err == nil && stats[0].Samples == 3 && stats[2].Samples == 2 && stats[3].Samples == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scraped values after 30s: %v %v", err, stats)
		}
		time.Sleep(200 * time.Millisecond)
	}
	vals, stats, err := fetchMetrics(context.Background(), p, machines)
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
			if got := metricValue(vals, tc.serial, metric); !same(got, w) {
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
			_, _, err := fetchMetrics(context.Background(), bad, machines)
			if !errors.Is(err, ErrMetricsUnavailable) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want ErrMetricsUnavailable containing %q", err, tc.msg)
			}
		})
	}

	prom.Stop()
	_, _, err = fetchMetrics(context.Background(), p, machines)
	if !errors.Is(err, ErrMetricsUnavailable) {
		t.Fatalf("Prometheus down: error %v, want ErrMetricsUnavailable", err)
	}
	u, _ := url.Parse(promURL)
	if !strings.Contains(err.Error(), u.Host) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("error %q does not name the server and the cause", err)
	}
	if n := strings.Count(err.Error(), "metrics unavailable"); n != 4 {
		t.Errorf("%d metrics reported unavailable, want 4: %v", n, err)
	}
}
