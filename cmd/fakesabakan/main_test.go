package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/internal/usage"
	"github.com/ckegen/ckegen/internal/version"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/sabakan"
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
	ipam := filepath.Join(t.TempDir(), "ipam.json")
	if err := os.WriteFile(ipam, []byte(`{"max-nodes-in-rack": 28, "node-ipv4-pool": "10.69.0.0/16", "node-ipv4-range-size": 6,
		"node-ipv4-range-mask": 26, "node-ip-per-node": 3, "node-index-offset": 3, "node-gateway-offset": 1,
		"bmc-ipv4-pool": "10.72.16.0/20", "bmc-ipv4-offset": "0.0.1.0", "bmc-ipv4-range-size": 5,
		"bmc-ipv4-range-mask": 20, "bmc-ipv4-gateway-offset": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0", "--machines", "../../examples/machines.json", "--ipam", ipam)
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

	// --ipam: a machine registered now gets its index and addresses from
	// the configuration: index node-index-offset+1 in the empty rack 12,
	// 10.69.0.0 + 2^6 * 3 * 12 + 4 and the next two ranges.
	resp, err := http.Post("http://"+addr+"/api/v1/machines", "application/json",
		strings.NewReader(`[{"serial":"new","rack":12,"role":"cs","bmc":{"type":"IPMI-2.0"}}]`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST machines: %s", resp.Status)
	}
	resp, err = http.Get("http://" + addr + "/api/v1/machines?serial=new")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []struct {
		Spec struct {
			IndexInRack int      `json:"index-in-rack"`
			IPv4        []string `json:"ipv4"`
		} `json:"spec"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got) != 1 {
		t.Fatalf("GET machines: %v %v", got, err)
	}
	if got[0].Spec.IndexInRack != 4 || strings.Join(got[0].Spec.IPv4, " ") != "10.69.9.4 10.69.9.68 10.69.9.132" {
		t.Errorf("registered machine: index %d, ipv4 %v", got[0].Spec.IndexInRack, got[0].Spec.IPv4)
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--version"}, &out); err != nil {
		t.Fatal(err)
	}
	if want := version.Line("fakesabakan") + "\n"; out.String() != want {
		t.Errorf("--version printed %q, want %q", out.String(), want)
	}
}

// TestFlags: fakesabakan takes --flags as every ckegen binary: --help on
// stdout and exit 0, an unknown flag with a "did you mean", a flag written
// with one dash (Go's flag package's way, which fakesabakan once took)
// told to take two, each a usage error (exit 2).
func TestFlags(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"--help"}, &out); err != nil {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"Usage:\n  fakesabakan [flags]", "--listen string", "--machines string", "--ipam string", "--faults", "--version", "Exit status: 0 on success, 1 on failure, 2 on a usage error"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("--help lacks %q:\n%s", want, out.String())
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--machine", "m.json"}, "unknown flag: --machine; did you mean --machines?"},
		{[]string{"--listn", "127.0.0.1:0"}, "unknown flag: --listn; did you mean --listen?"},
		{[]string{"-listen", "127.0.0.1:0"}, "unknown shorthand flag: 'l' in -listen; flags take two dashes: did you mean --listen?"},
		{[]string{"-machines=m.json"}, "flags take two dashes: did you mean --machines?"},
		{[]string{"--lsiten", "127.0.0.1:0"}, "unknown flag: --lsiten; did you mean --listen?"},
		{[]string{"extra"}, `unexpected arguments ["extra"]: fakesabakan takes only flags`},
	} {
		out.Reset()
		err := run(c.args, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) || out.Len() != 0 || usage.Code(err) != 2 {
			t.Errorf("%q: %v (exit %d), stdout %q; want an error with %q, exit 2 and nothing on stdout", c.args, err, usage.Code(err), out.String(), c.want)
		}
	}
}

// TestEmptyInventory: without --machines the server starts with no
// machine and says so in its log, with how to add some.
func TestEmptyInventory(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "fakesabakan")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "msg=serving") {
			break
		}
	}
	log := strings.Join(lines, "\n")
	for _, want := range []string{
		`level=WARN msg="empty inventory: no --machines given; register machines with POST /api/v1/machines, or start with --machines FILE (e.g. examples/machines.json)"`,
		"level=INFO msg=serving address=127.0.0.1:", " machines=0",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// TestListenInUse: a --listen address another process holds is a
// failure (exit 1) that names the flag to change.
func TestListenInUse(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	addr := busy.Addr().String()
	err = run([]string{"--listen", addr}, io.Discard)
	want := "--listen " + addr + ": address already in use: another process listens there (a second fakesabakan?); give --listen another port"
	if err == nil || err.Error() != want || usage.Code(err) != 1 {
		t.Errorf("--listen %s: %v (exit %d), want %q and exit 1", addr, err, usage.Code(err), want)
	}
}

func TestBadFlags(t *testing.T) {
	if err := run([]string{"--machines", "/nonexistent"}, io.Discard); err == nil || usage.Code(err) != 1 {
		t.Errorf("a missing machines file: %v, want a failure (exit 1)", err)
	}
	if err := run([]string{"extra"}, io.Discard); err == nil || !strings.Contains(err.Error(), `unexpected arguments ["extra"]: fakesabakan takes only flags, such as --machines FILE`) {
		t.Errorf("extra arguments: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "ipam.json")
	for content, want := range map[string]string{
		`{"max-nodes-in-rack": 0}`:         "max-nodes-in-rack: must not be zero",
		`{"max-nodes-in-rack": 1, "x": 1}`: `unknown field "x"`,
	} {
		if err := os.WriteFile(bad, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := run([]string{"--ipam", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--ipam %s: %v, want %q", content, err, want)
		}
	}
}

func TestFaults(t *testing.T) {
	ts := sitetest.StartSabakan(t, sitetest.Options{Clock: time.Now, Machines: []machine.Machine{}, Wrap: withFaults}).Server
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
	req, _ = http.NewRequest(http.MethodPut, ts.URL+"/-/fault", strings.NewReader("slow "+strings.Repeat("9", 2048)+"s"))
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("a 2 KiB fault mode: %v %v, want 413", resp, err)
	}
}
