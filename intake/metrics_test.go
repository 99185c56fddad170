package intake

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/policy"
	"github.com/ckegen/ckegen/template"
)

const testTemplate = "name: t\nnodes:\n- {user: u, control_plane: true}\n- {user: u}\nservice_subnet: 10.0.0.0/16\n"

func load(t testing.TB, doc string) *policy.Policy {
	t.Helper()
	tmpl, err := template.Parse([]byte(testTemplate))
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load([]byte(doc), tmpl)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mach(serial, addr string) *machine.Machine {
	var m machine.Machine
	m.Spec.Serial = serial
	if addr != "" {
		m.Spec.IPv4 = []string{addr}
	}
	return &m
}

// value returns a fetched value, or NaN.
func metricValue(v *policy.Values, serial, metric string) float64 {
	col, ok := slices.BinarySearch(v.Metrics(), metric)
	if !ok {
		return math.NaN()
	}
	x, ok := v.Lookup(serial).Get(col)
	if !ok {
		return math.NaN()
	}
	return x
}

func TestStatic(t *testing.T) {
	p := load(t, `{
		"metrics": {"temp": {"provider": "lab", "min": 0, "max": 100}, "power": {"provider": "lab2", "min": 0, "max": 1}},
		"providers": {"lab": {"type": "static", "values": {"S1": {"temp": 20}, "S2": {"temp": 30, "power": 9}, "GONE": {"temp": 1}}},
		              "lab2": {"type": "static", "values": {"S2": {"power": 0.5}}}},
		"placements": {"control-plane": {"metrics": [{"name": "temp", "weight": 10}]}}}`)
	machines := []*machine.Machine{mach("S1", "10.0.0.1"), mach("S2", "10.0.0.2"), mach("S3", "10.0.0.3")}
	vals, stats, err := fetchMetrics(context.Background(), p, machines)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		serial, metric string
		want           float64
	}{
		{"S1", "temp", 20}, {"S2", "temp", 30}, {"S3", "temp", math.NaN()},
		// power comes from lab2: lab's value for it is not used
		{"S1", "power", math.NaN()}, {"S2", "power", 0.5},
	} {
		if got := metricValue(vals, tc.serial, tc.metric); !same(got, tc.want) {
			t.Errorf("%s %s = %v, want %v", tc.serial, tc.metric, got, tc.want)
		}
	}
	want := []string{"metric power from lab2: 1 samples, 1 matched a machine", "metric temp from lab: 3 samples, 2 matched a machine"}
	for i, s := range stats {
		if s.String() != want[i] {
			t.Errorf("stat %d: %q, want %q", i, s, want[i])
		}
	}
	if got := p.Placement(policy.ControlPlane).Points(vals.Row(1)); got != 3 {
		t.Errorf("S2's points = %v, want 3", got)
	}
}

func same(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) }

// promResponse writes an instant-vector answer of Prometheus' HTTP API.
func promResponse(samples []string) string {
	return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
}

func sample(labels string, v string) string {
	return fmt.Sprintf(`{"metric":{%s},"value":[1700000000.123,%q]}`, labels, v)
}

// TestPrometheusTimeout: a Prometheus that does not answer within the
// provider's timeout is unavailable, and the error says so.
func TestPrometheusTimeout(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	p := load(t, `{"metrics": {"temp": {"provider": "prom", "query": "temp", "max": 1}},
		"providers": {"prom": {"type": "prometheus", "url": "`+srv.URL+`", "timeout": "200ms"}}}`)
	start := time.Now()
	_, _, err := fetchMetrics(context.Background(), p, []*machine.Machine{mach("S1", "10.0.0.1")})
	if !errors.Is(err, ErrMetricsUnavailable) || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("error %v, want ErrMetricsUnavailable naming the timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the timeout took %s", d)
	}
}

// TestPrometheusMatching: the label precedence and the answers that cannot
// be read as one value per machine, on answers in Prometheus' format.
func TestPrometheusMatching(t *testing.T) {
	body := promResponse([]string{
		// serial wins over address and instance
		sample(`"serial":"S1","address":"10.0.0.2","instance":"10.0.0.3:9100"`, "1"),
		// address wins over instance
		sample(`"address":"10.0.0.2","instance":"10.0.0.3:9100"`, "2"),
		sample(`"instance":"10.0.0.3:9100"`, "3"),
		sample(`"instance":"10.0.0.4"`, "4"),                // no port
		sample(`"instance":"[::ffff:10.0.0.5]:9100"`, "5"),  // IPv4-mapped
		sample(`"instance":"node6.example:9100"`, "6"),      // not an address
		sample(`"serial":"GONE","address":"10.0.0.6"`, "7"), // a serial names no machine: no fallback
		sample(`"serial":"S7"`, "NaN"),                      // NaN: no value
		sample(`"serial":"S8"`, "+Inf"),
		sample(`"Serial":"S9"`, "9"), // label names are case-sensitive
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	p := load(t, `{"metrics": {"m": {"provider": "prom", "query": "m", "max": 1}},
		"providers": {"prom": {"type": "prometheus", "url": "`+srv.URL+`"}}}`)
	machines := []*machine.Machine{
		mach("S1", "10.0.0.1"), mach("S2", "10.0.0.2"), mach("S3", "10.0.0.3"), mach("S4", "10.0.0.4"),
		mach("S5", "10.0.0.5"), mach("S6", "10.0.0.6"), mach("S7", "10.0.0.7"), mach("S8", "10.0.0.8"), mach("S9", ""),
	}
	vals, stats, err := fetchMetrics(context.Background(), p, machines)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"S1": 1, "S2": 2, "S3": 3, "S4": 4, "S5": 5, "S6": math.NaN(), "S7": math.NaN(), "S8": math.Inf(1), "S9": math.NaN()}
	for serial, w := range want {
		if got := metricValue(vals, serial, "m"); !same(got, w) {
			t.Errorf("%s = %v, want %v", serial, got, w)
		}
	}
	if stats[0].Samples != 10 || stats[0].Matched != 7 {
		t.Errorf("stat %s, want 10 samples, 7 matched", stats[0])
	}
}

func TestPrometheusBadAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, body, msg string
		status          int
	}{
		{"two samples for one machine", promResponse([]string{
			sample(`"serial":"S1","sensor":"inlet"`, "1"), sample(`"serial":"S1","sensor":"outlet"`, "2")}),
			`returned two samples for one machine, {"serial":"S1","sensor":"inlet"} and {"serial":"S1","sensor":"outlet"}: aggregate it`, 0},
		{"a scalar", `{"status":"success","data":{"resultType":"scalar","result":[1700000000,"1"]}}`,
			"returned a scalar, want an instant vector", 0},
		{"a query error", `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end of input"}`,
			"bad_data: parse error: unexpected end of input", 0},
		{"not JSON", `<html>proxy error</html>`, `query "m"`, 0},
		// encoding/json named the Go struct field and its type.
		{"a status of the wrong kind", `{"status": 1, "data": {}}`, "not an answer of the Prometheus HTTP API: line 1, column 12: status: want a string, got the number 1", 0},
		{"a result of the wrong kind", `{"status": "success", "data": {"resultType": "vector", "result": {"a": 1}}}`,
			"reading the vector: line 1, column 66: data.result: want an array of objects, got an object", 0},
		{"a sample of the wrong kind", promResponse([]string{sample(`"serial":"S1"`, "1"), `[1]`}),
			"reading the vector: line 1, column 117: data.result[1]: want an object, got an array", 0},
		{"an HTTP error with an answer", promResponse([]string{sample(`"serial":"S1"`, "1")}), "server_error: HTTP 500 Internal Server Error", 500},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(tc.body, `"status":"error"`) {
					w.WriteHeader(http.StatusBadRequest)
				} else if tc.status != 0 {
					w.WriteHeader(tc.status)
				}
				fmt.Fprint(w, tc.body)
			}))
			defer srv.Close()
			p := load(t, `{"metrics": {"m": {"provider": "prom", "query": "m", "max": 1}},
				"providers": {"prom": {"type": "prometheus", "url": "`+srv.URL+`"}}}`)
			_, _, err := fetchMetrics(context.Background(), p, []*machine.Machine{mach("S1", "10.0.0.1")})
			if !errors.Is(err, ErrMetricsUnavailable) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %v, want ErrMetricsUnavailable containing %q", err, tc.msg)
			}
			if !strings.HasPrefix(fmt.Sprint(err), "metrics unavailable: metric m from provider prom: "+srv.URL) {
				t.Errorf("error %q does not name the metric, provider and URL", err)
			}
		})
	}
}

// TestEveryFailureReported: two metrics failing give two errors, in the
// order of the metrics' names, whatever order the queries end in.
func TestEveryFailureReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	p := load(t, `{"metrics": {"b": {"provider": "prom", "query": "b", "max": 1}, "a": {"provider": "prom", "query": "a", "max": 1}},
		"providers": {"prom": {"type": "prometheus", "url": "`+srv.URL+`"}}}`)
	_, _, err := fetchMetrics(context.Background(), p, nil)
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "metric a ") || !strings.Contains(lines[1], "metric b ") {
		t.Errorf("error %q, want one line per metric, a then b", err)
	}
}

// BenchmarkFetchPrometheus20000 reads an answer of 20,000 samples (one per
// machine) over HTTP and maps it to 20,000 machines.
func BenchmarkFetchPrometheus20000(b *testing.B) {
	const n = 20000
	for _, by := range []string{"serial", "instance"} {
		b.Run(by, func(b *testing.B) {
			machines := make([]*machine.Machine, n)
			samples := make([]string, n)
			for i := range n {
				serial, addr := fmt.Sprintf("S%05d", i), fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256)
				machines[i] = mach(serial, addr)
				labels := fmt.Sprintf(`"serial":%q`, serial)
				if by == "instance" {
					labels = fmt.Sprintf(`"instance":"%s:9100","job":"node"`, addr)
				}
				samples[i] = sample(labels, fmt.Sprint(15+i%30))
			}
			body := []byte(promResponse(samples))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write(body)
			}))
			defer srv.Close()
			p := load(b, `{"metrics": {"temp": {"provider": "prom", "query": "temp", "min": 15, "max": 45}},
				"providers": {"prom": {"type": "prometheus", "url": "`+srv.URL+`"}}}`)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				vals, stats, err := fetchMetrics(context.Background(), p, machines)
				if err != nil || stats[0].Matched != n || metricValue(vals, "S00007", "temp") != 22 {
					b.Fatalf("err %v, stat %s", err, stats[0])
				}
			}
		})
	}
}

// TestWarnings: Prometheus' warnings and a metric no machine has a value
// of are warnings; a metric with values and no warning is not.
func TestWarnings(t *testing.T) {
	got := metricWarnings([]MetricStat{
		{Metric: "temp", Provider: "prom", Samples: 3, Matched: 2, Warnings: []string{"partial"}},
		{Metric: "power", Provider: "lab", Samples: 4, Matched: 0},
		{Metric: "fans", Provider: "lab", Samples: 2, Matched: 2},
	}, 10)
	want := []string{
		"metric temp from provider prom: partial",
		"metric power from provider lab: no value for any of the 10 machines (4 samples): every machine counts as without a value",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Warnings = %q, want %q", got, want)
	}
	if got := metricWarnings([]MetricStat{{Metric: "power", Provider: "lab"}}, 0); got != nil {
		t.Errorf("without machines: %q", got)
	}
}

// A password in the Prometheus URL never shows in an error.
func TestPrometheusURLRedacted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 500) }))
	defer srv.Close()
	u := strings.Replace(srv.URL, "http://", "http://admin:s3cret@", 1)
	p := load(t, `{"metrics": {"temp": {"provider": "prom", "query": "temp", "max": 1}},
		"providers": {"prom": {"type": "prometheus", "url": "`+u+`", "timeout": "2s"}}}`)
	_, _, err := fetchMetrics(context.Background(), p, []*machine.Machine{mach("S1", "10.0.0.1")})
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "admin:xxxxx@") {
		t.Fatalf("error %v: want the password masked", err)
	}
}

// String summarizes a stat for logs.
func (s MetricStat) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "metric %s from %s: %d samples, %d matched a machine", s.Metric, s.Provider, s.Samples, s.Matched)
	if len(s.Warnings) > 0 {
		fmt.Fprintf(&b, "; warnings: %s", strings.Join(s.Warnings, "; "))
	}
	return b.String()
}
