package planreport_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/planreport"
)

func node(addr, role, rack string, cp bool) *cluster.Node {
	n := &cluster.Node{Address: addr, User: "u", ControlPlane: cp, Labels: map[string]string{}}
	if role != "" {
		n.Labels[labels.Role] = role
	}
	if rack != "" {
		n.Labels[labels.Rack] = rack
	}
	return n
}

// TestSummary: each node is counted by what the plan does to it, by role
// and rack, comparing the cluster before the plan with the one after.
func TestSummary(t *testing.T) {
	kept := node("10.0.0.1", "compute", "1", true)
	sameCopy := node("10.0.0.2", "compute", "1", false)
	promoted := node("10.0.0.3", "compute", "2", false)
	demoted := node("10.0.0.4", "storage", "2", true)
	tainted := node("10.0.0.5", "storage", "10", false)
	relabelled := node("10.0.0.6", "", "", false)
	both := node("10.0.0.7", "gpu", "3", false)
	removed := node("10.0.0.8", "gpu", "x", false)
	before := &cluster.Cluster{Nodes: []*cluster.Node{kept, sameCopy, promoted, demoted, tainted, relabelled, both, removed}}

	p2 := promoted.Clone()
	p2.ControlPlane = true
	p2.Taints = []cluster.Taint{{Key: "k", Effect: "NoSchedule"}} // counted as promoted only
	d2 := demoted.Clone()
	d2.ControlPlane = false
	t2 := tainted.Clone()
	t2.Taints = []cluster.Taint{{Key: "cke.cybozu.com/state", Value: "unreachable", Effect: "NoSchedule"}}
	r2 := relabelled.Clone()
	r2.Annotations = map[string]string{labels.AnnotationRetireDate: "2030-01-01T00:00:00Z"}
	b2 := both.Clone()
	b2.Labels["example.com/pool"] = "a"
	b2.Taints = []cluster.Taint{{Key: "k", Effect: "NoSchedule"}}
	after := &cluster.Cluster{Nodes: []*cluster.Node{
		kept, sameCopy.Clone(), p2, d2, t2, r2, b2,
		node("10.0.1.1", "compute", "10", false), node("10.0.1.2", "compute", "9", false),
	}}

	d := planreport.New(&generator.Plan{Result: generator.PlanSettled, Start: before, Cluster: after})
	tally := func(n int, roles, racks map[string]int) planreport.Tally {
		return planreport.Tally{Nodes: n, ByRole: roles, ByRack: racks}
	}
	want := planreport.Summary{
		Before:     planreport.Shape{ControlPlanes: 2, Workers: 6},
		After:      planreport.Shape{ControlPlanes: 2, Workers: 7},
		Added:      tally(2, map[string]int{"compute": 2}, map[string]int{"9": 1, "10": 1}),
		Removed:    tally(1, map[string]int{"gpu": 1}, map[string]int{"x": 1}),
		Promoted:   tally(1, map[string]int{"compute": 1}, map[string]int{"2": 1}),
		Demoted:    tally(1, map[string]int{"storage": 1}, map[string]int{"2": 1}),
		Retainted:  tally(2, map[string]int{"storage": 1, "gpu": 1}, map[string]int{"10": 1, "3": 1}),
		Relabelled: tally(2, map[string]int{"-": 1, "gpu": 1}, map[string]int{"-": 1, "3": 1}),
	}
	if diff := cmp.Diff(want, d.Summary); diff != "" {
		t.Fatalf("summary (-want +got):\n%s", diff)
	}
	text := string(d.Text())
	for _, line := range []string{
		"control planes: 2 -> 2; workers: 6 -> 7\n",
		"  added:       2 (role compute: 2; rack 9: 1, rack 10: 1)\n",
		"  re-tainted:  2 (role gpu: 1, storage: 1; rack 3: 1, rack 10: 1)\n",
		"  re-labelled: 2 (role -: 1, gpu: 1; rack 3: 1, rack -: 1)\n",
		"  promoted:    1 (role compute: 1; rack 2: 1)\n",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("text has no line %q:\n%s", line, text)
		}
	}

	// A plan that builds a new cluster adds every node; one that cannot
	// build it changes nothing.
	d = planreport.New(&generator.Plan{Result: generator.PlanSettled, Cluster: after, Steps: []generator.Step{{Op: generator.OpNew}}})
	if d.Summary.Added.Nodes != 9 || d.Summary.Before != (planreport.Shape{}) {
		t.Fatalf("new cluster: %+v", d.Summary)
	}
	d = planreport.New(&generator.Plan{Result: generator.PlanRefused, Err: generator.ErrNotEnoughMachines})
	if d.Summary.Added.Nodes != 0 || d.Cluster != nil {
		t.Fatalf("no cluster: %+v", d)
	}
}

// TestText: how each plan ends, steps without changes, changes without a
// score or serial, and warnings of steps and of the plan.
func TestText(t *testing.T) {
	score := func(n int) *generator.Score { return &generator.Score{Total: n} }
	step := generator.Step{Op: generator.OpIncreaseWorker, Changes: []generator.Change{
		{Action: generator.ActionAddWorker, Address: "10.0.0.1", Serial: "s1", Score: score(993), Reason: "why"},
		{Action: generator.ActionRemoveNonExistentWorker, Address: "10.0.0.2", Reason: "gone"},
	}, Warnings: []string{"step warning"}}
	empty := generator.Step{Op: generator.OpRegenerate}
	refusal := errors.New("not enough machines: need 3")
	for _, tc := range []struct {
		name string
		plan generator.Plan
		want string
	}{
		{"settled now", generator.Plan{Result: generator.PlanSettled, Warnings: []string{"plan warning"}},
			"plan: settled: nothing to do\nwarning: plan warning\n"},
		{"settled", generator.Plan{Result: generator.PlanSettled, Steps: []generator.Step{step}},
			"step 1: increase worker\n" +
				"  - add-worker 10.0.0.1 (serial s1, score 993): why\n" +
				"  - remove-non-existent-worker 10.0.0.2 (serial -): gone\n" +
				"  warning: step warning\n\n" +
				"plan: settled after 1 step\n"},
		{"metric points", generator.Plan{Result: generator.PlanSettled, Steps: []generator.Step{{Op: generator.OpIncreaseWorker, Changes: []generator.Change{
			{Action: generator.ActionAddWorker, Address: "10.0.0.3", Serial: "s3", Score: &generator.Score{Total: 993, MetricPoints: 2.5004}, Reason: "why"}}}}},
			"  - add-worker 10.0.0.3 (serial s3, score 995.5): why\n"},
		{"no node changes", generator.Plan{Result: generator.PlanSettled, Steps: []generator.Step{empty}},
			"step 1: regenerate\n  (no node changes)\n\nplan: settled after 1 step\n"},
		{"refused at once", generator.Plan{Result: generator.PlanRefused, Err: refusal},
			"plan: refused at step 1: not enough machines: need 3\n"},
		{"refused later", generator.Plan{Result: generator.PlanRefused, Err: refusal, Steps: []generator.Step{empty, empty}},
			"plan: refused at step 3, after 2 steps: not enough machines: need 3\n"},
		{"max-steps", generator.Plan{Result: generator.PlanMaxSteps, Steps: []generator.Step{empty, empty}},
			"step 2: regenerate\n  (no node changes)\n\nplan: max-steps: stopped after 2 steps with more to do\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := string(planreport.New(&tc.plan).Text())
			if !strings.Contains(text, tc.want) {
				t.Fatalf("text:\n%s\nwant it to contain:\n%s", text, tc.want)
			}
		})
	}
}

// TestWrite: JSON is the object of docs/design.md 11.1; YAML is the same document; an
// unknown format is an error that names the formats.
func TestWrite(t *testing.T) {
	c := &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{node("10.0.0.1", "cs", "1", true)}, ServiceSubnet: "10.68.0.0/16"}
	p := &generator.Plan{
		Result: generator.PlanRefused, Err: errors.New("boom"), Reason: "GENERATION_ERROR", Message: "boom", Cluster: c,
		Steps: []generator.Step{{Op: generator.OpNew, Changes: []generator.Change{
			{Action: generator.ActionGenerate, Address: "10.0.0.1", Serial: "s1", Score: &generator.Score{Total: 1003}, Reason: "r"},
		}}},
	}
	d := planreport.New(p)
	var js, ys bytes.Buffer
	if err := planreport.Write(&js, d, "json"); err != nil {
		t.Fatal(err)
	}
	if err := planreport.Write(&ys, d, "yaml"); err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"result": "refused", "reason": "GENERATION_ERROR", "message": "boom", "error": "boom", "warnings": []any{},
		"steps": []any{map[string]any{"op": "new", "warnings": []any{}, "changes": []any{
			map[string]any{"action": "generate", "address": "10.0.0.1", "serial": "s1", "score": 1003.0, "reason": "r"},
		}}},
	}
	if got["cluster"].(map[string]any)["name"] != "c" {
		t.Fatalf("cluster: %v", got["cluster"])
	}
	delete(got, "cluster")
	delete(got, "summary")
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("JSON (-want +got):\n%s", diff)
	}
	if !bytes.HasSuffix(js.Bytes(), []byte("}\n")) {
		t.Fatal("JSON does not end with a newline")
	}
	fromYAML, err := yaml.YAMLToJSON(ys.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	_ = json.Unmarshal(js.Bytes(), &a)
	_ = json.Unmarshal(fromYAML, &b)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("YAML is not the JSON document (-json +yaml):\n%s", diff)
	}

	var out bytes.Buffer
	err = planreport.Write(&out, d, "table")
	if err == nil || err.Error() != `output: must be text, json or yaml, got "table"` || out.Len() != 0 {
		t.Fatalf("Write table: %v, %q", err, out.String())
	}
}

// TestChangesPolicy: a change keeps its score's metric points, rounded as
// explanations round them, and the placement and group of its pick; in
// JSON an integral score stays an integer.
func TestChangesPolicy(t *testing.T) {
	got := planreport.Changes([]generator.Change{
		{Action: generator.ActionAddControlPlane, Address: "10.0.0.1", Serial: "s1", Reason: "r", Placement: "control-plane", Group: "any",
			Score: &generator.Score{Total: 1003, MetricPoints: -0.83333}},
		{Action: generator.ActionAddWorker, Address: "10.0.0.2", Serial: "s2", Reason: "r", Score: &generator.Score{Total: 993}},
	})
	data, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"action":"add-control-plane","address":"10.0.0.1","serial":"s1","score":1002.167,"reason":"r","placement":"control-plane","group":"any"},` +
		`{"action":"add-worker","address":"10.0.0.2","serial":"s2","score":993,"reason":"r"}]`
	if string(data) != want {
		t.Errorf("changes\n%s\nwant\n%s", data, want)
	}
}

// TestSetModel: the model is recorded in both models; the rate figure only
// in the rate model and only with a final cluster, counted on that
// cluster's workers; the text says the model only in the rate model, and
// a document read back from JSON says the same.
func TestSetModel(t *testing.T) {
	rate := func(r int) constraints.Constraints {
		c := constraints.CountDefaults()
		if err := c.Set(constraints.MinimumWorkersRate, r); err != nil {
			t.Fatal(err)
		}
		return c
	}
	final := &cluster.Cluster{Name: "c", ServiceSubnet: "10.68.0.0/16", Nodes: []*cluster.Node{
		node("10.0.0.1", "cs", "1", true), node("10.0.0.2", "cs", "1", false), node("10.0.0.3", "cs", "2", false), node("10.0.0.4", "cs", "2", false),
	}}
	for _, tc := range []struct {
		name      string
		plan      generator.Plan
		cons      constraints.Constraints
		model     string
		rate      *generator.WorkerRate
		line      string // the model line of the text, "" for none
		jsonHas   string
		jsonLacks string
	}{
		{"count", generator.Plan{Result: generator.PlanSettled, Cluster: final}, constraints.CountDefaults(), "count", nil, "", `"model": "count"`, `"rate"`},
		{"rate", generator.Plan{Result: generator.PlanSettled, Cluster: final}, rate(50),
			"rate", &generator.WorkerRate{Workers: 3, Machines: 5, Percent: 40, Minimum: 50},
			"model: rate, workers 40.0% ((3 workers - 1) / 5 machines), minimum-workers-rate 50%\n", `"minimumWorkersRate": 50`, ""},
		{"rate without a cluster", generator.Plan{Result: generator.PlanRefused, Err: errors.New("no control plane")}, rate(80),
			"rate", nil, "model: rate\n", `"model": "rate"`, `"rate":`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := planreport.New(&tc.plan)
			d.SetModel(tc.cons, 5)
			if d.Model != tc.model || !cmp.Equal(d.Rate, tc.rate) {
				t.Errorf("model %q rate %+v, want %q %+v", d.Model, d.Rate, tc.model, tc.rate)
			}
			text := string(d.Text())
			hasLine := strings.Contains(text, "model:")
			if (tc.line == "" && hasLine) || !strings.Contains(text, tc.line) {
				t.Errorf("text:\n%s\nwant the model line %q", text, tc.line)
			}
			var b bytes.Buffer
			if err := planreport.Write(&b, d, "json"); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tc.jsonHas) || (tc.jsonLacks != "" && strings.Contains(b.String(), tc.jsonLacks)) {
				t.Errorf("json:\n%s\nwant %q and not %q", b.String(), tc.jsonHas, tc.jsonLacks)
			}
			var back planreport.Document
			if err := json.Unmarshal(b.Bytes(), &back); err != nil {
				t.Fatal(err)
			}
			if got := string(back.Text()); got != text {
				t.Errorf("read back from JSON:\n%s\nwant\n%s", got, text)
			}
		})
	}
}

// TestHeld: a plan that a hold ends says so, with the hold's code and
// words, in its text and its JSON.
func TestHeld(t *testing.T) {
	c := &cluster.Cluster{Name: "c", Nodes: []*cluster.Node{node("10.0.0.1", "cs", "1", true)}, ServiceSubnet: "10.68.0.0/16"}
	p := &generator.Plan{Result: generator.PlanHeld, Reason: "TOO_MANY_UNHEALTHY", Message: "2 of 8 nodes are unhealthy", Start: c, Cluster: c,
		Steps: []generator.Step{{Op: generator.OpTaintNodes}}}
	d := planreport.New(p)
	var text, js bytes.Buffer
	if err := planreport.Write(&text, d, "text"); err != nil {
		t.Fatal(err)
	}
	if want := "held at step 2 (TOO_MANY_UNHEALTHY), after 1 step: 2 of 8 nodes are unhealthy"; !strings.Contains(text.String(), want) {
		t.Errorf("text:\n%s\nwant it to contain %q", text.String(), want)
	}
	if err := planreport.Write(&js, d, "json"); err != nil {
		t.Fatal(err)
	}
	var got struct{ Result, Reason, Message, Error string }
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got.Result != "held" || got.Reason != "TOO_MANY_UNHEALTHY" || got.Message != "2 of 8 nodes are unhealthy" || got.Error != "" {
		t.Errorf("JSON: %+v", got)
	}
}

// TestWaits: a step after a hold says what it waited for, in text and
// JSON: until when (the quiet time, the retire wait), or for what alone
// (the trigger); a step without one says nothing.
func TestWaits(t *testing.T) {
	c := &cluster.Cluster{Name: "c"}
	until := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	p := &generator.Plan{Result: generator.PlanSettled, Start: c, Cluster: c, Steps: []generator.Step{
		{Op: "a", Wait: &generator.Wait{Until: until, Reason: "the quiet time (1m0s)"}},
		{Op: "b"},
		{Op: "c", Wait: &generator.Wait{Until: until.Add(241 * time.Second), Reason: "the retire wait (5m0s)"}},
		{Op: "d", Wait: &generator.Wait{Reason: "the trigger set to schedule"}},
	}}
	d := planreport.New(p)
	text := string(d.Text())
	for _, want := range []string{"step 1: a, from 2026-01-01T00:01:00Z, the end of the quiet time (1m0s)\n", "step 2: b\n",
		"step 3: c, from 2026-01-01T00:05:01Z, the end of the retire wait (5m0s)\n", "step 4: d, after the trigger set to schedule\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	data, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"wait":{"until":"2026-01-01T00:01:00Z","reason":"the quiet time (1m0s)"}`, `"wait":{"until":"2026-01-01T00:05:01Z","reason":"the retire wait (5m0s)"}`,
		`"wait":{"reason":"the trigger set to schedule"}`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("JSON lacks %s:\n%s", want, data)
		}
	}
	if strings.Count(string(data), `"wait"`) != 3 {
		t.Errorf("JSON has a wait on a step without one:\n%s", data)
	}
}
