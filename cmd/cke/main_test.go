package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/etcdtest"
)

func freePort(t *testing.T) int { return etcdtest.FreePort(t) }

func build(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("go", "build", "-o", dir, "../cke", "../ckecli", "../fakesabakan")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
}

// TestDaemonProcess runs the built daemon with an embedded etcd against the
// built compatible server, configured with the built ckecli, until the
// cluster converges; then SIGTERM must resign and exit 0.
func TestDaemonProcess(t *testing.T) {
	bin := t.TempDir()
	build(t, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// The compatible server with the bundled data center.
	sab := exec.CommandContext(ctx, filepath.Join(bin, "fakesabakan"), "--listen", "127.0.0.1:0", "--machines", "../../examples/machines.json")
	sabPipe, _ := sab.StderrPipe()
	sabErr := bufio.NewReader(sabPipe)
	if err := sab.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sab.Process.Kill(); _ = sab.Wait() }()
	sabAddr := waitLine(t, sabErr, regexp.MustCompile(`msg=serving address=(\S+)`))

	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cke := exec.CommandContext(ctx, filepath.Join(bin, "cke"),
		"--embedded-etcd-dir", t.TempDir(),
		"--embedded-etcd-client-url", etcdURL,
		"--embedded-etcd-peer-url", fmt.Sprintf("http://127.0.0.1:%d", freePort(t)),
		"--http", httpAddr, "--interval", "300ms", "--session-ttl", "5s", "--name", "proc-1")
	ckePipe, _ := cke.StderrPipe()
	ckeErr := bufio.NewReader(ckePipe)
	if err := cke.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cke.Process.Kill(); _ = cke.Wait() }()
	var logs strings.Builder
	logsDone := make(chan struct{})
	waitLine(t, ckeErr, regexp.MustCompile(`msg=serving`))
	go func() { _, _ = io.Copy(&logs, ckeErr); close(logsDone) }()

	ckecli := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "ckecli"), append([]string{"--endpoints", etcdURL}, args...)...).CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{
		{"sabakan", "set-url", "http://" + sabAddr},
		{"sabakan", "set-template", "../../examples/template.yml"},
		{"constraints", "set", "control-plane-count", "3"},
		{"constraints", "set", "minimum-workers", "20"},
	} {
		if out, err := ckecli(args...); err != nil {
			t.Fatalf("ckecli %v: %v\n%s", args, err, out)
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
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := ckecli("cluster", "get", "-o", "json")
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
	if out, _ := ckecli("leader"); out != "proc-1\n" {
		t.Errorf("leader %q", out)
	}
	if out, _ := ckecli("sabakan", "status", "-o", "json"); !strings.Contains(out, `"result": "ok"`) {
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
	if resp, err := http.Get("http://" + httpAddr + "/health"); err != nil || resp.StatusCode != 200 {
		t.Errorf("/health: %v %v", resp, err)
	}

	// The built ckecli against an etcd that does not answer: one line on
	// stderr, nothing else (the etcd client's retry warnings once came
	// out there as JSON, in the way of whoever reads the output).
	dead := fmt.Sprintf("http://127.0.0.1:%d", freePort(t))
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "ckecli"), "--endpoints", dead, "--timeout", "1s", "cluster", "get", "-o", "json")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	wantErr := "ckecli: etcd at " + dead + ": no answer within 1s (--timeout): context deadline exceeded\n"
	if err := cmd.Run(); err == nil || stdout.String() != "" || stderr.String() != wantErr {
		t.Errorf("ckecli with no etcd: %v, stdout %q, stderr %q; want exit 1 and only %q", err, stdout.String(), stderr.String(), wantErr)
	}

	// SIGTERM: resign and exit 0.
	if err := cke.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-logsDone
	if err := cke.Wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v\n%s", err, logs.String())
	}
	if !strings.Contains(logs.String(), "msg=stopped") || !strings.Contains(logs.String(), "msg=\"cluster updated\" op=new") {
		t.Errorf("logs lack the tick decision or the stop:\n%s", logs.String())
	}
}

// waitLine reads lines from r until one matches re; r keeps the rest.
func waitLine(t *testing.T, r *bufio.Reader, re *regexp.Regexp) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if m := re.FindStringSubmatch(line); m != nil {
			if len(m) > 1 {
				return m[1]
			}
			return m[0]
		}
		if err != nil {
			t.Fatalf("no line matching %s: %v", re, err)
		}
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--log-format", "xml"},
		{"--session-ttl", "10ms"},
		{"extra"},
		{"--config", "/nonexistent"},
	} {
		if err := run(args); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
