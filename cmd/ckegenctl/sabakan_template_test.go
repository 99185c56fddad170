package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ckegen/ckegen/cluster"
	"github.com/ckegen/ckegen/constraints"
	"github.com/ckegen/ckegen/decision"
	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/internal/testutil/etcdtest"
	"github.com/ckegen/ckegen/internal/testutil/sitetest"
	"github.com/ckegen/ckegen/labels"
	"github.com/ckegen/ckegen/machine"
	"github.com/ckegen/ckegen/reason"
	"github.com/ckegen/ckegen/storage"
	"github.com/ckegen/ckegen/tick"
)

// weightedTemplate is a template with the weight w on its second worker
// template.
func weightedTemplate(w string) string {
	return "name: demo\nnodes:\n- {user: cybozu, control_plane: true}\n" +
		"- {user: cybozu, labels: {cke.cybozu.com/role: cs, cke.cybozu.com/weight: \"2\"}}\n" +
		"- {user: cybozu, labels: {cke.cybozu.com/role: ss, cke.cybozu.com/weight: \"" + w + "\"}}\n" +
		"service_subnet: 10.68.0.0/16\n"
}

// TestSetTemplateRefusesWeightNoLabel: a weight that is a number but not a
// Kubernetes label value (.5, 1.) is refused by set-template, with
// --dry-run or not, on a real etcd: the error names the node and the
// label, says why (the weight is copied onto the nodes, and Kubernetes
// would refuse it) and what to write instead; nothing is written to etcd,
// whether a template was stored before or not.
func TestSetTemplateRefusesWeightNoLabel(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	dir := t.TempDir()
	noDefault := filepath.Join(dir, "no-default.yml")
	ctx := context.Background()
	revision := func() int64 {
		resp, err := cli.Get(ctx, "/cke/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Header.Revision
	}
	stored := func() string {
		resp, err := cli.Get(ctx, "/cke/sabakan/template")
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) == 0 {
			return "<none>"
		}
		return string(resp.Kvs[0].Value)
	}
	cases := []struct{ weight, instead string }{{".5", `write "0.5", the same weight`}, {"1.", `write "1", the same weight`}}
	refuse := func(when string) {
		t.Helper()
		for _, c := range cases {
			for _, extra := range [][]string{nil, {"--dry-run"}} {
				file := writeFileIn(t, dir, "bad.yml", weightedTemplate(c.weight))
				before, value := revision(), stored()
				args := append([]string{"--etcd-endpoints", url, "sabakan", "set-template", file}, extra...)
				out, errOut, code := runCLIWithConfig(t, noDefault, args...)
				if code != 1 || out != "" {
					t.Errorf("%s: set-template with weight %q %v: exit %d, stdout %q; want 1 and nothing", when, c.weight, extra, code, out)
				}
				for _, want := range []string{
					`template nodes[2]: label "cke.cybozu.com/weight": "` + c.weight + `" is not a valid Kubernetes label value`,
					"the weight is copied onto every node of this template", "Kubernetes would refuse that node label", c.instead,
				} {
					if !strings.Contains(errOut, want) {
						t.Errorf("%s: set-template with weight %q %v: stderr %q lacks %q", when, c.weight, extra, errOut, want)
					}
				}
				if after := revision(); after != before {
					t.Errorf("%s: set-template with weight %q %v wrote to etcd (revision %d -> %d)", when, c.weight, extra, before, after)
				}
				if got := stored(); got != value {
					t.Errorf("%s: the stored template changed: %q -> %q", when, value, got)
				}
			}
		}
	}
	refuse("nothing stored")

	// The same weights written as label values are stored as written.
	good := writeFileIn(t, dir, "good.yml", weightedTemplate("0.5"))
	if _, errOut, code := runCLIWithConfig(t, noDefault, "--etcd-endpoints", url, "sabakan", "set-template", good); code != 0 {
		t.Fatalf("set-template with weight 0.5: exit %d, stderr %q", code, errOut)
	}
	if v := stored(); !strings.Contains(v, `"cke.cybozu.com/weight":"0.5"`) {
		t.Fatalf("stored template: %s", v)
	}
	refuse("a template stored")
}

// TestStoredWeightNoLabelFailsTick: a template stored before this check
// (by an earlier ckegen, or by hand) with a weight that is no label value
// fails the daemon's tick with INVALID_TEMPLATE naming the node, the label
// and what to write, and nothing is written.
func TestStoredWeightNoLabelFailsTick(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	site := sitetest.Small(t, now, nil)
	ctx := context.Background()
	c, err := cluster.Parse([]byte(weightedTemplate(".5")))
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := sitetest.StoreOf(site.Storage).SetTemplate(ctx, data); err != nil {
		t.Fatal(err)
	}
	leader := site.Lead(t, "d", 0)
	step := tick.New(site.Storage, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	r := step.Run(ctx, leader, nil, nil)
	if reason.Of(r.Err) != reason.InvalidTemplate {
		t.Fatalf("the tick: %v, want %s", r.Err, reason.InvalidTemplate)
	}
	for _, want := range []string{`nodes[2]: label "cke.cybozu.com/weight": ".5" is not a valid Kubernetes label value`, `write "0.5"`} {
		if !strings.Contains(r.Err.Error(), want) {
			t.Errorf("the tick's error %q lacks %q", r.Err, want)
		}
	}
	if raw, err := sitetest.StoreOf(site.Storage).GetClusterRaw(ctx); err == nil && len(raw) > 0 {
		t.Errorf("a cluster was written: %d bytes", len(raw))
	}
}

// TestWeightLabelAddedOnceAfterUpgrade: a cluster written by an earlier
// ckegen (the bundled template's weights left out of the nodes), in the
// rate model, with max-unhealthy set: the next write, made to taint one
// UNREACHABLE worker, also adds the weight to every worker, and its
// history entry tells each of them as re-rendered with "labels
// cke.cybozu.com/weight added"; the write is not held back, whether the
// breaker is within its limit or over it (it counts unhealthy nodes, not
// re-rendered ones, and over it lets taints through). The tick after it
// writes nothing: the label is added once.
func TestWeightLabelAddedOnceAfterUpgrade(t *testing.T) {
	for _, limit := range []string{"5%", "0"} {
		t.Run("max-unhealthy "+limit, func(t *testing.T) { weightAddedOnce(t, limit) })
	}
}

func weightAddedOnce(t *testing.T, maxUnhealthy string) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tmplData, err := os.ReadFile("../../examples/template.yml")
	if err != nil {
		t.Fatal(err)
	}
	js, err := templateToStore(tmplData)
	if err != nil {
		t.Fatal(err)
	}
	cons, err := constraints.Parse([]byte(`{"control-plane-count":3,"minimum-workers-rate":80}`))
	if err != nil {
		t.Fatal(err)
	}
	site := sitetest.Start(t, sitetest.Options{Now: now, Template: string(js), StoreURL: true, Constraints: &cons})
	st, store := site.Storage, sitetest.StoreOf(site.Storage)
	ctx := context.Background()
	limit, err := intake.ParseMaxUnhealthy(maxUnhealthy)
	if err != nil {
		t.Fatal(err)
	}
	must(t, store.SetMaxUnhealthy(ctx, limit))
	leader := site.Lead(t, "d", 0)
	step := tick.New(st, decision.Config{Name: "d", RetireWait: storage.Duration(time.Minute), Now: func() time.Time { return now },
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if r := step.Run(ctx, leader, nil, nil); r.Err != nil {
		t.Fatal(r.Err)
	}

	// The cluster as the earlier ckegen wrote it: no weight on any node.
	c, rev, err := store.GetCluster(ctx)
	must(t, err)
	workers := 0
	for _, n := range c.Nodes {
		if _, ok := n.Labels[labels.Weight]; ok != !n.ControlPlane {
			t.Fatalf("node %s (control plane %v): weight label present %v", n.Address, n.ControlPlane, ok)
		}
		delete(n.Labels, labels.Weight)
		if !n.ControlPlane {
			workers++
		}
	}
	data, err := json.Marshal(c)
	must(t, err)
	_, tmplRev, err := store.GetTemplate(ctx)
	must(t, err)
	_, err = st.PutCluster(ctx, leader, data, rev, tmplRev)
	must(t, err)
	if r := step.Run(ctx, leader, nil, nil); r.Err != nil || r.Decision == nil || r.Decision.Step != nil {
		t.Fatalf("on an unchanged inventory, the first tick after the upgrade: %v; want nothing written", r.Err)
	}

	var victim *machine.Machine
	for i, m := range site.Machines {
		for _, n := range c.Nodes {
			if !n.ControlPlane && n.Address == m.Spec.IPv4[0] && victim == nil {
				victim = &site.Machines[i]
			}
		}
	}
	if _, err := site.Store.SetState(victim.Spec.Serial, machine.StateUnreachable); err != nil {
		t.Fatal(err)
	}
	// Over the limit, the tick fails TOO_MANY_UNHEALTHY and writes the
	// state taints.
	breaker := maxUnhealthy == "0"
	failed := func(r tick.Result) bool {
		return (r.Err != nil) != breaker || (breaker && reason.Of(r.Err) != reason.TooManyUnhealthy)
	}
	r := step.Run(ctx, leader, nil, nil)
	if failed(r) || r.Decision == nil || r.Decision.Step == nil {
		t.Fatalf("the first write after the upgrade: %v", r.Err)
	}
	after, _, err := store.GetCluster(ctx)
	must(t, err)
	for _, n := range after.Nodes {
		if _, ok := n.Labels[labels.Weight]; ok == n.ControlPlane {
			t.Errorf("after the write, node %s (control plane %v): weight label present %v", n.Address, n.ControlPlane, ok)
		}
	}
	h, err := st.History(ctx)
	must(t, err)
	e := h[len(h)-1]
	// The entry keeps the first storage.MaxChanges of its changes: the
	// UNREACHABLE worker's, then re-renders.
	added, victimTold := 0, false
	for _, ch := range e.Changes {
		switch {
		case ch.Address == victim.Spec.IPv4[0]:
			// Its rule's change (the taint) tells it.
			victimTold = true
			if ch.Action != generator.ActionChangeTaint {
				t.Errorf("the UNREACHABLE worker's change: %s %q", ch.Action, ch.Reason)
			}
		case ch.Action == generator.ActionRerender && ch.Reason == "labels cke.cybozu.com/weight added":
			added++
		default:
			t.Errorf("unexpected change in the history entry: %s %s %q", ch.Action, ch.Address, ch.Reason)
		}
	}
	if e.Op != generator.OpTaintNodes || e.ChangeCount != workers || !victimTold || added != min(workers, storage.MaxChanges)-1 {
		t.Errorf("the history entry: %s, %d changes (%d kept: the UNREACHABLE worker %v, %d weight re-renders); want %s, %d changes",
			e.Op, e.ChangeCount, len(e.Changes), victimTold, added, generator.OpTaintNodes, workers)
	}
	noConfig := filepath.Join(t.TempDir(), "none.yml")
	out, errOut, code := runCLIWithConfig(t, noConfig, "--etcd-endpoints", site.EtcdURL, "sabakan", "history", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "reason: labels cke.cybozu.com/weight added\n") {
		t.Errorf("ckegenctl sabakan history -o yaml: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}
	out, errOut, code = runCLIWithConfig(t, noConfig, "--etcd-endpoints", site.EtcdURL, "sabakan", "status")
	if code != 0 || !strings.Contains(out, "labels cke.cybozu.com/weight added") {
		t.Errorf("ckegenctl sabakan status: exit %d, stderr %q, stdout\n%s", code, errOut, out)
	}
	// A group of re-renders counts the changes kept; the status says how
	// many more were made than kept, so that it is not read as the whole.
	if more := workers - storage.MaxChanges; more > 0 {
		want := fmt.Sprintf("(%d more changes not listed: only the first %d of the step's %d changes are kept)", more, storage.MaxChanges, workers)
		if !strings.Contains(out, want) {
			t.Errorf("ckegenctl sabakan status does not say %q:\n%s", want, out)
		}
	}
	t.Logf("the first write after the upgrade: %s, %d workers, %d re-rendered with the weight; the status:\n%s", e.Op, workers, added, out)

	writes := len(h)
	if r := step.Run(ctx, leader, nil, nil); failed(r) {
		t.Errorf("the tick after: %v", r.Err)
	}
	if h, err := st.History(ctx); err != nil || len(h) != writes {
		t.Errorf("the tick after wrote the cluster again: %d history entries, then %d (%v)", writes, len(h), err)
	}
}

// TestSetTemplateWeightNote: in the rate model, set-template says once,
// as it stores the template, that each weight of a worker template means
// nothing there (generator.TemplateNotes), on a real etcd with the
// constraints stored explicitly; in the count model it says nothing of
// weights.
func TestSetTemplateWeightNote(t *testing.T) {
	url := etcdtest.Start(t)
	cli := etcdtest.Connect(t, url)
	dir := t.TempDir()
	noDefault := filepath.Join(dir, "no-default.yml")
	file := writeFileIn(t, dir, "t.yml", weightedTemplate("1"))
	note := func(i int) string {
		return fmt.Sprintf("warning: template nodes[%d]: label cke.cybozu.com/weight has no meaning in the rate model (minimum-workers-rate): every HEALTHY machine a worker template accepts is a worker\n", i)
	}
	for _, c := range []struct {
		constraints string
		want        string
	}{
		{`{"control-plane-count":1,"minimum-workers-rate":80}`, note(1) + note(2)},
		{`{"control-plane-count":1,"minimum-workers":1,"maximum-workers":0}`, ""},
	} {
		if _, err := cli.Put(context.Background(), "/cke/constraints", c.constraints); err != nil {
			t.Fatal(err)
		}
		_, errOut, code := runCLIWithConfig(t, noDefault, "--etcd-endpoints", url, "sabakan", "set-template", file)
		if code != 0 || strings.Count(errOut, "cke.cybozu.com/weight") != strings.Count(c.want, "cke.cybozu.com/weight") || !strings.Contains(errOut, c.want) {
			t.Errorf("set-template with %s: exit %d, stderr %q, want %q", c.constraints, code, errOut, c.want)
		}
	}
}
