package deploy

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/liveview"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/promtest"
	"github.com/ckegen/ckegen/reason"
)

// ruleFile is the part of a Prometheus rule file the tests read.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// ruleTests is the part of a promtool test file the tests read.
type ruleTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name        string `json:"name"`
		InputSeries []struct {
			Series string `json:"series"`
		} `json:"input_series"`
		AlertTests []struct {
			EvalTime  string `json:"eval_time"`
			Alertname string `json:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `json:"exp_labels"`
			} `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// runbookURL is where an alert's runbook is: its section of docs/alerts.md.
func runbookURL(alert string) string {
	return "https://github.com/ckegen/ckegen/blob/main/docs/alerts.md#" + strings.ToLower(alert)
}

func readYAML(t *testing.T, file string, v any) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// alertRules reads deploy/prometheus/alerts.yml's rules.
func alertRules(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	readYAML(t, filepath.Join(root, "deploy", "prometheus", "alerts.yml"), &f)
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatal("alerts.yml has no rules")
	}
	return rules
}

// TestAlertRules: promtool accepts the rules and their unit tests pass;
// every alert has a severity, a summary, a description and a runbook link
// to its section of docs/alerts.md, which exists; and the unit tests have,
// for every alert, a case in which it fires and one in which it does not.
func TestAlertRules(t *testing.T) {
	rules := alertRules(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := headingAnchors(string(doc))
	names := map[string]bool{}
	for _, r := range rules {
		if r.Alert == "" {
			continue
		}
		if names[r.Alert] {
			t.Errorf("alert %s is defined twice", r.Alert)
		}
		names[r.Alert] = true
		if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
			t.Errorf("alert %s: severity %q, want critical, warning or info", r.Alert, r.Labels["severity"])
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("alert %s has no %s", r.Alert, a)
			}
		}
		if got, want := r.Annotations["runbook_url"], runbookURL(r.Alert); got != want {
			t.Errorf("alert %s: runbook_url %q, want %q", r.Alert, got, want)
		}
		if !anchors[strings.ToLower(r.Alert)] {
			t.Errorf("alert %s: docs/alerts.md has no section %q for its runbook", r.Alert, r.Alert)
		}
	}

	var tests ruleTests
	readYAML(t, filepath.Join(root, "deploy", "prometheus", "alerts_test.yml"), &tests)
	if !slices.Equal(tests.RuleFiles, []string{"alerts.yml"}) {
		t.Errorf("alerts_test.yml tests %q, want alerts.yml", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, at := range tc.AlertTests {
			if !names[at.Alertname] {
				t.Errorf("alerts_test.yml, %q: alert %s is not in alerts.yml", tc.Name, at.Alertname)
			}
			if len(at.ExpAlerts) > 0 {
				fires[at.Alertname] = true
			} else {
				quiet[at.Alertname] = true
			}
		}
	}
	for name := range names {
		if !fires[name] {
			t.Errorf("alerts_test.yml has no case in which %s fires", name)
		}
		if !quiet[name] {
			t.Errorf("alerts_test.yml has no case in which %s does not fire", name)
		}
	}

	promtool := need(t, "promtool", "apt-get install -y prometheus")
	dir := filepath.Join(root, "deploy", "prometheus")
	run(t, time.Minute, dir, promtool, "check", "rules", "alerts.yml")
	out := run(t, 2*time.Minute, dir, promtool, "test", "rules", "alerts_test.yml")
	if !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules printed no SUCCESS:\n%s", out)
	}
}

// insideInstance is the prefix of the instances of CKE's server with
// ckegen inside in alerts_test.yml (job cke).
const insideInstance = "cke-inside"

// ckeCollectorSeries are the series of CKE v1.35.4's own collector
// (github.com/cybozu-go/cke/metrics) that the rules read or a scrape of
// CKE's server shows beside them; the cke_sabakan_* ones only on the
// leader, while CKE's integration (ckegen inside) is enabled.
var ckeCollectorSeries = []string{"cke_leader", "cke_sabakan_integration_successful",
	"cke_sabakan_integration_timestamp_seconds", "cke_sabakan_workers", "cke_sabakan_unused_machines"}

// insideSeries are the names CKE's server with ckegen inside exports:
// CKE's collector's, ckegen_leader (1 while it leads and runs ckegen), the
// leader's forecast's (liveview.Forecaster), and the step's metrics as
// the integrator registers them
// (liveview.MetricsOptions{CKENames: false}: CKE's collector has the cke_*
// names), a histogram with its _sum, _count and _bucket.
func insideSeries(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{"ckegen_leader": true}
	for _, n := range ckeCollectorSeries {
		names[n] = true
	}
	ch := make(chan *prometheus.Desc, 100)
	go func() {
		liveview.NewMetrics(liveview.MetricsOptions{CKENames: false}).Describe(ch)
		liveview.NewForecaster(liveview.ForecasterOptions{}).Describe(ch)
		close(ch)
	}()
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	for d := range ch {
		m := fq.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("no name in %s", d)
		}
		for _, suffix := range []string{"", "_sum", "_count", "_bucket"} {
			names[m[1]+suffix] = true
		}
	}
	return names
}

// seriesName is the metric name of a promtool input series.
func seriesName(series string) string {
	name, _, _ := strings.Cut(series, "{")
	return strings.TrimSpace(name)
}

// TestAlertRulesInsideCKE: the rules serve CKE's server with ckegen
// inside unchanged. alerts_test.yml has cases whose every series is such
// a server's (instance cke-inside*, job cke), with only names that process
// exports (never ckegen_standalone, which only ckegen's daemon has); in
// them every alert fires for it and then resolves, but the three on
// ckegen_integration_held for the gate, which never holds inside
// (decision.Gate: CKE's server paces ckegen; the hold on unchosen
// constraints does hold inside, and its alert fires there), and those on
// series only ckegen's daemon exports, and every alert is quiet in one of
// them.
func TestAlertRulesInsideCKE(t *testing.T) {
	var tests ruleTests
	readYAML(t, filepath.Join(root, "deploy", "prometheus", "alerts_test.yml"), &tests)
	exported := insideSeries(t)
	if exported["ckegen_standalone"] {
		t.Error("ckegen_standalone is among the series of CKE's server with ckegen inside")
	}
	// Nothing holds ckegen back inside, whoever owns the integration.
	for _, own := range []intake.Ownership{{}, {Owner: intake.OwnerCKEGen, OwnerRev: 1, CKEServer: true},
		{Owner: intake.OwnerCKE, OwnerRev: 1, CKEServer: true}, {Owner: intake.OwnerCKEGen, OwnerRev: 1, CKEDisabled: true, CKEServer: true}} {
		if h := decision.Gate(own, decision.ModeInsideCKE, true, time.Now(), time.Minute); h != nil && h.Rung != decision.RungSwitch {
			t.Errorf("inside CKE's server, ownership %+v holds ckegen with %s: the alerts on ckegen_integration_held would apply inside", own, h.Reason)
		}
	}

	var alerts []string
	heldOnly, daemonOnly := map[string]bool{}, map[string]bool{}
	for _, r := range alertRules(t) {
		if r.Alert == "" {
			continue
		}
		alerts = append(alerts, r.Alert)
		names, err := promtest.MetricNames(r.Expr)
		if err != nil {
			t.Fatal(err)
		}
		heldOnly[r.Alert] = slices.Equal(names, []string{"ckegen_integration_held"}) && !strings.Contains(r.Expr, reason.ConstraintsUnchosen)
		daemonOnly[r.Alert] = !slices.ContainsFunc(names, func(n string) bool { return exported[n] })
	}
	firesAndResolves, quiet := map[string]bool{}, map[string]bool{}
	cases := 0
	for _, tc := range tests.Tests {
		inside := len(tc.InputSeries) > 0
		for _, in := range tc.InputSeries {
			inside = inside && strings.Contains(in.Series, `instance="`+insideInstance) && strings.Contains(in.Series, `job="cke"`)
		}
		if !inside {
			continue
		}
		cases++
		for _, in := range tc.InputSeries {
			switch n := seriesName(in.Series); {
			case !exported[n]:
				t.Errorf("alerts_test.yml, %q: CKE's server with ckegen inside exports no %s", tc.Name, n)
			case n == "ckegen_integration_held" && !strings.Contains(in.Series, `reason="`+reason.ConstraintsUnchosen+`"`):
				t.Errorf("alerts_test.yml, %q: CKE's server with ckegen inside never holds ckegen back but on unchosen constraints: no %s", tc.Name, in.Series)
			}
		}
		firedAt := map[string]time.Duration{}
		for _, at := range tc.AlertTests {
			when, err := time.ParseDuration(at.EvalTime)
			if err != nil {
				t.Fatalf("alerts_test.yml, %q: eval_time %q: %v", tc.Name, at.EvalTime, err)
			}
			if len(at.ExpAlerts) == 0 {
				quiet[at.Alertname] = true
				if f, ok := firedAt[at.Alertname]; ok && when > f {
					firesAndResolves[at.Alertname] = true
				}
				continue
			}
			for _, e := range at.ExpAlerts {
				if inst, ok := e.ExpLabels["instance"]; ok && !strings.HasPrefix(inst, insideInstance) {
					t.Errorf("alerts_test.yml, %q: %s fires for %s, not CKE's server with ckegen inside", tc.Name, at.Alertname, inst)
				}
			}
			if f, ok := firedAt[at.Alertname]; !ok || when < f {
				firedAt[at.Alertname] = when
			}
		}
	}
	if cases == 0 {
		t.Fatalf("alerts_test.yml has no case of CKE's server with ckegen inside (instance %s*, job cke)", insideInstance)
	}
	for _, a := range alerts {
		if !quiet[a] {
			t.Errorf("alerts_test.yml: no case of CKE's server with ckegen inside in which %s is quiet", a)
		}
		if !heldOnly[a] && !daemonOnly[a] && !firesAndResolves[a] {
			t.Errorf("alerts_test.yml: no case of CKE's server with ckegen inside in which %s fires, then resolves", a)
		}
	}
}

// headingAnchors returns the anchors GitHub gives the Markdown headings of
// a document: lower case, punctuation other than - and _ dropped, spaces
// as -.
func headingAnchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	drop := regexp.MustCompile(`[^\p{L}\p{N} _-]`)
	for _, line := range strings.Split(doc, "\n") {
		text, ok := strings.CutPrefix(line, "#")
		if !ok {
			continue
		}
		text = strings.TrimSpace(strings.TrimLeft(text, "#"))
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		anchors[a] = true
	}
	return anchors
}
