package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/embedded"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/usage"
)

func freePort(t *testing.T) int { return etcdtest.FreePort(t) }

func build(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", dir, ".", "../ckegenctl")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// TestDaemonProcess runs the built daemon with an embedded etcd against the
// compatible server (in the test process, sitetest's), configured with the
// built ckegenctl, until the cluster converges; then SIGTERM must resign and
// exit 0.
func TestDaemonProcess(t *testing.T) {
	bin := t.TempDir()
	build(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The compatible server with the bundled data center, on the real
	// clock as fakesabakan is.
	sab := sitetest.StartSabakan(t, sitetest.Options{Machines: sitetest.ReadMachines(t, "../../examples/machines.json"), Clock: time.Now})

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	logFile := filepath.Join(t.TempDir(), "ckegen.log")
	etcdDir := filepath.Join(t.TempDir(), "etcd")
	daemon := exec.CommandContext(ctx, filepath.Join(bin, "ckegen"),
		"--embedded-etcd-dir", etcdDir,
		"--embedded-etcd-client-url", etcdURL,
		"--embedded-etcd-peer-url", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		"--http", httpAddr, "--interval", "300ms", "--session-ttl", "5s", "--name", "proc-1",
		"--logfile", logFile, "--logformat", "json")
	// well waits CANCELLATION_DELAY_SECONDS (5 by default) after SIGTERM.
	daemon.Env = append(os.Environ(), "CANCELLATION_DELAY_SECONDS=0")
	var daemonStderr strings.Builder
	daemon.Stderr = &daemonStderr
	if err := daemon.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = daemon.Process.Kill(); _ = daemon.Wait() }()
	logLines := func() []map[string]any {
		data, _ := os.ReadFile(logFile)
		var out []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil {
				out = append(out, m)
			}
		}
		return out
	}
	hasLine := func(msg string, fields map[string]any) bool {
		for _, l := range logLines() {
			if l["message"] != msg {
				continue
			}
			ok := true
			for k, v := range fields {
				ok = ok && l[k] == v
			}
			if ok {
				return true
			}
		}
		return false
	}
	deadline := time.Now().Add(time.Minute)
	for !hasLine("serving", map[string]any{"http": httpAddr, "name": "proc-1"}) {
		if time.Now().After(deadline) {
			t.Fatalf("no serving line in %s; stderr: %s", logFile, daemonStderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}

	ckegenctl := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "ckegenctl"), append([]string{"--endpoints", etcdURL}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		// The count model (3 control planes, 20 workers) stored before
		// the template, so that the first cluster is made in it.
		{"sabakan", "set-url", sab.Server.URL},
		{"constraints", "set", "control-plane-count", "3"},
		{"constraints", "set", "minimum-workers", "20"},
		{"sabakan", "set-template", "../../examples/template.yml"},
	} {
		if out, err := ckegenctl(args...); err != nil {
			t.Fatalf("ckegenctl %v: %v\n%s", args, err, out)
		}
	}

	// Converged: status ok and the cluster has 3 control planes and 20
	// workers.
	var cluster struct {
		Nodes []struct {
			Address      string `json:"address"`
			ControlPlane bool   `json:"control_plane"`
		} `json:"nodes"`
	}
	deadline = time.Now().Add(time.Minute)
	for {
		out, err := ckegenctl("cluster", "get", "-o", "json")
		if err == nil && json.Unmarshal([]byte(out), &cluster) == nil && len(cluster.Nodes) == 23 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no converged cluster: %s", out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	cps := 0
	for _, n := range cluster.Nodes {
		if n.ControlPlane {
			cps++
		}
	}
	if cps != 3 {
		t.Errorf("%d control planes, want 3", cps)
	}
	if out, _ := ckegenctl("leader"); out != "proc-1\n" {
		t.Errorf("leader %q", out)
	}
	if out, _ := ckegenctl("sabakan", "status", "-o", "json"); !strings.Contains(out, `"result": "ok"`) {
		t.Errorf("status %s", out)
	}
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, m := range []string{"cke_sabakan_integration_successful 1", `cke_sabakan_workers{role="compute"}`, "cke_leader 1"} {
		if !strings.Contains(string(metrics), m) {
			t.Errorf("/metrics lacks %q", m)
		}
	}
	get := func(path string) (int, map[string]any) {
		resp, err := http.Get("http://" + httpAddr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp.StatusCode, body
	}
	if code, body := get("/health"); code != 200 || body["health"] != "healthy" {
		t.Errorf("/health: %d %v", code, body)
	}
	out, err := exec.Command(filepath.Join(bin, "ckegen"), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	// --version's line names the version /version answers.
	if code, body := get("/version"); code != 200 || body["version"] == "" || !strings.HasPrefix(string(out), fmt.Sprintf("ckegen %s (commit ", body["version"])) {
		t.Errorf("/version: %d %v; ckegen --version: %q", code, body, out)
	}

	// In planning, the page shows the stored plan's next step, which
	// waits for the trigger.
	for _, args := range [][]string{{"sabakan", "trigger", "planning"}, {"constraints", "set", "minimum-workers", "21"}} {
		if out, err := ckegenctl(args...); err != nil {
			t.Fatalf("ckegenctl %v: %v\n%s", args, err, out)
		}
	}
	deadline = time.Now().Add(30 * time.Second)
	for page := ""; !strings.Contains(page, "Next step: <b>increase worker</b> (after the trigger set to schedule (ckegenctl sabakan trigger schedule)), 1 change; 1 step pending"); {
		if time.Now().After(deadline) {
			t.Fatalf("the page shows no pending step:\n%s", page)
		}
		time.Sleep(100 * time.Millisecond)
		resp, err := http.Get("http://" + httpAddr + "/")
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		page = string(data)
	}

	// The built ckegenctl against an etcd that does not answer: one line on
	// stderr, nothing else (the etcd client's retry warnings once came
	// out there as JSON, in the way of whoever reads the output).
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "ckegenctl"), "--endpoints", dead, "--timeout", "1s", "cluster", "get", "-o", "json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	wantErr := "ckegenctl: etcd at " + dead + ": nothing listens there (dial tcp " + strings.TrimPrefix(dead, "http://") + ": connect: connection refused): " +
		"start etcd (ckegen runs an embedded one when given neither --config nor --etcd-endpoints), or point --etcd-endpoints or --config at a running one\n"
	if err := cmd.Run(); err == nil || stdout.String() != "" || stderr.String() != wantErr {
		t.Errorf("ckegenctl with no etcd: %v, stdout %q, stderr %q; want exit 1 and only %q", err, stdout.String(), stderr.String(), wantErr)
	}

	// SIGTERM: resign and exit 0; from the signal on, nothing is logged
	// as an error (the embedded etcd's clean stop included).
	if err := daemon.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := daemon.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, daemonStderr.String())
	}
	if daemonStderr.String() != "" {
		t.Errorf("stderr with --logfile: %s", daemonStderr.String())
	}
	// The files the daemon created are its own (docs/security.md).
	if fi, err := os.Stat(logFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("log file: %v, mode %v; want 0600", err, fi.Mode().Perm())
	}
	_ = filepath.WalkDir(etcdDir, func(path string, de fs.DirEntry, err error) error {
		if fi, err := de.Info(); err == nil && fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("embedded etcd %s: mode %v, open to others", path, fi.Mode().Perm())
		}
		return err
	})
	if !hasLine("stopped", nil) || !hasLine("cluster updated", map[string]any{"op": "new"}) {
		t.Errorf("the log lacks the tick decision or the stop: %v", logLines())
	}
	signaled := false
	for _, l := range logLines() {
		signaled = signaled || l["message"] == "well: got signal"
		if signaled && (l["severity"] == "error" || l["severity"] == "critical") {
			t.Errorf("an error while stopping: %v", l)
		}
	}
	if !signaled {
		t.Error("the log lacks well's signal line")
	}
}

func TestBadFlags(t *testing.T) {
	dir := t.TempDir()
	typo := writeFile(t, dir, "typo.yml", "endpoints: [http://127.0.0.1:2379]\ntls-ca-flie: x\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "0"}, "--interval: must be at least 100ms, got 0s"},
		{[]string{"--interval", "-1m"}, "--interval: must be at least 100ms"},
		{[]string{"--interval", "soon"}, `invalid argument "soon" for "--interval"`},
		{[]string{"--session-ttl", "10ms"}, "--session-ttl: must be a whole number of seconds, at least 1s"},
		{[]string{"--session-ttl", "1500ms"}, "--session-ttl: must be a whole number of seconds"},
		{[]string{"--retire-wait", "-5m"}, "--retire-wait: must not be negative, got -5m0s"},
		{[]string{"--min-backoff", "0"}, "--min-backoff: must be positive"},
		{[]string{"--min-backoff", "-1s"}, "--min-backoff: must be positive, got -1s"},
		{[]string{"--max-cluster-bytes", "0"}, "--max-cluster-bytes: must be positive"},
		{[]string{"--sabakan-timeout", "0s"}, "--sabakan-timeout: must be positive"},
		{[]string{"--sabakan-max-bytes", "0"}, "--sabakan-max-bytes: must be positive"},
		{[]string{"--http", "10180"}, "--http: want <Listen IP>:<Port number>"},
		{[]string{"--etcd-endpoints", "http://a:2379,,http://b:2379"}, "--etcd-endpoints: an empty endpoint"},
		{[]string{"--embedded-etcd-client-url", "127.0.0.1:2379"}, "--embedded-etcd-client-url: want http://HOST:PORT"},
		{[]string{"--embedded-etcd-peer-url", "http://127.0.0.1"}, "--embedded-etcd-peer-url: want http://HOST:PORT"},
		{[]string{"--embedded-etcd-client-url", "http://0.0.0.0:2379"}, "client URL 0.0.0.0:2379 is not on loopback and not https with client certificates"},
		{[]string{"--embedded-etcd-peer-url", "http://10.1.2.3:2380"}, "give --config (or --etcd-endpoints)"},
		{[]string{"--loglevel", "loud"}, `--loglevel: want critical, error, warning, info or debug, got "loud"`},
		{[]string{"--logformat", "xml"}, `--logformat: want plain, logfmt or json, got "xml"`},
		{[]string{"--log-format", "json"}, "unknown flag: --log-format; did you mean --logformat?"},
		{[]string{"--etcd-endpoint", "http://127.0.0.1:2379"}, "unknown flag: --etcd-endpoint; did you mean --etcd-endpoints?"},
		{[]string{"-interval", "1m"}, "-interval: flags take two dashes: did you mean --interval?"},
		// -http would be read as -h: help, and exit 0.
		{[]string{"-http", "127.0.0.1:1"}, "-http: flags take two dashes: did you mean --http?"},
		{[]string{"--endpiont", "http://127.0.0.1:2379"}, "unknown flag: --endpiont; did you mean --etcd-endpoints?"},
		{[]string{"--embeded-etcd-dir", "x"}, "unknown flag: --embeded-etcd-dir; did you mean --embedded-etcd-dir?"},
		{[]string{"--sabakan-tls-ca-file", "/nonexistent"}, "--sabakan-tls-ca-file"},
		{[]string{"--sabakan-tls-cert-file", "/nonexistent"}, "--sabakan-tls-cert-file"},
		{[]string{"--name", "a\nb"}, "--name: must be one line"},
		// The etcd flags and CKE's file are internal/etcdclient's: they
		// are checked at start.
		{[]string{"--config", "/nonexistent"}, "--config: open /nonexistent"},
		{[]string{"--config", typo}, "--config " + typo + `: line 2, column 1: unknown field "tls-ca-flie"; did you mean tls-ca-file?`},
		{[]string{"--kubeconfig", "/nonexistent"}, "--kubeconfig"},
		{[]string{"--kubeconfig", writeFile(t, dir, "kubeconfig", "clusters: [\n")}, "--kubeconfig"},
		{[]string{"--kubernetes-timeout", "0s"}, "--kubernetes-timeout: must be positive"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		_, err := parseFlags(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.args, err, c.want)
		}
		// A flag or a value refused is a usage error (exit 2); a file a
		// flag names that cannot be used, a failed start (exit 1).
		code := usage.ExitUsage
		switch c.args[0] {
		case "--config", "--kubeconfig", "--sabakan-tls-ca-file", "--sabakan-tls-cert-file":
			code = usage.ExitFailure
		}
		if got := usage.Code(err); got != code {
			t.Errorf("%q: %v: exit %d, want %d", c.args, err, got, code)
		}
	}
	// The defaults and sensible values start.
	for _, args := range [][]string{
		nil,
		{"--interval", "100ms", "--session-ttl", "3s", "--retire-wait", "0s", "--min-backoff", "10m", "--loglevel", "warning", "--logformat", "json"},
		{"--etcd-endpoints", "http://a:2379,http://b:2379", "--etcd-prefix", "/x/"},
		// Another etcd than the embedded one: its URLs do not matter.
		{"--etcd-endpoints", "http://a:2379", "--embedded-etcd-client-url", "http://0.0.0.0:2379"},
		{"--kubeconfig", writeFile(t, dir, "good-kubeconfig", "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://127.0.0.1:6443\"}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), "--kubernetes-timeout", "3s"},
	} {
		if _, err := parseFlags(args); err != nil {
			t.Errorf("%q refused: %v", args, err)
		}
	}
}

// The sabakan answer's limit and CKE's status age reach the daemon.
func TestFlagsReachTheDaemon(t *testing.T) {
	o, err := parseFlags([]string{"--sabakan-max-bytes", "1000", "--cke-status-max-age", "3m"})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.sabakanOptions().MaxBodyBytes; got != 1000 {
		t.Errorf("MaxBodyBytes = %d, want 1000", got)
	}
	if o.ckeStatusMaxAge != 3*time.Minute {
		t.Errorf("ckeStatusMaxAge = %s", o.ckeStatusMaxAge)
	}
	if o, _ := parseFlags(nil); o.sabakanOptions().MaxBodyBytes != 128<<20 {
		t.Errorf("default MaxBodyBytes = %d, want 128 MiB", o.sabakanOptions().MaxBodyBytes)
	}
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEtcdConfig: the daemon reads its etcd flags and CKE's file with
// internal/etcdclient (whose tests hold the rules), /etc/cke/config.yml
// by default; with no etcd configured it runs an embedded one.
func TestEtcdConfig(t *testing.T) {
	dir := t.TempDir()
	old := defaultConfig
	t.Cleanup(func() { defaultConfig = old })
	defaultConfig = filepath.Join(dir, "absent.yml")
	for _, c := range []struct {
		args      []string
		endpoints string // "" means the embedded etcd
		prefix    string
	}{
		{nil, "", "/cke/"},
		{[]string{"--etcd-prefix", "/x/"}, "", "/x/"},
		{[]string{"--etcd-endpoints", "http://a:2379,http://b:2379", "--etcd-prefix", "/x/"}, "http://a:2379,http://b:2379", "/x/"},
	} {
		o, err := parseFlags(c.args)
		if err != nil {
			t.Fatalf("%q: %v", c.args, err)
		}
		cfg, err := o.etcd.Load()
		switch {
		case err != nil:
			t.Errorf("%q: %v", c.args, err)
		case c.endpoints == "" && cfg.Configured, c.endpoints != "" && strings.Join(cfg.Endpoints, ",") != c.endpoints, cfg.Prefix != c.prefix:
			t.Errorf("%q: %+v, want %q (empty: the embedded etcd) with prefix %s", c.args, cfg, c.endpoints, c.prefix)
		}
	}
	defaultConfig = writeFile(t, dir, "config.yml", "endpoints: [\"http://10.0.0.1:2379\"]\nprefix: /file/\n")
	o, err := parseFlags(nil)
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := o.etcd.Load(); err != nil || !cfg.Configured || cfg.Endpoints[0] != "http://10.0.0.1:2379" || cfg.Prefix != "/file/" {
		t.Errorf("with %s present: %+v %v", defaultConfig, cfg, err)
	}
}

// TestConnectReports: an etcd that refuses at start is logged with why,
// and the daemon goes on with its client.
func TestConnectReports(t *testing.T) {
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	o, err := parseFlags([]string{"--etcd-endpoints", dead})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.etcd.Load()
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	cli, err := o.connect(cfg, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	cli.Close()
	if want := `level=WARN msg="etcd does not answer yet; campaigning until it does" error="etcd at ` + dead + `: nothing listens there`; !strings.Contains(log.String(), want) {
		t.Errorf("the log:\n%s\nlacks %q", log.String(), want)
	}
}

// TestLargeCluster: a cluster over the etcd client's default request
// limit (2 MiB) is written when --max-cluster-bytes and etcd's
// --max-request-bytes allow it.
func TestLargeCluster(t *testing.T) {
	_, url := etcdtest.StartServer(t, embedded.Options{MaxRequestBytes: 8 << 20})
	o, err := parseFlags([]string{"--etcd-endpoints", url, "--max-cluster-bytes", "6000000"})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.etcd.Load()
	if err != nil {
		t.Fatal(err)
	}
	cli, err := o.connect(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/cke/cluster", strings.Repeat("x", 6000000)); err != nil {
		t.Errorf("a 6 MB write with --max-cluster-bytes 6000000: %v", err)
	}
}

// TestFailedStart: a port another process holds is refused naming the
// flag to change, exit 1; the start leaves no new directory behind (the
// embedded etcd's, with the parents it created), and a directory that
// existed stays, with what it held.
func TestFailedStart(t *testing.T) {
	bin := t.TempDir()
	build(t, bin)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	held := busy.Addr().String()
	free := func() string { return fmt.Sprintf("127.0.0.1:%d", freePort(t)) }
	inUse := func(flag, value, who string) string {
		return "ckegen: " + flag + " " + value + ": address already in use: another process listens there (" + who + "?); give " + flag + " another port\n"
	}
	for _, c := range []struct {
		name               string
		existed            bool   // --embedded-etcd-dir exists before, with a file in it
		dir                string // --embedded-etcd-dir, under a new empty directory
		http, client, peer string
		want               string
	}{
		{name: "--http", dir: "data", http: held, client: "http://" + free(), peer: "http://" + free(),
			want: inUse("--http", held, "a second ckegen")},
		{name: "client URL, in new parents", dir: "a/b/data", http: free(), client: "http://" + held, peer: "http://" + free(),
			want: inUse("--embedded-etcd-client-url", "http://"+held, "an etcd, or a second ckegen")},
		{name: "peer URL", dir: "data", http: free(), client: "http://" + free(), peer: "http://" + held,
			want: inUse("--embedded-etcd-peer-url", "http://"+held, "an etcd, or a second ckegen")},
		{name: "a directory that existed", existed: true, dir: "data", http: free(), client: "http://" + held, peer: "http://" + free(),
			want: inUse("--embedded-etcd-client-url", "http://"+held, "an etcd, or a second ckegen")},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, c.dir)
			marker := filepath.Join(dir, "kept")
			if c.existed {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(marker, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(filepath.Join(bin, "ckegen"), "--embedded-etcd-dir", dir, "--http", c.http,
				"--embedded-etcd-client-url", c.client, "--embedded-etcd-peer-url", c.peer,
				"--logfile", filepath.Join(t.TempDir(), "log"))
			var stdout, stderr strings.Builder
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 || stdout.String() != "" || stderr.String() != c.want {
				t.Errorf("%v, stdout %q, stderr %q; want exit 1 and %q", err, stdout.String(), stderr.String(), c.want)
			}
			if c.existed {
				if data, err := os.ReadFile(marker); err != nil || string(data) != "x" {
					t.Errorf("the directory that existed lost %s: %v", marker, err)
				}
				return
			}
			if left, err := os.ReadDir(root); err != nil || len(left) > 0 {
				t.Errorf("the failed start left %v in %s (%v), want nothing", left, root, err)
			}
		})
	}
}
