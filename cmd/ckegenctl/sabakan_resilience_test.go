package main

import (
	"encoding/json"
	"os"
	"slices"
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

	if row := lines[4]; !strings.HasSuffix(row, "  no quorum: CKE can apply none of the 3 steps the planner would make until enough of its control planes return") {
		t.Errorf("rack 4's recovery: %q", row)
	}

	doc := resilienceJSON(t, resilienceArgs("--current", "../../examples/cluster-rack4.yml", "-o", "json")...)
	if doc.FailureDomain != "rack" || doc.ControlPlanes != 3 || doc.Quorum != 2 || len(doc.AtRisk) != 1 || doc.AtRisk[0] != "4" || len(doc.Domains) != 12 ||
		doc.Basis != "current" || doc.PendingSteps != nil || doc.PendingRefused != nil {
		t.Errorf("json: %+v", doc)
	}
	for _, d := range doc.Domains {
		if d.WorkersLeft == nil || d.BelowMinimum == nil || d.Recovery == nil || d.Recovery.Result == "" || d.Workers == nil || d.ControlPlanes == nil || d.QuorumLostNow == nil {
			t.Errorf("domain %s lacks a key of the contract: %+v", d.Domain, d)
			continue
		}
		if d.Domain == "4" && (!d.QuorumLost || !*d.QuorumLostNow || len(d.ControlPlanes) != 2 || d.Workers["compute"] != 1 ||
			*d.Recovery != (recoveryJSON{Steps: 3, Result: "no-quorum", Planned: "settled"})) {
			t.Errorf("rack 4: %+v, recovery %+v", d, d.Recovery)
		}
	}
}

// recoveryJSON is a domain's recovery in the JSON contract.
type recoveryJSON struct {
	Steps   int    `json:"steps"`
	Result  string `json:"result"`
	Planned string `json:"planned"`
	Error   string `json:"error"`
}

// resilienceDoc is the JSON contract of resilience's report; a key that
// may be missing is a pointer.
type resilienceDoc struct {
	FailureDomain  string `json:"failureDomain"`
	Basis          string `json:"basis"`
	PendingSteps   *int   `json:"pendingSteps"`
	PendingRefused *struct {
		Reason  string `json:"reason"`
		Message string `json:"message"`
	} `json:"pendingRefused"`
	ControlPlanes int `json:"controlPlanes"`
	Quorum        int `json:"quorum"`
	Domains       []struct {
		Domain        string         `json:"domain"`
		ControlPlanes []string       `json:"controlPlanes"`
		Workers       map[string]int `json:"workers"`
		QuorumLost    bool           `json:"quorumLost"`
		QuorumLostNow *bool          `json:"quorumLostNow"`
		WorkersLeft   *int           `json:"workersLeft"`
		BelowMinimum  *bool          `json:"belowMinimum"`
		Recovery      *recoveryJSON  `json:"recovery"`
	} `json:"domains"`
	AtRisk []string `json:"atRisk"`
}

// resilienceJSON runs the command (with -o json) and decodes its report.
func resilienceJSON(t *testing.T, args ...string) resilienceDoc {
	t.Helper()
	js, errOut, code := runCLI(t, args...)
	var doc resilienceDoc
	if code != 0 || json.Unmarshal([]byte(js), &doc) != nil {
		t.Fatalf("-o json: exit %d, stderr %s:\n%s", code, errOut, js)
	}
	return doc
}

// TestResiliencePendingPlan: with a plan pending (spread: quorum moves a
// control plane out of rack 4; the rate model adds workers and leaves the
// control planes), the report is made on the cluster the plan settles
// on, and its first line says so; quorumLostNow is rack 4's loss on the
// cluster as it is now; in the rate model rack 4's loss still breaks the
// quorum, and reads no-quorum.
func TestResiliencePendingPlan(t *testing.T) {
	for _, tc := range []struct {
		flags    []string
		lost     bool
		recovery string
	}{
		{[]string{"--policy", "../../examples/policy-spread.yml"}, false, "2 steps, settled"},
		{[]string{"--constraints", "../../examples/constraints-rate.json"}, true,
			"no quorum: CKE cannot apply the 1 step the planner would make until enough of its control planes return"},
	} {
		args := resilienceArgs(append([]string{"--current", "../../examples/cluster-rack4.yml"}, tc.flags...)...)
		out, _, code := runCLI(t, args...)
		first, _, _ := strings.Cut(out, "\n")
		_, rest, _ := strings.Cut(out, "\nrack 4 ")
		row, _, _ := strings.Cut(rest, "\n")
		if code != 0 || first != "the cluster has a pending plan of 1 step: each domain's loss is planned on the cluster it settles on" ||
			!strings.HasSuffix(row, "  "+tc.recovery) {
			t.Errorf("%v: exit %d:\n%s", tc.flags, code, out)
		}
		doc := resilienceJSON(t, append(args, "-o", "json")...)
		if doc.Basis != "pending-plan-settled" || doc.PendingSteps == nil || *doc.PendingSteps != 1 || doc.PendingRefused != nil {
			t.Errorf("%v: basis %q, pending steps %v, refused %v", tc.flags, doc.Basis, doc.PendingSteps, doc.PendingRefused)
		}
		for _, d := range doc.Domains {
			if d.Domain == "4" && (d.QuorumLost != tc.lost || d.QuorumLostNow == nil || !*d.QuorumLostNow || (d.Recovery.Result == "no-quorum") != tc.lost) {
				t.Errorf("%v: rack 4 %+v, recovery %+v", tc.flags, d, d.Recovery)
			}
		}
	}
}

// TestResilienceRefusedPlan: with the machines of rack 4's two control
// planes gone from the inventory, the input's plan is refused; the report
// is made on the cluster as it is, and says why first, with the reason's
// code and message in JSON.
func TestResilienceRefusedPlan(t *testing.T) {
	data, err := os.ReadFile("../../examples/machines.json")
	if err != nil {
		t.Fatal(err)
	}
	var ms []map[string]any
	if err := json.Unmarshal(data, &ms); err != nil {
		t.Fatal(err)
	}
	ms = slices.DeleteFunc(ms, func(m map[string]any) bool {
		serial := m["spec"].(map[string]any)["serial"]
		return serial == "S000092" || serial == "S000094"
	})
	left, _ := json.Marshal(ms)
	machines := writeFileIn(t, t.TempDir(), "machines.json", string(left))
	args := resilienceArgs("--current", "../../examples/cluster-rack4.yml", "--machines", machines)
	out, _, code := runCLI(t, args...)
	first, _, _ := strings.Cut(out, "\n")
	const why = "too many non-existent control plane nodes: 2 of 3 control planes are not in sabakan"
	if code != 0 || !strings.HasPrefix(first, "the cluster's plan is refused at its first step (TOO_MANY_NONEXISTENT_CONTROL_PLANES: "+why) ||
		!strings.HasSuffix(first, "): each domain's loss is planned on the cluster as it is now") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	doc := resilienceJSON(t, append(args, "-o", "json")...)
	if doc.Basis != "current" || doc.PendingRefused == nil || doc.PendingRefused.Reason != "TOO_MANY_NONEXISTENT_CONTROL_PLANES" ||
		!strings.HasPrefix(doc.PendingRefused.Message, why) {
		t.Errorf("basis %q, refused %+v", doc.Basis, doc.PendingRefused)
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
