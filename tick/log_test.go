package tick

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/ckegen/ckegen/decision"
)

// TestLogSaysWhatChanged: the log tells what changed, not every tick.
// "Nothing to do" once when it becomes true; a warning once when it
// appears and once when it clears; a failure at error when it starts, at
// warning on each retry, at info on recovery; a settled integration
// logs nothing at info per tick.
func TestLogSaysWhatChanged(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	var logs lockedBuffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	count := func(s string) int { return strings.Count(logs.String(), s) }
	for range 4 {
		d.run(ctx, leader)
	}
	if n := count(`msg="cluster updated"`); n != 1 {
		t.Errorf("%d writes logged, want 1 (the first cluster):\n%s", n, logs.String())
	}
	if n := count(`msg="nothing to do"`); n != 1 {
		t.Errorf(`"nothing to do" logged %d times over 3 settled ticks, want once:\n%s`, n, logs.String())
	}
	before := len(logs.String())
	d.run(ctx, leader)
	if settled := logs.String()[before:]; settled != "" {
		t.Errorf("a settled tick logged:\n%s", settled)
	}

	// A warning: logged when it appears, not again, and when it clears.
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 4
	must(t, f.st.SetConstraints(ctx, c))
	for range 3 {
		d.run(ctx, leader)
	}
	if n := count(`level=WARN msg="tick warning" warning="constraints: control-plane-count is even (4)`); n != 1 {
		t.Errorf("the even count's warning logged %d times over 3 ticks, want once:\n%s", n, logs.String())
	}
	c.ControlPlaneCount = 3
	must(t, f.st.SetConstraints(ctx, c))
	for range 3 {
		d.run(ctx, leader)
	}
	if n := count(`level=INFO msg="tick warning cleared" warning="constraints: control-plane-count is even (4)`); n != 1 {
		t.Errorf("the warning's end logged %d times, want once:\n%s", n, logs.String())
	}

	// A failure: at error when it starts, at warning on each retry, at
	// info on recovery.
	must(t, f.st.SetURL(ctx, "http://127.0.0.1:1/graphql"))
	for range 3 {
		d.run(ctx, leader)
	}
	if n, m := count(`level=ERROR msg="tick failed" reason=SABAKAN_UNREACHABLE`), count(`level=WARN msg="tick failed again" reason=SABAKAN_UNREACHABLE`); n != 1 || m != 2 {
		t.Errorf("3 failed ticks: %d at error, %d at warning, want 1 and 2:\n%s", n, m, logs.String())
	}
	must(t, f.st.SetURL(ctx, f.url))
	d.run(ctx, leader)
	if n := count(`level=INFO msg="tick recovered" failed_with=SABAKAN_UNREACHABLE result=ok`); n != 1 {
		t.Errorf("the recovery logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestFailedTickOneLine: a tick that cannot reach sabakan logs one line,
// naming the reason and sabakan's URL, with what went wrong in plain
// words and without the request and addresses Go's errors wrap around it.
func TestFailedTickOneLine(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	leader := f.lead(t)
	var logs lockedBuffer
	d := f.step("d", func(c *testConfig) { c.Log = slog.New(slog.NewTextHandler(&logs, nil)) })
	d.run(ctx, leader)
	const url = "http://127.0.0.1:1/graphql"
	must(t, f.st.SetURL(ctx, url))
	for range 2 {
		before := len(logs.String())
		d.run(ctx, leader)
		lines := strings.Split(strings.TrimSpace(logs.String()[before:]), "\n")
		want := `reason=SABAKAN_UNREACHABLE error="sabakan at ` + url + `: connection refused"`
		if len(lines) != 1 || !strings.Contains(lines[0], want) {
			t.Errorf("a failed tick logged %d lines, want one with %s:\n%s", len(lines), want, strings.Join(lines, "\n"))
		}
		for _, raw := range []string{`Post \"`, "dial tcp"} {
			if strings.Contains(lines[0], raw) {
				t.Errorf("a failed tick's log has Go's wrapped error text %q:\n%s", raw, lines[0])
			}
		}
	}
}

// TestRestartLogsNothingNew: a process that starts into the state the
// last one left logs no warning again and no "cleared": for ckegen's
// daemon (a new leadership, a tick) and inside CKE's server (Init's
// Regenerate, then a tick). A warning that did change is told.
func TestRestartLogsNothingNew(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	// A warning of the settings, and one of the generator.
	c, _ := f.st.GetConstraints(ctx)
	c.ControlPlaneCount = 4
	must(t, f.st.SetConstraints(ctx, c))
	typo := `{"name":"t","nodes":[{"user":"u","control_plane":true},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"compute"}},` +
		`{"user":"u","labels":{"cke.cybozu.com/role":"gpuu"}}],"service_subnet":"10.68.0.0/16",` + testOptions + `}`
	must(t, f.st.SetTemplate(ctx, []byte(typo)))
	for _, inside := range []bool{false, true} {
		mode := ""
		if inside {
			mode = decision.ModeInsideCKE
		}
		first := f.step("d", func(c *testConfig) { c.Mode = mode })
		leader, end := f.leadSession(t, "first")
		first.run(ctx, leader)
		first.run(ctx, leader)
		end()
		if w := first.Status().Warnings; len(w) != 2 {
			t.Fatalf("no warning: the test's inputs are not what it means")
		}
		var logs lockedBuffer
		again := f.step("d", func(c *testConfig) {
			c.Mode = mode
			c.Log = slog.New(slog.NewTextHandler(&logs, nil))
		})
		leader, end = f.leadSession(t, "again")
		if inside {
			again.Regenerate(ctx, leader, nil)
		}
		again.run(ctx, leader)
		again.run(ctx, leader)
		if strings.Contains(logs.String(), "tick warning") {
			t.Errorf("inside CKE %v: a restart into the same state logged:\n%s", inside, logs.String())
		}
		end()
	}
}
