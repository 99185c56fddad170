package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), code
}

func exampleArgs(extra ...string) []string {
	return append([]string{"sabakan", "generate",
		"--template", "../../examples/template.yml",
		"--machines", "../../examples/machines.json",
		"--constraints", "../../examples/constraints.json",
		"--now", "2026-01-02T00:00:00Z"}, extra...)
}

func TestGenerateExample(t *testing.T) {
	out, _, code := runCLI(t, exampleArgs()...)
	if code != 0 || !strings.Contains(out, "name: example") {
		t.Fatalf("exit %d, stdout %.200q", code, out)
	}
	jsonOut, _, code := runCLI(t, exampleArgs("-o", "json")...)
	var c map[string]any
	if code != 0 || json.Unmarshal([]byte(jsonOut), &c) != nil || len(c["nodes"].([]any)) != 23 {
		t.Fatalf("-o json: exit %d, want a cluster with 23 nodes", code)
	}
}

// TestGenerateFlagErrors: every bad flag is an error naming it, with
// nothing on stdout: exit 2 for a flag refused as written, 1 for a file
// it names that is refused.
func TestGenerateFlagErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"control-plane-count": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
		code int
	}{
		{exampleArgs("--explain", "xml"), `--explain: must be text or json, got "xml"`, 2},
		{exampleArgs("-o", "toml"), `--output: must be yaml or json, got "toml"`, 2},
		{exampleArgs("--now", "yesterday"), `--now: must be RFC3339`, 2},
		{exampleArgs("--template-changed"), "--template-changed needs --current", 2},
		{exampleArgs("--retire-wait", "-1s"), "--retire-wait: must not be negative", 2},
		{exampleArgs("--constraints", bad), "control-plane-count: must be >= 1, got 0", 1},
		{exampleArgs("--current", filepath.Join(dir, "missing.yml")), "--current: open", 1},
		{exampleArgs("--k8s-nodes", bad), "--k8s-nodes", 1},
		{exampleArgs("--rebooting", "10.0.0.1,,"), "--rebooting: empty address", 1},
		{[]string{"sabakan", "generate", "--machines", "x"}, "ckegenctl: sabakan generate needs --template (see --help)\n", 2},
		{[]string{"sabakan", "generate"}, "ckegenctl: sabakan generate needs --template and --machines (see --help)\n", 2},
	}
	for _, c := range cases {
		out, errOut, code := runCLI(t, c.args...)
		if code != c.code || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d, no stdout, stderr containing %q", c.args[2:], code, out, errOut, c.code, c.want)
		}
	}
}

// TestExplainJSONOnError: with --explain json, stderr is exactly one JSON
// object, which carries the error.
func TestExplainJSONOnError(t *testing.T) {
	dir := t.TempDir()
	c := filepath.Join(dir, "c.json")
	if err := os.WriteFile(c, []byte(`{"control-plane-count": 3, "minimum-workers": 100000}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, exampleArgs("--constraints", c, "--explain", "json")...)
	if code != 1 || out != "" {
		t.Fatalf("exit %d stdout %q", code, out)
	}
	var e explanation
	dec := json.NewDecoder(strings.NewReader(errOut))
	if err := dec.Decode(&e); err != nil || dec.More() {
		t.Fatalf("stderr is not exactly one JSON object: %q", errOut)
	}
	if !strings.Contains(e.Error, "not enough machines: need 100000 workers") || len(e.Changes) != 0 {
		t.Errorf("explanation = %+v", e)
	}
}

// TestGenerateWarningWithoutExplain: without --explain, the generator's
// warnings still reach stderr, one "warning:" line each, and stdout holds
// only the cluster.
func TestGenerateWarningWithoutExplain(t *testing.T) {
	dir := t.TempDir()
	tmpl := filepath.Join(dir, "t.yml")
	if err := os.WriteFile(tmpl, []byte(`name: example
nodes:
- {user: cybozu, control_plane: true}
- {user: cybozu, labels: {cke.cybozu.com/role: compute}}
- {user: cybozu, labels: {cke.cybozu.com/role: gpuu}}
service_subnet: 10.68.0.0/16
`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := exampleArgs("--template", tmpl)
	out, errOut, code := runCLI(t, args...)
	want := "warning: template role \"gpuu\" matches no machine; inventory roles: boot, compute, gpu, storage\n"
	if code != 0 || !strings.HasPrefix(out, "name: example") || errOut != want {
		t.Errorf("exit %d, stderr %q, stdout %.40q; want exit 0, stderr %q and a cluster", code, errOut, out, want)
	}
}

// TestGenerateRefusesTrailingData: the machines and --k8s-nodes files hold
// exactly one JSON value; anything after it (a stray closing bracket, a
// second value) is an error naming the file.
func TestGenerateRefusesTrailingData(t *testing.T) {
	machines, err := os.ReadFile("../../examples/machines.json")
	if err != nil {
		t.Fatal(err)
	}
	graphQL := append(append([]byte(`{"data":{"searchMachines":`), machines...), "}}"...)
	const nodes = `[{"name": "10.0.1.1", "taints": [{"key": "example.com/x", "effect": "NoSchedule"}]}]`
	cases := []struct {
		flag, data, want string
	}{
		{"--k8s-nodes", nodes + " ]", "--k8s-nodes"},
		{"--k8s-nodes", nodes + "\n]\n", "line 2, column 1: trailing data after the JSON value"},
		{"--k8s-nodes", nodes + " {}", "trailing data after the JSON value"},
		{"--k8s-nodes", nodes + nodes, "trailing data after the JSON value"},
		{"--k8s-nodes", nodes + " x", "trailing data after the JSON value"},
		{"--machines", string(machines) + " ]", "--machines"},
		{"--machines", string(machines) + "]", "trailing data after the JSON value"},
		{"--machines", string(machines) + " []", "trailing data after the JSON value"},
		{"--machines", string(graphQL) + "}", "trailing data after the JSON value"},
		{"--machines", string(graphQL) + ` {"data":{}}`, "trailing data after the JSON value"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		file := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		if err := os.WriteFile(file, []byte(c.data), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLI(t, exampleArgs(c.flag, file)...)
		if code != 1 || out != "" || !strings.Contains(errOut, c.flag+" "+file) || !strings.Contains(errOut, c.want) {
			t.Errorf("%s with %q...%q: exit %d, stdout %.40q, stderr %q; want exit 1 and an error naming the file and containing %q",
				c.flag, c.data[:10], c.data[len(c.data)-10:], code, out, errOut, c.want)
		}
	}
	// The same files without the trailing data are accepted.
	for flag, data := range map[string][]byte{"--k8s-nodes": []byte(nodes + "\n"), "--machines": graphQL} {
		file := filepath.Join(dir, "ok.json")
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, errOut, code := runCLI(t, exampleArgs(flag, file)...); code != 0 || out == "" {
			t.Errorf("%s without trailing data: exit %d, stderr %q", flag, code, errOut)
		}
	}
}
