package main

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/sabakan"
	"github.com/ckegen/ckegen/sabakan/server"
)

// TestBinary builds fakesabakan, starts it on a free port with the bundled
// inventory, waits for its "serving" line and queries it.
func TestBinary(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fakesabakan")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--machines", "../../examples/machines.json")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()

	addr := ""
	sc := bufio.NewScanner(stderr)
	re := regexp.MustCompile(`msg=serving address=(\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		t.Fatal("no serving line with the address")
	}
	c, err := sabakan.NewClient("http://"+addr+"/graphql", sabakan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := c.SearchMachines(ctx, sabakan.Variables{})
	if err != nil {
		t.Fatal(err)
	}
	// 240 machines, minus 12 boot servers; none is RETIRED.
	if len(ms) != 228 {
		t.Errorf("%d machines, want 228", len(ms))
	}
	for _, m := range ms {
		if m.Spec.Role == "boot" || !strings.HasPrefix(m.Spec.IPv4[0], "10.0.") {
			t.Fatalf("unexpected machine %+v", m.Spec)
		}
	}
}

func TestBadFlags(t *testing.T) {
	if err := run([]string{"--machines", "/nonexistent"}); err == nil {
		t.Error("a missing machines file was accepted")
	}
	if err := run([]string{"extra"}); err == nil || !strings.Contains(err.Error(), "unexpected arguments") {
		t.Errorf("extra arguments: %v", err)
	}
}

func TestFaults(t *testing.T) {
	store := server.NewStore(nil)
	srv, err := server.New(store)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(withFaults(srv.Handler()))
	defer ts.Close()
	c, _ := sabakan.NewClient(ts.URL+"/graphql", sabakan.Options{Timeout: 100 * time.Millisecond, Retries: -1})
	set := func(mode string) {
		req, _ := http.NewRequest(http.MethodPut, ts.URL+"/-/fault", strings.NewReader(mode))
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("set fault %q: %v %v", mode, resp, err)
		}
		resp.Body.Close()
	}
	for _, c2 := range []struct{ mode, want string }{
		{"slow 1s", "timeout after 100ms"},
		{"garbage", "malformed response"},
		{"error", "HTTP 500: injected failure"},
		{"none", ""},
	} {
		set(c2.mode)
		_, err := c.SearchMachines(context.Background(), sabakan.Variables{})
		if (c2.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c2.want)) {
			t.Errorf("fault %q: %v, want %q", c2.mode, err, c2.want)
		}
	}
	req, _ := http.NewRequest(http.MethodPut, ts.URL+"/-/fault", strings.NewReader("explode"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 400 {
		t.Errorf("unknown fault accepted: %v %v", resp, err)
	}
}
