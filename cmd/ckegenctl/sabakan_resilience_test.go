package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func resilienceArgs(extra ...string) []string {
	return append([]string{"sabakan", "resilience",
		"--template", "../../examples/template.yml",
		"--machines", "../../examples/machines.json",
		"--constraints", "../../examples/constraints.json",
		"--now", "2026-01-02T00:00:00Z"}, extra...)
}

// TestResilienceExample: the bundled data center with two control planes
// in rack 4 plans settled, and the report says that losing rack 4 breaks
// etcd's quorum, first, with the rack's control planes; the JSON has the
// contract's keys.
func TestResilienceExample(t *testing.T) {
	out, errOut, code := runCLI(t, resilienceArgs("--current", "../../examples/cluster-rack4.yml")...)
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
	lines := strings.Split(out, "\n")
	if lines[0] != "failure domain: rack; 3 control planes, quorum 2; count model, minimum-workers 20" ||
		lines[1] != "at risk: rack 4 holds 2 of 3 control planes: losing it breaks etcd's quorum" ||
		!strings.HasPrefix(lines[3], "DOMAIN ") || !strings.HasPrefix(lines[4], "rack 4 ") ||
		!strings.Contains(lines[4], "10.0.4.12, 10.0.4.14") || !strings.Contains(lines[4], " LOST ") {
		t.Errorf("text:\n%s", out)
	}
	if n := strings.Count(out, "\nrack "); n != 12 {
		t.Errorf("%d rows of racks, want 12:\n%s", n, out)
	}

	js, _, code := runCLI(t, resilienceArgs("--current", "../../examples/cluster-rack4.yml", "-o", "json")...)
	var doc struct {
		FailureDomain string `json:"failureDomain"`
		ControlPlanes int    `json:"controlPlanes"`
		Quorum        int    `json:"quorum"`
		Domains       []struct {
			Domain        string         `json:"domain"`
			ControlPlanes []string       `json:"controlPlanes"`
			Workers       map[string]int `json:"workers"`
			QuorumLost    bool           `json:"quorumLost"`
			WorkersLeft   *int           `json:"workersLeft"`
			BelowMinimum  *bool          `json:"belowMinimum"`
			Recovery      *struct {
				Steps  int    `json:"steps"`
				Result string `json:"result"`
			} `json:"recovery"`
		} `json:"domains"`
		AtRisk []string `json:"atRisk"`
	}
	if code != 0 || json.Unmarshal([]byte(js), &doc) != nil {
		t.Fatalf("-o json: exit %d:\n%s", code, js)
	}
	if doc.FailureDomain != "rack" || doc.ControlPlanes != 3 || doc.Quorum != 2 || len(doc.AtRisk) != 1 || doc.AtRisk[0] != "4" || len(doc.Domains) != 12 {
		t.Errorf("json: %+v", doc)
	}
	for _, d := range doc.Domains {
		if d.WorkersLeft == nil || d.BelowMinimum == nil || d.Recovery == nil || d.Recovery.Result == "" || d.Workers == nil || d.ControlPlanes == nil {
			t.Errorf("domain %s lacks a key of the contract: %+v", d.Domain, d)
		}
		if d.Domain == "4" && (!d.QuorumLost || len(d.ControlPlanes) != 2 || d.Workers["compute"] != 1) {
			t.Errorf("rack 4: %+v", d)
		}
	}
}

// TestResilienceByLabel: a policy's failureDomain makes the report by
// that label; without --current it reports on the cluster Generate would
// make, and says so.
func TestResilienceByLabel(t *testing.T) {
	pol := writeFileIn(t, t.TempDir(), "policy.yml", "failureDomain: {label: product}\n")
	out, _, code := runCLI(t, resilienceArgs("--policy", pol)...)
	if code != 0 || !strings.HasPrefix(out, "failure domain: product; 3 control planes, quorum 2;") ||
		!strings.Contains(out, "cluster: the one Generate would make (no current cluster)") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	for _, want := range []string{"\nproduct R600 ", "\nproduct R610 ", "\nproduct R620 "} {
		if !strings.Contains(out, want) {
			t.Errorf("no row %q:\n%s", want, out)
		}
	}
}

// TestResilienceErrors: every refusal names its flag, with nothing on
// stdout: exit 2 for a flag refused as written, 1 for input refused.
func TestResilienceErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFileIn(t, dir, "bad.yml", "placements: {control-plane: {spread: {maxSkew: 1}}}\n")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sabakan", "resilience", "--machines", "../../examples/machines.json"}, 2, "needs --template"},
		{resilienceArgs("-o", "yaml"), 2, `--output: must be one of [text json], got "yaml"`},
		{resilienceArgs("--assume", "rack=4:RETIRNG"), 2, `--assume "rack=4:RETIRNG": unknown machine state "RETIRNG"`},
		{resilienceArgs("--assume", "rack=99:RETIRING"), 1, "--assume rack=99:RETIRING: no machine has rack 99"},
		{resilienceArgs("--policy", bad), 1, "placements.control-plane.spread: the control plane spreads with spread: quorum"},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != tc.code || out != "" || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, tc.want)
		}
	}
}
