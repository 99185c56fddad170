package tick

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/intake"
	"github.com/ckegen/ckegen/reason"
)

// TestTickWarningsMetric: a template whose worker role matches no machine
// (the typo guard) puts its warning in the status and counts it in
// ckegen_tick_warnings; fixed, the count is 0; disabled, or after the end
// of leadership, the series is not exported.
func TestTickWarningsMetric(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	d := f.step("d", nil)
	d.setLeading(true)
	if got := series(scrape(t, d), "ckegen_tick_warnings"); len(got) != 0 {
		t.Errorf("before any tick: %q", got)
	}
	// Worker templates of the roles compute and storage, and one of a role
	// no machine has (dcgen's roles are compute, storage and gpu).
	typo := `{"name":"t","nodes":[{"user":"u","control_plane":true},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"compute","cke.cybozu.com/weight":"6"}},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"storage","cke.cybozu.com/weight":"3"}},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"gpuu"}}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`
	must(t, f.st.SetTemplate(ctx, []byte(typo)))
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	want := `template role "gpuu" matches no machine; inventory roles: compute, gpu, storage`
	if !slices.Contains(st.Warnings, want) {
		t.Fatalf("status warnings %q, want %q", st.Warnings, want)
	}
	if got := series(scrape(t, d), "ckegen_tick_warnings"); !slices.Equal(got, []string{fmt.Sprintf("ckegen_tick_warnings %d", len(st.Warnings))}) {
		t.Errorf("with the misspelt role: %q, want the status's %d warnings", got, len(st.Warnings))
	}

	fixed := strings.Replace(typo, "gpuu", "gpu", 1)
	must(t, f.st.SetTemplate(ctx, []byte(fixed)))
	must(t, d.runOnce(ctx, leader))
	if st := f.status(t); len(st.Warnings) != 0 {
		t.Fatalf("fixed template: warnings %q", st.Warnings)
	}
	if got := series(scrape(t, d), "ckegen_tick_warnings"); !slices.Equal(got, []string{"ckegen_tick_warnings 0"}) {
		t.Errorf("fixed template: %q", got)
	}

	must(t, f.st.SetTemplate(ctx, []byte(typo)))
	must(t, f.st.SetDisabled(ctx, true))
	must(t, d.runOnce(ctx, leader))
	if got := series(scrape(t, d), "ckegen_tick_warnings"); len(got) != 0 {
		t.Errorf("disabled: %q", got)
	}
	must(t, f.st.SetDisabled(ctx, false))
	must(t, d.runOnce(ctx, leader))
	if got := series(scrape(t, d), "ckegen_tick_warnings"); len(got) != 1 || got[0] == "ckegen_tick_warnings 0" {
		t.Errorf("enabled again with the misspelt role: %q", got)
	}
	d.metrics.Clear()
	if got := series(scrape(t, d), "ckegen_tick_warnings"); len(got) != 0 {
		t.Errorf("after the end of leadership: %q", got)
	}
}

// TestPlanningLogAgreesWithStatus: a tick held by the trigger planning
// logs that it planned, with as many pending steps as its status says,
// never "nothing to do"; the status says "1 step", not "1 steps".
func TestPlanningLogAgreesWithStatus(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	var logs bytes.Buffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	must(t, d.runOnce(ctx, leader))
	must(t, f.st.SetTrigger(ctx, intake.TriggerPlanning))
	c, _ := f.st.GetConstraints(ctx)
	c.MinimumWorkers++
	must(t, f.st.SetConstraints(ctx, c))
	logs.Reset()
	must(t, d.runOnce(ctx, leader))
	st := f.status(t)
	if st.Result != reason.Planning || st.Pending == nil || st.Pending.Steps != 1 {
		t.Fatalf("status: %s, pending %+v; want planning with one step (a worker more)", st.Result, st.Pending)
	}
	if !strings.Contains(st.Message, "; 1 step pending, next: increase worker") {
		t.Errorf("status message %q, want 1 step pending", st.Message)
	}
	line := logs.String()
	if strings.Contains(line, "nothing to do") || !strings.Contains(line, `msg="tick planned, no cluster written"`) ||
		!strings.Contains(line, " pending_steps=1") {
		t.Errorf("log of a planning tick:\n%s\nwant the plan and its pending step, as the status says", line)
	}

	// Two control planes fewer: two steps (one demotion a tick), plural.
	c.ControlPlaneCount = 1
	must(t, f.st.SetConstraints(ctx, c))
	logs.Reset()
	must(t, d.runOnce(ctx, leader))
	st = f.status(t)
	if st.Pending == nil || st.Pending.Steps != 2 || !strings.Contains(st.Message, fmt.Sprintf("; %d steps pending, next: ", st.Pending.Steps)) ||
		!strings.Contains(logs.String(), fmt.Sprintf(" pending_steps=%d", st.Pending.Steps)) {
		t.Errorf("status %q, pending %+v; log\n%s", st.Message, st.Pending, logs.String())
	}
}
