package mtest

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNoSecretPublished: with a password in the sabakan URL, and one and
// a query value in a metric provider's Prometheus URL, no surface shows them:
// the status (text and JSON), /health, the page, /metrics, the plan, the
// map, ckegenctl's errors and the daemons' logs, while the integration works,
// while a provider fails and while sabakan is unreachable. Only
// ckegenctl sabakan get-url prints the stored URL whole.
func TestNoSecretPublished(t *testing.T) {
	secrets := []string{"s3cret-pw", "p-s3cret", "k-s3cret"}
	e := newEnv(t)
	e.converge(90 * time.Second)

	// A URL that set-url refuses is not echoed with its password.
	if _, err := e.ctl("sabakan", "set-url", "http://admin:s3cret-pw@"+e.sabAddr+"/graphql?token=q-s3cret"); err == nil ||
		strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "admin:xxxxx@") {
		t.Errorf("set-url of a URL with a query: %v, want refused with the password masked", err)
	}
	e.mustCtl("sabakan", "set-url", "http://admin:s3cret-pw@"+e.sabAddr+"/graphql")
	e.waitStatus("ok", "", "", 30*time.Second)

	// Every surface, searched for every secret.
	check := func(phase string) {
		t.Helper()
		seen := map[string]string{}
		for _, args := range [][]string{
			{"sabakan", "status"}, {"sabakan", "status", "-o", "json"}, {"sabakan", "history"},
			{"sabakan", "plan"}, {"sabakan", "plan", "-o", "json"}, {"sabakan", "map"},
			{"sabakan", "owner"},
		} {
			out, err := e.ctl(args...)
			if err != nil {
				out += err.Error()
			}
			seen["ckegenctl "+strings.Join(args, " ")] = out
		}
		for i, addr := range e.dHTTP {
			for _, path := range []string{"/health", "/", "/metrics", "/version"} {
				resp, err := http.Get("http://" + addr + path)
				if err != nil {
					t.Fatalf("GET %s: %v", path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				seen["ckegen-"+string(rune('0'+i))+" "+path] = string(body)
			}
		}
		logs, _ := filepath.Glob(filepath.Join(e.dir, "cke*.log"))
		for _, f := range logs {
			data, _ := os.ReadFile(f)
			seen[filepath.Base(f)] = string(data)
		}
		for where, text := range seen {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					i := strings.Index(text, s)
					t.Errorf("%s: %s shows %q: …%s…", phase, where, s, text[max(0, i-80):min(len(text), i+40)])
				}
			}
		}
	}
	check("working")

	// A provider whose URL has a password, unreachable: the status names
	// it, masked.
	policy := filepath.Join(e.dir, "policy.json")
	if err := writeFile(policy, `{"placements": {"control-plane": {"metrics": [{"name": "temp", "weight": -5}]}},
		"metrics": {"temp": {"provider": "prom", "query": "temp", "max": 50}},
		"providers": {"prom": {"type": "prometheus", "url": "http://prom:p-s3cret@127.0.0.1:1/?key=k-s3cret", "timeout": "1s"}}}`); err != nil {
		t.Fatal(err)
	}
	e.mustCtl("sabakan", "set-policy", policy)
	st := e.waitStatus("failing", "METRICS_UNAVAILABLE", "http://prom:xxxxx@127.0.0.1:1", 30*time.Second)
	t.Logf("provider failing: %s", st.Message)
	check("provider failing")
	e.mustCtl("sabakan", "clear-policy")

	// sabakan unreachable at a URL with a password.
	e.mustCtl("sabakan", "set-url", "http://admin:s3cret-pw@127.0.0.1:1/graphql")
	st = e.waitStatus("failing", "SABAKAN_UNREACHABLE", "http://admin:xxxxx@127.0.0.1:1/graphql", 30*time.Second)
	t.Logf("sabakan unreachable: %s", st.Message)
	check("sabakan unreachable")

	// The one place the stored URL is shown whole.
	if got := strings.TrimSpace(e.mustCtl("sabakan", "get-url")); got != "http://admin:s3cret-pw@127.0.0.1:1/graphql" {
		t.Errorf("get-url = %q, want the stored URL whole", got)
	}
}
