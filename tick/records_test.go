package tick

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/generator"
	"github.com/ckegen/ckegen/planreport"
	"github.com/ckegen/ckegen/storage"
)

// TestChanges: status and history keep the first storage.MaxChanges changes, each
// with its total score, in the JSON they always had.
func TestChanges(t *testing.T) {
	var cs []generator.Change
	for i := range storage.MaxChanges + 5 {
		c := generator.Change{Action: "add", Address: fmt.Sprintf("10.0.0.%d", i), Serial: "s", Reason: "r"}
		if i == 0 {
			c.Score = &generator.Score{Total: 42, Rack: 3}
		}
		cs = append(cs, c)
	}
	got := planreport.StoredChanges(cs)
	if len(got) != storage.MaxChanges {
		t.Fatalf("%d changes kept, want %d", len(got), storage.MaxChanges)
	}
	data, err := json.Marshal(got[:2])
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"action":"add","address":"10.0.0.0","serial":"s","score":42,"reason":"r"},{"action":"add","address":"10.0.0.1","serial":"s","score":null,"reason":"r"}]`
	if string(data) != want {
		t.Errorf("stored changes\n%s\nwant\n%s", data, want)
	}

	// With a policy: the metric points show, rounded as explanations
	// round them, and the group of an ordered placement is kept.
	pick := generator.Change{Action: "add", Address: "10.0.0.9", Serial: "s9", Reason: "r", Placement: "control-plane", Group: "dedicated",
		Score: &generator.Score{Total: 1003, MetricPoints: -2.33333}}
	gen, err := json.Marshal(pick.Score)
	if err != nil {
		t.Fatal(err)
	}
	data, err = json.Marshal(planreport.StoredChanges([]generator.Change{pick}))
	if err != nil {
		t.Fatal(err)
	}
	want = `[{"action":"add","address":"10.0.0.9","serial":"s9","score":` + string(gen) + `,"reason":"r","placement":"control-plane","group":"dedicated"}]`
	if string(data) != want || string(gen) != "1000.667" {
		t.Errorf("stored change with metric points\n%s\nwant\n%s (the explanation's score is %s)", data, want, gen)
	}
}

// TestUnchangedWriteIsNoOp: a template set again on a cluster it renders
// as it is (the same template, stored again) is a write of the template
// revision alone: the cluster-revision follows the template, and no op
// is recorded (the last op stays, no history entry, no "cluster updated").
func TestUnchangedWriteIsNoOp(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	var logs lockedBuffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	for range 2 {
		must(t, d.runOnce(ctx, leader))
	}
	before, err := f.st.History(ctx)
	must(t, err)
	last := f.status(t)
	tmpl, _, err := f.st.GetTemplate(ctx)
	must(t, err)
	must(t, f.st.SetTemplate(ctx, tmpl))
	_, rev, err := f.st.GetTemplate(ctx)
	must(t, err)
	start := len(logs.String())
	must(t, d.runOnce(ctx, leader))
	must(t, d.runOnce(ctx, leader))
	after, err := f.st.History(ctx)
	must(t, err)
	st := f.status(t)
	built, err := f.st.Get(ctx, storage.KeyClusterRevision)
	must(t, err)
	if string(built.Data) != strconv.FormatInt(rev, 10) {
		t.Errorf("cluster-revision %s, want the template's %d", built.Data, rev)
	}
	if len(after) != len(before) || st.LastOp != last.LastOp || st.LastChangeCount != last.LastChangeCount {
		t.Errorf("an unchanged cluster recorded an op: history %d entries (was %d), last op %s (%d changes), was %s",
			len(after), len(before), st.LastOp, st.LastChangeCount, last.LastOp)
	}
	if got := logs.String()[start:]; strings.Contains(got, "cluster updated") {
		t.Errorf("an unchanged cluster logged an update:\n%s", got)
	}
}
