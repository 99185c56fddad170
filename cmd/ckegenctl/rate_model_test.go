package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/liveview"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// TestGeneratePlanRateModel: `generate --plan` in the rate model ends its
// text with the final cluster's figure, and its JSON has "model" and
// "rate"; in the count model the text has no model line and the JSON
// says "count".
func TestGeneratePlanRateModel(t *testing.T) {
	dir := t.TempDir()
	file := func(name, data string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, []byte(data))
		return p
	}
	// Rule 7 exactly at the rate: 10 machines, 9 workers, one RETIRED
	// past the wait; the plan removes it and ends at 70%.
	var table strings.Builder
	for i, r := range []string{"a1 1", "a2 1", "a3 1", "b1 2", "b2 2", "b3 2", "c1 3", "c2 3", "c3 3", "d1 4"} {
		serial, rack, _ := strings.Cut(r, " ")
		state := "HEALTHY"
		if serial == "b2" {
			state = "RETIRED 2031-01-01 dur=301"
		} else {
			state += " 2031-01-01"
		}
		fmt.Fprintf(&table, "%s 10.0.%s.%d %s cs %s\n", serial, rack, i%3+1, rack, state)
	}
	data, err := machinesJSON([]byte(table.String()))
	if err != nil {
		t.Fatal(err)
	}
	machines := file("m.json", string(data))
	var cur strings.Builder
	cur.WriteString("name: test\nservice_subnet: 10.68.0.0/16\nnodes:\n")
	for i, r := range []string{"1.1", "1.2", "1.3", "2.1", "2.2", "2.3", "3.1", "3.2", "3.3", "4.1"} {
		fmt.Fprintf(&cur, "- {address: 10.0.%s, user: cybozu, control_plane: %v}\n", r, i == 0)
	}
	current := file("cur.yml", cur.String())
	tmpl := file("t.yml", defaultTemplate)
	rate := file("rate.json", `{"control-plane-count": 1, "minimum-workers-rate": 80}`)
	count := file("count.json", `{"control-plane-count": 1, "minimum-workers": 9}`)
	gen := func(cons string, args ...string) (string, string) {
		t.Helper()
		out, errOut, code := runCLI(t, append([]string{"sabakan", "generate", "--template", tmpl, "--machines", machines,
			"--current", current, "--constraints", cons, "--now", "2026-01-01T00:00:00Z", "--plan"}, args...)...)
		if code != 0 {
			t.Fatalf("generate --plan %s %v: exit %d, %s", filepath.Base(cons), args, code, errOut)
		}
		return out, errOut
	}

	text, _ := gen(rate)
	const line = "\nmodel: rate, workers 70.0% ((8 workers - 1) / 10 machines), minimum-workers-rate 80%\ncontrol planes: 1 -> 1; workers: 9 -> 8\n"
	if !strings.Contains(text, "remove-retired-worker 10.0.2.2") || !strings.Contains(text, line) {
		t.Errorf("rate model plan:\n%s\nwant the removal and%s", text, line)
	}
	out, _ := gen(rate, "-o", "json")
	var d planreport.Document
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if want := (generator.WorkerRate{Workers: 8, Machines: 10, Percent: 70, Minimum: 80}); d.Model != "rate" || d.Rate == nil || *d.Rate != want {
		t.Errorf("rate model plan JSON: model %q, rate %+v, want %+v", d.Model, d.Rate, want)
	}

	text, _ = gen(count)
	if strings.Contains(text, "model:") {
		t.Errorf("count model plan has a model line:\n%s", text)
	}
	out, _ = gen(count, "-o", "json")
	if !strings.Contains(out, "\n  \"model\": \"count\",\n") || strings.Contains(out, `"rate"`) {
		t.Errorf("count model plan JSON:\n%s", out)
	}
}

// TestRateModelOnline: on a cluster the count model built, `constraints set
// minimum-workers-rate 80 --dry-run` prints the plan of the rate model
// (every HEALTHY machine a worker, and the final rate) and stores nothing;
// `sabakan plan` and `sabakan map` say the model of the stored constraints
// and the rate of the stored cluster, before and after the switch; the
// figures of all three agree with the cluster and the machines the
// daemon's query returns. Real etcd and the compatible server.
func TestRateModelOnline(t *testing.T) {
	f := newPlanFixture(t)
	ctx := context.Background()
	const tmpl = `name: demo
nodes:
- {user: cybozu, control_plane: true}
- {user: cybozu, labels: {cke.cybozu.com/role: compute}}
- {user: cybozu, labels: {cke.cybozu.com/role: storage}}
service_subnet: 10.68.0.0/16
`
	if _, errOut, code := f.run("sabakan", "set-template", f.file("t.yml", tmpl)); code != 0 {
		t.Fatal(errOut)
	}
	if err := sitetest.StoreOf(f.st).SetURL(ctx, f.sabakan.URL+"/graphql"); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"control-plane-count", "3"}, {"minimum-workers", "4"}} {
		if _, errOut, code := f.run("constraints", "set", kv[0], kv[1]); code != 0 {
			t.Fatal(errOut)
		}
	}
	// The machines the daemon's query returns: the default query leaves
	// out boot servers and RETIRED machines.
	machines, healthy := 0, 0
	for _, m := range f.store.Search(nil, nil) {
		if m.Spec.Role == "boot" || m.Status.State == machine.StateRetired {
			continue
		}
		machines++
		if m.Status.State == machine.StateHealthy {
			healthy++
		}
	}

	// The count model's cluster: 3 control planes, 4 workers.
	d, _ := f.plan()
	if d.Model != "count" || d.Rate != nil || d.Cluster == nil {
		t.Fatalf("count model plan: model %q, rate %+v", d.Model, d.Rate)
	}
	data, err := json.Marshal(d.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	_, tmplRev, err := sitetest.StoreOf(f.st).GetTemplate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.st.PutCluster(ctx, campaignAs(t, f.st, "host-1"), data, 0, tmplRev); err != nil {
		t.Fatal(err)
	}
	mapJSON := func() *liveview.Map {
		t.Helper()
		out, errOut, code := f.run("sabakan", "map", "-o", "json")
		if code != 0 {
			t.Fatalf("map: exit %d, %s", code, errOut)
		}
		var m liveview.Map
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatal(err)
		}
		return &m
	}
	if m := mapJSON(); m.Model != "count" || m.Rate != nil {
		t.Errorf("map in the count model: model %q, rate %+v", m.Model, m.Rate)
	}
	mapText, _, _ := f.run("sabakan", "map", "--color", "never", "--width", "200")
	if !strings.Contains(mapText, "\nmodel: count\n") {
		t.Errorf("map text in the count model:\n%s", mapText)
	}

	// What if the rate model: the dry run is the plan with those
	// constraints, tops the cluster up to every HEALTHY machine in one
	// step, and stores nothing.
	stored := f.raw(storage.KeyConstraints)
	rateFile := f.file("rate.json", `{"control-plane-count": 3, "minimum-workers-rate": 80}`)
	planText, _, _ := f.run("sabakan", "plan", "--constraints", rateFile)
	dryText, dryErr, code := f.run("constraints", "set", "minimum-workers-rate", "80", "--dry-run")
	if code != 0 || dryText != planText || dryErr != "dry run: nothing was stored\n" {
		t.Errorf("constraints set minimum-workers-rate 80 --dry-run: exit %d, stderr %q, stdout\n%s\nwant\n%s", code, dryErr, dryText, planText)
	}
	if got := f.raw(storage.KeyConstraints); got != stored {
		t.Errorf("--dry-run stored %s (was %s)", got, stored)
	}
	final := healthy - 3
	wantLine := fmt.Sprintf("model: rate, workers %.1f%% ((%d workers - 1) / %d machines), minimum-workers-rate 80%%\n", float64(final-1)/float64(machines)*100, final, machines)
	if !strings.HasPrefix(dryText, noView+"step 1: increase worker\n") || !strings.Contains(dryText, "\nplan: settled after 1 step\n"+wantLine) {
		t.Errorf("the rate model's plan:\n%s\nwant one step and %q", dryText, wantLine)
	}

	// The switch itself: one write, and every view says the rate model.
	if _, errOut, code := f.run("constraints", "set", "minimum-workers-rate", "80"); code != 0 {
		t.Fatal(errOut)
	}
	if got := f.raw(storage.KeyConstraints); got != `{"control-plane-count":3,"minimum-workers-rate":80}` {
		t.Errorf("stored after the switch: %s", got)
	}
	d, _ = f.plan()
	if d.Model != "rate" || d.Rate == nil || d.Rate.Workers != final || d.Rate.Machines != machines || d.Rate.Minimum != 80 {
		t.Errorf("plan after the switch: model %q, rate %+v; want %d workers of %d machines", d.Model, d.Rate, final, machines)
	}
	// The map shows the decision's figure: the cluster as its step (the
	// plan's one step) leaves it, not the 4 workers stored.
	wantMap := generator.WorkerRate{Workers: final, Machines: machines, Percent: constraints.Rate(final, machines), Minimum: 80}
	if m := mapJSON(); m.Model != "rate" || m.Rate == nil || *m.Rate != wantMap {
		t.Errorf("map after the switch: model %q, rate %+v, want %+v", m.Model, m.Rate, wantMap)
	}
	mapText, _, _ = f.run("sabakan", "map", "--color", "never", "--width", "200")
	if want := fmt.Sprintf("\nmodel: rate, workers %.1f%% ((%d workers - 1) / %d machines), minimum-workers-rate 80%%\n", wantMap.Percent, final, machines); !strings.Contains(mapText, want) {
		t.Errorf("map text after the switch:\n%s\nwant %q", mapText, want)
	}
}

// TestRateModelExample: the bundled rate-model example (template without
// weights, constraints-rate.json) generates, with no warning, a cluster of
// 3 control planes and every other HEALTHY machine of the three roles as a
// worker, and says the model and the rate.
func TestRateModelExample(t *testing.T) {
	out, errOut, code := runCLI(t, "sabakan", "generate", "--template", "../../examples/template-rate.yml",
		"--machines", "../../examples/machines.json", "--constraints", "../../examples/constraints-rate.json",
		"--now", "2026-01-02T00:00:00Z", "--explain", "text")
	if code != 0 || strings.Contains(errOut, "warning:") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
	data, err := os.ReadFile("../../examples/machines.json")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := machine.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	healthy := 0
	for _, m := range ms {
		if m.Status.State == machine.StateHealthy && m.Spec.Role != "boot" {
			healthy++
		}
	}
	workers := strings.Count(out, "control_plane: false")
	if cps := strings.Count(out, "control_plane: true"); cps != 3 || workers != healthy-3 {
		t.Errorf("%d control planes and %d workers, want 3 and every other HEALTHY machine (%d)", cps, workers, healthy-3)
	}
	lines := strings.Split(strings.TrimSuffix(errOut, "\n"), "\n")
	want := fmt.Sprintf("model: rate, workers %.1f%% ((%d workers - 1) / %d machines), minimum-workers-rate 80%%", constraints.Rate(workers, len(ms)), workers, len(ms))
	if last := lines[len(lines)-1]; last != want {
		t.Errorf("last line of the explanation %q, want %q", last, want)
	}
}
