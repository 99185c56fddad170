package main

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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cybozu-go/cke"

	"github.com/ckegen/ckegen/internal/testutil/cketest"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/version"
)

// This file compares our cke (this command, built by cketest.Inside) with
// CKE's own of the same release (cketest.Binaries), as processes: their
// flags, as --help lists them, and what their HTTP servers answer on each
// route CKE documents. When CKE's own main gains or changes a flag or a
// route, these tests fail, rather than our main drifting from it.

// TestCKEVersionIsLinked: the CKE release ckegen says it is built for
// (ckegen_build_info, /ckegen/version) is the one linked into this
// binary.
func TestCKEVersionIsLinked(t *testing.T) {
	if "v"+cke.Version != version.CKEVersion {
		t.Errorf("this binary links CKE %s; internal/version.CKEVersion is %s (make bump-cke VERSION=... moves both)", cke.Version, version.CKEVersion)
	}
}

// flagLine is a line of pflag's FlagUsages: "  -x, --name type   usage
// (default ...)". The type is absent for a bool.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?: (\w+))?\s{2,}(.*)$`)

// flagDefault is the "(default ...)" pflag appends to a usage.
var flagDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)

// helpFlags runs bin --help and returns its flags, "name type default"
// each, sorted.
func helpFlags(t *testing.T, bin string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// CKE's own prints its usage on stderr, ours on stdout; both exit 0.
	out, err := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --help: %v\n%s", bin, err, out)
	}
	var flags []string
	for _, l := range strings.Split(string(out), "\n") {
		m := flagLine.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		def := ""
		if d := flagDefault.FindStringSubmatch(m[3]); d != nil {
			def = d[1]
		}
		typ := m[2]
		if typ == "" {
			typ = "bool"
		}
		flags = append(flags, m[1]+" "+typ+" "+def)
	}
	if len(flags) == 0 {
		t.Fatalf("%s --help lists no flag:\n%s", bin, out)
	}
	slices.Sort(flags)
	return flags
}

// ourOwnFlags are the flags our cke has and CKE's does not
// (docs/inside-cke.md).
var ourOwnFlags = []string{"version bool "}

// TestFlagsAreCKEs: our cke has every flag of CKE's own, with its type and
// default, and no other flag but --version.
func TestFlagsAreCKEs(t *testing.T) {
	theirs, _ := cketest.Binaries(t)
	ours := cketest.Inside(t)
	want := slices.Sorted(slices.Values(append(helpFlags(t, theirs), ourOwnFlags...)))
	got := helpFlags(t, ours)
	if !slices.Equal(got, want) {
		t.Errorf("our cke's flags (name, type, default) are not CKE %s's own and --version:\nours:   %q\nCKE's + --version: %q\n(follow CKE's pkg/cke/main.go in ckeserver/cmd/cke)", cke.Version, got, want)
	}
	t.Logf("flags compared: %q", want)
}

// startServer runs bin as CKE's server on etcd under prefix, with a short
// interval, and returns its --http address once it answers /health.
func startServer(t *testing.T, bin, etcd, prefix string) string {
	t.Helper()
	dir := t.TempDir()
	config := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(config, fmt.Appendf(nil, "endpoints: [%q]\nprefix: %s\n", etcd, prefix), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", etcdtest.FreePort(t))
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config", config, "--http", addr, "--interval", "1s", "--session-ttl", "5s")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		select {
		case <-done:
			t.Fatalf("%s ended: %s", bin, log.String())
		default:
		}
		if code, _ := probe(t, addr, http.MethodGet, "/health"); code == http.StatusOK {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer /health on %s within 30s: %s", bin, addr, log.String())
		}
	}
}

// probe answers the status code and body of method path on addr; code 0
// when nothing answers.
func probe(t *testing.T, addr, method, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// documentedRoute is a route heading of CKE's docs/api.md: ## `GET /path`.
var documentedRoute = regexp.MustCompile("(?m)^#+ `([A-Z]+) (/[^`]*)`")

// documentedRoutes are the routes CKE's own documentation names for the
// server: docs/api.md's REST API, and /metrics (docs/metrics.md), read
// from CKE's module as ckeserver/ resolves it.
func documentedRoutes(t *testing.T) [][2]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/cybozu-go/cke").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/cybozu-go/cke: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	api, err := os.ReadFile(filepath.Join(dir, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	var routes [][2]string
	for _, m := range documentedRoute.FindAllStringSubmatch(string(api), -1) {
		routes = append(routes, [2]string{m[1], m[2]})
	}
	if len(routes) == 0 {
		t.Fatalf("CKE's docs/api.md in %s names no route (## `GET /path`): has its format changed?", dir)
	}
	metrics, err := os.ReadFile(filepath.Join(dir, "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), "`/metrics`") {
		t.Fatalf("CKE's docs/metrics.md in %s does not name /metrics", dir)
	}
	return append(routes, [2]string{http.MethodGet, "/metrics"})
}

// undocumentedProbes are paths a server commonly serves, and paths no
// server serves, each with another method too: a route CKE's main gains
// without documenting it shows up as a different status here.
var undocumentedProbes = []string{"/", "/healthz", "/readyz", "/livez", "/debug/pprof/", "/status", "/api/v1/", "/no-such-route"}

// TestRoutesAreCKEs: on every route CKE documents, on each with the
// other methods, and on paths no one documents, our cke answers the
// status code CKE's own does, and on /version and /health the same body;
// our /metrics has every family CKE's own has. Only /ckegen/ is ours
// alone (docs/inside-cke.md).
func TestRoutesAreCKEs(t *testing.T) {
	theirsBin, _ := cketest.Binaries(t)
	oursBin := cketest.Inside(t)
	etcd := etcdtest.Start(t)
	theirs := startServer(t, theirsBin, etcd, "/theirs/")
	ours := startServer(t, oursBin, etcd, "/ours/")

	type probeCase struct{ method, path string }
	var cases []probeCase
	for _, r := range documentedRoutes(t) {
		for _, m := range []string{r[0], http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			c := probeCase{m, r[1]}
			if !slices.Contains(cases, c) {
				cases = append(cases, c)
			}
		}
	}
	for _, p := range undocumentedProbes {
		cases = append(cases, probeCase{http.MethodGet, p}, probeCase{http.MethodPost, p})
	}
	var compared []string
	for _, c := range cases {
		tc, tb := probe(t, theirs, c.method, c.path)
		oc, ob := probe(t, ours, c.method, c.path)
		compared = append(compared, fmt.Sprintf("%s %s %d", c.method, c.path, tc))
		if tc != oc {
			t.Errorf("%s %s: CKE's own cke answers %d, ours %d (follow CKE's pkg/cke/main.go in ckeserver/cmd/cke)\nCKE's: %.300s\nours:  %.300s", c.method, c.path, tc, oc, tb, ob)
			continue
		}
		if c.method == http.MethodGet && (c.path == "/version" || c.path == "/health") && !sameJSON(tb, ob) {
			t.Errorf("GET %s: CKE's own answers %s, ours %s", c.path, tb, ob)
		}
	}
	t.Logf("routes compared (method, path, CKE's status): %q", compared)

	// /metrics: CKE's families are all there, ckegen's beside them.
	_, tm := probe(t, theirs, http.MethodGet, "/metrics")
	_, om := probe(t, ours, http.MethodGet, "/metrics")
	theirsFamilies, oursFamilies := families(tm), families(om)
	for _, f := range theirsFamilies {
		if !slices.Contains(oursFamilies, f) {
			t.Errorf("/metrics: CKE's own has %s, ours does not", f)
		}
	}
	if !slices.Contains(oursFamilies, "ckegen_build_info") {
		t.Errorf("/metrics: ours has no ckegen_build_info")
	}

	// Which binary runs: ckegen_build_info and /ckegen/version name the
	// version and commit --version prints, and the CKE release linked in.
	line, err := exec.Command(oursBin, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", oursBin, err)
	}
	m := versionLine.FindStringSubmatch(strings.TrimSpace(string(line)))
	if m == nil || m[1] != cke.Version {
		t.Fatalf("--version: %q, want %q", line, "cke v"+cke.Version+" with ckegen VERSION (commit COMMIT, GO)")
	}
	want := fmt.Sprintf(`ckegen_build_info{cke_version="v%s",commit="%s",mode="inside-cke",version="%s"} 1`, cke.Version, m[3], m[2])
	if got := lines(om, "ckegen_build_info"); len(got) != 1 || got[0] != want {
		t.Errorf("/metrics: %q, want the one series %q", got, want)
	}
	if _, tm := probe(t, theirs, http.MethodGet, "/metrics"); len(lines(tm, "ckegen_build_info")) != 0 {
		t.Errorf("CKE's own /metrics has ckegen_build_info")
	}
	_, vb := probe(t, ours, http.MethodGet, "/ckegen/version")
	if wantV := fmt.Sprintf(`{"version":%q,"commit":%q,"cke_version":"v%s"}`, m[2], m[3], cke.Version); !sameJSON(vb, wantV) {
		t.Errorf("/ckegen/version: %s, want %s", vb, wantV)
	}

	// /ckegen/ is ours alone: CKE's own does not serve it.
	for _, p := range []string{"/ckegen/", "/ckegen/version"} {
		if tc, _ := probe(t, theirs, http.MethodGet, p); tc != http.StatusNotFound {
			t.Errorf("GET %s on CKE's own: %d, want 404", p, tc)
		}
		if oc, ob := probe(t, ours, http.MethodGet, p); oc != http.StatusOK {
			t.Errorf("GET %s on ours: %d %s", p, oc, ob)
		}
	}
}

// versionLine is what our cke --version prints.
var versionLine = regexp.MustCompile(`^cke v(\S+) with ckegen (\S+) \(commit (\S+), go\S+\)$`)

// lines are the lines of text that begin with prefix.
func lines(text, prefix string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// sameJSON reports whether two bodies are the same JSON value.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return false
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return bytes.Equal(ja, jb)
}

// families lists the metric families of a text exposition ("# TYPE name
// kind" lines), sorted.
func families(exposition string) []string {
	var out []string
	for _, l := range strings.Split(exposition, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out = append(out, f[2])
		}
	}
	slices.Sort(out)
	return out
}
