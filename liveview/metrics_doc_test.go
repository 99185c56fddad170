package liveview

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestMetricsDocumented: every series a step exports is named in the
// daemon's document, where operators and the alert rules' authors look.
func TestMetricsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../docs/daemon.md")
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	go func() {
		NewMetrics(MetricsOptions{CKENames: true}).Describe(ch)
		close(ch)
	}()
	name := regexp.MustCompile(`fqName: "([a-z_]+)"`)
	n := 0
	for d := range ch {
		m := name.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		n++
		if !strings.Contains(string(doc), "`"+m[1]+"`") && !strings.Contains(string(doc), "`"+m[1]+"{") {
			t.Errorf("docs/daemon.md does not name the series %s: add it under HTTP", m[1])
		}
	}
	if n < 15 {
		t.Errorf("only %d series described: the test no longer sees them all", n)
	}
}
