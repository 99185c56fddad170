package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/v3/concurrency"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/fakesabakan"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/dcgen"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// TestChangeManagementSettings: trigger, quiet time and max-unhealthy are
// stored as plain values, print back, and bad values are refused with a
// message about the value, storing nothing.
// noView is the first line of an online plan while the leader reads no
// Kubernetes Nodes.
const noView = "Kubernetes view: none: made without Node taints (the leader reads no Nodes: no --kubeconfig)\n\n"

func TestChangeManagementSettings(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	noDefault := filepath.Join(t.TempDir(), "no-default.yml")
	raw := func(key string) string {
		resp, err := cli.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}
	const (
		trigger = "/cke/sabakan/trigger"
		quiet   = "/cke/sabakan/quiet-time"
		limit   = "/cke/sabakan/max-unhealthy"
	)
	steps := []struct {
		args       []string
		code       int
		stdout     string
		stderr     string
		key, value string
	}{
		{args: []string{"sabakan", "trigger"}, stdout: "schedule\n"},
		{args: []string{"sabakan", "trigger", "paused"}, code: 1, stderr: `ckegenctl: trigger: must be planning (compute and store the plan, change nothing) or schedule (apply it one step per tick), got "paused"` + "\n", key: trigger, value: "<none>"},
		{args: []string{"sabakan", "trigger", "planning", "schedule"}, code: 2, stderr: "ckegenctl: sabakan trigger takes at most 1 argument, got 2: planning schedule (usage: ckegenctl sabakan trigger [planning|schedule])\n", key: trigger, value: "<none>"},
		{args: []string{"sabakan", "trigger", "planning"}, key: trigger, value: "planning"},
		{args: []string{"sabakan", "trigger"}, stdout: "planning\n"},
		{args: []string{"sabakan", "trigger", "planing"}, code: 1, stderr: `got "planing"; did you mean planning?` + "\n", key: trigger, value: "planning"},
		{args: []string{"sabakan", "set-quiet-time", "10m", "--endpoint", "x"}, code: 2, stderr: "ckegenctl: unknown flag: --endpoint; did you mean --endpoints?\n", key: quiet, value: "<none>"},
		{args: []string{"sabakan", "trigger", "PLANNING"}, code: 1, stderr: `got "PLANNING"`, key: trigger, value: "planning"},
		{args: []string{"sabakan", "trigger", "schedule"}, key: trigger, value: "schedule"},

		{args: []string{"sabakan", "get-quiet-time"}, stdout: "0s\n"},
		{args: []string{"sabakan", "set-quiet-time", "-1s"}, code: 1, stderr: "ckegenctl: quiet-time: must not be negative (0 turns it off), got -1s\n", key: quiet, value: "<none>"},
		{args: []string{"sabakan", "set-quiet-time", "10"}, code: 1, stderr: `ckegenctl: quiet-time: want a duration such as 10m or 1h30m (0 turns it off), got "10"` + "\n", key: quiet, value: "<none>"},
		{args: []string{"sabakan", "set-quiet-time"}, code: 2, stderr: "ckegenctl: sabakan set-quiet-time needs DURATION (usage: ckegenctl sabakan set-quiet-time DURATION; see --help)\n", key: quiet, value: "<none>"},
		{args: []string{"sabakan", "set-quiet-time", "5m", "--no-such-flag"}, code: 2, stderr: "unknown flag: --no-such-flag", key: quiet, value: "<none>"},
		{args: []string{"sabakan", "set-quiet-time", "90s"}, key: quiet, value: "1m30s"},
		{args: []string{"sabakan", "get-quiet-time"}, stdout: "1m30s\n"},
		{args: []string{"sabakan", "set-quiet-time", "-5m"}, code: 1, stderr: "got -5m", key: quiet, value: "1m30s"},
		// Flags before and after the value still count.
		{args: []string{"sabakan", "set-quiet-time", "--prefix", "/other/", "2m"}, key: "/other/sabakan/quiet-time", value: "2m0s"},
		{args: []string{"sabakan", "set-quiet-time", "3m", "--prefix", "/other/"}, key: "/other/sabakan/quiet-time", value: "3m0s"},
		{args: []string{"sabakan", "set-quiet-time", "0"}, key: quiet, value: "0s"},

		{args: []string{"sabakan", "get-max-unhealthy"}, stdout: "off\n"},
		{args: []string{"sabakan", "set-max-unhealthy", "140%"}, code: 1, stderr: `ckegenctl: max-unhealthy: want a count of nodes such as 5 or a percentage of the cluster's nodes such as 40% (at most 100%), got "140%" (off removes the limit)` + "\n", key: limit, value: "<none>"},
		{args: []string{"sabakan", "set-max-unhealthy", "-1"}, code: 1, stderr: `got "-1"`, key: limit, value: "<none>"},
		{args: []string{"sabakan", "set-max-unhealthy", "many"}, code: 1, stderr: `got "many"`, key: limit, value: "<none>"},
		{args: []string{"sabakan", "set-max-unhealthy", "40%"}, key: limit, value: "40%"},
		{args: []string{"sabakan", "get-max-unhealthy"}, stdout: "40%\n"},
		{args: []string{"sabakan", "set-max-unhealthy", "4.5"}, code: 1, stderr: `got "4.5"`, key: limit, value: "40%"},
		{args: []string{"sabakan", "set-max-unhealthy", "5"}, key: limit, value: "5"},
		{args: []string{"sabakan", "get-max-unhealthy"}, stdout: "5\n"},
		{args: []string{"sabakan", "set-max-unhealthy", "off"}, key: limit, value: "<none>"},
		{args: []string{"sabakan", "get-max-unhealthy"}, stdout: "off\n"},
	}
	for i, st := range steps {
		out, errOut, code := runCLIWithConfig(t, noDefault, append([]string{"--endpoints", url}, st.args...)...)
		if code != st.code || out != st.stdout {
			t.Errorf("step %d %v: exit %d, stdout %q; want %d, %q (stderr %q)", i, st.args, code, out, st.code, st.stdout, errOut)
		}
		if !strings.Contains(errOut, st.stderr) || (st.stderr == "" && errOut != "") {
			t.Errorf("step %d %v: stderr %q, want %q", i, st.args, errOut, st.stderr)
		}
		if st.key != "" {
			if got := raw(st.key); got != st.value {
				t.Errorf("step %d %v: %s = %q, want %q", i, st.args, st.key, got, st.value)
			}
		}
	}

	// A bad stored value is an error of the get command, which says how
	// to fix it.
	for key, cmd := range map[string]string{trigger: "trigger", quiet: "get-quiet-time", limit: "get-max-unhealthy"} {
		if _, err := cli.Put(context.Background(), key, "bogus"); err != nil {
			t.Fatal(err)
		}
		out, errOut, code := runCLIWithConfig(t, noDefault, "--endpoints", url, "sabakan", cmd)
		if code != 1 || out != "" || !strings.Contains(errOut, "invalid stored value") {
			t.Errorf("%s with a bad stored value: exit %d, stdout %q, stderr %q", cmd, code, out, errOut)
		}
	}
}

// planFixture is an etcd and a compatible server with a small data center
// of three racks, configured with a template of roles and constraints.
type planFixture struct {
	t         *testing.T
	etcdURL   string
	st        storage.Storage
	store     *fakesabakan.Store
	sabakan   *httptest.Server
	dir       string
	noDefault string
}

const planTemplate = `name: demo
nodes:
- {user: cybozu, control_plane: true}
- {user: cybozu, labels: {cke.cybozu.com/role: compute, cke.cybozu.com/weight: "2"}}
- {user: cybozu, labels: {cke.cybozu.com/role: storage, cke.cybozu.com/weight: "1"}}
service_subnet: 10.68.0.0/16
`

func newPlanFixture(t *testing.T) *planFixture {
	s := sitetest.Start(t, sitetest.Options{
		Now: time.Now(), Clock: time.Now,
		DataCenter: func(o *dcgen.Options) {
			o.Racks, o.PerRack, o.UnhealthyPct = 3, 6, 0
			o.Roles, o.Weights = []string{"compute", "storage"}, []int{2, 1}
		},
	})
	f := &planFixture{t: t, etcdURL: s.EtcdURL, st: s.Storage, store: s.Store, sabakan: s.Server, dir: t.TempDir()}
	f.noDefault = filepath.Join(f.dir, "no-default.yml")
	return f
}

func (f *planFixture) file(name, content string) string {
	p := filepath.Join(f.dir, name)
	writeFile(f.t, p, []byte(content))
	return p
}

func (f *planFixture) run(args ...string) (stdout, stderr string, code int) {
	f.t.Helper()
	return runCLIWithConfig(f.t, f.noDefault, append([]string{"--endpoints", f.etcdURL}, args...)...)
}

func (f *planFixture) raw(key string) string {
	f.t.Helper()
	resp, err := f.st.Client.Get(context.Background(), f.st.Key(key))
	if err != nil {
		f.t.Fatal(err)
	}
	if len(resp.Kvs) == 0 {
		return "<none>"
	}
	return string(resp.Kvs[0].Value)
}

// plan runs `sabakan plan -o json` with args and decodes the document.
func (f *planFixture) plan(args ...string) (*planreport.Document, string) {
	f.t.Helper()
	out, errOut, code := f.run(append([]string{"sabakan", "plan", "-o", "json"}, args...)...)
	if code != 0 {
		f.t.Fatalf("plan %v: exit %d, stderr %s", args, code, errOut)
	}
	var d planreport.Document
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		f.t.Fatalf("plan %v: %v\n%s", args, err, out)
	}
	return &d, errOut
}

func ops(d *planreport.Document) []string {
	var out []string
	for _, s := range d.Steps {
		out = append(out, s.Op)
	}
	return out
}

// TestPlanOnline: `sabakan plan` computes the plan from etcd and sabakan,
// with what-if files; the --dry-run of each setting command prints the
// same plan as `plan` with that file and stores nothing.
func TestPlanOnline(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()

	if out, errOut, code := f.run("sabakan", "plan"); code != 1 || out != "" ||
		errOut != "ckegenctl: no template: set one with ckegenctl sabakan set-template, or give --template\n" {
		t.Errorf("no template: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	tmplFile := f.file("t.yml", planTemplate)
	if _, errOut, code := f.run("sabakan", "set-template", tmplFile); code != 0 {
		t.Fatal(errOut)
	}
	if out, errOut, code := f.run("sabakan", "plan"); code != 1 || out != "" ||
		errOut != "ckegenctl: no sabakan URL: set one with ckegenctl sabakan set-url\n" {
		t.Errorf("no URL: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if err := sitetest.StoreOf(f.st).SetURL(ctx, f.sabakan.URL+"/graphql"); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := f.run("constraints", "set", "control-plane-count", "3"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := f.run("constraints", "set", "minimum-workers", "6"); code != 0 {
		t.Fatal(errOut)
	}

	// No cluster: one step builds it.
	d, _ := f.plan()
	if d.Result != generator.PlanSettled || !slices.Equal(ops(d), []string{generator.OpNew}) ||
		d.Summary.Added.Nodes != 9 || d.Summary.After.ControlPlanes != 3 || d.Cluster == nil || len(d.Cluster.Nodes) != 9 {
		t.Fatalf("first plan: %s %v, added %d, %+v", d.Result, ops(d), d.Summary.Added.Nodes, d.Summary.After)
	}
	text1, _, _ := f.run("sabakan", "plan")
	text2, _, _ := f.run("sabakan", "plan")
	if text1 != text2 || !strings.HasPrefix(text1, noView+"step 1: new\n") || !strings.Contains(text1, "\nplan: settled after 1 step\n") {
		t.Errorf("text plans differ or are wrong:\n%s\n---\n%s", text1, text2)
	}

	// The cluster the daemon would write: then nothing to do.
	data, err := json.Marshal(d.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	_, tmplRev, err := sitetest.StoreOf(f.st).GetTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leader := campaignAs(t, f.st, "host-1")
	if _, err := f.st.PutCluster(ctx, leader, data, 0, tmplRev); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.plan(); d.Result != generator.PlanSettled || len(d.Steps) != 0 {
		t.Errorf("plan of a settled cluster: %s %v", d.Result, ops(d))
	}

	// What if a template with another label: the first step regenerates.
	relabel := f.file("t2.yml", strings.Replace(planTemplate, "- {user: cybozu, control_plane: true}", "- {user: cybozu, control_plane: true, labels: {team: infra}}", 1))
	d, _ = f.plan("--template", relabel)
	if len(d.Steps) == 0 || d.Steps[0].Op != generator.OpRegenerate || d.Summary.Relabelled.Nodes != 3 {
		t.Errorf("what if another template: %v, re-labelled %d", ops(d), d.Summary.Relabelled.Nodes)
	}
	storedTmpl := f.raw(storage.KeySabakanTemplate)
	planText, _, _ := f.run("sabakan", "plan", "--template", relabel)
	dryText, dryErr, code := f.run("sabakan", "set-template", relabel, "--dry-run")
	if code != 0 || dryText != planText || dryErr != "dry run: nothing was stored\n" {
		t.Errorf("set-template --dry-run: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, dryErr, dryText, planText)
	}
	if got := f.raw(storage.KeySabakanTemplate); got != storedTmpl {
		t.Errorf("set-template --dry-run stored the template")
	}

	// A worker's machine turns UNREACHABLE in sabakan: it is tainted,
	// then a worker is added.
	var worker string
	for _, n := range d.Cluster.Nodes {
		if !n.ControlPlane {
			worker = n.Address
			break
		}
	}
	if _, err := f.store.SetState(serialOf(t, f.store, worker), machine.StateUnreachable); err != nil {
		t.Fatal(err)
	}
	d, _ = f.plan()
	if d.Result != generator.PlanSettled || len(d.Steps) == 0 || d.Summary.Added.Nodes != 1 || d.Summary.Retainted.Nodes != 1 {
		t.Errorf("after a worker turned UNREACHABLE: %s %v, summary %+v", d.Result, ops(d), d.Summary)
	}

	// What if: five control planes; --dry-run of constraints set is the
	// same plan, and stores nothing.
	fiveCPs := f.file("c5.json", `{"control-plane-count": 5, "minimum-workers": 6}`)
	d, _ = f.plan("--constraints", fiveCPs)
	if !slices.Contains(ops(d), generator.OpIncreaseCP) || d.Summary.After.ControlPlanes != 5 {
		t.Errorf("what if 5 control planes: %v, after %+v", ops(d), d.Summary.After)
	}
	storedCons := f.raw(storage.KeyConstraints)
	planText, _, _ = f.run("sabakan", "plan", "--constraints", fiveCPs)
	dryText, dryErr, code = f.run("constraints", "set", "control-plane-count", "5", "--dry-run")
	if code != 0 || dryText != planText || dryErr != "dry run: nothing was stored\n" {
		t.Errorf("constraints set --dry-run: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, dryErr, dryText, planText)
	}
	if got := f.raw(storage.KeyConstraints); got != storedCons {
		t.Errorf("constraints set --dry-run stored %s (was %s)", got, storedCons)
	}

	// What if the query took compute machines only: the storage workers
	// are no longer in sabakan's answer and go.
	computeOnly := f.file("v.json", `{"having": {"roles": ["compute"]}}`)
	d, _ = f.plan("--variables", computeOnly)
	if len(d.Steps) == 0 || d.Steps[0].Op != generator.OpRemoveNonExistent || d.Summary.Removed.ByRole["storage"] == 0 {
		t.Errorf("what if compute only: %v, removed %+v", ops(d), d.Summary.Removed)
	}
	planText, _, _ = f.run("sabakan", "plan", "--variables", computeOnly)
	dryText, dryErr, code = f.run("sabakan", "set-variables", computeOnly, "--dry-run")
	if code != 0 || dryText != planText || dryErr != "dry run: nothing was stored\n" {
		t.Errorf("set-variables --dry-run: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, dryErr, dryText, planText)
	}
	if got := f.raw(storage.KeySabakanQueryVariables); got != "<none>" {
		t.Errorf("set-variables --dry-run stored %s", got)
	}

	// A refused plan is still a plan: exit 0.
	tooMany := f.file("c99.json", `{"control-plane-count": 99, "minimum-workers": 6}`)
	if d, _ := f.plan("--constraints", tooMany); d.Result != generator.PlanRefused || !strings.Contains(d.Error, "not enough machines") {
		t.Errorf("what if 99 control planes: %s %q", d.Result, d.Error)
	}
	// --max-steps stops a long plan.
	if d, _ := f.plan("--constraints", fiveCPs, "--max-steps", "1"); d.Result != generator.PlanMaxSteps || len(d.Steps) != 1 {
		t.Errorf("--max-steps 1: %s, %d steps", d.Result, len(d.Steps))
	}

	// Notes: the trigger holds the plan; so do too many unhealthy nodes.
	if _, errOut, code := f.run("sabakan", "trigger", "planning"); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := f.run("sabakan", "set-max-unhealthy", "0"); code != 0 {
		t.Fatal(errOut)
	}
	_, errOut := f.plan()
	want := "note: the trigger is planning: ckegenctl sabakan trigger schedule applies the plan\n" +
		"note: 1 of 9 nodes are unhealthy (10.0.2.2), more than max-unhealthy 0 allows (0): no node is added, removed, promoted or demoted until fewer are\n"
	if errOut != want {
		t.Errorf("notes:\n%s\nwant\n%s", errOut, want)
	}
	// A stored value the daemon would refuse is a note too: the plan is
	// still computed.
	if _, err := f.st.Client.Put(context.Background(), f.st.Key(storage.KeySabakanTrigger), "someday"); err != nil {
		t.Fatal(err)
	}
	if _, errOut := f.plan(); !strings.HasPrefix(errOut, "note: stored sabakan/trigger: invalid") || !strings.Contains(errOut, `"someday"`) {
		t.Errorf("an invalid trigger: notes\n%s", errOut)
	}
	if _, errOut, code := f.run("sabakan", "trigger", "planning"); code != 0 {
		t.Fatal(errOut)
	}

	// Bad input: exit 1 (2 for a flag refused), nothing on stdout,
	// nothing stored.
	badTmpl := f.file("bad.yml", "name: demo\nnodes:\n- {user: cybozu, contol_plane: true}\n")
	badVars := f.file("badv.json", `{"having": {"states": ["BROKEN"]}}`)
	badCons := f.file("badc.json", `{"control-plane-count": 0}`)
	for _, c := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"sabakan", "plan", "--max-steps", "0"}, "--max-steps: must be at least 1, got 0", 2},
		{[]string{"sabakan", "plan", "-o", "xml"}, `--output: must be one of [text json yaml], got "xml"`, 2},
		{[]string{"sabakan", "plan", "--retire-wait", "-1s"}, "--retire-wait: must not be negative", 2},
		{[]string{"sabakan", "plan", "--template", badTmpl}, `--template ` + badTmpl + `: template: line 3, column 18: nodes[0]: unknown field "contol_plane"; did you mean control_plane?`, 1},
		{[]string{"sabakan", "plan", "--template", filepath.Join(f.dir, "none.yml")}, "--template: open ", 1},
		{[]string{"sabakan", "plan", "--variables", badVars}, `having.states[0]: unknown state "BROKEN"`, 1},
		{[]string{"sabakan", "plan", "--constraints", badCons}, "control-plane-count: must be >= 1", 1},
		{[]string{"sabakan", "plan", "--stored", "--template", tmplFile}, "--template: --stored prints the daemon's plan", 1},
		{[]string{"sabakan", "set-template", badTmpl, "--dry-run"}, `unknown field "contol_plane"`, 1},
		{[]string{"sabakan", "set-variables", badVars, "--dry-run"}, `unknown state "BROKEN"`, 1},
		{[]string{"constraints", "set", "control-plane-count", "0", "--dry-run"}, "control-plane-count: must be >= 1, got 0", 1},
		{[]string{"sabakan", "set-template", relabel, "--dry-run", "--max-steps", "0"}, "--max-steps: must be at least 1", 2},
	} {
		out, errOut, code := f.run(c.args...)
		if want := c.code; code != want || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", c.args, code, out, errOut, want, c.want)
		}
	}
	for key, want := range map[string]string{
		storage.KeySabakanTemplate: storedTmpl, storage.KeyConstraints: storedCons, storage.KeySabakanQueryVariables: "<none>",
	} {
		if got := f.raw(key); got != want {
			t.Errorf("after bad input, %s = %s, want %s", key, got, want)
		}
	}

	// sabakan down: no plan.
	f.sabakan.Close()
	if out, errOut, code := f.run("sabakan", "plan", "--sabakan-timeout", "1s"); code != 1 || out != "" ||
		!strings.HasPrefix(errOut, "ckegenctl: sabakan at "+f.sabakan.URL+"/graphql: ") {
		t.Errorf("sabakan down: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// TestPlanStoredCommand: --stored prints sabakan/plan as the daemon left
// it, with when and from what it was computed.
func TestPlanStoredCommand(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	if out, errOut, code := f.run("sabakan", "plan", "--stored"); code != 1 || out != "" ||
		!strings.Contains(errOut, "no stored plan: the daemon stores one while the trigger is planning") {
		t.Errorf("no stored plan: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	score := 990.0
	p := planreport.Stored{
		Document: planreport.Document{
			Result: generator.PlanSettled,
			Steps: []planreport.Step{{Op: generator.OpIncreaseWorker, Warnings: []string{},
				Changes: []planreport.Change{{Action: generator.ActionAddWorker, Address: "10.0.1.2", Serial: "s12", Score: &score, Reason: "5 workers, want 6"}}}},
			Warnings: []string{},
			Summary: planreport.Summary{Before: planreport.Shape{ControlPlanes: 3, Workers: 5}, After: planreport.Shape{ControlPlanes: 3, Workers: 6},
				Added: planreport.Tally{Nodes: 1, ByRole: map[string]int{"compute": 1}, ByRack: map[string]int{"1": 1}}},
		},
		ComputedAt:       time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC),
		TemplateRevision: 4,
		Trigger:          intake.TriggerPlanning,
	}
	data, err := planreport.MarshalStored(p, 0)
	if err != nil {
		t.Fatal(err)
	}
	leader := campaignAs(t, f.st, "host-1")
	if err := f.st.PutPlan(ctx, leader, data); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := f.run("sabakan", "plan", "--stored")
	want := "plan computed at 2026-03-04T05:06:07Z (trigger planning, template revision 4, cluster revision 0)\n\n" +
		"step 1: increase worker\n  - add-worker 10.0.1.2 (serial s12, score 990): 5 workers, want 6\n\n" +
		"plan: settled after 1 step\ncontrol planes: 3 -> 3; workers: 5 -> 6\n" +
		"  added:       1 (role compute: 1; rack 1: 1)\n  removed:     0\n  promoted:    0\n  demoted:     0\n  re-tainted:  0\n  re-labelled: 0\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("--stored: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	out, _, code = f.run("sabakan", "plan", "--stored", "-o", "json")
	var back planreport.Stored
	if err := json.Unmarshal([]byte(out), &back); code != 0 || err != nil || !back.ComputedAt.Equal(p.ComputedAt) || back.Trigger != "planning" || len(back.Steps) != 1 {
		t.Errorf("--stored -o json: exit %d, %v:\n%s", code, err, out)
	}

	// The cluster changed since: a note says so.
	if _, err := f.st.PutCluster(ctx, leader, []byte(`{"name":"demo","nodes":[],"service_subnet":"10.68.0.0/16"}`), 0, 4); err != nil {
		t.Fatal(err)
	}
	_, errOut, code = f.run("sabakan", "plan", "--stored")
	if code != 0 || !strings.HasPrefix(errOut, "note: the cluster changed since the plan was computed (revision 0, now ") {
		t.Errorf("--stored after a cluster write: exit %d, stderr %q", code, errOut)
	}
}

// campaignAs makes the test the leader named name and returns the
// election key.
func campaignAs(t *testing.T, st storage.Storage, name string) string {
	t.Helper()
	sess, err := concurrency.NewSession(st.Client)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	// ckegen's daemons' election: a CKE server's (leader/) would make
	// every view say that CKE's own integration writes the cluster.
	e := concurrency.NewElection(sess, st.Key(storage.KeyCKEGenLeader))
	if err := e.Campaign(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	return e.Key()
}

// serialOf finds the serial of the machine at addr.
func serialOf(t *testing.T, store *fakesabakan.Store, addr string) string {
	t.Helper()
	for _, m := range store.Search(nil, nil) {
		if m.Address() == addr {
			return m.Spec.Serial
		}
	}
	t.Fatalf("no machine at %s", addr)
	return ""
}

// TestStatusShowsChangeManagement: the status table shows the trigger,
// the quiet time, the unhealthy count and the pending plan's next step;
// the history says what released each step.
func TestStatusShowsChangeManagement(t *testing.T) {
	url := etcdtest.Start(t)
	st := storage.New(etcdtest.Connect(t, url), "")
	ctx := context.Background()
	leader := campaignAs(t, st, "host-1")
	score := 990.0
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(st.PutStatus(ctx, leader, storage.Status{
		Result: "planning", Reason: "QUIET_TIME", Message: "m", Since: at, Time: at, LastSuccess: at, Leader: "host-1",
		ChangeStatus: storage.ChangeStatus{
			Trigger: "schedule",
			Quiet: &storage.QuietStatus{QuietTime: "10m0s", InventorySince: at, Remaining: "4m10s",
				LastMoved: []string{"10.0.1.2 (serial s12) UNREACHABLE for 5m50s"}},
			Unhealthy: &storage.UnhealthyStatus{Count: 1, Nodes: 8, MaxUnhealthy: "25%", Limit: 2},
			Pending: &storage.PlanSummary{Result: "settled", Steps: 2, NextOp: "increase worker", NextChangeCount: 1,
				NextWait: "the quiet time (10m0s)", NextUntil: at.Add(10 * time.Minute),
				NextChanges: []storage.Change{{Action: "add-worker", Address: "10.0.3.4", Serial: "s34", Score: &score, Reason: "4 workers, want 5"}}},
		},
	}, nil))
	want := "RESULT          planning\nREASON          QUIET_TIME\nMESSAGE         m\nSINCE           2026-01-01T00:00:00Z\nLAST TICK       2026-01-01T00:00:00Z\n" +
		"FAILURES        0\nLAST SUCCESS    2026-01-01T00:00:00Z\nLEADER          host-1 (the last tick's, AGE)\n" +
		"LEADS NOW       ckegen's daemon host-1 (of a version not known) leads (EVIDENCE); no CKE server leads (nothing under leader/)\nWRITES CLUSTER  ckegen, standalone (no CKE server holds leader/)\nTRIGGER         schedule\nQUIET TIME      10m0s: 4m10s left\n" +
		"LAST MOVED      10.0.1.2 (serial s12) UNREACHABLE for 5m50s\nUNHEALTHY       1 of 8 nodes (max-unhealthy 25%: 2)\n" +
		"PENDING       2 steps (settled)\nNEXT STEP     increase worker (1 change), from 2026-01-01T00:10:00Z, the end of the quiet time (10m0s)\n" +
		"  ACTION      ADDRESS   SERIAL  SCORE  REASON\n  add-worker  10.0.3.4  s34     990    4 workers, want 5\n" +
		"\nRUNWAY  " + liveview.NoForecast + "\n"
	noDefault := filepath.Join(t.TempDir(), "no-default.yml")
	out, errOut, code := runCLIWithConfig(t, noDefault, "--endpoints", url, "sabakan", "status")
	if out = liveRows(out); code != 0 || out != want {
		t.Errorf("status: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, errOut, out, want)
	}
	out, _, _ = runCLIWithConfig(t, noDefault, "--endpoints", url, "sabakan", "status", "-o", "json")
	for _, key := range []string{`"trigger": "schedule"`, `"inventorySince": "2026-01-01T00:00:00Z"`, `"nextOp": "increase worker"`, `"maxUnhealthy": "25%"`} {
		if !strings.Contains(out, key) {
			t.Errorf("status -o json lacks %s:\n%s", key, out)
		}
	}

	must(st.AddHistory(ctx, leader, storage.HistoryEntry{Time: at, Op: "new", ChangeCount: 8, TemplateRevision: 2, ClusterRevision: 10}))
	must(st.AddHistory(ctx, leader, storage.HistoryEntry{Time: at, Op: "increase worker", ChangeCount: 1, TemplateRevision: 2, ClusterRevision: 20,
		ReleasedBy: "the trigger set to schedule (sabakan/trigger revision 15)"}))
	want = "TIME                  OP               CHANGES  TEMPLATE REV  CLUSTER REV  RELEASED BY\n" +
		"2026-01-01T00:00:00Z  new              8        2             10           -\n" +
		"2026-01-01T00:00:00Z  increase worker  1        2             20           the trigger set to schedule (sabakan/trigger revision 15)\n"
	if out, _, code := runCLIWithConfig(t, noDefault, "--endpoints", url, "sabakan", "history"); code != 0 || out != want {
		t.Errorf("history:\n%s\nwant\n%s", out, want)
	}
}

// TestPlanInventoryRoles: the online plan gives rule 2's typo guard the
// roles sabakan returned before sanitizing, as the daemon does: the only
// gpu machine has no address (ignored), yet gpu is no typo, so the worker
// of a role the template dropped is removed.
func TestPlanInventoryRoles(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	retire := time.Now().AddDate(5, 0, 0)
	var ms []machine.Machine
	for _, m := range []struct{ serial, addr, role string }{
		{"c1", "10.0.1.1", "compute"}, {"c2", "10.0.1.2", "compute"}, {"c3", "10.0.2.1", "compute"},
		{"s1", "10.0.2.2", "storage"}, {"g1", "", "gpu"}, {"x1", "10.0.4.1", "ssd"},
	} {
		mm := machine.Machine{Spec: machine.Spec{Serial: m.serial, Role: m.role, RetireDate: retire, RegisterDate: time.Now().AddDate(-1, 0, 0)},
			Status: machine.Status{State: machine.StateHealthy}}
		if m.addr != "" {
			mm.Spec.IPv4 = []string{m.addr}
		}
		ms = append(ms, mm)
	}
	sab := sitetest.StartSabakan(t, sitetest.Options{Clock: time.Now, Machines: ms})
	tmpl := f.file("t.yml", "name: test\nnodes:\n- {user: cybozu, control_plane: true, labels: {cke.cybozu.com/role: compute}}\n"+
		"- {user: cybozu, labels: {cke.cybozu.com/role: compute}}\n- {user: cybozu, labels: {cke.cybozu.com/role: storage}}\n"+
		"- {user: cybozu, labels: {cke.cybozu.com/role: gpu}}\nservice_subnet: 10.68.0.0/16\n")
	if _, errOut, code := f.run("sabakan", "set-template", tmpl); code != 0 {
		t.Fatal(errOut)
	}
	if err := sitetest.StoreOf(f.st).SetURL(ctx, sab.URL); err != nil {
		t.Fatal(err)
	}
	// The count model's defaults, stored: the plan below is of that model.
	if err := sitetest.StoreOf(f.st).SetConstraints(ctx, constraints.CountDefaults()); err != nil {
		t.Fatal(err)
	}
	_, tmplRev, _ := sitetest.StoreOf(f.st).GetTemplate(ctx)
	leader := campaignAs(t, f.st, "host-1")
	cur := `{"name":"test","service_subnet":"10.68.0.0/16","nodes":[{"address":"10.0.1.1","user":"cybozu","control_plane":true},` +
		`{"address":"10.0.2.1","user":"cybozu"},{"address":"10.0.2.2","user":"cybozu"},{"address":"10.0.4.1","user":"cybozu"}]}`
	if _, err := f.st.PutCluster(ctx, leader, []byte(cur), 0, tmplRev); err != nil {
		t.Fatal(err)
	}
	d, errOut := f.plan()
	// The step removes the ssd worker, and re-renders the nodes the
	// stored cluster has without their labels.
	if len(d.Steps) == 0 || d.Steps[0].Op != generator.OpRemoveUnmatchedRole || len(d.Steps[0].Changes) != 4 || d.Steps[0].Changes[0].Address != "10.0.4.1" ||
		slices.ContainsFunc(d.Steps[0].Changes[1:], func(c planreport.Change) bool { return c.Action != generator.ActionRerender }) {
		t.Errorf("first step %v (stderr %q), want the ssd worker removed", d.Steps, errOut)
	}
}
